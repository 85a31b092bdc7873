//! Committing the store's pending ops to git ([`commit_pending`]), and doing so every few
//! seconds from an async program ([`spawn_periodic`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::read::LogEntry;
use super::repo::JournalRepo;
use super::{
    BatchInfo, JournalError, MAX_BYTES_PER_COMMIT, MAX_OPS_PER_COMMIT, RepoKind, batch_format,
    ref_name,
};
use crate::op::OpMeta;
use crate::store::Store;

/// How often [`commit_pending`] retries after losing the ref to another process.
const ATTEMPTS: usize = 3;

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
        #[derive(serde::Deserialize)]
        struct Head {
            v: u32,
            meta: OpMeta,
        }
        let head: Head = serde_json::from_slice(row)?;
        Ok(PendingOp { v: head.v, meta: head.meta, row: row.to_vec() })
    }
}

/// This replica's journaled ops after the committed mark, in journal order (ops replayed from
/// other replicas are in their own refs, not this one).
pub fn pending_ops(store: &Store) -> Result<Vec<(u64, PendingOp)>, JournalError> {
    Ok(scan(store, store.journal_committed()?)?.ops)
}

fn scan(store: &Store, committed: u64) -> Result<Pending, JournalError> {
    let entries = store.journal_decoded(committed + 1, PendingOp::decode)?;
    let scanned_to = entries.last().map_or(committed, |(seq, _)| *seq);
    let ops = entries.into_iter().filter(|(_, op)| op.meta.replica == store.replica()).collect();
    Ok(Pending { ops, scanned_to })
}

/// Splits `ops` into the runs each commit carries: at most `max_ops` ops and, unless one op
/// alone is larger, [`MAX_BYTES_PER_COMMIT`] bytes of rows. Where the rows allow, the bytes
/// are spread evenly over the fewest commits, so that commits written side by side finish
/// together.
fn batches(ops: &[(u64, PendingOp)], max_ops: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = ops.iter().map(|(_, op)| op.row.len() + 1).sum();
    let fewest = total.div_ceil(MAX_BYTES_PER_COMMIT).max(1);
    let even = cut(ops, max_ops, total.div_ceil(fewest));
    // Rows do not divide evenly: when an even share leaves a remnant for one more commit, the
    // commits are filled up to the limit instead.
    if even.len() > fewest { cut(ops, max_ops, MAX_BYTES_PER_COMMIT) } else { even }
}

/// `ops` cut into runs of at most `max_ops` ops and, unless one op alone is larger,
/// `max_bytes` bytes of rows (each with its line's newline).
fn cut(ops: &[(u64, PendingOp)], max_ops: usize, max_bytes: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, (_, op)) in ops.iter().enumerate() {
        let full = at - start == max_ops || (at > start && bytes + op.row.len() + 1 > max_bytes);
        if full {
            out.push(start..at);
            (start, bytes) = (at, 0);
        }
        bytes += op.row.len() + 1;
    }
    if start < ops.len() {
        out.push(start..ops.len());
    }
    out
}

/// Commits the ops this replica journaled since the last commit to its ref (see the module
/// docs for the format), at most [`MAX_OPS_PER_COMMIT`] per commit, and records how far the
/// journal is committed. Finds `.beads/journal.git` or the enclosing repository, creating the
/// former if there is neither. With nothing pending it writes nothing.
pub fn commit_pending(store: &Store) -> Result<CommitReport, JournalError> {
    commit_in_batches(store, MAX_OPS_PER_COMMIT)
}

/// [`commit_pending`] with at most `max_ops` ops per commit.
fn commit_in_batches(store: &Store, max_ops: usize) -> Result<CommitReport, JournalError> {
    let repo = JournalRepo::find_or_create(store.dir())?;
    for _ in 0..ATTEMPTS {
        if let Some(report) = try_commit(store, &repo, max_ops)? {
            return Ok(report);
        }
    }
    Err(JournalError::Contended {
        reference: ref_name(store.replica()),
        repo: repo.git_dir().to_path_buf(),
    })
}

/// One attempt; `None` if another process moved the ref meanwhile.
fn try_commit(
    store: &Store,
    repo: &JournalRepo,
    max_ops: usize,
) -> Result<Option<CommitReport>, JournalError> {
    let replica = store.replica();
    let mut tip = repo.tip(replica)?;
    let committed = store.journal_committed()?;
    let Pending { mut ops, scanned_to } = scan(store, committed)?;
    let recovered = skip_committed(repo, replica, tip, &mut ops)?;
    if let Some(seq) = recovered.last_seq {
        store.record_journal_committed(seq)?;
    }
    let mut report = CommitReport {
        repo: repo.git_dir().to_path_buf(),
        repo_kind: repo.kind,
        reference: ref_name(replica),
        ops: 0,
        commits: Vec::new(),
        recovered: recovered.count,
        committed_seq: 0,
    };
    let chunks = batches(&ops, max_ops);
    let trees = write_trees(repo, replica, &mut ops, &chunks)?;
    for (n, (info, tree, seconds)) in trees.into_iter().enumerate() {
        let Some(id) = repo.commit_tree(&info, tree, tip, seconds)? else {
            return Ok(None);
        };
        let last = n + 1 == chunks.len();
        store.record_journal_committed(if last { scanned_to } else { info.last_seq })?;
        report.ops += info.count;
        report.commits.push(LogEntry::new(id, tip, info, seconds));
        tip = Some(id);
    }
    // Ops of other replicas were passed over: move the mark past them, but an idle queue
    // (nothing scanned) costs no write transaction.
    if chunks.is_empty() && scanned_to > committed {
        store.record_journal_committed(scanned_to)?;
    }
    report.committed_seq = store.journal_committed()?;
    Ok(Some(report))
}

