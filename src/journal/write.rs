//! Committing the store's pending ops to git ([`commit_pending`]), and doing so every few
//! seconds from an async program ([`spawn_periodic`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::read::LogEntry;
use super::repo::JournalRepo;
use super::{
    BatchInfo, JournalError, MAX_BYTES_PER_COMMIT, MAX_OPS_PER_COMMIT, RepoKind, batch_format,
    ref_name,
};
use crate::ahead::{Ahead, Signals};
use crate::op::OpMeta;
use crate::store::{Store, Writer, decode_journal_row, journal_json};

/// How often [`commit_pending`] retries after losing the ref to another process.
const ATTEMPTS: usize = 3;

/// Who writes a journal's batches: the replica, and the id prefix its store gives new issues
/// (recorded in each `batch.json`, so a machine that joins the queue takes it from there).
#[derive(Debug, Clone, Copy)]
pub(super) struct Author<'a> {
    pub replica: &'a str,
    pub prefix: &'a str,
}

/// What [`commit_pending`] did.
#[derive(Debug, Clone, Serialize)]
pub struct CommitReport {
    /// The repository's git directory.
    pub repo: PathBuf,
    pub repo_kind: RepoKind,
    /// `refs/fleet/journal/<replica>`.
    pub reference: String,
    /// Ops committed by this call.
    pub ops: usize,
    /// The commits made, oldest first.
    pub commits: Vec<LogEntry>,
    /// Ops found already committed by an earlier run that died before recording it.
    pub recovered: usize,
    /// The journal sequence committed through, after this call.
    pub committed_seq: u64,
}

/// This replica's ops not yet committed, with their journal sequences; and the sequence the
/// committed mark can move to once they are (the journal head when the scan was made).
pub(super) struct Pending {
    pub ops: Vec<(u64, PendingOp)>,
    pub scanned_to: u64,
}

/// A journaled op as a journal commit carries it: its row exactly as the store journaled it
/// (one line of `ops.jsonl`), and the parts of it that committing reads. Only those parts are
/// decoded, so committing a large import does not decode its records again.
#[derive(Debug, Clone)]
pub struct PendingOp {
    /// The op's format version.
    pub v: u32,
    pub meta: OpMeta,
    /// The journal row: the op's JSON record.
    pub row: Vec<u8>,
}

impl PendingOp {
    fn decode(row: &[u8]) -> Result<PendingOp, serde_json::Error> {
        let (head, _) = PendingOp::head_of(row)?;
        Ok(PendingOp { row: row.to_vec(), ..head })
    }

    /// The op in `row` without a copy of the row (its `row` is empty), and the row's length.
    fn head_of(row: &[u8]) -> Result<(PendingOp, usize), serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct Head {
            v: u32,
            meta: OpMeta,
        }
        let head: Head = serde_json::from_slice(row)?;
        Ok((PendingOp { v: head.v, meta: head.meta, row: Vec::new() }, row.len()))
    }
}

/// This replica's journaled ops after the committed mark, in journal order (ops replayed from
/// other replicas are in their own refs, not this one).
pub fn pending_ops(store: &Store) -> Result<Vec<(u64, PendingOp)>, JournalError> {
    Ok(scan(store, store.journal_committed()?)?.ops)
}

fn scan(store: &Store, committed: u64) -> Result<Pending, JournalError> {
    let entries = store.journal_decoded(committed + 1, PendingOp::decode)?;
    let (ops, scanned_to) = ours(entries, committed, &store.replica(), |op| op);
    Ok(Pending { ops, scanned_to })
}

/// The entries of `replica`'s ops among the journal `entries` after the committed mark
/// `committed` (`op` finds an entry's op), and the last sequence among all of them.
fn ours<T>(
    entries: Vec<(u64, T)>,
    committed: u64,
    replica: &str,
    op: impl Fn(&T) -> &PendingOp,
) -> (Vec<(u64, T)>, u64) {
    let scanned_to = entries.last().map_or(committed, |(seq, _)| *seq);
    let ours = entries.into_iter().filter(|(_, entry)| op(entry).meta.replica == replica);
    (ours.collect(), scanned_to)
}

