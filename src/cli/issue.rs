//! The issue lifecycle commands: `create`, `show`, `update`, `close`, `reopen`, `delete`.

use std::path::PathBuf;

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::output::{id_title, printable, printable_block, priority_badge, status_marker};
use super::tasks::RunInfo;
use crate::model::{FleetFields, Status, parse_issue_type_with, parse_priority};
use crate::op::IssuePatch;
use crate::store::{IssueDetail, IssueSummary};
use crate::time::parse_user_date;
use crate::tracker::{CloseRefused, CloseRequest, CreateRequest, DepSpec, Request, UpdateRequest};

/// Splits comma-separated values from repeated flags, dropping empty pieces.
pub(super) fn split_csv(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Title of the issue.
    #[arg(value_name = "TITLE")]
    pub title_arg: Option<String>,
    /// Title (instead of the positional argument).
    #[arg(long)]
    pub title: Option<String>,
    #[arg(short, long, default_value = "")]
    pub description: String,
    #[arg(long, default_value = "")]
    pub design: String,
    /// Acceptance criteria.
    #[arg(long, default_value = "")]
    pub acceptance: String,
    #[arg(long, default_value = "")]
    pub notes: String,
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
    /// Make this a child of PARENT: the id becomes `<PARENT>.<n>`.
    #[arg(long)]
    pub parent: Option<String>,
    /// Don't copy the parent's labels onto the child.
    #[arg(long)]
    pub no_inherit_labels: bool,
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// Use this exact id instead of a generated one.
    #[arg(long)]
    pub id: Option<String>,
    /// Estimate in minutes.
    #[arg(short, long)]
    pub estimate: Option<i64>,
    /// Due date: +6h, +1d, +2w, tomorrow, next monday, 2025-01-15, RFC 3339.
    #[arg(long)]
    pub due: Option<String>,
    /// Hide from ready work until then (same forms as --due).
    #[arg(long)]
    pub defer: Option<String>,
    #[arg(long)]
    pub external_ref: Option<String>,
    /// Working directory the agent runs in (default: the current directory).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Coder (agent CLI) to run this task with.
    #[arg(long)]
    pub coder: Option<String>,
    /// Model for the coder.
    #[arg(long)]
    pub model: Option<String>,
    /// Globs of the files the task will change (comma-separated or repeated): a supervisor
    /// never runs two tasks whose globs overlap at once.
    #[arg(long)]
    pub touches: Vec<String>,
    /// Print only the new id.
    #[arg(long)]
    pub silent: bool,
}

/// A new issue as a command line gives it (strings as typed), whichever personality parsed
/// the flags: `fleet create`, `bd create`, `bd q` and bd's markdown files each fill one, and
/// [`create_issue`] checks it and turns it into the tracker's [`CreateRequest`].
#[derive(Debug, Clone)]
pub(in crate::cli) struct NewIssue {
    pub title: String,
    pub description: String,
    pub design: String,
    pub acceptance: String,
    pub notes: String,
    /// `0`–`4` or `P0`–`P4`.
    pub priority: String,
    pub issue_type: String,
    /// Comma-separated or repeated.
    pub labels: Vec<String>,
    /// `id` or `type:id`, comma-separated or repeated.
    pub deps: Vec<String>,
    pub parent: Option<String>,
    pub no_inherit_labels: bool,
    pub assignee: Option<String>,
    pub id: Option<String>,
    pub estimate: Option<i64>,
    pub due: Option<String>,
    pub defer: Option<String>,
    pub external_ref: Option<String>,
    pub cwd: Option<PathBuf>,
    pub coder: Option<String>,
    pub model: Option<String>,
    /// Globs, comma-separated or repeated.
    pub touches: Vec<String>,
}

impl Default for NewIssue {
    /// An untitled task of priority 2, as both personalities default.
    fn default() -> NewIssue {
        NewIssue {
            title: String::new(),
            description: String::new(),
            design: String::new(),
            acceptance: String::new(),
            notes: String::new(),
            priority: "2".into(),
            issue_type: "task".into(),
            labels: Vec::new(),
            deps: Vec::new(),
            parent: None,
            no_inherit_labels: false,
            assignee: None,
            id: None,
            estimate: None,
            due: None,
            defer: None,
            external_ref: None,
            cwd: None,
            coder: None,
            model: None,
            touches: Vec::new(),
        }
    }
}

