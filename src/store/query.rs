//! Read queries: id resolution, ready work, blocked issues, lists, search, stats and the full
//! detail of one issue. They read through [`View`], so a write transaction (claiming the first
//! ready issue, say) runs the same code as a read snapshot.

use std::collections::{BTreeSet, HashSet};

use jiff::Timestamp;
use serde::Serialize;

use super::order::{self, RowFacts, Scan};
use super::tables::{Counts, EdgeRole, ReadyEntry, View};
use super::text::TextNeedle;
use super::{Reader, StoreError, Writer, graph};
use crate::model::{Comment, Issue, SortOrder, Status, dep_type};

/// An issue as `list`, `ready` and `show` print it in JSON: the record plus the computed
/// counts and parent that beads adds.
#[derive(Debug, Clone, Serialize)]
pub struct IssueSummary {
    #[serde(flatten)]
    pub issue: Issue,
    pub dependency_count: usize,
    pub dependent_count: usize,
    pub comment_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// An issue linked to another by an edge, as `show` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct LinkedIssue {
    pub id: String,
    pub title: String,
    pub status: Status,
    pub priority: u8,
    pub dependency_type: String,
    /// Absent from this store (external or another project's issue).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
}

/// Everything `show` reports about one issue.
#[derive(Debug, Clone, Serialize)]
pub struct IssueDetail {
    #[serde(flatten)]
    pub summary: IssueSummary,
    /// Blocked by its dependencies (spec §3.2).
    pub blocked: bool,
    pub dependencies: Vec<LinkedIssue>,
    pub dependents: Vec<LinkedIssue>,
    pub comments: Vec<Comment>,
}

/// An entry of `blocked`.
#[derive(Debug, Clone, Serialize)]
pub struct BlockedIssue {
    #[serde(flatten)]
    pub summary: IssueSummary,
    pub blocked_by_count: usize,
    pub blocked_by: Vec<String>,
}

/// Filters of `ready` (spec §3.3).
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadyFilter {
    pub assignee: Option<String>,
    pub unassigned: bool,
    pub priority: Option<u8>,
    /// Every one of these labels.
    pub labels: Vec<String>,
    /// At least one of these labels.
    pub labels_any: Vec<String>,
    /// None of these labels.
    pub exclude_labels: Vec<String>,
    /// Only issues whose metadata has these keys and values ([`MetadataTest`]).
    pub metadata: MetadataTest,
    /// Only these types (and then the excluded infra types are allowed).
    pub types: Vec<String>,
    pub exclude_types: Vec<String>,
    /// Only descendants of this issue.
    pub parent: Option<String>,
    pub include_deferred: bool,
    pub include_ephemeral: bool,
    pub sort: SortOrder,
    /// 0 = no limit.
    pub limit: usize,
}

/// A page of ready work, read from the ready index alone (its entries carry the issues' rows).
/// The issues come without the computed counts of [`IssueSummary`], which printing ready work
/// for people does not need; [`Reader::ready_summaries`] adds them from what the index carries.
#[derive(Debug, Clone, Serialize)]
pub struct ReadyPage {
    pub issues: Vec<Issue>,
    /// More issues matched than the limit allowed.
    pub truncated: bool,
    /// The counts of each issue as its ready entry carries them (`None`: an entry written
    /// before entries carried counts).
    #[serde(skip)]
    counts: Vec<Option<Counts>>,
}

/// Sort orders of `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListSort {
    /// Priority, then newest first.
    #[default]
    Priority,
    Created,
    Updated,
    Id,
    Title,
    Status,
}

/// Filters of `list` and `search`.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Any of these statuses; empty = every status but closed (or every status with `all`).
    pub statuses: Vec<Status>,
    pub all: bool,
    pub priority: Option<u8>,
    pub types: Vec<String>,
    pub assignee: Option<String>,
    /// Every one of these labels.
    pub labels: Vec<String>,
    /// Case-insensitive text that must occur in the id, title or description.
    pub text: Option<String>,
    /// Only issues last updated before this instant (`stale`).
    pub updated_before: Option<Timestamp>,
    pub sort: ListSort,
    pub reverse: bool,
    /// 0 = no limit.
    pub limit: usize,
}

/// Counts for `stats` (the beads `Statistics` object).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    pub total_issues: u64,
    pub open_issues: u64,
    pub in_progress_issues: u64,
    pub closed_issues: u64,
    pub blocked_issues: u64,
    pub deferred_issues: u64,
    pub ready_issues: u64,
    pub pinned_issues: u64,
    pub epics_eligible_for_closure: u64,
    pub average_lead_time_hours: f64,
    /// Issues left out of the counts because their rows are damaged (see
    /// [`Reader::skip_damaged`]); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<String>,
}

/// Finds the issue an id the user typed refers to: the exact id, the id with the store's
/// prefix added, or the one id that starts or ends with it.
///
/// A full id (`t-3kf`, [`is_full_id`]) names that issue or nothing: an agent's
/// `bd close $FLEET_TASK_ID` after its task was deleted must not close `t-3kf.1` or `t-3kfz`.
/// Nor does a short one reach past a full id it completes to: `3kf`, with `t-3kf` gone, names
/// none of its children. A deleted id is reported as such ([`StoreError::Deleted`]).
pub(crate) fn resolve_id(view: &dyn View, prefix: &str, input: &str) -> Result<String, StoreError> {
    let input = input.trim();
    if view.contains(input)? {
        return Ok(input.to_string());
    }
    if is_full_id(input) {
        return Err(missing(view, input)?);
    }
    let prefixed = format!("{prefix}-{input}");
    if view.contains(&prefixed)? {
        return Ok(prefixed);
    }
    if was_deleted(view, &prefixed)? {
        return Err(StoreError::Deleted(prefixed));
    }
    let mut candidates = Vec::new();
    if !input.is_empty() {
        let below = format!("{input}.");
        view.scan_ids(&mut |id| {
            let hash = id.rsplit_once('-').map_or(id, |(_, h)| h);
            let matches = id.starts_with(input) || id.ends_with(input) || hash.starts_with(input);
            if matches && !hash.starts_with(&below) {
                candidates.push(id.to_string());
            }
            candidates.len() < 10
        })?;
    }
    match candidates.len() {
        0 => Err(StoreError::NotFound(input.to_string())),
        1 => Ok(candidates.remove(0)),
        _ => Err(StoreError::Ambiguous { input: input.to_string(), candidates }),
    }
}

/// Whether `input` is a whole id rather than a part of one: it has the form `prefix-rest` of
/// the id grammar. Such an input names one issue, never one its text merely begins.
pub(crate) fn is_full_id(input: &str) -> bool {
    let Some((prefix, rest)) = input.split_once('-') else { return false };
    prefix.starts_with(|c: char| c.is_ascii_alphabetic())
        && !rest.is_empty()
        && crate::id::check_id(input).is_ok()
}

/// Whether issue `id` was deleted (and no issue of that id made since).
fn was_deleted(view: &dyn View, id: &str) -> Result<bool, StoreError> {
    Ok(view.meta_bytes(&format!("{}{id}", super::meta::DELETED))?.is_some())
}

/// The error for a full id that names no issue: deleted, or never known here.
fn missing(view: &dyn View, id: &str) -> Result<StoreError, StoreError> {
    Ok(if was_deleted(view, id)? {
        StoreError::Deleted(id.to_string())
    } else {
        StoreError::NotFound(id.to_string())
    })
}

