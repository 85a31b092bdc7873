//! `fleet doctor`: what is damaged in a store file, and the salvage of what is not.
//!
//! [`check`] never touches the store file: it copies it to a private temporary directory and
//! examines the copy, one check at a time — the file opens, it opens for writing (where a
//! damaged allocator page makes the database engine fail), every page matches the checksum
//! its parent page holds (the engine's own check, which reaches the tables that carry no
//! checksums of their own: the indexes, meta, the op index, the undo log), every table opens,
//! every issue row decodes with an id in the grammar, every edge decodes and points at an issue
//! of this store or a foreign one, the reverse edge index mirrors the edges, the label index
//! mirrors the labels of the issue rows, every comment decodes, the meta values are there, and
//! the blocked flags and the ready index (with the counts its entries carry) agree with a
//! recomputation of every issue's readiness (the store's own refresh, run over all issues on
//! the copy).
//!
//! [`salvage`] reads every readable issue, edge, comment (labels travel in the issues) and
//! configuration value, writes them through the import path into a new store beside the old
//! one, and swaps it in with one rename, keeping the damaged file as
//! `beads.db.damaged-<time>`. It reports what was saved and, by id, what was lost. It holds the
//! store's write lock from its copy of the file to the swap, and refuses a healthy store.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use redb::{ReadTransaction, ReadableTable, TableDefinition, TableHandle};
use serde::Serialize;

use super::tables::{
    BIRTHS, BLOCKED, COMMENTS, DEPS, HOLDS, ISSUES, JOURNAL, LABELS, META, OP_IDS, ORDER, ORPHANS,
    RDEPS, READY, RENAMED, REPLIES, SIDELINED, UNDO, decode_comment_of, decode_dep_of,
    decode_issue_of, id_of_ready_key,
};
use super::{Store, StoreError, io_error, meta};
use crate::model::{Comment, Dependency, Issue, is_foreign_ref};
use crate::op::OpKind;
use crate::time::Clock;
use crate::workspace::STORE_FILE;

/// The outcome of one check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked: `file`, `pages`, `write`, `tables`, `issues`, `edges`, `labels`,
    /// `comments`, `meta`, `order index`, `readiness`.
    pub check: &'static str,
    pub ok: bool,
    /// What was found: a count when healthy, the problem otherwise.
    pub detail: String,
    /// The issues the problem is about (damaged rows, dangling edges…).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check { check, ok: true, detail: detail.into(), ids: Vec::new() }
    }

    fn problem(check: &'static str, detail: impl Into<String>, ids: Vec<String>) -> Check {
        Check { check, ok: false, detail: detail.into(), ids }
    }

    /// A check that passes when nothing was found wrong.
    fn from_findings(check: &'static str, healthy: String, findings: Findings) -> Check {
        if findings.problems.is_empty() {
            return Check::ok(check, healthy);
        }
        let ids = findings.ids.into_iter().collect();
        Check::problem(check, findings.problems.join("; "), ids)
    }
}

/// What a check found wrong so far.
#[derive(Default)]
struct Findings {
    problems: Vec<String>,
    ids: BTreeSet<String>,
}

impl Findings {
    fn add(&mut self, problem: String, id: Option<&str>) {
        if self.problems.len() < 20 {
            self.problems.push(problem);
        } else if self.problems.len() == 20 {
            self.problems.push("…".to_string());
        }
        if let Some(id) = id {
            self.ids.insert(id.to_string());
        }
    }
}

/// Everything `fleet doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The store file checked.
    pub path: PathBuf,
    pub healthy: bool,
    pub checks: Vec<Check>,
    /// The issues whose rows do not decode.
    pub damaged: Vec<String>,
}

/// A directory removed with what it holds when dropped.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies the store file of `dir` into a new scratch directory under `parent`, as
/// `<scratch>/beads.db`, so it can be opened (even for writing) without touching the original.
fn private_copy(dir: &Path, parent: &Path) -> Result<ScratchDir, StoreError> {
    let path = dir.join(STORE_FILE);
    if !path.is_file() {
        return Err(StoreError::NotInitialized(dir.to_path_buf()));
    }
    let name = format!(".fleet-doctor-{}", ulid::Ulid::generate().to_string().to_lowercase());
    let scratch = ScratchDir(parent.join(name));
    std::fs::create_dir_all(&scratch.0)
        .map_err(io_error(format!("creating {}", scratch.0.display())))?;
    std::fs::copy(&path, scratch.0.join(STORE_FILE))
        .map_err(io_error(format!("copying {} to check it", path.display())))?;
    Ok(scratch)
}

