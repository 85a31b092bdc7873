//! The attempt lifecycle's end: what a runner hands back ([`Finished`]), decided into a
//! settlement of the task ([`crate::tracker::settle`]) by the outcome table
//! ([`super::outcome`]), and what the supervisor learns from it — pauses of a coder or an
//! account, a shortage of the machine, the coder's health.

use std::path::Path;

use jiff::Timestamp;

use super::Event;
use super::RUNNING_AGENTS;
use super::SHORTAGE_HOLD;
use super::Shortage;
use super::Supervisor;
use super::lease::Identity;
use super::ledger;
use super::outcome;
use super::outcome::Outcome;
use super::outcome::Plan;
use super::outcome::Verdict;
use super::pause::PauseCause;
use super::pause::Scope;
use super::taskdir::TaskDir;
use super::taskdir::TaskRecord;
use crate::config::RuntimeConfig;
use crate::model::Issue;
use crate::model::Status;
use crate::redact::Redactor;
use crate::store::Store;
use crate::store::StoreError;
use crate::time::Clock;
use crate::tracker;
use crate::tracker::CloseRequest;
use crate::tracker::Request;
use crate::tracker::Settlement;

/// Freezes the coder and model an attempt ran with on the task (when it has none of its own),
/// so later config changes do not switch its agent between attempts. Only an attempt that
/// really ran counts — faults of the fleet freeze nothing — and only while the task is still
/// this attempt's, or was closed or blocked by it. Returns whether anything changed.
fn freeze_coder(issue: &mut Issue, finished: &Finished, held: bool) -> bool {
    let ran = !matches!(
        finished.outcome,
        Outcome::CoderFault { .. }
            | Outcome::SpawnFailed { .. }
            | Outcome::NoResources { .. }
            | Outcome::NoWorktree { .. }
            | Outcome::Contention { .. }
    );
    let settled_by_agent =
        matches!(issue.status, Status::Closed | Status::Blocked) || outcome::queued(issue);
    if !ran || !(held || settled_by_agent) || !issue.fleet.coder.is_empty() {
        return false;
    }
    issue.fleet.coder.clone_from(&finished.coder);
    if issue.fleet.model.is_empty() {
        issue.fleet.model.clone_from(&finished.model);
    }
    true
}

/// What a runner task hands back.
pub(super) struct Finished {
    pub(super) id: String,
    pub(super) attempt: String,
    pub(super) coder: String,
    /// The account the attempt ran on (empty: none).
    pub(super) account: String,
    pub(super) model: String,
    pub(super) outcome: Outcome,
    /// The coder treats exit 0 as done (`exec`): the supervisor closes the task itself.
    pub(super) closes_on_exit_zero: bool,
}

/// What was recorded for an attempt.
struct Recorded {
    verdict: Verdict,
    comment: String,
    pause_until: Option<Timestamp>,
    coder: String,
    account: String,
    model: String,
    /// What the attempt cost, as its ledger says.
    cost_usd: Option<f64>,
    /// When it ended, as its ledger says (the canary's histories are seeded from the ledgers
    /// after a restart, so it judges by the same time).
    ended_at: Option<Timestamp>,
}

/// `task.json`: the task as it runs, with the coder and model of its current attempt.
pub(super) fn task_record(issue: &Issue) -> TaskRecord<'_> {
    let lease = issue.fleet.lease.as_ref();
    TaskRecord {
        id: &issue.id,
        title: &issue.title,
        description: &issue.description,
        status: issue.status.as_str(),
        priority: issue.priority,
        cwd: &issue.fleet.cwd,
        coder: lease.map_or(issue.fleet.coder.as_str(), |l| l.coder.as_str()),
        model: lease.map_or(issue.fleet.model.as_str(), |l| l.model.as_str()),
        attempts: issue.fleet.attempts,
        failures: issue.fleet.failures,
        noclose: issue.fleet.noclose,
        stalls: issue.fleet.stalls,
        context_resets: issue.fleet.context_resets,
        updated_at: issue.updated_at,
    }
}

/// Whether `issue` is still in progress under this very attempt.
fn held_by_attempt(issue: &Issue, me: &Identity, attempt: &str) -> bool {
    me.holds(issue) && issue.fleet.lease.as_ref().is_some_and(|l| l.attempt == attempt)
}

