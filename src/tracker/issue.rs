//! Requests on one existing issue: update (a status of closed is a close, with its guards),
//! claim and release, reopen, delete, comments and labels, and the record upsert of an import.

use super::Refusal;
use super::close::{CloseRequest, close};
use crate::model::{Comment, CommentId, FleetFields, Issue, Status};
use crate::op::{IssuePatch, OpKind};
use crate::store::{ReadyFilter, StoreError, Writer};

/// Edit one issue's fields, optionally claiming it first.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct UpdateRequest {
    pub id: String,
    pub patch: IssuePatch,
    /// Claim the issue (compare-and-set) before the edit.
    pub claim: bool,
    /// Fleet's task fields to change (`None`: leave each as it is).
    pub cwd: Option<String>,
    /// With `cwd`: that directory's place in a git repository (`crate::place::locate`, done by
    /// the front end, which runs where the directory is).
    #[serde(default)]
    pub repo: Option<crate::place::RepoPlace>,
    pub coder: Option<String>,
    pub model: Option<String>,
    /// When the patch sets the status to closed: the agent session, and whether the close
    /// guards are overridden.
    pub session: String,
    pub force: bool,
    /// bd's `--set-labels`: exactly these labels afterwards.
    pub set_labels: Option<Vec<String>>,
    /// bd's `--parent`: the new parent as typed (blank: no parent).
    pub parent: Option<String>,
    /// bd's metadata flags.
    pub metadata: MetadataEdit,
}

/// Changes to an issue's free-form metadata document: replaced whole, then keys set and
/// removed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct MetadataEdit {
    pub replace: Option<serde_json::Value>,
    pub set: Vec<(String, serde_json::Value)>,
    pub unset: Vec<String>,
}

impl MetadataEdit {
    fn is_empty(&self) -> bool {
        self.replace.is_none() && self.set.is_empty() && self.unset.is_empty()
    }

    /// The document after the edit of `current`.
    fn applied_to(&self, current: Option<&serde_json::Value>) -> serde_json::Value {
        let mut doc = match (&self.replace, current) {
            (Some(replacement), _) => replacement.clone(),
            (None, Some(current)) => current.clone(),
            (None, None) => serde_json::json!({}),
        };
        if let Some(map) = doc.as_object_mut() {
            for (key, value) in &self.set {
                map.insert(key.clone(), value.clone());
            }
            for key in &self.unset {
                map.remove(key);
            }
        }
        doc
    }
}

impl UpdateRequest {
    /// A plain field edit of `id`.
    pub fn edit(id: &str, patch: IssuePatch) -> UpdateRequest {
        UpdateRequest { id: id.to_string(), patch, ..UpdateRequest::default() }
    }

    fn changes_fleet_fields(&self) -> bool {
        self.cwd.is_some() || self.coder.is_some() || self.model.is_some()
    }

    fn changes_links(&self) -> bool {
        self.set_labels.is_some() || self.parent.is_some() || !self.metadata.is_empty()
    }

    /// Whether the request asks for anything at all.
    pub fn is_empty(&self) -> bool {
        self.patch.is_empty()
            && !self.claim
            && !self.changes_fleet_fields()
            && !self.changes_links()
    }
}

/// Applies `request`. Setting the status to closed is a close: the rest of the patch is
/// applied, then the issue is closed through the close guards. Returns the issue's id.
pub fn update(writer: &mut Writer<'_>, request: &UpdateRequest) -> Result<String, Refusal> {
    let mut request = request.clone();
    request.redact(&super::inbound_redactor());
    let request = &request;
    let id = writer.resolve(&request.id)?;
    if request.claim {
        writer.apply(OpKind::Claim { id: id.clone() })?;
    }
    let mut patch = request.patch.clone();
    let closing = patch.status == Some(Status::Closed);
    if closing {
        patch.status = None;
    }
    if request.changes_fleet_fields() {
        let current = writer.issue(&id)?.map(|i| i.fleet).unwrap_or_default();
        patch.fleet = Some(FleetFields {
            cwd: request.cwd.clone().unwrap_or(current.cwd.clone()),
            repo: if request.cwd.is_some() { request.repo.clone() } else { current.repo.clone() },
            coder: request.coder.clone().unwrap_or(current.coder.clone()),
            model: request.model.clone().unwrap_or(current.model.clone()),
            ..current
        });
    }
    if !patch.is_empty() {
        writer.apply(OpKind::Update { id: id.clone(), patch: Box::new(patch) })?;
    }
    if closing {
        let close_request = CloseRequest {
            id: id.clone(),
            reason: String::new(),
            session: request.session.clone(),
            force: request.force,
            ..CloseRequest::default()
        };
        close(writer, &close_request)?;
    }
    if request.changes_links() {
        update_links(writer, &id, request)?;
    }
    Ok(id)
}

