//! The write commands of the CLI as values: a [`Request`] names one command's whole change
//! (create an issue, update or close several, claim, release, reopen, comment), [`execute`]
//! carries it out on a [`Writer`] and says what happened in a [`Reply`].
//!
//! This is what lets a command run either in its own transaction (direct mode) or through the
//! running fleet process (`crate::server`), which commits many requests in one transaction:
//! both call [`execute`] on the same request, so both print the same thing. Requests and
//! replies travel as JSON; a refusal travels as a [`WireRefusal`], which turns back into the
//! refusal direct mode would have met, with the same words and hints.

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
    ClaimNext { filter: ReadyFilter },
    /// Puts claimed issues back; replies [`Reply::Summaries`].
    Release { ids: Vec<String> },
    /// A comment on an issue by `author` (the actor when `None`); replies
    /// [`Reply::Commented`].
    Comment { id: String, author: Option<String>, text: String },
}

impl Request {
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
    Summaries(Vec<Summary>),
    Claimed(Option<Box<Summary>>),
    Closed(CloseOutcome),
    Commented { comment: Box<Comment>, issue: Option<Box<Issue>> },
}

impl Reply {
    /// The one issue of a create or a claim.
    pub fn into_summary(self) -> Result<IssueSummary, StoreError> {
        match self {
            Reply::Summary(summary) | Reply::Claimed(Some(summary)) => Ok((*summary).into()),
            other => Err(other.unexpected("one issue")),
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

/// Carries out `request` as the writer's actor.
pub fn execute(writer: &mut Writer<'_>, request: &Request) -> Result<Reply, Refusal> {
    match request {
        Request::Create(create) => {
            let id = super::create(writer, create)?;
            Ok(Reply::Summary(Box::new(summary(writer, &id)?)))
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
    }
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
            WireRefusal::Other(words) => Refusal::Store(StoreError::Refused(words)),
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
