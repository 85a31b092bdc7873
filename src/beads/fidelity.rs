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

use super::batch::{Batch, MEMORY_PREFIX};
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

/// Sources of at least this many issues are counted on every core.
const PARALLEL_FROM: usize = 4096;

/// The fixed-seed hash of one fact (the same in every process and run).
fn fact(parts: impl Hash) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(parts)
}

fn comment_fact(issue: &str, comment: &Comment) -> u64 {
    fact((issue, &comment.author, comment.created_at, &comment.text))
}

impl Expected {
    pub fn of(batch: &Batch) -> Expected {
        Expected::of_on(batch, crate::parallel::cores())
    }

    /// [`Expected::of`], a large source counted on `threads` threads.
    fn of_on(batch: &Batch, threads: usize) -> Expected {
        let mut last: HashMap<&str, &Record> = HashMap::with_capacity(batch.records.len());
        for (_, record) in &batch.records {
            last.insert(record.issue.id.as_str(), record);
        }
        let last: Vec<(&str, &Record)> = last.into_iter().collect();
        // A large source is counted on every thread, a share of its issues each.
        let threads = if last.len() < PARALLEL_FROM { 1 } else { threads.max(1) };
        let share = last.len().div_ceil(threads).max(1);
        let mut parts =
            crate::parallel::on_threads(last.chunks(share), Expected::of_records).into_iter();
        let mut expected = parts.next().unwrap_or_else(|| Expected::of_records(&[]));
        parts.for_each(|part| expected.absorb(part));
        expected.memories = batch
            .memories
            .iter()
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .cloned()
            .collect();
        expected.tombstones = batch.tombstones;
        expected
    }

    /// The facts of `records` (each the last line of its id), without memories or tombstones.
    fn of_records(records: &[(&str, &Record)]) -> Expected {
        let mut expected = Expected {
            ids: records.iter().map(|(id, _)| id.to_string()).collect(),
            issues: HashSet::with_capacity(records.len()),
            labels: HashSet::default(),
            edges: HashMap::with_capacity(records.len() * 2),
            edge_types: BTreeMap::new(),
            comments: HashMap::default(),
            comment_total: 0,
            memories: std::collections::HashMap::new(),
            tombstones: 0,
        };
        for &(id, record) in records {
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

    /// Adds the facts of `other`, counted from other issues.
    fn absorb(&mut self, other: Expected) {
        self.ids.extend(other.ids);
        self.issues.extend(other.issues);
        self.labels.extend(other.labels);
        // Edge pairs start with their issue's id: no pair is in both.
        self.edges.extend(other.edges);
        for (kind, count) in other.edge_types {
            *self.edge_types.entry(kind).or_default() += count;
        }
        for (comment, count) in other.comments {
            *self.comments.entry(comment).or_default() += count;
        }
        self.comment_total += other.comment_total;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fact of an [`Expected`], sorted, so that two computations compare whole.
    #[derive(Debug, PartialEq)]
    struct AllFacts {
        counts: Counts,
        issues_and_labels: Vec<u64>,
        edges: Vec<(u64, u64)>,
        comments: Vec<(u64, usize)>,
    }

    fn facts(expected: &Expected) -> AllFacts {
        let sorted = |mut v: Vec<u64>| {
            v.sort_unstable();
            v
        };
        let mut edges: Vec<(u64, u64)> = expected.edges.iter().map(|(k, v)| (*k, *v)).collect();
        edges.sort_unstable();
        let mut comments: Vec<(u64, usize)> =
            expected.comments.iter().map(|(k, v)| (*k, *v)).collect();
        comments.sort_unstable();
        let mut issues = sorted(expected.issues.iter().copied().collect());
        issues.extend(sorted(expected.labels.iter().copied().collect()));
        AllFacts { counts: expected.source(), issues_and_labels: issues, edges, comments }
    }

    /// A source large enough to be counted on several cores gives the facts one pass over it
    /// gives: repeated ids (the last line counts), repeated edge pairs (the first counts), and
    /// comments repeated within an issue.
    #[test]
    fn a_large_source_counted_on_every_core_has_the_facts_of_one_pass() {
        let mut text = String::new();
        for n in 0..6000 {
            let id = format!("fd-{}", n % 5000);
            let line = serde_json::json!({
                "id": id, "title": format!("issue {n}"), "labels": [format!("l{}", n % 7), "all"],
                "dependencies": [
                    {"issue_id": id, "depends_on_id": format!("fd-{}", (n + 1) % 5000), "type": "blocks"},
                    {"issue_id": id, "depends_on_id": format!("fd-{}", (n + 1) % 5000), "type": "related"},
                    {"issue_id": id, "depends_on_id": format!("fd-{}", (n + 2) % 5000), "type": "parent-child"}],
                "comments": [
                    {"id": 1, "issue_id": id, "author": "ann", "text": "same", "created_at": "2026-01-01T00:00:00Z"},
                    {"id": 2, "issue_id": id, "author": "ann", "text": "same", "created_at": "2026-01-01T00:00:00Z"}],
            });
            text.push_str(&format!("{line}\n"));
        }
        let batch = super::super::import::read_jsonl(
            text.as_bytes(),
            jiff::Timestamp::UNIX_EPOCH,
            &super::super::NoProgress,
        );
        assert_eq!(batch.records.len(), 6000);
        let mut last: HashMap<&str, &Record> = HashMap::new();
        for (_, record) in &batch.records {
            last.insert(record.issue.id.as_str(), record);
        }
        let last: Vec<(&str, &Record)> = last.into_iter().collect();
        let one_pass = Expected::of_records(&last);
        let counted = Expected::of_on(&batch, 3);
        assert_eq!(facts(&counted), facts(&one_pass));
        let source = counted.source();
        assert_eq!((source.issues, source.comments, source.labels), (5000, 10_000, 10_000));
        assert_eq!(source.edges.values().sum::<usize>(), 10_000);
    }
}
