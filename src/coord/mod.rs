//! What agents coordinate with besides tasks: messages between agents and people
//! ([`Message`], `bd mail`) and advisory file reservations ([`Reservation`], `bd reserve`),
//! with the glob rules that decide whether two reservations (or two tasks' `touches`) could
//! name the same file ([`glob`]).
//!
//! These are records, not I/O: they travel inside ops (`OpKind::Mail`, `MailAck`, `Reserve`,
//! `ReleaseFiles`), the store keeps them in its coordination table, and the tracker builds
//! them from requests. So they are journaled, synced and rebuilt like issues, and every front
//! end (the CLI's two personalities, the supervisor, the MCP server to come) reads and writes
//! them through the same requests.

pub mod glob;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::model::{Issue, Status};
use crate::op::Hlc;

/// A message from an agent or a person to a task's agent or to a person.
///
/// The sender's part travels in the op; the store fills in who sent it and when from the op's
/// meta, and records the first acknowledgement (`MailAck`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `m-` and eight characters of a ULID's random part.
    pub id: String,
    /// The recipient: a task id (its agent, now or at its next attempt) or a name (a person,
    /// or an actor).
    pub to: String,
    /// Whether `to` names a task.
    #[serde(default)]
    pub to_task: bool,
    /// The task the conversation is about (the thread): the recipient task, else the sender's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// The task whose agent sent it, when an agent did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_task: Option<String>,
    pub body: String,
    /// The op's actor (set by the store).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// When it was sent (the op's time; set by the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// The op's stamp (set by the store): messages read in this order keep each sender's order
    /// on every machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<Hlc>,
    /// Who acknowledged it first, and when (set by the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_at: Option<Timestamp>,
}

impl Message {
    /// Whether the message is for `task`'s agent, or for the person or actor `name`.
    pub fn is_for(&self, task: Option<&str>, name: Option<&str>) -> bool {
        if self.to_task {
            task.is_some_and(|task| task == self.to)
        } else {
            name.is_some_and(|name| name == self.to)
        }
    }

    /// The order of an inbox: by stamp (each sender's order, everywhere), then id.
    pub fn order_key(&self) -> (Hlc, &str) {
        (self.stamp.unwrap_or_default(), &self.id)
    }
}

/// Whose inbox: a task's agent, or a person (or actor) by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mailbox<'a> {
    Task(&'a str),
    Name(&'a str),
}

/// The messages of `mailbox` in `messages` (oldest first, as [`crate::store::Reader::messages`]
/// gives them), acknowledged ones only with `all`: what `bd mail inbox`, `bd prime`, the
/// prompt and the MCP server show.
pub fn inbox(messages: Vec<Message>, mailbox: Mailbox<'_>, all: bool) -> Vec<Message> {
    let (task, name) = match mailbox {
        Mailbox::Task(task) => (Some(task), None),
        Mailbox::Name(name) => (None, Some(name)),
    };
    messages.into_iter().filter(|m| m.is_for(task, name) && (all || m.acked_by.is_none())).collect()
}

/// An advisory claim on files by one task's attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// `r-` and eight characters of a ULID's random part.
    pub id: String,
    /// The task whose work needs the files.
    pub task: String,
    /// The attempt that reserved them (`FLEET_ATTEMPT`); empty when made outside a run. The
    /// reservation lives only while the task is in progress under this attempt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub attempt: String,
    /// Globs relative to the repository's top (`src/store/**`, `*.md`, `Cargo.toml`).
    pub globs: Vec<String>,
    /// Others must not commit to these files (the pre-commit guard refuses it).
    #[serde(default)]
    pub exclusive: bool,
    pub reason: String,
    /// When it lapses by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// The op's actor (set by the store).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub holder: String,
    /// When it was made (set by the store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

impl Reservation {
    /// Whether the reservation holds at `now` given its task as it stands: not expired, and
    /// the task in progress (under the reserving attempt, when one reserved it).
    pub fn is_live(&self, task: Option<&Issue>, now: Timestamp) -> bool {
        if self.expires_at.is_some_and(|at| at <= now) {
            return false;
        }
        let Some(task) = task else { return false };
        if task.status != Status::InProgress {
            return false;
        }
        self.attempt.is_empty()
            || task.fleet.lease.as_ref().is_some_and(|lease| lease.attempt == self.attempt)
    }

    /// The first glob of this reservation that could name a file `others` could name.
    pub fn overlap<'a>(&'a self, others: &[String]) -> Option<(&'a str, String)> {
        glob::first_overlap(&self.globs, others)
    }
}

