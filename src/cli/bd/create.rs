//! `bd create`: one issue from flags, or many from a markdown file (`--file`), with bd's
//! `--validate`, `--dry-run`, `--silent` and fleet's task fields (`--cwd`, `--coder`,
//! `--model`). The issue itself is built and applied by fleet's `create` transaction.

use std::path::PathBuf;

use super::context::BdContext;
use super::issue::{parse_estimate, parse_metadata, read_text_file};
use super::text::{TextArgs, Texts};
use crate::cli::CliError;
use crate::cli::issue as fleet;
use crate::cli::output::{id_title, printable};
use crate::model::{Issue, dep_type};
use crate::settings::ON_CREATE;
use crate::store::IssueSummary;
use crate::time::parse_user_date;

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Title of the issue.
    #[arg(value_name = "TITLE")]
    pub title_arg: Option<String>,
    /// Title (instead of the positional argument).
    #[arg(long)]
    pub title: Option<String>,
    #[command(flatten)]
    pub text: TextArgs,
    /// Priority 0-4 or P0-P4 (0 is the highest).
    #[arg(short, long, default_value = "2")]
    pub priority: String,
    /// Type: bug, feature, task, epic, chore, decision, spike, story, milestone, …
    #[arg(short = 't', long = "type", default_value = "task")]
    pub issue_type: String,
    /// Labels, comma-separated or repeated.
    #[arg(short, long = "labels", alias = "label")]
    pub labels: Vec<String>,
    /// Dependencies, comma-separated: `id`, `blocked-by:id` or `depends-on:id` (this issue
    /// waits for id), `blocks:id` (id waits for this one), or another `type:id`.
    #[arg(long)]
    pub deps: Vec<String>,
    /// Parent issue: the new id becomes `<parent>.<n>`.
    #[arg(long)]
    pub parent: Option<String>,
    /// Don't copy the parent's labels onto the child.
    #[arg(long)]
    pub no_inherit_labels: bool,
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// Use this exact id.
    #[arg(long)]
    pub id: Option<String>,
    /// Acceptance criteria.
    #[arg(long)]
    pub acceptance: Option<String>,
    #[arg(long)]
    pub notes: Option<String>,
    #[arg(long)]
    pub external_ref: Option<String>,
    /// Estimate in minutes.
    #[arg(short, long, allow_hyphen_values = true)]
    pub estimate: Option<String>,
    /// Due date: +6h, +1d, +2w, tomorrow, next monday, 2025-01-15, RFC 3339.
    #[arg(long)]
    pub due: Option<String>,
    /// Hide from ready work until then (same forms as --due).
    #[arg(long)]
    pub defer: Option<String>,
    /// The specification the issue implements (a path or a URL).
    #[arg(long, value_name = "ID")]
    pub spec_id: Option<String>,
    /// Arbitrary JSON metadata.
    #[arg(long)]
    pub metadata: Option<String>,
    /// Ephemeral (a wisp): hidden from ready work and export by default.
    #[arg(long)]
    pub ephemeral: bool,
    /// This issue waits for all children of ISSUE to close.
    #[arg(long, value_name = "ISSUE")]
    pub waits_for: Option<String>,
    /// Gate of --waits-for: all-children (default) or any-children.
    #[arg(long, value_name = "GATE")]
    pub waits_for_gate: Option<String>,
    /// Print only the new id.
    #[arg(long)]
    pub silent: bool,
    /// Show what would be created, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Refuse the issue if its description lacks the sections its type requires.
    #[arg(long)]
    pub validate: bool,
    /// Create issues from a markdown file (`## Title` per issue, `### Field` sections).
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Accepted for compatibility (prefix checks of --id are not enforced).
    #[arg(long, hide = true)]
    pub force: bool,
    /// Working directory the fleet agent runs this task in (default: here).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Coder (agent CLI) fleet runs this task with.
    #[arg(long)]
    pub coder: Option<String>,
    /// Model for the coder.
    #[arg(long)]
    pub model: Option<String>,
    /// Globs of the files the task will change (comma-separated or repeated): fleet never
    /// runs two tasks whose globs overlap at once.
    #[arg(long)]
    pub touches: Vec<String>,
    #[command(flatten)]
    pub compat: super::compat::CreateCompatArgs,
}

