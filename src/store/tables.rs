//! The redb tables and the read primitives every query is built from.
//!
//! [`TableSet`] holds one open handle per table. It is generic over the handle type so the same
//! read code ([`View`]) serves read transactions (`ReadOnlyTable`) and write transactions
//! (`Table`), which need to read what they are about to change.

use std::collections::{BTreeSet, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use redb::{ReadableTable, TableDefinition};

use super::StoreError;
use super::text::TextNeedle;
use crate::model::{Comment, Dependency, Issue, dep_type};

/// Issue id → the issue as JSON (without edges and comments).
pub(crate) const ISSUES: TableDefinition<&str, &[u8]> = TableDefinition::new("issues");
/// (issue, depends_on) → the dependency record as JSON. One edge per pair.
pub(crate) const DEPS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("deps");
/// (depends_on, issue) → the edge type: the reverse index of [`DEPS`].
pub(crate) const RDEPS: TableDefinition<(&str, &str), &str> = TableDefinition::new("rdeps");
/// (issue, sequence) → a comment as JSON, in the order they were added.
pub(crate) const COMMENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("comments");
/// (label, issue): which issues carry a label.
pub(crate) const LABELS: TableDefinition<(&str, &str), ()> = TableDefinition::new("labels");
/// Ready-order key → [`ReadyEntry`] bytes, for every issue that is open and not blocked. An
/// entry's key is always [`ready_key`] of its issue's stored row, so the entry of an issue is
/// found from its row, and a write that changes the key's fields removes the entry under the
/// old key (see `apply`).
pub(crate) const READY: TableDefinition<&[u8], &[u8]> = TableDefinition::new("ready");
/// Layout 1's issue id → key in [`READY`]. Keeping it cost two writes to pages spread by id on
/// every claim; the first writer of layout 2 deletes it.
pub(crate) const RETIRED_READY_KEYS: TableDefinition<&str, &[u8]> =
    TableDefinition::new("ready_keys");
/// The materialised blocked flag: ids of issues blocked by their dependencies.
pub(crate) const BLOCKED: TableDefinition<&str, ()> = TableDefinition::new("blocked");
/// The order indexes of `list`, `blocked` and `stale` (see `super::order`): an encoded key per
/// issue and index → the filter facts of its entry. Absent from stores made before it existed
/// until their first write builds it.
pub(crate) const ORDER: TableDefinition<&[u8], &[u8]> = TableDefinition::new("order");
/// Sequence → op as JSON: every applied op, in the order it was applied.
pub(crate) const JOURNAL: TableDefinition<u64, &[u8]> = TableDefinition::new("journal");
/// Op id (a ULID as its 128-bit value) → journal sequence: which ops this store has applied, so
/// an op replayed a second time is recognised and skipped. Only writers touch it.
pub(crate) const OP_IDS: TableDefinition<u128, u64> = TableDefinition::new("op_ids");
/// Op id → op as JSON: ops this store has seen but whose effect is not in its state — remote
/// ops refused or changing nothing when applied, and ops a re-application in the total order
/// (`merge`) found refused. With the journal, the whole set of ops the store knows, which a
/// merge of ops arriving out of order re-applies. Only writers touch it.
pub(crate) const SIDELINED: TableDefinition<u128, &[u8]> = TableDefinition::new("sidelined");
/// Issue id → the id of the claim op whose hold the issue is in (a ULID as its 128-bit
/// value), for every issue a claim op put in progress and nothing took out of it since. A
/// release that names the claim it ends applies only while this says that claim
/// (`super::apply`). Derived from the ops, like the issue table.
pub(crate) const HOLDS: TableDefinition<&str, u128> = TableDefinition::new("holds");
/// Issue id → its *birth*: the id of the create op that made it (a ULID as its 128-bit
/// value), for every issue a create op made. Ops name the births of the issues they mean
/// (`crate::op::OpMeta::births`); see `super::apply`, "Ids made apart".
pub(crate) const BIRTHS: TableDefinition<&str, u128> = TableDefinition::new("births");
/// (birth, the id its create op asked for) → the id the issue got instead, for every create
/// whose id another issue already had in the total order. Derived from the ops.
pub(crate) const RENAMED: TableDefinition<(u128, &str), &str> = TableDefinition::new("renamed");
/// (issue, target) → edge type, for every edge a create left out because its target was gone
/// (deleted on another machine): the orphans a merge reports. Derived from the ops.
pub(crate) const ORPHANS: TableDefinition<(&str, &str), &str> = TableDefinition::new("orphans");
/// Order key (as sortable bytes) → what the op applied there changed: the undo log that lets a
/// merge out of order rewind only the ops after it (`super::undo`).
pub(crate) const UNDO: TableDefinition<&[u8], &[u8]> = TableDefinition::new("undo");
/// Request id (a ULID as its 128-bit value) → the reply, as JSON, of a write request the
/// socket server or a client falling back from it applied: so a request is applied at most
/// once, and a client whose answer was lost learns what it did. Entries older than
/// [`REPLY_RETENTION_MS`] are pruned by writers that record new ones.
pub(crate) const REPLIES: TableDefinition<u128, &[u8]> = TableDefinition::new("replies");
/// How long a recorded reply is kept, in milliseconds. Requests older than half of it are
/// never applied (see `crate::server::apply_once`), so a reply is always kept for as long as
/// its request could still arrive.
pub const REPLY_RETENTION_MS: u64 = 2 * 60 * 1000;
/// Store-wide values: prefix, replica id, clock, counters, config.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");

/// The largest string key, used as the upper bound of prefix scans over tuple keys.
pub(crate) const MAX_KEY: &str = "\u{10ffff}";

/// One handle per table (the journal aside, which only writers touch), and what to do with an
/// issue row that does not decode.
pub(crate) struct TableSet<I, D, R, C, L, Y, B, M, O> {
    pub issues: I,
    /// The edges; `None` only while a bulk write lends the table to its edge thread
    /// ([`super::Writer::apply_bulk`]), when nothing reads it.
    pub deps: Option<D>,
    pub rdeps: R,
    pub comments: C,
    pub labels: L,
    pub ready: Y,
    pub blocked: B,
    pub meta: M,
    /// The order indexes; `None` in a read of a store made before they existed.
    pub order: Option<O>,
    /// `None`: a damaged issue row is an error (writes, and reads that name one issue).
    /// `Some`: reads that scan many issues skip it and record its id here (see
    /// [`super::Reader::skip_damaged`]).
    pub damaged: Option<Mutex<BTreeSet<String>>>,
}

impl<I, D, R, C, L, Y, B, M, O> TableSet<I, D, R, C, L, Y, B, M, O> {
    /// The edge table, which every transaction opens.
    pub fn deps(&self) -> &D {
        self.deps.as_ref().expect("the edge table is back from a bulk write's edge thread")
    }

    /// Whether `row`, the row of `id`, has `needle` in the id, title or description.
    fn row_has_text(&self, id: &str, row: &[u8], needle: &TextNeedle) -> Result<bool, StoreError> {
        let payload = checked_payload(&format!("issue {id}"), row);
        let text = payload.map(serde_json::from_slice::<IssueText<'_>>);
        Ok(match text.map_err(|_| ()).and_then(|t| t.map_err(|_| ())) {
            Ok(text) => needle.matches(id, &text.title, &text.description),
            Err(_) => self
                .decode_or_skip(id, row)?
                .is_some_and(|issue| needle.matches(id, &issue.title, &issue.description)),
        })
    }

    /// The issue in row `bytes` of `id`; a row that does not decode is an error, or, when
    /// damaged rows are skipped, `None` with `id` recorded.
    fn decode_or_skip(&self, id: &str, bytes: &[u8]) -> Result<Option<Issue>, StoreError> {
        match (decode_issue_of(id, bytes), &self.damaged) {
            (Ok(issue), _) => Ok(Some(issue)),
            (Err(_), Some(damaged)) => {
                damaged.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.into());
                Ok(None)
            }
            (Err(error), None) => Err(error),
        }
    }

    /// The ids of the damaged rows skipped so far.
    pub fn damaged_ids(&self) -> Vec<String> {
        self.damaged.as_ref().map_or_else(Vec::new, |damaged| {
            damaged
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .cloned()
                .collect()
        })
    }
}

/// What a ready-index entry records beyond its key: enough to filter without loading the issue,
/// and (a covering index) the issue's row and computed counts, so `ready` and `ready --json`
/// read one range and nothing per issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadyEntry<'a> {
    /// Hidden from `ready` until this instant (nanoseconds; 0 = not deferred): the issue's own
    /// `defer_until` or a parent's, whichever is later.
    pub hidden_until: i64,
    /// The issue's type is one `ready` leaves out by default.
    pub excluded_type: bool,
    pub ephemeral: bool,
    /// Someone is already assigned (claim skips it unless it is the claimer).
    pub assigned: bool,
    /// The issue's row and counts; `None` in an entry written before entries carried them
    /// (see `meta::READY_COVERING`).
    pub covered: Option<Covered<'a>>,
}

