//! The undo log: what each op applied here changed, so that a merge of ops arriving out of
//! order rewinds only the ops after them instead of making the whole state again.
//!
//! # What is kept
//!
//! For every op applied one at a time (made here, or merged), an entry in [`UNDO`] under the
//! op's place in the total order ([`order_key_bytes`]): the op's id and the *before-images* of
//! the records it wrote — issue rows, edges, comments, the counters and origins of new ids in
//! the meta table, holds, births, renames and orphans ([`Change`]). Indexes derived from those
//! (reverse edges, labels, the order and ready indexes, the blocked flags, the status counts)
//! are not kept: restoring a record goes through the same writer functions that keep them,
//! and a readiness refresh of every issue the rewind touched follows. An op that had no effect
//! (a merged op the rules refused) has an entry with no changes, so that a rewind tries it
//! again at its place. A bulk op (an import) is a *barrier*: its entry holds no changes, and no
//! rewind goes past it.
//!
//! The log keeps the newest [`UNDO_KEEP`] entries; [`meta::UNDO_FLOOR`] says from which op on
//! it covers every op the store knows (empty: from the store's first op; absent: nothing, as in
//! a store made before the log existed, until its first full re-application).
//!
//! # A merge out of order ([`Writer::rewind`])
//!
//! A batch whose first op sorts before ops this store applied can be merged by rewinding when
//! the log covers every op from there on and holds no barrier among them: the entries from the
//! newest back to the batch's first key are undone, newest first; the ops they name are taken
//! back from the journal (or the sidelined ops); and they are applied again, with the batch, in
//! the total order (`super::merge`), each recording its entry anew. The cost is that of the ops
//! after the batch's place, not of the whole history. Otherwise the merge makes the state again
//! from every op, recording entries for the newest [`UNDO_KEEP`] of them.

use std::collections::BTreeSet;

use redb::{ReadableTable, ReadableTableMetadata};

use super::tables::{ORPHANS, View};
use super::{StoreError, Writer, meta};
use crate::model::Issue;
use crate::op::OrderKey;

/// How many entries the undo log keeps: the ops a merge out of order can rewind cheaply.
pub(super) const UNDO_KEEP: u64 = 10_000;
/// Entries beyond [`UNDO_KEEP`] before the oldest are pruned (in one go, not one per op).
const UNDO_SLACK: u64 = 500;

/// The version byte of an entry's encoding.
const ENTRY_VERSION: u8 = 1;
/// Flag of an entry: a bulk op, which no rewind goes past.
const BARRIER: u8 = 1;

/// The before-image of one record an op wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    Issue {
        id: String,
        old: Option<Vec<u8>>,
    },
    Edge {
        from: String,
        to: String,
        old: Option<Vec<u8>>,
    },
    Comment {
        issue: String,
        seq: u64,
        old: Option<Vec<u8>>,
    },
    /// A counter or an origin of a new id (not the status counts, which are derived).
    Meta {
        key: String,
        old: Option<Vec<u8>>,
    },
    Hold {
        id: String,
        old: Option<u128>,
    },
    Birth {
        id: String,
        old: Option<u128>,
    },
    Renamed {
        birth: u128,
        asked: String,
        old: Option<String>,
    },
    Orphan {
        issue: String,
        target: String,
        old: Option<String>,
    },
    /// A message or reservation row (`super::coord`).
    Coord {
        key: String,
        old: Option<Vec<u8>>,
    },
}

/// An op's entry in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub op: ulid::Ulid,
    pub barrier: bool,
    pub changes: Vec<Change>,
}

/// The key of an op's entry: its order key ([`OrderKey`]) as bytes that sort the same way —
/// wall time and counter big-endian, the replica id and a NUL, the op id big-endian.
pub(super) fn order_key_bytes(key: &OrderKey) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(8 + 4 + key.replica.len() + 1 + 16);
    bytes.extend_from_slice(&key.stamp.wall_ms.to_be_bytes());
    bytes.extend_from_slice(&key.stamp.logical.to_be_bytes());
    bytes.extend_from_slice(key.replica.as_bytes());
    bytes.push(0);
    bytes.extend_from_slice(&key.id.0.to_be_bytes());
    bytes
}

