//! The order indexes: what lets `list`, `blocked`, `stale`, `search` and `count` read only the
//! entries they print instead of decoding every stored issue.
//!
//! One table ([`ORDER`]) holds three indexes, told apart by the first byte of the key:
//!
//! - `P` + status + `bd ready` order (priority, newest first, id): every issue, grouped by
//!   status, in `list`'s default order;
//! - `U` + status + updated (newest first) + id: every issue, in `list --sort updated` and
//!   `stale` order;
//! - `B` + `bd ready` order: the blocked issues, in `blocked`'s order.
//!
//! The `P` and `U` entries carry the facts `list`'s filters test ([`RowFacts`]: priority,
//! updated, type, assignee), so a filtered listing decodes no issue row it does not print.
//! The number of issues of each status is kept in meta (`status_count/<status>`), which
//! answers the total of an unfiltered listing without a scan.
//!
//! Maintenance happens in the one place that writes issue rows ([`Writer::index_order`], called
//! by `apply`'s `put_issue` and `delete`) and where the blocked flag flips
//! ([`Writer::set_blocked_entry`], called by `readiness`). A store made before the index existed
//! has none (reads fall back to a full scan) until its first writer builds it
//! ([`Writer::build_order_index`]), which `fleet doctor` also uses to check it.

use std::collections::BTreeMap;

use jiff::Timestamp;
use redb::ReadableTable;

use super::tables::{OrderEntries, View, newest_first, ready_key};
use super::{StoreError, Writer, meta};
use crate::model::{Issue, Status};

/// Key tag of the status + priority-order index.
pub(crate) const BY_PRIORITY: u8 = b'P';
/// Key tag of the status + updated-order index.
pub(crate) const BY_UPDATED: u8 = b'U';
/// Key tag of the blocked index.
pub(crate) const BLOCKED: u8 = b'B';

/// Length of the order part before the id in a `P` key (priority + creation) and a `U` key
/// (update).
const PRIORITY_ORDER_LEN: usize = 9;
const UPDATED_ORDER_LEN: usize = 8;

/// The facts of an issue that `list`'s filters test, as an index entry carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFacts {
    pub status: Status,
    pub priority: u8,
    pub updated_at: Timestamp,
    pub issue_type: String,
    pub assignee: String,
}

impl RowFacts {
    pub fn of(issue: &Issue) -> RowFacts {
        RowFacts {
            status: issue.status.clone(),
            priority: issue.priority,
            updated_at: issue.updated_at,
            issue_type: issue.issue_type.clone(),
            assignee: issue.assignee.clone(),
        }
    }

    /// The entry value: priority, updated (nanoseconds), then type and assignee, each behind
    /// its length.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(17 + self.issue_type.len() + self.assignee.len());
        out.push(self.priority);
        out.extend_from_slice(&crate::time::nanos(self.updated_at).to_be_bytes());
        for text in [&self.issue_type, &self.assignee] {
            let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&text.as_bytes()[..len as usize]);
        }
        out
    }

    fn decode(status: Status, bytes: &[u8]) -> Result<RowFacts, StoreError> {
        let damaged = || StoreError::Corrupt("an order-index entry does not decode".into());
        let (&priority, rest) = bytes.split_first().ok_or_else(damaged)?;
        let (nanos, mut rest) = rest.split_first_chunk::<8>().ok_or_else(damaged)?;
        let mut text = || -> Result<String, StoreError> {
            let (len, tail) = rest.split_first_chunk::<4>().ok_or_else(damaged)?;
            let len = u32::from_be_bytes(*len) as usize;
            let (value, tail) = tail.split_at_checked(len).ok_or_else(damaged)?;
            rest = tail;
            Ok(String::from_utf8_lossy(value).into_owned())
        };
        let issue_type = text()?;
        let assignee = text()?;
        Ok(RowFacts {
            status,
            priority,
            updated_at: Timestamp::from_nanosecond(i128::from(i64::from_be_bytes(*nanos)))
                .unwrap_or(Timestamp::UNIX_EPOCH),
            issue_type,
            assignee,
        })
    }
}