/// What to write on `issue` for the attempt that `finished`: the close a command's exit 0
/// makes while `may_close` (no plan yet: the outcome is decided on the closed task next), or
/// the outcome's plan.
fn decide(
    issue: Issue,
    me: &Identity,
    finished: &Finished,
    may_close: bool,
    (config, redactor): (&RuntimeConfig, &Redactor),
) -> (Settlement, Option<Plan>) {
    let id = finished.id.clone();
    let held = held_by_attempt(&issue, me, &finished.attempt);
    let succeeded = matches!(finished.outcome, Outcome::Exited { code: Some(0), .. });
    // A command's exit 0 closes its task (once) only while the task is still in progress
    // under this attempt: not when the command itself blocked it, or someone took it.
    if succeeded && may_close && held {
        let close = CloseRequest {
            id: id.clone(),
            reason: "command exited 0".to_string(),
            force: true,
            system: true,
            ..CloseRequest::default()
        };
        let settlement = Settlement {
            id,
            decided_on: Box::new(issue),
            close: Some(close),
            release: false,
            patch: None,
            comment: None,
        };
        return (settlement, None);
    }
    let mut planned = issue.clone();
    let frozen = freeze_coder(&mut planned, finished, held);
    let plan = outcome::plan(&finished.outcome, &planned, held, config, Timestamp::now());
    let mut patch = plan.patch.clone();
    if frozen && patch.as_ref().is_none_or(|p| p.fleet.is_none()) {
        let mut with_coder = patch.unwrap_or_default();
        with_coder.fleet = Some(planned.fleet.clone());
        patch = Some(with_coder);
    }
    if let Some(fleet) = patch.as_mut().and_then(|patch| patch.fleet.as_mut()) {
        fleet.lease = None;
    }
    let settlement = Settlement {
        id,
        decided_on: Box::new(issue),
        close: None,
        release: plan.release,
        patch,
        comment: Some(redactor.redact_text(&plan.comment).into_owned()),
    };
    (settlement, Some(plan))
}

/// How many times an outcome is decided again because its task changed meanwhile before
/// recording it fails.
const SETTLE_TRIES: usize = 16;

/// Records an attempt's outcome under the config in force and its redactor: decided on the
/// task as read, and settled only if the task is still so (`tracker::settle`), else decided
/// again. A command's exit 0 first closes its task, then the outcome is decided on the closed
/// task. `None` if the task is gone.
fn record_outcome(
    store: &Store,
    me: &Identity,
    finished: &Finished,
    (config, redactor): (&RuntimeConfig, &Redactor),
    home: &Path,
) -> Result<Option<Recorded>, StoreError> {
    let id = finished.id.as_str();
    let mut recorded = None;
    let mut may_close = finished.closes_on_exit_zero;
    for _ in 0..SETTLE_TRIES {
        let Some(issue) = store.read()?.issue(id)? else { return Ok(None) };
        let (settlement, plan) = decide(issue, me, finished, may_close, (config, redactor));
        let comment = settlement.comment.clone().unwrap_or_default();
        let request = Request::Settle(Box::new(settlement));
        match tracker::execute_in(store, &me.name, Clock::System, &request) {
            Ok(reply) => match plan {
                Some(plan) => {
                    recorded = Some((plan, comment, reply.into_issue()?));
                    break;
                }
                // Closed; a task that lands is still in progress under this attempt now.
                None => may_close = false,
            },
            Err(error) if tracker::is_stale(&error) => continue,
            Err(error) => return Err(error),
        }
    }
    let Some(recorded) = recorded else {
        return Err(StoreError::GivenUp(format!(
            "recording the outcome of {id}: the task changed {SETTLE_TRIES} times meanwhile"
        )));
    };
    let (plan, comment, after) = recorded;
    // task.json is written after the commit: a file write (with its sync) inside the
    // transaction would hold the store's writer lock, which every other process waits on.
    let mut entry = None;
    if let Ok(dir) = TaskDir::new(home, id) {
        let _ = dir.write_record(&task_record(&after), redactor);
        let recorded = ledger::record_outcome(&dir.root, &finished.attempt, plan.verdict.as_str());
        entry = recorded.ok().flatten();
    }
    Ok(Some(Recorded {
        verdict: plan.verdict,
        comment,
        pause_until: plan.pause_until,
        coder: finished.coder.clone(),
        account: finished.account.clone(),
        model: finished.model.clone(),
        cost_usd: entry.as_ref().and_then(|usage| usage.cost_usd),
        ended_at: entry.and_then(|usage| usage.ended_at),
    }))
}

