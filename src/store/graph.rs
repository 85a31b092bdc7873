//! The dependency graph: cycle refusal, dependency trees and cycle reports (the resolver).
//!
//! Two classes of edge may make an issue blocked and so must stay acyclic: the blocking class
//! (`blocks`, `conditional-blocks`) and the hierarchy (`parent-child`). A new edge is refused
//! when its source is already reachable from its target within its class; that check walks
//! only the part of the graph reachable from the target, reading edges from the store as it
//! goes, so its cost does not grow with the size of the queue. Whole-graph questions (`dep
//! cycles`, for data imported from elsewhere) load the edges into a petgraph graph.

use std::collections::{BTreeSet, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use super::{StoreError, View};
use crate::model::{Status, dep_type};

/// Whether two edge types are in the same acyclic class.
fn same_class(a: &str, b: &str) -> bool {
    (dep_type::blocks_directly(a) && dep_type::blocks_directly(b))
        || (a == dep_type::PARENT_CHILD && b == dep_type::PARENT_CHILD)
}

/// Whether `to` can be reached from `from` over edges in the class of `kind`.
pub(crate) fn reaches(
    view: &dyn View,
    from: &str,
    to: &str,
    kind: &str,
) -> Result<bool, StoreError> {
    let mut seen = BTreeSet::from([from.to_string()]);
    let mut stack = vec![from.to_string()];
    while let Some(node) = stack.pop() {
        if node == to {
            return Ok(true);
        }
        for dep in view.deps_of(&node)? {
            if same_class(&dep.kind, kind) && seen.insert(dep.depends_on_id.clone()) {
                stack.push(dep.depends_on_id);
            }
        }
    }
    Ok(false)
}

/// Which way a dependency tree grows from its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// What the root depends on, and what those depend on.
    Down,
    /// What depends on the root, and so on.
    Up,
}

/// One node of a dependency tree.
#[derive(Debug, Clone, Serialize)]
pub struct TreeNode {
    pub id: String,
    pub title: String,
    pub status: Status,
    pub priority: u8,
    /// Type of the edge that led here (absent at the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dep_type: Option<String>,
    pub depth: usize,
    /// The issue does not exist here (an external or cross-project reference).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// Already shown earlier in the tree; its subtree is not repeated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
    /// Children exist beyond the maximum depth.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    pub children: Vec<TreeNode>,
}

/// Builds the dependency tree of `root` in `direction`, at most `max_depth` levels deep.
/// Each issue's subtree is shown once; later occurrences are marked `repeated`.
pub(crate) fn tree(
    view: &dyn View,
    root: &str,
    direction: Direction,
    max_depth: usize,
) -> Result<TreeNode, StoreError> {
    let mut shown = BTreeSet::new();
    build_node(view, root, None, 0, direction, max_depth, &mut shown)
}

fn build_node(
    view: &dyn View,
    id: &str,
    dep_type: Option<String>,
    depth: usize,
    direction: Direction,
    max_depth: usize,
    shown: &mut BTreeSet<String>,
) -> Result<TreeNode, StoreError> {
    let issue = view.issue(id)?;
    let mut node = TreeNode {
        id: id.to_string(),
        title: issue.as_ref().map(|i| i.title.clone()).unwrap_or_default(),
        status: issue.as_ref().map(|i| i.status.clone()).unwrap_or_default(),
        priority: issue.as_ref().map_or(0, |i| i.priority),
        dep_type,
        depth,
        missing: issue.is_none(),
        repeated: false,
        truncated: false,
        children: Vec::new(),
    };
    if issue.is_none() {
        return Ok(node);
    }
    if !shown.insert(id.to_string()) {
        node.repeated = true;
        return Ok(node);
    }
    let next: Vec<(String, String)> = match direction {
        Direction::Down => {
            view.deps_of(id)?.into_iter().map(|d| (d.depends_on_id, d.kind)).collect()
        }
        Direction::Up => view.dependents_of(id)?,
    };
    if depth >= max_depth {
        node.truncated = !next.is_empty();
        return Ok(node);
    }
    for (child, kind) in next {
        node.children.push(build_node(
            view,
            &child,
            Some(kind),
            depth + 1,
            direction,
            max_depth,
            shown,
        )?);
    }
    Ok(node)
}

/// Every cycle among edges that must be acyclic (blocking and parent-child), each as the list
/// of issue ids in it, sorted. Normally empty: fleet refuses such edges, but imported data may
/// carry them.
pub(crate) fn cycles(view: &dyn View) -> Result<Vec<Vec<String>>, StoreError> {
    let mut found = Vec::new();
    for class in [dep_type::BLOCKS, dep_type::PARENT_CHILD] {
        let mut graph: DiGraph<String, ()> = DiGraph::new();
        let mut nodes: HashMap<String, NodeIndex> = HashMap::new();
        let mut index_of = |graph: &mut DiGraph<String, ()>, id: &str| {
            *nodes.entry(id.to_string()).or_insert_with(|| graph.add_node(id.to_string()))
        };
        let mut self_loops = Vec::new();
        view.scan_deps(&mut |dep| {
            if same_class(&dep.kind, class) {
                if dep.issue_id == dep.depends_on_id {
                    self_loops.push(vec![dep.issue_id.clone()]);
                }
                let a = index_of(&mut graph, &dep.issue_id);
                let b = index_of(&mut graph, &dep.depends_on_id);
                graph.add_edge(a, b, ());
            }
            true
        })?;
        for component in petgraph::algo::tarjan_scc(&graph) {
            if component.len() > 1 {
                let mut ids: Vec<String> = component.iter().map(|n| graph[*n].clone()).collect();
                ids.sort();
                found.push(ids);
            }
        }
        found.extend(self_loops);
    }
    found.sort();
    found.dedup();
    Ok(found)
}
