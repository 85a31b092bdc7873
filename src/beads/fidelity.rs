//! Import fidelity: what a source holds and how much of it the store holds after the import —
//! issues, edges by type, comments, labels, memories and tombstones — so the import summary
//! can show the two side by side. A difference is accounted for by the skips the report
//! lists with their reasons (tombstones, stale rows, skipped dependencies, events).
//!
//! Store-side counts are of the source's own items found in the store (an edge of the same
//! type between the same issues, a comment with the same author, time and text, a label on
//! the issue, a memory with the same value), so items the store had before do not inflate
//! them.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::import::{Batch, MEMORY_PREFIX};
use super::jsonl::Record;
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
/// one), and the last value of each memory key.
pub(crate) struct Expected {
    records: HashMap<String, Record>,
    memories: HashMap<String, String>,
    tombstones: usize,
}

impl Expected {
    pub fn of(batch: &Batch) -> Expected {
        let records = batch.records.iter().map(|(_, r)| (r.issue.id.clone(), r.clone())).collect();
        let memories = batch
            .memories
            .iter()
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .cloned()
            .collect();
        Expected { records, memories, tombstones: batch.tombstones }
    }

    /// The counts of the source.
    pub fn source(&self) -> Counts {
        let mut counts = Counts {
            issues: self.records.len(),
            memories: self.memories.len(),
            tombstones: self.tombstones,
            ..Counts::default()
        };
        for record in self.records.values() {
            let mut pairs = HashSet::new();
            for dep in &record.deps {
                if pairs.insert(&dep.depends_on_id) {
                    *counts.edges.entry(dep.kind.clone()).or_default() += 1;
                }
            }
            counts.comments += record.comments.len();
            counts.labels += record.issue.labels.iter().collect::<HashSet<_>>().len();
        }
        counts
    }

    /// How many of the source's items `view` holds.
    pub(crate) fn stored(
        &self,
        view: &dyn View,
        config: &[(String, String)],
    ) -> Result<Counts, StoreError> {
        let mut counts = Counts::default();
        for (id, record) in &self.records {
            let Some(issue) = view.issue(id)? else { continue };
            counts.issues += 1;
            let labels: HashSet<&String> = record.issue.labels.iter().collect();
            counts.labels += labels.iter().filter(|l| issue.labels.contains(l)).count();
            let stored: HashMap<String, String> =
                view.deps_of(id)?.into_iter().map(|d| (d.depends_on_id, d.kind)).collect();
            let mut pairs = HashSet::new();
            for dep in &record.deps {
                if pairs.insert(&dep.depends_on_id)
                    && stored.get(&dep.depends_on_id) == Some(&dep.kind)
                {
                    *counts.edges.entry(dep.kind.clone()).or_default() += 1;
                }
            }
            let comments: HashSet<_> = view
                .comments_of(id)?
                .into_iter()
                .map(|c| (c.author, c.created_at, c.text))
                .collect();
            counts.comments += record
                .comments
                .iter()
                .filter(|c| comments.contains(&(c.author.clone(), c.created_at, c.text.clone())))
                .count();
        }
        let config: HashMap<&str, &str> =
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
