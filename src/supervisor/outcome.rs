//! What happened to an attempt, and what the queue should say about it.
//!
//! [`Outcome`] is the runner's verdict; [`plan`] turns it, with the issue as it stands after the
//! agent exited, into the ops that record it: a release (with a backoff deferral) or a block,
//! the counters on the task, and always a comment saying what happened. Deciding is pure, so
//! the whole outcome table is tested without processes.
//!
//! Fixes over the Python fleet (spec/fleet.md §2.8, §7.3): exit 0 without closing is
//! requeued a bounded number of times, failures back off exponentially, a graceful shutdown
//! or context pressure or a rate limit is never charged as a failure, stalls are counted on
//! their own, and blocking a task for a limit resets that counter so a human who unblocks it
//! gives it a fresh set of tries.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::pause::{PauseCause, Scope};
use crate::config::RuntimeConfig;
use crate::model::{FleetFields, Issue, Status};
use crate::op::IssuePatch;

/// How an attempt ended, as the runner saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The process exited by itself with this code (0 = success) or was killed by a signal.
    /// `reason` is what went wrong in the CLI's words (its API error, or the last meaningful
    /// stderr lines), redacted; empty when there is nothing to say.
    Exited { code: Option<i32>, reason: String },
    /// Killed because the prompt reached the context-pressure threshold (or the CLI refused an
    /// overlong prompt).
    ContextPressure { peak_tokens: u64, limit: u64 },
    /// Killed or exited because of a rate limit; spawning pauses until `resets_at`.
    RateLimited { resets_at: Option<Timestamp>, window: Option<String> },
    /// Killed after no output for this long.
    Stalled { silent_for: Duration },
    /// Killed after running longer than the attempt timeout.
    TimedOut { after: Duration },
    /// Stopped because the supervisor is shutting down.
    Shutdown,
    /// Could not be started at all (unknown coder, missing working directory, an argument
    /// list too long): `error` says what happened, `fix` what a person can do about it.
    SpawnFailed { error: String, fix: String },
    /// Could not be started because the machine or this process ran out of a resource (open
    /// files, processes, memory): a fault of the fleet, not of the task. Released uncharged;
    /// the supervisor holds back new spawns. `detail` names the limit.
    NoResources { detail: String },
    /// A fault of the fleet, not of the task: the CLI is missing, not logged in, or its
    /// provider is down. The coder is paused; the task is released and not charged.
    CoderFault { cause: PauseCause, detail: String },
    /// The CLI's own local state was busy for a moment (opencode's database locked by another
    /// agent): released uncharged and retried shortly, the coder not paused.
    Contention { detail: String },
    /// Someone else changed the task while its agent ran (released, closed, blocked, reopened,
    /// deleted, took it over), so the agent was stopped. `reason` says what happened.
    Revoked { reason: String },
    /// The task's own worktree could not be made, or is gone or broken: the agent was not
    /// started (never in the shared checkout instead). Released uncharged, with the reason;
    /// retried after a backoff.
    NoWorktree { detail: String },
    /// Stopped because the attempt reached what was left of a `[budget]` cap (`detail` says
    /// which and what it spent): released uncharged; the claim-time check then holds the task
    /// (or the fleet, for a day cap) until the budget allows another attempt.
    OverBudget { detail: String },
}

impl Outcome {
    /// The outcome of an attempt whose working directory `cwd` does not exist.
    pub fn missing_cwd(cwd: &std::path::Path) -> Outcome {
        let cwd = cwd.display();
        Outcome::SpawnFailed {
            error: format!("working directory {cwd} does not exist"),
            fix: format!("create {cwd}, or point the task at another: fleet update ID --cwd DIR"),
        }
    }
}

