//! Writing `runtime.toml`: `fleet config set|unset`, keeping the user's comments and layout.
//!
//! Edits go through `toml_edit`: the file is parsed once into a document, changed in memory,
//! read into a [`RuntimeConfig`] and validated as a whole before anything is written, then
//! written atomically (temporary file + rename). A file created this way starts with a comment
//! header ([`header`]) generated from the key table. A file that holds coder `env` values
//! (often API keys) is written with mode 0600, as is one the user had already made private;
//! the values are never echoed back (`<redacted>`).

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{Item, TableLike};

use super::RuntimeConfig;
use super::check::Source;
use super::keys::{KEYS, KeyInfo, KeyKind};
use crate::coders::CoderConfig;
use crate::redact::REDACTED;

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
    for key in KEYS {
        let assignment = format!("{} = {}", key.name, key.default_value());
        text.push_str(&format!("#   {assignment:<38} {}\n", key.doc));
    }
    text.push_str(
        "#\n\
         # Coders: a [coders.NAME] table adjusts a built-in (claude, codex, gemini, agy,\n\
         # opencode, exec) or defines a new coder. For a built-in:\n\
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
         # {artifact_dir} {title} {description}.\n\
         # Accounts: a coder's attempts rotate over its accounts, each a name and the variables\n\
         # that select it (set over the coder's env); a rate limit pauses only that account:\n\
         #   [[coders.claude.accounts]]\n\
         #   name = \"work\"\n\
         #   env = { CLAUDE_CONFIG_DIR = \"/home/me/.claude-work\" }\n",
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
    /// The config now in effect; `None` when the file still has problems (an unset that
    /// cleaned up some of them), which `problems` lists.
    pub config: Option<RuntimeConfig>,
    /// What is still wrong with the file after an unset (see [`unset_keys`]); empty after a
    /// set, which writes only a valid file.
    #[serde(skip)]
    pub problems: Vec<super::ConfigError>,
}

/// A `key=value` argument that cannot be applied, or a result that would be invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SetError {
    pub message: String,
    pub hint: Option<String>,
}

impl SetError {
    pub(super) fn new(message: impl Into<String>) -> SetError {
        SetError { message: message.into(), hint: None }
    }