/// What a ready entry carries of its issue, borrowed from the entry's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Covered<'a> {
    /// The issue's row, as [`ISSUES`] holds it.
    pub row: &'a [u8],
    pub counts: EntryCounts<'a>,
}

/// [`Counts`] as a ready entry stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryCounts<'a> {
    pub dependencies: u32,
    pub dependents: u32,
    pub comments: u32,
    pub parent: Option<&'a str>,
}

impl<'a> EntryCounts<'a> {
    pub fn of(counts: &'a Counts) -> EntryCounts<'a> {
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        EntryCounts {
            dependencies: narrow(counts.dependencies),
            dependents: narrow(counts.dependents),
            comments: narrow(counts.comments),
            parent: counts.parent.as_deref(),
        }
    }

    pub fn to_counts(self) -> Counts {
        Counts {
            dependencies: self.dependencies as usize,
            dependents: self.dependents as usize,
            comments: self.comments as usize,
            parent: self.parent.map(str::to_string),
        }
    }
}

/// Length of a ready entry's filter part (flags, then `hidden_until`), and of the counts that
/// may follow it (three `u32`s, then the length of the parent id as a `u16`; the parent id and
/// the issue's row make up the rest of the entry).
const ENTRY_FLAGS_LEN: usize = 9;
const ENTRY_COUNTS_LEN: usize = 14;

impl<'a> ReadyEntry<'a> {
    pub fn encode(&self) -> Vec<u8> {
        let extra = self
            .covered
            .map_or(0, |c| ENTRY_COUNTS_LEN + c.counts.parent.map_or(0, str::len) + c.row.len());
        let mut out = Vec::with_capacity(ENTRY_FLAGS_LEN + extra);
        out.push(
            u8::from(self.excluded_type)
                | (u8::from(self.ephemeral) << 1)
                | (u8::from(self.assigned) << 2),
        );
        out.extend_from_slice(&self.hidden_until.to_be_bytes());
        if let Some(Covered { row, counts }) = &self.covered {
            for n in [counts.dependencies, counts.dependents, counts.comments] {
                out.extend_from_slice(&n.to_be_bytes());
            }
            // Ids are short (the id grammar); a parent that would not fit is left out.
            let parent = counts.parent.filter(|p| p.len() <= usize::from(u16::MAX));
            let parent = parent.unwrap_or_default();
            let parent_len = u16::try_from(parent.len()).unwrap_or_default();
            out.extend_from_slice(&parent_len.to_be_bytes());
            out.extend_from_slice(parent.as_bytes());
            out.extend_from_slice(row);
        }
        out
    }

