//! Reading the journal: the batches of a ref, newest first ([`log`]), and every op of every
//! replica ([`read_all`]) for sync and rebuild.

use gix::ObjectId;
use serde::Serialize;

use super::repo::{Batch, JournalRepo};
use super::{BatchInfo, JournalError, ref_name};
use crate::op::Op;

/// One journal commit as `fleet journal log` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LogEntry {
    pub commit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The commit time (the time of the batch's last op).
    pub time: String,
    #[serde(flatten)]
    pub info: BatchInfo,
}

impl LogEntry {
    pub(super) fn new(
        id: ObjectId,
        parent: Option<ObjectId>,
        info: BatchInfo,
        seconds: i64,
    ) -> LogEntry {
        let time = jiff::Timestamp::from_second(seconds)
            .map_or_else(|_| seconds.to_string(), |t| t.to_string());
        LogEntry { commit: id.to_string(), parent: parent.map(|p| p.to_string()), time, info }
    }

    fn of(batch: Batch) -> LogEntry {
        LogEntry::new(batch.id, batch.parent, batch.info, batch.seconds)
    }
}

/// The journal's commits, newest first, at most `limit`: of `replica`'s ref, or of every
/// replica's (merged by time).
pub fn log(
    repo: &JournalRepo,
    replica: Option<&str>,
    limit: usize,
) -> Result<Vec<LogEntry>, JournalError> {
    let replicas = match replica {
        Some(replica) => vec![replica.to_string()],
        None => repo.replicas()?,
    };
    let mut entries = Vec::new();
    for replica in &replicas {
        entries.extend(repo.chain(replica, limit)?.into_iter().map(LogEntry::of));
    }
    // Newest first across replicas; ties keep each chain's own order (stable sort).
    entries.sort_by(|a, b| b.time.cmp(&a.time));
    entries.truncate(limit);
    Ok(entries)
}

/// Every op of `replica`'s ref, oldest first, each checked to be the replica's.
pub fn read_replica(repo: &JournalRepo, replica: &str) -> Result<Vec<Op>, JournalError> {
    let mut batches = repo.chain(replica, usize::MAX)?;
    batches.reverse();
    ops_of_batches(repo, replica, &batches)
}

/// The ops of `batches` (oldest first) of `replica`'s chain, each checked to be the
/// replica's own: a batch holding another replica's op is a damaged or forged journal.
pub(super) fn ops_of_batches<'b>(
    repo: &JournalRepo,
    replica: &str,
    batches: impl IntoIterator<Item = &'b Batch>,
) -> Result<Vec<Op>, JournalError> {
    let mut ops = Vec::new();
    for batch in batches {
        let batch_ops = repo.ops(replica, batch)?;
        if let Some(stray) = batch_ops.iter().find(|op| op.meta.replica != replica) {
            return Err(JournalError::Format {
                reference: ref_name(replica),
                commit: batch.id.to_string(),
                reason: format!("op {} was made by replica {}", stray.meta.id, stray.meta.replica),
            });
        }
        ops.extend(batch_ops);
    }
    Ok(ops)
}

/// Every op of every `refs/fleet/journal/*` ref: each replica's oldest first, replicas in id
/// order. Callers that apply them sort by the total order (`Store::replay` does).
pub fn read_all(repo: &JournalRepo) -> Result<Vec<Op>, JournalError> {
    let mut ops = Vec::new();
    for replica in repo.replicas()? {
        ops.extend(read_replica(repo, &replica)?);
    }
    Ok(ops)
}

/// The ops of `replica`'s batches from `tip` back to (not including) `stop`, oldest first; all
/// of them if `stop` is not on the chain.
pub(super) fn read_since(
    repo: &JournalRepo,
    replica: &str,
    tip: ObjectId,
    stop: Option<ObjectId>,
) -> Result<Vec<Op>, JournalError> {
    let mut batches = Vec::new();
    let mut next = Some(tip);
    while let Some(id) = next {
        if Some(id) == stop {
            break;
        }
        let batch = repo.batch(replica, id)?;
        next = batch.parent;
        batches.push(batch);
    }
    ops_of_batches(repo, replica, batches.iter().rev())
}