/// One issue to create: bd's flags turned into a new issue.
pub(super) struct Draft {
    args: fleet::NewIssue,
    metadata: Option<serde_json::Value>,
    /// `--spec-id`: the specification the issue implements.
    spec_id: String,
    ephemeral: bool,
}

impl Draft {
    fn from_args(args: &CreateArgs, title: String, texts: Texts) -> Draft {
        let mut deps = args.deps.clone();
        if let Some(spawner) = &args.waits_for {
            deps.push(format!("{}:{spawner}", dep_type::WAITS_FOR));
        }
        Draft {
            args: fleet::NewIssue {
                title,
                description: texts.description.unwrap_or_default(),
                design: texts.design.unwrap_or_default(),
                acceptance: args.acceptance.clone().unwrap_or_default(),
                notes: args.notes.clone().unwrap_or_default(),
                priority: args.priority.clone(),
                issue_type: args.issue_type.clone(),
                labels: args.labels.clone(),
                deps,
                parent: args.parent.clone(),
                no_inherit_labels: args.no_inherit_labels,
                assignee: args.assignee.clone(),
                id: args.id.clone(),
                estimate: None,
                due: args.due.clone(),
                defer: args.defer.clone(),
                external_ref: args.external_ref.clone(),
                cwd: args.cwd.clone(),
                coder: args.coder.clone(),
                model: args.model.clone(),
                touches: args.touches.clone(),
            },
            metadata: None,
            spec_id: String::new(),
            ephemeral: args.ephemeral,
        }
    }

    /// A preview of the issue for `--dry-run`, without touching the store.
    fn preview(&self, custom_types: &[String]) -> Result<Issue, CliError> {
        let now = jiff::Timestamp::now();
        let title = self.args.title.clone();
        let mut issue = Issue::new(String::new(), title, now);
        issue.description.clone_from(&self.args.description);
        issue.design.clone_from(&self.args.design);
        issue.acceptance_criteria.clone_from(&self.args.acceptance);
        issue.notes.clone_from(&self.args.notes);
        issue.priority = crate::model::parse_priority(&self.args.priority)?;
        issue.issue_type =
            crate::model::parse_issue_type_with(&self.args.issue_type, custom_types)?;
        issue.labels = fleet::split_csv(&self.args.labels);
        issue.assignee = self.args.assignee.clone().unwrap_or_default();
        issue.estimated_minutes = self.args.estimate;
        issue.metadata.clone_from(&self.metadata);
        issue.spec_id.clone_from(&self.spec_id);
        issue.ephemeral = self.ephemeral;
        if let Some(id) = &self.args.id {
            issue.id.clone_from(id);
        }
        Ok(issue)
    }
}

pub fn cmd_create(ctx: &BdContext, args: CreateArgs) -> Result<(), CliError> {
    if let Some(file) = &args.file {
        return create_from_markdown(ctx, &args, file);
    }
    let title = match (&args.title, &args.title_arg) {
        (Some(title), _) | (None, Some(title)) => title.clone(),
        (None, None) => {
            return Err(CliError::new("title required (or use --file to create from markdown)"));
        }
    };
    if title.trim().is_empty() {
        return Err(CliError::new("title is required"));
    }
    let texts = args.text.read()?;
    let mut draft = Draft::from_args(&args, title, texts);
    draft.args.estimate = parse_estimate(args.estimate.as_deref())?;
    let metadata = args.metadata.as_deref().map(parse_metadata).transpose()?;
    draft.metadata = args.compat.with_beads_fields(&args.issue_type, metadata)?;
    draft.spec_id = args.spec_id.clone().unwrap_or_default();
    if let Some(gate) = &args.waits_for_gate
        && !matches!(gate.as_str(), "all-children" | "any-children")
    {
        return Err(CliError::new(format!(
            "invalid --waits-for-gate {gate:?}: expected all-children or any-children"
        )));
    }
    if let Some(id) = &args.id {
        // Before --dry-run too: a preview of an id that cannot be stored would mislead.
        crate::id::check_id(id)?;
    }
    let preview = draft.preview(&ctx.custom_types())?;
    if let Some(due) = &args.due {
        parse_user_date("due", due, ctx.now())?;
    }
    if let Some(defer) = &args.defer {
        parse_user_date("defer", defer, ctx.now())?;
    }
    if args.dry_run {
        dry_run_policy(ctx, args.validate, &preview)?;
        ctx.out.emit(&preview, || {
            format!(
                "Dry run: would create issue: {}\n  Priority: P{}\n  Type: {}\n  Status: open",
                printable(&preview.title),
                preview.priority,
                printable(&preview.issue_type)
            )
        });
        return Ok(());
    }
    let summary = create_draft(ctx, &draft, args.waits_for_gate.as_deref(), args.validate)?;
    print_created(ctx, &summary, args.silent);
    Ok(())
}

