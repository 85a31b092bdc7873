//! The read-only views of the queue: `list`, `ready`, `blocked`, `search`, `stats` (whose
//! `--agents` view of the agents' ledgers is `agent_stats`).

use super::context::Context;
use super::doctor::report_damaged;
use super::error::CliError;
use super::issue::split_csv;
use super::output::{list_line, printable, priority_badge};
use super::style::{Styled, Tone};
use crate::model::{Issue, SortOrder, Status, parse_issue_type, parse_priority};
use crate::store::{BlockedIssue, ListFilter, ListSort, ReadyFilter, Stats};
use crate::supervisor::stats::GroupBy;

/// Filters shared by `list` and `search`.
#[derive(Debug, clap::Args)]
pub struct ListFilterArgs {
    /// Only these statuses (comma-separated; `all` for every status).
    #[arg(short, long, alias = "state")]
    pub status: Vec<String>,
    #[arg(short, long)]
    pub priority: Option<String>,
    #[arg(short = 't', long = "type")]
    pub issue_type: Vec<String>,
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// Only issues with all of these labels.
    #[arg(short, long)]
    pub label: Vec<String>,
    /// Include closed issues.
    #[arg(long)]
    pub all: bool,
    /// At most this many issues (0 = all).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
    #[arg(long, value_enum, default_value_t = ListSort::Priority)]
    pub sort: ListSort,
    /// Reverse the order.
    #[arg(short, long)]
    pub reverse: bool,
}

