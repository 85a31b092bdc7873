//! The write commands of the CLI as values: a [`Request`] names one command's whole change
//! (create an issue, update or close several, claim, release, reopen, comment, an edge, a
//! label, a delete, a prefix rename, workspace settings), [`execute`] carries it out on a
//! [`Writer`] and says what happened in a [`Reply`]. Every change a front end makes is one of
//! these: the CLI hands it to `Context::submit`, the one function that picks the server or a
//! transaction of the command's own (tests/architecture.rs keeps front ends from opening one).
//!
//! This is what lets a command run either in its own transaction (direct mode) or through the
//! running fleet process (`crate::server`), which commits many requests in one transaction:
//! both call [`execute`] on the same request, so both print the same thing. Requests and
//! replies travel as JSON; a refusal travels as a [`WireRefusal`], which turns back into the
//! refusal direct mode would have met, with the same words and hints.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CloseRequest, CreateRequest, Refusal, UpdateRequest};
use crate::model::{Comment, Issue};
use crate::store::{IssueSummary, ReadyFilter, StoreError, Writer};

/// One write command, whole.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// A new issue; replies [`Reply::Summary`].
    Create(Box<CreateRequest>),
    /// Each update in turn, all or none; replies [`Reply::Summaries`].
    Update(Vec<UpdateRequest>),
    /// Each close in turn; guards and unknown ids are reported per issue, not fatal; replies
    /// [`Reply::Closed`].
    Close(Vec<CloseRequest>),
    /// Reopens each issue, recording the reason as a comment; replies [`Reply::Summaries`].
    Reopen { ids: Vec<String>, reason: Option<String> },
    /// Claims one issue for the actor; replies [`Reply::Summary`].
    Claim { id: String },
    /// Claims the first ready issue the filter admits; replies [`Reply::Claimed`].
    ClaimNext { filter: Box<ReadyFilter> },
    /// Puts claimed issues back; replies [`Reply::Summaries`].
    Release { ids: Vec<String> },
    /// A comment on an issue by `author` (the actor when `None`); replies
    /// [`Reply::Commented`].
    Comment { id: String, author: Option<String>, text: String },
    /// `issue` depends on `depends_on` by an edge of `kind`; replies [`Reply::EdgeAdded`].
    DepAdd { issue: String, depends_on: String, kind: String },
    /// Removes the edge from `issue` to `depends_on`; replies [`Reply::EdgeRemoved`].
    DepRemove { issue: String, depends_on: String },
    /// Each edge added as by `DepAdd`, all or none (`bd dep add --file`); replies
    /// [`Reply::Ids`] (the dependent issues, one per edge).
    DepAddAll(Vec<NewEdge>),
    /// A `relates-to` edge each way between two issues (`bd dep relate`), or with `add` unset
    /// both removed (`unrelate`), all or none; replies [`Reply::Ids`] (the two ids).
    Relate { ids: [String; 2], add: bool },
    /// Adds `label` to each issue (removes it with `add` unset), all or none; replies
    /// [`Reply::Labels`].
    Label { ids: Vec<String>, label: String, add: bool },
    /// Deletes the issues, all or none; without `force` it only says what a delete would
    /// touch and writes nothing. Replies [`Reply::Deleted`].
    Delete { ids: Vec<String>, force: bool },
    /// Moves every issue of `plan` (old id → new id) to its new id and makes `prefix` the
    /// workspace's prefix; replies [`Reply::Done`].
    RenamePrefix { plan: BTreeMap<String, String>, prefix: String },
    /// Sets each workspace setting (`None` removes it), checked by its type when fleet knows
    /// the key; replies [`Reply::Done`].
    SetConfig(Vec<(String, Option<String>)>),
    /// One step of a task's landing, recorded by the merge lane (`crate::land`); replies
    /// [`Reply::Ids`] (the task, and a resolution task it made).
    Land(Box<super::LandStep>),
    /// Takes back the tasks of supervisors that stopped without releasing them and forgets
    /// those supervisors (`super::reclaim`); replies [`Reply::Ids`] (the tasks released).
    Reclaim(Box<super::ReclaimRequest>),
    /// What an attempt's end writes on its task, if the task is as the settlement was decided
    /// on (`super::settle`); replies [`Reply::Issue`], the task after.
    Settle(Box<super::Settlement>),
    /// Records (or with `None` forgets) a running supervisor's registration, a JSON document
    /// under its instance id; replies [`Reply::Done`].
    Register { instance: String, registration: Option<String> },
    /// A message to a task's agent or a person (`bd mail send`); replies [`Reply::Mail`].
    MailSend(Box<super::MailRequest>),
    /// Acknowledges messages, all or none (`bd mail ack`); replies [`Reply::Ids`].
    MailAck { ids: Vec<String> },
    /// Reserves files for a task (`bd reserve`); replies [`Reply::Reserved`].
    Reserve(Box<super::ReserveRequest>),
    /// Ends a task's reservations, those of `ids` or all (`bd release-files`); replies
    /// [`Reply::Ids`] (the reservations released).
    ReleaseFiles { task: String, ids: Vec<String> },
}

