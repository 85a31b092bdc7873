//! An attempt's end written back on its task, and the registry of running supervisors.
//!
//! The supervisor decides what an attempt's outcome means (`crate::supervisor::outcome`, a
//! pure table) on the task as it read it, and sends the decision here as a [`Settlement`]. A
//! settlement applies only to the task it was decided on: if anything changed the task since
//! that read (the agent's last write landing late, a person, another machine's op), it is
//! refused as [`Refusal::Stale`] and the supervisor decides again on the task as it is now.
//! So the decision and the state it was made on are one, as if both were in one transaction,
//! while the supervisor — a front end like any other — never opens a transaction itself.

use serde::{Deserialize, Serialize};

use super::{CloseRequest, Refusal, UpdateRequest};
use crate::model::Issue;
use crate::op::IssuePatch;
use crate::store::{StoreError, Writer};

/// What to write on a task when an attempt at it ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settlement {
    pub id: String,
    /// The task as the decision was made on it.
    pub decided_on: Box<Issue>,
    /// Close the task first (a command's exit 0 closes its task).
    pub close: Option<CloseRequest>,
    /// Put the task back in the queue (open, unassigned).
    pub release: bool,
    /// Field changes: counters, a backoff deferral, the coder frozen, blocked with notes.
    pub patch: Option<IssuePatch>,
    /// The comment the outcome leaves, by the actor.
    pub comment: Option<String>,
}

/// Applies `settlement` if its task is as it was decided on; returns the task after.
pub fn settle(writer: &mut Writer<'_>, settlement: &Settlement) -> Result<Issue, Refusal> {
    let id = settlement.id.as_str();
    if writer.issue(id)?.as_ref() != Some(&*settlement.decided_on) {
        return Err(Refusal::Stale(id.to_string()));
    }
    if let Some(close) = &settlement.close {
        super::close(writer, close)?;
    }
    if settlement.release {
        super::release(writer, id)?;
    }
    if let Some(patch) = &settlement.patch {
        super::update(writer, &UpdateRequest::edit(id, patch.clone()))?;
    }
    if let Some(comment) = &settlement.comment {
        let author = writer.actor().to_string();
        super::comment(writer, id, &author, comment)?;
    }
    // Reservations end with the attempt that made them.
    super::release_files(writer, id, &[])?;
    Ok(writer.issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?)
}

/// Whether `error` is a settlement refused because its task changed since it was decided.
pub fn is_stale(error: &StoreError) -> bool {
    matches!(error, StoreError::Refused(refusal)
        if matches!(refusal.downcast_ref::<Refusal>(), Some(Refusal::Stale(_))))
}

/// Records a running supervisor's registration (its heartbeat) under its instance id, or
/// forgets it (`None`). The registry is runtime state, not ops: heartbeats wake no one.
pub fn register(
    writer: &mut Writer<'_>,
    instance: &str,
    registration: Option<&str>,
) -> Result<(), Refusal> {
    Ok(writer.set_supervisor(instance, registration.map(str::as_bytes))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Status;
    use crate::store::Store;
    use crate::time::Clock;
    use crate::tracker::{CreateRequest, Request, execute_in};

    fn claimed_task(store: &Store) -> Issue {
        let (issue, _) = store
            .write("fleet@a", Clock::System, |w| {
                let request = CreateRequest { title: "t".into(), ..CreateRequest::default() };
                let id = crate::tracker::create(w, &request).map_err(StoreError::from)?.id;
                crate::tracker::claim(w, &id).map_err(StoreError::from)
            })
            .unwrap();
        issue
    }

    fn release_with(comment: &str, decided_on: &Issue) -> Request {
        Request::Settle(Box::new(Settlement {
            id: decided_on.id.clone(),
            decided_on: Box::new(decided_on.clone()),
            close: None,
            release: true,
            patch: None,
            comment: Some(comment.into()),
        }))
    }

    #[test]
    fn a_settlement_on_the_task_as_decided_applies() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let task = claimed_task(&store);
        let reply = execute_in(&store, "fleet@a", Clock::System, &release_with("requeued", &task));
        let after = reply.unwrap().into_issue().unwrap();
        assert_eq!((after.status, after.assignee.as_str()), (Status::Open, ""));
        let comments = store.read().unwrap().comments(&task.id).unwrap();
        assert_eq!(comments.last().map(|c| c.text.as_str()), Some("requeued"));
    }

    /// The agent's own close lands between the supervisor's read and its settlement: the
    /// settlement is refused as stale and writes nothing, so the close stands.
    #[test]
    fn a_settlement_on_a_task_changed_since_is_refused_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let task = claimed_task(&store);
        let close = crate::tracker::CloseRequest { id: task.id.clone(), ..Default::default() };
        execute_in(&store, "fleet@a/agent", Clock::System, &Request::Close(vec![close])).unwrap();
        let error = execute_in(&store, "fleet@a", Clock::System, &release_with("requeued", &task))
            .unwrap_err();
        assert!(is_stale(&error), "{error}");
        let now = store.read().unwrap().issue(&task.id).unwrap().unwrap();
        assert_eq!(now.status, Status::Closed);
        let comments = store.read().unwrap().comments(&task.id).unwrap();
        assert!(comments.iter().all(|c| c.text != "requeued"), "{comments:?}");
    }
}
