//! The registry: every coder by name — the built-ins, adjusted or defined by `[coders.NAME]`
//! tables of `runtime.toml` ([`CoderConfig`]).
//!
//! [`Registry::from_config`] checks every table completely (known keys only, templates with
//! known placeholders, built-in-only and custom-only keys where they belong), so a coder that
//! is in the registry always spawns; mistakes surface when the config loads, naming the table
//! and the key.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::account::Account;
use super::agy::AgyCoder;
use super::claude::{self, ClaudeCoder};
use super::codex::CodexCoder;
use super::custom::{ConfiguredCoder, Template};
use super::exec::ExecCoder;
use super::gemini::GeminiCoder;
use super::opencode::OpencodeCoder;
use super::{BuiltinSettings, Coder, ContextLimits, EventParser, LinesParser};

/// The coders fleet knows without configuration.
pub const BUILTIN_CODERS: [&str; 6] = ["claude", "codex", "gemini", "agy", "opencode", "exec"];

/// Which parser reads a config-defined coder's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventFormat {
    /// Claude Code stream-json.
    Claude,
    /// Codex `exec --json`.
    Codex,
    /// Gemini CLI `--output-format stream-json`.
    Gemini,
    /// opencode `run --format json`.
    Opencode,
    /// agy: JSON lines or plain text.
    Agy,
    /// Plain text: each line an output event.
    Lines,
}

impl EventFormat {
    /// The names `events = "…"` accepts.
    pub const NAMES: [&'static str; 6] = ["claude", "codex", "gemini", "opencode", "agy", "lines"];

    pub fn parse(name: &str) -> Option<EventFormat> {
        Some(match name {
            "claude" => EventFormat::Claude,
            "codex" => EventFormat::Codex,
            "gemini" => EventFormat::Gemini,
            "opencode" => EventFormat::Opencode,
            "agy" => EventFormat::Agy,
            "lines" => EventFormat::Lines,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventFormat::Claude => "claude",
            EventFormat::Codex => "codex",
            EventFormat::Gemini => "gemini",
            EventFormat::Opencode => "opencode",
            EventFormat::Agy => "agy",
            EventFormat::Lines => "lines",
        }
    }

    /// A fresh parser for this format.
    pub fn parser(self) -> Box<dyn EventParser> {
        match self {
            EventFormat::Claude => Box::new(super::claude::ClaudeParser::default()),
            EventFormat::Codex => Box::new(super::codex::CodexParser::default()),
            EventFormat::Gemini => Box::new(super::gemini::GeminiParser::default()),
            EventFormat::Opencode => Box::new(super::opencode::OpencodeParser::default()),
            EventFormat::Agy => Box::new(super::agy::AgyParser),
            EventFormat::Lines => Box::new(LinesParser),
        }
    }

    /// The context window a CLI speaking this format usually has (none for plain text).
    pub fn known_context_limit(self, model: &str) -> Option<u64> {
        match self {
            EventFormat::Claude => Some(claude::known_context_limit(model)),
            EventFormat::Codex => Some(super::codex::DEFAULT_CONTEXT_LIMIT),
            EventFormat::Gemini => Some(super::gemini::DEFAULT_CONTEXT_LIMIT),
            EventFormat::Opencode => Some(super::opencode::DEFAULT_CONTEXT_LIMIT),
            EventFormat::Agy => Some(super::agy::DEFAULT_CONTEXT_LIMIT),
            EventFormat::Lines => None,
        }
    }
}

/// One `[coders.NAME]` table of `runtime.toml`. For a built-in (`claude`, `codex`, `gemini`,
/// `agy`, `opencode`, `exec`) it adjusts the coder; any other name defines a new coder, which needs
/// `argv`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CoderConfig {
    /// Built-ins: the CLI binary, a name on PATH or a path (a fake CLI in tests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Built-ins except exec: the flags that let the CLI run tools unattended, replacing the
    /// default ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_args: Option<Vec<String>>,
    /// Config-defined coders: the command line, program first, with `{placeholders}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// Config-defined coders: how to read stdout (default `lines`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<EventFormat>,
    /// Config-defined coders: exit 0 by itself means done (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_on_exit_zero: Option<bool>,
    /// Environment for the agent, over the coder's own (values may use placeholders in
    /// config-defined coders).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The model used when neither task nor config names one ("" lets the CLI choose).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The context window for every model of this coder, in tokens (0 = no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_limit: Option<u64>,
    /// Context windows of particular models, over `context_limit`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub model_context_limits: BTreeMap<String, u64>,
    /// `[[coders.NAME.accounts]]`: logins or keys the coder's attempts rotate over (none: the
    /// coder runs with its own environment only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<Account>,
}

impl CoderConfig {
    /// Every key a `[coders.NAME]` table may hold.
    pub const KEYS: [&'static str; 10] = [
        "program",
        "permission_args",
        "argv",
        "events",
        "close_on_exit_zero",
        "env",
        "default_model",
        "context_limit",
        "model_context_limits",
        "accounts",
    ];

