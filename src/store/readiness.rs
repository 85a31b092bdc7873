//! Keeps the materialised blocked flag and the ready index right, op by op (spec §3.2–3.3).
//!
//! An issue X that is not closed or pinned is blocked when
//! 1. it has a `blocks`/`conditional-blocks` edge to an existing issue that is not closed or
//!    pinned;
//! 2. it has a `parent-child` edge to a parent that is itself blocked; or
//! 3. it has a `waits-for` edge to a spawner with an unsettled child — unless the edge's gate is
//!    `any-children` and one child is closed.
//!
//! The rule is written once, in [`edge_blocks`]: the index below applies it op by op, and the
//! queries that say *what* blocks an issue (`blocked`, `show`, the close guard, `ready
//! --explain`) call it over a [`View`].
//!
//! Each op names the issues whose inputs it touched (the seeds); [`Writer::refresh`]
//! recomputes those, and when a flag flips it follows parent-child edges down to the children,
//! whose rule 2 reads it. Parent-child edges are kept acyclic (see `apply`), so this reaches the
//! same fixpoint as a computation from scratch. The ready index holds every open, unblocked,
//! unpinned issue, keyed in `bd ready` order, with the deferral and type facts the query needs
//! and, so that `ready` and `ready --json` read nothing per issue, a copy of the issue's row and
//! its computed counts and parent. An op seeds every issue whose row it wrote and both ends of
//! every edge and the issue of every comment it added or removed (see `apply`), so the copies
//! stay right too.
//!
//! A refresh reads only the few fields readiness depends on (status, priority, type,
//! assignee, creation and deferral times, flags), not whole issue rows, and remembers what it
//! read about each issue until it returns. A refresh of every issue (after an import into an
//! empty store) reads them ahead, with every issue's edges, in one pass over each table, and
//! visits each issue once, after its parents, looking up only the rows of the ready ones.

use std::collections::{BTreeSet, VecDeque};

use jiff::Timestamp;
use redb::ReadableTable;
use serde::Deserialize;

use super::tables::{
    Covered, EdgeFacts, EdgeRole, EdgesByIssue, EntryCounts, MAX_KEY, ReadyEntry, View,
    edge_facts_by_issue, id_of_ready_key, ready_key,
};
use super::{StoreError, Writer, meta};
use crate::model::{Issue, Status, dep_type};

/// Rules 1–3 for one edge of an issue that is not settled: whether the edge, of `role`, to
/// `target` keeps the issue blocked. `view` gives the blocked flags and the children; `brief`
/// whether an issue exists and is settled or closed (the index reads it from a cache of row
/// facts, a query from the whole issue).
pub(crate) fn edge_blocks(
    view: &dyn View,
    brief: &mut dyn FnMut(&str) -> Result<Option<Brief>, StoreError>,
    role: EdgeRole,
    target: &str,
) -> Result<bool, StoreError> {
    match role {
        EdgeRole::Blocks => Ok(brief(target)?.is_some_and(|t| !t.settled)),
        EdgeRole::ParentChild => view.is_blocked(target),
        EdgeRole::WaitsFor { any_children } => {
            let (mut unsettled, mut closed) = (false, false);
            for child in view.dependents_by(target, dep_type::PARENT_CHILD)? {
                if let Some(child) = brief(&child)? {
                    unsettled |= !child.settled;
                    closed |= child.closed;
                }
            }
            Ok(unsettled && !(any_children && closed))
        }
        EdgeRole::Other => Ok(false),
    }
}

/// Whether `dep` is an edge that blocks its issue through its target itself (a `blocks` kind or
/// a `waits-for`), the ones `ready --explain` lists as resolved for a ready issue.
pub fn blocks_through_target(dep: &crate::model::Dependency) -> bool {
    EdgeRole::of_edge(dep).blocks_through_target()
}

/// The same rule over whole issues read from `view` (the queries' side).
pub(crate) fn edge_blocks_in(
    view: &dyn View,
    dep: &crate::model::Dependency,
) -> Result<bool, StoreError> {
    let mut brief = |id: &str| Ok(view.issue(id)?.as_ref().map(Brief::of_issue));
    edge_blocks(view, &mut brief, EdgeRole::of_edge(dep), &dep.depends_on_id)
}

