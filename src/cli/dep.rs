//! `fleet dep`: add and remove dependency edges, show trees and lists, report cycles. The
//! store side and much of the text are shared with `bd dep`.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::output::{printable, status_marker};
use crate::model::dep_type;
use crate::store::{Direction, TreeNode};
use crate::store::{LinkedIssue, Reader, Store, StoreError};
use crate::tracker::Request;

#[derive(Debug, clap::Subcommand)]
pub enum DepCommand {
    /// ISSUE depends on DEPENDS_ON (DEPENDS_ON blocks ISSUE for blocking types).
    Add {
        issue: String,
        depends_on: String,
        /// Edge type: blocks, parent-child, conditional-blocks, waits-for, related,
        /// discovered-from, … (any 1-50 characters).
        #[arg(short = 't', long = "type", default_value = dep_type::BLOCKS)]
        kind: String,
    },
    /// Remove the edge from ISSUE to DEPENDS_ON.
    Remove(EdgeArgs),
    /// Show the dependency tree of an issue.
    Tree(TreeArgs),
    /// List the direct dependencies (or dependents) of an issue.
    List(ListArgs),
    /// Report dependency cycles among blocking and parent-child edges.
    Cycles,
}

/// The arguments of `dep remove`, the same in both personalities: the edge from ISSUE to
/// DEPENDS_ON.
#[derive(Debug, clap::Args)]
pub struct EdgeArgs {
    pub issue: String,
    pub depends_on: String,
}

/// The arguments of `dep tree`, the same in both personalities.
#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    pub id: String,
    /// down: what it depends on; up: what depends on it; both.
    #[arg(long, default_value = "down", value_parser = ["down", "up", "both"])]
    pub direction: String,
    #[arg(short = 'd', long, default_value_t = 50)]
    pub max_depth: usize,
}

/// The arguments of `dep list`, the same in both personalities.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    pub id: String,
    /// down: what it depends on; up: what depends on it.
    #[arg(long, default_value = "down", value_parser = ["down", "up"])]
    pub direction: String,
    /// Only edges of this type.
    #[arg(short = 't', long = "type")]
    pub kind: Option<String>,
}

#[derive(Serialize)]
pub(super) struct EdgeResult {
    pub status: &'static str,
    pub issue_id: String,
    pub depends_on_id: String,
    #[serde(rename = "type")]
    pub kind: String,
}

pub fn cmd_dep(ctx: &Context, command: DepCommand) -> Result<(), CliError> {
    match command {
        DepCommand::Add { issue, depends_on, kind } => cmd_dep_add(ctx, &issue, &depends_on, &kind),
        DepCommand::Remove(edge) => cmd_dep_remove(ctx, &edge.issue, &edge.depends_on),
        DepCommand::Tree(args) => cmd_dep_tree(ctx, &args),
        DepCommand::List(args) => cmd_dep_list(ctx, &args),
        DepCommand::Cycles => cmd_dep_cycles(ctx),
    }
}

impl EdgeResult {
    /// The result of `dep add` for the edge `added` of type `kind`.
    pub fn added(added: &AddedEdge, kind: &str) -> EdgeResult {
        EdgeResult {
            status: "added",
            issue_id: added.from.id.clone(),
            depends_on_id: added.to_id.clone(),
            kind: kind.to_string(),
        }
    }

    /// The result of `dep remove`: the ids and type [`remove_dependency`] returned.
    pub fn removed((from, to, kind): (String, String, String)) -> EdgeResult {
        EdgeResult { status: "removed", issue_id: from, depends_on_id: to, kind }
    }

    /// `✓ Removed dependency: A no longer depends on B`, as bd prints it.
    pub fn removed_line(&self) -> String {
        format!(
            "✓ Removed dependency: {} no longer depends on {}",
            self.issue_id, self.depends_on_id
        )
    }
}

