//! Agent statistics for `fleet stats --agents`: what the agents consumed and got done, summed
//! from every task's ledger (`tasks/*/ledger.json`), and how long rate limits and faults kept
//! coders and accounts paused, from the pause history (`state/pause-history.jsonl`).
//!
//! Attempts are grouped by coder, model, working directory or account ([`GroupBy`]); each group
//! sums tokens in and out, cost, attempts, and the tasks an attempt of the group closed (an
//! attempt whose recorded outcome is `closed`), which gives a cost per closed task. `since`
//! keeps the attempts started then or later, and the part of each pause after it. Pauses are
//! listed per coder or account and cause, whatever the grouping: overlapping records of one
//! scope (a window extended, a fault backed off again) count as one pause. Nothing here writes.

use std::collections::BTreeMap;
use std::path::Path;

use jiff::Timestamp;
use serde::Serialize;

use super::ledger::{AttemptUsage, Ledger};
use super::pause::{self, PauseCause, PauseRecord, Scope};
use super::taskdir;

/// What attempts are grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    #[default]
    Coder,
    Model,
    Cwd,
    Account,
}

/// Sums over a set of attempts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sums {
    pub attempts: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The cost of the attempts that have one (`None`: none has).
    pub cost_usd: Option<f64>,
    /// Tasks closed by an attempt of the set.
    pub closed_tasks: u64,
    /// `cost_usd` over `closed_tasks` (`None` without either).
    pub cost_per_closed_task_usd: Option<f64>,
}

impl Sums {
    fn add(&mut self, attempt: &AttemptUsage) {
        self.attempts += 1;
        self.tokens_in += attempt.tokens_in;
        self.tokens_out += attempt.tokens_out;
        if let Some(cost) = attempt.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
        if attempt.outcome.as_deref() == Some("closed") {
            self.closed_tasks += 1;
        }
        self.cost_per_closed_task_usd = self
            .cost_usd
            .filter(|_| self.closed_tasks > 0)
            .map(|cost| cost / self.closed_tasks as f64);
    }
}

/// One group of attempts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The coder, model, directory or account (`-` for attempts without one).
    pub key: String,
    #[serde(flatten)]
    pub sums: Sums,
}

/// The pauses of one coder or account for one cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PauseSums {
    pub coder: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub cause: PauseCause,
    pub pauses: u64,
    /// Their total length, up to now for a pause still in force.
    pub paused_secs: u64,
}

/// Everything `fleet stats --agents` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    pub by: GroupBy,
    /// By key.
    pub groups: Vec<Group>,
    pub total: Sums,
    /// By coder, account and cause.
    pub pauses: Vec<PauseSums>,
}

/// The statistics of the agents under `home`, from `since` (or all time) to `now`.
pub fn agent_stats(
    home: &Path,
    since: Option<Timestamp>,
    by: GroupBy,
    now: Timestamp,
) -> AgentStats {
    let mut groups: BTreeMap<String, Sums> = BTreeMap::new();
    let mut total = Sums::default();
    for id in taskdir::task_ids(home) {
        let Ok(dir) = taskdir::TaskDir::new(home, &id) else { continue };
        let mut task_cwd = None;
        for attempt in Ledger::load(&dir.root).attempts {
            if since.is_some_and(|since| attempt.started_at < since) {
                continue;
            }
            let key = match by {
                GroupBy::Coder => attempt.coder.clone(),
                GroupBy::Model => attempt.model.clone(),
                GroupBy::Account => attempt.account.clone(),
                GroupBy::Cwd if !attempt.cwd.is_empty() => attempt.cwd.clone(),
                GroupBy::Cwd => {
                    task_cwd.get_or_insert_with(|| recorded_cwd(home, &dir.root)).clone()
                }
            };
            let key = if key.is_empty() { "-".to_owned() } else { key };
            groups.entry(key).or_default().add(&attempt);
            total.add(&attempt);
        }
    }
    let groups = groups.into_iter().map(|(key, sums)| Group { key, sums }).collect();
    let pauses = pause_sums(&pause::history(home), since, now);
    AgentStats { since, by, groups, total, pauses }
}