impl Entry {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = vec![ENTRY_VERSION, if self.barrier { BARRIER } else { 0 }];
        out.extend_from_slice(&self.op.0.to_be_bytes());
        for change in &self.changes {
            change.encode(&mut out);
        }
        out
    }

    pub(super) fn decode(bytes: &[u8]) -> Result<Entry, StoreError> {
        let bad = || StoreError::Corrupt("an entry of the undo log does not decode".into());
        let mut reader = Reader { bytes, at: 0 };
        if reader.byte().ok_or_else(bad)? != ENTRY_VERSION {
            return Err(bad());
        }
        let barrier = reader.byte().ok_or_else(bad)? & BARRIER != 0;
        let op = ulid::Ulid(reader.u128().ok_or_else(bad)?);
        let mut changes = Vec::new();
        while !reader.done() {
            changes.push(Change::decode(&mut reader).ok_or_else(bad)?);
        }
        Ok(Entry { op, barrier, changes })
    }
}

impl Change {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut w = Writer8 { out };
        match self {
            Change::Issue { id, old } => {
                w.byte(1);
                w.text(id);
                w.maybe_bytes(old.as_deref());
            }
            Change::Edge { from, to, old } => {
                w.byte(2);
                w.text(from);
                w.text(to);
                w.maybe_bytes(old.as_deref());
            }
            Change::Comment { issue, seq, old } => {
                w.byte(3);
                w.text(issue);
                w.u64(*seq);
                w.maybe_bytes(old.as_deref());
            }
            Change::Meta { key, old } => {
                w.byte(4);
                w.text(key);
                w.maybe_bytes(old.as_deref());
            }
            Change::Hold { id, old } => {
                w.byte(5);
                w.text(id);
                w.maybe_u128(*old);
            }
            Change::Birth { id, old } => {
                w.byte(6);
                w.text(id);
                w.maybe_u128(*old);
            }
            Change::Renamed { birth, asked, old } => {
                w.byte(7);
                w.u128(*birth);
                w.text(asked);
                w.maybe_bytes(old.as_deref().map(str::as_bytes));
            }
            Change::Orphan { issue, target, old } => {
                w.byte(8);
                w.text(issue);
                w.text(target);
                w.maybe_bytes(old.as_deref().map(str::as_bytes));
            }
            Change::Coord { key, old } => {
                w.byte(9);
                w.text(key);
                w.maybe_bytes(old.as_deref());
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> Option<Change> {
        Some(match r.byte()? {
            1 => Change::Issue { id: r.text()?, old: r.maybe_bytes()? },
            2 => Change::Edge { from: r.text()?, to: r.text()?, old: r.maybe_bytes()? },
            3 => Change::Comment { issue: r.text()?, seq: r.u64()?, old: r.maybe_bytes()? },
            4 => Change::Meta { key: r.text()?, old: r.maybe_bytes()? },
            5 => Change::Hold { id: r.text()?, old: r.maybe_u128()? },
            6 => Change::Birth { id: r.text()?, old: r.maybe_u128()? },
            7 => Change::Renamed { birth: r.u128()?, asked: r.text()?, old: r.maybe_text()? },
            8 => Change::Orphan { issue: r.text()?, target: r.text()?, old: r.maybe_text()? },
            9 => Change::Coord { key: r.text()?, old: r.maybe_bytes()? },
            _ => return None,
        })
    }
}

/// Appends the fields of an entry: bytes and strings length-prefixed (4 bytes, big-endian).
struct Writer8<'a> {
    out: &'a mut Vec<u8>,
}

impl Writer8<'_> {
    fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    fn u64(&mut self, n: u64) {
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    fn u128(&mut self, n: u128) {
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    fn bytes(&mut self, bytes: &[u8]) {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        self.out.extend_from_slice(&len.to_be_bytes());
        self.out.extend_from_slice(&bytes[..len as usize]);
    }

    fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    fn maybe_bytes(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            Some(bytes) => {
                self.byte(1);
                self.bytes(bytes);
            }
            None => self.byte(0),
        }
    }

    fn maybe_u128(&mut self, n: Option<u128>) {
        match n {
            Some(n) => {
                self.byte(1);
                self.u128(n);
            }
            None => self.byte(0),
        }
    }
}

/// Reads the fields [`Writer8`] wrote; `None` at any malformed field.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }

