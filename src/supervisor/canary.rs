//! The quality canary: per coder·model, and per account of a coder, the rolling failure rate,
//! requeue rate and cost per closed task of the latest attempts, judged against the same
//! measures over the attempts before them (the baseline). When one jumps well above its
//! baseline (`[canary]` in runtime.toml), the supervisor holds that coder·model or account
//! (`supervisor::hold`, cause [`PauseCause::Canary`]) until a person resumes it: the way a
//! fleet of fifty agents should have stopped when quality fell and cost rose many-fold.
//!
//! What an attempt counts as, by its verdict ([`Kind::of`]):
//!
//! - **closed**: `closed`, `queued` (closed by the agent, its work waiting to land);
//! - **failed**: `failure-retry`, `failure-blocked` (exit ≠ 0, killed, timed out),
//!   `stall-requeued`, `stall-blocked`;
//! - **requeued**: `noclose-requeued`, `noclose-blocked` (exit 0 without closing),
//!   `context-pressure`, `context-blocked`;
//! - **other**: `blocked-by-agent` (the agent asked a person): judged, neither failed nor
//!   requeued.
//!
//! Every other verdict is not the coder's doing and is not judged at all: faults of the fleet
//! (`coder-paused`, `spawn-failed`, `resource-requeued`, `contention-requeued`,
//! `worktree-failed`), rate limits and budgets (handled by their own pauses), and attempts
//! stopped by someone (`shutdown`, `stopped`, `taken-over`).
//!
//! Rates are shares of the judged attempts; cost per closed task is what the judged attempts
//! cost (failed ones included) divided by the closes among them. The window is the latest
//! `window` judged attempts; the baseline is up to [`BASELINE_ATTEMPTS`] before them. Nothing is
//! judged before the window holds `min_attempts`; a baseline of fewer than `min_attempts` is
//! none, and then the absolute ceilings (`max_failure_rate`, `max_requeue_rate`) apply, so a
//! new fleet failing everything still trips; cost is judged only against a baseline.
//!
//! The histories live in memory: seeded once from the task ledgers when the supervisor starts
//! ([`Canaries::seed`]), then fed each settled attempt ([`Canaries::observe`]) — never a
//! re-read of the ledgers per attempt. A resumed subject starts a fresh window: the attempts
//! of the window that tripped are dropped (not moved into the baseline, which they would
//! raise), together with every attempt of that subject settled between the trip and the resume
//! (agents that were still running), from every history they are in (the account's too). The
//! subjects tripped and the spans of attempts dropped are kept in `state/canaries.json`, so a
//! restart (or a `fleet resume` while no supervisor runs) does not judge them again.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::hold::{Hold, Holds, model_scope};
use super::ledger::AttemptUsage;
use super::pause::PauseCause;
use crate::config::CanaryConfig;

/// The most attempts before the window that the baseline is taken over.
pub const BASELINE_ATTEMPTS: usize = 200;

/// The file under `FLEET_HOME/state` with the tripped subjects and their restarts.
const STATE_FILE: &str = "canaries.json";

/// Who places the canary's holds (`Hold::by`).
pub const HOLDER: &str = "canary";

/// What a judged attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Closed,
    Failed,
    Requeued,
    /// Judged, but neither a close, a failure nor a requeue (the agent asked a person).
    Other,
}

impl Kind {
    /// The kind of an attempt with this verdict (`Verdict::as_str`); `None`: not judged (see
    /// the module doc's table).
    pub fn of(verdict: &str) -> Option<Kind> {
        match verdict {
            "closed" | "queued" => Some(Kind::Closed),
            "failure-retry" | "failure-blocked" | "stall-requeued" | "stall-blocked" => {
                Some(Kind::Failed)
            }
            "noclose-requeued" | "noclose-blocked" | "context-pressure" | "context-blocked" => {
                Some(Kind::Requeued)
            }
            "blocked-by-agent" => Some(Kind::Other),
            _ => None,
        }
    }
}

/// One judged attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub kind: Kind,
    pub cost_usd: Option<f64>,
    pub ended_at: Timestamp,
    /// The subjects the attempt counts toward (its coder·model, its account), shared by their
    /// histories: a window dropped for one subject leaves the others too.
    pub owners: Arc<[Subject]>,
}

/// Attempts that ended from `from` to `to` (both included): a window that tripped, and what
/// settled after it until a person resumed the subject. Never judged again, for any subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Span {
    from: Timestamp,
    to: Timestamp,
}

impl Span {
    fn holds(&self, sample: &Sample, owner: &Subject) -> bool {
        (self.from..=self.to).contains(&sample.ended_at) && sample.owners.contains(owner)
    }
}

