//! Taking back the work of a supervisor that stopped without releasing it: what the guard of a
//! killed `fleet run` does for its own supervisor, and what a running supervisor does for
//! another that is gone (`crate::supervisor::recovery`).
//!
//! Each task is judged abandoned outside the transaction (its owner is dead, its survivors are
//! killed); inside it, the task is released only if it is still in progress under the very
//! lease that was judged — another supervisor may have released and claimed it again
//! meanwhile, under a live lease of its own, and a task handed to someone else is no one's
//! running work. The registrations of the gone supervisors go in the same transaction, and
//! so do the releases of the abandoned attempts' file reservations.

use serde::{Deserialize, Serialize};

use super::{Refusal, comment, release};
use crate::model::{Lease, Status};
use crate::store::Writer;

/// Tasks to take back and supervisors to forget, in one transaction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReclaimRequest {
    pub tasks: Vec<Abandoned>,
    /// Instances whose registration is removed.
    pub gone: Vec<String>,
}

/// A task judged abandoned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Abandoned {
    pub id: String,
    /// The lease judged gone (`None`: a task held by name, without a lease).
    pub lease: Option<Lease>,
    /// Who writes the comment (the dead supervisor's name, or the one taking the task back).
    pub author: String,
    /// Why it was released, in words.
    pub comment: String,
}

/// Releases each task still held under the lease it was judged by, with its comment, and
/// removes the gone registrations. Returns the ids released.
pub fn reclaim(writer: &mut Writer<'_>, request: &ReclaimRequest) -> Result<Vec<String>, Refusal> {
    let mut released = Vec::new();
    for task in &request.tasks {
        let Some(issue) = writer.issue(&task.id)? else { continue };
        let still_held = issue.status == Status::InProgress
            && issue.fleet.lease == task.lease
            && (task.lease.is_none() || issue.live_lease().is_some());
        if !still_held {
            continue;
        }
        release(writer, &task.id)?;
        comment(writer, &task.id, &task.author, &task.comment)?;
        // Its reservations ended with the attempt that was abandoned.
        super::release_files(writer, &task.id, &[])?;
        released.push(task.id.clone());
    }
    for instance in &request.gone {
        writer.set_supervisor(instance, None)?;
    }
    Ok(released)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::IssuePatch;
    use crate::store::Store;
    use crate::time::Clock;
    use crate::tracker::{CreateRequest, UpdateRequest, claim, create, update};

    fn lease(owner: &str, instance: &str) -> Lease {
        Lease {
            owner: owner.into(),
            instance: instance.into(),
            host: "h".into(),
            boot_id: String::new(),
            pid: 1,
            start_ticks: 1,
            attempt: "a".into(),
            coder: String::new(),
            model: String::new(),
            account: String::new(),
            since: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    /// A task claimed by `owner` under `held`'s lease.
    fn held(store: &Store, title: &str, owner: &str, held: &Lease) -> String {
        let (id, _) = store
            .write(owner, Clock::System, |w| {
                let request = CreateRequest { title: title.into(), ..CreateRequest::default() };
                let id = create(w, &request).map_err(crate::store::StoreError::from)?.id;
                claim(w, &id).map_err(crate::store::StoreError::from)?;
                let mut fleet = w.issue(&id)?.unwrap().fleet;
                fleet.lease = Some(held.clone());
                let patch = IssuePatch { fleet: Some(fleet), ..IssuePatch::default() };
                update(w, &UpdateRequest::edit(&id, patch)).map_err(crate::store::StoreError::from)
            })
            .unwrap();
        id
    }

    #[test]
    fn only_tasks_still_held_under_the_judged_lease_are_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let dead = lease("fleet@a", "dead");
        let abandoned = held(&store, "abandoned", "fleet@a", &dead);
        let taken_again = held(&store, "taken again", "fleet@b", &lease("fleet@b", "alive"));
        let handed_on = held(&store, "handed on", "fleet@a", &dead);
        store
            .write("person", Clock::System, |w| {
                let patch = IssuePatch { assignee: Some("alice".into()), ..IssuePatch::default() };
                update(w, &UpdateRequest::edit(&handed_on, patch))
                    .map_err(crate::store::StoreError::from)
            })
            .unwrap();
        let judged = |id: &str| Abandoned {
            id: id.into(),
            lease: Some(dead.clone()),
            author: "fleet@a".into(),
            comment: "[fleet] released: gone".into(),
        };
        let request = ReclaimRequest {
            tasks: vec![judged(&abandoned), judged(&taken_again), judged(&handed_on)],
            gone: vec!["dead".into()],
        };
        let (released, _) = store
            .write("fleet-guard", Clock::System, |w| {
                reclaim(w, &request).map_err(crate::store::StoreError::from)
            })
            .unwrap();
        assert_eq!(released, vec![abandoned.to_string()]);
        let reader = store.read().unwrap();
        assert_eq!(reader.issue(&abandoned).unwrap().unwrap().status, Status::Open);
        assert_eq!(reader.issue(&taken_again).unwrap().unwrap().status, Status::InProgress);
        assert_eq!(reader.issue(&handed_on).unwrap().unwrap().status, Status::InProgress);
    }
}