pub(crate) fn summarize(view: &dyn View, issue: Issue) -> Result<IssueSummary, StoreError> {
    let counts = view.counts_of(&issue.id)?;
    Ok(summary_with(issue, counts))
}

fn summary_with(issue: Issue, counts: Counts) -> IssueSummary {
    IssueSummary {
        dependency_count: counts.dependencies,
        dependent_count: counts.dependents,
        comment_count: counts.comments,
        parent: counts.parent,
        issue,
    }
}

/// The summaries of a page of ready work: the counts its entries carry, counted afresh for
/// entries that carry none.
fn ready_summaries(view: &dyn View, page: &ReadyPage) -> Result<Vec<IssueSummary>, StoreError> {
    let counts = page.counts.iter().cloned().chain(std::iter::repeat(None));
    page.issues
        .iter()
        .zip(counts)
        .map(|(issue, counts)| match counts {
            Some(counts) => Ok(summary_with(issue.clone(), counts)),
            None => summarize(view, issue.clone()),
        })
        .collect()
}

fn linked(view: &dyn View, id: String, kind: String) -> Result<LinkedIssue, StoreError> {
    Ok(match view.issue(&id)? {
        Some(issue) => LinkedIssue {
            id,
            title: issue.title,
            status: issue.status,
            priority: issue.priority,
            dependency_type: kind,
            missing: false,
        },
        None => LinkedIssue {
            id,
            title: String::new(),
            status: Status::Open,
            priority: 0,
            dependency_type: kind,
            missing: true,
        },
    })
}

pub(crate) fn detail(view: &dyn View, id: &str) -> Result<IssueDetail, StoreError> {
    let issue = view.issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
    let dependencies = view
        .deps_of(id)?
        .into_iter()
        .map(|d| linked(view, d.depends_on_id, d.kind))
        .collect::<Result<_, _>>()?;
    let dependents = view
        .dependents_of(id)?
        .into_iter()
        .map(|(dependent, kind)| linked(view, dependent, kind))
        .collect::<Result<_, _>>()?;
    Ok(IssueDetail {
        blocked: view.is_blocked(id)?,
        comments: view.comments_of(id)?,
        summary: summarize(view, issue)?,
        dependencies,
        dependents,
    })
}

/// Every descendant of `parent` through parent-child edges.
fn descendants(view: &dyn View, parent: &str) -> Result<BTreeSet<String>, StoreError> {
    let mut found = BTreeSet::new();
    let mut stack = vec![parent.to_string()];
    while let Some(node) = stack.pop() {
        for child in view.dependents_by(&node, dep_type::PARENT_CHILD)? {
            if found.insert(child.clone()) {
                stack.push(child);
            }
        }
    }
    Ok(found)
}

/// The issues a ready filter's `parent` admits: its descendants through parent-child edges,
/// and ids under its own (`parent.N`); every issue when the filter names no parent.
struct Family {
    parent: Option<(String, BTreeSet<String>)>,
}

impl Family {
    fn of(view: &dyn View, filter: &ReadyFilter) -> Result<Family, StoreError> {
        Family::under(view, filter.parent.as_deref())
    }

    fn under(view: &dyn View, parent: Option<&str>) -> Result<Family, StoreError> {
        let parent = match parent {
            Some(parent) => Some((parent.to_string(), descendants(view, parent)?)),
            None => None,
        };
        Ok(Family { parent })
    }

    fn admits(&self, id: &str) -> bool {
        self.parent.as_ref().is_none_or(|(parent, family)| {
            family.contains(id)
                || id.strip_prefix(parent.as_str()).is_some_and(|rest| rest.starts_with('.'))
        })
    }
}

/// Whether a ready entry passes what `filter` tests of the entry itself: deferral, an
/// excluded type, ephemerality, and assignment when only unassigned work is wanted.
fn entry_passes(filter: &ReadyFilter, entry: &ReadyEntry<'_>, now_nanos: i64) -> bool {
    (entry.hidden_until <= now_nanos || filter.include_deferred)
        && (!entry.excluded_type || !filter.types.is_empty())
        && (!entry.ephemeral || filter.include_ephemeral)
        && !(entry.assigned && filter.unassigned)
}

fn has_labels(issue: &Issue, all: &[String], any: &[String]) -> bool {
    all.iter().all(|l| issue.labels.contains(l))
        && (any.is_empty() || any.iter().any(|l| issue.labels.contains(l)))
}

/// Ready work in the filter's order. Walks the ready index, which is already in priority
/// order, so the default query stops after `limit` + 1 entries.
pub(crate) fn ready(
    view: &dyn View,
    filter: &ReadyFilter,
    now: Timestamp,
) -> Result<ReadyPage, StoreError> {
    let now_nanos = crate::time::nanos(now);
    let family = Family::of(view, filter)?;
    let wanted = if filter.limit == 0 { usize::MAX } else { filter.limit.saturating_add(1) };
    let in_index_order = filter.sort == SortOrder::Priority;
    let mut found: Vec<(Issue, Option<Counts>)> = Vec::with_capacity(wanted.min(1024));
    view.scan_ready(&mut |id, entry| {
        if !entry_passes(filter, &entry, now_nanos) || !family.admits(id) {
            return Ok(true);
        }
        let Some(issue) = ready_issue(view, id, &entry)? else {
            return Ok(true);
        };
        if ready_filter_matches(filter, &issue) {
            found.push((issue, entry.covered.map(|c| c.counts.to_counts())));
        }
        Ok(!in_index_order || found.len() < wanted)
    })?;
    sort_ready_by(&mut found, |(issue, _)| issue, filter.sort, now);
    let truncated = filter.limit != 0 && found.len() > filter.limit;
    if filter.limit != 0 {
        found.truncate(filter.limit);
    }
    let (issues, counts) = found.into_iter().unzip();
    Ok(ReadyPage { issues, truncated, counts })
}

/// The issue of a ready entry: the copy of its row the entry carries, or else its row.
fn ready_issue(
    view: &dyn View,
    id: &str,
    entry: &ReadyEntry<'_>,
) -> Result<Option<Issue>, StoreError> {
    match entry.covered {
        Some(covered) => view.issue_in(id, covered.row),
        None => view.issue(id),
    }
}

/// Whether [`ready_filter_matches`] tests anything of the issue.
fn tests_rows(filter: &ReadyFilter) -> bool {
    filter.assignee.is_some()
        || filter.priority.is_some()
        || !filter.types.is_empty()
        || !filter.exclude_types.is_empty()
        || !filter.labels.is_empty()
        || !filter.labels_any.is_empty()
        || !filter.exclude_labels.is_empty()
        || !filter.metadata.is_empty()
}

fn ready_filter_matches(filter: &ReadyFilter, issue: &Issue) -> bool {
    filter.assignee.as_ref().is_none_or(|a| &issue.assignee == a)
        && filter.priority.is_none_or(|p| issue.priority == p)
        && (filter.types.is_empty() || filter.types.contains(&issue.issue_type))
        && !filter.exclude_types.contains(&issue.issue_type)
        && has_labels(issue, &filter.labels, &filter.labels_any)
        && !filter.exclude_labels.iter().any(|l| issue.labels.contains(l))
        && filter.metadata.matches(issue)
}

