//! The store's errors: each names the issue, edge or file it is about, tells damage of the
//! file from a refusal of a rule and from the disk running full, and keeps the error it wraps
//! as its source.

use std::path::{Path, PathBuf};

use super::LockWait;
use crate::model::ModelError;

/// What a transaction body decided ([`Store::write_or_roll_back`]): commit its changes and
/// give `C`, or drop them all and give `R`.
#[derive(Debug)]
pub enum Decided<C, R> {
    Commit(C),
    RollBack(R),
}

/// Errors of the store, each naming the issue, edge or file it is about.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no issue found matching {0:?}")]
    NotFound(String),
    /// A full id of an issue that was deleted: it names nothing now, and never another issue.
    #[error("no issue found matching {0:?} (it was deleted)")]
    Deleted(String),
    #[error("{input:?} matches several issues: {}", candidates.join(", "))]
    Ambiguous { input: String, candidates: Vec<String> },
    #[error("issue {0} already exists")]
    AlreadyExists(String),
    /// The issue an op was made for (its birth, `crate::op::OpMeta::births`) no longer
    /// exists: deleted, though an issue of the same id may exist now.
    #[error("the issue {0} this change was made for no longer exists (it was deleted)")]
    Gone(String),
    #[error("issue already claimed by {by}")]
    AlreadyClaimed { id: String, by: String },
    #[error("issue not claimable: status {status}")]
    NotClaimable { id: String, status: String },
    #[error("issue {id} is {status}; only open or in_progress issues can be released")]
    NotReleasable { id: String, status: String },
    #[error("cannot add self-dependency: {0} cannot depend on itself")]
    SelfDependency(String),
    #[error("adding dependency would create a cycle: {from} -> {to} ({kind})")]
    Cycle { from: String, to: String, kind: String },
    #[error(
        "{from} already depends on {to} as {existing}; remove that dependency before adding it as {wanted}"
    )]
    EdgeExists { from: String, to: String, existing: String, wanted: String },
    #[error(
        "{child} is already a child of {parent}; making it depend on its parent would create a deadlock"
    )]
    ChildOfParent { child: String, parent: String },
    #[error("{0}")]
    EpicMismatch(&'static str),
    #[error("{issue} does not depend on {target}")]
    NoSuchEdge { issue: String, target: String },
    #[error("cannot create {0}: children may be nested at most 3 levels deep")]
    TooDeep(String),
    #[error("could not find a free id after trying every length; pass --id")]
    IdSpaceExhausted,
    #[error(transparent)]
    Invalid(#[from] ModelError),
    /// An op would store an issue under an id outside the id grammar ([`crate::id::check_id`]).
    #[error(transparent)]
    InvalidId(#[from] crate::id::IdError),
    #[error("no fleet workspace at {0}; run `fleet init` (or `bd init`) first")]
    NotInitialized(PathBuf),
    #[error(
        "{0} is beads' legacy SQLite database, not a fleet store; migrate it in place with `bd import {0}` (the SQLite file is kept beside it as beads.sqlite.db), or copy its issues into fleet's central queue with `fleet import {0}`"
    )]
    LegacySqlite(PathBuf),
    #[error("workspace at {0} already exists")]
    AlreadyInitialized(PathBuf),
    #[error("{0}")]
    InvalidPrefix(String),
    #[error(
        "op {id} has format version {version}, newer than this fleet reads ({supported}); upgrade fleet"
    )]
    OpVersion { id: String, version: u32, supported: u32 },
    #[error(
        "the store's table layout is version {found}, newer than this fleet reads ({supported}); \
         upgrade fleet"
    )]
    LayoutVersion { found: u64, supported: u64 },
    #[error("store is damaged: {0}")]
    Corrupt(String),
    /// The store file at `path` is damaged: a row does not decode, a page is unreadable, the
    /// file is cut short, or the database engine failed on it.
    #[error(
        "{} is damaged: {detail}; run `fleet doctor` to see what is damaged and how to repair it",
        path.display()
    )]
    Damaged { path: PathBuf, detail: String },
    /// `fleet doctor --salvage` of a store its checks find healthy.
    #[error("{} is healthy: there is nothing to salvage", .0.display())]
    NothingToSalvage(PathBuf),
    /// A refusal of a layer above the store (a tracker rule, a claim the remote refused),
    /// carried through a transaction body as itself: `downcast_ref` gives the refusal back.
    #[error(transparent)]
    Refused(Box<dyn std::error::Error + Send + Sync>),
    /// A bulk write failed part-way; its transaction is abandoned whole.
    #[error("a bulk write failed part-way; its transaction is abandoned")]
    BulkAbandoned,
    /// A bulk op holding another bulk op.
    #[error("a bulk op cannot hold another bulk op")]
    NestedBulk,
    /// A request its command gave up on (it wrote directly instead) is never applied later.
    #[error("request {0} was given up by its command before it was applied; nothing was changed")]
    GivenUp(String),
    /// `FLEET_REQUIRE_SERVER` is set and no server applied the request.
    #[error("FLEET_REQUIRE_SERVER is set and the request was not applied: {0}")]
    NotServed(String),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    /// The store's write lock stayed held past the wait: by a stopped process (named, with
    /// how to resume it), or by a running one for longer than `FLEET_LOCK_WAIT_SECS`.
    #[error("{0}")]
    LockWait(Box<LockWait>),
    #[error("database error: {0}")]
    Database(#[from] redb::Error),
    /// A database error of the store file at `path`: [`StoreError::Database`] with the file
    /// named, as every error of an open [`Store`] is reported.
    #[error("{}: {source}", path.display())]
    DatabaseAt { path: PathBuf, source: redb::Error },
}