/// What became of an attempt, in a word: what the live view prints, `fleet run --json` reports
/// and the summary counts (kebab-case, e.g. `failure-retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The agent closed the task.
    Closed,
    /// The agent closed the task; its work waits in the merge queue to land.
    Queued,
    /// The task's worktree could not be made or used: released uncharged.
    WorktreeFailed,
    /// The agent set the task to blocked: it waits for a human.
    BlockedByAgent,
    /// Someone else holds the task now; it is left alone.
    TakenOver,
    /// Someone changed the task while the agent ran, so it was stopped.
    Stopped,
    Shutdown,
    SpawnFailed,
    /// A fault of the fleet: released uncharged, the coder paused.
    CoderPaused,
    /// The CLI's local state was busy: released uncharged, retried shortly.
    ContentionRequeued,
    /// The fleet ran out of a resource (open files, processes) starting the agent: released
    /// uncharged, spawning held back.
    ResourceRequeued,
    NocloseRequeued,
    NocloseBlocked,
    StallRequeued,
    StallBlocked,
    ContextPressure,
    ContextBlocked,
    RateLimited,
    /// The attempt reached a `[budget]` cap: released uncharged.
    Budget,
    FailureRetry,
    FailureBlocked,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Closed => "closed",
            Verdict::Queued => "queued",
            Verdict::WorktreeFailed => "worktree-failed",
            Verdict::BlockedByAgent => "blocked-by-agent",
            Verdict::TakenOver => "taken-over",
            Verdict::Stopped => "stopped",
            Verdict::Shutdown => "shutdown",
            Verdict::SpawnFailed => "spawn-failed",
            Verdict::CoderPaused => "coder-paused",
            Verdict::ContentionRequeued => "contention-requeued",
            Verdict::ResourceRequeued => "resource-requeued",
            Verdict::NocloseRequeued => "noclose-requeued",
            Verdict::NocloseBlocked => "noclose-blocked",
            Verdict::StallRequeued => "stall-requeued",
            Verdict::StallBlocked => "stall-blocked",
            Verdict::ContextPressure => "context-pressure",
            Verdict::ContextBlocked => "context-blocked",
            Verdict::RateLimited => "rate-limited",
            Verdict::Budget => "budget",
            Verdict::FailureRetry => "failure-retry",
            Verdict::FailureBlocked => "failure-blocked",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to write back for an attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Put the task back in the queue (open, unassigned).
    pub release: bool,
    /// Field changes: counters, a backoff deferral, or blocked status with notes.
    pub patch: Option<IssuePatch>,
    /// The comment every outcome leaves.
    pub comment: String,
    /// Pause all spawning until then (rate config).
    pub pause_until: Option<Timestamp>,
    /// What became of the attempt, for logs, the live view and the summary.
    pub verdict: Verdict,
}

fn after(now: Timestamp, wait: Duration) -> Timestamp {
    now.checked_add(SignedDuration::try_from(wait).unwrap_or(SignedDuration::MAX)).unwrap_or(now)
}

