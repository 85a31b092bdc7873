//! Static guides: `bd prime` (the workflow primer agents load at session start), `bd prime
//! --full`, `bd quickstart` and `bd human`. The text is fleet's own; it names the commands
//! beads documents and says plainly which ones fleet's bd does not have.

use super::context::BdContext;

#[derive(Debug, clap::Args)]
pub struct PrimeArgs {
    /// The complete guide: quality tools, lifecycle, workflows, conventions.
    #[arg(long)]
    pub full: bool,
    /// A short version for agents that reach the tracker through MCP tools.
    #[arg(long)]
    pub mcp: bool,
}

const PRIME: &str = r#"# Issue tracking with bd (fleet)

This project tracks work as issues with dependencies. Use `bd` for all task tracking —
not markdown TODO lists — so that other agents and people see the same queue.

## Session loop
- `bd ready` — open issues with no open blockers; pick the first (highest priority).
- `bd update <id> --claim` — take it atomically (in_progress, assigned to you). If the claim
  fails, someone else got it: pick another. `bd ready --claim` does both in one step.
- `bd show <id>` — read the description, acceptance criteria, dependencies and comments.
- Work. Found something else to do? `bd create "Title" -t bug -p 1 --deps discovered-from:<id>`.
- `bd close <id> --reason "what was done"` — when the acceptance criteria hold.
- Stuck on a question: `bd update <id> --status blocked --notes "QUESTION: …"`.

## Essentials
- `bd create "Title" -d "…" -t task|bug|feature|epic|chore -p 0-4 [--parent <epic>]`
- `bd dep add <issue> <depends-on>` — the second blocks the first.
- `bd list`, `bd blocked`, `bd stats`, `bd search "text"`
- `bd comments add <id> "note"` — leave context for whoever comes next.
- Add `--json` to any command for machine-readable output.

Priorities: 0 critical … 2 normal (default) … 4 backlog.
Run `bd prime --full` for quality tools, lifecycle commands and conventions."#;

const PRIME_MCP: &str = r#"# bd (fleet) — issue tracking
Find work with ready, claim it atomically (update --claim), read it with show, close it with a
reason when done, and file anything you discover as a new issue linked discovered-from the
current one. Priorities 0 (critical) to 4 (backlog)."#;

const PRIME_FULL: &str = r#"# Issue tracking with bd (fleet) — the full guide

fleet answers as `bd`: the commands below work against fleet's native queue (a redb store in
`.beads/`, found through $BEADS_DIR or the nearest `.beads/` above the current directory).
There is no daemon and no sync step; every command sees every other command's writes at once.

## Finding and taking work
- `bd ready [--json] [-n N] [--label L] [--type T] [--parent EPIC]` — open, unblocked work in
  priority order (P0 first, newest first within a priority).
- `bd update <id> --claim` / `bd ready --claim` — atomic claim: exactly one agent wins.
- `bd show <id>` — fields, dependencies (`Dependencies (N):`), dependents and comments.
- `bd list [--status S] [--all] [--label L] [--assignee A]`, `bd search "text"`,
  `bd blocked`, `bd stats`, `bd count`, `bd children <epic>`.

## Creating and linking
- `bd create "Title" -d "…" -t bug|feature|task|epic|chore|decision|spike|story -p 0-4
  [--labels a,b] [--parent <epic>] [--deps blocks:<id>,discovered-from:<id>]
  [--acceptance "…"] [--estimate MIN] [--due +2d] [--silent]`
- `bd dep add <issue> <depends-on> [--type blocks|parent-child|related|discovered-from|…]`,
  `bd dep <blocker> --blocks <blocked>`, `bd dep tree <id>`, `bd dep cycles`.
- `bd comments add <id> "…"`, `bd label add <id> <label>`.

## Quality Tools
- `bd lint [ids…]` — checks that every open issue has the sections its type needs
  (bug: Steps to Reproduce + Acceptance Criteria; task/feature/story: Acceptance Criteria;
  epic: Success Criteria; decision: Decision, Rationale, Alternatives Considered;
  spike: Goal, Findings). Exits non-zero and names each issue that lacks them.
- `bd create --validate` refuses an issue whose description lacks them;
  `bd config set validation.on-create error|warn` makes that the default, and
  `bd config set validation.on-close error|warn` asks for a real close reason.
- `bd preflight` (a pre-PR checklist in full beads) is not part of fleet's bd: run `bd lint`,
  your tests, and `bd list --status in_progress` before you open a pull request.
- `bd human` — the short list of commands for people.

## Lifecycle & Hygiene
- `bd defer <id> [--until +1w]` / `bd undefer <id>` — park work without closing it; deferred
  issues leave `bd ready` until the date passes.
- `bd stale [--days 30]` — issues nobody touched for a while: close, defer or re-prioritise.
- `bd supersede` (full beads) is not in fleet's bd: close the old issue with
  `bd close <old> --reason "superseded by <new>"` and link them with
  `bd dep add <new> <old> --type supersedes`.
- `bd orphans` (full beads: issues referenced from commits but still open) is not in fleet's
  bd: use `bd list --status in_progress` and `bd stale` to find abandoned work.
- `bd reopen <id> --reason "…"`, `bd delete <id> --force` (a hard delete; without `--force`
  it only previews).

## Structured Workflows
- Epics: create the epic, then its steps with `--parent <epic>` (ids `<epic>.1`, `<epic>.2`, …).
  An epic cannot be closed while children are open (use `--force` to override).
- Ordering: `blocks` edges between steps; `--waits-for <epic>` makes an issue wait until all
  children of that epic are closed (`--waits-for-gate any-children` for the first one).
- `bd formula list` (beads' workflow templates and molecules) is not available in fleet's bd;
  model repeatable workflows as epics with child steps.

## Conventions
- One issue per unit of work; a title that says what, a description that says why, and an
  `## Acceptance Criteria` section that says when it is done.
- Claim before you start, close with a reason that tells the next reader what changed.
- File discovered work immediately with `--deps discovered-from:<current>` rather than
  widening the current issue.
- Priorities: P0 outage/critical, P1 important, P2 normal, P3 nice to have, P4 backlog.
- Use `--json` when a program reads the output; human text may change, JSON shapes do not.
- Never edit `.beads/` files by hand; `bd export` / `bd import` move issues in and out as JSONL."#;

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
    let text = if args.full {
        PRIME_FULL
    } else if args.mcp {
        PRIME_MCP
    } else {
        PRIME
    };
    ctx.out.emit(&serde_json::json!({ "content": text }), || text.to_string());
}

pub fn cmd_quickstart(ctx: &BdContext) {
    ctx.out.emit(&serde_json::json!({ "content": QUICKSTART }), || QUICKSTART.to_string());
}

pub fn cmd_human(ctx: &BdContext) {
    ctx.out.emit(&serde_json::json!({ "content": HUMAN }), || HUMAN.to_string());
}
