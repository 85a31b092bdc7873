//! Merging ops made on other machines so that every store ends in the same state: the state of
//! applying the union of all ops in the total order ([`crate::op::OrderKey`]).
//!
//! [`Store::replay`] applies a batch in the total order *after* whatever the store holds. That
//! is the total-order state only if the batch sorts after every op the store has seen. Two
//! machines working apart break that: each applied its own ops first, and the other's ops that
//! arrive later often sort before them (an earlier claim, an earlier title edit). So
//! [`Store::merge`] checks the batch against the greatest order key the store has seen
//! ([`super::meta::ORDER_HIGH`]):
//!
//! - **in order** (the batch sorts after everything seen): the ops are applied as a replay;
//! - **out of order**: the store's state is made again, in one write transaction, from the
//!   union of every op it knows — its journal, the ops it set aside as refused or changing
//!   nothing ([`super::tables::SIDELINED`]), and the batch — applied in the total order. The
//!   journal keeps its entries and sequences (this replica's ops in it are what the git
//!   journal commits); ops of the batch that now take effect are appended to it, so watchers
//!   of the journal (the supervisor's revocation check) see them.
//!
//! Either way the outcome is a function of the set of ops alone, so stores that merged the same
//! ops export the same queue whatever order the ops arrived in. What the rules do with
//! conflicting ops (`super::apply`): field edits are last-writer-wins in the total order; the
//! earliest claim wins and a later one is refused; a close wins over a concurrent status
//! change; comments and labels accumulate; a delete removes the issue and later ops on it are
//! refused; an edge that would close a cycle is refused.
//!
//! A merge re-applying everything reports what changed for ops the store had already applied
//! ([`Overturned`]): above all this replica's claims that lost to an earlier claim made
//! elsewhere ([`Merged::lost_claims`]).

use std::collections::{BTreeMap, HashMap};

use redb::{ReadableTable, ReadableTableMetadata, Table, WriteTransaction};
use serde::Serialize;

use super::apply::{NOT_JOURNALED, Outcome, Replayed, encode_op};
use super::tables::{
    BIRTHS, BLOCKED, COMMENTS, DEPS, HOLDS, ISSUES, JOURNAL, LABELS, META, OP_IDS, ORDER, ORPHANS,
    RDEPS, READY, RENAMED, SIDELINED, UNDO,
};
use super::undo::{Rewound, UNDO_KEEP, order_key_bytes};
use super::{Orphaned, Renamed, Store, StoreError, Writer, meta};
use crate::op::{Op, OpKind, OrderKey};
use crate::time::Clock;

/// What [`Store::merge`] did.
#[derive(Debug, Default)]
pub struct Merged {
    /// Each op of the batch not seen before, in the total order, with what became of it.
    pub replayed: Vec<Replayed>,
    /// Ops of the batch this store had already seen: order key, op name, issue.
    pub duplicates: Vec<(OrderKey, &'static str, String)>,
    /// Whether the batch arrived out of order, so ops already applied were applied again.
    pub resequenced: bool,
    /// When it did: how many of the store's ops the undo log took back (`super::undo`), or
    /// `None` when the state was made again from every op.
    pub rewound: Option<usize>,
    /// Ops this store had applied that, in their place in the total order, were refused or
    /// changed nothing, and earlier refused ops that now took effect.
    pub overturned: Vec<Overturned>,
    /// The issues this replica had claimed and lost to an earlier claim made elsewhere.
    pub lost_claims: Vec<String>,
    /// Issues whose close kept a concurrent status change from reopening them.
    pub closes_kept: Vec<String>,
    /// Creates given another id than they asked for, because an issue made on another machine
    /// had it first (`super::births`); each reported by the merge that first finds it.
    pub renamed: Vec<Renamed>,
    /// Edges of new issues left out because their target was deleted concurrently (the issues
    /// are kept); each reported by the merge that first finds it.
    pub orphaned: Vec<Orphaned>,
}

/// An op whose effect a merge changed.
#[derive(Debug, Clone, Serialize)]
pub struct Overturned {
    pub op: String,
    pub kind: &'static str,
    pub issue: String,
    pub replica: String,
    pub actor: String,
    /// `refused: <reason>`, `no longer changes anything`, or `now applied`.
    pub now: String,
}

/// Where an op of a re-application came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The journal, at this sequence; in effect before unless also sidelined.
    Journal { seq: u64, was_in_effect: bool },
    /// Sidelined, not in the journal.
    Sidelined,
    /// The batch being merged.
    Batch,
}