/// One edge of [`Request::DepAddAll`]: `issue` depends on `depends_on` by an edge of `kind`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NewEdge {
    pub issue: String,
    pub depends_on: String,
    pub kind: String,
}

impl Request {
    /// Whether carrying the request out may change the queue (a delete preview does not).
    pub fn writes(&self) -> bool {
        !matches!(self, Request::Delete { force: false, .. })
    }

    /// Whether the request claims work (the claim mode of the workspace may send it through a
    /// git remote, which only direct mode does).
    pub fn claims(&self) -> bool {
        match self {
            Request::Claim { .. } | Request::ClaimNext { .. } => true,
            Request::Update(updates) => updates.iter().any(|u| u.claim),
            _ => false,
        }
    }
}

/// What a request did, with what the command prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Reply {
    Summary(Box<Summary>),
    /// A new issue, with what `validation.on-create = warn` says of it.
    Created {
        summary: Box<Summary>,
        warning: Option<String>,
    },
    Summaries(Vec<Summary>),
    Claimed(Option<Box<Summary>>),
    Closed(CloseOutcome),
    Commented {
        comment: Box<Comment>,
        issue: Option<Box<Issue>>,
    },
    EdgeAdded {
        from: Box<Issue>,
        to_id: String,
        to: Option<Box<Issue>>,
    },
    EdgeRemoved {
        from: String,
        to: String,
        kind: String,
    },
    Labels(Vec<LabelChange>),
    Deleted(Deleted),
    /// The issues a request touched or made.
    Ids(Vec<String>),
    /// One issue as it stands after the request.
    Issue(Box<Issue>),
    /// A message as stored.
    Mail(Box<crate::coord::Message>),
    /// A reservation made, and what it overlaps.
    Reserved(Box<super::Reserved>),
    Done,
}

/// One issue's label change: whether the label was added (or removed) or already so.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabelChange {
    pub id: String,
    pub label: String,
    pub changed: bool,
}

/// What a delete removed (or, as a preview, would remove).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Deleted {
    /// True when nothing was deleted (no `force`).
    pub preview: bool,
    pub issues: Vec<Summary>,
    /// Issues that lose an edge to a deleted issue.
    pub affected_dependents: Vec<String>,
}

impl Reply {
    /// The one issue of a create or a claim.
    pub fn into_summary(self) -> Result<IssueSummary, StoreError> {
        match self {
            Reply::Summary(summary)
            | Reply::Claimed(Some(summary))
            | Reply::Created { summary, .. } => Ok((*summary).into()),
            other => Err(other.unexpected("one issue")),
        }
    }

    /// A created issue, and the warning of the workspace's `validation.on-create` if any.
    pub fn into_created(self) -> Result<(IssueSummary, Option<String>), StoreError> {
        match self {
            Reply::Created { summary, warning } => Ok(((*summary).into(), warning)),
            other => Err(other.unexpected("a new issue")),
        }
    }

    /// The issue a settlement left.
    pub fn into_issue(self) -> Result<Issue, StoreError> {
        match self {
            Reply::Issue(issue) => Ok(*issue),
            other => Err(other.unexpected("an issue")),
        }
    }

