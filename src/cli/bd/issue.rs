//! `bd show`, `update`, `claim`, `close`, `reopen`, `delete`, `defer`, `undefer`.
//!
//! The store work is fleet's (`cli::issue`); this file parses bd's flags, handles the
//! per-issue reporting bd does (an unknown id is reported and skipped), keeps
//! `.beads/last-touched`, and prints bd's lines.

use std::path::PathBuf;

use super::context::BdContext;
use super::shown::{self, Include};
use super::text::{TextArgs, Texts};
use crate::cli::CliError;
use crate::cli::issue as fleet;
use crate::cli::output::{id_title, list_line, printable};
use crate::cli::terse;
use crate::model::{Issue, Status, dep_type};
use crate::op::IssuePatch;
use crate::store::{IssueSummary, ReadyFilter, Store, StoreError};
use crate::time::parse_user_date;
use crate::tracker::{self, MetadataEdit, Request, UpdateRequest};

/// Parses `--estimate`, refusing negative and non-numeric values as bd does.
pub(super) fn parse_estimate(text: Option<&str>) -> Result<Option<i64>, CliError> {
    let Some(text) = text else { return Ok(None) };
    match text.trim().parse::<i64>() {
        Ok(minutes) if minutes >= 0 => Ok(Some(minutes)),
        _ => Err(CliError::new(format!(
            "estimate must be a non-negative number of minutes (got {text:?})"
        ))),
    }
}

/// Parses `--metadata` JSON.
pub(super) fn parse_metadata(text: &str) -> Result<serde_json::Value, CliError> {
    serde_json::from_str(text).map_err(|e| CliError::new(format!("invalid --metadata JSON: {e}")))
}

/// The text of the file at `path`, or of stdin for `-`.
pub(super) fn read_text_file(path: &std::path::Path) -> Result<String, CliError> {
    if path.as_os_str() == "-" {
        return super::text::read_stdin().map_err(|e| CliError::new(format!("reading stdin: {e}")));
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::new(format!("reading {}: {e}", path.display())))
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Issue ids (full, without prefix, or a unique part).
    pub ids: Vec<String>,
    /// An issue id that looks like a flag.
    #[arg(long = "id", value_name = "ID")]
    pub id_flags: Vec<String>,
    /// Show the last touched issue.
    #[arg(long)]
    pub current: bool,
    /// One line per issue.
    #[arg(long)]
    pub short: bool,
    /// Show every field (accepted; the legacy block already does).
    #[arg(long)]
    pub long: bool,
    /// Show the issues that depend on this one.
    #[arg(long)]
    pub refs: bool,
    /// Show only the children of the issue.
    #[arg(long)]
    pub children: bool,
    /// Show the conversation thread (accepted; shows the issue).
    #[arg(long)]
    pub thread: bool,
    /// List the dependent issues, whole, in the JSON (by default only `dependent_count`).
    #[arg(long)]
    pub include_dependents: bool,
    /// List the comments in the JSON (by default only `comment_count`).
    #[arg(long)]
    pub include_comments: bool,
    /// Show timestamps in local time (accepted; fleet shows UTC).
    #[arg(long)]
    pub local_time: bool,
    /// Show the issue as of a Dolt commit: refused, fleet's store has no Dolt history.
    #[arg(long, value_name = "REF")]
    pub as_of: Option<String>,
    /// Watch for changes and refresh (accepted; shows the issue once).
    #[arg(short, long)]
    pub watch: bool,
}

/// Reports an id that does not resolve, the way bd does (`Error resolving X: …`).
fn report_unresolved(ctx: &BdContext, input: &str, error: &StoreError) {
    ctx.out.warn(&format!("Error resolving {input}: {error}"));
}