impl Store {
    /// Merges ops made on other machines (see the module docs) and records, in the same
    /// transaction, `marks`: per replica, the last journal commit whose ops are merged
    /// ([`Store::sync_marks`]). Ops this store has seen are skipped. Only a failure of the
    /// store itself is an `Err`, and then nothing is written.
    pub fn merge(
        &self,
        clock: Clock,
        ops: Vec<Op>,
        marks: &[(String, String)],
    ) -> Result<Merged, StoreError> {
        self.merge_as(clock, ops, marks, How::Merge).map(|merged| merged.unwrap_or_default())
    }

    /// Merges ops of this store's own replica that it lost (a restored backup: the remote's
    /// journal of this replica goes on past what the store has) and marks them committed to
    /// git, in one transaction. `None`, with nothing written, when the store has own ops not
    /// yet committed: made after the backup, they fork the replica's history, and the store
    /// needs a replica id of its own (`crate::journal`, "Identity").
    pub fn merge_own_lost(&self, clock: Clock, ops: Vec<Op>) -> Result<Option<Merged>, StoreError> {
        self.merge_as(clock, ops, &[], How::OwnLost)
    }

    /// Makes the state again from every op the store knows, in the total order: after the
    /// order keys of some ops changed (their replica did, `Store::take_new_replica`).
    pub fn resequence(&self, clock: Clock) -> Result<Merged, StoreError> {
        self.merge_as(clock, Vec::new(), &[], How::Resequence).map(|m| m.unwrap_or_default())
    }

    fn merge_as(
        &self,
        clock: Clock,
        ops: Vec<Op>,
        marks: &[(String, String)],
        how: How,
    ) -> Result<Option<Merged>, StoreError> {
        self.writing(|| self.merge_unnamed(clock, ops, marks, how))
    }

    /// The ids of the ops this store knows but which had no effect here (refused, or changing
    /// nothing): a losing claim, an edit of an issue a delete won over.
    pub fn sidelined_ops(&self) -> Result<std::collections::HashSet<ulid::Ulid>, StoreError> {
        let txn = self.begin_read()?;
        let mut ids = std::collections::HashSet::new();
        // A store that has had no merge yet has no such table: nothing was sidelined.
        let table = match txn.open_table(SIDELINED) {
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(ids),
            table => table?,
        };
        for entry in table.iter()? {
            let (id, _) = entry?;
            ids.insert(ulid::Ulid(id.value()));
        }
        Ok(ids)
    }

    /// Per replica, the last journal commit (hex) whose ops a merge recorded as merged.
    pub fn sync_marks(&self) -> Result<BTreeMap<String, String>, StoreError> {
        let reader = self.read()?;
        let mut marks = BTreeMap::new();
        for entry in reader.tables.meta.range(meta::SYNC_SEEN..)? {
            let (key, value) = entry?;
            let Some(replica) = key.value().strip_prefix(meta::SYNC_SEEN) else { break };
            marks.insert(replica.to_string(), String::from_utf8_lossy(value.value()).into_owned());
        }
        Ok(marks)
    }

