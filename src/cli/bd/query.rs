//! The read-only views as bd has them: `list`, `ready` (and `ready --claim`), `blocked`,
//! `stats`/`status`, `search`, `count`, `children`, `stale`.

use jiff::Timestamp;
use serde::Serialize;

use super::context::BdContext;
use super::filter::{ExtraFilterArgs, metadata_test};
use super::query_lang;
use crate::cli::CliError;
use crate::cli::output::{id_title, list_line, printable};
use crate::cli::query::{self as fleet, ListFilterArgs};
use crate::cli::terse;
use crate::model::{Status, dep_type};
use crate::store::{IssueSummary, ListFilter, ListSort, Reader, ReadyFilter, RowFacts, Stats};

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: ListFilterArgs,
    #[command(flatten)]
    pub extra: ExtraFilterArgs,
    /// Only ready issues (open, no active blockers).
    #[arg(long)]
    pub ready: bool,
    /// Only deferred issues.
    #[arg(long)]
    pub deferred: bool,
    /// Only open issues past their due date.
    #[arg(long)]
    pub overdue: bool,
    /// Several lines per issue.
    #[arg(long)]
    pub long: bool,
    /// Children indented under their parents.
    #[arg(long, conflicts_with = "flat")]
    pub tree: bool,
    /// One line per issue (the default).
    #[arg(long)]
    pub flat: bool,
    /// Accepted: lists once (fleet has no watch mode; `fleet tasks --watch` follows a run).
    #[arg(short, long)]
    pub watch: bool,
    /// Accepted: labels come with each row at no extra cost, so they stay in the output.
    #[arg(long)]
    pub skip_labels: bool,
    /// Output format: text (default), json (same as --json), or a Go template such as
    /// '{{.ID}} {{.Title}}' (fields: ID, Title, Status, Priority, IssueType, Assignee, Owner,
    /// Labels, Description, CreatedAt, UpdatedAt, Parent).
    #[arg(long)]
    pub format: Option<String>,
}

fn keep_all(_: &IssueSummary) -> Result<bool, CliError> {
    Ok(true)
}

/// A test of bd's own on a listed issue, beyond the store's and the extra filters.
type Keep<'a> = &'a dyn Fn(&IssueSummary) -> Result<bool, CliError>;

/// Lists with the store's filter, then bd's extra filters and `keep`, then the limit. Returns
/// the page and how many matched in all. Without extra filters or `keep`, the store's own
/// listing answers, which reads only the page.
fn filtered_list(
    ctx: &BdContext,
    reader: &Reader,
    mut filter: ListFilter,
    extra: &ExtraFilterArgs,
    keep: Option<Keep<'_>>,
) -> Result<(Vec<IssueSummary>, usize), CliError> {
    let keep = match keep {
        Some(keep) => keep,
        None if extra.is_empty() => return Ok(reader.list(&filter)?),
        None => &keep_all,
    };
    let limit = filter.limit;
    filter.limit = 0;
    let extra = extra.compile(reader, ctx.require_store()?.now())?;
    let (all, _) = reader.list(&filter)?;
    let mut matched = Vec::new();
    for summary in all {
        if extra.matches(&summary) && keep(&summary)? {
            matched.push(summary);
        }
    }
    let total = matched.len();
    if limit != 0 {
        matched.truncate(limit);
    }
    Ok((matched, total))
}

