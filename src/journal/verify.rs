//! Checking that the store and the git journal agree ([`verify`]).
//!
//! Two checks:
//!
//! - **This replica's ops.** The ops of this replica in the store's journal, in journal order,
//!   and the ops on the replica's ref, oldest commit first, must be the same ops in the same
//!   order, up to what the store recorded as committed; the first place they differ is
//!   reported. The ref may be ahead of the committed mark (a commit whose mark was not
//!   recorded yet) as long as it holds the store's next ops. Ops of the ref that the store
//!   knows but set aside — refused, or changing nothing, in their place in the total order (a
//!   claim that lost to an earlier one elsewhere, after a rebuild) — are not expected in its
//!   journal.
//! - **The records.** Every op of the journal's refs that the store has seen (in its journal or
//!   set aside), and this replica's ops not committed yet, are replayed into a scratch store,
//!   and each issue record there — fields, edges, comments — must equal the store's; the
//!   first issue that differs is reported, with the fields that differ. This finds a stored
//!   record whose text no longer matches its ops, which the first check cannot see.

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use super::read::read_all;
use super::rebuild::Scratch;
use super::repo::JournalRepo;
use super::{JournalError, ref_name};
use crate::op::Op;
use crate::store::Store;
use crate::store::{StoreError, View};

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
    /// Issue records compared with the journal's replay.
    pub records: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// The first issue whose stored record differs from the journal's replay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_divergence: Option<RecordDivergence>,
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

/// An issue whose stored record is not what the journal's ops make of it.
#[derive(Debug, Clone, Serialize)]
pub struct RecordDivergence {
    pub issue: String,
    /// What differs: the fields, or which side lacks the issue.
    pub what: String,
}

/// Compares the store with the git journal (see the module docs).
pub fn verify(store: &Store) -> Result<VerifyReport, JournalError> {
    let replica = &store.replica();
    let committed = store.journal_committed()?;
    let journaled = store.journal(1)?;
    let sidelined = store.sidelined_ops()?;
    let ours: Vec<(u64, Op)> =
        journaled.iter().filter(|(_, op)| op.meta.replica == *replica).cloned().collect();
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
        records: 0,
        divergence: None,
        record_divergence: None,
    };
    let repo = JournalRepo::find(store.dir())?;
    let journal = match &repo {
        Some(repo) => {
            report.repo = Some(repo.git_dir().to_path_buf());
            read_with_commits(repo, replica)
        }
        None => Ok(Vec::new()),
    };
    let in_journal: HashSet<ulid::Ulid> = ours.iter().map(|(_, op)| op.meta.id).collect();
    let set_aside = |op: &Op| sidelined.contains(&op.meta.id) && !in_journal.contains(&op.meta.id);
    report.divergence = match journal {
        Ok(mut journal) => {
            report.journal_ops = journal.len();
            report.commits = count_commits(&journal);
            journal.retain(|(_, op)| !set_aside(op));
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
    if let Some(repo) = &repo {
        let mut known: HashSet<ulid::Ulid> = sidelined;
        known.extend(journaled.iter().map(|(_, op)| op.meta.id));
        let pending = ours.into_iter().filter(|(seq, _)| *seq > committed).map(|(_, op)| op);
        let (records, divergence) = compare_records(store, repo, &known, pending.collect())?;
        report.records = records;
        report.record_divergence = divergence;
    }
    report.ok = report.divergence.is_none() && report.record_divergence.is_none();
    Ok(report)
}

/// Replays the journal's ops the store knows (`known`), and `pending`, into a scratch store
/// and compares its issue records with the store's: how many were compared, and the first
/// that differs.
fn compare_records(
    store: &Store,
    repo: &JournalRepo,
    known: &HashSet<ulid::Ulid>,
    pending: Vec<Op>,
) -> Result<(usize, Option<RecordDivergence>), JournalError> {
    let mut ops = match read_all(repo) {
        Ok(ops) => ops,
        Err(JournalError::Format { reference, commit, reason }) => {
            let what =
                format!("the journal cannot be replayed: {reference} commit {commit}: {reason}");
            return Ok((0, Some(RecordDivergence { issue: String::new(), what })));
        }
        Err(error) => return Err(error),
    };
    ops.retain(|op| known.contains(&op.meta.id));
    ops.extend(pending);
    let scratch = Scratch::in_temp_dir("fleet-verify");
    let replay = Store::init_as(
        &scratch.0.join(crate::workspace::DIR_NAME),
        &store.prefix(),
        &store.replica(),
    )?;
    replay.replay(crate::time::Clock::System, ops)?;
    let mut expected = digests(&replay)?;
    let compared = expected.len();
    let reader = store.read()?;
    let mut first = None;
    reader.view().scan_issues(&mut |issue| {
        let record = record_of(reader.view(), issue)?;
        let found = match expected.remove(&record.0) {
            None => {
                Some(format!("issue {} is in the store, and not in the journal's replay", record.0))
            }
            Some(digest) if digest != digest_of(&record.1) => Some(differing(&record, &replay)?),
            Some(_) => None,
        };
        first = found.map(|what| RecordDivergence { issue: record.0.clone(), what });
        Ok(first.is_none())
    })?;
    if first.is_none()
        && let Some((id, _)) = expected.into_iter().next()
    {
        let what = format!("issue {id} is in the journal's replay, and not in the store");
        first = Some(RecordDivergence { issue: id, what });
    }
    Ok((compared, first))
}

/// An issue's record as the comparison sees it: the issue, its edges and its comments (in
/// the order of their times), by id.
fn record_of(view: &dyn View, issue: crate::model::Issue) -> Result<(String, Value), StoreError> {
    let id = issue.id.clone();
    let deps = view.deps_of(&id)?;
    let mut comments = view.comments_of(&id)?;
    crate::model::sort_comments(&mut comments);
    let value = serde_json::json!({ "issue": issue, "dependencies": deps, "comments": comments });
    Ok((id, value))
}

fn digest_of(record: &Value) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    record.to_string().hash(&mut hasher);
    hasher.finish()
}

