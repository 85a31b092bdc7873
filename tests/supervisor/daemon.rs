//! The supervisor in the background: `fleet run --detach`, `fleet run status|stop|restart`,
//! the pid file (`$FLEET_HOME/state/fleet-run.pid`) and what happens to agents when the
//! background supervisor is stopped, killed, or refuses to stop. Each test waits on what it can
//! observe (a process gone, a file written, a task released) with the harness's deadline,
//! never on the CLI's own waits having been long enough.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::daemon::{Background, alive, pid_in, start_ticks, stat_fields};
use crate::common::{Run, wait_for};
use crate::harness::{DEADLINE, Fleet};

/// `fleet run --detach ARGS`.
fn detach(fleet: &Fleet, args: &[&str]) -> Run {
    let mut all = vec!["run", "--detach"];
    all.extend_from_slice(args);
    fleet.ws.run(&all)
}

/// `fleet run status --json`: the exit code and the document.
fn status(fleet: &Fleet) -> (i32, Value) {
    let run = fleet.ws.run(&["run", "status", "--json"]);
    let doc = run.json();
    (run.code, doc)
}

fn pid_file(fleet: &Fleet) -> PathBuf {
    fleet.home().join("state").join("fleet-run.pid")
}

/// Waits for the agent of `id`'s first attempt to start; returns its pid.
#[track_caller]
fn agent_pid(fleet: &Fleet, id: &str) -> u32 {
    wait_for(&format!("the agent of {id}"), || {
        let log = std::fs::read_to_string(fleet.task_file(id, "log.jsonl")).ok()?;
        log.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|line| line["event"] == "attempt_started")
            .and_then(|line| line["pid"].as_u64())
            .map(|pid| pid as u32)
    })
}

#[track_caller]
fn wait_gone(pid: u32) {
    wait_for(&format!("process {pid} to end"), || (!alive(pid)).then_some(()));
}

#[test]
fn detach_starts_a_session_leader_in_the_background_and_status_describes_it() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 30"]);

    let run = detach(&fleet, &["--as", "night-shift"]).ok();
    let pid = pid_in(&run.stdout);
    let background = Background::of(&fleet.ws, pid);
    let home = fleet.home().canonicalize().unwrap();
    assert!(
        run.stdout.starts_with(&format!("fleet run: started in the background (pid {pid})")),
        "{}",
        run.stdout
    );
    let log = home.join("logs").join("fleet-run.log");
    assert!(run.stdout.contains(&log.display().to_string()), "{}", run.stdout);

    // Up when --detach returns: registered, so `fleet tasks` sees it at once.
    let tasks = fleet.ws.json(&["tasks"]);
    assert_eq!(tasks["supervisors"][0]["name"], "night-shift", "{tasks:#}");
    assert_eq!(tasks["supervisors"][0]["pid"], pid);
    // Detached: its own session (no terminal), stdin from /dev/null, output to the log dir.
    let fields = stat_fields(pid).expect("the supervisor runs");
    assert_eq!(fields[3], pid.to_string(), "session leader: {fields:?}");
    assert_eq!(fields[4], "0", "no controlling terminal: {fields:?}");
    assert_eq!(fields[2], pid.to_string(), "process group leader: {fields:?}");
    let fd = |n: u32| std::fs::read_link(format!("/proc/{pid}/fd/{n}")).unwrap();
    assert_eq!(fd(0), Path::new("/dev/null"));
    assert_eq!(fd(1), home.join("logs").join("fleet-run.out"));
    assert_eq!(fd(2), home.join("logs").join("fleet-run.out"));

    agent_pid(&fleet, &id);
    let (code, doc) = status(&fleet);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["running"], true);
    assert_eq!(doc["pid"], pid);
    assert_eq!(doc["agents"], 1, "{doc:#}");
    assert_eq!(doc["max_concurrent"], 2);
    assert_eq!(doc["workspace"], home.join(".beads").display().to_string());
    assert_eq!(
        doc["argv"].as_array().unwrap()[1..],
        json!(["run", "--detach", "--as", "night-shift"]).as_array().unwrap()[..]
    );
    assert_eq!(doc["log"], log.display().to_string());
    assert_eq!(doc["pid_file"], pid_file(&fleet).display().to_string());
    assert!(doc["uptime_secs"].is_u64(), "{doc}");
    let started: jiff::Timestamp = doc["started_at"].as_str().unwrap().parse().unwrap();
    assert!(jiff::Timestamp::now().duration_since(started).as_secs() < 60, "{started}");
    let record: Value = serde_json::from_slice(&std::fs::read(pid_file(&fleet)).unwrap()).unwrap();
    assert_eq!(record["pid"], pid);
    assert_eq!(
        record["start_ticks"],
        start_ticks(pid).unwrap(),
        "the pid file keeps the start time"
    );

    let human = fleet.ws.run(&["run", "status"]).ok().stdout;
    assert!(human.starts_with(&format!("fleet run: running in the background (pid {pid}) since ")));
    assert!(human.contains("agents:    1 of 2 running"), "{human}");
    assert!(human.contains("fleet run --detach --as night-shift"), "{human}");
    // Its events reach the run log, not its output file.
    let logged = fleet.ws.run(&["log"]).ok().stdout;
    assert!(logged.contains("supervising as night-shift"), "{logged}");
    drop(background);
}

