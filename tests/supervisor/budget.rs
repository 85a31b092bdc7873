//! Budgets that act (issue 33): a `[budget]` cap stops an attempt that reaches it and releases
//! the task uncharged; a day cap holds new attempts back before it is crossed, says so in
//! `fleet tasks` and `fleet budget`, and still does after a restart (spending is read from the
//! ledgers on disk); `fleet budget raise` lifts it, keeping runtime.toml's comments.
//!
//! The fake agent's `spend IN OUT` reports usage as it goes; with the model
//! `claude-sonnet-4-5` the built-in price table prices it live ($3 in, $15 out per million).

use crate::harness::{Fleet, counter};

const MODEL: [&str; 2] = ["--model", "claude-sonnet-4-5"];

#[test]
fn a_per_task_cap_stops_the_agent_and_releases_the_task_uncharged() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[], "\n[budget]\nusd_per_task = 0.5\n");
    // $0.30 a request (each its own: the claude parser counts a message id once): the second
    // reaches the cap, the third is never counted.
    let id = fleet.task_with(
        "Expensive",
        &["spend 100000 0", "spend 100001 0", "spend 100002 0", "stall"],
        &MODEL,
    );
    let run = fleet.run_until_idle(&["--json"]);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout(), run.stderr);
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open", "{issue:#}");
    assert_eq!(counter(&issue, "attempts"), 0, "a budget stop is not charged: {issue:#}");
    let comments = fleet.comments(&id);
    let last = comments.last().expect("a comment");
    assert!(last.contains("budget") && last.contains("usd_per_task"), "{last}");
    assert!(run.stdout().contains(r#""verdict":"budget""#), "{}", run.stdout());
    // The task is over its cap now: the run ended instead of starting it again.
    let ledger = std::fs::read_to_string(fleet.task_file(&id, "ledger.json")).unwrap();
    let ledger: serde_json::Value = serde_json::from_str(&ledger).unwrap();
    assert_eq!(ledger["attempts"].as_array().unwrap().len(), 1, "{ledger:#}");
    assert_eq!(ledger["attempts"][0]["outcome"], "budget");
    assert!(ledger["attempts"][0]["tokens_in"].as_u64().unwrap() < 300_000, "{ledger:#}");
}

#[test]
fn a_day_cap_holds_new_claims_before_it_is_crossed_across_restarts() {
    let fleet = Fleet::new(&[]);
    let config = "\n# what the fleet may spend\n[budget]\nusd_per_day = 0.8 # dollars\n";
    fleet.configure_with(&[], config);
    // $0.45 spent today by a closed task.
    let first = fleet.task_with("First", &["spend 150000 0", "close done"], &MODEL);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&first)["status"], "closed");
    // The next task of the same coder·model is expected to cost $0.45 too; $0.35 is left.
    let second = fleet.task_with("Second", &["spend 150000 0", "close done"], &MODEL);
    let held = fleet.run_until_idle(&["--json"]);
    assert_eq!(fleet.show(&second)["status"], "open", "{}", held.stdout());
    assert_eq!(counter(&fleet.show(&second), "attempts"), 0);
    assert!(held.stdout().contains(r#""type":"budget""#), "{}", held.stdout());
    let view = fleet.ws.json(&["tasks"]);
    let pause = view["pauses"].as_array().unwrap().iter().find(|p| p["cause"] == "budget");
    let pause = pause.unwrap_or_else(|| panic!("no budget pause in {view:#}"));
    assert!(pause["detail"].as_str().unwrap().contains("fleet cap"), "{pause}");
    let budget = fleet.ws.json(&["budget"]);
    let day = &budget["days"][0];
    assert_eq!(day["scope"], "fleet");
    // (and a token out in the final result, $0.000015)
    assert!((day["spent_usd"].as_f64().unwrap() - 0.45).abs() < 1e-3, "{budget:#}");
    assert!((day["left_usd"].as_f64().unwrap() - 0.35).abs() < 1e-3, "{budget:#}");
    assert!(budget["held"]["until"].is_string(), "{budget:#}");
    // A restart reads what was spent from the ledgers: still held.
    fleet.run_until_idle(&[]);
    assert_eq!(counter(&fleet.show(&second), "attempts"), 0);
    // Raised by a dollar, keeping the file's comments: the second task runs.
    fleet.ws.run(&["budget", "raise", "day", "1"]).ok();
    let text = std::fs::read_to_string(fleet.home().join("runtime.toml")).unwrap();
    assert!(text.contains("usd_per_day = 1.8 # dollars"), "{text}");
    assert!(text.contains("# what the fleet may spend"), "{text}");
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&second)["status"], "closed");
    assert!(fleet.ws.json(&["budget"])["held"].is_null());
}
