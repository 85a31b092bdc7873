//! The journal in git: every op this replica made, committed in batches through gix.
//!
//! The store journals every applied op in its own table (`Store::journal`); this module copies
//! the ops *made here* (`op.meta.replica == Store::replica()`) into git, so that other
//! machines can fetch them and a store can be rebuilt from them. Writing to the store never
//! waits for git: ops are committed by [`commit_pending`], which `fleet journal commit`, a
//! sync, the end of `fleet import`, the supervisor (every few seconds, and at shutdown) and,
//! without a supervisor, the committer a write command starts ([`committer`]) call.
//!
//! # Where
//!
//! In the git repository that contains the workspace (`.beads/`), found upward from it as
//! `git rev-parse` would; only objects and refs are written, never the worktree or the index.
//! A workspace in no repository gets a bare repository of its own at `.beads/journal.git`,
//! and keeps using it once it exists (even if the directory later ends up inside a
//! repository), so a journal never moves. Each replica has one ref,
//! `refs/fleet/journal/<replica>`; only that replica advances it, so refs of several machines
//! never conflict.
//!
//! # Format (versions 1 and 2, [`FORMAT_VERSION`])
//!
//! One commit per batch of at most [`MAX_OPS_PER_COMMIT`] ops. Its tree holds two files:
//!
//! - `ops.jsonl`: one op per line, exactly the JSON the store journals (the op record of
//!   `schema/op.schema.json`, itself versioned by its `v` field), in journal order;
//!   format 2 adds bulk ops (see "Bulk imports");
//! - `batch.json`: `{"format", "replica", "count", "first_seq", "last_seq", "first_op",
//!   "last_op", "prefix"}` — the ops' journal sequences in the store that committed them
//!   (positions in that store's journal, for people; a rebuilt store numbers anew), the first
//!   and last op ids (what identifies a batch's end), and the id prefix of the store's new
//!   issues (what a machine joining the queue takes; readers before it ignore it).
//!
//! The parent is the replica's previous batch, so the chain is tamper-evident: changing any
//! op changes every later commit id. Author and committer are the replica id with the fixed
//! email [`EMAIL`] (no user identity is read), dated by the last op of the batch, so the same
//! ops always make the same commits. The message names the count and the sequence range.
//!
//! # Bulk imports
//!
//! An import journals its records as a few bulk ops (`OpKind::Bulk`, op format version 2),
//! each carrying up to `store::BULK_ENTRIES` records (Create, Put, DepAdd, Comment), instead
//! of one op per record; replay and sync apply a bulk op entry by entry, by the rules of each
//! entry, so they need no second path. A commit holds at most [`MAX_BYTES_PER_COMMIT`] bytes
//! of ops as well as at most [`MAX_OPS_PER_COMMIT`] ops. Committing copies the store's journal
//! rows into `ops.jsonl` as they are, decoding only their meta.
//!
//! A commit with a bulk op is written as batch format 2 ([`batch_format`]); every other
//! commit stays format 1, so a fleet from before bulk ops goes on reading them, and stops at
//! a format 2 commit with an error that says to upgrade.
//!
//! # Crash safety
//!
//! [`commit_pending`] updates the ref (compare-and-swap against the previous tip), then
//! records the committed sequence in the store's meta (`Store::record_journal_committed`). A
//! process that dies between the two leaves the ref ahead of the meta; the next run reads the
//! tip's `batch.json`, finds its last op among the pending ones, and starts after it instead
//! of committing those ops twice.
//!
//! # Not in the journal
//!
//! Configuration values (`config set`, imported memories), the id prefix and the replica id
//! are settings of a store, not ops. Each commit also records them beside the journal, on a
//! local ref of the same repository ([`settings`]); `fleet rebuild` takes them from the store
//! it replaces, or from there when that store cannot be read.
//!
//! # Modules
//!
//! `write` commits, `read` reads batches back, `verify` compares store and journal,
//! `rebuild` makes a store from the journal, [`settings`] keeps what is not an op,
//! [`committer`] commits soon after a write, [`sync`] exchanges journals through the git
//! remotes [`remotes`] keeps (running the `git` program through `program`, with `failure`
//! naming the cause of a failed git command), [`identity`] gives a copied store
//! a replica id of its own, [`join`] surveys a team's remote for a machine that joins it, and
//! [`claims`] confirms claims on a remote.

pub mod claims;
pub mod committer;
mod failure;
mod health;
pub mod identity;
pub mod join;
mod program;
mod read;
mod rebuild;
pub mod remotes;
mod repo;
pub mod settings;
pub mod sync;
mod verify;
mod write;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::store::StoreError;

pub use failure::Failure;
pub use health::{Health, check_repository};
pub use read::{LogEntry, log, read_all, read_replica};
pub use rebuild::{RebuildOptions, RebuildReport, SettingsFrom, rebuild};
pub use repo::{JournalRepo, RepoKind};
pub use verify::{Divergence, VerifyReport, verify};
pub use write::{
    CommitReport, Finally, PendingOp, Periodic, WritingAhead, commit_pending, commit_pending_ahead,
    pending_ops, spawn_periodic, write_trees_ahead,
};

/// Version of the batch format this build reads (the layout of a commit's tree and
/// `batch.json`, and which ops `ops.jsonl` may hold); see [`batch_format`].
pub const FORMAT_VERSION: u32 = 2;
/// Prefix of the journal refs: `refs/fleet/journal/<replica>`.
pub const REF_PREFIX: &str = "refs/fleet/journal/";
/// At most this many ops go into one commit.
pub const MAX_OPS_PER_COMMIT: usize = 10_000;
/// At most this many bytes of ops go into one commit (unless one op alone is larger): bulk ops
/// carry many records each.
pub const MAX_BYTES_PER_COMMIT: usize = 64 * 1024 * 1024;
/// The email of every journal commit's author and committer.
pub const EMAIL: &str = "journal@fleet.invalid";
/// The ops of a batch.
pub const OPS_FILE: &str = "ops.jsonl";
/// The description of a batch.
pub const BATCH_FILE: &str = "batch.json";