    /// The issues of an update, reopen or release.
    pub fn into_summaries(self) -> Result<Vec<IssueSummary>, StoreError> {
        match self {
            Reply::Summaries(summaries) => Ok(summaries.into_iter().map(Into::into).collect()),
            other => Err(other.unexpected("issues")),
        }
    }

    /// The issue a claim of the next ready issue took, if any.
    pub fn into_claimed(self) -> Result<Option<IssueSummary>, StoreError> {
        match self {
            Reply::Claimed(claimed) => Ok(claimed.map(|summary| (*summary).into())),
            other => Err(other.unexpected("a claim")),
        }
    }

    /// What a close did.
    pub fn into_closed(self) -> Result<CloseOutcome, StoreError> {
        match self {
            Reply::Closed(outcome) => Ok(outcome),
            other => Err(other.unexpected("a close")),
        }
    }

    /// The comment added, and its issue.
    pub fn into_commented(self) -> Result<(Comment, Option<Issue>), StoreError> {
        match self {
            Reply::Commented { comment, issue } => Ok((*comment, issue.map(|issue| *issue))),
            other => Err(other.unexpected("a comment")),
        }
    }

    /// The edge `dep add` made: its issue, and the target's id and issue (none when foreign).
    pub fn into_edge_added(self) -> Result<(Issue, String, Option<Issue>), StoreError> {
        match self {
            Reply::EdgeAdded { from, to_id, to } => Ok((*from, to_id, to.map(|to| *to))),
            other => Err(other.unexpected("an edge")),
        }
    }

    /// The two ids and the type of the edge `dep remove` removed.
    pub fn into_edge_removed(self) -> Result<(String, String, String), StoreError> {
        match self {
            Reply::EdgeRemoved { from, to, kind } => Ok((from, to, kind)),
            other => Err(other.unexpected("a removed edge")),
        }
    }

    /// Each issue's label change.
    pub fn into_labels(self) -> Result<Vec<LabelChange>, StoreError> {
        match self {
            Reply::Labels(changes) => Ok(changes),
            other => Err(other.unexpected("label changes")),
        }
    }

    /// What a delete did.
    pub fn into_deleted(self) -> Result<Deleted, StoreError> {
        match self {
            Reply::Deleted(deleted) => Ok(deleted),
            other => Err(other.unexpected("a delete")),
        }
    }

    /// The ids a landing step touched or made.
    pub fn into_ids(self) -> Result<Vec<String>, StoreError> {
        match self {
            Reply::Ids(ids) => Ok(ids),
            other => Err(other.unexpected("issue ids")),
        }
    }

    /// The message sent.
    pub fn into_mail(self) -> Result<crate::coord::Message, StoreError> {
        match self {
            Reply::Mail(message) => Ok(*message),
            other => Err(other.unexpected("a message")),
        }
    }

    /// The reservation made.
    pub fn into_reserved(self) -> Result<super::Reserved, StoreError> {
        match self {
            Reply::Reserved(reserved) => Ok(*reserved),
            other => Err(other.unexpected("a reservation")),
        }
    }

    /// A change that says nothing back.
    pub fn into_done(self) -> Result<(), StoreError> {
        match self {
            Reply::Done => Ok(()),
            other => Err(other.unexpected("a change")),
        }
    }

    /// A reply of another request than the one sent: a fault of the server, not of the user.
    fn unexpected(&self, wanted: &str) -> StoreError {
        StoreError::Corrupt(format!("the fleet server answered {self:?} where {wanted} was due"))
    }
}

/// An [`IssueSummary`] in a form that reads back (the printed form flattens the issue).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub issue: Issue,
    pub dependency_count: usize,
    pub dependent_count: usize,
    pub comment_count: usize,
    pub parent: Option<String>,
}

impl From<IssueSummary> for Summary {
    fn from(s: IssueSummary) -> Summary {
        Summary {
            issue: s.issue,
            dependency_count: s.dependency_count,
            dependent_count: s.dependent_count,
            comment_count: s.comment_count,
            parent: s.parent,
        }
    }
}

