//! Landing: the requests that move a task's work from its branch to the base branch
//! (`crate::land`), with their rules.
//!
//! A task with a landing record (its own worktree and branch) is not closed by a close: the
//! close puts it in the merge queue ([`submit`]) and it stays `in_progress`, so its dependents
//! stay blocked (readiness needs nothing new) and a beads export shows it in progress. The
//! merge lane then records each step with a [`LandStep`]: checked (before the base ref moves),
//! landed (the real close), rejected (reopened or blocked, with the evidence), in conflict (a
//! resolution task made), back in the queue, archived. A person's hand on the queue is a step
//! too: moved to the head of its lane, approved (`merge.review`), rejected (reopened with the
//! reason), dropped (closed, or reopened, without landing). Each step is refused when the
//! entry is not where it applies ([`LandStep::refused_in`]): a lane never lands work a person
//! dropped meanwhile, and a person cannot pull work that is moving onto the base.

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
    /// The lane started landing the entry (the merge and the checks); `fleet merges` shows it
    /// as being checked.
    Started { id: String },
    /// A person moved the entry to the head of its lane (`fleet merge ID --now`).
    Expedite { id: String },
    /// A person approved the entry (`fleet approve ID`), which `merge.review = true` waits
    /// for.
    Approve { id: String },
    /// A person sent the work back (`fleet reject ID --reason R`): the task reopens with the
    /// reason as a comment, its worktree kept for the next attempt; not counted as a failure.
    Decline { id: String, reason: String },
    /// A person dropped the entry (`fleet merge ID --drop`), its branch tip saved as `tip`
    /// (under `refs/fleet/archive/<id>`): the task closes without landing (`fleet gc` then
    /// removes its worktree), or with `reopen` goes back to its agents, who continue in the
    /// same worktree.
    Drop { id: String, tip: String, reason: String, reopen: bool },
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
            LandStep::Decline { reason, .. } | LandStep::Drop { reason, .. } => {
                *reason = redactor.redact_text(reason).into_owned();
                return;
            }
            LandStep::Requeue { .. }
            | LandStep::Archived { .. }
            | LandStep::Started { .. }
            | LandStep::Expedite { .. }
            | LandStep::Approve { .. } => return,
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
            | LandStep::Archived { id }
            | LandStep::Started { id }
            | LandStep::Expedite { id }
            | LandStep::Approve { id }
            | LandStep::Decline { id, .. }
            | LandStep::Drop { id, .. } => id,
        }
    }

    /// Why `step` cannot be recorded on a task whose landing is in `state`, if it cannot:
    /// the lane's steps need the entry in the queue (a person may have dropped or rejected it
    /// meanwhile), a person's need it waiting (not half-way through the base's move).
    fn refused_in(&self, state: &LandState) -> Option<String> {
        let id = self.id();
        let name = state.name();
        let allowed = match self {
            LandStep::Checked { .. }
            | LandStep::Landed { .. }
            | LandStep::Rejected { .. }
            | LandStep::Conflict { .. }
            | LandStep::Requeue { .. }
            | LandStep::Started { .. } => state.in_queue(),
            LandStep::Archived { .. } => {
                matches!(state, LandState::Landed { .. } | LandState::Dropped { .. })
            }
            LandStep::Expedite { .. } | LandStep::Approve { .. } => state.in_queue(),
            LandStep::Decline { .. } | LandStep::Drop { .. } => {
                matches!(state, LandState::Queued { .. } | LandState::Conflict { .. })
            }
        };
        if allowed {
            return None;
        }
        Some(match (self, state) {
            (LandStep::Decline { .. } | LandStep::Drop { .. }, LandState::Checked { .. }) => {
                format!(
                    "the work of {id} passed its checks and is moving onto its base branch now; it cannot be taken out of the queue"
                )
            }
            (
                LandStep::Expedite { .. }
                | LandStep::Approve { .. }
                | LandStep::Decline { .. }
                | LandStep::Drop { .. },
                _,
            ) => {
                format!("{id} has no work waiting in the merge queue (its landing is {name})")
            }
            _ => format!("{id} is no longer in the merge queue (its landing is {name})"),
        })
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
        // New work: reviewed and ordered afresh.
        landing.approved_at = None;
        landing.front_since = None;
    })?;
    Ok(issue.id)
}

