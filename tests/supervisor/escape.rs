//! No signal leaves an agent unsupervised (issue 27): a Ctrl-\ on the supervisor's terminal
//! and a SIGKILL to its whole process group end every process of the run — the agents and the
//! helpers they left in their group, in a new session, and forked twice into a new session —
//! within two seconds, and the tasks go back to the queue uncharged. A restarted run kills
//! what a run whose guard also died left, also of tasks closed meanwhile.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::pty::Pty;
use crate::common::{poll_until, poll_until_showing, procs};
use crate::harness::{DEADLINE, Fleet, Supervisor, counter};

/// Two long tasks whose agents each leave a helper in their process group, one in a new
/// session, and one forked twice into a new session (its parent gone).
fn tasks_with_helpers(fleet: &Fleet) -> Vec<String> {
    let steps = ["background 300", "detach 300", "doublefork 300", "sleep 60", "close"];
    (1..=2).map(|k| fleet.task(&format!("Job {k}"), &steps)).collect()
}

/// Processes of the home whose command line is `sleep 300`: the helpers.
fn helpers(fleet: &Fleet) -> usize {
    let is_helper =
        |p: &String| p.split_once(": ").is_some_and(|(_, cmd)| cmd.trim() == "sleep 300");
    fleet.processes(None).iter().filter(|p| is_helper(p)).count()
}

/// Waits until both agents left their three helpers each.
fn wait_for_helpers(fleet: &Fleet) {
    poll_until_showing(
        "the agents' helpers to start",
        DEADLINE,
        || (helpers(fleet) >= 6).then_some(()),
        || fleet.processes(None).join("\n"),
    );
}

/// Waits up to two seconds from `since` for no process of the home to be left.
#[track_caller]
fn assert_all_gone_within_two_seconds(fleet: &Fleet, since: Instant) {
    let gone = fleet.assert_no_processes_left_by(None, since + Duration::from_secs(2));
    eprintln!("every process gone {:?} after the signal", gone.duration_since(since));
}

/// Waits until every task is out of `in_progress`, and checks none was charged.
#[track_caller]
fn assert_released_uncharged(fleet: &Fleet, ids: &[String]) {
    for id in ids {
        let issue = poll_until(&format!("{id} to leave in_progress"), DEADLINE, || {
            Some(fleet.show(id)).filter(|issue| issue["status"] != "in_progress")
        });
        assert_eq!(issue["status"], "open", "{id}: {issue}");
        assert_eq!(counter(&issue, "failures"), 0, "{id}: {issue}");
    }
}

#[test]
fn ctrl_backslash_on_the_terminal_stops_the_run_gracefully_and_leaves_no_process() {
    let fleet = Fleet::new(&[]);
    let ids = tasks_with_helpers(&fleet);
    let mut run = Pty::spawn(fleet.ws.command(&["run"]), 120, 40);
    wait_for_helpers(&fleet);
    // Ctrl-\: the terminal sends SIGQUIT to its foreground process group.
    run.send(b"\x1c");
    let signalled = Instant::now();
    let status = run.wait(DEADLINE).expect("fleet run exits after Ctrl-\\");
    assert!(status.success(), "fleet run: {status:?}\n{}", run.text());
    assert!(run.text().contains("stopping 2 agents, grace 1 s"), "{}", run.text());
    assert_all_gone_within_two_seconds(&fleet, signalled);
    assert_released_uncharged(&fleet, &ids);
}

#[test]
fn sigkill_to_the_supervisors_process_group_leaves_no_process_and_releases_the_tasks() {
    use std::os::unix::process::CommandExt;
    let fleet = Fleet::new(&[]);
    let ids = tasks_with_helpers(&fleet);
    let mut command = fleet.ws.command(&["run"]);
    command.process_group(0);
    let run = Supervisor::spawn(command);
    wait_for_helpers(&fleet);
    let group = i32::try_from(run.pid()).expect("pid fits");
    // `kill -9 -- -PGID`.
    // SAFETY: signals the process group this test started.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
    let signalled = Instant::now();
    let _ = run.wait();
    assert_all_gone_within_two_seconds(&fleet, signalled);
    assert_released_uncharged(&fleet, &ids);
}

#[test]
fn a_restart_kills_what_a_dead_run_left_of_tasks_closed_meanwhile() {
    let fleet = Fleet::new(&[]);
    let marker: PathBuf = fleet.home().join("closed.marker");
    // The agent leaves helpers behind, closes its task, and lingers.
    let id = fleet.task(
        "Closes and lingers",
        &[
            "detach 300",
            "doublefork 300",
            "close",
            &format!("touch {}", marker.display()),
            "sleep 60",
        ],
    );
    let doomed = fleet.start(&[]);
    doomed.wait_until("the agent to close its task", || marker.exists().then_some(()));
    let guard = procs::guard_of(doomed.pid()).expect("fleet run starts a guard");
    for pid in [guard, doomed.pid()] {
        // SAFETY: SIGKILL to the test's child and its guard.
        unsafe { libc::kill(i32::try_from(pid).expect("pid fits"), libc::SIGKILL) };
    }
    let _ = doomed.wait();
    assert_eq!(fleet.show(&id)["status"], "closed");
    poll_until("the helpers to live on", DEADLINE, || (helpers(&fleet) >= 2).then_some(()));

    let restarted = fleet.start(&[]);
    let line = restarted.wait_for("the sweep", |l| l.starts_with("↩ killed "));
    assert!(line.contains("left by stopped runs of this workspace"), "{line}");
    assert_eq!(helpers(&fleet), 0, "{}", fleet.processes(None).join("\n"));
    restarted.stop().ok();
    fleet.assert_no_processes_left(None);
}
