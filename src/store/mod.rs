//! The embedded queue: a redb database in a beads-style `.beads/` directory.
//!
//! Layout of the module:
//! - `tables`: the table definitions and the read primitives ([`View`]) shared by read and
//!   write transactions;
//! - `apply`: the only code that changes state — one [`Op`] at a time inside a [`Writer`],
//!   validate first, then mutate, then journal. Ops are made (stamped) by [`Writer::stamp`] and
//!   applied as given by [`Writer::apply_op`], so an op made on another machine replays with
//!   its own id, actor, replica, stamp and time ([`Store::replay`]); the rules of remote ops,
//!   duplicates and child ids are in that module's docs;
//! - `readiness`: keeps the blocked flag and the ready index right after every op;
//! - `graph`: the dependency graph — the cycle check of a new edge, trees, cycle reports;
//! - `query`: ready, blocked, list, search, stats and issue details;
//! - `check`: `fleet doctor` — what is damaged in a store file, and the salvage of what is not;
//! - `guard`: turns a panic of the database engine on a damaged file into an error.
//!
//! A damaged file is reported as [`StoreError::Damaged`], naming the file and the fix
//! (`fleet doctor`). Reads that scan many issues can skip issue rows that do not decode and
//! report their ids instead of failing whole ([`Reader::skip_damaged`]).
//!
//! The database is opened in redb's `MultiWriter` mode, so agents' commands and the supervisor
//! can all read and write it at once; write transactions are serialised across processes by
//! byte-range locks, and every commit is durable. Every commit that applied an op bumps the
//! `changes` counter, which watchers poll to notice other processes' writes.

mod ahead_rows;
mod apply;
mod births;
pub mod check;
mod checked;
mod coord;
mod error;
mod graph;
mod guard;
mod held;
mod identity;
mod journal_row;
mod lock;
mod merge;
mod order;
mod query;
mod reader;
mod readiness;
mod writer;
pub use error::{Decided, StoreError};
pub use reader::Reader;
pub use readiness::blocks_through_target;
pub use writer::Writer;
mod tables;
mod text;
mod undo;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use redb::{Database, ReadOnlyTable, ReadTransaction, ReadableDatabase, Table, WriteTransaction};

pub use order::RowFacts;
pub use query::{
    BlockedIssue, IssueDetail, IssueSummary, LinkedIssue, ListFilter, ListSort, MetadataTest,
    ReadyFilter, ReadyPage, Stats,
};
pub use tables::REPLY_RETENTION_MS;
pub(crate) use tables::View;

pub use apply::{BULK_ENTRIES, Origin, Orphaned, Outcome, Renamed, Replayed};
pub use graph::{Direction, TreeNode};
pub use guard::command as guard_command;
pub use identity::Restamped;
pub use lock::{Holder, LockWait};
pub use merge::{Merged, Overturned};

use crate::op::{Hlc, Op, OpKind};
use crate::time::Clock;
use crate::workspace::STORE_FILE;
use tables::{
    BLOCKED, COMMENTS, DEPS, ISSUES, JOURNAL, LABELS, META, OP_IDS, ORDER, RDEPS, READY, TableSet,
};

/// Version of the table layout, stored in meta. A store with a newer layout is refused on
/// open; the first writer of an older one brings it up to this one ([`Writer::begin`]).
/// - 1: the first layout.
/// - 2: no id → ready-key table ([`tables::RETIRED_READY_KEYS`]); a ready entry is found from
///   its issue's row.
/// - 3: issue, edge, comment, journal and sidelined rows are sealed with a checksum
///   ([`checked`]); the first writer seals the rows of an older store ([`seal_rows`]).
const LAYOUT_VERSION: u64 = 3;
/// Cache for redb's handles on the store file; the queue's hot set is small. A process about
/// to write far more than this in one transaction (an import) raises it for the handles it
/// opens from then on ([`size_cache_for_bulk`]).
const CACHE_BYTES: usize = 32 * 1024 * 1024;
/// The most [`size_cache_for_bulk`] raises the cache to.
const BULK_CACHE_MAX: usize = 1024 * 1024 * 1024;
static CACHE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(CACHE_BYTES);

/// Sizes the cache of the writable store handles this process opens from now on for a
/// transaction that writes about `bytes` (between the default and [`BULK_CACHE_MAX`]). With a
/// cache smaller than what one transaction dirties, redb writes pages out to the file and
/// reads them back before the commit: a tenth of the profile of an import of 100k issues.
pub fn size_cache_for_bulk(bytes: usize) {
    let size = bytes.clamp(CACHE_BYTES, BULK_CACHE_MAX);
    CACHE.store(size, std::sync::atomic::Ordering::Relaxed);
}

/// Meta keys.
pub(crate) mod meta {
    pub const PREFIX: &str = "prefix";
    pub const REPLICA: &str = "replica";
    pub const LAYOUT: &str = "layout_version";
    pub const CLOCK: &str = "hlc";
    pub const CHANGES: &str = "changes";
    pub const JOURNAL_SEQ: &str = "journal_seq";
    pub const COMMENT_SEQ: &str = "comment_seq";
    pub const TOP_LEVEL_COUNT: &str = "top_level_count";
    pub const CHILD_COUNTER: &str = "child_counter/";
    /// Set once every journaled op is in the op-id index (stores made before the index
    /// existed are indexed by their first writer).
    pub const OP_IDS_COMPLETE: &str = "op_ids_complete";
    /// Set once the order index (`order`) holds every issue (stores made before it existed
    /// are indexed by their first writer; reads of an unindexed store scan every issue).
    pub const ORDER_INDEX: &str = "order_index";
    /// Set once every ready entry carries its issue's row and computed counts (stores made
    /// before entries carried them are covered by their first writer; until then reads look
    /// up the row, edges and comments of each entry without them).
    pub const READY_COVERING: &str = "ready_covering";
    /// Prefix of `status_count/<status>` → how many issues have that status (`order`).
    pub const STATUS_COUNT: &str = "status_count/";
    /// Prefix of `deleted/<issue>` → nothing: the issue was deleted and no issue of that id
    /// was made since, so a command naming it says so (`query::resolve_id`). Kept by the ops
    /// (and their undo), like the issue table.
    pub const DELETED: &str = "deleted/";
    /// Prefix of `origin/<issue>` → the replica that made the issue, recorded only when that
    /// is another replica (absent: this one). Picks the form of child ids (see `apply`).
    pub const ORIGIN: &str = "origin/";
    /// Prefix of user configuration keys (`config set`); these are settings of this store,
    /// not queue state, so they are not ops and do not travel through sync.
    pub const CONFIG: &str = "config/";
    /// Prefix of the supervisor registry (`supervisor/<instance>` → a registration with its
    /// heartbeat). Runtime state of this store's machine, not queue state: not ops.
    pub const SUPERVISOR: &str = "supervisor/";
    /// The journal sequence up to which this replica's ops are committed to git
    /// (`crate::journal`). Book-keeping of this store, not queue state: not an op.
    pub const JOURNAL_COMMITTED: &str = "journal_committed";
    /// The greatest order key (`crate::op::OrderKey`, as JSON) of every op this store has
    /// seen: ops arriving after it can simply be applied; ops before it make a merge re-apply
    /// everything in the total order (see `merge`).
    pub const ORDER_HIGH: &str = "order_high";
    /// Prefix of `sync_seen/<replica>` → the last journal commit of that replica whose ops
    /// this store has merged (hex). Book-keeping of sync, not an op.
    pub const SYNC_SEEN: &str = "sync_seen/";
    /// From which op on the undo log covers every op the store knows: that op's entry key, or
    /// empty for all of them (`undo`). Absent: none (a store made before the log existed).
    pub const UNDO_FLOOR: &str = "undo_floor";

    /// The value of a counter entry (8 bytes, big-endian); 0 for an absent or damaged one.
    pub fn counter(bytes: Option<&[u8]>) -> u64 {
        bytes.and_then(|b| <[u8; 8]>::try_from(b).ok()).map_or(0, u64::from_be_bytes)
    }