/// A test of an issue's metadata (bd's `--has-metadata-key`, `--metadata-field KEY=VALUE`):
/// each key present and each field equal to its value (a string, or other JSON as written).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct MetadataTest {
    pub keys: Vec<String>,
    pub fields: Vec<(String, String)>,
}

impl MetadataTest {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, issue: &Issue) -> bool {
        let field = |key: &str| issue.metadata.as_ref().and_then(|m| m.get(key));
        self.keys.iter().all(|key| field(key).is_some())
            && self.fields.iter().all(|(key, want)| {
                field(key).is_some_and(|value| match value {
                    serde_json::Value::String(text) => text == want,
                    other => {
                        serde_json::from_str::<serde_json::Value>(want).is_ok_and(|w| w == *other)
                    }
                })
            })
    }
}

/// Sorts issues in a ready `order`.
fn sort_ready(issues: &mut [Issue], order: SortOrder, now: Timestamp) {
    sort_ready_by(issues, |issue| issue, order, now);
}

/// Sorts rows in a ready `order` of the issue each carries (`issue` picks it out).
fn sort_ready_by<T>(
    rows: &mut [T],
    issue: impl Fn(&T) -> &Issue,
    order: SortOrder,
    now: Timestamp,
) {
    match order {
        SortOrder::Priority => rows.sort_by(|a, b| {
            let (a, b) = (issue(a), issue(b));
            (a.priority, std::cmp::Reverse(a.created_at), &a.id).cmp(&(
                b.priority,
                std::cmp::Reverse(b.created_at),
                &b.id,
            ))
        }),
        SortOrder::Oldest => rows.sort_by(|a, b| {
            let (a, b) = (issue(a), issue(b));
            (a.created_at, &a.id).cmp(&(b.created_at, &b.id))
        }),
        SortOrder::Hybrid => {
            let recent_since = now - jiff::SignedDuration::from_hours(48);
            rows.sort_by_cached_key(|row| {
                let i = issue(row);
                let recent = i.created_at >= recent_since;
                let rank = if recent { i.priority } else { u8::MAX };
                (!recent, rank, i.created_at, i.id.clone())
            });
        }
    }
}

/// How many issues `ready` lists with no filter and no limit, counted from the ready index's
/// entries without reading their rows.
fn ready_count(view: &dyn View, now: Timestamp) -> Result<u64, StoreError> {
    let (filter, now_nanos) = (ReadyFilter::default(), crate::time::nanos(now));
    let mut count = 0;
    view.scan_ready(&mut |_, entry| {
        count += u64::from(entry_passes(&filter, &entry, now_nanos));
        Ok(true)
    })?;
    Ok(count)
}

/// The first ready issue this actor may claim: open, unblocked, unassigned or its own, and
/// accepted by `accept` (the supervisor skips tasks it still runs and paused coders).
pub(crate) fn first_claimable(
    view: &dyn View,
    actor: &str,
    filter: &ReadyFilter,
    now: Timestamp,
    accept: Option<&dyn Fn(&Issue) -> bool>,
) -> Result<Option<String>, StoreError> {
    let now_nanos = crate::time::nanos(now);
    let family = Family::of(view, filter)?;
    // Without a test of the issue itself, an unassigned entry is taken undecoded.
    let entry_decides = accept.is_none() && !tests_rows(filter);
    let mut chosen = None;
    view.scan_ready(&mut |id, entry| {
        if !entry_passes(filter, &entry, now_nanos) || !family.admits(id) {
            return Ok(true);
        }
        if entry_decides && !entry.assigned {
            chosen = Some(id.to_string());
            return Ok(false);
        }
        let Some(issue) = ready_issue(view, id, &entry)? else {
            return Ok(true);
        };
        let free = issue.assignee.is_empty() || issue.assignee == actor;
        if free
            && ready_filter_matches(filter, &issue)
            && accept.is_none_or(|accept| accept(&issue))
        {
            chosen = Some(issue.id);
            return Ok(false);
        }
        Ok(true)
    })?;
    Ok(chosen)
}

/// What keeps a blocked issue blocked: open blocking targets and unsatisfied waits, or else
/// the blocked parent it inherits from.
fn blockers(view: &dyn View, issue: &Issue) -> Result<Vec<String>, StoreError> {
    let mut direct = Vec::new();
    let mut parents = Vec::new();
    for dep in view.deps_of(&issue.id)? {
        if !super::readiness::edge_blocks_in(view, &dep)? {
            continue;
        }
        if EdgeRole::of_edge(&dep).blocks_through_target() {
            direct.push(dep.depends_on_id);
        } else {
            parents.push(dep.depends_on_id);
        }
    }
    Ok(if direct.is_empty() { parents } else { direct })
}

/// The blocked issues (under `parent`, if given) in `blocked`'s order, at most `limit` of
/// them (0 = all), with the number there are in all. Reads the blocked index, so only the
/// issues printed are decoded.
pub(crate) fn blocked(
    view: &dyn View,
    parent: Option<&str>,
    limit: usize,
) -> Result<(Vec<BlockedIssue>, usize), StoreError> {
    let family = Family::under(view, parent)?;
    let wanted = |id: &str| family.admits(id);
    let cap = if limit == 0 { usize::MAX } else { limit };
    let mut page = Vec::new();
    let mut total = 0;
    let indexed = order::scan_blocked(view, &mut |id| {
        if wanted(id) {
            total += 1;
            if page.len() < cap {
                page.push(id.to_string());
            }
        }
        Ok(parent.is_some() || page.len() < cap)
    })?;
    if indexed.is_none() {
        let ids: Vec<String> = blocked_by_scan(view)?.into_iter().filter(|id| wanted(id)).collect();
        total = ids.len();
        page = ids.into_iter().take(cap).collect();
    } else if parent.is_none() {
        total = usize::try_from(view.blocked_count()?).unwrap_or(usize::MAX);
    }
    let mut entries = Vec::with_capacity(page.len());
    for id in page {
        let Some(issue) = view.issue(&id)? else { continue };
        let blocked_by = blockers(view, &issue)?;
        entries.push(BlockedIssue {
            blocked_by_count: blocked_by.len(),
            blocked_by,
            summary: summarize(view, issue)?,
        });
    }
    Ok((entries, total))
}

/// The blocked issues' ids in `blocked`'s order, from the blocked flags and every blocked
/// issue's row (a store without the order index).
fn blocked_by_scan(view: &dyn View) -> Result<Vec<String>, StoreError> {
    let mut issues = Vec::new();
    for id in view.blocked_ids()? {
        if let Some(issue) = view.issue(&id)? {
            issues.push(issue);
        }
    }
    sort_ready(&mut issues, SortOrder::Priority, Timestamp::UNIX_EPOCH);
    Ok(issues.into_iter().map(|issue| issue.id).collect())
}

/// Whether `filter`'s statuses take `status`.
fn status_wanted(filter: &ListFilter, status: &Status) -> bool {
    if filter.statuses.is_empty() {
        filter.all || *status != Status::Closed
    } else {
        filter.statuses.contains(status)
    }
}

