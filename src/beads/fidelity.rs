//! Import fidelity: what a source holds and how much of it the store holds after the import —
//! issues, edges by type, comments, labels, memories and tombstones — so the import summary
//! can show the two side by side. A difference is accounted for by the skips the report
//! lists with their reasons (tombstones, stale rows, skipped dependencies, events).
//!
//! Store-side counts are of the source's own items found in the store (an edge of the same
//! type between the same issues, a comment with the same author, time and text, a label on
//! the issue, a memory with the same value), so items the store had before do not inflate
//! them.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hash};

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::Serialize;

use super::import::{Batch, MEMORY_PREFIX};
use super::jsonl::Record;
use crate::model::Comment;
use crate::store::{StoreError, View};

/// Counts of one side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub issues: usize,
    /// Edges by type.
    pub edges: BTreeMap<String, usize>,
    pub comments: usize,
    pub labels: usize,
    pub memories: usize,
    pub tombstones: usize,
}

impl Counts {
    pub fn edge_total(&self) -> usize {
        self.edges.values().sum()
    }
}

/// Both sides of an import.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fidelity {
    pub source: Counts,
    /// Absent for a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<Counts>,
}

/// What the source of `batch` wants stored: the last line of each id (as the import keeps
/// one), and the last value of each memory key. Held as hashed facts rather than copies of
/// the records, so counting a large import costs little memory; a 64-bit hash makes a false
/// match between two different facts of one import vanishingly unlikely.
pub(crate) struct Expected {
    /// The ids, and their hashes.
    ids: Vec<String>,
    issues: HashSet<u64>,
    /// (issue, label).
    labels: HashSet<u64>,
    /// (issue, target) → the hash of the edge's type: the first edge of each pair, as a
    /// stored issue holds one edge per pair.
    edges: HashMap<u64, u64>,
    /// The source's edges of each type.
    edge_types: BTreeMap<String, usize>,
    /// (issue, author, time, text) → how many of the source's comments are that comment.
    comments: HashMap<u64, usize>,
    comment_total: usize,
    memories: std::collections::HashMap<String, String>,
    tombstones: usize,
}

/// The fixed-seed hash of one fact (the same in every process and run).
fn fact(parts: impl Hash) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(parts)
}

fn comment_fact(issue: &str, comment: &Comment) -> u64 {
    fact((issue, &comment.author, comment.created_at, &comment.text))
}

impl Expected {
    pub fn of(batch: &Batch) -> Expected {
        let mut last: HashMap<&str, &Record> = HashMap::with_capacity(batch.records.len());
        for (_, record) in &batch.records {
            last.insert(record.issue.id.as_str(), record);
        }
        let mut expected = Expected {
            ids: last.keys().map(|id| id.to_string()).collect(),
            issues: HashSet::with_capacity(last.len()),
            labels: HashSet::default(),
            edges: HashMap::with_capacity(last.len() * 2),
            edge_types: BTreeMap::new(),
            comments: HashMap::default(),
            comment_total: 0,
            memories: batch
                .memories
                .iter()
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .cloned()
                .collect(),
            tombstones: batch.tombstones,
        };
        for (id, record) in last {
            expected.issues.insert(fact(id));
            for label in &record.issue.labels {
                expected.labels.insert(fact((id, label)));
            }
            for dep in &record.deps {
                let pair = fact((id, &dep.depends_on_id));
                if let std::collections::hash_map::Entry::Vacant(slot) = expected.edges.entry(pair)
                {
                    slot.insert(fact(&dep.kind));
                    *expected.edge_types.entry(dep.kind.clone()).or_default() += 1;
                }
            }
            for comment in &record.comments {
                *expected.comments.entry(comment_fact(id, comment)).or_default() += 1;
            }
            expected.comment_total += record.comments.len();
        }
        expected
    }

    /// The counts of the source.
    pub fn source(&self) -> Counts {
        Counts {
            issues: self.issues.len(),
            edges: self.edge_types.clone(),
            comments: self.comment_total,
            labels: self.labels.len(),
            memories: self.memories.len(),
            tombstones: self.tombstones,
        }
    }

    /// How many of the source's items `view` holds. A store that this import makes up a good
    /// part of is read table by table, in key order; otherwise each imported issue is looked
    /// up, so a small import into a large store reads only its own issues.
    pub(crate) fn stored(
        &self,
        view: &dyn View,
        config: &[(String, String)],
    ) -> Result<Counts, StoreError> {
        let mut tally =
            Tally { expected: self, counts: Counts::default(), comments_seen: HashMap::default() };
        if self.issues.len().saturating_mul(SCAN_RATIO)
            >= usize::try_from(view.issue_count()?).unwrap_or(usize::MAX)
        {
            tally.scan(view)?;
        } else {
            for id in &self.ids {
                tally.look_up(view, id)?;
            }
        }
        let mut counts = tally.counts;
        let config: std::collections::HashMap<&str, &str> =
            config.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        counts.memories = self
            .memories
            .iter()
            .filter(|(k, v)| {
                config.get(format!("{MEMORY_PREFIX}{k}").as_str()) == Some(&v.as_str())
            })
            .count();
        Ok(counts)
    }
}

/// A store holding at most this many times the import's issues is scanned whole.
const SCAN_RATIO: usize = 4;

/// The store's items matched against the source's, whichever way they are read.
struct Tally<'e> {
    expected: &'e Expected,
    counts: Counts,
    /// Stored comments matched so far, per fact: a source comment is counted once per stored
    /// copy at most.
    comments_seen: HashMap<u64, usize>,
}

impl Tally<'_> {
    fn issue(&mut self, id: &str) {
        if self.expected.issues.contains(&fact(id)) {
            self.counts.issues += 1;
        }
    }

    fn label(&mut self, id: &str, label: &str) {
        if self.expected.labels.contains(&fact((id, label))) {
            self.counts.labels += 1;
        }
    }

    fn edge(&mut self, id: &str, target: &str, kind: &str) {
        if self.expected.edges.get(&fact((id, target))) == Some(&fact(kind)) {
            *self.counts.edges.entry(kind.to_string()).or_default() += 1;
        }
    }

    fn comment(&mut self, id: &str, comment: &Comment) {
        let key = comment_fact(id, comment);
        let Some(&wanted) = self.expected.comments.get(&key) else { return };
        let seen = self.comments_seen.entry(key).or_default();
        if *seen == 0 {
            // One stored copy accounts for every source line of that comment, as the import
            // stores a repeated comment once.
            self.counts.comments += wanted;
        }
        *seen += 1;
    }

    /// Reads every table whole.
    fn scan(&mut self, view: &dyn View) -> Result<(), StoreError> {
        view.scan_ids(&mut |id| {
            self.issue(id);
            true
        })?;
        view.scan_labels(&mut |id, label| {
            self.label(id, label);
            true
        })?;
        view.scan_edge_types(&mut |id, target, kind| {
            self.edge(id, target, kind);
            true
        })?;
        view.scan_comments(&mut |id, comment| {
            self.comment(id, &comment);
            true
        })
    }

    /// Reads one issue with its edges and comments.
    fn look_up(&mut self, view: &dyn View, id: &str) -> Result<(), StoreError> {
        let Some(issue) = view.issue(id)? else { return Ok(()) };
        self.issue(id);
        let labels: std::collections::HashSet<&String> = issue.labels.iter().collect();
        for label in labels {
            self.label(id, label);
        }
        for dep in view.deps_of(id)? {
            self.edge(id, &dep.depends_on_id, &dep.kind);
        }
        for comment in view.comments_of(id)? {
            self.comment(id, &comment);
        }
        Ok(())
    }
}
