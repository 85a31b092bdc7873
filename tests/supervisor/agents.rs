//! What the supervisor records when an agent closes its task, crashes, stops early, asks a
//! question, or runs out of context — checked through `fleet show --json` as a user would.

use std::path::Path;

use crate::harness::{Fleet, counter};

#[test]
fn agent_closes_its_task_with_bd_from_another_project() {
    let fleet = Fleet::new(&[]);
    // The agent works in a project that has its own `.beads/`: its `bd close` must still reach
    // the central queue (BEADS_DIR), through the `bd` fleet links into $FLEET_HOME/bin.
    let project = tempfile::tempdir().unwrap();
    let project_beads = project.path().join(".beads");
    fleet.ws.run(&["--db", project_beads.to_str().unwrap(), "init", "--prefix", "proj"]).ok();
    let id = fleet.task_with(
        "Fix the login form",
        &["touch ran-here.txt", "close fixed the form"],
        &["--cwd", project.path().to_str().unwrap()],
    );

    let run = fleet.run_until_idle(&[]).ok();

    assert!(run.starting(&format!("▶ {id} attempt 1 (fake)")).len() == 1, "{}", run.stdout());
    assert!(
        run.starting(&format!("✓ {id} closed: [fleet] attempt 1: closed (fixed the form)")).len()
            == 1,
        "{}",
        run.stdout()
    );
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — closed 1");
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "closed");
    assert_eq!(issue["close_reason"], "fixed the form");
    assert_eq!(counter(&issue, "attempts"), 1);
    assert_eq!(counter(&issue, "failures"), 0);
    assert!(project.path().join("ran-here.txt").exists(), "the agent ran in the task's cwd");
    let project_issues = fleet.ws.json(&["--db", project_beads.to_str().unwrap(), "list", "--all"]);
    assert_eq!(project_issues, serde_json::json!([]), "nothing reached the project's own queue");
    for tool in ["bd", "fleet"] {
        let link = std::fs::read_link(fleet.home().join("bin").join(tool)).unwrap();
        assert_eq!(link, crate::common::fleet_bin(), "$FLEET_HOME/bin/{tool}");
    }
}

#[test]
fn crash_is_retried_with_backoff_then_blocked_with_the_stderr_tail() {
    let fleet =
        Fleet::new(&[("max_failures", "2"), ("retry_backoff_secs", "1"), ("max_concurrent", "1")]);
    let id = fleet.task("Flaky migration", &["exit 3"]);

    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (failure-blocked)")]);

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked");
    assert_eq!(issue["assignee"], serde_json::Value::Null);
    assert_eq!(counter(&issue, "attempts"), 2);
    assert_eq!(counter(&issue, "failures"), 0, "blocking resets the count for a human retry");
    assert_eq!(
        issue["notes"],
        "[fleet] retry limit (2) exhausted; last failure: exited with code 3"
    );
    let comments = fleet.comments(&id);
    assert_eq!(comments.len(), 2, "{comments:#?}");
    assert_eq!(
        comments[0],
        "[fleet] attempt 1: the agent exited with code 3; failure 1 of 2, retrying after 1s.\n\
         reason:\nfake agent: exiting with 3"
    );
    assert_eq!(
        comments[1],
        "[fleet] attempt 2: the agent exited with code 3; failure 2 of 2 — retry limit reached, \
         blocked.\nreason:\nfake agent: exiting with 3"
    );
    assert_eq!(
        run.lines.last().unwrap(),
        "fleet run: 2 attempts — failure-blocked 1, failure-retry 1"
    );
    // The backoff held the retry back: attempt 2 started at least 1 s after attempt 1 ended.
    let ended: jiff::Timestamp =
        fleet.runner_lines(&id, "attempt_finished")[0]["ts"].as_str().unwrap().parse().unwrap();
    let restarted: jiff::Timestamp =
        fleet.runner_lines(&id, "attempt_started")[1]["ts"].as_str().unwrap().parse().unwrap();
    assert!(
        restarted.duration_since(ended) >= jiff::SignedDuration::from_millis(900),
        "retry started {} after the failure",
        restarted.duration_since(ended)
    );
    let stderr = std::fs::read_to_string(fleet.task_file(&id, "log.stderr")).unwrap();
    assert_eq!(stderr, "fake agent: exiting with 3\nfake agent: exiting with 3\n");
}

#[test]
fn exit_without_close_is_requeued_a_bounded_number_of_times_then_blocked() {
    let fleet = Fleet::new(&[("max_noclose", "3")]);
    let id = fleet.task("Never finishes", &["say I think I am done"]);

    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (noclose-blocked)")]);

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked");
    assert_eq!(counter(&issue, "attempts"), 3, "three runs, then it stops: no endless loop");
    assert_eq!(counter(&issue, "failures"), 0, "stopping early is not a crash");
    assert_eq!(issue["notes"], "[fleet] noclose limit reached");
    let comments = fleet.comments(&id);
    assert!(comments[0].contains("exited 0 without closing the task (1 of 3 allowed)"));
    assert!(comments[1].contains("exited 0 without closing the task (2 of 3 allowed)"));
    assert!(comments[2].contains("3 times in a row; blocked so it does not loop"));
    assert_eq!(run.starting("▶ ").len(), 3, "{}", run.stdout());
}