/// The key prefix of index `tag`'s entries of issues with `status`.
pub(crate) fn status_prefix(tag: u8, status: &str) -> Vec<u8> {
    let len = u16::try_from(status.len()).unwrap_or(u16::MAX);
    let mut key = Vec::with_capacity(3 + status.len() + 17);
    key.push(tag);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(&status.as_bytes()[..usize::from(len)]);
    key
}

/// The `P` key of an issue.
fn priority_key(issue: &Issue) -> Vec<u8> {
    let mut key = status_prefix(BY_PRIORITY, issue.status.as_str());
    key.extend_from_slice(&ready_key(issue));
    key
}

/// The `U` key of an issue.
fn updated_key(issue: &Issue) -> Vec<u8> {
    let mut key = status_prefix(BY_UPDATED, issue.status.as_str());
    key.extend_from_slice(&newest_first(issue.updated_at));
    key.extend_from_slice(issue.id.as_bytes());
    key
}

/// The `B` key of an issue (its ready key behind the tag).
pub(crate) fn blocked_key(issue: &Issue) -> Vec<u8> {
    let mut key = vec![BLOCKED];
    key.extend_from_slice(&ready_key(issue));
    key
}

/// The issue id inside the order part of a key (what follows the status prefix; for `B`
/// keys, what follows the tag).
pub(crate) fn id_in(tag: u8, order: &[u8]) -> &str {
    let skip = if tag == BY_UPDATED { UPDATED_ORDER_LEN } else { PRIORITY_ORDER_LEN };
    std::str::from_utf8(order.get(skip..).unwrap_or_default()).unwrap_or_default()
}

/// The issue id of any key of the order index.
pub(crate) fn id_of_key(key: &[u8]) -> &str {
    match key.first() {
        Some(&BLOCKED) => id_in(BLOCKED, key.get(1..).unwrap_or_default()),
        Some(&tag) => {
            let len = key.get(1..3).map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
            id_in(tag, key.get(3 + len..).unwrap_or_default())
        }
        None => "",
    }
}

fn status_count_key(status: &str) -> String {
    format!("{}{status}", meta::STATUS_COUNT)
}

/// Every status that issues have in this store, with how many have it.
pub(crate) fn status_counts(view: &dyn View) -> Result<Vec<(Status, u64)>, StoreError> {
    Ok(view
        .meta_with_prefix(meta::STATUS_COUNT)?
        .into_iter()
        .filter_map(|(name, bytes)| {
            let count = meta::counter(Some(&bytes));
            (count > 0).then(|| (Status::from_name(&name), count))
        })
        .collect())
}

/// Whether the store has the order index (see the module docs).
pub(crate) fn indexed(view: &dyn View) -> Result<bool, StoreError> {
    Ok(view.meta_bytes(meta::ORDER_INDEX)?.is_some())
}

/// Every entry of the order index, and the status counts.
pub(crate) type IndexContents = (BTreeMap<Vec<u8>, Vec<u8>>, Vec<(Status, u64)>);

/// One entry of a [`Scan`]: the issue's id and its facts.
pub(crate) struct Row {
    pub id: String,
    pub facts: RowFacts,
}

/// A walk over the `P` or `U` entries of several statuses at once, merged into one order (the
/// order of the key after the status), forwards or backwards.
pub(crate) struct Scan<'a> {
    tag: u8,
    reverse: bool,
    sources: Vec<Source<'a>>,
}

struct Source<'a> {
    status: Status,
    /// Length of the status prefix in this source's keys.
    skip: usize,
    entries: std::iter::Peekable<OrderEntries<'a>>,
}