/// How many dropped spans of a subject are remembered (the oldest go first).
const KEPT_SPANS: usize = 16;

/// A subject the canary holds: when it tripped, and when the window that tripped it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Tripped {
    at: Timestamp,
    window_from: Timestamp,
}

/// What the canary judges: a coder with one model (across its accounts), or one account of a
/// coder (across its models).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    Model { coder: String, model: String },
    Account { coder: String, account: String },
}

impl Subject {
    /// The subjects an attempt of `coder` with `model` on `account` (empty: none) counts
    /// toward: its coder·model first, then its account.
    pub fn of_attempt(coder: &str, model: &str, account: &str) -> Vec<Subject> {
        let mut subjects =
            vec![Subject::Model { coder: coder.to_owned(), model: model.to_owned() }];
        if !account.is_empty() {
            subjects
                .push(Subject::Account { coder: coder.to_owned(), account: account.to_owned() });
        }
        subjects
    }

    pub fn coder(&self) -> &str {
        match self {
            Subject::Model { coder, .. } | Subject::Account { coder, .. } => coder,
        }
    }

    /// The key in `state/canaries.json`: `model:CODER·MODEL` or `account:CODER@ACCOUNT`.
    fn key(&self) -> String {
        match self {
            Subject::Model { .. } => format!("model:{self}"),
            Subject::Account { .. } => format!("account:{self}"),
        }
    }

    fn from_key(key: &str) -> Option<Subject> {
        if let Some(rest) = key.strip_prefix("model:") {
            let (coder, model) = rest.split_once('·')?;
            let model = if model == "default" { "" } else { model };
            return Some(Subject::Model { coder: coder.to_owned(), model: model.to_owned() });
        }
        let (coder, account) = key.strip_prefix("account:")?.split_once('@')?;
        Some(Subject::Account { coder: coder.to_owned(), account: account.to_owned() })
    }

    /// Whether the canary's own hold on this subject is in `holds`.
    pub fn held_by_canary(&self, holds: &Holds) -> bool {
        let held = match self {
            Subject::Model { coder, model } => holds.models.get(coder).and_then(|m| m.get(model)),
            Subject::Account { coder, account } => {
                holds.accounts.get(coder).and_then(|a| a.get(account))
            }
        };
        held.is_some_and(Hold::is_canary)
    }

    /// Places `hold` on this subject in `holds`; false when one was in place already.
    pub fn place(&self, holds: &mut Holds, hold: Hold) -> bool {
        match self {
            Subject::Model { coder, model } => holds.place_model(coder, model, hold),
            Subject::Account { coder, account } => holds.place_account(coder, account, hold),
        }
    }

    /// The command that lifts the hold on this subject.
    pub fn resume_command(&self) -> String {
        match self {
            Subject::Model { coder, model } => {
                let plain =
                    model.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/@".contains(c));
                let model = match model.as_str() {
                    "" => "default".to_owned(),
                    _ if plain => model.clone(),
                    _ => format!("{model:?}"),
                };
                format!("fleet resume --coder {coder} --model {model}")
            }
            Subject::Account { coder, account } => {
                format!("fleet resume --coder {coder} --account {account}")
            }
        }
    }
}

/// What a person does about a tripped canary, ending with the command `resume` that lifts it.
pub fn fix(resume: &str) -> String {
    format!(
        "look at its recent attempts (`fleet stats --canaries`, `fleet tasks --all`), then `{resume}`"
    )
}

impl std::fmt::Display for Subject {
    /// `claude·opus` (`claude·default` for the model the CLI picks), or `claude@work`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Model { coder, model } => f.write_str(&model_scope(coder, model)),
            Subject::Account { coder, account } => {
                f.write_str(&crate::coders::account::qualified(coder, Some(account)))
            }
        }
    }
}

/// The three measures over some attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Measures {
    pub attempts: usize,
    /// Failed attempts over all (absent without attempts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<f64>,
    /// Requeued attempts over all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requeue_rate: Option<f64>,
    /// What the attempts cost over the closes among them (absent with no close, or no cost
    /// recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_closed_task: Option<f64>,
}

