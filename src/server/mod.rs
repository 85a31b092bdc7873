//! The write path through the running fleet process: while `fleet run` or `fleet serve` holds
//! a workspace, it listens on a Unix socket in `.beads/` and commits the write requests of
//! every `fleet` and `bd` command sent there in groups — one durable commit for all the
//! requests waiting — instead of each process opening the store and paying its own commits
//! and lock hand-offs.
//!
//! - `wire`: the frames (length-prefixed JSON) and what travels in them: a versioned
//!   [`Envelope`] around a [`Request`], and an [`Answer`];
//! - `serve`: the server — one listener thread, a thread per connection, and one committer
//!   that takes every request waiting, applies them in one transaction and answers each;
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
mod serve;
mod wire;

pub use serve::{ServeError, Server};
pub use wire::{Answer, Envelope, Outcome, PROTOCOL_VERSION};

use std::path::{Path, PathBuf};

use crate::store::{StoreError, Writer};
use crate::tracker::{Refusal, Reply, Request};

/// The socket's file name inside `.beads/`.
pub const SOCKET_FILE: &str = "fleet.sock";
/// The lock file held by the serving process for as long as it serves (a socket file left by
/// a killed server is stale exactly when nobody holds this lock).
pub const LOCK_FILE: &str = "fleet.sock.lock";

/// The socket of the workspace `.beads` directory `dir`.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// Applies `request` in `writer` unless the request `id` was already applied, in which case the
/// recorded reply is returned; a new application records its reply under `id`. Without an id
/// (a command that never reached a server) nothing is recorded.
pub fn apply_once(
    writer: &mut Writer<'_>,
    id: Option<ulid::Ulid>,
    request: &Request,
) -> Result<Reply, Refusal> {
    if let Some(id) = id
        && let Some(reply) = recorded(writer, id)?
    {
        return Ok(reply);
    }
    let reply = crate::tracker::execute(writer, request)?;
    if let Some(id) = id {
        record(writer, id, &reply)?;
    }
    Ok(reply)
}

/// The reply recorded for request `id`, if any.
fn recorded(writer: &mut Writer<'_>, id: ulid::Ulid) -> Result<Option<Reply>, StoreError> {
    let Some(bytes) = writer.recorded_reply(id)? else { return Ok(None) };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::Corrupt(format!("recorded reply of request {id}: {e}")))
}

fn record(writer: &mut Writer<'_>, id: ulid::Ulid, reply: &Reply) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(reply).expect("a reply serialises");
    writer.record_reply(id, &bytes)
}