    /// The counter under `key` in the meta table `table`.
    pub fn counter_in(
        table: &impl redb::ReadableTable<&'static str, &'static [u8]>,
        key: &str,
    ) -> Result<u64, redb::StorageError> {
        Ok(counter(table.get(key)?.as_ref().map(|v| v.value())))
    }
}

/// Refuses a store whose tables a newer fleet laid out (`found` is its layout version): writing
/// them the old way would leave its indexes wrong, and reading them may mislead.
fn check_layout(found: u64) -> Result<(), StoreError> {
    if found > LAYOUT_VERSION {
        return Err(StoreError::LayoutVersion { found, supported: LAYOUT_VERSION });
    }
    Ok(())
}

/// The names of every table fleet makes in a store, in any layout.
const TABLE_NAMES: [&str; 20] = [
    "issues",
    "deps",
    "rdeps",
    "comments",
    "labels",
    "ready",
    "ready_keys",
    "blocked",
    "order",
    "journal",
    "op_ids",
    "sidelined",
    "holds",
    "births",
    "renamed",
    "orphans",
    "coordination",
    "undo",
    "replies",
    "meta",
];
/// The tables every store has from its creation on (the others are made by the first writer
/// that needs them).
const CORE_TABLES: [&str; 9] =
    ["issues", "deps", "rdeps", "comments", "labels", "ready", "blocked", "meta", "journal"];

/// Refuses to write a store whose table tree does not hold fleet's tables: a write would
/// make a damaged table's name anew, empty, and go on as if its rows were gone. A name fleet
/// never makes, or a table every store has that is missing, means a table definition is
/// damaged.
fn check_table_names(txn: &WriteTransaction) -> Result<(), StoreError> {
    use redb::TableHandle;
    let mut found = Vec::new();
    for table in txn.list_tables()? {
        let name = table.name().to_string();
        if !TABLE_NAMES.contains(&name.as_str()) {
            return Err(StoreError::Corrupt(format!(
                "a table definition is damaged: the store names a table {name:?} fleet never makes"
            )));
        }
        found.push(name);
    }
    match CORE_TABLES.iter().find(|core| !found.iter().any(|name| name == *core)) {
        Some(missing) => Err(StoreError::Corrupt(format!(
            "the table {missing} is missing: its definition is damaged"
        ))),
        None => Ok(()),
    }
}

/// An open queue.
pub struct Store {
    /// The handle reads go through until a writable one is open.
    db: Db,
    /// The writable handle, opened by the first write (or at open, when the file needed
    /// recovery); reads go through it once it is there. Given up, and opened again by the next
    /// write, when it no longer writes the file at the store's path (a salvage or a rebuild
    /// swapped another file in) or an I/O error broke it (a full disk): see [`Store::write`].
    writer: Mutex<Option<Writable>>,
    /// Leave `writer` unclosed on drop (short-lived processes).
    skip_close: bool,
    dir: PathBuf,
    replica: String,
    prefix: String,
    /// The private copy `db` reads from when the store file could be neither opened
    /// read-only nor repaired in place (see [`Store::open`]); removed on drop, after `db`.
    _snapshot: Option<TempFile>,
    /// The (device, inode) of the store file when it was opened (see [`Store::file_identity`]).
    identity: Option<FileIdentity>,
}

/// A writable handle on the store file, and which file that was when it was opened.
struct Writable {
    db: Arc<Database>,
    identity: Option<FileIdentity>,
}

/// Which file a path named: its device and inode numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    pub dev: u64,
    pub ino: u64,
}

impl FileIdentity {
    /// The identity of the file at `path` now, or `None` when nothing is there.
    pub fn of(path: &Path) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(FileIdentity { dev: meta.dev(), ino: meta.ino() })
    }
}

type ReadSet = TableSet<
    ReadOnlyTable<&'static str, &'static [u8]>,
    ReadOnlyTable<(&'static str, &'static str), &'static [u8]>,
    ReadOnlyTable<(&'static str, &'static str), &'static str>,
    ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    ReadOnlyTable<(&'static str, &'static str), ()>,
    ReadOnlyTable<&'static [u8], &'static [u8]>,
    ReadOnlyTable<&'static str, ()>,
    ReadOnlyTable<&'static str, &'static [u8]>,
    ReadOnlyTable<&'static [u8], &'static [u8]>,
>;

pub(crate) type WriteSet<'t> = TableSet<
    Table<'t, &'static str, &'static [u8]>,
    Table<'t, (&'static str, &'static str), &'static [u8]>,
    Table<'t, (&'static str, &'static str), &'static str>,
    Table<'t, (&'static str, u64), &'static [u8]>,
    Table<'t, (&'static str, &'static str), ()>,
    Table<'t, &'static [u8], &'static [u8]>,
    Table<'t, &'static str, ()>,
    Table<'t, &'static str, &'static [u8]>,
    Table<'t, &'static [u8], &'static [u8]>,
>;

impl<'t> WriteSet<'t> {
    /// The order index, which every write transaction opens (creating it if need be).
    fn order_mut(&mut self) -> &mut Table<'t, &'static [u8], &'static [u8]> {
        self.order.as_mut().expect("write transactions open the order index")
    }

    fn order_ref(&self) -> &Table<'t, &'static [u8], &'static [u8]> {
        self.order.as_ref().expect("write transactions open the order index")
    }

    fn deps_mut(&mut self) -> &mut Table<'t, (&'static str, &'static str), &'static [u8]> {
        self.deps.as_mut().expect("the edge table is back from a bulk write's edge thread")
    }
}

/// Microseconds since `started`, for the trace of a write's phases.
fn micros(started: std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)
}

fn io_error(context: String) -> impl FnOnce(std::io::Error) -> StoreError {
    move |source| StoreError::Io { context, source }
}

/// The builder every handle on a store file is opened with: read-only handles get the default
/// cache, writable ones the size the process set ([`size_cache_for_bulk`]).
fn builder(writable: bool) -> redb::Builder {
    let mut builder = redb::Builder::new();
    let cache =
        if writable { CACHE.load(std::sync::atomic::Ordering::Relaxed) } else { CACHE_BYTES };
    builder.set_concurrency_mode(redb::ConcurrencyMode::MultiWriter).set_cache_size(cache);
    builder
}

/// Creates a new database file at `path` (init only).
fn create_database(path: &Path) -> Result<Database, StoreError> {
    builder(true).create(path).map_err(|e| StoreError::from(e).at(path))
}

/// Opens the existing database file at `path` for writing; never creates one.
fn open_database(path: &Path) -> Result<Database, StoreError> {
    builder(true).open(path).map_err(|e| StoreError::from(e).at(path))
}

impl Writable {
    /// Opens the store file at `path` for writing (waiting for the store's write lock, which
    /// the open takes, as [`lock::bounded`] does), noting which file it is.
    fn open(path: &Path) -> Result<Writable, StoreError> {
        let identity = FileIdentity::of(path);
        let opened = path.to_path_buf();
        let db = lock::bounded(path, move || open_database(&opened))?;
        Ok(Writable { db: Arc::new(db), identity })
    }
}

/// The store file in `dir`, checked to exist and to be a fleet store.
fn store_path(dir: &Path) -> Result<PathBuf, StoreError> {
    let path = dir.join(STORE_FILE);
    if !path.is_file() {
        return Err(StoreError::NotInitialized(dir.to_path_buf()));
    }
    if is_sqlite(&path) {
        return Err(StoreError::LegacySqlite(path));
    }
    Ok(path)
}

impl Drop for Store {
    /// With [`Store::skip_close_on_exit`], the lazily opened writer is left for the process exit
    /// to release instead of being closed (see there). The handles that are closed are closed
    /// through the engine-panic guard: closing a writable handle commits, which a damaged file
    /// can make the engine panic on.
    fn drop(&mut self) {
        let mut writer = self.writer.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        let db = std::mem::replace(&mut self.db, Db::Closed);
        if self.skip_close {
            std::mem::forget(writer.take());
        }
        let path = self.path();
        let closed = guard::guarded(&path, || {
            drop(writer);
            drop(db);
            Ok(())
        });
        if let Err(error) = closed {
            tracing::warn!(%error, "closing the store");
        }
    }
}

