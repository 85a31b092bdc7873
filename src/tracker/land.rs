//! Landing: the requests that move a task's work from its branch to the base branch
//! (`crate::land`), with their rules.
//!
//! A task with a landing record (its own worktree and branch) is not closed by a close: the
//! close puts it in the merge queue ([`submit`]) and it stays `in_progress`, so its dependents
//! stay blocked (readiness needs nothing new) and a beads export shows it in progress. The
//! merge lane then records each step with a [`LandStep`]: checked (before the base ref moves),
//! landed (the real close), rejected (reopened or blocked, with the evidence), in conflict (a
//! resolution task made), back in the queue, archived.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{CloseRequest, CreateRequest, Refusal, UpdateRequest};
use crate::model::{FleetFields, Issue, LandState, Landing, Receipt, Status};
use crate::op::{IssuePatch, OpKind};
use crate::store::{StoreError, Writer};

/// One step of a task's landing, recorded by the merge lane.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LandStep {
    /// The checks passed on `merged` (a commit on `base`); the base ref moves next.
    Checked { id: String, base: String, merged: String, receipt: Receipt },
    /// The work is on the base branch (or there was none to land): the task closes with the
    /// reason its agent gave.
    Landed { id: String, receipt: Receipt },
    /// The gate or the checks refused the work: the task goes back to its agents with
    /// `fleet` (its counters, as the failure rules set them), open, or `blocked` for a human
    /// with that reason; `comment` carries the evidence.
    Rejected {
        id: String,
        receipt: Receipt,
        fleet: Box<FleetFields>,
        blocked: Option<String>,
        comment: String,
    },
    /// Merging met a conflict: `resolve` becomes a child task that must close before the entry
    /// goes round again; with `blocked`, the rounds are used up and the task waits for a human
    /// instead.
    Conflict { id: String, receipt: Receipt, resolve: Box<CreateRequest>, blocked: Option<String> },
    /// The entry goes round again (the base moved under it, or its resolution task closed).
    Requeue { id: String, note: String },
    /// The worktree was removed, its tip saved.
    Archived { id: String },
}

impl LandStep {
    /// Masks the secrets in what the step carries into the queue: the checks' output, the
    /// comments, the resolution task.
    pub fn redact(&mut self, redactor: &crate::redact::Redactor) {
        let receipt = match self {
            LandStep::Checked { receipt, .. } | LandStep::Landed { receipt, .. } => receipt,
            LandStep::Rejected { receipt, comment, .. } => {
                *comment = redactor.redact_text(comment).into_owned();
                receipt
            }
            LandStep::Conflict { receipt, resolve, .. } => {
                resolve.redact(redactor);
                receipt
            }
            LandStep::Requeue { .. } | LandStep::Archived { .. } => return,
        };
        for check in &mut receipt.checks {
            check.tail = redactor.redact_text(&check.tail).into_owned();
        }
    }

    pub fn id(&self) -> &str {
        match self {
            LandStep::Checked { id, .. }
            | LandStep::Landed { id, .. }
            | LandStep::Rejected { id, .. }
            | LandStep::Conflict { id, .. }
            | LandStep::Requeue { id, .. }
            | LandStep::Archived { id } => id,
        }
    }
}

/// Whether a close of `issue` is a submission to the merge queue: it has a worktree of its
/// own whose work has not landed.
pub fn awaits_landing(issue: &Issue) -> bool {
    issue.status != Status::Closed
        && issue.fleet.land.as_ref().is_some_and(|l| l.state == LandState::Working)
}

/// The close of a task whose work has not landed: it joins the merge queue, in progress.
pub fn submit(
    writer: &mut Writer<'_>,
    issue: Issue,
    request: &CloseRequest,
) -> Result<String, Refusal> {
    let now = writer.now();
    let reason = super::redaction::redacted(&request.reason);
    edit_landing(writer, &issue, |landing| {
        landing.state = LandState::Queued { reason, at: now, no_changes: request.no_changes };
    })?;
    Ok(issue.id)
}

/// Records `step`. Returns the task's id (and, for a conflict, the resolution task's).
pub fn record(writer: &mut Writer<'_>, step: &LandStep) -> Result<Vec<String>, Refusal> {
    let id = writer.resolve(step.id())?;
    let issue = writer.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
    if issue.fleet.land.is_none() {
        return Err(Refusal::Invalid(format!("{id} has no worktree: nothing lands")));
    }
    let now = writer.now();
    match step {
        LandStep::Checked { base, merged, receipt, .. } => {
            let reason = queued_reason(&issue);
            edit_landing(writer, &issue, |landing| {
                landing.state = LandState::Checked {
                    reason,
                    at: now,
                    base: base.clone(),
                    merged: merged.clone(),
                };
                landing.receipt = Some(receipt.clone());
            })?;
        }
        LandStep::Landed { receipt, .. } => land(writer, &issue, receipt, now)?,
        LandStep::Rejected { receipt, fleet, blocked, comment, .. } => {
            reject(writer, &issue, receipt, fleet, blocked.as_deref(), comment)?;
        }
        LandStep::Conflict { receipt, resolve, blocked, .. } => {
            return conflict(writer, &issue, receipt, resolve, blocked.as_deref());
        }
        LandStep::Requeue { note, .. } => {
            let (reason, at) = (queued_reason(&issue), now);
            edit_landing(writer, &issue, |landing| {
                landing.state = LandState::Queued { reason, at, no_changes: false };
            })?;
            if !note.is_empty() {
                note_on(writer, &id, note)?;
            }
        }
        LandStep::Archived { .. } => {
            let merged = landed_commit(&issue);
            edit_landing(writer, &issue, |landing| {
                landing.state = LandState::Archived { merged, at: now };
            })?;
        }
    }
    Ok(vec![id])
}

