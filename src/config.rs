//! The runtime configuration: `$FLEET_HOME/runtime.toml`.
//!
//! [`RuntimeConfig`] holds what the supervisor reads on every claim and spawn: how many agents
//! run at once, which coder and model tasks use by default, when to stop an agent (context
//! pressure, stalls, a wall-clock limit), how failures are retried and backed off, how long to
//! pause for rate limits, and the `[coders.*]` tables that adjust the built-in coders or define
//! new ones ([`CoderConfig`]).
//!
//! Loading ([`RuntimeConfig::load`]) is pure: it reads the file and never writes it. A missing
//! file means the defaults. Everything else is checked strictly, because a value silently
//! ignored is worse than a refused one: an unknown key (a typo) is an error that names the key,
//! its line and the likely intended key; a value of the wrong type or out of range names the
//! line and the allowed range; a coder that does not exist or cannot be run names its table.
//!
//! Hot reload: [`file_stamp`] tells whether the file changed (time, size, inode), and
//! [`ConfigWatcher`] wraps the loop every supervisor needs — re-read on change, keep the
//! previous config when the new one is invalid, report the error once.
//!
//! Writing is [`set_values`] / [`unset_keys`] (behind `fleet config set|unset`): edits go
//! through `toml_edit`, so the user's comments and layout survive; the result is validated as a
//! whole before anything is written, and written atomically (temporary file + rename). A file
//! created this way starts with a comment header ([`header`]) explaining every key. A file that
//! holds coder `env` values (often API keys) is written with mode 0600, as is one the user had
//! already made private; the values are never echoed back (`<redacted>`).

use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use toml_edit::{Item, TableLike};

use crate::coders::{Coder, CoderConfig, CoderConfigError, EventFormat, Registry};
use crate::redact::REDACTED;

/// The file name under `FLEET_HOME`.
pub const FILE_NAME: &str = "runtime.toml";

/// Everything `runtime.toml` can set. Field docs give each key's meaning; [`KEYS`] gives the
/// allowed ranges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    /// Agents running at once. 0 claims nothing (a pause); lowering it never stops running
    /// agents, it only holds new claims until enough finish.
    pub max_concurrent: u32,
    /// The coder for tasks that do not name one.
    pub coder: String,
    /// The model for tasks of the default coder that do not name one; "" means that coder's
    /// own `default_model`. It never applies to other coders (no `sonnet` passed to codex).
    pub model: String,
    /// Stop an agent once its prompt reaches this percentage of the model's context window;
    /// the task is requeued for a fresh session, not counted as a failure.
    pub context_pressure_threshold_pct: u8,
    /// Hold new spawns while a rate-limit window reports more than this percentage used.
    pub rate_limit_threshold_pct: u8,
    /// Failed attempts (non-zero exit, crash) before the task is blocked.
    pub max_failures: u32,
    /// Exits with code 0 that did not close the task before it is blocked (each one requeues
    /// it with backoff).
    pub max_noclose: u32,
    /// Stalled attempts (no output for `stall_timeout_secs`) before the task is blocked.
    pub max_stalls: u32,
    /// Context-pressure releases (not charged as failures) before the task is blocked: a task
    /// too large for one context must not be restarted forever.
    pub max_context_resets: u32,
    /// Backoff before a requeued task may be claimed again: this many seconds, doubling with
    /// each further retry ...
    pub retry_backoff_secs: u64,
    /// ... up to this many.
    pub retry_backoff_max_secs: u64,
    /// Stop an agent that printed nothing for this long (0: never).
    pub stall_timeout_secs: u64,
    /// Stop an attempt that runs longer than this (0: never).
    pub attempt_timeout_secs: u64,
    /// On shutdown or kill: time between SIGTERM and SIGKILL.
    pub shutdown_grace_secs: u64,
    /// How long to pause spawning after a rate limit that gave no reset time.
    pub rate_limit_default_pause_secs: u64,
    /// `[coders.NAME]` tables: adjust a built-in coder or define a new one.
    pub coders: BTreeMap<String, CoderConfig>,
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            max_concurrent: 3,
            coder: "claude".to_owned(),
            model: String::new(),
            context_pressure_threshold_pct: 90,
            rate_limit_threshold_pct: 90,
            max_failures: 3,
            max_noclose: 3,
            max_stalls: 2,
            max_context_resets: 5,
            retry_backoff_secs: 30,
            retry_backoff_max_secs: 600,
            stall_timeout_secs: 600,
            attempt_timeout_secs: 7200,
            shutdown_grace_secs: 30,
            rate_limit_default_pause_secs: 300,
            coders: BTreeMap::new(),
        }
    }
}

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

/// One top-level key: its name, type and range, default (as TOML) and a one-line meaning.
#[derive(Debug, Clone, Copy)]
pub struct KeyInfo {
    pub name: &'static str,
    pub kind: KeyKind,
    pub default: &'static str,
    pub doc: &'static str,
}

const fn int(min: i64, max: i64) -> KeyKind {
    KeyKind::Integer { min, max }
}

const DAY: i64 = 86_400;