    pub fn decode(bytes: &'a [u8]) -> ReadyEntry<'a> {
        let flags = bytes.first().copied().unwrap_or(0);
        let until = bytes.get(1..ENTRY_FLAGS_LEN).and_then(|b| <[u8; 8]>::try_from(b).ok());
        ReadyEntry {
            hidden_until: until.map_or(0, i64::from_be_bytes),
            excluded_type: flags & 1 != 0,
            ephemeral: flags & 2 != 0,
            assigned: flags & 4 != 0,
            covered: bytes.get(ENTRY_FLAGS_LEN..).and_then(decode_covered),
        }
    }
}

/// What a ready entry carries after its flags; `None` when it carries nothing.
fn decode_covered(bytes: &[u8]) -> Option<Covered<'_>> {
    let (counts, rest) = bytes.split_at_checked(ENTRY_COUNTS_LEN)?;
    let number = |at: usize| counts.get(at..at + 4)?.try_into().ok().map(u32::from_be_bytes);
    let parent_len = counts.get(12..14)?.try_into().ok().map(u16::from_be_bytes)?;
    let (parent, row) = rest.split_at_checked(usize::from(parent_len))?;
    let parent = if parent.is_empty() { None } else { Some(std::str::from_utf8(parent).ok()?) };
    Some(Covered {
        row,
        counts: EntryCounts {
            dependencies: number(0)?,
            dependents: number(4)?,
            comments: number(8)?,
            parent,
        },
    })
}

/// The ready-index key: priority ascending, then newest first, then id — `bd ready`'s order.
pub(crate) fn ready_key(issue: &Issue) -> Vec<u8> {
    let mut key = Vec::with_capacity(9 + issue.id.len());
    key.push(issue.priority);
    key.extend_from_slice(&newest_first(issue.created_at));
    key.extend_from_slice(issue.id.as_bytes());
    key
}

/// An instant as 8 bytes whose unsigned order is newest first.
pub(crate) fn newest_first(at: jiff::Timestamp) -> [u8; 8] {
    let nanos = crate::time::nanos(at);
    // Flip the sign bit so the unsigned big-endian order matches the signed order, then invert
    // all bits so later instants sort first.
    (!((nanos as u64) ^ (1 << 63))).to_be_bytes()
}

/// The least key greater than every key starting with `prefix` (`None`: there is none).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The issue id inside a ready-index key.
pub(crate) fn id_of_ready_key(key: &[u8]) -> &str {
    std::str::from_utf8(key.get(9..).unwrap_or_default()).unwrap_or_default()
}

/// The issue stored under `id`; a row that does not decode is [`StoreError::Corrupt`] naming
/// the issue.
pub(crate) fn decode_issue_of(id: &str, bytes: &[u8]) -> Result<Issue, StoreError> {
    let damaged = |why: String| StoreError::Corrupt(format!("issue {id}: {why}"));
    let payload = super::checked::open(bytes).map_err(|damage| damaged(damage.to_string()))?;
    let issue: Issue = serde_json::from_slice(payload)
        .map_err(|e| damaged(format!("its row does not decode ({e})")))?;
    if issue.id != id {
        return Err(damaged(format!("its row holds issue {:?}", issue.id)));
    }
    Ok(issue)
}

/// The payload of a checked row ([`super::checked`]) of `what`, or the damage named.
pub(crate) fn checked_payload<'r>(what: &str, bytes: &'r [u8]) -> Result<&'r [u8], StoreError> {
    super::checked::open(bytes).map_err(|damage| StoreError::Corrupt(format!("{what}: {damage}")))
}