impl From<Summary> for IssueSummary {
    fn from(s: Summary) -> IssueSummary {
        IssueSummary {
            issue: s.issue,
            dependency_count: s.dependency_count,
            dependent_count: s.dependent_count,
            comment_count: s.comment_count,
            parent: s.parent,
        }
    }
}

/// What a close of several issues did: the ones closed and the ones refused.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CloseOutcome {
    pub closed: Vec<Summary>,
    pub refused: Vec<CloseRefused>,
    /// What `validation.on-close = warn` says of the reasons (the closes went through).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// An issue a close refused, as typed, with the reason.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CloseRefused {
    pub id: String,
    pub error: String,
    /// A close guard refused it (`--force` overrides).
    #[serde(default)]
    pub guarded: bool,
    /// The id did not resolve.
    #[serde(default)]
    pub unresolved: bool,
}

impl CloseRefused {
    fn of(id: &str, refusal: &Refusal) -> CloseRefused {
        CloseRefused {
            id: id.to_string(),
            error: refusal.to_string(),
            guarded: refusal.is_close_guard(),
            unresolved: refusal.is_unresolved(),
        }
    }
}

/// Carries out `request` as `actor` in a transaction of its own on `store`: for a process that
/// owns its writes (the supervisor, its guard); a command submits through its server instead
/// (`crate::server::client::submit`). A refusal is the transaction's error, so nothing of a
/// refused request is kept.
pub fn execute_in(
    store: &crate::store::Store,
    actor: &str,
    clock: crate::time::Clock,
    request: &Request,
) -> Result<Reply, StoreError> {
    let (reply, _) = store.write(actor, clock, |writer| Ok(execute(writer, request)?))?;
    Ok(reply)
}

/// Carries out `request` as the writer's actor.
pub fn execute(writer: &mut Writer<'_>, request: &Request) -> Result<Reply, Refusal> {
    match request {
        Request::Create(create) => {
            let created = super::create(writer, create)?;
            let summary = Box::new(summary(writer, &created.id)?);
            Ok(Reply::Created { summary, warning: created.warning })
        }
        Request::Update(updates) => {
            let mut updated = Vec::with_capacity(updates.len());
            for update in updates {
                let id = super::update(writer, update)?;
                updated.push(summary(writer, &id)?);
            }
            Ok(Reply::Summaries(updated))
        }
        Request::Close(closes) => close_each(writer, closes).map(Reply::Closed),
        Request::Reopen { ids, reason } => {
            let mut reopened = Vec::with_capacity(ids.len());
            for input in ids {
                let id = super::reopen(writer, input, reason.as_deref())?;
                reopened.push(summary(writer, &id)?);
            }
            Ok(Reply::Summaries(reopened))
        }
        Request::Claim { id } => {
            let issue = super::claim(writer, id)?;
            Ok(Reply::Summary(Box::new(writer.summary(issue)?.into())))
        }
        Request::ClaimNext { filter } => {
            let claimed = super::claim_next(writer, filter)?;
            let summary = claimed.map(|issue| writer.summary(issue).map(Summary::from));
            let summary = summary.transpose()?;
            Ok(Reply::Claimed(summary.map(Box::new)))
        }
        Request::Release { ids } => {
            let mut released = Vec::with_capacity(ids.len());
            for input in ids {
                let id = super::release(writer, input)?;
                released.push(summary(writer, &id)?);
            }
            Ok(Reply::Summaries(released))
        }
        Request::Comment { id, author, text } => {
            let id = writer.resolve(id)?;
            let author = author.clone().unwrap_or_else(|| writer.actor().to_string());
            let comment = super::comment(writer, &id, &author, text)?;
            let issue = writer.issue(&id)?.map(Box::new);
            Ok(Reply::Commented { comment: Box::new(comment), issue })
        }
        Request::DepAdd { issue, depends_on, kind } => {
            let (from, to) = super::add_dependency(writer, issue, depends_on, kind)?;
            let from = writer.issue(&from)?.ok_or(StoreError::NotFound(from))?;
            let to_issue = writer.issue(&to)?.map(Box::new);
            Ok(Reply::EdgeAdded { from: Box::new(from), to_id: to, to: to_issue })
        }
        Request::DepRemove { issue, depends_on } => {
            let (from, to, kind) = super::remove_dependency(writer, issue, depends_on)?;
            Ok(Reply::EdgeRemoved { from, to, kind })
        }
        Request::DepAddAll(edges) => {
            let mut from = Vec::with_capacity(edges.len());
            for edge in edges {
                from.push(
                    super::add_dependency(writer, &edge.issue, &edge.depends_on, &edge.kind)?.0,
                );
            }
            Ok(Reply::Ids(from))
        }
        Request::Relate { ids: [a, b], add } => super::relate(writer, a, b, *add).map(Reply::Ids),
        Request::Label { ids, label, add } => label_each(writer, ids, label, *add),
        Request::Delete { ids, force } => delete_all(writer, ids, *force).map(Reply::Deleted),
        Request::RenamePrefix { plan, prefix } => {
            super::rename_prefix(writer, plan, prefix)?;
            Ok(Reply::Done)
        }
        Request::SetConfig(settings) => {
            for (key, value) in settings {
                super::set_config(writer, key, value.as_deref())?;
            }
            Ok(Reply::Done)
        }
        Request::Land(step) => super::land::record(writer, step).map(Reply::Ids),
        Request::Reclaim(reclaim) => super::reclaim(writer, reclaim).map(Reply::Ids),
        Request::Settle(settlement) => {
            super::settle(writer, settlement).map(|issue| Reply::Issue(Box::new(issue)))
        }
        Request::Register { instance, registration } => {
            super::register(writer, instance, registration.as_deref()).map(|()| Reply::Done)
        }
        Request::MailSend(mail) => {
            super::send_mail(writer, mail).map(|message| Reply::Mail(Box::new(message)))
        }
        Request::MailAck { ids } => super::ack_mail(writer, ids).map(Reply::Ids),
        Request::Reserve(reserve) => {
            super::reserve(writer, reserve).map(|reserved| Reply::Reserved(Box::new(reserved)))
        }
        Request::ReleaseFiles { task, ids } => {
            super::release_files(writer, task, ids).map(Reply::Ids)
        }
    }
}