/// The labels, parent and metadata parts of an update.
fn update_links(writer: &mut Writer<'_>, id: &str, request: &UpdateRequest) -> Result<(), Refusal> {
    let issue = writer.issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
    if let Some(wanted) = &request.set_labels {
        for label in issue.labels.iter().filter(|l| !wanted.contains(l)) {
            label_remove(writer, id, label)?;
        }
        for label in wanted.iter().filter(|l| !issue.labels.contains(l)) {
            label_add(writer, id, label)?;
        }
    }
    if let Some(parent) = &request.parent {
        let new_parent =
            if parent.trim().is_empty() { None } else { Some(writer.resolve(parent)?) };
        super::set_parent(writer, id, new_parent.as_deref())?;
    }
    if !request.metadata.is_empty() {
        let mut updated = writer.issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
        updated.metadata = Some(request.metadata.applied_to(updated.metadata.as_ref()));
        updated.updated_at = writer.now();
        put_record(writer, updated)?;
    }
    Ok(())
}

/// Claims `id` for the writer's actor: open and unassigned (or already the actor's) becomes
/// in_progress. Returns the claimed issue.
pub fn claim(writer: &mut Writer<'_>, id: &str) -> Result<Issue, Refusal> {
    let id = writer.resolve(id)?;
    claim_exact(writer, id)
}

/// [`claim`] of an id known to exist as given.
fn claim_exact(writer: &mut Writer<'_>, id: String) -> Result<Issue, Refusal> {
    writer.apply(OpKind::Claim { id: id.clone() })?;
    match writer.take_claimed(&id) {
        Some(issue) => Ok(issue),
        None => Ok(writer.issue(&id)?.ok_or(StoreError::NotFound(id))?),
    }
}

/// Claims the first ready issue (in ready order) that the writer's actor may take.
pub fn claim_next(writer: &mut Writer<'_>, filter: &ReadyFilter) -> Result<Option<Issue>, Refusal> {
    match writer.first_claimable(filter)? {
        Some(id) => claim_exact(writer, id).map(Some),
        None => Ok(None),
    }
}

/// Puts a claimed issue back: open and unassigned. The release names the claim whose hold it
/// ends, so it can never end a claim made elsewhere that it did not see (see `store::apply`).
pub fn release(writer: &mut Writer<'_>, id: &str) -> Result<String, Refusal> {
    let id = writer.resolve(id)?;
    let claim = writer.hold_of(&id)?;
    writer.apply(OpKind::Release { id: id.clone(), claim })?;
    Ok(id)
}

/// Reopens a closed issue; a reason is also recorded as a comment by the writer's actor.
pub fn reopen(writer: &mut Writer<'_>, id: &str, reason: Option<&str>) -> Result<String, Refusal> {
    let id = writer.resolve(id)?;
    let reason_text = super::redaction::redacted(reason.unwrap_or_default());
    writer.apply(OpKind::Reopen { id: id.clone(), reason: reason_text.clone() })?;
    if reason.is_some() {
        let author = writer.actor().to_string();
        comment(writer, &id, &author, &format!("Reopened: {reason_text}"))?;
    }
    Ok(id)
}

/// Deletes an issue with its comments and every edge touching it.
pub fn delete(writer: &mut Writer<'_>, id: &str) -> Result<String, Refusal> {
    let id = writer.resolve(id)?;
    writer.apply(OpKind::Delete { id: id.clone() })?;
    Ok(id)
}

/// Adds a comment by `author` to the issue `id` (already resolved). Returns the comment.
pub fn comment(
    writer: &mut Writer<'_>,
    id: &str,
    author: &str,
    text: &str,
) -> Result<Comment, Refusal> {
    let comment = Comment {
        id: CommentId::Text(ulid::Ulid::generate().to_string()),
        issue_id: id.to_string(),
        author: author.to_string(),
        text: super::redaction::redacted(text),
        created_at: writer.now(),
    };
    writer.apply(OpKind::Comment { comment: comment.clone() })?;
    Ok(comment)
}

/// Adds `label` to issue `id` (already resolved). Returns whether it was new.
pub fn label_add(writer: &mut Writer<'_>, id: &str, label: &str) -> Result<bool, Refusal> {
    Ok(writer.apply(OpKind::LabelAdd { id: id.to_string(), label: label.to_string() })?)
}

/// Removes `label` from issue `id` (already resolved). Returns whether it was there.
pub fn label_remove(writer: &mut Writer<'_>, id: &str, label: &str) -> Result<bool, Refusal> {
    Ok(writer.apply(OpKind::LabelRemove { id: id.to_string(), label: label.to_string() })?)
}

/// Writes an issue record as given, creating or replacing it (an import's upsert, or a
/// front end setting fields no request covers, such as bd's metadata).
pub fn put_record(writer: &mut Writer<'_>, issue: Issue) -> Result<(), Refusal> {
    writer.apply(OpKind::Put { issue: Box::new(issue) })?;
    Ok(())
}