impl NewIssue {
    /// `fleet create`'s flags, with `title` chosen from the positional or the flag.
    fn of_fleet(args: CreateArgs, title: String) -> NewIssue {
        NewIssue {
            title,
            description: args.description,
            design: args.design,
            acceptance: args.acceptance,
            notes: args.notes,
            priority: args.priority,
            issue_type: args.issue_type,
            labels: args.labels,
            deps: args.deps,
            parent: args.parent,
            no_inherit_labels: args.no_inherit_labels,
            assignee: args.assignee,
            id: args.id,
            estimate: args.estimate,
            due: args.due,
            defer: args.defer,
            external_ref: args.external_ref,
            cwd: args.cwd,
            coder: args.coder,
            model: args.model,
            touches: args.touches,
        }
    }
}

/// `--touches` as globs, each checked.
fn checked_touches(touches: &[String]) -> Result<Vec<String>, CliError> {
    let globs = split_csv(touches);
    for glob in &globs {
        crate::coord::glob::check(glob).map_err(CliError::new)?;
    }
    Ok(globs)
}

/// The working directory a task records: `cwd` as given, or the current one, made absolute.
fn recorded_dir(cwd: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let dir = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    Ok(std::path::absolute(&dir).unwrap_or(dir))
}

pub fn cmd_create(ctx: &Context, args: CreateArgs) -> Result<(), CliError> {
    let hint = "fleet create \"Fix the login bug\"";
    let title = match args.title.clone().or(args.title_arg.clone()) {
        None => return Err(CliError::usage("title required").with_hint(hint)),
        Some(title) if title.trim().is_empty() => {
            return Err(CliError::new("title required").with_hint(hint));
        }
        Some(title) => title,
    };
    let silent = args.silent;
    let summary = create_issue(ctx, &NewIssue::of_fleet(args, title), |_| {})?;
    if silent && !ctx.out.json {
        super::output::write_stdout(&summary.issue.id);
        return Ok(());
    }
    ctx.out.emit(&summary, || {
        format!(
            "✓ Created issue: {}\n  Priority: P{}\n  Status: {}",
            id_title(&summary.issue),
            summary.issue.priority,
            summary.issue.status
        )
    });
    Ok(())
}

/// The store side of `create`, shared by `fleet create` and `bd create`: validates the
/// flags, builds the request (id, parent edge and inherited labels, `--deps` edges) and
/// submits it. `adjust` may set fields only one personality has flags for (bd's
/// `--metadata`, `--ephemeral`) before it is sent.
pub(in crate::cli) fn create_issue(
    ctx: &Context,
    args: &NewIssue,
    adjust: impl FnOnce(&mut CreateRequest),
) -> Result<IssueSummary, CliError> {
    let title = args.title.clone();
    crate::model::validate_title(&title)?;
    check_explicit_id(args.id.as_deref())?;
    let priority = parse_priority(&args.priority)?;
    let issue_type = parse_issue_type_with(&args.issue_type, &ctx.custom_types())?;
    let now = ctx.now();
    let due_at = args.due.as_deref().map(|d| parse_user_date("due", d, now)).transpose()?.flatten();
    let defer_until =
        args.defer.as_deref().map(|d| parse_user_date("defer", d, now)).transpose()?.flatten();
    if args.estimate.is_some_and(|e| e < 0) {
        return Err(CliError::new("estimate must be a non-negative number of minutes"));
    }
    let cwd = recorded_dir(args.cwd.clone())?;
    let mut request = CreateRequest {
        id: args.id.clone(),
        title,
        description: args.description.clone(),
        design: args.design.clone(),
        acceptance_criteria: args.acceptance.clone(),
        notes: args.notes.clone(),
        priority,
        issue_type,
        assignee: args.assignee.clone().unwrap_or_default(),
        labels: split_csv(&args.labels),
        parent: args.parent.clone(),
        inherit_labels: !args.no_inherit_labels,
        deps: split_csv(&args.deps).iter().map(|spec| DepSpec::parse(spec)).collect(),
        estimated_minutes: args.estimate,
        due_at,
        defer_until,
        external_ref: args.external_ref.clone().unwrap_or_default(),
        fleet: FleetFields {
            repo: crate::place::locate(&cwd),
            cwd: cwd.display().to_string(),
            coder: checked_coder(args.coder.as_deref())?.unwrap_or_default(),
            model: args.model.clone().unwrap_or_default(),
            touches: checked_touches(&args.touches)?,
            ..FleetFields::default()
        },
        ..CreateRequest::default()
    };
    adjust(&mut request);
    let (summary, warning) = ctx.submit(Request::Create(Box::new(request)))?.into_created()?;
    if let Some(warning) = warning {
        ctx.out.warn(&format!("Warning: {warning}"));
    }
    Ok(summary)
}

