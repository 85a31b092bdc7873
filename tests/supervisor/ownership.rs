//! Exactly one agent per task, and no agent outlives its supervisor: real supervisors, real
//! agents, real signals.
//!
//! The fake agent's `exclusive DIR` directive is the overlap detector: each agent takes an
//! exclusive lock on `DIR/<task>.lock` for its whole life and logs `start <task> <pid>` to
//! `DIR/runs.log`, or `OVERLAP <task> <pid>` if another agent of the same task still holds the
//! lock. The kernel drops the lock when the process dies, however it dies, so an `OVERLAP` line
//! means two agents were alive on one task at the same moment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::procs;
use crate::harness::{Fleet, Supervisor, counter};

fn runs_dir(fleet: &Fleet) -> PathBuf {
    let dir = fleet.home().join("runs");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn runs_log(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// How many agents started on `id` so far.
fn starts_of(dir: &Path, id: &str) -> usize {
    runs_log(dir).iter().filter(|l| l.starts_with(&format!("start {id} "))).count()
}

#[track_caller]
fn assert_no_overlap(dir: &Path) {
    let log = runs_log(dir);
    let overlaps: Vec<&String> = log.iter().filter(|l| l.starts_with("OVERLAP")).collect();
    assert!(overlaps.is_empty(), "two agents ran on one task at once:\n{}", log.join("\n"));
}

/// Waits until `n` agents have started (in all).
fn wait_for_starts(supervisor: &Supervisor, dir: &Path, n: usize) {
    supervisor.wait_until(&format!("{n} agents to start"), || {
        (runs_log(dir).iter().filter(|l| l.starts_with("start ")).count() >= n).then_some(())
    });
}

fn kill9(pid: u32) {
    // SAFETY: SIGKILL to a child process of this test.
    let rc = unsafe { libc::kill(i32::try_from(pid).unwrap(), libc::SIGKILL) };
    assert_eq!(rc, 0);
}

/// Pids of the processes of the home whose environment carries `FLEET_TASK_ID=<id>`: the
/// task's agent and what it started.
fn agent_pids(fleet: &Fleet, id: &str) -> Vec<u32> {
    let marker = format!("FLEET_TASK_ID={id}");
    procs::of_home_tagged(fleet.home(), &marker).iter().map(|p| p.pid as u32).collect()
}

/// How many processes of the home run exactly `command` (the helpers the fake agent leaves:
/// `sleep 300`).
fn running(fleet: &Fleet, command: &str) -> usize {
    procs::of_home(fleet.home(), None).iter().filter(|p| p.cmdline.trim() == command).count()
}

/// Waits until the agents of `tasks_leaving_jobs_behind` have left both their jobs each.
fn wait_for_jobs_left_behind(supervisor: &Supervisor, fleet: &Fleet, agents: usize) {
    supervisor.wait_until(&format!("{agents} agents to leave their jobs behind"), || {
        (running(fleet, "sleep 300") >= 2 * agents).then_some(())
    });
}

/// How many processes of the task's agents are running.
fn agent_processes(fleet: &Fleet, id: &str) -> usize {
    agent_pids(fleet, id).len()
}

/// Waits up to `limit` for no process of the home to be left; returns how long it took.
#[track_caller]
fn wait_no_processes(fleet: &Fleet, except: Option<u32>, limit: Duration) -> Duration {
    let start = Instant::now();
    fleet.assert_no_processes_left_by(except, start + limit).duration_since(start)
}

#[test]
fn two_supervisors_on_one_home_run_every_task_exactly_once() {
    let fleet = Fleet::new(&[("max_concurrent", "2")]);
    let dir = runs_dir(&fleet);
    let script = format!("exclusive {}", dir.display());
    let ids: Vec<String> = (1..=6)
        .map(|n| fleet.task(&format!("Job {n}"), &[&script, "sleep 0.5", "close"]))
        .collect();

    let first = fleet.start(&["--until-idle"]);
    wait_for_starts(&first, &dir, 1);
    let second = fleet.start(&["--until-idle"]);
    let (a, b) = (first.wait().ok(), second.wait().ok());

    assert_no_overlap(&dir);
    for id in &ids {
        assert_eq!(starts_of(&dir, id), 1, "{id} ran once\n{}\n{}", a.stdout(), b.stdout());
        assert_eq!(fleet.show(id)["status"], "closed", "{id}");
    }
    // Neither run took the other's tasks back as "stale".
    assert!(
        a.starting("↩").is_empty() && b.starting("↩").is_empty(),
        "{}\n{}",
        a.stdout(),
        b.stdout()
    );
}

/// A home with `n` tasks whose agents leave a background job in their group and another in a
/// new session, run two at a time; returns it with the overlap detector's directory and the
/// task ids.
fn tasks_leaving_jobs_behind(n: usize) -> (Fleet, PathBuf, Vec<String>) {
    let fleet = Fleet::new(&[("max_concurrent", "2")]);
    let dir = runs_dir(&fleet);
    let script = format!("exclusive {}", dir.display());
    let steps = [script.as_str(), "background 300", "detach 300", "sleep 2", "close"];
    let ids = (1..=n).map(|k| fleet.task(&format!("Job {k}"), &steps)).collect();
    (fleet, dir, ids)
}

#[test]
fn kill_9_of_a_supervisor_leaves_no_process_and_a_restart_never_doubles_an_agent() {
    let (fleet, dir, ids) = tasks_leaving_jobs_behind(3);
    let doomed = fleet.start(&[]);
    wait_for_starts(&doomed, &dir, 2);
    wait_for_jobs_left_behind(&doomed, &fleet, 2);
    kill9(doomed.pid());
    let _ = doomed.wait();
    // The agents, their background children and the ones in a new session are all gone.
    let took = wait_no_processes(&fleet, None, Duration::from_secs(2));
    eprintln!("processes gone {took:?} after kill -9");
    // The guard released what the dead supervisor held, without charging it.
    for id in &ids {
        let issue = fleet.show(id);
        assert_ne!(issue["status"], "in_progress", "{id}: {issue}");
        assert_eq!(counter(&issue, "failures"), 0, "{id}");
    }

    let restarted = fleet.start(&["--until-idle"]).wait().ok();
    assert_no_overlap(&dir);
    for id in &ids {
        assert_eq!(fleet.show(id)["status"], "closed", "{id}\n{}", restarted.stdout());
    }
    fleet.assert_no_processes_left(None);
}

#[test]
fn a_live_peer_takes_over_the_tasks_of_a_supervisor_killed_with_sigkill() {
    let fleet = Fleet::new(&[("max_concurrent", "2")]);
    let dir = runs_dir(&fleet);
    let script = format!("exclusive {}", dir.display());
    let ids: Vec<String> = (1..=6)
        .map(|n| fleet.task(&format!("Job {n}"), &[&script, "background 300", "sleep 1", "close"]))
        .collect();

    let doomed = fleet.start(&[]);
    wait_for_starts(&doomed, &dir, 2);
    let survivor = fleet.start(&[]);
    wait_for_starts(&survivor, &dir, 4);
    kill9(doomed.pid());
    let _ = doomed.wait();
    survivor.wait_until("every task closed", || {
        ids.iter().all(|id| fleet.show(id)["status"] == "closed").then_some(())
    });
    let run = survivor.stop().ok();
    assert_no_overlap(&dir);
    assert!(run.lines.iter().all(|l| !l.contains("shutdown")), "{}", run.stdout());
    fleet.assert_no_processes_left(None);
}

/// Starts a supervisor on one long task and waits until its agent runs.
fn running_task(fleet: &Fleet, dir: &Path) -> (Supervisor, String) {
    let script = format!("exclusive {}", dir.display());
    let id = fleet.task("Long job", &[&script, "sleep 60", "close"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_until("the agent to start", || (starts_of(dir, &id) == 1).then_some(()));
    (supervisor, id)
}

/// Runs `command` on the running task and checks its agent is gone within a second, with a
/// comment saying who did what; returns the supervisor for more checks.
#[track_caller]
fn change_stops_the_agent(command: &[&str], says: &str) -> (Fleet, Supervisor, String, PathBuf) {
    let fleet = Fleet::new(&[("max_concurrent", "2"), ("shutdown_grace_secs", "5")]);
    let dir = runs_dir(&fleet);
    let (supervisor, id) = running_task(&fleet, &dir);
    let mut args: Vec<&str> = command.to_vec();
    args.insert(1, &id);
    let first_agent = agent_pids(&fleet, &id);
    assert!(!first_agent.is_empty(), "the agent runs");
    let changed = Instant::now();
    fleet.ws.run(&args).ok();
    supervisor.wait_until("the agent to stop", || {
        first_agent.iter().all(|pid| !procs::alive(*pid)).then_some(())
    });
    let took = changed.elapsed();
    assert!(
        took <= Duration::from_secs(1),
        "the agent stopped {took:?} after `{}`",
        args.join(" ")
    );
    supervisor.wait_for("the revocation line", |l| l.starts_with(&format!("■ {id}: ")));
    supervisor.wait_finished(&id, 1);
    let comments = fleet.comments(&id);
    assert!(
        comments
            .iter()
            .any(|c| c.starts_with("[fleet] attempt 1: agent stopped: ") && c.contains(says)),
        "{comments:?}"
    );
    (fleet, supervisor, id, dir)
}

#[test]
fn releasing_a_running_task_stops_its_agent_and_never_yields_a_second_one() {
    let (fleet, supervisor, id, dir) = change_stops_the_agent(&["release"], "released the task");
    // The supervisor claims it again, once the first agent is gone.
    supervisor.wait_started(&id, 2);
    supervisor.wait_until("the second agent", || (starts_of(&dir, &id) == 2).then_some(()));
    assert_no_overlap(&dir);
    drop(supervisor);
    drop(fleet);
}

#[test]
fn closing_a_running_task_stops_its_agent() {
    let (fleet, supervisor, id, _) =
        change_stops_the_agent(&["close", "--reason", "not needed"], "closed the task");
    assert_eq!(fleet.show(&id)["status"], "closed");
    assert_eq!(fleet.show(&id)["close_reason"], "not needed");
    supervisor.stop().ok();
}

#[test]
fn blocking_a_running_task_stops_its_agent() {
    let (fleet, supervisor, id, _) =
        change_stops_the_agent(&["update", "--status", "blocked"], "set the task to blocked");
    assert_eq!(fleet.show(&id)["status"], "blocked");
    supervisor.stop().ok();
}

#[test]
fn sighup_releases_uncharged_and_leaves_no_process() {
    let fleet = Fleet::new(&[]);
    let dir = runs_dir(&fleet);
    let (supervisor, id) = running_task(&fleet, &dir);
    supervisor.signal(libc::SIGHUP);
    let run = supervisor.wait().ok();
    assert!(
        run.lines
            .iter()
            .any(|l| l == "stopping 1 agent, grace 1 s; press Ctrl-C again to kill now"),
        "{}",
        run.stdout()
    );
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(counter(&issue, "failures"), 0);
    fleet.assert_no_processes_left(None);
}

#[test]
fn the_first_ctrl_c_says_what_it_waits_for_and_the_second_kills_at_once() {
    let fleet = Fleet::new(&[("shutdown_grace_secs", "60")]);
    let id = fleet.task("Stubborn", &["ignore-term"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    // The agent ignores SIGTERM before it starts its two grandchildren that ignore it too.
    supervisor.wait_until("the agent's grandchildren to run", || {
        (running(&fleet, "sleep 1000") >= 2).then_some(())
    });
    supervisor.signal(libc::SIGINT);
    let asked = Instant::now();
    supervisor.wait_for("the stopping line", |l| {
        l == "stopping 1 agent, grace 60 s; press Ctrl-C again to kill now"
    });
    assert!(asked.elapsed() < Duration::from_secs(2), "said at once");
    supervisor.signal(libc::SIGINT);
    let run = supervisor.wait().ok();
    assert!(asked.elapsed() < Duration::from_secs(15), "the second Ctrl-C cut the 60 s grace");
    assert!(run.lines.iter().any(|l| l.starts_with("killing 1 agents now")), "{}", run.stdout());
    assert_eq!(fleet.show(&id)["status"], "open");
    fleet.assert_no_processes_left(None);
}

#[test]
fn two_hundred_attempts_leaving_background_children_leave_no_zombie_and_no_leftover() {
    let fleet = Fleet::new(&[("max_concurrent", "4")]);
    let ids: Vec<String> = (1..=200)
        .map(|n| fleet.task(&format!("Short {n}"), &["background 300", "detach 300", "close"]))
        .collect();
    let supervisor = fleet.start(&[]);
    supervisor.wait_until_within(Duration::from_secs(420), "200 tasks closed", || {
        (supervisor.count(|l| l.starts_with("✓ ")) >= ids.len()).then_some(())
    });
    // The last attempts' clean-up ends, while the supervisor still runs.
    let left = || -> Vec<String> {
        fleet
            .processes(Some(supervisor.pid()))
            .into_iter()
            .filter(|p| !p.contains(" guard "))
            .collect()
    };
    crate::common::poll_until_showing(
        "no leftovers while running",
        crate::harness::DEADLINE,
        || left().is_empty().then_some(()),
        || left().join("\n"),
    );
    assert_eq!(procs::zombies_of(supervisor.pid()), 0);
    supervisor.stop().ok();
    fleet.assert_no_processes_left(None);
}

#[test]
fn a_missing_coder_binary_pauses_the_coder_and_charges_no_task() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(
        &[("coder", "\"ghost\""), ("max_concurrent", "3")],
        "\n[coders.ghost]\nargv = [\"/nonexistent/ghost-agent\", \"{prompt}\"]\n",
    );
    let ids: Vec<String> = (1..=3).map(|n| fleet.task(&format!("Job {n}"), &[])).collect();
    let left: Vec<String> = ids.iter().map(|id| format!("{id} open (coder-paused)")).collect();
    let run =
        fleet.run_until_idle(&[]).unfinished(&left.iter().map(String::as_str).collect::<Vec<_>>());

    let pauses = run.starting("⏸ ghost paused until ");
    assert_eq!(pauses.len(), 1, "{}", run.stdout());
    assert!(pauses[0].contains("(cannot start)"), "{}", pauses[0]);
    assert!(pauses[0].contains("/nonexistent/ghost-agent"), "{}", pauses[0]);
    assert_eq!(run.starting("  fix: ").len(), 1, "the fix is printed once\n{}", run.stdout());
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "open", "{id}");
        assert_eq!(counter(&issue, "failures"), 0, "{id}");
        assert_eq!(counter(&issue, "attempts"), 0, "{id}: a failed spawn is not an attempt");
        assert_eq!(issue["fleet"]["coder"], serde_json::Value::Null, "{id}: nothing frozen");
    }
    assert!(fleet.home().join("state/pauses.json").is_file());

    // Nothing was frozen on the tasks, so fixing the config is enough.
    fleet.ws.run(&["config", "set", "coder=fake"]).ok();
    let fixed = fleet.run_until_idle(&[]).ok();
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "closed", "{id}\n{}", fixed.stdout());
        assert_eq!(issue["fleet"]["coder"], "fake", "{id}: frozen at the first attempt that ran");
    }
}

/// A second coder, `other`, running the fake agent as `fake` does.
fn other_coder() -> String {
    format!(
        "\n[coders.other]\nargv = [{:?}, \"fake-agent\", \"{{prompt}}\"]\nevents = \"claude\"\n",
        crate::common::fleet_bin().display().to_string()
    )
}

/// The line of an `--until-idle` run that found nothing it may start: the supervisor's
/// explicit word that nothing happens.
const IDLE: &str = "nothing more can run without help — paused: ";

#[test]
fn a_cli_that_is_not_logged_in_pauses_its_coder_while_other_coders_work_on() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[], &other_coder());
    let locked_out = fleet.task("Needs login", &["authfail"]);
    let fine = fleet.task_with("Other coder", &["close"], &["--coder", "other"]);
    let supervisor = fleet.start(&[]);
    let pause = supervisor.wait_for("the pause", |l| l.starts_with("⏸ fake paused until "));
    assert!(pause.contains("(not logged in)") && pause.contains("Not logged in"), "{pause}");
    supervisor.wait_until("the other coder's task to close", || {
        (fleet.show(&fine)["status"] == "closed").then_some(())
    });
    let run = supervisor.stop().ok();
    let issue = fleet.show(&locked_out);
    assert_eq!(issue["status"], "open", "{}", run.stdout());
    assert_eq!(counter(&issue, "failures"), 0);
    let comments = fleet.comments(&locked_out);
    assert!(
        comments.iter().any(|c| c.contains("not logged in") && c.contains("not charged")),
        "{comments:?}"
    );
}