    pub(super) fn hint(mut self, hint: impl Into<String>) -> SetError {
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
    if let Some(info) = KeyInfo::find(key) {
        return Ok(Target::Top(info));
    }
    let mut parts = key.splitn(4, '.');
    let first = parts.next().unwrap_or("");
    if first != "coders" {
        let workspace = crate::settings::SETTINGS.iter().map(|s| s.name);
        let known: Vec<&str> = KEYS
            .iter()
            .map(|k| k.name)
            .chain(std::iter::once("coders.NAME.KEY"))
            .chain(workspace.clone())
            .collect();
        let mut message = format!("unknown key {key:?}");
        if let Some(close) = crate::coders::closest_word(key, known.iter().copied()) {
            let lives = if crate::settings::Setting::find(close).is_some() {
                "a workspace setting"
            } else {
                "in runtime.toml"
            };
            message.push_str(&format!(" (did you mean {close:?}, {lives}?)"));
        }
        return Err(SetError::new(message).hint(format!(
            "runtime.toml keys: {}, and coders.NAME.KEY for a coder; workspace settings (in the store): {}",
            KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", "),
            workspace.collect::<Vec<_>>().join(", ")
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

/// The value of `key` in `config`, as TOML (`3`, `"claude"`, a coder's table); an unknown key
/// is the same error as for `set`.
pub fn value_of(config: &RuntimeConfig, key: &str) -> Result<String, SetError> {
    let coder = |name: &str| {
        config.coders.get(name).ok_or_else(|| {
            SetError::new(format!("no coder {name:?} is configured in runtime.toml"))
                .hint("fleet config show lists the coders")
        })
    };
    let as_toml = |value: toml::Value| match value {
        toml::Value::String(text) => text,
        other => other.to_string(),
    };
    let field_of = |name: &str, field: &str| -> Result<toml::Value, SetError> {
        let table = toml::Value::try_from(coder(name)?)
            .map_err(|e| SetError::new(format!("coders.{name}: {e}")))?;
        Ok(table.get(field).cloned().unwrap_or(toml::Value::String(String::new())))
    };
    Ok(match parse_target(key)? {
        Target::Top(info) => match info.value(config) {
            super::KeyValue::Text(text) => text,
            other => other.to_string(),
        },
        Target::CoderTable(name) => toml::to_string(coder(&name)?).unwrap_or_default(),
        Target::CoderField(name, field) => as_toml(field_of(&name, field)?),
        Target::CoderEntry(name, field, entry) => as_toml(
            field_of(&name, field)?
                .get(&entry)
                .cloned()
                .unwrap_or(toml::Value::String(String::new())),
        ),
    })
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
    edit(path, Check::Valid, |document| {
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
        Ok((set, Vec::new()))
    })
}

/// Removes keys from the file at `path` (they go back to their defaults); `coders.NAME`
/// removes a whole coder table. Any key written in the file may be removed, known or not, so a
/// file with unknown keys (a typo, a key of the Python fleet) can be cleaned up; keys not in
/// the file are ignored. The result must be no worse than the file was: a removal that makes
/// the file invalid in a new way (the default coder's table) writes nothing, while problems
/// the file already had may remain (they come back in [`ConfigChange::problems`]).
pub fn unset_keys(path: &Path, keys: &[String]) -> Result<ConfigChange, SetError> {
    let keys: Vec<String> = keys.iter().map(|key| key.trim().to_owned()).collect();
    edit(path, Check::NoWorse, |document| {
        let mut unset = Vec::new();
        for key in &keys {
            let removed = match parse_target(key) {
                Ok(target) => remove_target(document, &target),
                Err(_) if written_in(document, key) => remove_dotted(document, key),
                Err(error) => return Err(error),
            };
            if removed {
                unset.push(key.clone());
            }
        }
        Ok((Vec::new(), unset))
    })
}

/// Raises the `[budget]` cap of `scope` in the file at `path` by `amount`, keeping the file's
/// comments and layout: `task` (`usd_per_task`), `tokens` (`tokens_per_task`), `day`
/// (`usd_per_day`), `coder:NAME` or `account:CODER@ACCOUNT` (their `usd_per_day`). A cap that
/// is not set cannot be raised (there is no cap). Returns the change (the key and its new
/// value in `set`).
pub fn raise_budget(path: &Path, scope: &str, amount: f64) -> Result<ConfigChange, SetError> {
    if amount.is_nan() || amount <= 0.0 {
        return Err(SetError::new(format!("cannot raise a budget by {amount}"))
            .hint("give a positive amount: fleet budget raise day 5"));
    }
    let keys = budget_keys(scope)?;
    let shown = keys.join(".");
    edit(path, Check::Valid, |document| {
        let mut item: &mut Item = document.as_item_mut();
        for key in &keys {
            item = match item.as_table_like_mut().and_then(|table| table.get_mut(key)) {
                Some(inner) => inner,
                None => {
                    return Err(SetError::new(format!(
                        "{shown} is not set, so there is no cap to raise"
                    ))
                    .hint(format!("set it: fleet config edit, or add {shown} to runtime.toml")));
                }
            };
        }
        let old = item.as_value().and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
        let Some(old) = old else {
            return Err(SetError::new(format!("{shown} is not a number")));
        };
        let new: toml_edit::Value = if keys.last().is_some_and(|k| k.starts_with("tokens")) {
            ((old + amount).round() as i64).into()
        } else {
            (((old + amount) * 100.0).round() / 100.0).into()
        };
        let mut new = new;
        if let Some(value) = item.as_value() {
            *new.decor_mut() = value.decor().clone();
        }
        let json = toml_to_json(&new);
        *item = Item::Value(new);
        Ok((vec![(shown.clone(), json)], Vec::new()))
    })
}

/// The keys under the document's root of a `fleet budget raise` scope.
fn budget_keys(scope: &str) -> Result<Vec<String>, SetError> {
    let keys: Vec<&str> = match scope.split_once(':') {
        None if scope == "task" => vec!["usd_per_task"],
        None if scope == "tokens" => vec!["tokens_per_task"],
        None if scope == "day" || scope == "fleet" => vec!["usd_per_day"],
        Some(("coder", name)) if !name.is_empty() => vec!["coders", name, "usd_per_day"],
        Some(("account", name)) if name.contains('@') => vec!["accounts", name, "usd_per_day"],
        _ => {
            return Err(SetError::new(format!("no budget scope {scope:?}"))
                .hint("the scopes are task, tokens, day, coder:NAME and account:CODER@ACCOUNT"));
        }
    };
    Ok(std::iter::once("budget").chain(keys).map(str::to_owned).collect())
}

/// Removes what `target` addresses; whether it was there.
fn remove_target(document: &mut toml_edit::DocumentMut, target: &Target) -> bool {
    match target {
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
    }
}

/// Whether the dotted `key` (`telegram_chat_id`, `coders.claude.permision_args`) is written in
/// the document.
fn written_in(document: &toml_edit::DocumentMut, key: &str) -> bool {
    let mut table: &dyn TableLike = document.as_table();
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        let Some(item) = table.get(part) else { return false };
        if parts.peek().is_none() {
            return true;
        }
        let Some(inner) = item.as_table_like() else { return false };
        table = inner;
    }
    false
}

/// Removes the dotted `key` from the document; whether it was there.
fn remove_dotted(document: &mut toml_edit::DocumentMut, key: &str) -> bool {
    let (parents, last) = match key.rsplit_once('.') {
        Some((parents, last)) => (Some(parents), last),
        None => (None, key),
    };
    let mut table: &mut dyn TableLike = document.as_table_mut();
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        let Some(inner) = table.get_mut(part).and_then(Item::as_table_like_mut) else {
            return false;
        };
        table = inner;
    }
    table.remove(last).is_some()
}

/// The value of a set key as reported back: coder and account `env` values masked by their
/// names ([`super::shown_env_value`]).
fn shown_value(target: &Target, value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    let shown = |name: &str, value: &Json| match value {
        Json::String(text) => Json::from(super::shown_env_value(name, text)),
        _ => Json::from(REDACTED),
    };
    let masked = |env: serde_json::Map<String, Json>| {
        Json::Object(
            env.into_iter()
                .map(|(name, value)| {
                    let value = shown(&name, &value);
                    (name, value)
                })
                .collect(),
        )
    };
    match (target, value) {
        (Target::CoderField(_, "env"), Json::Object(env)) => masked(env),
        (Target::CoderEntry(_, "env", name), value) => shown(name, &value),
        (Target::CoderField(_, "env"), _) => Json::from(REDACTED),
        (Target::CoderField(_, "accounts"), Json::Array(accounts)) => Json::Array(
            accounts
                .into_iter()
                .map(|account| match account {
                    Json::Object(mut fields) => {
                        if let Some(Json::Object(env)) = fields.remove("env") {
                            fields.insert("env".to_owned(), masked(env));
                        }
                        Json::Object(fields)
                    }
                    other => other,
                })
                .collect(),
        ),
        (_, value) => value,
    }
}

type Edits = (Vec<(String, serde_json::Value)>, Vec<String>);

/// How an edited document is checked before it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// It must be a valid config (`set`).
    Valid,
    /// It must have no problem the file did not have before (`unset`).
    NoWorse,
}

/// Reads the file (or starts a new one), applies `change`, checks the result, writes it
/// atomically.
fn edit(
    path: &Path,
    check: Check,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> Result<Edits, SetError>,
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
    let (set, unset) = change(&mut document)?;
    let (config, problems) = match (checked_edit(&document, path), check) {
        (Ok(config), _) => (Some(config), Vec::new()),
        (Err(error), Check::Valid) => return Err(error),
        (Err(_), Check::NoWorse) => {
            let after = RuntimeConfig::problems(&document.to_string(), path);
            let before = RuntimeConfig::problems(&text, path);
            let new = after.iter().find(|problem| {
                !before.iter().any(|old| old.kind == problem.kind && old.message == problem.message)
            });
            if let Some(new) = new {
                return Err(not_saved(new, path));
            }
            (None, after)
        }
    };
    let mut new_text = document.to_string();
    if created {
        new_text = format!("{}\n{new_text}", header());
    }
    write_file(path, &new_text, has_env_values(&document))?;
    Ok(ConfigChange { path: path.to_path_buf(), created, set, unset, config, problems })
}

/// Writes the file atomically, creating its directory; private (0600) when it holds env values
/// or the user had made it private already.
pub(super) fn write_file(path: &Path, text: &str, holds_env_values: bool) -> Result<(), SetError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| SetError::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    let written = if holds_env_values || crate::fsutil::is_private(path) {
        crate::fsutil::write_atomic_private(path, text.as_bytes())
    } else {
        crate::fsutil::write_atomic(path, text.as_bytes())
    };
    written.map_err(|e| SetError::new(format!("cannot write {}: {e}", path.display())))
}

/// The config an edited document describes, checked as a load checks it (the header a new file
/// gets is comments only, so it changes nothing).
pub(super) fn checked_edit(
    document: &toml_edit::DocumentMut,
    path: &Path,
) -> Result<RuntimeConfig, SetError> {
    // An edited document has no spans, so errors carry no line: a line number of text never
    // written would only confuse.
    let source = Source { text: "", path };
    RuntimeConfig::from_document(document.as_table(), source)
        .map_err(|error| not_saved(&error, path))
}

/// The refusal of an edit that would leave `problem` in the file at `path`.
fn not_saved(problem: &super::ConfigError, path: &Path) -> SetError {
    let unchanged = format!("{} is unchanged", path.display());
    let hint = match &problem.hint {
        Some(hint) => format!("{hint}; {unchanged}"),
        None => unchanged,
    };
    SetError::new(format!("not saved: {}", problem.message)).hint(hint)
}

/// Whether any `[coders.*]` table of the document sets `env` values (often API keys) or lists
/// accounts (whose env values are keys as often), read from the document itself since it may
/// not be a valid config yet.
pub(super) fn has_env_values(document: &toml_edit::DocumentMut) -> bool {
    let coders = document.get("coders").and_then(Item::as_table_like);
    coders.is_some_and(|coders| {
        coders.iter().any(|(_, table)| {
            let table = table.as_table_like();
            let env = table.and_then(|t| t.get("env")).and_then(Item::as_table_like);
            let accounts = table.and_then(|t| t.get("accounts"));
            env.is_some_and(|env| !env.is_empty()) || accounts.is_some()
        })
    })
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

pub(super) fn toml_to_json(value: &toml_edit::Value) -> serde_json::Value {
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