#[test]
fn stop_ends_the_supervisor_and_its_agents_and_releases_their_tasks_uncharged() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 30"]);
    let background = Background::start(&fleet.ws, &[]);
    let agent = agent_pid(&fleet, &id);
    assert!(alive(agent));

    let stopped = fleet.ws.json(&["run", "stop"]);

    assert_eq!(stopped["was_running"], true, "{stopped:#}");
    assert_eq!(stopped["pid"], background.pid);
    assert_eq!(stopped["forced"], false, "SIGTERM was enough: {stopped:#}");
    assert_eq!(stopped["leftovers_killed"], 0, "{stopped:#}");
    assert!(!alive(background.pid), "the supervisor is gone when stop returns");
    assert!(!alive(agent), "so is its agent");
    assert!(!pid_file(&fleet).exists());
    fleet.assert_no_processes_left(None);
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(
        fleet.comments(&id),
        ["[fleet] attempt 1: supervisor shutting down; released, not charged"]
    );
    let (code, doc) = status(&fleet);
    assert_eq!((code, &doc["running"]), (3, &json!(false)), "{doc:#}");
    // Nothing runs: stopping again is not an error.
    let again = fleet.ws.run(&["run", "stop"]).ok();
    assert!(again.stdout.contains("nothing to stop"), "{}", again.stdout);
}

/// The agent ignores SIGTERM and the grace is long, so the supervisor does not exit within
/// stop's timeout: stop kills it, and its guard kills the agent and what the agent started and
/// releases the task.
#[test]
fn stop_kills_a_supervisor_that_outlasts_the_timeout_and_leaves_no_agent_behind() {
    let fleet = Fleet::new(&[("shutdown_grace_secs", "60")]);
    let id = fleet.task("Stubborn", &["ignore-term"]);
    let background = Background::start(&fleet.ws, &[]);
    let agent = agent_pid(&fleet, &id);
    wait_for("the agent's grandchildren", || {
        (fleet.processes(Some(background.pid)).len() >= 3).then_some(())
    });

    let run = fleet.ws.run(&["run", "stop", "--timeout", "1", "--json"]).ok();
    let stopped = run.json();

    assert_eq!(stopped["forced"], true, "{stopped:#}");
    assert!(stopped["waited_secs"].as_f64().unwrap() >= 1.0, "{stopped:#}");
    assert!(!alive(background.pid));
    assert!(!pid_file(&fleet).exists());
    // Its guard kills the agent and what the agent started, and releases the task; however
    // long that takes on a loaded machine (stop gives it a while, then kills what is left).
    wait_gone(agent);
    wait_for("the run's processes to end", || fleet.processes(None).is_empty().then_some(()));
    let released = wait_for("the guard to release the task", || {
        let issue = fleet.show(&id);
        (issue["status"] == "open").then_some(issue)
    });
    assert_eq!(released["assignee"], Value::Null);
    let comments = fleet.comments(&id);
    assert!(
        comments.iter().any(|c| c.contains("stopped without releasing it; its agent was killed")),
        "{comments:?}"
    );
}

