//! What `fleet run` itself prints and returns: the JSON Lines stream, the summary, and a
//! refusal to start on an invalid runtime.toml.

use crate::harness::{Fleet, counter};

#[test]
fn json_output_is_one_tagged_event_per_line() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Tidy up", &["close tidied"]);

    let run = fleet.run_until_idle(&["--json"]).ok();

    let events: Vec<serde_json::Value> = run
        .lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
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