/// Splits ops whose rows are `sizes` bytes long into the runs each commit carries: at most
/// `max_ops` ops and, unless one op alone is larger, [`MAX_BYTES_PER_COMMIT`] bytes of rows.
/// Where the rows allow, the bytes are spread evenly over the fewest commits, so that commits
/// written side by side finish together.
fn batches(sizes: &[usize], max_ops: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = sizes.iter().map(|size| size + 1).sum();
    let fewest = total.div_ceil(MAX_BYTES_PER_COMMIT).max(1);
    let even = cut(sizes, max_ops, total.div_ceil(fewest));
    // Rows do not divide evenly: when an even share leaves a remnant for one more commit, the
    // commits are filled up to the limit instead.
    if even.len() > fewest { cut(sizes, max_ops, MAX_BYTES_PER_COMMIT) } else { even }
}

/// Rows of `sizes` bytes cut into runs of at most `max_ops` rows and, unless one row alone is
/// larger, `max_bytes` bytes (each row with its line's newline).
fn cut(sizes: &[usize], max_ops: usize, max_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, size) in sizes.iter().enumerate() {
        let full = at - start == max_ops || (at > start && bytes + size + 1 > max_bytes);
        if full {
            out.push(start..at);
            (start, bytes) = (at, 0);
        }
        bytes += size + 1;
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

/// The length of each op's row.
fn sizes_of(ops: &[(u64, PendingOp)]) -> Vec<usize> {
    ops.iter().map(|(_, op)| op.row.len()).collect()
}

/// Commits the ops this replica journaled since the last commit to its ref (see the module
/// docs for the format), at most [`MAX_OPS_PER_COMMIT`] per commit, and records how far the
/// journal is committed. Finds `.beads/journal.git` or the enclosing repository, creating the
/// former if there is neither. With nothing pending it writes nothing.
pub fn commit_pending(store: &Store) -> Result<CommitReport, JournalError> {
    commit_in_batches(store, MAX_OPS_PER_COMMIT, None)
}

/// [`commit_pending`] with the trees [`write_trees_ahead`] wrote, if they carry exactly the
/// ops pending now (else it writes its own, as [`commit_pending`] does).
pub fn commit_pending_ahead(
    store: &Store,
    ahead: WritingAhead,
) -> Result<CommitReport, JournalError> {
    commit_in_batches(store, MAX_OPS_PER_COMMIT, ahead.finish())
}

/// [`commit_pending`] with at most `max_ops` ops per commit.
fn commit_in_batches(
    store: &Store,
    max_ops: usize,
    mut ahead: Option<TreesAhead>,
) -> Result<CommitReport, JournalError> {
    let repo = JournalRepo::find_or_create(store.dir())?;
    for _ in 0..ATTEMPTS {
        if let Some(report) = try_commit(store, &repo, max_ops, ahead.take())? {
            save_settings(&repo, store);
            return Ok(report);
        }
    }
    Err(JournalError::Contended {
        reference: ref_name(&store.replica()),
        repo: repo.git_dir().to_path_buf(),
    })
}

/// Records the store's settings beside its journal (see [`super::settings`]). A failure is
/// logged, not the commit's: the ops are in git either way, and the next commit tries again.
fn save_settings(repo: &JournalRepo, store: &Store) {
    if let Err(error) = super::settings::save(repo, store) {
        tracing::warn!(%error, "recording the workspace's settings in the journal repository");
    }
}

/// One attempt; `None` if another process moved the ref meanwhile. The trees written `ahead`
/// are used if they carry exactly what is pending.
fn try_commit(
    store: &Store,
    repo: &JournalRepo,
    max_ops: usize,
    ahead: Option<TreesAhead>,
) -> Result<Option<CommitReport>, JournalError> {
    let replica = &store.replica();
    let mut tip = repo.tip(replica)?;
    let committed = store.journal_committed()?;
    let mut report = CommitReport {
        repo: repo.git_dir().to_path_buf(),
        repo_kind: repo.kind,
        reference: ref_name(replica),
        ops: 0,
        commits: Vec::new(),
        recovered: 0,
        committed_seq: 0,
    };
    let usable = match ahead {
        Some(ahead) if ahead.carries_what_is_pending(store, repo, committed, tip)? => Some(ahead),
        _ => None,
    };
    let (trees, scanned_to) = match usable {
        Some(ahead) => (ahead.trees, ahead.scanned_to),
        None => {
            let Pending { mut ops, scanned_to } = scan(store, committed)?;
            let recovered = skip_committed(repo, replica, tip, &mut ops)?;
            if let Some(seq) = recovered.last_seq {
                store.record_journal_committed(seq)?;
            }
            report.recovered = recovered.count;
            let chunks = batches(&sizes_of(&ops), max_ops);
            let prefix = store.prefix();
            let author = Author { replica, prefix: &prefix };
            (write_trees(repo, author, &mut ops, &chunks, crate::parallel::cores())?, scanned_to)
        }
    };
    let commits = trees.len();
    for (n, (info, tree, seconds)) in trees.into_iter().enumerate() {
        let Some(id) = repo.commit_tree(&info, tree, tip, seconds)? else {
            return Ok(None);
        };
        let last = n + 1 == commits;
        store.record_journal_committed(if last { scanned_to } else { info.last_seq })?;
        report.ops += info.count;
        report.commits.push(LogEntry::new(id, tip, info, seconds));
        tip = Some(id);
    }
    // Ops of other replicas were passed over: move the mark past them, but an idle queue
    // (nothing scanned) costs no write transaction.
    if commits == 0 && scanned_to > committed {
        store.record_journal_committed(scanned_to)?;
    }
    report.committed_seq = store.journal_committed()?;
    Ok(Some(report))
}

/// The trees of a journal commit, written before the store committed the ops they carry
/// ([`write_trees_ahead`]).
struct TreesAhead {
    /// The committed mark, and the last journal sequence, as the writing transaction saw them.
    committed: u64,
    scanned_to: u64,
    /// The ids of the ops the trees carry.
    ops: Vec<ulid::Ulid>,
    trees: Vec<(BatchInfo, gix::ObjectId, i64)>,
}

impl TreesAhead {
    /// Whether the trees carry exactly this replica's pending ops: the committed mark is
    /// where it was, nothing was journaled since, and the ref's tip holds none of them (as it
    /// would had a process died between moving the ref and recording the mark).
    fn carries_what_is_pending(
        &self,
        store: &Store,
        repo: &JournalRepo,
        committed: u64,
        tip: Option<gix::ObjectId>,
    ) -> Result<bool, JournalError> {
        if committed != self.committed || store.journal_head()? != self.scanned_to {
            return Ok(false);
        }
        match tip {
            Some(tip) if !self.ops.is_empty() => {
                let last_op = repo.batch(&store.replica(), tip)?.info.last_op;
                Ok(!self.ops.contains(&last_op))
            }
            _ => Ok(true),
        }
    }
}

/// A journal commit's trees being written ahead ([`write_trees_ahead`]). Dropping it (the
/// import failed) stops the writing at the next row and waits for it, so nothing writes into
/// the repository after its owner gave up.
pub struct WritingAhead(Ahead<Result<Option<TreesAhead>, JournalError>>);

impl WritingAhead {
    /// The trees, once written; `None` if writing them failed (the commit then writes its
    /// own, and meets the same fault there if it lasts).
    fn finish(self) -> Option<TreesAhead> {
        match self.0.wait() {
            Some(Ok(trees)) => trees,
            Some(Err(error)) => {
                tracing::debug!(%error, "the journal's trees were not written ahead");
                None
            }
            None => {
                tracing::debug!("writing the journal's trees ahead panicked");
                None
            }
        }
    }
}

/// Starts writing, on a core nothing else wants ([`Ahead`]), the trees of the journal commit
/// that is to follow the commit of `writer`'s transaction, from the rows past the committed
/// mark as that transaction sees them: a large import's trees are then compressed while the
/// store finishes and commits the import, and [`commit_pending_ahead`] only makes the
/// commits. Objects no commit ends up naming (the transaction failed, or the trees were not
/// used) are unreachable, which git's garbage collection removes. `dir` is the store's
/// workspace.
pub fn write_trees_ahead(dir: &Path, writer: &Writer<'_>) -> Result<WritingAhead, JournalError> {
    trees_ahead_in_batches(dir, writer, MAX_OPS_PER_COMMIT)
}

/// [`write_trees_ahead`] with at most `max_ops` ops per commit.
fn trees_ahead_in_batches(
    dir: &Path,
    writer: &Writer<'_>,
    max_ops: usize,
) -> Result<WritingAhead, JournalError> {
    let (committed, rows) = writer.journal_past_mark()?;
    let dir = dir.to_path_buf();
    let (replica, prefix) = (writer.replica().to_string(), writer.prefix().to_string());
    let work = move |signals: &Signals| {
        let rows = RowsPastMark { committed, rows };
        let author = Author { replica: &replica, prefix: &prefix };
        rows.write_trees(&dir, author, max_ops, signals)
    };
    let started =
        Ahead::start(work).map_err(JournalError::io("starting the journal's tree writer"))?;
    Ok(WritingAhead(started))
}

/// An op read ahead without its row: the row's length, and its place among the rows.
struct Head {
    op: PendingOp,
    size: usize,
    at: usize,
}

/// Journal rows copied out of a write transaction, after its committed mark `committed`.
struct RowsPastMark {
    committed: u64,
    rows: crate::store::JournalRows,
}

impl RowsPastMark {
    /// The trees of `replica`'s ops among the rows, at most `max_ops` to a commit, in the
    /// repository of workspace `dir`; `None` once `signals` say they are abandoned. One thread
    /// (threads it started would keep the idle priority after the wait), and one commit's rows
    /// inflated at a time (each row is inflated twice: for its head, and into its commit): the
    /// store's transaction is still held meanwhile.
    fn write_trees(
        &self,
        dir: &Path,
        author: Author<'_>,
        max_ops: usize,
        signals: &Signals,
    ) -> Result<Option<TreesAhead>, JournalError> {
        let mut heads = Vec::with_capacity(self.rows.len());
        for (at, (seq, row)) in self.rows.iter().enumerate() {
            if signals.abandoned() {
                return Ok(None);
            }
            let (op, size) = decode_journal_row(*seq, row, &PendingOp::head_of)?;
            heads.push((*seq, Head { op, size, at }));
        }
        let (heads, scanned_to) = ours(heads, self.committed, author.replica, |head| &head.op);
        let repo = JournalRepo::find_or_create(dir)?;
        let sizes: Vec<usize> = heads.iter().map(|(_, head)| head.size).collect();
        let mut trees = Vec::new();
        for chunk in batches(&sizes, max_ops) {
            if signals.abandoned() {
                return Ok(None);
            }
            let mut ops = Vec::with_capacity(chunk.len());
            for (seq, head) in &heads[chunk] {
                let row = journal_json(*seq, &self.rows[head.at].1)?.into_owned();
                ops.push((*seq, PendingOp { row, ..head.op.clone() }));
            }
            trees.push(tree_of(&repo, author, &mut ops)?);
        }
        let ops = heads.iter().map(|(_, head)| head.op.meta.id).collect();
        Ok(Some(TreesAhead { committed: self.committed, scanned_to, ops, trees }))
    }
}

/// Writes the tree of each chunk of `ops` (its rows move into the tree's `ops.jsonl`), with
/// the batch description and commit time of each. A journal of more than one chunk (a large
/// import's) is compressed into the object store on up to `cores` threads, a chunk per
/// thread; a tree no commit ends up naming is an unreachable object, which git's garbage
/// collection removes.
fn write_trees(
    repo: &JournalRepo,
    author: Author<'_>,
    ops: &mut [(u64, PendingOp)],
    chunks: &[std::ops::Range<usize>],
    cores: usize,
) -> Result<Vec<(BatchInfo, gix::ObjectId, i64)>, JournalError> {
    let mut runs = split_into(ops, chunks);
    if cores < 2 || runs.len() < 2 {
        return runs.iter_mut().map(|run| tree_of(repo, author, run)).collect();
    }
    let (git_dir, kind) = (repo.git_dir(), repo.kind);
    let mut written = Vec::with_capacity(runs.len());
    for wave in runs.chunks_mut(cores) {
        // A gix repository is not shared between threads: each opens its own.
        let results = crate::parallel::on_threads(wave.iter_mut(), |run| {
            tree_of(&JournalRepo::open_again(git_dir, kind)?, author, run)
        });
        for result in results {
            written.push(result?);
        }
    }
    Ok(written)
}

/// The tree of one commit's `chunk` of ops (its rows move into the tree's `ops.jsonl`), with
/// the batch description and commit time.
fn tree_of(
    repo: &JournalRepo,
    author: Author<'_>,
    chunk: &mut [(u64, PendingOp)],
) -> Result<(BatchInfo, gix::ObjectId, i64), JournalError> {
    let (info, jsonl, seconds) = encode(author, chunk);
    let tree = repo.write_tree(&info, &jsonl)?;
    Ok((info, tree, seconds))
}

/// `ops` cut at the bounds of `chunks` (consecutive ranges that cover it from the start).
fn split_into<'a, T>(mut ops: &'a mut [T], chunks: &[std::ops::Range<usize>]) -> Vec<&'a mut [T]> {
    let mut runs = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let (run, rest) = std::mem::take(&mut ops).split_at_mut(chunk.len());
        runs.push(run);
        ops = rest;
    }
    runs
}

