//! Reading a parsed `runtime.toml` into a [`RuntimeConfig`], key by key, strictly.
//!
//! In: the root table of a `toml_edit` document (parsed once by the caller) and the text it
//! came from, for line numbers (empty for a document edited in memory, which has no spans).
//! Out: the typed config, or a [`ConfigError`] naming the key, its line and the fix. Top-level
//! keys are checked against their [`KeyKind`] and set through the [`KEYS`] table;
//! `[coders.*]` tables are checked field by field, then read as [`CoderConfig`]s. Nothing here
//! reads or writes files.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml_edit::{Item, TableLike};

use super::keys::{KEYS, KeyInfo, KeyKind, KeyValue, Legacy, RuntimeConfig, TABLES};
use super::prices::PRICE_KEYS;
use super::{ConfigError, ConfigErrorKind, Price};
use crate::coders::account::{self, Account};
use crate::coders::{CoderConfig, CoderConfigError, EventFormat};

/// Where a document came from: the file (labels errors) and its text (gives line numbers).
#[derive(Clone, Copy)]
pub(super) struct Source<'a> {
    pub text: &'a str,
    pub path: &'a Path,
}

/// Checks every key of `root` and builds the config it describes over the defaults. Checks
/// that need the whole config (coders, backoff order) are [`RuntimeConfig::validate`]'s.
pub(super) fn read_document(
    root: &toml_edit::Table,
    source: Source,
) -> Result<RuntimeConfig, ConfigError> {
    let mut config = RuntimeConfig::default();
    for (name, item) in root.iter() {
        let (key, _) = root.get_key_value(name).expect("iterated keys exist");
        if name == "coders" {
            config.coders = read_coders(source, key, item)?;
            continue;
        }
        if name == "prices" {
            config.prices = read_prices(source, key, item)?;
            continue;
        }
        if name == "merge" {
            let keys = &super::merge::MERGE_KEYS;
            config.merge = read_table(source, (key, item), keys, super::MergeConfig::problem)?;
            continue;
        }
        if name == "notify" {
            let keys = &super::notify::NOTIFY_KEYS;
            config.notify = read_table(source, (key, item), keys, super::NotifyConfig::problem)?;
            continue;
        }
        if name == "budget" {
            let keys = &super::budget::BUDGET_KEYS;
            config.budget = read_table(source, (key, item), keys, super::BudgetConfig::problem)?;
            continue;
        }
        if name == "canary" {
            let keys = &super::canary::CANARY_KEYS;
            config.canary = read_table(source, (key, item), keys, super::CanaryConfig::problem)?;
            continue;
        }
        let Some(info) = KeyInfo::find(name) else {
            return Err(unknown_top_level_key(source, name, key, item));
        };
        let value = check_value(source, name, info.kind, key, item)?;
        info.set(&mut config, value).map_err(|value| {
            ConfigError::new(
                source.path,
                ConfigErrorKind::Invalid,
                format!("{name} cannot hold {value}"),
            )
            .at(value_line(source, key, item))
            .key(name)
        })?;
    }
    Ok(config)
}

/// The error of a top-level key fleet does not know: a key of the Python fleet (renamed, or
/// gone and why), a per-coder key at the top, or a typo.
fn unknown_top_level_key(
    source: Source,
    name: &str,
    key: &toml_edit::Key,
    item: &Item,
) -> ConfigError {
    let line = key_line(source, key, item);
    let legacy = |message: String, hint: String| {
        ConfigError::new(source.path, ConfigErrorKind::UnknownKey, message)
            .at(line)
            .key(name)
            .hint(hint)
    };
    match Legacy::of(name) {
        Some(Legacy::Renamed(new)) => {
            return legacy(
                format!("unknown key {name:?}: the Python fleet's name for {new}"),
                format!("rename it to {new}"),
            );
        }
        Some(Legacy::Scaled { to, factor, unit }) => {
            return legacy(
                format!("unknown key {name:?}: the Python fleet's {to} in {unit}"),
                format!(
                    "set {to} to it times {factor} (`fleet import {}` does it)",
                    source.path.display()
                ),
            );
        }
        Some(Legacy::Dropped(why)) => {
            return legacy(
                format!("unknown key {name:?}: the Python fleet's, not used here ({why})"),
                format!("remove it with `fleet config unset {name}`"),
            );
        }
        None => {}
    }
    let hint = if CoderConfig::KEYS.contains(&name) {
        format!("{name} is a per-coder key: put it in a [coders.NAME] table")
    } else {
        "remove it or fix its spelling; `fleet config show` lists every key".to_owned()
    };
    let top_level: Vec<&str> = KEYS.iter().map(|k| k.name).chain(TABLES).collect();
    unknown(source, name, name, &top_level, line, hint)
}

