//! `fleet setup <agent> --mcp` (and `bd setup <agent> --mcp`): registers `fleet mcp` as an MCP
//! server named `fleet` in a coding-agent CLI's configuration, pointing at this binary.
//!
//! | agent | file (project; `--global`) | entry |
//! |---|---|---|
//! | `claude` | `.mcp.json`; `~/.claude.json` | `mcpServers.fleet = {command, args}` |
//! | `gemini` | `.gemini/settings.json`; `~/.gemini/settings.json` | `mcpServers.fleet = {command, args}` |
//! | `opencode` | `opencode.json`; `~/.config/opencode/opencode.json` | `mcp.fleet = {type: local, command: [...]}` |
//! | `codex` | `$CODEX_HOME/config.toml` (`~/.codex`) either way | `[mcp_servers.fleet]` command, args, env_vars ([`MCP_ENV`]) |
//!
//! Codex reads a project's `.codex/config.toml` only in trusted projects, so its entry goes to
//! the user's file. Gemini CLI starts a stdio server only in a trusted folder, and fleet's
//! gemini agents read only the project's file; `--mcp` says so ([`McpSetup::notes`]). Every
//! other key of the file stays as it was (JSON keeps its key order, TOML its comments and
//! layout); running it again changes nothing.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::context::Context;
use super::error::CliError;

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// The agent CLI: claude, codex, gemini or opencode.
    pub agent: String,
    /// Register `fleet mcp` as the agent's MCP server `fleet` (what `fleet setup` does).
    #[arg(long, required = true)]
    pub mcp: bool,
    /// The user's configuration instead of this project's (codex: always the user's).
    #[arg(long)]
    pub global: bool,
}

/// The variables `fleet mcp` needs from the agent's environment: the queue, and inside a run
/// the task, its attempt and the agent's actor. Codex passes a stdio server only a short list
/// of variables (HOME, PATH, …) unless its entry names more (`env_vars`).
pub const MCP_ENV: [&str; 7] = [
    "FLEET_HOME",
    "BEADS_DIR",
    "BD_ACTOR",
    "FLEET_TASK_ID",
    "FLEET_ATTEMPT",
    "FLEET_TASK_DIR",
    "FLEET_ARTIFACT_DIR",
];

/// The agents `--mcp` knows.
pub const MCP_AGENTS: [&str; 4] = ["claude", "codex", "gemini", "opencode"];

/// What `--mcp` did.
#[derive(Debug, Serialize)]
pub struct McpSetup {
    pub agent: String,
    pub file: PathBuf,
    /// The command line the agent runs.
    pub command: Vec<String>,
    /// Whether the file changed (false: it was set up already).
    pub changed: bool,
    /// What else the agent needs before it starts the server ([`notes`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl McpSetup {
    /// `✓ claude: MCP server fleet in ./.mcp.json (/usr/bin/fleet mcp)`.
    pub fn describe(&self) -> String {
        let (mark, how) = if self.changed { ("✓", "") } else { ("○", ", already there") };
        format!(
            "{mark} {}: MCP server `fleet` in {} ({}{how})",
            self.agent,
            self.file.display(),
            self.command.join(" ")
        )
    }
}

pub fn cmd_setup(ctx: &Context, args: SetupArgs) -> Result<(), CliError> {
    setup_mcp(ctx, &args.agent, args.global)
}

/// Registers `fleet mcp` with `agent` and says so, notes on stderr (`fleet setup` and
/// `bd setup`).
pub fn setup_mcp(ctx: &Context, agent: &str, global: bool) -> Result<(), CliError> {
    let done = install_mcp(agent, global)?;
    ctx.out.emit(&done, || done.describe());
    for note in &done.notes {
        ctx.out.note(&format!("note: {note}"));
    }
    Ok(())
}