/// The handle reads go through when there is no writable one: read-only for commands that
/// only query.
enum Db {
    /// Reads go through the writable handle ([`Store::writer`]), opening it if need be.
    Writable,
    ReadOnly(redb::ReadOnlyDatabase),
    /// A private copy of a store this process may not write (see [`Store::open`]): reads
    /// only; writes open the real file.
    Snapshot(Database),
    /// Taken out while the store is dropped.
    Closed,
}

impl Db {
    /// A read transaction of this handle; `None` for [`Db::Writable`].
    fn begin_read(&self) -> Option<Result<ReadTransaction, redb::TransactionError>> {
        match self {
            Db::Snapshot(db) => Some(db.begin_read()),
            Db::ReadOnly(db) => Some(db.begin_read()),
            Db::Closed => Some(Err(redb::StorageError::DatabaseClosed.into())),
            Db::Writable => None,
        }
    }
}

/// The error for an init where a store file is already in place.
fn existing_store(dir: &Path, path: &Path) -> StoreError {
    if is_sqlite(path) {
        return StoreError::LegacySqlite(path.to_path_buf());
    }
    StoreError::AlreadyInitialized(dir.to_path_buf())
}

/// Copies the store file at `path` (which this process may read but not write) to a private
/// temporary file and opens the copy writable, which recovers it. The copy is only read.
fn open_snapshot(path: &Path) -> Result<(Database, TempFile), StoreError> {
    let name = format!("fleet-snapshot-{}.db", ulid::Ulid::generate().to_string().to_lowercase());
    let copy = TempFile(std::env::temp_dir().join(name));
    std::fs::copy(path, &copy.0)
        .map_err(io_error(format!("copying {} to read it", path.display())))?;
    // The copy took the original's mode, which a store one may only read has without write
    // bits; it is this process's own file, opened writable to recover it.
    std::fs::set_permissions(&copy.0, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(io_error(format!("making {} writable", copy.0.display())))?;
    let db = open_database(&copy.0).map_err(|e| match e {
        StoreError::DatabaseAt { source, .. } => {
            StoreError::DatabaseAt { path: path.to_path_buf(), source }
        }
        other => other,
    })?;
    Ok((db, copy))
}

/// A file removed when dropped (the scratch copy of a store being initialised, a snapshot).
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes a complete, empty store at `path`: the tables, the prefix, the replica id and the
/// layout version, in one committed transaction; the handle is closed on return.
fn write_new_store(path: &Path, prefix: &str, replica: &str) -> Result<(), StoreError> {
    let db = create_database(path)?;
    let txn = db.begin_write()?;
    {
        let tables = open_write_tables(&txn)?;
        let mut meta = tables.meta;
        meta.insert(meta::PREFIX, prefix.as_bytes())?;
        meta.insert(meta::REPLICA, replica.as_bytes())?;
        meta.insert(meta::LAYOUT, LAYOUT_VERSION.to_be_bytes().as_slice())?;
        meta.insert(meta::OP_IDS_COMPLETE, [1u8].as_slice())?;
        meta.insert(meta::ORDER_INDEX, [1u8].as_slice())?;
        meta.insert(meta::READY_COVERING, [1u8].as_slice())?;
        // The undo log covers every op of a new store.
        meta.insert(meta::UNDO_FLOOR, [].as_slice())?;
        txn.open_table(JOURNAL)?;
        txn.open_table(OP_IDS)?;
    }
    txn.commit()?;
    Ok(())
}

/// Puts the finished store `temp` at `path` only if nothing is there: a hard link, which
/// the file system refuses when `path` exists. Where hard links are not supported, an
/// exclusive create (`O_EXCL`) of `path` claims the name and the store is renamed over it.
fn publish(temp: &Path, path: &Path, dir: &Path) -> Result<(), StoreError> {
    let linked = std::fs::hard_link(temp, path);
    let error = match linked {
        Ok(()) => return Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(existing_store(dir, path));
        }
        Err(error) => error,
    };
    tracing::debug!("hard link into {} failed ({error}); claiming the name instead", dir.display());
    match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(existing_store(dir, path));
        }
        Err(error) => return Err(io_error(format!("creating {}", path.display()))(error)),
    }
    std::fs::rename(temp, path)
        .map_err(io_error(format!("moving the new store into place at {}", path.display())))
}

fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .map(|()| &header == b"SQLite format 3\0")
        .unwrap_or(false)
}

impl Store {
    /// Creates a new store in `dir` (a `.beads/` directory, created if missing) with the given
    /// id prefix. Refuses a directory that already holds a store.
    ///
    /// Atomic: the store is built in a temporary file beside its final name and hard-linked
    /// into place, which fails if the name exists. Of several processes initialising one
    /// directory at once, exactly one wins; the others get
    /// [`StoreError::AlreadyInitialized`], and nobody ever sees a half-made store.
    pub fn init(dir: &Path, prefix: &str) -> Result<Store, StoreError> {
        let replica = ulid::Ulid::generate().to_string().to_lowercase();
        Store::init_as(dir, prefix, &replica)
    }

    /// [`Store::init`] with a given replica id: a store that carries on as an existing replica
    /// (`fleet rebuild` makes the new store in a scratch directory this way).
    pub fn init_as(dir: &Path, prefix: &str, replica: &str) -> Result<Store, StoreError> {
        crate::id::validate_prefix(prefix).map_err(StoreError::InvalidPrefix)?;
        let path = dir.join(STORE_FILE);
        if path.exists() {
            return Err(existing_store(dir, &path));
        }
        std::fs::create_dir_all(dir).map_err(io_error(format!("creating {}", dir.display())))?;
        let replica = replica.to_string();
        let temp = TempFile(dir.join(format!(".{STORE_FILE}.init-{replica}")));
        write_new_store(&temp.0, prefix, &replica)?;
        publish(&temp.0, &path, dir)?;
        drop(temp);
        let writable = Writable::open(&path)?;
        Ok(Store {
            db: Db::Writable,
            writer: Mutex::new(Some(writable)),
            skip_close: false,
            dir: dir.to_path_buf(),
            replica,
            prefix: prefix.to_string(),
            _snapshot: None,
            identity: FileIdentity::of(&path),
        })
    }