/// The fields of an issue row that readiness reads. Decoding only these skips the text
/// fields and the unmodelled keys (which the full [`Issue`] collects into a map), so a
/// refresh of a whole import costs a fraction of full decodes.
#[derive(Deserialize)]
pub(super) struct Facts {
    #[serde(default)]
    status: Status,
    #[serde(default)]
    priority: u8,
    #[serde(default = "default_type")]
    issue_type: String,
    #[serde(default)]
    assignee: String,
    #[serde(default = "crate::model::epoch")]
    created_at: Timestamp,
    #[serde(default)]
    defer_until: Option<Timestamp>,
    #[serde(default)]
    ephemeral: bool,
    #[serde(default)]
    pinned: bool,
}

impl Facts {
    /// An issue with only the fields that its index keys read (id, priority, creation time,
    /// type), for [`super::tables::ready_key`] and the blocked index.
    fn keyed(&self, id: &str) -> Issue {
        let mut keyed = Issue::new(id.to_string(), String::new(), self.created_at);
        keyed.priority = self.priority;
        keyed.issue_type.clone_from(&self.issue_type);
        keyed
    }
}

fn default_type() -> String {
    "task".to_string()
}

/// What other issues' readiness needs to know about an issue.
#[derive(Clone, Copy)]
pub(crate) struct Brief {
    settled: bool,
    closed: bool,
    /// `defer_until` in nanoseconds (0 = none).
    defer: i64,
}

impl Brief {
    /// What the rule reads of a whole issue.
    pub(crate) fn of_issue(issue: &Issue) -> Brief {
        Brief {
            settled: issue.status.is_settled(),
            closed: issue.status == Status::Closed,
            defer: issue.defer_until.map_or(0, crate::time::nanos),
        }
    }

    fn of(facts: &Facts) -> Brief {
        Brief {
            settled: facts.status.is_settled(),
            closed: facts.status == Status::Closed,
            defer: facts.defer_until.map_or(0, crate::time::nanos),
        }
    }
}

/// What a refresh reads of an issue it visits: its facts, its own edges, and its row when
/// the facts came from it (an issue read ahead has its row read only if it is ready).
struct Visit {
    facts: Facts,
    edges: Vec<EdgeFacts>,
    row: Option<Vec<u8>>,
}

/// Issue facts read during one [`Writer::refresh`]. A refresh only writes the blocked flags
/// and the ready index, never issue rows or edges, so what it reads stays true until it
/// returns.
#[derive(Default)]
struct FactCache {
    briefs: foldhash::HashMap<String, Option<Brief>>,
}

/// The edges a bulk transaction on a store that started empty inserted, with what each does to
/// readiness, noted as they were inserted ([`Writer::created_edges`]) so that the refresh at the
/// end reads no edge row. Grouped by issue in the order they came.
#[derive(Debug, Default)]
pub(super) struct CreatedEdges {
    pub(super) groups: EdgesByIssue,
}

impl CreatedEdges {
    /// Notes the edge `dep`, just inserted.
    pub fn note(&mut self, dep: &crate::model::Dependency) {
        let facts = EdgeFacts::of_edge(dep);
        match self.groups.last_mut() {
            Some((issue, edges)) if *issue == dep.issue_id => edges.push(facts),
            _ => self.groups.push((dep.issue_id.clone(), vec![facts])),
        }
    }

    /// The edges as [`edge_facts_by_issue`] reads them from the table: issues in id order,
    /// each issue's edges in target order, and of an edge inserted twice the last.
    fn by_issue(self) -> EdgesByIssue {
        let mut groups = self.groups;
        // An import creates issues in id order, so this sort is rarely needed; it is stable,
        // so the groups of one issue stay in the order made.
        if !groups.is_sorted_by(|a, b| a.0 < b.0) {
            groups.sort_by(|a, b| a.0.cmp(&b.0));
            groups = merge_groups_of_one_issue(groups);
        }
        for (_, edges) in &mut groups {
            edges.sort_by(|a, b| a.target.cmp(&b.target));
            // Of one target's edges, the last inserted takes the place of the one kept.
            edges.dedup_by(|later, kept| {
                let same = later.target == kept.target;
                if same {
                    std::mem::swap(later, kept);
                }
                same
            });
        }
        groups
    }
}

/// Every issue's edges: as noted while they were inserted (`created`), if the notes count
/// every row of the edge table `deps`, else as read from it.
fn edges_by_issue<D>(created: Option<CreatedEdges>, deps: &D) -> Result<EdgesByIssue, StoreError>
where
    D: ReadableTable<(&'static str, &'static str), &'static [u8]>,
{
    if let Some(created) = created {
        let by_issue = created.by_issue();
        let noted: usize = by_issue.iter().map(|(_, edges)| edges.len()).sum();
        if noted as u64 == deps.len()? {
            return Ok(by_issue);
        }
    }
    edge_facts_by_issue(deps)
}