/// What [`skip_committed`] found.
struct Recovered {
    count: usize,
    last_seq: Option<u64>,
}

/// Drops from `ops` those the ref's tip already holds: the ref is ahead of the committed mark
/// when a process died between moving the ref and recording the mark. The tip's last op,
/// found among the pending ones, ends what is already committed.
fn skip_committed(
    repo: &JournalRepo,
    replica: &str,
    tip: Option<gix::ObjectId>,
    ops: &mut Vec<(u64, PendingOp)>,
) -> Result<Recovered, JournalError> {
    let none = Recovered { count: 0, last_seq: None };
    let Some(tip) = tip else { return Ok(none) };
    if ops.is_empty() {
        return Ok(none);
    }
    let last_op = repo.batch(replica, tip)?.info.last_op;
    let Some(at) = ops.iter().position(|(_, op)| op.meta.id == last_op) else { return Ok(none) };
    let last_seq = ops[at].0;
    ops.drain(..=at);
    tracing::info!(ops = at + 1, "the journal ref already held ops the store had not recorded");
    Ok(Recovered { count: at + 1, last_seq: Some(last_seq) })
}

/// The batch description, `ops.jsonl` and commit time of a non-empty run of ops. The rows
/// move into `ops.jsonl` (each is freed once copied, so a large journal is not held twice).
fn encode(author: Author<'_>, chunk: &mut [(u64, PendingOp)]) -> (BatchInfo, Vec<u8>, i64) {
    let mut jsonl = Vec::with_capacity(chunk.iter().map(|(_, op)| op.row.len() + 1).sum());
    for (_, op) in chunk.iter_mut() {
        jsonl.extend_from_slice(&std::mem::take(&mut op.row));
        jsonl.push(b'\n');
    }
    let (first_seq, first) = &chunk[0];
    let (last_seq, last) = &chunk[chunk.len() - 1];
    let newest_op = chunk.iter().map(|(_, op)| op.v).max().unwrap_or(1);
    let info = BatchInfo {
        format: batch_format(newest_op),
        replica: author.replica.to_string(),
        count: chunk.len(),
        first_seq: *first_seq,
        last_seq: *last_seq,
        first_op: first.meta.id,
        last_op: last.meta.id,
        prefix: Some(author.prefix.to_string()),
    };
    (info, jsonl, last.meta.at.as_second())
}