/// Checks the store in `dir` (a `.beads/` directory) without changing it.
pub fn check(dir: &Path) -> Result<Report, StoreError> {
    let path = dir.join(STORE_FILE);
    let scratch = private_copy(dir, &std::env::temp_dir())?;
    Ok(check_copy(&scratch.0, path))
}

/// Checks the private copy in `scratch` of the store file at `path` (which the report names).
fn check_copy(scratch: &Path, path: PathBuf) -> Report {
    let mut checks = Vec::new();
    let store = match Store::open(scratch) {
        Ok(store) => store,
        Err(error) => {
            checks.push(Check::problem("file", describe(&error, scratch, &path), Vec::new()));
            return Report { path, healthy: false, checks, damaged: Vec::new() };
        }
    };
    checks.push(Check::ok("file", "opens"));
    checks.push(pages(scratch, &path));
    checks.push(match store.writable() {
        Ok(_) => Check::ok("write", "opens for writing (checked on a private copy)"),
        Err(error) => Check::problem("write", describe(&error, scratch, &path), Vec::new()),
    });
    let read = examine(&store, scratch, &path);
    let damaged = read.damaged.clone();
    checks.extend(read.checks);
    let writable = checks.iter().any(|c| c.check == "write" && c.ok);
    if writable && damaged.is_empty() {
        checks.push(order_index(&store, scratch, &path));
        checks.push(readiness(&store, scratch, &path));
    } else {
        for check in ["order index", "readiness"] {
            checks.push(Check::problem(
                check,
                "not checked while the store cannot be written or has damaged issue rows; check again after the repair",
                Vec::new(),
            ));
        }
    }
    let healthy = checks.iter().all(|c| c.ok);
    Report { path, healthy, checks, damaged }
}

/// An error's text with the private copy's path replaced by the store file's.
fn describe(error: &StoreError, scratch: &Path, path: &Path) -> String {
    let text = match error {
        StoreError::Damaged { detail, .. } => detail.clone(),
        other => other.to_string(),
    };
    text.replace(&scratch.join(STORE_FILE).display().to_string(), &path.display().to_string())
}

/// The checks made in one read transaction.
struct Examined {
    checks: Vec<Check>,
    damaged: Vec<String>,
}

fn examine(store: &Store, scratch: &Path, path: &Path) -> Examined {
    let txn = match store.begin_read() {
        Ok(txn) => txn,
        Err(error) => {
            let check = Check::problem("tables", describe(&error, scratch, path), Vec::new());
            return Examined { checks: vec![check], damaged: Vec::new() };
        }
    };
    let guarded = super::guard::guarded(path, || {
        let mut checks = vec![tables(&txn, path)];
        let (issues, read) = issues(&txn);
        checks.push(issues);
        checks.push(edges(&txn, &read.ids, &store.prefix()));
        checks.push(labels(&txn, &read));
        checks.push(comments(&txn, &read.ids));
        let damaged = read.damaged;
        checks.push(meta_values(&txn));
        Ok(Examined { checks, damaged })
    });
    guarded.unwrap_or_else(|error| Examined {
        checks: vec![Check::problem("tables", describe(&error, scratch, path), Vec::new())],
        damaged: Vec::new(),
    })
}

/// Opens `table` in `txn`, as a check line's problem text on failure.
fn open<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    table: TableDefinition<K, V>,
) -> Result<redb::ReadOnlyTable<K, V>, String> {
    txn.open_table(table).map_err(|e| format!("table {}: {e}", table.name()))
}

/// Every table opens and every entry of it can be read: a page of any table that the engine
/// cannot read (zeroed, garbage) is found here, even in a table only writes use (the journal,
/// the op index, the undo log), whose damage would otherwise fail every write while the
/// checks of what reads use pass.
fn tables(txn: &ReadTransaction, path: &Path) -> Check {
    let mut problems = Vec::new();
    let present: Vec<String> = txn
        .list_tables()
        .map(|names| names.map(|t| t.name().to_string()).collect())
        .unwrap_or_default();
    let mut probe = |name: &str, read: &dyn Fn() -> Result<u64, String>| {
        // Tables other than the core ones are made by the first writer that needs them.
        if !super::CORE_TABLES.contains(&name) && !present.iter().any(|p| p == name) {
            return;
        }
        let walked =
            super::guard::guarded(path, || Ok(read())).unwrap_or_else(|e| Err(e.to_string()));
        if let Err(problem) = walked {
            problems.push(format!("table {name}: {problem}"));
        }
    };
    macro_rules! walk_all {
        ($($table:expr),*) => {$(
            probe($table.name(), &|| {
                let table = open(txn, $table)?;
                let mut entries = 0;
                for entry in table.iter().map_err(|e| e.to_string())? {
                    let (key, value) = entry.map_err(|e| e.to_string())?;
                    let _ = (key.value(), value.value());
                    entries += 1;
                }
                Ok(entries)
            });
        )*};
    }
    walk_all!(
        ISSUES,
        DEPS,
        RDEPS,
        COMMENTS,
        LABELS,
        READY,
        BLOCKED,
        META,
        JOURNAL,
        OP_IDS,
        ORDER,
        SIDELINED,
        HOLDS,
        BIRTHS,
        RENAMED,
        ORPHANS,
        UNDO,
        REPLIES,
        super::coord::COORD
    );
    if problems.is_empty() {
        Check::ok("tables", "every table reads whole")
    } else {
        Check::problem("tables", problems.join("; "), Vec::new())
    }
}