pub fn cmd_show(ctx: &BdContext, args: ShowArgs) -> Result<(), CliError> {
    let mut ids = args.ids.clone();
    ids.extend(args.id_flags.iter().cloned());
    if args.current {
        if !ids.is_empty() {
            return Err(CliError::new("--current cannot be combined with explicit issue IDs"));
        }
        let current = ctx
            .last_touched()
            .ok_or_else(|| CliError::new("no current issue found (no recently touched issue)"))?;
        ids.push(current);
    }
    if ids.is_empty() {
        return Err(CliError::new(
            "at least one issue ID is required (use positional args, --id flag, or --current)",
        )
        .with_hint("bd show <id>"));
    }
    if args.as_of.is_some() {
        return Err(CliError::new("--as-of needs Dolt history, which fleet's store does not keep")
            .with_hint("bd show <id> shows the issue as it is now"));
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut details = Vec::new();
    for input in &ids {
        match reader.resolve(input).and_then(|id| reader.detail(&id)) {
            Ok(detail) => details.push(detail),
            Err(
                error @ (StoreError::NotFound(_)
                | StoreError::Deleted(_)
                | StoreError::Ambiguous { .. }),
            ) => {
                ctx.out.warn(&format!("Error fetching {input}: {error}"));
            }
            Err(error) => return Err(error.into()),
        }
    }
    if details.is_empty() {
        // beads: a JSON error in place of the result, or exit 1 after the messages above.
        return Err(if ctx.out.json {
            CliError::new("no issues found matching the provided IDs").respecting_json()
        } else {
            CliError::silent()
        });
    }
    if let Some(first) = details.first() {
        ctx.touch(&first.summary.issue.id);
    }
    if args.refs || args.children {
        let linked: Vec<_> = details
            .iter()
            .flat_map(|d| d.dependents.iter())
            .filter(|l| !args.children || l.dependency_type == dep_type::PARENT_CHILD)
            .cloned()
            .collect();
        ctx.out.emit(&linked, || {
            if linked.is_empty() {
                return "No references found".to_string();
            }
            linked
                .iter()
                .map(|l| {
                    format!(
                        "{}: {} [{}] ({})",
                        l.id,
                        printable(&l.title),
                        l.status,
                        l.dependency_type
                    )
                })
                .collect::<Vec<_>>()
                .join("\n")
        });
        return Ok(());
    }
    if ctx.out.json && !args.short {
        let include =
            Include { dependents: args.include_dependents, comments: args.include_comments };
        let shown = details
            .into_iter()
            .map(|detail| shown::shown(&reader, detail, include))
            .collect::<Result<Vec<_>, _>>()?;
        ctx.out.emit(&shown, String::new);
        return Ok(());
    }
    ctx.out.emit(&details, || {
        if args.short {
            return details
                .iter()
                .map(|d| list_line(&d.summary.issue))
                .collect::<Vec<_>>()
                .join("\n");
        }
        let render = if ctx.out.terse { terse::detail } else { fleet::render_detail };
        details.iter().map(render).collect::<Vec<_>>().join("\n\n")
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// Issue ids (default: the last touched issue).
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
    #[command(flatten)]
    pub text: TextArgs,
    #[arg(long, alias = "acceptance-criteria")]
    pub acceptance: Option<String>,
    #[arg(long)]
    pub notes: Option<String>,
    /// Append to the notes.
    #[arg(long)]
    pub append_notes: Option<String>,
    #[arg(long)]
    pub external_ref: Option<String>,
    /// Estimate in minutes.
    #[arg(short, long, allow_hyphen_values = true)]
    pub estimate: Option<String>,
    #[arg(long = "add-label")]
    pub add_labels: Vec<String>,
    #[arg(long = "remove-label")]
    pub remove_labels: Vec<String>,
    /// Replace all labels (comma-separated or repeated).
    #[arg(long = "set-labels")]
    pub set_labels: Vec<String>,
    /// New parent ("" removes the parent).
    #[arg(long)]
    pub parent: Option<String>,
    /// Claim the issue atomically: in_progress and assigned to you, if it is open and
    /// unassigned.
    #[arg(long)]
    pub claim: bool,
    /// Due date ("" clears).
    #[arg(long)]
    pub due: Option<String>,
    /// Hide from ready work until then ("" clears and reopens a deferred issue).
    #[arg(long)]
    pub defer: Option<String>,
    /// Replace the metadata with this JSON.
    #[arg(long)]
    pub metadata: Option<String>,
    /// Set one metadata key: KEY=VALUE.
    #[arg(long = "set-metadata", value_name = "KEY=VALUE")]
    pub set_metadata: Vec<String>,
    /// Remove one metadata key.
    #[arg(long = "unset-metadata", value_name = "KEY")]
    pub unset_metadata: Vec<String>,
    /// Session closing the issue (with --status closed).
    #[arg(long)]
    pub session: Option<String>,
    /// Working directory the fleet agent runs this task in.
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    #[arg(long)]
    pub coder: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    /// Link to a specification document.
    #[arg(long, value_name = "ID")]
    pub spec_id: Option<String>,
    /// Make it ephemeral (a wisp: left out of the JSONL export and of ready work).
    #[arg(long, conflicts_with = "persistent")]
    pub ephemeral: bool,
    /// Make an ephemeral issue a regular one again.
    #[arg(long)]
    pub persistent: bool,
    #[command(flatten)]
    pub compat: super::compat::UpdateCompatArgs,
}

impl UpdateArgs {
    /// bd's flags as the values `fleet::update_issues` reads.
    fn flags(&self, texts: &Texts) -> Result<fleet::UpdateFlags, CliError> {
        Ok(fleet::UpdateFlags {
            status: self.status.clone(),
            title: self.title.clone(),
            issue_type: self.issue_type.clone(),
            priority: self.priority.clone(),
            assignee: self.assignee.clone(),
            description: texts.description.clone(),
            design: texts.design.clone(),
            acceptance: self.acceptance.clone(),
            notes: self.notes.clone(),
            append_notes: self.append_notes.clone(),
            external_ref: self.external_ref.clone(),
            estimate: parse_estimate(self.estimate.as_deref())?,
            add_labels: self.add_labels.clone(),
            remove_labels: self.remove_labels.clone(),
            claim: self.claim,
            due: self.due.clone(),
            defer: self.defer.clone(),
            cwd: self.cwd.clone(),
            coder: self.coder.clone(),
            model: self.model.clone(),
            force: false,
            session: self.session.clone().unwrap_or_else(session_from_env),
        })
    }

    /// Edits only bd has flags for; they ride in the same transaction as the patch.
    fn has_extra(&self) -> bool {
        !self.set_labels.is_empty()
            || self.spec_id.is_some()
            || self.ephemeral
            || self.persistent
            || self.parent.is_some()
            || self.metadata.is_some()
            || !self.set_metadata.is_empty()
            || !self.unset_metadata.is_empty()
    }
}

/// bd's `--set-labels`, `--parent` and metadata flags, as parts of the update `request`.
fn add_bd_edits(
    request: &mut UpdateRequest,
    args: &UpdateArgs,
    metadata: Option<&serde_json::Value>,
) {
    if !args.set_labels.is_empty() {
        request.set_labels = Some(fleet::split_csv(&args.set_labels));
    }
    request.parent.clone_from(&args.parent);
    request.patch.spec_id.clone_from(&args.spec_id);
    if args.ephemeral || args.persistent {
        request.patch.ephemeral = Some(args.ephemeral);
    }
    request.metadata = MetadataEdit {
        replace: metadata.cloned(),
        set: args
            .set_metadata
            .iter()
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair.as_str(), ""));
                let value =
                    serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::from(value));
                (key.to_string(), value)
            })
            .collect(),
        unset: args.unset_metadata.clone(),
    };
}

