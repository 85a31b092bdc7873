//! The runtime configuration: `$FLEET_HOME/runtime.toml`.
//!
//! [`RuntimeConfig`] holds what the supervisor reads on every claim and spawn: how many agents
//! run at once, which coder and model tasks use by default, when to stop an agent (context
//! pressure, stalls, a wall-clock limit), how failures are retried and backed off, how long to
//! pause for rate limits, and the `[coders.*]` tables that adjust the built-in coders or define
//! new ones ([`CoderConfig`](crate::coders::CoderConfig)), with the accounts each coder
//! rotates over ([`Account`]).
//!
//! The module tree:
//! - [`keys`]: the one key table — each top-level key's field, default, kind and range, and
//!   summary, declared once; it generates the struct, its defaults and [`KEYS`];
//! - `check`: reading a parsed document into a config, strictly (unknown keys, types, ranges,
//!   with line numbers);
//! - `edit`: the comment-keeping edits behind `fleet config set|unset`, and the [`header`] of a
//!   new file;
//! - `migrate`: translating the Python fleet's `runtime.toml` ([`migrate()`], `fleet import`);
//! - `watch`: hot reload ([`ConfigWatcher`]).
//!
//! Loading ([`RuntimeConfig::load`]) is pure: it reads the file and never writes it. A missing
//! file means the defaults. The text is parsed once, by `toml_edit`, and the typed config is
//! read from that document. Everything is checked strictly, because a value silently ignored is
//! worse than a refused one: an unknown key (a typo) is an error that names the key, its line
//! and the likely intended key; a value of the wrong type or out of range names the line and
//! the allowed range; a coder that does not exist or cannot be run names its table.

pub mod budget;
pub mod canary;
mod check;
mod edit;
pub mod keys;
pub mod merge;
mod migrate;
pub mod notify;
pub mod prices;
mod watch;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use budget::{BudgetConfig, DayCap};
pub use canary::CanaryConfig;
use check::Source;
pub use edit::{ConfigChange, SetError, header, raise_budget, set_values, unset_keys, value_of};
pub use keys::{KEYS, KeyInfo, KeyKind, KeyValue, LEGACY_KEYS, Legacy, RuntimeConfig};
pub use merge::{Isolation, MergeConfig, Strategy};
pub use migrate::{Dropped, Kept, Migration, Translated, migrate};
pub use notify::NotifyConfig;
pub use prices::{Price, price_of};
pub use watch::{ConfigWatcher, FileStamp, Reload, file_stamp};

use crate::coders::{Account, Coder, CoderConfigError, Registry, UnknownCoder};
use crate::redact::{REDACTED, Redactor};

/// The file name under `FLEET_HOME`.
pub const FILE_NAME: &str = "runtime.toml";

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
#[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
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
    pub(crate) fn new(
        path: &Path,
        kind: ConfigErrorKind,
        message: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            path: path.to_path_buf(),
            line: None,
            key: None,
            kind,
            message: message.into(),
            hint: None,
        }
    }

    pub(crate) fn at(mut self, line: Option<usize>) -> ConfigError {
        self.line = line;
        self
    }

    pub(crate) fn key(mut self, key: impl Into<String>) -> ConfigError {
        self.key = Some(key.into());
        self
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> ConfigError {
        self.hint = Some(hint.into());
        self
    }
}

/// What to do about a coder name that is not known.
pub const UNKNOWN_CODER_HINT: &str = "use a built-in coder, or define it in a [coders.NAME] table with argv (fleet config show lists them)";

/// Why a coder name cannot be used ([`RuntimeConfig::check_coder`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoderNameError {
    #[error(transparent)]
    Unknown(#[from] UnknownCoder),
    /// The `[coders.*]` tables themselves are unusable.
    #[error(transparent)]
    Config(#[from] CoderConfigError),
}

/// `text` without a leading byte order mark (which TOML does not allow, but Windows editors
/// write).
fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The TOML document of a config file's text, or its syntax error.
fn parse_document<'t>(
    text: &'t str,
    path: &Path,
) -> Result<toml_edit::Document<&'t str>, ConfigError> {
    let text = strip_bom(text);
    toml_edit::Document::parse(text).map_err(|error| {
        ConfigError::new(path, ConfigErrorKind::Syntax, error.message().trim().to_owned())
            .at(error.span().map(|span| check::line_of(text, &span)))
            .hint("fix the TOML syntax; `fleet config show` checks the file")
    })
}