/// What the walk of the issue rows found, for the checks of what refers to them.
#[derive(Default)]
struct IssueRows {
    /// Every id in the table, damaged or not.
    ids: BTreeSet<String>,
    /// The ids whose rows do not decode.
    damaged: Vec<String>,
    /// (label, id) for every label of every row that decodes.
    labels: BTreeSet<(String, String)>,
}

/// Every issue row decodes, under an id in the grammar that matches the row's own id.
fn issues(txn: &ReadTransaction) -> (Check, IssueRows) {
    let mut findings = Findings::default();
    let mut read = IssueRows::default();
    let table = match open(txn, ISSUES) {
        Ok(table) => table,
        Err(problem) => return (Check::problem("issues", problem, Vec::new()), read),
    };
    let walked = walk(&table, |id, row| {
        read.ids.insert(id.to_string());
        match decode_issue_of(id, row) {
            Err(error) => {
                read.damaged.push(id.to_string());
                findings.add(strip(&error), Some(id));
            }
            Ok(issue) if issue.id != id => {
                findings.add(format!("{id}: its row holds issue {:?}", issue.id), Some(id));
            }
            Ok(issue) => {
                read.labels.extend(issue.labels.into_iter().map(|label| (label, issue.id.clone())));
            }
        }
        if let Err(error) = crate::id::check_id(id) {
            findings.add(format!("{id:?}: {error}"), Some(id));
        }
    });
    if let Err(problem) = walked {
        let rows = read.ids.len();
        findings.add(format!("the table cannot be read past {rows} rows: {problem}"), None);
    }
    let healthy = format!("{} issues decode", read.ids.len());
    (Check::from_findings("issues", healthy, findings), read)
}