/// The filters an index entry answers: status, priority, type, assignee, update time.
fn row_matches(filter: &ListFilter, row: &RowFacts) -> bool {
    status_wanted(filter, &row.status)
        && filter.priority.is_none_or(|p| row.priority == p)
        && (filter.types.is_empty() || filter.types.contains(&row.issue_type))
        && filter.assignee.as_ref().is_none_or(|a| &row.assignee == a)
        && filter.updated_before.is_none_or(|before| row.updated_at < before)
}

fn list_matches(filter: &ListFilter, issue: &Issue) -> bool {
    let text_ok = filter.text.as_ref().is_none_or(|text| {
        TextNeedle::new(text).matches(&issue.id, &issue.title, &issue.description)
    });
    row_matches(filter, &RowFacts::of(issue)) && text_ok && has_labels(issue, &filter.labels, &[])
}

/// Whether the filter is on statuses only, so the status counts give its total.
fn status_only(filter: &ListFilter) -> bool {
    filter.priority.is_none()
        && filter.types.is_empty()
        && filter.assignee.is_none()
        && filter.labels.is_empty()
        && filter.text.is_none()
        && filter.updated_before.is_none()
}

/// The ids carrying every one of `labels` (`None`: no label filter).
fn labelled(view: &dyn View, labels: &[String]) -> Result<Option<HashSet<String>>, StoreError> {
    let mut set: Option<HashSet<String>> = None;
    for label in labels {
        let ids: HashSet<String> = view.ids_with_label(label)?.into_iter().collect();
        set = Some(match set {
            Some(set) => set.intersection(&ids).cloned().collect(),
            None => ids,
        });
    }
    Ok(set)
}

/// Walks the issues matching `filter` in its order through the order index, calling `visit`
/// with each one's id and facts until it returns false. Only rows searched for text are read.
/// `None` when the index cannot serve the filter's order or the store has no index.
pub(crate) fn walk_list(
    view: &dyn View,
    filter: &ListFilter,
    visit: &mut dyn FnMut(&str, &RowFacts) -> Result<bool, StoreError>,
) -> Result<Option<()>, StoreError> {
    let tag = match filter.sort {
        ListSort::Priority => order::BY_PRIORITY,
        ListSort::Updated => order::BY_UPDATED,
        _ => return Ok(None),
    };
    if !order::indexed(view)? {
        return Ok(None);
    }
    let counts = order::status_counts(view)?;
    let stored: u64 = counts.iter().map(|(_, count)| count).sum();
    let (statuses, walked): (Vec<Status>, Vec<u64>) =
        counts.into_iter().filter(|(status, _)| status_wanted(filter, status)).unzip();
    let priority = filter.priority.filter(|_| tag == order::BY_PRIORITY);
    let Some(scan) = Scan::open(view, tag, &statuses, priority, filter.reverse)? else {
        return Ok(None);
    };
    let labelled = labelled(view, &filter.labels)?;
    let text = match &filter.text {
        Some(text) => Some(TextFilter::plan(view, text, walked.iter().sum(), stored)?),
        None => None,
    };
    if text.as_ref().is_some_and(TextFilter::excludes_all) {
        return Ok(Some(()));
    }
    // Oldest first by update: once one is too recent, so are the rest.
    let oldest_first = tag == order::BY_UPDATED && filter.reverse;
    for row in scan {
        let row = row?;
        if oldest_first && filter.updated_before.is_some_and(|b| row.facts.updated_at >= b) {
            break;
        }
        if !row_matches(filter, &row.facts)
            || labelled.as_ref().is_some_and(|set| !set.contains(&row.id))
        {
            continue;
        }
        if let Some(text) = &text
            && !text.passes(view, &row.id)?
        {
            continue;
        }
        if !visit(&row.id, &row.facts)? {
            break;
        }
    }
    Ok(Some(()))
}

/// The kept count of each status `filter` wants (statuses with none left out).
fn wanted_status_counts(
    view: &dyn View,
    filter: &ListFilter,
) -> Result<Vec<(Status, u64)>, StoreError> {
    let counts = order::status_counts(view)?;
    Ok(counts.into_iter().filter(|(status, _)| status_wanted(filter, status)).collect())
}

/// How a walk of the order index tests its issues for a search text.
enum TextFilter {
    /// The ids that have it, found in one pass over every row: when the walk visits a large
    /// share of the store.
    Hits(HashSet<String>),
    /// Each visited issue's row is looked up and tested: when the walk visits few issues.
    PerRow(Box<TextNeedle>),
}

impl TextFilter {
    /// Picks how to test for `text` a walk that visits `walked` of the `stored` issues. One
    /// pass costs about a third of looking each row up (0.8 against 2.4 µs an issue, measured
    /// on 100k issues), so it pays once the walk visits more than a third of the store.
    fn plan(view: &dyn View, text: &str, walked: u64, stored: u64) -> Result<Self, StoreError> {
        let needle = TextNeedle::new(text);
        Ok(if walked.saturating_mul(3) > stored {
            TextFilter::Hits(view.ids_with_text(&needle)?)
        } else {
            TextFilter::PerRow(Box::new(needle))
        })
    }

    /// Whether no issue can pass (the pass found none).
    fn excludes_all(&self) -> bool {
        matches!(self, TextFilter::Hits(hits) if hits.is_empty())
    }

    fn passes(&self, view: &dyn View, id: &str) -> Result<bool, StoreError> {
        match self {
            TextFilter::Hits(hits) => Ok(hits.contains(id)),
            TextFilter::PerRow(needle) => view.has_text(id, needle),
        }
    }
}

/// Issues matching `filter`, sorted, with the number that matched before the limit. Through
/// the order index where it serves the sort, else by decoding every issue.
pub(crate) fn list(
    view: &dyn View,
    filter: &ListFilter,
) -> Result<(Vec<IssueSummary>, usize), StoreError> {
    let cap = if filter.limit == 0 { usize::MAX } else { filter.limit };
    let counted = status_only(filter);
    let mut page: Vec<String> = Vec::new();
    let mut total = 0;
    let walked = walk_list(view, filter, &mut |id, _| {
        total += 1;
        if page.len() < cap {
            page.push(id.to_string());
        }
        Ok(!counted || page.len() < cap)
    })?;
    if walked.is_none() {
        return list_by_scan(view, filter);
    }
    if counted {
        total = wanted_status_counts(view, filter)?
            .into_iter()
            .map(|(_, count)| usize::try_from(count).unwrap_or(usize::MAX))
            .sum();
    }
    let mut issues = Vec::with_capacity(page.len());
    for id in page {
        if let Some(issue) = view.issue(&id)? {
            issues.push(summarize(view, issue)?);
        }
    }
    Ok((issues, total))
}

/// [`list`] by decoding every issue: the sorts the index does not keep, stores without it.
fn list_by_scan(
    view: &dyn View,
    filter: &ListFilter,
) -> Result<(Vec<IssueSummary>, usize), StoreError> {
    let mut found = Vec::new();
    let mut consider = |issue: Issue| {
        if list_matches(filter, &issue) {
            found.push(issue);
        }
    };
    // A label filter narrows the scan to the issues carrying the first label.
    if let Some(label) = filter.labels.first() {
        for id in view.ids_with_label(label)? {
            if let Some(issue) = view.issue(&id)? {
                consider(issue);
            }
        }
    } else {
        view.scan_issues(&mut |issue| {
            consider(issue);
            Ok(true)
        })?;
    }
    sort_list(&mut found, filter.sort);
    if filter.reverse {
        found.reverse();
    }
    let total = found.len();
    if filter.limit != 0 {
        found.truncate(filter.limit);
    }
    let issues = found.into_iter().map(|i| summarize(view, i)).collect::<Result<_, _>>()?;
    Ok((issues, total))
}