/// The comment in row `bytes` of issue `issue`'s comments.
pub(crate) fn decode_comment_of(issue: &str, bytes: &[u8]) -> Result<Comment, StoreError> {
    let what = format!("a comment of {issue}");
    let comment: Comment = serde_json::from_slice(checked_payload(&what, bytes)?)
        .map_err(|e| StoreError::Corrupt(format!("{what}: its row does not decode ({e})")))?;
    if comment.issue_id != issue {
        return Err(StoreError::Corrupt(format!("{what}: its row is of {}", comment.issue_id)));
    }
    Ok(comment)
}

/// The edge in row `bytes` of `issue` → `target`.
pub(crate) fn decode_dep_of(
    issue: &str,
    target: &str,
    bytes: &[u8],
) -> Result<Dependency, StoreError> {
    let what = format!("the edge {issue} → {target}");
    let dep: Dependency = serde_json::from_slice(checked_payload(&what, bytes)?)
        .map_err(|e| StoreError::Corrupt(format!("{what}: its row does not decode ({e})")))?;
    if dep.issue_id != issue || dep.depends_on_id != target {
        let held = format!("{} → {}", dep.issue_id, dep.depends_on_id);
        return Err(StoreError::Corrupt(format!("{what}: its row holds {held}")));
    }
    Ok(dep)
}

/// An issue's computed counts and parent (see [`View::counts_of`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub dependencies: usize,
    pub dependents: usize,
    pub comments: usize,
    /// The first parent-child target, in target order.
    pub parent: Option<String>,
}

/// Entries of the order index as (key, value) bytes, from [`View::order_range`].
pub(crate) type OrderEntries<'a> =
    Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), StoreError>> + 'a>;

/// What readiness and the counts read of one of an issue's dependency edges: its target and
/// what the edge does to the issue. Decoded from the row without its times and texts, which
/// is most of what a refresh of a large import spends on edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeFacts {
    pub target: String,
    pub role: EdgeRole,
}

/// What a dependency edge does to readiness (spec §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EdgeRole {
    /// `blocks`, `conditional-blocks`: an unsettled target blocks.
    Blocks,
    /// A blocked parent blocks; the parent's deferral hides.
    ParentChild,
    /// The target's unsettled children block (unless one closed child is enough).
    WaitsFor { any_children: bool },
    /// Edges that do not affect readiness.
    Other,
}

impl EdgeFacts {
    /// The facts of `dep` as its stored row gives them.
    pub fn of_edge(dep: &crate::model::Dependency) -> EdgeFacts {
        EdgeFacts {
            target: dep.depends_on_id.clone(),
            role: EdgeRole::of(&dep.kind, &dep.metadata),
        }
    }
}

impl EdgeRole {
    /// What the stored edge `dep` does.
    pub fn of_edge(dep: &crate::model::Dependency) -> EdgeRole {
        EdgeRole::of(&dep.kind, &dep.metadata)
    }

    /// Whether the edge blocks through its target itself (rules 1 and 3), as opposed to a
    /// parent's blocked state or not at all.
    pub fn blocks_through_target(self) -> bool {
        matches!(self, EdgeRole::Blocks | EdgeRole::WaitsFor { .. })
    }

    fn of(kind: &str, metadata: &str) -> EdgeRole {
        match kind {
            kind if dep_type::blocks_directly(kind) => EdgeRole::Blocks,
            dep_type::PARENT_CHILD => EdgeRole::ParentChild,
            dep_type::WAITS_FOR => {
                EdgeRole::WaitsFor { any_children: crate::model::gate_is_any_children(metadata) }
            }
            _ => EdgeRole::Other,
        }
    }
}

/// The parts of a dependency row that [`EdgeFacts`] reads, borrowed from the row.
#[derive(serde::Deserialize)]
struct EdgeRow<'a> {
    #[serde(borrow, default)]
    issue_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    depends_on_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<std::borrow::Cow<'a, str>>,
}

fn decode_edge_facts(issue: &str, target: &str, row: &[u8]) -> Result<EdgeFacts, StoreError> {
    let what = format!("the edge {issue} → {target}");
    let edge: EdgeRow<'_> = serde_json::from_slice(checked_payload(&what, row)?)
        .map_err(|e| StoreError::Corrupt(format!("{what}: its row does not decode ({e})")))?;
    if edge.issue_id.as_deref().is_some_and(|i| i != issue)
        || edge.depends_on_id.as_deref().is_some_and(|t| t != target)
    {
        return Err(StoreError::Corrupt(format!("{what}: its row holds another edge")));
    }
    // A row without a type is a `blocks` edge (the model's default).
    let kind = edge.kind.as_deref().unwrap_or(dep_type::BLOCKS);
    let role = EdgeRole::of(kind, edge.metadata.as_deref().unwrap_or_default());
    Ok(EdgeFacts { target: target.to_string(), role })
}

