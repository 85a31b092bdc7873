//! The fixed context each agent carries, for `fleet stats --overhead`: per coder, account and
//! working directory, the prompt of each attempt's first model request (system prompt,
//! CLAUDE.md/AGENTS.md, MCP tool lists, skills, plugins — everything before any task work),
//! from the task ledgers (`AttemptUsage::first_prompt`). Groups are ranked by what that
//! context costs a day at the rate attempts started in the last 24 hours. Nothing here writes.

use std::collections::BTreeMap;
use std::path::Path;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::ledger::{AttemptUsage, all_attempts};
use crate::config::Price;

/// The fixed context of the attempts of one coder, account and working directory.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadGroup {
    pub coder: String,
    /// Empty: no account.
    pub account: String,
    /// Empty: not recorded.
    pub cwd: String,
    /// Attempts whose first request was recorded.
    pub attempts: u32,
    /// The median prompt of their first requests, in tokens.
    pub median_tokens: u64,
    pub max_tokens: u64,
    /// What the median costs an attempt at the model's uncached input price (an upper bound:
    /// a prefix read from the prompt cache costs about a tenth); absent without a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_attempt: Option<f64>,
    /// Attempts started in the 24 hours before now.
    pub attempts_last_day: u32,
    /// `median_tokens` × `attempts_last_day`.
    pub tokens_per_day: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_day: Option<f64>,
}

/// `fleet stats --overhead`: the groups, costliest a day first.
#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    pub groups: Vec<OverheadGroup>,
}

/// The fixed context of every attempt under `home` started at `since` or later, priced by
/// `price` (the model's price, if known).
pub fn context_overhead(
    home: &Path,
    since: Option<Timestamp>,
    now: Timestamp,
    price: impl Fn(&str) -> Option<Price>,
) -> Overhead {
    let day_ago = now - SignedDuration::from_hours(24);
    let mut firsts: BTreeMap<(String, String, String), Vec<&AttemptUsage>> = BTreeMap::new();
    let attempts = all_attempts(home);
    for attempt in attempts.iter().filter(|a| a.first_prompt.is_some()) {
        if since.is_some_and(|since| attempt.started_at < since) {
            continue;
        }
        let key = (attempt.coder.clone(), attempt.account.clone(), attempt.cwd.clone());
        firsts.entry(key).or_default().push(attempt);
    }
    let mut groups: Vec<OverheadGroup> = firsts
        .into_iter()
        .map(|((coder, account, cwd), attempts)| {
            let mut group = summed(&attempts, day_ago, &price);
            (group.coder, group.account, group.cwd) = (coder, account, cwd);
            group
        })
        .collect();
    groups.sort_by(|a, b| {
        (b.tokens_per_day, b.median_tokens).cmp(&(a.tokens_per_day, a.median_tokens))
    });
    Overhead { since, groups }
}

/// One group's figures (its names left empty).
fn summed(
    attempts: &[&AttemptUsage],
    day_ago: Timestamp,
    price: &impl Fn(&str) -> Option<Price>,
) -> OverheadGroup {
    let mut tokens: Vec<u64> = attempts.iter().filter_map(|a| a.first_prompt).collect();
    tokens.sort_unstable();
    let median_tokens = tokens.get(tokens.len() / 2).copied().unwrap_or(0);
    // Each attempt's first request at its own model's price; their mean is the group's.
    let costs: Option<Vec<f64>> = attempts
        .iter()
        .map(|a| Some(price(&a.model)?.cost(a.first_prompt.unwrap_or(0), 0, 0)))
        .collect();
    let usd_per_attempt = costs.map(|costs| costs.iter().sum::<f64>() / costs.len().max(1) as f64);
    let recent = attempts.iter().filter(|a| a.started_at >= day_ago).count();
    let attempts_last_day = u32::try_from(recent).unwrap_or(u32::MAX);
    OverheadGroup {
        coder: String::new(),
        account: String::new(),
        cwd: String::new(),
        attempts: u32::try_from(attempts.len()).unwrap_or(u32::MAX),
        median_tokens,
        max_tokens: tokens.last().copied().unwrap_or(0),
        usd_per_attempt,
        attempts_last_day,
        tokens_per_day: median_tokens.saturating_mul(u64::from(attempts_last_day)),
        usd_per_day: usd_per_attempt.map(|usd| usd * f64::from(attempts_last_day)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(first: u64, started_at: Timestamp) -> AttemptUsage {
        let mut usage = AttemptUsage::start(1, "a", "claude", "m");
        usage.first_prompt = Some(first);
        usage.started_at = started_at;
        usage
    }

    #[test]
    fn a_group_takes_the_median_and_the_days_rate() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let old = now - SignedDuration::from_hours(48);
        let attempts = [attempt(10_000, now), attempt(30_000, now), attempt(20_000, old)];
        let refs: Vec<&AttemptUsage> = attempts.iter().collect();
        let price = |_: &str| Some(Price { input: 3.0, cached_input: Some(0.3), output: 15.0 });
        let group = summed(&refs, now - SignedDuration::from_hours(24), &price);
        assert_eq!((group.median_tokens, group.max_tokens), (20_000, 30_000));
        assert_eq!((group.attempts, group.attempts_last_day), (3, 2));
        assert_eq!(group.tokens_per_day, 40_000);
        // $3 per million input tokens: 20,000 tokens on average cost 6 cents.
        assert!((group.usd_per_attempt.unwrap() - 0.06).abs() < 1e-9);
        assert!(summed(&refs, now, &|_: &str| None).usd_per_day.is_none());
    }
}