/// The measures of `samples`.
pub fn measure<'a>(samples: impl Iterator<Item = &'a Sample>) -> Measures {
    let (mut attempts, mut failed, mut requeued, mut closed) = (0usize, 0usize, 0usize, 0usize);
    let mut cost: Option<f64> = None;
    for sample in samples {
        attempts += 1;
        match sample.kind {
            Kind::Closed => closed += 1,
            Kind::Failed => failed += 1,
            Kind::Requeued => requeued += 1,
            Kind::Other => {}
        }
        if let Some(usd) = sample.cost_usd {
            cost = Some(cost.unwrap_or(0.0) + usd);
        }
    }
    let share = |n: usize| (attempts > 0).then(|| n as f64 / attempts as f64);
    Measures {
        attempts,
        failure_rate: share(failed),
        requeue_rate: share(requeued),
        usd_per_closed_task: cost.filter(|_| closed > 0).map(|usd| usd / closed as f64),
    }
}

/// Which measure tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    FailureRate,
    RequeueRate,
    CostPerClosedTask,
}

impl Metric {
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::FailureRate => "failure rate",
            Metric::RequeueRate => "requeue rate",
            Metric::CostPerClosedTask => "cost per closed task",
        }
    }

    /// `value` as people read this measure: `80%`, `$1.20`.
    fn show(self, value: f64) -> String {
        match self {
            Metric::CostPerClosedTask => format!("${value:.2}"),
            _ => format!("{:.0}%", value * 100.0),
        }
    }
}

/// A measure of the window above its limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trip {
    pub metric: Metric,
    pub current: f64,
    /// `None`: no baseline yet, the absolute ceiling applied.
    pub baseline: Option<f64>,
    pub limit: f64,
    /// The attempts the current value is taken over.
    pub attempts: usize,
}

impl std::fmt::Display for Trip {
    /// `failure rate 80% over the last 10 attempts (baseline 10%, limit 35%)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let metric = self.metric;
        let baseline = match self.baseline {
            Some(value) => format!("baseline {}", metric.show(value)),
            None => "no baseline yet".to_owned(),
        };
        write!(
            f,
            "{} {} over the last {} attempts ({baseline}, limit {})",
            metric.as_str(),
            metric.show(self.current),
            self.attempts,
            metric.show(self.limit)
        )
    }
}

/// The first measure of `current` above its limit under `config`, judged against `baseline`
/// (the attempts before the window). `None` while the window holds fewer than `min_attempts`.
pub fn judge(config: &CanaryConfig, current: &Measures, baseline: &Measures) -> Option<Trip> {
    if current.attempts < config.min_attempts {
        return None;
    }
    let has_baseline = baseline.attempts >= config.min_attempts;
    let rates = [
        (Metric::FailureRate, current.failure_rate, baseline.failure_rate, config.max_failure_rate),
        (Metric::RequeueRate, current.requeue_rate, baseline.requeue_rate, config.max_requeue_rate),
    ];
    for (metric, now, before, ceiling) in rates {
        let now = now.unwrap_or(0.0);
        let (baseline, limit) = if has_baseline {
            let before = before.unwrap_or(0.0);
            (Some(before), (before * config.rate_factor).max(before + config.rate_margin))
        } else {
            (None, ceiling)
        };
        if now > limit + f64::EPSILON {
            return Some(Trip {
                metric,
                current: now,
                baseline,
                limit,
                attempts: current.attempts,
            });
        }
    }
    let cost_before = baseline.usd_per_closed_task.filter(|usd| has_baseline && *usd > 0.0)?;
    let cost_now = current.usd_per_closed_task?;
    let limit = cost_before * config.cost_factor;
    (cost_now > limit).then_some(Trip {
        metric: Metric::CostPerClosedTask,
        current: cost_now,
        baseline: Some(cost_before),
        limit,
        attempts: current.attempts,
    })
}

/// The judged attempts of one subject, oldest first: the window and the baseline before it.
#[derive(Debug, Clone, Default)]
struct History {
    samples: VecDeque<Sample>,
}

impl History {
    /// Adds `sample`, keeping no more than a window and a baseline.
    fn push(&mut self, sample: Sample, window: usize) {
        self.samples.push_back(sample);
        while self.samples.len() > window + BASELINE_ATTEMPTS {
            self.samples.pop_front();
        }
    }

    /// When the first attempt of the window ended.
    fn window_from(&self, window: usize) -> Option<Timestamp> {
        let split = self.samples.len().saturating_sub(window);
        self.samples.get(split).map(|sample| sample.ended_at)
    }

    /// Drops `owner`'s attempts within `span`.
    fn drop_span(&mut self, owner: &Subject, span: &Span) {
        self.samples.retain(|sample| !span.holds(sample, owner));
    }

    /// The measures of the window and of the baseline.
    fn read(&self, window: usize) -> (Measures, Measures) {
        let split = self.samples.len().saturating_sub(window);
        let from = split.saturating_sub(BASELINE_ATTEMPTS);
        let current = measure(self.samples.range(split..));
        let baseline = measure(self.samples.range(from..split));
        (current, baseline)
    }
}