/// Issues with their edges' facts, in id order, each issue's edges in target order.
pub(crate) type EdgesByIssue = Vec<(String, Vec<EdgeFacts>)>;

/// [`View::edges_of`] of every issue that has edges, in id order, from one pass over the
/// edge table `deps`.
pub(crate) fn edge_facts_by_issue<D>(deps: &D) -> Result<EdgesByIssue, StoreError>
where
    D: ReadableTable<(&'static str, &'static str), &'static [u8]>,
{
    let mut out: EdgesByIssue = Vec::new();
    for entry in deps.iter()? {
        let (key, row) = entry?;
        let (issue, target) = key.value();
        let edge = decode_edge_facts(issue, target, row.value())?;
        match out.last_mut() {
            Some((last, edges)) if last == issue => edges.push(edge),
            _ => out.push((issue.to_string(), vec![edge])),
        }
    }
    Ok(out)
}

/// Only the text fields of an issue row, which a search reads.
#[derive(serde::Deserialize)]
struct IssueText<'a> {
    #[serde(borrow, default)]
    title: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    description: std::borrow::Cow<'a, str>,
}

/// What [`View::scan_rows`] calls with each issue id and undecoded row: false stops the scan.
pub(crate) type RowVisitor<'a> = dyn FnMut(&str, &[u8]) -> Result<bool, StoreError> + 'a;

