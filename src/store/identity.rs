//! A store that takes a new replica id: the store side of a copied store found by a sync
//! (`crate::journal::identity`).
//!
//! Two copies of one store (a copied `~/.fleet`, a restored backup or VM snapshot that went on
//! working) make ops as the same replica; their histories fork. The copy that finds out takes a
//! new replica id ([`Store::take_new_replica`]): its own ops that the other copy does not have
//! are re-stamped as the new replica's — the same op ids, stamps, actors and times, only the
//! replica changes — and the old replica becomes another machine's, whose ops the next merge
//! takes in. Nothing is lost and every op keeps one order key on every store: the other copy
//! never had the re-stamped ops.

use std::collections::HashSet;

use redb::ReadableTable;

use super::apply::encode_op;
use super::tables::{JOURNAL, META, SIDELINED};
use super::{Store, StoreError, journal_row, meta};
use crate::op::Op;

/// What [`Store::take_new_replica`] did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Restamped {
    /// The replica id the store had.
    pub old: String,
    /// The one it has now.
    pub new: String,
    /// The ops re-stamped as the new replica's, oldest first.
    pub ops: Vec<ulid::Ulid>,
}

impl Store {
    /// Gives the store the replica id `new` in one transaction: every op of its old replica
    /// whose id is not in `theirs` (the old replica's journal as the other copy wrote it) is
    /// re-stamped as `new`'s, in the journal and among the sidelined ops; the mark of ops
    /// committed to git moves back before the first of them (they go into the new replica's
    /// journal ref); the old replica's ops are merged through `merged_through` (the commit both
    /// copies share, hex; `None`: none); and the next merge makes the state again from every op
    /// (the order keys of the re-stamped ops changed).
    pub fn take_new_replica(
        &self,
        new: &str,
        theirs: &HashSet<u128>,
        merged_through: Option<&str>,
    ) -> Result<Restamped, StoreError> {
        self.writing(|| self.take_new_replica_unnamed(new, theirs, merged_through))
    }

    fn take_new_replica_unnamed(
        &self,
        new: &str,
        theirs: &HashSet<u128>,
        merged_through: Option<&str>,
    ) -> Result<Restamped, StoreError> {
        let txn = self.begin_write()?;
        let old = super::replica_in(&txn, &self.replica)?;
        let mut restamped = Restamped { old: old.clone(), new: new.to_string(), ops: Vec::new() };
        let mut first_seq = None;
        {
            let mut journal = txn.open_table(JOURNAL)?;
            let mut rows = Vec::new();
            for entry in journal.iter()? {
                let (seq, row) = entry?;
                if let Some(op) = restamp(row.value(), &old, new, theirs)? {
                    rows.push((seq.value(), op));
                }
            }
            for (seq, op) in rows {
                first_seq.get_or_insert(seq);
                restamped.ops.push(op.meta.id);
                journal.insert(seq, encode_op(&op).as_slice())?;
            }
            let mut sidelined = txn.open_table(SIDELINED)?;
            let mut rows = Vec::new();
            for entry in sidelined.iter()? {
                let (id, row) = entry?;
                if let Some(op) = restamp(row.value(), &old, new, theirs)? {
                    rows.push((id.value(), op));
                }
            }
            for (id, op) in rows {
                sidelined.insert(id, encode_op(&op).as_slice())?;
            }
            let mut meta_table = txn.open_table(META)?;
            meta_table.insert(meta::REPLICA, new.as_bytes())?;
            if let Some(first) = first_seq {
                let committed = first - 1;
                meta_table.insert(meta::JOURNAL_COMMITTED, committed.to_be_bytes().as_slice())?;
            }
            let mark = format!("{}{old}", meta::SYNC_SEEN);
            match merged_through {
                Some(commit) => meta_table.insert(mark.as_str(), commit.as_bytes())?,
                None => meta_table.remove(mark.as_str())?,
            };
            meta_table.remove(meta::ORDER_HIGH)?;
        }
        txn.commit()?;
        Ok(restamped)
    }
}

/// The op in journal row `row` re-stamped as `new`'s, if it is an op of `old` that `theirs`
/// lacks.
fn restamp(
    row: &[u8],
    old: &str,
    new: &str,
    theirs: &HashSet<u128>,
) -> Result<Option<Op>, StoreError> {
    let mut op: Op = journal_row::decode(row)
        .map_err(|e| StoreError::Corrupt(format!("a journal entry does not decode: {e}")))?;
    if op.meta.replica != old || theirs.contains(&op.meta.id.0) {
        return Ok(None);
    }
    new.clone_into(&mut op.meta.replica);
    Ok(Some(op))
}
