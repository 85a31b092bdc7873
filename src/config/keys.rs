//! The one table of `runtime.toml`'s top-level keys.
//!
//! Each key is declared once, in the [`runtime_keys!`] invocation below: its field type, its
//! default, its kind and range, a field doc (the meaning, for readers of the code) and a
//! one-line summary (for users). The macro turns that list into the [`RuntimeConfig`] struct,
//! its `Default`, and [`KEYS`] — name, kind, summary, and a getter and setter per key. Loading
//! (the checker sets each key through its setter), `fleet config show` (getters), `fleet config
//! set` (kinds) and the header of a new file (defaults and summaries) all read [`KEYS`], so a
//! new key is one entry here and nothing else.
//!
//! The `[coders.*]` tables are not keys of this table: they are [`CoderConfig`]s, checked and
//! read by [`super::check`].

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::coders::CoderConfig;

/// The type and range of a top-level key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// An integer from `min` to `max`.
    Integer {
        min: i64,
        max: i64,
    },
    Text,
}

/// The value of a top-level key, as read from the file or from a [`RuntimeConfig`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    Integer(i64),
    Text(String),
}

impl KeyValue {
    /// The value as TOML, written the way `toml_edit` writes new values (`3`, `"claude"`).
    pub fn to_toml(&self) -> toml_edit::Value {
        match self {
            KeyValue::Integer(n) => toml_edit::Value::from(*n),
            KeyValue::Text(text) => toml_edit::Value::from(text.as_str()),
        }
    }
}

impl fmt::Display for KeyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_toml())
    }
}

/// One top-level key: its name, type and range, a one-line meaning, and how to read and write
/// it in a [`RuntimeConfig`].
#[derive(Clone, Copy)]
pub struct KeyInfo {
    pub name: &'static str,
    pub kind: KeyKind,
    /// One line for users (the header of a new file).
    pub doc: &'static str,
    get: fn(&RuntimeConfig) -> KeyValue,
    set: fn(&mut RuntimeConfig, KeyValue) -> Result<(), KeyValue>,
}

impl fmt::Debug for KeyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyInfo")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("default", &self.default_value())
            .finish_non_exhaustive()
    }
}

impl KeyInfo {
    /// This key's value in `config`.
    pub fn value(&self, config: &RuntimeConfig) -> KeyValue {
        (self.get)(config)
    }

    /// This key's default.
    pub fn default_value(&self) -> KeyValue {
        self.value(&RuntimeConfig::default())
    }

    /// Sets this key in `config`; a value that does not fit the field comes back as the error
    /// (the checker's ranges make that a bug, not a user error).
    pub fn set(&self, config: &mut RuntimeConfig, value: KeyValue) -> Result<(), KeyValue> {
        (self.set)(config, value)
    }

    /// The key named `name`.
    pub fn find(name: &str) -> Option<&'static KeyInfo> {
        KEYS.iter().find(|key| key.name == name)
    }
}

/// A Rust type a key is stored as: converts to and from a [`KeyValue`].
trait KeyField: Sized {
    fn to_key_value(&self) -> KeyValue;
    fn from_key_value(value: KeyValue) -> Result<Self, KeyValue>;
}

macro_rules! integer_key_fields {
    ($($ty:ty),*) => {$(
        impl KeyField for $ty {
            fn to_key_value(&self) -> KeyValue {
                KeyValue::Integer(i64::try_from(*self).unwrap_or(i64::MAX))
            }

            fn from_key_value(value: KeyValue) -> Result<Self, KeyValue> {
                match value {
                    KeyValue::Integer(n) => <$ty>::try_from(n).map_err(|_| value),
                    other => Err(other),
                }
            }
        }
    )*};
}

integer_key_fields!(u8, u32, u64);

impl KeyField for String {
    fn to_key_value(&self) -> KeyValue {
        KeyValue::Text(self.clone())
    }

    fn from_key_value(value: KeyValue) -> Result<Self, KeyValue> {
        match value {
            KeyValue::Text(text) => Ok(text),
            other => Err(other),
        }
    }
}

const fn int(min: i64, max: i64) -> KeyKind {
    KeyKind::Integer { min, max }
}

const TEXT: KeyKind = KeyKind::Text;

const DAY: i64 = 86_400;