/// Records `step`. Returns the task's id (and, for a conflict, the resolution task's).
pub fn record(writer: &mut Writer<'_>, step: &LandStep) -> Result<Vec<String>, Refusal> {
    let id = writer.resolve(step.id())?;
    let issue = writer.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
    let Some(landing) = &issue.fleet.land else {
        return Err(Refusal::Invalid(format!("{id} has no worktree: nothing lands")));
    };
    if let Some(why) = step.refused_in(&landing.state) {
        return Err(Refusal::Invalid(why));
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
            if matches!(landing.state, LandState::Landed { .. }) {
                let merged = landed_commit(&issue);
                edit_landing(writer, &issue, |landing| {
                    landing.state = LandState::Archived { merged, at: now };
                })?;
            }
        }
        LandStep::Started { .. } => {
            edit_landing(writer, &issue, |landing| landing.checking_since = Some(now))?;
        }
        LandStep::Expedite { .. } => {
            edit_landing(writer, &issue, |landing| landing.front_since = Some(now))?;
            note_on(writer, &id, "[fleet] moved to the head of its merge lane")?;
        }
        LandStep::Approve { .. } => {
            edit_landing(writer, &issue, |landing| landing.approved_at = Some(now))?;
            let by = writer.actor().to_string();
            note_on(writer, &id, &format!("[fleet] approved for landing by {by}"))?;
        }
        LandStep::Decline { reason, .. } => {
            let by = writer.actor().to_string();
            let comment = format!("[fleet] rejected by {by}: {reason}");
            back_to_agents(writer, &issue, LandState::Working, &comment)?;
        }
        LandStep::Drop { tip, reason, reopen, .. } => {
            drop_entry(writer, &issue, tip, reason, *reopen)?
        }
    }
    Ok(vec![id])
}

/// A person sends the work back to its agents: the task reopens, unassigned, its landing
/// `state` (working, or dropped with the worktree kept), with `comment`.
fn back_to_agents(
    writer: &mut Writer<'_>,
    issue: &Issue,
    state: LandState,
    comment: &str,
) -> Result<(), Refusal> {
    let mut fleet = issue.fleet.clone();
    fleet.lease = None;
    if let Some(landing) = &mut fleet.land {
        landing.state = state;
        landing.checking_since = None;
    }
    let patch = IssuePatch {
        fleet: Some(fleet),
        status: Some(Status::Open),
        assignee: Some(String::new()),
        ..IssuePatch::default()
    };
    super::update(writer, &UpdateRequest::edit(&issue.id, patch))?;
    note_on(writer, &issue.id, comment)
}

/// A person drops the entry: the task closes without landing, or reopens (`reopen`) to be
/// done again in the same worktree.
fn drop_entry(
    writer: &mut Writer<'_>,
    issue: &Issue,
    tip: &str,
    reason: &str,
    reopen: bool,
) -> Result<(), Refusal> {
    let by = writer.actor().to_string();
    let why = if reason.is_empty() { String::new() } else { format!(": {reason}") };
    let saved =
        format!("its tip {} is kept as refs/fleet/archive/{}", crate::land::short(tip), issue.id);
    if reopen {
        let comment =
            format!("[fleet] dropped from the merge queue by {by}{why}; reopened ({saved})");
        return back_to_agents(writer, issue, LandState::Working, &comment);
    }
    let now = writer.now();
    edit_landing(writer, issue, |landing| {
        landing.state =
            LandState::Dropped { tip: tip.to_owned(), reason: reason.to_owned(), at: now };
    })?;
    note_on(
        writer,
        &issue.id,
        &format!(
            "[fleet] dropped from the merge queue by {by}{why}; closed without landing ({saved})"
        ),
    )?;
    let reason = format!("dropped from the merge queue{why}");
    writer.apply(OpKind::Close { id: issue.id.clone(), reason, session: String::new() })?;
    Ok(())
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
        landing.checking_since = None;
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
            landing.checking_since = None;
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
    let state = landing.state.clone();
    change(landing);
    if landing.state != state {
        // A step that moves the entry on ends the lane's work on it.
        landing.checking_since = None;
    }
    let patch = IssuePatch { fleet: Some(fleet), ..IssuePatch::default() };
    writer.apply(OpKind::Update { id: issue.id.clone(), patch: Box::new(patch) })?;
    Ok(())
}

fn note_on(writer: &mut Writer<'_>, id: &str, text: &str) -> Result<(), Refusal> {
    let author = writer.actor().to_string();
    super::comment(writer, id, &author, text)?;
    Ok(())
}