/// Every top-level key except the `[coders.*]` tables, in the order `fleet config show` lists
/// them.
pub const KEYS: [KeyInfo; 15] = [
    KeyInfo {
        name: "max_concurrent",
        kind: int(0, 1024),
        default: "3",
        doc: "agents running at once (0 claims nothing: a pause)",
    },
    KeyInfo {
        name: "coder",
        kind: KeyKind::Text,
        default: "\"claude\"",
        doc: "coder for tasks that name none",
    },
    KeyInfo {
        name: "model",
        kind: KeyKind::Text,
        default: "\"\"",
        doc: "model for the default coder's tasks (\"\": the coder's default_model)",
    },
    KeyInfo {
        name: "context_pressure_threshold_pct",
        kind: int(1, 100),
        default: "90",
        doc: "stop and requeue an agent at this % of its context window",
    },
    KeyInfo {
        name: "rate_limit_threshold_pct",
        kind: int(1, 100),
        default: "90",
        doc: "hold new spawns while a rate-limit window is above this % used",
    },
    KeyInfo {
        name: "max_failures",
        kind: int(1, 1000),
        default: "3",
        doc: "failed attempts before a task is blocked",
    },
    KeyInfo {
        name: "max_noclose",
        kind: int(0, 1000),
        default: "3",
        doc: "exits 0 without closing the task before it is blocked",
    },
    KeyInfo {
        name: "max_stalls",
        kind: int(1, 1000),
        default: "2",
        doc: "stalled attempts before a task is blocked",
    },
    KeyInfo {
        name: "max_context_resets",
        kind: int(1, 1000),
        default: "5",
        doc: "context-pressure releases before a task is blocked (each run starts fresh)",
    },
    KeyInfo {
        name: "retry_backoff_secs",
        kind: int(0, DAY),
        default: "30",
        doc: "first wait before a requeued task is claimed again (doubles each retry)",
    },
    KeyInfo {
        name: "retry_backoff_max_secs",
        kind: int(0, 7 * DAY),
        default: "600",
        doc: "longest wait between retries",
    },
    KeyInfo {
        name: "stall_timeout_secs",
        kind: int(0, 7 * DAY),
        default: "600",
        doc: "stop an agent silent on stdout this long (0: never)",
    },
    KeyInfo {
        name: "attempt_timeout_secs",
        kind: int(0, 30 * DAY),
        default: "7200",
        doc: "stop an attempt running longer than this (0: never)",
    },
    KeyInfo {
        name: "shutdown_grace_secs",
        kind: int(0, 3600),
        default: "30",
        doc: "time between SIGTERM and SIGKILL when stopping an agent",
    },
    KeyInfo {
        name: "rate_limit_default_pause_secs",
        kind: int(1, 7 * DAY),
        default: "300",
        doc: "pause after a rate limit that gave no reset time",
    },
];

/// Keys of the Python fleet's runtime.toml that this fleet does not have, and what to do.
const RETIRED_KEYS: [(&str, &str); 3] = [
    ("telegram_chat_id", "fleet has no Telegram integration; remove the line"),
    ("telegram_allowed_ids", "fleet has no Telegram integration; remove the line"),
    ("telegram_default_cwd", "fleet has no Telegram integration; remove the line"),
];

/// What went wrong with a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigErrorKind {
    /// The file could not be read (or written).
    Io,
    /// Not valid TOML.
    Syntax,
    /// A key fleet does not know.
    UnknownKey,
    /// A value of the wrong type.
    Type,
    /// A value out of its range, or inconsistent with another.
    Invalid,
}

/// A config file that cannot be used: where, what, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line of the offending key or value, when there is one.
    pub line: Option<usize>,
    /// The dotted key at fault (`max_concurrent`, `coders.claude.env`), when there is one.
    pub key: Option<String>,
    pub kind: ConfigErrorKind,
    /// What is wrong, naming the key (no location: [`Display`](std::fmt::Display) adds it).
    pub message: String,
    /// How to fix it, when there is more to say than the message.
    pub hint: Option<String>,
}

impl ConfigError {
    fn new(path: &Path, kind: ConfigErrorKind, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: path.to_path_buf(),
            line: None,
            key: None,
            kind,
            message: message.into(),
            hint: None,
        }
    }

    fn at(mut self, line: Option<usize>) -> ConfigError {
        self.line = line;
        self
    }

    fn key(mut self, key: impl Into<String>) -> ConfigError {
        self.key = Some(key.into());
        self
    }

    fn hint(mut self, hint: impl Into<String>) -> ConfigError {
        self.hint = Some(hint.into());
        self
    }
}

