//! Guides: `bd prime` (the workflow primer agents load at session start, through the hooks
//! `bd setup` writes), `bd quickstart` and `bd human`. The text is fleet's own; it names the
//! commands beads documents and says plainly which ones fleet's bd does not have.
//!
//! `bd prime` behaves as beads' does where hooks depend on it: outside any beads project it
//! prints nothing and succeeds (a global hook must not leak into unrelated projects); a
//! `PRIME.md` (in `./.beads/`, then the workspace, then `~/.config/beads/`) replaces the
//! built-in text unless `--export`; the workspace's memories follow the text;
//! `--hook-json` wraps everything in the SessionStart envelope that Claude Code, Gemini CLI
//! and Codex read (`{"hookSpecificOutput":{"hookEventName":"SessionStart",
//! "additionalContext":…}}`), also when there is nothing to say.

use std::path::PathBuf;

use super::context::BdContext;
use super::memory;
use crate::cli::CliError;

#[derive(Debug, Default, clap::Args)]
pub struct PrimeArgs {
    /// The complete guide: quality tools, lifecycle, workflows, conventions.
    #[arg(long)]
    pub full: bool,
    /// A short version for agents that reach the tracker through MCP tools.
    #[arg(long)]
    pub mcp: bool,
    /// Stealth mode: a session close without git steps.
    #[arg(long)]
    pub stealth: bool,
    /// Print the built-in text, ignoring any PRIME.md override.
    #[arg(long)]
    pub export: bool,
    /// Only the persistent memories (for compact hook contexts).
    #[arg(long)]
    pub memories_only: bool,
    /// Wrap the output in the SessionStart hook JSON envelope (Claude Code, Gemini CLI,
    /// Codex).
    #[arg(long)]
    pub hook_json: bool,
}

const PRIME: &str = r#"# Issue tracking with bd (fleet)
Track all work as bd issues, not TODO lists: other agents and people share this queue.

- `bd ready --terse`: unblocked work, best first. `bd update <id> --claim` takes one
  atomically (failed: someone else has it, pick another); `bd ready --claim` does both.
- `bd show <id> --terse`: description, acceptance, dependencies, comments.
- `bd close <id> --reason "what was done"` when the acceptance criteria hold.
- Blocked on a question: `bd update <id> --status blocked --notes "QUESTION: …"`.
- New work found: `bd create "Title" -d "…" -t bug|task|feature|epic|chore -p 0-4
  --deps discovered-from:<id>` (`--parent <epic>` for an epic's steps).
- `bd dep add <issue> <depends-on>`, `bd comments add <id> "note"`, `bd list`, `bd blocked`,
  `bd search "text"`. `--json` for programs, `--terse` for one line per issue.
- Priority 0 critical, 2 normal (default), 4 backlog. `bd prime --full`: the whole guide."#;

/// The session close of `--stealth`: no git steps.
const STEALTH_CLOSE: &str = r#"## Session close
Close finished work with a reason. No git operations. `bd remember "insight"` keeps what
later sessions need."#;

const PRIME_MCP: &str = r#"# bd (fleet) — issue tracking
Find work with ready, claim it atomically (update --claim), read it with show, close it with a
reason when done, and file anything you discover as a new issue linked discovered-from the
current one. Priorities 0 (critical) to 4 (backlog)."#;

const PRIME_FULL: &str = r#"# Issue tracking with bd (fleet): the full guide
bd here is fleet's native queue (`.beads/`, found by $BEADS_DIR or upwards from the current
directory). No daemon, no sync step: every command sees every write at once. Add `--json`
for programs (its shapes do not change), `--terse` for one line per issue.

## Work
- `bd ready [-n N] [--label L] [--type T] [--parent EPIC]`: unblocked work, P0 first.
- `bd update <id> --claim` or `bd ready --claim`: atomic, exactly one agent wins.
- `bd show <id>`; `bd list [--status S] [--all] [--label L] [--assignee A]`; `bd search "…"`;
  `bd blocked`, `bd stats`, `bd count`, `bd children <epic>`.
- `bd create "Title" -d "…" -t bug|feature|task|epic|chore|decision|spike|story -p 0-4
  [--labels a,b] [--parent <epic>] [--deps blocks:<id>,discovered-from:<id>]
  [--acceptance "…"] [--estimate MIN] [--due +2d] [--silent]`
- `bd dep add <issue> <depends-on> [--type blocks|parent-child|related|discovered-from]`,
  `bd dep tree <id>`, `bd dep cycles`; `bd comments add <id> "…"`, `bd label add <id> <l>`.