/// The batch format of a commit whose newest op has format version `op_version`: format 1
/// when every op is one a fleet from before bulk ops reads, else format 2. A fleet that
/// reads only format 1 then stops at the batch with "format 2 is newer than this fleet reads;
/// upgrade fleet" instead of failing on an op it does not know.
pub fn batch_format(op_version: u32) -> u32 {
    if op_version >= crate::op::BULK_FORMAT_VERSION { 2 } else { 1 }
}

/// The ref of `replica`'s journal.
pub fn ref_name(replica: &str) -> String {
    format!("{REF_PREFIX}{replica}")
}

/// `batch.json`: what a journal commit holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchInfo {
    /// [`FORMAT_VERSION`] of the writer.
    pub format: u32,
    /// The replica that made every op of the batch.
    pub replica: String,
    /// Number of ops (lines of `ops.jsonl`).
    pub count: usize,
    /// Journal sequence of the first op in the store that committed it.
    pub first_seq: u64,
    /// Journal sequence of the last op in the store that committed it.
    pub last_seq: u64,
    /// Id of the first op.
    pub first_op: ulid::Ulid,
    /// Id of the last op: where the next batch starts after.
    pub last_op: ulid::Ulid,
    /// The id prefix the replica's store gives new issues, when the batch was written (absent
    /// from batches of fleets before it was recorded): where a machine joining the queue
    /// takes its prefix from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// Errors of the journal, each naming the repository, ref or commit and what to do.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A git operation failed.
    #[error("{context}: {message}")]
    Git { context: String, message: String },
    /// A remote is not set up as the command needs (none, an unknown name, a bad name or
    /// URL, a name taken); the message says what to do.
    #[error("{context}: {message}")]
    Remote { context: String, message: String },
    /// A git command that talks to a remote was stopped at the time limit
    /// ([`git_time_limit`]); `context` names the remote.
    #[error("{context}: git gave no answer within {secs} s and was stopped")]
    NoAnswer { context: String, secs: u64 },
    /// A git command on the terminal ended by the person's Ctrl-C.
    #[error("{0}: stopped by Ctrl-C")]
    Interrupted(String),
    /// A commit on a journal ref that is not a batch this fleet can read.
    #[error("{reference}: commit {commit} is not a fleet journal batch: {reason}")]
    Format { reference: String, commit: String, reason: String },
    /// Another process kept moving the ref while this one tried to commit.
    #[error(
        "{reference} in {repo} kept changing while committing (another fleet process is committing); run `fleet journal commit` again"
    )]
    Contended { reference: String, repo: PathBuf },
    /// No journal to read.
    #[error(
        "no journal for the workspace at {0}: neither an enclosing git repository nor .beads/journal.git has journal refs; run `fleet journal commit` first"
    )]
    NoJournal(PathBuf),
    /// A rebuild found no id prefix: the store cannot be read, and neither the saved settings
    /// nor the journal's batches and issues name one.
    #[error(
        "no id prefix for the rebuilt store of {0}: the store cannot be read, and the journal records none"
    )]
    NoPrefix(PathBuf),
    /// The store changed while a rebuild read the journal.
    #[error("the store at {0} changed during the rebuild; nothing was replaced, run it again")]
    Changed(PathBuf),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    /// Another sync of the workspace kept running for longer than a sync waits for it.
    #[error("another `fleet sync` of the workspace at {0} has been running for {1} s (lock {2})")]
    SyncBusy(PathBuf, u64, PathBuf),
}

/// How long one git command that talks to a remote may take before it is stopped (a remote
/// that accepts the connection and then says nothing, a network pulled mid-transfer): two
/// minutes, or `FLEET_GIT_TIMEOUT_SECS`.
pub(crate) fn git_time_limit() -> std::time::Duration {
    crate::env::git_time_limit()
}

impl JournalError {
    /// A git error with what was being done.
    pub(crate) fn git(context: impl Into<String>) -> impl FnOnce(gix::Error) -> JournalError {
        let context = context.into();
        move |error| JournalError::Git { context, message: with_sources(&error) }
    }

    /// An I/O error with what was being done.
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> JournalError {
        let context = context.into();
        move |source| JournalError::Io { context, source }
    }

    /// How to fix it, where there is something to say.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            JournalError::Git { context, message } => Some(Failure::of(context, message).hint()),
            JournalError::NoPrefix(_) => {
                Some("give the prefix of the workspace's issue ids: `fleet rebuild --prefix P`")
            }
            JournalError::Format { .. } => Some(
                "the ref was moved to a commit fleet did not write; run `fleet journal verify` and reset the ref to the last good batch",
            ),
            JournalError::NoAnswer { .. } => Some(
                "check the network and the remote's URL (`fleet remote list`); set FLEET_GIT_TIMEOUT_SECS (seconds) to give git longer",
            ),
            JournalError::SyncBusy(..) => Some(
                "wait for it to finish (a slow or unreachable remote?); `fuser -v .beads/sync.lock` names the process holding it",
            ),
            _ => None,
        }
    }
}

/// An error's words followed by those of each error under it (gix's outer errors name only
/// the step, e.g. "Repository configuration could not be loaded", and leave the cause below).
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut words = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !words.contains(&text) {
            words.push_str(": ");
            words.push_str(&text);
        }
        source = cause.source();
    }
    words
}