impl RuntimeConfig {
    /// Reads `path`. A missing file gives the defaults; anything unusable is an error. Never
    /// writes.
    pub fn load(path: &Path) -> Result<RuntimeConfig, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => RuntimeConfig::parse(&text, path),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(RuntimeConfig::default()),
            Err(error) => Err(ConfigError::new(
                path,
                ConfigErrorKind::Io,
                format!("cannot read the file: {error}"),
            )),
        }
    }

    /// Parses and validates the text of a config file; `path` only labels errors. A leading
    /// byte order mark (which TOML does not allow, but Windows editors write) is skipped.
    pub fn parse(text: &str, path: &Path) -> Result<RuntimeConfig, ConfigError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let document = toml_edit::Document::parse(text).map_err(|error| {
            ConfigError::new(path, ConfigErrorKind::Syntax, error.message().trim().to_owned())
                .at(error.span().map(|span| line_of(text, &span)))
                .hint("fix the TOML syntax; `fleet config show` checks the file")
        })?;
        check_document(document.as_table(), text, path)?;
        let config: RuntimeConfig = toml::from_str(text).map_err(|error| {
            // The walk above checks every key and type, so this is a backstop.
            ConfigError::new(path, ConfigErrorKind::Type, error.message().trim().to_owned())
                .at(error.span().map(|span| line_of(text, &span)))
        })?;
        config.validate().map_err(|error| {
            let line = error.key.as_deref().and_then(|key| line_of_key(&document, text, key));
            ConfigError { path: path.to_path_buf(), line, ..error }
        })?;
        Ok(config)
    }

    /// Checks what the per-key checks cannot: that the coders build and the default coder
    /// exists, and that the backoff range is ordered. (Errors carry an empty path.)
    pub fn validate(&self) -> Result<(), ConfigError> {
        let nowhere = Path::new("");
        let registry = self.registry().map_err(|error| coder_error(nowhere, &error))?;
        if let Err(unknown) = registry.get(&self.coder) {
            return Err(ConfigError::new(
                nowhere,
                ConfigErrorKind::Invalid,
                format!("coder = {:?}: {unknown}", self.coder),
            )
            .key("coder")
            .hint("use a built-in coder, or define it in a [coders.NAME] table with argv"));
        }
        if self.retry_backoff_max_secs < self.retry_backoff_secs {
            return Err(ConfigError::new(
                nowhere,
                ConfigErrorKind::Invalid,
                format!(
                    "retry_backoff_max_secs ({}) is less than retry_backoff_secs ({})",
                    self.retry_backoff_max_secs, self.retry_backoff_secs
                ),
            )
            .key("retry_backoff_max_secs"));
        }
        Ok(())
    }

    /// This config with every coder `env` value replaced by `<redacted>`, the names kept:
    /// what `fleet config show` prints, since env values are often API keys.
    pub fn with_env_values_masked(&self) -> RuntimeConfig {
        let mut shown = self.clone();
        for coder in shown.coders.values_mut() {
            for value in coder.env.values_mut() {
                *value = REDACTED.to_owned();
            }
        }
        shown
    }

    /// Whether any coder has `env` values (then the file is written readable by its owner
    /// only).
    pub fn has_env_values(&self) -> bool {
        self.coders.values().any(|coder| !coder.env.is_empty())
    }

    /// The coders: built-ins adjusted by, plus those defined in, the `[coders.*]` tables.
    pub fn registry(&self) -> Result<Registry, CoderConfigError> {
        Registry::from_config(&self.coders)
    }

    /// The model an attempt of `coder` runs: the task's own, else `model` when `coder` is the
    /// default coder, else the coder's default. Empty means "let the CLI choose".
    pub fn effective_model(&self, coder: &dyn Coder, task_model: Option<&str>) -> String {
        if let Some(model) = task_model.filter(|m| !m.trim().is_empty()) {
            return model.to_owned();
        }
        if coder.name() == self.coder && !self.model.is_empty() {
            return self.model.clone();
        }
        coder.default_model().to_owned()
    }

    /// The wait before retry number `retry` (1 for the first): `retry_backoff_secs` doubled
    /// each time, capped at `retry_backoff_max_secs`.
    pub fn retry_backoff(&self, retry: u32) -> Duration {
        let factor = 1u64.checked_shl(retry.saturating_sub(1)).unwrap_or(u64::MAX);
        let secs = self.retry_backoff_secs.saturating_mul(factor).min(self.retry_backoff_max_secs);
        Duration::from_secs(secs)
    }

    /// `stall_timeout_secs`, `None` when disabled.
    pub fn stall_timeout(&self) -> Option<Duration> {
        (self.stall_timeout_secs > 0).then(|| Duration::from_secs(self.stall_timeout_secs))
    }

    /// `attempt_timeout_secs`, `None` when disabled.
    pub fn attempt_timeout(&self) -> Option<Duration> {
        (self.attempt_timeout_secs > 0).then(|| Duration::from_secs(self.attempt_timeout_secs))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    pub fn rate_limit_default_pause(&self) -> Duration {
        Duration::from_secs(self.rate_limit_default_pause_secs)
    }
}

fn coder_error(path: &Path, error: &CoderConfigError) -> ConfigError {
    let key = match error.key {
        Some(key) => format!("coders.{}.{key}", error.coder),
        None => format!("coders.{}", error.coder),
    };
    ConfigError::new(path, ConfigErrorKind::Invalid, error.to_string()).key(key)
}

/// The 1-based line of byte offset `span.start` in `text`.
fn line_of(text: &str, span: &Range<usize>) -> usize {
    let end = span.start.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
}

/// The line where the dotted `key` is written, or where the nearest enclosing table is (a
/// missing `argv` points at its `[coders.NAME]` header).
fn line_of_key(document: &toml_edit::Document<&str>, text: &str, key: &str) -> Option<usize> {
    let mut table: &dyn TableLike = document.as_table();
    let mut line = None;
    for part in key.split('.') {
        let Some((found_key, item)) = table.get_key_value(part) else {
            break;
        };
        line = found_key.span().or_else(|| item.span()).map(|span| line_of(text, &span)).or(line);
        match item.as_table_like() {
            Some(inner) => table = inner,
            None => break,
        }
    }
    line
}

// --- checking a parsed document key by key -------------------------------------------------

struct Checker<'a> {
    text: &'a str,
    path: &'a Path,
}

impl Checker<'_> {
    fn line(&self, key: &toml_edit::Key, item: &Item) -> Option<usize> {
        key.span().or_else(|| item.span()).map(|span| line_of(self.text, &span))
    }

    fn value_line(&self, key: &toml_edit::Key, item: &Item) -> Option<usize> {
        item.span().or_else(|| key.span()).map(|span| line_of(self.text, &span))
    }

    fn unknown(
        &self,
        dotted: &str,
        word: &str,
        known: &[&str],
        line: Option<usize>,
        hint: String,
    ) -> ConfigError {
        let mut message = format!("unknown key {dotted:?}");
        if let Some(close) = crate::coders::closest_word(word, known.iter().copied()) {
            message.push_str(&format!(" (did you mean {close:?}?)"));
        }
        ConfigError::new(self.path, ConfigErrorKind::UnknownKey, message)
            .at(line)
            .key(dotted)
            .hint(hint)
    }

    fn wrong_type(
        &self,
        dotted: &str,
        expected: &str,
        item: &Item,
        line: Option<usize>,
    ) -> ConfigError {
        ConfigError::new(
            self.path,
            ConfigErrorKind::Type,
            format!("{dotted} must be {expected}, found {}", describe(item)),
        )
        .at(line)
        .key(dotted)
    }
}