impl ListFilterArgs {
    pub(super) fn to_filter(&self, text: Option<String>) -> Result<ListFilter, CliError> {
        // `--status all` (as beads has it) is `--all`: every status, closed ones included.
        let (all, statuses): (Vec<String>, Vec<String>) =
            split_csv(&self.status).into_iter().partition(|s| s.eq_ignore_ascii_case("all"));
        Ok(ListFilter {
            statuses: statuses.iter().map(|s| Status::parse_user(s)).collect::<Result<_, _>>()?,
            all: self.all || !all.is_empty(),
            priority: self.priority.as_deref().map(parse_priority).transpose()?,
            types: split_csv(&self.issue_type)
                .iter()
                .map(|t| parse_issue_type(t))
                .collect::<Result<_, _>>()?,
            assignee: self.assignee.clone(),
            labels: split_csv(&self.label),
            text,
            updated_before: None,
            sort: self.sort,
            reverse: self.reverse,
            limit: self.limit,
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: ListFilterArgs,
}

pub fn cmd_list(ctx: &Context, args: ListArgs) -> Result<(), CliError> {
    let filter = args.filter.to_filter(None)?;
    emit_list(ctx, &filter, "No issues found")
}

fn emit_list(ctx: &Context, filter: &ListFilter, empty: &str) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let (issues, total) = reader.list(filter)?;
    ctx.out.emit(&issues, || {
        if ctx.out.terse {
            return super::terse::issue_lines(issues.iter().map(|s| &s.issue));
        }
        if issues.is_empty() {
            return empty.to_string();
        }
        issues.iter().map(|s| list_line(&s.issue)).collect::<Vec<_>>().join("\n")
    });
    if total > issues.len() {
        ctx.out
            .note(&format!("Showing {} of {total} issues (use --limit 0 for all)", issues.len()));
    }
    report_damaged(ctx, reader.damaged())
}

#[derive(Debug, clap::Args)]
pub struct ReadyArgs {
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// Only unassigned issues.
    #[arg(short, long)]
    pub unassigned: bool,
    #[arg(short, long)]
    pub priority: Option<String>,
    /// Only issues with all of these labels.
    #[arg(short, long)]
    pub label: Vec<String>,
    /// Only issues with at least one of these labels.
    #[arg(long)]
    pub label_any: Vec<String>,
    /// Only these types (this also allows the types ready leaves out by default).
    #[arg(short = 't', long = "type")]
    pub issue_type: Vec<String>,
    #[arg(long)]
    pub exclude_type: Vec<String>,
    /// Only descendants of this issue.
    #[arg(long)]
    pub parent: Option<String>,
    /// Include issues deferred to a later time.
    #[arg(long)]
    pub include_deferred: bool,
    #[arg(long)]
    pub include_ephemeral: bool,
    /// Order: priority (then newest), oldest, or hybrid (recent by priority, then by age).
    #[arg(short, long, default_value = "priority")]
    pub sort: SortOrder,
    /// At most this many issues (0 = all).
    #[arg(short = 'n', long, default_value_t = 100)]
    pub limit: usize,
}

impl ReadyArgs {
    pub(super) fn to_filter(&self) -> Result<ReadyFilter, CliError> {
        Ok(ReadyFilter {
            assignee: self.assignee.clone(),
            unassigned: self.unassigned,
            priority: self.priority.as_deref().map(parse_priority).transpose()?,
            labels: split_csv(&self.label),
            labels_any: split_csv(&self.label_any),
            types: split_csv(&self.issue_type)
                .iter()
                .map(|t| parse_issue_type(t))
                .collect::<Result<_, _>>()?,
            exclude_types: split_csv(&self.exclude_type),
            parent: self.parent.clone(),
            include_deferred: self.include_deferred,
            include_ephemeral: self.include_ephemeral,
            sort: self.sort,
            limit: self.limit,
            ..ReadyFilter::default()
        })
    }
}

pub fn cmd_ready(ctx: &Context, args: ReadyArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let mut filter = args.to_filter()?;
    if let Some(parent) = &filter.parent {
        filter.parent = Some(reader.resolve(parent)?);
    }
    let page = reader.ready(&filter, ctx.now())?;
    let summaries = if ctx.out.json { reader.ready_summaries(&page)? } else { Vec::new() };
    ctx.out.emit_styled(&summaries, || {
        if ctx.out.terse {
            return Styled::from(super::terse::issue_lines(&page.issues).as_str());
        }
        if page.issues.is_empty() {
            let any_open = reader
                .list(&ListFilter {
                    statuses: vec![Status::Open],
                    limit: 1,
                    ..ListFilter::default()
                })
                .map(|(_, total)| total > 0)
                .unwrap_or(false);
            return Styled::from(if any_open {
                "✨ No ready work found (all issues have blocking dependencies)"
            } else {
                "✨ No open issues"
            });
        }
        render_ready(&page.issues)
    });
    if page.truncated {
        ctx.out.note(&format!(
            "Showing the first {} ready issues; more are ready (use --limit 0 for all)",
            page.issues.len()
        ));
    }
    report_damaged(ctx, reader.damaged())
}

/// The ready list as people read it, the priority badges coloured (see [`priority_tone`]).
pub(super) fn render_ready(issues: &[Issue]) -> Styled {
    let mut text = Styled::new();
    text.plain(&format!("📋 Ready work ({} issues with no active blockers):\n", issues.len()));
    for (n, issue) in issues.iter().enumerate() {
        text.plain(&format!("\n{}. ", n + 1));
        let badge = priority_badge(issue.priority);
        match priority_tone(issue.priority) {
            Some(tone) => text.tone(tone, &badge),
            None => text.plain(&badge),
        };
        text.plain(&format!(
            " [{}] {}: {}",
            printable(&issue.issue_type),
            issue.id,
            printable(&issue.title)
        ));
        if let Some(minutes) = issue.estimated_minutes {
            text.plain(&format!("\n   Estimate: {minutes} min"));
        }
        if !issue.assignee.is_empty() {
            text.plain(&format!("\n   Assignee: {}", printable(&issue.assignee)));
        }
    }
    text
}

/// The colour of a priority badge: P0 red, P1 yellow, the rest plain.
fn priority_tone(priority: u8) -> Option<Tone> {
    match priority {
        0 => Some(Tone::Bad),
        1 => Some(Tone::Warn),
        _ => None,
    }
}

#[derive(Debug, clap::Args)]
pub struct BlockedArgs {
    /// Only descendants of this issue.
    #[arg(long)]
    pub parent: Option<String>,
    /// At most this many issues (0 = all).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub limit: usize,
}

pub fn cmd_blocked(ctx: &Context, args: BlockedArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let parent = args.parent.as_deref().map(|p| reader.resolve(p)).transpose()?;
    let (blocked, total) = reader.blocked(parent.as_deref(), args.limit)?;
    let waiting = if parent.is_none() { status_blocked(&reader)? } else { Vec::new() };
    ctx.out.emit(&blocked, || {
        if blocked.is_empty() && !waiting.is_empty() {
            render_waiting(&waiting, "✨ No issues blocked by dependencies".to_owned())
        } else {
            render_waiting(&waiting, render_blocked(&blocked))
        }
    });
    if total > blocked.len() {
        ctx.out.note(&format!(
            "Showing {} of {total} blocked issues (use --limit 0 for all)",
            blocked.len()
        ));
    }
    report_damaged(ctx, reader.damaged())
}

/// Issues whose status is blocked (by an agent's question, the supervisor, or a person), with
/// why: `fleet blocked` shows them in a section of their own, `--json` keeps bd's shape.
fn status_blocked(reader: &crate::store::Reader) -> Result<Vec<(Issue, String)>, CliError> {
    let filter = ListFilter { statuses: vec![Status::Blocked], ..ListFilter::default() };
    let (issues, _) = reader.list(&filter)?;
    let mut out = Vec::new();
    for summary in issues {
        let issue = summary.issue;
        let why = match super::qa::question_of(&issue) {
            Some(question) => format!("QUESTION: {question}"),
            None => blocked_reason(&reader.comments(&issue.id)?),
        };
        out.push((issue, why));
    }
    Ok(out)
}

/// Why a task is blocked, from its comments: the newest, passing over the supervisor's notes
/// of an agent it stopped because of that change (`fleet kill`'s own comment says why).
fn blocked_reason(comments: &[crate::model::Comment]) -> String {
    let first_line =
        |c: &crate::model::Comment| c.text.lines().next().unwrap_or_default().to_owned();
    comments
        .iter()
        .rev()
        .find(|c| !crate::supervisor::outcome::is_stopped_note(&c.text))
        .or(comments.last())
        .map_or_else(|| "no reason recorded".to_owned(), first_line)
}

/// `text`, then the section of issues whose status is blocked (when there are any).
fn render_waiting(waiting: &[(Issue, String)], text: String) -> String {
    if waiting.is_empty() {
        return text;
    }
    let mut lines = vec![
        text,
        String::new(),
        format!("⏸ Status blocked, waiting for a human ({}):", waiting.len()),
        String::new(),
    ];
    for (issue, why) in waiting {
        lines.push(format!(
            "{} {}: {}",
            priority_badge(issue.priority),
            issue.id,
            printable(&issue.title)
        ));
        lines.push(format!("  Why: {}", printable(why)));
    }
    lines.join("\n")
}

/// The text of `blocked`, shared by both personalities.
pub(super) fn render_blocked(blocked: &[BlockedIssue]) -> String {
    if blocked.is_empty() {
        return "✨ No blocked issues".to_string();
    }
    let mut lines = vec![format!("🚫 Blocked issues ({}):", blocked.len()), String::new()];
    for entry in blocked {
        let issue = &entry.summary.issue;
        let title = printable(&issue.title);
        lines.push(format!("{} {}: {title}", priority_badge(issue.priority), issue.id));
        lines.push(format!(
            "  Blocked by {} open dependencies: [{}]",
            entry.blocked_by_count,
            entry.blocked_by.join(", ")
        ));
    }
    lines.join("\n")
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// Text to find in ids, titles and descriptions (case-insensitive).
    pub query: Option<String>,
    #[command(flatten)]
    pub filter: ListFilterArgs,
}

pub fn cmd_search(ctx: &Context, args: SearchArgs) -> Result<(), CliError> {
    let hint = "fleet search \"login\"";
    let query = match args.query.clone() {
        None => return Err(CliError::usage("search query is required").with_hint(hint)),
        Some(query) if query.trim().is_empty() => {
            return Err(CliError::new("search query is required").with_hint(hint));
        }
        Some(query) => query,
    };
    let filter = args.filter.to_filter(Some(query.clone()))?;
    emit_list(ctx, &filter, &format!("No issues found matching {query:?}"))
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Statistics of the agents instead of the queue: tokens, cost, attempts and closed tasks
    /// from the task ledgers, and how long rate limits paused coders and accounts.
    #[arg(long)]
    pub agents: bool,
    /// With --agents or --overhead: only attempts started since then — a duration back from
    /// now (7d, 24h, 30m, 2w) or a date (2025-01-15, today, RFC 3339).
    #[arg(long, value_name = "DURATION|DATE")]
    pub since: Option<String>,
    /// With --agents: what to group the attempts by.
    #[arg(long, requires = "agents", value_enum, default_value_t = GroupBy::Coder)]
    pub by: GroupBy,
    /// The fixed context agents carry: per coder, account and directory, the prompt of each
    /// attempt's first model request (instruction files, tool lists, skills), costliest first.
    #[arg(long, conflicts_with = "agents")]
    pub overhead: bool,
    /// The quality canary: per coder·model and account, the latest attempts' failure rate,
    /// requeue rate and cost per closed task against their baselines, and which are held
    /// (`[canary]` in runtime.toml).
    #[arg(long, conflicts_with_all = ["agents", "overhead", "since"])]
    pub canaries: bool,
}

/// `fleet stats`: bd's counts (whose `blocked_issues` counts dependency-blocked issues), and
/// the issues whose status is blocked.
#[derive(Debug, serde::Serialize)]
struct FleetStats {
    #[serde(flatten)]
    stats: Stats,
    status_blocked_issues: usize,
}

pub fn cmd_stats(ctx: &Context, args: StatsArgs) -> Result<(), CliError> {
    if args.canaries {
        return super::canaries::cmd_canaries(ctx);
    }
    if args.overhead {
        return super::overhead::cmd_overhead(ctx, args.since.as_deref());
    }
    if args.since.is_some() && !args.agents {
        return Err(CliError::usage(
            "--since counts attempts: give it with --agents or --overhead",
        ));
    }
    if args.agents {
        return super::agent_stats::cmd_agent_stats(ctx, args.since.as_deref(), args.by);
    }
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let mut s = reader.stats(ctx.now())?;
    s.damaged = reader.damaged();
    let filter = ListFilter { statuses: vec![Status::Blocked], ..ListFilter::default() };
    let status_blocked = reader.list(&filter)?.1;
    let shown = FleetStats { stats: s.clone(), status_blocked_issues: status_blocked };
    ctx.out.emit(&shown, || {
        let line = format!(
            "  Status blocked: {status_blocked} (waiting for a human; `fleet blocked` says why)"
        );
        let mut lines: Vec<String> = render_stats(&s).lines().map(str::to_owned).collect();
        if status_blocked > 0 {
            let at = lines.iter().position(|l| l.starts_with("  Blocked:"));
            lines.insert(at.map_or(lines.len(), |i| i + 1), line);
        }
        lines.join("\n")
    });
    report_damaged(ctx, s.damaged.clone())
}

/// The text of `stats`, shared by both personalities.
pub(super) fn render_stats(s: &Stats) -> String {
    [
        "📊 Issue Database Status".to_string(),
        String::new(),
        format!("  Total Issues:  {}", s.total_issues),
        format!("  Open:          {}", s.open_issues),
        format!("  In Progress:   {}", s.in_progress_issues),
        format!("  Closed:        {}", s.closed_issues),
        format!("  Blocked:       {}", s.blocked_issues),
        format!("  Deferred:      {}", s.deferred_issues),
        format!("  Pinned:        {}", s.pinned_issues),
        format!("  Ready:         {}", s.ready_issues),
        format!("  Epics eligible for closure: {}", s.epics_eligible_for_closure),
        format!("  Avg lead time: {:.1} hours", s.average_lead_time_hours),
    ]
    .join("\n")
}
