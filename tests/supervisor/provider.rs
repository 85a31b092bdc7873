//! Provider trouble is recognised from what the CLI says (issue 27): a CLI that retries a
//! refused or failing request silently on its stream, saying so only on stderr (Gemini CLI's
//! `Attempt 1 failed: …`), is stopped at once — released uncharged, its coder paused for a
//! rate limit or an outage — however long `stall_timeout_secs` is; and an agent whose CLI is
//! retrying shows so in `fleet tasks` instead of looking idle.

use std::time::{Duration, Instant};

use crate::harness::{Fleet, counter};

/// Runs a task whose agent prints `line` on stderr and then says nothing, with a stall timeout
/// of 60 s; returns the `finished` line, the pause line and how long it took.
fn silent_retry(line: &str) -> (Fleet, String, String, String, Duration) {
    let fleet = Fleet::new(&[("stall_timeout_secs", "60")]);
    let id = fleet.task("Talks to a provider in trouble", &[&format!("stderr {line}"), "stall"]);
    let supervisor = fleet.start(&[]);
    let started = Instant::now();
    let finished = supervisor.wait_finished(&id, 1);
    let took = started.elapsed();
    let paused = supervisor.wait_for("the pause", |l| l.starts_with("⏸ fake paused until "));
    supervisor.stop().ok();
    (fleet, id, finished, paused, took)
}

#[test]
fn a_quota_retry_on_stderr_is_a_rate_limit_at_once_not_a_stall() {
    let (fleet, id, finished, paused, took) = silent_retry(
        "Attempt 1 failed: You exceeded your current quota, please check your plan and billing details.",
    );
    assert!(took < Duration::from_secs(30), "recognised after {took:?}");
    assert!(finished.starts_with(&format!("• {id} rate-limited: ")), "{finished}");
    assert!(finished.contains("released, not charged"), "{finished}");
    assert!(paused.contains("(rate limit)"), "{paused}");
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!((counter(&issue, "failures"), counter(&issue, "stalls")), (0, 0), "{issue}");
}

#[test]
fn a_server_error_retry_on_stderr_is_an_outage_at_once_not_a_stall() {
    let (fleet, id, finished, paused, took) = silent_retry(
        "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {\"error\":{\"code\":500}}",
    );
    assert!(took < Duration::from_secs(30), "recognised after {took:?}");
    assert!(finished.starts_with(&format!("• {id} coder-paused: ")), "{finished}");
    assert!(paused.contains("(provider outage)") && paused.contains("status 500"), "{paused}");
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(counter(&issue, "attempts"), 0, "the attempt is not counted: {issue}");
    assert_eq!((counter(&issue, "failures"), counter(&issue, "stalls")), (0, 0), "{issue}");
}

#[test]
fn an_agent_whose_cli_retries_shows_as_retrying_in_fleet_tasks() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Overloaded provider", &["apiretry 529", "sleep 30", "close"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    let row = supervisor.wait_until("the task to show as retrying", || {
        let view = fleet.ws.json(&["tasks"]);
        let row = view["tasks"].as_array()?.iter().find(|t| t["id"] == id.as_str())?.clone();
        (row["retrying"] == "HTTP 529").then_some(row)
    });
    assert_eq!(row["running"], true, "{row}");
    let human = fleet.ws.run(&["tasks"]).ok().stdout;
    let line = human.lines().find(|l| l.starts_with(id.as_str())).unwrap_or_default();
    assert!(line.contains("retry 529"), "{human}");
    supervisor.stop().ok();
}