impl Supervisor {
    /// Writes an attempt's outcome to the queue, and pauses or clears its coder.
    pub(super) async fn record(&mut self, mut finished: Finished) {
        let id = finished.id.clone();
        self.running.remove(&id);
        RUNNING_AGENTS.store(self.running.len(), std::sync::atomic::Ordering::Relaxed);
        self.note_shortage(&finished.outcome);
        self.note_coder_health(&finished);
        self.join_rate_limit_in_force(&mut finished);
        let me = self.me.clone();
        let config = self.cfg().clone();
        let redactor = self.redactor().clone();
        let home = self.options.home.clone();
        let recorded = self
            .blocking(move |store| {
                record_outcome(store, &me, &finished, (&config, &redactor), &home)
            })
            .await;
        match recorded {
            Ok(Some(plan)) => {
                self.summary.attempts += 1;
                *self.summary.verdicts.entry(plan.verdict.to_string()).or_default() += 1;
                self.summary.last_verdicts.insert(id.clone(), plan.verdict);
                if plan.verdict == Verdict::Queued {
                    self.landing_due = true;
                }
                if let Some(until) = plan.pause_until {
                    let scope =
                        Scope::of_attempt(&plan.coder, &plan.account, PauseCause::RateLimit);
                    self.pause_for_rate_limit(&scope, Some(until), "rate limited");
                }
                self.watch_quality(&super::canary::Settled {
                    coder: &plan.coder,
                    model: &plan.model,
                    account: &plan.account,
                    verdict: plan.verdict.as_str(),
                    cost_usd: plan.cost_usd,
                    ended_at: plan.ended_at.unwrap_or_else(Timestamp::now),
                });
                self.emit(Event::Finished {
                    id: id.clone(),
                    verdict: plan.verdict,
                    comment: plan.comment,
                });
            }
            Ok(None) => {}
            Err(error) => {
                tracing::error!(%error, task = %id, "recording the attempt's outcome failed");
            }
        }
    }

    /// An agent that could not start for want of a resource holds spawning to the agents that
    /// run now (reported once per shortage); while none runs, spawning waits [`SHORTAGE_HOLD`].
    fn note_shortage(&mut self, outcome: &Outcome) {
        let Outcome::NoResources { detail } = outcome else { return };
        let cap = self.running.len();
        let until = tokio::time::Instant::now() + SHORTAGE_HOLD;
        let news = self.short.is_none();
        self.short = Some(Shortage { cap: self.short.map_or(cap, |s| s.cap.min(cap)), until });
        if news {
            self.emit(Event::ShortOfResources {
                detail: detail.clone(),
                running: cap,
                hold_secs: SHORTAGE_HOLD.as_secs(),
            });
        }
    }

    /// An attempt that ended rate limited while its scope is paused for a rate limit — the one
    /// its runner reported as it happened, or another agent's — ran into that pause: its
    /// outcome ends when the pause does, so recording it neither extends the pause nor writes
    /// it to the history again. A later reset the outcome knows of still extends it.
    fn join_rate_limit_in_force(&self, finished: &mut Finished) {
        let Outcome::RateLimited { resets_at, .. } = &mut finished.outcome else { return };
        let scope = Scope::of_attempt(&finished.coder, &finished.account, PauseCause::RateLimit);
        let in_force = self.pauses.active(&scope, Timestamp::now());
        let Some(pause) = in_force.filter(|p| p.cause == PauseCause::RateLimit) else { return };
        if resets_at.is_none_or(|at| at <= pause.until) {
            *resets_at = Some(pause.until);
        }
    }