    /// Opens the store in `dir` (a `.beads/` directory).
    ///
    /// The file is opened read-only first and for writing only when the first write
    /// transaction begins: a read-only handle costs nothing on open and close, while a writable
    /// one commits allocator state and a shutdown record, with several syncs, when it closes —
    /// which would make every `fleet ready` pay for writes it never makes. A file that needs
    /// recovery (its last writer exited without closing it, as CLI writes do — see
    /// [`Store::skip_close_on_exit`]) cannot be opened read-only; then it is opened writable at
    /// once, which recovers it. Where that is not allowed (a read-only mount, a user who may
    /// only read the file), the store is read from a private recovered copy instead, so reads
    /// work wherever the file can be read, and never write to it.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = store_path(dir)?;
        guard::note_store(&path);
        let identity = FileIdentity::of(&path);
        guard::guarded(&path, || {
            let (db, writable, snapshot) = match builder(false).open_read_only(&path) {
                Ok(db) => (Db::ReadOnly(db), None, None),
                Err(read_only) => match Writable::open(&path) {
                    Ok(writable) => (Db::Writable, Some(writable), None),
                    Err(error) if error.is_access_denied() => {
                        let (db, copy) = open_snapshot(&path)?;
                        (Db::Snapshot(db), None, Some(copy))
                    }
                    Err(error) => {
                        tracing::debug!(%read_only, "the store file does not open read-only");
                        return Err(error);
                    }
                },
            };
            let mut store = Store::with_database(db, writable, dir)?;
            store._snapshot = snapshot;
            store.identity = identity;
            Ok(store)
        })
        .map_err(|e| e.at(&path))
    }

    fn with_database(db: Db, writable: Option<Writable>, dir: &Path) -> Result<Store, StoreError> {
        let (replica, prefix) = {
            let txn = match (&writable, db.begin_read()) {
                (Some(writable), _) => writable.db.begin_read()?,
                (None, Some(txn)) => txn?,
                (None, None) => return Err(StoreError::Corrupt("no handle to read".into())),
            };
            let meta_table = txn.open_table(META)?;
            let read = |key: &str| -> Result<String, StoreError> {
                Ok(meta_table
                    .get(key)?
                    .map(|v| String::from_utf8_lossy(v.value()).into_owned())
                    .unwrap_or_default())
            };
            check_layout(meta::counter_in(&meta_table, meta::LAYOUT)?)?;
            (read(meta::REPLICA)?, read(meta::PREFIX)?)
        };
        Ok(Store {
            db,
            writer: Mutex::new(writable),
            skip_close: false,
            dir: dir.to_path_buf(),
            replica,
            prefix,
            _snapshot: None,
            identity: None,
        })
    }

    /// For a process that exits right after using the store (a CLI command): do not close the
    /// writable handle when the store is dropped. Every commit is already durable, and in
    /// redb's multi-writer mode every commit records the allocator state, so a close would only
    /// add a maintenance commit and a clean-shutdown header — four of the seven syncs a
    /// one-claim process makes. Skipping it is what a crash after the last commit does, which
    /// the kill -9 tests cover. Long-lived processes keep the default (close on drop); the
    /// process exit releases the file and its locks either way.
    pub fn skip_close_on_exit(&mut self) {
        self.skip_close = true;
    }

    /// The writable handle's slot.
    fn writer_slot(&self) -> MutexGuard<'_, Option<Writable>> {
        self.writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The writable handle, opening it on first use.
    fn writable(&self) -> Result<Arc<Database>, StoreError> {
        if let Some(writable) = self.writer_slot().as_ref() {
            return Ok(Arc::clone(&writable.db));
        }
        let path = self.path();
        let opened = guard::guarded(&path, || Writable::open(&path))?;
        let mut slot = self.writer_slot();
        // Another thread may have opened one meanwhile; the first stays.
        Ok(Arc::clone(&slot.get_or_insert(opened).db))
    }

    /// Gives up the writable handle (the next write opens another), saying `why`.
    fn drop_writer(&self, why: &dyn std::fmt::Display) {
        let Some(old) = self.writer_slot().take() else { return };
        tracing::info!(%why, "the store's writable handle is given up; the next write opens another");
        let path = self.path();
        if let Err(error) = guard::guarded(&path, || {
            drop(old);
            Ok(())
        }) {
            tracing::debug!(%error, "closing the given up handle");
        }
    }

    /// Begins a write transaction on the writable handle (waiting for the store's write lock
    /// as [`lock::bounded`] does), once the handle is known to write the file at the store's
    /// path — a handle on a file swapped out (a salvage, a rebuild) is given up and the file
    /// now there opened — and the store's tables to be fleet's own ([`check_table_names`]).
    /// Every write of the store begins here.
    fn begin_write(&self) -> Result<WriteTransaction, StoreError> {
        let path = self.path();
        for _ in 0..3 {
            let db = self.writable()?;
            let txn = lock::bounded(&path, move || Ok(db.begin_write()?))?;
            let opened = self.writer_slot().as_ref().and_then(|w| w.identity);
            if opened.is_some() && opened == FileIdentity::of(&path) {
                check_table_names(&txn)?;
                return Ok(txn);
            }
            drop(txn);
            self.drop_writer(&"another file is at the store's path now");
        }
        Err(StoreError::Corrupt(format!(
            "{} was replaced again and again while this process waited to write it",
            path.display()
        )))
    }

    /// The store file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(STORE_FILE)
    }

    /// The (device, inode) of the store file as it was when this store was opened: a
    /// long-lived process compares it with [`FileIdentity::of`] its path to notice the file
    /// deleted or replaced under it (its handle would go on reading and writing the old file,
    /// which no one else sees). `None` if it could not be read at open.
    pub fn file_identity(&self) -> Option<FileIdentity> {
        self.identity
    }

    /// What happened to the store file since it was opened, if it is no longer the file this
    /// store reads and writes: deleted, or replaced by another file (a `mv` over it, a
    /// restore from a backup, a salvage).
    pub fn file_replaced(&self) -> Option<String> {
        let opened = self.identity?;
        let path = self.path();
        match FileIdentity::of(&path) {
            None => Some(format!("the store file {} was deleted", path.display())),
            Some(now) if now != opened => Some(format!(
                "the store file {} was replaced by another file (inode {} on device {}, opened as inode {} on device {})",
                path.display(),
                now.ino,
                now.dev,
                opened.ino,
                opened.dev
            )),
            Some(_) => None,
        }
    }

    /// Begins a read transaction on the freshest handle: after this process has written,
    /// through the writer, so it sees its own commits.
    fn begin_read(&self) -> Result<ReadTransaction, StoreError> {
        let path = self.path();
        guard::guarded(&path, || {
            let writer = self.writer_slot().as_ref().map(|w| Arc::clone(&w.db));
            Ok(match (writer, self.db.begin_read()) {
                (Some(db), _) => db.begin_read()?,
                (None, Some(txn)) => txn?,
                (None, None) => self.writable()?.begin_read()?,
            })
        })
        .map_err(|e| e.at(&path))
    }

    /// The `.beads/` directory this store lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The id prefix of new issues, as the store says now (a `rename-prefix` by another process
    /// or served by this one changes it under a long-lived store).
    pub fn prefix(&self) -> String {
        stored_or(self.meta_value(meta::PREFIX), &self.prefix)
    }

    /// A meta value as the store holds it now; `None` if it has none or cannot be read.
    fn meta_value(&self, key: &str) -> Option<Vec<u8>> {
        let read = || -> Result<Option<Vec<u8>>, StoreError> {
            let txn = self.begin_read()?;
            let meta_table = txn.open_table(META)?;
            Ok(meta_table.get(key)?.map(|v| v.value().to_vec()))
        };
        read().ok().flatten()
    }

    /// This store's replica id (which machine makes its ops), as the store says now: a sync
    /// that found the id used by a copy of the store gives this one a new id (`crate::journal`,
    /// "Identity"), which a long-lived process must see. Falls back to the id the store was
    /// opened with if the store cannot be read (its writes would fail then anyway).
    pub fn replica(&self) -> String {
        stored_or(self.meta_value(meta::REPLICA), &self.replica)
    }

    /// The store's hybrid logical clock now: the stamp of the last op made or seen here.
    pub fn clock(&self) -> Result<Hlc, StoreError> {
        let bytes = self.read()?.tables.meta_bytes(meta::CLOCK)?;
        Ok(bytes.and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Hlc::ZERO))
    }

    /// Starts a read transaction: a consistent snapshot of the queue.
    pub fn read(&self) -> Result<Reader, StoreError> {
        let txn = self.begin_read()?;
        self.reader_of(&txn)
    }

    fn reader_of(&self, txn: &ReadTransaction) -> Result<Reader, StoreError> {
        let path = self.path();
        let tables = guard::guarded(&path, || open_read_tables(txn)).map_err(|e| e.at(&path))?;
        let prefix = stored_or(tables.meta_bytes(meta::PREFIX)?, &self.prefix);
        let coord = match txn.open_table(coord::COORD) {
            Ok(table) => Some(table),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(error) => return Err(StoreError::from(error).at(&path)),
        };
        Ok(Reader { tables, coord, prefix, path })
    }

    /// Runs `body` in one write transaction as `actor` and commits it if `body` succeeds.
    /// Everything `body` applies is journaled; if it fails, nothing is written.
    ///
    /// A write that fails on an I/O error (a full disk) leaves redb's handle unusable ("previous
    /// I/O error"): the handle is given up, and the next write opens the file again — once
    /// space is back it succeeds, in a long-lived process as in a new one.
    pub fn write<R>(
        &self,
        actor: &str,
        clock: Clock,
        body: impl FnOnce(&mut Writer<'_>) -> Result<R, StoreError>,
    ) -> Result<(R, Vec<Op>), StoreError> {
        let decided = self.write_or_roll_back(actor, clock, |writer| {
            body(writer).map(Decided::<R, std::convert::Infallible>::Commit)
        })?;
        match decided {
            Decided::Commit(committed) => Ok(committed),
            Decided::RollBack(never) => match never {},
        }
    }

    /// [`Store::write`] for a body that may decide to keep nothing: [`Decided::RollBack`]
    /// drops every change it made (nothing is committed, no durable write is paid) and hands
    /// its value back. An error is a failure, never the way to roll back.
    pub fn write_or_roll_back<C, R>(
        &self,
        actor: &str,
        clock: Clock,
        body: impl FnOnce(&mut Writer<'_>) -> Result<Decided<C, R>, StoreError>,
    ) -> Result<Decided<(C, Vec<Op>), R>, StoreError> {
        self.writing(|| self.write_unnamed(actor, clock, body))
    }

    /// Runs `work`, a write of the store, under the engine-panic guard, with database errors
    /// naming the file. A write that failed on an I/O error (a full disk) gives up the
    /// writable handle, which the engine answers everything with "previous I/O error" after:
    /// the next write opens the file again. Every write entry point runs through here.
    fn writing<R>(&self, work: impl FnOnce() -> Result<R, StoreError>) -> Result<R, StoreError> {
        let path = self.path();
        let written = guard::guarded(&path, work);
        if let Err(error) = &written
            && error.breaks_handle()
        {
            self.drop_writer(error);
        }
        written.map_err(|e| e.at(&path))
    }

    /// [`Store::write`] with database errors not yet naming the file.
    fn write_unnamed<C, R>(
        &self,
        actor: &str,
        clock: Clock,
        body: impl FnOnce(&mut Writer<'_>) -> Result<Decided<C, R>, StoreError>,
    ) -> Result<Decided<(C, Vec<Op>), R>, StoreError> {
        let started = std::time::Instant::now();
        let txn = self.begin_write()?;
        tracing::trace!(us = micros(started), "write: began");
        let (result, applied) = {
            let started = std::time::Instant::now();
            let mut writer = Writer::begin(&txn, self, actor, clock)?;
            let result = match body(&mut writer)? {
                Decided::Commit(result) => result,
                Decided::RollBack(kept) => {
                    drop(writer);
                    txn.abort()?;
                    return Ok(Decided::RollBack(kept));
                }
            };
            tracing::trace!(us = micros(started), "write: body");
            let started = std::time::Instant::now();
            let applied = writer.finish()?;
            tracing::trace!(us = micros(started), "write: finished");
            (result, applied)
        };
        let started = std::time::Instant::now();
        txn.commit()?;
        tracing::trace!(us = micros(started), "write: committed");
        Ok(Decided::Commit((result, applied)))
    }

    /// Applies `kinds` as `actor` in one transaction: all of them, or none.
    pub fn apply(
        &self,
        actor: &str,
        clock: Clock,
        kinds: Vec<OpKind>,
    ) -> Result<Vec<Op>, StoreError> {
        self.write(actor, clock, |writer| {
            for kind in kinds {
                writer.apply(kind)?;
            }
            Ok(())
        })
        .map(|((), ops)| ops)
    }

    /// Applies ops made on other machines ([`Origin::Remote`]) in one transaction so that the
    /// state is that of every op known here applied in the total order of [`Op::order_key`],
    /// whatever order they arrive in ([`Store::merge`], which this is without sync marks), and
    /// says what became of each, in that order: applied, unchanged, skipped as already
    /// applied, or refused (with the reason). A refused op does not stop the batch; only a
    /// failure of the store itself does, and then nothing is written. `clock` is this
    /// machine's clock, which the stamps of the ops advance.
    pub fn replay(&self, clock: Clock, ops: Vec<Op>) -> Result<Vec<Replayed>, StoreError> {
        let merged = self.merge(clock, ops, &[])?;
        let mut report = merged.replayed;
        report.extend(merged.duplicates.into_iter().map(|(key, kind, subject)| Replayed {
            key,
            kind,
            subject,
            outcome: Outcome::Duplicate,
        }));
        report.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(report)
    }

    /// The change counter: bumped by every commit that applied at least one op, by any process.
    pub fn changes(&self) -> Result<u64, StoreError> {
        self.meta_counter(meta::CHANGES)
    }

    /// The sequence number of the last journaled op (0 for an empty journal).
    pub fn journal_head(&self) -> Result<u64, StoreError> {
        self.meta_counter(meta::JOURNAL_SEQ)
    }

    /// The journal sequence up to which this replica's ops are committed to git (0: none).
    pub fn journal_committed(&self) -> Result<u64, StoreError> {
        self.meta_counter(meta::JOURNAL_COMMITTED)
    }

    /// Records that this replica's ops are committed to git up to journal sequence `seq`. Never
    /// moves the mark back (two processes committing at once may finish in either order). A
    /// write of book-keeping only: no op, and the change counter stays.
    pub fn record_journal_committed(&self, seq: u64) -> Result<(), StoreError> {
        self.writing(|| self.set_committed(seq, false))
    }

    /// Sets the committed mark to `seq` even if that moves it back (a rebuilt store, whose
    /// journal is numbered anew).
    pub fn reset_journal_committed(&self, seq: u64) -> Result<(), StoreError> {
        self.writing(|| self.set_committed(seq, true))
    }

    fn set_committed(&self, seq: u64, reset: bool) -> Result<(), StoreError> {
        let txn = self.begin_write()?;
        {
            let mut meta_table = txn.open_table(META)?;
            let old = meta::counter_in(&meta_table, meta::JOURNAL_COMMITTED)?;
            if reset || seq > old {
                meta_table.insert(meta::JOURNAL_COMMITTED, seq.to_be_bytes().as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// A counter of the meta table, read in a transaction of its own (0 when absent).
    fn meta_counter(&self, key: &str) -> Result<u64, StoreError> {
        let txn = self.begin_read()?;
        let path = self.path();
        guard::guarded(&path, || {
            let meta_table = txn.open_table(META)?;
            Ok(meta::counter_in(&meta_table, key)?)
        })
        .map_err(|e| e.at(&path))
    }

    /// The journal from sequence `from` on, in apply order.
    pub fn journal(&self, from: u64) -> Result<Vec<(u64, Op)>, StoreError> {
        self.journal_decoded(from, |row| serde_json::from_slice(row))
    }

    /// The journal from sequence `from` on, each row decoded by `decode` (into the whole op, or
    /// only the part the caller reads), in apply order.
    pub fn journal_decoded<T: Send>(
        &self,
        from: u64,
        decode: impl Fn(&[u8]) -> Result<T, serde_json::Error> + Sync,
    ) -> Result<Vec<(u64, T)>, StoreError> {
        let txn = self.begin_read()?;
        self.journal_in(&txn, from, decode)
    }

    /// The journal from sequence `from` on and a reader of the issues, both of one snapshot:
    /// every op the issues reflect is in the list, and no later one.
    pub fn journal_and_read(&self, from: u64) -> Result<(Vec<(u64, Op)>, Reader), StoreError> {
        let txn = self.begin_read()?;
        let journal = self.journal_in(&txn, from, |row| serde_json::from_slice(row))?;
        Ok((journal, self.reader_of(&txn)?))
    }

    fn journal_in<T: Send>(
        &self,
        txn: &ReadTransaction,
        from: u64,
        decode: impl Fn(&[u8]) -> Result<T, serde_json::Error> + Sync,
    ) -> Result<Vec<(u64, T)>, StoreError> {
        let path = self.path();
        guard::guarded(&path, || {
            let table = txn.open_table(JOURNAL)?;
            journal_row::decode_rows(copy_journal_rows(&table, from)?, &decode)
                .map_err(|(seq, e)| journal_entry_error(seq, e))
        })
        .map_err(|e| e.at(&path))
    }
}

/// Journal rows copied out of the store, undecoded, with their sequences.
pub(crate) type JournalRows = Vec<(u64, Vec<u8>)>;

/// Copies of the journal rows of `table` from sequence `from` on.
fn copy_journal_rows(
    table: &impl redb::ReadableTable<u64, &'static [u8]>,
    from: u64,
) -> Result<JournalRows, StoreError> {
    let mut rows = Vec::new();
    for entry in table.range(from..)? {
        let (seq, row) = entry?;
        rows.push((seq.value(), row.value().to_vec()));
    }
    Ok(rows)
}

/// The JSON record (the op) that journal row `seq` keeps, as copied out of the store by
/// [`Writer::journal_past_mark`].
pub(crate) fn journal_json(seq: u64, row: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, StoreError> {
    journal_row::json(row).map_err(|e| journal_entry_error(seq, e))
}

/// Journal row `seq`, copied out of the store, decoded with `decode`.
pub(crate) fn decode_journal_row<T>(
    seq: u64,
    row: &[u8],
    decode: &dyn Fn(&[u8]) -> Result<T, serde_json::Error>,
) -> Result<T, StoreError> {
    journal_row::decode_row(seq, row, decode).map_err(|(seq, e)| journal_entry_error(seq, e))
}

fn journal_entry_error(seq: u64, error: String) -> StoreError {
    StoreError::Corrupt(format!("journal entry {seq}: {error}"))
}

/// Opens every table of [`TableSet`] in a read or a write transaction (their `open_table`
/// methods differ in type, not in use); `$order` is the order index, which a read of an older
/// store may not have.
macro_rules! open_tables {
    ($txn:expr, $order:expr) => {
        Ok(TableSet {
            issues: $txn.open_table(ISSUES)?,
            deps: Some($txn.open_table(DEPS)?),
            rdeps: $txn.open_table(RDEPS)?,
            comments: $txn.open_table(COMMENTS)?,
            labels: $txn.open_table(LABELS)?,
            ready: $txn.open_table(READY)?,
            blocked: $txn.open_table(BLOCKED)?,
            meta: $txn.open_table(META)?,
            order: $order,
            damaged: None,
        })
    };
}

fn open_read_tables(txn: &ReadTransaction) -> Result<ReadSet, StoreError> {
    let order = match txn.open_table(ORDER) {
        Ok(table) => Some(table),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(error) => return Err(error.into()),
    };
    open_tables!(txn, order)
}

fn open_write_tables(txn: &WriteTransaction) -> Result<WriteSet<'_>, StoreError> {
    open_tables!(txn, Some(txn.open_table(ORDER)?))
}

/// The replica id the store of `txn` has now (`opened_as`, the id it was opened with, if the
/// meta table has none): a sync may have given it a new one (`identity`).
fn replica_in(txn: &WriteTransaction, opened_as: &str) -> Result<String, StoreError> {
    use redb::ReadableTable;
    let meta_table = txn.open_table(META)?;
    let stored = meta_table.get(meta::REPLICA)?.map(|v| v.value().to_vec());
    Ok(stored_or(stored, opened_as))
}

/// The replica id in the meta value `stored`, or `opened_as` if there is none.
/// The text of a stored meta value, or what the store was opened with if it has none.
fn stored_or(stored: Option<Vec<u8>>, opened_as: &str) -> String {
    match stored {
        Some(bytes) if !bytes.is_empty() => String::from_utf8_lossy(&bytes).into_owned(),
        _ => opened_as.to_string(),
    }
}

/// Fills the op-id index from the journal of a store made before the index existed. A row
/// that does not decode is left out (it could not be matched anyway) rather than making every
/// later write fail.
fn index_journal(
    journal: &Table<'_, u64, &'static [u8]>,
    op_ids: &mut Table<'_, u128, u64>,
) -> Result<(), StoreError> {
    use redb::ReadableTable;
    #[derive(serde::Deserialize)]
    struct IdOnly {
        meta: MetaId,
    }
    #[derive(serde::Deserialize)]
    struct MetaId {
        id: ulid::Ulid,
    }
    let mut found = Vec::new();
    for entry in journal.iter()? {
        let (seq, row) = entry?;
        if let Ok(op) = journal_row::decode::<IdOnly>(row.value()) {
            found.push((op.meta.id.0, seq.value()));
        }
    }
    for (id, seq) in found {
        op_ids.insert(id, seq)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Issue;
    use tables::RETIRED_READY_KEYS;

    /// A store made before the op-id index existed gets its journal indexed by the first
    /// writer, so its own ops coming back through a replay are recognised.
    #[test]
    fn the_op_index_is_filled_for_an_older_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let made =
            store.apply("a", Clock::System, vec![create("t-1", 2), create("t-2", 2)]).unwrap();
        // Make it look like an older store: no index, no marker.
        let txn = store.writable().unwrap().begin_write().unwrap();
        txn.delete_table(OP_IDS).unwrap();
        txn.open_table(META).unwrap().remove(meta::OP_IDS_COMPLETE).unwrap();
        txn.commit().unwrap();

        let report = store.replay(Clock::System, made).unwrap();
        assert!(report.iter().all(|r| matches!(r.outcome, Outcome::Duplicate)), "{report:?}");
        assert_eq!(store.journal_head().unwrap(), 2);
    }

    /// The first writer of a layout-1 store drops its id → ready-key table, and the ready
    /// index it leaves is right: entries were already under their rows' keys.
    #[test]
    fn a_layout_1_store_is_brought_up_by_its_first_writer() {
        use redb::ReadableDatabase;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let now = jiff::Timestamp::now();
        store.apply("a", Clock::System, vec![create("t-1", 2), create("t-2", 1)]).unwrap();
        // Make it a layout-1 store: version 1 and the key table of that layout.
        let txn = store.writable().unwrap().begin_write().unwrap();
        txn.open_table(META).unwrap().insert(meta::LAYOUT, 1u64.to_be_bytes().as_slice()).unwrap();
        txn.open_table(RETIRED_READY_KEYS).unwrap().insert("t-1", [0u8].as_slice()).unwrap();
        txn.commit().unwrap();

        crate::tracker::claims::claim(&store, "b", Clock::System, "t-2").unwrap();

        let txn = store.writable().unwrap().begin_read().unwrap();
        assert!(txn.open_table(RETIRED_READY_KEYS).is_err(), "the retired table is gone");
        assert_eq!(store.meta_counter(meta::LAYOUT).unwrap(), LAYOUT_VERSION);
        let ready = store.read().unwrap().ready(&ReadyFilter::default(), now).unwrap();
        let ids: Vec<&str> = ready.issues.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["t-1"]);
    }

    /// The create op of issue `id` at `priority`, without edges.
    fn create(id: &str, priority: u8) -> OpKind {
        let mut issue = Issue::new(id.into(), "x".into(), jiff::Timestamp::now());
        issue.priority = priority;
        OpKind::Create { issue: Box::new(issue), deps: Vec::new() }
    }

    /// The edge `from` → `to` of type `kind`, made at a fixed time.
    pub(super) fn edge(from: &str, to: &str, kind: &str) -> crate::model::Dependency {
        serde_json::from_value(serde_json::json!({
            "issue_id": from, "depends_on_id": to, "type": kind,
            "created_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    }

    /// Create ops of `n` issues `t-0`… titled `title`, without edges.
    fn creates(n: usize, title: &str) -> Vec<OpKind> {
        let now = jiff::Timestamp::now();
        (0..n)
            .map(|n| OpKind::Create {
                issue: Box::new(Issue::new(format!("t-{n}"), title.into(), now)),
                deps: Vec::new(),
            })
            .collect()
    }

    /// A large bulk op keeps a deflated journal row wherever it is journaled: in the store
    /// that made it and in one it reaches by replay (sync).
    #[test]
    fn a_replayed_bulk_op_is_journaled_deflated_too() {
        use redb::{ReadableDatabase, ReadableTable};
        let dir = tempfile::tempdir().unwrap();
        let made = Store::init(&dir.path().join("a/.beads"), "t").unwrap();
        let creates = creates(200, "a title of some length");
        made.write("a", Clock::System, |w| w.apply_bulk(creates)).unwrap();
        let ops: Vec<Op> = made.journal(0).unwrap().into_iter().map(|(_, op)| op).collect();
        let other = Store::init(&dir.path().join("b/.beads"), "t").unwrap();
        other.replay(Clock::System, ops).unwrap();

        for store in [&made, &other] {
            let txn = store.writable().unwrap().begin_read().unwrap();
            let journal = txn.open_table(JOURNAL).unwrap();
            let rows: Vec<Vec<u8>> =
                journal.iter().unwrap().map(|e| e.unwrap().1.value().to_vec()).collect();
            assert_eq!(rows.len(), 1, "one bulk op");
            let json = journal_row::json(&rows[0]).unwrap();
            assert!(rows[0].len() * 2 < json.len(), "{} of {} bytes", rows[0].len(), json.len());
        }
    }

    /// A bulk import into an empty store refreshes readiness from the facts kept as its issues
    /// were created; the ready and blocked tables come out as a scan of the issue rows makes
    /// them (parents, blockers, closed and deferred issues, a custom status).
    #[test]
    fn readiness_from_created_facts_is_readiness_from_the_rows() {
        use redb::{ReadableDatabase, ReadableTable};
        let at: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let issue = |id: &str, status: &str| {
            let mut issue = Issue::new(id.into(), "x".into(), at);
            issue.status = crate::model::Status::from_name(status);
            issue.priority = (id.len() % 5) as u8;
            if id == "t-6" {
                issue.defer_until = Some(at + jiff::SignedDuration::from_hours(24 * 365 * 10));
            }
            Box::new(issue)
        };
        let create = |id: &str, status: &str, deps: &[(&str, &str)]| OpKind::Create {
            issue: issue(id, status),
            deps: deps.iter().map(|(to, kind)| edge(id, to, kind)).collect(),
        };
        // Created out of id order, as an import creates targets before their dependents.
        let entries = || {
            vec![
                create("t-2", "open", &[]),
                create("t-3", "in_progress", &[("t-2", "blocks")]),
                create("t-6", "open", &[]),
                create("t-6.1", "open", &[("t-3", "blocks"), ("t-6", "parent-child")]),
                create("t-1", "open", &[]),
                create("t-1.1", "open", &[("t-1", "parent-child")]),
                create("t-4", "closed", &[]),
                create("t-5", "review", &[("t-4", "blocks")]),
            ]
        };
        // How the kept facts are used: as they are, dropped (the scan), or with two issues'
        // facts swapped (which must show, or the kept facts were not what the refresh read).
        // The same for the edges noted as they were inserted: dropped (the edge table is
        // read), or with t-3's blocker made an edge of no effect.
        #[derive(Clone, Copy, PartialEq)]
        enum Kept {
            AsMade,
            Dropped,
            Swapped,
            EdgesDropped,
            EdgesDisarmed,
        }
        let indexes_after = |kept: Kept| {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
            store
                .write("a", Clock::System, |w| {
                    w.begin_bulk()?;
                    w.apply_bulk(entries())?;
                    assert_eq!(w.created_facts.as_ref().map(Vec::len), Some(8), "facts were kept");
                    assert_eq!(w.created_edges.as_ref().map(|e| e.groups.len()), Some(4));
                    match (kept, &mut w.created_edges) {
                        (Kept::EdgesDropped, edges) => *edges = None,
                        (Kept::EdgesDisarmed, Some(edges)) => {
                            let (_, blockers) =
                                edges.groups.iter_mut().find(|(id, _)| id == "t-3").unwrap();
                            blockers[0].role = tables::EdgeRole::Other;
                        }
                        _ => {}
                    }
                    match (kept, &mut w.created_facts) {
                        (Kept::Dropped, facts) => *facts = None,
                        (Kept::Swapped, Some(facts)) => {
                            // t-2 (open, t-3's blocker) takes the facts of t-4 (closed).
                            let at = |id: &str| facts.iter().position(|(i, _)| i == id).unwrap();
                            let (open, closed) = (at("t-2"), at("t-4"));
                            facts[open].0 = "t-4".into();
                            facts[closed].0 = "t-2".into();
                        }
                        _ => {}
                    }
                    Ok(())
                })
                .unwrap();
            let txn = store.writable().unwrap().begin_read().unwrap();
            let ready: Vec<(Vec<u8>, Vec<u8>)> = txn
                .open_table(READY)
                .unwrap()
                .iter()
                .unwrap()
                .map(|e| e.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())).unwrap())
                .collect();
            let blocked: Vec<String> = txn
                .open_table(BLOCKED)
                .unwrap()
                .iter()
                .unwrap()
                .map(|e| e.unwrap().0.value().to_string())
                .collect();
            (ready, blocked)
        };
        let (kept, scanned) = (indexes_after(Kept::AsMade), indexes_after(Kept::Dropped));
        assert_eq!(kept.1, ["t-3", "t-6.1"]);
        assert!(!kept.0.is_empty());
        assert_eq!(kept, scanned);
        assert_eq!(kept, indexes_after(Kept::EdgesDropped));
        assert_ne!(indexes_after(Kept::Swapped).1, kept.1, "the refresh reads the kept facts");
        assert_eq!(indexes_after(Kept::EdgesDisarmed).1, ["t-6.1"], "it reads the kept edges");
    }

    /// Facts kept from the creates no longer describe the issue table once a row is written
    /// another way (a replaced record here), so the refresh scans the rows again.
    #[test]
    fn an_issue_row_written_otherwise_drops_the_created_facts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let mut replaced = Issue::new("t-0".into(), "replaced".into(), jiff::Timestamp::now());
        replaced.status = crate::model::Status::Closed;
        store
            .write("a", Clock::System, |w| {
                w.begin_bulk()?;
                w.apply_bulk(creates(3, "x"))?;
                assert_eq!(w.created_facts.as_ref().map(Vec::len), Some(3));
                w.apply_bulk(vec![OpKind::Put { issue: Box::new(replaced) }])?;
                assert!(w.created_facts.is_none());
                Ok(())
            })
            .unwrap();
        assert_eq!(ready_ids(&store), ["t-1", "t-2"], "the closed record is not ready");
    }

    /// The ids `ready` lists now, in its order.
    fn ready_ids(store: &Store) -> Vec<String> {
        let ready = store.read().unwrap().ready(&ReadyFilter::default(), jiff::Timestamp::now());
        ready.unwrap().issues.into_iter().map(|issue| issue.id).collect()
    }

    /// The edge and reverse-edge tables as (key, value) strings, for comparing stores.
    fn edge_tables(store: &Store) -> Vec<(String, String)> {
        use redb::{ReadableDatabase, ReadableTable};
        let txn = store.writable().unwrap().begin_read().unwrap();
        let mut out = Vec::new();
        for entry in txn.open_table(DEPS).unwrap().iter().unwrap() {
            let (key, row) = entry.unwrap();
            let (from, to) = key.value();
            out.push((format!("dep {from} {to}"), String::from_utf8_lossy(row.value()).into()));
        }
        for entry in txn.open_table(RDEPS).unwrap().iter().unwrap() {
            let (key, kind) = entry.unwrap();
            let (to, from) = key.value();
            out.push((format!("rdep {to} {from}"), kind.value().to_string()));
        }
        out
    }

    /// Creates with edges (one naming another issue as its source, one target given twice
    /// with different types), and a comment, in two bulk ops.
    fn creates_with_edges() -> Vec<OpKind> {
        let at: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let mut entries = Vec::new();
        for n in 0..(BULK_ENTRIES + 3) {
            let id = format!("t-{n:04}");
            let deps = match n {
                0 => Vec::new(),
                1 => vec![edge("elsewhere", "t-0000", "blocks")],
                2 => vec![edge("t-0002", "t-0001", "blocks"), edge("t-0002", "t-0001", "related")],
                _ => vec![edge(&id, "t-0000", "parent-child"), edge(&id, "t-0002", "blocks")],
            };
            entries.push(OpKind::Create { issue: Box::new(Issue::new(id, "x".into(), at)), deps });
        }
        let comment = crate::model::Comment {
            id: crate::model::CommentId::Text("c-1".into()),
            issue_id: "t-0001".into(),
            author: "a".into(),
            text: "noted".into(),
            created_at: at,
        };
        entries.push(OpKind::Comment { comment });
        entries
    }

    /// A bulk write into an empty store has a thread of its own insert the edges of its
    /// creates; the edge tables come out as the writer makes them applying the same creates
    /// one by one.
    #[test]
    fn edges_inserted_ahead_are_the_edges_the_writer_inserts() {
        let (ahead_dir, one_by_one_dir) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ahead = Store::init(&ahead_dir.path().join(".beads"), "t").unwrap();
        ahead
            .write("a", Clock::System, |w| {
                w.begin_bulk()?;
                let op = w.stamp(OpKind::Bulk { ops: creates_with_edges() })?;
                assert!(w.edges_can_go_ahead(&[op]), "a thread of its own inserts the edges");
                w.apply_bulk(creates_with_edges())
            })
            .unwrap();
        let one_by_one = Store::init(&one_by_one_dir.path().join(".beads"), "t").unwrap();
        one_by_one
            .write("a", Clock::System, |w| {
                for kind in creates_with_edges() {
                    w.apply(kind)?;
                }
                Ok(())
            })
            .unwrap();
        let edges = edge_tables(&ahead);
        assert_eq!(edges.len(), 2 * (1 + 1 + 2 * BULK_ENTRIES), "{edges:?}");
        assert!(edges.iter().any(|(k, v)| k == "dep t-0002 t-0001" && v.contains("related")));
        assert_eq!(edges, edge_tables(&one_by_one));
        // The readiness refreshed once at the end of the bulk write (with the dependent counts
        // of the ready entries) is the readiness the writer keeps one op at a time.
        let ready = readiness_tables(&ahead);
        assert!(ready.iter().any(|(k, _)| k.starts_with("ready ")), "{ready:?}");
        assert_eq!(ready, readiness_tables(&one_by_one));
    }

    /// The ready and blocked tables, entry by entry.
    fn readiness_tables(store: &Store) -> Vec<(String, Vec<u8>)> {
        use redb::{ReadableDatabase, ReadableTable};
        let txn = store.writable().unwrap().begin_read().unwrap();
        let mut out = Vec::new();
        for entry in txn.open_table(READY).unwrap().iter().unwrap() {
            let (key, value) = entry.unwrap();
            out.push((format!("ready {:?}", key.value()), value.value().to_vec()));
        }
        for entry in txn.open_table(BLOCKED).unwrap().iter().unwrap() {
            let (key, _) = entry.unwrap();
            out.push((format!("blocked {}", key.value()), Vec::new()));
        }
        out
    }

    /// A bulk write that failed part-way (a create's edge names no issue, after its edges
    /// went ahead) cannot be committed, even by a caller that goes on after the error.
    #[test]
    fn a_failed_bulk_write_with_edges_ahead_is_never_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let mut entries = creates_with_edges();
        if let OpKind::Create { deps, .. } = &mut entries[5] {
            deps[0].depends_on_id = "t-missing".into();
        }
        let result = store.write("a", Clock::System, |w| {
            w.begin_bulk()?;
            let failed = w.apply_bulk(entries);
            assert!(matches!(failed, Err(StoreError::NotFound(ref id)) if id == "t-missing"));
            Ok(())
        });
        assert!(matches!(result, Err(StoreError::BulkAbandoned)), "{result:?}");
        assert_eq!(store.read().unwrap().view().issue_count().unwrap(), 0);
        assert!(edge_tables(&store).is_empty());
    }

    /// Edges noted as they were inserted no longer describe the edge table once one is
    /// removed, so the refresh reads the table: the issue whose blocker edge went is ready.
    #[test]
    fn a_removed_edge_drops_the_noted_edges() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let mut creates = creates(2, "x");
        if let OpKind::Create { deps, .. } = &mut creates[1] {
            *deps = vec![edge("t-1", "t-0", "blocks")];
        }
        store
            .write("a", Clock::System, |w| {
                w.begin_bulk()?;
                w.apply_bulk(creates)?;
                assert!(w.created_edges.is_some());
                w.apply_bulk(vec![OpKind::DepRemove {
                    issue_id: "t-1".into(),
                    depends_on_id: "t-0".into(),
                }])?;
                assert!(w.created_edges.is_none());
                Ok(())
            })
            .unwrap();
        assert_eq!(ready_ids(&store), ["t-0", "t-1"], "t-1 is no longer blocked");
    }

    /// A text search of a store large enough to be scanned from both ends at once finds every
    /// match: the first and last rows, the rows around the middle, descriptions, and a text
    /// nearly every row holds.
    #[test]
    fn a_large_store_is_searched_from_both_ends_completely() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let now = jiff::Timestamp::now();
        let n = tables::SCANNED_FROM_BOTH_ENDS as usize + 500;
        let matches =
            |k: usize| k.is_multiple_of(997) || k == n - 1 || (10_240..10_260).contains(&k);
        let entries = (0..n)
            .map(|k| {
                let title =
                    if matches(k) { format!("a NeedLe {k}") } else { format!("common {k}") };
                let mut issue = Issue::new(format!("t-{k:05}"), title, now);
                if k == 7 {
                    issue.description = "the needle is here".into();
                }
                OpKind::Create { issue: Box::new(issue), deps: Vec::new() }
            })
            .collect();
        store
            .write("a", Clock::System, |w| {
                w.begin_bulk()?;
                w.apply_bulk(entries)
            })
            .unwrap();
        let filter = ListFilter { text: Some("needle".into()), limit: 0, ..ListFilter::default() };
        let (found, total) = store.read().unwrap().list(&filter).unwrap();
        let mut ids: Vec<String> = found.into_iter().map(|s| s.issue.id).collect();
        ids.sort();
        let mut expected: Vec<String> =
            (0..n).filter(|&k| matches(k) || k == 7).map(|k| format!("t-{k:05}")).collect();
        expected.sort();
        assert_eq!(total, expected.len());
        assert_eq!(ids, expected);
        // A text almost every row holds: a row missed where the two scans meet shows here.
        let filter = ListFilter { text: Some("COMMON".into()), limit: 0, ..ListFilter::default() };
        let (_, total) = store.read().unwrap().list(&filter).unwrap();
        assert_eq!(total, (0..n).filter(|&k| !matches(k)).count());
    }

    /// The counters a bulk import holds in memory reach the store: the number of issues made,
    /// which picks the length of new ids.
    #[test]
    fn a_bulk_import_counts_its_issues() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        // Counted on from what the store already holds.
        store.apply("a", Clock::System, vec![create("t-a", 2), create("t-b", 2)]).unwrap();
        let creates = creates(30, "x");
        store
            .write("a", Clock::System, |w| {
                w.begin_bulk()?;
                w.apply_bulk(creates)
            })
            .unwrap();
        assert_eq!(store.meta_counter(meta::TOP_LEVEL_COUNT).unwrap(), 32);
    }

    /// A store whose tables a newer fleet laid out is refused, with the fix, instead of being
    /// written the old way.
    #[test]
    fn a_store_with_a_newer_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let beads = dir.path().join(".beads");
        let store = Store::init(&beads, "t").unwrap();
        let txn = store.writable().unwrap().begin_write().unwrap();
        let newer = (LAYOUT_VERSION + 1).to_be_bytes();
        txn.open_table(META).unwrap().insert(meta::LAYOUT, newer.as_slice()).unwrap();
        txn.commit().unwrap();

        // Neither by a process that had it open already, nor by one opening it now.
        let write = store.apply("a", Clock::System, Vec::new());
        assert!(matches!(write, Err(StoreError::LayoutVersion { .. })), "{write:?}");
        drop(store);
        let refused = Store::open(&beads).err().expect("a newer layout is refused");
        let message = refused.to_string();
        let version = format!("table layout is version {}", LAYOUT_VERSION + 1);
        assert!(message.contains(&version), "{message}");
        assert!(message.contains("upgrade fleet"), "{message}");
    }
}
