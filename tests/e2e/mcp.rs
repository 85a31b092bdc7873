//! Issue 32: real agent CLIs call a tool of `fleet mcp`, registered the way a user does it
//! (`fleet setup <agent> --mcp`). The scripted model calls `ask_human`; the CLI starts the
//! server, lists its tools and calls it; the task ends blocked with the question in its
//! `Q&A.md`, and the tool's answer (exit 0, the answer comes in Q&A.md) reaches the model.
//!
//! Claude Code only, so far. Codex 0.169 offers MCP tools to the model only through its
//! `tool_search` tool (a client-side search round the mock does not script yet), so a scripted
//! direct call is refused (`unsupported call: mcp__fleet__ask_human`); its config is covered
//! by `fleet setup codex --mcp`'s tests.

use crate::coder::{CLAUDE, Coder};
use crate::{DEADLINE, Scene, assert_no_leftovers};

/// Plays `mcp_ask_human` with `coder`, whose MCP config `setup` writes first.
fn asks_a_human_through_mcp(coder: &Coder, setup: impl FnOnce(&Scene) -> String) {
    let Some(scene) = coder.scene_with("mcp_ask_human", &[]) else { return };
    let set_up = setup(&scene);
    assert!(set_up.contains("MCP server `fleet`"), "{set_up}");
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
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