/// Read access shared by read and write transactions.
pub(crate) trait View {
    fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError>;
    fn contains(&self, id: &str) -> Result<bool, StoreError>;
    /// The issue in `row`, a copy of `id`'s row (a ready entry's); a row that does not decode
    /// is treated as [`View::issue`] treats it.
    fn issue_in(&self, id: &str, row: &[u8]) -> Result<Option<Issue>, StoreError>;
    /// The edges recorded on `id` (what it depends on).
    fn deps_of(&self, id: &str) -> Result<Vec<Dependency>, StoreError>;
    fn dep(&self, id: &str, target: &str) -> Result<Option<Dependency>, StoreError>;
    /// The issues that depend on `id`, with the edge type.
    fn dependents_of(&self, id: &str) -> Result<Vec<(String, String)>, StoreError>;
    fn comments_of(&self, id: &str) -> Result<Vec<Comment>, StoreError>;
    fn is_blocked(&self, id: &str) -> Result<bool, StoreError>;
    fn blocked_ids(&self) -> Result<Vec<String>, StoreError>;
    fn meta_bytes(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// Visits ready-index entries in ready order until `visit` returns false.
    fn scan_ready(
        &self,
        visit: &mut dyn FnMut(&str, ReadyEntry<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError>;
    /// Visits every issue in id order until `visit` returns false.
    fn scan_issues(
        &self,
        visit: &mut dyn FnMut(Issue) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError>;
    /// Visits every issue row, undecoded, in id order until `visit` returns false (a row that
    /// does not decode is the visitor's to treat as [`View::issue_in`] does).
    fn scan_rows(&self, visit: &mut RowVisitor<'_>) -> Result<(), StoreError>;
    /// Visits every issue id in order until `visit` returns false.
    fn scan_ids(&self, visit: &mut dyn FnMut(&str) -> bool) -> Result<(), StoreError>;
    /// Every label with the number of issues carrying it, sorted.
    fn label_counts(&self) -> Result<Vec<(String, u64)>, StoreError>;
    fn issue_count(&self) -> Result<u64, StoreError>;
    /// Visits every dependency edge in (issue, target) order until `visit` returns false.
    fn scan_deps(&self, visit: &mut dyn FnMut(Dependency) -> bool) -> Result<(), StoreError>;
    /// Visits every (issue, label) pair, in label order, until `visit` returns false.
    fn scan_labels(&self, visit: &mut dyn FnMut(&str, &str) -> bool) -> Result<(), StoreError>;
    /// Visits every edge as (issue, target, type), in target order, until `visit` returns
    /// false: the reverse index, so no edge row is decoded.
    fn scan_edge_types(
        &self,
        visit: &mut dyn FnMut(&str, &str, &str) -> bool,
    ) -> Result<(), StoreError>;
    /// Visits every comment with its issue's id, in issue order, until `visit` returns false.
    fn scan_comments(&self, visit: &mut dyn FnMut(&str, Comment) -> bool)
    -> Result<(), StoreError>;
    /// The ids of every issue carrying `label`, sorted.
    fn ids_with_label(&self, label: &str) -> Result<Vec<String>, StoreError>;
    /// The computed counts of `id` as `list --json` prints them, read from the key ranges of
    /// its edges and comments (of rows, only its own edges' types are decoded).
    fn counts_of(&self, id: &str) -> Result<Counts, StoreError> {
        self.counts_beside(id, &self.edges_of(id)?)
    }
    /// What readiness reads of `id`'s own dependency edges, in target order.
    fn edges_of(&self, id: &str) -> Result<Vec<EdgeFacts>, StoreError>;
    /// [`View::counts_of`] for an issue whose own edges are `edges` (its [`View::edges_of`]).
    fn counts_beside(&self, id: &str, edges: &[EdgeFacts]) -> Result<Counts, StoreError>;
    /// The entries of the order index whose keys start with `prefix`, in key order (or
    /// reversed); `None` when the store has no order index yet.
    fn order_range<'a>(
        &'a self,
        prefix: &[u8],
        reverse: bool,
    ) -> Result<Option<OrderEntries<'a>>, StoreError>;
    /// The number of blocked issues.
    fn blocked_count(&self) -> Result<u64, StoreError>;
    /// The ids of the issues whose id, title or description contains `needle`, by one pass
    /// over the rows that decodes only those the needle's screen lets through, and of them
    /// only the title and description; a damaged row is treated as [`View::issue`] treats it.
    fn ids_with_text(&self, needle: &TextNeedle) -> Result<HashSet<String>, StoreError>;
    /// Whether issue `id` has `needle` in its id, title or description, decoding only the
    /// title and description of its row (false when there is no such issue).
    fn has_text(&self, id: &str, needle: &TextNeedle) -> Result<bool, StoreError>;
    /// The meta entries whose keys start with `prefix`, with the prefix cut off.
    fn meta_with_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError>;

    /// Reads every edge and comment row, each checked against its key, and the reverse edge
    /// index against the edges: a flipped byte in a key moves a row out of its issue's range,
    /// where reads by issue no longer meet it. A full dump (an export) ends with this, so what
    /// it left out is reported as damage instead of missing silently.
    fn check_links(&self) -> Result<(), StoreError> {
        let mut forward = Vec::new();
        self.scan_deps(&mut |dep| {
            forward.push((dep.depends_on_id, dep.issue_id, dep.kind));
            true
        })?;
        forward.sort();
        let mut reverse = Vec::new();
        self.scan_edge_types(&mut |id, target, kind| {
            reverse.push((target.to_string(), id.to_string(), kind.to_string()));
            true
        })?;
        if forward != reverse {
            return Err(StoreError::Corrupt(
                "the reverse edge index disagrees with the edges".into(),
            ));
        }
        self.scan_comments(&mut |_, _| true)
    }

    fn meta_u64(&self, key: &str) -> Result<u64, StoreError> {
        Ok(super::meta::counter(self.meta_bytes(key)?.as_deref()))
    }

    /// The parent-child parents of `id`.
    fn parents_of(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .edges_of(id)?
            .into_iter()
            .filter(|edge| edge.role == EdgeRole::ParentChild)
            .map(|edge| edge.target)
            .collect())
    }

    /// The ids that depend on `id` through edges of type `kind`.
    fn dependents_by(&self, id: &str, kind: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .dependents_of(id)?
            .into_iter()
            .filter(|(_, k)| k == kind)
            .map(|(issue, _)| issue)
            .collect())
    }
}

/// A table this large is searched by two scans at once, one from each end ([`View::ids_with_text`]).
pub(super) const SCANNED_FROM_BOTH_ENDS: u64 = 20_000;

/// An entry of the issue table as its iterators give it.
type IssueEntry<'a> = Result<
    (redb::AccessGuard<'a, &'static str>, redb::AccessGuard<'a, &'static [u8]>),
    redb::StorageError,
>;

impl<I, D, R, C, L, Y, B, M, O> View for TableSet<I, D, R, C, L, Y, B, M, O>
where
    I: ReadableTable<&'static str, &'static [u8]> + Sync,
    D: ReadableTable<(&'static str, &'static str), &'static [u8]> + Sync,
    R: ReadableTable<(&'static str, &'static str), &'static str> + Sync,
    C: ReadableTable<(&'static str, u64), &'static [u8]> + Sync,
    L: ReadableTable<(&'static str, &'static str), ()> + Sync,
    Y: ReadableTable<&'static [u8], &'static [u8]> + Sync,
    B: ReadableTable<&'static str, ()> + Sync,
    M: ReadableTable<&'static str, &'static [u8]> + Sync,
    O: ReadableTable<&'static [u8], &'static [u8]> + Sync,
{
    fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        match self.issues.get(id)? {
            Some(row) => self.decode_or_skip(id, row.value()),
            None => Ok(None),
        }
    }

    fn contains(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.issues.get(id)?.is_some())
    }

    fn issue_in(&self, id: &str, row: &[u8]) -> Result<Option<Issue>, StoreError> {
        self.decode_or_skip(id, row)
    }

    fn deps_of(&self, id: &str) -> Result<Vec<Dependency>, StoreError> {
        let mut out = Vec::new();
        for entry in self.deps().range((id, "")..=(id, MAX_KEY))? {
            let (key, row) = entry?;
            out.push(decode_dep_of(id, key.value().1, row.value())?);
        }
        Ok(out)
    }

    fn dep(&self, id: &str, target: &str) -> Result<Option<Dependency>, StoreError> {
        match self.deps().get((id, target))? {
            Some(row) => decode_dep_of(id, target, row.value()).map(Some),
            None => Ok(None),
        }
    }

    fn dependents_of(&self, id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for entry in self.rdeps.range((id, "")..=(id, MAX_KEY))? {
            let (key, kind) = entry?;
            out.push((key.value().1.to_string(), kind.value().to_string()));
        }
        Ok(out)
    }

    fn comments_of(&self, id: &str) -> Result<Vec<Comment>, StoreError> {
        let mut out = Vec::new();
        for entry in self.comments.range((id, 0)..=(id, u64::MAX))? {
            let (_, row) = entry?;
            out.push(decode_comment_of(id, row.value())?);
        }
        Ok(out)
    }

    fn is_blocked(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.blocked.get(id)?.is_some())
    }

