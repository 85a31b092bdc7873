//! Issue 32: real agent CLIs call a tool of `fleet mcp`, registered the way a user does it
//! (`fleet setup <agent> --mcp`). The scripted model calls fleet's `ask_human` (the scenario's
//! `fleet/ask_human`: the mock calls it by the name the CLI offers it under, as a model would);
//! the CLI starts the server, lists its tools and calls it; the task ends blocked with the
//! question in its `Q&A.md`, and the tool's answer (exit 0, the answer comes in Q&A.md) reaches
//! the model.
//!
//! What each pinned CLI (`.ci/install-agent-clis`) needs and does:
//! - **Claude Code 2.1.332**: `fleet setup claude --mcp --global` (`~/.claude.json`). It
//!   names the tools to its model only as deferred tools of its `ToolSearch`, in a system
//!   reminder (`mcp__fleet__ask_human`), and runs a direct call of one.
//! - **Gemini CLI 0.61**: `fleet setup gemini --mcp` in the task's directory
//!   (`.gemini/settings.json`). Not `--global`: fleet's gemini agents have a Gemini home of
//!   their own (`GEMINI_CLI_HOME`), so `~/.gemini/settings.json` is never read. The CLI starts
//!   a stdio server only in a trusted folder; the coder's `GEMINI_CLI_TRUST_WORKSPACE=true`
//!   trusts the task's folder (`gemini mcp list` says `Disabled` without it). The tools are
//!   declared as `mcp_fleet_<tool>`.
//! - **opencode 1.18.33**: `fleet setup opencode --mcp` in the task's directory
//!   (`opencode.json`, `mcp.fleet = {type: "local", command: [...]}`), read alongside the
//!   provider config of `OPENCODE_CONFIG_CONTENT`. The tools are declared as `fleet_<tool>`.
//! - **Codex 0.169**: `fleet setup codex --mcp` (`$CODEX_HOME/config.toml`, with the
//!   `env_vars` fleet's server needs). Codex defers MCP tools: a request names only the
//!   namespace `mcp__fleet` and declares a client-side `tool_search` tool, so the model first
//!   searches (a `tool_search_call`), Codex answers with the namespace's tools (a
//!   `tool_search_output`), and the model then calls `ask_human` in the namespace
//!   `mcp__fleet`. Without the search a call is refused (`unsupported call`).

use crate::coder::{CLAUDE, CODEX, Coder, GEMINI, OPENCODE, codex_home};
use crate::{DEADLINE, Scene, assert_no_leftovers};

/// Plays `mcp_ask_human` with `coder`, whose MCP config `setup` writes first.
fn asks_a_human_through_mcp(coder: &Coder, setup: impl FnOnce(&Scene) -> String) {
    let Some(scene) = coder.scene_with("mcp_ask_human", &[]) else { return };
    let set_up = setup(&scene);
    assert!(set_up.contains("MCP server `fleet`"), "{set_up}");
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    let offered = scene.mock.model_requests().iter().find_map(|r| r.mcp_tool("fleet", "ask_human"));
    assert!(offered.is_some(), "the CLI offers the model fleet's ask_human{}", context());
    assert_eq!(status.and_then(|s| s.code()), Some(4), "a task left blocked: exit 4{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "blocked", "{}", context());
    let notes = issue["notes"].as_str().unwrap_or_default();
    assert!(notes.contains("QUESTION: which schema"), "{notes}{}", context());
    assert!(supervisor.finished(&scene.id, "blocked-by-agent"), "{}", context());
    let qa = scene.sandbox.task_dir(&scene.id).join("artifacts").join("Q&A.md");
    let qa = std::fs::read_to_string(&qa).unwrap_or_default();
    assert!(qa.contains("## Q: which schema, v1 or v2?"), "{qa}{}", context());
    let answered = scene.mock.model_requests().iter().any(|r| {
        let text = r.all_text();
        text.contains("Exit 0 now without closing the task") && text.contains("blocked")
    });
    assert!(answered, "the tool's result reached the model{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

/// Claude Code, with the server in the agent's `~/.claude.json` (`--global`).
#[test]
fn claude() {
    asks_a_human_through_mcp(&CLAUDE, |scene| {
        scene.sandbox.fleet(&["setup", "claude", "--mcp", "--global"])
    });
}

/// Gemini CLI, with the server in the task directory's `.gemini/settings.json`.
#[test]
fn gemini() {
    asks_a_human_through_mcp(&GEMINI, |scene| in_the_project(scene, "gemini"));
}

/// opencode, with the server in the task directory's `opencode.json`.
#[test]
fn opencode() {
    asks_a_human_through_mcp(&OPENCODE, |scene| in_the_project(scene, "opencode"));
}

/// `fleet setup <agent> --mcp` run in the task's working directory (the project's file).
fn in_the_project(scene: &Scene, agent: &str) -> String {
    scene.sandbox.fleet_in(&scene.sandbox.work, &[], &["setup", agent, "--mcp"])
}

/// Codex, with the server in `$CODEX_HOME/config.toml`.
#[test]
fn codex() {
    asks_a_human_through_mcp(&CODEX, |scene| {
        let home = codex_home(&scene.sandbox);
        scene.sandbox.fleet_in(
            &scene.sandbox.home,
            &[("CODEX_HOME", &home)],
            &["setup", "codex", "--mcp"],
        )
    });
}
