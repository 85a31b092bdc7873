//! Budgets that act: the `[budget]` caps of `runtime.toml` (`crate::config::budget`) checked
//! before an attempt starts and enforced while it runs.
//!
//! What was spent is read from the ledgers on disk (`tasks/*/ledger.json`, [`Spending::scan`]),
//! so it survives restarts and counts attempts of every supervisor sharing `FLEET_HOME`. A
//! running attempt's ledger is rewritten every few seconds, so its spending counts too.
//!
//! - **Days** are the local calendar days of the machine (its time zone, `TZ`): the same day
//!   whose cost `fleet tasks` shows as "today". An attempt's cost counts on the day it started.
//!   Day caps reset at the next local midnight.
//! - **At claim time** ([`admit`]) no attempt starts that the remaining budget cannot cover at
//!   the task's expected cost ([`estimate`]): the mean cost of the task's own earlier attempts,
//!   else the median cost of the last [`RECENT`] attempts of the same coder·model on any task,
//!   else nothing (no history: only a budget already used up refuses). A task refused for a
//!   day cap waits for the reset or a raise; one over its own per-task cap waits for a raise.
//! - **During an attempt** the runner gets a [`Cap`]: what is left of every cap that applies
//!   when the attempt starts. When the attempt's own cost or tokens reach it, the agent is
//!   stopped (as context pressure stops one) and the task released uncharged with "budget".
//!   Attempts running side by side each get what was left at their start, so together they
//!   may pass a day cap by at most what they spend at once; the next claim then waits.

use std::collections::BTreeMap;
use std::path::Path;

use jiff::Timestamp;
use serde::Serialize;

use super::ledger::{self, AttemptUsage, Ledger};
use crate::config::BudgetConfig;

/// How many of a coder·model's latest attempts the estimate of a new task looks at.
pub const RECENT: usize = 20;

/// The local day `now` falls in: its first instant and the first of the next day.
pub fn day_of(now: Timestamp) -> (Timestamp, Timestamp) {
    let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let zoned = now.to_zoned(zone);
    let start = zoned.start_of_day().map_or(now, |z| z.timestamp());
    let end = zoned.tomorrow().and_then(|t| t.start_of_day()).map_or(now, |z| z.timestamp());
    (start, end)
}

/// What was spent today, per scope, and what recent attempts of each coder·model cost.
#[derive(Debug, Clone, Default)]
pub struct Spending {
    /// The start of today and of tomorrow (when day caps reset).
    pub day: (Timestamp, Timestamp),
    pub fleet: f64,
    /// By coder name.
    pub coders: BTreeMap<String, f64>,
    /// By `coder@account`.
    pub accounts: BTreeMap<String, f64>,
    /// By (coder, model): the costs of attempts, with their start, latest last after
    /// [`Spending::scan`].
    recent: BTreeMap<(String, String), Vec<(Timestamp, f64)>>,
}

impl Spending {
    /// Reads every task's ledger under `home`.
    pub fn scan(home: &Path, now: Timestamp) -> Spending {
        let mut spending = Spending { day: day_of(now), ..Spending::default() };
        for attempt in ledger::all_attempts(home) {
            spending.add(&attempt);
        }
        for costs in spending.recent.values_mut() {
            costs.sort_by_key(|(at, _)| *at);
        }
        spending
    }

    fn add(&mut self, attempt: &AttemptUsage) {
        let Some(cost) = attempt.cost_usd else { return };
        let key = (attempt.coder.clone(), attempt.model.clone());
        self.recent.entry(key).or_default().push((attempt.started_at, cost));
        if attempt.started_at < self.day.0 || attempt.started_at >= self.day.1 {
            return;
        }
        self.fleet += cost;
        *self.coders.entry(attempt.coder.clone()).or_default() += cost;
        if !attempt.account.is_empty() {
            let account = format!("{}@{}", attempt.coder, attempt.account);
            *self.accounts.entry(account).or_default() += cost;
        }
    }