fn sort_list(issues: &mut [Issue], sort: ListSort) {
    match sort {
        ListSort::Priority => sort_ready(issues, SortOrder::Priority, Timestamp::UNIX_EPOCH),
        ListSort::Created => {
            issues.sort_by(|a, b| (b.created_at, &a.id).cmp(&(a.created_at, &b.id)))
        }
        ListSort::Updated => {
            issues.sort_by(|a, b| (b.updated_at, &a.id).cmp(&(a.updated_at, &b.id)))
        }
        ListSort::Id => issues.sort_by(|a, b| a.id.cmp(&b.id)),
        ListSort::Title => issues.sort_by(|a, b| (&a.title, &a.id).cmp(&(&b.title, &b.id))),
        ListSort::Status => issues
            .sort_by(|a, b| (&a.status, a.priority, &a.id).cmp(&(&b.status, b.priority, &b.id))),
    }
}

/// What `stats` reads of an issue row; decoding only these skips the text fields.
#[derive(serde::Deserialize)]
struct StatsFacts {
    #[serde(default)]
    status: Status,
    #[serde(default)]
    issue_type: String,
    #[serde(default = "crate::model::epoch")]
    created_at: Timestamp,
    #[serde(default)]
    closed_at: Option<Timestamp>,
}

impl StatsFacts {
    /// The facts of `id`'s row; a row they do not decode from is decoded whole, and skipped
    /// or refused as [`View::issue_in`] says.
    fn of(view: &dyn View, id: &str, row: &[u8]) -> Result<Option<StatsFacts>, StoreError> {
        let payload = super::checked::open(row).ok();
        if let Some(Ok(facts)) = payload.map(serde_json::from_slice::<StatsFacts>) {
            return Ok(Some(facts));
        }
        Ok(view.issue_in(id, row)?.map(|issue| StatsFacts {
            status: issue.status,
            issue_type: issue.issue_type,
            created_at: issue.created_at,
            closed_at: issue.closed_at,
        }))
    }
}

pub(crate) fn stats(view: &dyn View, now: Timestamp) -> Result<Stats, StoreError> {
    let mut stats = Stats::default();
    let mut lead_hours_total = 0.0;
    let mut closed_with_times = 0u64;
    let mut epics = Vec::new();
    view.scan_rows(&mut |id, row| {
        let Some(issue) = StatsFacts::of(view, id, row)? else { return Ok(true) };
        stats.total_issues += 1;
        match issue.status {
            Status::Open => stats.open_issues += 1,
            Status::InProgress => stats.in_progress_issues += 1,
            Status::Closed => stats.closed_issues += 1,
            Status::Deferred => stats.deferred_issues += 1,
            Status::Pinned => stats.pinned_issues += 1,
            _ => {}
        }
        if let (Status::Closed, Some(closed_at)) = (&issue.status, issue.closed_at) {
            lead_hours_total += closed_at.duration_since(issue.created_at).as_secs_f64() / 3600.0;
            closed_with_times += 1;
        }
        if issue.issue_type == "epic" && issue.status != Status::Closed {
            epics.push(id.to_string());
        }
        Ok(true)
    })?;
    stats.blocked_issues = view.blocked_count()?;
    stats.ready_issues = ready_count(view, now)?;
    for epic in epics {
        let children = view.dependents_by(&epic, dep_type::PARENT_CHILD)?;
        let mut all_closed = !children.is_empty();
        for child in children {
            all_closed &= view.issue(&child)?.is_some_and(|c| c.status == Status::Closed);
        }
        stats.epics_eligible_for_closure += u64::from(all_closed);
    }
    if closed_with_times > 0 {
        stats.average_lead_time_hours = lead_hours_total / closed_with_times as f64;
    }
    Ok(stats)
}

impl Reader {
    /// Resolves an id the user typed (exact, unprefixed, or a unique partial id).
    pub fn resolve(&self, input: &str) -> Result<String, StoreError> {
        self.guarded(|view| resolve_id(view, &self.prefix, input))
    }

    pub fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.guarded(|view| view.issue(id))
    }

    pub fn detail(&self, id: &str) -> Result<IssueDetail, StoreError> {
        self.guarded(|view| detail(view, id))
    }

    pub fn summary(&self, issue: Issue) -> Result<IssueSummary, StoreError> {
        self.guarded(|view| summarize(view, issue))
    }

    /// The issues with their computed counts and parent, as `--json` prints them.
    pub fn summaries(&self, issues: &[Issue]) -> Result<Vec<IssueSummary>, StoreError> {
        self.guarded(|view| issues.iter().map(|i| summarize(view, i.clone())).collect())
    }

    pub fn ready(&self, filter: &ReadyFilter, now: Timestamp) -> Result<ReadyPage, StoreError> {
        self.guarded(|view| ready(view, filter, now))
    }

    /// The issues of a page of ready work with their computed counts and parent, as `--json`
    /// prints them: read from the ready index, not from each issue's edges and comments.
    pub fn ready_summaries(&self, page: &ReadyPage) -> Result<Vec<IssueSummary>, StoreError> {
        self.guarded(|view| ready_summaries(view, page))
    }

    /// The blocked issues (under `parent`), at most `limit` (0 = all), and how many there
    /// are in all.
    pub fn blocked(
        &self,
        parent: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<BlockedIssue>, usize), StoreError> {
        self.guarded(|view| blocked(view, parent, limit))
    }

    /// The first ready issue `actor` may claim (a read-only look before a claim).
    pub fn first_claimable(
        &self,
        actor: &str,
        filter: &ReadyFilter,
        now: Timestamp,
    ) -> Result<Option<String>, StoreError> {
        self.guarded(|view| first_claimable(view, actor, filter, now, None))
    }

    /// [`Reader::first_claimable`] among the issues `accept` takes.
    pub fn first_claimable_where(
        &self,
        actor: &str,
        filter: &ReadyFilter,
        now: Timestamp,
        accept: &dyn Fn(&Issue) -> bool,
    ) -> Result<Option<String>, StoreError> {
        self.guarded(|view| first_claimable(view, actor, filter, now, Some(accept)))
    }

    pub fn list(&self, filter: &ListFilter) -> Result<(Vec<IssueSummary>, usize), StoreError> {
        self.guarded(|view| list(view, filter))
    }

    /// How many issues of each status `filter` wants there are (statuses with none left out),
    /// from the kept status counts: `None` when the filter tests more than the status or the
    /// store keeps no counts (an unindexed store; use [`Reader::visit_list`]).
    pub fn status_totals(
        &self,
        filter: &ListFilter,
    ) -> Result<Option<Vec<(Status, u64)>>, StoreError> {
        self.guarded(|view| {
            if !status_only(filter) || !order::indexed(view)? {
                return Ok(None);
            }
            wanted_status_counts(view, filter).map(Some)
        })
    }

    /// Visits the issues matching `filter` in its order, with the facts of each, until `visit`
    /// returns false, decoding no issue row but those searched for text. `false` when the
    /// filter's order or the store's lack of an index rules that out (nothing was visited;
    /// use [`Reader::list`]).
    pub fn visit_list(
        &self,
        filter: &ListFilter,
        visit: &mut dyn FnMut(&str, &RowFacts) -> bool,
    ) -> Result<bool, StoreError> {
        self.guarded(|view| {
            Ok(walk_list(view, filter, &mut |id, row| Ok(visit(id, row)))?.is_some())
        })
    }

    pub fn stats(&self, now: Timestamp) -> Result<Stats, StoreError> {
        self.guarded(|view| stats(view, now))
    }

    pub fn comments(&self, id: &str) -> Result<Vec<Comment>, StoreError> {
        self.guarded(|view| view.comments_of(id))
    }

    pub fn label_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.guarded(|view| view.label_counts())
    }

    pub fn is_blocked(&self, id: &str) -> Result<bool, StoreError> {
        self.guarded(|view| view.is_blocked(id))
    }

    pub fn dependencies(&self, id: &str) -> Result<Vec<crate::model::Dependency>, StoreError> {
        self.guarded(|view| view.deps_of(id))
    }

    pub fn dependents(&self, id: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.guarded(|view| view.dependents_of(id))
    }

    pub fn tree(
        &self,
        id: &str,
        direction: graph::Direction,
        max_depth: usize,
    ) -> Result<graph::TreeNode, StoreError> {
        self.guarded(|view| graph::tree(view, id, direction, max_depth))
    }

    pub fn cycles(&self) -> Result<Vec<Vec<String>>, StoreError> {
        self.guarded(|view| graph::cycles(view))
    }

    /// Visits every issue in id order.
    pub fn for_each_issue(
        &self,
        visit: &mut dyn FnMut(Issue) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        self.guarded(|view| view.scan_issues(visit))
    }

    pub fn issue_count(&self) -> Result<u64, StoreError> {
        self.guarded(|view| view.issue_count())
    }
}

