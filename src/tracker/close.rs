//! Closing: the close guards, then the close.

use super::Refusal;
use crate::model::{Issue, Status};
use crate::op::OpKind;
use crate::store::{StoreError, Writer};

/// Close one issue.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct CloseRequest {
    /// The issue, as typed (full, without prefix, or a unique part).
    pub id: String,
    /// Why (empty: "Closed").
    pub reason: String,
    /// The agent session closing it.
    pub session: String,
    /// Close even if a guard refuses.
    pub force: bool,
}

/// Closes the issue unless a close guard refuses (spec §7): pinned issues, epics with open
/// children, and issues blocked by open issues stay open without `force`. Returns the id.
pub fn close(writer: &mut Writer<'_>, request: &CloseRequest) -> Result<String, Refusal> {
    let id = writer.resolve(&request.id)?;
    let issue = writer.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
    if !request.force
        && let Some(refusal) = close_guard(writer, &issue)?
    {
        return Err(refusal);
    }
    writer.apply(OpKind::Close {
        id: id.clone(),
        reason: super::redaction::redacted(&request.reason),
        session: request.session.clone(),
    })?;
    Ok(id)
}

/// Why a close of `issue` is refused without `--force`, if it is.
pub fn close_guard(writer: &Writer<'_>, issue: &Issue) -> Result<Option<Refusal>, StoreError> {
    if issue.status == Status::Closed {
        return Ok(None);
    }
    if issue.status == Status::Pinned || issue.pinned {
        return Ok(Some(Refusal::Pinned(issue.id.clone())));
    }
    if issue.issue_type == "epic" {
        let children = writer.open_children(&issue.id)?;
        if !children.is_empty() {
            return Ok(Some(Refusal::OpenChildren { id: issue.id.clone(), children }));
        }
    }
    let blockers = writer.open_blockers(&issue.id)?;
    if !blockers.is_empty() {
        return Ok(Some(Refusal::Blocked { id: issue.id.clone(), blockers }));
    }
    Ok(None)
}