## Quality Tools
- `bd lint [ids…]`: names each open issue missing its type's sections (bug: Steps to
  Reproduce, Acceptance Criteria; task/feature/story: Acceptance Criteria; epic: Success
  Criteria; decision: Decision, Rationale, Alternatives Considered; spike: Goal, Findings).
- `bd create --validate`; `bd config set validation.on-create|validation.on-close error|warn`.
- `bd preflight [--check]`: the pre-PR checklist. `bd doctor --check=conventions`.
- `bd human <id>`: flag for a human decision (`bd human list|respond|dismiss`).

## Lifecycle & Hygiene
- `bd defer <id> [--until +1w]` / `bd undefer <id>`: out of `bd ready` until then.
- `bd stale [--days 30]`: untouched issues to close, defer or re-prioritise.
- `bd supersede <old> --with <new>`: link and close the old one.
- `bd orphans`: open issues that commits already mention.
- `bd remember "insight"` / `bd memories` / `bd forget <key>`: notes shown by `bd prime`.
- `bd reopen <id> --reason "…"`; `bd delete <id> --force` (without it, a preview).

## Structured Workflows
- Epics: steps are created with `--parent <epic>` (`<epic>.1`, …); an epic with open
  children does not close without `--force`. Order steps with `blocks` edges;
  `--waits-for <epic>` waits for all its children (`--waits-for-gate any-children`: the first).
- `bd formula list` (beads' templates and molecules) is not in fleet's bd: use epics.

## Conventions
- One issue per unit of work: the title says what, the description why, an
  `## Acceptance Criteria` section when it is done. Claim before starting; close with a
  reason the next reader can use; file discovered work with `--deps discovered-from:<id>`.
- P0 critical, P1 important, P2 normal, P3 nice to have, P4 backlog.
- Never edit `.beads/` by hand; `bd export` / `bd import` move issues as JSONL."#;

const QUICKSTART: &str = r#"bd — Dependency-Aware Issue Tracker (fleet)

Issues chained together like beads: each can block others, and `bd ready` shows only the work
whose blockers are all closed.

GETTING STARTED
  bd init                    Create .beads/ here (prefix from the directory name)
  bd init --prefix api       … or choose the id prefix: api-<hash>

CREATING ISSUES
  bd create "Fix login bug"
  bd create "Add auth" -p 0 -t feature -d "why and what"
  bd create "Write tests" --deps blocks:<id>       (the new issue waits for <id>)
  bd create "Step 1" --parent <epic>               (child id <epic>.1)

VIEWING ISSUES
  bd list                    Open issues (--all for closed ones too)
  bd show <id>               One issue in full
  bd ready                   Work with no open blockers
  bd blocked                 Work waiting on something

MANAGING DEPENDENCIES
  bd dep add <issue> <depends-on>     The second blocks the first
  bd dep tree <id>                    What an issue waits for
  bd dep cycles                       Find circular waits

WORKING
  bd update <id> --claim              Take an issue (atomic)
  bd close <id> --reason "done"       Finish it

Dependency-Aware: an issue is ready only when every issue it depends on (blocks,
parent-child, waits-for) is closed, so agents never start work that cannot be finished.
Add --json to any command for machine-readable output."#;

const HUMAN: &str = r#"bd for humans — the commands you need most

  bd ready                      What can be worked on now
  bd list [--all]               Open (or all) issues
  bd show <id>                  Details of one issue
  bd create "Title" -p 1        File an issue (priority 0-4)
  bd update <id> --status open --assignee ""     Put an issue back in the queue
  bd close <id> --reason "…"    Close an issue
  bd dep add <issue> <blocker>  Make one issue wait for another
  bd blocked                    What is waiting, and on what
  bd stats                      Counts by state

Agents: run `bd prime` for the workflow primer."#;

pub fn cmd_prime(ctx: &BdContext, args: PrimeArgs) {
    let content = prime_content(ctx, &args).unwrap_or_default();
    if args.hook_json {
        write_hook_line(&serde_json::json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": content,
            }
        }));
    } else if !content.is_empty() {
        ctx.out.emit(&serde_json::json!({ "content": content }), || content.clone());
    }
}

/// One line of hook JSON on stdout.
fn write_hook_line(value: &serde_json::Value) {
    let mut line = Vec::new();
    crate::beads::jsonl::write_line(&mut line, value);
    crate::cli::output::write_stdout(String::from_utf8_lossy(&line).trim_end());
}

#[derive(Debug, clap::Args)]
pub struct CodexHookArgs {
    /// SessionStart, PreCompact, PostCompact or UserPromptSubmit (the `hook_event_name` of
    /// the JSON on stdin wins).
    pub event: String,
}