    fn limits(&self) -> ContextLimits {
        ContextLimits {
            all_models: self.context_limit,
            per_model: self.model_context_limits.clone(),
        }
    }
}

/// A `[coders.NAME]` table that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("coders.{coder}{}: {message}", key.map(|k| format!(".{k}")).unwrap_or_default())]
pub struct CoderConfigError {
    /// The table's name.
    pub coder: String,
    /// The key at fault, if one is.
    pub key: Option<&'static str>,
    pub message: String,
}

/// A coder name the registry does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct UnknownCoder {
    pub name: String,
    /// Every name it does have, sorted.
    pub available: Vec<String>,
}

impl fmt::Display for UnknownCoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown coder {:?}", self.name)?;
        if let Some(close) = closest_word(&self.name, self.available.iter().map(String::as_str)) {
            write!(f, " (did you mean {close:?}?)")?;
        }
        write!(f, "; available: {}", self.available.join(", "))
    }
}

/// What `fleet config show` lists about a coder.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoderInfo {
    pub name: String,
    /// Built in, possibly adjusted by config (false: defined by config).
    pub builtin: bool,
    pub default_model: String,
    /// The context window of the default model (`None`: no limit).
    pub context_limit: Option<u64>,
}

/// The coders available to tasks, by name.
#[derive(Clone)]
pub struct Registry {
    coders: BTreeMap<String, Arc<dyn Coder>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry").field("coders", &self.coders.keys()).finish()
    }
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::builtin()
    }
}

impl Registry {
    /// The built-in coders with their default settings.
    pub fn builtin() -> Registry {
        Registry::from_config(&BTreeMap::new()).expect("the built-in coders need no config")
    }

    /// The built-ins adjusted by, plus the coders defined in, the `[coders.*]` tables.
    pub fn from_config(
        tables: &BTreeMap<String, CoderConfig>,
    ) -> Result<Registry, CoderConfigError> {
        let mut coders: BTreeMap<String, Arc<dyn Coder>> = BTreeMap::new();
        for name in BUILTIN_CODERS {
            let table = tables.get(name).cloned().unwrap_or_default();
            coders.insert(name.to_owned(), builtin_coder(name, &table)?);
        }
        for (name, table) in tables {
            if !is_builtin(name) {
                coders.insert(name.clone(), Arc::new(configured_coder(name, table)?));
            }
        }
        Ok(Registry { coders })
    }

    /// The coder called `name`.
    pub fn get(&self, name: &str) -> Result<Arc<dyn Coder>, UnknownCoder> {
        self.coders.get(name).cloned().ok_or_else(|| UnknownCoder {
            name: name.to_owned(),
            available: self.names().into_iter().map(str::to_owned).collect(),
        })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.coders.contains_key(name)
    }

    /// Every coder name, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.coders.keys().map(String::as_str).collect()
    }

    /// A summary of every coder, sorted by name.
    pub fn list(&self) -> Vec<CoderInfo> {
        self.coders
            .iter()
            .map(|(name, coder)| CoderInfo {
                name: name.clone(),
                builtin: is_builtin(name),
                default_model: coder.default_model().to_owned(),
                context_limit: coder.context_limit(coder.default_model()),
            })
            .collect()
    }
}

/// Whether `name` is a built-in coder.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_CODERS.contains(&name)
}

fn builtin_coder(name: &str, table: &CoderConfig) -> Result<Arc<dyn Coder>, CoderConfigError> {
    let error = |key: &'static str, message: String| CoderConfigError {
        coder: name.to_owned(),
        key: Some(key),
        message,
    };
    let custom_only = |key| {
        error(
            key,
            format!(
                "{key} is for coders fleet does not know; to run {name} another way, define a \
                 new coder such as [coders.my-{name}] with argv = [...] and events = \"{}\"",
                if name == "exec" { "lines" } else { name }
            ),
        )
    };
    if table.argv.is_some() {
        return Err(custom_only("argv"));
    }
    if table.events.is_some() {
        return Err(custom_only("events"));
    }
    if table.close_on_exit_zero.is_some() {
        return Err(custom_only("close_on_exit_zero"));
    }
    if table.program.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(error("program", "must not be empty".to_owned()));
    }
    if name == "exec" && table.permission_args.is_some() {
        return Err(error("permission_args", "exec runs `sh -c` and takes none".to_owned()));
    }
    check_env(name, &table.env)?;
    let settings = BuiltinSettings {
        program: table.program.clone(),
        permission_args: table.permission_args.clone(),
        env: table.env.clone(),
        default_model: table.default_model.clone(),
        limits: table.limits(),
    };
    Ok(match name {
        "claude" => Arc::new(ClaudeCoder::new(settings)),
        "codex" => Arc::new(CodexCoder::new(settings)),
        "gemini" => Arc::new(GeminiCoder::new(settings)),
        "agy" => Arc::new(AgyCoder::new(settings)),
        "opencode" => Arc::new(OpencodeCoder::new(settings)),
        "exec" => Arc::new(ExecCoder::new(settings)),
        other => unreachable!("{other} is listed in BUILTIN_CODERS but not built"),
    })
}