/// `groups` (sorted by issue) with the adjacent groups of one issue made one, in order.
fn merge_groups_of_one_issue(groups: EdgesByIssue) -> EdgesByIssue {
    let mut merged: EdgesByIssue = Vec::with_capacity(groups.len());
    for (issue, edges) in groups {
        match merged.last_mut() {
            Some((last, kept)) if *last == issue => kept.extend(edges),
            _ => merged.push((issue, edges)),
        }
    }
    merged
}

/// Every issue's facts and own edges, read ahead of a refresh of every issue in one pass
/// over the issue table and one over the edge table, both in id order: a lookup of each
/// issue in each table costs several times more.
struct ReadAhead {
    /// Every issue's id, sorted.
    ids: Vec<String>,
    /// Each issue's facts and edges, until the refresh visits it.
    unvisited: Vec<Option<(Facts, Vec<EdgeFacts>)>>,
}

impl ReadAhead {
    /// The positions of the parent-child parents of the issue at `at` (those that exist).
    fn parents(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        let edges = self.unvisited[at].as_ref().map_or(&[][..], |(_, edges)| edges.as_slice());
        edges
            .iter()
            .filter(|edge| edge.role == EdgeRole::ParentChild)
            .filter_map(|edge| self.ids.binary_search_by(|id| id.as_str().cmp(&edge.target)).ok())
    }

    /// The positions of every issue, each after all of its parents: the order in which one
    /// visit per issue finds every parent's blocked flag final (parent-child edges are
    /// acyclic; were one a cycle, its closing edge would be passed over).
    fn parents_first(&self) -> Vec<usize> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Unseen,
            Open,
            Placed,
        }
        let mut marks = vec![Mark::Unseen; self.ids.len()];
        let mut order = Vec::with_capacity(self.ids.len());
        for root in 0..self.ids.len() {
            if marks[root] != Mark::Unseen {
                continue;
            }
            marks[root] = Mark::Open;
            let mut stack = vec![root];
            while let Some(&at) = stack.last() {
                match self.parents(at).find(|&parent| marks[parent] == Mark::Unseen) {
                    Some(parent) => {
                        marks[parent] = Mark::Open;
                        stack.push(parent);
                    }
                    None => {
                        marks[at] = Mark::Placed;
                        order.push(at);
                        stack.pop();
                    }
                }
            }
        }
        order
    }
}

/// The facts in the row of issue `id`.
pub(super) fn facts_in(id: &str, row: &[u8]) -> Result<Facts, StoreError> {
    let payload = super::tables::checked_payload(&format!("issue {id}"), row)?;
    serde_json::from_slice(payload).map_err(|e| StoreError::Corrupt(format!("issue row {id}: {e}")))
}

