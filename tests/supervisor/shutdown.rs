//! Stopping: SIGTERM or Ctrl-C with agents in flight releases their tasks without charging
//! them, and nothing the agents started survives — not even processes that ignore SIGTERM.

use crate::harness::{Fleet, Supervisor, counter};

/// Waits until every task in `ids` has a running agent (its `attempt_started` line is written
/// after the spawn).
fn wait_agents_running(fleet: &Fleet, supervisor: &Supervisor, ids: &[String]) {
    for id in ids {
        supervisor.wait_started(id, 1);
        supervisor.wait_until(&format!("{id}'s agent to start"), || {
            let log = std::fs::read_to_string(fleet.task_file(id, "log.jsonl")).ok()?;
            log.contains("\"attempt_started\"").then_some(())
        });
    }
}

#[track_caller]
fn assert_released_uncharged(fleet: &Fleet, id: &str) {
    let issue = fleet.show(id);
    assert_eq!(issue["status"], "open", "{id}");
    assert_eq!(issue["assignee"], serde_json::Value::Null, "{id}");
    assert_eq!(counter(&issue, "failures"), 0, "{id}: a shutdown is not charged");
    assert_eq!(issue["fleet"]["retry_after"], serde_json::Value::Null, "{id}: no backoff either");
    assert_eq!(
        fleet.comments(id),
        ["[fleet] attempt 1: supervisor shutting down; released, not charged"],
        "{id}"
    );
}

#[test]
fn sigterm_with_agents_in_flight_releases_them_uncharged_and_leaves_no_process() {
    let fleet = Fleet::new(&[("max_concurrent", "3")]);
    let ids: Vec<String> =
        (1..=3).map(|n| fleet.task(&format!("Long job {n}"), &["sleep 30"])).collect();

    let supervisor = fleet.start(&[]);
    wait_agents_running(&fleet, &supervisor, &ids);
    assert_eq!(fleet.ws.json(&["list", "--status", "in_progress"]).as_array().unwrap().len(), 3);
    let run = supervisor.stop().ok();

    for id in &ids {
        assert_released_uncharged(&fleet, id);
        assert_eq!(run.starting(&format!("• {id} shutdown: ")).len(), 1, "{}", run.stdout());
    }
    assert_eq!(run.lines.last().unwrap(), "fleet run: 3 attempts — shutdown 3");
    fleet.assert_no_processes_left(None);
}

#[test]
fn ctrl_c_stops_the_same_way() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 30"]);

    let supervisor = fleet.start(&[]);
    wait_agents_running(&fleet, &supervisor, std::slice::from_ref(&id));
    supervisor.signal(libc::SIGINT);
    let run = supervisor.wait().ok();

    assert_released_uncharged(&fleet, &id);
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — shutdown 1");
    fleet.assert_no_processes_left(None);
}

/// The agent ignores SIGTERM and so do the two shells it started: after the grace period the
/// whole process group gets SIGKILL.
#[test]
fn agent_ignoring_sigterm_is_killed_with_its_grandchildren_on_shutdown() {
    let fleet = Fleet::new(&[("shutdown_grace_secs", "1")]);
    let stubborn = fleet.task("Stubborn", &["ignore-term"]);
    let polite = fleet.task("Polite", &["sleep 30"]);

    let supervisor = fleet.start(&[]);
    wait_agents_running(&fleet, &supervisor, &[stubborn.clone(), polite.clone()]);
    // Both agents, and the stubborn one's two `sh` children with a `sleep` each.
    supervisor.wait_until("the grandchildren to start", || {
        (fleet.processes(Some(supervisor.pid())).len() >= 6).then_some(())
    });
    let run = supervisor.stop().ok();

    fleet.assert_no_processes_left(None);
    assert_released_uncharged(&fleet, &stubborn);
    assert_released_uncharged(&fleet, &polite);
    let stubborn_end = &fleet.runner_lines(&stubborn, "attempt_finished")[0];
    assert_eq!(stubborn_end["forced_kill"], true, "SIGKILL was needed: {stubborn_end}");
    let polite_end = &fleet.runner_lines(&polite, "attempt_finished")[0];
    assert_eq!(polite_end["forced_kill"], false, "SIGTERM was enough: {polite_end}");
    assert_eq!(run.lines.last().unwrap(), "fleet run: 2 attempts — shutdown 2");
}

/// The same group kill when the supervisor itself stops one agent (here: a stall) and keeps
/// running: nothing of that agent is left while the supervisor goes on.
#[test]
fn stalled_agent_ignoring_sigterm_is_killed_with_its_group_while_the_run_goes_on() {
    let fleet = Fleet::new(&[
        ("stall_timeout_secs", "1"),
        ("shutdown_grace_secs", "1"),
        ("retry_backoff_secs", "600"),
    ]);
    let id = fleet.task("Stubborn and silent", &["ignore-term"]);

    let supervisor = fleet.start(&[]);
    let finished = supervisor.wait_finished(&id, 1);
    assert!(finished.starts_with(&format!("• {id} stall-requeued: ")), "{finished}");
    fleet.assert_no_processes_left(Some(supervisor.pid()));
    let end = &fleet.runner_lines(&id, "attempt_finished")[0];
    assert_eq!(end["forced_kill"], true, "{end}");
    supervisor.stop().ok();
}