/// The error of a key of a `[coders.NAME]` table that no coder takes.
fn unknown_coder_key(
    source: Source,
    coder: &str,
    field: &str,
    key: &toml_edit::Key,
    value: &Item,
) -> ConfigError {
    unknown(
        source,
        &format!("coders.{coder}.{field}"),
        field,
        &CoderConfig::KEYS,
        key_line(source, key, value),
        format!("a [coders.NAME] table takes: {}", CoderConfig::KEYS.join(", ")),
    )
}

/// Every problem of a document at once, in file order: each unknown key (top-level, and in
/// `[coders.*]` tables), then the first other problem of what is left.
pub(super) fn problems(root: &toml_edit::Table, source: Source) -> Vec<ConfigError> {
    let mut found = Vec::new();
    for (name, item) in root.iter() {
        let (key, _) = root.get_key_value(name).expect("iterated keys exist");
        if name == "coders" {
            found.extend(unknown_coder_keys(source, item));
        } else if !is_top_level_key(name) {
            found.push(unknown_top_level_key(source, name, key, item));
        }
    }
    found.sort_by_key(|error| error.line);
    if let Err(error) = RuntimeConfig::from_document(&without_unknown_keys(root), source) {
        found.push(error);
    }
    found
}

fn is_top_level_key(name: &str) -> bool {
    TABLES.contains(&name) || KeyInfo::find(name).is_some()
}

/// `root` without its unknown keys (top-level, and in `[coders.*]` tables): what the file
/// means once they are removed.
pub(super) fn without_unknown_keys(root: &toml_edit::Table) -> toml_edit::Table {
    let mut known = root.clone();
    known.retain(|name, _| is_top_level_key(name));
    if let Some(coders) = known.get_mut("coders").and_then(Item::as_table_like_mut) {
        for (_, table) in coders.iter_mut() {
            if let Some(table) = table.as_table_like_mut() {
                let unknown: Vec<String> = table
                    .iter()
                    .map(|(field, _)| field.to_owned())
                    .filter(|field| !CoderConfig::KEYS.contains(&field.as_str()))
                    .collect();
                for field in unknown {
                    table.remove(&field);
                }
            }
        }
    }
    known
}

/// The unknown keys of the `[coders.*]` tables in `coders` (nothing when it is not a table of
/// tables: that is a type error, reported by the checks).
fn unknown_coder_keys(source: Source, coders: &Item) -> Vec<ConfigError> {
    let Some(coders) = coders.as_table_like() else { return Vec::new() };
    let mut found = Vec::new();
    for (name, table) in coders.iter() {
        let Some(table) = table.as_table_like() else { continue };
        for (field, value) in table.iter() {
            if !CoderConfig::KEYS.contains(&field) {
                let (field_key, _) = table.get_key_value(field).expect("iterated keys exist");
                found.push(unknown_coder_key(source, name, field, field_key, value));
            }
        }
    }
    found
}

/// The checked value of a top-level key of `kind`.
fn check_value(
    source: Source,
    dotted: &str,
    kind: KeyKind,
    key: &toml_edit::Key,
    item: &Item,
) -> Result<KeyValue, ConfigError> {
    let line = value_line(source, key, item);
    match kind {
        KeyKind::Text => match item.as_str() {
            Some(text) => Ok(KeyValue::Text(text.to_owned())),
            None => Err(wrong_type(source, dotted, "a string", item, line)),
        },
        KeyKind::Integer { min, max } => {
            let Some(value) = item.as_integer() else {
                let expected = format!("an integer from {min} to {max}");
                return Err(wrong_type(source, dotted, &expected, item, line));
            };
            if !(min..=max).contains(&value) {
                return Err(ConfigError::new(
                    source.path,
                    ConfigErrorKind::Invalid,
                    format!("{dotted} must be from {min} to {max}, found {value}"),
                )
                .at(line)
                .key(dotted));
            }
            Ok(KeyValue::Integer(value))
        }
    }
}

