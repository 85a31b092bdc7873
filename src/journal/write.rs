//! Committing the store's pending ops to git ([`commit_pending`]), and doing so every few
//! seconds from an async program ([`spawn_periodic`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::read::LogEntry;
use super::repo::JournalRepo;
use super::{BatchInfo, FORMAT_VERSION, JournalError, MAX_OPS_PER_COMMIT, RepoKind, ref_name};
use crate::op::Op;
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
    pub ops: Vec<(u64, Op)>,
    pub scanned_to: u64,
}

/// This replica's journaled ops after the committed mark, in journal order (ops replayed from
/// other replicas are in their own refs, not this one).
pub fn pending_ops(store: &Store) -> Result<Vec<(u64, Op)>, JournalError> {
    Ok(scan(store, store.journal_committed()?)?.ops)
}

fn scan(store: &Store, committed: u64) -> Result<Pending, JournalError> {
    let entries = store.journal(committed + 1)?;
    let scanned_to = entries.last().map_or(committed, |(seq, _)| *seq);
    let ops = entries.into_iter().filter(|(_, op)| op.meta.replica == store.replica()).collect();
    Ok(Pending { ops, scanned_to })
}

/// Commits the ops this replica journaled since the last commit to its ref (see the module
/// docs for the format), at most [`MAX_OPS_PER_COMMIT`] per commit, and records how far the
/// journal is committed. Finds `.beads/journal.git` or the enclosing repository, creating the
/// former if there is neither. With nothing pending it writes nothing.
pub fn commit_pending(store: &Store) -> Result<CommitReport, JournalError> {
    let repo = JournalRepo::find_or_create(store.dir())?;
    for _ in 0..ATTEMPTS {
        if let Some(report) = try_commit(store, &repo)? {
            return Ok(report);
        }
    }
    Err(JournalError::Contended {
        reference: ref_name(store.replica()),
        repo: repo.git_dir().to_path_buf(),
    })
}

/// One attempt; `None` if another process moved the ref meanwhile.
fn try_commit(store: &Store, repo: &JournalRepo) -> Result<Option<CommitReport>, JournalError> {
    let replica = store.replica();
    let mut tip = repo.tip(replica)?;
    let Pending { mut ops, scanned_to } = scan(store, store.journal_committed()?)?;
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
    let chunks: Vec<&[(u64, Op)]> = ops.chunks(MAX_OPS_PER_COMMIT).collect();
    for (n, chunk) in chunks.iter().enumerate() {
        let (info, jsonl, seconds) = encode(replica, chunk);
        let Some(id) = repo.commit_batch(&info, &jsonl, tip, seconds)? else {
            return Ok(None);
        };
        let last = n + 1 == chunks.len();
        store.record_journal_committed(if last { scanned_to } else { info.last_seq })?;
        report.ops += info.count;
        report.commits.push(LogEntry::new(id, tip, info, seconds));
        tip = Some(id);
    }
    if chunks.is_empty() {
        store.record_journal_committed(scanned_to)?;
    }
    report.committed_seq = store.journal_committed()?;
    Ok(Some(report))
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
    ops: &mut Vec<(u64, Op)>,
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

/// The batch description, `ops.jsonl` and commit time of a non-empty run of ops.
fn encode(replica: &str, chunk: &[(u64, Op)]) -> (BatchInfo, Vec<u8>, i64) {
    let (first_seq, first) = &chunk[0];
    let (last_seq, last) = &chunk[chunk.len() - 1];
    let mut jsonl = Vec::with_capacity(chunk.len() * 256);
    for (_, op) in chunk {
        serde_json::to_writer(&mut jsonl, op).expect("an op serialises");
        jsonl.push(b'\n');
    }
    let info = BatchInfo {
        format: FORMAT_VERSION,
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
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => commit_in_background(&store).await,
                _ = &mut stopped => break,
            }
        }
        commit_in_background(&store).await;
    });
    Periodic { stop, task }
}

impl Periodic {
    /// Commits what is pending and stops the task.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

async fn commit_in_background(store: &Arc<Store>) {
    let store = Arc::clone(store);
    match tokio::task::spawn_blocking(move || commit_pending(&store)).await {
        Ok(Ok(report)) if report.ops > 0 => {
            tracing::debug!(ops = report.ops, reference = %report.reference, "journal committed");
        }
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "committing the journal to git failed"),
        Err(error) => tracing::warn!(%error, "the journal commit task failed"),
    }
}
