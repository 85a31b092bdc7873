//! The outcome table, row by row: `outcome::plan` is pure, so each row is checked without
//! processes — what is released or blocked, which counters move, what the comment says, and
//! whether spawning pauses.

use std::time::Duration;

use fleet::config::RuntimeConfig;
use fleet::model::{FleetFields, Issue, Status};
use fleet::op::IssuePatch;
use fleet::supervisor::outcome::{Outcome, Plan, plan};
use jiff::{SignedDuration, Timestamp};

const ME: &str = "fleet@test";

fn now() -> Timestamp {
    "2026-03-01T12:00:00Z".parse().unwrap()
}

fn config() -> RuntimeConfig {
    RuntimeConfig {
        max_failures: 3,
        max_noclose: 3,
        max_stalls: 2,
        retry_backoff_secs: 30,
        retry_backoff_max_secs: 100,
        rate_limit_default_pause_secs: 300,
        ..RuntimeConfig::default()
    }
}

/// A task this supervisor holds, on its `attempts`-th attempt, with `counters` so far.
fn held(counters: FleetFields) -> Issue {
    let mut issue = Issue::new("t-1".into(), "Fix it".into(), now());
    issue.status = Status::InProgress;
    issue.assignee = ME.into();
    issue.fleet = FleetFields { coder: "fake".into(), attempts: 2, ..counters };
    issue
}

fn fresh() -> Issue {
    held(FleetFields::default())
}

/// Whether the task is still in progress under this supervisor (the caller's lease check).
fn is_mine(issue: &Issue) -> bool {
    issue.status == Status::InProgress && issue.assignee == ME
}

fn decide(outcome: &Outcome, issue: &Issue) -> Plan {
    plan(outcome, issue, is_mine(issue), &config(), now())
}

fn exit(code: i32, stderr: &str) -> Outcome {
    Outcome::Exited { code: Some(code), reason: stderr.into() }
}

fn fleet_of(plan: &Plan) -> FleetFields {
    plan.patch.as_ref().and_then(|p| p.fleet.clone()).expect("the plan writes the counters")
}

/// The supervisor's retry backoff the plan writes (never the person's `defer_until`).
fn defer_of(plan: &Plan) -> Option<Timestamp> {
    let patch = plan.patch.as_ref()?;
    assert_eq!(patch.defer_until, None, "a backoff never touches defer_until");
    patch.fleet.as_ref().and_then(|f| f.retry_after)
}