/// `bd q`: creates `new` as `bd create --silent` would (the same checks and
/// `validation.on-create`), printing only its id.
pub(super) fn create_quietly(ctx: &BdContext, new: fleet::NewIssue) -> Result<(), CliError> {
    if new.title.trim().is_empty() {
        return Err(CliError::new("title is required"));
    }
    let draft = Draft { args: new, metadata: None, spec_id: String::new(), ephemeral: false };
    let summary = create_draft(ctx, &draft, None, false)?;
    print_created(ctx, &summary, true);
    Ok(())
}

/// Keeps `last-touched` and says what was created: its id alone when `silent` (and not
/// `--json`), else bd's lines or the issue as JSON.
fn print_created(ctx: &BdContext, summary: &IssueSummary, silent: bool) {
    ctx.touch(&summary.issue.id);
    if silent && !ctx.out.json {
        crate::cli::output::write_stdout(&summary.issue.id);
        return;
    }
    ctx.out.emit(summary, || created_lines(&summary.issue));
}

fn created_lines(issue: &Issue) -> String {
    format!(
        "✓ Created issue: {}\n  Priority: P{}\n  Status: {}",
        id_title(issue),
        issue.priority,
        issue.status
    )
}

/// What `validation.on-create` (or `--validate`) would say of the previewed issue, for
/// `--dry-run`: the tracker's rule, with the workspace's setting.
fn dry_run_policy(ctx: &BdContext, validate: bool, issue: &Issue) -> Result<(), CliError> {
    let mode = ctx.store().ok().and_then(|s| s.read().ok()?.config(ON_CREATE).ok()?);
    let warning = crate::tracker::create_policy(mode.as_deref(), validate, issue)
        .map_err(|refusal| CliError::new(refusal.to_string()))?;
    if let Some(warning) = warning {
        ctx.out.warn(&format!("Warning: {warning}"));
    }
    Ok(())
}

fn create_draft(
    ctx: &BdContext,
    draft: &Draft,
    gate: Option<&str>,
    validate: bool,
) -> Result<IssueSummary, CliError> {
    let metadata = draft.metadata.clone();
    let spec_id = draft.spec_id.clone();
    let ephemeral = draft.ephemeral;
    // The gate goes into the create itself: one op, one transaction.
    let summary = fleet::create_issue(ctx.require_store()?, &draft.args, |request| {
        request.metadata = metadata;
        request.spec_id = spec_id;
        request.ephemeral = ephemeral;
        request.wait_gate = gate.map(str::to_string);
        request.validate = validate;
    })
    .map_err(CliError::message_only)?;
    Ok(summary)
}