    fn u128(&mut self) -> Option<u128> {
        Some(u128::from_be_bytes(self.take(16)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<Vec<u8>> {
        let len = u32::from_be_bytes(self.take(4)?.try_into().ok()?) as usize;
        self.take(len).map(<[u8]>::to_vec)
    }

    fn text(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?).ok()
    }

    fn maybe_bytes(&mut self) -> Option<Option<Vec<u8>>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.bytes().map(Some),
            _ => None,
        }
    }

    fn maybe_text(&mut self) -> Option<Option<String>> {
        match self.maybe_bytes()? {
            Some(bytes) => String::from_utf8(bytes).ok().map(Some),
            None => Some(None),
        }
    }

    fn maybe_u128(&mut self) -> Option<Option<u128>> {
        match self.byte()? {
            0 => Some(None),
            1 => self.u128().map(Some),
            _ => None,
        }
    }
}

impl super::Store {
    /// Empties the undo log: the next merge out of order makes the state again from every op
    /// (the baseline of `fleet bench merge`).
    pub fn forget_undo_log(&self) -> Result<(), StoreError> {
        self.write("fleet", crate::time::Clock::System, |w| w.forget_undo()).map(|_| ())
    }
}

/// An op a rewind took back, to apply again: its id and where it stood.
pub(super) struct Rewound {
    pub op: ulid::Ulid,
}