    fn blocked_ids(&self) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for entry in self.blocked.iter()? {
            out.push(entry?.0.value().to_string());
        }
        Ok(out)
    }

    fn meta_bytes(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.meta.get(key)?.map(|v| v.value().to_vec()))
    }

    fn scan_ready(
        &self,
        visit: &mut dyn FnMut(&str, ReadyEntry<'_>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        for entry in self.ready.iter()? {
            let (key, value) = entry?;
            if !visit(id_of_ready_key(key.value()), ReadyEntry::decode(value.value()))? {
                break;
            }
        }
        Ok(())
    }

    fn scan_issues(
        &self,
        visit: &mut dyn FnMut(Issue) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        self.scan_rows(&mut |id, row| match self.decode_or_skip(id, row)? {
            Some(issue) => visit(issue),
            None => Ok(true),
        })
    }

    fn scan_rows(&self, visit: &mut RowVisitor<'_>) -> Result<(), StoreError> {
        for entry in self.issues.iter()? {
            let (key, row) = entry?;
            if !visit(key.value(), row.value())? {
                break;
            }
        }
        Ok(())
    }

    fn scan_ids(&self, visit: &mut dyn FnMut(&str) -> bool) -> Result<(), StoreError> {
        for entry in self.issues.iter()? {
            let (key, _) = entry?;
            if !visit(key.value()) {
                break;
            }
        }
        Ok(())
    }

    fn label_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut out: Vec<(String, u64)> = Vec::new();
        for entry in self.labels.iter()? {
            let (key, _) = entry?;
            let label = key.value().0;
            match out.last_mut() {
                Some((last, count)) if last == label => *count += 1,
                _ => out.push((label.to_string(), 1)),
            }
        }
        Ok(out)
    }

    fn issue_count(&self) -> Result<u64, StoreError> {
        Ok(self.issues.len()?)
    }

    fn scan_deps(&self, visit: &mut dyn FnMut(Dependency) -> bool) -> Result<(), StoreError> {
        for entry in self.deps().iter()? {
            let (key, row) = entry?;
            let (issue, target) = key.value();
            if !visit(decode_dep_of(issue, target, row.value())?) {
                break;
            }
        }
        Ok(())
    }

    fn scan_labels(&self, visit: &mut dyn FnMut(&str, &str) -> bool) -> Result<(), StoreError> {
        for entry in self.labels.iter()? {
            let (key, _) = entry?;
            let (label, id) = key.value();
            if !visit(id, label) {
                break;
            }
        }
        Ok(())
    }

    fn scan_edge_types(
        &self,
        visit: &mut dyn FnMut(&str, &str, &str) -> bool,
    ) -> Result<(), StoreError> {
        for entry in self.rdeps.iter()? {
            let (key, kind) = entry?;
            let (target, id) = key.value();
            if !visit(id, target, kind.value()) {
                break;
            }
        }
        Ok(())
    }

    fn scan_comments(
        &self,
        visit: &mut dyn FnMut(&str, Comment) -> bool,
    ) -> Result<(), StoreError> {
        for entry in self.comments.iter()? {
            let (key, row) = entry?;
            let issue = key.value().0;
            if !visit(issue, decode_comment_of(issue, row.value())?) {
                break;
            }
        }
        Ok(())
    }

    fn ids_with_label(&self, label: &str) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for entry in self.labels.range((label, "")..=(label, MAX_KEY))? {
            out.push(entry?.0.value().1.to_string());
        }
        Ok(out)
    }

    fn edges_of(&self, id: &str) -> Result<Vec<EdgeFacts>, StoreError> {
        let mut out = Vec::new();
        for entry in self.deps().range((id, "")..=(id, MAX_KEY))? {
            let (key, row) = entry?;
            out.push(decode_edge_facts(id, key.value().1, row.value())?);
        }
        Ok(out)
    }

    fn counts_beside(&self, id: &str, edges: &[EdgeFacts]) -> Result<Counts, StoreError> {
        let mut counts = Counts {
            dependencies: edges.len(),
            parent: edges
                .iter()
                .find(|edge| edge.role == EdgeRole::ParentChild)
                .map(|edge| edge.target.clone()),
            ..Counts::default()
        };
        for entry in self.rdeps.range((id, "")..=(id, MAX_KEY))? {
            entry?;
            counts.dependents += 1;
        }
        for entry in self.comments.range((id, 0)..=(id, u64::MAX))? {
            entry?;
            counts.comments += 1;
        }
        Ok(counts)
    }

    fn order_range<'a>(
        &'a self,
        prefix: &[u8],
        reverse: bool,
    ) -> Result<Option<OrderEntries<'a>>, StoreError> {
        let Some(order) = &self.order else { return Ok(None) };
        let range = match prefix_end(prefix) {
            Some(end) => order.range(prefix..end.as_slice())?,
            None => order.range(prefix..)?,
        };
        let owned = |entry: Result<_, redb::StorageError>| {
            let (key, value): (redb::AccessGuard<'_, &[u8]>, redb::AccessGuard<'_, &[u8]>) = entry?;
            Ok((key.value().to_vec(), value.value().to_vec()))
        };
        Ok(Some(if reverse {
            Box::new(range.rev().map(owned))
        } else {
            Box::new(range.map(owned))
        }))
    }

    fn blocked_count(&self) -> Result<u64, StoreError> {
        Ok(self.blocked.len()?)
    }

    fn ids_with_text(&self, needle: &TextNeedle) -> Result<HashSet<String>, StoreError> {
        let total = self.issue_count()?;
        // Each row is read by the one scan that claims it: one from the first row on, one
        // (for a large table) from the last row back, until every row is claimed.
        let claimed = AtomicU64::new(0);
        let scan = |rows: &mut dyn Iterator<Item = IssueEntry<'_>>| {
            let (mut hits, mut scratch) = (Vec::new(), Vec::new());
            while claimed.fetch_add(1, Ordering::Relaxed) < total {
                let Some(entry) = rows.next() else { break };
                let (key, row) = entry?;
                let (id, row) = (key.value(), row.value());
                // The id is the row's key, which the screen of the row does not see.
                let may_match = needle.row_may_match(row, &mut scratch) || needle.occurs_in(id);
                if may_match && self.row_has_text(id, row, needle)? {
                    hits.push(id.to_string());
                }
            }
            Ok::<_, StoreError>(hits)
        };
        let (front, back) = if total < SCANNED_FROM_BOTH_ENDS {
            (scan(&mut self.issues.iter()?), Ok(Vec::new()))
        } else {
            let (forward, backward) = (self.issues.iter()?, self.issues.iter()?.rev());
            let carried = super::guard::carry();
            std::thread::scope(|scope| {
                let back = scope.spawn(|| carried.run(|| scan(&mut { backward })));
                let front = scan(&mut { forward });
                (front, back.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            })
        };
        Ok(front?.into_iter().chain(back?).collect())
    }

    fn has_text(&self, id: &str, needle: &TextNeedle) -> Result<bool, StoreError> {
        match self.issues.get(id)? {
            Some(row) => self.row_has_text(id, row.value(), needle),
            None => Ok(false),
        }
    }

    fn meta_with_prefix(&self, prefix: &str) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        for entry in self.meta.range(prefix..)? {
            let (key, value) = entry?;
            let Some(name) = key.value().strip_prefix(prefix) else { break };
            out.push((name.to_string(), value.value().to_vec()));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_keys_sort_by_priority_then_newest() {
        let at = |s: &str| s.parse().unwrap();
        let mut old = Issue::new("a-1".into(), "t".into(), at("2020-01-01T00:00:00Z"));
        let mut new = Issue::new("a-2".into(), "t".into(), at("2024-01-01T00:00:00Z"));
        old.priority = 1;
        new.priority = 1;
        assert!(ready_key(&new) < ready_key(&old));
        new.priority = 2;
        assert!(ready_key(&old) < ready_key(&new));
        assert_eq!(id_of_ready_key(&ready_key(&old)), "a-1");
    }

    #[test]
    fn ready_entries_round_trip() {
        let counts = Counts { dependencies: 3, dependents: 70_000, comments: 1, parent: None };
        let with_parent = Counts { parent: Some("t-1.2".into()), ..counts.clone() };
        let row = br#"{"id":"t-1.2.1"}"#;
        for covered in [
            None,
            Some(Covered { row, counts: EntryCounts::of(&counts) }),
            Some(Covered { row, counts: EntryCounts::of(&with_parent) }),
        ] {
            let entry = ReadyEntry {
                hidden_until: -5,
                excluded_type: true,
                ephemeral: false,
                assigned: true,
                covered,
            };
            assert_eq!(ReadyEntry::decode(&entry.encode()), entry);
        }
        assert_eq!(EntryCounts::of(&with_parent).to_counts(), with_parent);
    }

    /// Entries written before entries carried rows and counts (nine bytes) still decode.
    #[test]
    fn an_entry_without_a_row_decodes_as_such() {
        let mut old = vec![4u8];
        old.extend_from_slice(&7i64.to_be_bytes());
        let entry = ReadyEntry::decode(&old);
        assert!(entry.assigned && entry.hidden_until == 7 && entry.covered.is_none());
    }
}