/// `kill -9` of the background supervisor: its agents die with it (the guard), and the pid
/// file it leaves is stale — reported, removed, exit 3.
#[test]
fn a_killed_background_supervisor_takes_its_agents_and_leaves_a_stale_pid_file() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 30"]);
    let background = Background::start(&fleet.ws, &[]);
    let agent = agent_pid(&fleet, &id);

    background.kill();
    wait_gone(background.pid);
    wait_gone(agent);
    fleet.assert_no_processes_left(None);
    assert!(pid_file(&fleet).exists(), "a killed supervisor cannot remove its pid file");

    let (code, doc) = status(&fleet);
    assert_eq!(code, 3, "{doc:#}");
    assert_eq!(doc["running"], false);
    assert_eq!(doc["stale"]["pid"], background.pid);
    let reason = doc["stale"]["reason"].as_str().unwrap();
    assert!(reason.contains(&format!("process {}", background.pid)), "{reason}");
    assert!(!pid_file(&fleet).exists(), "the stale pid file is removed");
    let (code, doc) = status(&fleet);
    assert_eq!(code, 3);
    assert_eq!(doc.get("stale"), None, "reported once: {doc:#}");
}

#[test]
fn restart_starts_a_new_supervisor_with_the_same_command_line() {
    let fleet = Fleet::new(&[]);
    let first = Background::start(&fleet.ws, &["--as", "sup"]);
    let (_, before) = status(&fleet);

    let run = fleet.ws.run(&["run", "restart", "--json"]).ok();
    let restarted = run.json();

    assert_eq!(restarted["stopped"]["pid"], first.pid, "{restarted:#}");
    assert_eq!(restarted["stopped"]["forced"], false);
    let pid = restarted["started"]["pid"].as_u64().unwrap() as u32;
    let second = Background::of(&fleet.ws, pid);
    assert_ne!(second.pid, first.pid);
    assert!(!alive(first.pid));
    let (code, after) = status(&fleet);
    assert_eq!(code, 0, "{after:#}");
    assert_eq!(after["pid"], second.pid);
    assert_eq!(after["argv"], before["argv"], "the same command line");
    let tasks = fleet.ws.json(&["tasks"]);
    let supervisors = tasks["supervisors"].as_array().unwrap();
    assert_eq!(supervisors.len(), 1, "{tasks:#}");
    assert_eq!(supervisors[0]["name"], "sup");
    assert_eq!(supervisors[0]["pid"], second.pid);
}

#[test]
fn restart_with_nothing_recorded_says_so_and_exits_3() {
    let fleet = Fleet::new(&[]);
    let run = fleet.ws.run(&["run", "restart"]).fails(3);
    assert!(run.stderr.starts_with("error: nothing to restart"), "{}", run.stderr);
    assert!(run.stderr.contains("fleet run --detach"), "{}", run.stderr);
}

/// Writes a pid file naming process `pid` with start time `ticks`.
fn write_pid_file(fleet: &Fleet, pid: u32, ticks: u64) {
    let record = json!({
        "pid": pid,
        "start_ticks": ticks,
        "boot_id": "",
        "started_at": "2026-01-01T00:00:00Z",
        "workspace": fleet.ws.beads_dir(),
        "argv": ["fleet", "run", "--detach"],
        "log": fleet.home().join("logs/fleet-run.log"),
        "output": fleet.home().join("logs/fleet-run.out"),
    });
    std::fs::create_dir_all(fleet.home().join("state")).unwrap();
    std::fs::write(pid_file(fleet), record.to_string()).unwrap();
}

#[test]
fn a_pid_file_of_a_dead_process_is_stale_and_removed() {
    let fleet = Fleet::new(&[]);
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    write_pid_file(&fleet, pid, 12345);

    let run = fleet.ws.run(&["run", "status"]).fails(3);

    assert!(run.stdout.starts_with("fleet run: not running in the background"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!("stale pid file: process {pid} is gone")),
        "{}",
        run.stdout
    );
    assert!(!pid_file(&fleet).exists());
}

