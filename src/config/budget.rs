//! The `[budget]` table of `runtime.toml`: caps on what the fleet spends, which the supervisor
//! enforces before an attempt starts and while it runs (`crate::supervisor::budget`).
//!
//! ```toml
//! [budget]
//! usd_per_task = 2.0        # one task, all its attempts together
//! tokens_per_task = 2000000 # tokens in + out of one task, all its attempts together
//! usd_per_day = 40.0        # the whole fleet, per UTC day
//!
//! [budget.coders.claude]    # one coder (all its accounts), per UTC day
//! usd_per_day = 25.0
//!
//! [budget.accounts."claude@work"]  # one account of a coder, per UTC day
//! usd_per_day = 10.0
//! ```
//!
//! Every cap is optional (absent: no cap). Days are UTC days: they reset at 00:00 UTC
//! wherever the fleet runs, so two machines agree on what "today" spent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The field names of the `[budget]` table.
pub const BUDGET_KEYS: [&str; 5] =
    ["usd_per_task", "tokens_per_task", "usd_per_day", "coders", "accounts"];

/// The caps of one coder or one account.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DayCap {
    /// Dollars per UTC day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_day: Option<f64>,
}

/// The caps of `[budget]`; the default has none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Dollars one task may cost over all its attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_task: Option<f64>,
    /// Tokens (in + out) one task may use over all its attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_task: Option<u64>,
    /// Dollars the whole fleet may spend per UTC day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd_per_day: Option<f64>,
    /// Per coder, by the coder's name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub coders: BTreeMap<String, DayCap>,
    /// Per account, by `coder@account`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub accounts: BTreeMap<String, DayCap>,
}

impl BudgetConfig {
    /// Whether any cap is set.
    pub fn is_set(&self) -> bool {
        self.usd_per_task.is_some()
            || self.tokens_per_task.is_some()
            || self.usd_per_day.is_some()
            || self.coders.values().any(|cap| cap.usd_per_day.is_some())
            || self.accounts.values().any(|cap| cap.usd_per_day.is_some())
    }

    /// What is wrong with the table, in words naming the key and the fix.
    pub fn problem(&self) -> Option<String> {
        let negative = |amount: Option<f64>| amount.is_some_and(|usd| usd.is_nan() || usd < 0.0);
        if negative(self.usd_per_task) {
            return Some("budget.usd_per_task must be 0 or more dollars".to_owned());
        }
        if negative(self.usd_per_day) {
            return Some("budget.usd_per_day must be 0 or more dollars".to_owned());
        }
        if let Some((name, _)) = self.coders.iter().find(|(_, cap)| negative(cap.usd_per_day)) {
            return Some(format!("budget.coders.{name}.usd_per_day must be 0 or more dollars"));
        }
        for (name, cap) in &self.accounts {
            if !name.contains('@') {
                return Some(format!(
                    "budget.accounts.{name:?} must name an account as \"coder@account\""
                ));
            }
            if negative(cap.usd_per_day) {
                return Some(format!(
                    "budget.accounts.{name:?}.usd_per_day must be 0 or more dollars"
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_table_is_named_with_its_fix() {
        let with = |edit: fn(&mut BudgetConfig)| {
            let mut config = BudgetConfig::default();
            edit(&mut config);
            config.problem()
        };
        assert_eq!(with(|_| {}), None);
        assert!(!BudgetConfig::default().is_set());
        assert!(with(|c| c.usd_per_day = Some(-1.0)).unwrap().contains("usd_per_day"));
        assert!(
            with(|c| {
                c.accounts.insert("work".into(), DayCap { usd_per_day: Some(1.0) });
            })
            .unwrap()
            .contains("coder@account")
        );
    }
}