/// Adds (or removes) `label` on every issue of `ids`.
fn label_each(
    writer: &mut Writer<'_>,
    ids: &[String],
    label: &str,
    add: bool,
) -> Result<Reply, Refusal> {
    if label.trim().is_empty() {
        return Err(Refusal::Invalid("label is empty".into()));
    }
    let mut changes = Vec::with_capacity(ids.len());
    for input in ids {
        let id = writer.resolve(input)?;
        let changed = if add {
            super::label_add(writer, &id, label)?
        } else {
            super::label_remove(writer, &id, label)?
        };
        changes.push(LabelChange { id, label: label.to_string(), changed });
    }
    Ok(Reply::Labels(changes))
}

/// Resolves every id, gathers what deleting them touches, and with `force` deletes them all.
fn delete_all(writer: &mut Writer<'_>, ids: &[String], force: bool) -> Result<Deleted, Refusal> {
    let ids = ids.iter().map(|id| writer.resolve(id)).collect::<Result<Vec<_>, _>>()?;
    let mut deleted =
        Deleted { preview: !force, issues: Vec::new(), affected_dependents: Vec::new() };
    for id in &ids {
        let detail = writer.detail(id)?;
        for dependent in detail.dependents {
            if !ids.contains(&dependent.id) && !deleted.affected_dependents.contains(&dependent.id)
            {
                deleted.affected_dependents.push(dependent.id);
            }
        }
        deleted.issues.push(detail.summary.into());
    }
    if force {
        for id in &ids {
            super::delete(writer, id)?;
        }
    }
    Ok(deleted)
}

fn summary(writer: &Writer<'_>, id: &str) -> Result<Summary, StoreError> {
    Ok(writer.summary_of(id)?.into())
}

/// Closes each issue that passes the close guards (or all, with `force`); ids that do not
/// resolve and issues the guards refuse are reported, not fatal.
fn close_each(writer: &mut Writer<'_>, closes: &[CloseRequest]) -> Result<CloseOutcome, Refusal> {
    let mut outcome = CloseOutcome::default();
    for close in closes {
        if let Ok(Some(warning)) = super::close::reason_policy(writer, close) {
            outcome.warnings.push(warning);
        }
        match super::close(writer, close) {
            Ok(id) => outcome.closed.push(summary(writer, &id)?),
            Err(refusal) if refusal.is_fatal() => return Err(refusal),
            Err(refusal) => outcome.refused.push(CloseRefused::of(&close.id, &refusal)),
        }
    }
    Ok(outcome)
}