/// Writes the tree of each chunk of `ops` (its rows move into the tree's `ops.jsonl`), with
/// the batch description and commit time of each. A journal of more than one chunk (a large
/// import's) is compressed into the object store on every core, a chunk per thread; a tree no
/// commit ends up naming is an unreachable object, which git's garbage collection removes.
fn write_trees(
    repo: &JournalRepo,
    replica: &str,
    ops: &mut [(u64, PendingOp)],
    chunks: &[std::ops::Range<usize>],
) -> Result<Vec<(BatchInfo, gix::ObjectId, i64)>, JournalError> {
    let write_one =
        |repo: &JournalRepo, chunk: &mut [(u64, PendingOp)]| -> Result<_, JournalError> {
            let (info, jsonl, seconds) = encode(replica, chunk);
            let tree = repo.write_tree(&info, &jsonl)?;
            Ok((info, tree, seconds))
        };
    let mut runs = split_into(ops, chunks);
    let cores = match runs.len() {
        0 | 1 => 1,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8),
    };
    if cores == 1 {
        return runs.iter_mut().map(|run| write_one(repo, run)).collect();
    }
    let (git_dir, kind) = (repo.git_dir(), repo.kind);
    let mut written = Vec::with_capacity(runs.len());
    for wave in runs.chunks_mut(cores) {
        let results: Vec<Result<_, JournalError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = wave
                .iter_mut()
                .map(|run| {
                    // A gix repository is not shared between threads: each opens its own.
                    scope.spawn(move || write_one(&JournalRepo::open_again(git_dir, kind)?, run))
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for result in results {
            written.push(result?);
        }
    }
    Ok(written)
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
fn encode(replica: &str, chunk: &mut [(u64, PendingOp)]) -> (BatchInfo, Vec<u8>, i64) {
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
        replica: replica.to_string(),
        count: chunk.len(),
        first_seq: *first_seq,
        last_seq: *last_seq,
        first_op: first.meta.id,
        last_op: last.meta.id,
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
        assert_eq!(read_replica(&repo, store.replica()).unwrap(), own_ops(&store));
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
        let tip = repo.tip(store.replica()).unwrap();
        let mut pending = scan(&store, store.journal_committed().unwrap()).unwrap();
        let (info, jsonl, seconds) = encode(store.replica(), &mut pending.ops);
        repo.commit_batch(&info, &jsonl, tip, seconds).unwrap().unwrap();
        assert_eq!(store.journal_committed().unwrap(), 3);

        let report = commit_pending(&store).unwrap();
        assert_eq!((report.ops, report.recovered, report.committed_seq), (0, 2, 5));
        assert!(report.commits.is_empty());
        assert_eq!(repo.chain(store.replica(), usize::MAX).unwrap().len(), 2);
        assert_eq!(read_replica(&repo, store.replica()).unwrap(), own_ops(&store));
        assert!(verify(&store).unwrap().ok);
    }

    /// Pending ops whose rows have these sizes (their metas do not matter here).
    fn rows_of(sizes: &[usize]) -> Vec<(u64, PendingOp)> {
        let meta = OpMeta {
            id: ulid::Ulid::nil(),
            actor: "a".into(),
            replica: "r".into(),
            stamp: crate::op::Hlc::ZERO,
            at: jiff::Timestamp::UNIX_EPOCH,
        };
        // Zeroed rows are never touched, so their megabytes cost no memory.
        let op = |size: usize| PendingOp { v: 1, meta: meta.clone(), row: vec![0u8; size] };
        sizes.iter().enumerate().map(|(at, size)| (at as u64 + 1, op(*size))).collect()
    }

    /// The runs `batches` cuts rows of these sizes into: they cover the rows in order, and
    /// each holds at most the limit in bytes, each row with its newline (unless one row alone
    /// is larger).
    fn checked_batches(sizes: &[usize]) -> Vec<std::ops::Range<usize>> {
        let ops = rows_of(sizes);
        let chunks = batches(&ops, MAX_OPS_PER_COMMIT);
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
        let report = commit_in_batches(&store, 10).unwrap();
        let counts: Vec<usize> = report.commits.iter().map(|c| c.info.count).collect();
        assert_eq!(counts, [10, 10, 5]);
        assert_eq!(report.commits[2].info.first_seq, 21);
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        assert_eq!(read_replica(&repo, store.replica()).unwrap(), own_ops(&store));
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
        assert!(verify(&store).unwrap().ok);
    }

    #[test]
    fn a_ref_that_moved_is_not_overwritten() {
        let (_dir, store) = new_store();
        add_issues(&store, 1, 2);
        commit_pending(&store).unwrap();
        let repo = JournalRepo::find(store.dir()).unwrap().unwrap();
        let mut pending = scan(&store, 0).unwrap();
        let (info, jsonl, seconds) = encode(store.replica(), &mut pending.ops);
        // Expecting no ref where there is one, then a parent that is not the tip (dated later,
        // so that the commits differ from the ones already made).
        let later = seconds + 1;
        assert!(repo.commit_batch(&info, &jsonl, None, later).unwrap().is_none());
        let tip = repo.tip(store.replica()).unwrap().unwrap();
        let other = repo.commit_batch(&info, &jsonl, Some(tip), seconds).unwrap().unwrap();
        assert!(repo.commit_batch(&info, &jsonl, Some(tip), later).unwrap().is_none());
        assert_eq!(repo.tip(store.replica()).unwrap(), Some(other));
    }
}