impl Writer<'_> {
    pub fn resolve(&self, input: &str) -> Result<String, StoreError> {
        resolve_id(self.view(), &self.prefix, input)
    }

    pub fn issue(&self, id: &str) -> Result<Option<Issue>, StoreError> {
        self.view().issue(id)
    }

    pub fn detail(&self, id: &str) -> Result<IssueDetail, StoreError> {
        detail(self.view(), id)
    }

    /// Issue `id` with its counts and parent, as `list` prints it: what [`Writer::detail`]
    /// gives as its summary, without reading the linked issues and comments.
    pub fn summary_of(&self, id: &str) -> Result<IssueSummary, StoreError> {
        let issue = self.view().issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))?;
        self.summary(issue)
    }

    /// `issue`, as this transaction has it, with its computed counts and parent.
    pub fn summary(&self, issue: Issue) -> Result<IssueSummary, StoreError> {
        summarize(self.view(), issue)
    }

    pub fn comments(&self, id: &str) -> Result<Vec<Comment>, StoreError> {
        self.view().comments_of(id)
    }

    pub fn dependencies(&self, id: &str) -> Result<Vec<crate::model::Dependency>, StoreError> {
        self.view().deps_of(id)
    }

    /// The first ready issue the current actor may claim.
    pub fn first_claimable(&self, filter: &ReadyFilter) -> Result<Option<String>, StoreError> {
        first_claimable(self.view(), &self.actor, filter, self.now(), None)
    }

    /// [`Writer::first_claimable`] among the issues `accept` takes.
    pub fn first_claimable_where(
        &self,
        filter: &ReadyFilter,
        accept: &dyn Fn(&Issue) -> bool,
    ) -> Result<Option<String>, StoreError> {
        first_claimable(self.view(), &self.actor, filter, self.now(), Some(accept))
    }

    /// Ids of the open children of `id` (for the close guard on epics).
    pub fn open_children(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let mut open = Vec::new();
        for child in self.view().dependents_by(id, dep_type::PARENT_CHILD)? {
            if self.view().issue(&child)?.is_some_and(|c| c.status != Status::Closed) {
                open.push(child);
            }
        }
        Ok(open)
    }

    /// Ids of the unsettled issues `id` is blocked by directly (for the close guard).
    pub fn open_blockers(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let mut open = Vec::new();
        for dep in self.view().deps_of(id)? {
            if EdgeRole::of_edge(&dep) == EdgeRole::Blocks
                && super::readiness::edge_blocks_in(self.view(), &dep)?
            {
                open.push(dep.depends_on_id);
            }
        }
        Ok(open)
    }
}

#[cfg(test)]
mod tests {
    //! The index-driven reads against the naive full scans they replace, over random histories
    //! of creates, edges, claims, closes, deletes, field changes and a sync replay.

    use proptest::prelude::*;

    use super::*;
    use crate::model::Dependency;
    use crate::op::{IssuePatch, OpKind};
    use crate::store::Store;
    use crate::time::Clock;