/// The directory a task ran in as its `task.json` says, for ledgers written before attempts
/// recorded theirs (an empty one is `FLEET_HOME`).
fn recorded_cwd(home: &Path, task_root: &Path) -> String {
    let cwd = std::fs::read(task_root.join("task.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|record| record["cwd"].as_str().map(str::to_owned))
        .unwrap_or_default();
    if cwd.is_empty() { home.display().to_string() } else { cwd }
}

/// Counts and lengths of the pauses in `records`, per scope and cause, within `since..now`.
fn pause_sums(records: &[PauseRecord], since: Option<Timestamp>, now: Timestamp) -> Vec<PauseSums> {
    let mut spans: BTreeMap<(Scope, PauseCause), Vec<Span>> = BTreeMap::new();
    for record in records {
        spans.entry((record.scope(), record.cause)).or_default().push((record.at, record.until));
    }
    let mut sums = Vec::new();
    for ((Scope { coder, account }, cause), mut spans) in spans {
        let (mut pauses, mut secs) = (0, 0);
        for (start, end) in merged(&mut spans) {
            let start = since.map_or(start, |since| start.max(since));
            let end = end.min(now);
            if end > start {
                pauses += 1;
                secs += u64::try_from(end.duration_since(start).as_secs()).unwrap_or(0);
            }
        }
        if pauses > 0 {
            sums.push(PauseSums { coder, account, cause, pauses, paused_secs: secs });
        }
    }
    sums
}

/// A stretch of time: from, until.
type Span = (Timestamp, Timestamp);

/// `spans` sorted and with overlapping ones joined.
fn merged(spans: &mut [Span]) -> Vec<Span> {
    spans.sort();
    let mut joined: Vec<Span> = Vec::new();
    for &(start, end) in spans.iter() {
        match joined.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => joined.push((start, end)),
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn record(account: &str, from: i64, to: i64) -> PauseRecord {
        PauseRecord {
            at: at(from),
            coder: "claude".into(),
            account: Some(account.into()),
            cause: PauseCause::RateLimit,
            until: at(to),
        }
    }

    #[test]
    fn overlapping_records_are_one_pause_clipped_to_the_window() {
        // One limit recorded twice (two agents reporting it moments apart), a second one
        // later, and one still in force at `now`.
        let records = [
            record("work", 0, 300),
            record("work", 1, 301),
            record("work", 1000, 1100),
            record("home", 2000, 9000),
        ];
        let all = pause_sums(&records, None, at(2500));
        let work = all.iter().find(|p| p.account.as_deref() == Some("work")).unwrap();
        assert_eq!((work.pauses, work.paused_secs), (2, 301 + 100));
        let home = all.iter().find(|p| p.account.as_deref() == Some("home")).unwrap();
        assert_eq!((home.pauses, home.paused_secs), (1, 500), "up to now");
        let recent = pause_sums(&records, Some(at(1050)), at(2500));
        let work = recent.iter().find(|p| p.account.as_deref() == Some("work")).unwrap();
        assert_eq!((work.pauses, work.paused_secs), (1, 50));
    }

    #[test]
    fn cost_per_closed_task_needs_a_closed_task() {
        let mut sums = Sums::default();
        let mut attempt = AttemptUsage::start(1, "A", "claude", "m");
        attempt.cost_usd = Some(0.5);
        attempt.outcome = Some("rate-limited".into());
        sums.add(&attempt);
        assert_eq!(sums.cost_per_closed_task_usd, None);
        attempt.outcome = Some("closed".into());
        sums.add(&attempt);
        assert_eq!((sums.attempts, sums.closed_tasks), (2, 1));
        assert_eq!(sums.cost_per_closed_task_usd, Some(1.0));
    }
}