pub fn cmd_update(ctx: &BdContext, args: UpdateArgs) -> Result<(), CliError> {
    let ids = ctx.ids_or_last_touched(args.ids.clone())?;
    let fctx = ctx.require_store()?;
    // Validate every flag once, before any issue changes.
    let texts = args.text.read()?;
    let flags = args.flags(&texts)?;
    let metadata = args.metadata.as_deref().map(parse_metadata).transpose()?;
    if !fleet::update_requested(fctx, &flags).map_err(CliError::message_only)? && !args.has_extra()
    {
        ctx.out.text("No updates specified");
        return Ok(());
    }
    let store = ctx.store()?;
    let mut updated = Vec::new();
    for input in &ids {
        let Some(id) = resolve_or_report(ctx, store, input)? else { continue };
        // A status of closed is a close, with the close guards (the tracker sees to it).
        let result = fleet::update_issues(fctx, std::slice::from_ref(&id), &flags, |request| {
            add_bd_edits(request, &args, metadata.as_ref());
        });
        match result {
            Ok(mut summaries) => updated.append(&mut summaries),
            Err(error) if args.claim => {
                ctx.out.warn(&format!("Error claiming {id}: {}", error.message));
            }
            Err(error) => {
                ctx.out.warn(&format!("Error updating {id}: {}", error.message));
            }
        }
    }
    let Some(first) = updated.first() else {
        // beads 1.0.5: each failure is a line on stderr; nothing updated is exit 1 and no
        // JSON at all (stdout stays empty).
        return Err(CliError::silent());
    };
    ctx.touch(&first.issue.id);
    ctx.out.emit(&updated, || {
        updated
            .iter()
            .map(|s| format!("✓ Updated issue: {}", id_title(&s.issue)))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

/// Resolves `input`; an unknown or ambiguous id is reported on stderr and skipped (`None`),
/// as legacy bd did for `show` and `update`.
fn resolve_or_report(
    ctx: &BdContext,
    store: &Store,
    input: &str,
) -> Result<Option<String>, CliError> {
    match store.read()?.resolve(input) {
        Ok(id) => Ok(Some(id)),
        Err(
            error @ (StoreError::NotFound(_)
            | StoreError::Deleted(_)
            | StoreError::Ambiguous { .. }),
        ) => {
            report_unresolved(ctx, input, &error);
            Ok(None)
        }
        Err(error) => Err(error.into()),
    }
}

fn session_from_env() -> String {
    std::env::var("CLAUDE_SESSION_ID").unwrap_or_default()
}

#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// The issue to claim (default: the last touched issue).
    pub id: Option<String>,
}

pub fn cmd_claim(ctx: &BdContext, args: ClaimArgs) -> Result<(), CliError> {
    let id = ctx.ids_or_last_touched(args.id.into_iter().collect())?.remove(0);
    let request = tracker::Request::Claim { id: id.clone() };
    let summary = ctx
        .require_store()?
        .submit(request)
        .and_then(|reply| Ok(reply.into_summary()?))
        .map_err(|e| CliError::new(format!("claiming {id}: {}", e.message)))?;
    ctx.touch(&summary.issue.id);
    ctx.out.emit(std::slice::from_ref(&summary), || {
        format!("✓ Updated issue: {}", id_title(&summary.issue))
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct CloseArgs {
    /// Issue ids (default: the last touched issue).
    pub ids: Vec<String>,
    /// Why it is closed (default "Closed"); repeat for one per id.
    #[arg(
        short,
        long,
        visible_alias = "resolution",
        alias = "comment",
        short_alias = 'm',
        alias = "message"
    )]
    pub reason: Vec<String>,
    /// Read the reason from a file.
    #[arg(long, value_name = "FILE")]
    pub reason_file: Option<PathBuf>,
    /// Close even if pinned, an epic with open children, or blocked.
    #[arg(short, long)]
    pub force: bool,
    /// Show issues this close unblocked.
    #[arg(long)]
    pub suggest_next: bool,
    /// Then claim the next ready issue.
    #[arg(long, alias = "continue")]
    pub claim_next: bool,
    /// The agent session closing it (default: $CLAUDE_SESSION_ID).
    #[arg(long)]
    pub session: Option<String>,
    /// Accepted for compatibility.
    #[arg(long, hide = true)]
    pub no_auto: bool,
    /// fleet: the task is done with nothing to land (its branch may have no commits).
    #[arg(long)]
    pub no_changes: bool,
}

pub fn cmd_close(ctx: &BdContext, args: CloseArgs) -> Result<(), CliError> {
    let ids = ctx.ids_or_last_touched(args.ids.clone())?;
    resolve_all(ctx, &ids)?;
    if args.claim_next {
        // Refused inside a run before anything closes, not after.
        ctx.stay_on_task(&tracker::Request::ClaimNext { filter: Box::default() })?;
    }
    let reasons = close_reasons(&args, ids.len())?;
    let session = args.session.clone().unwrap_or_else(session_from_env);
    let mut closes = fleet::close_requests(&ids, &reasons, &session, args.force);
    closes.iter_mut().for_each(|close| close.no_changes = args.no_changes);
    let result =
        fleet::close_issues(ctx.require_store()?, closes).map_err(CliError::message_only)?;
    report_refusals(ctx, &result);
    if let Some(first) = result.closed.first() {
        ctx.touch(&first.issue.id);
    }
    if result.closed.is_empty() {
        if result.refused.iter().any(|r| r.guarded) {
            ctx.out.note("Hint: pass --force to close it anyway");
        }
        // Each refusal is a line on stderr already; beads adds nothing, even with --json.
        return Err(CliError::silent());
    }
    ctx.out.emit(&result.closed, || closed_lines(&result.closed));
    if args.suggest_next {
        suggest_next(ctx, &result.closed)?;
    }
    if args.claim_next {
        claim_next_after_close(ctx)?;
    }
    Ok(())
}

/// Every id of a close must name an issue before any closes: beads stops at the first that
/// does not, with its error in place of the result (JSON on stdout with `--json`).
fn resolve_all(ctx: &BdContext, ids: &[String]) -> Result<(), CliError> {
    let reader = ctx.store()?.read()?;
    for input in ids {
        match reader.resolve(input) {
            Ok(_) => {}
            Err(error @ (StoreError::NotFound(_) | StoreError::Deleted(_))) => {
                return Err(
                    CliError::new(format!("resolving ID {input}: {error}")).respecting_json()
                );
            }
            Err(error) => return Err(CliError::from(error).message_only().respecting_json()),
        }
    }
    Ok(())
}

/// The reasons given (`--reason`, repeated, and `--reason-file`): one for all, or one per id.
fn close_reasons(args: &CloseArgs, ids: usize) -> Result<Vec<String>, CliError> {
    let mut reasons = args.reason.clone();
    if let Some(path) = &args.reason_file {
        reasons.push(read_text_file(path)?.trim().to_string());
    }
    if reasons.len() > 1 && reasons.len() != ids {
        return Err(CliError::new(format!(
            "{} reasons for {ids} issues: give one reason, or one per issue",
            reasons.len()
        )));
    }
    Ok(reasons)
}

/// Each refused id on stderr, as bd words it.
fn report_refusals(ctx: &BdContext, result: &fleet::CloseResult) {
    for refusal in &result.refused {
        if refusal.unresolved {
            ctx.out.warn(&format!("Error resolving {}: {}", refusal.id, refusal.error));
        } else {
            ctx.out.warn(&refusal.error);
        }
    }
}

fn closed_lines(closed: &[IssueSummary]) -> String {
    closed
        .iter()
        .map(|s| format!("✓ Closed {}: {}", id_title(&s.issue), printable(&s.issue.close_reason)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `close --claim-next`: claims the next ready issue for the actor and says which.
fn claim_next_after_close(ctx: &BdContext) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let clock = ctx.require_store()?.clock;
    match crate::tracker::claims::claim_next(&store, ctx.actor(), clock, &ReadyFilter::default())? {
        Some(issue) => {
            ctx.touch(&issue.id);
            ctx.out.note(&format!("✓ Claimed issue: {}", id_title(&issue)));
        }
        None => ctx.out.note("○ No ready work to claim"),
    }
    Ok(())
}

/// After a close: the dependents of the closed issues that are ready now.
fn suggest_next(ctx: &BdContext, closed: &[IssueSummary]) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut unblocked = Vec::new();
    for summary in closed {
        for (dependent, _) in reader.dependents(&summary.issue.id)? {
            if let Some(issue) = reader.issue(&dependent)?
                && issue.status == Status::Open
                && !reader.is_blocked(&dependent)?
                && !unblocked.iter().any(|i: &Issue| i.id == issue.id)
            {
                unblocked.push(issue);
            }
        }
    }
    if unblocked.is_empty() {
        ctx.out.note("No issues were unblocked");
    } else {
        ctx.out.note(&format!("\nNewly unblocked ({}):", unblocked.len()));
        for issue in &unblocked {
            ctx.out.note(&format!("  ○ {}", id_title(issue)));
        }
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct ReopenArgs {
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Why it is reopened (recorded as a comment).
    #[arg(short, long)]
    pub reason: Option<String>,
}

pub fn cmd_reopen(ctx: &BdContext, args: ReopenArgs) -> Result<(), CliError> {
    let reopened = fleet::reopen_issues(ctx.require_store()?, &args.ids, args.reason.clone())
        .map_err(CliError::message_only)?;
    let suffix = args.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    ctx.out.emit(&reopened, || {
        reopened
            .iter()
            .map(|s| format!("↻ Reopened {}{suffix}", s.issue.id))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Issue ids.
    pub ids: Vec<String>,
    /// Really delete; without it, only a preview.
    #[arg(short, long)]
    pub force: bool,
    /// Also delete every issue that depends on these, recursively.
    #[arg(long)]
    pub cascade: bool,
    /// Read ids from a file, one per line.
    #[arg(long, value_name = "FILE")]
    pub from_file: Option<PathBuf>,
    /// Preview only (the default without --force).
    #[arg(long)]
    pub dry_run: bool,
    /// Accepted for compatibility: deletes are always hard deletes.
    #[arg(long, hide = true)]
    pub hard: bool,
}

pub fn cmd_delete(ctx: &BdContext, args: DeleteArgs) -> Result<(), CliError> {
    let mut ids = args.ids.clone();
    if let Some(path) = &args.from_file {
        let text = read_text_file(path)?;
        ids.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    if ids.is_empty() {
        return Err(CliError::new("no issue IDs provided").with_hint("bd delete <id>... --force"));
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut resolved = Vec::new();
    for input in &ids {
        match reader.resolve(input) {
            Ok(id) => resolved.push(id),
            Err(StoreError::NotFound(_) | StoreError::Deleted(_)) => {
                return Err(CliError::new(format!("issue {input} not found")));
            }
            Err(error) => return Err(error.into()),
        }
    }
    if args.cascade {
        let mut stack = resolved.clone();
        while let Some(id) = stack.pop() {
            for (dependent, _) in reader.dependents(&id)? {
                if !resolved.contains(&dependent) {
                    resolved.push(dependent.clone());
                    stack.push(dependent);
                }
            }
        }
    }
    drop(reader);
    let force = args.force && !args.dry_run;
    let result = fleet::delete_issues(ctx.require_store()?, &resolved, force)
        .map_err(CliError::message_only)?;
    ctx.out.emit(&result, || fleet::render_delete(&result));
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct DeferArgs {
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Until when (+1d, next monday, 2025-01-15, …); without it, until undeferred.
    #[arg(long)]
    pub until: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct UndeferArgs {
    #[arg(required = true)]
    pub ids: Vec<String>,
}

pub fn cmd_defer(ctx: &BdContext, args: DeferArgs) -> Result<(), CliError> {
    let fctx = ctx.require_store()?;
    let until = args
        .until
        .as_deref()
        .map(|u| parse_user_date("until", u, fctx.now()))
        .transpose()?
        .flatten();
    let patch = IssuePatch {
        status: Some(Status::Deferred),
        defer_until: until.map(Some),
        ..IssuePatch::default()
    };
    let changed = patch_each(ctx, &args.ids, &patch)?;
    let suffix = until.map(|u| format!(" until {u}")).unwrap_or_default();
    ctx.out.emit(&changed, || {
        changed
            .iter()
            .map(|s| format!("❄ Deferred {}{suffix}", id_title(&s.issue)))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

pub fn cmd_undefer(ctx: &BdContext, args: UndeferArgs) -> Result<(), CliError> {
    let patch =
        IssuePatch { status: Some(Status::Open), defer_until: Some(None), ..IssuePatch::default() };
    let changed = patch_each(ctx, &args.ids, &patch)?;
    ctx.out.emit(&changed, || {
        changed
            .iter()
            .map(|s| format!("✓ Undeferred {}", id_title(&s.issue)))
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

/// Applies one patch to every issue of `ids` in one transaction.
pub(super) fn patch_each(
    ctx: &BdContext,
    ids: &[String],
    patch: &IssuePatch,
) -> Result<Vec<IssueSummary>, CliError> {
    let updates = ids.iter().map(|id| UpdateRequest::edit(id, patch.clone())).collect();
    Ok(ctx.require_store()?.submit(Request::Update(updates))?.into_summaries()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_must_be_non_negative_minutes() {
        assert_eq!(parse_estimate(Some("30")).unwrap(), Some(30));
        assert!(parse_estimate(Some("-5")).unwrap_err().message.starts_with("estimate must be"));
        assert!(parse_estimate(Some("soon")).is_err());
    }
}