/// Decides what to record for `outcome` on `issue` (as re-read after the agent stopped).
/// `held` says whether the task is still in progress under this very attempt (the caller
/// checks the lease); when it is not, the task is no longer ours to touch and only a comment
/// is written.
pub fn plan(
    outcome: &Outcome,
    issue: &Issue,
    held: bool,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Plan {
    match settled_elsewhere(outcome, issue, held) {
        Some(plan) => plan,
        None => plan_held(outcome, issue, config, now),
    }
}

/// The plan when the task is no longer the attempt's to judge: the agent was stopped because
/// someone changed the task, the agent closed or blocked it, or someone else holds it now.
fn settled_elsewhere(outcome: &Outcome, issue: &Issue, held: bool) -> Option<Plan> {
    let attempt = issue.fleet.attempts;
    // Checked first: whatever the task's state now, the comment says why the agent stopped.
    if let Outcome::Revoked { reason } = outcome {
        return Some(stopped(attempt, reason));
    }
    match issue.status {
        Status::Closed => Some(note(
            format!("[fleet] attempt {attempt}: closed ({})", issue.close_reason),
            Verdict::Closed,
        )),
        Status::Blocked => Some(Plan {
            release: false,
            patch: Some(IssuePatch { assignee: Some(String::new()), ..IssuePatch::default() }),
            comment: format!(
                "[fleet] attempt {attempt}: the agent marked the task blocked; it waits for a human (set it open to run it again)"
            ),
            pause_until: None,
            verdict: Verdict::BlockedByAgent,
        }),
        Status::InProgress if held && queued(issue) => Some(queued_to_land(issue)),
        Status::InProgress if held => None,
        _ => Some(note(
            format!(
                "[fleet] attempt {attempt} ended ({}); the task is now {} and assigned to {:?}, so it is left as it is",
                describe(outcome),
                issue.status,
                issue.assignee
            ),
            Verdict::TakenOver,
        )),
    }
}

/// The plan for a task still in progress under the attempt: the outcome table proper.
fn plan_held(outcome: &Outcome, issue: &Issue, config: &RuntimeConfig, now: Timestamp) -> Plan {
    let attempt = issue.fleet.attempts;
    let fleet = issue.fleet.clone();
    match outcome {
        Outcome::Exited { code: Some(0), .. } => {
            exited_without_closing(fleet, attempt, config, now)
        }
        Outcome::Exited { code, reason } => {
            failure(fleet, attempt, &exit_text(*code), reason, config, now)
        }
        Outcome::TimedOut { after } => {
            let what = format!("ran past the attempt timeout of {}s", after.as_secs());
            failure(fleet, attempt, &what, "", config, now)
        }
        Outcome::Stalled { silent_for } => stalled(fleet, attempt, *silent_for, config, now),
        Outcome::ContextPressure { peak_tokens, limit } => {
            context_pressure(fleet, attempt, *peak_tokens, *limit, config)
        }
        Outcome::RateLimited { resets_at, window } => {
            rate_limited(issue, *resets_at, window.as_deref(), config, now)
        }
        Outcome::Shutdown => free_release(
            fleet,
            format!("[fleet] attempt {attempt}: supervisor shutting down; released, not charged"),
            Verdict::Shutdown,
        ),
        Outcome::SpawnFailed { error, fix } => block(
            fleet,
            format!("[fleet] could not start the agent: {error}. Fix: {fix}; then set it open."),
            &format!("could not start the agent: {error}"),
            Verdict::SpawnFailed,
        ),
        Outcome::NoResources { detail } => no_resources(issue, detail),
        Outcome::CoderFault { cause, detail } => coder_fault(issue, *cause, detail),
        Outcome::Contention { detail } => contention(issue, detail, now),
        Outcome::Revoked { reason } => stopped(attempt, reason),
        Outcome::NoWorktree { detail } => no_worktree(issue, detail, config, now),
        Outcome::OverBudget { detail } => over_budget(issue, detail),
    }
}

/// Whether the task's work waits in the merge queue (its agent closed it).
pub fn queued(issue: &Issue) -> bool {
    issue.fleet.land.as_ref().is_some_and(|l| l.state.in_queue())
}

/// The agent closed a task that works on a branch of its own: the task stays in progress,
/// its lease dropped, while its work waits to land.
fn queued_to_land(issue: &Issue) -> Plan {
    let attempt = issue.fleet.attempts;
    let base = issue.fleet.land.as_ref().map_or("", |l| l.base.as_str());
    Plan {
        release: false,
        patch: Some(counters(issue.fleet.clone())),
        comment: format!(
            "[fleet] attempt {attempt}: the agent closed the task; its work waits in the merge queue to land on {base}"
        ),
        pause_until: None,
        verdict: Verdict::Queued,
    }
}

/// The worktree could not be made or used: uncounted, retried after a backoff.
fn no_worktree(issue: &Issue, detail: &str, config: &RuntimeConfig, now: Timestamp) -> Plan {
    let (fleet, _, detail) = uncounted(issue, detail);
    let wait = config.retry_backoff(fleet.attempts.max(1));
    let comment = format!(
        "[fleet] the task's worktree cannot be used: {detail}; released, not charged, retrying after {}s (the agent never works in the shared checkout instead)",
        wait.as_secs()
    );
    retry(fleet, now, wait, comment, Verdict::WorktreeFailed)
}

/// What to record when the checks or the gate refuse a task's work: a failure counted as any
/// other (the task back in the queue, or blocked at `max_failures`). The fleet fields to
/// write, the block reason if blocked, and the comment.
pub fn refused_work(
    issue: &Issue,
    what: &str,
    evidence: &str,
    config: &RuntimeConfig,
    now: Timestamp,
) -> (FleetFields, Option<String>, String) {
    let plan = failure(issue.fleet.clone(), issue.fleet.attempts, what, evidence, config, now);
    let fleet = plan.patch.as_ref().and_then(|p| p.fleet.clone()).unwrap_or_default();
    let blocked = plan
        .patch
        .as_ref()
        .filter(|p| p.status == Some(Status::Blocked))
        .and_then(|p| p.append_notes.clone())
        .map(|notes| notes.trim_start_matches("[fleet] ").to_owned());
    (fleet, blocked, plan.comment)
}

/// Exit 0 without a close: requeued with backoff, blocked after `max_noclose` in a row.
fn exited_without_closing(
    mut fleet: FleetFields,
    attempt: u32,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Plan {
    let before = fleet.noclose;
    if let Some(count) = count_toward_limit(&mut fleet.noclose, config.max_noclose) {
        return block(
            fleet,
            format!(
                "[fleet] attempt {attempt}: the agent exited 0 without closing the task, {count} times in a row; blocked so it does not loop. Set it open to try again."
            ),
            "noclose limit reached",
            Verdict::NocloseBlocked,
        );
    }
    let wait = config.retry_backoff(fleet.noclose);
    let comment = format!(
        "[fleet] attempt {attempt}: the agent exited 0 without closing the task ({} of {} allowed); requeued after {}s",
        before + 1,
        config.max_noclose,
        wait.as_secs()
    );
    retry(fleet, now, wait, comment, Verdict::NocloseRequeued)
}

/// No output for the stall timeout: killed, requeued, blocked after `max_stalls` in a row.
fn stalled(
    mut fleet: FleetFields,
    attempt: u32,
    silent_for: Duration,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Plan {
    let silent = silent_for.as_secs();
    if let Some(count) = count_toward_limit(&mut fleet.stalls, config.max_stalls) {
        return block(
            fleet,
            format!(
                "[fleet] attempt {attempt}: no output for {silent}s, killed; {count} stalls in a row — blocked."
            ),
            "stall limit reached",
            Verdict::StallBlocked,
        );
    }
    let wait = config.retry_backoff(fleet.stalls);
    let comment = format!(
        "[fleet] attempt {attempt}: no output for {silent}s, killed (stall {} of {}); requeued after {}s",
        fleet.stalls,
        config.max_stalls,
        wait.as_secs()
    );
    retry(fleet, now, wait, comment, Verdict::StallRequeued)
}

/// The context window filled up: released without charge (a fresh session goes on from the
/// artifacts), blocked after `max_context_resets` in a row.
fn context_pressure(
    mut fleet: FleetFields,
    attempt: u32,
    peak_tokens: u64,
    limit: u64,
    config: &RuntimeConfig,
) -> Plan {
    if let Some(count) = count_toward_limit(&mut fleet.context_resets, config.max_context_resets) {
        return block(
            fleet,
            format!(
                "[fleet] attempt {attempt}: context pressure ({peak_tokens} of {limit} tokens), {count} runs in a row; blocked — split the task, or set it open to try again."
            ),
            "context-pressure limit reached",
            Verdict::ContextBlocked,
        );
    }
    free_release(
        fleet,
        format!(
            "[fleet] attempt {attempt}: context pressure ({peak_tokens} of {limit} tokens); released, not charged — the next run starts fresh from the artifacts"
        ),
        Verdict::ContextPressure,
    )
}

/// A rate limit: released without charge; spawning with the coder pauses until the reset.
/// On an account, only that account pauses, and the attempt is not even counted: the account
/// ran out, not the task, which goes on with the coder's other accounts as if this run had not
/// happened (like a fault of the fleet).
fn rate_limited(
    issue: &Issue,
    resets_at: Option<Timestamp>,
    window: Option<&str>,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Plan {
    let attempt = issue.fleet.attempts;
    let default_until = after(now, config.rate_limit_default_pause());
    let until = resets_at.filter(|t| *t > now).unwrap_or(default_until);
    let window = window.map(|w| format!(" ({w} window)")).unwrap_or_default();
    let account = issue.fleet.lease.as_ref().map_or("", |lease| lease.account.as_str());
    let (fleet, comment) = if account.is_empty() {
        let comment = format!(
            "[fleet] attempt {attempt}: rate limited{window}; released, not charged; spawning paused until {until}"
        );
        (issue.fleet.clone(), comment)
    } else {
        let (fleet, coder, _) = uncounted(issue, "");
        let on = crate::coders::account::qualified(coder, Some(account));
        let comment = format!(
            "[fleet] attempt {attempt} on {on}: rate limited{window}; released, not charged (the attempt is not counted); {on} paused until {until}, the other accounts go on"
        );
        (fleet, comment)
    };
    let mut plan = free_release(fleet, comment, Verdict::RateLimited);
    plan.pause_until = Some(until);
    plan
}

/// A `[budget]` cap reached: released uncharged like a rate limit (the money ran out, not
/// the task); the claim-time check decides when it runs again.
fn over_budget(issue: &Issue, detail: &str) -> Plan {
    let attempt = issue.fleet.attempts;
    let (fleet, _, detail) = uncounted(issue, detail);
    free_release(
        fleet,
        format!(
            "[fleet] attempt {attempt}: budget: {detail}; stopped and released, not charged (the attempt is not counted) — it runs again when the budget allows (`fleet budget`)"
        ),
        Verdict::Budget,
    )
}

/// How long a task waits after its CLI's local state was busy ([`Outcome::Contention`]).
pub const CONTENTION_RETRY: Duration = Duration::from_secs(10);

/// A fault of the fleet: the task goes back to the queue as if the attempt never happened
/// (its attempt is not counted and its coder not frozen); the supervisor pauses the coder.
fn coder_fault(issue: &Issue, cause: PauseCause, detail: &str) -> Plan {
    let (fleet, coder, detail) = uncounted(issue, detail);
    let account = issue.fleet.lease.as_ref().map_or("", |lease| lease.account.as_str());
    let paused = match Scope::of_attempt(coder, account, cause) {
        scope if scope.account.is_some() => format!("{scope} is paused"),
        _ => "the coder is paused".to_owned(),
    };
    let on = if account.is_empty() { String::new() } else { format!(" on account {account}") };
    free_release(
        fleet,
        format!(
            "[fleet] the {coder} coder could not work{on} ({}): {detail}; released, not charged — {paused} and retried with a backoff",
            cause.as_str()
        ),
        Verdict::CoderPaused,
    )
}

/// The fleet ran out of a resource starting the agent: uncounted like a fault of the fleet;
/// the supervisor holds new spawns back (the coder is not paused: it did nothing wrong).
fn no_resources(issue: &Issue, detail: &str) -> Plan {
    let (fleet, _, detail) = uncounted(issue, detail);
    free_release(
        fleet,
        format!(
            "[fleet] could not start the agent: {detail}; released, not charged — a limit of the machine running fleet, not a fault of the task; new spawns wait for running agents to end"
        ),
        Verdict::ResourceRequeued,
    )
}

/// The CLI's local state was busy: uncounted like a fault of the fleet, retried after
/// [`CONTENTION_RETRY`] without pausing the coder.
fn contention(issue: &Issue, detail: &str, now: Timestamp) -> Plan {
    let (fleet, coder, detail) = uncounted(issue, detail);
    let comment = format!(
        "[fleet] the {coder} CLI found its local state busy ({detail}); released, not charged, retrying after {}s",
        CONTENTION_RETRY.as_secs()
    );
    retry(fleet, now, CONTENTION_RETRY, comment, Verdict::ContentionRequeued)
}

/// The task's fleet fields with the attempt taken back and the lease dropped, the coder that
/// ran it, and `detail` trimmed (or "no details").
fn uncounted<'a>(issue: &'a Issue, detail: &'a str) -> (FleetFields, &'a str, &'a str) {
    let mut fleet = issue.fleet.clone();
    fleet.attempts = fleet.attempts.saturating_sub(1);
    fleet.lease = None;
    let coder = issue.fleet.lease.as_ref().map_or(issue.fleet.coder.as_str(), |l| l.coder.as_str());
    let detail = if detail.trim().is_empty() { "no details" } else { detail.trim() };
    (fleet, coder, detail)
}

/// Counts one more attempt of a limited kind in `counter`. At `limit` it returns the count and
/// resets the counter, so a human who unblocks the task gives it a fresh set of tries.
fn count_toward_limit(counter: &mut u32, limit: u32) -> Option<u32> {
    *counter += 1;
    (*counter >= limit).then(|| std::mem::take(counter))
}

/// A charged failure: retry with backoff, or block once the limit is reached.
fn failure(
    mut fleet: FleetFields,
    attempt: u32,
    what: &str,
    reason: &str,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Plan {
    let tail = if reason.trim().is_empty() {
        String::new()
    } else {
        format!("\nreason:\n{}", reason.trim_end())
    };
    if let Some(count) = count_toward_limit(&mut fleet.failures, config.max_failures) {
        return block(
            fleet,
            format!(
                "[fleet] attempt {attempt}: the agent {what}; failure {count} of {} — retry limit reached, blocked.{tail}",
                config.max_failures
            ),
            &format!("retry limit ({}) exhausted; last failure: {what}", config.max_failures),
            Verdict::FailureBlocked,
        );
    }
    let wait = config.retry_backoff(fleet.failures);
    let comment = format!(
        "[fleet] attempt {attempt}: the agent {what}; failure {} of {}, retrying after {}s.{tail}",
        fleet.failures,
        config.max_failures,
        wait.as_secs()
    );
    retry(fleet, now, wait, comment, Verdict::FailureRetry)
}

impl std::fmt::Display for Outcome {
    /// How the attempt ended, for people: `exited with code 1`, `context pressure (380000 of
    /// 200000 tokens)`, `stalled (no output for 60s)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let head = describe(self);
        match self {
            Outcome::ContextPressure { peak_tokens, limit } => {
                write!(f, "{head} ({peak_tokens} of {limit} tokens)")
            }
            Outcome::RateLimited { window: Some(window), .. } => {
                write!(f, "{head} ({window} window)")
            }
            Outcome::Stalled { silent_for } => {
                write!(f, "{head} (no output for {}s)", silent_for.as_secs())
            }
            Outcome::TimedOut { after } => write!(f, "{head} (after {}s)", after.as_secs()),
            Outcome::CoderFault { detail, .. } | Outcome::Contention { detail } => {
                write!(f, "{head}: {detail}")
            }
            Outcome::Exited { reason, .. } if !reason.trim().is_empty() => {
                write!(f, "{head}: {}", reason.lines().last().unwrap_or_default().trim())
            }
            _ => f.write_str(&head),
        }
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Exited { code, .. } => exit_text(*code),
        Outcome::ContextPressure { .. } => "context pressure".into(),
        Outcome::RateLimited { .. } => "rate limited".into(),
        Outcome::Stalled { .. } => "stalled".into(),
        Outcome::TimedOut { .. } => "timed out".into(),
        Outcome::Shutdown => "supervisor shutdown".into(),
        Outcome::SpawnFailed { error, .. } => format!("could not start: {error}"),
        Outcome::NoResources { detail } => format!("could not start: {detail}"),
        Outcome::CoderFault { cause, .. } => cause.as_str().to_string(),
        Outcome::Contention { .. } => "local state busy".into(),
        Outcome::Revoked { reason } => reason.clone(),
        Outcome::NoWorktree { detail } => format!("no worktree: {detail}"),
        Outcome::OverBudget { detail } => format!("budget: {detail}"),
    }
}

fn exit_text(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_string(),
    }
}

/// What the comment recording a stopped agent says after its attempt number.
const STOPPED_NOTE: &str = ": agent stopped: ";

fn stopped(attempt: u32, reason: &str) -> Plan {
    note(format!("[fleet] attempt {attempt}{STOPPED_NOTE}{reason}"), Verdict::Stopped)
}

/// Whether `comment` is the supervisor's record of an agent it stopped because someone else
/// changed the task: it says what happened to the agent, not why the task is where it is.
pub fn is_stopped_note(comment: &str) -> bool {
    comment
        .strip_prefix("[fleet] attempt ")
        .and_then(|rest| rest.split_once(STOPPED_NOTE))
        .is_some_and(|(attempt, _)| attempt.bytes().all(|b| b.is_ascii_digit()))
}

fn note(comment: String, verdict: Verdict) -> Plan {
    Plan { release: false, patch: None, comment, pause_until: None, verdict }
}

fn counters(fleet: FleetFields) -> IssuePatch {
    IssuePatch { fleet: Some(fleet), ..IssuePatch::default() }
}

fn free_release(fleet: FleetFields, comment: String, verdict: Verdict) -> Plan {
    Plan { release: true, patch: Some(counters(fleet)), comment, pause_until: None, verdict }
}

fn retry(
    fleet: FleetFields,
    now: Timestamp,
    wait: Duration,
    comment: String,
    verdict: Verdict,
) -> Plan {
    let mut fleet = fleet;
    fleet.retry_after = (!wait.is_zero()).then(|| after(now, wait));
    let patch = counters(fleet);
    Plan { release: true, patch: Some(patch), comment, pause_until: None, verdict }
}

fn block(fleet: FleetFields, comment: String, notes: &str, verdict: Verdict) -> Plan {
    let patch = IssuePatch {
        status: Some(Status::Blocked),
        assignee: Some(String::new()),
        append_notes: Some(format!("[fleet] {notes}")),
        fleet: Some(fleet),
        ..IssuePatch::default()
    };
    Plan { release: false, patch: Some(patch), comment, pause_until: None, verdict }
}
