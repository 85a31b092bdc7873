//! The workflow commands beads' primer and AGENTS.md files tell agents to run, beyond the
//! core ones: `bd q` (quick capture), `bd supersede`, `bd human`, `bd orphans`,
//! `bd preflight` and `bd edit`. Each is a thin layer over the requests `create`, `dep add`,
//! `close`, `label` and `update` already make; none has rules of its own.

use std::path::Path;
use std::process::{Command, Stdio};

use serde::Serialize;

use super::context::BdContext;
use super::create::create_quietly;
use super::issue::patch_each;
use crate::cli::CliError;
use crate::cli::issue as fleet;
use crate::cli::output::{id_title, printable};
use crate::model::{Issue, Status, dep_type};
use crate::op::IssuePatch;
use crate::store::ListFilter;

#[derive(Debug, clap::Args)]
pub struct QuickArgs {
    /// The title (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    pub title: Vec<String>,
    /// Priority 0-4 or P0-P4.
    #[arg(short, long, default_value = "2")]
    pub priority: String,
    /// Issue type.
    #[arg(short = 't', long = "type", default_value = "task")]
    pub issue_type: String,
    /// Labels, comma-separated or repeated.
    #[arg(short, long = "labels", alias = "label")]
    pub labels: Vec<String>,
}

/// `bd q "title"`: creates the issue and prints only its id (`bd create --silent`).
pub fn cmd_quick(ctx: &BdContext, args: QuickArgs) -> Result<(), CliError> {
    let new = fleet::NewIssue {
        title: args.title.join(" "),
        priority: args.priority,
        issue_type: args.issue_type,
        labels: args.labels,
        ..fleet::NewIssue::default()
    };
    create_quietly(ctx, new)
}

#[derive(Debug, clap::Args)]
pub struct SupersedeArgs {
    /// The issue that is superseded (it is closed).
    pub id: String,
    /// The issue that replaces it.
    #[arg(long = "with", value_name = "NEW", required = true)]
    pub with: String,
}

/// `bd supersede OLD --with NEW`: a `supersedes` edge from the old issue to the new one,
/// then the old one closed.
pub fn cmd_supersede(ctx: &BdContext, args: SupersedeArgs) -> Result<(), CliError> {
    let fctx = ctx.require_store()?;
    let reader = fctx.store()?.read()?;
    let (old, new) = (reader.resolve(&args.id)?, reader.resolve(&args.with)?);
    drop(reader);
    if old == new {
        return Err(CliError::new("cannot mark an issue as superseded by itself"));
    }
    crate::cli::dep::add_dependency(fctx, &old, &new, dep_type::SUPERSEDES)?;
    let close = fleet::close_requests(
        std::slice::from_ref(&old),
        &[format!("Superseded by {new}")],
        "",
        true,
    );
    let result = fleet::close_issues(fctx, close).map_err(CliError::message_only)?;
    if let Some(refused) = result.refused.first() {
        return Err(CliError::new(format!("closing {old}: {}", refused.error)));
    }
    let outcome = serde_json::json!({ "superseded": old, "replacement": new, "status": "closed" });
    ctx.out.emit(&outcome, || format!("✓ Marked {old} as superseded by {new} (closed)"));
    Ok(())
}