/// Checks the `[coders.*]` tables, then reads them.
fn read_coders(
    source: Source,
    key: &toml_edit::Key,
    item: &Item,
) -> Result<BTreeMap<String, CoderConfig>, ConfigError> {
    check_coders(source, key, item)?;
    let value = item.clone().into_value().map_err(|item| {
        wrong_type(source, "coders", "a table", &item, value_line(source, key, &item))
    })?;
    // The checks above cover every key and type, so this is a backstop.
    BTreeMap::<String, CoderConfig>::deserialize(value.into_deserializer()).map_err(|error| {
        ConfigError::new(source.path, ConfigErrorKind::Type, error.message().trim().to_owned())
            .at(value_line(source, key, item))
            .key("coders")
    })
}

/// Reads the `[prices."MODEL"]` tables: each holds `input`, `output` and optionally
/// `cached_input`, non-negative numbers of dollars per million tokens.
fn read_prices(
    source: Source,
    key: &toml_edit::Key,
    item: &Item,
) -> Result<BTreeMap<String, Price>, ConfigError> {
    let line = value_line(source, key, item);
    let invalid = |message: String| {
        ConfigError::new(source.path, ConfigErrorKind::Invalid, message)
            .at(line)
            .key("prices")
            .hint(format!(
                "write [prices.\"MODEL\"] tables with {} in dollars per million tokens",
                PRICE_KEYS.join(", ")
            ))
    };
    let value = item
        .clone()
        .into_value()
        .map_err(|item| wrong_type(source, "prices", "a table", &item, line))?;
    let prices = BTreeMap::<String, Price>::deserialize(value.into_deserializer())
        .map_err(|error| invalid(format!("prices: {}", error.message().trim())))?;
    match prices.iter().find(|(_, price)| !price.is_valid()) {
        Some((model, _)) => Err(invalid(format!("prices.{model:?}: a price is negative"))),
        None => Ok(prices),
    }
}

/// Reads a table of settings (`[merge]`, `[notify]`, `[budget]`, `[canary]`) as `T`, refused with the words of
/// `problem` when its values do not go together.
fn read_table<T: serde::de::DeserializeOwned>(
    source: Source,
    (key, item): (&toml_edit::Key, &Item),
    keys: &[&str],
    problem: fn(&T) -> Option<String>,
) -> Result<T, ConfigError> {
    let name = key.get();
    let line = value_line(source, key, item);
    let invalid = |message: String| {
        ConfigError::new(source.path, ConfigErrorKind::Invalid, message)
            .at(line)
            .key(name)
            .hint(format!("a [{name}] table takes: {}", keys.join(", ")))
    };
    let value = item
        .clone()
        .into_value()
        .map_err(|item| wrong_type(source, name, "a table", &item, line))?;
    let table = T::deserialize(value.into_deserializer())
        .map_err(|error| invalid(format!("{name}: {}", error.message().trim())))?;
    match problem(&table) {
        Some(words) => Err(invalid(words)),
        None => Ok(table),
    }
}

fn check_coders(source: Source, key: &toml_edit::Key, item: &Item) -> Result<(), ConfigError> {
    let Some(coders) = item.as_table_like() else {
        return Err(wrong_type(
            source,
            "coders",
            "a table of [coders.NAME] tables",
            item,
            value_line(source, key, item),
        ));
    };
    for (name, table_item) in coders.iter() {
        let (name_key, _) = coders.get_key_value(name).expect("iterated keys exist");
        let dotted = format!("coders.{name}");
        let Some(table) = table_item.as_table_like() else {
            return Err(wrong_type(
                source,
                &dotted,
                "a table ([coders.NAME] with keys under it)",
                table_item,
                value_line(source, name_key, table_item),
            ));
        };
        for (field, value) in table.iter() {
            let (field_key, _) = table.get_key_value(field).expect("iterated keys exist");
            let dotted = format!("coders.{name}.{field}");
            if !CoderConfig::KEYS.contains(&field) {
                return Err(unknown_coder_key(source, name, field, field_key, value));
            }
            let line = value_line(source, field_key, value);
            check_coder_value(source, &dotted, field, value, line)?;
        }
    }
    Ok(())
}