#[test]
fn a_provider_outage_pauses_the_coder_and_charges_no_task() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[("max_concurrent", "1")], &other_coder());
    let ids: Vec<String> =
        (1..=3).map(|n| fleet.task(&format!("Job {n}"), &["overloaded"])).collect();
    let supervisor = fleet.start(&[]);
    let pause = supervisor.wait_for("the pause", |l| l.starts_with("⏸ fake paused until "));
    assert!(pause.contains("(provider outage)") && pause.contains("529"), "{pause}");
    // A task of another coder, ready after the pause: once it has run, the supervisor has
    // looked at the queue with the pause in force, and passed over the paused coder's tasks.
    let probe = fleet.task_with("Probe", &["close"], &["--coder", "other"]);
    supervisor.wait_for("the probe to close", |l| l.starts_with(&format!("✓ {probe} closed")));
    let run = supervisor.stop().ok();
    let fake = run.starting("▶ ").into_iter().filter(|l| l.contains(" (fake")).count();
    assert_eq!(fake, 1, "no spawn while paused\n{}", run.stdout());
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "open", "{id}");
        assert_eq!(counter(&issue, "failures"), 0, "{id}");
    }
}

#[test]
fn a_rate_limit_pause_survives_a_restart() {
    let fleet = Fleet::new(&[]);
    let limited = fleet.task("Hits the limit", &["ratelimit five_hour"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the pause", |l| l.starts_with("⏸ fake paused until "));
    supervisor.wait_finished(&limited, 1);
    supervisor.stop().ok();

    let waiting = fleet.task("Waits", &["close"]);
    let again = fleet.start(&["--until-idle"]);
    again.wait_for("the carried-over pause", |l| l.starts_with("⏸ fake paused until "));
    // The supervisor looks at the queue and finds nothing it may start.
    let idle = again.wait_for("the idle line", |l| l.starts_with(IDLE));
    assert!(idle.contains("fake: rate limit until "), "{idle}");
    let run = again.wait().ok();
    assert!(run.starting("▶ ").is_empty(), "nothing starts while paused\n{}", run.stdout());
    assert_eq!(fleet.show(&waiting)["status"], "open");
}

#[test]
fn an_exec_command_that_blocks_its_own_task_is_not_closed_on_exit_zero() {
    let fleet = Fleet::new(&[]);
    let id = fleet.ws.create(
        "Ask a human",
        &[
            "--coder",
            "exec",
            "-d",
            "bd update $FLEET_TASK_ID --status blocked --notes 'QUESTION: which database?'",
        ],
    );
    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (blocked-by-agent)")]);
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked", "{}", run.stdout());
    assert!(issue["notes"].as_str().unwrap_or_default().contains("QUESTION: which database?"));
}

#[test]
fn a_window_above_the_threshold_pauses_new_spawns_but_lets_the_agent_finish() {
    let fleet = Fleet::new(&[("max_concurrent", "1"), ("rate_limit_threshold_pct", "90")]);
    let busy = fleet.task_with("Uses the window", &["nearlimit 95", "close"], &["--priority", "0"]);
    let next = fleet.task_with("Would start next", &["close"], &["--priority", "2"]);
    let supervisor = fleet.start(&["--until-idle"]);
    let pause = supervisor.wait_for("the early pause", |l| l.starts_with("⏸ fake paused until "));
    assert!(pause.contains("95% used"), "{pause}");
    supervisor.wait_finished(&busy, 1);
    // With the agent done, the supervisor looks at the queue and finds nothing it may start.
    let idle = supervisor.wait_for("the idle line", |l| l.starts_with(IDLE));
    assert!(idle.contains("fake: rate limit until "), "{idle}");
    let run = supervisor.wait().ok();
    assert_eq!(
        fleet.show(&busy)["status"],
        "closed",
        "the running agent went on\n{}",
        run.stdout()
    );
    assert_eq!(fleet.show(&next)["status"], "open", "no new spawn\n{}", run.stdout());
    assert_eq!(run.starting("▶ ").len(), 1, "{}", run.stdout());
}

#[test]
fn a_window_below_the_threshold_pauses_nothing() {
    let fleet = Fleet::new(&[("max_concurrent", "1"), ("rate_limit_threshold_pct", "90")]);
    let first = fleet.task_with("Uses some", &["nearlimit 80", "close"], &["--priority", "0"]);
    let second = fleet.task_with("Runs next", &["close"], &["--priority", "2"]);
    let run = fleet.run_until_idle(&[]).ok();
    assert!(run.starting("⏸").is_empty(), "{}", run.stdout());
    for id in [&first, &second] {
        assert_eq!(fleet.show(id)["status"], "closed");
    }
}

#[test]
fn when_the_guard_dies_too_the_restarted_run_kills_the_survivors_before_rerunning() {
    let (fleet, dir, ids) = tasks_leaving_jobs_behind(2);
    let doomed = fleet.start(&[]);
    wait_for_starts(&doomed, &dir, 2);
    wait_for_jobs_left_behind(&doomed, &fleet, 2);
    let guard = procs::guard_of(doomed.pid()).expect("fleet run starts a guard");
    kill9(guard);
    kill9(doomed.pid());
    let _ = doomed.wait();
    // The agents die with their supervisor; what they started lives on, unsupervised.
    crate::common::wait_for("the agents to die with their supervisor", || {
        let agents = procs::of_home(fleet.home(), None);
        (!agents.iter().any(|p| p.cmdline.contains(" fake-agent "))).then_some(())
    });
    let orphans = fleet.processes(None);
    assert!(!orphans.is_empty(), "the background jobs outlive a supervisor killed with its guard");
    for id in &ids {
        assert_eq!(fleet.show(id)["status"], "in_progress", "{id}: nobody released it yet");
    }

    let restarted = fleet.start(&["--until-idle"]).wait().ok();
    let released = restarted.starting("↩ ");
    assert_eq!(released.len(), 2, "{}", restarted.stdout());
    assert!(
        released.iter().all(|l| l.contains("is no longer running") && l.contains("killed")),
        "{released:?}"
    );
    assert_no_overlap(&dir);
    for id in &ids {
        assert_eq!(fleet.show(id)["status"], "closed", "{id}\n{}", restarted.stdout());
    }
    fleet.assert_no_processes_left(None);
}

/// Issue 27: an agent whose task someone else changed is stopped at once — a short grace, not
/// the shutdown grace — even one that ignores SIGTERM (Claude Code takes about two seconds to
/// exit on it).
#[test]
fn a_released_task_stops_even_a_slow_agent_within_a_second() {
    let fleet = Fleet::new(&[("shutdown_grace_secs", "30")]);
    let id = fleet.task("Stubborn", &["ignore-term"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    supervisor.wait_until("the agent", || (agent_processes(&fleet, &id) >= 1).then_some(()));
    let pids = agent_pids(&fleet, &id);
    let released = Instant::now();
    fleet.ws.run(&["release", &id]).ok();
    supervisor
        .wait_until("the agent to stop", || pids.iter().all(|p| !procs::alive(*p)).then_some(()));
    let took = released.elapsed();
    assert!(took < Duration::from_secs(1), "the agent stopped {took:?} after the release");
    supervisor.stop().ok();
}