/// A `--coder` value, checked against the coders `runtime.toml` knows
/// ([`RuntimeConfig::check_coder`](crate::config::RuntimeConfig::check_coder), the same check
/// as `fleet config set coder=…`). An empty value (clearing the task's coder) is always fine.
fn checked_coder(coder: Option<&str>) -> Result<Option<String>, CliError> {
    let Some(name) = coder.filter(|name| !name.is_empty()) else {
        return Ok(coder.map(str::to_owned));
    };
    let path = super::context::fleet_home()?.join(crate::config::FILE_NAME);
    let config = crate::config::RuntimeConfig::load(&path).map_err(|error| {
        CliError::new(format!("cannot check --coder {name:?}: {error}"))
            .with_hint("fix runtime.toml (fleet config show names the problem)")
    })?;
    config.check_coder(name).map_err(|error| {
        CliError::new(format!("--coder: {error}")).with_hint(crate::config::UNKNOWN_CODER_HINT)
    })?;
    Ok(Some(name.to_owned()))
}

/// Refuses an `--id` outside the id grammar before anything is opened or written (the store
/// would refuse it too; this gives the fix).
fn check_explicit_id(id: Option<&str>) -> Result<(), CliError> {
    let Some(id) = id else { return Ok(()) };
    crate::id::check_id(id).map_err(|error| {
        CliError::from(error).with_hint("leave out --id and a fresh id is generated")
    })
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Issue ids (full, without prefix, or a unique part).
    pub ids: Vec<String>,
}