/// The file in an attempt's task directory naming the messages its agent was already shown
/// (one id a line): those of its prompt, then those `bd mail inbox --new` delivered.
pub const DELIVERED_FILE: &str = "mail-delivered";

/// A short id of `prefix` and eight characters of a fresh ULID's random part (40 bits):
/// `m-7kq2x9ab`.
pub fn short_id(prefix: &str) -> String {
    let text = ulid::Ulid::generate().to_string().to_lowercase();
    format!("{prefix}-{}", &text[text.len() - 8..])
}

/// Why a task must wait before it runs: another task running now whose `touches` overlap its
/// own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TouchWait {
    /// The running task.
    pub task: String,
    /// Our glob and theirs.
    pub glob: String,
    pub theirs: String,
}

impl std::fmt::Display for TouchWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "touches {} overlap {}'s {} (running)", self.glob, self.task, self.theirs)
    }
}

/// Whether `issue` is running under a supervisor now: in progress with a live lease (work
/// waiting in a merge queue has its lease dropped).
pub fn is_running(issue: &Issue) -> bool {
    issue.status == Status::InProgress && issue.live_lease().is_some()
}

/// The first of `running` whose `touches` overlap `issue`'s, if any (never `issue` itself).
pub fn touch_wait(issue: &Issue, running: &[Issue]) -> Option<TouchWait> {
    if issue.fleet.touches.is_empty() {
        return None;
    }
    running.iter().filter(|other| other.id != issue.id).find_map(|other| {
        let (glob, theirs) = glob::first_overlap(&issue.fleet.touches, &other.fleet.touches)?;
        Some(TouchWait { task: other.id.clone(), glob: glob.to_string(), theirs })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Lease;

    fn running(id: &str, attempt: &str, touches: &[&str]) -> Issue {
        let mut issue = Issue::new(id.into(), "t".into(), Timestamp::UNIX_EPOCH);
        issue.status = Status::InProgress;
        issue.assignee = "fleet@h".into();
        issue.fleet.touches = touches.iter().map(ToString::to_string).collect();
        issue.fleet.lease = Some(Lease {
            owner: "fleet@h".into(),
            attempt: attempt.into(),
            since: Timestamp::UNIX_EPOCH,
            ..Lease::default()
        });
        issue
    }

    fn reservation(attempt: &str, expires_at: Option<Timestamp>) -> Reservation {
        Reservation {
            id: "r-1".into(),
            task: "t-1".into(),
            attempt: attempt.into(),
            globs: vec!["src/**".into()],
            exclusive: true,
            reason: "x".into(),
            expires_at,
            holder: String::new(),
            at: None,
        }
    }

    #[test]
    fn a_reservation_holds_while_its_attempt_runs_and_until_it_expires() {
        let now: Timestamp = "2026-06-01T12:00:00Z".parse().unwrap();
        let task = running("t-1", "a1", &[]);
        assert!(reservation("a1", None).is_live(Some(&task), now));
        assert!(reservation("", None).is_live(Some(&task), now));
        // Another attempt of the task (a retry) does not inherit it.
        assert!(!reservation("a0", None).is_live(Some(&task), now));
        assert!(!reservation("a1", Some(now)).is_live(Some(&task), now));
        let mut done = task.clone();
        done.status = Status::Closed;
        assert!(!reservation("a1", None).is_live(Some(&done), now));
        assert!(!reservation("a1", None).is_live(None, now));
    }

    #[test]
    fn a_task_waits_only_for_another_running_task_whose_touches_overlap() {
        let mine = running("t-2", "b", &["src/**/*.rs"]);
        let others = [running("t-1", "a", &["docs/**"]), running("t-3", "c", &["src/store"])];
        let wait = touch_wait(&mine, &others).unwrap();
        assert_eq!((wait.task.as_str(), wait.theirs.as_str()), ("t-3", "src/store"));
        assert!(touch_wait(&mine, &others[..1]).is_none());
        assert!(touch_wait(&mine, std::slice::from_ref(&mine)).is_none(), "never itself");
        let free = running("t-4", "d", &[]);
        assert!(touch_wait(&free, &others).is_none());
    }
}