/// What Codex passes a hook on stdin (the fields the hook reads).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct CodexHookInput {
    session_id: String,
    cwd: String,
    hook_event_name: String,
}

/// `bd codex-hook EVENT`: what the hooks `bd setup codex` installs in beads 1.0.5 run. At the
/// start of a session the primer goes into the context; after a compaction a marker (one per
/// session and directory, in the user's cache) makes the next prompt bring it back.
pub fn cmd_codex_hook(ctx: &BdContext, args: CodexHookArgs) -> Result<(), CliError> {
    let mut text = String::new();
    // A hook with nothing on stdin is fine: the event is the argument.
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
    let input: CodexHookInput = serde_json::from_str(&text).unwrap_or_default();
    let event =
        if input.hook_event_name.is_empty() { args.event } else { input.hook_event_name.clone() };
    let marker = refresh_marker(&input);
    match event.as_str() {
        "SessionStart" => inject_prime(ctx, "SessionStart"),
        "PreCompact" => {}
        "PostCompact" => {
            if let Some(dir) = marker.parent() {
                // The marker is a convenience: without it the next prompt simply goes without
                // the primer.
                let _ = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&marker, "1\n"));
            }
        }
        "UserPromptSubmit" => {
            if marker.is_file() {
                let _ = std::fs::remove_file(&marker);
                inject_prime(ctx, "UserPromptSubmit");
            }
        }
        other => return Err(CliError::new(format!("unsupported Codex hook event {other:?}"))),
    }
    Ok(())
}

/// The primer as a hook's additional context; nothing outside a beads project.
fn inject_prime(ctx: &BdContext, event: &str) {
    let Some(content) = prime_content(ctx, &PrimeArgs::default()) else { return };
    if content.trim().is_empty() {
        return;
    }
    write_hook_line(&serde_json::json!({
        "continue": true,
        "hookSpecificOutput": { "hookEventName": event, "additionalContext": content },
    }));
}

/// `<cache>/beads/codex-hooks/<sha256(session \0 cwd)>.refresh`, as beads names it.
fn refresh_marker(input: &CodexHookInput) -> PathBuf {
    use sha2::{Digest, Sha256};
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    let session = if input.session_id.is_empty() { "unknown-session" } else { &input.session_id };
    let cwd =
        if input.cwd.is_empty() { "unknown-workspace" } else { input.cwd.trim_end_matches('/') };
    let digest = Sha256::digest(format!("{session}\0{cwd}").as_bytes());
    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    cache.join("beads").join("codex-hooks").join(format!("{name}.refresh"))
}

/// What `bd prime` says, or `None` outside any beads project (where it is silent).
fn prime_content(ctx: &BdContext, args: &PrimeArgs) -> Option<String> {
    let dir = ctx.workspace_dir().ok()?;
    if !crate::workspace::is_workspace(dir) {
        return None;
    }
    let memories = memory::memories(ctx).unwrap_or_default();
    if args.memories_only {
        return Some(memories_section(&memories, false).unwrap_or_else(|| {
            "# Persistent memories\n\nNo memories stored. Use `bd remember \"insight\"` to add one."
                .to_string()
        }));
    }
    if !args.export
        && let Some(text) = prime_override(dir)
    {
        return Some(with_run_section(ctx, text));
    }
    if let Some(task) = ctx.attempt_task() {
        // Inside a fleet run: one task, never the session loop of claiming more.
        let mut text = in_run_primer(task);
        if let Some(section) = memories_section(&memories, args.mcp) {
            text.push_str("\n\n");
            text.push_str(&section);
        }
        return Some(with_run_section(ctx, text));
    }
    let mut text = if args.full {
        PRIME_FULL.to_string()
    } else if args.mcp {
        PRIME_MCP.to_string()
    } else {
        let close = if args.stealth { STEALTH_CLOSE } else { PRIME_CLOSE };
        format!("{PRIME}\n\n{close}")
    };
    if let Some(section) = memories_section(&memories, args.mcp) {
        text.push_str("\n\n");
        text.push_str(&section);
    }
    Some(text)
}