#[test]
fn agent_blocking_with_a_question_is_left_blocked_for_a_human() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Choose a palette", &["block Which brand colour should the header use?"]);

    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (blocked-by-agent)")]);

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked");
    assert_eq!(issue["assignee"], serde_json::Value::Null, "the lease is cleared");
    assert_eq!(issue["notes"], "QUESTION: Which brand colour should the header use?");
    assert_eq!(counter(&issue, "attempts"), 1);
    assert_eq!(counter(&issue, "failures"), 0);
    let comments = fleet.comments(&id);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].contains("the agent marked the task blocked; it waits for a human"));
    assert!(run.starting(&format!("• {id} blocked-by-agent: ")).len() == 1, "{}", run.stdout());
    // Not retried: the run ended after the one attempt.
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — blocked-by-agent 1");
}

#[test]
fn context_pressure_releases_without_charge_and_the_next_run_starts_fresh() {
    let fleet = Fleet::new(&[("context_pressure_threshold_pct", "90")]);
    // First run: the prompt grows to 95 % of the 200k window and the agent goes on working
    // (sleeping), so the supervisor stops it at 90 % before it could close — without the
    // sleep, its `bd close` could land before the stop. The stop comes before the sleep's
    // `once` marker is written, so the second run sleeps too, then finishes.
    let id = fleet.task("Big refactor", &["once context 95", "once sleep 3", "close refactored"]);

    let run = fleet.run_until_idle(&[]).ok();

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "closed");
    assert_eq!(counter(&issue, "attempts"), 2);
    assert_eq!(counter(&issue, "failures"), 0, "context pressure is not charged");
    let comments = fleet.comments(&id);
    assert_eq!(
        comments[0],
        "[fleet] attempt 1: context pressure (190000 of 200000 tokens); released, not charged — \
         the next run starts fresh from the artifacts"
    );
    assert_eq!(comments[1], "[fleet] attempt 2: closed (refactored)");
    assert!(run.starting(&format!("• {id} context-pressure: ")).len() == 1, "{}", run.stdout());
    // Each attempt is a fresh session: two session starts in the events.
    let sessions = fleet
        .json_lines(&id, "events.jsonl")
        .into_iter()
        .filter(|e| e["kind"] == "session_started")
        .count();
    assert_eq!(sessions, 2);
    let finished = fleet.runner_lines(&id, "attempt_finished");
    assert!(finished[0]["outcome"].as_str().unwrap().starts_with("context pressure ("));
    assert!(Path::new(&fleet.task_file(&id, "artifacts")).is_dir());
}

#[test]
fn agent_that_cannot_start_blocks_its_task_with_the_reason() {
    let fleet = Fleet::new(&[]);
    let ghost = "\n[coders.ghost]\nargv = [\"/nonexistent/agent\", \"{prompt}\"]\n";
    fleet.configure_with(&[], &format!("{ghost}\n[coders.nope]\nargv = [\"true\"]\n"));
    let unknown = fleet.task_with("Unknown coder", &["close"], &["--coder", "nope"]);
    let nowhere = fleet.task_with("Missing cwd", &["close"], &["--cwd", "/nonexistent/dir"]);
    let missing = fleet.task_with("Missing program", &["close"], &["--coder", "ghost"]);
    // `create --coder` checks the name; a coder removed from the config afterwards is unknown
    // by the time the task runs.
    fleet.configure_with(&[], ghost);

    let run = fleet.run_until_idle(&[]).unfinished(&[
        &format!("{unknown} blocked (spawn-failed)"),
        &format!("{missing} open (coder-paused)"),
    ]);

    // A working directory this machine does not have may be another machine's: the task is
    // left to the others (issue 26), never claimed, charged or blocked here, and said so.
    let elsewhere = fleet.show(&nowhere);
    assert_eq!((elsewhere["status"].as_str(), counter(&elsewhere, "attempts")), (Some("open"), 0));
    let tasks = fleet.ws.json(&["tasks"]);
    assert_eq!(tasks["not_here"][0]["id"], nowhere.as_str(), "{tasks}");
    let reason = tasks["not_here"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("working directory /nonexistent/dir does not exist"), "{reason}");

    let reason = "unknown coder \"nope\"";
    let issue = fleet.show(&unknown);
    assert_eq!(issue["status"], "blocked", "{unknown}");
    assert_eq!(issue["assignee"], serde_json::Value::Null, "{unknown}");
    let notes = issue["notes"].as_str().unwrap();
    assert!(notes.starts_with(&format!("[fleet] could not start the agent: {reason}")), "{notes}");
    assert!(fleet.comments(&unknown)[0].contains(reason), "{unknown}");
    // A missing program is the fleet's fault, not the task's: the coder is paused instead.
    let issue = fleet.show(&missing);
    assert_eq!(issue["status"], "open");
    assert_eq!(counter(&issue, "attempts"), 0);
    assert!(
        fleet.comments(&missing)[0].contains("the program \"/nonexistent/agent\" was not found")
    );
    assert_eq!(run.lines.last().unwrap(), "fleet run: 2 attempts — coder-paused 1, spawn-failed 1");
}