impl Writer<'_> {
    /// The facts of `id` (`None` if there is no such issue).
    fn facts(&self, id: &str) -> Result<Option<Facts>, StoreError> {
        match self.tables.issues.get(id)? {
            Some(row) => facts_in(id, row.value()).map(Some),
            None => Ok(None),
        }
    }

    /// The row of `id` (`None` if there is no such issue).
    fn row(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.tables.issues.get(id)?.map(|row| row.value().to_vec()))
    }

    fn brief(&self, cache: &mut FactCache, id: &str) -> Result<Option<Brief>, StoreError> {
        if let Some(brief) = cache.briefs.get(id) {
            return Ok(*brief);
        }
        let brief = self.facts(id)?.as_ref().map(Brief::of);
        cache.briefs.insert(id.to_string(), brief);
        Ok(brief)
    }

    /// Rules 1–3 for an issue whose own status is not settled, given its edges.
    fn blocked_by_edges(
        &self,
        cache: &mut FactCache,
        edges: &[EdgeFacts],
    ) -> Result<bool, StoreError> {
        let mut brief = |id: &str| self.brief(cache, id);
        for edge in edges {
            if edge_blocks(&self.tables, &mut brief, edge.role, &edge.target)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The instant until which an issue is hidden from ready: its own `defer_until` or a
    /// parent's, whichever is later.
    fn hidden_until(
        &self,
        cache: &mut FactCache,
        own: &Facts,
        edges: &[EdgeFacts],
    ) -> Result<i64, StoreError> {
        let mut until = own.defer_until.map_or(0, crate::time::nanos);
        for edge in edges.iter().filter(|edge| edge.role == EdgeRole::ParentChild) {
            if let Some(parent) = self.brief(cache, &edge.target)? {
                until = until.max(parent.defer);
            }
        }
        Ok(until)
    }

    /// Recomputes the blocked flag and ready entry of every seed, and of the children of any
    /// issue whose flag changed.
    pub(crate) fn refresh(&mut self, seeds: BTreeSet<String>) -> Result<(), StoreError> {
        let mut cache = FactCache::default();
        let mut queue: VecDeque<String> = seeds.into_iter().collect();
        while let Some(id) = queue.pop_front() {
            let Some(row) = self.row(&id)? else {
                // Its ready entry went with its row (`apply`'s `delete`).
                self.tables.blocked.remove(id.as_str())?;
                continue;
            };
            let facts = facts_in(&id, &row)?;
            cache.briefs.insert(id.clone(), Some(Brief::of(&facts)));
            let visit = Visit { facts, edges: self.tables.edges_of(&id)?, row: Some(row) };
            if self.refresh_one(&mut cache, &id, visit)? {
                queue.extend(self.tables.dependents_by(&id, dep_type::PARENT_CHILD)?);
            }
        }
        Ok(())
    }

    /// [`Writer::refresh`] with every issue as a seed, on facts and edges read ahead in one
    /// pass over each table and visited parents first, so that each issue is visited once.
    /// That is the same fixpoint only while parent-child edges are acyclic, as `apply` and
    /// the importer keep them.
    pub(crate) fn refresh_every_issue(&mut self) -> Result<(), StoreError> {
        let mut cache = FactCache::default();
        let mut ahead = self.read_ahead(&mut cache)?;
        for at in ahead.parents_first() {
            let Some((facts, edges)) = ahead.unvisited[at].take() else { continue };
            let visit = Visit { facts, edges, row: None };
            self.refresh_one(&mut cache, &ahead.ids[at], visit)?;
        }
        Ok(())
    }

    /// Recomputes the blocked flag and ready entry of `id`; true when the flag changed.
    fn refresh_one(
        &mut self,
        cache: &mut FactCache,
        id: &str,
        visit: Visit,
    ) -> Result<bool, StoreError> {
        let was_blocked = self.tables.is_blocked(id)?;
        let blocked =
            !visit.facts.status.is_settled() && self.blocked_by_edges(cache, &visit.edges)?;
        let changed = blocked != was_blocked;
        if changed {
            if blocked {
                self.tables.blocked.insert(id, ())?;
            } else {
                self.tables.blocked.remove(id)?;
            }
            self.set_blocked_entry(&visit.facts.keyed(id), blocked)?;
        }
        self.write_ready_entry(cache, id, visit, blocked)?;
        Ok(changed)
    }

    /// Every issue's facts and edges, for [`Writer::refresh_every_issue`], with every
    /// issue's brief put in `cache`. The edges are read on another core meanwhile.
    fn read_ahead(&mut self, cache: &mut FactCache) -> Result<ReadAhead, StoreError> {
        let created = self.created_facts.take();
        let created = match created {
            Some(created) if created.len() as u64 == self.tables.issue_count()? => Some(created),
            _ => None,
        };
        let created_edges = self.created_edges.take();
        let deps = self.tables.deps();
        let carried = super::guard::carry();
        let (issues, edges) = std::thread::scope(|scope| {
            let edges = scope.spawn(|| carried.run(|| edges_by_issue(created_edges, deps)));
            let issues = match created {
                Some(created) => Ok(Self::created_facts_ahead(created, cache)),
                None => self.read_facts(cache),
            };
            (issues, edges.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
        });
        let mut ahead = issues?;
        // Both lists are in id order, so one cursor over the ids finds each edge's issue.
        let mut at = 0;
        for (issue, edges) in edges? {
            while ahead.ids.get(at).is_some_and(|id| *id < issue) {
                at += 1;
            }
            if ahead.ids.get(at).is_some_and(|id| *id == issue)
                && let Some((_, own)) = &mut ahead.unvisited[at]
            {
                *own = edges;
            }
        }
        Ok(ahead)
    }

    /// [`Writer::read_facts`] from the facts kept as the issues were created (each read from
    /// the row it was stored with), which then hold every issue in the store.
    fn created_facts_ahead(mut created: Vec<(String, Facts)>, cache: &mut FactCache) -> ReadAhead {
        created.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let (mut ids, mut unvisited) =
            (Vec::with_capacity(created.len()), Vec::with_capacity(created.len()));
        for (id, facts) in created {
            cache.briefs.insert(id.clone(), Some(Brief::of(&facts)));
            ids.push(id);
            unvisited.push(Some((facts, Vec::new())));
        }
        ReadAhead { ids, unvisited }
    }

    /// Every issue's id and facts, without edges yet, with its brief put in `cache`.
    fn read_facts(&self, cache: &mut FactCache) -> Result<ReadAhead, StoreError> {
        let (mut ids, mut unvisited) = (Vec::new(), Vec::new());
        self.tables.scan_rows(&mut |id, row| {
            let facts = facts_in(id, row)?;
            cache.briefs.insert(id.to_string(), Some(Brief::of(&facts)));
            ids.push(id.to_string());
            unvisited.push(Some((facts, Vec::new())));
            Ok(true)
        })?;
        Ok(ReadAhead { ids, unvisited })
    }

    /// Removes the ready entry under `key`, if there is one.
    pub(super) fn remove_ready_entry(&mut self, key: Vec<u8>) -> Result<(), StoreError> {
        match &mut self.held_ready {
            Some(held) => held.remove(key),
            None => {
                self.tables.ready.remove(key.as_slice())?;
            }
        }
        Ok(())
    }

    fn write_ready_entry(
        &mut self,
        cache: &mut FactCache,
        id: &str,
        visit: Visit,
        blocked: bool,
    ) -> Result<(), StoreError> {
        let Visit { facts, edges, row } = visit;
        let keyed = facts.keyed(id);
        let key = ready_key(&keyed);
        if facts.status != Status::Open || blocked || facts.pinned {
            return self.remove_ready_entry(key);
        }
        let row = match row {
            Some(row) => row,
            None => self.row(id)?.ok_or_else(|| {
                StoreError::Corrupt(format!("issue row {id} went missing during a refresh"))
            })?,
        };
        let counts = self.tables.counts_beside(id, &edges)?;
        let entry = ReadyEntry {
            hidden_until: self.hidden_until(cache, &facts, &edges)?,
            excluded_type: keyed.is_excluded_from_ready(),
            ephemeral: facts.ephemeral,
            assigned: !facts.assignee.is_empty(),
            covered: Some(Covered { row: &row, counts: EntryCounts::of(&counts) }),
        };
        match &mut self.held_ready {
            Some(held) => held.insert(key, entry.encode()),
            None => {
                self.tables.ready.insert(key.as_slice(), entry.encode().as_slice())?;
            }
        }
        Ok(())
    }

    /// Puts the issue's row and counts into every ready entry, keeping the rest of each entry,
    /// and marks the index as covering: what the first writer of a store made before entries
    /// carried them does. Readiness itself is not recomputed (`fleet doctor` compares it with a
    /// recomputation, which this must not hide).
    pub(crate) fn cover_ready_entries(&mut self) -> Result<(), StoreError> {
        let mut covered = Vec::new();
        for entry in self.tables.ready.iter()? {
            let (key, value) = entry?;
            let id = id_of_ready_key(key.value());
            let counts = self.tables.counts_of(id)?;
            let row = self.row(id)?.unwrap_or_default();
            let entry = ReadyEntry {
                covered: Some(Covered { row: &row, counts: EntryCounts::of(&counts) }),
                ..ReadyEntry::decode(value.value())
            };
            covered.push((key.value().to_vec(), entry.encode()));
        }
        for (key, value) in covered {
            self.tables.ready.insert(key.as_slice(), value.as_slice())?;
        }
        self.tables.meta.insert(meta::READY_COVERING, [1u8].as_slice())?;
        Ok(())
    }

    /// Seeds for `old` becoming `new` (the same issue): [`Writer::status_seeds`] when what
    /// other issues' readiness reads of it changed — whether its status is settled, whether it
    /// is closed — else only itself. A claim or a release (open ⇄ in progress) changes neither,
    /// so it recomputes one issue instead of everything it blocks.
    pub(crate) fn status_change_seeds(
        &self,
        old: &Issue,
        new: &Issue,
    ) -> Result<BTreeSet<String>, StoreError> {
        let seen_by_others = |status: &Status| (status.is_settled(), *status == Status::Closed);
        if seen_by_others(&old.status) == seen_by_others(&new.status) {
            return Ok(BTreeSet::from([new.id.clone()]));
        }
        self.status_seeds(&new.id)
    }

    /// Seeds for a change of `id`'s status: itself, what it blocks directly, and whatever
    /// waits for the children of its parents.
    pub(crate) fn status_seeds(&self, id: &str) -> Result<BTreeSet<String>, StoreError> {
        let parents = self.tables.parents_of(id)?;
        self.status_seeds_with_parents(id, parents.iter().map(String::as_str))
    }

    /// [`Writer::status_seeds`] when the caller already knows the issue's parents (a create
    /// carries its edges), which saves reading them back.
    pub(crate) fn status_seeds_with_parents<'p>(
        &self,
        id: &str,
        parents: impl Iterator<Item = &'p str>,
    ) -> Result<BTreeSet<String>, StoreError> {
        let mut seeds = BTreeSet::from([id.to_string()]);
        self.dependents_where(id, dep_type::blocks_directly, &mut seeds)?;
        for parent in parents {
            self.dependents_where(parent, |kind| kind == dep_type::WAITS_FOR, &mut seeds)?;
        }
        Ok(seeds)
    }

    /// Adds to `out` the issues depending on `id` through edges whose type passes `wanted`,
    /// reading the reverse index without copying the others.
    fn dependents_where(
        &self,
        id: &str,
        wanted: impl Fn(&str) -> bool,
        out: &mut BTreeSet<String>,
    ) -> Result<(), StoreError> {
        for entry in self.tables.rdeps.range((id, "")..=(id, MAX_KEY))? {
            let (key, kind) = entry?;
            if wanted(kind.value()) {
                out.insert(key.value().1.to_string());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        serde_json::from_str("{}").expect("every fact has a default")
    }

    /// Issues `ids` (sorted), each with parent-child edges to the given targets.
    fn ahead(issues: &[(&str, &[&str])]) -> ReadAhead {
        let edges = |parents: &[&str]| {
            let to = |target: &&str| EdgeFacts {
                target: target.to_string(),
                role: EdgeRole::ParentChild,
            };
            parents.iter().map(to).collect()
        };
        ReadAhead {
            ids: issues.iter().map(|(id, _)| id.to_string()).collect(),
            unvisited: issues.iter().map(|(_, parents)| Some((facts(), edges(parents)))).collect(),
        }
    }

    /// The noted edges come out as the edge table reads: issues in id order, each issue's
    /// edges by target, one entry per edge with the last type inserted.
    #[test]
    fn noted_edges_read_as_the_edge_table_does() {
        use crate::store::tests::edge;
        let mut noted = CreatedEdges::default();
        for (from, to, kind) in [
            ("t-2", "t-9", "blocks"),
            ("t-2", "t-1", "related"),
            ("t-1", "t-3", "parent-child"),
            ("t-2", "t-9", "waits-for"),
            ("t-3", "t-1", "blocks"),
            ("t-2", "t-4", "blocks"),
        ] {
            noted.note(&edge(from, to, kind));
        }
        let read: Vec<(String, Vec<(String, EdgeRole)>)> = noted
            .by_issue()
            .into_iter()
            .map(|(id, edges)| (id, edges.into_iter().map(|e| (e.target, e.role)).collect()))
            .collect();
        let to = |target: &str, role| (target.to_string(), role);
        assert_eq!(
            read,
            [
                ("t-1".to_string(), vec![to("t-3", EdgeRole::ParentChild)]),
                (
                    "t-2".to_string(),
                    vec![
                        to("t-1", EdgeRole::Other),
                        to("t-4", EdgeRole::Blocks),
                        to("t-9", EdgeRole::WaitsFor { any_children: false }),
                    ]
                ),
                ("t-3".to_string(), vec![to("t-1", EdgeRole::Blocks)]),
            ]
        );
    }

    fn order_of(ahead: &ReadAhead) -> Vec<&str> {
        ahead.parents_first().into_iter().map(|at| ahead.ids[at].as_str()).collect()
    }

    #[test]
    fn parents_come_before_their_children_whatever_the_id_order() {
        // a's parent is b, b's is c, and d has two parents (a and c) and one that is no issue.
        let ahead = ahead(&[("a", &["b"]), ("b", &["c"]), ("c", &[]), ("d", &["a", "x", "c"])]);
        assert_eq!(order_of(&ahead), ["c", "b", "a", "d"]);
    }

    #[test]
    fn a_cycle_of_parents_still_visits_each_issue_once() {
        let ahead = ahead(&[("a", &["b"]), ("b", &["a"]), ("c", &["c"])]);
        let mut order = order_of(&ahead);
        order.sort_unstable();
        assert_eq!(order, ["a", "b", "c"]);
    }
}
