//! Setting a project up for agents, and looking at the workspace: `bd onboard`, `bd setup
//! <agent>`, `bd where`, `bd info`, `bd doctor`.
//!
//! `bd setup claude|gemini` registers the SessionStart hook beads ≥ 1.0.5 writes
//! (`bd prime --hook-json`, or `bd prime --stealth --hook-json`) in the agent's
//! `settings.json` — the project's by default, the user's with `--global` — keeping every
//! other setting; the other recipes put the AGENTS.md snippet of `bd onboard` in the file
//! that agent reads. Running it again changes nothing. With `--mcp` it registers fleet's MCP
//! server with the agent instead (`claude`, `codex`, `gemini`, `opencode`; see `cli::setup`).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::context::BdContext;
use crate::cli::CliError;
use crate::workspace::STORE_FILE;

/// What `bd onboard` asks to put in AGENTS.md, and what `bd setup <recipe>` writes there.
const AGENTS_SNIPPET: &str = "## Issue Tracking

This project uses **bd (beads)** for issue tracking (answered by fleet).
Run `bd prime` for workflow context, or install hooks (`bd setup claude`) for auto-injection.

**Quick reference:**
- `bd ready` - Find unblocked work
- `bd create \"Title\" --type task --priority 2` - Create issue
- `bd update <id> --claim` - Claim work
- `bd close <id> --reason \"…\"` - Complete work
- `bd sync` - Share the queue with the git remote (once one is configured)

For full workflow details: `bd prime`";

/// The markers around the snippet in a file `bd setup` wrote, so a second run finds it.
const BEGIN: &str = "<!-- BEGIN BEADS INTEGRATION -->";
const END: &str = "<!-- END BEADS INTEGRATION -->";

pub fn cmd_onboard(ctx: &BdContext) {
    let text = format!(
        "\nbd Onboarding\n\nAdd this minimal snippet to AGENTS.md (or create it):\n\n\
         --- BEGIN AGENTS.MD CONTENT ---\n{AGENTS_SNIPPET}\n--- END AGENTS.MD CONTENT ---\n\n\
         For GitHub Copilot users:\nAdd the same content to .github/copilot-instructions.md\n\n\
         For Claude Code and Gemini CLI: `bd setup claude` / `bd setup gemini` load `bd prime`\n\
         at every session start."
    );
    ctx.out.emit(&serde_json::json!({ "agents_md": AGENTS_SNIPPET }), || text);
}

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The agent: claude, gemini (session hooks), or codex, cursor, aider, opencode, junie,
    /// factory, agents (the AGENTS.md snippet).
    pub recipe: Option<String>,
    /// Install for the user (~/.claude, ~/.gemini) instead of this project.
    #[arg(long, conflicts_with = "project")]
    pub global: bool,
    /// Install for this project only (fleet's default; accepted as beads has it).
    #[arg(long)]
    pub project: bool,
    /// Hooks that run `bd prime --stealth` (no git steps in the session close).
    #[arg(long)]
    pub stealth: bool,
    /// Say whether the integration is installed; change nothing.
    #[arg(long)]
    pub check: bool,
    /// Remove the integration.
    #[arg(long)]
    pub remove: bool,
    /// Print what would be written; change nothing.
    #[arg(long)]
    pub print: bool,
    /// List the recipes.
    #[arg(long)]
    pub list: bool,
    /// Register fleet's MCP server (`fleet mcp`) with the agent instead: claude, codex,
    /// gemini or opencode.
    #[arg(long)]
    pub mcp: bool,
}

/// Where a recipe writes, and what.
enum Target {
    /// A `settings.json` with a SessionStart hook.
    Hook(PathBuf),
    /// A markdown file holding the AGENTS.md snippet between markers.
    Snippet(PathBuf),
}

