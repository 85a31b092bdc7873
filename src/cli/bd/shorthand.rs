//! beads' one-field shorthands: `assign`, `note`, `priority`, `tag`, `link`, and the list of
//! issue types (`types`).
//!
//! Each is one tracker request, as the longer command it stands for: `assign X NAME` is
//! `update X --assignee NAME`, `note` appends to the notes (a newline between), `priority`
//! sets it, `tag` adds a label, `link A B` is `dep add A B` (`--type`, default blocks). With
//! `--json` they print the issue after the change (`link`: the edge), as beads does.

use std::path::PathBuf;

use super::context::BdContext;
use super::issue::read_text_file;
use crate::cli::CliError;
use crate::cli::output::id_title;
use crate::model::{dep_type, parse_priority};
use crate::op::IssuePatch;
use crate::store::IssueSummary;
use crate::tracker::{Request, UpdateRequest};

#[derive(Debug, clap::Args)]
pub struct AssignArgs {
    pub id: String,
    /// Who takes it ("" unassigns).
    pub name: String,
}

#[derive(Debug, clap::Args)]
pub struct NoteArgs {
    pub id: String,
    /// The note (the words are joined with spaces).
    pub text: Vec<String>,
    /// Read the note from stdin.
    #[arg(long, conflicts_with_all = ["text", "file"])]
    pub stdin: bool,
    /// Read the note from a file.
    #[arg(long, value_name = "PATH", conflicts_with = "text")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct PriorityArgs {
    pub id: String,
    /// 0-4 or P0-P4 (0 = critical).
    pub priority: String,
}

#[derive(Debug, clap::Args)]
pub struct TagArgs {
    pub id: String,
    pub label: String,
}

#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    /// The issue that depends.
    pub id1: String,
    /// The issue it depends on.
    pub id2: String,
    /// Dependency type: blocks, tracks, related, parent-child, discovered-from, …
    #[arg(short = 't', long = "type", default_value = dep_type::BLOCKS)]
    pub kind: String,
}

/// Applies `patch` to one issue and prints beads' line (or the issue with `--json`).
fn edit(
    ctx: &BdContext,
    id: &str,
    patch: IssuePatch,
    line: impl FnOnce(&IssueSummary) -> String,
) -> Result<(), CliError> {
    let request = Request::Update(vec![UpdateRequest::edit(id, patch)]);
    let summary = ctx.require_store()?.submit(request)?.into_summaries()?.into_iter().next();
    let Some(summary) = summary else {
        return Err(CliError::new(format!("issue {id} not found")).respecting_json());
    };
    ctx.touch(&summary.issue.id);
    ctx.out.emit(&summary, || line(&summary));
    Ok(())
}

pub fn cmd_assign(ctx: &BdContext, args: AssignArgs) -> Result<(), CliError> {
    let name = args.name.trim().to_string();
    let patch = IssuePatch { assignee: Some(name.clone()), ..IssuePatch::default() };
    edit(ctx, &args.id, patch, |s| {
        if name.is_empty() {
            format!("✓ Unassigned {}", id_title(&s.issue))
        } else {
            format!("✓ Assigned {} to {name}", id_title(&s.issue))
        }
    })
}

pub fn cmd_note(ctx: &BdContext, args: NoteArgs) -> Result<(), CliError> {
    let text = if args.stdin {
        read_text_file(std::path::Path::new("-"))?
    } else if let Some(path) = &args.file {
        read_text_file(path)?
    } else if args.text.is_empty() {
        return Err(CliError::new(
            "no note text provided (use positional args, --stdin, or --file)",
        )
        .respecting_json());
    } else {
        args.text.join(" ")
    };
    let text = text.trim_end_matches('\n').to_string();
    if text.trim().is_empty() {
        return Err(CliError::new("note text is empty").respecting_json());
    }
    let patch = IssuePatch { append_notes: Some(text), ..IssuePatch::default() };
    edit(ctx, &args.id, patch, |s| format!("✓ Note added to {}", id_title(&s.issue)))
}

pub fn cmd_priority(ctx: &BdContext, args: PriorityArgs) -> Result<(), CliError> {
    let priority =
        parse_priority(&args.priority).map_err(|e| CliError::from(e).respecting_json())?;
    let patch = IssuePatch { priority: Some(priority), ..IssuePatch::default() };
    edit(ctx, &args.id, patch, |s| {
        format!("✓ Set priority of {} to P{priority}", id_title(&s.issue))
    })
}

pub fn cmd_tag(ctx: &BdContext, args: TagArgs) -> Result<(), CliError> {
    let label = args.label.trim().to_string();
    if label.is_empty() {
        return Err(CliError::new("label cannot be empty").respecting_json());
    }
    let request = Request::Label { ids: vec![args.id.clone()], label: label.clone(), add: true };
    let change = ctx.require_store()?.submit(request)?.into_labels()?;
    let id = change.first().map_or(args.id.clone(), |c| c.id.clone());
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let issue = reader.issue(&id)?.ok_or_else(|| CliError::new(format!("issue {id} not found")))?;
    let summary = reader.summary(issue)?;
    ctx.touch(&id);
    ctx.out.emit(&summary, || format!("✓ Added label {label:?} to {}", id_title(&summary.issue)));
    Ok(())
}

pub fn cmd_link(ctx: &BdContext, args: LinkArgs) -> Result<(), CliError> {
    super::dep::add(ctx, &args.id1, &args.id2, &args.kind)
}

/// The built-in work types `bd types` lists, with beads' descriptions.
const CORE_TYPES: [(&str, &str); 9] = [
    ("task", "General work item (default)"),
    ("bug", "Bug report or defect"),
    ("feature", "New feature or enhancement"),
    ("chore", "Maintenance or housekeeping"),
    ("epic", "Large body of work spanning multiple issues"),
    ("decision", "Architecture decision record (ADR)"),
    ("spike", "Timeboxed investigation to reduce uncertainty before committing to a story"),
    ("story", "User story describing a feature from the user's perspective"),
    ("milestone", "Marks completion of a set of related issues (contains no work itself)"),
];

#[derive(serde::Serialize)]
struct TypeInfo {
    name: &'static str,
    description: &'static str,
}

#[derive(serde::Serialize)]
struct Types {
    core_types: Vec<TypeInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    custom_types: Vec<String>,
}

pub fn cmd_types(ctx: &BdContext) -> Result<(), CliError> {
    let custom = ctx.require_store().map(|c| c.custom_types()).unwrap_or_default();
    let types = Types {
        core_types: CORE_TYPES
            .iter()
            .map(|&(name, description)| TypeInfo { name, description })
            .collect(),
        custom_types: custom,
    };
    ctx.out.emit(&types, || {
        let mut lines = vec!["Core work types (built-in):".to_string()];
        lines
            .extend(types.core_types.iter().map(|t| format!("  {:<14} {}", t.name, t.description)));
        if types.custom_types.is_empty() {
            lines.push("\nNo custom types configured.".into());
            lines.push("Configure with: bd config set types.custom \"type1,type2,...\"".into());
        } else {
            lines.push("\nConfigured custom types:".into());
            lines.extend(types.custom_types.iter().map(|t| format!("  {t}")));
        }
        lines.join("\n")
    });
    Ok(())
}
