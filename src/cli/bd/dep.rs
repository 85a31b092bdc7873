//! `bd dep add|remove|relate|unrelate|tree|list|cycles`, and the shorthand
//! `bd dep <blocker> --blocks <blocked>`.

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::dep::{
    EdgeArgs, EdgeResult, ListArgs, TreeArgs, Trees, add_dependency, linked_issues,
    remove_dependency, render_cycles,
};
use crate::cli::output::printable;
use crate::model::{dep_type, validate_dep_type};
use crate::store::TreeNode;
use crate::tracker::{NewEdge, Request};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DepArgs {
    #[command(subcommand)]
    pub command: Option<DepCommand>,
    /// With --blocks: the issue that blocks.
    #[arg(value_name = "BLOCKER")]
    pub blocker: Option<String>,
    /// The issue BLOCKER blocks (`bd dep A --blocks B`: B depends on A).
    #[arg(long, value_name = "BLOCKED")]
    pub blocks: Option<String>,
    /// Accepted for compatibility (blocking edges are always cycle-checked).
    #[arg(long, hide = true)]
    pub no_cycle_check: bool,
}

impl DepArgs {
    pub fn writes(&self) -> bool {
        matches!(
            self.command,
            Some(
                DepCommand::Add { .. }
                    | DepCommand::Remove(_)
                    | DepCommand::Relate(_)
                    | DepCommand::Unrelate(_)
            )
        ) || self.command.is_none()
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum DepCommand {
    /// Add a dependency: ISSUE depends on DEPENDS_ON (which blocks it, for blocking types).
    Add {
        /// The issue that depends (not with --file).
        #[arg(required_unless_present = "file")]
        issue: Option<String>,
        depends_on: Option<String>,
        /// Dependency type: blocks (default), parent-child, conditional-blocks, waits-for,
        /// related, discovered-from, … (any 1-50 characters).
        #[arg(short = 't', long = "type", default_value = dep_type::BLOCKS)]
        kind: String,
        /// The issue that blocks ISSUE (instead of the second argument).
        #[arg(long, value_name = "ID", conflicts_with = "depends_on")]
        blocked_by: Option<String>,
        /// The issue ISSUE depends on (instead of the second argument).
        #[arg(long = "depends-on", value_name = "ID", conflicts_with_all = ["depends_on", "blocked_by"])]
        depends_on_flag: Option<String>,
        /// Accepted for compatibility (blocking edges are always cycle-checked).
        #[arg(long, hide = true)]
        no_cycle_check: bool,
        /// Add the edges of a JSONL file ("-" for stdin), one object a line with `issue_id`
        /// (or `from`), `depends_on_id` (or `to`) and an optional `type` (default --type) —
        /// all or none.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["depends_on", "blocked_by", "depends_on_flag"])]
        file: Option<std::path::PathBuf>,
    },
    /// Remove a dependency.
    #[command(visible_alias = "rm")]
    Remove(EdgeArgs),
    /// Link two issues both ways with `relates-to` edges (no blocking).
    Relate(RelateArgs),
    /// Remove the `relates-to` link between two issues.
    Unrelate(RelateArgs),
    /// Show the dependency tree of an issue.
    Tree {
        #[command(flatten)]
        tree: TreeArgs,
        /// Output format: text (default) or mermaid.
        #[arg(long, default_value = "text", value_parser = ["text", "mermaid"])]
        format: String,
        /// Accepted for compatibility.
        #[arg(long, hide = true)]
        show_all_paths: bool,
        /// The dependents' tree (as --direction up).
        #[arg(long)]
        reverse: bool,
        /// Only issues with this status (the root always shows).
        #[arg(long)]
        status: Option<String>,
    },
    /// List the direct dependencies (or dependents) of an issue.
    List(ListArgs),
    /// Report dependency cycles.
    Cycles,
}

#[derive(Debug, clap::Args)]
pub struct RelateArgs {
    pub id1: String,
    pub id2: String,
}

/// What `dep relate --json` / `dep unrelate --json` print (beads' fields).
#[derive(serde::Serialize)]
struct Related<'a> {
    id1: &'a str,
    id2: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    related: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unrelated: Option<bool>,
}

fn relate(ctx: &BdContext, args: &RelateArgs, add: bool) -> Result<(), CliError> {
    let request = Request::Relate { ids: [args.id1.clone(), args.id2.clone()], add };
    let ids = ctx.require_store()?.submit(request)?.into_ids()?;
    let [id1, id2] = ids.as_slice() else {
        return Err(CliError::new(format!("relate answered {} ids instead of two", ids.len())));
    };
    let (id1, id2) = (id1.as_str(), id2.as_str());
    let result =
        Related { id1, id2, related: add.then_some(true), unrelated: (!add).then_some(true) };
    let verb = if add { "Linked" } else { "Unlinked" };
    ctx.out.emit(&result, || format!("✓ {verb} {id1} ↔ {id2}"));
    Ok(())
}

pub fn cmd_dep(ctx: &BdContext, args: DepArgs) -> Result<(), CliError> {
    let Some(command) = args.command else {
        return match (args.blocker, args.blocks) {
            (Some(blocker), Some(blocked)) => add(ctx, &blocked, &blocker, dep_type::BLOCKS),
            _ => Err(CliError::new(
                "expected a subcommand (add, remove, tree, list, cycles) or `bd dep <blocker> --blocks <blocked>`",
            )),
        };
    };
    match command {
        DepCommand::Add { file: Some(file), kind, .. } => add_from_file(ctx, &file, &kind),
        DepCommand::Add { issue, depends_on, kind, blocked_by, depends_on_flag, .. } => {
            let target = depends_on.or(blocked_by).or(depends_on_flag).ok_or_else(|| {
                CliError::new(
                    "dep add needs the issue it depends on: bd dep add <issue> <depends-on>",
                )
            })?;
            add(ctx, issue.as_deref().unwrap_or_default(), &target, &kind)
        }
        DepCommand::Remove(EdgeArgs { issue, depends_on }) => {
            let result = EdgeResult::removed(
                remove_dependency(ctx.require_store()?, &issue, &depends_on)
                    .map_err(CliError::message_only)?,
            );
            ctx.out.emit(&result, || result.removed_line());
            Ok(())
        }
        DepCommand::Relate(args) => relate(ctx, &args, true),
        DepCommand::Unrelate(args) => relate(ctx, &args, false),
        DepCommand::Tree { tree: mut args, format, reverse, status, .. } => {
            if reverse {
                args.direction = "up".into();
            }
            let status = status.as_deref().map(crate::model::Status::parse_user).transpose()?;
            tree(ctx, &args, &format, status.as_ref())
        }
        DepCommand::List(args) => list(ctx, &args),
        DepCommand::Cycles => cycles(ctx),
    }
}

pub(super) fn add(
    ctx: &BdContext,
    issue: &str,
    depends_on: &str,
    kind: &str,
) -> Result<(), CliError> {
    validate_dep_type(kind)?;
    let added = add_dependency(ctx.require_store()?, issue, depends_on, kind)
        .map_err(CliError::message_only)?;
    ctx.out.emit(&EdgeResult::added(&added, kind), || added.added_line(kind));
    Ok(())
}

/// One edge of a `dep add --file` line.
#[derive(serde::Deserialize)]
struct EdgeLine {
    #[serde(alias = "from")]
    issue_id: String,
    #[serde(alias = "to")]
    depends_on_id: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// `dep add --file`: every edge of a JSONL file in one request, all or none.
fn add_from_file(
    ctx: &BdContext,
    file: &std::path::Path,
    default_kind: &str,
) -> Result<(), CliError> {
    let text = super::issue::read_text_file(file)?;
    let mut edges = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let edge: EdgeLine = serde_json::from_str(line).map_err(|e| {
            CliError::new(format!("{} line {}: {e}", file.display(), n + 1))
                .with_hint("each line is {\"issue_id\": …, \"depends_on_id\": …, \"type\": …}")
        })?;
        let kind = edge.kind.filter(|k| !k.is_empty()).unwrap_or_else(|| default_kind.to_string());
        validate_dep_type(&kind)?;
        edges.push(NewEdge { issue: edge.issue_id, depends_on: edge.depends_on_id, kind });
    }
    let count = edges.len();
    let listed: Vec<serde_json::Value> = edges
        .iter()
        .map(|e| serde_json::json!({"issue_id": e.issue, "depends_on_id": e.depends_on, "type": e.kind}))
        .collect();
    ctx.require_store()?.submit(Request::DepAddAll(edges))?;
    let result = serde_json::json!({ "status": "added", "count": count, "dependencies": listed });
    ctx.out.emit(&result, || format!("✓ Added {count} dependencies"));
    Ok(())
}

/// Leaves in `node` only the children with `status` (and what leads to them).
fn keep_status(node: &mut TreeNode, status: &crate::model::Status) -> bool {
    node.children.retain_mut(|child| keep_status(child, status));
    node.status == *status || !node.children.is_empty()
}

fn tree(
    ctx: &BdContext,
    args: &TreeArgs,
    format: &str,
    status: Option<&crate::model::Status>,
) -> Result<(), CliError> {
    let (id, mut trees) = Trees::read(&ctx.open_store()?, args)?;
    if let Some(status) = status {
        for node in [&mut trees.down, &mut trees.up].into_iter().flatten() {
            node.children.retain_mut(|child| keep_status(child, status));
        }
    }
    if format == "mermaid" && !ctx.out.json {
        let mut lines = vec!["graph TD".to_string()];
        for (node, upward) in [(&trees.down, false), (&trees.up, true)] {
            if let Some(node) = node {
                mermaid(node, upward, &mut lines);
            }
        }
        ctx.out.text(&lines.join("\n"));
        return Ok(());
    }
    ctx.out.emit(&trees, || {
        let (down, up) =
            (format!("🌲 Dependency tree for {id}:"), format!("🌲 Dependents of {id}:"));
        trees.render([&down, &up], true)
    });
    Ok(())
}

fn mermaid(node: &TreeNode, upward: bool, lines: &mut Vec<String>) {
    let label = |n: &TreeNode| {
        let title = printable(&n.title).replace('"', "'");
        format!("{}[\"{}: {title}\"]", mermaid_id(&n.id), n.id)
    };
    for child in &node.children {
        let (from, to) = if upward { (child, node) } else { (node, child) };
        lines.push(format!("    {} --> {}", label(from), label(to)));
        if !child.repeated {
            mermaid(child, upward, lines);
        }
    }
}

fn mermaid_id(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

fn list(ctx: &BdContext, args: &ListArgs) -> Result<(), CliError> {
    let (id, items) = linked_issues(&ctx.open_store()?, args)?;
    let direction = args.direction.as_str();
    ctx.out.emit(&items, || {
        let noun = if direction == "up" { "dependents" } else { "dependencies" };
        if items.is_empty() {
            return format!("{id} has no {noun}");
        }
        let heading = if direction == "up" { "Issues that depend on" } else { "Dependencies of" };
        let mut lines = vec![format!("{heading} {id} ({}):", items.len())];
        for item in &items {
            lines.push(format!(
                "  {}: {} [P{}] ({}) via {}",
                item.id,
                printable(&item.title),
                item.priority,
                item.status,
                item.dependency_type
            ));
        }
        lines.join("\n")
    });
    Ok(())
}

fn cycles(ctx: &BdContext) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let cycles = reader.cycles()?;
    ctx.out.emit(&cycles, || render_cycles(&reader, &cycles));
    Ok(())
}
