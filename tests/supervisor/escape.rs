//! No signal leaves an agent unsupervised (issue 27): a Ctrl-\ on the supervisor's terminal
//! and a SIGKILL to its whole process group end every process of the run — the agents and the
//! helpers they left in their group, in a new session, and forked twice into a new session —
//! within two seconds, and the tasks go back to the queue uncharged. A restarted run kills
//! what a run whose guard also died left, also of tasks closed meanwhile.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::pty::Pty;
use crate::harness::{Fleet, Supervisor, counter};

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
    let start = Instant::now();
    while helpers(fleet) < 6 {
        assert!(
            start.elapsed() < crate::harness::DEADLINE,
            "the agents' helpers did not start:\n{}",
            fleet.processes(None).join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let start = Instant::now();
    for id in ids {
        loop {
            let issue = fleet.show(id);
            if issue["status"] != "in_progress" {
                assert_eq!(issue["status"], "open", "{id}: {issue}");
                assert_eq!(counter(&issue, "failures"), 0, "{id}: {issue}");
                break;
            }
            assert!(start.elapsed() < crate::harness::DEADLINE, "{id} still in progress");
            std::thread::sleep(Duration::from_millis(50));
        }
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
    let status = run.wait(crate::harness::DEADLINE).expect("fleet run exits after Ctrl-\\");
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

/// The pid of the `fleet guard` child of `supervisor`.
fn guard_of(supervisor: u32) -> u32 {
    let entries = std::fs::read_dir("/proc").expect("/proc");
    entries
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            crate::harness::is_guard_of(&stat, &cmdline, supervisor).then_some(pid)
        })
        .expect("fleet run starts a guard")
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
    let guard = guard_of(doomed.pid());
    for pid in [guard, doomed.pid()] {
        // SAFETY: SIGKILL to the test's child and its guard.
        unsafe { libc::kill(i32::try_from(pid).expect("pid fits"), libc::SIGKILL) };
    }
    let _ = doomed.wait();
    assert_eq!(fleet.show(&id)["status"], "closed");
    let start = Instant::now();
    while helpers(&fleet) < 2 {
        assert!(start.elapsed() < crate::harness::DEADLINE, "the helpers live on");
        std::thread::sleep(Duration::from_millis(20));
    }

    let restarted = fleet.start(&[]);
    let line = restarted.wait_for("the sweep", |l| l.starts_with("↩ killed "));
    assert!(line.contains("left by stopped runs of this workspace"), "{line}");
    assert_eq!(helpers(&fleet), 0, "{}", fleet.processes(None).join("\n"));
    restarted.stop().ok();
    fleet.assert_no_processes_left(None);
}