/// A refusal on the wire: the kinds whose words or hints a front end tells apart keep their
/// shape, every other travels as its words.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WireRefusal {
    NotFound(String),
    Ambiguous { input: String, candidates: Vec<String> },
    AlreadyClaimed { id: String, by: String },
    Cycle { from: String, to: String, kind: String },
    Pinned(String),
    OpenChildren { id: String, children: Vec<String> },
    Blocked { id: String, blockers: Vec<String> },
    Other(String),
}

impl From<&Refusal> for WireRefusal {
    fn from(refusal: &Refusal) -> WireRefusal {
        match refusal {
            Refusal::Pinned(id) => WireRefusal::Pinned(id.clone()),
            Refusal::OpenChildren { id, children } => {
                WireRefusal::OpenChildren { id: id.clone(), children: children.clone() }
            }
            Refusal::Blocked { id, blockers } => {
                WireRefusal::Blocked { id: id.clone(), blockers: blockers.clone() }
            }
            Refusal::Store(StoreError::NotFound(input)) => WireRefusal::NotFound(input.clone()),
            Refusal::Store(StoreError::Ambiguous { input, candidates }) => {
                WireRefusal::Ambiguous { input: input.clone(), candidates: candidates.clone() }
            }
            Refusal::Store(StoreError::AlreadyClaimed { id, by }) => {
                WireRefusal::AlreadyClaimed { id: id.clone(), by: by.clone() }
            }
            Refusal::Store(StoreError::Cycle { from, to, kind }) => {
                WireRefusal::Cycle { from: from.clone(), to: to.clone(), kind: kind.clone() }
            }
            other => WireRefusal::Other(other.to_string()),
        }
    }
}

impl From<WireRefusal> for Refusal {
    fn from(wire: WireRefusal) -> Refusal {
        match wire {
            WireRefusal::NotFound(input) => Refusal::Store(StoreError::NotFound(input)),
            WireRefusal::Ambiguous { input, candidates } => {
                Refusal::Store(StoreError::Ambiguous { input, candidates })
            }
            WireRefusal::AlreadyClaimed { id, by } => {
                Refusal::Store(StoreError::AlreadyClaimed { id, by })
            }
            WireRefusal::Cycle { from, to, kind } => {
                Refusal::Store(StoreError::Cycle { from, to, kind })
            }
            WireRefusal::Pinned(id) => Refusal::Pinned(id),
            WireRefusal::OpenChildren { id, children } => Refusal::OpenChildren { id, children },
            WireRefusal::Blocked { id, blockers } => Refusal::Blocked { id, blockers },
            WireRefusal::Other(words) => Refusal::Invalid(words),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every refusal a front end tells apart comes back from the wire as itself: same words,
    /// same class.
    #[test]
    fn refusals_survive_the_wire() {
        let refusals = [
            Refusal::Store(StoreError::NotFound("x".into())),
            Refusal::Store(StoreError::Ambiguous {
                input: "a".into(),
                candidates: vec!["t-a1".into(), "t-a2".into()],
            }),
            Refusal::Store(StoreError::AlreadyClaimed { id: "t-1".into(), by: "bob".into() }),
            Refusal::Pinned("t-1".into()),
            Refusal::Blocked { id: "t-1".into(), blockers: vec!["t-2".into()] },
            Refusal::Invalid("bad".into()),
        ];
        for refusal in refusals {
            let json = serde_json::to_string(&WireRefusal::from(&refusal)).unwrap();
            let back: Refusal = serde_json::from_str::<WireRefusal>(&json).unwrap().into();
            assert_eq!(back.to_string(), refusal.to_string());
            assert_eq!(back.is_close_guard(), refusal.is_close_guard());
            assert_eq!(back.is_unresolved(), refusal.is_unresolved());
        }
    }
}