/// `bd create --file issues.md`: one issue per `## Title` section; `### Priority`, `### Type`,
/// `### Description`, `### Design`, `### Acceptance Criteria`, `### Notes`, `### Assignee`,
/// `### Labels` and `### Dependencies` subsections fill the fields (text right under the title
/// is the description).
fn create_from_markdown(
    ctx: &BdContext,
    args: &CreateArgs,
    file: &std::path::Path,
) -> Result<(), CliError> {
    let text = read_text_file(file)?;
    let drafts = parse_markdown(&text, args)?;
    if drafts.is_empty() {
        return Err(CliError::new(format!(
            "no issues found in {}: start each issue with a `## Title` line",
            file.display()
        )));
    }
    if args.dry_run {
        let custom = ctx.custom_types();
        let previews = drafts.iter().map(|d| d.preview(&custom)).collect::<Result<Vec<_>, _>>()?;
        ctx.out.emit(&previews, || {
            let mut lines = vec![format!("Dry run: would create {} issues:", previews.len())];
            lines.extend(
                previews.iter().map(|p| format!("  [P{}] {}", p.priority, printable(&p.title))),
            );
            lines.join("\n")
        });
        return Ok(());
    }
    let mut created = Vec::new();
    for draft in &drafts {
        created.push(create_draft(ctx, draft, None, args.validate)?);
    }
    if let Some(last) = created.last() {
        ctx.touch(&last.issue.id);
    }
    ctx.out.emit(&created, || {
        let mut lines =
            vec![format!("✓ Created {} issues from {}:", created.len(), file.display())];
        lines.extend(created.iter().map(|s| format!("  {}", id_title(&s.issue))));
        lines.join("\n")
    });
    Ok(())
}

fn parse_markdown(text: &str, args: &CreateArgs) -> Result<Vec<Draft>, CliError> {
    let mut drafts: Vec<Draft> = Vec::new();
    let mut section: Option<String> = None;
    let mut buffer = String::new();
    let flush = |draft: Option<&mut Draft>, section: &Option<String>, buffer: &mut String| {
        let value = buffer.trim().to_string();
        buffer.clear();
        let Some(draft) = draft else { return };
        let a = &mut draft.args;
        match section.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("description") => {
                if !value.is_empty() {
                    if !a.description.is_empty() {
                        a.description.push_str("\n\n");
                    }
                    a.description.push_str(&value);
                }
            }
            Some("priority") => a.priority = value,
            Some("type") => a.issue_type = value,
            Some("design") => a.design = value,
            Some("acceptance criteria" | "acceptance") => a.acceptance = value,
            Some("notes") => a.notes = value,
            Some("assignee") => a.assignee = Some(value).filter(|v| !v.is_empty()),
            Some("labels") => a.labels = vec![value],
            Some("dependencies" | "deps") => a.deps = vec![value.replace('\n', ",")],
            Some(other) => {
                // Unknown subsections stay in the description under their heading.
                if !value.is_empty() {
                    a.description.push_str(&format!("\n\n## {other}\n{value}"));
                }
            }
        }
    };
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            flush(drafts.last_mut(), &section, &mut buffer);
            section = None;
            // Only a literal --design applies to every issue of the file (stdin is not read).
            let design = args.text.design.clone().filter(|d| d != "-");
            let texts = Texts { description: None, design };
            let mut draft = Draft::from_args(args, title.trim().to_string(), texts);
            draft.args.id = None;
            drafts.push(draft);
        } else if let Some(name) = line.strip_prefix("### ") {
            flush(drafts.last_mut(), &section, &mut buffer);
            section = Some(name.trim().to_string());
        } else {
            buffer.push_str(line);
            buffer.push('\n');
        }
    }
    flush(drafts.last_mut(), &section, &mut buffer);
    Ok(drafts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        create: CreateArgs,
    }

    #[test]
    fn markdown_files_make_one_issue_per_title() {
        let args = Wrap::parse_from(["bd"]).create;
        let text = "## First\nintro text\n### Priority\n1\n### Labels\na,b\n\n## Second\n### Type\nbug\n### Acceptance Criteria\nworks\n";
        let drafts = parse_markdown(text, &args).unwrap();
        assert_eq!(drafts.len(), 2);
        assert_eq!(drafts[0].args.title, "First");
        assert_eq!(drafts[0].args.description, "intro text");
        assert_eq!(drafts[0].args.priority, "1");
        assert_eq!(drafts[0].args.labels, vec!["a,b".to_string()]);
        assert_eq!(drafts[1].args.issue_type, "bug");
        assert_eq!(drafts[1].args.acceptance, "works");
    }
}