impl<'a> Scan<'a> {
    /// The entries of index `tag` (`P` or `U`) of the given statuses; with `priority`, only
    /// that priority (`P` only). `None` when the store has no order index.
    pub fn open(
        view: &'a dyn View,
        tag: u8,
        statuses: &[Status],
        priority: Option<u8>,
        reverse: bool,
    ) -> Result<Option<Scan<'a>>, StoreError> {
        let mut sources = Vec::with_capacity(statuses.len());
        for status in statuses {
            let mut prefix = status_prefix(tag, status.as_str());
            let skip = prefix.len();
            if let (BY_PRIORITY, Some(priority)) = (tag, priority) {
                prefix.push(priority);
            }
            let Some(entries) = view.order_range(&prefix, reverse)? else { return Ok(None) };
            sources.push(Source { status: status.clone(), skip, entries: entries.peekable() });
        }
        Ok(Some(Scan { tag, reverse, sources }))
    }

    /// The source whose next entry comes first in the scan's order.
    fn next_source(&mut self) -> Option<usize> {
        let reverse = self.reverse;
        let mut best: Option<(usize, &[u8])> = None;
        for (index, source) in self.sources.iter_mut().enumerate() {
            let skip = source.skip;
            let key = match source.entries.peek() {
                None => continue,
                // An error comes out first, and ends the scan.
                Some(Err(_)) => return Some(index),
                Some(Ok((key, _))) => key,
            };
            let order = &key[skip.min(key.len())..];
            let better = best
                .is_none_or(|(_, current)| if reverse { order > current } else { order < current });
            if better {
                best = Some((index, order));
            }
        }
        best.map(|(index, _)| index)
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<Row, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let index = self.next_source()?;
        let tag = self.tag;
        let source = &mut self.sources[index];
        let (key, value) = match source.entries.next()? {
            Ok(entry) => entry,
            Err(error) => return Some(Err(error)),
        };
        let id = id_in(tag, key.get(source.skip..).unwrap_or_default()).to_string();
        Some(RowFacts::decode(source.status.clone(), &value).map(|facts| Row { id, facts }))
    }
}

/// The ids of the blocked issues in `blocked`'s order, visited until `visit` returns false.
/// `None` when the store has no order index.
pub(crate) fn scan_blocked(
    view: &dyn View,
    visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
) -> Result<Option<()>, StoreError> {
    let Some(entries) = view.order_range(&[BLOCKED], false)? else { return Ok(None) };
    for entry in entries {
        let (key, _) = entry?;
        if !visit(id_in(BLOCKED, &key[1..]))? {
            break;
        }
    }
    Ok(Some(()))
}

