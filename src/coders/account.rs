//! Accounts: several logins or API keys for one coder, so that when one runs out of tokens the
//! coder goes on with the others.
//!
//! An account is a name and the environment that selects it for the CLI — a config directory
//! holding a login (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`) or an API key (`ANTHROPIC_API_KEY`):
//!
//! ```toml
//! [[coders.claude.accounts]]
//! name = "work"
//! env = { CLAUDE_CONFIG_DIR = "/home/me/.claude-work" }
//!
//! [[coders.claude.accounts]]
//! name = "personal"
//! env = { ANTHROPIC_API_KEY = "sk-ant-…" }
//! ```
//!
//! The supervisor picks one per attempt and sets its variables over the coder's own `env`
//! (see `supervisor::accounts`). Values may be keys: they are masked wherever fleet shows the
//! config, and the values of secret-looking variables are redacted from everything an attempt
//! writes. This module holds the type and the rules of a valid account; the config checker
//! reports their breaches with the line at fault.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One account of a coder: `[[coders.NAME.accounts]]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    /// How fleet names the account (`fleet tasks`, the ledger, `fleet pause --account`).
    pub name: String,
    /// The variables that select the account, set over the coder's own `env`.
    pub env: BTreeMap<String, String>,
}

impl Account {
    /// The keys an account table holds.
    pub const KEYS: [&'static str; 2] = ["name", "env"];
}

/// Variables fleet sets for every agent itself, which an account may not replace: the
/// workspace, the tools on PATH, the actor, and the task and attempt tags.
pub const RESERVED_VARS: [&str; 4] = ["PATH", "BEADS_DIR", "BD_ACTOR", "FLEET_*"];

/// Whether an account may not set `var` ([`RESERVED_VARS`]).
pub fn is_reserved_var(var: &str) -> bool {
    RESERVED_VARS.iter().any(|reserved| match reserved.strip_suffix('*') {
        Some(prefix) => var.starts_with(prefix),
        None => var == *reserved,
    })
}

/// Why `name` cannot name an account, if it cannot: it must be non-empty and made of letters,
/// digits, `-`, `_`, `.` and `@` (so `work`, `me@corp` and `team.2` read well in `fleet tasks`
/// as `claude@work`, and the name never needs quoting on a command line).
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@');
    (!name.chars().all(allowed)).then_some("may hold only letters, digits, '-', '_', '.' and '@'")
}

/// Whether `var` selects a login: an API key or token, or the directory a CLI keeps its login
/// in (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `CLAUDE_CONFIG_DIR`, `CODEX_HOME`).
pub fn selects_login(var: &str) -> bool {
    ["_API_KEY", "_TOKEN", "_CONFIG_DIR", "_HOME"].iter().any(|end| var.ends_with(end))
}

/// `value` of a login variable as compared between accounts: a directory without its trailing
/// `/`s, so `~/.claude-a/` and `~/.claude-a` are one login.
pub fn login_value(value: &str) -> &str {
    let trimmed = value.trim().trim_end_matches('/');
    if trimmed.is_empty() { value.trim() } else { trimmed }
}

/// `coder@account`, the way fleet shows an account next to its coder; the coder alone without
/// an account.
pub fn qualified(coder: &str, account: Option<&str>) -> String {
    match account {
        Some(account) => format!("{coder}@{account}"),
        None => coder.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_variables_are_fleets_own() {
        for var in ["PATH", "BEADS_DIR", "BD_ACTOR", "FLEET_TASK_ID", "FLEET_HOME"] {
            assert!(is_reserved_var(var), "{var}");
        }
        for var in ["ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "PATHS", "MY_FLEET_X"] {
            assert!(!is_reserved_var(var), "{var}");
        }
    }

    #[test]
    fn names_are_plain_words() {
        assert_eq!(name_problem("work"), None);
        assert_eq!(name_problem("me@corp.io"), None);
        assert!(name_problem("").is_some());
        assert!(name_problem("two words").is_some());
        assert!(name_problem("a/b").is_some());
    }
}