/// A short description of a TOML item for error messages: `string "3"`, `an array`, ….
fn describe(item: &Item) -> String {
    match item {
        Item::Value(toml_edit::Value::String(s)) => format!("string {:?}", s.value()),
        Item::Value(toml_edit::Value::Integer(i)) => format!("integer {}", i.value()),
        Item::Value(toml_edit::Value::Float(f)) => format!("float {}", f.value()),
        Item::Value(toml_edit::Value::Boolean(b)) => format!("boolean {}", b.value()),
        Item::Value(toml_edit::Value::Datetime(d)) => format!("date-time {}", d.value()),
        Item::Value(toml_edit::Value::Array(_)) => "an array".to_owned(),
        Item::Value(toml_edit::Value::InlineTable(_)) | Item::Table(_) => "a table".to_owned(),
        Item::ArrayOfTables(_) => "an array of tables".to_owned(),
        Item::None => "nothing".to_owned(),
    }
}

fn check_document(root: &toml_edit::Table, text: &str, path: &Path) -> Result<(), ConfigError> {
    let checker = Checker { text, path };
    let top_level: Vec<&str> =
        KEYS.iter().map(|k| k.name).chain(std::iter::once("coders")).collect();
    for (name, item) in root.iter() {
        let (key, _) = root.get_key_value(name).expect("iterated keys exist");
        if name == "coders" {
            check_coders(&checker, key, item)?;
            continue;
        }
        let Some(info) = KEYS.iter().find(|k| k.name == name) else {
            let hint = if let Some((_, fix)) = RETIRED_KEYS.iter().find(|(k, _)| *k == name) {
                (*fix).to_owned()
            } else if CoderConfig::KEYS.contains(&name) {
                format!("{name} is a per-coder key: put it in a [coders.NAME] table")
            } else {
                "remove it or fix its spelling; `fleet config show` lists every key".to_owned()
            };
            return Err(checker.unknown(name, name, &top_level, checker.line(key, item), hint));
        };
        check_value(&checker, name, info.kind, key, item)?;
    }
    Ok(())
}

fn check_value(
    checker: &Checker,
    dotted: &str,
    kind: KeyKind,
    key: &toml_edit::Key,
    item: &Item,
) -> Result<(), ConfigError> {
    let line = checker.value_line(key, item);
    match kind {
        KeyKind::Text => {
            if item.as_str().is_none() {
                return Err(checker.wrong_type(dotted, "a string", item, line));
            }
        }
        KeyKind::Integer { min, max } => {
            let Some(value) = item.as_integer() else {
                return Err(checker.wrong_type(
                    dotted,
                    &format!("an integer from {min} to {max}"),
                    item,
                    line,
                ));
            };
            if !(min..=max).contains(&value) {
                return Err(ConfigError::new(
                    checker.path,
                    ConfigErrorKind::Invalid,
                    format!("{dotted} must be from {min} to {max}, found {value}"),
                )
                .at(line)
                .key(dotted));
            }
        }
    }
    Ok(())
}

fn check_coders(checker: &Checker, key: &toml_edit::Key, item: &Item) -> Result<(), ConfigError> {
    let Some(coders) = item.as_table_like() else {
        return Err(checker.wrong_type(
            "coders",
            "a table of [coders.NAME] tables",
            item,
            checker.value_line(key, item),
        ));
    };
    for (name, table_item) in coders.iter() {
        let (name_key, _) = coders.get_key_value(name).expect("iterated keys exist");
        let dotted = format!("coders.{name}");
        let Some(table) = table_item.as_table_like() else {
            return Err(checker.wrong_type(
                &dotted,
                "a table ([coders.NAME] with keys under it)",
                table_item,
                checker.value_line(name_key, table_item),
            ));
        };
        for (field, value) in table.iter() {
            let (field_key, _) = table.get_key_value(field).expect("iterated keys exist");
            let dotted = format!("coders.{name}.{field}");
            let line = checker.value_line(field_key, value);
            if !CoderConfig::KEYS.contains(&field) {
                return Err(checker.unknown(
                    &dotted,
                    field,
                    &CoderConfig::KEYS,
                    checker.line(field_key, value),
                    format!("a [coders.NAME] table takes: {}", CoderConfig::KEYS.join(", ")),
                ));
            }
            check_coder_value(checker, &dotted, field, value, line)?;
        }
    }
    Ok(())
}