/// What `state/canaries.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    /// Subjects the canary held, by key.
    #[serde(default)]
    tripped: BTreeMap<String, Tripped>,
    /// The spans of attempts dropped after each resume, by key.
    #[serde(default)]
    dropped: BTreeMap<String, Vec<Span>>,
}

/// Every subject's history, and which are tripped.
#[derive(Debug, Default)]
pub struct Canaries {
    histories: BTreeMap<Subject, History>,
    /// Subjects held by the canary.
    tripped: BTreeMap<Subject, Tripped>,
    /// Attempts never judged again, by the subject whose resume dropped them.
    dropped: BTreeMap<Subject, Vec<Span>>,
    /// `state/canaries.json` (`None`: in memory only).
    path: Option<PathBuf>,
}

/// A settled attempt, as the canary needs it.
#[derive(Debug, Clone)]
pub struct Settled<'a> {
    pub coder: &'a str,
    pub model: &'a str,
    pub account: &'a str,
    /// `Verdict::as_str`.
    pub verdict: &'a str,
    pub cost_usd: Option<f64>,
    pub ended_at: Timestamp,
}

impl Canaries {
    /// The histories of every attempt in the ledgers under `home` (sorted by when they
    /// ended), with the state of `state/canaries.json`; a window restarted there is left out
    /// again. Subjects recorded as tripped whose hold is no longer in `holds` were resumed
    /// while no supervisor ran: they restart now.
    pub fn seed(home: &Path, config: &CanaryConfig, holds: &Holds, now: Timestamp) -> Canaries {
        let mut canaries = Canaries::seed_from(home, config);
        canaries.resumed(holds, now);
        canaries
    }

    /// The state file and the ledgers under `home`, read.
    fn seed_from(home: &Path, config: &CanaryConfig) -> Canaries {
        let path = home.join("state").join(STATE_FILE);
        let state: State = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let mut canaries = Canaries {
            histories: BTreeMap::new(),
            tripped: by_subject(state.tripped),
            dropped: by_subject(state.dropped),
            path: Some(path),
        };
        canaries.fill(&super::ledger::all_attempts(home), config.window);
        canaries
    }

    /// The histories as [`Canaries::seed`] reads them, for a reader that changes nothing (no
    /// subject restarts, no file is written).
    pub fn in_memory(home: &Path, config: &CanaryConfig, holds: &Holds) -> Canaries {
        let mut canaries = Canaries::seed_from(home, config);
        canaries.path = None;
        // Resumed while no supervisor ran: shown as the next supervisor will judge it.
        canaries.resumed(holds, Timestamp::now());
        canaries
    }

    /// Fills the histories from `attempts` (in any order).
    fn fill(&mut self, attempts: &[AttemptUsage], window: usize) {
        let mut judged: Vec<Sample> = attempts
            .iter()
            .filter_map(|attempt| {
                let kind = Kind::of(attempt.outcome.as_deref()?)?;
                let ended_at = attempt.ended_at?;
                let owners = Subject::of_attempt(&attempt.coder, &attempt.model, &attempt.account);
                let sample =
                    Sample { kind, cost_usd: attempt.cost_usd, ended_at, owners: owners.into() };
                (!self.was_dropped(&sample)).then_some(sample)
            })
            .collect();
        judged.sort_by_key(|sample| sample.ended_at);
        for sample in judged {
            for subject in sample.owners.iter() {
                self.histories.entry(subject.clone()).or_default().push(sample.clone(), window);
            }
        }
    }

    /// Whether `sample` lies in a span a resume dropped (for any subject it counts toward).
    fn was_dropped(&self, sample: &Sample) -> bool {
        sample.owners.iter().any(|owner| {
            self.dropped
                .get(owner)
                .is_some_and(|spans| spans.iter().any(|s| s.holds(sample, owner)))
        })
    }

    /// Adds a settled attempt to its subjects' histories and judges them (unless `config`
    /// disables the canary): the subject that trips now, with why. An attempt of a subject
    /// already tripped (an agent that was running when it tripped) trips nothing more.
    pub fn observe(&mut self, settled: &Settled, config: &CanaryConfig) -> Option<(Subject, Trip)> {
        let kind = Kind::of(settled.verdict)?;
        let subjects = Subject::of_attempt(settled.coder, settled.model, settled.account);
        let sample = Sample {
            kind,
            cost_usd: settled.cost_usd,
            ended_at: settled.ended_at,
            owners: subjects.clone().into(),
        };
        for subject in &subjects {
            self.histories.entry(subject.clone()).or_default().push(sample.clone(), config.window);
        }
        if !config.enabled || subjects.iter().any(|s| self.tripped.contains_key(s)) {
            return None;
        }
        subjects.into_iter().find_map(|subject| {
            let (current, baseline) = self.histories.get(&subject)?.read(config.window);
            judge(config, &current, &baseline).map(|trip| (subject, trip))
        })
    }