impl StoreError {
    /// Names `path` in a database error that does not name a file yet, and reports damage
    /// (a row that does not decode, an engine error that means a damaged file) as
    /// [`StoreError::Damaged`].
    pub(super) fn at(self, path: &Path) -> StoreError {
        match self {
            StoreError::Database(source) | StoreError::DatabaseAt { source, .. }
                if is_damage(&source) =>
            {
                StoreError::Damaged { path: path.to_path_buf(), detail: damage_detail(&source) }
            }
            StoreError::Database(source) => {
                StoreError::DatabaseAt { path: path.to_path_buf(), source }
            }
            StoreError::Corrupt(detail) => StoreError::Damaged { path: path.to_path_buf(), detail },
            other => other,
        }
    }

    /// Whether this is a damaged store file (see [`StoreError::Damaged`]).
    pub fn is_damage(&self) -> bool {
        match self {
            StoreError::Damaged { .. } | StoreError::Corrupt(_) => true,
            StoreError::Database(source) | StoreError::DatabaseAt { source, .. } => {
                is_damage(source)
            }
            _ => false,
        }
    }

    /// Whether the database engine's handle is unusable after this error: an I/O error while
    /// it wrote (a full disk), after which it answers everything with "previous I/O error".
    pub(super) fn breaks_handle(&self) -> bool {
        matches!(
            self,
            StoreError::Database(redb::Error::Io(_) | redb::Error::PreviousIo)
                | StoreError::DatabaseAt {
                    source: redb::Error::Io(_) | redb::Error::PreviousIo,
                    ..
                }
        )
    }

    /// Whether this is the operating system refusing access: permissions, a read-only mount.
    pub fn is_access_denied(&self) -> bool {
        self.io_error().is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
            )
        })
    }

    /// Whether the disk (or the user's quota on it) is full: the write can succeed once space
    /// is freed, and the store is not damaged.
    pub fn is_disk_full(&self) -> bool {
        self.io_error().is_some_and(is_disk_full)
    }

    /// The operating system's error inside, if this is one.
    pub(super) fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            StoreError::Database(redb::Error::Io(io))
            | StoreError::DatabaseAt { source: redb::Error::Io(io), .. }
            | StoreError::Io { source: io, .. } => Some(io),
            _ => None,
        }
    }

    /// Whether the error is a refusal of the op by the rules of the queue (missing issue,
    /// taken claim, cycle…), as opposed to a failure of the store itself (I/O, database,
    /// damaged rows). A refused op changed nothing, so a batch may carry on past it.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            StoreError::Io { .. }
                | StoreError::LockWait(_)
                | StoreError::Database(_)
                | StoreError::Corrupt(_)
                | StoreError::Damaged { .. }
                | StoreError::DatabaseAt { .. }
                | StoreError::NotInitialized(_)
                | StoreError::LegacySqlite(_)
                | StoreError::AlreadyInitialized(_)
        )
    }
}

/// Whether a database error means the file is damaged rather than unreachable: redb found a
/// page corrupt, the file ends before its pages do, it is not a redb file at all, or a table's
/// definition is not the one fleet made (every table of a store is fleet's own, so a missing
/// table or one of other types means its entry in the table tree was damaged).
pub(super) fn is_damage(error: &redb::Error) -> bool {
    match error {
        redb::Error::Corrupted(_)
        | redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TableIsNotMultimap(_)
        | redb::Error::TypeDefinitionChanged { .. }
        | redb::Error::TableDoesNotExist(_) => true,
        redb::Error::Io(io) => {
            matches!(io.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof)
        }
        _ => false,
    }
}

/// What is damaged, in words that name the cause: a file cut short, a table definition.
pub(super) fn damage_detail(error: &redb::Error) -> String {
    match error {
        redb::Error::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            format!("the file is cut short: a page lies past its end ({io})")
        }
        redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TableIsNotMultimap(_)
        | redb::Error::TypeDefinitionChanged { .. } => {
            format!("a table definition is damaged ({error})")
        }
        redb::Error::TableDoesNotExist(table) => {
            format!("the table {table} is missing: its definition is damaged")
        }
        other => other.to_string(),
    }
}

/// Whether an operating-system error is a full disk or an exhausted quota.
pub(super) fn is_disk_full(io: &std::io::Error) -> bool {
    matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
        || io.raw_os_error() == Some(libc::ENOSPC)
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { StoreError::Database(e.into()) }
        }
    )*};
}

from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);
