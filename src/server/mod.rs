//! The write path through the running fleet process: while `fleet run` or `fleet serve` holds
//! a workspace, it listens on a Unix socket in `.beads/` and commits the write requests of
//! every `fleet` and `bd` command sent there in groups — one durable commit for all the
//! requests waiting — instead of each process opening the store and paying its own commits
//! and lock hand-offs.
//!
//! - `wire`: the frames (length-prefixed JSON) and what travels in them: a versioned
//!   [`Envelope`] around a [`Request`], and an [`Answer`];
//! - `serve`: starting and stopping the server: its place, its thread;
//! - `place`: the serving lock and the socket, kept the server's own while it serves (made
//!   again when removed; given up when another process took the workspace over);
//! - `event_loop`: that thread — one loop over every connection, which reads the requests
//!   waiting, decides them as one group and answers each;
//! - `group`: deciding a group in one transaction (group commit);
//! - `client`: what a command does — send, and fall back to its own transaction when there is
//!   no server, no answer within the deadline, or a protocol it does not speak.
//!
//! Every request carries an id. The transaction that applies a request records its reply under
//! that id ([`Writer::record_reply`]), and both the server and a client falling back look the
//! id up first inside their own write transaction, so a request is applied at most once — also
//! when the server is killed after its commit but before its answer. Reads never come here:
//! they read the store directly (MVCC snapshots).
//!
//! [`Request`]: crate::tracker::Request
//! [`Writer::record_reply`]: crate::store::Writer::record_reply

pub mod client;
mod event_loop;
mod group;
mod in_process;
mod place;
mod serve;
mod wire;

pub use in_process::InProcess;
pub use place::ServeError;
pub use serve::Server;
pub use wire::{Answer, Envelope, Outcome, PROTOCOL_VERSION};

use crate::store::{StoreError, Writer};
use crate::tracker::{Refusal, Reply, Request};

/// The oldest a request may be and still be applied, in milliseconds: half the time replies
/// are kept, so the record of an earlier application of the same request is always still
/// there when it is looked up.
pub const MAX_REQUEST_AGE_MS: u64 = crate::store::REPLY_RETENTION_MS / 2;

/// Applies `request` in `writer` unless the request `id` was already applied, in which case the
/// recorded reply is returned; a new application records its reply under `id`. Without an id
/// (a command that never reached a server) nothing is recorded. A request older than
/// [`MAX_REQUEST_AGE_MS`] (by the system clock its id was made with) is refused: whether it
/// was applied can no longer be told.
pub fn apply_once(
    writer: &mut Writer<'_>,
    id: Option<ulid::Ulid>,
    request: &Request,
) -> Result<Reply, Refusal> {
    if let Some(id) = id {
        if let Some(reply) = recorded(writer, id)? {
            return Ok(reply);
        }
        refuse_if_expired(id)?;
    }
    let reply = crate::tracker::execute(writer, request)?;
    if let Some(id) = id {
        record(writer, id, &reply)?;
    }
    Ok(reply)
}

/// Refuses a request made more than [`MAX_REQUEST_AGE_MS`] ago (a server stopped for a long
/// time reading what was queued, a command that waited as long for the store's lock).
fn refuse_if_expired(id: ulid::Ulid) -> Result<(), Refusal> {
    let now_ms = u64::try_from(jiff::Timestamp::now().as_millisecond()).unwrap_or(0);
    let age_ms = now_ms.saturating_sub(id.timestamp_ms());
    if age_ms > MAX_REQUEST_AGE_MS {
        return Err(Refusal::Invalid(format!(
            "request {id} was made {} s ago and is too old to apply: it may have been applied \
             already; check the issue and run the command again if it was not",
            age_ms / 1000
        )));
    }
    Ok(())
}

/// Whether the peer of `stream` runs as this process's user (both ends check: a server
/// answers only its own user, a client talks only to a server of its own user).
pub(crate) fn peer_is_same_user(stream: &impl std::os::fd::AsRawFd) -> bool {
    let mut cred = libc::ucred { pid: 0, uid: u32::MAX, gid: u32::MAX };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, which is that large.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    // SAFETY: geteuid has no preconditions.
    rc == 0 && cred.uid == unsafe { libc::geteuid() }
}

/// What a command that gave up on its server records under its request's id when it may not
/// apply the request itself (`FLEET_REQUIRE_SERVER`): the server, reading the request later,
/// refuses it instead of applying it ([`settle_unanswered`]).
const ABANDONED: &[u8] = b"\"abandoned\"";

/// For a command that got no answer from its server and may not write itself: the reply of
/// request `id` if the server applied it; else `None`, and the request is recorded as given
/// up, so a server still holding it never applies it. Either way the command can say exactly
/// what became of its request.
pub fn settle_unanswered(
    writer: &mut Writer<'_>,
    id: ulid::Ulid,
) -> Result<Option<Reply>, Refusal> {
    if let Some(reply) = recorded(writer, id)? {
        return Ok(Some(reply));
    }
    writer.record_reply(id, ABANDONED)?;
    Ok(None)
}

/// The reply recorded for request `id`, if any; a request its command gave up on is refused.
fn recorded(writer: &mut Writer<'_>, id: ulid::Ulid) -> Result<Option<Reply>, StoreError> {
    let Some(bytes) = writer.recorded_reply(id)? else { return Ok(None) };
    if bytes == ABANDONED {
        return Err(StoreError::GivenUp(id.to_string()));
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::Corrupt(format!("recorded reply of request {id}: {e}")))
}

fn record(writer: &mut Writer<'_>, id: ulid::Ulid, reply: &Reply) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(reply).expect("a reply serialises");
    writer.record_reply(id, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::time::Clock;
    use crate::tracker::CreateRequest;

    fn create(title: &str) -> Request {
        Request::Create(Box::new(CreateRequest {
            title: title.into(),
            issue_type: "task".into(),
            priority: 2,
            ..CreateRequest::default()
        }))
    }

    fn id_made_ms_ago(ms: u64) -> ulid::Ulid {
        let now = u64::try_from(jiff::Timestamp::now().as_millisecond()).unwrap();
        ulid::Ulid::from_parts(now - ms, 7)
    }

    /// The same request id applied twice gives the first reply and changes nothing more.
    #[test]
    fn a_request_is_applied_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let id = id_made_ms_ago(0);
        let apply = || {
            store
                .write("a", Clock::System, |w| Ok(apply_once(w, Some(id), &create("x"))?))
                .unwrap()
                .0
        };
        let first = apply().into_summary().unwrap();
        let second = apply().into_summary().unwrap();
        assert_eq!(first.issue.id, second.issue.id);
        let count = store.read().unwrap().stats(jiff::Timestamp::now()).unwrap().total_issues;
        assert_eq!(count, 1);
    }

    /// A request older than half the reply retention is refused unapplied: an earlier
    /// application's record could already be pruned.
    #[test]
    fn an_expired_request_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let id = id_made_ms_ago(MAX_REQUEST_AGE_MS + 5_000);
        let refused = store
            .write("a", Clock::System, |w| Ok(apply_once(w, Some(id), &create("x"))?))
            .unwrap_err();
        assert!(refused.to_string().contains("too old to apply"), "{refused}");
        assert_eq!(store.read().unwrap().stats(jiff::Timestamp::now()).unwrap().total_issues, 0);
    }
}