    /// Records that `subject` tripped `at` over its latest `window` attempts (its hold is
    /// placed by the caller).
    pub fn trip(&mut self, subject: &Subject, at: Timestamp, window: usize) {
        let window_from =
            self.histories.get(subject).and_then(|h| h.window_from(window)).unwrap_or(at);
        self.tripped.insert(subject.clone(), Tripped { at, window_from });
        self.save();
    }

    /// The tripped subjects whose canary hold is gone from `holds` (a person resumed them):
    /// the window that tripped each, and every attempt of it settled since, are dropped from
    /// every history they are in, so it starts afresh and judges none of them again. Returns
    /// them.
    pub fn resumed(&mut self, holds: &Holds, now: Timestamp) -> Vec<Subject> {
        let lifted: Vec<(Subject, Tripped)> = self
            .tripped
            .iter()
            .filter(|(s, _)| !s.held_by_canary(holds))
            .map(|(s, t)| (s.clone(), *t))
            .collect();
        for (subject, tripped) in &lifted {
            self.tripped.remove(subject);
            let span = Span { from: tripped.window_from, to: now.max(tripped.at) };
            for history in self.histories.values_mut() {
                history.drop_span(subject, &span);
            }
            let spans = self.dropped.entry(subject.clone()).or_default();
            spans.push(span);
            if spans.len() > KEPT_SPANS {
                spans.remove(0);
            }
        }
        if !lifted.is_empty() {
            self.save();
        }
        lifted.into_iter().map(|(subject, _)| subject).collect()
    }

    /// The hold the canary places for `trip` at `now`.
    pub fn hold(trip: &Trip, now: Timestamp) -> Hold {
        Hold {
            since: now,
            by: HOLDER.to_owned(),
            reason: trip.to_string(),
            cause: Some(PauseCause::Canary),
        }
    }

    /// Every subject's window, baseline and status, for `fleet stats --canaries`.
    pub fn report(&self, config: &CanaryConfig, holds: &Holds) -> CanaryReport {
        let canaries = self
            .histories
            .iter()
            .map(|(subject, history)| {
                let (window, baseline) = history.read(config.window);
                let trip = judge(config, &window, &baseline);
                let (status, detail) = if subject.held_by_canary(holds) {
                    let reason = held_reason(subject, holds);
                    (
                        Status::Tripped,
                        reason.map(|r| format!("{r}; `{}`", subject.resume_command())),
                    )
                } else if let Some(trip) = trip {
                    (Status::Over, Some(trip.to_string()))
                } else if window.attempts < config.min_attempts {
                    (Status::Learning, None)
                } else {
                    (Status::Ok, None)
                };
                let (model, account) = match subject {
                    Subject::Model { model, .. } => (Some(model.clone()), None),
                    Subject::Account { account, .. } => (None, Some(account.clone())),
                };
                CanaryRow {
                    subject: subject.to_string(),
                    coder: subject.coder().to_owned(),
                    model,
                    account,
                    window,
                    baseline,
                    status,
                    detail,
                }
            })
            .collect();
        CanaryReport {
            enabled: config.enabled,
            window: config.window,
            min_attempts: config.min_attempts,
            canaries,
        }
    }

    /// Writes `state/canaries.json` (best effort: the holds themselves are what stops work).
    fn save(&self) {
        let Some(path) = &self.path else { return };
        let state = State { tripped: by_key(&self.tripped), dropped: by_key(&self.dropped) };
        let written =
            serde_json::to_string_pretty(&state).map_err(std::io::Error::other).and_then(|text| {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                crate::fsutil::write_atomic(path, format!("{text}\n").as_bytes())
            });
        if let Err(error) = written {
            tracing::warn!(%error, path = %path.display(), "cannot save the canaries' state");
        }
    }
}

/// A map by subject as `state/canaries.json` keys it.
fn by_key<T: Clone>(map: &BTreeMap<Subject, T>) -> BTreeMap<String, T> {
    map.iter().map(|(subject, value)| (subject.key(), value.clone())).collect()
}

/// A map of `state/canaries.json` by subject (keys it cannot read are left out).
fn by_subject<T>(map: BTreeMap<String, T>) -> BTreeMap<Subject, T> {
    map.into_iter().filter_map(|(key, value)| Some((Subject::from_key(&key)?, value))).collect()
}

