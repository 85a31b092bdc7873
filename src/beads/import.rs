//! `bd import` semantics (spec/beads.md §6.2) over a [`Batch`] of records, as one store
//! transaction or nothing.
//!
//! The import is planned first, against what the store holds and what the batch holds:
//! - an issue is created, or upserted when the incoming `updated_at` is not older than the
//!   stored one (older rows are "stale" and skipped whole); labels are added to the stored
//!   ones, never removed; fleet fields the incoming row does not carry are kept;
//! - comments already present (same author, time and text) are not added again;
//! - a dependency is skipped, with its reason, when its target is neither stored nor in the
//!   batch and has this workspace's prefix, when the same pair already has another type, when
//!   it breaks the epic rule, or when it would close a cycle of blocking or of parent-child
//!   edges. Cycles are found over the whole batch plus the stored edges with petgraph's
//!   incrementally ordered [`Acyclic`] graph, in file order, so the edge that closes a cycle
//!   is the one refused;
//! - memories are stored as configuration values `kv.memory.<key>`.
//!
//! Then the plan is applied in bulk mode (readiness refreshed once at commit, no per-edge
//! cycle walks, since the plan already refused cycle-closing edges): Create for new issues,
//! Put for changed ones, then DepAdd and Comment ops. A dry run plans against a read
//! snapshot and writes nothing.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use jiff::Timestamp;
use petgraph::acyclic::Acyclic;
use petgraph::data::Build;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use super::batch::{Batch, MEMORY_PREFIX};
use super::fidelity::{Expected, Fidelity};
use super::jsonl::{BadLine, Line, Record, parse_line};
use super::{BeadsError, Progress};
use crate::journal::{self, CommitReport, JournalError};
use crate::model::{Comment, Dependency, Issue, dep_type, validate_dep_type};
use crate::store::{Store, StoreError, View};
use crate::time::Clock;
use crate::tracker;

/// The UTF-8 byte order mark some editors (and PowerShell's `Out-File`) put at the start of
/// a text file.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `text` without a leading UTF-8 byte order mark.
pub fn without_bom(text: &[u8]) -> &[u8] {
    text.strip_prefix(UTF8_BOM).unwrap_or(text)
}

/// Reads beads JSONL (`text` is the whole input). Lines are parsed on every core; records
/// keep their line numbers. Unreadable lines are collected, not fatal: the caller decides.
/// A byte order mark at the very start is skipped.
pub fn read_jsonl(text: &[u8], now: Timestamp, progress: &dyn Progress) -> Batch {
    let text = without_bom(text);
    let lines = split_lines(text);
    let lines = match lines.last() {
        Some([]) => &lines[..lines.len() - 1],
        _ => &lines[..],
    };
    progress.start("reading", lines.len() as u64);
    let threads = crate::parallel::cores();
    let chunk = lines.len().div_ceil(threads).max(1);
    let parse_part = |(part, slice): (usize, &[&[u8]])| {
        let mut out = Vec::with_capacity(slice.len());
        for (at, bytes) in slice.iter().enumerate() {
            let number = part * chunk + at + 1;
            let line = std::str::from_utf8(bytes)
                .map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to()))
                .and_then(|text| parse_line(text, now));
            out.push((number, line));
            if at % 4096 == 4095 {
                progress.advance(4096);
            }
        }
        out
    };
    let parsed = crate::parallel::on_threads(lines.chunks(chunk).enumerate(), parse_part);
    // Sized up front: a records vector grown by doubling would briefly hold two copies.
    let records = Vec::with_capacity(parsed.iter().map(Vec::len).sum());
    let mut batch = Batch { lines: lines.len(), records, ..Batch::default() };
    for (number, line) in parsed.into_iter().flatten() {
        match line {
            Ok(Line::Issue(record)) => batch.records.push((number, record)),
            Ok(Line::Memory { key, value }) => batch.memories.push((key, value)),
            Ok(Line::Tombstone { .. }) => batch.tombstones += 1,
            Ok(Line::Header) => batch.headers += 1,
            Ok(Line::Blank) => {}
            Err(error) => batch.bad_lines.push(BadLine { line: number, error }),
        }
    }
    batch
}

/// `text` cut at every newline (as `split` would: the piece after the last one, possibly
/// empty, included), found with SIMD search.
fn split_lines(text: &[u8]) -> Vec<&[u8]> {
    let mut lines = Vec::with_capacity(text.len() / 512);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text) {
        lines.push(&text[start..end]);
        start = end + 1;
    }
    lines.push(&text[start..]);
    lines
}

