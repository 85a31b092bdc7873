//! The ledger: what each attempt of a task consumed — tokens in and out, the peak context, and
//! the cost — recorded from the agent's own stream into `tasks/<id>/ledger.json`.
//!
//! A [`Meter`] follows one attempt. Every event that reports a model request's usage adds to
//! the attempt's running sums and raises its context peak; a line with the session's totals
//! replaces the sums (claude's final `result` with `usage` and `total_cost_usd`, codex's
//! `turn.completed` whose `usage` is the thread's total); opencode's steps carry a cost each,
//! which is summed. When the CLI reports no cost, the `[prices."MODEL"]` table of
//! `runtime.toml` prices the tokens.
//!
//! The file is rewritten in place, under its lock, at most every [`SAVE_EVERY`] while the agent
//! talks (and durably once when the attempt ends), so `fleet tasks` in another shell sees
//! tokens and cost grow.
//! Only the runner of a task writes its ledger: a task has one attempt at a time.

use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use crate::coders::{AgentEvent, EventKind};
use crate::config::Price;

/// The ledger's file in a task directory.
pub const LEDGER_FILE: &str = "ledger.json";
/// How often a talking agent's ledger is written at most: what the tokens and cost `fleet
/// tasks` shows lag behind. Each save opens, reads and rewrites the file; every 2 s that was
/// 5% of the CPU of a supervisor of 256 chatty agents.
pub const SAVE_EVERY: Duration = Duration::from_secs(5);

/// Where an attempt's cost comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// The CLI reported it.
    Reported,
    /// The price table of runtime.toml priced the tokens.
    Priced,
}

/// One attempt's consumption.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptUsage {
    /// The attempt number (1 for the first run of the task).
    pub attempt: u32,
    /// The attempt's id (its lease's).
    pub attempt_id: String,
    pub coder: String,
    #[serde(default)]
    pub model: String,
    /// The coder's account the attempt ran on (empty: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    /// The directory the agent worked in (empty in ledgers written before it was recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    pub started_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub tokens_in: u64,
    /// Prompt tokens read from the cache (part of `tokens_in`).
    #[serde(default)]
    pub tokens_cached: u64,
    #[serde(default)]
    pub tokens_out: u64,
    /// The largest prompt of one request: how full the context window got.
    #[serde(default)]
    pub context_peak: u64,
    /// The prompt of the attempt's first model request, before any task work: the fixed
    /// context the agent carries (system prompt, instruction files, tool lists, skills).
    /// Absent for CLIs that report usage only at the end of a turn or session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<u64>,
    /// The model's context window, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
    /// How the attempt ended, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The CLI is retrying a failed request by itself (`HTTP 529`, `rate limit`): what its
    /// last event said, until the next event shows it going on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrying: Option<String>,
}

impl AttemptUsage {
    /// A fresh attempt.
    pub fn start(attempt: u32, attempt_id: &str, coder: &str, model: &str) -> AttemptUsage {
        AttemptUsage {
            attempt,
            attempt_id: attempt_id.to_owned(),
            coder: coder.to_owned(),
            model: model.to_owned(),
            account: String::new(),
            cwd: String::new(),
            started_at: Timestamp::now(),
            ended_at: None,
            tokens_in: 0,
            tokens_cached: 0,
            tokens_out: 0,
            context_peak: 0,
            first_prompt: None,
            context_limit: None,
            cost_usd: None,
            cost_source: None,
            outcome: None,
            retrying: None,
        }
    }

    /// The context peak as a percentage of the window, when the window is known.
    pub fn context_pct(&self) -> Option<f64> {
        self.context_limit
            .filter(|limit| *limit > 0)
            .map(|limit| self.context_peak as f64 * 100.0 / limit as f64)
    }
}

/// Every attempt of one task, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub attempts: Vec<AttemptUsage>,
}

impl Ledger {
    /// The ledger in the task directory `task_root` (empty when missing or unreadable: a
    /// damaged ledger must not stop a run).
    pub fn load(task_root: &Path) -> Ledger {
        // Under the file's shared lock: a running attempt's saves rewrite it in place. Its
        // first JSON value counts: a save cut short between writing and trimming the file (a
        // kill at that instant) leaves the old tail after a whole new value.
        let text = crate::fsutil::read_note(&task_root.join(LEDGER_FILE)).unwrap_or_default();
        serde_json::Deserializer::from_str(&text)
            .into_iter::<Ledger>()
            .next()
            .and_then(Result::ok)
            .unwrap_or_default()
    }