/// Registers `fleet mcp` with `agent` (see the module documentation).
fn install_mcp(agent: &str, global: bool) -> Result<McpSetup, CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::new(format!("finding this binary's path: {e}")))?;
    let command = vec![exe.display().to_string(), "mcp".to_string()];
    let file = config_file(agent, global)?;
    let current = match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(CliError::new(format!("reading {}: {e}", file.display()))),
    };
    let text = current.as_deref().unwrap_or_default();
    let next = match agent {
        "codex" => with_codex_entry(text, &command),
        _ => with_json_entry(agent, text, &command),
    }
    .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    let changed = current.as_deref() != Some(next.as_str());
    if changed {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
        }
        crate::fsutil::write_atomic(&file, next.as_bytes())
            .map_err(|e| CliError::new(format!("writing {}: {e}", file.display())))?;
    }
    Ok(McpSetup { agent: agent.to_string(), file, command, changed, notes: notes(agent, global) })
}

/// What an agent needs besides its entry before it starts the server. Gemini CLI (0.61)
/// starts a stdio MCP server only in a folder it trusts, and the agents of `fleet run` read
/// only the project's file (they get a Gemini home of their own, `GEMINI_CLI_HOME`, and trust
/// their task's folder themselves).
fn notes(agent: &str, global: bool) -> Vec<String> {
    if agent != "gemini" {
        return Vec::new();
    }
    let mut notes = vec![
        "Gemini CLI starts the server only in folders you trust: /trust in gemini (kept in \
         ~/.gemini/trustedFolders.json); agents of `fleet run` trust their task's folder"
            .to_string(),
    ];
    if global {
        notes.push(
            "agents of `fleet run` do not read ~/.gemini/settings.json (each has a Gemini home \
             of its own): for them, run `fleet setup gemini --mcp` in the project's directory"
                .to_string(),
        );
    }
    notes
}

/// The configuration file of `agent`'s MCP servers.
fn config_file(agent: &str, global: bool) -> Result<PathBuf, CliError> {
    let home = || crate::env::home_dir().ok_or_else(|| CliError::new("HOME is not set"));
    let here = || {
        std::env::current_dir()
            .map_err(|e| CliError::new(format!("reading the current directory: {e}")))
    };
    Ok(match (agent, global) {
        ("claude", false) => here()?.join(".mcp.json"),
        ("claude", true) => home()?.join(".claude.json"),
        ("gemini", false) => here()?.join(".gemini").join("settings.json"),
        ("gemini", true) => home()?.join(".gemini").join("settings.json"),
        ("opencode", false) => here()?.join("opencode.json"),
        ("opencode", true) => home()?.join(".config").join("opencode").join("opencode.json"),
        ("codex", _) => crate::env::codex_home()
            .ok_or_else(|| CliError::new("neither CODEX_HOME nor HOME is set"))?
            .join("config.toml"),
        (other, _) => {
            return Err(CliError::usage(format!("no MCP setup for {other:?}"))
                .with_hint(format!("the agents: {}", MCP_AGENTS.join(", "))));
        }
    })
}

/// A JSON config `text` (empty: none yet) with the `fleet` server set, the rest kept.
fn with_json_entry(agent: &str, text: &str, command: &[String]) -> Result<String, String> {
    let mut config: Map<String, Value> = if text.trim().is_empty() {
        Map::new()
    } else {
        serde_json::from_str(text).map_err(|e| {
            format!("not a JSON object fleet can edit ({e}); add the `fleet` server by hand")
        })?
    };
    let (key, entry) = match agent {
        "opencode" => {
            if config.is_empty() {
                config.insert("$schema".into(), json!("https://opencode.ai/config.json"));
            }
            ("mcp", json!({ "type": "local", "command": command, "enabled": true }))
        }
        _ => ("mcpServers", json!({ "command": command[0], "args": &command[1..] })),
    };
    let servers = config.entry(key).or_insert_with(|| json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!("`{key}` is not an object"));
    };
    servers.insert("fleet".into(), entry);
    let mut next = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?;
    next.push('\n');
    // Unchanged content stays byte for byte (a hand-formatted file is not reformatted).
    let same = serde_json::from_str::<Value>(text).is_ok_and(|old| old == Value::Object(config));
    Ok(if same { text.to_string() } else { next })
}