/// How an import runs.
#[derive(Clone, Copy, Default)]
pub struct ImportOptions<'a> {
    /// Plan and report, write nothing.
    pub dry_run: bool,
    /// Commit the journal to git once the import is committed, and hand the outcome to this
    /// (run on this thread while another counts what the store holds). The commit's trees are
    /// written on another core while the store finishes the import.
    pub commit_journal: Option<&'a (dyn Fn(Result<CommitReport, JournalError>) + Sync)>,
}

/// A dependency the import left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedDependency {
    pub issue_id: String,
    pub depends_on_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: String,
}

/// An id that appears on more than one line of one import, and which record was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DuplicateId {
    pub id: String,
    /// The line that held the id before.
    pub first_line: usize,
    /// The line that repeats it.
    pub line: usize,
    /// The line whose record is imported: the later one, unless an earlier line is newer (by
    /// `updated_at`), as with a stored row; `null` when the stored issue is newer than all.
    pub kept_line: Option<usize>,
}

impl DuplicateId {
    /// `duplicate id bd-12 on lines 3 and 9: the later line wins`.
    pub fn describe(&self) -> String {
        let outcome = match self.kept_line {
            Some(kept) if kept == self.line => "the later line wins".to_string(),
            Some(kept) if kept == self.first_line => {
                "the earlier line wins (its updated_at is newer)".to_string()
            }
            Some(kept) => format!("line {kept} wins (its updated_at is newer)"),
            None => "the stored issue wins (its updated_at is newer than both)".to_string(),
        };
        format!(
            "duplicate id {} on lines {} and {}: {outcome}",
            self.id, self.first_line, self.line
        )
    }
}

/// The lines of one import that gave each id: the last one seen, and the one kept (if any).
#[derive(Default)]
struct IdLines(HashMap<String, (usize, Option<usize>)>);

