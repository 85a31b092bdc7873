//! Translating the Python fleet's `runtime.toml` into this fleet's: what `fleet import` does
//! with the file of a Python-fleet home, or with the file itself.
//!
//! Each top-level key of the source is one of: a key both fleets have (copied), a Python key
//! this fleet has under another name ([`Legacy::Renamed`]: copied under the new name), a
//! Python key with no use here ([`Legacy::Dropped`]: left out, and why), or a key neither
//! fleet knows (left out). Values are read as the Python fleet read them (`int(v)`,
//! `str(v)`: `"4"` is 4), and a value this fleet refuses (out of range, a coder it does not
//! have) is left out with the reason rather than written.
//!
//! Into another file, translated keys are added after what is there, and a key that file
//! already sets keeps its value. Translating the file in place (the Python fleet and this one
//! both default to `~/.fleet/runtime.toml`) renames keys where they stand and removes the
//! dropped ones, so the order of the file and its comments survive — a comment above a removed
//! key moves to the line that follows. The result is checked as a whole, then written
//! atomically; nothing is written on a dry run.

use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{DocumentMut, Item, Key, RawString};

use super::edit::{self, SetError};
use super::keys::{KeyInfo, KeyKind, Legacy};
use super::{ConfigError, RuntimeConfig};

/// What a translation did (or would do, on a dry run).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Migration {
    /// The file translated.
    pub source: PathBuf,
    /// The file written.
    pub target: PathBuf,
    /// The source is the target: translated in place.
    pub in_place: bool,
    /// The target did not exist and was created (with the comment header of a new file).
    pub created: bool,
    /// Nothing was written: a dry run, or nothing to change.
    pub written: bool,
    pub dry_run: bool,
    /// Keys taken over, under their name in this fleet.
    pub translated: Vec<Translated>,
    /// Keys left out, and why.
    pub dropped: Vec<Dropped>,
    /// Keys the target already set to another value: its value stays.
    pub kept: Vec<Kept>,
}

/// A key taken over.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Translated {
    /// Its name in the source.
    pub from: String,
    /// Its name in this fleet (the same, or the new name of a renamed key).
    pub to: String,
    pub value: serde_json::Value,
    /// The line in the source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

/// A key left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub why: String,
}

/// A key the target already had with another value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kept {
    pub key: String,
    /// The value in the target, which stays.
    pub value: serde_json::Value,
    /// The value the source has.
    pub source_value: serde_json::Value,
}

/// What to do with one key of the source.
#[derive(Debug, Clone)]
enum Plan {
    /// Take it over as `to` with `value` (`None`: as it is written).
    Take {
        to: String,
        value: Option<toml_edit::Value>,
    },
    Drop(String),
}

/// Translates the Python fleet's config at `source` into the config at `target` (which may be
/// the same file, or not exist yet). See the module documentation.
pub fn migrate(source: &Path, target: &Path, dry_run: bool) -> Result<Migration, SetError> {
    let text = read(source)?;
    let parsed = parse(source, &text)?;
    let in_place = same_file(source, target);
    let (mut document, created) = if in_place {
        (parsed.clone(), false)
    } else {
        match std::fs::read_to_string(target) {
            Ok(existing) => (parse(target, &existing)?, false),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                (DocumentMut::new(), true)
            }
            Err(error) => {
                return Err(SetError::new(format!("cannot read {}: {error}", target.display())));
            }
        }
    };
    let mut migration = Migration {
        source: source.to_path_buf(),
        target: target.to_path_buf(),
        in_place,
        created,
        dry_run,
        ..Migration::default()
    };
    // Lines come from a parse that keeps spans (an editable document drops them).
    let spanned = toml_edit::Document::parse(text.as_str()).ok();
    let mut plans: Vec<(String, Plan)> = Vec::new();
    for (name, item) in parsed.iter() {
        let line =
            spanned.as_ref().and_then(|doc| super::check::line_of_key(doc.as_table(), &text, name));
        let plan = plan_for(name, item);
        match &plan {
            Plan::Take { to, value } => migration.translated.push(Translated {
                from: name.to_owned(),
                to: to.clone(),
                value: json_of(
                    value.as_ref().map(|v| Item::Value(v.clone())).as_ref().unwrap_or(item),
                ),
                line,
            }),
            Plan::Drop(why) => {
                migration.dropped.push(Dropped { key: name.to_owned(), line, why: why.clone() });
            }
        }
        plans.push((name.to_owned(), plan));
    }
    if in_place {
        rewrite_in_place(&mut document, &plans);
    } else {
        add_to(&mut document, &parsed, &plans, &mut migration);
    }
    drop_refused_values(&mut document, target, &mut migration)?;
    let changed =
        if in_place { document.to_string() != text } else { !migration.translated.is_empty() };
    if changed && !dry_run {
        let mut new_text = document.to_string();
        if created {
            new_text = format!("{}\n{new_text}", edit::header());
        }
        edit::write_file(target, &new_text, edit::has_env_values(&document))?;
        migration.written = true;
    }
    Ok(migration)
}