/// The label that flags an issue for a human decision, as beads has it.
const HUMAN_LABEL: &str = "human";

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HumanArgs {
    #[command(subcommand)]
    pub command: Option<HumanCommand>,
    /// Flag this issue for a human decision (the `human` label). Without an id, prints the
    /// essential commands for people.
    pub id: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum HumanCommand {
    /// List the issues flagged for a human.
    List {
        /// Only issues with this status.
        #[arg(short, long)]
        status: Option<String>,
    },
    /// Answer a flagged issue: the response becomes a comment and the issue is closed.
    Respond {
        id: String,
        #[arg(short, long, required = true)]
        response: String,
    },
    /// Dismiss a flagged issue: it is closed without an answer.
    Dismiss {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
}

impl HumanArgs {
    pub fn writes(&self) -> bool {
        !matches!(self.command, Some(HumanCommand::List { .. }))
            && (self.id.is_some() || self.command.is_some())
    }
}

pub fn cmd_human(ctx: &BdContext, args: HumanArgs) -> Result<(), CliError> {
    let fctx = || ctx.require_store();
    match (args.command, args.id) {
        (None, None) => super::guide::cmd_human(ctx),
        (None, Some(id)) => {
            let changes = crate::cli::label::apply_label_change(fctx()?, &[id], HUMAN_LABEL, true)
                .map_err(CliError::message_only)?;
            ctx.out.emit(&changes, || {
                changes
                    .iter()
                    .map(|c| format!("✓ Flagged {} for a human decision", c.id))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        (Some(HumanCommand::List { status }), _) => {
            let statuses = status.as_deref().map(Status::parse_user).transpose()?;
            let filter = ListFilter {
                labels: vec![HUMAN_LABEL.to_string()],
                statuses: statuses.into_iter().collect(),
                ..ListFilter::default()
            };
            let (issues, _) = ctx.store()?.read()?.list(&filter)?;
            ctx.out.emit(&issues, || {
                if issues.is_empty() {
                    return "No human-needed beads found.".to_string();
                }
                let mut lines = vec![format!("\nHuman-needed beads ({} found)\n", issues.len())];
                for s in &issues {
                    lines.push(format!("  {} {}", s.issue.id, printable(&s.issue.title)));
                    lines.push(format!("    Status: {}", s.issue.status));
                    lines.push(format!("    Priority: P{}\n", s.issue.priority));
                }
                lines.join("\n")
            });
        }
        (Some(HumanCommand::Respond { id, response }), _) => {
            let (comment, _) = crate::cli::comment::write_comment(fctx()?, &id, &response, None)
                .map_err(CliError::message_only)?;
            close_flagged(ctx, &comment.issue_id, "Responded".into())?;
            ctx.out.text(&format!("✔ Bead {} closed with response.", comment.issue_id));
        }
        (Some(HumanCommand::Dismiss { id, reason }), _) => {
            let id = ctx.store()?.read()?.resolve(&id)?;
            let reason =
                reason.map_or_else(|| "Dismissed".to_string(), |r| format!("Dismissed: {r}"));
            close_flagged(ctx, &id, reason)?;
            ctx.out.text(&format!("✔ Bead {id} dismissed."));
        }
    }
    Ok(())
}

fn close_flagged(ctx: &BdContext, id: &str, reason: String) -> Result<(), CliError> {
    let close = fleet::close_requests(&[id.to_string()], &[reason], "", false);
    let result =
        fleet::close_issues(ctx.require_store()?, close).map_err(CliError::message_only)?;
    match result.refused.first() {
        Some(refused) => Err(CliError::new(format!("closing {id}: {}", refused.error))),
        None => Ok(()),
    }
}

#[derive(Debug, clap::Args)]
pub struct OrphansArgs {
    /// Close the orphans found (reason "Implemented").
    #[arg(short, long)]
    pub fix: bool,
    /// Show the full commit of each.
    #[arg(long)]
    pub details: bool,
    /// Only issues with all of these labels.
    #[arg(short, long)]
    pub label: Vec<String>,
}

/// An open issue that a commit already mentions.
#[derive(Debug, Serialize)]
pub struct Orphan {
    pub issue_id: String,
    pub title: String,
    pub status: String,
    pub latest_commit: String,
    pub latest_commit_message: String,
}

/// Open and in-progress issues whose id appears in a commit message of the project's git
/// history: work that was done but never closed.
pub fn find_orphans(ctx: &BdContext, labels: &[String]) -> Result<Vec<Orphan>, CliError> {
    let dir = ctx.workspace_dir()?;
    let project = dir.parent().unwrap_or(dir);
    let Some(log) = git_log(project) else { return Ok(Vec::new()) };
    let filter = ListFilter {
        statuses: vec![Status::Open, Status::InProgress],
        labels: labels.to_vec(),
        ..ListFilter::default()
    };
    let (issues, _) = ctx.store()?.read()?.list(&filter)?;
    Ok(issues
        .into_iter()
        .filter_map(|s| {
            let (hash, subject) = log.iter().find(|(_, message)| mentions(message, &s.issue.id))?;
            Some(Orphan {
                issue_id: s.issue.id.clone(),
                title: s.issue.title.clone(),
                status: s.issue.status.to_string(),
                latest_commit: hash.chars().take(12).collect(),
                latest_commit_message: subject.lines().next().unwrap_or_default().to_string(),
            })
        })
        .collect())
}

/// `(hash, message)` of every commit reachable from any ref, newest first; `None` outside a
/// git repository.
fn git_log(dir: &Path) -> Option<Vec<(String, String)>> {
    let output = Command::new("git")
        .args(["log", "--all", "--format=%H%x1f%B%x1e"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&output.stdout);
    Some(
        text.split('\u{1e}')
            .filter_map(|entry| {
                let (hash, message) = entry.trim_start().split_once('\u{1f}')?;
                Some((hash.to_string(), message.trim().to_string()))
            })
            .collect(),
    )
}

/// Whether `message` names `id` as a whole word (not `bd-12` inside `bd-123` or `bd-12.1`).
fn mentions(message: &str, id: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    message.match_indices(id).any(|(at, _)| {
        let before = message[..at].chars().next_back();
        let rest = &message[at + id.len()..];
        // A dot ends a sentence, but `.1` makes a child id.
        let child =
            rest.strip_prefix('.').is_some_and(|r| r.starts_with(|d: char| d.is_ascii_digit()));
        !before.is_some_and(|c| word(c) || c == '.') && !rest.starts_with(word) && !child
    })
}

pub fn cmd_orphans(ctx: &BdContext, args: OrphansArgs) -> Result<(), CliError> {
    let orphans = find_orphans(ctx, &args.label)?;
    ctx.out.emit(&orphans, || {
        if orphans.is_empty() {
            return "✓ No orphaned issues found".to_string();
        }
        let mut lines = vec![format!("\n⚠ Found {} orphaned issue(s):\n", orphans.len())];
        for (n, orphan) in orphans.iter().enumerate() {
            lines.push(format!("{}. {}: {}", n + 1, orphan.issue_id, printable(&orphan.title)));
            lines.push(format!("   Status: {}", orphan.status));
            lines.push(format!(
                "   Latest commit: {} - {}",
                orphan.latest_commit,
                printable(&orphan.latest_commit_message)
            ));
        }
        lines.join("\n")
    });
    if args.fix && !orphans.is_empty() {
        let ids: Vec<String> = orphans.iter().map(|o| o.issue_id.clone()).collect();
        let close = fleet::close_requests(&ids, &["Implemented".to_string()], "", false);
        let result =
            fleet::close_issues(ctx.require_store()?, close).map_err(CliError::message_only)?;
        for closed in &result.closed {
            ctx.out.note(&format!("✓ Closed {}", closed.issue.id));
        }
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct PreflightArgs {
    /// Run the checks instead of printing the checklist.
    #[arg(long)]
    pub check: bool,
    /// Accepted for compatibility (nothing is fixed automatically).
    #[arg(long)]
    pub fix: bool,
    /// Leave out the lint check.
    #[arg(long)]
    pub skip_lint: bool,
}

#[derive(Debug, Serialize)]
pub struct Check {
    name: String,
    passed: bool,
    skipped: bool,
    command: String,
    detail: String,
}

const CHECKLIST: &str = "PR Readiness Checklist:

[ ] Tests pass (the project's own test command)
[ ] Lint passes (the project's own linters)
[ ] Issues well formed: bd lint
[ ] No forgotten work: bd orphans (issues a commit mentions, still open)
[ ] No abandoned claims: bd list --status in_progress

Run 'bd preflight --check' to validate automatically.";

/// `bd preflight`: the pre-PR checklist, or with `--check` the tracker's part of it run:
/// lint, orphans, and in-progress work nobody touched for two weeks. Exits non-zero when a
/// check fails.
pub fn cmd_preflight(ctx: &BdContext, args: PreflightArgs) -> Result<(), CliError> {
    if !args.check {
        ctx.out.emit(&serde_json::json!({ "checklist": CHECKLIST }), || CHECKLIST.to_string());
        return Ok(());
    }
    let checks = preflight_checks(ctx, args.skip_lint)?;
    let passed = checks.iter().all(|c| c.passed || c.skipped);
    ctx.out.emit(&serde_json::json!({ "checks": checks, "passed": passed }), || {
        let mut lines = Vec::new();
        for check in &checks {
            let mark = if check.skipped {
                "⚠"
            } else if check.passed {
                "✓"
            } else {
                "✗"
            };
            lines.push(format!("{mark} {}", check.name));
            lines.push(format!("  Command: {}", check.command));
            if !check.detail.is_empty() {
                lines.push(format!("  {}", check.detail));
            }
        }
        lines.join("\n")
    });
    if passed { Ok(()) } else { Err(CliError::new("preflight checks failed")) }
}

/// The checks of `preflight --check` and `doctor --check=conventions`.
pub fn preflight_checks(ctx: &BdContext, skip_lint: bool) -> Result<Vec<Check>, CliError> {
    let store = ctx.store()?;
    let reader = store.read()?;
    let filter =
        ListFilter { statuses: vec![Status::Open, Status::InProgress], ..ListFilter::default() };
    let (open, _) = reader.list(&filter)?;
    let unlinted: Vec<&Issue> = open
        .iter()
        .map(|s| &s.issue)
        .filter(|i| !super::lint::missing_sections(i).is_empty())
        .collect();
    let cutoff = ctx.now() - jiff::SignedDuration::from_hours(24 * 14);
    let stale: Vec<&Issue> = open
        .iter()
        .map(|s| &s.issue)
        .filter(|i| i.status == Status::InProgress && i.updated_at < cutoff)
        .collect();
    let orphans = find_orphans(ctx, &[])?;
    let ids =
        |issues: &[&Issue]| issues.iter().map(|i| i.id.as_str()).collect::<Vec<_>>().join(", ");
    Ok(vec![
        Check {
            name: "Lint: required sections present".into(),
            passed: unlinted.is_empty(),
            skipped: skip_lint,
            command: "bd lint".into(),
            detail: if unlinted.is_empty() {
                String::new()
            } else {
                format!("missing sections: {}", ids(&unlinted))
            },
        },
        Check {
            name: "No stale in-progress work (14 days)".into(),
            passed: stale.is_empty(),
            skipped: false,
            command: "bd stale --days 14 --status in_progress".into(),
            detail: if stale.is_empty() {
                String::new()
            } else {
                format!("stale: {}", ids(&stale))
            },
        },
        Check {
            name: "No orphans (open issues a commit mentions)".into(),
            passed: orphans.is_empty(),
            skipped: false,
            command: "bd orphans".into(),
            detail: orphans.iter().map(|o| o.issue_id.as_str()).collect::<Vec<_>>().join(", "),
        },
    ])
}

#[derive(Debug, clap::Args)]
pub struct EditArgs {
    /// The issue (default: the last touched one).
    pub id: Option<String>,
    /// Edit the title.
    #[arg(long, group = "field")]
    pub title: bool,
    /// Edit the description (the default).
    #[arg(long, group = "field")]
    pub description: bool,
    /// Edit the design notes.
    #[arg(long, group = "field")]
    pub design: bool,
    /// Edit the notes.
    #[arg(long, group = "field")]
    pub notes: bool,
    /// Edit the acceptance criteria.
    #[arg(long, group = "field")]
    pub acceptance: bool,
}

/// `bd edit [id]`: one field in `$VISUAL`/`$EDITOR`, saved as an update. Meant for people;
/// agents should use `bd update` (an editor blocks them).
pub fn cmd_edit(ctx: &BdContext, args: EditArgs) -> Result<(), CliError> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
        .ok_or_else(|| {
            CliError::new("no editor: neither $VISUAL nor $EDITOR is set")
                .with_hint("set EDITOR, or change the field with bd update <id> --description …")
        })?;
    let id = ctx.ids_or_last_touched(args.id.into_iter().collect())?.remove(0);
    let issue = ctx.store()?.read()?.detail(&ctx.store()?.read()?.resolve(&id)?)?.summary.issue;
    let (name, current) = if args.title {
        ("title", issue.title.clone())
    } else if args.design {
        ("design", issue.design.clone())
    } else if args.notes {
        ("notes", issue.notes.clone())
    } else if args.acceptance {
        ("acceptance criteria", issue.acceptance_criteria.clone())
    } else {
        ("description", issue.description.clone())
    };
    let edited = run_editor(&editor, &current)?;
    let edited = if name == "title" { edited.trim().to_string() } else { edited };
    if edited == current {
        ctx.out.text("No changes made");
        return Ok(());
    }
    let mut patch = IssuePatch::default();
    match name {
        "title" => patch.title = Some(edited),
        "design" => patch.design = Some(edited),
        "notes" => patch.notes = Some(edited),
        "acceptance criteria" => patch.acceptance_criteria = Some(edited),
        _ => patch.description = Some(edited),
    }
    let changed = patch_each(ctx, std::slice::from_ref(&issue.id), &patch)?;
    let updated = changed.first().map_or(&issue, |s| &s.issue);
    ctx.out.emit(&changed, || format!("✓ Updated {name} for issue: {}", id_title(updated)));
    Ok(())
}

/// Runs `editor` (a command line, as shells split it) on a temporary file holding `text`;
/// returns what the file holds afterwards.
fn run_editor(editor: &str, text: &str) -> Result<String, CliError> {
    let path = std::env::temp_dir().join(format!("bd-edit-{}.md", ulid::Ulid::generate()));
    std::fs::write(&path, text)
        .map_err(|e| CliError::new(format!("writing {}: {e}", path.display())))?;
    let edited = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&path)
        .status()
        .map_err(|e| CliError::new(format!("running the editor {editor:?}: {e}")))
        .and_then(|status| {
            if !status.success() {
                return Err(CliError::new(format!(
                    "the editor {editor:?} failed ({status}); nothing changed"
                )));
            }
            std::fs::read_to_string(&path)
                .map_err(|e| CliError::new(format!("reading {}: {e}", path.display())))
        });
    let _ = std::fs::remove_file(&path);
    edited
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_mention_whole_ids_only() {
        assert!(mentions("Fix login (bd-12)", "bd-12"));
        assert!(mentions("bd-12: done", "bd-12"));
        assert!(mentions("closes bd-12.", "bd-12"));
        assert!(!mentions("bd-123 done", "bd-12"));
        assert!(!mentions("xbd-12 done", "bd-12"));
        assert!(!mentions("bd-12.1 done", "bd-12"));
    }
}