fn check_coder_value(
    source: Source,
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
                return Err(wrong_type(source, dotted, "a string", value, line));
            }
        }
        "events" => match value.as_str() {
            Some(name) if EventFormat::parse(name).is_some() => {}
            Some(name) => {
                return Err(ConfigError::new(
                    source.path,
                    ConfigErrorKind::Invalid,
                    format!(
                        "{dotted} must be one of {}, found {name:?}",
                        EventFormat::NAMES.map(|n| format!("{n:?}")).join(", ")
                    ),
                )
                .at(line)
                .key(dotted));
            }
            None => return Err(wrong_type(source, dotted, "a string", value, line)),
        },
        "argv" | "permission_args" => {
            if !strings(value) {
                return Err(wrong_type(source, dotted, "an array of strings", value, line));
            }
        }
        "close_on_exit_zero" => {
            if value.as_bool().is_none() {
                return Err(wrong_type(source, dotted, "true or false", value, line));
            }
        }
        "context_limit" => {
            if value.as_integer().is_none_or(|n| n < 0) {
                let expected = "a number of tokens (0: no limit)";
                return Err(wrong_type(source, dotted, expected, value, line));
            }
        }
        "env" | "model_context_limits" => check_coder_map(source, dotted, field, value, line)?,
        "accounts" => check_accounts(source, dotted, value, line)?,
        other => unreachable!("{other} is listed in CoderConfig::KEYS but not checked"),
    }
    Ok(())
}

/// `env` (strings) or `model_context_limits` (token counts): a table of entries.
fn check_coder_map(
    source: Source,
    dotted: &str,
    field: &str,
    value: &Item,
    line: Option<usize>,
) -> Result<(), ConfigError> {
    let Some(table) = value.as_table_like() else {
        return Err(wrong_type(source, dotted, "a table", value, line));
    };
    for (name, entry) in table.iter() {
        let ok = if field == "env" {
            entry.as_str().is_some()
        } else {
            entry.as_integer().is_some_and(|n| n >= 0)
        };
        if !ok {
            let expected = if field == "env" { "a string" } else { "a number of tokens" };
            return Err(wrong_type(
                source,
                &format!("{dotted}.{name}"),
                expected,
                entry,
                entry.span().map(|span| line_of(source.text, &span)).or(line),
            ));
        }
    }
    Ok(())
}

/// `[[coders.NAME.accounts]]`: an array of tables, each with a unique `name` and a non-empty
/// `env` of usable variables that fleet does not set itself. Messages never quote env values
/// (they are often keys).
fn check_accounts(
    source: Source,
    dotted: &str,
    value: &Item,
    line: Option<usize>,
) -> Result<(), ConfigError> {
    let expected = "an array of tables ([[coders.NAME.accounts]] with name and env)";
    let tables: Vec<(&dyn TableLike, Option<usize>)> = match value {
        Item::ArrayOfTables(array) => array
            .iter()
            .map(|table| {
                let line = table.span().map(|span| line_of(source.text, &span)).or(line);
                (table as &dyn TableLike, line)
            })
            .collect(),
        Item::Value(toml_edit::Value::Array(array)) => {
            let mut tables = Vec::new();
            for entry in array.iter() {
                let Some(table) = entry.as_inline_table() else {
                    return Err(wrong_type(source, dotted, expected, value, line));
                };
                let line = entry.span().map(|span| line_of(source.text, &span)).or(line);
                tables.push((table as &dyn TableLike, line));
            }
            tables
        }
        _ => return Err(wrong_type(source, dotted, expected, value, line)),
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut logins: Vec<(&str, &str, &str)> = Vec::new();
    for (index, (table, line)) in tables.into_iter().enumerate() {
        let name = check_account(source, &format!("{dotted}[{index}]"), table, line)?;
        let env = table.get("env").and_then(Item::as_table_like);
        let pairs = env.into_iter().flat_map(|env| env.iter());
        for (var, value) in pairs.filter(|(var, _)| account::selects_login(var)) {
            let Some(value) = value.as_str().map(account::login_value) else { continue };
            if let Some((other, _, _)) = logins.iter().find(|(_, v, x)| *v == var && *x == value) {
                return Err(ConfigError::new(
                    source.path,
                    ConfigErrorKind::Invalid,
                    format!(
                        "{dotted}[{index}]: accounts {other:?} and {name:?} resolve to the same login (the same {var}): they would share one quota"
                    ),
                )
                .at(line)
                .key(dotted)
                .hint("give each account a login or key of its own, or remove one of them"));
            }
            logins.push((name, var, value));
        }
        if seen.contains(&name) {
            return Err(ConfigError::new(
                source.path,
                ConfigErrorKind::Invalid,
                format!("{dotted}[{index}]: the account name {name:?} is used twice"),
            )
            .at(line)
            .key(dotted)
            .hint("give each account of a coder a name of its own"));
        }
        seen.push(name);
    }
    Ok(())
}

/// One account table; returns its name.
fn check_account<'a>(
    source: Source,
    dotted: &str,
    table: &'a dyn TableLike,
    line: Option<usize>,
) -> Result<&'a str, ConfigError> {
    let hint = "an account is name = \"…\" and env = { VAR = \"…\" }, the variables that select it";
    // The line of a field, else of the table.
    let at = |field: &str| {
        table.get_key_value(field).and_then(|(key, item)| key_line(source, key, item)).or(line)
    };
    let invalid = |field: &str, message: String| {
        ConfigError::new(source.path, ConfigErrorKind::Invalid, message).at(at(field)).key(dotted)
    };
    for (field, item) in table.iter() {
        if !Account::KEYS.contains(&field) {
            let (key, _) = table.get_key_value(field).expect("iterated keys exist");
            let at = key_line(source, key, item).or(line);
            let dotted = format!("{dotted}.{field}");
            return Err(unknown(source, &dotted, field, &Account::KEYS, at, hint.to_owned()));
        }
    }
    let name = match table.get("name") {
        None => return Err(invalid("name", format!("{dotted} has no name")).hint(hint)),
        Some(item) => item.as_str().ok_or_else(|| {
            wrong_type(source, &format!("{dotted}.name"), "a string", item, at("name"))
        })?,
    };
    if let Some(problem) = account::name_problem(name) {
        return Err(invalid("name", format!("{dotted}.name {name:?} {problem}")));
    }
    let Some(env) = table.get("env") else {
        return Err(invalid("env", format!("{dotted} ({name:?}) has no env")).hint(hint));
    };
    check_coder_map(source, &format!("{dotted}.env"), "env", env, at("env"))?;
    let vars = env.as_table_like().expect("checked to be a table");
    if vars.is_empty() {
        return Err(invalid("env", format!("{dotted} ({name:?}): env is empty")).hint(hint));
    }
    for (var, value) in vars.iter() {
        let bad_name = var.is_empty() || var.contains('=') || var.contains('\0');
        if bad_name || value.as_str().is_some_and(|v| v.contains('\0')) {
            return Err(invalid(
                "env",
                format!("{dotted} ({name:?}): {var:?} is not a usable environment variable"),
            ));
        }
        if account::is_reserved_var(var) {
            return Err(invalid(
                "env",
                format!("{dotted} ({name:?}): {var} is set by fleet for every agent"),
            )
            .hint(format!(
                "remove it; an account may not set {}",
                account::RESERVED_VARS.join(", ")
            )));
        }
    }
    Ok(name)
}