const RECIPES: [(&str, &str); 9] = [
    ("claude", "Claude Code SessionStart hook"),
    ("gemini", "Gemini CLI SessionStart hook"),
    ("codex", "AGENTS.md snippet"),
    ("agents", "AGENTS.md snippet"),
    ("opencode", "AGENTS.md snippet"),
    ("factory", "AGENTS.md snippet"),
    ("cursor", ".cursor/rules/beads.mdc"),
    ("aider", "CONVENTIONS.md snippet"),
    ("junie", ".junie/guidelines.md snippet"),
];

fn target(recipe: &str, global: bool) -> Result<Target, CliError> {
    let base = if global {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .ok_or_else(|| CliError::new("HOME is not set"))?
    } else {
        std::env::current_dir()
            .map_err(|e| CliError::new(format!("reading the current directory: {e}")))?
    };
    Ok(match recipe {
        "claude" => Target::Hook(base.join(".claude").join("settings.json")),
        "gemini" => Target::Hook(base.join(".gemini").join("settings.json")),
        "codex" | "agents" | "opencode" | "factory" => Target::Snippet(base.join("AGENTS.md")),
        "cursor" => Target::Snippet(base.join(".cursor").join("rules").join("beads.mdc")),
        "aider" => Target::Snippet(base.join("CONVENTIONS.md")),
        "junie" => Target::Snippet(base.join(".junie").join("guidelines.md")),
        other => {
            return Err(CliError::new(format!("unknown recipe {other:?}"))
                .with_hint("run 'bd setup --list' to see the recipes"));
        }
    })
}

pub fn cmd_setup(ctx: &BdContext, args: SetupArgs) -> Result<(), CliError> {
    let Some(recipe) = args.recipe.as_deref().filter(|_| !args.list) else {
        let mut lines = vec!["Available recipes:".to_string()];
        lines.extend(RECIPES.iter().map(|(name, what)| format!("  {name:<12}  {what}")));
        lines.push("\nUse 'bd setup <recipe>' to install.".into());
        let names: Vec<&str> = RECIPES.iter().map(|(n, _)| *n).collect();
        ctx.out.emit(&names, || lines.join("\n"));
        return Ok(());
    };
    if args.mcp {
        return crate::cli::setup::setup_mcp(ctx, recipe, args.global);
    }
    let command =
        if args.stealth { "bd prime --stealth --hook-json" } else { "bd prime --hook-json" };
    let target = target(recipe, args.global)?;
    let (path, current) = match &target {
        Target::Hook(path) | Target::Snippet(path) => (path.clone(), read_optional(path)?),
    };
    let installed = match &target {
        Target::Hook(_) => hook_commands(&current).iter().any(|c| c.starts_with("bd prime")),
        Target::Snippet(_) => current.as_deref().is_some_and(|t| t.contains(BEGIN)),
    };
    if args.check {
        let state = serde_json::json!({ "recipe": recipe, "installed": installed, "file": path });
        ctx.out.emit(&state, || {
            if installed {
                format!("✓ {recipe} integration installed\n  File: {}", path.display())
            } else {
                format!("✗ {recipe} integration not installed\n  Run: bd setup {recipe}")
            }
        });
        return if installed {
            Ok(())
        } else {
            Err(CliError::new(format!("{recipe} integration not installed")))
        };
    }
    let next = match &target {
        Target::Hook(_) => with_hook(current.as_deref(), &path, command, args.remove)?,
        Target::Snippet(_) => with_snippet(current.as_deref().unwrap_or_default(), args.remove),
    };
    if args.print {
        ctx.out.emit(&serde_json::json!({ "file": path, "content": next }), || next.clone());
        return Ok(());
    }
    if current.as_deref() != Some(next.as_str()) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
        }
        crate::fsutil::write_atomic(&path, next.as_bytes())
            .map_err(|e| CliError::new(format!("writing {}: {e}", path.display())))?;
    }
    let done = serde_json::json!({ "recipe": recipe, "file": path, "removed": args.remove });
    ctx.out.emit(&done, || {
        let verb = if args.remove { "Removed" } else { "Installed" };
        let what = match target {
            Target::Hook(_) => format!("SessionStart hook `{command}`"),
            Target::Snippet(_) => "the bd snippet".to_string(),
        };
        format!("✓ {verb} {recipe} integration: {what}\n  File: {}", path.display())
    });
    Ok(())
}