impl Writer<'_> {
    /// Keeps the order index and the status counts in step with a change of an issue row
    /// from `old` to `new` (`None`: no row). A deleted issue also leaves the blocked set here,
    /// so its id made again in the same bulk batch starts unblocked.
    pub(super) fn index_order(
        &mut self,
        old: Option<&Issue>,
        new: Option<&Issue>,
    ) -> Result<(), StoreError> {
        let entries = |issue: &Issue| {
            let value = RowFacts::of(issue).encode();
            [(priority_key(issue), value.clone()), (updated_key(issue), value)]
        };
        let old_entries = old.map(entries);
        let new_entries = new.map(entries);
        if old_entries == new_entries {
            return Ok(());
        }
        for (key, _) in old_entries.into_iter().flatten() {
            self.order_remove(key)?;
        }
        for (key, value) in new_entries.into_iter().flatten() {
            self.order_insert(key, value)?;
        }
        self.count_status(old.map(|o| &o.status), new.map(|n| &n.status))?;
        let Some(id) = old.or(new).map(|i| i.id.as_str()) else { return Ok(()) };
        if self.tables.is_blocked(id)? {
            if let Some(old) = old {
                self.order_remove(blocked_key(old))?;
            }
            match new {
                Some(new) => self.set_blocked_entry(new, true)?,
                None => {
                    self.tables.blocked.remove(id)?;
                }
            }
        }
        Ok(())
    }

    /// Adds (or removes) an issue's entry in the blocked index, as its blocked flag says.
    pub(super) fn set_blocked_entry(
        &mut self,
        issue: &Issue,
        blocked: bool,
    ) -> Result<(), StoreError> {
        let key = blocked_key(issue);
        if blocked { self.order_insert(key, Vec::new()) } else { self.order_remove(key) }
    }

    /// Inserts an entry of the order index (held back in bulk mode).
    fn order_insert(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoreError> {
        match &mut self.held_order {
            Some(held) => held.insert(key, value),
            None => {
                self.tables.order_mut().insert(key.as_slice(), value.as_slice())?;
            }
        }
        Ok(())
    }

    /// Removes an entry of the order index (held back in bulk mode).
    fn order_remove(&mut self, key: Vec<u8>) -> Result<(), StoreError> {
        match &mut self.held_order {
            Some(held) => held.remove(key),
            None => {
                self.tables.order_mut().remove(key.as_slice())?;
            }
        }
        Ok(())
    }

    fn count_status(
        &mut self,
        old: Option<&Status>,
        new: Option<&Status>,
    ) -> Result<(), StoreError> {
        if old == new {
            return Ok(());
        }
        if let Some(old) = old {
            let key = status_count_key(old.as_str());
            let count = self.counter(&key)?.saturating_sub(1);
            self.put_meta_u64(&key, count)?;
        }
        if let Some(new) = new {
            let key = status_count_key(new.as_str());
            let count = self.counter(&key)? + 1;
            self.put_meta_u64(&key, count)?;
        }
        Ok(())
    }

    /// Builds the order index and the status counts from the stored issues and blocked
    /// flags, replacing whatever was there, and marks the store as indexed.
    pub(crate) fn build_order_index(&mut self) -> Result<(), StoreError> {
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for entry in self.tables.issues.iter()? {
            let (id, row) = entry?;
            // A damaged row is left out (`fleet doctor` reports it) rather than failing every
            // write of the store.
            let Ok(issue) = super::tables::decode_issue_of(id.value(), row.value()) else {
                continue;
            };
            let value = RowFacts::of(&issue).encode();
            entries.push((priority_key(&issue), value.clone()));
            entries.push((updated_key(&issue), value));
            if self.tables.is_blocked(&issue.id)? {
                entries.push((blocked_key(&issue), Vec::new()));
            }
            *counts.entry(issue.status.as_str().to_string()).or_default() += 1;
        }
        entries.sort_unstable();
        self.tables.order_mut().retain(|_, _| false)?;
        for (key, value) in &entries {
            self.tables.order_mut().insert(key.as_slice(), value.as_slice())?;
        }
        self.tables.meta.retain(|key, _| !key.starts_with(meta::STATUS_COUNT))?;
        for (status, count) in counts {
            self.put_meta_u64(&status_count_key(&status), count)?;
        }
        self.tables.meta.insert(meta::ORDER_INDEX, [1u8].as_slice())?;
        Ok(())
    }

    /// The whole order index and the status counts, for `fleet doctor`'s comparison with a
    /// rebuild.
    pub(crate) fn order_index_contents(&self) -> Result<IndexContents, StoreError> {
        let mut entries = BTreeMap::new();
        for entry in self.tables.order_ref().iter()? {
            let (key, value) = entry?;
            entries.insert(key.value().to_vec(), value.value().to_vec());
        }
        Ok((entries, status_counts(&self.tables)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_facts_round_trip() {
        let facts = RowFacts {
            status: Status::InProgress,
            priority: 3,
            updated_at: "2024-05-01T10:00:00.123456789Z".parse().unwrap(),
            issue_type: "bug".into(),
            assignee: "alice".into(),
        };
        assert_eq!(RowFacts::decode(Status::InProgress, &facts.encode()).unwrap(), facts);
    }

    #[test]
    fn keys_carry_the_id_after_the_order() {
        let mut issue = Issue::new("t-9".into(), "x".into(), Timestamp::UNIX_EPOCH);
        issue.status = Status::Custom("review".into());
        let prefix = status_prefix(BY_PRIORITY, "review");
        assert_eq!(id_in(BY_PRIORITY, &priority_key(&issue)[prefix.len()..]), "t-9");
        let prefix = status_prefix(BY_UPDATED, "review");
        assert_eq!(id_in(BY_UPDATED, &updated_key(&issue)[prefix.len()..]), "t-9");
        assert_eq!(id_in(BLOCKED, &blocked_key(&issue)[1..]), "t-9");
    }
}