/// The reason of the canary's hold on `subject`.
fn held_reason(subject: &Subject, holds: &Holds) -> Option<String> {
    let held = match subject {
        Subject::Model { coder, model } => holds.models.get(coder)?.get(model)?,
        Subject::Account { coder, account } => holds.accounts.get(coder)?.get(account)?,
    };
    Some(held.reason.clone())
}

/// How a subject stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fewer than `min_attempts` in the window: not judged yet.
    Learning,
    Ok,
    /// A measure is above its limit, but no hold is in place (the canary is disabled, or the
    /// next settled attempt of the subject may hold it).
    Over,
    /// Held by the canary until a person resumes it.
    Tripped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Learning => "learning",
            Status::Ok => "ok",
            Status::Over => "over",
            Status::Tripped => "tripped",
        }
    }
}

/// One subject in `fleet stats --canaries`.
#[derive(Debug, Clone, Serialize)]
pub struct CanaryRow {
    /// `claude·opus` or `claude@work`.
    pub subject: String,
    pub coder: String,
    /// For a coder·model (`""`: the model the CLI picks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For an account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The latest `window` judged attempts.
    pub window: Measures,
    /// The attempts before them.
    pub baseline: Measures,
    pub status: Status,
    /// Why it is tripped or over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `fleet stats --canaries`.
#[derive(Debug, Clone, Serialize)]
pub struct CanaryReport {
    pub enabled: bool,
    pub window: usize,
    pub min_attempts: usize,
    pub canaries: Vec<CanaryRow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(window: usize, min_attempts: usize) -> CanaryConfig {
        CanaryConfig { window, min_attempts, ..CanaryConfig::default() }
    }

    fn samples(kinds: &[Kind], cost: f64) -> Vec<Sample> {
        kinds
            .iter()
            .map(|kind| Sample {
                kind: *kind,
                cost_usd: Some(cost),
                ended_at: Timestamp::UNIX_EPOCH,
                owners: Arc::from([]),
            })
            .collect()
    }

    fn rates(failed: usize, of: usize) -> Vec<Kind> {
        (0..of).map(|i| if i < failed { Kind::Failed } else { Kind::Closed }).collect()
    }

    #[test]
    fn every_verdict_is_judged_as_the_table_says() {
        use super::super::outcome::Verdict::*;
        let kinds = |verdicts: &[super::super::outcome::Verdict]| {
            verdicts.iter().map(|v| Kind::of(v.as_str())).collect::<Vec<_>>()
        };
        assert!(kinds(&[Closed, Queued]).iter().all(|k| *k == Some(Kind::Closed)));
        let failed = kinds(&[FailureRetry, FailureBlocked, StallRequeued, StallBlocked]);
        assert!(failed.iter().all(|k| *k == Some(Kind::Failed)));
        let requeued = kinds(&[NocloseRequeued, NocloseBlocked, ContextPressure, ContextBlocked]);
        assert!(requeued.iter().all(|k| *k == Some(Kind::Requeued)));
        assert_eq!(kinds(&[BlockedByAgent]), [Some(Kind::Other)]);
        let not_judged = kinds(&[
            WorktreeFailed,
            TakenOver,
            Stopped,
            Shutdown,
            SpawnFailed,
            CoderPaused,
            ContentionRequeued,
            ResourceRequeued,
            RateLimited,
            Budget,
        ]);
        assert!(not_judged.iter().all(Option::is_none));
    }

    #[test]
    fn measures_are_shares_and_cost_per_close() {
        let kinds = [Kind::Closed, Kind::Failed, Kind::Requeued, Kind::Closed];
        let m = measure(samples(&kinds, 0.5).iter());
        assert_eq!(m.attempts, 4);
        assert_eq!((m.failure_rate, m.requeue_rate), (Some(0.25), Some(0.25)));
        assert_eq!(m.usd_per_closed_task, Some(1.0), "$2 over 2 closes");
        let none = measure(samples(&[Kind::Failed], 0.5).iter());
        assert_eq!(none.usd_per_closed_task, None, "no close: no cost per close");
        assert_eq!(measure([].iter()), Measures::default());
    }

    #[test]
    fn nothing_is_judged_before_min_attempts() {
        let config = config(4, 3);
        let two_failures = measure(samples(&rates(2, 2), 0.0).iter());
        assert_eq!(judge(&config, &two_failures, &Measures::default()), None);
        let three = measure(samples(&rates(3, 3), 0.0).iter());
        assert!(judge(&config, &three, &Measures::default()).is_some());
    }