    /// Writes the ledger into `task_root` atomically and durably.
    pub fn save(&self, task_root: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&task_root.join(LEDGER_FILE), format!("{text}\n").as_bytes())
    }

    /// Writes the ledger into `task_root` for readers, in place under the file's lock and
    /// without waiting for the disk: the running attempt's updates, every [`SAVE_EVERY`] per
    /// agent. A flush each, or a new file renamed over it each (a new inode), cost the
    /// supervisor of 256 agents a third of its CPU; the attempt's end uses [`Ledger::save`].
    pub fn save_live(&self, task_root: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_note(&task_root.join(LEDGER_FILE), format!("{text}\n").as_bytes())
    }

    /// The attempt with this id.
    pub fn attempt(&self, attempt_id: &str) -> Option<&AttemptUsage> {
        self.attempts.iter().rev().find(|a| a.attempt_id == attempt_id)
    }

    /// The latest attempt.
    pub fn last(&self) -> Option<&AttemptUsage> {
        self.attempts.last()
    }

    /// Tokens in, tokens out and cost over every attempt (cost `None` when none has one).
    pub fn totals(&self) -> Totals {
        let mut totals = Totals::default();
        for attempt in &self.attempts {
            totals.add(attempt);
        }
        totals
    }
}

/// Sums over attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    pub attempts: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: Option<f64>,
}

impl Totals {
    pub fn add(&mut self, attempt: &AttemptUsage) {
        self.attempts += 1;
        self.tokens_in += attempt.tokens_in;
        self.tokens_out += attempt.tokens_out;
        if let Some(cost) = attempt.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }
}

/// Every attempt of every task ledger under `home` (`tasks/*/ledger.json`), task by task.
pub fn all_attempts(home: &Path) -> Vec<AttemptUsage> {
    super::taskdir::task_ids(home)
        .iter()
        .filter_map(|id| super::taskdir::TaskDir::new(home, id).ok())
        .flat_map(|dir| Ledger::load(&dir.root).attempts)
        .collect()
}

/// Follows one attempt's events and keeps its entry of the ledger up to date.
pub struct Meter {
    ledger: Ledger,
    price: Option<Price>,
    /// Cost the CLI reported so far (opencode's per-step costs, claude's total).
    reported_cost: Option<f64>,
    last_saved: Option<Instant>,
    dirty: bool,
}

impl Meter {
    /// Starts `usage` as the newest attempt of the ledger in `task_root`.
    pub fn start(task_root: &Path, usage: AttemptUsage, price: Option<Price>) -> Meter {
        let mut ledger = Ledger::load(task_root);
        ledger.attempts.retain(|a| a.attempt_id != usage.attempt_id);
        // Held while the agent runs: room for this attempt only, not the four a push makes.
        ledger.attempts.reserve_exact(1);
        ledger.attempts.push(usage);
        Meter { ledger, price, reported_cost: None, last_saved: None, dirty: true }
    }

    fn current(&mut self) -> &mut AttemptUsage {
        self.ledger.attempts.last_mut().expect("a meter always holds its attempt")
    }

    /// The attempt as recorded so far.
    pub fn usage(&self) -> &AttemptUsage {
        self.ledger.attempts.last().expect("a meter always holds its attempt")
    }

    /// Sets the context window the percentage is taken of.
    pub fn set_context_limit(&mut self, limit: Option<u64>) {
        if self.usage().context_limit != limit {
            self.current().context_limit = limit;
            self.dirty = true;
        }
    }

    /// Prices by `model`'s entry when the attempt's own model has none (the CLI named the
    /// model it runs).
    pub fn price_model(&mut self, price: Option<Price>) {
        self.price = self.price.or(price);
    }

    /// What of the attempt changes as events come: compared before and after each event
    /// instead of copying the whole entry (strings and all) for every line an agent prints.
    fn progress(&self) -> (u64, u64, u64, u64, Option<u64>, bool, Option<u64>) {
        let u = self.usage();
        (
            u.tokens_in,
            u.tokens_cached,
            u.tokens_out,
            u.context_peak,
            u.cost_usd.map(f64::to_bits),
            u.retrying.is_some(),
            u.context_limit,
        )
    }

    /// Counts one event.
    pub fn observe(&mut self, event: &AgentEvent) {
        let before = self.progress();
        let retrying_before =
            self.usage().retrying.is_some().then(|| self.usage().retrying.clone());
        if let Some(totals) = session_totals(event) {
            let current = self.current();
            current.tokens_in = totals.prompt;
            current.tokens_cached = totals.cached;
            current.tokens_out = totals.output;
            if let Some(cost) = totals.cost {
                self.reported_cost = Some(cost);
            }
        } else if let Some(usage) = &event.usage {
            let current = self.current();
            current.tokens_in += usage.prompt_tokens();
            current.tokens_cached += usage.cache_read_input_tokens;
            current.tokens_out += usage.output_tokens;
            current.context_peak = current.context_peak.max(usage.prompt_tokens());
            if current.first_prompt.is_none() && usage.prompt_tokens() > 0 {
                current.first_prompt = Some(usage.prompt_tokens());
            }
        }
        self.current().retrying = retry_note(event);
        if let Some(step_cost) = step_cost(event) {
            self.reported_cost = Some(self.reported_cost.unwrap_or(0.0) + step_cost);
        }
        self.update_cost();
        let retry_changed = retrying_before.is_some_and(|was| was != self.usage().retrying);
        self.dirty |= self.progress() != before || retry_changed;
    }