    /// A fault of the fleet pauses the coder (or, for a refused login, the account the attempt
    /// ran on); an attempt that ran without one clears the fault history of both.
    fn note_coder_health(&mut self, finished: &Finished) {
        let now = Timestamp::now();
        match &finished.outcome {
            Outcome::CoderFault { cause, detail } => {
                let scope = Scope::of_attempt(&finished.coder, &finished.account, *cause);
                if let Some(paused) = self.pauses.fault(&scope, *cause, detail, now) {
                    self.report_pause(paused);
                }
            }
            Outcome::Shutdown
            | Outcome::Revoked { .. }
            | Outcome::SpawnFailed { .. }
            | Outcome::NoResources { .. }
            | Outcome::NoWorktree { .. }
            | Outcome::Contention { .. } => {}
            _ => {
                self.pauses.succeeded(&Scope::coder(&finished.coder), now);
                if !finished.account.is_empty() {
                    self.pauses.succeeded(&Scope::account(&finished.coder, &finished.account), now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(me: &Identity, attempt: &str) -> Issue {
        let mut issue = Issue::new("t-1".into(), "x".into(), Timestamp::now());
        issue.status = Status::InProgress;
        issue.assignee = me.name.clone();
        issue.fleet.attempts = 1;
        issue.fleet.lease = Some(me.lease(attempt, "exec", "", Timestamp::now()));
        issue
    }

    fn finished(outcome: Outcome, closes_on_exit_zero: bool) -> Finished {
        Finished {
            id: "t-1".into(),
            attempt: "a1".into(),
            coder: "exec".into(),
            account: String::new(),
            model: "m".into(),
            outcome,
            closes_on_exit_zero,
        }
    }

    /// What `me` decides for `finished` on `issue`, under the default config.
    fn decided(
        issue: Issue,
        me: &Identity,
        finished: &Finished,
        may_close: bool,
    ) -> (Settlement, Option<Plan>) {
        let config = RuntimeConfig::default();
        decide(issue, me, finished, may_close, (&config, &Redactor::new(Vec::<String>::new())))
    }

    /// A command's exit 0 closes its task first, once: the outcome is decided on the task the
    /// close left, which for a task that lands is still in progress under the attempt.
    #[test]
    fn a_commands_exit_zero_closes_its_task_once_then_decides() {
        let me = Identity::current("fleet@test");
        let done = finished(Outcome::Exited { code: Some(0), reason: String::new() }, true);
        let issue = running(&me, "a1");
        let (close, plan) = decided(issue.clone(), &me, &done, true);
        assert!(plan.is_none() && close.close.as_ref().is_some_and(|c| c.system && c.force));
        assert_eq!(*close.decided_on, issue);
        let (settlement, plan) = decided(issue, &me, &done, false);
        assert!(settlement.close.is_none() && plan.is_some());
    }

    /// Whatever the outcome, the settlement never writes a lease back, and an attempt that
    /// really ran freezes its coder and model on a task that had none.
    #[test]
    fn a_failure_freezes_the_coder_and_drops_the_lease() {
        let me = Identity::current("fleet@test");
        let failed = finished(Outcome::Exited { code: Some(2), reason: "boom".into() }, false);
        let (settlement, plan) = decided(running(&me, "a1"), &me, &failed, false);
        let fleet = settlement.patch.and_then(|p| p.fleet).expect("counters are written");
        assert_eq!((fleet.coder.as_str(), fleet.model.as_str()), ("exec", "m"));
        assert!(fleet.lease.is_none());
        assert!(settlement.release, "a first failure is retried");
        assert_eq!(plan.map(|p| p.verdict), Some(Verdict::FailureRetry));
    }

    /// A task someone else took while the agent ran is not touched: a comment only.
    #[test]
    fn a_task_taken_over_gets_a_comment_only() {
        let other = Identity::current("fleet@other");
        let failed = finished(Outcome::Exited { code: Some(1), reason: String::new() }, true);
        let me = Identity::current("fleet@test");
        let (settlement, plan) = decided(running(&other, "b7"), &me, &failed, true);
        assert!(settlement.close.is_none() && !settlement.release && settlement.patch.is_none());
        assert!(settlement.comment.is_some());
        assert_eq!(plan.map(|p| p.verdict), Some(Verdict::TakenOver));
    }
}
