//! What was read from a beads source (a JSONL file, a legacy SQLite database, a Python-fleet
//! home) before it meets the store: records with the lines they came from, memories,
//! tombstones and unreadable lines, and what the source says of itself (its prefix, its
//! settings). The importer plans against it; the fidelity check counts it.

use std::collections::BTreeMap;

use foldhash::{HashSet, HashSetExt};

use super::BeadsError;
use super::jsonl::{BadLine, Record};
use crate::model::FleetFields;

/// Configuration key prefix of imported memories (`bd remember`).
pub const MEMORY_PREFIX: &str = "kv.memory.";

/// Everything read from a source, before it meets the store.
#[derive(Debug, Default)]
pub struct Batch {
    /// Issue records with the line (or row) they came from, in source order.
    pub records: Vec<(usize, Record)>,
    /// `bd remember` memories, in source order.
    pub memories: Vec<(String, String)>,
    pub tombstones: usize,
    /// `_schema` header lines.
    pub headers: usize,
    /// Lines that could not be read.
    pub bad_lines: Vec<BadLine>,
    /// The prefix the source says it uses (a legacy database's `issue_prefix`).
    pub prefix_hint: Option<String>,
    /// Settings the source carries (a legacy database's config table), stored as they are.
    pub config: Vec<(String, String)>,
    /// Rows of a legacy database's events table (an audit trail; not imported).
    pub events_skipped: usize,
    /// Lines (or rows) read.
    pub lines: usize,
}

impl Batch {
    /// The first unreadable line as an error, if any.
    pub fn first_error(&self) -> Option<BeadsError> {
        self.bad_lines
            .first()
            .map(|bad| BeadsError::Line { line: bad.line, message: bad.error.clone() })
    }

    /// Sets fleet fields from a Python-fleet home's task.json files on the issues they name.
    /// Returns how many issues got them and the task ids that match no issue of the batch.
    pub fn apply_tasks(&mut self, tasks: &BTreeMap<String, FleetFields>) -> (usize, Vec<String>) {
        let mut matched = HashSet::new();
        for (_, record) in &mut self.records {
            if let Some(fields) = tasks.get(&record.issue.id) {
                record.issue.fleet = fields.clone();
                matched.insert(record.issue.id.clone());
            }
        }
        let unmatched = tasks.keys().filter(|id| !matched.contains(*id)).cloned().collect();
        (matched.len(), unmatched)
    }

    /// Resolves working directories written relative to a project (as exports write them)
    /// against `root`, the project the batch is imported into.
    pub fn resolve_relative_cwds(&mut self, root: &std::path::Path) {
        for (_, record) in &mut self.records {
            let cwd = &mut record.issue.fleet.cwd;
            if !cwd.is_empty() && !std::path::Path::new(cwd.as_str()).is_absolute() {
                let joined = if cwd == "." { root.to_path_buf() } else { root.join(&*cwd) };
                *cwd = joined.display().to_string();
            }
        }
    }

    /// The id prefix to initialise a new workspace with: the source's own, else the one the
    /// first issue's id suggests.
    pub fn detect_prefix(&self) -> Option<String> {
        if let Some(hint) = &self.prefix_hint
            && crate::id::validate_prefix(hint).is_ok()
        {
            return Some(hint.clone());
        }
        let first = self.records.first()?.1.issue.id.as_str();
        prefix_of(first, self.records.iter().map(|(_, r)| r.issue.id.as_str()))
    }
}

/// The prefix of `first`: of its hyphen-separated beginnings (`my`, `my-proj` for
/// `my-proj-a1b.2`), the longest that every id sharing the shortest one also shares — so
/// `bd-wisp-x` among `bd-…` ids gives `bd`, while a workspace whose ids all start `my-proj-`
/// gives `my-proj`.
fn prefix_of<'a>(first: &str, ids: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
    let base = first.split('.').next().unwrap_or(first);
    let cuts: Vec<usize> = base.match_indices('-').map(|(at, _)| at).collect();
    let candidates: Vec<&str> = cuts.iter().map(|&at| &base[..at]).collect();
    let count = |prefix: &str| {
        let with_dash = format!("{prefix}-");
        ids.clone().filter(|id| id.starts_with(&with_dash)).count()
    };
    let shortest = *candidates.first()?;
    let total = count(shortest);
    let chosen = candidates.iter().rev().find(|c| count(c) == total).copied().unwrap_or(shortest);
    let chosen = chosen.to_ascii_lowercase();
    crate::id::validate_prefix(&chosen).is_ok().then_some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_come_from_the_ids() {
        let ids = ["bd-abc", "bd-wisp-x1", "bd-def.1"];
        assert_eq!(prefix_of("bd-wisp-x1", ids.into_iter()).as_deref(), Some("bd"));
        let ids = ["my-proj-a1", "my-proj-b2"];
        assert_eq!(prefix_of("my-proj-a1", ids.into_iter()).as_deref(), Some("my-proj"));
        assert_eq!(prefix_of("nohyphen", ["nohyphen"].into_iter()), None);
    }
}