impl Writer<'_> {
    /// Starts recording the changes of the op about to be applied. In bulk mode (an import)
    /// writes are held back and made at the end, so nothing is recorded: the op's entry is a
    /// barrier ([`Writer::write_entry`]).
    pub(super) fn start_recording(&mut self) {
        if self.bulk_ids.is_none() {
            self.recording = Some(Vec::new());
        }
    }

    /// Records `change` if an op's changes are being recorded.
    pub(super) fn record(&mut self, change: impl FnOnce() -> Change) {
        if let Some(changes) = &mut self.recording {
            changes.push(change());
        }
    }

    /// Writes the entry of `key`'s op (`op`) with the changes recorded since
    /// [`Writer::start_recording`] (none for an op that had no effect); a `barrier` for a bulk
    /// op, whose changes are not recorded.
    pub(super) fn write_entry(
        &mut self,
        key: &OrderKey,
        op: ulid::Ulid,
        barrier: bool,
    ) -> Result<(), StoreError> {
        let changes = self.recording.take().unwrap_or_default();
        let barrier = barrier || self.bulk_ids.is_some();
        let entry = Entry { op, barrier, changes: if barrier { Vec::new() } else { changes } };
        self.undo.insert(order_key_bytes(key).as_slice(), entry.encode().as_slice())?;
        self.undo_written = true;
        Ok(())
    }

    /// Empties the undo log and marks it as covering nothing: ops were applied out of their
    /// order (a replay), so no rewind can be trusted until a merge makes the state again.
    pub(super) fn forget_undo(&mut self) -> Result<(), StoreError> {
        self.undo.retain(|_, _| false)?;
        self.tables.meta.remove(meta::UNDO_FLOOR)?;
        Ok(())
    }

    /// Drops the changes recorded for an op that was refused (it wrote nothing).
    pub(super) fn discard_recording(&mut self) {
        self.recording = None;
    }

    /// Prunes the log to its newest [`UNDO_KEEP`] entries once it holds [`UNDO_SLACK`] more,
    /// moving the floor to the oldest entry kept.
    pub(super) fn prune_undo(&mut self) -> Result<(), StoreError> {
        if !self.undo_written || self.undo.len()? <= UNDO_KEEP + UNDO_SLACK {
            return Ok(());
        }
        let excess = self.undo.len()? - UNDO_KEEP;
        for _ in 0..excess {
            self.undo.pop_first()?;
        }
        let floor = self.undo.first()?.map(|(key, _)| key.value().to_vec()).unwrap_or_default();
        self.tables.meta.insert(meta::UNDO_FLOOR, floor.as_slice())?;
        Ok(())
    }

    /// Whether the log covers every op from `key` on with no barrier: a merge whose first op
    /// is at `key` can rewind to it.
    fn can_rewind_to(&self, key: &[u8]) -> Result<bool, StoreError> {
        let Some(floor) = self.tables.meta_bytes(meta::UNDO_FLOOR)? else { return Ok(false) };
        if !floor.is_empty() && key < floor.as_slice() {
            return Ok(false);
        }
        for entry in self.undo.range(key..)? {
            let (_, value) = entry?;
            if value.value().get(1).is_some_and(|flags| flags & BARRIER != 0) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Undoes every op from `key` on, newest first, and refreshes the readiness of what that
    /// touched; returns the ops undone, oldest first, to apply again. `None` (nothing changed)
    /// when the log cannot take the store back that far.
    pub(super) fn rewind(&mut self, key: &OrderKey) -> Result<Option<Vec<Rewound>>, StoreError> {
        let from = order_key_bytes(key);
        if !self.can_rewind_to(&from)? {
            return Ok(None);
        }
        let mut entries = Vec::new();
        for entry in self.undo.range(from.as_slice()..)?.rev() {
            let (key, value) = entry?;
            entries.push((key.value().to_vec(), Entry::decode(value.value())?));
        }
        let mut seeds = BTreeSet::new();
        self.undoing = true;
        let undone = self.undo_entries(&entries, &mut seeds);
        self.undoing = false;
        undone?;
        for (key, _) in &entries {
            self.undo.remove(key.as_slice())?;
        }
        let touched = std::mem::take(&mut self.touched);
        seeds.extend(touched);
        match &mut self.deferred_seeds {
            Some(pending) => pending.extend(seeds),
            None => self.refresh(seeds)?,
        }
        let mut rewound: Vec<Rewound> =
            entries.into_iter().map(|(_, e)| Rewound { op: e.op }).collect();
        rewound.reverse();
        Ok(Some(rewound))
    }

    fn undo_entries(
        &mut self,
        entries: &[(Vec<u8>, Entry)],
        seeds: &mut BTreeSet<String>,
    ) -> Result<(), StoreError> {
        for (_, entry) in entries {
            for change in entry.changes.iter().rev() {
                self.undo_change(change, seeds)?;
            }
        }
        Ok(())
    }

    /// Puts back one record as it was before the change, keeping the derived indexes.
    fn undo_change(
        &mut self,
        change: &Change,
        seeds: &mut BTreeSet<String>,
    ) -> Result<(), StoreError> {
        match change {
            Change::Issue { id, old } => {
                let current = self.tables.issue(id)?;
                seeds.extend(self.status_seeds(id)?);
                seeds.extend(self.tables.dependents_by(id, crate::model::dep_type::PARENT_CHILD)?);
                match (old, current) {
                    (Some(row), current) => {
                        let restored: Issue = super::tables::decode_issue_of(id, row)?;
                        self.put_issue_row(current.as_ref(), &restored, row)?;
                    }
                    (None, Some(current)) => self.drop_issue_row(&current)?,
                    (None, None) => {}
                }
                seeds.insert(id.clone());
            }
            Change::Edge { from, to, old } => {
                let current = self.tables.dep(from, to)?;
                for dep in current.iter() {
                    seeds.extend(self.edge_seeds(dep)?);
                }
                match old {
                    Some(row) => {
                        let dep = super::tables::decode_dep_of(from, to, row)?;
                        seeds.extend(self.edge_seeds(&dep)?);
                        self.insert_edge_row(&dep, row)?;
                    }
                    None if current.is_some() => self.remove_edge(from, to)?,
                    None => {}
                }
                seeds.insert(to.clone());
            }
            Change::Comment { issue, seq, old } => {
                match old {
                    Some(row) => {
                        self.tables.comments.insert((issue.as_str(), *seq), row.as_slice())?
                    }
                    None => self.tables.comments.remove((issue.as_str(), *seq))?,
                };
                seeds.insert(issue.clone());
            }
            Change::Meta { key, old } => {
                match old {
                    Some(value) => self.tables.meta.insert(key.as_str(), value.as_slice())?,
                    None => self.tables.meta.remove(key.as_str())?,
                };
            }
            Change::Hold { id, old } => {
                match old {
                    Some(claim) => self.holds.insert(id.as_str(), *claim)?,
                    None => self.holds.remove(id.as_str())?,
                };
            }
            Change::Birth { id, old } => {
                match old {
                    Some(birth) => self.births.insert(id.as_str(), *birth)?,
                    None => self.births.remove(id.as_str())?,
                };
            }
            Change::Renamed { birth, asked, old } => {
                match old {
                    Some(given) => self.renamed.insert((*birth, asked.as_str()), given.as_str())?,
                    None => self.renamed.remove((*birth, asked.as_str()))?,
                };
            }
            Change::Orphan { issue, target, old } => {
                let mut orphans = self.txn.open_table(ORPHANS)?;
                match old {
                    Some(kind) => {
                        orphans.insert((issue.as_str(), target.as_str()), kind.as_str())?
                    }
                    None => orphans.remove((issue.as_str(), target.as_str()))?,
                };
            }
            Change::Coord { key, old } => self.restore_coord_row(key, old.as_deref())?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Hlc;

    #[test]
    fn entries_read_back_as_written() {
        let entry = Entry {
            op: ulid::Ulid(7),
            barrier: false,
            changes: vec![
                Change::Issue { id: "t-1".into(), old: Some(b"{\"id\":\"t-1\"}".to_vec()) },
                Change::Issue { id: "t-2".into(), old: None },
                Change::Edge { from: "t-1".into(), to: "t-2".into(), old: None },
                Change::Comment { issue: "t-1".into(), seq: 9, old: Some(vec![1, 2]) },
                Change::Meta { key: "comment_seq".into(), old: Some(8u64.to_be_bytes().to_vec()) },
                Change::Hold { id: "t-1".into(), old: Some(u128::MAX) },
                Change::Birth { id: "t-2".into(), old: None },
                Change::Renamed { birth: 3, asked: "t-9".into(), old: Some("t-9x".into()) },
                Change::Orphan { issue: "t-3".into(), target: "t-4".into(), old: None },
                Change::Coord { key: "mail/m-1".into(), old: Some(b"{}".to_vec()) },
            ],
        };
        assert_eq!(Entry::decode(&entry.encode()).unwrap(), entry);
        let barrier = Entry { op: ulid::Ulid(1), barrier: true, changes: Vec::new() };
        assert_eq!(Entry::decode(&barrier.encode()).unwrap(), barrier);
        assert!(Entry::decode(&[ENTRY_VERSION, 0, 1]).is_err());
        assert!(Entry::decode(&[]).is_err());
    }

    #[test]
    fn entry_keys_sort_as_the_total_order() {
        let key = |wall_ms, logical, replica: &str, id| OrderKey {
            stamp: Hlc { wall_ms, logical },
            replica: replica.to_string(),
            id: ulid::Ulid(id),
        };
        let mut keys = [
            key(2, 0, "a", 1),
            key(1, 5, "ab", 0),
            key(1, 5, "a", 9),
            key(1, 5, "a", 3),
            key(1, 300, "a", 0),
            key(1, 2, "zz", 0),
        ];
        let mut bytes: Vec<Vec<u8>> = keys.iter().map(order_key_bytes).collect();
        keys.sort();
        bytes.sort();
        assert_eq!(bytes, keys.iter().map(order_key_bytes).collect::<Vec<_>>());
    }
}