    /// The median cost of the latest [`RECENT`] attempts of `coder` with `model`.
    fn median(&self, coder: &str, model: &str) -> Option<f64> {
        let costs = self.recent.get(&(coder.to_owned(), model.to_owned()))?;
        let mut latest: Vec<f64> = costs.iter().rev().take(RECENT).map(|(_, cost)| *cost).collect();
        latest.sort_by(f64::total_cmp);
        match latest.len() {
            0 => None,
            n if n % 2 == 1 => Some(latest[n / 2]),
            n => Some((latest[n / 2 - 1] + latest[n / 2]) / 2.0),
        }
    }
}

/// What the next attempt of a task is expected to cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Estimate {
    pub usd: f64,
    pub tokens: u64,
    /// `task` (its own attempts), `coder-model` (recent attempts of its coder·model) or
    /// `none` (no history).
    pub from: &'static str,
}

/// The expected cost of the next attempt of a task with ledger `task`, run by `coder` with
/// `model`: the mean of its own attempts that have a cost, else the median of the coder·model's
/// recent attempts, else zero.
pub fn estimate(task: &Ledger, spending: &Spending, coder: &str, model: &str) -> Estimate {
    let own: Vec<&AttemptUsage> = task.attempts.iter().filter(|a| a.cost_usd.is_some()).collect();
    if !own.is_empty() {
        let n = own.len() as f64;
        let usd = own.iter().filter_map(|a| a.cost_usd).sum::<f64>() / n;
        let tokens = own.iter().map(|a| a.tokens_in + a.tokens_out).sum::<u64>() / own.len() as u64;
        return Estimate { usd, tokens, from: "task" };
    }
    match spending.median(coder, model) {
        Some(usd) => Estimate { usd, tokens: 0, from: "coder-model" },
        None => Estimate { usd: 0.0, tokens: 0, from: "none" },
    }
}

/// The most one attempt may spend: what is left of every cap that applies to it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cap {
    /// Dollars (`None`: no dollar cap applies).
    pub usd: Option<f64>,
    /// Tokens in + out (`None`: no token cap applies).
    pub tokens: Option<u64>,
    /// Which cap `usd` comes from, for the comment (`usd_per_task`, `usd_per_day`, …).
    pub usd_scope: &'static str,
}

impl Cap {
    /// Why an attempt that has spent `usage` so far must stop, if it must.
    pub fn exceeded(&self, usage: &AttemptUsage) -> Option<String> {
        let spent = usage.cost_usd.unwrap_or(0.0);
        if let Some(cap) = self.usd.filter(|cap| spent >= *cap) {
            return Some(format!(
                "the attempt spent ${spent:.3}, reaching what was left of {} (${cap:.3})",
                self.usd_scope
            ));
        }
        let tokens = usage.tokens_in + usage.tokens_out;
        let cap = self.tokens.filter(|cap| tokens >= *cap)?;
        Some(format!(
            "the attempt used {tokens} tokens, reaching what was left of tokens_per_task ({cap})"
        ))
    }
}

/// Why a task may not start now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    /// The cap: `task`, `fleet`, `coder NAME` or `account CODER@ACCOUNT`.
    pub scope: String,
    /// Whether it is a day cap (it resets; the whole scope waits), or the task's own.
    pub daily: bool,
    pub detail: String,
}

/// One cap and what is left of it.
struct Left {
    scope: String,
    key: &'static str,
    daily: bool,
    left: f64,
    cap: f64,
}

