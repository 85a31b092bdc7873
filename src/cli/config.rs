//! `fleet config show|set|unset`: read and change `$FLEET_HOME/runtime.toml`.
//!
//! `show` prints the effective configuration (the defaults when the file does not exist, and
//! says so) and the coders it makes available; coder `env` values print as `<redacted>`, as
//! they do in what `set` reports. `set` and `unset` edit the file in place, keeping comments
//! and layout, validate the result as a whole, and write it atomically (mode 0600 when it holds
//! env values) — or write nothing and exit 1. A running supervisor picks the change up by
//! itself.
//!
//! Workspace settings (`crate::settings`: `claim_mode`, `sync.export_jsonl`, `export.auto`,
//! `validation.on-close`, `types.custom`, …) live in the workspace's store, not in the file;
//! `fleet config` reads and writes them too, each checked by its type, and `show` lists them
//! apart. `bd config` sets any store key, as beads does.

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::coders::CoderInfo;
use std::path::Path;

use super::error::ItemError;
use crate::config::{self, ConfigChange, ConfigError, ConfigErrorKind, RuntimeConfig, SetError};
use crate::settings::Setting;
use crate::tracker::Request;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and the available coders (the defaults when
    /// runtime.toml does not exist). Coder env values are shown as <redacted>.
    Show,
    /// Set keys: `fleet config set max_concurrent=5 coder=codex coders.claude.program=/opt/claude`.
    /// Strings need no quotes; arrays and tables are TOML (`'coders.x.argv=["x", "{prompt}"]'`).
    /// Workspace settings (`claim_mode=remote`, `sync.export_jsonl=true`, …) go to the store.
    /// Nothing is written unless the whole result is valid.
    Set(SetArgs),
    /// Print one key's value in force: of runtime.toml, or a workspace setting.
    Get {
        /// The key (`max_concurrent`, `coders.claude.program`, `claim_mode`, …).
        key: String,
    },
    /// Remove keys (back to their defaults); `coders.NAME` removes a whole coder table. Any key
    /// written in the file can be removed, also one fleet does not know (a typo, a key of the
    /// Python fleet).
    Unset(UnsetArgs),
}

