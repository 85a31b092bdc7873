//! What `fleet run` itself prints and returns: the JSON Lines stream, the summary, and a
//! refusal to start on an invalid runtime.toml.

use crate::harness::{Fleet, counter};

#[test]
fn json_output_is_one_tagged_event_per_line() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Tidy up", &["close tidied"]);

    let run = fleet.run_until_idle(&["--json"]).ok();

    let all: Vec<serde_json::Value> = run
        .lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    // Claim passes that start nothing say so, once per change of the store they looked at:
    // how many depends on timing, so they are checked apart.
    let (waiting, events): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| e["type"] == "waiting");
    assert!(!waiting.is_empty(), "{events:#?}");
    for wait in &waiting {
        assert_eq!(wait["slots"], 2, "{wait}");
        assert!(wait["running"].as_u64().unwrap() <= 1 && wait["changes"].is_u64(), "{wait}");
    }
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["started", "claimed", "agent_started", "finished", "stopped"],
        "{events:#?}"
    );
    assert_eq!(events[0]["max_concurrent"], 2);
    assert_eq!(events[1]["id"], id.as_str());
    assert_eq!(events[1]["coder"], "fake");
    assert_eq!(events[1]["attempt"], 1);
    assert!(events[2]["pid"].as_u64().unwrap() > 1);
    assert_eq!(events[3]["verdict"], "closed");
    assert_eq!(events[3]["comment"], "[fleet] attempt 1: closed (tidied)");
    assert_eq!(events[4]["finished"], 1);
}

#[test]
fn an_empty_queue_ends_at_once_with_an_empty_summary() {
    let fleet = Fleet::new(&[]);
    let run = fleet.run_until_idle(&["--as", "sup"]).ok();
    assert_eq!(
        run.lines,
        [
            "fleet run: supervising as sup, up to 2 agents at once (Ctrl-C stops)",
            "fleet run: 0 attempts"
        ]
    );
}

#[test]
fn invalid_runtime_toml_at_start_is_an_error_and_nothing_is_claimed() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Untouched", &["close"]);
    fleet.write_config("max_concurrent = \"three\"\n");

    let run = fleet.run_until_idle(&[]);

    assert_eq!(run.code, 1, "{}\n{}", run.stdout(), run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "error: {}/runtime.toml:1: max_concurrent must be an integer from 0 to 1024, \
             found string \"three\"\nhint: fix runtime.toml (see `fleet config show`)\n",
            fleet.home().display()
        )
    );
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(counter(&issue, "attempts"), 0);
}

/// The run commits the journal to git (every few seconds, and once more at its end): after
/// it, every op of the run is on the replica's ref.
#[test]
fn the_run_leaves_its_ops_committed_to_the_journal() {
    let fleet = Fleet::new(&[]);
    fleet.task("Tidy up", &["close tidied"]);
    fleet.run_until_idle(&[]).ok();
    let verified = fleet.ws.json(&["journal", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["store_ops"], verified["journal_ops"], "nothing pending: {verified}");
    assert!(verified["journal_ops"].as_u64().unwrap() >= 3, "create, claim, close: {verified}");
}

/// `--until-idle` exits 4 when tasks it ran did not close, and says which on one line of
/// stderr (its stdout is what it always is); a task someone else finished is not counted.
#[test]
fn until_idle_exits_4_naming_the_tasks_it_ran_that_did_not_close() {
    let fleet = Fleet::new(&[("max_failures", "1")]);
    let done = fleet.task("Closes", &["close done"]);
    let asks = fleet.task("Asks", &["block Which region?"]);
    let fails = fleet.task("Fails", &["exit 5"]);

    let run = fleet.run_until_idle(&["--as", "sup"]);

    assert_eq!(run.code, 4, "{}\n{}", run.stdout(), run.stderr);
    let mut left = [
        format!("{asks} blocked (blocked-by-agent)"),
        format!("{fails} blocked (failure-blocked)"),
    ];
    left.sort();
    assert_eq!(
        run.stderr,
        format!(
            "error: stopped with 2 of 3 tasks it ran not closed: {}\n\
             hint: `fleet show ID` says what happened to each; `fleet questions` lists the questions of blocked agents\n",
            left.join(", ")
        )
    );
    assert_eq!(
        run.lines.last().unwrap(),
        "fleet run: 3 attempts — blocked-by-agent 1, closed 1, failure-blocked 1"
    );
    assert_eq!(fleet.show(&done)["status"], "closed");

    // A person closes what was left: the next run has nothing to do and exits 0.
    fleet.ws.run(&["close", &asks, &fails, "--force"]).ok();
    fleet.run_until_idle(&[]).ok();
}

#[test]
fn until_idle_with_json_keeps_stdout_json_and_reports_unfinished_tasks_as_a_json_error() {
    let fleet = Fleet::new(&[("max_failures", "1")]);
    let fails = fleet.task("Fails", &["exit 5"]);

    let run = fleet.run_until_idle(&["--json"]);

    assert_eq!(run.code, 4, "{}\n{}", run.stdout(), run.stderr);
    let events: Vec<serde_json::Value> = run
        .lines
        .iter()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"))
        })
        .collect();
    assert_eq!(events.last().map(|e| e["type"].clone()), Some("stopped".into()), "{events:?}");
    let error: serde_json::Value = serde_json::from_str(&run.stderr).expect("one JSON error");
    assert_eq!(
        error["error"],
        format!("stopped with 1 of 1 tasks it ran not closed: {fails} blocked (failure-blocked)")
    );
}

/// A task that fails once, then closes on its retry, counts as closed: exit 0.
#[test]
fn until_idle_exits_0_when_a_retried_task_closes_in_the_end() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Fails once", &["once exit 1", "close"]);
    let run = fleet.run_until_idle(&[]).ok();
    assert_eq!(run.lines.last().unwrap(), "fleet run: 2 attempts — closed 1, failure-retry 1");
    assert_eq!(fleet.show(&id)["status"], "closed");
}
