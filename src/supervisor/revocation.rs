//! Noticing that a running task was changed by someone else, and deciding what its agent
//! must do.
//!
//! Whenever the store's change counter moves, the supervisor reads the journal ops written
//! since it last looked. For each running task that an op touched, it re-reads the task: if the
//! task is no longer in progress under this very attempt, the agent is stopped at once
//! ([`Control::Revoke`], with who did what) — unless it was the agent itself that closed or
//! blocked its task, which is how an agent finishes: then it gets [`runner::WRAP_UP`] to exit
//! by itself ([`Control::WrapUp`]).
//!
//! [`runner::WRAP_UP`]: super::runner::WRAP_UP

use std::collections::{BTreeMap, HashMap};

use super::lease::Identity;
use super::runner::Control;
use crate::model::{Issue, Status};
use crate::store::{Reader, Store, StoreError};

/// The last op that may have changed a task's ownership, per task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touch {
    pub actor: String,
    pub op: &'static str,
}

/// Ops journaled from `from` on that touch one of `running` (comments and labels aside).
/// Returns the next sequence to read from, per touched task the latest such op, and a reader
/// of the same snapshot: the tasks it reads are as those ops left them, so the latest op is
/// the one that explains a task's state (read later, an agent's close could look like the
/// work of whoever wrote the op before it).
pub fn touched_since(
    store: &Store,
    from: u64,
    running: &HashMap<String, impl Sized>,
) -> Result<(u64, BTreeMap<String, Touch>, Reader), StoreError> {
    let mut next = from;
    let mut touched = BTreeMap::new();
    let (journal, reader) = store.journal_and_read(from)?;
    for (seq, op) in journal {
        next = seq + 1;
        // A bulk op (an import) touches every issue its entries name.
        for kind in op.kind.entries() {
            // Comments, labels, messages and reservations never change who holds a task.
            if kind.is_coordination()
                || matches!(kind.name(), "comment" | "label_add" | "label_remove")
            {
                continue;
            }
            let subject = kind.subject();
            if running.contains_key(subject) {
                touched.insert(
                    subject.to_string(),
                    Touch { actor: op.meta.actor.clone(), op: kind.name() },
                );
            }
        }
    }
    Ok((next, touched, reader))
}

