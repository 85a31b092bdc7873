//! `fleet config show|set|unset`: read and change `$FLEET_HOME/runtime.toml`.
//!
//! `show` prints the effective configuration (the defaults when the file does not exist, and
//! says so) and the coders it makes available; coder `env` values print as `<redacted>`, as
//! they do in what `set` reports. `set` and `unset` edit the file in place, keeping comments
//! and layout, validate the result as a whole, and write it atomically (mode 0600 when it holds
//! env values) — or write nothing and exit 1. A running supervisor picks the change up by
//! itself.
//!
//! Not to be confused with `bd config` (`cli::bd::config`), which edits the settings kept in
//! the workspace's store; each one's help points at the other.

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::coders::CoderInfo;
use crate::config::{self, ConfigChange, ConfigError, RuntimeConfig, SetError};

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and the available coders (the defaults when
    /// runtime.toml does not exist). Coder env values are shown as <redacted>.
    Show,
    /// Set keys: `fleet config set max_concurrent=5 coder=codex coders.claude.program=/opt/claude`.
    /// Strings need no quotes; arrays and tables are TOML (`'coders.x.argv=["x", "{prompt}"]'`).
    /// Nothing is written unless the whole result is valid.
    Set(SetArgs),
    /// Remove keys (back to their defaults); `coders.NAME` removes a whole coder table.
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
}

pub fn cmd_config(ctx: &Context, command: ConfigCommand) -> Result<(), CliError> {
    let path = fleet_home()?.join(config::FILE_NAME);
    match command {
        ConfigCommand::Show => cmd_config_show(ctx, &path),
        ConfigCommand::Set(args) => {
            let change = config::set_values(&path, &args.assignments).map_err(set_error)?;
            report_change(ctx, &change);
            Ok(())
        }
        ConfigCommand::Unset(args) => {
            let change = config::unset_keys(&path, &args.keys).map_err(set_error)?;
            report_change(ctx, &change);
            Ok(())
        }
    }
}

fn cmd_config_show(ctx: &Context, path: &std::path::Path) -> Result<(), CliError> {
    let exists = path.exists();
    let config = RuntimeConfig::load(path).map_err(config_error)?;
    let registry = config.registry().map_err(|e| CliError::new(e.to_string()))?;
    let config = config.with_env_values_masked();
    let shown = Shown { path: path.display().to_string(), exists, coders: registry.list(), config };
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

fn config_error(error: ConfigError) -> CliError {
    let hint = error.hint.clone();
    let cli = CliError::new(error.to_string());
    match hint {
        Some(hint) => cli.with_hint(hint),
        None => cli,
    }
}

fn set_error(error: SetError) -> CliError {
    let cli = CliError::new(error.message);
    match error.hint {
        Some(hint) => cli.with_hint(hint),
        None => cli,
    }
}