fn read(path: &Path) -> Result<String, SetError> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| SetError::new(format!("cannot read {}: {error}", path.display())))?;
    Ok(text.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(text))
}

fn parse(path: &Path, text: &str) -> Result<DocumentMut, SetError> {
    text.parse::<DocumentMut>().map_err(|error| {
        let line = error.span().map(|span| super::check::line_of(text, &span));
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        SetError::new(format!(
            "{}{at} is not valid TOML: {}",
            path.display(),
            error.message().trim()
        ))
        .hint("fix the file by hand first; nothing was written")
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// What becomes of the source's key `name` holding `item`.
fn plan_for(name: &str, item: &Item) -> Plan {
    if name == "coders" || name == "prices" || name == "merge" {
        // This fleet's own tables (the Python fleet had none): taken as they are.
        return Plan::Take { to: name.to_owned(), value: None };
    }
    let to = match (KeyInfo::find(name), Legacy::of(name)) {
        (Some(info), _) => info,
        (None, Some(Legacy::Renamed(new))) => KeyInfo::find(new).expect("renamed to a key"),
        (None, Some(Legacy::Scaled { to, factor, unit })) => {
            let to = KeyInfo::find(to).expect("scaled to a key");
            return match coerce(item, to.kind) {
                Ok(value) => match value
                    .as_ref()
                    .and_then(toml_edit::Value::as_integer)
                    .or(item.as_integer())
                {
                    Some(n) => Plan::Take {
                        to: to.name.to_owned(),
                        value: Some(toml_edit::Value::from(n.saturating_mul(factor))),
                    },
                    None => {
                        Plan::Drop(format!("{} is not a whole number of {unit}", json_of(item)))
                    }
                },
                Err(why) => Plan::Drop(why),
            };
        }
        (None, Some(Legacy::Dropped(why))) => return Plan::Drop(why.to_owned()),
        (None, None) => {
            let mut why = "neither fleet has this key".to_owned();
            let known = super::KEYS.iter().map(|k| k.name);
            if let Some(close) = crate::coders::closest_word(name, known) {
                why.push_str(&format!(" (did you mean {close:?}?)"));
            }
            return Plan::Drop(why);
        }
    };
    match coerce(item, to.kind) {
        Ok(value) => Plan::Take { to: to.name.to_owned(), value },
        Err(why) => Plan::Drop(why),
    }
}

/// `item` as a value of `kind`, read the way the Python fleet read it (`int(v)`, `str(v)`):
/// `None` when it already is one, else the converted value, or why it cannot be.
fn coerce(item: &Item, kind: KeyKind) -> Result<Option<toml_edit::Value>, String> {
    match (kind, item) {
        (KeyKind::Integer { .. }, _) if item.as_integer().is_some() => Ok(None),
        (KeyKind::Integer { .. }, _) => match item.as_str().map(|s| s.trim().parse::<i64>()) {
            Some(Ok(n)) => Ok(Some(toml_edit::Value::from(n))),
            _ => Err(format!("{} is not a whole number", json_of(item))),
        },
        (KeyKind::Text, _) if item.as_str().is_some() => Ok(None),
        (KeyKind::Text, _) => match json_of(item) {
            number @ serde_json::Value::Number(_) => Ok(Some(number.to_string().into())),
            serde_json::Value::Bool(flag) => Ok(Some(flag.to_string().into())),
            other => Err(format!("{other} is not text")),
        },
    }
}

/// Renames and converts keys where they stand and removes the dropped ones (their comments
/// move to what follows), keeping the order of the file.
fn rewrite_in_place(document: &mut DocumentMut, plans: &[(String, Plan)]) {
    let root = document.as_table_mut();
    let entries: Vec<(Key, Item)> = root
        .iter()
        .map(|(name, _)| {
            let (key, item) = root.get_key_value(name).expect("iterated keys exist");
            (key.clone(), item.clone())
        })
        .collect();
    root.clear();
    let mut orphaned = String::new();
    for (key, mut item) in entries {
        let plan = plans.iter().find(|(name, _)| name == key.get()).map(|(_, plan)| plan);
        let mut key = match plan {
            Some(Plan::Drop(_)) => {
                orphaned.push_str(&prefix_of(key.leaf_decor().prefix()));
                continue;
            }
            Some(Plan::Take { to, value }) => {
                if let (Some(value), Some(old)) = (value, item.as_value()) {
                    let mut value = value.clone();
                    *value.decor_mut() = old.decor().clone();
                    item = Item::Value(value);
                }
                if to == key.get() {
                    key
                } else {
                    Key::new(to.as_str()).with_leaf_decor(key.leaf_decor().clone())
                }
            }
            None => key,
        };
        if !orphaned.is_empty() {
            let comments = std::mem::take(&mut orphaned);
            match item.as_table_mut() {
                Some(table) => {
                    let prefix = format!("{comments}{}", prefix_of(table.decor().prefix()));
                    table.decor_mut().set_prefix(prefix);
                }
                None => {
                    let prefix = format!("{comments}{}", prefix_of(key.leaf_decor().prefix()));
                    key.leaf_decor_mut().set_prefix(prefix);
                }
            }
        }
        root.insert_formatted(&key, item);
    }
    if !orphaned.is_empty() {
        let trailing = format!("{orphaned}{}", document.trailing().as_str().unwrap_or_default());
        document.set_trailing(trailing);
    }
}

/// The text of a decor prefix (comments and blank lines before a line).
fn prefix_of(prefix: Option<&RawString>) -> String {
    prefix.and_then(RawString::as_str).unwrap_or_default().to_owned()
}

/// Adds the translated keys to another file's document; keys it sets already keep their value.
fn add_to(
    document: &mut DocumentMut,
    source: &DocumentMut,
    plans: &[(String, Plan)],
    migration: &mut Migration,
) {
    let mut taken = Vec::new();
    for (name, plan) in plans {
        let Plan::Take { to, value } = plan else { continue };
        let item = match value {
            Some(value) => Item::Value(value.clone()),
            None => plain(source.get(name).cloned().unwrap_or(Item::None)),
        };
        if let Some(existing) = document.get(to) {
            let (existing, incoming) = (json_of(existing), json_of(&item));
            if existing != incoming {
                migration.kept.push(Kept {
                    key: to.clone(),
                    value: existing,
                    source_value: incoming,
                });
            }
            continue;
        }
        document.insert(to, item);
        taken.push(name.clone());
    }
    migration.translated.retain(|t| taken.contains(&t.from));
    keep_model_with_its_coder(document, migration);
}

/// `model` is the model of the default coder. When the target keeps a default coder other than
/// the source's, the source's model was meant for another coder: it is left out (passing
/// `opus` to codex would fail every task), with the setting that keeps it for its coder.
fn keep_model_with_its_coder(document: &mut DocumentMut, migration: &mut Migration) {
    let Some(coder) = migration.kept.iter().find(|k| k.key == "coder") else { return };
    let Some(index) = migration.translated.iter().position(|t| t.to == "model") else { return };
    let model = migration.translated.remove(index);
    document.remove("model");
    let source_coder = coder.source_value.as_str().unwrap_or_default();
    migration.dropped.push(Dropped {
        key: model.from,
        line: model.line,
        why: format!(
            "it is the model of the coder {source_coder:?}, and the default coder here stays {}; \
             to keep it for {source_coder}: fleet config set coders.{source_coder}.default_model={}",
            coder.value,
            model.value.as_str().unwrap_or_default()
        ),
    });
}

/// `item` without the source's comments and spacing (a new file's own layout).
fn plain(mut item: Item) -> Item {
    match &mut item {
        Item::Value(value) => value.decor_mut().clear(),
        Item::Table(table) => table.decor_mut().clear(),
        _ => {}
    }
    item
}

/// Leaves out, one at a time, each translated key whose value this fleet refuses (a range, a
/// coder it does not have), until the document is a valid config. A problem that is not one
/// of the translated keys' — the target's own — is an error: nothing is written.
fn drop_refused_values(
    document: &mut DocumentMut,
    target: &Path,
    migration: &mut Migration,
) -> Result<(), SetError> {
    loop {
        let problems = RuntimeConfig::problems(&document.to_string(), target);
        let Some(problem) = problems.first() else { return Ok(()) };
        let culprit = problem.key.as_deref().and_then(|key| {
            let top = key.split('.').next().unwrap_or(key);
            migration.translated.iter().position(|t| t.to == top)
        });
        let Some(index) = culprit else {
            return Err(target_error(target, problem));
        };
        let refused = migration.translated.remove(index);
        document.remove(&refused.to);
        migration.dropped.push(Dropped {
            key: refused.from,
            line: refused.line,
            why: format!("fleet refuses its value: {}", problem.message),
        });
    }
}

fn target_error(target: &Path, problem: &ConfigError) -> SetError {
    SetError::new(format!("not translated: {problem}")).hint(format!(
        "fix {} first (`fleet config show` lists its problems); nothing was written",
        target.display()
    ))
}

/// A TOML item as JSON, for reports.
fn json_of(item: &Item) -> serde_json::Value {
    match item {
        Item::Value(value) => edit::toml_to_json(value),
        Item::Table(table) => serde_json::Value::Object(
            table.iter().map(|(k, v)| (k.to_owned(), json_of(v))).collect(),
        ),
        _ => serde_json::Value::Null,
    }
}