    #[test]
    fn without_a_baseline_the_ceiling_applies() {
        let config = config(10, 5);
        let half = measure(samples(&rates(5, 10), 0.0).iter());
        assert_eq!(judge(&config, &half, &Measures::default()), None, "50% is not above 50%");
        let most = measure(samples(&rates(6, 10), 0.0).iter());
        let trip = judge(&config, &most, &Measures::default()).unwrap();
        assert_eq!((trip.metric, trip.baseline, trip.limit), (Metric::FailureRate, None, 0.5));
        assert_eq!(
            trip.to_string(),
            "failure rate 60% over the last 10 attempts (no baseline yet, limit 50%)"
        );
        // A baseline of fewer than min_attempts is none.
        let short = measure(samples(&rates(0, 4), 0.0).iter());
        assert_eq!(judge(&config, &most, &short).unwrap().baseline, None);
    }

    #[test]
    fn a_rate_trips_above_the_larger_of_factor_and_margin() {
        let config = config(10, 5);
        // Baseline 10%: the limit is max(20%, 35%) = 35%.
        let baseline = measure(samples(&rates(2, 20), 0.0).iter());
        let at =
            |failed| judge(&config, &measure(samples(&rates(failed, 10), 0.0).iter()), &baseline);
        assert_eq!(at(3), None);
        let trip = at(4).unwrap();
        assert_eq!(trip.limit, 0.35);
        assert_eq!(
            trip.to_string(),
            "failure rate 40% over the last 10 attempts (baseline 10%, limit 35%)"
        );
        // Baseline 40%: the limit is max(80%, 65%) = 80%.
        let high = measure(samples(&rates(8, 20), 0.0).iter());
        let now = measure(samples(&rates(8, 10), 0.0).iter());
        assert_eq!(judge(&config, &now, &high), None);
        let all = measure(samples(&rates(9, 10), 0.0).iter());
        assert_eq!(judge(&config, &all, &high).unwrap().limit, 0.8);
    }

    #[test]
    fn requeues_are_judged_like_failures() {
        let config = config(4, 3);
        let kinds = [Kind::Requeued, Kind::Requeued, Kind::Requeued, Kind::Closed];
        let trip = judge(&config, &measure(samples(&kinds, 0.0).iter()), &Measures::default());
        assert_eq!(trip.map(|t| t.metric), Some(Metric::RequeueRate));
    }

    #[test]
    fn cost_per_close_trips_only_against_a_baseline() {
        let config = config(4, 3);
        let cheap = measure(samples(&rates(0, 10), 0.1).iter());
        let dear = measure(samples(&rates(0, 4), 0.4).iter());
        let trip = judge(&config, &dear, &cheap).unwrap();
        assert_eq!(trip.metric, Metric::CostPerClosedTask);
        assert_eq!(
            trip.to_string(),
            "cost per closed task $0.40 over the last 4 attempts (baseline $0.10, limit $0.30)"
        );
        let fair = measure(samples(&rates(0, 4), 0.3).iter());
        assert_eq!(judge(&config, &fair, &cheap), None, "3× is not above 3×");
        assert_eq!(
            judge(&config, &dear, &Measures::default()),
            None,
            "no baseline, no cost verdict"
        );
    }

    fn settled<'a>(verdict: &'a str, account: &'a str) -> Settled<'a> {
        Settled {
            coder: "fake",
            model: "m",
            account,
            verdict,
            cost_usd: Some(0.1),
            ended_at: Timestamp::now(),
        }
    }

    #[test]
    fn a_run_of_failures_trips_the_coder_model_once_and_a_resume_restarts_the_window() {
        let config = config(4, 3);
        let mut canaries = Canaries::default();
        assert!(canaries.observe(&settled("failure-retry", ""), &config).is_none());
        assert!(canaries.observe(&settled("rate-limited", ""), &config).is_none(), "not judged");
        assert!(canaries.observe(&settled("failure-retry", ""), &config).is_none());
        let (subject, trip) = canaries.observe(&settled("failure-blocked", ""), &config).unwrap();
        assert_eq!(subject.to_string(), "fake·m");
        assert_eq!(trip.attempts, 3);
        let now = Timestamp::now();
        canaries.trip(&subject, now, config.window);
        let mut holds = Holds::default();
        assert!(subject.place(&mut holds, Canaries::hold(&trip, now)));
        assert!(canaries.observe(&settled("failure-retry", ""), &config).is_none(), "held");
        assert!(canaries.resumed(&holds, now).is_empty(), "still held");
        holds.lift(Some("fake"));
        assert_eq!(canaries.resumed(&holds, Timestamp::now()), [subject]);
        let report = canaries.report(&config, &holds);
        assert_eq!(report.canaries[0].window.attempts, 0, "a fresh window");
        assert_eq!(report.canaries[0].status, Status::Learning);
        assert!(canaries.observe(&settled("failure-retry", ""), &config).is_none());
    }