fn check_coder_value(
    checker: &Checker,
    dotted: &str,
    field: &str,
    value: &Item,
    line: Option<usize>,
) -> Result<(), ConfigError> {
    let strings = |item: &Item| {
        item.as_array().is_some_and(|array| array.iter().all(|v| v.as_str().is_some()))
    };
    match field {
        "program" | "default_model" => {
            if value.as_str().is_none() {
                return Err(checker.wrong_type(dotted, "a string", value, line));
            }
        }
        "events" => match value.as_str() {
            Some(name) if EventFormat::parse(name).is_some() => {}
            Some(name) => {
                return Err(ConfigError::new(
                    checker.path,
                    ConfigErrorKind::Invalid,
                    format!(
                        "{dotted} must be one of {}, found {name:?}",
                        EventFormat::NAMES.map(|n| format!("{n:?}")).join(", ")
                    ),
                )
                .at(line)
                .key(dotted));
            }
            None => return Err(checker.wrong_type(dotted, "a string", value, line)),
        },
        "argv" | "permission_args" => {
            if !strings(value) {
                return Err(checker.wrong_type(dotted, "an array of strings", value, line));
            }
        }
        "close_on_exit_zero" => {
            if value.as_bool().is_none() {
                return Err(checker.wrong_type(dotted, "true or false", value, line));
            }
        }
        "context_limit" => {
            if value.as_integer().is_none_or(|n| n < 0) {
                return Err(checker.wrong_type(
                    dotted,
                    "a number of tokens (0: no limit)",
                    value,
                    line,
                ));
            }
        }
        "env" | "model_context_limits" => {
            let Some(table) = value.as_table_like() else {
                return Err(checker.wrong_type(dotted, "a table", value, line));
            };
            for (name, entry) in table.iter() {
                let ok = if field == "env" {
                    entry.as_str().is_some()
                } else {
                    entry.as_integer().is_some_and(|n| n >= 0)
                };
                if !ok {
                    let expected = if field == "env" { "a string" } else { "a number of tokens" };
                    return Err(checker.wrong_type(
                        &format!("{dotted}.{name}"),
                        expected,
                        entry,
                        entry.span().map(|span| line_of(checker.text, &span)).or(line),
                    ));
                }
            }
        }
        other => unreachable!("{other} is listed in CoderConfig::KEYS but not checked"),
    }
    Ok(())
}

// --- hot reload -----------------------------------------------------------------------------

/// What identifies one version of a file: modification time, size and inode. An atomic
/// replace (rename) changes the inode even within one timestamp tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified: Option<SystemTime>,
    pub len: u64,
    pub inode: u64,
}

/// The stamp of `path`, `None` when it does not exist (or cannot be read).
pub fn file_stamp(path: &Path) -> Option<FileStamp> {
    let metadata = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStamp { modified: metadata.modified().ok(), len: metadata.len(), inode })
}

/// What [`ConfigWatcher::poll`] found.
#[derive(Debug)]
pub enum Reload {
    /// The file has not changed since the last poll.
    Unchanged,
    /// The file changed (or appeared, or went away: back to defaults) and is valid; the new
    /// config is current.
    Reloaded,
    /// The file changed but is invalid; the previous config stays current. Reported once per
    /// change of the file.
    Invalid(ConfigError),
}

/// Keeps the current config of one `runtime.toml`, re-reading it when it changes.
///
/// The supervisor calls [`poll`](ConfigWatcher::poll) every few seconds (or on a file
/// notification) and reads [`config`](ConfigWatcher::config) and
/// [`registry`](ConfigWatcher::registry) when it claims and spawns. An invalid edit never
/// takes the supervisor down or loses the working settings.
#[derive(Debug)]
pub struct ConfigWatcher {
    path: PathBuf,
    stamp: Option<FileStamp>,
    config: RuntimeConfig,
    registry: Registry,
}

impl ConfigWatcher {
    /// Loads `path` for the first time; an invalid file is an error here (there is no previous
    /// config to keep).
    pub fn new(path: &Path) -> Result<ConfigWatcher, ConfigError> {
        let stamp = file_stamp(path);
        let config = RuntimeConfig::load(path)?;
        let registry = config.registry().map_err(|e| coder_error(path, &e))?;
        Ok(ConfigWatcher { path: path.to_path_buf(), stamp, config, registry })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current config.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The coders of the current config.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Re-reads the file if its stamp changed.
    pub fn poll(&mut self) -> Reload {
        let stamp = file_stamp(&self.path);
        if stamp == self.stamp {
            return Reload::Unchanged;
        }
        self.stamp = stamp;
        let loaded = RuntimeConfig::load(&self.path).and_then(|config| {
            let registry = config.registry().map_err(|e| coder_error(&self.path, &e))?;
            Ok((config, registry))
        });
        match loaded {
            Ok((config, registry)) => {
                self.config = config;
                self.registry = registry;
                Reload::Reloaded
            }
            Err(error) => Reload::Invalid(error),
        }
    }
}

// --- writing --------------------------------------------------------------------------------

/// The comment block a new `runtime.toml` starts with: what the file does, every key with its
/// default, and how coders are configured.
pub fn header() -> String {
    let mut text = String::from(
        "# fleet runtime configuration ($FLEET_HOME/runtime.toml).\n\
         #\n\
         # `fleet run` re-reads this file when it changes: new values apply from the next claim\n\
         # and the next spawn, and a change never stops a running agent. If the file becomes\n\
         # invalid, the supervisor keeps its previous settings and logs why. Edit it by hand or\n\
         # with `fleet config set key=value` (checked before anything is written); see the\n\
         # effective values with `fleet config show`. Unknown keys are errors, so a typo never\n\
         # goes unnoticed.\n\
         #\n\
         # Keys and their defaults:\n",
    );
    for key in &KEYS {
        let assignment = format!("{} = {}", key.name, key.default);
        text.push_str(&format!("#   {assignment:<38} {}\n", key.doc));
    }
    text.push_str(
        "#\n\
         # Coders: a [coders.NAME] table adjusts a built-in (claude, codex, agy, opencode, exec)\n\
         # or defines a new coder. For a built-in:\n\
         #   [coders.claude]\n\
         #   program = \"/opt/bin/claude\"              # the CLI binary\n\
         #   permission_args = [\"--allowedTools\", \"Bash,Edit,Write\"]  # replaces the defaults\n\
         #   env = { IS_SANDBOX = \"1\" }               # extra environment for the agent\n\
         #   default_model = \"opus\"                   # \"\" lets the CLI choose\n\
         #   context_limit = 200000                   # tokens, every model (0: no limit)\n\
         #   model_context_limits = { \"opus[1m]\" = 1000000 }\n\
         # A coder fleet does not know, described entirely here:\n\
         #   [coders.mybot]\n\
         #   argv = [\"mybot\", \"--json\", \"--model\", \"{model}\", \"{prompt}\"]\n\
         #   events = \"claude\"                        # claude, codex, opencode, agy or lines\n\
         #   context_limit = 128000\n\
         # Placeholders in argv and env: {prompt} {model} {cwd} {task_id} {task_dir}\n\
         # {artifact_dir} {title} {description}.\n",
    );
    text
}

/// What [`set_values`] or [`unset_keys`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigChange {
    pub path: PathBuf,
    /// The file did not exist and was created (with the [`header`]).
    pub created: bool,
    /// The keys set, with their new values (as JSON), in the order given; coder `env` values
    /// appear as `"<redacted>"`.
    pub set: Vec<(String, serde_json::Value)>,
    /// The keys removed (back to their defaults).
    pub unset: Vec<String>,
    /// The config now in effect.
    pub config: RuntimeConfig,
}

