//! A person's hand on the merge queue: `fleet merge ID --now|--drop` (move an entry to the
//! head of its lane, or take it out), and the review `merge.review = true` asks for —
//! `fleet approve ID` and `fleet reject ID --reason R`.
//!
//! Each is one tracker request (`LandStep::Expedite`, `Drop`, `Approve`, `Decline`) sent
//! through the one write route; the tracker refuses it when the entry is not waiting (or is
//! moving onto the base right now). A drop saves the branch tip under
//! `refs/fleet/archive/<id>` first: the work is never lost, and the worktree stays until
//! `fleet gc`.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use crate::land::worktree;
use crate::model::Issue;
use crate::tracker::{LandStep, Request};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("action").required(true).args(["now", "drop"])))]
pub struct MergeArgs {
    /// The task whose work waits in the merge queue.
    pub id: String,
    /// Move the entry to the head of its lane: it lands next.
    #[arg(long)]
    pub now: bool,
    /// Take the entry out of the queue: its work never lands (the branch tip is kept as
    /// refs/fleet/archive/<id>); the task closes, its worktree kept until `fleet gc`.
    #[arg(long)]
    pub drop: bool,
    /// With --drop: reopen the task instead of closing it; its agents continue in the same
    /// worktree.
    #[arg(long, requires = "drop")]
    pub reopen: bool,
    /// With --drop: why (recorded in a comment and the close reason).
    #[arg(long, requires = "drop", default_value = "")]
    pub reason: String,
}

#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The task whose work waits for review in the merge queue.
    pub id: String,
}

#[derive(Debug, clap::Args)]
pub struct RejectArgs {
    /// The task whose work waits in the merge queue.
    pub id: String,
    /// Why: the task is reopened with it as a comment, for its next agent.
    #[arg(long)]
    pub reason: String,
}

/// What a command did to an entry.
#[derive(Debug, Serialize)]
struct Done {
    id: String,
    /// `now`, `dropped`, `approved` or `rejected`.
    action: &'static str,
    /// The task's status after it.
    status: String,
    /// With a drop: the branch tip kept under refs/fleet/archive/<id>.
    #[serde(skip_serializing_if = "Option::is_none")]
    archived: Option<String>,
}

pub fn cmd_merge(ctx: &Context, args: MergeArgs) -> Result<(), CliError> {
    let issue = queued_issue(ctx, &args.id)?;
    let id = issue.id.clone();
    if args.now {
        submit(ctx, LandStep::Expedite { id: id.clone() })?;
        return report(ctx, &id, "now", None, "moves to the head of its merge lane: it lands next");
    }
    let landing = issue.fleet.land.as_ref().ok_or_else(|| no_entry(&id))?;
    let tip = worktree::archive(&id, landing)
        .map_err(|e| CliError::new(format!("saving the tip of {} failed: {e}", landing.branch)))?
        .unwrap_or_default();
    let step = LandStep::Drop {
        id: id.clone(),
        tip: tip.clone(),
        reason: args.reason,
        reopen: args.reopen,
    };
    submit(ctx, step)?;
    let then = if args.reopen {
        "reopened; its agents continue in the same worktree"
    } else {
        "closed without landing; its worktree stays until `fleet gc`"
    };
    let what = format!(
        "dropped from the merge queue; tip {} kept as refs/fleet/archive/{id}; {then}",
        crate::land::short(&tip)
    );
    report(ctx, &id, "dropped", Some(tip), &what)
}

pub fn cmd_approve(ctx: &Context, args: ApproveArgs) -> Result<(), CliError> {
    let id = queued_issue(ctx, &args.id)?.id;
    submit(ctx, LandStep::Approve { id: id.clone() })?;
    report(ctx, &id, "approved", None, "approved: it lands when its turn in the lane comes")
}

pub fn cmd_reject(ctx: &Context, args: RejectArgs) -> Result<(), CliError> {
    if args.reason.trim().is_empty() {
        return Err(CliError::usage("--reason must say why: the task's next agent reads it"));
    }
    let id = queued_issue(ctx, &args.id)?.id;
    submit(ctx, LandStep::Decline { id: id.clone(), reason: args.reason })?;
    report(ctx, &id, "rejected", None, "rejected: reopened with your reason as a comment")
}

/// The task `input` names, which must have a landing record (the tracker checks its state).
fn queued_issue(ctx: &Context, input: &str) -> Result<Issue, CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let id = reader.resolve(input)?;
    let issue = reader
        .issue(&id)?
        .ok_or_else(|| CliError::new(format!("no issue found matching {id:?}")))?;
    if issue.fleet.land.is_none() {
        return Err(no_entry(&id));
    }
    Ok(issue)
}

fn no_entry(id: &str) -> CliError {
    CliError::new(format!("{id} has no worktree of its own: nothing of it is in a merge queue"))
        .with_hint("`fleet merges` lists the entries waiting to land")
}

fn submit(ctx: &Context, step: LandStep) -> Result<(), CliError> {
    ctx.submit(Request::Land(Box::new(step))).map(|_| ())
}

/// Prints what was done, with the task's status read back.
fn report(
    ctx: &Context,
    id: &str,
    action: &'static str,
    archived: Option<String>,
    what: &str,
) -> Result<(), CliError> {
    let status = ctx
        .open_store()?
        .read()?
        .issue(id)?
        .map(|issue| issue.status.to_string())
        .unwrap_or_default();
    let done = Done { id: id.to_owned(), action, status, archived };
    ctx.out.emit(&done, || format!("✓ {id} {what}"));
    Ok(())
}