/// The digest of every issue record of `store`, by id.
fn digests(store: &Store) -> Result<BTreeMap<String, u64>, JournalError> {
    let reader = store.read()?;
    let mut out = BTreeMap::new();
    reader.view().scan_issues(&mut |issue| {
        let (id, record) = record_of(reader.view(), issue)?;
        out.insert(id, digest_of(&record));
        Ok(true)
    })?;
    Ok(out)
}

/// What differs between the stored `record` and the replay's record of the same issue.
fn differing(record: &(String, Value), replay: &Store) -> Result<String, StoreError> {
    let reader = replay.read()?;
    let Some(issue) = reader.view().issue(&record.0)? else {
        return Ok(format!("issue {} is in the store, and not in the journal's replay", record.0));
    };
    let (_, expected) = record_of(reader.view(), issue)?;
    let mut fields = Vec::new();
    for part in ["dependencies", "comments"] {
        if record.1[part] != expected[part] {
            fields.push(part.to_string());
        }
    }
    let (Value::Object(stored), Value::Object(replayed)) = (&record.1["issue"], &expected["issue"])
    else {
        return Ok(format!("the record of issue {} differs", record.0));
    };
    let mut keys: Vec<&String> = stored.keys().chain(replayed.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if stored.get(key) != replayed.get(key) {
            fields.insert(
                0,
                format!(
                    "{key} (store {}, journal {})",
                    shown(stored.get(key)),
                    shown(replayed.get(key))
                ),
            );
        }
    }
    Ok(format!(
        "the store's record of issue {} differs from the journal's replay in: {}",
        record.0,
        fields.join(", ")
    ))
}

/// A field's value for a message: its JSON, cut to 60 characters.
fn shown(value: Option<&Value>) -> String {
    let text = value.map_or_else(|| "absent".to_string(), Value::to_string);
    if text.chars().count() <= 60 {
        return text;
    }
    let cut: String = text.chars().take(57).collect();
    format!("{cut}...")
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