/// How `fleet config show` and `fleet config set` print the value of the variable `name` of
/// a coder's or an account's `env`: `<redacted>` when the name looks secret (`…_API_KEY`,
/// `…TOKEN`) or the value holds a known token shape, else as it is (`ANTHROPIC_BASE_URL`,
/// `IS_SANDBOX` are worth seeing).
pub fn shown_env_value(name: &str, value: &str) -> String {
    let shape = !Redactor::default().secrets_in(value).is_empty();
    if crate::redact::is_secret_name(name) || shape {
        REDACTED.to_owned()
    } else {
        value.to_owned()
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

    /// Reads `path` as [`RuntimeConfig::load`] does, but as if its unknown keys (typos, keys
    /// of the Python fleet) were not there: what the file will mean once they are removed.
    /// Other problems are still errors.
    pub fn load_known(path: &Path) -> Result<RuntimeConfig, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(RuntimeConfig::default());
            }
            Err(error) => {
                return Err(ConfigError::new(
                    path,
                    ConfigErrorKind::Io,
                    format!("cannot read the file: {error}"),
                ));
            }
        };
        let document = parse_document(&text, path)?;
        let known = check::without_unknown_keys(document.as_table());
        RuntimeConfig::from_document(&known, Source { text: strip_bom(&text), path })
    }

    /// Every problem of the file at `path` at once (see [`RuntimeConfig::problems`]); none for a
    /// missing file.
    pub fn problems_in(path: &Path) -> Vec<ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => RuntimeConfig::problems(&text, path),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(error) => vec![ConfigError::new(
                path,
                ConfigErrorKind::Io,
                format!("cannot read the file: {error}"),
            )],
        }
    }

    /// Every problem of a config file's text, where [`RuntimeConfig::parse`] stops at the
    /// first: a syntax error, or each unknown key (all of them, in file order) followed by the
    /// first other problem. Empty when the text is a valid config.
    pub fn problems(text: &str, path: &Path) -> Vec<ConfigError> {
        match parse_document(text, path) {
            Ok(document) => {
                check::problems(document.as_table(), Source { text: strip_bom(text), path })
            }
            Err(error) => vec![error],
        }
    }

    /// Parses and validates the text of a config file; `path` only labels errors.
    ///
    /// A leading byte order mark (which TOML does not allow, but Windows editors write) is
    /// skipped.
    pub fn parse(text: &str, path: &Path) -> Result<RuntimeConfig, ConfigError> {
        let document = parse_document(text, path)?;
        RuntimeConfig::from_document(document.as_table(), Source { text: strip_bom(text), path })
    }

    /// The config a parsed document describes, checked key by key and then as a whole; errors
    /// point at the lines of `source.text` when the document has spans.
    fn from_document(
        root: &toml_edit::Table,
        source: Source,
    ) -> Result<RuntimeConfig, ConfigError> {
        let config = check::read_document(root, source)?;
        config.validate().map_err(|error| {
            let line =
                error.key.as_deref().and_then(|key| check::line_of_key(root, source.text, key));
            ConfigError { path: source.path.to_path_buf(), line, ..error }
        })?;
        Ok(config)
    }

    /// Checks what the per-key checks cannot: that the coders build and the default coder
    /// exists, and that the backoff range is ordered. (Errors carry an empty path.)
    pub fn validate(&self) -> Result<(), ConfigError> {
        let nowhere = Path::new("");
        match self.check_coder(&self.coder) {
            Ok(()) => {}
            Err(CoderNameError::Config(error)) => return Err(check::coder_error(nowhere, &error)),
            Err(CoderNameError::Unknown(unknown)) => {
                return Err(ConfigError::new(
                    nowhere,
                    ConfigErrorKind::Invalid,
                    format!("coder = {:?}: {unknown}", self.coder),
                )
                .key("coder")
                .hint(UNKNOWN_CODER_HINT));
            }
        }
        if Isolation::parse(&self.isolation).is_none() {
            return Err(ConfigError::new(
                nowhere,
                ConfigErrorKind::Invalid,
                format!(
                    "isolation = {:?}: expected one of {}",
                    self.isolation,
                    Isolation::NAMES.join(", ")
                ),
            )
            .key("isolation"));
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

    /// This config with the secret coder and account `env` values replaced by `<redacted>`
    /// ([`shown_env_value`]), the names kept: what `fleet config show` prints.
    pub fn with_env_values_masked(&self) -> RuntimeConfig {
        let mut shown = self.clone();
        for coder in shown.coders.values_mut() {
            let accounts = coder.accounts.iter_mut().map(|account| &mut account.env);
            for env in std::iter::once(&mut coder.env).chain(accounts) {
                for (name, value) in env.iter_mut() {
                    *value = shown_env_value(name, value);
                }
            }
        }
        // A webhook's path is often its secret (Slack's, Discord's): the host stays.
        shown.notify.webhook = notify::shown_address(&shown.notify.webhook);
        shown
    }

    /// The redactor for what is written about the runs of this config: token shapes, and the
    /// values of the secret-looking variables of this process's environment (which every agent
    /// inherits) and of those the `[coders.*]` tables and their accounts set (an account's API
    /// key is in no process's environment but its agents'). Built once per load of the file
    /// ([`ConfigWatcher::redactor`]): it reads the whole environment.
    pub fn redactor(&self) -> Redactor {
        let vars = crate::env::all();
        let inherited = vars.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        Redactor::from_env(inherited.chain(self.configured_env()))
    }

    /// Every variable the `[coders.*]` tables and their accounts set, for redaction: the
    /// values of the secret-looking ones must never reach a file or a comment.
    pub fn configured_env(&self) -> impl Iterator<Item = (&str, &str)> {
        self.coders.values().flat_map(|coder| {
            let accounts = coder.accounts.iter().flat_map(|account| account.env.iter());
            coder.env.iter().chain(accounts).map(|(k, v)| (k.as_str(), v.as_str()))
        })
    }

    /// The accounts `coder`'s attempts rotate over, in the order the file lists them (empty:
    /// the coder runs with its own environment only).
    pub fn accounts(&self, coder: &str) -> &[Account] {
        self.coders.get(coder).map_or(&[], |table| table.accounts.as_slice())
    }

    /// `coder`'s account called `name`.
    pub fn account(&self, coder: &str, name: &str) -> Option<&Account> {
        self.accounts(coder).iter().find(|account| account.name == name)
    }

    /// The coders: built-ins adjusted by, plus those defined in, the `[coders.*]` tables.
    pub fn registry(&self) -> Result<Registry, CoderConfigError> {
        Registry::from_config(&self.coders)
    }

    /// The one check of a coder name, wherever it is given (`coder = …` here, `fleet create
    /// --coder`, `fleet update --coder`): a built-in, or a coder this config defines.
    pub fn check_coder(&self, name: &str) -> Result<(), CoderNameError> {
        let registry = self.registry().map_err(CoderNameError::Config)?;
        registry.get(name).map(drop).map_err(CoderNameError::Unknown)
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

    /// The isolation in force (`isolation`, checked by [`RuntimeConfig::validate`]).
    pub fn isolation(&self) -> Isolation {
        Isolation::parse(&self.isolation).unwrap_or(Isolation::Auto)
    }

    /// The price of `model` from the `[prices.*]` tables, if it has one.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.prices.get(model).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RuntimeConfig, ConfigError> {
        RuntimeConfig::parse(text, Path::new("runtime.toml"))
    }

    #[test]
    fn every_key_reads_back_its_default() {
        for key in KEYS {
            let parsed = parse(&format!("{} = {}", key.name, key.default_value())).unwrap();
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
            "runtime.toml:3: unknown key \"max_concurent\" (did you mean \"max_concurrent\"?)"
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
