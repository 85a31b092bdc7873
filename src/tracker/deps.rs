//! Dependency edges: the rules of `dep add` and `dep remove`, for every front end.
//!
//! The store keeps the structural invariants of any edge, however it arrives (no
//! self-dependency, a missing target only if it is foreign, one edge per pair, no cycle among
//! blocking or parent-child edges). A *request* to add an edge also obeys beads' epic rule —
//! a `blocks` edge joins two epics or two non-epics — which an import of older data does not
//! (beads keeps such edges from before the rule, and so does fleet).

use jiff::Timestamp;

use super::Refusal;
use crate::model::{Dependency, dep_type, is_foreign_ref, validate_dep_type};
use crate::op::OpKind;
use crate::store::{StoreError, Writer};

/// Resolves a dependency target: an issue here (partial ids allowed), or a foreign reference
/// kept as typed. Anything else is "no issue found".
pub fn resolve_target(writer: &Writer<'_>, target: &str) -> Result<String, Refusal> {
    match writer.resolve(target) {
        Ok(id) => Ok(id),
        Err(StoreError::NotFound(_)) if is_foreign_ref(target, writer.prefix()) => {
            Ok(target.to_string())
        }
        Err(error) => Err(error.into()),
    }
}

/// A new edge record, made now by the writer's actor.
pub(super) fn new_edge(writer: &Writer<'_>, from: &str, to: &str, kind: &str) -> Dependency {
    edge_at(from, to, kind, writer.actor(), writer.now())
}

/// An edge record made by `actor` at `now`.
pub fn edge_at(from: &str, to: &str, kind: &str, actor: &str, now: Timestamp) -> Dependency {
    Dependency {
        issue_id: from.to_string(),
        depends_on_id: to.to_string(),
        kind: kind.to_string(),
        created_at: now,
        created_by: actor.to_string(),
        metadata: String::new(),
        thread_id: String::new(),
    }
}

/// Beads' epic rule for a requested `blocks` edge from an issue of type `from_type` to one of
/// type `to_type` (`None`: foreign, not checked).
pub(super) fn check_epic_rule(
    kind: &str,
    from_type: &str,
    to_type: Option<&str>,
) -> Result<(), Refusal> {
    let Some(to_type) = to_type else { return Ok(()) };
    if kind != dep_type::BLOCKS {
        return Ok(());
    }
    match (from_type == "epic", to_type == "epic") {
        (true, false) => {
            Err(StoreError::EpicMismatch("epics can only block other epics, not tasks").into())
        }
        (false, true) => {
            Err(StoreError::EpicMismatch("tasks can only block other tasks, not epics").into())
        }
        _ => Ok(()),
    }
}

/// `dep add`: `issue` depends on `depends_on` with an edge of type `kind`. Returns the two
/// ids as stored (the target as typed when it is foreign).
pub fn add_dependency(
    writer: &mut Writer<'_>,
    issue: &str,
    depends_on: &str,
    kind: &str,
) -> Result<(String, String), Refusal> {
    validate_dep_type(kind).map_err(StoreError::from)?;
    let from = writer.resolve(issue)?;
    let to = resolve_target(writer, depends_on)?;
    let from_type = writer.issue(&from)?.map(|i| i.issue_type).unwrap_or_default();
    let to_type = writer.issue(&to)?.map(|i| i.issue_type);
    check_epic_rule(kind, &from_type, to_type.as_deref())?;
    let dep = new_edge(writer, &from, &to, kind);
    writer.apply(OpKind::DepAdd { dep })?;
    Ok((from, to))
}

/// `dep remove`: removes the edge from `issue` to `depends_on`. Returns the two ids and the
/// type the edge had.
pub fn remove_dependency(
    writer: &mut Writer<'_>,
    issue: &str,
    depends_on: &str,
) -> Result<(String, String, String), Refusal> {
    let from = writer.resolve(issue)?;
    let to = writer.resolve(depends_on).unwrap_or_else(|_| depends_on.to_string());
    let kind = writer
        .dependencies(&from)?
        .into_iter()
        .find(|d| d.depends_on_id == to)
        .map(|d| d.kind)
        .unwrap_or_default();
    writer.apply(OpKind::DepRemove { issue_id: from.clone(), depends_on_id: to.clone() })?;
    Ok((from, to, kind))
}

/// `dep relate` (`add`) or `dep unrelate`: the `relates-to` edge from `a` to `b` and the one
/// from `b` to `a`, both added or both removed. Returns the two ids.
pub fn relate(
    writer: &mut Writer<'_>,
    a: &str,
    b: &str,
    add: bool,
) -> Result<Vec<String>, Refusal> {
    let (a, b) = (writer.resolve(a)?, writer.resolve(b)?);
    if a == b {
        return Err(Refusal::Invalid(format!("cannot relate {a} to itself")));
    }
    for (from, to) in [(&a, &b), (&b, &a)] {
        if add {
            add_dependency(writer, from, to, dep_type::RELATES_TO)?;
        } else {
            remove_dependency(writer, from, to)?;
        }
    }
    Ok(vec![a, b])
}

/// Removes every parent-child edge of `id` except to `keep`, and adds one to `keep` if it is
/// missing (bd's `update --parent`).
pub fn set_parent(writer: &mut Writer<'_>, id: &str, keep: Option<&str>) -> Result<(), Refusal> {
    let mut has_it = false;
    for dep in writer.dependencies(id)? {
        if dep.kind != dep_type::PARENT_CHILD {
            continue;
        }
        if Some(dep.depends_on_id.as_str()) == keep {
            has_it = true;
            continue;
        }
        writer.apply(OpKind::DepRemove {
            issue_id: id.to_string(),
            depends_on_id: dep.depends_on_id,
        })?;
    }
    if let Some(parent) = keep.filter(|_| !has_it) {
        let dep = new_edge(writer, id, parent, dep_type::PARENT_CHILD);
        writer.apply(OpKind::DepAdd { dep })?;
    }
    Ok(())
}

/// The metadata of a `waits-for` edge with gate `gate` (`any-children`).
pub(super) fn gate_metadata(gate: &str) -> String {
    serde_json::json!({ "gate": gate }).to_string()
}