    fn update_cost(&mut self) {
        let (cost, source) = match (self.reported_cost, self.price) {
            (Some(cost), _) => (Some(cost), Some(CostSource::Reported)),
            (None, Some(price)) => {
                let u = self.usage();
                (
                    Some(price.cost(u.tokens_in, u.tokens_cached, u.tokens_out)),
                    Some(CostSource::Priced),
                )
            }
            (None, None) => (None, None),
        };
        let current = self.current();
        current.cost_usd = cost;
        current.cost_source = source;
    }

    /// When the unsaved changes are due to be written (`None`: nothing unsaved).
    pub fn save_due(&self) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(self.last_saved.map_or_else(Instant::now, |at| at + SAVE_EVERY))
    }

    /// Writes the ledger if changes are due.
    pub fn save_if_due(&mut self, task_root: &Path) {
        if self.save_due().is_some_and(|due| due <= Instant::now()) {
            self.save(task_root);
        }
    }

    /// Writes the ledger now (for readers; see [`Ledger::save_live`]).
    pub fn save(&mut self, task_root: &Path) {
        if let Err(error) = self.ledger.save_live(task_root) {
            tracing::warn!(%error, task = %task_root.display(), "cannot write the task's ledger");
        }
        self.last_saved = Some(Instant::now());
        self.dirty = false;
    }

    /// Records that the attempt ended and writes the ledger (the supervisor adds the verdict
    /// with [`record_outcome`] once it has recorded it in the queue).
    pub fn finish(&mut self, task_root: &Path) {
        self.current().ended_at = Some(Timestamp::now());
        if let Err(error) = self.ledger.save(task_root) {
            tracing::warn!(%error, task = %task_root.display(), "cannot write the task's ledger");
        }
        self.last_saved = Some(Instant::now());
        self.dirty = false;
    }
}

/// Sets the outcome (the verdict, in a word) of attempt `attempt_id` in the ledger of
/// `task_root`, and returns the attempt's entry; nothing when the attempt never reached the
/// ledger (it did not start).
pub fn record_outcome(
    task_root: &Path,
    attempt_id: &str,
    outcome: &str,
) -> std::io::Result<Option<AttemptUsage>> {
    let mut ledger = Ledger::load(task_root);
    let Some(entry) = ledger.attempts.iter_mut().rev().find(|a| a.attempt_id == attempt_id) else {
        return Ok(None);
    };
    entry.outcome = Some(outcome.to_owned());
    entry.ended_at.get_or_insert_with(Timestamp::now);
    let recorded = entry.clone();
    ledger.save(task_root)?;
    Ok(Some(recorded))
}

/// A session's totals, from the line that reports them.
struct SessionTotals {
    prompt: u64,
    cached: u64,
    output: u64,
    cost: Option<f64>,
}

/// The totals on a session-end line: claude's `result` (Anthropic usage, `total_cost_usd`)
/// or codex's `turn.completed` (OpenAI usage, cached tokens inside `input_tokens`).
fn session_totals(event: &AgentEvent) -> Option<SessionTotals> {
    if event.kind != EventKind::SessionEnded {
        return None;
    }
    let raw = &event.raw.value();
    if let Some(stats) = raw.get("stats").filter(|s| s.is_object()) {
        return gemini_totals(stats);
    }
    let usage = raw.get("usage").filter(|u| u.is_object())?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    match raw.get("type").and_then(Value::as_str) {
        Some("result") => {
            let cached = count("cache_read_input_tokens");
            Some(SessionTotals {
                prompt: count("input_tokens") + count("cache_creation_input_tokens") + cached,
                cached,
                output: count("output_tokens"),
                cost: raw.get("total_cost_usd").and_then(Value::as_f64),
            })
        }
        Some("turn.completed") => Some(SessionTotals {
            prompt: count("input_tokens"),
            cached: count("cached_input_tokens"),
            output: count("output_tokens"),
            cost: None,
        }),
        _ => None,
    }
}

/// What a retry event says is being retried (`None` for any other event).
fn retry_note(event: &AgentEvent) -> Option<String> {
    if event.kind != EventKind::ApiRetry {
        return None;
    }
    Some(match (event.http_status, &event.rate_limit) {
        (Some(status), _) => format!("HTTP {status}"),
        (None, Some(_)) => "rate limit".to_owned(),
        (None, None) => "provider error".to_owned(),
    })
}