fn read_optional(path: &Path) -> Result<Option<String>, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::new(format!("reading {}: {e}", path.display()))),
    }
}

/// The commands of the SessionStart hooks in a settings file.
fn hook_commands(settings: &Option<String>) -> Vec<String> {
    let Some(value) = settings.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok())
    else {
        return Vec::new();
    };
    let entries = value["hooks"]["SessionStart"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .flat_map(|entry| entry["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|hook| hook["command"].as_str().map(str::to_string))
        .collect()
}

/// The settings with the bd SessionStart hook `command` registered (once), every older bd
/// prime hook removed, and every other setting kept; without it when `remove`.
fn with_hook(
    current: Option<&str>,
    path: &Path,
    command: &str,
    remove: bool,
) -> Result<String, CliError> {
    let mut settings: Map<String, Value> = match current.filter(|t| !t.trim().is_empty()) {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            CliError::new(format!("{} is not valid JSON: {e}", path.display()))
                .with_hint("fix the file by hand, then run bd setup again")
        })?,
        None => Map::new(),
    };
    let hooks = settings.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        return Err(CliError::new(format!("{}: \"hooks\" is not an object", path.display())));
    };
    for event in ["SessionStart", "PreCompact"] {
        if let Some(Value::Array(entries)) = hooks.get_mut(event) {
            for entry in entries.iter_mut() {
                if let Some(Value::Array(list)) = entry.get_mut("hooks") {
                    list.retain(|h| {
                        !h["command"].as_str().is_some_and(|c| c.starts_with("bd prime"))
                    });
                }
            }
            entries.retain(|e| e["hooks"].as_array().is_none_or(|l| !l.is_empty()));
        }
    }
    if !remove {
        let entry = serde_json::json!({ "matcher": "", "hooks": [{ "type": "command", "command": command }] });
        let list = hooks.entry("SessionStart").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            list.push(entry);
        }
    }
    hooks.retain(|_, v| !v.as_array().is_some_and(Vec::is_empty));
    if settings.get("hooks").and_then(Value::as_object).is_some_and(Map::is_empty) {
        settings.shift_remove("hooks");
    }
    Ok(format!("{}\n", serde_json::to_string_pretty(&settings).expect("JSON serialises")))
}

/// The file's text with the bd snippet between its markers (replacing an older one), or
/// without it when `remove`.
fn with_snippet(current: &str, remove: bool) -> String {
    let without = match (current.find(BEGIN), current.find(END)) {
        (Some(start), Some(end)) if end > start => {
            format!("{}{}", &current[..start], current[end + END.len()..].trim_start_matches('\n'))
        }
        _ => current.to_string(),
    };
    if remove {
        return without;
    }
    let mut text = without.trim_end().to_string();
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(&format!("{BEGIN}\n{AGENTS_SNIPPET}\n{END}\n"));
    text
}

#[derive(Serialize)]
struct Location {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    database_path: String,
}

fn location(ctx: &BdContext) -> Result<Location, CliError> {
    let dir = ctx.workspace_dir()?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let prefix =
        ctx.require_store().ok().and_then(|c| c.store().ok()).map(|s| s.prefix().to_string());
    Ok(Location {
        path: dir.display().to_string(),
        prefix,
        database_path: dir.join(STORE_FILE).display().to_string(),
    })
}