/// The dollar caps that apply to an attempt of `coder` on `account` (empty: none) of a task
/// that has spent `task_spent` so far, with what is left of each.
fn dollar_caps(
    config: &BudgetConfig,
    spending: &Spending,
    (coder, account): (&str, &str),
    task_spent: f64,
) -> Vec<Left> {
    let mut caps = Vec::new();
    let mut push = |scope: String, key, daily, cap: Option<f64>, spent: f64| {
        if let Some(cap) = cap {
            caps.push(Left { scope, key, daily, left: cap - spent, cap });
        }
    };
    push("task".into(), "usd_per_task", false, config.usd_per_task, task_spent);
    push("fleet".into(), "usd_per_day", true, config.usd_per_day, spending.fleet);
    let coder_cap = config.coders.get(coder).and_then(|c| c.usd_per_day);
    let coder_spent = spending.coders.get(coder).copied().unwrap_or(0.0);
    push(format!("coder {coder}"), "usd_per_day of the coder", true, coder_cap, coder_spent);
    if !account.is_empty() {
        let name = format!("{coder}@{account}");
        let cap = config.accounts.get(&name).and_then(|c| c.usd_per_day);
        let spent = spending.accounts.get(&name).copied().unwrap_or(0.0);
        push(format!("account {name}"), "usd_per_day of the account", true, cap, spent);
    }
    caps
}

/// Whether an attempt of the task with ledger `task` may start with `coder` on `account`
/// (empty: none) and `model`, and if so the [`Cap`] it runs under.
pub fn admit(
    config: &BudgetConfig,
    spending: &Spending,
    task: &Ledger,
    (coder, account, model): (&str, &str, &str),
) -> Result<Cap, Refusal> {
    let totals = task.totals();
    let expected = estimate(task, spending, coder, model);
    let caps = dollar_caps(config, spending, (coder, account), totals.cost_usd.unwrap_or(0.0));
    for cap in &caps {
        if cap.left <= 0.0 || cap.left < expected.usd {
            let detail = format!(
                "{} cap ${:.2}: ${:.3} left, the next attempt is expected to cost ${:.3} ({})",
                cap.scope,
                cap.cap,
                cap.left.max(0.0),
                expected.usd,
                expected.from
            );
            return Err(Refusal { scope: cap.scope.clone(), daily: cap.daily, detail });
        }
    }
    let tokens_left = config.tokens_per_task.map(|cap| {
        let used = totals.tokens_in + totals.tokens_out;
        (cap, cap.saturating_sub(used))
    });
    if let Some((cap, left)) = tokens_left
        && (left == 0 || left < expected.tokens)
    {
        let detail = format!(
            "task cap {cap} tokens: {left} left, the next attempt is expected to use {}",
            expected.tokens
        );
        return Err(Refusal { scope: "task".into(), daily: false, detail });
    }
    let tightest = caps.iter().min_by(|a, b| a.left.total_cmp(&b.left));
    Ok(Cap {
        usd: tightest.map(|c| c.left),
        tokens: tokens_left.map(|(_, left)| left),
        usd_scope: tightest.map_or("", |c| c.key),
    })
}

/// The file under `FLEET_HOME/state` naming the day cap that holds new attempts back, for
/// `fleet tasks` in another shell.
const HELD_FILE: &str = "budget-held.json";

/// A day cap holding new attempts back, as `state/budget-held.json` records it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Held {
    pub scope: String,
    pub detail: String,
    /// When the day cap resets.
    pub until: Timestamp,
}

impl Held {
    /// What `home` records, while it holds (`None`: nothing, or a day that is over).
    pub fn load(home: &Path, now: Timestamp) -> Option<Held> {
        let text = std::fs::read_to_string(home.join("state").join(HELD_FILE)).ok()?;
        serde_json::from_str::<Held>(&text).ok().filter(|held| held.until > now)
    }