    fn merge_unnamed(
        &self,
        clock: Clock,
        ops: Vec<Op>,
        marks: &[(String, String)],
        how: How,
    ) -> Result<Option<Merged>, StoreError> {
        let started = std::time::Instant::now();
        let lap = |what: &str| tracing::debug!(ms = started.elapsed().as_secs_f64() * 1e3, what);
        let txn = self.begin_write()?;
        lap("merge: write transaction begun");
        ensure_op_index(&txn)?;
        let replica = super::replica_in(&txn, &self.replica)?;
        if how == How::OwnLost && own_uncommitted(&txn, &replica)? {
            return Ok(None);
        }
        let (batch, duplicates) = unseen(&txn, ops)?;
        lap("merge: batch sorted and known ops left out");
        let in_order = match (batch.first(), known_high(&txn)?) {
            _ if how == How::Resequence => false,
            (None, _) => true,
            (Some(_), Known::Unknown) => false,
            (Some(_), Known::Empty) => true,
            (Some(first), Known::Key(high)) => first.order_key() > high,
        };
        let actor = self.replica.clone();
        let mut merged = if in_order {
            let mut writer = Writer::begin(&txn, self, &actor, clock)?;
            let merged = writer.merge_in_order(batch)?;
            writer.set_sync_marks(marks)?;
            writer.finish()?;
            merged
        } else {
            let reported = Reported::read(&txn)?;
            let mut merged = match self.merge_by_rewinding(&txn, &actor, clock, &batch)? {
                Some(merged) => merged,
                None => self.merge_by_reapplying(&txn, &actor, clock, batch)?,
            };
            lap("merge: applied out of order");
            reported.keep_new(&mut merged);
            let mut writer = Writer::begin(&txn, self, &actor, clock)?;
            writer.set_sync_marks(marks)?;
            writer.finish()?;
            merged
        };
        merged.duplicates = duplicates;
        if how == How::OwnLost {
            mark_all_committed(&txn)?;
        }
        lap("merge: ready to commit");
        txn.commit()?;
        lap("merge: committed");
        Ok(Some(merged))
    }
}

impl Store {
    /// A merge out of order by the undo log (`super::undo`): the ops from the batch's first
    /// key on are undone and applied again with the batch, in the total order. `None`, with
    /// nothing written, when the log cannot take the store back that far.
    fn merge_by_rewinding(
        &self,
        txn: &WriteTransaction,
        actor: &str,
        clock: Clock,
        batch: &[Op],
    ) -> Result<Option<Merged>, StoreError> {
        let Some(from) = batch.first().map(Op::order_key) else { return Ok(None) };
        let mut writer = Writer::begin(txn, self, actor, clock)?;
        writer.deferred_seeds.get_or_insert_with(Default::default);
        let Some(rewound) = writer.rewind(&from)? else { return Ok(None) };
        let count = rewound.len();
        let known = writer.rewound_ops(rewound)?;
        let mut merged = writer.reapply_all(known, batch.to_vec(), Record::Every)?;
        writer.finish()?;
        merged.rewound = Some(count);
        Ok(Some(merged))
    }

    /// A merge out of order that makes the state again from every op the store knows and the
    /// batch, recording undo entries for the newest [`UNDO_KEEP`] of them.
    fn merge_by_reapplying(
        &self,
        txn: &WriteTransaction,
        actor: &str,
        clock: Clock,
        batch: Vec<Op>,
    ) -> Result<Merged, StoreError> {
        let known = known_ops(txn)?;
        wipe_state(txn)?;
        let mut writer = Writer::begin(txn, self, actor, clock)?;
        let all = known.len() + batch.len();
        let newest = all.saturating_sub(usize::try_from(UNDO_KEEP).unwrap_or(usize::MAX));
        let merged = writer.reapply_all(known, batch, Record::From(newest))?;
        writer.finish()?;
        Ok(merged)
    }
}

/// What a merge is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Ops of other replicas.
    Merge,
    /// This replica's own ops the store lost ([`Store::merge_own_lost`]).
    OwnLost,
    /// Nothing new: the state made again from every op ([`Store::resequence`]).
    Resequence,
}