fn secs(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

/// A released task goes back to the queue with no status change of its own in the patch.
#[track_caller]
fn assert_requeued(plan: &Plan, verdict: &str) {
    assert_eq!(plan.verdict.as_str(), verdict);
    assert!(plan.release, "{verdict} releases the task");
    let patch = plan.patch.as_ref().expect("a patch");
    assert_eq!(patch.status, None);
    assert_eq!(plan.pause_until, None);
}

#[track_caller]
fn assert_blocked(plan: &Plan, verdict: &str, notes: &str) {
    assert_eq!(plan.verdict.as_str(), verdict);
    assert!(!plan.release, "a blocked task is not released");
    let patch = plan.patch.as_ref().expect("a patch");
    assert_eq!(patch.status, Some(Status::Blocked));
    assert_eq!(patch.assignee.as_deref(), Some(""), "the lease is cleared");
    assert_eq!(patch.append_notes.as_deref(), Some(notes));
    assert_eq!(patch.defer_until, None);
}

// --- the agent decided -------------------------------------------------------------------

#[test]
fn closed_by_the_agent_is_only_noted_whatever_the_outcome() {
    let mut issue = fresh();
    issue.status = Status::Closed;
    issue.close_reason = "all green".into();
    for outcome in [exit(0, ""), exit(1, "boom"), Outcome::Shutdown] {
        let plan = decide(&outcome, &issue);
        assert_eq!(plan.verdict.as_str(), "closed");
        assert!(!plan.release);
        assert_eq!(plan.patch, None);
        assert_eq!(plan.comment, "[fleet] attempt 2: closed (all green)");
    }
}

#[test]
fn blocked_by_the_agent_is_left_blocked_with_the_lease_cleared() {
    let mut issue = fresh();
    issue.status = Status::Blocked;
    for outcome in [exit(0, ""), exit(3, "gave up")] {
        let plan = decide(&outcome, &issue);
        assert_eq!(plan.verdict.as_str(), "blocked-by-agent");
        assert!(!plan.release);
        assert_eq!(
            plan.patch,
            Some(IssuePatch { assignee: Some(String::new()), ..IssuePatch::default() })
        );
        assert!(plan.comment.contains("the agent marked the task blocked"), "{}", plan.comment);
    }
}

#[test]
fn a_task_someone_else_took_over_is_left_alone() {
    let mut released = fresh();
    released.status = Status::Open;
    released.assignee = String::new();
    let mut stolen = fresh();
    stolen.assignee = "someone-else".into();
    for issue in [released, stolen] {
        let plan = decide(&exit(1, "x"), &issue);
        assert_eq!(plan.verdict.as_str(), "taken-over");
        assert!(!plan.release);
        assert_eq!(plan.patch, None);
        assert!(plan.comment.contains("so it is left as it is"), "{}", plan.comment);
    }
}

// --- exit 0 without closing ----------------------------------------------------------------

#[test]
fn exit_zero_without_close_requeues_with_backoff() {
    let plan = decide(&exit(0, ""), &fresh());
    assert_requeued(&plan, "noclose-requeued");
    assert_eq!(fleet_of(&plan).noclose, 1);
    assert_eq!(fleet_of(&plan).failures, 0);
    assert_eq!(defer_of(&plan), Some(now() + secs(30)));
    assert!(plan.comment.contains("exited 0 without closing the task (1 of 3 allowed)"));
}

#[test]
fn exit_zero_without_close_blocks_at_the_limit_and_resets_the_count() {
    let plan = decide(&exit(0, ""), &held(FleetFields { noclose: 2, ..FleetFields::default() }));
    assert_blocked(&plan, "noclose-blocked", "[fleet] noclose limit reached");
    assert_eq!(fleet_of(&plan).noclose, 0, "a human who unblocks it gets fresh tries");
    assert!(plan.comment.contains("3 times in a row"), "{}", plan.comment);
}

// --- charged failures ----------------------------------------------------------------------

#[test]
fn a_crash_is_charged_and_retried_with_the_stderr_tail() {
    let plan = decide(&exit(2, "Traceback …\nValueError: bad\n"), &fresh());
    assert_requeued(&plan, "failure-retry");
    assert_eq!(fleet_of(&plan).failures, 1);
    assert_eq!(defer_of(&plan), Some(now() + secs(30)));
    assert_eq!(
        plan.comment,
        "[fleet] attempt 2: the agent exited with code 2; failure 1 of 3, retrying after 30s.\n\
         reason:\nTraceback …\nValueError: bad"
    );
}

#[test]
fn backoff_doubles_and_is_capped() {
    let second = decide(&exit(1, ""), &held(FleetFields { failures: 1, ..Default::default() }));
    assert_eq!(defer_of(&second), Some(now() + secs(60)));
    let mut generous = config();
    generous.max_failures = 10;
    let sixth = held(FleetFields { failures: 5, ..Default::default() });
    let plan = plan(&exit(1, ""), &sixth, true, &generous, now());
    assert_eq!(defer_of(&plan), Some(now() + secs(100)), "capped at retry_backoff_max_secs");
}

#[test]
fn zero_backoff_requeues_without_a_deferral() {
    let mut config = config();
    config.retry_backoff_secs = 0;
    let plan = plan(&exit(1, ""), &fresh(), true, &config, now());
    assert_requeued(&plan, "failure-retry");
    assert_eq!(defer_of(&plan), None);
}

#[test]
fn a_crash_at_the_limit_blocks_with_the_stderr_tail_and_resets_the_count() {
    let issue = held(FleetFields { failures: 2, noclose: 1, ..FleetFields::default() });
    let plan = decide(&exit(2, "disk full\n"), &issue);
    assert_blocked(
        &plan,
        "failure-blocked",
        "[fleet] retry limit (3) exhausted; last failure: exited with code 2",
    );
    let fleet = fleet_of(&plan);
    assert_eq!((fleet.failures, fleet.noclose), (0, 1), "only the failure count resets");
    assert!(plan.comment.contains("failure 3 of 3 — retry limit reached, blocked."));
    assert!(plan.comment.ends_with("reason:\ndisk full"), "{}", plan.comment);
}

#[test]
fn killed_by_a_signal_is_a_failure_and_empty_stderr_is_not_quoted() {
    let plan = decide(&Outcome::Exited { code: None, reason: "  \n".into() }, &fresh());
    assert_requeued(&plan, "failure-retry");
    assert!(plan.comment.contains("the agent was killed by a signal; failure 1 of 3"));
    assert!(!plan.comment.contains("reason:"), "{}", plan.comment);
}

#[test]
fn an_attempt_timeout_is_a_charged_failure() {
    let outcome = Outcome::TimedOut { after: Duration::from_secs(90) };
    let plan = decide(&outcome, &fresh());
    assert_requeued(&plan, "failure-retry");
    assert_eq!(fleet_of(&plan).failures, 1);
    assert!(plan.comment.contains("ran past the attempt timeout of 90s"), "{}", plan.comment);
    let last = held(FleetFields { failures: 2, ..FleetFields::default() });
    assert_blocked(
        &decide(&outcome, &last),
        "failure-blocked",
        "[fleet] retry limit (3) exhausted; last failure: ran past the attempt timeout of 90s",
    );
}

// --- stalls: counted on their own ----------------------------------------------------------

#[test]
fn a_stall_is_counted_apart_from_failures_and_requeued() {
    let issue = held(FleetFields { failures: 1, ..FleetFields::default() });
    let plan = decide(&Outcome::Stalled { silent_for: Duration::from_secs(600) }, &issue);
    assert_requeued(&plan, "stall-requeued");
    let fleet = fleet_of(&plan);
    assert_eq!((fleet.stalls, fleet.failures), (1, 1));
    assert_eq!(defer_of(&plan), Some(now() + secs(30)));
    assert!(plan.comment.contains("no output for 600s, killed (stall 1 of 2)"));
}

#[test]
fn stalls_block_at_their_limit() {
    let issue = held(FleetFields { stalls: 1, ..FleetFields::default() });
    let plan = decide(&Outcome::Stalled { silent_for: Duration::from_secs(5) }, &issue);
    assert_blocked(&plan, "stall-blocked", "[fleet] stall limit reached");
    assert_eq!(fleet_of(&plan).stalls, 0);
    assert!(plan.comment.contains("2 stalls in a row"), "{}", plan.comment);
}

// --- never charged -------------------------------------------------------------------------

#[test]
fn context_pressure_releases_without_charge_or_backoff() {
    let issue = held(FleetFields { failures: 1, noclose: 1, ..FleetFields::default() });
    let plan = decide(&Outcome::ContextPressure { peak_tokens: 181_000, limit: 200_000 }, &issue);
    assert_requeued(&plan, "context-pressure");
    let counted = FleetFields { context_resets: 1, ..issue.fleet.clone() };
    assert_eq!(fleet_of(&plan), counted, "only the context counter moves: not charged");
    assert_eq!(defer_of(&plan), None);
    assert!(
        plan.comment.contains("context pressure (181000 of 200000 tokens); released, not charged")
    );
}

#[test]
fn context_pressure_blocks_at_its_limit_and_resets_the_count() {
    let issue = held(FleetFields { context_resets: 4, failures: 1, ..FleetFields::default() });
    let plan = decide(&Outcome::ContextPressure { peak_tokens: 190_000, limit: 200_000 }, &issue);
    assert_eq!(plan.verdict.as_str(), "context-blocked");
    assert!(!plan.release);
    let patch = plan.patch.as_ref().expect("a block patch");
    assert_eq!(patch.status, Some(Status::Blocked));
    let fleet = fleet_of(&plan);
    assert_eq!((fleet.context_resets, fleet.failures), (0, 1), "count reset, failures untouched");
    assert!(plan.comment.contains("5 runs in a row; blocked"), "{}", plan.comment);
}

#[test]
fn a_rate_limit_releases_without_charge_and_pauses_until_the_reset() {
    let resets = now() + secs(3600);
    let outcome =
        Outcome::RateLimited { resets_at: Some(resets), window: Some("seven_day".into()) };
    let plan = decide(&outcome, &fresh());
    assert_eq!(plan.verdict.as_str(), "rate-limited");
    assert!(plan.release);
    assert_eq!(fleet_of(&plan), fresh().fleet);
    assert_eq!(plan.pause_until, Some(resets));
    assert!(plan.comment.contains("rate limited (seven_day window); released, not charged"));
}

#[test]
fn a_rate_limit_without_a_future_reset_pauses_for_the_default() {
    let past = now() - secs(10);
    for resets_at in [None, Some(past)] {
        let plan = decide(&Outcome::RateLimited { resets_at, window: None }, &fresh());
        assert_eq!(plan.pause_until, Some(now() + secs(300)));
        assert!(plan.comment.contains("rate limited; released"), "{}", plan.comment);
    }
}

#[test]
fn shutdown_releases_without_charge() {
    let issue = held(FleetFields { failures: 2, ..FleetFields::default() });
    let plan = decide(&Outcome::Shutdown, &issue);
    assert_requeued(&plan, "shutdown");
    assert_eq!(fleet_of(&plan).failures, 2);
    assert_eq!(defer_of(&plan), None);
    assert_eq!(plan.comment, "[fleet] attempt 2: supervisor shutting down; released, not charged");
}

// --- could not start -------------------------------------------------------------------------

#[test]
fn a_spawn_failure_blocks_naming_the_error() {
    let outcome = Outcome::SpawnFailed {
        error: "unknown coder \"nope\"".into(),
        fix: "define it in runtime.toml".into(),
    };
    let plan = decide(&outcome, &fresh());
    assert_blocked(
        &plan,
        "spawn-failed",
        "[fleet] could not start the agent: unknown coder \"nope\"",
    );
    assert_eq!(fleet_of(&plan).failures, 0);
    assert!(plan.comment.starts_with("[fleet] could not start the agent: unknown coder"));
}