    #[test]
    fn an_account_is_judged_apart_and_its_coder_model_first() {
        let config = config(4, 3);
        let mut canaries = Canaries::default();
        canaries.observe(&settled("failure-retry", "work"), &config);
        canaries.observe(&settled("failure-retry", "work"), &config);
        let (subject, _) = canaries.observe(&settled("failure-retry", "work"), &config).unwrap();
        assert_eq!(subject.to_string(), "fake·m", "the coder·model before the account");
        let rows = canaries.report(&config, &Holds::default()).canaries;
        let subjects: Vec<&str> = rows.iter().map(|r| r.subject.as_str()).collect();
        assert_eq!(subjects, ["fake·m", "fake@work"]);
        assert!(rows.iter().all(|r| r.status == Status::Over));
    }

    #[test]
    fn a_disabled_canary_judges_nothing() {
        let config = CanaryConfig { enabled: false, ..config(4, 3) };
        let mut canaries = Canaries::default();
        for _ in 0..5 {
            assert!(canaries.observe(&settled("failure-retry", ""), &config).is_none());
        }
    }

    #[test]
    fn seeding_leaves_out_the_window_that_tripped_before_a_restart() {
        let at = |secs: i64| Timestamp::from_second(secs).unwrap();
        let attempt = |secs: i64, outcome: &str| {
            let mut usage = AttemptUsage::start(1, &format!("a{secs}"), "fake", "m");
            usage.ended_at = Some(at(secs));
            usage.outcome = Some(outcome.to_owned());
            usage
        };
        let mut attempts: Vec<AttemptUsage> = (1..=5).map(|s| attempt(s, "closed")).collect();
        attempts.extend((6..=8).map(|s| attempt(s, "failure-retry")));
        attempts.push(attempt(20, "closed"));
        let subject = Subject::Model { coder: "fake".into(), model: "m".into() };
        let mut canaries = Canaries::default();
        canaries.dropped.insert(subject.clone(), vec![Span { from: at(6), to: at(10) }]);
        canaries.fill(&attempts, 3);
        let (window, baseline) = canaries.histories[&subject].read(3);
        assert_eq!((window.attempts, window.failure_rate), (3, Some(0.0)), "{window:?}");
        assert_eq!((baseline.attempts, baseline.failure_rate), (3, Some(0.0)));
    }

    /// Attempts that settle between the trip and the resume (agents still running when it
    /// tripped) are dropped with the window, and so is every attempt of the window from the
    /// account's history: one resume, no second trip on the same attempts.
    #[test]
    fn a_resume_drops_the_tripping_attempts_everywhere_and_those_settled_since() {
        let config = config(4, 3);
        let mut canaries = Canaries::default();
        for _ in 0..2 {
            assert!(canaries.observe(&settled("closed", "work"), &config).is_none());
        }
        let failure = || settled("failure-retry", "work");
        canaries.observe(&failure(), &config);
        canaries.observe(&failure(), &config);
        let (subject, trip) = canaries.observe(&failure(), &config).unwrap();
        assert_eq!(subject.to_string(), "fake·m");
        canaries.trip(&subject, Timestamp::now(), config.window);
        let mut holds = Holds::default();
        subject.place(&mut holds, Canaries::hold(&trip, Timestamp::now()));
        for _ in 0..3 {
            assert!(canaries.observe(&failure(), &config).is_none(), "held: judged no more");
        }
        holds.lift(Some("fake"));
        assert_eq!(canaries.resumed(&holds, Timestamp::now()), std::slice::from_ref(&subject));
        let rows = canaries.report(&config, &holds).canaries;
        for row in &rows {
            assert_eq!(row.window.failure_rate, Some(0.0), "{row:?}");
        }
        assert!(canaries.observe(&settled("closed", "work"), &config).is_none());
        assert!(canaries.observe(&failure(), &config).is_none(), "the account does not trip");
    }

    #[test]
    fn state_keys_round_trip() {
        for subject in [
            Subject::Model { coder: "claude".into(), model: "opus".into() },
            Subject::Model { coder: "claude".into(), model: String::new() },
            Subject::Account { coder: "claude".into(), account: "work".into() },
        ] {
            assert_eq!(Subject::from_key(&subject.key()), Some(subject));
        }
    }
}
