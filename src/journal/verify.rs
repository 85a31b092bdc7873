//! Checking that the store and the git journal agree ([`verify`]).
//!
//! The ops of this replica in the store's journal, in journal order, and the ops on the
//! replica's ref, oldest commit first, must be the same ops in the same order, up to what the
//! store recorded as committed; the first place they differ is reported. The ref may be ahead
//! of the committed mark (a commit whose mark was not recorded yet) as long as it holds the
//! store's next ops.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use super::repo::JournalRepo;
use super::{JournalError, ref_name};
use crate::op::Op;
use crate::store::Store;

/// What [`verify`] found.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// Whether store and journal agree.
    pub ok: bool,
    /// The journal repository's git directory, if there is one.
    pub repo: Option<PathBuf>,
    pub reference: String,
    /// The journal sequence the store recorded as committed.
    pub committed_seq: u64,
    /// This replica's ops in the store's journal, and how many of them are committed.
    pub store_ops: usize,
    pub store_committed_ops: usize,
    /// Ops and commits on the ref.
    pub journal_ops: usize,
    pub commits: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
}

/// The first place store and journal differ.
#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    /// 1-based position among this replica's ops.
    pub position: usize,
    /// The store's journal sequence of the op there, if the store has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The op id there (the store's, else the journal's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// The journal commit holding the op there, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// What differs.
    pub what: String,
}

/// Compares this replica's ops in the store with those on its journal ref.
pub fn verify(store: &Store) -> Result<VerifyReport, JournalError> {
    let replica = &store.replica();
    let committed = store.journal_committed()?;
    let ours: Vec<(u64, Op)> =
        store.journal(1)?.into_iter().filter(|(_, op)| op.meta.replica == *replica).collect();
    let committed_ops = ours.iter().take_while(|(seq, _)| *seq <= committed).count();
    let mut report = VerifyReport {
        ok: true,
        repo: None,
        reference: ref_name(replica),
        committed_seq: committed,
        store_ops: ours.len(),
        store_committed_ops: committed_ops,
        journal_ops: 0,
        commits: 0,
        divergence: None,
    };
    let repo = JournalRepo::find(store.dir())?;
    let journal = match &repo {
        Some(repo) => {
            report.repo = Some(repo.git_dir().to_path_buf());
            read_with_commits(repo, replica)
        }
        None => Ok(Vec::new()),
    };
    let divergence = match journal {
        Ok(journal) => {
            report.journal_ops = journal.len();
            report.commits = count_commits(&journal);
            first_divergence(&ours, &journal, committed_ops, committed)
        }
        Err(JournalError::Format { commit, reason, .. }) => Some(Divergence {
            position: 1,
            seq: None,
            op: None,
            commit: Some(commit.clone()),
            what: format!("commit {commit} on the ref is not a journal batch: {reason}"),
        }),
        Err(error) => return Err(error),
    };
    report.ok = divergence.is_none();
    report.divergence = divergence;
    Ok(report)
}

/// The ref's ops, oldest first, each with its commit.
fn read_with_commits(repo: &JournalRepo, replica: &str) -> Result<Vec<(String, Op)>, JournalError> {
    let mut batches = repo.chain(replica, usize::MAX)?;
    batches.reverse();
    let mut out = Vec::new();
    for batch in &batches {
        let commit = batch.id.to_string();
        out.extend(repo.ops(replica, batch)?.into_iter().map(|op| (commit.clone(), op)));
    }
    Ok(out)
}

fn count_commits(journal: &[(String, Op)]) -> usize {
    let mut commits: Vec<&str> = journal.iter().map(|(c, _)| c.as_str()).collect();
    commits.dedup();
    commits.len()
}

fn first_divergence(
    ours: &[(u64, Op)],
    journal: &[(String, Op)],
    committed_ops: usize,
    committed: u64,
) -> Option<Divergence> {
    for (at, (commit, theirs)) in journal.iter().enumerate() {
        let here = |seq, op: &Op, what| Divergence {
            position: at + 1,
            seq,
            op: Some(op.meta.id.to_string()),
            commit: Some(commit.clone()),
            what,
        };
        let Some((seq, mine)) = ours.get(at) else {
            let what = format!(
                "the journal has op {} ({}) where the store's journal has no more ops of this replica",
                theirs.meta.id,
                theirs.kind.name()
            );
            return Some(here(None, theirs, what));
        };
        if mine.meta.id != theirs.meta.id {
            let what = format!(
                "the store has op {} ({}) here, the journal op {} ({})",
                mine.meta.id,
                mine.kind.name(),
                theirs.meta.id,
                theirs.kind.name()
            );
            return Some(here(Some(*seq), mine, what));
        }
        if mine != theirs {
            let what =
                format!("op {} differs in: {}", mine.meta.id, differing_fields(mine, theirs));
            return Some(here(Some(*seq), mine, what));
        }
    }
    if journal.len() < committed_ops {
        let (seq, op) = &ours[journal.len()];
        let end = journal.last().map_or_else(|| "no commit".to_string(), |(c, _)| c.clone());
        return Some(Divergence {
            position: journal.len() + 1,
            seq: Some(*seq),
            op: Some(op.meta.id.to_string()),
            commit: journal.last().map(|(c, _)| c.clone()),
            what: format!(
                "the store recorded its ops as committed through seq {committed}, but the journal ends (at {end}) before op {} ({}), seq {seq}",
                op.meta.id,
                op.kind.name()
            ),
        });
    }
    None
}

/// The top-level fields (and `meta` fields) in which two ops differ, comma-separated.
fn differing_fields(a: &Op, b: &Op) -> String {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return "their records".to_string();
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(Value::Object(x)), Some(Value::Object(y))) if key == "meta" => {
                out.extend(
                    x.keys().filter(|k| x.get(*k) != y.get(*k)).map(|k| format!("meta.{k}")),
                );
            }
            (x, y) if x != y => out.push(key.clone()),
            _ => {}
        }
    }
    out.join(", ")
}