/// Codex's `config.toml` `text` with `[mcp_servers.fleet]` set, comments and the rest kept.
fn with_codex_entry(text: &str, command: &[String]) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| format!("not TOML fleet can edit: {e}"))?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = toml_edit::Table::new();
        table.set_implicit(true);
        toml_edit::Item::Table(table)
    });
    let Some(servers) = servers.as_table_like_mut() else {
        return Err("`mcp_servers` is not a table".into());
    };
    let args: toml_edit::Array = command[1..].iter().map(String::as_str).collect();
    let env_vars: toml_edit::Array = MCP_ENV.iter().copied().collect();
    let wanted = [
        ("command", toml_edit::value(command[0].as_str())),
        ("args", toml_edit::value(args)),
        ("env_vars", toml_edit::value(env_vars)),
    ];
    let fleet = servers.entry("fleet").or_insert(toml_edit::table());
    let Some(fleet) = fleet.as_table_like_mut() else {
        return Err("`mcp_servers.fleet` is not a table".into());
    };
    let same = |key: &str, want: &toml_edit::Item| {
        bare_value(fleet.get(key)).is_some_and(|v| Some(v) == bare_value(Some(want)))
    };
    if !wanted.iter().all(|(key, value)| same(key, value)) {
        for (key, value) in wanted {
            fleet.insert(key, value);
        }
    }
    Ok(doc.to_string())
}

/// An item's value without its formatting, to compare.
fn bare_value(item: Option<&toml_edit::Item>) -> Option<String> {
    let mut value = item?.as_value()?.clone();
    value.decor_mut().clear();
    if let Some(array) = value.as_array_mut() {
        array.iter_mut().for_each(|v| v.decor_mut().clear());
        array.set_trailing("");
        array.set_trailing_comma(false);
    }
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> Vec<String> {
        vec!["/bin/fleet".into(), "mcp".into()]
    }

    #[test]
    fn json_configs_keep_other_servers_and_settings() {
        let before = r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}}"#;
        let after = with_json_entry("gemini", before, &command()).unwrap();
        let value: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(value["theme"], "dark");
        assert_eq!(value["mcpServers"]["other"]["command"], "x");
        assert_eq!(value["mcpServers"]["fleet"], json!({"command": "/bin/fleet", "args": ["mcp"]}));
        assert_eq!(with_json_entry("gemini", &after, &command()).unwrap(), after);

        let opencode: Value =
            serde_json::from_str(&with_json_entry("opencode", "", &command()).unwrap()).unwrap();
        assert_eq!(opencode["mcp"]["fleet"]["command"], json!(["/bin/fleet", "mcp"]));
        assert_eq!(opencode["mcp"]["fleet"]["type"], "local");
        let broken = with_json_entry("claude", "{ // comment\n}", &command()).unwrap_err();
        assert!(broken.contains("add the `fleet` server by hand"), "{broken}");
    }

    #[test]
    fn codex_toml_keeps_comments_and_is_idempotent() {
        let before = "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let after = with_codex_entry(before, &command()).unwrap();
        assert!(after.starts_with(before), "{after}");
        assert!(
            after.contains("[mcp_servers.fleet]\ncommand = \"/bin/fleet\"\nargs = [\"mcp\"]"),
            "{after}"
        );
        assert!(
            after.contains(
                "env_vars = [\"FLEET_HOME\", \"BEADS_DIR\", \"BD_ACTOR\", \"FLEET_TASK_ID\""
            ),
            "{after}"
        );
        assert_eq!(with_codex_entry(&after, &command()).unwrap(), after);
    }
}
