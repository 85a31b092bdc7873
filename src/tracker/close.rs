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
    /// A close fleet makes itself (a command's exit 0): its reason is not a person's or an
    /// agent's words, so `validation.on-close` does not apply.
    #[serde(default)]
    pub system: bool,
    /// The task is done with nothing to land (`fleet close --no-changes`): its branch may
    /// have no commits.
    #[serde(default)]
    pub no_changes: bool,
}

/// Closes the issue unless a close guard refuses (spec §7): pinned issues, epics with open
/// children, and issues blocked by open issues stay open without `force`. Returns the id.
///
/// A task whose work lives on a branch of its own that has not landed is not closed: the close
/// puts its work in the merge queue ([`super::land::submit`]), and the merge lane closes it once
/// the work is on the base branch. Completion is evidence, not a claim.
pub fn close(writer: &mut Writer<'_>, request: &CloseRequest) -> Result<String, Refusal> {
    let id = writer.resolve(&request.id)?;
    let issue = writer.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
    if issue.status != Status::Closed {
        reason_policy(writer, request)?;
    }
    if !request.force
        && let Some(refusal) = close_guard(writer, &issue)?
    {
        return Err(refusal);
    }
    if super::land::awaits_landing(&issue) {
        return super::land::submit(writer, issue, request);
    }
    writer.apply(OpKind::Close {
        id: id.clone(),
        reason: super::redaction::redacted(&request.reason),
        session: request.session.clone(),
    })?;
    Ok(id)
}

/// The workspace's `validation.on-close` policy for `request`'s reason: a terse reason is
/// refused (`error`) or comes back as a warning to show (`warn`); nothing under `none` (the
/// default) or for a close fleet makes itself. The one place the policy is applied: `fleet
/// close`, `bd close`, `bd update --status closed` and the server all close through here.
pub fn reason_policy(
    writer: &Writer<'_>,
    request: &CloseRequest,
) -> Result<Option<String>, Refusal> {
    if request.system {
        return Ok(None);
    }
    let mode = writer.config(crate::settings::ON_CLOSE)?.unwrap_or_default();
    let Some(problem) = terse_reason(&request.reason) else { return Ok(None) };
    match mode.trim().to_ascii_lowercase().as_str() {
        "error" => Err(Refusal::Invalid(format!("cannot close {}: {problem}", request.id))),
        "warn" => Ok(Some(format!("{}: {problem}", request.id))),
        _ => Ok(None),
    }
}

/// What is wrong with a terse close reason: empty, the default, or under 20 characters.
fn terse_reason(reason: &str) -> Option<String> {
    let reason = reason.trim();
    if reason.is_empty() || reason.eq_ignore_ascii_case("closed") {
        return Some("close reason is empty or default; provide a summary of what was done".into());
    }
    (reason.len() < 20).then(|| {
        format!(
            "close reason is terse ({} chars); aim for 20+ characters describing what was done",
            reason.len()
        )
    })
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