/// The primer inside a fleet run: the agent's one task, how to finish it, and how to work
/// beside the other agents (mail, reservations) — never "claim more work".
fn in_run_primer(task: &str) -> String {
    format!(
        r#"# Issue tracking with bd (fleet run)

You are an agent of a fleet run with exactly one task: {task} ($FLEET_TASK_ID). Work on it
only. Do not claim other tasks: `bd ready --claim`, `bd update <id> --claim` and the like are
refused inside a run, and the supervisor hands out the rest of the queue.

## Your task
- `bd show {task}` — its description, acceptance criteria, dependencies and comments.
- Found more work? `bd create "Title" -d "…" --deps discovered-from:{task}` (do not start it).
- `bd close {task} --reason "what was done"` — when the acceptance criteria hold.
- Stuck on a question: `bd update {task} --status blocked --notes "QUESTION: …"`.

## Other agents
- `bd mail send <task-id> "…"` — a message to the agent of another task (now, or at its next
  run); `bd mail inbox` — messages for your task; `bd mail ack <id>` — once read.
- `bd reserve '<glob>' --exclusive --reason "…"` — reserve files before editing what others may
  edit (globs relative to the repository's top); reservations end with your run, or with
  `bd release-files`."#
    )
}

/// `text`, and inside a fleet run the sections about the agent's task: its branch, and the
/// messages for it not yet acknowledged.
fn with_run_section(ctx: &BdContext, mut text: String) -> String {
    for section in [own_branch_section(ctx), unread_mail_section(ctx)].into_iter().flatten() {
        text.push_str("\n\n");
        text.push_str(&section);
    }
    text
}

/// Inside a fleet run, the messages for the agent's task not yet acknowledged.
fn unread_mail_section(ctx: &BdContext) -> Option<String> {
    let task = ctx.attempt_task()?;
    let messages = ctx.store().ok()?.read().ok()?.messages().ok()?;
    let unread = crate::coord::inbox(messages, crate::coord::Mailbox::Task(task), false);
    if unread.is_empty() {
        return None;
    }
    Some(format!(
        "## Messages for {task} (acknowledge each once read: `bd mail ack <id>`)\n{}",
        crate::cli::mail::render(&unread)
    ))
}

/// Inside a fleet run (`FLEET_TASK_ID` set by the supervisor) for a task with a worktree of
/// its own: that the agent works on its branch `fleet/<id>` and commits there — the same words
/// as its prompt (`crate::supervisor::prompt::own_branch`).
fn own_branch_section(ctx: &BdContext) -> Option<String> {
    let id = ctx.attempt_task()?;
    let issue = ctx.store().ok()?.read().ok()?.issue(id).ok()??;
    let landing = issue.fleet.land.as_ref()?;
    Some(format!("## Your branch\n{}", crate::supervisor::prompt::own_branch(landing)))
}

/// The session close that follows [`PRIME`]; `--stealth` has [`STEALTH_CLOSE`] instead.
const PRIME_CLOSE: &str = r#"## Session close
Close finished work with a reason, run the checks (tests, linters), `git status`, then
`bd sync` (a no-op without a remote). `bd remember "insight"` keeps what later sessions need."#;

/// A `PRIME.md` that replaces the built-in primer: `./.beads/PRIME.md`, then the
/// workspace's, then `$XDG_CONFIG_HOME/beads/PRIME.md` (default `~/.config`).
fn prime_override(workspace: &std::path::Path) -> Option<String> {
    let global = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
        .map(|config| config.join("beads").join("PRIME.md"));
    [Some(PathBuf::from(".beads").join("PRIME.md")), Some(workspace.join("PRIME.md")), global]
        .into_iter()
        .flatten()
        .find_map(|path| std::fs::read_to_string(path).ok())
}

/// The memories as `bd prime` shows them: a heading and one entry per key (one line each
/// when `compact`), or `None` when there are none.
fn memories_section(
    memories: &std::collections::BTreeMap<String, String>,
    compact: bool,
) -> Option<String> {
    if memories.is_empty() {
        return None;
    }
    let mut text = if compact {
        "## Memories\n".to_string()
    } else {
        format!(
            "## Persistent Memories ({})\n\nStored with `bd remember`. Update one with \
             `bd remember --key <key> \"new content\"`, search with `bd memories <keyword>`, \
             remove one with `bd forget <key>`.\n",
            memories.len()
        )
    };
    for (key, value) in memories {
        if compact {
            text.push_str(&format!("- {key}: {}\n", value.replace('\n', " ")));
        } else {
            text.push_str(&format!("\n### {key}\n{value}\n"));
        }
    }
    Some(text.trim_end().to_string())
}

pub fn cmd_quickstart(ctx: &BdContext) {
    ctx.out.emit(&serde_json::json!({ "content": QUICKSTART }), || QUICKSTART.to_string());
}

pub fn cmd_human(ctx: &BdContext) {
    ctx.out.emit(&serde_json::json!({ "content": HUMAN }), || HUMAN.to_string());
}