/// The pid names a live process, but not the one recorded (its start time differs): stale,
/// and neither status nor stop touches that process.
#[test]
fn a_pid_file_whose_pid_names_another_program_is_stale_and_that_program_is_left_alone() {
    let fleet = Fleet::new(&[]);
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = sleeper.id();
    write_pid_file(&fleet, pid, start_ticks(pid).unwrap() + 1);

    let (code, doc) = status(&fleet);
    assert_eq!(code, 3, "{doc:#}");
    assert_eq!(doc["stale"]["pid"], pid);
    let reason = doc["stale"]["reason"].as_str().unwrap();
    assert!(reason.contains("now names another process (sleep"), "{reason}");
    assert!(!pid_file(&fleet).exists());

    write_pid_file(&fleet, pid, start_ticks(pid).unwrap() + 1);
    let stopped = fleet.ws.json(&["run", "stop"]);
    assert_eq!(stopped["was_running"], false, "{stopped:#}");
    assert!(stopped["stale"]["reason"].is_string(), "{stopped:#}");
    assert!(!pid_file(&fleet).exists());
    assert!(alive(pid), "another program's process is never signalled");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

#[test]
fn two_detaches_at_once_start_one_supervisor_and_the_other_names_it() {
    let fleet = Fleet::new(&[]);
    let spawn = || {
        fleet
            .ws
            .command(&["run", "--detach"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let runs: Vec<Run> = [a, b].map(|c| c.wait_with_output().unwrap().into()).into();

    let winners: Vec<&Run> = runs.iter().filter(|r| r.code == 0).collect();
    assert_eq!(winners.len(), 1, "{:?}", runs.iter().map(|r| &r.stderr).collect::<Vec<_>>());
    let pid = pid_in(&winners[0].stdout);
    let _background = Background::of(&fleet.ws, pid);
    let loser = runs.iter().find(|r| r.code != 0).unwrap();
    assert_eq!(loser.code, 1);
    // It names the winner once the winner's pid file is there; on a loaded machine it may have
    // stopped waiting for it while the winner was still starting.
    let named = loser.stderr.starts_with("error: a supervisor already runs in the background for ")
        && loser.stderr.contains(&format!("(pid {pid}, since "));
    let starting =
        loser.stderr.starts_with("error: a supervisor is starting in the background for ");
    assert!(named || starting, "{}", loser.stderr);
    let supervisors = fleet.ws.json(&["tasks"])["supervisors"].as_array().unwrap().len();
    assert_eq!(supervisors, 1);

    // And one more while it runs, the same way.
    let third = detach(&fleet, &[]).fails(1);
    assert!(third.stderr.contains(&format!("(pid {pid}, since ")), "{}", third.stderr);
}

#[test]
fn a_supervisor_that_fails_to_start_is_reported_with_its_last_lines() {
    let fleet = Fleet::new(&[]);
    fleet.write_config("max_concurrent = \"three\"\n");

    let run = detach(&fleet, &[]).fails(1);

    assert!(
        run.stderr.starts_with(
            "error: the supervisor stopped while starting (exit status: 1); the last lines of "
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("fleet-run.out:\n  error: "), "{}", run.stderr);
    assert!(run.stderr.contains("max_concurrent must be an integer"), "{}", run.stderr);
    assert!(!pid_file(&fleet).exists(), "no pid file for a supervisor that never came up");
    fleet.ws.run(&["run", "status"]).fails(3);
    fleet.assert_no_processes_left(None);
}

#[test]
fn run_control_commands_document_their_exit_codes_and_plain_run_still_takes_its_flags() {
    let fleet = Fleet::new(&[]);
    let help = fleet.ws.run(&["run", "status", "--help"]).ok().stdout;
    assert!(help.contains("0 when it runs, 3 when it does not"), "{help}");
    let help = fleet.ws.run(&["run", "--help"]).ok().stdout;
    for word in ["status", "stop", "restart", "--detach", "--until-idle", "--as"] {
        assert!(help.contains(word), "{word} in\n{help}");
    }
    // Flags and a control subcommand do not mix.
    fleet.ws.run(&["run", "--until-idle", "status"]).fails(2);
    fleet.ws.run(&["run", "stop", "--timeout", "soon"]).fails(2);
    // `fleet run` with its flags still runs in the foreground.
    let run = fleet.run_until_idle(&["--as", "fg"]).ok();
    assert_eq!(run.lines[0], "fleet run: supervising as fg, up to 2 agents at once (Ctrl-C stops)");
}

/// A background `--until-idle` run ends by itself and removes its own pid file (nothing stale
/// is left); its summary reaches its output file and the run log.
#[test]
fn a_background_until_idle_run_ends_by_itself_and_removes_its_pid_file() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Short job", &["sleep 1", "close done"]);
    let background = Background::start(&fleet.ws, &["--until-idle"]);

    wait_gone(background.pid);

    assert_eq!(fleet.show(&id)["status"], "closed");
    assert!(!pid_file(&fleet).exists(), "the supervisor removed its own pid file");
    let (code, doc) = status(&fleet);
    assert_eq!(code, 3);
    assert_eq!(doc.get("stale"), None, "{doc:#}");
    let output = std::fs::read_to_string(fleet.home().join("logs/fleet-run.out")).unwrap();
    assert!(output.ends_with("fleet run: 1 attempts — closed 1\n"), "{output}");
    let log = fleet.ws.run(&["log"]).ok().stdout;
    assert!(log.contains("INFO fleet run: 1 attempts — closed 1"), "{log}");
}

/// A supervisor started in a terminal (`fleet run`, no `--detach`) shows in `fleet run status`
/// as running in the foreground (exit 0), with its pid; once it stops, status says nothing
/// runs (exit 3).
#[test]
fn status_names_a_supervisor_running_in_the_foreground() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long", &["sleep 30"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);

    let (code, doc) = status(&fleet);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["running"], true);
    assert_eq!(doc["foreground"][0]["pid"], supervisor.pid(), "{doc:#}");
    assert!(doc.get("pid").is_none(), "no background supervisor: {doc:#}");
    let human = fleet.ws.run(&["run", "status"]).ok().stdout;
    assert!(
        human.contains("running in the foreground: ") && pid_in(&human) == supervisor.pid(),
        "{human}"
    );

    supervisor.stop();
    let (code, doc) = status(&fleet);
    assert_eq!(code, 3, "{doc:#}");
    assert!(doc.get("foreground").is_none(), "{doc:#}");
}

/// The first child of process `parent`, looked for without pause until one appears (or the
/// deadline passes): a test that kills the parent then catches it right after the fork.
#[track_caller]
fn first_child_of(parent: u32) -> u32 {
    let children = format!("/proc/{parent}/task/{parent}/children");
    let start = Instant::now();
    loop {
        let listed = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = listed.split_whitespace().next() {
            return pid.parse().unwrap();
        }
        assert!(start.elapsed() < DEADLINE, "process {parent} started no child");
        std::thread::yield_now();
    }
}

/// `fleet run --detach` SIGKILLed as soon as it has started the supervisor: the supervisor
/// writes its own pid file once it holds the home's lock, so it is still found — by status,
/// and by stop, which stops it — and the pid file names it, not the killed parent.
#[test]
fn a_detach_killed_right_after_the_spawn_leaves_a_supervisor_that_status_and_stop_find() {
    let fleet = Fleet::new(&[]);
    let mut parent = fleet
        .ws
        .command(&["run", "--detach"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = first_child_of(parent.id());
    parent.kill().unwrap();
    parent.wait().unwrap();
    let background = Background::of(&fleet.ws, pid);

    let record = wait_for("the supervisor's pid file", || {
        let bytes = std::fs::read(pid_file(&fleet)).ok()?;
        serde_json::from_slice::<Value>(&bytes).ok()
    });
    assert_eq!(record["pid"], pid, "{record:#}");
    assert_ne!(record["pid"], parent.id());
    assert_eq!(record["start_ticks"], start_ticks(pid).unwrap(), "{record:#}");
    assert_eq!(
        record["argv"].as_array().unwrap()[1..],
        json!(["run", "--detach"]).as_array().unwrap()[..]
    );
    let (code, doc) = wait_for("the supervisor to register", || {
        let (code, doc) = status(&fleet);
        doc["agents"].is_u64().then_some((code, doc))
    });
    assert_eq!((code, &doc["pid"]), (0, &json!(pid)), "{doc:#}");

    let stopped = fleet.ws.json(&["run", "stop"]);
    assert_eq!((&stopped["was_running"], &stopped["pid"]), (&json!(true), &json!(pid)));
    assert!(!alive(pid), "the supervisor is gone when stop returns");
    assert!(!pid_file(&fleet).exists());
    drop(background);
}