/// `bd where`: the active `.beads` directory.
pub fn cmd_where(ctx: &BdContext) -> Result<(), CliError> {
    let found = location(ctx)?;
    ctx.out.emit(&found, || {
        let mut lines = vec![found.path.clone()];
        if let Some(prefix) = &found.prefix {
            lines.push(format!("  prefix: {prefix}"));
        }
        lines.push(format!("  database: {}", found.database_path));
        lines.join("\n")
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Accepted for compatibility (fleet's schema is its op log; see `fleet journal`).
    #[arg(long)]
    pub schema: bool,
    /// Accepted for compatibility.
    #[arg(long)]
    pub whats_new: bool,
}

/// `bd info`: the database, its mode and its size.
pub fn cmd_info(ctx: &BdContext, _args: InfoArgs) -> Result<(), CliError> {
    let found = location(ctx)?;
    let count = ctx.store()?.read()?.view().issue_count()?;
    let info = serde_json::json!({
        "database_path": found.database_path,
        "beads_dir": found.path,
        "prefix": found.prefix,
        "mode": "direct",
        "backend": "fleet-redb",
        "issue_count": count,
    });
    ctx.out.emit(&info, || {
        format!(
            "\nBeads Database Information\n===========================\nDatabase: {}\nMode: direct \
             (fleet's redb store)\n\nIssue Count: {count}",
            found.database_path
        )
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Run one group of checks: `conventions` (lint, stale work, orphans).
    #[arg(long, value_name = "NAME")]
    pub check: Option<String>,
    /// Accepted for compatibility (fleet's repair is `fleet doctor --salvage`).
    #[arg(long)]
    pub fix: bool,
}

/// `bd doctor`: fleet's store checks; `--check=conventions`: the tracker's conventions.
pub fn cmd_doctor(ctx: &BdContext, args: DoctorArgs) -> Result<(), CliError> {
    match args.check.as_deref() {
        None => crate::cli::doctor::cmd_doctor(
            ctx.require_store()?,
            crate::cli::doctor::DoctorArgs { salvage: false, force: false, store_only: true },
        ),
        Some("conventions") => super::workflow::cmd_preflight(
            ctx,
            super::workflow::PreflightArgs { check: true, fix: false, skip_lint: false },
        ),
        Some(other) => Err(CliError::new(format!("unknown check {other:?}"))
            .with_hint("the checks are: conventions (or run bd doctor alone)")),
    }
}

/// `bd repair` / `bd recover` (beads' agent docs send both to `bd doctor --fix`): the store's
/// checks, and when they find damage, fleet's repair of it, `doctor --salvage`.
pub fn cmd_repair(ctx: &BdContext) -> Result<(), CliError> {
    let store_only =
        |salvage| crate::cli::doctor::DoctorArgs { salvage, force: false, store_only: true };
    if crate::cli::doctor::cmd_doctor(ctx.require_store()?, store_only(false)).is_ok() {
        return Ok(());
    }
    ctx.out.note("the store is damaged: repairing it with fleet's doctor --salvage");
    crate::cli::doctor::cmd_doctor(ctx.require_store()?, store_only(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_is_registered_once_and_other_settings_stay() {
        let path = Path::new("settings.json");
        let first =
            with_hook(Some(r#"{"model":"opus"}"#), path, "bd prime --hook-json", false).unwrap();
        let again = with_hook(Some(&first), path, "bd prime --hook-json", false).unwrap();
        assert_eq!(first, again);
        assert!(first.contains(r#""model": "opus""#));
        assert_eq!(hook_commands(&Some(first.clone())), ["bd prime --hook-json"]);
        let removed = with_hook(Some(&first), path, "bd prime --hook-json", true).unwrap();
        assert_eq!(removed, "{\n  \"model\": \"opus\"\n}\n");
    }

    #[test]
    fn the_snippet_is_replaced_not_repeated() {
        let once = with_snippet("# Project\n", false);
        assert_eq!(with_snippet(&once, false), once);
        assert_eq!(with_snippet(&once, true).trim_end(), "# Project");
    }
}