#[derive(Debug, clap::Args)]
pub struct SetArgs {
    /// `key=value` pairs, applied together.
    #[arg(required = true, value_name = "KEY=VALUE")]
    pub assignments: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct UnsetArgs {
    /// Keys to remove.
    #[arg(required = true, value_name = "KEY")]
    pub keys: Vec<String>,
}

/// The result of `fleet config show`.
#[derive(Serialize)]
struct Shown {
    path: String,
    /// Whether the file exists (false: these are the defaults).
    exists: bool,
    config: RuntimeConfig,
    coders: Vec<CoderInfo>,
    /// The workspace settings in force (none when there is no workspace).
    workspace: Vec<ShownSetting>,
}

/// A workspace setting as `show` lists it.
#[derive(Serialize)]
struct ShownSetting {
    key: &'static str,
    value: String,
    /// Whether the store sets it (false: the default is in force).
    set: bool,
    doc: &'static str,
}

/// Every workspace setting of the workspace of `ctx`, or none without a workspace.
fn workspace_settings(ctx: &Context) -> Vec<ShownSetting> {
    let Ok(store) = ctx.open_store() else { return Vec::new() };
    let Ok(reader) = store.read() else { return Vec::new() };
    crate::settings::SETTINGS
        .iter()
        .map(|setting| {
            let stored = reader.config(setting.name).ok().flatten();
            ShownSetting {
                key: setting.name,
                set: stored.is_some(),
                value: stored.unwrap_or_else(|| setting.default.to_string()),
                doc: setting.doc,
            }
        })
        .collect()
}

pub fn cmd_config(ctx: &Context, command: ConfigCommand) -> Result<(), CliError> {
    let path = fleet_home()?.join(config::FILE_NAME);
    match command {
        ConfigCommand::Show => cmd_config_show(ctx, &path),
        ConfigCommand::Get { key } => cmd_config_get(ctx, &path, &key),
        ConfigCommand::Set(args) => {
            let (workspace, file): (Vec<String>, Vec<String>) =
                args.assignments.into_iter().partition(|a| is_workspace_assignment(a));
            let settings = checked_settings(&workspace)?;
            if !file.is_empty() {
                let change = config::set_values(&path, &file).map_err(set_error)?;
                report_change(ctx, &change);
            }
            write_settings(ctx, &settings)
        }
        ConfigCommand::Unset(args) => {
            let (workspace, file): (Vec<String>, Vec<String>) =
                args.keys.into_iter().partition(|key| Setting::find(key).is_some());
            if !file.is_empty() {
                let change = config::unset_keys(&path, &file).map_err(set_error)?;
                report_change(ctx, &change);
                report_remaining(ctx, &change);
            }
            let unset: Vec<(&'static Setting, Option<String>)> = workspace
                .iter()
                .filter_map(|key| Setting::find(key).map(|setting| (setting, None)))
                .collect();
            write_settings(ctx, &unset)
        }
    }
}

/// Whether `key=value` sets a workspace setting (kept in the store).
fn is_workspace_assignment(assignment: &str) -> bool {
    assignment.split_once('=').is_some_and(|(key, _)| Setting::find(key.trim()).is_some())
}

/// The workspace assignments, each checked by its setting's type; an error names the first
/// bad one, and nothing is written.
fn checked_settings(
    assignments: &[String],
) -> Result<Vec<(&'static Setting, Option<String>)>, CliError> {
    let mut settings = Vec::new();
    for assignment in assignments {
        let Some((key, value)) = assignment.split_once('=') else { continue };
        let Some(setting) = Setting::find(key.trim()) else { continue };
        let value = setting.checked(value).map_err(|error| {
            CliError::new(error).with_hint(format!("{}: {}", setting.name, setting.doc))
        })?;
        settings.push((setting, Some(value)));
    }
    Ok(settings)
}

/// Writes workspace settings into the store, in one transaction, and says so.
fn write_settings(
    ctx: &Context,
    settings: &[(&'static Setting, Option<String>)],
) -> Result<(), CliError> {
    if settings.is_empty() {
        return Ok(());
    }
    let changes = settings.iter().map(|(setting, value)| (setting.name.to_string(), value.clone()));
    ctx.submit(Request::SetConfig(changes.collect()))?.into_done()?;
    let store = ctx.store()?;
    let shown: serde_json::Map<String, serde_json::Value> = settings
        .iter()
        .map(|(setting, value)| (setting.name.to_string(), value.clone().into()))
        .collect();
    let place = store.dir().join(crate::workspace::STORE_FILE).display().to_string();
    ctx.out.emit(&serde_json::json!({ "store": place, "set": shown }), || {
        let parts: Vec<String> = settings
            .iter()
            .map(|(setting, value)| match value {
                Some(value) => format!("{} = {value}", setting.name),
                None => format!("{} removed (default: {:?})", setting.name, setting.default),
            })
            .collect();
        format!("Updated the workspace settings in {place}: {}", parts.join(", "))
    });
    Ok(())
}

/// `fleet config get KEY`: the value in force, from the file or the store.
fn cmd_config_get(ctx: &Context, path: &Path, key: &str) -> Result<(), CliError> {
    let (value, lives) = match Setting::find(key) {
        Some(setting) => {
            let stored = ctx.open_store()?.read()?.config(setting.name)?;
            (stored.unwrap_or_else(|| setting.default.to_string()), "workspace")
        }
        None => {
            let config = RuntimeConfig::load(path).map_err(|error| problems_error(path, error))?;
            let config = config.with_env_values_masked();
            let value = config::value_of(&config, key).map_err(set_error)?;
            (value, "runtime.toml")
        }
    };
    let shown = serde_json::json!({ "key": key, "value": value, "lives": lives });
    ctx.out.emit(&shown, || value.clone());
    Ok(())
}

fn cmd_config_show(ctx: &Context, path: &std::path::Path) -> Result<(), CliError> {
    let exists = path.exists();
    let config = RuntimeConfig::load(path).map_err(|error| problems_error(path, error))?;
    let registry = config.registry().map_err(|e| CliError::new(e.to_string()))?;
    let config = config.with_env_values_masked();
    let workspace = workspace_settings(ctx);
    let path = path.display().to_string();
    let shown = Shown { path, exists, coders: registry.list(), config, workspace };
    ctx.out.emit(&shown, || render_show(&shown));
    Ok(())
}

/// The effective config as TOML a user could paste into the file, then the coders as comments.
fn render_show(shown: &Shown) -> String {
    let mut text = if shown.exists {
        format!("# {}\n", shown.path)
    } else {
        format!("# {} does not exist: these are the defaults\n", shown.path)
    };
    for key in config::KEYS {
        text.push_str(&format!("{} = {}\n", key.name, key.value(&shown.config)));
    }
    if !shown.config.coders.is_empty() {
        let mut tables = toml::Table::new();
        if let Ok(coders) = toml::Value::try_from(&shown.config.coders) {
            tables.insert("coders".to_owned(), coders);
        }
        text.push('\n');
        text.push_str(&toml::to_string(&tables).unwrap_or_default());
    }
    text.push_str("\n# coders: name, kind, default model, context window of that model\n");
    let width = shown.coders.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for coder in &shown.coders {
        let model = if coder.default_model.is_empty() {
            "(none)".to_owned()
        } else {
            coder.default_model.clone()
        };
        let limit = coder.context_limit.map_or("no limit".to_owned(), |n| format!("{n} tokens"));
        let kind = if coder.builtin { "built-in" } else { "config" };
        text.push_str(&format!("#   {:<width$}  {kind:<8}  {model:<20}  {limit}\n", coder.name));
    }
    if !shown.workspace.is_empty() {
        text.push_str("\n# workspace settings (kept in the store, not in this file)\n");
        for setting in &shown.workspace {
            let default = if setting.set { "" } else { "  (default)" };
            text.push_str(&format!("#   {} = {}{default}\n", setting.key, setting.value));
        }
    }
    text
}

fn report_change(ctx: &Context, change: &ConfigChange) {
    #[derive(Serialize)]
    struct Changed<'a> {
        path: String,
        created: bool,
        set: serde_json::Map<String, serde_json::Value>,
        unset: &'a [String],
    }
    let result = Changed {
        path: change.path.display().to_string(),
        created: change.created,
        set: change.set.iter().cloned().collect(),
        unset: &change.unset,
    };
    ctx.out.emit(&result, || {
        let verb = if change.created { "Created" } else { "Updated" };
        let mut parts: Vec<String> =
            change.set.iter().map(|(key, value)| format!("{key} = {value}")).collect();
        parts.extend(change.unset.iter().map(|key| format!("{key} removed")));
        if parts.is_empty() {
            return format!("{} unchanged (none of those keys were set)", result.path);
        }
        format!("{verb} {}: {}", result.path, parts.join(", "))
    });
}

/// After an unset that left problems in the file: each on stderr, and what to do next.
fn report_remaining(ctx: &Context, change: &ConfigChange) {
    if change.problems.is_empty() {
        return;
    }
    for problem in &change.problems {
        ctx.out.warn(&format!("warning: {problem}"));
    }
    let unknown = unknown_keys(&change.problems);
    if !unknown.is_empty() {
        ctx.out.warn(&format!("hint: fleet config unset {}", unknown.join(" ")));
    }
}

fn config_error(error: ConfigError) -> CliError {
    let hint = error.hint.clone();
    let cli = CliError::new(error.to_string());
    match hint {
        Some(hint) => cli.with_hint(hint),
        None => cli,
    }
}

/// The error of a config file that does not load (`first` is why): when it has one problem,
/// that problem and its fix; when it has several, every one of them (an `error:` line each,
/// with its fix) and how to deal with them all at once.
pub(super) fn problems_error(path: &Path, first: ConfigError) -> CliError {
    let problems = RuntimeConfig::problems_in(path);
    let mut error = match problems.as_slice() {
        [] => config_error(first),
        [one] => config_error(one.clone()),
        many => {
            let items = many
                .iter()
                .map(|problem| ItemError {
                    id: problem.key.clone().unwrap_or_default(),
                    error: match &problem.hint {
                        Some(hint) => format!("{problem}; fix: {hint}"),
                        None => problem.to_string(),
                    },
                })
                .collect();
            let message = format!("{} has {} problems", path.display(), many.len());
            CliError::for_items(message, items)
        }
    };
    let unknown = unknown_keys(&problems);
    let legacy = unknown.iter().any(|key| config::Legacy::of(key).is_some());
    if legacy {
        error = error.with_hint(format!(
            "translate the Python fleet's keys (the renamed ones are renamed, the others removed): fleet import {}",
            path.display()
        ));
    }
    if unknown.len() > 1 {
        error = error.with_hint(format!(
            "{}remove the unknown keys: fleet config unset {}",
            if legacy { "or " } else { "" },
            unknown.join(" ")
        ));
    }
    error
}

/// The dotted keys of the unknown-key problems among `problems`.
pub(super) fn unknown_keys(problems: &[ConfigError]) -> Vec<String> {
    problems
        .iter()
        .filter(|p| p.kind == ConfigErrorKind::UnknownKey)
        .filter_map(|p| p.key.clone())
        .collect()
}

pub(super) fn set_error(error: SetError) -> CliError {
    let cli = CliError::new(error.message);
    match error.hint {
        Some(hint) => cli.with_hint(hint),
        None => cli,
    }
}