impl IdLines {
    /// Notes that `line` gives `id` (and is kept unless `stale`); a repeat of an id seen on an
    /// earlier line comes back as a [`DuplicateId`].
    fn note(&mut self, id: &str, line: usize, stale: bool) -> Option<DuplicateId> {
        let taken = (!stale).then_some(line);
        match self.0.get_mut(id) {
            Some((last, kept)) => {
                let duplicate = DuplicateId {
                    id: id.to_string(),
                    first_line: *last,
                    line,
                    kept_line: taken.or(*kept),
                };
                *last = line;
                *kept = duplicate.kept_line;
                Some(duplicate)
            }
            None => {
                self.0.insert(id.to_string(), (line, taken));
                None
            }
        }
    }
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    pub source: String,
    /// What the source was: jsonl, sqlite, fleet, dolt.
    pub kind: String,
    /// What was found at the path, in words.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub found: String,
    pub dry_run: bool,
    /// Set when the import created the workspace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initialized_prefix: Option<String>,
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
    /// The ids of every issue the import wrote or found already equal, in the source's order
    /// (beads' `ids`); only bd's `--json` prints them.
    #[serde(skip)]
    pub ids: Vec<String>,
    pub stale_skipped: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_skipped_ids: Vec<String>,
    pub tombstones_skipped: usize,
    pub memories: usize,
    pub labels_added: usize,
    pub comments_added: usize,
    pub comments_duplicate: usize,
    pub dependencies_added: usize,
    pub skipped_dependencies: Vec<SkippedDependency>,
    /// Ids given on more than one line, in the order the repeats appear.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicate_ids: Vec<DuplicateId>,
    /// Lines skipped with `--skip-bad-lines`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bad_lines: Vec<BadLine>,
    /// Settings copied from the source (a legacy database's config table).
    #[serde(skip_serializing_if = "is_zero")]
    pub config_imported: usize,
    /// Rows of a legacy database's events table, not imported: fleet's op journal keeps its
    /// own history.
    #[serde(skip_serializing_if = "is_zero")]
    pub events_skipped: usize,
    /// What the source holds and how much of it the store holds afterwards.
    pub fidelity: Fidelity,
    /// Issues that took fleet fields from a Python-fleet home's task.json files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks_applied: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks_unmatched: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Imports `batch` into `store` as `actor`: one transaction, or nothing on error.
pub fn run(
    store: &Store,
    actor: &str,
    clock: Clock,
    batch: Batch,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, BeadsError> {
    let started = std::time::Instant::now();
    let expected = Expected::of(&batch);
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: source counted");
    if options.dry_run {
        let reader = store.read()?;
        let plan = plan(Known::of(reader.view())?, &store.prefix(), batch, progress)?;
        let mut report = plan.report(true);
        report.fidelity = Fidelity { source: expected.source(), store: None };
        return Ok(report);
    }
    let plan_on = |view: &dyn View| {
        let plan = plan(Known::of(view)?, &store.prefix(), batch, progress)?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: planned");
        Ok(plan.into_batch(progress))
    };
    let applied = || {
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: applied");
        progress.start("refreshing readiness", 0);
    };
    let written = tracker::write_import(
        store,
        (actor, clock),
        plan_on,
        &applied,
        options.commit_journal.is_some(),
    )?;
    let tracker::ImportWritten { planned: mut report, ahead, applied } = written;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: committed");
    // The applied ops hold a copy of everything imported; freeing a large import's worth of
    // small allocations takes a noticeable fraction of a second, which nobody needs to wait for
    // (and the memory is not held through the journal's commit below).
    let records: usize = applied.iter().map(|op| op.kind.records()).sum();
    if records > 10_000 {
        std::thread::spawn(move || drop(applied));
    }
    // The count runs on another thread: the journal's commit allocates a copy of the journal,
    // and on this thread it reuses the memory the import freed.
    let stored = std::thread::scope(|scope| {
        let counted = scope.spawn(|| {
            let reader = store.read()?;
            let config = reader.config_all()?;
            let stored = reader.guarded(|view| expected.stored(view, &config));
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: store counted");
            stored
        });
        if let Some(report) = options.commit_journal {
            report(match ahead {
                Some(ahead) => journal::commit_pending_ahead(store, ahead),
                None => journal::commit_pending(store),
            });
        }
        counted.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    report.fidelity = Fidelity { source: expected.source(), store: Some(stored) };
    Ok(report)
}

/// A dry run into a workspace that does not exist yet (with the prefix it would get).
pub fn dry_run_fresh(
    prefix: &str,
    batch: Batch,
    progress: &dyn Progress,
) -> Result<ImportReport, BeadsError> {
    let source = Expected::of(&batch).source();
    let mut report = plan(Known(None), prefix, batch, progress)?.report(true);
    report.fidelity = Fidelity { source, store: None };
    Ok(report)
}

/// One issue of the plan.
struct Planned {
    issue: Box<Issue>,
    /// The stored row it replaces (boxed: most plans replace nothing, and a plan of 100k
    /// issues would otherwise fill a hundred megabytes with empty slots).
    stored: Option<Box<Issue>>,
    deps: Vec<Dependency>,
}

struct Plan {
    issues: Vec<Planned>,
    deps: Vec<Dependency>,
    /// Edges identical to a stored one: nothing to write.
    comments: Vec<Comment>,
    memories: Vec<(String, String)>,
    config: Vec<(String, String)>,
    report: ImportReport,
}

fn plan(
    view: Known<'_>,
    prefix: &str,
    batch: Batch,
    progress: &dyn Progress,
) -> Result<Plan, StoreError> {
    progress.start("planning", batch.records.len() as u64);
    let report = ImportReport {
        tombstones_skipped: batch.tombstones,
        bad_lines: batch.bad_lines,
        config_imported: batch.config.len(),
        events_skipped: batch.events_skipped,
        ..ImportReport::default()
    };
    let mut planner = Planner::new(view, report, batch.records.len());
    for (at, (line, record)) in batch.records.into_iter().enumerate() {
        planner.add(line, record)?;
        if at % 4096 == 4095 {
            progress.advance(4096);
        }
    }
    let Planner { mut issues, index, comments, mut report, .. } = planner;
    report.comments_added = comments.len();
    let deps = plan_deps(view, prefix, &mut issues, &index, &mut report)?;
    let memories: Vec<(String, String)> = batch
        .memories
        .into_iter()
        .filter(|(key, value)| !key.is_empty() && !value.is_empty())
        .collect();
    report.memories = memories.len();
    count_changes(&mut report, &issues);
    report.dependencies_added = deps.len();
    Ok(Plan { issues, deps, comments, memories, config: batch.config, report })
}

/// The issues and comments of a batch as they are planned, line by line.
struct Planner<'v> {
    view: Known<'v>,
    issues: Vec<Planned>,
    /// Issue id → its position in `issues`.
    index: HashMap<String, usize>,
    comments: Vec<Comment>,
    /// Per issue, the comments it has or will have (only for issues that need the check).
    seen_comments: HashMap<String, HashSet<(String, Timestamp, String)>>,
    id_lines: IdLines,
    report: ImportReport,
}

impl<'v> Planner<'v> {
    fn new(view: Known<'v>, report: ImportReport, capacity: usize) -> Planner<'v> {
        Planner {
            view,
            issues: Vec::with_capacity(capacity),
            index: HashMap::with_capacity(capacity),
            comments: Vec::new(),
            seen_comments: HashMap::new(),
            id_lines: IdLines(HashMap::with_capacity(capacity)),
            report,
        }
    }

    /// Plans one line: skipped if older than what is there (stored, or an earlier line of the
    /// batch), else merged with it (labels are a union; fleet fields carry over when the line
    /// has none) and queued with its comments and edges.
    fn add(&mut self, line: usize, record: Record) -> Result<(), StoreError> {
        let Record { issue: mut incoming, deps, comments } = record;
        let id = incoming.id.clone();
        let slot = self.index.get(&id).copied();
        let stored = match slot {
            Some(_) => None,
            None => self.view.issue(&id)?.map(Box::new),
        };
        let older = slot.map(|at| &*self.issues[at].issue).or(stored.as_deref());
        let stale = older.is_some_and(|older| incoming.updated_at < older.updated_at);
        self.report.duplicate_ids.extend(self.id_lines.note(&id, line, stale));
        if stale {
            self.report.stale_skipped += 1;
            self.report.stale_skipped_ids.push(id);
            return Ok(());
        }
        if let Some(older) = older {
            merge_with_older(&mut incoming, older);
        }
        incoming.labels.sort();
        incoming.labels.dedup();
        let needs_check = stored.is_some() || slot.is_some() || comments.len() > 1;
        self.add_comments(&id, comments, needs_check, stored.is_some(), slot.is_some())?;
        match slot {
            Some(at) => {
                self.issues[at].issue = incoming;
                self.issues[at].deps.extend(deps);
            }
            None => {
                self.index.insert(id, self.issues.len());
                self.issues.push(Planned { issue: incoming, stored, deps });
            }
        }
        Ok(())
    }

    /// Queues the line's comments, dropping ones the issue already has (stored, or planned
    /// from an earlier line with the same id). A new issue seen once needs no lookup at all.
    fn add_comments(
        &mut self,
        id: &str,
        incoming: Vec<Comment>,
        needs_check: bool,
        stored: bool,
        repeated: bool,
    ) -> Result<(), StoreError> {
        if !needs_check || incoming.is_empty() {
            self.comments.extend(incoming);
            return Ok(());
        }
        if !self.seen_comments.contains_key(id) {
            let mut set = HashSet::new();
            if stored {
                set.extend(self.view.comments_of(id)?.iter().map(comment_key));
            }
            if repeated {
                // A repeated line whose first one kept its comments without a set.
                set.extend(self.comments.iter().filter(|c| c.issue_id == id).map(comment_key));
            }
            self.seen_comments.insert(id.to_string(), set);
        }
        let Some(seen) = self.seen_comments.get_mut(id) else { return Ok(()) };
        for comment in incoming {
            if seen.insert(comment_key(&comment)) {
                self.comments.push(comment);
            } else {
                self.report.comments_duplicate += 1;
            }
        }
        Ok(())
    }
}

/// What a newer line keeps of the older version of its issue: the labels (a union) and, when
/// it carries none, fleet's task fields.
fn merge_with_older(incoming: &mut Issue, older: &Issue) {
    incoming.labels.extend(older.labels.iter().cloned());
    if incoming.fleet.is_empty() {
        incoming.fleet = older.fleet.clone();
    }
}

/// Counts what the plan creates, updates or leaves unchanged, and the labels it adds.
fn count_changes(report: &mut ImportReport, issues: &[Planned]) {
    for planned in issues {
        report.ids.push(planned.issue.id.clone());
        match &planned.stored {
            None => {
                report.created += 1;
                report.labels_added += planned.issue.labels.len();
            }
            Some(stored) if **stored == *planned.issue => report.unchanged += 1,
            Some(stored) => {
                report.updated += 1;
                report.labels_added += planned.issue.labels.len() - stored.labels.len();
            }
        }
    }
}

fn comment_key(comment: &Comment) -> (String, Timestamp, String) {
    (comment.author.clone(), comment.created_at, comment.text.clone())
}

/// Decides which of the batch's edges to add, in file order.
fn plan_deps(
    view: Known<'_>,
    prefix: &str,
    issues: &mut [Planned],
    index: &HashMap<String, usize>,
    report: &mut ImportReport,
) -> Result<Vec<Dependency>, StoreError> {
    let mut edges = EdgePlanner {
        view,
        prefix,
        graphs: CycleGraphs::load(view, issues, index)?,
        added: Vec::with_capacity(issues.iter().map(|planned| planned.deps.len()).sum()),
        first_of_issue: 0,
        targets: None,
    };
    for planned in issues.iter_mut() {
        edges.start_issue(planned.deps.len());
        for dep in std::mem::take(&mut planned.deps) {
            let target_known =
                index.contains_key(&dep.depends_on_id) || view.contains(&dep.depends_on_id)?;
            if let Err((dep, reason)) = edges.consider(dep, target_known)? {
                report.skipped_dependencies.push(SkippedDependency {
                    issue_id: dep.issue_id,
                    depends_on_id: dep.depends_on_id,
                    kind: dep.kind,
                    reason,
                });
            }
        }
    }
    Ok(edges.added)
}

/// The edges of a batch, judged one at a time against the store and the edges before them.
struct EdgePlanner<'v, 'p> {
    view: Known<'v>,
    prefix: &'p str,
    graphs: CycleGraphs,
    added: Vec<Dependency>,
    /// Where the edges of the issue being planned start in `added`. An issue is planned once
    /// (a repeated id is merged into one record first), so an edge repeated within the batch
    /// repeats among these.
    first_of_issue: usize,
    /// For an issue with many edges, their targets → position in `added`, so finding a repeat
    /// does not compare each edge with all before it.
    targets: Option<HashMap<String, usize>>,
}

/// An issue with more edges than this finds repeats through a map rather than a scan.
const SCANNED_EDGES: usize = 32;

impl EdgePlanner<'_, '_> {
    /// Starts planning the `edges` edges of the next issue.
    fn start_issue(&mut self, edges: usize) {
        self.first_of_issue = self.added.len();
        self.targets = (edges > SCANNED_EDGES).then(|| HashMap::with_capacity(edges));
    }

    /// Where an edge of the current issue to `target` is in `added`, if one is.
    fn earlier(&self, target: &str) -> Option<usize> {
        match &self.targets {
            Some(targets) => targets.get(target).copied(),
            None => self.added[self.first_of_issue..]
                .iter()
                .position(|added| added.depends_on_id == target)
                .map(|at| self.first_of_issue + at),
        }
    }

    /// Adds `dep` if the store can hold it (`target_known`: its target is an issue of the
    /// batch or the store), or hands it back with the reason it is skipped. Beads' epic rule is
    /// a rule of `dep add` requests (see `tracker::deps`): edges from before it, which beads
    /// keeps, are kept here.
    fn consider(
        &mut self,
        dep: Dependency,
        target_known: bool,
    ) -> Result<Result<(), (Dependency, String)>, StoreError> {
        let earlier = self.earlier(&dep.depends_on_id);
        let stored = match earlier {
            Some(_) => None,
            None => self.view.dep(&dep.issue_id, &dep.depends_on_id)?,
        };
        if let Some(reason) = self.skip_reason(&dep, target_known, earlier, stored.as_ref()) {
            return Ok(Err((dep, reason)));
        }
        match (earlier, stored) {
            // The same edge again in the batch: the later line wins.
            (Some(at), _) => self.added[at] = dep,
            // Stored already: rewritten only when its metadata changed.
            (None, Some(stored)) if stored.metadata == dep.metadata => {}
            _ => {
                if let Some(targets) = &mut self.targets {
                    targets.insert(dep.depends_on_id.clone(), self.added.len());
                }
                self.added.push(dep);
            }
        }
        Ok(Ok(()))
    }

    /// Why `dep` cannot be added, if it cannot: `earlier` is the same pair's position in the
    /// batch, `stored` the pair's edge in the store.
    fn skip_reason(
        &mut self,
        dep: &Dependency,
        target_known: bool,
        earlier: Option<usize>,
        stored: Option<&Dependency>,
    ) -> Option<String> {
        let (from, to) = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
        if let Err(error) = validate_dep_type(&dep.kind) {
            return Some(error.to_string());
        }
        if from == to {
            return Some("cannot depend on itself".into());
        }
        if !target_known && !crate::model::is_foreign_ref(to, self.prefix) {
            return Some("target not found".into());
        }
        let existing = earlier.map(|at| &self.added[at]).or(stored);
        if let Some(existing) = existing {
            return (existing.kind != dep.kind)
                .then(|| format!("{from} already depends on {to} as {}", existing.kind));
        }
        let closes_cycle = dep_type::is_cycle_checked(&dep.kind)
            && target_known
            && !self.graphs.try_add(&dep.kind, from, to);
        closes_cycle.then(|| "would create a cycle".into())
    }
}

/// The two classes of edge that must stay acyclic, each as a graph that refuses an edge
/// closing a cycle.
struct CycleGraphs {
    blocking: ClassGraph,
    hierarchy: ClassGraph,
    /// Every edge that could be added is known to close no cycle (see [`batch_is_acyclic`]):
    /// nothing is checked or kept.
    known_acyclic: bool,
}

/// Whether `kind` is of the hierarchy class (parent-child) rather than the blocking one,
/// given that it is cycle-checked.
fn is_hierarchy(kind: &str) -> bool {
    kind == dep_type::PARENT_CHILD
}

/// Whether the batch's cycle-checked edges between its own issues, all of them, form no
/// cycle within either class. A cycle needs edges between known issues, and the planner
/// refuses a self-edge before its cycle check; so into an empty store, no edge the planner
/// considers can then close a cycle, whichever others it keeps or skips.
fn batch_is_acyclic(issues: &[Planned], index: &HashMap<String, usize>) -> bool {
    let mut blocking = vec![Vec::new(); issues.len()];
    let mut hierarchy = vec![Vec::new(); issues.len()];
    for (from, planned) in issues.iter().enumerate() {
        for dep in planned.deps.iter().filter(|dep| dep_type::is_cycle_checked(&dep.kind)) {
            let Some(&to) = index.get(&dep.depends_on_id) else { continue };
            if to != from {
                let class = if is_hierarchy(&dep.kind) { &mut hierarchy } else { &mut blocking };
                class[from].push(to);
            }
        }
    }
    has_no_cycle(&blocking) && has_no_cycle(&hierarchy)
}

/// Whether the graph whose node `n` has edges to `targets[n]` has no cycle: every node can be
/// taken away once nothing points at it any more (Kahn's order).
fn has_no_cycle(targets: &[Vec<usize>]) -> bool {
    let mut pointed_at = vec![0usize; targets.len()];
    targets.iter().flatten().for_each(|&to| pointed_at[to] += 1);
    let mut free: Vec<usize> = (0..targets.len()).filter(|&n| pointed_at[n] == 0).collect();
    let mut taken = 0;
    while let Some(node) = free.pop() {
        taken += 1;
        for &to in &targets[node] {
            pointed_at[to] -= 1;
            if pointed_at[to] == 0 {
                free.push(to);
            }
        }
    }
    taken == targets.len()
}

#[derive(Default)]
struct ClassGraph {
    graph: Acyclic<DiGraph<(), ()>>,
    nodes: HashMap<String, NodeIndex>,
}

impl ClassGraph {
    fn node(&mut self, id: &str) -> NodeIndex {
        if let Some(&node) = self.nodes.get(id) {
            return node;
        }
        let node = self.graph.add_node(());
        self.nodes.insert(id.to_string(), node);
        node
    }

    /// Adds the edge `from` → `to` unless it closes a cycle. It is kept reversed (`to` →
    /// `from`), which has a cycle exactly when the edges as given have one: sources point at
    /// issues seen before them, so reversed edges mostly agree with the order nodes were
    /// added in, and the incremental topological order rarely has anything to reorder.
    fn try_add(&mut self, from: &str, to: &str) -> bool {
        let (target, source) = (self.node(to), self.node(from));
        self.graph.try_add_edge(target, source, ()).is_ok()
    }
}

impl CycleGraphs {
    /// Starts from the stored edges (which fleet keeps acyclic per class). Into an empty
    /// store, a batch (`issues`, positioned by `index`) whose edges form no cycle at all
    /// needs no check per edge.
    fn load(
        view: Known<'_>,
        issues: &[Planned],
        index: &HashMap<String, usize>,
    ) -> Result<CycleGraphs, StoreError> {
        let mut graphs = CycleGraphs {
            blocking: ClassGraph::default(),
            hierarchy: ClassGraph::default(),
            known_acyclic: false,
        };
        if view.issue_count()? == 0 {
            graphs.known_acyclic = batch_is_acyclic(issues, index);
            return Ok(graphs);
        }
        view.scan_deps(&mut |dep| {
            if dep_type::is_cycle_checked(&dep.kind) {
                // A stored cycle (from data older than this rule) stays; new edges are still
                // checked against everything else.
                graphs.try_add(&dep.kind, &dep.issue_id, &dep.depends_on_id);
            }
            true
        })?;
        Ok(graphs)
    }

    fn try_add(&mut self, kind: &str, from: &str, to: &str) -> bool {
        if self.known_acyclic {
            return true;
        }
        let graph = if is_hierarchy(kind) { &mut self.hierarchy } else { &mut self.blocking };
        graph.try_add(from, to)
    }
}

impl Plan {
    fn report(mut self, dry_run: bool) -> ImportReport {
        self.report.dry_run = dry_run;
        self.report
    }

    /// The plan as the batch the import's transaction writes, and its report: new issues in
    /// an order where the batch's targets come first, each created with the edges whose
    /// targets exist by then; then changed issues; then the remaining edges, the comments,
    /// the memories and the settings.
    fn into_batch(self, progress: &dyn Progress) -> (tracker::ImportBatch, ImportReport) {
        progress.start("importing", 0);
        let records = self.issues.len() + self.deps.len() + self.comments.len();
        let mut batch = tracker::ImportBatch::with_capacity(records);
        let (order, mut attached, later) = creation_order(&self.issues, self.deps);
        let mut issues: Vec<Option<Planned>> = self.issues.into_iter().map(Some).collect();
        for at in order {
            let planned = issues[at].take().expect("each issue is created once");
            batch.new_issue(planned.issue, std::mem::take(&mut attached[at]));
        }
        for planned in issues.into_iter().flatten() {
            match planned.stored {
                Some(stored) if *stored == *planned.issue => {}
                _ => batch.record(planned.issue),
            }
        }
        later.into_iter().for_each(|dep| batch.edge(dep));
        self.comments.into_iter().for_each(|comment| batch.comment(comment));
        for (key, value) in self.memories {
            batch.setting(format!("{MEMORY_PREFIX}{key}"), value);
        }
        for (key, value) in self.config {
            batch.setting(key, value);
        }
        (batch, self.report)
    }
}

/// Orders the new issues of a plan so that, as far as the edges allow, an issue comes after
/// the batch issues it depends on (a depth-first post-order from the issues in id order; an
/// edge that closes a cycle of non-blocking types simply waits). Returns the order (indices into `issues`), the edges
/// each new issue can be created with, and the edges to add after every issue exists.
fn creation_order(
    issues: &[Planned],
    deps: Vec<Dependency>,
) -> (Vec<usize>, Vec<Vec<Dependency>>, Vec<Dependency>) {
    let new: HashMap<&str, usize> = issues
        .iter()
        .enumerate()
        .filter(|(_, p)| p.stored.is_none())
        .map(|(at, p)| (p.issue.id.as_str(), at))
        .collect();
    let mut targets: Vec<Vec<usize>> = vec![Vec::new(); issues.len()];
    for dep in &deps {
        if let (Some(&from), Some(&to)) =
            (new.get(dep.issue_id.as_str()), new.get(dep.depends_on_id.as_str()))
        {
            targets[from].push(to);
        }
    }
    // Iterative depth-first post-order, so long chains do not exhaust the stack.
    const UNSEEN: usize = usize::MAX;
    let mut rank = vec![UNSEEN; issues.len()];
    let mut order = Vec::with_capacity(new.len());
    let mut on_path = vec![false; issues.len()];
    // Roots in id order: the issue, edge and label tables then fill mostly in key order,
    // which redb does faster and packs tighter than random inserts.
    let mut roots: Vec<usize> =
        (0..issues.len()).filter(|&at| issues[at].stored.is_none()).collect();
    roots.sort_unstable_by(|&a, &b| issues[a].issue.id.cmp(&issues[b].issue.id));
    for root in roots {
        if rank[root] != UNSEEN || on_path[root] {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        on_path[root] = true;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(&target) = targets[node].get(*next) {
                *next += 1;
                if rank[target] == UNSEEN && !on_path[target] {
                    on_path[target] = true;
                    stack.push((target, 0));
                }
            } else {
                stack.pop();
                on_path[node] = false;
                rank[node] = order.len();
                order.push(node);
            }
        }
    }
    let mut attached: Vec<Vec<Dependency>> = vec![Vec::new(); issues.len()];
    let mut later = Vec::new();
    for dep in deps {
        let Some(&from) = new.get(dep.issue_id.as_str()) else {
            later.push(dep);
            continue;
        };
        let ready = match new.get(dep.depends_on_id.as_str()) {
            Some(&to) => rank[to] < rank[from],
            None => true,
        };
        if ready {
            attached[from].push(dep);
        } else {
            later.push(dep);
        }
    }
    (order, attached, later)
}

/// What the store holds, as the planner asks it; `None` is a workspace that holds nothing
/// (or does not exist yet: a dry run before the first import), which is asked nothing.
#[derive(Clone, Copy)]
struct Known<'a>(Option<&'a dyn View>);

impl<'a> Known<'a> {
    /// The store seen through `view`; an empty one needs no lookups at all (it has no edges
    /// or comments without issues).
    fn of(view: &'a dyn View) -> Result<Known<'a>, StoreError> {
        Ok(Known((view.issue_count()? > 0).then_some(view)))
    }

    fn contains(&self, id: &str) -> Result<bool, StoreError> {
        self.0.map_or(Ok(false), |view| view.contains(id))
    }

    fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.0.map_or(Ok(None), |view| view.issue(id))
    }

    fn comments_of(&self, id: &str) -> Result<Vec<Comment>, StoreError> {
        self.0.map_or(Ok(Vec::new()), |view| view.comments_of(id))
    }

    fn dep(&self, id: &str, target: &str) -> Result<Option<Dependency>, StoreError> {
        self.0.map_or(Ok(None), |view| view.dep(id, target))
    }

    fn issue_count(&self) -> Result<u64, StoreError> {
        self.0.map_or(Ok(0), View::issue_count)
    }

    fn scan_deps(&self, visit: &mut dyn FnMut(Dependency) -> bool) -> Result<(), StoreError> {
        self.0.map_or(Ok(()), |view| view.scan_deps(visit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graph_has_no_cycle_until_its_edges_close_one() {
        assert!(has_no_cycle(&[vec![1], vec![2], vec![]]));
        assert!(has_no_cycle(&[vec![1, 2], vec![2], vec![], vec![0, 0]]));
        assert!(!has_no_cycle(&[vec![1], vec![2], vec![0]]));
        assert!(!has_no_cycle(&[vec![], vec![1]]));
    }

    /// A planned issue `id` with edges `(target, type)`.
    fn planned(id: &str, deps: &[(&str, &str)]) -> Planned {
        let edge = |(target, kind): &(&str, &str)| -> Dependency {
            let json = serde_json::json!({"issue_id": id, "depends_on_id": target, "type": kind});
            serde_json::from_value(json).unwrap()
        };
        let issue = Issue::new(id.to_string(), id.to_string(), Timestamp::UNIX_EPOCH);
        Planned { issue: Box::new(issue), stored: None, deps: deps.iter().map(edge).collect() }
    }

    #[test]
    fn only_a_loop_within_one_class_makes_a_batch_cyclic() {
        let check = |issues: &[Planned]| {
            let index: HashMap<String, usize> =
                issues.iter().enumerate().map(|(at, p)| (p.issue.id.clone(), at)).collect();
            batch_is_acyclic(issues, &index)
        };
        // A loop through two classes, a self-edge, an edge that is not checked, and an edge
        // to an issue outside the batch close no cycle.
        let mixed = [
            planned("t-a", &[("t-b", "blocks"), ("t-a", "blocks"), ("t-gone", "blocks")]),
            planned("t-b", &[("t-a", "parent-child"), ("t-a", "related")]),
        ];
        assert!(check(&mixed));
        let blocking = [planned("t-a", &[("t-b", "blocks")]), planned("t-b", &[("t-a", "blocks")])];
        assert!(!check(&blocking));
        let hierarchy = [
            planned("t-a", &[("t-b", "parent-child")]),
            planned("t-b", &[("t-a", "parent-child")]),
        ];
        assert!(!check(&hierarchy));
    }

    #[test]
    fn lines_are_cut_as_split_cuts_them() {
        for text in [&b""[..], b"\n", b"a", b"a\n", b"a\nb", b"a\n\nb\n", b"\n\na\r\n"] {
            let split: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
            assert_eq!(split_lines(text), split, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn jsonl_lines_keep_their_numbers() {
        let text = b"{\"_schema\":\"x\"}\n\n{\"id\":\"a-1\",\"title\":\"t\"}\nnot json\n";
        let batch = read_jsonl(text, Timestamp::UNIX_EPOCH, &super::super::NoProgress);
        assert_eq!(batch.headers, 1);
        assert_eq!(batch.records[0].0, 3);
        assert_eq!(batch.bad_lines[0].line, 4);
        assert_eq!(batch.lines, 4);
    }
}