/// The label index (what `list --label` reads) holds exactly the labels of the issue rows
/// (those that decode: a damaged row's labels are the issues check's finding).
fn labels(txn: &ReadTransaction, rows: &IssueRows) -> Check {
    let mut findings = Findings::default();
    let mut indexed = BTreeSet::new();
    let walked = (|| -> Result<(), String> {
        let table = open(txn, LABELS)?;
        for entry in table.iter().map_err(|e| e.to_string())? {
            let (key, _) = entry.map_err(|e| e.to_string())?;
            let (label, id) = key.value();
            indexed.insert((label.to_string(), id.to_string()));
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        findings.add(format!("the label index cannot be read: {problem}"), None);
    }
    let damaged = |id: &String| rows.damaged.contains(id);
    for (label, id) in indexed.difference(&rows.labels).filter(|(_, id)| !damaged(id)) {
        findings.add(format!("the label index has {id} under {label:?}, its row not"), Some(id));
    }
    for (label, id) in rows.labels.difference(&indexed) {
        findings.add(format!("{id} carries {label:?}, the label index not"), Some(id));
    }
    let healthy = format!("{} labels indexed as the issue rows carry them", indexed.len());
    Check::from_findings("labels", healthy, findings)
}

/// Every page of the file reachable from its last commit matches the checksum its parent page
/// (or the header) holds for it: the database engine's own integrity check, run on a copy of
/// the private copy at `scratch` (the check may repair what it checks, and the other checks
/// must see the file as it is). It reaches every table, also those whose rows carry no
/// checksum of their own.
fn pages(scratch: &Path, path: &Path) -> Check {
    const CHECK: &str = "pages";
    let copy = scratch.join("pages.db");
    let checked = std::fs::copy(scratch.join(STORE_FILE), &copy)
        .map_err(io_error(format!("copying {} to check its pages", path.display())))
        .and_then(|_| {
            super::guard::guarded(path, || {
                let mut db = super::open_database(&copy)?;
                db.check_integrity().map_err(StoreError::from)
            })
        });
    let _ = std::fs::remove_file(&copy);
    match checked {
        Ok(true) => Check::ok(CHECK, "every page matches its checksum"),
        Ok(false) => Check::problem(
            CHECK,
            "the pages of the last commit do not match their checksums (the engine could only \
             fall back to an earlier commit): a part of the store was changed outside fleet",
            Vec::new(),
        ),
        Err(
            StoreError::Database(ref engine) | StoreError::DatabaseAt { source: ref engine, .. },
        ) if super::error::is_damage(engine) => Check::problem(
            CHECK,
            "a page does not match its checksum: a part of the store was changed outside fleet",
            Vec::new(),
        ),
        Err(error) => Check::problem(CHECK, describe(&error, scratch, path), Vec::new()),
    }
}

/// Visits every row of a string-keyed table; an unreadable stretch ends the walk with its text.
fn walk(
    table: &redb::ReadOnlyTable<&'static str, &'static [u8]>,
    mut visit: impl FnMut(&str, &[u8]),
) -> Result<(), String> {
    for entry in table.iter().map_err(|e| e.to_string())? {
        let (key, row) = entry.map_err(|e| e.to_string())?;
        visit(key.value(), row.value());
    }
    Ok(())
}

/// A `Corrupt` error's own words.
fn strip(error: &StoreError) -> String {
    match error {
        StoreError::Corrupt(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Edges decode, join issues of this store (or foreign ones), and the reverse index mirrors
/// them.
fn edges(txn: &ReadTransaction, ids: &BTreeSet<String>, prefix: &str) -> Check {
    let mut findings = Findings::default();
    let mut count = 0usize;
    let mut forward = BTreeSet::new();
    let walked = (|| -> Result<(), String> {
        let deps = open(txn, DEPS)?;
        for entry in deps.iter().map_err(|e| e.to_string())? {
            let (key, row) = entry.map_err(|e| e.to_string())?;
            let (from, to) = key.value();
            count += 1;
            forward.insert((from.to_string(), to.to_string()));
            if let Err(error) = decode_dep_of(from, to, row.value()) {
                findings.add(format!("edge {from} → {to}: {}", strip(&error)), Some(from));
            }
            if !ids.contains(from) {
                findings.add(format!("edge {from} → {to}: {from} does not exist"), Some(from));
            }
            if !ids.contains(to) && !is_foreign_ref(to, prefix) {
                findings.add(format!("edge {from} → {to}: {to} does not exist"), Some(from));
            }
        }
        let rdeps = open(txn, RDEPS)?;
        let mut reverse = 0usize;
        for entry in rdeps.iter().map_err(|e| e.to_string())? {
            let (key, _) = entry.map_err(|e| e.to_string())?;
            let (to, from) = key.value();
            reverse += 1;
            if !forward.contains(&(from.to_string(), to.to_string())) {
                findings
                    .add(format!("reverse index has {from} → {to} with no such edge"), Some(from));
            }
        }
        if reverse != count {
            findings.add(format!("{count} edges but {reverse} reverse index entries"), None);
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        findings.add(format!("the edges cannot be read: {problem}"), None);
    }
    Check::from_findings(
        "edges",
        format!("{count} edges join existing or foreign issues"),
        findings,
    )
}

/// Comments decode and belong to issues of this store.
fn comments(txn: &ReadTransaction, ids: &BTreeSet<String>) -> Check {
    let mut findings = Findings::default();
    let mut count = 0usize;
    let walked = (|| -> Result<(), String> {
        let table = open(txn, COMMENTS)?;
        for entry in table.iter().map_err(|e| e.to_string())? {
            let (key, row) = entry.map_err(|e| e.to_string())?;
            let (issue, seq) = key.value();
            count += 1;
            if let Err(error) = decode_comment_of(issue, row.value()) {
                findings.add(
                    format!("comment {seq} of {issue}: damaged ({})", strip(&error)),
                    Some(issue),
                );
            }
            if !ids.contains(issue) {
                findings
                    .add(format!("comment {seq}: its issue {issue} does not exist"), Some(issue));
            }
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        findings.add(format!("the comments cannot be read: {problem}"), None);
    }
    Check::from_findings("comments", format!("{count} comments decode"), findings)
}

/// The prefix, the replica id and the layout version are there.
fn meta_values(txn: &ReadTransaction) -> Check {
    let mut findings = Findings::default();
    let walked = (|| -> Result<(), String> {
        let table = open(txn, META)?;
        for key in [meta::PREFIX, meta::REPLICA, meta::LAYOUT] {
            let value = table.get(key).map_err(|e| e.to_string())?;
            if value.is_none_or(|v| v.value().is_empty()) {
                findings.add(format!("{key} is missing"), None);
            }
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        findings.add(format!("the meta table cannot be read: {problem}"), None);
    }
    Check::from_findings("meta", "prefix, replica and layout version present".into(), findings)
}

/// The stored readiness: blocked flags and ready entries (by key, which names the issue).
#[derive(PartialEq, Eq)]
struct Readiness {
    blocked: BTreeSet<String>,
    ready: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Readiness {
    fn read(tables: &super::WriteSet<'_>) -> Result<Readiness, StoreError> {
        let mut blocked = BTreeSet::new();
        for entry in tables.blocked.iter()? {
            blocked.insert(entry?.0.value().to_string());
        }
        let mut ready = BTreeMap::new();
        for entry in tables.ready.iter()? {
            let (key, value) = entry?;
            ready.insert(key.value().to_vec(), value.value().to_vec());
        }
        Ok(Readiness { blocked, ready })
    }

    /// The ids whose readiness differs between `self` (stored) and `fresh` (recomputed): a
    /// blocked flag, an entry, or an entry under a key that is not its row's.
    fn differences(&self, fresh: &Readiness) -> BTreeSet<String> {
        let mut ids: BTreeSet<String> =
            self.blocked.symmetric_difference(&fresh.blocked).cloned().collect();
        for key in self.ready.keys().chain(fresh.ready.keys()) {
            if self.ready.get(key) != fresh.ready.get(key) {
                ids.insert(id_of_ready_key(key).to_string());
            }
        }
        ids
    }
}

/// Rebuilds the order index and status counts on the private copy and compares them with
/// what was stored.
fn order_index(store: &Store, scratch: &Path, path: &Path) -> Check {
    const CHECK: &str = "order index";
    let built = store.read().and_then(|reader| reader.view().meta_bytes(meta::ORDER_INDEX));
    match built {
        Ok(None) => return Check::ok(CHECK, "not built yet; the next write builds it"),
        Ok(Some(_)) => {}
        Err(error) => return Check::problem(CHECK, describe(&error, scratch, path), Vec::new()),
    }
    let compared = store.write("fleet-doctor", Clock::System, |writer| {
        let (stored, stored_counts) = writer.order_index_contents()?;
        writer.build_order_index()?;
        let (fresh, fresh_counts) = writer.order_index_contents()?;
        let mut ids = BTreeSet::new();
        for key in stored.keys().chain(fresh.keys()) {
            if stored.get(key) != fresh.get(key) {
                ids.insert(super::order::id_of_key(key).to_string());
            }
        }
        Ok((ids, stored_counts == fresh_counts, fresh.len()))
    });
    match compared.map(|(result, _)| result) {
        Ok((ids, true, entries)) if ids.is_empty() => Check::ok(
            CHECK,
            format!("{entries} entries and the status counts agree with a rebuild"),
        ),
        Ok((ids, counts_agree, _)) => {
            let counts = if counts_agree { "" } else { " (and the status counts)" };
            Check::problem(
                CHECK,
                format!(
                    "the order index disagrees with a rebuild for {} issues{counts}; `fleet rebuild` repairs it",
                    ids.len()
                ),
                ids.into_iter().collect(),
            )
        }
        Err(error) => Check::problem(CHECK, describe(&error, scratch, path), Vec::new()),
    }
}

/// Recomputes every issue's readiness on the private copy and compares it with what was
/// stored.
fn readiness(store: &Store, scratch: &Path, path: &Path) -> Check {
    let compared = store.write("fleet-doctor", Clock::System, |writer| {
        let stored = Readiness::read(&writer.tables)?;
        let mut all = BTreeSet::new();
        writer.view().scan_ids(&mut |id| {
            all.insert(id.to_string());
            true
        })?;
        let count = all.len();
        // From scratch: an entry the refresh would not reach (under a stale key) must not
        // survive into the recomputation.
        writer.tables.ready.retain(|_, _| false)?;
        writer.refresh(all)?;
        let fresh = Readiness::read(&writer.tables)?;
        Ok((stored.differences(&fresh), count))
    });
    let compared = compared.map(|(result, _)| result);
    match compared {
        Ok((differing, count)) if differing.is_empty() => Check::ok(
            "readiness",
            format!(
                "blocked flags and ready index (with its counts) agree with a recomputation of {count} issues"
            ),
        ),
        Ok((differing, _)) => Check::problem(
            "readiness",
            format!(
                "the blocked flags or ready index (or its counts) disagree with a recomputation for {} issues",
                differing.len()
            ),
            differing.into_iter().collect(),
        ),
        Err(error) => Check::problem("readiness", describe(&error, scratch, path), Vec::new()),
    }
}

/// What a salvage saved and lost.
#[derive(Debug, Clone, Serialize)]
pub struct Salvaged {
    /// The damaged file, kept under its new name.
    pub damaged_file: PathBuf,
    pub issues_saved: usize,
    /// Issues known to exist (their ids are readable) whose rows could not be saved.
    pub issues_lost: Vec<String>,
    pub edges_saved: usize,
    /// Edges that could not be saved, as `from → to`.
    pub edges_lost: Vec<String>,
    pub comments_saved: usize,
    /// Comments that could not be saved, as `issue#sequence`.
    pub comments_lost: Vec<String>,
    pub labels_saved: usize,
    pub config_saved: usize,
    /// Parts of the file that could not be read at all (what they held is unknown).
    pub unreadable: Vec<String>,
}

/// What could be read out of a damaged store.
#[derive(Default)]
struct Rescued {
    prefix: String,
    issues: Vec<Issue>,
    lost_issues: Vec<String>,
    edges: Vec<Dependency>,
    lost_edges: Vec<String>,
    comments: Vec<Comment>,
    lost_comments: Vec<String>,
    config: Vec<(String, String)>,
    unreadable: Vec<String>,
}

/// Copies what is readable in the store of `dir` into a new store and swaps it in (see the
/// module docs). `clock` names the kept damaged file. A store [`check`] finds healthy is
/// refused ([`StoreError::NothingToSalvage`]) unless `force`.
///
/// The store's write lock is held from the copy to the swap, so no write commits to the old
/// file after the copy was read: such a write would be acknowledged and lost with the file.
/// Writers wait for the lock meanwhile (see `lock`), then write the new file.
pub fn salvage(dir: &Path, clock: Clock, force: bool) -> Result<Salvaged, StoreError> {
    let path = dir.join(STORE_FILE);
    if !path.is_file() {
        return Err(StoreError::NotInitialized(dir.to_path_buf()));
    }
    let _no_writes = super::lock::Held::take(&path)?;
    let scratch = private_copy(dir, &std::env::temp_dir())?;
    if !force && check_copy(&scratch.0, path.clone()).healthy {
        return Err(StoreError::NothingToSalvage(path));
    }
    let old = Store::open(&scratch.0).map_err(|error| StoreError::Damaged {
        path: path.clone(),
        detail: format!("nothing in it can be read ({})", describe(&error, &scratch.0, &path)),
    })?;
    let rescued = rescue(&old, &scratch.0, &path);
    drop(old);
    let fresh_dir = ScratchDir(
        dir.join(format!(".salvage-{}", ulid::Ulid::generate().to_string().to_lowercase())),
    );
    let mut report = write_salvage(&fresh_dir.0, &rescued, clock)?;
    report.damaged_file = swap_in(dir, &fresh_dir.0.join(STORE_FILE), clock)?;
    Ok(report)
}

/// Reads every readable issue, edge, comment and configuration value of `store`.
fn rescue(store: &Store, scratch: &Path, path: &Path) -> Rescued {
    let mut rescued = Rescued { prefix: store.prefix().to_string(), ..Rescued::default() };
    let txn = match store.begin_read() {
        Ok(txn) => txn,
        Err(error) => {
            rescued.unreadable.push(describe(&error, scratch, path));
            return rescued;
        }
    };
    let read = super::guard::guarded(path, || {
        rescue_issues(&txn, &mut rescued);
        rescue_edges(&txn, &mut rescued);
        rescue_comments(&txn, &mut rescued);
        rescue_config(&txn, &mut rescued);
        Ok(())
    });
    if let Err(error) = read {
        rescued.unreadable.push(describe(&error, scratch, path));
    }
    if rescued.prefix.is_empty() {
        rescued.prefix = guess_prefix(&rescued.issues);
    }
    rescued
}

/// The prefix of the first issue id, for a store whose meta lost it.
fn guess_prefix(issues: &[Issue]) -> String {
    issues
        .iter()
        .find_map(|i| i.id.rsplit_once('-').map(|(prefix, _)| prefix.to_string()))
        .unwrap_or_else(|| "bd".to_string())
}

fn rescue_issues(txn: &ReadTransaction, rescued: &mut Rescued) {
    let table = match open(txn, ISSUES) {
        Ok(table) => table,
        Err(problem) => return rescued.unreadable.push(problem),
    };
    let walked = walk(&table, |id, row| match decode_issue_of(id, row) {
        Ok(issue) if issue.id == id && crate::id::check_id(id).is_ok() => {
            rescued.issues.push(issue)
        }
        _ => rescued.lost_issues.push(id.to_string()),
    });
    if let Err(problem) = walked {
        rescued
            .unreadable
            .push(format!("issues after the first {}: {problem}", rescued.issues.len()));
    }
}

fn rescue_edges(txn: &ReadTransaction, rescued: &mut Rescued) {
    let walked = (|| -> Result<(), String> {
        let table = open(txn, DEPS)?;
        for entry in table.iter().map_err(|e| e.to_string())? {
            let (key, row) = entry.map_err(|e| e.to_string())?;
            let (from, to) = key.value();
            match decode_dep_of(from, to, row.value()) {
                Ok(dep) => rescued.edges.push(dep),
                Err(_) => rescued.lost_edges.push(format!("{from} → {to}")),
            }
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        rescued.unreadable.push(format!("edges: {problem}"));
    }
}

fn rescue_comments(txn: &ReadTransaction, rescued: &mut Rescued) {
    let walked = (|| -> Result<(), String> {
        let table = open(txn, COMMENTS)?;
        for entry in table.iter().map_err(|e| e.to_string())? {
            let (key, row) = entry.map_err(|e| e.to_string())?;
            let (issue, seq) = key.value();
            match decode_comment_of(issue, row.value()) {
                Ok(comment) => rescued.comments.push(comment),
                Err(_) => rescued.lost_comments.push(format!("{issue}#{seq}")),
            }
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        rescued.unreadable.push(format!("comments: {problem}"));
    }
}

fn rescue_config(txn: &ReadTransaction, rescued: &mut Rescued) {
    let walked = (|| -> Result<(), String> {
        let table = open(txn, META)?;
        for entry in table.range(meta::CONFIG..).map_err(|e| e.to_string())? {
            let (key, value) = entry.map_err(|e| e.to_string())?;
            let Some(name) = key.value().strip_prefix(meta::CONFIG) else { break };
            let value = String::from_utf8_lossy(value.value()).into_owned();
            rescued.config.push((name.to_string(), value));
        }
        Ok(())
    })();
    if let Err(problem) = walked {
        rescued.unreadable.push(format!("configuration: {problem}"));
    }
}

/// Writes what was rescued into a new store in `fresh_dir`, through the import path, in one
/// transaction. The records are applied as the import path (`tracker::import`) applies them —
/// the same ops, as given — since the store may not depend on the tracker. An item the store
/// refuses (an edge to an issue that was lost) is reported
/// lost; readiness is computed once at the end.
fn write_salvage(
    fresh_dir: &Path,
    rescued: &Rescued,
    clock: Clock,
) -> Result<Salvaged, StoreError> {
    let store = Store::init(fresh_dir, &rescued.prefix)?;
    let mut report = Salvaged {
        damaged_file: PathBuf::new(),
        issues_saved: 0,
        issues_lost: rescued.lost_issues.clone(),
        edges_saved: 0,
        edges_lost: rescued.lost_edges.clone(),
        comments_saved: 0,
        comments_lost: rescued.lost_comments.clone(),
        labels_saved: 0,
        config_saved: 0,
        unreadable: rescued.unreadable.clone(),
    };
    store.write("fleet-doctor", clock, |writer| {
        // Readiness once at the end; edges are still checked for cycles one by one.
        writer.deferred_seeds.get_or_insert_with(Default::default);
        for issue in &rescued.issues {
            let (id, labels) = (issue.id.clone(), issue.labels.len());
            match kept(
                writer.apply(OpKind::Create { issue: Box::new(issue.clone()), deps: Vec::new() }),
            )? {
                true => {
                    report.issues_saved += 1;
                    report.labels_saved += labels;
                }
                false => report.issues_lost.push(id),
            }
        }
        for dep in &rescued.edges {
            let name = format!("{} → {}", dep.issue_id, dep.depends_on_id);
            match kept(writer.apply(OpKind::DepAdd { dep: dep.clone() }))? {
                true => report.edges_saved += 1,
                false => report.edges_lost.push(name),
            }
        }
        for comment in &rescued.comments {
            let name = format!("{}#{}", comment.issue_id, comment.id);
            match kept(writer.apply(OpKind::Comment { comment: comment.clone() }))? {
                true => report.comments_saved += 1,
                false => report.comments_lost.push(name),
            }
        }
        for (key, value) in &rescued.config {
            writer.set_config(key, Some(value))?;
            report.config_saved += 1;
        }
        Ok(())
    })?;
    Ok(report)
}

/// Whether an import step was applied: `false` when the store refused it, an error when the
/// store itself failed.
fn kept(result: Result<bool, StoreError>) -> Result<bool, StoreError> {
    match result {
        Ok(_) => Ok(true),
        Err(error) if error.is_refusal() => Ok(false),
        Err(error) => Err(error),
    }
}

/// Puts the new store file `fresh` in place of the store file of `dir` with one rename, after
/// linking the damaged file to `beads.db.damaged-<time>` so it is kept. Returns that name.
fn swap_in(dir: &Path, fresh: &Path, clock: Clock) -> Result<PathBuf, StoreError> {
    let path = dir.join(STORE_FILE);
    let stamp = clock.now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let mut kept = dir.join(format!("{STORE_FILE}.damaged-{stamp}"));
    let mut n = 1;
    while kept.exists() {
        n += 1;
        kept = dir.join(format!("{STORE_FILE}.damaged-{stamp}-{n}"));
    }
    std::fs::hard_link(&path, &kept)
        .or_else(|_| std::fs::copy(&path, &kept).map(|_| ()))
        .map_err(io_error(format!("keeping the damaged store as {}", kept.display())))?;
    std::fs::rename(fresh, &path)
        .map_err(io_error(format!("moving the salvaged store into place at {}", path.display())))?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use redb::ReadableTable;

    use super::*;
    use crate::model::Comment;
    use crate::store::tables::{Covered, ReadyEntry};

    /// A store with two ready issues, `t-1` with a comment.
    fn store_with_a_comment(dir: &Path) -> Store {
        let store = Store::init(dir, "t").unwrap();
        let at = jiff::Timestamp::UNIX_EPOCH;
        let comment: Comment = serde_json::from_value(serde_json::json!({
            "id": 1, "issue_id": "t-1", "author": "a", "text": "hi", "created_at": "2026-01-02T03:04:05Z"
        }))
        .unwrap();
        let ops = ["t-1", "t-2"]
            .map(|id| OpKind::Create {
                issue: Box::new(Issue::new(id.into(), format!("issue {id}"), at)),
                deps: Vec::new(),
            })
            .into_iter()
            .chain([OpKind::Comment { comment }])
            .collect();
        store.apply("a", Clock::System, ops).unwrap();
        store
    }

    /// Rewrites every ready entry as `change` makes it.
    fn rewrite_ready_entries(store: &Store, change: impl Fn(&[u8]) -> Vec<u8>) {
        let txn = store.writable().unwrap().begin_write().unwrap();
        {
            let mut ready = txn.open_table(READY).unwrap();
            let entries: Vec<(Vec<u8>, Vec<u8>)> = ready
                .iter()
                .unwrap()
                .map(|entry| {
                    let (key, value) = entry.unwrap();
                    (key.value().to_vec(), change(value.value()))
                })
                .collect();
            for (key, value) in entries {
                ready.insert(key.as_slice(), value.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }

    fn readiness_check(dir: &Path) -> Check {
        check(dir).unwrap().checks.into_iter().find(|c| c.check == "readiness").unwrap()
    }

    #[test]
    fn a_wrong_count_in_the_ready_index_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_a_comment(dir.path());
        assert!(readiness_check(dir.path()).ok);
        rewrite_ready_entries(&store, |value| {
            let mut entry = ReadyEntry::decode(value);
            if let Some(covered) = &mut entry.covered {
                covered.counts.comments += 1;
            }
            entry.encode()
        });
        drop(store);
        let found = readiness_check(dir.path());
        assert!(!found.ok);
        assert_eq!(found.ids, ["t-1", "t-2"]);
    }

    #[test]
    fn a_stale_row_in_the_ready_index_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_a_comment(dir.path());
        rewrite_ready_entries(&store, |value| {
            let entry = ReadyEntry::decode(value);
            let Some(covered) = entry.covered else { return value.to_vec() };
            let payload = crate::store::checked::open(covered.row).unwrap();
            let row = String::from_utf8_lossy(payload).replace("issue t-2", "old title");
            let row = crate::store::checked::seal(row.into_bytes());
            ReadyEntry { covered: Some(Covered { row: &row, ..covered }), ..entry }.encode()
        });
        drop(store);
        let found = readiness_check(dir.path());
        assert!(!found.ok);
        assert_eq!(found.ids, ["t-2"]);
    }

    /// Entries without rows and counts (a store made before they carried them) are no damage:
    /// the first write, the check's own on its copy included, fills them in.
    #[test]
    fn ready_entries_without_rows_pass() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_a_comment(dir.path());
        rewrite_ready_entries(&store, |value| value[..9].to_vec());
        let txn = store.writable().unwrap().begin_write().unwrap();
        txn.open_table(META).unwrap().remove(meta::READY_COVERING).unwrap();
        txn.commit().unwrap();
        drop(store);
        let report = check(dir.path()).unwrap();
        assert!(report.healthy, "{report:?}");
    }
}