    /// Records `held` in `home` (`None`: removes the record).
    pub fn save(home: &Path, held: Option<&Held>) -> std::io::Result<()> {
        let path = home.join("state").join(HELD_FILE);
        match held {
            Some(held) => {
                std::fs::create_dir_all(home.join("state"))?;
                let text = serde_json::to_string(held).map_err(std::io::Error::other)?;
                crate::fsutil::write_atomic(&path, text.as_bytes())
            }
            None => match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DayCap;

    fn attempt(coder: &str, account: &str, cost: f64, at: Timestamp) -> AttemptUsage {
        let mut usage = AttemptUsage::start(1, "a", coder, "m");
        usage.account = account.into();
        usage.cost_usd = Some(cost);
        usage.tokens_in = 1000;
        usage.started_at = at;
        usage
    }

    fn spent(attempts: &[AttemptUsage]) -> Spending {
        let now = Timestamp::now();
        let mut spending = Spending { day: day_of(now), ..Spending::default() };
        for a in attempts {
            spending.add(a);
        }
        spending
    }

    #[test]
    fn the_estimate_is_the_tasks_own_mean_else_the_coder_models_median() {
        let now = Timestamp::now();
        let spending = spent(&[
            attempt("c", "", 1.0, now),
            attempt("c", "", 9.0, now),
            attempt("c", "", 2.0, now),
        ]);
        let none = estimate(&Ledger::default(), &spending, "c", "m");
        assert_eq!((none.usd, none.from), (2.0, "coder-model"));
        let own = Ledger { attempts: vec![attempt("c", "", 0.5, now), attempt("c", "", 1.5, now)] };
        let mine = estimate(&own, &spending, "c", "m");
        assert_eq!((mine.usd, mine.tokens, mine.from), (1.0, 1000, "task"));
        assert_eq!(estimate(&Ledger::default(), &spending, "other", "m").from, "none");
    }

    #[test]
    fn a_day_cap_refuses_an_attempt_it_cannot_cover() {
        let now = Timestamp::now();
        let spending = spent(&[attempt("c", "w", 3.0, now), attempt("c", "w", 3.0, now)]);
        let mut config = BudgetConfig { usd_per_day: Some(8.0), ..BudgetConfig::default() };
        // 6 spent, 2 left, the next one expected at 3: refused before the cap is crossed.
        let refused = admit(&config, &spending, &Ledger::default(), ("c", "w", "m")).unwrap_err();
        assert_eq!((refused.scope.as_str(), refused.daily), ("fleet", true));
        config.usd_per_day = Some(10.0);
        let cap = admit(&config, &spending, &Ledger::default(), ("c", "w", "m")).unwrap();
        assert_eq!(cap.usd, Some(4.0));
        config.accounts.insert("c@w".into(), DayCap { usd_per_day: Some(7.0) });
        let refused = admit(&config, &spending, &Ledger::default(), ("c", "w", "m")).unwrap_err();
        assert_eq!(refused.scope, "account c@w");
        // Yesterday's spending does not count.
        let yesterday = day_of(now).0 - jiff::SignedDuration::from_secs(60);
        let old = spent(&[attempt("c", "w", 6.0, yesterday)]);
        assert!(admit(&config, &old, &Ledger::default(), ("c", "w", "m")).is_ok());
    }

    #[test]
    fn the_cap_of_an_attempt_is_the_tightest_left() {
        let now = Timestamp::now();
        let config = BudgetConfig {
            usd_per_task: Some(1.0),
            usd_per_day: Some(100.0),
            tokens_per_task: Some(5000),
            ..BudgetConfig::default()
        };
        let own = Ledger { attempts: vec![attempt("c", "", 0.25, now)] };
        let cap = admit(&config, &spent(&[]), &own, ("c", "", "m")).unwrap();
        assert_eq!((cap.usd, cap.tokens, cap.usd_scope), (Some(0.75), Some(4000), "usd_per_task"));
        let mut usage = attempt("c", "", 0.8, now);
        assert!(cap.exceeded(&usage).unwrap().contains("usd_per_task"));
        usage.cost_usd = Some(0.1);
        usage.tokens_out = 3000;
        assert!(cap.exceeded(&usage).unwrap().contains("tokens_per_task"));
    }
}
