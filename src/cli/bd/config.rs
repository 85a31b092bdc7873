//! `bd config set|get|list|unset`: settings kept in the store (`Writer::set_config`).
//!
//! Every key lives in the workspace's store, including the ones beads keeps in `config.yaml`
//! (`export.auto`, `import.path`, …), so one file holds the whole workspace. `issue_prefix` is
//! the store's id prefix and reads back as such.
//!
//! Not to be confused with `fleet config` (`cli::config`), which edits fleet's runtime.toml;
//! each one's help points at the other.

use serde::Serialize;

use super::context::BdContext;
use crate::cli::CliError;
use crate::tracker::Request;

#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Set a configuration value.
    Set { key: String, value: String },
    /// Get a configuration value.
    Get { key: String },
    /// List all configuration.
    List,
    /// Remove a configuration value.
    #[command(visible_alias = "delete")]
    Unset { key: String },
}

#[derive(Serialize)]
struct Setting {
    key: String,
    value: String,
}

const PREFIX_KEY: &str = "issue_prefix";

pub fn cmd_config(ctx: &BdContext, command: ConfigCommand) -> Result<(), CliError> {
    match command {
        ConfigCommand::Set { key, value } => {
            ctx.check_writable("config set")?;
            refuse_prefix(&key)?;
            write(ctx, &key, Some(&value))?;
            let setting = Setting { key, value };
            ctx.out.emit(&setting, || format!("Set {} = {}", setting.key, setting.value));
        }
        ConfigCommand::Unset { key } => {
            ctx.check_writable("config unset")?;
            refuse_prefix(&key)?;
            write(ctx, &key, None)?;
            let setting = Setting { key, value: String::new() };
            ctx.out.emit(&setting, || format!("Unset {}", setting.key));
        }
        ConfigCommand::Get { key } => {
            let store = ctx.open_store()?;
            let value = if key == PREFIX_KEY {
                Some(store.prefix().to_string())
            } else {
                store.read()?.config(&key)?
            };
            let setting = Setting { key, value: value.unwrap_or_default() };
            ctx.out.emit(&setting, || {
                if setting.value.is_empty() {
                    format!("{} (not set)", setting.key)
                } else {
                    setting.value.clone()
                }
            });
        }
        ConfigCommand::List => {
            let store = ctx.open_store()?;
            let mut all = store.read()?.config_all()?;
            all.push((PREFIX_KEY.to_string(), store.prefix().to_string()));
            all.sort();
            let map: serde_json::Map<String, serde_json::Value> =
                all.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect();
            ctx.out.emit(&map, || {
                let mut lines = vec![String::new(), "Configuration:".to_string()];
                lines.extend(all.iter().map(|(k, v)| format!("  {k} = {v}")));
                lines.join("\n")
            });
        }
    }
    Ok(())
}

/// The prefix is part of every id; it changes only through a rename of every id.
fn refuse_prefix(key: &str) -> Result<(), CliError> {
    if key == PREFIX_KEY {
        return Err(CliError::new("issue_prefix is part of every issue id")
            .with_hint("change it with bd rename-prefix <new-prefix>"));
    }
    Ok(())
}

fn write(ctx: &BdContext, key: &str, value: Option<&str>) -> Result<(), CliError> {
    // A setting fleet knows is checked by its type and stored in one form (`TRUE` → `true`).
    let request = Request::SetConfig(vec![(key.to_string(), value.map(str::to_string))]);
    ctx.require_store()?.submit(request)?.into_done()?;
    // The value is recorded beside the journal for a rebuild (`journal::settings`).
    crate::cli::journal::commit_soon(ctx, true);
    Ok(())
}