fn cmd_dep_add(ctx: &Context, issue: &str, depends_on: &str, kind: &str) -> Result<(), CliError> {
    let added = add_dependency(ctx, issue, depends_on, kind)?;
    ctx.out.emit(&EdgeResult::added(&added, kind), || added.added_line(kind));
    Ok(())
}

/// An edge as `dep add` made it: the dependent issue, and the target (absent from this store
/// when it is a foreign reference).
pub(super) struct AddedEdge {
    pub from: crate::model::Issue,
    pub to_id: String,
    pub to: Option<crate::model::Issue>,
}

impl AddedEdge {
    /// `✓ Added dependency: A (title) depends on B (title) (kind)`, as bd prints it.
    pub fn added_line(&self, kind: &str) -> String {
        let to_title =
            self.to.as_ref().map_or_else(|| "not in this workspace".into(), |t| t.title.clone());
        format!(
            "✓ Added dependency: {} ({}) depends on {} ({}) ({kind})",
            self.from.id,
            printable(&self.from.title),
            self.to_id,
            printable(&to_title)
        )
    }
}

/// The store side of `dep add`, shared by both personalities: resolves both ends (a target
/// that is not here is kept as a foreign reference) and adds the edge in one transaction.
pub(super) fn add_dependency(
    ctx: &Context,
    issue: &str,
    depends_on: &str,
    kind: &str,
) -> Result<AddedEdge, CliError> {
    let request = Request::DepAdd {
        issue: issue.to_string(),
        depends_on: depends_on.to_string(),
        kind: kind.to_string(),
    };
    let (from, to_id, to) = ctx.submit(request)?.into_edge_added()?;
    Ok(AddedEdge { from, to_id, to })
}

fn cmd_dep_remove(ctx: &Context, issue: &str, depends_on: &str) -> Result<(), CliError> {
    let result = EdgeResult::removed(remove_dependency(ctx, issue, depends_on)?);
    ctx.out.emit(&result, || result.removed_line());
    Ok(())
}

/// The store side of `dep remove`, shared by both personalities. Returns the two ids and the
/// type the removed edge had.
pub(super) fn remove_dependency(
    ctx: &Context,
    issue: &str,
    depends_on: &str,
) -> Result<(String, String, String), CliError> {
    let request =
        Request::DepRemove { issue: issue.to_string(), depends_on: depends_on.to_string() };
    Ok(ctx.submit(request)?.into_edge_removed()?)
}

/// The trees `dep tree` shows: down (what the issue depends on), up (what depends on it), or
/// both.
#[derive(Serialize)]
pub(super) struct Trees {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<TreeNode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<TreeNode>,
}

impl Trees {
    /// Resolves the issue of `args` and reads its trees in the direction asked for ("down",
    /// "up" or "both"). Returns the resolved id with them.
    pub fn read(store: &Store, args: &TreeArgs) -> Result<(String, Trees), StoreError> {
        let reader = store.read()?;
        let id = reader.resolve(&args.id)?;
        let tree = |d: &str, dir: Direction| -> Result<Option<TreeNode>, StoreError> {
            let wanted = args.direction == d || args.direction == "both";
            wanted.then(|| reader.tree(&id, dir, args.max_depth)).transpose()
        };
        let trees = Trees { down: tree("down", Direction::Down)?, up: tree("up", Direction::Up)? };
        Ok((id, trees))
    }

    /// The trees as text, each under its heading (`headings` is down, up), with a blank line
    /// under each heading when `gap`.
    pub fn render(&self, headings: [&str; 2], gap: bool) -> String {
        let mut lines = Vec::new();
        for (tree, heading) in [&self.down, &self.up].into_iter().zip(headings) {
            let Some(tree) = tree else { continue };
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.push(heading.to_string());
            if gap {
                lines.push(String::new());
            }
            render_tree(tree, "", true, &mut lines);
        }
        lines.join("\n")
    }
}