pub fn cmd_list(ctx: &BdContext, args: ListArgs) -> Result<(), CliError> {
    let mut filter = args.filter.to_filter(None).map_err(CliError::message_only)?;
    if args.deferred {
        filter.statuses = vec![Status::Deferred];
    }
    if args.ready {
        filter.statuses = vec![Status::Open];
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let now = ctx.require_store()?.now();
    let keep = |s: &IssueSummary| {
        let ready_ok = !args.ready || !reader.is_blocked(&s.issue.id)?;
        let overdue_ok = !args.overdue
            || (s.issue.status != Status::Closed && s.issue.due_at.is_some_and(|d| d < now));
        Ok(ready_ok && overdue_ok)
    };
    let keep: Option<Keep<'_>> = (args.ready || args.overdue).then_some(&keep);
    let (issues, total) = filtered_list(ctx, &reader, filter, &args.extra, keep)?;
    let json = ctx.out.json || args.format.as_deref() == Some("json");
    let template = args.format.as_deref().filter(|f| !matches!(*f, "json" | "text" | ""));
    let out = ctx.out.with_json(json);
    out.emit(&issues, || {
        if let Some(template) = template {
            return issues
                .iter()
                .map(|s| fill_template(template, s))
                .collect::<Vec<_>>()
                .join("\n");
        }
        if out.terse && !args.tree && !args.long {
            return terse::issue_lines(issues.iter().map(|s| &s.issue));
        }
        if issues.is_empty() {
            return "No issues found.".to_string();
        }
        if args.tree {
            return tree_lines(&issues);
        }
        if args.long {
            return issues.iter().map(long_entry).collect::<Vec<_>>().join("\n\n");
        }
        issues.iter().map(|s| list_line(&s.issue)).collect::<Vec<_>>().join("\n")
    });
    if total > issues.len() {
        out.note(&format!(
            "\nShowing {} of {total} issues. Use --limit 0 for all, or --limit N to raise the cap.",
            issues.len()
        ));
    }
    Ok(())
}

/// One issue through a Go-template-like `--format`: each `{{.Field}}` (spaces allowed inside
/// the braces) is replaced by the field's value; unknown fields give `<no value>`, as Go's
/// templates print for a missing map key.
fn fill_template(template: &str, summary: &IssueSummary) -> String {
    let issue = &summary.issue;
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else { break };
        out.push_str(&rest[..start]);
        let field = rest[start + 2..start + len].trim().trim_start_matches('.');
        let value = match field {
            "ID" | "Id" => issue.id.clone(),
            "Title" => issue.title.clone(),
            "Status" => issue.status.to_string(),
            "Priority" => issue.priority.to_string(),
            "IssueType" | "Type" => issue.issue_type.clone(),
            "Assignee" => issue.assignee.clone(),
            "Owner" => issue.owner.clone(),
            "Labels" => format!("[{}]", issue.labels.join(" ")),
            "Description" => issue.description.clone(),
            "CreatedAt" => issue.created_at.to_string(),
            "UpdatedAt" => issue.updated_at.to_string(),
            "Parent" => summary.parent.clone().unwrap_or_default(),
            _ => "<no value>".to_string(),
        };
        out.push_str(&printable(&value));
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// `list --tree`: each issue under its parent (when the parent is listed too), indented.
fn tree_lines(issues: &[IssueSummary]) -> String {
    let listed: std::collections::HashSet<&str> =
        issues.iter().map(|s| s.issue.id.as_str()).collect();
    let is_root = |s: &IssueSummary| s.parent.as_deref().is_none_or(|p| !listed.contains(p));
    let mut lines = Vec::new();
    let mut stack: Vec<(&IssueSummary, usize)> =
        issues.iter().filter(|s| is_root(s)).rev().map(|s| (s, 0)).collect();
    while let Some((summary, depth)) = stack.pop() {
        let prefix =
            if depth == 0 { String::new() } else { format!("{}└─ ", "   ".repeat(depth - 1)) };
        lines.push(format!("{prefix}{}", list_line(&summary.issue)));
        let children = issues
            .iter()
            .filter(|c| c.parent.as_deref() == Some(summary.issue.id.as_str()))
            .rev()
            .map(|c| (c, depth + 1));
        stack.extend(children);
    }
    lines.join("\n")
}

fn long_entry(summary: &IssueSummary) -> String {
    let issue = &summary.issue;
    let mut lines = vec![list_line(issue)];
    if !issue.labels.is_empty() {
        lines.push(format!("  Labels: {}", printable(&issue.labels.join(", "))));
    }
    if let Some(parent) = &summary.parent {
        lines.push(format!("  Parent: {parent}"));
    }
    if !issue.description.is_empty() {
        lines.extend(issue.description.lines().take(3).map(|l| format!("  {l}")));
    }
    lines.join("\n")
}

#[derive(Debug, clap::Args)]
#[group(id = "bd_ready")]
pub struct ReadyArgs {
    #[command(flatten)]
    pub filter: fleet::ReadyArgs,
    /// Claim the first ready issue atomically (in_progress, assigned to you).
    #[arg(long)]
    pub claim: bool,
    /// Only steps of this molecule: its descendants (fleet has no molecules; any issue with
    /// children serves, as --parent).
    #[arg(long, value_name = "ID", conflicts_with = "parent")]
    pub mol: Option<String>,
    /// Only molecules of this type: fleet has no molecules, so nothing is ready.
    #[arg(long, value_name = "TYPE")]
    pub mol_type: Option<String>,
    /// Molecules ready for gate-resume dispatch: fleet has no molecules or gates, so none.
    #[arg(long, conflicts_with = "claim")]
    pub gated: bool,
    /// Leave out issues with any of these labels.
    #[arg(long)]
    pub exclude_label: Vec<String>,
    /// Only issues with this metadata field: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub metadata_field: Vec<String>,
    /// Only issues whose metadata has this key.
    #[arg(long, value_name = "KEY")]
    pub has_metadata_key: Option<String>,
    /// Accepted for compatibility (the numbered list is the plain format).
    #[arg(long, hide = true)]
    pub plain: bool,
    /// Explain why each issue is ready or blocked (and list dependency cycles).
    #[arg(long, conflicts_with = "claim")]
    pub explain: bool,
}

impl ReadyArgs {
    /// The store's filter: fleet's flags and bd's own (`--mol`, label and metadata tests).
    fn to_filter(&self) -> Result<ReadyFilter, CliError> {
        let mut filter = self.filter.to_filter().map_err(CliError::message_only)?;
        if self.mol.is_some() {
            filter.parent.clone_from(&self.mol);
        }
        filter.exclude_labels = crate::cli::issue::split_csv(&self.exclude_label);
        filter.metadata = metadata_test(self.has_metadata_key.as_deref(), &self.metadata_field)?;
        Ok(filter)
    }

    /// Whether the flags ask for molecules, which fleet does not have: the answer is empty.
    fn wants_molecules(&self) -> bool {
        self.gated || self.mol_type.is_some()
    }
}

pub fn cmd_ready(ctx: &BdContext, args: ReadyArgs) -> Result<(), CliError> {
    if args.wants_molecules() {
        ctx.out.emit(&[] as &[IssueSummary], || "\n✨ No ready molecules (fleet has none)".into());
        return Ok(());
    }
    if args.claim {
        return ready_claim(ctx, &args);
    }
    if args.explain {
        return ready_explain(ctx);
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut filter = args.to_filter()?;
    if let Some(parent) = &filter.parent {
        filter.parent = Some(reader.resolve(parent)?);
    }
    let page = reader.ready(&filter, ctx.require_store()?.now())?;
    let summaries = if ctx.out.json { reader.ready_summaries(&page)? } else { Vec::new() };
    ctx.out.emit(&summaries, || {
        if ctx.out.terse {
            return terse::issue_lines(&page.issues);
        }
        if !page.issues.is_empty() {
            return format!("\n{}", fleet::render_ready(&page.issues).render(false));
        }
        let any_open = reader
            .list(&ListFilter { statuses: vec![Status::Open], limit: 1, ..ListFilter::default() })
            .is_ok_and(|(_, total)| total > 0);
        if any_open {
            "\n✨ No ready work found (all issues have blocking dependencies)".to_string()
        } else {
            "\n✨ No open issues".to_string()
        }
    });
    if page.truncated {
        ctx.out.note(&format!(
            "Showing {} ready issues; more are ready. Use --limit 0 for all, or --limit N to raise the cap.",
            page.issues.len()
        ));
    }
    Ok(())
}

/// `ready --claim`: in one transaction, the first ready issue this actor may take becomes
/// in_progress and theirs.
fn ready_claim(ctx: &BdContext, args: &ReadyArgs) -> Result<(), CliError> {
    if args.filter.assignee.is_some() {
        return Err(CliError::new("--claim cannot be combined with --assignee"));
    }
    ctx.stay_on_task(&crate::tracker::Request::ClaimNext { filter: Box::default() })?;
    let store = ctx.open_store()?;
    let mut filter = args.to_filter()?;
    if let Some(parent) = &filter.parent {
        filter.parent = Some(store.read()?.resolve(parent)?);
    }
    let claimed = crate::tracker::claims::claim_next(
        &store,
        ctx.actor(),
        ctx.require_store()?.clock,
        &filter,
    )?;
    let summaries = match claimed {
        Some(issue) => {
            ctx.touch(&issue.id);
            vec![store.read()?.summary(issue)?]
        }
        None => Vec::new(),
    };
    ctx.out.emit(&summaries, || match summaries.first() {
        Some(s) => format!("✓ Claimed issue: {}", id_title(&s.issue)),
        None => "○ No ready work to claim".to_string(),
    });
    Ok(())
}

/// A ready issue and why it is ready (`ready --explain`).
#[derive(Serialize)]
struct ReadyItem {
    #[serde(flatten)]
    summary: IssueSummary,
    reason: String,
    resolved_blockers: Vec<String>,
}

/// A blocker as `ready --explain` names it.
#[derive(Serialize)]
struct BlockerInfo {
    id: String,
    title: String,
    status: String,
    priority: u8,
}

#[derive(Serialize)]
struct BlockedItem {
    #[serde(flatten)]
    summary: IssueSummary,
    blocked_by: Vec<BlockerInfo>,
    blocked_by_count: usize,
}

#[derive(Serialize)]
struct Explanation {
    ready: Vec<ReadyItem>,
    blocked: Vec<BlockedItem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cycles: Vec<Vec<String>>,
    summary: serde_json::Value,
}

/// `ready --explain`: every ready issue with the blockers it no longer waits for, every
/// blocked one with what blocks it, and the dependency cycles (beads' shape).
fn ready_explain(ctx: &BdContext) -> Result<(), CliError> {
    let reader = ctx.store()?.read()?;
    let filter = crate::store::ReadyFilter { limit: 0, ..Default::default() };
    let page = reader.ready(&filter, ctx.require_store()?.now())?;
    let mut ready = Vec::new();
    for summary in reader.summaries(&page.issues)? {
        let resolved: Vec<String> = reader
            .view()
            .deps_of(&summary.issue.id)?
            .into_iter()
            .filter(crate::store::blocks_through_target)
            .map(|d| d.depends_on_id)
            .collect();
        let reason = if resolved.is_empty() {
            "no blocking dependencies".to_string()
        } else {
            format!("{} blocker(s) resolved", resolved.len())
        };
        ready.push(ReadyItem { summary, reason, resolved_blockers: resolved });
    }
    let mut blocked = Vec::new();
    let (entries, _) = reader.blocked(None, 0)?;
    for entry in entries {
        let mut blockers = Vec::new();
        for id in &entry.blocked_by {
            let found = reader.view().issue(id)?;
            blockers.push(BlockerInfo {
                id: id.to_string(),
                title: found.as_ref().map(|i| i.title.clone()).unwrap_or_default(),
                status: found.as_ref().map(|i| i.status.to_string()).unwrap_or_default(),
                priority: found.as_ref().map_or(0, |i| i.priority),
            });
        }
        blocked.push(BlockedItem {
            summary: entry.summary,
            blocked_by_count: entry.blocked_by_count,
            blocked_by: blockers,
        });
    }
    let cycles = reader.cycles()?;
    let summary = serde_json::json!({
        "total_ready": ready.len(),
        "total_blocked": blocked.len(),
        "cycle_count": cycles.len(),
    });
    let explanation = Explanation { ready, blocked, cycles, summary };
    ctx.out.emit(&explanation, || render_explanation(&explanation));
    Ok(())
}

fn render_explanation(e: &Explanation) -> String {
    let mut lines = vec![String::new(), "📊 Ready Work Explanation".to_string(), String::new()];
    if e.ready.is_empty() {
        lines.push("○ No ready work\n".into());
    } else {
        lines.push(format!("● Ready ({} issues):\n", e.ready.len()));
    }
    for item in &e.ready {
        let issue = &item.summary.issue;
        lines.push(format!("  {} [P{}] {}", issue.id, issue.priority, printable(&issue.title)));
        lines.push(format!("    Reason: {}", item.reason));
        if !item.resolved_blockers.is_empty() {
            lines.push(format!("    Resolved blockers: {}", item.resolved_blockers.join(", ")));
        }
        if item.summary.dependent_count > 0 {
            lines.push(format!("    Unblocks: {} issue(s)", item.summary.dependent_count));
        }
        lines.push(String::new());
    }
    if !e.blocked.is_empty() {
        lines.push(format!("● Blocked ({} issues):\n", e.blocked.len()));
    }
    for item in &e.blocked {
        let issue = &item.summary.issue;
        lines.push(format!("  {} [P{}] {}", issue.id, issue.priority, printable(&issue.title)));
        for b in &item.blocked_by {
            lines.push(format!(
                "    ← blocked by {}: {} [{}]",
                b.id,
                printable(&b.title),
                b.status
            ));
        }
        lines.push(String::new());
    }
    if !e.cycles.is_empty() {
        lines.push(format!("⚠ Cycles detected ({}):\n", e.cycles.len()));
        for cycle in &e.cycles {
            lines.push(format!("  {} → {}", cycle.join(" → "), cycle[0]));
        }
        lines.push(String::new());
    }
    let mut summary = format!("─ Summary: {} ready, {} blocked", e.ready.len(), e.blocked.len());
    if !e.cycles.is_empty() {
        summary.push_str(&format!(", {} cycle(s)", e.cycles.len()));
    }
    lines.push(summary);
    lines.join("\n")
}

#[derive(Debug, clap::Args)]
pub struct BlockedArgs {
    /// Only descendants of this issue.
    #[arg(long)]
    pub parent: Option<String>,
}

pub fn cmd_blocked(ctx: &BdContext, args: BlockedArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let parent = args.parent.as_deref().map(|p| reader.resolve(p)).transpose()?;
    // bd blocked has no limit: it prints every blocked issue.
    let (blocked, _) = reader.blocked(parent.as_deref(), 0)?;
    ctx.out.emit(&blocked, || format!("\n{}", fleet::render_blocked(&blocked)));
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Every issue (the default; accepted as beads has it).
    #[arg(long)]
    pub all: bool,
    /// Only the issues assigned to you (the actor).
    #[arg(long)]
    pub assigned: bool,
    /// Accepted: fleet reports no git activity (beads 1.0.5 leaves `recent_activity` out too).
    #[arg(long)]
    pub no_activity: bool,
}

/// `bd stats --json` as beads writes it: the counters under `summary`. beads 1.0.5 leaves
/// `recent_activity` out (its git-history source is gone), and so does fleet.
#[derive(Serialize)]
struct StatusOutput {
    summary: Stats,
}

pub fn cmd_stats(ctx: &BdContext, args: StatsArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let now = ctx.require_store()?.now();
    let stats = if args.assigned {
        assigned_stats(&reader, ctx.actor(), now)?
    } else {
        reader.stats(now)?
    };
    let output = StatusOutput { summary: stats };
    ctx.out.emit(&output, || format!("\n{}", fleet::render_stats(&output.summary)));
    Ok(())
}

/// `stats --assigned`: the status counts and ready work of the actor's issues only, as
/// beads counts them (no lead time, pins or epics).
fn assigned_stats(reader: &Reader, actor: &str, now: Timestamp) -> Result<Stats, CliError> {
    let filter =
        ListFilter { all: true, assignee: Some(actor.to_string()), ..ListFilter::default() };
    let (issues, _) = reader.list(&filter)?;
    let mut stats = Stats { total_issues: issues.len() as u64, ..Stats::default() };
    for summary in &issues {
        match summary.issue.status {
            Status::Open => stats.open_issues += 1,
            Status::InProgress => stats.in_progress_issues += 1,
            Status::Blocked => stats.blocked_issues += 1,
            Status::Deferred => stats.deferred_issues += 1,
            Status::Closed => stats.closed_issues += 1,
            _ => {}
        }
    }
    let ready =
        ReadyFilter { assignee: Some(actor.to_string()), limit: 0, ..ReadyFilter::default() };
    stats.ready_issues = reader.ready(&ready, now)?.issues.len() as u64;
    Ok(stats)
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Text to find in ids, titles and descriptions (case-insensitive). May be left out when
    /// a filter flag (--desc-contains, --no-assignee…) says what to find.
    pub query: Option<String>,
    /// The query, as a flag.
    #[arg(long = "query", value_name = "TEXT")]
    pub query_flag: Option<String>,
    #[command(flatten)]
    pub filter: ListFilterArgs,
    #[command(flatten)]
    pub extra: ExtraFilterArgs,
    /// Several lines per issue.
    #[arg(long)]
    pub long: bool,
}

pub fn cmd_search(ctx: &BdContext, args: SearchArgs) -> Result<(), CliError> {
    let query = args.query.clone().or(args.query_flag.clone()).filter(|q| !q.trim().is_empty());
    // beads 1.0.5 requires the text; a search by filters alone (gastown's
    // `search --desc-contains X`) lists what the filters match.
    if query.is_none() && args.extra.is_empty() {
        return Err(CliError::new("search query is required")
            .with_hint("bd search \"login\", or a filter such as --desc-contains"));
    }
    let filter = args.filter.to_filter(query.clone()).map_err(CliError::message_only)?;
    let query = query.unwrap_or_default();
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let (issues, total) = filtered_list(ctx, &reader, filter, &args.extra, None)?;
    ctx.out.emit(&issues, || {
        if issues.is_empty() {
            return format!("No issues found matching '{query}'");
        }
        let mut lines =
            vec![format!("Found {} issues matching '{query}':", issues.len()), String::new()];
        if args.long {
            lines.push(issues.iter().map(long_entry).collect::<Vec<_>>().join("\n\n"));
            return lines.join("\n");
        }
        lines.extend(issues.iter().map(|s| list_line(&s.issue)));
        lines.join("\n")
    });
    if total > issues.len() {
        ctx.out.note(&format!(
            "\nShowing {} of {total} matches. Use --limit 0 for all.",
            issues.len()
        ));
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct CountArgs {
    #[command(flatten)]
    pub filter: ListFilterArgs,
    #[command(flatten)]
    pub extra: ExtraFilterArgs,
    /// Count per status.
    #[arg(long)]
    pub by_status: bool,
    /// Count per type.
    #[arg(long)]
    pub by_type: bool,
    /// Count per priority.
    #[arg(long)]
    pub by_priority: bool,
    /// Count per assignee.
    #[arg(long)]
    pub by_assignee: bool,
    /// Count per label (an issue counts once under each of its labels; the total counts it
    /// once).
    #[arg(long)]
    pub by_label: bool,
}

/// What `count` prints: `{"count"}` alone, or with a `--by-*` flag beads' `{"total",
/// "groups"}`.
struct Counts {
    count: usize,
    groups: Vec<Group>,
}

impl Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if self.groups.is_empty() {
            map.serialize_entry("count", &self.count)?;
        } else {
            map.serialize_entry("total", &self.count)?;
            map.serialize_entry("groups", &self.groups)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Group {
    group: String,
    count: usize,
}

impl Group {
    fn of(group: String, count: u64) -> Group {
        Group { group, count: usize::try_from(count).unwrap_or(usize::MAX) }
    }
}

pub fn cmd_count(ctx: &BdContext, args: CountArgs) -> Result<(), CliError> {
    let mut filter = args.filter.to_filter(None).map_err(CliError::message_only)?;
    // Counting is about every issue that matches, closed ones included unless filtered.
    if filter.statuses.is_empty() {
        filter.all = true;
    }
    filter.limit = 0;
    let key: Option<fn(&RowFacts) -> String> = if args.by_status {
        Some(|i| i.status.to_string())
    } else if args.by_type {
        Some(|i| i.issue_type.clone())
    } else if args.by_priority {
        Some(|i| format!("P{}", i.priority))
    } else if args.by_assignee {
        Some(|i| if i.assignee.is_empty() { "(unassigned)".into() } else { i.assignee.clone() })
    } else {
        None
    };
    let store = ctx.open_store()?;
    let reader = store.read()?;
    if args.by_label {
        let (issues, _) = filtered_list(ctx, &reader, filter, &args.extra, Some(&keep_all))?;
        let mut names: Vec<String> = Vec::new();
        for summary in &issues {
            if summary.issue.labels.is_empty() {
                names.push("(no labels)".into());
            }
            names.extend(summary.issue.labels.iter().cloned());
        }
        print_counts(ctx, &Counts { count: issues.len(), groups: grouped(names) });
        return Ok(());
    }
    if args.extra.is_empty()
        && (key.is_none() || args.by_status)
        && let Some(totals) = reader.status_totals(&filter)?
    {
        let mut groups: Vec<Group> = Vec::new();
        if args.by_status {
            groups = totals.iter().map(|(s, n)| Group::of(s.to_string(), *n)).collect();
            groups.sort_by(|a, b| a.group.cmp(&b.group));
        }
        let count = totals.iter().map(|(_, n)| usize::try_from(*n).unwrap_or(usize::MAX)).sum();
        print_counts(ctx, &Counts { count, groups });
        return Ok(());
    }
    let mut total = 0;
    let mut names: Vec<String> = Vec::new();
    let mut tally = |row: &RowFacts| {
        total += 1;
        if let Some(key) = key {
            names.push(key(row));
        }
    };
    let indexed = args.extra.is_empty()
        && reader.visit_list(&filter, &mut |_, row| {
            tally(row);
            true
        })?;
    if !indexed {
        let (issues, _) = filtered_list(ctx, &reader, filter, &args.extra, Some(&keep_all))?;
        issues.iter().for_each(|s| tally(&RowFacts::of(&s.issue)));
    }
    print_counts(ctx, &Counts { count: total, groups: grouped(names) });
    Ok(())
}

/// How many times each name occurs, by name.
fn grouped(mut names: Vec<String>) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    names.sort();
    for name in names {
        match groups.last_mut() {
            Some(group) if group.group == name => group.count += 1,
            _ => groups.push(Group { group: name, count: 1 }),
        }
    }
    groups
}

fn print_counts(ctx: &BdContext, counts: &Counts) {
    ctx.out.emit(counts, || {
        if counts.groups.is_empty() {
            return counts.count.to_string();
        }
        let mut lines = vec![format!("Total: {}", counts.count), String::new()];
        lines.extend(counts.groups.iter().map(|g| format!("{}: {}", g.group, g.count)));
        lines.join("\n")
    });
}

#[derive(Debug, clap::Args)]
pub struct ChildrenArgs {
    /// The parent issue.
    pub id: String,
}

pub fn cmd_children(ctx: &BdContext, args: ChildrenArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let parent = reader.resolve(&args.id)?;
    let mut children = Vec::new();
    for (child, kind) in reader.dependents(&parent)? {
        if kind == dep_type::PARENT_CHILD
            && let Some(issue) = reader.issue(&child)?
        {
            children.push(reader.summary(issue)?);
        }
    }
    children.sort_by(|a, b| a.issue.id.cmp(&b.issue.id));
    ctx.out.emit(&children, || {
        if children.is_empty() {
            return format!("{parent} has no children");
        }
        let mut lines = vec![format!("Children of {parent} ({}):", children.len())];
        lines.extend(children.iter().map(|s| format!("  {}", list_line(&s.issue))));
        lines.join("\n")
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct StaleArgs {
    /// Not updated for this many days.
    #[arg(short, long, default_value_t = 30)]
    pub days: i64,
    /// Only this status (default: every status but closed).
    #[arg(short, long)]
    pub status: Option<String>,
    /// At most this many issues (0 = all).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
}

/// `days` days before `now`, saturating at the ends of time: `--days` is user input, and a
/// cutoff before the earliest instant means nothing is stale (and after the last, everything).
fn stale_cutoff(now: Timestamp, days: i64) -> Timestamp {
    let span = jiff::SignedDuration::from_secs(days.saturating_mul(24 * 60 * 60));
    now.checked_sub(span).unwrap_or(if days > 0 { Timestamp::MIN } else { Timestamp::MAX })
}

pub fn cmd_stale(ctx: &BdContext, args: StaleArgs) -> Result<(), CliError> {
    let now = ctx.require_store()?.now();
    let cutoff = stale_cutoff(now, args.days);
    let statuses = args.status.as_deref().map(Status::parse_user).transpose()?;
    let filter = ListFilter {
        statuses: statuses.into_iter().collect(),
        updated_before: Some(cutoff),
        sort: ListSort::Updated,
        reverse: true,
        limit: args.limit,
        ..ListFilter::default()
    };
    let store = ctx.open_store()?;
    let (issues, _) = store.read()?.list(&filter)?;
    ctx.out.emit(&issues, || {
        if issues.is_empty() {
            return format!("✨ No stale issues (none untouched for {} days)", args.days);
        }
        let mut lines =
            vec![format!("⏰ Stale issues ({} not updated in {} days):", issues.len(), args.days)];
        for s in &issues {
            let days = (now - s.issue.updated_at).get_hours() / 24;
            lines.push(format!("  {} (updated {days} days ago)", list_line(&s.issue)));
        }
        lines.join("\n")
    });
    Ok(())
}

#[derive(Debug, clap::Subcommand)]
pub enum EpicCommand {
    /// Each open epic with how many of its children are closed.
    Status {
        /// Only epics whose children are all closed.
        #[arg(long)]
        eligible_only: bool,
    },
}

#[derive(Serialize)]
struct EpicStatus {
    epic: IssueSummary,
    total_children: usize,
    closed_children: usize,
    eligible_for_close: bool,
}

pub fn cmd_epic(ctx: &BdContext, command: EpicCommand) -> Result<(), CliError> {
    let EpicCommand::Status { eligible_only } = command;
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let filter = ListFilter { types: vec!["epic".into()], ..ListFilter::default() };
    let mut epics = Vec::new();
    for summary in reader.list(&filter)?.0 {
        let mut total = 0;
        let mut closed = 0;
        for (child, kind) in reader.dependents(&summary.issue.id)? {
            if kind == dep_type::PARENT_CHILD {
                total += 1;
                closed +=
                    usize::from(reader.issue(&child)?.is_some_and(|c| c.status == Status::Closed));
            }
        }
        let eligible = total > 0 && closed == total;
        if eligible || !eligible_only {
            epics.push(EpicStatus {
                epic: summary,
                total_children: total,
                closed_children: closed,
                eligible_for_close: eligible,
            });
        }
    }
    ctx.out.emit(&epics, || {
        if epics.is_empty() {
            return "No open epics found".to_string();
        }
        let mut lines = Vec::new();
        for e in &epics {
            let mark = if e.eligible_for_close { "✓" } else { "○" };
            lines.push(format!("{mark} {}", id_title(&e.epic.issue)));
            lines.push(format!(
                "   Progress: {}/{} children closed{}",
                e.closed_children,
                e.total_children,
                if e.eligible_for_close { " (eligible for closure)" } else { "" }
            ));
        }
        lines.join("\n")
    });
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The query: comparisons joined by AND, OR, NOT and parentheses, e.g.
    /// "status=open AND priority<2", "updated>7d AND label=backend", "assignee=none".
    #[arg(required = true, num_args = 1..)]
    pub expression: Vec<String>,
    /// At most this many issues (0 = all).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
    /// Include closed issues (they are left out unless the query names a status).
    #[arg(short, long)]
    pub all: bool,
    /// Several lines per issue.
    #[arg(long)]
    pub long: bool,
    #[arg(long, value_enum, default_value_t = ListSort::Priority)]
    pub sort: ListSort,
    /// Reverse the order.
    #[arg(short, long)]
    pub reverse: bool,
    /// Only parse the query and print how it was read.
    #[arg(long)]
    pub parse_only: bool,
}

/// `bd query`: the issues a query in beads' little language matches (see `query_lang`).
pub fn cmd_query(ctx: &BdContext, args: QueryArgs) -> Result<(), CliError> {
    let text = args.expression.join(" ");
    let expr = query_lang::parse(&text)?;
    if args.parse_only {
        ctx.out.text(&format!("Parsed query: {expr:?}"));
        return Ok(());
    }
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let now = ctx.require_store()?.now();
    let filter = ListFilter {
        all: args.all || expr.mentions_status(),
        sort: args.sort,
        reverse: args.reverse,
        limit: 0,
        ..ListFilter::default()
    };
    let mut matched = Vec::new();
    for summary in reader.list(&filter)?.0 {
        if expr.matches(&summary, now)? {
            matched.push(summary);
        }
        if args.limit != 0 && matched.len() == args.limit {
            break;
        }
    }
    ctx.out.emit(&matched, || {
        if matched.is_empty() {
            return format!("No issues match: {text}");
        }
        if args.long {
            return matched.iter().map(long_entry).collect::<Vec<_>>().join("\n\n");
        }
        let mut lines = vec![format!("Found {} issues:", matched.len())];
        lines.extend(matched.iter().map(|s| list_line(&s.issue)));
        lines.join("\n")
    });
    Ok(())
}