/// The config error of a `[coders.*]` table that does not build.
pub(super) fn coder_error(path: &Path, error: &CoderConfigError) -> ConfigError {
    let key = match error.key {
        Some(key) => format!("coders.{}.{key}", error.coder),
        None => format!("coders.{}", error.coder),
    };
    ConfigError::new(path, ConfigErrorKind::Invalid, error.to_string()).key(key)
}

// --- errors and lines -----------------------------------------------------------------------

fn unknown(
    source: Source,
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
    ConfigError::new(source.path, ConfigErrorKind::UnknownKey, message)
        .at(line)
        .key(dotted)
        .hint(hint)
}

fn wrong_type(
    source: Source,
    dotted: &str,
    expected: &str,
    item: &Item,
    line: Option<usize>,
) -> ConfigError {
    ConfigError::new(
        source.path,
        ConfigErrorKind::Type,
        format!("{dotted} must be {expected}, found {}", describe(item)),
    )
    .at(line)
    .key(dotted)
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

/// The line of a key (for unknown keys): where the key is written.
fn key_line(source: Source, key: &toml_edit::Key, item: &Item) -> Option<usize> {
    key.span().or_else(|| item.span()).map(|span| line_of(source.text, &span))
}

/// The line of a value (for wrong values): where the value is written.
fn value_line(source: Source, key: &toml_edit::Key, item: &Item) -> Option<usize> {
    item.span().or_else(|| key.span()).map(|span| line_of(source.text, &span))
}

/// The 1-based line of byte offset `span.start` in `text`.
pub(super) fn line_of(text: &str, span: &Range<usize>) -> usize {
    let end = span.start.min(text.len());
    text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
}

/// The line where the dotted `key` is written, or where the nearest enclosing table is (a
/// missing `argv` points at its `[coders.NAME]` header). `None` for a document without spans.
pub(super) fn line_of_key(root: &toml_edit::Table, text: &str, key: &str) -> Option<usize> {
    let mut table: &dyn TableLike = root;
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