fn cmd_dep_tree(ctx: &Context, args: &TreeArgs) -> Result<(), CliError> {
    let (id, trees) = Trees::read(&ctx.open_store()?, args)?;
    ctx.out.emit(&trees, || {
        let down = format!("🌲 Dependency tree for {id} (what it depends on):");
        let up = format!("🌲 Dependents of {id} (what depends on it):");
        trees.render([&down, &up], false)
    });
    Ok(())
}

pub(super) fn render_tree(node: &TreeNode, indent: &str, last: bool, lines: &mut Vec<String>) {
    let (branch, child_indent) = match node.depth {
        0 => (String::new(), String::new()),
        _ if last => (format!("{indent}└── "), format!("{indent}    ")),
        _ => (format!("{indent}├── "), format!("{indent}│   ")),
    };
    let edge = node.dep_type.as_deref().map(|k| format!(" ({k})")).unwrap_or_default();
    let text = if node.missing {
        format!("{}{edge} — not in this workspace", node.id)
    } else {
        let mut text = format!(
            "{}: {} [P{}] {} {}{edge}",
            node.id,
            printable(&node.title),
            node.priority,
            status_marker(&node.status),
            node.status
        );
        if node.repeated {
            text.push_str(" (shown above)");
        }
        if node.truncated {
            text.push_str(" (deeper levels hidden)");
        }
        text
    };
    lines.push(format!("{branch}{text}"));
    for (n, child) in node.children.iter().enumerate() {
        render_tree(child, &child_indent, n + 1 == node.children.len(), lines);
    }
}

fn cmd_dep_list(ctx: &Context, args: &ListArgs) -> Result<(), CliError> {
    let (id, items) = linked_issues(&ctx.open_store()?, args)?;
    let direction = args.direction.as_str();
    ctx.out.emit(&items, || {
        if items.is_empty() {
            return format!(
                "{id} has no {}",
                if direction == "up" { "dependents" } else { "dependencies" }
            );
        }
        let heading = if direction == "up" { "Dependents of" } else { "Dependencies of" };
        let mut lines = vec![format!("{heading} {id} ({}):", items.len())];
        for item in &items {
            lines.push(format!(
                "  {}: {} [{}] ({})",
                item.id,
                printable(&item.title),
                item.status,
                item.dependency_type
            ));
        }
        lines.join("\n")
    });
    Ok(())
}

/// The resolved id of the issue of `args` and its direct dependencies (direction "up": its
/// dependents), only those of the type asked for; for `dep list` in both personalities.
pub(super) fn linked_issues(
    store: &Store,
    args: &ListArgs,
) -> Result<(String, Vec<LinkedIssue>), StoreError> {
    let reader = store.read()?;
    let id = reader.resolve(&args.id)?;
    let detail = reader.detail(&id)?;
    let mut items = if args.direction == "up" { detail.dependents } else { detail.dependencies };
    if let Some(kind) = &args.kind {
        items.retain(|i| i.dependency_type == *kind);
    }
    Ok((id, items))
}

#[derive(Serialize)]
struct CycleReport {
    cycles: Vec<Vec<String>>,
}

fn cmd_dep_cycles(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let report = CycleReport { cycles: reader.cycles()? };
    ctx.out.emit(&report, || render_cycles(&reader, &report.cycles));
    Ok(())
}

/// `dep cycles` as text, the same in both personalities: each cycle with its issues' titles.
pub(super) fn render_cycles(reader: &Reader, cycles: &[Vec<String>]) -> String {
    if cycles.is_empty() {
        return "✓ No dependency cycles detected".to_string();
    }
    let mut lines = vec![format!("⚠ Found {} dependency cycles:", cycles.len())];
    for (n, cycle) in cycles.iter().enumerate() {
        lines.push(format!("{}. Cycle involving:", n + 1));
        for id in cycle {
            let title = reader.issue(id).ok().flatten().map(|i| i.title).unwrap_or_default();
            lines.push(format!("   - {id}: {}", printable(&title)));
        }
    }
    lines.join("\n")
}