/// Gemini CLI's `result.stats`: the session's tokens (`input_tokens` with the cache reads
/// among them as `cached`, `output_tokens`), and no cost (the price table gives one).
fn gemini_totals(stats: &Value) -> Option<SessionTotals> {
    let count = |key: &str| stats.get(key).and_then(Value::as_u64);
    let prompt = count("input_tokens")?;
    Some(SessionTotals {
        prompt,
        cached: count("cached").unwrap_or(0).min(prompt),
        output: count("output_tokens").unwrap_or(0),
        cost: None,
    })
}

/// The cost of one step, as opencode reports it on `step_finish` (`part.cost`).
fn step_cost(event: &AgentEvent) -> Option<f64> {
    if event.kind != EventKind::StepFinished && event.kind != EventKind::SessionEnded {
        return None;
    }
    let raw = &event.raw.value();
    if raw.get("type").and_then(Value::as_str) != Some("step_finish") {
        return None;
    }
    raw.get("part").and_then(|p| p.get("cost")).and_then(Value::as_f64).filter(|c| *c >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coders::Usage;

    fn meter(price: Option<Price>) -> (tempfile::TempDir, Meter) {
        let dir = tempfile::tempdir().unwrap();
        let meter = Meter::start(dir.path(), AttemptUsage::start(1, "A1", "claude", "m"), price);
        (dir, meter)
    }

    fn request(prompt: u64, output: u64) -> AgentEvent {
        AgentEvent::new(EventKind::AssistantText, serde_json::json!({})).with_usage(Some(Usage {
            input_tokens: prompt,
            output_tokens: output,
            ..Usage::default()
        }))
    }

    fn ended(raw: Value) -> AgentEvent {
        AgentEvent::new(EventKind::SessionEnded, raw)
    }

    #[test]
    fn a_claude_result_replaces_the_running_sums_with_its_totals_and_cost() {
        let (dir, mut meter) = meter(None);
        meter.observe(&request(1000, 5));
        meter.observe(&request(3000, 7));
        assert_eq!(meter.usage().tokens_in, 4000);
        assert_eq!(meter.usage().context_peak, 3000);
        assert_eq!(meter.usage().cost_usd, None);
        meter.observe(&ended(serde_json::json!({"type": "result", "total_cost_usd": 0.25,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 20,
                      "cache_read_input_tokens": 4000, "output_tokens": 40}})));
        let usage = meter.usage().clone();
        assert_eq!((usage.tokens_in, usage.tokens_cached, usage.tokens_out), (4030, 4000, 40));
        assert_eq!(usage.context_peak, 3000, "the peak is per request, not the session sum");
        assert_eq!((usage.cost_usd, usage.cost_source), (Some(0.25), Some(CostSource::Reported)));
        meter.finish(dir.path());
        record_outcome(dir.path(), "A1", "closed").unwrap();
        let saved = Ledger::load(dir.path());
        assert_eq!(saved.attempts.len(), 1);
        assert_eq!(saved.attempts[0].outcome.as_deref(), Some("closed"));
    }

    #[test]
    fn codex_totals_are_priced_by_the_table() {
        let price = Price { input: 1.0, cached_input: Some(0.1), output: 10.0 };
        let (_dir, mut meter) = meter(Some(price));
        meter.observe(&ended(serde_json::json!({"type": "turn.completed", "usage":
            {"input_tokens": 2_000_000, "cached_input_tokens": 1_000_000, "output_tokens": 100_000}})));
        let usage = meter.usage();
        assert_eq!(
            (usage.tokens_in, usage.tokens_cached, usage.tokens_out),
            (2_000_000, 1_000_000, 100_000)
        );
        let cost = usage.cost_usd.unwrap();
        assert!((cost - 2.1).abs() < 1e-9, "{cost}");
        assert_eq!(usage.cost_source, Some(CostSource::Priced));
    }

    #[test]
    fn opencode_step_costs_add_up() {
        let (_dir, mut meter) = meter(None);
        for _ in 0..2 {
            let step = AgentEvent::new(
                EventKind::StepFinished,
                serde_json::json!({
                "type": "step_finish", "part": {"cost": 0.5}}),
            );
            meter.observe(&step);
        }
        assert_eq!(meter.usage().cost_usd, Some(1.0));
    }

    #[test]
    fn a_new_attempt_keeps_the_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = Meter::start(dir.path(), AttemptUsage::start(1, "A1", "c", ""), None);
        first.observe(&request(10, 1));
        first.finish(dir.path());
        let mut second = Meter::start(dir.path(), AttemptUsage::start(2, "A2", "c", ""), None);
        second.observe(&request(20, 2));
        second.finish(dir.path());
        let ledger = Ledger::load(dir.path());
        assert_eq!(ledger.attempts.len(), 2);
        assert_eq!(ledger.totals().tokens_in, 30);
        assert_eq!(ledger.totals().attempts, 2);
    }
}
