//! Keeps the materialised blocked flag and the ready index right, op by op (spec §3.2–3.3).
//!
//! An issue X that is not closed or pinned is blocked when
//! 1. it has a `blocks`/`conditional-blocks` edge to an existing issue that is not closed or
//!    pinned;
//! 2. it has a `parent-child` edge to a parent that is itself blocked; or
//! 3. it has a `waits-for` edge to a spawner with an unsettled child — unless the edge's gate is
//!    `any-children` and one child is closed.
//!
//! Each op names the issues whose inputs it touched (the seeds); [`Writer::refresh`]
//! recomputes those, and when a flag flips it follows parent-child edges down to the children,
//! whose rule 2 reads it. Parent-child edges are kept acyclic (see `apply`), so this reaches the
//! same fixpoint as a computation from scratch. The ready index holds every open, unblocked,
//! unpinned issue, keyed in `bd ready` order, with the deferral and type facts the query needs.

use std::collections::{BTreeSet, VecDeque};

use super::tables::{ReadyEntry, View, ready_key};
use super::{StoreError, Writer};
use crate::model::{Issue, Status, dep_type};

/// Decides rule 1–3 for `issue` from the state `view` sees. Also used by the from-scratch
/// check in tests.
pub(crate) fn compute_blocked(view: &dyn View, issue: &Issue) -> Result<bool, StoreError> {
    if issue.status.is_settled() {
        return Ok(false);
    }
    for dep in view.deps_of(&issue.id)? {
        let blocked = match dep.kind.as_str() {
            kind if dep_type::blocks_directly(kind) => {
                view.issue(&dep.depends_on_id)?.is_some_and(|target| !target.status.is_settled())
            }
            dep_type::PARENT_CHILD => view.is_blocked(&dep.depends_on_id)?,
            dep_type::WAITS_FOR => {
                waits_on_children(view, &dep.depends_on_id, dep.gate_is_any_children())?
            }
            _ => false,
        };
        if blocked {
            return Ok(true);
        }
    }
    Ok(false)
}

fn waits_on_children(view: &dyn View, spawner: &str, any_child: bool) -> Result<bool, StoreError> {
    let mut unsettled = false;
    let mut closed = false;
    for child in view.dependents_by(spawner, dep_type::PARENT_CHILD)? {
        if let Some(child) = view.issue(&child)? {
            unsettled |= !child.status.is_settled();
            closed |= child.status == Status::Closed;
        }
    }
    Ok(unsettled && !(any_child && closed))
}

/// The instant until which `issue` is hidden from ready: its own `defer_until` or a parent's.
fn hidden_until(view: &dyn View, issue: &Issue) -> Result<i64, StoreError> {
    let mut until = issue.defer_until.map_or(0, crate::time::nanos);
    for parent in view.parents_of(&issue.id)? {
        if let Some(parent) = view.issue(&parent)?
            && let Some(at) = parent.defer_until
        {
            until = until.max(crate::time::nanos(at));
        }
    }
    Ok(until)
}

impl Writer<'_> {
    /// Recomputes the blocked flag and ready entry of every seed, and of the children of any
    /// issue whose flag changed.
    pub(crate) fn refresh(&mut self, seeds: BTreeSet<String>) -> Result<(), StoreError> {
        let mut queue: VecDeque<String> = seeds.into_iter().collect();
        while let Some(id) = queue.pop_front() {
            let Some(issue) = self.tables.issue(&id)? else {
                self.tables.blocked.remove(id.as_str())?;
                self.remove_ready_entry(&id)?;
                continue;
            };
            let was_blocked = self.tables.is_blocked(&id)?;
            let blocked = compute_blocked(&self.tables, &issue)?;
            if blocked != was_blocked {
                if blocked {
                    self.tables.blocked.insert(id.as_str(), ())?;
                } else {
                    self.tables.blocked.remove(id.as_str())?;
                }
                queue.extend(self.tables.dependents_by(&id, dep_type::PARENT_CHILD)?);
            }
            self.write_ready_entry(&issue, blocked)?;
        }
        Ok(())
    }

    fn remove_ready_entry(&mut self, id: &str) -> Result<(), StoreError> {
        let old = self.tables.ready_keys.remove(id)?.map(|k| k.value().to_vec());
        if let Some(old) = old {
            self.tables.ready.remove(old.as_slice())?;
        }
        Ok(())
    }

    fn write_ready_entry(&mut self, issue: &Issue, blocked: bool) -> Result<(), StoreError> {
        self.remove_ready_entry(&issue.id)?;
        if issue.status != Status::Open || blocked || issue.pinned {
            return Ok(());
        }
        let entry = ReadyEntry {
            hidden_until: hidden_until(&self.tables, issue)?,
            excluded_type: issue.is_excluded_from_ready(),
            ephemeral: issue.ephemeral,
            assigned: !issue.assignee.is_empty(),
        };
        let key = ready_key(issue);
        self.tables.ready.insert(key.as_slice(), entry.encode().as_slice())?;
        self.tables.ready_keys.insert(issue.id.as_str(), key.as_slice())?;
        Ok(())
    }

    /// Seeds for a change of `id`'s status: itself, what it blocks directly, and whatever
    /// waits for the children of its parents.
    pub(crate) fn status_seeds(&self, id: &str) -> Result<BTreeSet<String>, StoreError> {
        let mut seeds = BTreeSet::from([id.to_string()]);
        for (dependent, kind) in self.tables.dependents_of(id)? {
            if dep_type::blocks_directly(&kind) {
                seeds.insert(dependent);
            }
        }
        for parent in self.tables.parents_of(id)? {
            seeds.extend(self.tables.dependents_by(&parent, dep_type::WAITS_FOR)?);
        }
        Ok(seeds)
    }
}