/// A `key=value` argument that cannot be applied, or a result that would be invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetError {
    pub message: String,
    pub hint: Option<String>,
}

impl SetError {
    fn new(message: impl Into<String>) -> SetError {
        SetError { message: message.into(), hint: None }
    }

    fn hint(mut self, hint: impl Into<String>) -> SetError {
        self.hint = Some(hint.into());
        self
    }
}

/// What a dotted key addresses.
#[derive(Debug, Clone)]
enum Target {
    /// A top-level key.
    Top(&'static KeyInfo),
    /// `coders.NAME` (unset only: the whole table).
    CoderTable(String),
    /// `coders.NAME.FIELD`.
    CoderField(String, &'static str),
    /// `coders.NAME.env.VAR` or `coders.NAME.model_context_limits.MODEL`.
    CoderEntry(String, &'static str, String),
}

fn parse_target(key: &str) -> Result<Target, SetError> {
    if let Some(info) = KEYS.iter().find(|k| k.name == key) {
        return Ok(Target::Top(info));
    }
    let mut parts = key.splitn(4, '.');
    let first = parts.next().unwrap_or("");
    if first != "coders" {
        let known: Vec<&str> =
            KEYS.iter().map(|k| k.name).chain(std::iter::once("coders.NAME.KEY")).collect();
        let mut message = format!("unknown key {key:?}");
        if let Some(close) = crate::coders::closest_word(key, known.iter().copied()) {
            message.push_str(&format!(" (did you mean {close:?}?)"));
        }
        return Err(SetError::new(message).hint(format!(
            "keys: {}, and coders.NAME.KEY for a coder",
            KEYS.map(|k| k.name).join(", ")
        )));
    }
    let name = parts.next().filter(|n| !n.is_empty()).ok_or_else(|| {
        SetError::new(format!("{key:?} names no coder")).hint("write coders.NAME.KEY=value")
    })?;
    let Some(field) = parts.next() else {
        return Ok(Target::CoderTable(name.to_owned()));
    };
    let Some(field) = CoderConfig::KEYS.iter().find(|k| **k == field) else {
        let mut message = format!("unknown key \"coders.{name}.{field}\"");
        if let Some(close) = crate::coders::closest_word(field, CoderConfig::KEYS.into_iter()) {
            message.push_str(&format!(" (did you mean {close:?}?)"));
        }
        return Err(
            SetError::new(message).hint(format!("a coder takes: {}", CoderConfig::KEYS.join(", ")))
        );
    };
    match (parts.next(), *field) {
        (None, field) => Ok(Target::CoderField(name.to_owned(), field)),
        (Some(entry), field @ ("env" | "model_context_limits")) if !entry.is_empty() => {
            Ok(Target::CoderEntry(name.to_owned(), field, entry.to_owned()))
        }
        (Some(_), field) => {
            Err(SetError::new(format!("{key:?}: coders.{name}.{field} has no sub-keys")))
        }
    }
}

/// Whether the value of `target` is a string (so `model=gpt-5.5` needs no quotes).
fn expects_string(target: &Target) -> bool {
    match target {
        Target::Top(info) => info.kind == KeyKind::Text,
        Target::CoderField(_, field) => matches!(*field, "program" | "default_model" | "events"),
        Target::CoderEntry(_, field, _) => *field == "env",
        Target::CoderTable(_) => false,
    }
}

/// Reads a value typed on the command line: TOML (`5`, `true`, `["a", "b"]`, `"quoted"`),
/// or — for string keys — the bare text.
fn parse_value(target: &Target, text: &str) -> toml_edit::Value {
    let text = text.trim();
    let parsed = text.parse::<toml_edit::Value>().ok();
    let mut value = match parsed {
        Some(value @ toml_edit::Value::String(_)) => value,
        _ if expects_string(target) => toml_edit::Value::from(text),
        Some(value) => value,
        None => toml_edit::Value::from(text),
    };
    // Written the way toml_edit writes new values (`["a", "b"]`, `{ A = "b" }`).
    value.decor_mut().clear();
    match &mut value {
        toml_edit::Value::Array(array) => array.fmt(),
        toml_edit::Value::InlineTable(table) => table.fmt(),
        _ => {}
    }
    value
}

/// Sets `key=value` pairs in the file at `path` (created with the [`header`] if missing),
/// keeping its comments and layout. The result is validated first; when it is invalid nothing
/// is written.
pub fn set_values(path: &Path, assignments: &[String]) -> Result<ConfigChange, SetError> {
    let mut parsed = Vec::new();
    for assignment in assignments {
        let Some((key, value)) = assignment.split_once('=') else {
            return Err(SetError::new(format!("{assignment:?} is not key=value"))
                .hint("for example: fleet config set max_concurrent=5 coder=codex"));
        };
        let key = key.trim();
        let target = parse_target(key)?;
        if let Target::CoderTable(name) = &target {
            return Err(SetError::new(format!("cannot set the whole table coders.{name}"))
                .hint(format!("set its keys one by one: coders.{name}.KEY=value")));
        }
        let value = parse_value(&target, value);
        parsed.push((key.to_owned(), target, value));
    }
    edit(path, |document| {
        let mut set = Vec::new();
        for (key, target, value) in &parsed {
            let json = shown_value(target, toml_to_json(value));
            let slot = slot_for(document, target);
            let mut value = value.clone();
            if let Some(old) = slot.as_value() {
                // Keep the spacing and the trailing comment of the line being changed.
                *value.decor_mut() = old.decor().clone();
            }
            *slot = Item::Value(value);
            set.push((key.clone(), json));
        }
        (set, Vec::new())
    })
}

/// Removes keys from the file at `path` (they go back to their defaults); `coders.NAME`
/// removes a whole coder table. Validated like [`set_values`]; keys not in the file are
/// ignored.
pub fn unset_keys(path: &Path, keys: &[String]) -> Result<ConfigChange, SetError> {
    let targets = keys
        .iter()
        .map(|key| Ok((key.trim().to_owned(), parse_target(key.trim())?)))
        .collect::<Result<Vec<_>, SetError>>()?;
    edit(path, |document| {
        let mut unset = Vec::new();
        for (key, target) in &targets {
            let removed = match target {
                Target::Top(info) => document.remove(info.name).is_some(),
                Target::CoderTable(name) => {
                    coders_table(document).and_then(|coders| coders.remove(name)).is_some()
                }
                Target::CoderField(name, field) => {
                    coder_table(document, name).and_then(|table| table.remove(field)).is_some()
                }
                Target::CoderEntry(name, field, entry) => coder_table(document, name)
                    .and_then(|table| table.get_mut(field))
                    .and_then(Item::as_table_like_mut)
                    .and_then(|table| table.remove(entry))
                    .is_some(),
            };
            if removed {
                unset.push(key.clone());
            }
        }
        (Vec::new(), unset)
    })
}

/// The value of a set key as reported back: coder `env` values masked, names kept.
fn shown_value(target: &Target, value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match (target, value) {
        (Target::CoderField(_, "env"), Json::Object(env)) => {
            Json::Object(env.into_iter().map(|(name, _)| (name, Json::from(REDACTED))).collect())
        }
        (Target::CoderField(_, "env") | Target::CoderEntry(_, "env", _), _) => Json::from(REDACTED),
        (_, value) => value,
    }
}

type Edits = (Vec<(String, serde_json::Value)>, Vec<String>);

/// Reads the file (or starts a new one), applies `change`, validates, writes atomically.
fn edit(
    path: &Path,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Edits,
) -> Result<ConfigChange, SetError> {
    let (text, created) = match std::fs::read_to_string(path) {
        // A byte order mark is dropped: TOML does not allow one.
        Ok(text) => (text.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(text), false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => (String::new(), true),
        Err(error) => {
            return Err(SetError::new(format!("cannot read {}: {error}", path.display())));
        }
    };
    let mut document = text.parse::<toml_edit::DocumentMut>().map_err(|error| {
        SetError::new(format!("{} is not valid TOML: {}", path.display(), error.message().trim()))
            .hint("fix the file by hand first; nothing was written")
    })?;
    let (set, unset) = change(&mut document);
    let mut new_text = document.to_string();
    if created {
        new_text = format!("{}\n{new_text}", header());
    }
    let config = RuntimeConfig::parse(&new_text, path).map_err(|error| {
        // The message names the key; a line number of text never written would only confuse.
        let message = format!("not saved: {}", error.message);
        let hint = error.hint.unwrap_or_default();
        let hint = if hint.is_empty() {
            format!("{} is unchanged", path.display())
        } else {
            format!("{hint}; {} is unchanged", path.display())
        };
        SetError::new(message).hint(hint)
    })?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| SetError::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    let private = config.has_env_values() || crate::fsutil::is_private(path);
    let written = if private {
        crate::fsutil::write_atomic_private(path, new_text.as_bytes())
    } else {
        crate::fsutil::write_atomic(path, new_text.as_bytes())
    };
    written.map_err(|e| SetError::new(format!("cannot write {}: {e}", path.display())))?;
    Ok(ConfigChange { path: path.to_path_buf(), created, set, unset, config })
}

fn coders_table(document: &mut toml_edit::DocumentMut) -> Option<&mut dyn TableLike> {
    document.get_mut("coders").and_then(Item::as_table_like_mut)
}

fn coder_table<'a>(
    document: &'a mut toml_edit::DocumentMut,
    name: &str,
) -> Option<&'a mut dyn TableLike> {
    coders_table(document).and_then(|c| c.get_mut(name)).and_then(Item::as_table_like_mut)
}

/// The item `target` addresses, creating the `[coders.NAME]` table (and an inline `env` /
/// `model_context_limits` table) on the way when needed.
fn slot_for<'a>(document: &'a mut toml_edit::DocumentMut, target: &Target) -> &'a mut Item {
    let (name, field, entry) = match target {
        Target::Top(info) => return document.entry(info.name).or_insert(Item::None),
        Target::CoderField(name, field) => (name, *field, None),
        Target::CoderEntry(name, field, entry) => (name, *field, Some(entry)),
        Target::CoderTable(_) => unreachable!("whole tables are refused before editing"),
    };
    let coders = document.entry("coders").or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    if coders.as_table_like().is_none() {
        *coders = Item::Table(toml_edit::Table::new());
    }
    let coders = coders.as_table_like_mut().expect("just made a table");
    let table = coders.entry(name).or_insert(Item::Table(toml_edit::Table::new()));
    if table.as_table_like().is_none() {
        *table = Item::Table(toml_edit::Table::new());
    }
    let table = table.as_table_like_mut().expect("just made a table");
    let slot = table.entry(field).or_insert(Item::None);
    let Some(entry) = entry else {
        return slot;
    };
    if slot.as_table_like().is_none() {
        *slot = Item::Value(toml_edit::Value::InlineTable(toml_edit::InlineTable::new()));
    }
    slot.as_table_like_mut().expect("just made a table").entry(entry).or_insert(Item::None)
}