    /// One step of a random history; issue numbers are taken modulo the issues made so far.
    #[derive(Debug, Clone)]
    enum Step {
        Create { priority: u8, kind: u8, assignee: u8, label: u8, age: u8 },
        Dep { from: usize, to: usize, parent: bool },
        UnDep { from: usize, to: usize },
        Close(usize),
        Claim(usize, u8),
        Release(usize),
        Reopen(usize),
        Delete(usize),
        Priority(usize, u8),
        Status(usize, u8),
        Label(usize, u8),
        Comment(usize),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0..5u8, 0..3u8, 0..3u8, 0..3u8, 0..4u8).prop_map(
                |(priority, kind, assignee, label, age)| Step::Create {
                    priority, kind, assignee, label, age
                }
            ),
            3 => (0..40usize, 0..40usize, any::<bool>())
                .prop_map(|(from, to, parent)| Step::Dep { from, to, parent }),
            1 => (0..40usize, 0..40usize).prop_map(|(from, to)| Step::UnDep { from, to }),
            2 => (0..40usize).prop_map(Step::Close),
            2 => (0..40usize, 0..2u8).prop_map(|(n, who)| Step::Claim(n, who)),
            1 => (0..40usize).prop_map(Step::Release),
            1 => (0..40usize).prop_map(Step::Reopen),
            1 => (0..40usize).prop_map(Step::Delete),
            1 => (0..40usize, 0..5u8).prop_map(|(n, p)| Step::Priority(n, p)),
            1 => (0..40usize, 0..5u8).prop_map(|(n, s)| Step::Status(n, s)),
            1 => (0..40usize, 0..3u8).prop_map(|(n, l)| Step::Label(n, l)),
            1 => (0..40usize).prop_map(Step::Comment),
        ]
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn edge(from: String, to: String, kind: &str) -> Dependency {
        Dependency {
            issue_id: from,
            depends_on_id: to,
            kind: kind.into(),
            created_at: at(0),
            created_by: String::new(),
            metadata: String::new(),
            thread_id: String::new(),
        }
    }

    /// The op of a step, given how many issues were made before it (`None`: nothing to do).
    fn op_of(step: &Step, made: usize) -> Option<OpKind> {
        let id = |n: usize| (made > 0).then(|| format!("t-{}", n % made));
        let patch = |patch: IssuePatch| Some(patch);
        Some(match step.clone() {
            Step::Create { priority, kind, assignee, label, age } => {
                let mut issue = Issue::new(
                    format!("t-{made}"),
                    format!("issue {made}"),
                    at(i64::from(age) * 100),
                );
                issue.priority = priority;
                issue.issue_type = ["task", "bug", "epic"][usize::from(kind)].into();
                issue.assignee = ["", "a1", "a2"][usize::from(assignee)].into();
                issue.labels = match label {
                    0 => vec![],
                    1 => vec!["l1".into()],
                    _ => vec!["l1".into(), "l2".into()],
                };
                OpKind::Create { issue: Box::new(issue), deps: Vec::new() }
            }
            Step::Dep { from, to, parent } => {
                let kind = if parent { dep_type::PARENT_CHILD } else { dep_type::BLOCKS };
                OpKind::DepAdd { dep: edge(id(from)?, id(to)?, kind) }
            }
            Step::UnDep { from, to } => {
                OpKind::DepRemove { issue_id: id(from)?, depends_on_id: id(to)? }
            }
            Step::Close(n) => {
                OpKind::Close { id: id(n)?, reason: String::new(), session: String::new() }
            }
            Step::Claim(n, _) => OpKind::Claim { id: id(n)? },
            Step::Release(n) => OpKind::Release { id: id(n)?, claim: None },
            Step::Reopen(n) => OpKind::Reopen { id: id(n)?, reason: String::new() },
            Step::Delete(n) => OpKind::Delete { id: id(n)? },
            Step::Priority(n, p) => OpKind::Update {
                id: id(n)?,
                patch: Box::new(patch(IssuePatch { priority: Some(p), ..Default::default() })?),
            },
            Step::Status(n, s) => {
                let status = match s {
                    0 => Status::Blocked,
                    1 => Status::Deferred,
                    2 => Status::Pinned,
                    3 => Status::Hooked,
                    _ => Status::Custom("review".into()),
                };
                OpKind::Update {
                    id: id(n)?,
                    patch: Box::new(IssuePatch { status: Some(status), ..Default::default() }),
                }
            }
            Step::Label(n, l) => OpKind::LabelAdd { id: id(n)?, label: format!("l{l}") },
            Step::Comment(n) => OpKind::Comment {
                comment: crate::model::Comment {
                    id: crate::model::CommentId::Number(0),
                    issue_id: id(n)?,
                    author: "a".into(),
                    text: "c".into(),
                    created_at: at(0),
                },
            },
        })
    }

    /// Applies the steps one transaction each, refusals ignored, with a clock that moves (so
    /// updates order by time) but sometimes stands still (so ties order by id).
    fn play(store: &Store, steps: &[Step]) {
        let mut made = 0;
        for (n, step) in steps.iter().enumerate() {
            let Some(kind) = op_of(step, made) else { continue };
            let actor = match step {
                Step::Claim(_, 1) => "a2",
                _ => "a1",
            };
            let clock = Clock::Fixed(at(1000 + i64::try_from(n / 2).unwrap()));
            let created = matches!(kind, OpKind::Create { .. });
            if store.apply(actor, clock, vec![kind]).is_ok() && created {
                made += 1;
            }
        }
    }

    fn filters() -> Vec<ListFilter> {
        let base = ListFilter::default();
        let with = |f: &dyn Fn(&mut ListFilter)| {
            let mut filter = base.clone();
            f(&mut filter);
            filter
        };
        vec![
            base.clone(),
            with(&|f| f.limit = 3),
            with(&|f| f.all = true),
            with(&|f| f.statuses = vec![Status::InProgress]),
            with(&|f| f.statuses = vec![Status::Closed, Status::Custom("review".into())]),
            with(&|f| f.priority = Some(2)),
            with(&|f| {
                f.priority = Some(1);
                f.limit = 2;
            }),
            with(&|f| f.types = vec!["bug".into(), "epic".into()]),
            with(&|f| f.assignee = Some("a1".into())),
            with(&|f| f.labels = vec!["l1".into(), "l2".into()]),
            with(&|f| f.text = Some("ISSUE 1".into())),
            with(&|f| {
                f.labels = vec!["l1".into()];
                f.types = vec!["task".into()];
                f.all = true;
                f.limit = 4;
            }),
            with(&|f| f.reverse = true),
            with(&|f| f.sort = ListSort::Updated),
            with(&|f| {
                f.sort = ListSort::Updated;
                f.reverse = true;
                f.updated_before = Some(at(1010));
                f.limit = 3;
            }),
            with(&|f| f.sort = ListSort::Created),
        ]
    }

    fn ids(summaries: &[IssueSummary]) -> Vec<&str> {
        summaries.iter().map(|s| s.issue.id.as_str()).collect()
    }

    /// What the index-driven reads print equals what the full scans print, the counts equal
    /// the edges and comments stored, and the index equals a rebuild from scratch.
    fn assert_index_agrees(store: &Store) {
        let reader = store.read().unwrap();
        for filter in filters() {
            let (indexed, total) = reader.guarded(|view| list(view, &filter)).unwrap();
            let (scanned, scan_total) = reader.guarded(|view| list_by_scan(view, &filter)).unwrap();
            assert_eq!(ids(&indexed), ids(&scanned), "{filter:?}");
            assert_eq!(total, scan_total, "{filter:?}");
            for summary in &indexed {
                let id = summary.issue.id.as_str();
                let deps = reader.dependencies(id).unwrap();
                assert_eq!(summary.dependency_count, deps.len());
                assert_eq!(summary.dependent_count, reader.dependents(id).unwrap().len());
                assert_eq!(summary.comment_count, reader.comments(id).unwrap().len());
                let parent = deps.iter().find(|d| d.kind == dep_type::PARENT_CHILD);
                assert_eq!(summary.parent.as_deref(), parent.map(|d| d.depends_on_id.as_str()));
            }
        }
        let (page, total) = reader.blocked(None, 0).unwrap();
        let scanned = reader.guarded(blocked_by_scan).unwrap();
        let listed: Vec<&str> = page.iter().map(|b| b.summary.issue.id.as_str()).collect();
        assert_eq!(listed, scanned);
        assert_eq!(total, scanned.len());
        let (first, total) = reader.blocked(None, 2).unwrap();
        assert_eq!(first.len(), scanned.len().min(2));
        assert_eq!(total, scanned.len());
        drop(reader);
        let ((stored, rebuilt), _) = store
            .write("check", Clock::System, |writer| {
                let stored = writer.order_index_contents()?;
                writer.build_order_index()?;
                Ok((stored, writer.order_index_contents()?))
            })
            .unwrap();
        assert_eq!(stored, rebuilt);
    }

    /// Every ready entry carries its issue's row as stored and its counts and parent as a fresh
    /// computation from the stored edges and comments gives them, and `ready --json` prints
    /// those.
    fn assert_ready_entries_agree(store: &Store) {
        let reader = store.read().unwrap();
        reader
            .guarded(|view| {
                view.scan_ready(&mut |id, entry| {
                    let covered = entry.covered.expect("every entry carries its issue");
                    assert_eq!(covered.counts.to_counts(), view.counts_of(id)?, "{id}");
                    let issue = view.issue(id)?.unwrap();
                    assert_eq!(covered.row, crate::store::ahead_rows::issue_row(&issue), "{id}");
                    Ok(true)
                })
            })
            .unwrap();
        let everything = ReadyFilter {
            include_deferred: true,
            include_ephemeral: true,
            ..ReadyFilter::default()
        };
        let page = reader.ready(&everything, at(0)).unwrap();
        let printed = serde_json::to_value(reader.ready_summaries(&page).unwrap()).unwrap();
        let counted = serde_json::to_value(reader.summaries(&page.issues).unwrap()).unwrap();
        assert_eq!(printed, counted);
    }

    /// The ops of `store`'s journal as one bulk op made elsewhere (an import on another
    /// machine), for a replay.
    fn as_one_bulk_op(store: &Store) -> crate::op::Op {
        let ops = store.journal(0).unwrap().into_iter().map(|(_, op)| op.kind).collect();
        let scratch = tempfile::tempdir().unwrap();
        let elsewhere = new_store(&scratch, "elsewhere");
        let (op, _) = elsewhere
            .write("a1", Clock::System, |writer| writer.stamp(OpKind::Bulk { ops }))
            .unwrap();
        op
    }

    fn new_store(dir: &tempfile::TempDir, name: &str) -> Store {
        Store::init(&dir.path().join(name).join(".beads"), "t").unwrap()
    }

    /// 24 cases, with the seeds of past failures kept next to this file
    /// (`query.proptest-regressions`), not in a directory at the top of the repository.
    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
            )),
            ..ProptestConfig::with_cases(24)
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn index_driven_reads_match_full_scans(steps in prop::collection::vec(step(), 1..60)) {
            let dir = tempfile::tempdir().unwrap();
            let store = new_store(&dir, "a");
            play(&store, &steps);
            assert_index_agrees(&store);
            // A replay of the same ops in reverse order re-applies them in the total order
            // (the merge path), which must leave the index as right.
            let other = new_store(&dir, "b");
            let mut ops: Vec<_> = store.journal(0).unwrap().into_iter().map(|(_, op)| op).collect();
            ops.reverse();
            let half = ops.split_off(ops.len() / 2);
            other.replay(Clock::System, half).unwrap();
            other.replay(Clock::System, ops).unwrap();
            assert_index_agrees(&other);
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// The rows and counts the ready index carries stay right through random histories, a
        /// merge that re-applies every op in the total order, and a bulk op (an import)
        /// replayed.
        #[test]
        fn ready_entries_carry_the_rows_and_counts_of_their_issues(
            steps in prop::collection::vec(step(), 1..60)
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = new_store(&dir, "a");
            play(&store, &steps);
            assert_ready_entries_agree(&store);
            let merged = new_store(&dir, "b");
            let mut ops: Vec<_> = store.journal(0).unwrap().into_iter().map(|(_, op)| op).collect();
            ops.reverse();
            let half = ops.split_off(ops.len() / 2);
            merged.replay(Clock::System, half).unwrap();
            merged.replay(Clock::System, ops).unwrap();
            assert_ready_entries_agree(&merged);
            let imported = new_store(&dir, "c");
            imported.replay(Clock::System, vec![as_one_bulk_op(&store)]).unwrap();
            assert_ready_entries_agree(&imported);
        }
    }

    /// A store made before ready entries carried rows and counts prints what it looks up, and
    /// its first write puts them into every entry.
    #[test]
    fn ready_entries_without_rows_are_covered_by_the_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = new_store(&dir, "a");
        let steps: Vec<Step> = (0..6u8)
            .map(|n| Step::Create { priority: n % 3, kind: 0, assignee: 0, label: 0, age: n })
            .chain([
                Step::Dep { from: 1, to: 0, parent: true },
                Step::Dep { from: 2, to: 0, parent: false },
                Step::Comment(1),
                Step::Comment(1),
                Step::Close(2),
            ])
            .collect();
        play(&store, &steps);
        let everything = ReadyFilter { limit: 0, ..ReadyFilter::default() };
        let printed = |store: &Store| {
            let reader = store.read().unwrap();
            let page = reader.ready(&everything, at(0)).unwrap();
            serde_json::to_value(reader.ready_summaries(&page).unwrap()).unwrap()
        };
        let before = printed(&store);
        let txn = store.writable().unwrap().begin_write().unwrap();
        {
            use redb::ReadableTable;
            let mut ready = txn.open_table(crate::store::tables::READY).unwrap();
            let mut old_entries = Vec::new();
            for entry in ready.iter().unwrap() {
                let (key, value) = entry.unwrap();
                old_entries.push((key.value().to_vec(), value.value()[..9].to_vec()));
            }
            for (key, value) in old_entries {
                ready.insert(key.as_slice(), value.as_slice()).unwrap();
            }
            let mut meta_table = txn.open_table(crate::store::tables::META).unwrap();
            meta_table.remove(crate::store::meta::READY_COVERING).unwrap();
        }
        txn.commit().unwrap();

        let uncounted = store.read().unwrap();
        uncounted
            .guarded(|view| {
                view.scan_ready(&mut |_, entry| {
                    assert!(entry.covered.is_none());
                    Ok(true)
                })
            })
            .unwrap();
        drop(uncounted);
        assert_eq!(printed(&store), before);
        let first = before.as_array().unwrap().iter().find(|s| s["id"] == "t-1").unwrap();
        assert_eq!((&first["comment_count"], &first["parent"]), (&2.into(), &"t-0".into()));

        store.apply("a1", Clock::System, vec![op_of(&Step::Comment(3), 6).unwrap()]).unwrap();
        assert_ready_entries_agree(&store);
    }

    /// A store made before the order index existed reads by full scans, and its first write
    /// builds the index.
    #[test]
    fn an_unindexed_store_is_read_by_scanning_and_indexed_by_its_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = new_store(&dir, "a");
        let steps: Vec<Step> = (0..12u8)
            .map(|n| Step::Create {
                priority: n % 5,
                kind: n % 3,
                assignee: n % 3,
                label: n % 3,
                age: n % 4,
            })
            .chain([Step::Dep { from: 3, to: 1, parent: false }, Step::Close(1), Step::Claim(5, 0)])
            .chain([
                Step::Dep { from: 7, to: 2, parent: false },
                Step::Dep { from: 8, to: 7, parent: true },
            ])
            .collect();
        play(&store, &steps);
        let before = store.read().unwrap().list(&ListFilter::default()).unwrap();
        let blocked_before = store.read().unwrap().blocked(None, 0).unwrap().1;
        let txn = store.writable().unwrap().begin_write().unwrap();
        txn.delete_table(crate::store::tables::ORDER).unwrap();
        {
            let mut meta_table = txn.open_table(crate::store::tables::META).unwrap();
            meta_table.remove(crate::store::meta::ORDER_INDEX).unwrap();
            meta_table.retain(|key, _| !key.starts_with(crate::store::meta::STATUS_COUNT)).unwrap();
        }
        txn.commit().unwrap();

        let reader = store.read().unwrap();
        assert!(!reader.guarded(order::indexed).unwrap());
        let unindexed = reader.list(&ListFilter::default()).unwrap();
        assert_eq!(ids(&unindexed.0), ids(&before.0));
        assert_eq!(unindexed.1, before.1);
        assert_eq!(reader.blocked(None, 0).unwrap().1, blocked_before);
        drop(reader);

        let comment = op_of(&Step::Comment(0), 1).unwrap();
        store.apply("a1", Clock::System, vec![comment]).unwrap();
        assert!(store.read().unwrap().guarded(order::indexed).unwrap());
        assert_index_agrees(&store);
    }
}