/// A background task committing the journal every `every` while an async program runs.
pub struct Periodic {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Starts committing `store`'s pending ops every `every` (on a blocking thread; failures are
/// logged, never fatal). [`Periodic::finish`] commits once more and stops.
pub fn spawn_periodic(store: Arc<Store>, every: Duration) -> Periodic {
    Periodic::start(every, Finally::RunOnceMore, move || commit_in_background(Arc::clone(&store)))
}

/// Whether stopping a [`Periodic`] runs its work one last time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finally {
    RunOnceMore,
    JustStop,
}

impl Periodic {
    /// Runs `work` every `every` (the first time after one period) until [`Periodic::finish`].
    pub fn start<W, F>(every: Duration, finally: Finally, work: W) -> Periodic
    where
        W: Fn() -> F + Send + 'static,
        F: std::future::Future<Output = ()> + Send,
    {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => work().await,
                    _ = &mut stopped => break,
                }
            }
            if finally == Finally::RunOnceMore {
                work().await;
            }
        });
        Periodic { stop, task }
    }

    /// Stops the task (work under way finishes first, and runs once more with
    /// [`Finally::RunOnceMore`]).
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

async fn commit_in_background(store: Arc<Store>) {
    match tokio::task::spawn_blocking(move || commit_pending(&store)).await {
        Ok(Ok(report)) if report.ops > 0 => {
            tracing::debug!(ops = report.ops, reference = %report.reference, "journal committed");
        }
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "committing the journal to git failed"),
        Err(error) => tracing::warn!(%error, "the journal commit task failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The author of `store`'s batches (leaked: a test's few strings).
    fn author_of(store: &Store) -> Author<'static> {
        let replica: &'static str = Box::leak(store.replica().into_boxed_str());
        let prefix: &'static str = Box::leak(store.prefix().into_boxed_str());
        Author { replica, prefix }
    }
    use crate::journal::{read_replica, verify};
    use crate::model::Issue;
    use crate::op::Op;
    use crate::time::Clock;

    fn new_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        (dir, store)
    }

    /// Imports `n` issues `t-<from>`… (one Create op each).
    fn add_issues(store: &Store, from: usize, n: usize) {
        let now = jiff::Timestamp::now();
        store
            .write("tester", Clock::System, |writer| {
                for i in from..from + n {
                    let issue = Issue::new(format!("t-{i}"), format!("issue {i}"), now);
                    crate::tracker::import_new(writer, issue, Vec::new())?;
                }
                Ok(())
            })
            .unwrap();
    }

    fn own_ops(store: &Store) -> Vec<Op> {
        store.journal(1).unwrap().into_iter().map(|(_, op)| op).collect()
    }

    /// The journal in git holds this replica's ops exactly as the store journaled them.
    fn assert_journal_is_the_stores(store: &Store) {
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        assert_eq!(read_replica(&repo, &store.replica()).unwrap(), own_ops(store));
        assert!(verify(store).unwrap().ok);
    }

    #[test]
    fn pending_ops_are_committed_once() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 3);
        let first = commit_pending(&store).unwrap();
        assert_eq!((first.ops, first.commits.len(), first.committed_seq), (3, 1, 3));
        assert_eq!(first.repo_kind, RepoKind::Own);
        let again = commit_pending(&store).unwrap();
        assert_eq!((again.ops, again.commits.len()), (0, 0));
        add_issues(&store, 4, 2);
        let second = commit_pending(&store).unwrap();
        assert_eq!(second.commits[0].parent.as_deref(), Some(first.commits[0].commit.as_str()));
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        assert_eq!(read_replica(&repo, &store.replica()).unwrap(), own_ops(&store));
    }

    /// The process died after moving the ref and before recording the committed mark: the
    /// next run finds the tip's last op among the pending ones and commits nothing twice.
    #[test]
    fn a_ref_ahead_of_the_committed_mark_is_not_committed_twice() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 3);
        commit_pending(&store).unwrap();
        add_issues(&store, 4, 2);
        // What a run that died before `record_journal_committed` left behind.
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        let tip = repo.tip(&store.replica()).unwrap();
        let mut pending = scan(&store, store.journal_committed().unwrap()).unwrap();
        let (info, jsonl, seconds) = encode(author_of(&store), &mut pending.ops);
        repo.commit_batch(&info, &jsonl, tip, seconds).unwrap().unwrap();
        assert_eq!(store.journal_committed().unwrap(), 3);

        let report = commit_pending(&store).unwrap();
        assert_eq!((report.ops, report.recovered, report.committed_seq), (0, 2, 5));
        assert!(report.commits.is_empty());
        assert_eq!(repo.chain(&store.replica(), usize::MAX).unwrap().len(), 2);
        assert_eq!(read_replica(&repo, &store.replica()).unwrap(), own_ops(&store));
        assert!(verify(&store).unwrap().ok);
    }

    /// Pending ops whose rows have these sizes (their metas do not matter here).
    fn checked_batches(sizes: &[usize]) -> Vec<std::ops::Range<usize>> {
        let chunks = batches(sizes, MAX_OPS_PER_COMMIT);
        let mut next = 0;
        for chunk in &chunks {
            assert_eq!(chunk.start, next, "{chunks:?}");
            next = chunk.end;
            let bytes: usize = sizes[chunk.clone()].iter().map(|size| size + 1).sum();
            assert!(bytes <= MAX_BYTES_PER_COMMIT || chunk.len() == 1, "{chunk:?}: {bytes}");
        }
        assert_eq!(next, sizes.len());
        chunks
    }

    #[test]
    fn commits_share_the_bytes_evenly_and_none_holds_more_than_the_limit() {
        let mb = 1024 * 1024;
        // 104 MB in rows of 2 MB: two commits of 52 MB, not 64 and 40.
        assert_eq!(checked_batches(&[2 * mb - 1; 52]), [0..26, 26..52]);
        // Under the limit: one commit; one row larger than the limit: a commit of its own.
        assert_eq!(checked_batches(&[mb; 10]), vec![(0..10)]);
        assert_eq!(checked_batches(&[mb, 70 * mb, mb]), [0..1, 1..2, 2..3]);
        // Rows that no even share fits take no more commits than filling each to the limit.
        assert_eq!(checked_batches(&[3 * mb; 35]).len(), 2);
        assert_eq!(checked_batches(&[40 * mb, 40 * mb, 20 * mb]).len(), 2);
        checked_batches(&[3 * mb, 5 * mb, 7 * mb, 11 * mb, 13 * mb, 17 * mb, 19 * mb, 23 * mb]);
        // The newline counts: 64 rows of 1 MB are over the limit with theirs, so 128 of them
        // take three commits; rows that fill the limit only with theirs go in two.
        assert_eq!(checked_batches(&[mb; 128]).len(), 3);
        assert_eq!(checked_batches(&[32 * mb, 32 * mb]).len(), 2);
        assert!(batches(&[], MAX_OPS_PER_COMMIT).is_empty());
    }

    #[test]
    fn large_batches_are_split() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 25);
        let report = commit_in_batches(&store, 10, None).unwrap();
        let counts: Vec<usize> = report.commits.iter().map(|c| c.info.count).collect();
        assert_eq!(counts, [10, 10, 5]);
        assert_eq!(report.commits[2].info.first_seq, 21);
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        assert_eq!(read_replica(&repo, &store.replica()).unwrap(), own_ops(&store));
    }

    #[test]
    fn ops_of_other_replicas_stay_out_of_this_ref() {
        let (_dir, store) = new_store();
        let (_other_dir, other) = new_store();
        add_issues(&other, 1, 2);
        store.replay(Clock::System, own_ops(&other)).unwrap();
        add_issues(&store, 3, 1);
        let report = commit_pending(&store).unwrap();
        assert_eq!((report.ops, report.committed_seq), (1, 3));
        let verified = verify(&store).unwrap();
        assert!(verified.divergence.is_none(), "this replica's ref holds its ops");
        // The other replica's ops came in without its journal: no ref here replays them.
        let missing = verified.record_divergence.unwrap();
        assert!(missing.what.contains("not in the journal's replay"), "{}", missing.what);
    }

    #[test]
    fn a_ref_that_moved_is_not_overwritten() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 2);
        commit_pending(&store).unwrap();
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        let mut pending = scan(&store, 0).unwrap();
        let (info, jsonl, seconds) = encode(author_of(&store), &mut pending.ops);
        // Expecting no ref where there is one, then a parent that is not the tip (dated later,
        // so that the commits differ from the ones already made).
        let later = seconds + 1;
        assert!(repo.commit_batch(&info, &jsonl, None, later).unwrap().is_none());
        let tip = repo.tip(&store.replica()).unwrap().unwrap();
        let other = repo.commit_batch(&info, &jsonl, Some(tip), seconds).unwrap().unwrap();
        assert!(repo.commit_batch(&info, &jsonl, Some(tip), later).unwrap().is_none());
        assert_eq!(repo.tip(&store.replica()).unwrap(), Some(other));
    }

    /// Adds issues `t-<from>`… in one transaction, during which the journal's trees are
    /// written ahead at most `max_ops` ops per commit; the trees, once written.
    fn add_issues_writing_ahead(
        store: &Store,
        from: usize,
        n: usize,
        max_ops: usize,
    ) -> TreesAhead {
        let now = jiff::Timestamp::now();
        let (ahead, _) = store
            .write("tester", Clock::System, |writer| {
                for i in from..from + n {
                    let issue = Issue::new(format!("t-{i}"), format!("issue {i}"), now);
                    crate::tracker::import_new(writer, issue, Vec::new())?;
                }
                Ok(trees_ahead_in_batches(store.dir(), writer, max_ops).unwrap())
            })
            .unwrap();
        ahead.finish().expect("the trees are written")
    }

    fn tree_ids(trees: &[(BatchInfo, gix::ObjectId, i64)]) -> Vec<gix::ObjectId> {
        trees.iter().map(|(_, tree, _)| *tree).collect()
    }

    #[test]
    fn trees_written_ahead_are_those_a_commit_after_writes_and_are_committed() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 4);
        let ahead = add_issues_writing_ahead(&store, 5, 21, 10);
        // 25 ops, 10 to a commit: three trees, one row inflated at a time into each.
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        let Pending { mut ops, .. } = scan(&store, 0).unwrap();
        let chunks = batches(&sizes_of(&ops), 10);
        let after = write_trees(&repo, author_of(&store), &mut ops, &chunks, 2).unwrap();
        assert_eq!(tree_ids(&ahead.trees), tree_ids(&after));
        assert_eq!(ahead.trees.len(), 3);

        // Written ahead 10 to a commit, used by a commit of at most 20 (which would make two).
        let report = commit_in_batches(&store, 20, Some(ahead)).unwrap();
        assert_eq!((report.ops, report.commits.len(), report.committed_seq), (25, 3, 25));
        assert_journal_is_the_stores(&store);
    }

    #[test]
    fn trees_ahead_of_a_commit_made_meanwhile_commit_nothing_twice() {
        let (_dir, store) = new_store();
        let ahead = add_issues_writing_ahead(&store, 1, 12, 10);
        // Another process committed the journal first.
        assert_eq!(commit_pending(&store).unwrap().ops, 12);
        let report = commit_in_batches(&store, 10, Some(ahead)).unwrap();
        assert_eq!((report.ops, report.recovered, report.committed_seq), (0, 0, 12));
        assert_journal_is_the_stores(&store);
    }

    #[test]
    fn trees_ahead_of_ops_journaled_since_leave_none_out() {
        let (_dir, store) = new_store();
        let ahead = add_issues_writing_ahead(&store, 1, 12, 10);
        add_issues(&store, 13, 2);
        let report = commit_in_batches(&store, 10, Some(ahead)).unwrap();
        assert_eq!((report.ops, report.committed_seq), (14, 14));
        assert_journal_is_the_stores(&store);
    }

    #[test]
    fn trees_ahead_of_a_ref_that_already_holds_them_are_not_committed_twice() {
        let (_dir, store) = new_store();
        let ahead = add_issues_writing_ahead(&store, 1, 12, 10);
        // A commit that moved the ref, then died before recording the mark.
        commit_pending(&store).unwrap();
        store.reset_journal_committed(0).unwrap();
        let report = commit_in_batches(&store, 10, Some(ahead)).unwrap();
        assert_eq!((report.ops, report.recovered, report.committed_seq), (0, 12, 12));
        // The one commit the first run made, and no second.
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        assert_eq!(repo.chain(&store.replica(), usize::MAX).unwrap().len(), 1);
        assert!(verify(&store).unwrap().ok);
    }
}