/// The close reason the agent gave when it submitted the work.
fn queued_reason(issue: &Issue) -> String {
    match issue.fleet.land.as_ref().map(|l| &l.state) {
        Some(
            LandState::Queued { reason, .. }
            | LandState::Checked { reason, .. }
            | LandState::Conflict { reason, .. },
        ) => reason.clone(),
        _ => String::new(),
    }
}

fn landed_commit(issue: &Issue) -> String {
    match issue.fleet.land.as_ref().map(|l| &l.state) {
        Some(LandState::Landed { merged, .. } | LandState::Archived { merged, .. }) => {
            merged.clone()
        }
        _ => String::new(),
    }
}

/// The work landed: the task closes with its agent's reason; its landing says where.
fn land(
    writer: &mut Writer<'_>,
    issue: &Issue,
    receipt: &Receipt,
    now: Timestamp,
) -> Result<(), Refusal> {
    let reason = queued_reason(issue);
    edit_landing(writer, issue, |landing| {
        landing.state = LandState::Landed { merged: receipt.merged.clone(), at: now };
        landing.receipt = Some(receipt.clone());
    })?;
    let text = match receipt.merged.as_str() {
        "" => format!("[fleet] closed with no changes to land ({})", receipt.verdict),
        merged => {
            let base = issue.fleet.land.as_ref().map_or("", |l| l.base.as_str());
            format!("[fleet] landed on {base} as {}", crate::land::short(merged))
        }
    };
    note_on(writer, &issue.id, &text)?;
    writer.apply(OpKind::Close { id: issue.id.clone(), reason, session: String::new() })?;
    Ok(())
}

/// The work was refused: back to its agents (open) or to a human (blocked).
fn reject(
    writer: &mut Writer<'_>,
    issue: &Issue,
    receipt: &Receipt,
    fleet: &FleetFields,
    blocked: Option<&str>,
    comment: &str,
) -> Result<(), Refusal> {
    let mut fleet = fleet.clone();
    fleet.lease = None;
    if let Some(landing) = &mut fleet.land {
        landing.state = LandState::Working;
        landing.receipt = Some(receipt.clone());
    }
    let mut patch = IssuePatch { fleet: Some(fleet), ..IssuePatch::default() };
    match blocked {
        Some(reason) => {
            patch.status = Some(Status::Blocked);
            patch.assignee = Some(String::new());
            patch.append_notes = Some(format!("[fleet] {reason}"));
        }
        None => {
            patch.status = Some(Status::Open);
            patch.assignee = Some(String::new());
        }
    }
    super::update(writer, &UpdateRequest::edit(&issue.id, patch))?;
    note_on(writer, &issue.id, comment)?;
    Ok(())
}

/// A conflict: a resolution task (a child of the task) blocks the entry, or the task is
/// blocked for a human.
fn conflict(
    writer: &mut Writer<'_>,
    issue: &Issue,
    receipt: &Receipt,
    resolve: &CreateRequest,
    blocked: Option<&str>,
) -> Result<Vec<String>, Refusal> {
    let now = writer.now();
    if let Some(reason) = blocked {
        let mut fleet = issue.fleet.clone();
        if let Some(landing) = &mut fleet.land {
            landing.state = LandState::Working;
            landing.conflicts += 1;
            landing.receipt = Some(receipt.clone());
        }
        let patch = IssuePatch {
            fleet: Some(fleet),
            status: Some(Status::Blocked),
            assignee: Some(String::new()),
            append_notes: Some(format!("[fleet] {reason}")),
            ..IssuePatch::default()
        };
        super::update(writer, &UpdateRequest::edit(&issue.id, patch))?;
        note_on(writer, &issue.id, &format!("[fleet] {reason}"))?;
        return Ok(vec![issue.id.clone()]);
    }
    let child = super::create(writer, resolve)?.id;
    let reason = queued_reason(issue);
    edit_landing(writer, issue, |landing| {
        landing.state = LandState::Conflict { child: child.clone(), reason, at: now };
        landing.conflicts += 1;
        landing.receipt = Some(receipt.clone());
    })?;
    note_on(
        writer,
        &issue.id,
        &format!(
            "[fleet] merging met a conflict; {child} resolves it, then the work goes round again"
        ),
    )?;
    Ok(vec![issue.id.clone(), child])
}

/// Changes the task's landing record with `change` (one update of its fleet fields).
fn edit_landing(
    writer: &mut Writer<'_>,
    issue: &Issue,
    change: impl FnOnce(&mut Landing),
) -> Result<(), Refusal> {
    let mut fleet = issue.fleet.clone();
    let Some(landing) = &mut fleet.land else {
        return Err(Refusal::Invalid(format!("{} has no worktree", issue.id)));
    };
    change(landing);
    let patch = IssuePatch { fleet: Some(fleet), ..IssuePatch::default() };
    writer.apply(OpKind::Update { id: issue.id.clone(), patch: Box::new(patch) })?;
    Ok(())
}

fn note_on(writer: &mut Writer<'_>, id: &str, text: &str) -> Result<(), Refusal> {
    let author = writer.actor().to_string();
    super::comment(writer, id, &author, text)?;
    Ok(())
}