/// What the agent of `attempt` must do now that `touch` changed its task, which reads `issue`
/// (`None`: deleted). `agent_actor` is the actor the supervisor's agents write as.
pub fn decide(
    issue: Option<&Issue>,
    me: &Identity,
    attempt: &str,
    touch: &Touch,
    agent_actor: &str,
) -> Control {
    let who = &touch.actor;
    let Some(issue) = issue else {
        return Control::Revoke(format!("{who} deleted the task"));
    };
    let held =
        me.holds(issue) && issue.fleet.lease.as_ref().is_some_and(|lease| lease.attempt == attempt);
    if held {
        // An agent's close of a task that works on a branch of its own queues its work: the
        // task stays in progress under the attempt, and the agent finishes as after a close.
        if touch.actor == agent_actor && super::outcome::queued(issue) {
            return Control::WrapUp;
        }
        return Control::Run;
    }
    let by_agent = who == agent_actor;
    match &issue.status {
        Status::Closed | Status::Blocked if by_agent => Control::WrapUp,
        Status::Closed => Control::Revoke(format!("{who} closed the task")),
        Status::Blocked => Control::Revoke(format!("{who} set the task to blocked")),
        Status::Open if touch.op == "release" => {
            Control::Revoke(format!("{who} released the task"))
        }
        Status::Open if touch.op == "reopen" => Control::Revoke(format!("{who} reopened the task")),
        Status::InProgress if issue.assignee != me.name => Control::Revoke(format!(
            "{who} gave the task to {}",
            if issue.assignee.is_empty() { "nobody" } else { &issue.assignee }
        )),
        status => Control::Revoke(format!("{who} set the task to {status}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;

    fn running_under(me: &Identity, attempt: &str) -> Issue {
        let mut issue = Issue::new("t-1".into(), "x".into(), Timestamp::now());
        issue.status = Status::InProgress;
        issue.assignee = me.name.clone();
        issue.fleet.lease = Some(me.lease(attempt, "claude", "", Timestamp::now()));
        issue
    }

    fn touch(actor: &str, op: &'static str) -> Touch {
        Touch { actor: actor.into(), op }
    }

    /// An import rewriting a running task inside a bulk op is noticed like a put of its own.
    #[test]
    fn a_task_rewritten_by_an_import_is_touched() {
        use crate::time::Clock;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let issue = |id: &str| Issue::new(id.into(), "x".into(), Timestamp::now());
        let create = crate::op::OpKind::Create { issue: Box::new(issue("t-1")), deps: vec![] };
        store.apply("alice", Clock::System, vec![create]).unwrap();
        let from = store.journal_head().unwrap() + 1;
        store
            .write("importer", Clock::System, |writer| {
                let mut batch = crate::tracker::ImportBatch::default();
                batch.new_issue(Box::new(issue("t-2")), Vec::new());
                batch.record(Box::new(issue("t-1")));
                batch.apply(writer).map_err(|e| StoreError::Refused(Box::new(e)))
            })
            .unwrap();
        let running = HashMap::from([("t-1".to_string(), ())]);
        let (_, touched, _) = touched_since(&store, from, &running).unwrap();
        assert_eq!(touched["t-1"], Touch { actor: "importer".into(), op: "put" });
    }

    /// The agent closes its task just after the supervisor's claim was read: the tasks are
    /// read in the ops' snapshot, so the claim is judged against the task it left (still
    /// ours), and the close is read, with its actor, next time — never a close by "the
    /// supervisor" that would stop an agent for finishing.
    #[test]
    fn the_tasks_are_read_as_the_listed_ops_left_them() {
        use crate::op::OpKind;
        use crate::time::Clock;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let issue = Issue::new("t-1".into(), "x".into(), Timestamp::now());
        let create = OpKind::Create { issue: Box::new(issue), deps: Vec::new() };
        store.apply("alice", Clock::System, vec![create]).unwrap();
        let from = store.journal_head().unwrap() + 1;
        store.apply("fleet@a", Clock::System, vec![OpKind::Claim { id: "t-1".into() }]).unwrap();
        let running = HashMap::from([("t-1".to_string(), ())]);
        let (next, touched, reader) = touched_since(&store, from, &running).unwrap();
        let close =
            OpKind::Close { id: "t-1".into(), reason: "done".into(), session: String::new() };
        store.apply("fleet@a/agent", Clock::System, vec![close]).unwrap();

        assert_eq!(touched["t-1"], Touch { actor: "fleet@a".into(), op: "claim" });
        assert_eq!(reader.issue("t-1").unwrap().unwrap().status, Status::InProgress);
        let (_, later, reader) = touched_since(&store, next, &running).unwrap();
        assert_eq!(later["t-1"], Touch { actor: "fleet@a/agent".into(), op: "close" });
        assert_eq!(reader.issue("t-1").unwrap().unwrap().status, Status::Closed);
    }

    #[test]
    fn changes_by_others_stop_the_agent_and_say_who() {
        let me = Identity::current("fleet@test");
        let mut issue = running_under(&me, "A1");
        assert_eq!(
            decide(Some(&issue), &me, "A1", &touch("bob", "update"), "x/agent"),
            Control::Run
        );
        issue.status = Status::Open;
        issue.assignee.clear();
        assert_eq!(
            decide(Some(&issue), &me, "A1", &touch("bob", "release"), "x/agent"),
            Control::Revoke("bob released the task".into())
        );
        issue.status = Status::Closed;
        assert_eq!(
            decide(Some(&issue), &me, "A1", &touch("bob", "close"), "x/agent"),
            Control::Revoke("bob closed the task".into())
        );
        assert_eq!(
            decide(Some(&issue), &me, "A1", &touch("x/agent", "close"), "x/agent"),
            Control::WrapUp
        );
        assert_eq!(
            decide(None, &me, "A1", &touch("bob", "delete"), "x/agent"),
            Control::Revoke("bob deleted the task".into())
        );
    }

    #[test]
    fn another_attempt_or_instance_of_the_same_name_is_not_ours() {
        let me = Identity::current("fleet@test");
        let issue = running_under(&me, "A2");
        assert!(matches!(
            decide(Some(&issue), &me, "A1", &touch("fleet@test", "update"), "x/agent"),
            Control::Revoke(_)
        ));
        let twin = Identity::current("fleet@test");
        let theirs = running_under(&twin, "A1");
        assert!(matches!(
            decide(Some(&theirs), &me, "A1", &touch("fleet@test", "claim"), "x/agent"),
            Control::Revoke(_)
        ));
    }

    /// A claim lost to an earlier claim made on another machine, merged by a sync: the
    /// winning claim is in the journal with the remote actor, so the running task is seen as
    /// touched by someone else, and it is no longer ours.
    #[test]
    fn a_claim_lost_to_a_replayed_earlier_claim_is_noticed() {
        use crate::op::OpKind;
        use crate::time::Clock;
        let minute = |m: i64| {
            let base: Timestamp = "2026-06-01T12:00:00Z".parse().unwrap();
            Clock::Fixed(base + jiff::SignedDuration::from_mins(m))
        };
        let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = Store::init(&dir_a.path().join(".beads"), "t").unwrap();
        let b = Store::init(&dir_b.path().join(".beads"), "t").unwrap();
        let issue = Issue::new("t-1".into(), "x".into(), Timestamp::now());
        let create = OpKind::Create { issue: Box::new(issue), deps: Vec::new() };
        let made = a.apply("alice", minute(0), vec![create]).unwrap();
        b.replay(minute(1), made).unwrap();
        a.apply("fleet@a", minute(10), vec![OpKind::Claim { id: "t-1".into() }]).unwrap();
        let theirs = b.apply("bob", minute(5), vec![OpKind::Claim { id: "t-1".into() }]).unwrap();

        let from = a.journal_head().unwrap() + 1;
        let merged = a.merge(minute(11), theirs, &[]).unwrap();
        assert_eq!(merged.lost_claims, ["t-1"]);
        let running = HashMap::from([("t-1".to_string(), ())]);
        let (_, touched, _) = touched_since(&a, from, &running).unwrap();
        assert_eq!(touched["t-1"], Touch { actor: "bob".into(), op: "claim" });
        let now = a.read().unwrap().issue("t-1").unwrap().unwrap();
        assert_eq!(now.assignee, "bob");
    }
}