fn toml_to_json(value: &toml_edit::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        toml_edit::Value::String(s) => Json::from(s.value().clone()),
        toml_edit::Value::Integer(i) => Json::from(*i.value()),
        toml_edit::Value::Float(f) => Json::from(*f.value()),
        toml_edit::Value::Boolean(b) => Json::from(*b.value()),
        toml_edit::Value::Datetime(d) => Json::from(d.value().to_string()),
        toml_edit::Value::Array(a) => Json::Array(a.iter().map(toml_to_json).collect()),
        toml_edit::Value::InlineTable(t) => {
            Json::Object(t.iter().map(|(k, v)| (k.to_owned(), toml_to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RuntimeConfig, ConfigError> {
        RuntimeConfig::parse(text, Path::new("runtime.toml"))
    }

    #[test]
    fn every_key_has_a_matching_field_and_default() {
        let defaults = serde_json::to_value(RuntimeConfig::default()).unwrap();
        let fields: Vec<&String> =
            defaults.as_object().unwrap().keys().filter(|k| *k != "coders").collect();
        let keys: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        assert_eq!(fields, keys);
        for key in &KEYS {
            let parsed = parse(&format!("{} = {}", key.name, key.default)).unwrap();
            assert_eq!(parsed, RuntimeConfig::default(), "default of {}", key.name);
        }
    }

    #[test]
    fn the_header_is_comments_and_parses_as_the_defaults() {
        let header = header();
        assert!(header.lines().all(|line| line.starts_with('#')));
        assert_eq!(parse(&header).unwrap(), RuntimeConfig::default());
    }

    #[test]
    fn errors_carry_the_line_and_key() {
        let error = parse("coder = \"claude\"\n\nmax_concurent = 4\n").unwrap_err();
        assert_eq!(error.kind, ConfigErrorKind::UnknownKey);
        assert_eq!(error.line, Some(3));
        assert_eq!(
            error.to_string(),
            "runtime.toml line 3: unknown key \"max_concurent\" (did you mean \"max_concurrent\"?)"
        );
        let error = parse("max_concurrent = \"4\"\n").unwrap_err();
        assert_eq!(error.kind, ConfigErrorKind::Type);
        assert_eq!(
            error.message,
            "max_concurrent must be an integer from 0 to 1024, found string \"4\""
        );
        let error = parse("x = 1\n[coders.claude]\nenv = { A = 1 }\n").unwrap_err();
        assert_eq!(error.key.as_deref(), Some("x"));
        let error = parse("[coders.claude]\nenv = { A = 1 }\n").unwrap_err();
        assert_eq!(error.key.as_deref(), Some("coders.claude.env.A"));
        assert_eq!(error.line, Some(2));
    }

    #[test]
    fn semantic_errors_point_at_their_key() {
        let error = parse("max_failures = 2\ncoder = \"cladue\"\n").unwrap_err();
        assert_eq!(error.line, Some(2));
        assert!(error.message.contains("did you mean \"claude\""), "{}", error.message);
        let error = parse("retry_backoff_secs = 100\nretry_backoff_max_secs = 10\n").unwrap_err();
        assert_eq!(error.line, Some(2));
        let error = parse("[coders.mybot]\nevents = \"claude\"\n").unwrap_err();
        assert_eq!(error.key.as_deref(), Some("coders.mybot.argv"));
        assert_eq!(error.line, Some(1));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let config = RuntimeConfig::default();
        let secs: Vec<u64> = (1..=7).map(|n| config.retry_backoff(n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(config.retry_backoff(200).as_secs(), 600);
    }

    #[test]
    fn the_default_model_applies_only_to_the_default_coder() {
        let config = RuntimeConfig { model: "opus".to_owned(), ..RuntimeConfig::default() };
        let registry = config.registry().unwrap();
        let claude = registry.get("claude").unwrap();
        let codex = registry.get("codex").unwrap();
        assert_eq!(config.effective_model(claude.as_ref(), None), "opus");
        assert_eq!(config.effective_model(codex.as_ref(), None), "");
        assert_eq!(config.effective_model(codex.as_ref(), Some("gpt-5.5")), "gpt-5.5");
        let plain = RuntimeConfig::default();
        assert_eq!(plain.effective_model(claude.as_ref(), Some("")), "sonnet");
    }
}