/// Whether the journal holds an op of `replica` past the mark of ops committed to git.
fn own_uncommitted(txn: &WriteTransaction, replica: &str) -> Result<bool, StoreError> {
    #[derive(serde::Deserialize)]
    struct ReplicaOnly {
        meta: ReplicaOf,
    }
    #[derive(serde::Deserialize)]
    struct ReplicaOf {
        replica: String,
    }
    let committed = meta::counter_in(&txn.open_table(META)?, meta::JOURNAL_COMMITTED)?;
    for entry in txn.open_table(JOURNAL)?.range(committed + 1..)? {
        let (_, row) = entry?;
        let op = super::journal_row::decode::<ReplicaOnly>(row.value())
            .map_err(|e| StoreError::Corrupt(format!("journal entry: {e}")))?;
        if op.meta.replica == replica {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Moves the mark of this replica's ops committed to git to the journal's end.
fn mark_all_committed(txn: &WriteTransaction) -> Result<(), StoreError> {
    let mut meta_table = txn.open_table(META)?;
    let head = meta::counter_in(&meta_table, meta::JOURNAL_SEQ)?;
    meta_table.insert(meta::JOURNAL_COMMITTED, head.to_be_bytes().as_slice())?;
    Ok(())
}

/// Fills the op-id index of a store made before it existed (as the first writer would).
fn ensure_op_index(txn: &WriteTransaction) -> Result<(), StoreError> {
    let mut meta_table = txn.open_table(META)?;
    if meta_table.get(meta::OP_IDS_COMPLETE)?.is_some() {
        return Ok(());
    }
    super::index_journal(&txn.open_table(JOURNAL)?, &mut txn.open_table(OP_IDS)?)?;
    meta_table.insert(meta::OP_IDS_COMPLETE, [1u8].as_slice())?;
    Ok(())
}

/// The ops of `ops` this store has not seen (by the op-id index, and once each), in the total
/// order; and how many it had seen.
fn unseen(txn: &WriteTransaction, mut ops: Vec<Op>) -> Result<(Vec<Op>, Duplicates), StoreError> {
    let op_ids = txn.open_table(OP_IDS)?;
    ops.sort_by_cached_key(Op::order_key);
    let mut fresh: Vec<Op> = Vec::with_capacity(ops.len());
    let mut seen = Vec::new();
    for op in ops {
        let again = fresh.last().is_some_and(|last| last.meta.id == op.meta.id);
        if again || op_ids.get(op.meta.id.0)?.is_some() {
            seen.push((op.order_key(), op.kind.name(), op.kind.subject().to_string()));
        } else {
            fresh.push(op);
        }
    }
    Ok((fresh, seen))
}

type Duplicates = Vec<(OrderKey, &'static str, String)>;

enum Known {
    /// The store has seen no op.
    Empty,
    Key(OrderKey),
    /// A store written before the mark existed: merge by re-applying.
    Unknown,
}

fn known_high(txn: &WriteTransaction) -> Result<Known, StoreError> {
    let meta_table = txn.open_table(META)?;
    if let Some(bytes) = meta_table.get(meta::ORDER_HIGH)? {
        return Ok(serde_json::from_slice(bytes.value()).map_or(Known::Unknown, Known::Key));
    }
    let journal = txn.open_table(JOURNAL)?;
    let sidelined = txn.open_table(SIDELINED)?;
    Ok(if journal.is_empty()? && sidelined.is_empty()? { Known::Empty } else { Known::Unknown })
}

/// The greatest order key among the journal and the sidelined ops (for a store that does not
/// record it yet). Reads only the ops' meta.
pub(super) fn highest_key(
    journal: &Table<'_, u64, &'static [u8]>,
    sidelined: &Table<'_, u128, &'static [u8]>,
) -> Result<Option<OrderKey>, StoreError> {
    #[derive(serde::Deserialize)]
    struct MetaOnly {
        meta: crate::op::OpMeta,
    }
    let key = |bytes: &[u8]| {
        super::journal_row::decode::<MetaOnly>(bytes).ok().map(|m| OrderKey {
            stamp: m.meta.stamp,
            replica: m.meta.replica,
            id: m.meta.id,
        })
    };
    let mut high = None;
    for entry in journal.iter()? {
        high = high.max(key(entry?.1.value()));
    }
    for entry in sidelined.iter()? {
        high = high.max(key(entry?.1.value()));
    }
    Ok(high)
}

/// Every op the store knows, with where it is: the journal (in effect unless also sidelined)
/// and the sidelined ops.
fn known_ops(txn: &WriteTransaction) -> Result<Vec<(Op, Source)>, StoreError> {
    let decode = |what: String, bytes: &[u8]| {
        super::journal_row::decode::<Op>(bytes)
            .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
    };
    let mut sidelined = HashMap::new();
    for entry in txn.open_table(SIDELINED)?.iter()? {
        let (id, row) = entry?;
        sidelined.insert(id.value(), decode(format!("sidelined op {}", id.value()), row.value())?);
    }
    let mut known = Vec::new();
    for entry in txn.open_table(JOURNAL)?.iter()? {
        let (seq, row) = entry?;
        let op = decode(format!("journal entry {}", seq.value()), row.value())?;
        let was_in_effect = sidelined.remove(&op.meta.id.0).is_none();
        known.push((op, Source::Journal { seq: seq.value(), was_in_effect }));
    }
    known.extend(sidelined.into_values().map(|op| (op, Source::Sidelined)));
    Ok(known)
}

/// Empties every table of queue state (and the op index and sidelined ops, which the
/// re-application writes again), and the meta counters ops derive; keeps the journal, the
/// clock, the change counter and the settings.
fn wipe_state(txn: &WriteTransaction) -> Result<(), StoreError> {
    txn.delete_table(ISSUES)?;
    txn.delete_table(DEPS)?;
    txn.delete_table(RDEPS)?;
    txn.delete_table(COMMENTS)?;
    txn.delete_table(LABELS)?;
    txn.delete_table(READY)?;
    txn.delete_table(BLOCKED)?;
    txn.delete_table(ORDER)?;
    txn.delete_table(OP_IDS)?;
    txn.delete_table(SIDELINED)?;
    txn.delete_table(HOLDS)?;
    txn.delete_table(BIRTHS)?;
    txn.delete_table(RENAMED)?;
    txn.delete_table(ORPHANS)?;
    txn.delete_table(super::coord::COORD)?;
    txn.delete_table(UNDO)?;
    let mut meta_table = txn.open_table(META)?;
    meta_table.retain(|key, _| {
        !(key == meta::COMMENT_SEQ
            || key == meta::TOP_LEVEL_COUNT
            || key.starts_with(meta::CHILD_COUNTER)
            || key.starts_with(meta::ORIGIN)
            || key.starts_with(meta::DELETED)
            || key.starts_with(meta::STATUS_COUNT))
    })?;
    Ok(())
}

/// The renames and orphans a store held before a re-application: those it finds again were
/// reported by an earlier merge.
struct Reported {
    renamed: std::collections::HashSet<(u128, String)>,
    orphaned: std::collections::HashSet<(String, String)>,
}

impl Reported {
    fn read(txn: &WriteTransaction) -> Result<Reported, StoreError> {
        let mut reported = Reported { renamed: Default::default(), orphaned: Default::default() };
        for entry in txn.open_table(RENAMED)?.iter()? {
            let (key, _) = entry?;
            let (birth, asked) = key.value();
            reported.renamed.insert((birth, asked.to_string()));
        }
        for entry in txn.open_table(ORPHANS)?.iter()? {
            let (key, _) = entry?;
            let (issue, target) = key.value();
            reported.orphaned.insert((issue.to_string(), target.to_string()));
        }
        Ok(reported)
    }

    /// Leaves in `merged` only the renames and orphans not reported before.
    fn keep_new(&self, merged: &mut Merged) {
        merged.renamed.retain(|r| {
            let birth = r.op.parse::<ulid::Ulid>().map_or(0, |id| id.0);
            !self.renamed.contains(&(birth, r.asked.clone()))
        });
        merged.orphaned.retain(|o| !self.orphaned.contains(&(o.issue.clone(), o.target.clone())));
    }
}

/// Which ops a re-application records undo entries for.
#[derive(Debug, Clone, Copy)]
enum Record {
    /// Every op (after a rewind: the log already covers the ops before them).
    Every,
    /// The ops from this position of the total order on, the log starting there (after a wipe).
    From(usize),
}

/// The effect of one op: applied (with readiness seeds), unchanged, or refused.
enum Effect {
    Applied(std::collections::BTreeSet<String>),
    Unchanged,
    Refused(StoreError),
}

impl Writer<'_> {
    /// A batch that sorts after everything seen: a replay.
    fn merge_in_order(&mut self, batch: Vec<Op>) -> Result<Merged, StoreError> {
        let mut merged = Merged::default();
        for op in batch {
            let key = op.order_key();
            let outcome = self.apply_op(&op, super::Origin::Remote)?;
            let subject = op.kind.subject().to_string();
            merged.replayed.push(Replayed { key, kind: op.kind.name(), subject, outcome });
        }
        self.take_reports(&mut merged);
        Ok(merged)
    }

    /// Moves what the ops applied have to report into `merged`.
    fn take_reports(&mut self, merged: &mut Merged) {
        merged.closes_kept = std::mem::take(&mut self.closes_kept);
        merged.renamed = std::mem::take(&mut self.renames);
        merged.orphaned = std::mem::take(&mut self.orphans);
    }

    /// Applies `known` (ops this store had applied, taken back) and `batch` in the total order,
    /// on wiped tables or on the state a rewind left, recording undo entries as `record` says.
    fn reapply_all(
        &mut self,
        known: Vec<(Op, Source)>,
        batch: Vec<Op>,
        record: Record,
    ) -> Result<Merged, StoreError> {
        // A close that keeps a status change from reopening an issue is reported once: by the
        // merge that brings the later of the two (the change, or the close).
        let closed_by_batch: std::collections::HashSet<String> = batch
            .iter()
            .filter(|op| matches!(op.kind, OpKind::Close { .. }))
            .map(|op| op.kind.subject().to_string())
            .collect();
        let mut all = known;
        all.extend(batch.into_iter().map(|op| (op, Source::Batch)));
        all.sort_by_cached_key(|(op, _)| op.order_key());
        self.deferred_seeds.get_or_insert_with(Default::default);
        // Every op here has had its first application; a bulk op's refused entries are skipped.
        self.strict = false;
        let mut merged = Merged { resequenced: true, ..Merged::default() };
        let record_from = match record {
            Record::Every => 0,
            Record::From(position) => {
                // The log covers every op from the first one recorded on.
                let floor = match all.get(position) {
                    Some((first, _)) if position > 0 => order_key_bytes(&first.order_key()),
                    _ => Vec::new(),
                };
                self.tables.meta.insert(meta::UNDO_FLOOR, floor.as_slice())?;
                position
            }
        };
        for (position, (op, source)) in all.into_iter().enumerate() {
            if source == Source::Batch {
                self.hlc = self.hlc.receive(op.meta.stamp, super::apply::millis(self.clock.now()));
                self.clock_received = true;
            }
            self.note_order(&op);
            let closes_kept_before = self.closes_kept.len();
            let recorded = position >= record_from;
            let bulk = matches!(op.kind, OpKind::Bulk { .. });
            if recorded && !bulk {
                self.start_recording();
            }
            let effect = match self.mutate(&op) {
                Ok(Some(seeds)) => Effect::Applied(seeds),
                Ok(None) => Effect::Unchanged,
                Err(error) if error.is_refusal() => Effect::Refused(error),
                Err(error) => return Err(error),
            };
            if recorded {
                if matches!(effect, Effect::Refused(_)) {
                    self.discard_recording();
                }
                self.write_entry(&op.order_key(), op.meta.id, bulk)?;
            }
            if source != Source::Batch && !closed_by_batch.contains(op.kind.subject()) {
                self.closes_kept.truncate(closes_kept_before);
            }
            self.settle(op, source, effect, &mut merged)?;
        }
        self.take_reports(&mut merged);
        Ok(merged)
    }

    /// Records where `op` stands after its re-application, and reports it.
    fn settle(
        &mut self,
        op: Op,
        source: Source,
        effect: Effect,
        merged: &mut Merged,
    ) -> Result<(), StoreError> {
        let in_effect = matches!(effect, Effect::Applied(_));
        let was_in_effect = matches!(source, Source::Journal { was_in_effect: true, .. });
        if in_effect != was_in_effect && source != Source::Batch {
            merged.overturned.push(self.overturned(&op, &effect));
        }
        if let Effect::Refused(StoreError::AlreadyClaimed { id, .. }) = &effect
            && was_in_effect
            && op.meta.replica == self.replica
            && matches!(op.kind, OpKind::Claim { .. })
        {
            merged.lost_claims.push(id.clone());
        }
        if let Effect::Applied(seeds) = &effect
            && let Some(pending) = &mut self.deferred_seeds
        {
            pending.extend(seeds.iter().cloned());
        }
        let key = op.order_key();
        let (kind, subject) = (op.kind.name(), op.kind.subject().to_string());
        match source {
            Source::Journal { seq, .. } => {
                self.op_ids.insert(op.meta.id.0, seq)?;
                if in_effect {
                    self.sidelined.remove(op.meta.id.0)?;
                } else {
                    self.sidelined.insert(op.meta.id.0, encode_op(&op).as_slice())?;
                }
            }
            Source::Sidelined | Source::Batch if in_effect => {
                self.sidelined.remove(op.meta.id.0)?;
                self.journal(op)?;
            }
            Source::Sidelined | Source::Batch => {
                self.op_ids.insert(op.meta.id.0, NOT_JOURNALED)?;
                self.sidelined.insert(op.meta.id.0, encode_op(&op).as_slice())?;
            }
        }
        if source == Source::Batch {
            let outcome = match effect {
                Effect::Applied(_) => Outcome::Applied,
                Effect::Unchanged => Outcome::Unchanged,
                Effect::Refused(error) => Outcome::Rejected(error),
            };
            merged.replayed.push(Replayed { key, kind, subject, outcome });
        }
        Ok(())
    }

    fn overturned(&self, op: &Op, effect: &Effect) -> Overturned {
        Overturned {
            op: op.meta.id.to_string(),
            kind: op.kind.name(),
            issue: op.kind.subject().to_string(),
            replica: op.meta.replica.clone(),
            actor: op.meta.actor.clone(),
            now: match effect {
                Effect::Applied(_) => "now applied".to_string(),
                Effect::Unchanged => "no longer changes anything".to_string(),
                Effect::Refused(error) => format!("refused: {error}"),
            },
        }
    }

    /// The ops a rewind took back, read from the journal or the sidelined ops, with where each
    /// stood.
    fn rewound_ops(&mut self, rewound: Vec<Rewound>) -> Result<Vec<(Op, Source)>, StoreError> {
        let decode = |what: String, bytes: &[u8]| {
            super::journal_row::decode::<Op>(bytes)
                .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
        };
        let mut ops = Vec::with_capacity(rewound.len());
        for Rewound { op } in rewound {
            let seq = self.op_ids.get(op.0)?.map(|seq| seq.value());
            let sidelined = self.sidelined.get(op.0)?.map(|row| row.value().to_vec());
            let taken = match (seq, sidelined) {
                (Some(seq), sidelined) if seq != NOT_JOURNALED => {
                    let row = self.journal.get(seq)?.map(|row| row.value().to_vec());
                    let row = row.ok_or_else(|| {
                        StoreError::Corrupt(format!("journal entry {seq} of op {op} is missing"))
                    })?;
                    let was_in_effect = sidelined.is_none();
                    (
                        decode(format!("journal entry {seq}"), &row)?,
                        Source::Journal { seq, was_in_effect },
                    )
                }
                (_, Some(row)) => (decode(format!("sidelined op {op}"), &row)?, Source::Sidelined),
                _ => {
                    return Err(StoreError::Corrupt(format!("op {op} of the undo log is unknown")));
                }
            };
            ops.push(taken);
        }
        Ok(ops)
    }

    /// Records the sync marks ([`Store::sync_marks`]).
    fn set_sync_marks(&mut self, marks: &[(String, String)]) -> Result<(), StoreError> {
        for (replica, commit) in marks {
            let key = format!("{}{replica}", meta::SYNC_SEEN);
            self.tables.meta.insert(key.as_str(), commit.as_bytes())?;
        }
        Ok(())
    }
}
