//! The `[canary]` table of `runtime.toml`: when a coder·model (or an account) has gone bad
//! enough to stop it — the thresholds the quality canary (`crate::supervisor::canary`) judges
//! each settled attempt's rolling window by.
//!
//! ```toml
//! [canary]
//! enabled = true          # false: nothing is judged, nothing paused
//! window = 20             # the last N judged attempts of a coder·model (or an account)
//! min_attempts = 10       # no verdict before the window holds this many
//! rate_factor = 2.0       # a rate trips above max(baseline × rate_factor,
//! rate_margin = 0.25      #                        baseline + rate_margin)
//! max_failure_rate = 0.5  # without a baseline: the failure rate that trips
//! max_requeue_rate = 0.5  # without a baseline: the requeue rate that trips
//! cost_factor = 3.0       # cost per closed task trips above baseline × cost_factor
//! ```
//!
//! The baseline is the same measure over the attempts before the window (up to
//! `crate::supervisor::canary::BASELINE_ATTEMPTS` of them); with fewer than `min_attempts`
//! there is none, and the absolute ceilings apply.

use serde::{Deserialize, Serialize};

/// The field names of the `[canary]` table.
pub const CANARY_KEYS: [&str; 8] = [
    "enabled",
    "window",
    "min_attempts",
    "rate_factor",
    "rate_margin",
    "max_failure_rate",
    "max_requeue_rate",
    "cost_factor",
];

/// The largest `window` accepted: the supervisor keeps this many attempts (and a baseline)
/// per coder·model in memory.
pub const MAX_WINDOW: usize = 1000;

/// The thresholds of `[canary]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CanaryConfig {
    /// Whether attempts are judged at all.
    pub enabled: bool,
    /// How many of the latest judged attempts the current rates are taken over.
    pub window: usize,
    /// No verdict while the window holds fewer attempts (and no baseline with fewer).
    pub min_attempts: usize,
    /// A rate trips above its baseline times this ...
    pub rate_factor: f64,
    /// ... or above its baseline plus this (a fraction: 0.25 is 25 points), whichever is more.
    pub rate_margin: f64,
    /// With no baseline: a failure rate above this trips.
    pub max_failure_rate: f64,
    /// With no baseline: a requeue rate above this trips.
    pub max_requeue_rate: f64,
    /// Cost per closed task trips above its baseline times this.
    pub cost_factor: f64,
}

impl Default for CanaryConfig {
    fn default() -> CanaryConfig {
        CanaryConfig {
            enabled: true,
            window: 20,
            min_attempts: 10,
            rate_factor: 2.0,
            rate_margin: 0.25,
            max_failure_rate: 0.5,
            max_requeue_rate: 0.5,
            cost_factor: 3.0,
        }
    }
}

impl CanaryConfig {
    /// What is wrong with the table, in words naming the key and the fix.
    pub fn problem(&self) -> Option<String> {
        if self.window == 0 || self.window > MAX_WINDOW {
            return Some(format!("canary.window must be 1 to {MAX_WINDOW} attempts"));
        }
        if self.min_attempts == 0 || self.min_attempts > self.window {
            return Some(format!(
                "canary.min_attempts must be 1 to canary.window ({}) attempts",
                self.window
            ));
        }
        let fractions = [
            ("rate_margin", self.rate_margin),
            ("max_failure_rate", self.max_failure_rate),
            ("max_requeue_rate", self.max_requeue_rate),
        ];
        if let Some((key, _)) = fractions.iter().find(|(_, v)| !(0.0..=1.0).contains(v)) {
            return Some(format!("canary.{key} must be a fraction from 0 to 1 (0.25 is 25%)"));
        }
        let factors = [("rate_factor", self.rate_factor), ("cost_factor", self.cost_factor)];
        if let Some((key, _)) = factors.iter().find(|(_, v)| v.is_nan() || *v < 1.0) {
            return Some(format!("canary.{key} must be 1 or more (2.0: twice the baseline)"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_value_is_named_with_its_key() {
        let with = |edit: fn(&mut CanaryConfig)| {
            let mut config = CanaryConfig::default();
            edit(&mut config);
            config.problem().unwrap_or_default()
        };
        assert_eq!(with(|_| {}), "");
        assert!(with(|c| c.window = 0).contains("canary.window"));
        assert!(with(|c| c.min_attempts = 30).contains("canary.min_attempts"));
        assert!(with(|c| c.rate_margin = 1.5).contains("canary.rate_margin"));
        assert!(with(|c| c.max_failure_rate = -0.1).contains("canary.max_failure_rate"));
        assert!(with(|c| c.cost_factor = 0.5).contains("canary.cost_factor"));
        assert!(with(|c| c.rate_factor = f64::NAN).contains("canary.rate_factor"));
    }
}