pub fn cmd_show(ctx: &Context, args: ShowArgs) -> Result<(), CliError> {
    if args.ids.is_empty() {
        return Err(CliError::usage("issue ID is required").with_hint("fleet show <id>"));
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let details = args
        .ids
        .iter()
        .map(|input| reader.resolve(input).and_then(|id| reader.detail(&id)))
        .collect::<Result<Vec<_>, _>>()?;
    let home = super::context::fleet_home().ok();
    let shown: Vec<ShownIssue> = details
        .into_iter()
        .map(|detail| {
            let run = home.as_deref().map(|home| RunInfo::of(&detail.summary.issue, home));
            ShownIssue { detail, run }
        })
        .collect();
    ctx.out.emit(&shown, || {
        if ctx.out.terse {
            return shown
                .iter()
                .map(|s| super::terse::detail(&s.detail))
                .collect::<Vec<_>>()
                .join("\n\n");
        }
        shown
            .iter()
            .map(|s| render_detail_with(&s.detail, s.run.as_ref()))
            .collect::<Vec<_>>()
            .join("\n\n")
    });
    Ok(())
}

/// An issue as `fleet show` prints it: the detail, and what its runs were.
#[derive(Debug, Serialize)]
struct ShownIssue {
    #[serde(flatten)]
    detail: IssueDetail,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunInfo>,
}

pub(in crate::cli) fn render_detail(detail: &IssueDetail) -> String {
    render_detail_with(detail, None)
}

/// The detail, with the fleet fields as `run` tells them (the effective coder and model, the
/// attempts, tokens and cost) when there is one, else as stored.
fn render_detail_with(detail: &IssueDetail, run: Option<&RunInfo>) -> String {
    let issue = &detail.summary.issue;
    let mut lines = vec![
        format!("{}: {}", issue.id, printable(&issue.title)),
        format!("Status: {}", printable(&issue.status.to_string())),
        format!("Priority: P{}", issue.priority),
        format!("Type: {}", printable(&issue.issue_type)),
    ];
    let mut field = |name: &str, value: &str| {
        if !value.is_empty() {
            lines.push(format!("{name}: {}", printable(value)));
        }
    };
    field("Assignee", &issue.assignee);
    field("Owner", &issue.owner);
    field("Created", &format!("{} by {}", issue.created_at, issue.created_by));
    field("Updated", &issue.updated_at.to_string());
    field("Started", &issue.started_at.map(|t| t.to_string()).unwrap_or_default());
    field("Closed", &issue.closed_at.map(|t| t.to_string()).unwrap_or_default());
    field("Close reason", &issue.close_reason);
    field("Due", &issue.due_at.map(|t| t.to_string()).unwrap_or_default());
    field("Deferred until", &issue.defer_until.map(|t| t.to_string()).unwrap_or_default());
    field("Estimate", &issue.estimated_minutes.map(|m| format!("{m} min")).unwrap_or_default());
    field("External ref", &issue.external_ref);
    field("Labels", &issue.labels.join(", "));
    match run {
        Some(run) => lines.extend(run.lines()),
        None => {
            field("Working directory", &issue.fleet.cwd);
            field("Coder", &issue.fleet.coder);
            field("Model", &issue.fleet.model);
        }
    }
    if let Some(landing) = &issue.fleet.land {
        lines.extend(
            super::receipt::landing_lines(landing).iter().map(|l| printable(l).into_owned()),
        );
    }
    if detail.blocked {
        lines.push("Blocked: yes (see dependencies)".to_string());
    }
    for (heading, text) in [
        ("Description", &issue.description),
        ("Design", &issue.design),
        ("Acceptance criteria", &issue.acceptance_criteria),
        ("Notes", &issue.notes),
    ] {
        if !text.is_empty() {
            lines.push(String::new());
            lines.push(format!("{heading}:"));
            lines.extend(text.lines().map(|l| format!("  {}", printable_block(l))));
        }
    }
    let linked = |heading: &str, arrow: &str, items: &[crate::store::LinkedIssue]| {
        let mut out = vec![String::new(), format!("{heading} ({}):", items.len())];
        for item in items {
            out.push(if item.missing {
                format!("  {arrow} {} (not in this workspace) ({})", item.id, item.dependency_type)
            } else {
                format!(
                    "  {arrow} {}: {} {} {} ({})",
                    item.id,
                    printable(&item.title),
                    status_marker(&item.status),
                    item.status,
                    item.dependency_type
                )
            });
        }
        out
    };
    lines.extend(linked("Dependencies", "→", &detail.dependencies));
    if !detail.dependents.is_empty() {
        lines.extend(linked("Dependents", "←", &detail.dependents));
    }
    if !detail.comments.is_empty() {
        lines.push(String::new());
        lines.push(format!("Comments ({}):", detail.comments.len()));
        for comment in &detail.comments {
            lines.push(format!("  [{}] {}:", printable(&comment.author), comment.created_at));
            lines.extend(comment.text.lines().map(|l| format!("    {}", printable_block(l))));
        }
    }
    lines.join("\n")
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// Issue ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// New status: open, in_progress, blocked, deferred, closed, pinned, hooked.
    #[arg(short, long)]
    pub status: Option<String>,
    #[arg(long)]
    pub title: Option<String>,
    #[arg(short = 't', long = "type")]
    pub issue_type: Option<String>,
    #[arg(short, long)]
    pub priority: Option<String>,
    /// New assignee ("" to unassign).
    #[arg(short, long)]
    pub assignee: Option<String>,
    #[arg(short, long)]
    pub description: Option<String>,
    #[arg(long)]
    pub design: Option<String>,
    #[arg(long)]
    pub acceptance: Option<String>,
    #[arg(long)]
    pub notes: Option<String>,
    /// Append a line to the notes.
    #[arg(long)]
    pub append_notes: Option<String>,
    #[arg(long)]
    pub external_ref: Option<String>,
    /// Estimate in minutes.
    #[arg(short, long)]
    pub estimate: Option<i64>,
    #[arg(long = "add-label")]
    pub add_labels: Vec<String>,
    #[arg(long = "remove-label")]
    pub remove_labels: Vec<String>,
    /// Claim the issue: in_progress and assigned to you, if it is open and unassigned.
    #[arg(long)]
    pub claim: bool,
    /// With `--status closed`: close even if the issue is pinned, an epic with open
    /// children, or blocked (as `close --force`).
    #[arg(long)]
    pub force: bool,
    /// Due date ("" clears).
    #[arg(long)]
    pub due: Option<String>,
    /// Hide from ready work until then ("" clears and reopens a deferred issue).
    #[arg(long)]
    pub defer: Option<String>,
    /// Working directory for the agent.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    #[arg(long)]
    pub coder: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
}

/// The values of `update`'s flags as a personality read them (fleet's [`UpdateArgs`], bd's
/// own): what [`update_issues`] turns into the tracker's request. Each personality has its own
/// flags and maps them here; no clap struct is shared between them.
#[derive(Debug, Clone, Default)]
pub(in crate::cli) struct UpdateFlags {
    pub status: Option<String>,
    pub title: Option<String>,
    pub issue_type: Option<String>,
    pub priority: Option<String>,
    pub assignee: Option<String>,
    pub description: Option<String>,
    pub design: Option<String>,
    pub acceptance: Option<String>,
    pub notes: Option<String>,
    pub append_notes: Option<String>,
    pub external_ref: Option<String>,
    pub estimate: Option<i64>,
    pub add_labels: Vec<String>,
    pub remove_labels: Vec<String>,
    pub claim: bool,
    pub force: bool,
    pub session: String,
    pub due: Option<String>,
    pub defer: Option<String>,
    pub cwd: Option<PathBuf>,
    pub coder: Option<String>,
    pub model: Option<String>,
}

impl UpdateArgs {
    /// fleet's flags as the values [`update_issues`] reads.
    fn flags(&self) -> UpdateFlags {
        UpdateFlags {
            status: self.status.clone(),
            title: self.title.clone(),
            issue_type: self.issue_type.clone(),
            priority: self.priority.clone(),
            assignee: self.assignee.clone(),
            description: self.description.clone(),
            design: self.design.clone(),
            acceptance: self.acceptance.clone(),
            notes: self.notes.clone(),
            append_notes: self.append_notes.clone(),
            external_ref: self.external_ref.clone(),
            estimate: self.estimate,
            add_labels: self.add_labels.clone(),
            remove_labels: self.remove_labels.clone(),
            claim: self.claim,
            force: self.force,
            session: String::new(),
            due: self.due.clone(),
            defer: self.defer.clone(),
            cwd: self.cwd.clone(),
            coder: self.coder.clone(),
            model: self.model.clone(),
        }
    }
}

fn build_patch(ctx: &Context, args: &UpdateFlags) -> Result<IssuePatch, CliError> {
    let now = ctx.now();
    if args.estimate.is_some_and(|e| e < 0) {
        return Err(CliError::new("estimate must be a non-negative number of minutes"));
    }
    if let Some(title) = &args.title {
        crate::model::validate_title(title)?;
    }
    Ok(IssuePatch {
        title: args.title.clone(),
        description: args.description.clone(),
        design: args.design.clone(),
        acceptance_criteria: args.acceptance.clone(),
        notes: args.notes.clone(),
        append_notes: args.append_notes.clone(),
        status: args
            .status
            .as_deref()
            .map(|s| Status::parse_user_with(s, &ctx.custom_statuses()))
            .transpose()?,
        prior_status: None,
        priority: args.priority.as_deref().map(parse_priority).transpose()?,
        issue_type: args
            .issue_type
            .as_deref()
            .map(|t| parse_issue_type_with(t, &ctx.custom_types()))
            .transpose()?,
        assignee: args.assignee.clone(),
        owner: None,
        estimated_minutes: args.estimate.map(Some),
        external_ref: args.external_ref.clone(),
        due_at: args.due.as_deref().map(|d| parse_user_date("due", d, now)).transpose()?,
        defer_until: args.defer.as_deref().map(|d| parse_user_date("defer", d, now)).transpose()?,
        pinned: None,
        add_labels: split_csv(&args.add_labels),
        remove_labels: split_csv(&args.remove_labels),
        fleet: None,
        ..IssuePatch::default()
    })
}

impl UpdateFlags {
    /// Whether any of fleet's task fields (`--cwd`, `--coder`, `--model`) is given.
    fn changes_fleet_fields(&self) -> bool {
        self.cwd.is_some() || self.coder.is_some() || self.model.is_some()
    }
}

pub fn cmd_update(ctx: &Context, args: UpdateArgs) -> Result<(), CliError> {
    let flags = args.flags();
    if !update_requested(ctx, &flags)? {
        return Err(CliError::usage("No updates specified")
            .with_hint("pass a field to change, e.g. --status in_progress or --priority 1"));
    }
    let updated = update_issues(ctx, &args.ids, &flags, |_| {})?;
    emit_summaries(ctx, &updated, |s| format!("✓ Updated issue: {}", id_title(&s.issue)));
    Ok(())
}

/// The store side of `update`, shared by `fleet update` and `bd update`: in one request,
/// claims (with `--claim`) and patches every issue in `ids`. `adjust` may set the edits
/// only one personality has flags for (bd's `--parent`, `--set-labels`, `--metadata`).
/// Returns the issues as they end up.
pub(in crate::cli) fn update_issues(
    ctx: &Context,
    ids: &[String],
    args: &UpdateFlags,
    adjust: impl FnOnce(&mut UpdateRequest),
) -> Result<Vec<IssueSummary>, CliError> {
    let cwd = args.cwd.clone().map(|d| recorded_dir(Some(d))).transpose()?;
    let mut request = UpdateRequest {
        patch: build_patch(ctx, args)?,
        claim: args.claim,
        cwd: cwd.as_ref().map(|d| d.display().to_string()),
        repo: cwd.as_deref().and_then(crate::place::locate),
        coder: checked_coder(args.coder.as_deref())?,
        model: args.model.clone(),
        session: args.session.clone(),
        force: args.force,
        ..UpdateRequest::default()
    };
    adjust(&mut request);
    let updates =
        ids.iter().map(|id| UpdateRequest { id: id.clone(), ..request.clone() }).collect();
    Ok(ctx.submit(Request::Update(updates))?.into_summaries()?)
}

/// Whether `args` asks for any change at all (fields, a claim, or fleet's task fields).
pub(in crate::cli) fn update_requested(
    ctx: &Context,
    args: &UpdateFlags,
) -> Result<bool, CliError> {
    Ok(!build_patch(ctx, args)?.is_empty() || args.claim || args.changes_fleet_fields())
}

fn emit_summaries(ctx: &Context, items: &[IssueSummary], line: impl Fn(&IssueSummary) -> String) {
    ctx.out.emit(items, || items.iter().map(&line).collect::<Vec<_>>().join("\n"));
}

#[derive(Debug, clap::Args)]
pub struct CloseArgs {
    /// Issue ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Why it is closed (default "Closed"); give one per id, or one for all.
    #[arg(short, long, visible_alias = "resolution")]
    pub reason: Vec<String>,
    /// Close even if the issue is pinned, an epic with open children, or blocked.
    #[arg(short, long)]
    pub force: bool,
    /// The agent session closing it.
    #[arg(long, default_value = "")]
    pub session: String,
    /// The task is done with nothing to land: its branch may have no commits (a task that
    /// works in a worktree of its own; see `fleet merges`).
    #[arg(long)]
    pub no_changes: bool,
}

/// What a close of several issues did.
pub(in crate::cli) struct CloseResult {
    pub closed: Vec<IssueSummary>,
    pub refused: Vec<CloseRefused>,
}

pub fn cmd_close(ctx: &Context, args: CloseArgs) -> Result<(), CliError> {
    if args.reason.len() > 1 && args.reason.len() != args.ids.len() {
        return Err(CliError::usage(format!(
            "{} reasons for {} issues: give one reason, or one per issue",
            args.reason.len(),
            args.ids.len()
        )));
    }
    let mut closes = close_requests(&args.ids, &args.reason, &args.session, args.force);
    closes.iter_mut().for_each(|close| close.no_changes = args.no_changes);
    let result = close_issues(ctx, closes)?;
    ctx.out.emit(&result.closed, || {
        result
            .closed
            .iter()
            .map(|s| {
                format!("✓ Closed {}: {}", id_title(&s.issue), printable(&s.issue.close_reason))
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    if result.refused.is_empty() {
        return Ok(());
    }
    Err(refusals_error(&result, args.ids.len()))
}

/// The error of a `close` that refused some ids (exit 1): each refusal on its own line, and
/// `--force` suggested when a guard refused.
fn refusals_error(result: &CloseResult, asked: usize) -> CliError {
    let summary = match result.refused.as_slice() {
        [only] if asked == 1 => only.error.clone(),
        refused => format!("{} of {asked} issues could not be closed", refused.len()),
    };
    let items = result
        .refused
        .iter()
        .map(|r| super::error::ItemError { id: r.id.clone(), error: r.error.clone() })
        .collect();
    let error = CliError::for_items(summary, items);
    if result.refused.iter().any(|r| r.guarded) {
        return error.with_hint("pass --force to close it anyway");
    }
    error
}

/// One close request per id of `ids`, each with its reason of `reasons` (one for all, or one
/// per id), as a person or an agent asks for them (not fleet's own closes).
pub(in crate::cli) fn close_requests(
    ids: &[String],
    reasons: &[String],
    session: &str,
    force: bool,
) -> Vec<CloseRequest> {
    ids.iter()
        .enumerate()
        .map(|(n, input)| CloseRequest {
            id: input.clone(),
            reason: reasons.get(n).or(reasons.first()).cloned().unwrap_or_default(),
            session: session.to_string(),
            force,
            ..CloseRequest::default()
        })
        .collect()
}

/// The store side of `close`, shared by `fleet close` and `bd close`: in one request,
/// closes each issue that passes the close guards (or all, when forced). Ids that do not
/// resolve and issues the guards refuse are reported, not fatal.
pub(in crate::cli) fn close_issues(
    ctx: &Context,
    closes: Vec<CloseRequest>,
) -> Result<CloseResult, CliError> {
    let outcome = ctx.submit(Request::Close(closes))?.into_closed()?;
    for warning in &outcome.warnings {
        ctx.out.warn(&format!("Warning: {warning}"));
    }
    Ok(CloseResult {
        closed: outcome.closed.into_iter().map(Into::into).collect(),
        refused: outcome.refused,
    })
}

#[derive(Debug, clap::Args)]
pub struct ReopenArgs {
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Why it is reopened (recorded as a comment).
    #[arg(short, long)]
    pub reason: Option<String>,
}

pub fn cmd_reopen(ctx: &Context, args: ReopenArgs) -> Result<(), CliError> {
    let reopened = reopen_issues(ctx, &args.ids, args.reason.clone())?;
    let suffix = args.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    emit_summaries(ctx, &reopened, |s| format!("↻ Reopened {}{suffix}", s.issue.id));
    Ok(())
}

/// The store side of `reopen`, shared by both personalities: reopens every issue of
/// `ids` in one request, recording the reason as a comment.
pub(in crate::cli) fn reopen_issues(
    ctx: &Context,
    ids: &[String],
    reason: Option<String>,
) -> Result<Vec<IssueSummary>, CliError> {
    let request = Request::Reopen { ids: ids.to_vec(), reason };
    Ok(ctx.submit(request)?.into_summaries()?)
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Issue ids.
    pub ids: Vec<String>,
    /// Really delete; without it, only show what would be deleted.
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Serialize)]
pub(in crate::cli) struct DeleteResult {
    /// True when nothing was deleted (no --force).
    pub preview: bool,
    pub issues: Vec<IssueSummary>,
    /// Issues that lose an edge to a deleted issue.
    pub affected_dependents: Vec<String>,
}

pub fn cmd_delete(ctx: &Context, args: DeleteArgs) -> Result<(), CliError> {
    if args.ids.is_empty() {
        return Err(
            CliError::usage("no issue IDs provided").with_hint("fleet delete <id>… --force")
        );
    }
    let result = delete_issues(ctx, &args.ids, args.force)?;
    ctx.out.emit(&result, || render_delete(&result));
    Ok(())
}

/// The store side of `delete`, shared by both personalities: resolves every id, gathers what
/// the deletion touches, and (with `--force`) deletes them all in one transaction.
pub(in crate::cli) fn delete_issues(
    ctx: &Context,
    ids: &[String],
    force: bool,
) -> Result<DeleteResult, CliError> {
    let request = Request::Delete { ids: ids.to_vec(), force };
    let deleted = ctx.submit(request)?.into_deleted()?;
    Ok(DeleteResult {
        preview: deleted.preview,
        issues: deleted.issues.into_iter().map(Into::into).collect(),
        affected_dependents: deleted.affected_dependents,
    })
}

pub(in crate::cli) fn render_delete(result: &DeleteResult) -> String {
    let mut lines = Vec::new();
    if result.preview {
        lines.push("⚠️  DELETE PREVIEW".to_string());
        lines.push(String::new());
        lines.push("Would delete:".to_string());
    }
    for summary in &result.issues {
        let issue = &summary.issue;
        if result.preview {
            lines.push(format!(
                "  {} {} {}",
                issue.id,
                priority_badge(issue.priority),
                printable(&issue.title)
            ));
        } else {
            lines.push(format!("✓ Deleted {}", id_title(issue)));
        }
    }
    if !result.affected_dependents.is_empty() {
        lines.push(format!(
            "{} {} dependent issues: {}",
            if result.preview { "Would remove edges from" } else { "Removed edges from" },
            result.affected_dependents.len(),
            result.affected_dependents.join(", ")
        ));
    }
    if result.preview {
        lines.push(String::new());
        lines.push("Run again with --force to delete.".to_string());
    }
    lines.join("\n")
}