/// Declares the top-level keys: generates [`RuntimeConfig`] (one field per key plus `coders`),
/// its `Default`, and [`KEYS`] in declaration order (the order `fleet config show` lists them).
///
/// Each entry: `/// field doc`, then `name: Type = default, kind, "summary";`.
macro_rules! runtime_keys {
    ($(
        $(#[doc = $field_doc:literal])*
        $name:ident: $ty:ty = $default:expr, $kind:expr, $summary:literal;
    )*) => {
        /// Everything `runtime.toml` can set. Field docs give each key's meaning; [`KEYS`]
        /// gives the allowed ranges.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub struct RuntimeConfig {
            $(
                $(#[doc = $field_doc])*
                pub $name: $ty,
            )*
            /// `[coders.NAME]` tables: adjust a built-in coder or define a new one.
            pub coders: BTreeMap<String, CoderConfig>,
            /// `[prices."MODEL"]` tables: dollars per million tokens, for models whose CLI
            /// reports no cost.
            pub prices: BTreeMap<String, super::Price>,
            /// The `[merge]` table: how finished work lands on its base branch.
            pub merge: super::MergeConfig,
            /// The `[notify]` table: how a person is told the fleet needs them.
            pub notify: super::NotifyConfig,
            /// The `[budget]` table: caps on what the fleet spends.
            pub budget: super::BudgetConfig,
            /// The `[canary]` table: when a coder·model or an account is paused for quality.
            pub canary: super::CanaryConfig,
        }

        impl Default for RuntimeConfig {
            fn default() -> RuntimeConfig {
                RuntimeConfig { $($name: $default,)* coders: BTreeMap::new(), prices: BTreeMap::new(), merge: super::MergeConfig::default(), notify: super::NotifyConfig::default(), budget: super::BudgetConfig::default(), canary: super::CanaryConfig::default() }
            }
        }

        /// Every top-level key except the `[coders.*]` tables, in the order
        /// `fleet config show` lists them.
        pub const KEYS: &[KeyInfo] = &[$(
            KeyInfo {
                name: stringify!($name),
                kind: $kind,
                doc: $summary,
                get: |config| config.$name.to_key_value(),
                set: |config, value| {
                    config.$name = <$ty>::from_key_value(value)?;
                    Ok(())
                },
            },
        )*];
    };
}

runtime_keys! {
    /// Agents running at once. 0 claims nothing (a pause); lowering it never stops running
    /// agents, it only holds new claims until enough finish.
    max_concurrent: u32 = 3, int(0, 1024),
        "agents running at once (0 claims nothing: a pause)";
    /// The coder for tasks that do not name one.
    coder: String = "claude".to_owned(), TEXT,
        "coder for tasks that name none";
    /// The model for tasks of the default coder that do not name one; "" means that coder's
    /// own `default_model`. It never applies to other coders (no `sonnet` passed to codex).
    model: String = String::new(), TEXT,
        "model for the default coder's tasks (\"\": the coder's default_model)";
    /// Stop an agent once its prompt reaches this percentage of the model's context window;
    /// the task is requeued for a fresh session, not counted as a failure.
    context_pressure_threshold_pct: u8 = 90, int(1, 100),
        "stop and requeue an agent at this % of its context window";
    /// Hold new spawns while a rate-limit window reports more than this percentage used.
    rate_limit_threshold_pct: u8 = 90, int(1, 100),
        "hold new spawns while a rate-limit window is above this % used";
    /// Failed attempts (non-zero exit, crash) before the task is blocked.
    max_failures: u32 = 3, int(1, 1000),
        "failed attempts before a task is blocked";
    /// Exits with code 0 that did not close the task before it is blocked (each one requeues
    /// it with backoff).
    max_noclose: u32 = 3, int(0, 1000),
        "exits 0 without closing the task before it is blocked";
    /// Stalled attempts (no output for `stall_timeout_secs`) before the task is blocked.
    max_stalls: u32 = 2, int(1, 1000),
        "stalled attempts before a task is blocked";
    /// Context-pressure releases (not charged as failures) before the task is blocked: a task
    /// too large for one context must not be restarted forever.
    max_context_resets: u32 = 5, int(1, 1000),
        "context-pressure releases before a task is blocked (each run starts fresh)";
    /// Backoff before a requeued task may be claimed again: this many seconds, doubling with
    /// each further retry ...
    retry_backoff_secs: u64 = 30, int(0, DAY),
        "first wait before a requeued task is claimed again (doubles each retry)";
    /// ... up to this many.
    retry_backoff_max_secs: u64 = 600, int(0, 7 * DAY),
        "longest wait between retries";
    /// Stop an agent that printed nothing for this long (0: never).
    stall_timeout_secs: u64 = 600, int(0, 7 * DAY),
        "stop an agent silent on stdout this long (0: never)";
    /// Stop an attempt that runs longer than this (0: never).
    attempt_timeout_secs: u64 = 7200, int(0, 30 * DAY),
        "stop an attempt running longer than this (0: never)";
    /// On shutdown or kill: time between SIGTERM and SIGKILL.
    shutdown_grace_secs: u64 = 30, int(0, 3600),
        "time between SIGTERM and SIGKILL when stopping an agent";
    /// How long to pause spawning after a rate limit that gave no reset time.
    rate_limit_default_pause_secs: u64 = 300, int(1, 7 * DAY),
        "pause after a rate limit that gave no reset time";
    /// Where this machine's git checkouts are: a task made on another machine runs in the same
    /// place of a checkout of its repository found directly under one of these folders
    /// (`:`-separated, `~` the home directory; "": the home directory and its `src`, `code`,
    /// `projects`, `work` and `dev`). See `crate::place`.
    repo_roots: String = String::new(), TEXT,
        "folders holding this machine's checkouts, for tasks made elsewhere (\":\"-separated; \"\": ~ and ~/src, ~/code, ~/projects, ~/work, ~/dev)";
    /// While running, sync with the journal repository's git remote (`fleet sync`) this
    /// often, when one is configured (0: never). Read when the supervisor starts.
    sync_interval_secs: u64 = 30, int(0, DAY),
        "sync with the git remote this often while running, if one is configured (0: never)";
    /// Where agents work: "auto" (a git worktree and branch of the task's own when its
    /// directory is in a git repository with a commit, else the directory itself),
    /// "worktree", or "none" (the directory itself). A task's `isolation` metadata overrides
    /// it. See `crate::land`.
    isolation: String = "auto".to_owned(), TEXT,
        "where agents work: auto (a git worktree per task in a repository), worktree, none";
}

/// What became of a key of the Python fleet's runtime.toml that this fleet does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legacy {
    /// The same setting under another name (same meaning, same unit).
    Renamed(&'static str),
    /// The same setting under another name, in another unit: the new value is the old one
    /// times `factor` (minutes → seconds).
    Scaled { to: &'static str, factor: i64, unit: &'static str },
    /// No such setting any more; why.
    Dropped(&'static str),
}

/// The top-level names that hold tables of their own rather than one key of [`KEYS`].
pub const TABLES: [&str; 6] = ["coders", "prices", "merge", "notify", "budget", "canary"];

/// Keys of the Python fleet's `runtime.toml` (at its last release and in its early versions)
/// that this fleet does not have under the same name. The others (`max_concurrent`, `model`,
/// `coder`, `context_pressure_threshold_pct`, `rate_limit_threshold_pct`) mean the same here.
pub const LEGACY_KEYS: [(&str, Legacy); 28] = [
    ("retry_limit", Legacy::Renamed("max_failures")),
    // Keys of the Python fleet's later releases.
    ("context_kill_pct", Legacy::Renamed("context_pressure_threshold_pct")),
    (
        "max_attempt_minutes",
        Legacy::Scaled { to: "attempt_timeout_secs", factor: 60, unit: "minutes" },
    ),
    (
        "context_checkpoint_pct",
        Legacy::Dropped(
            "fleet does not ask the agent to wrap up; it stops and requeues it at context_pressure_threshold_pct",
        ),
    ),
    (
        "stall_warning_minutes",
        Legacy::Dropped("fleet stops a silent agent after stall_timeout_secs instead of warning"),
    ),
    ("stall_action", Legacy::Dropped("a stalled agent is always stopped (stall_timeout_secs)")),
    (
        "max_concurrent_overrides",
        Legacy::Dropped(
            "no per-coder caps; spread a coder's load with its accounts ([[coders.NAME.accounts]])",
        ),
    ),
    (
        "context_windows",
        Legacy::Dropped(
            "set a model's window in its coder's table: [coders.NAME] model_context_limits = { MODEL = TOKENS }",
        ),
    ),
    ("compaction_coder", Legacy::Dropped("a task that fills its context starts a fresh session")),
    ("compaction_model", Legacy::Dropped("a task that fills its context starts a fresh session")),
    (
        "continue_pack_max_bytes",
        Legacy::Dropped("a task that fills its context starts a fresh session"),
    ),
    ("state_max_bytes", Legacy::Dropped("a task that fills its context starts a fresh session")),
    ("post_merge_command", Legacy::Dropped("checks run before work lands: [merge] checks")),
    (
        "triage_interval_minutes",
        Legacy::Dropped("blocked tasks wait for a person: `fleet questions`, `fleet answer`"),
    ),
    ("job_gate", Legacy::Dropped("fleet has no observer jobs")),
    ("job_max_children", Legacy::Dropped("fleet has no observer jobs")),
    (
        "serve_host",
        Legacy::Dropped("fleet serves no web API; `fleet tasks --watch` is the live view"),
    ),
    (
        "serve_port",
        Legacy::Dropped("fleet serves no web API; `fleet tasks --watch` is the live view"),
    ),
    (
        "serve_cors_origins",
        Legacy::Dropped("fleet serves no web API; `fleet tasks --watch` is the live view"),
    ),
    ("shutdown_grace_sec", Legacy::Renamed("shutdown_grace_secs")),
    ("rate_limit_default_sleep_sec", Legacy::Renamed("rate_limit_default_pause_secs")),
    (
        "telegram_chat_id",
        Legacy::Dropped("Telegram messages go through a [notify] command (README)"),
    ),
    (
        "telegram_allowed_ids",
        Legacy::Dropped("Telegram messages go through a [notify] command (README)"),
    ),
    (
        "telegram_default_cwd",
        Legacy::Dropped("Telegram messages go through a [notify] command (README)"),
    ),
    (
        "config_poll_interval_sec",
        Legacy::Dropped("fleet notices a change of runtime.toml by itself, without polling"),
    ),
    (
        "claim_poll_interval_sec",
        Legacy::Dropped("fleet claims as soon as a task is ready, without polling"),
    ),
    (
        "status_log_interval_sec",
        Legacy::Dropped("`fleet tasks` shows the supervisor's status whenever asked"),
    ),
    ("log_root", Legacy::Dropped("fleet keeps its logs in $FLEET_HOME/logs")),
];

impl Legacy {
    /// What became of the Python fleet's key `name`, if it is one of [`LEGACY_KEYS`].
    pub fn of(name: &str) -> Option<Legacy> {
        LEGACY_KEYS.iter().find(|(key, _)| *key == name).map(|(_, legacy)| *legacy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_has_its_kind_and_lies_in_its_range() {
        for key in KEYS {
            match (key.kind, key.default_value()) {
                (KeyKind::Integer { min, max }, KeyValue::Integer(n)) => {
                    assert!((min..=max).contains(&n), "default of {}", key.name);
                }
                (KeyKind::Text, KeyValue::Text(_)) => {}
                (kind, value) => panic!("{}: default {value} is not {kind:?}", key.name),
            }
        }
    }

    #[test]
    fn every_integer_field_holds_its_whole_range() {
        for key in KEYS {
            let KeyKind::Integer { min, max } = key.kind else { continue };
            let mut config = RuntimeConfig::default();
            for n in [min, max] {
                key.set(&mut config, KeyValue::Integer(n)).unwrap();
                assert_eq!(key.value(&config), KeyValue::Integer(n), "{}", key.name);
            }
        }
    }

    #[test]
    fn legacy_keys_are_not_keys_and_renames_point_at_keys() {
        for (name, legacy) in LEGACY_KEYS {
            assert!(KeyInfo::find(name).is_none(), "{name} is a key of this fleet");
            if let Legacy::Renamed(new) = legacy {
                assert!(KeyInfo::find(new).is_some(), "{name} is renamed to a key: {new}");
            }
        }
    }

    #[test]
    fn keys_are_listed_in_field_order() {
        let defaults = serde_json::to_value(RuntimeConfig::default()).unwrap();
        let fields: Vec<&String> = defaults
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| !TABLES.contains(&k.as_str()))
            .collect();
        let keys: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        assert_eq!(fields, keys);
    }
}