fn configured_coder(name: &str, table: &CoderConfig) -> Result<ConfiguredCoder, CoderConfigError> {
    let error = |key: Option<&'static str>, message: String| CoderConfigError {
        coder: name.to_owned(),
        key,
        message,
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(error(None, "a coder name is letters, digits, '-' and '_'".to_owned()));
    }
    let builtin_only = |key: &'static str| {
        error(
            Some(key),
            format!("{key} applies to built-in coders; put the program and its flags in argv"),
        )
    };
    if table.program.is_some() {
        return Err(builtin_only("program"));
    }
    if table.permission_args.is_some() {
        return Err(builtin_only("permission_args"));
    }
    let Some(argv) = table.argv.as_ref().filter(|argv| !argv.is_empty()) else {
        let mut message = format!(
            "fleet has no built-in coder {name:?}, so this table needs argv = [\"program\", …, \
             \"{{prompt}}\"]"
        );
        if let Some(close) = closest_word(name, BUILTIN_CODERS.into_iter()) {
            message.push_str(&format!(" (or did you mean the built-in {close:?}?)"));
        }
        return Err(error(Some("argv"), message));
    };
    if argv[0].trim().is_empty() {
        return Err(error(Some("argv"), "the first element (the program) is empty".to_owned()));
    }
    let argv = argv
        .iter()
        .map(|part| Template::parse(part))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|message| error(Some("argv"), message))?;
    check_env(name, &table.env)?;
    let env = table
        .env
        .iter()
        .map(|(key, value)| {
            // The message quotes the template; an env value may be a secret, so name it instead.
            let parsed = Template::parse(value)
                .map_err(|message| message.replace(&format!("{value:?}"), &format!("${key}")))?;
            Ok((key.clone(), parsed))
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(|message| error(Some("env"), message))?;
    Ok(ConfiguredCoder {
        name: name.to_owned(),
        argv,
        env,
        events: table.events.unwrap_or(EventFormat::Lines),
        default_model: table.default_model.clone().unwrap_or_default(),
        limits: table.limits(),
        closes_on_exit_zero: table.close_on_exit_zero.unwrap_or(false),
    })
}

fn check_env(coder: &str, env: &BTreeMap<String, String>) -> Result<(), CoderConfigError> {
    for (key, value) in env {
        let bad_name = key.is_empty() || key.contains('=') || key.contains('\0');
        if bad_name || value.contains('\0') {
            return Err(CoderConfigError {
                coder: coder.to_owned(),
                key: Some("env"),
                message: format!("{key:?} is not a usable environment variable"),
            });
        }
    }
    Ok(())
}

/// The candidate closest to `word`, if one is close enough to be a likely typo.
pub(crate) fn closest_word<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(toml: &str) -> BTreeMap<String, CoderConfig> {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn unknown_coders_are_named_with_a_suggestion() {
        let error = Registry::builtin().get("cladue").err().unwrap();
        assert_eq!(
            error.to_string(),
            "unknown coder \"cladue\" (did you mean \"claude\"?); available: agy, claude, codex, exec, gemini, opencode"
        );
    }

    #[test]
    fn a_table_without_argv_for_an_unknown_name_is_refused() {
        let error = Registry::from_config(&table("[cladue]\ncontext_limit = 5\n")).err().unwrap();
        assert_eq!(error.key, Some("argv"));
        assert!(error.to_string().contains("did you mean the built-in \"claude\""), "{error}");
    }

    #[test]
    fn built_ins_refuse_custom_only_keys() {
        let error = Registry::from_config(&table("[claude]\nargv = [\"x\"]\n")).err().unwrap();
        assert_eq!(error.to_string().split(':').next(), Some("coders.claude.argv"));
        let error =
            Registry::from_config(&table("[mybot]\nargv = [\"x\", \"{promt}\"]\n")).err().unwrap();
        assert!(error.to_string().contains("unknown placeholder {promt}"), "{error}");
    }

    #[test]
    fn a_bad_env_template_is_reported_without_its_value() {
        let config = "[mybot]\nargv = [\"x\"]\nenv = { API_TOKEN = \"s3cret{oops\" }\n";
        let error = Registry::from_config(&table(config)).err().unwrap().to_string();
        assert!(error.contains("unclosed { in $API_TOKEN"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
    }

    #[test]
    fn typos_are_caught_by_distance() {
        assert_eq!(
            closest_word("max_concurent", ["max_concurrent", "model"].into_iter()),
            Some("max_concurrent")
        );
        assert_eq!(closest_word("zzz", ["claude"].into_iter()), None);
    }
}
