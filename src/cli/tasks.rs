//! `fleet tasks [--all] [--json] [--watch]`: what every agent is doing and what it costs.
//!
//! The view is read from the store (tasks in progress and their leases, the supervisors'
//! registrations and heartbeats, the ready and blocked counts) and from the task files
//! (`ledger.json` for tokens, context and cost; `events.jsonl`'s time for idleness;
//! `state/pauses.json` and `state/holds.json` for pauses of coders and of their accounts), so
//! it works from any shell while `fleet run` works elsewhere. Nothing here writes. A task on
//! one of its coder's accounts shows as `claude@work·sonnet`; the table keeps to 80 columns
//! when it can, leaving out STARTED (ELAPSED says the same) when a row would not fit.
//!
//! `--watch` redraws the view in place every second on a terminal (the alternate screen,
//! restored on exit; keys: `q` or Ctrl-C quits, `j`/`k`, the arrows, space and PgUp/PgDn
//! scroll the rows under a header that stays); without a terminal it prints once. On a
//! terminal the view fits its width: the header wraps and the least needed columns go first.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use super::signals::Blocked as BlockedSignals;
use super::style::{Styled, Tone};
use crate::config::RuntimeConfig;
use crate::model::{Issue, Status};
use crate::store::{ListFilter, Reader, ReadyFilter};
use crate::supervisor::accounts;
use crate::supervisor::hold::Holds;
use crate::supervisor::lease::{self, Registration};
use crate::supervisor::ledger::{AttemptUsage, Ledger};
use crate::supervisor::pause::{Pauses, Scope};
use crate::supervisor::taskdir::task_ids;

#[derive(Debug, clap::Args)]
pub struct TasksArgs {
    /// Also list tasks that are not running now but have run (their latest attempt).
    #[arg(long)]
    pub all: bool,
    /// Redraw every second until q or Ctrl-C (on a terminal; otherwise print once).
    #[arg(long)]
    pub watch: bool,
}

/// The whole view.
#[derive(Debug, Serialize)]
pub struct TasksView {
    /// Live supervisors (an empty list: no supervisor running).
    pub supervisors: Vec<SupervisorRow>,
    pub running: usize,
    /// The sum of the live supervisors' `max_concurrent`.
    pub max_concurrent: usize,
    pub ready: u64,
    /// Issues blocked by their dependencies or with status blocked.
    pub blocked: u64,
    /// Cost of the attempts started today (local time), over every task.
    pub cost_today_usd: f64,
    pub pauses: Vec<PauseRow>,
    pub tasks: Vec<TaskRow>,
    /// Ready tasks whose working directory is not on this machine (`crate::place`): this
    /// machine's supervisor leaves them to others.
    pub not_here: Vec<NotHereRow>,
    /// What the view could not read (a broken holds file): on stderr once, or at the head of
    /// the watched screen.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// A ready task this machine cannot run, and why.
#[derive(Debug, Serialize)]
pub struct NotHereRow {
    pub id: String,
    pub title: String,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct SupervisorRow {
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub started_at: Timestamp,
    pub heartbeat: Timestamp,
    pub max_concurrent: usize,
}

/// A pause of spawning: the supervisor's (rate limit, fault) or a person's (`fleet pause`),
/// of a coder or of one of its accounts.
#[derive(Debug, Serialize)]
pub struct PauseRow {
    /// The coder, or `*` for every coder.
    pub coder: String,
    /// The coder's account, when only it is paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// `rate limit`, `not logged in`, … or `fleet pause`.
    pub cause: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
    pub detail: String,
}

/// One task.
#[derive(Debug, Serialize)]
pub struct TaskRow {
    pub id: String,
    pub title: String,
    pub status: String,
    /// An agent of a live supervisor works on it now.
    pub running: bool,
    pub coder: String,
    pub model: String,
    /// The coder's account the task runs (or last ran) on, when the coder has accounts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The coder and model are the configured defaults (not set on the task).
    pub default_coder: bool,
    pub default_model: bool,
    /// The supervisor running it (its lease's owner).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub supervisor: String,
    pub attempt: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_secs: Option<u64>,
    /// Seconds since the agent's last output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_secs: Option<u64>,
    /// The agent's CLI is retrying a failed request by itself (`HTTP 529`): it is waiting on
    /// its provider, not idle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrying: Option<String>,
    pub context_peak: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_pct: Option<f64>,
    /// This attempt's tokens and cost.
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Cost over every attempt of the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    pub cwd: String,
}

pub fn cmd_tasks(ctx: &Context, args: TasksArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    if args.watch && !ctx.out.json && std::io::stdout().is_terminal() {
        return watch(ctx, &home, args.all);
    }
    let mut view = gather(ctx, &home, args.all)?;
    for warning in std::mem::take(&mut view.warnings) {
        ctx.out.warn(&format!("warning: {warning}"));
    }
    let width = std::io::stdout().is_terminal().then(|| terminal_size().0);
    ctx.out.emit_styled(&view, || render(&view, ctx.now(), width).into_styled());
    Ok(())
}

/// Reads the store and the task files into a view.
pub fn gather(ctx: &Context, home: &Path, all: bool) -> Result<TasksView, CliError> {
    let now = ctx.now();
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let supervisors = lease::live_supervisors(&store, now)?;
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME)).unwrap_or_default();
    let stats = reader.stats(now)?;
    let blocked_status = count_status(&reader, Status::Blocked)?;
    let mut tasks = running_rows(&reader, home, &config, &supervisors, now)?;
    if all {
        tasks.extend(finished_rows(&reader, home, &config, &tasks, now)?);
    }
    let running = tasks.iter().filter(|t| t.running).count();
    let (holds, warnings) = holds_and_warnings(home);
    let not_here = not_here_rows(&reader, &config, now)?;
    Ok(TasksView {
        max_concurrent: supervisors.iter().map(|s| s.max_concurrent).sum(),
        supervisors: supervisors.iter().map(supervisor_row).collect(),
        running,
        ready: stats.ready_issues,
        blocked: stats.blocked_issues + blocked_status,
        cost_today_usd: cost_today(home, now),
        pauses: pause_rows(home, &config, &holds, now),
        tasks,
        not_here,
        warnings,
    })
}

/// How many ready tasks are checked for a place on this machine.
const NOT_HERE_CHECKED: usize = 500;

/// The ready tasks (the first [`NOT_HERE_CHECKED`]) whose working directory this machine
/// does not have, as its supervisor would find them (`crate::place`).
fn not_here_rows(
    reader: &Reader,
    config: &RuntimeConfig,
    now: Timestamp,
) -> Result<Vec<NotHereRow>, CliError> {
    let filter = ReadyFilter { limit: NOT_HERE_CHECKED, ..ReadyFilter::default() };
    let roots: Vec<String> = config.repo_roots.split(':').map(str::to_string).collect();
    let mut places = crate::place::Places::new(&roots, std::env::home_dir().as_deref());
    let mut rows = Vec::new();
    for issue in reader.ready(&filter, now)?.issues {
        if let Err(not_here) = places.resolve(&issue.fleet.cwd, issue.fleet.repo.as_ref()) {
            rows.push(NotHereRow { id: issue.id, title: issue.title, reason: not_here.0 });
        }
    }
    Ok(rows)
}

fn supervisor_row(reg: &Registration) -> SupervisorRow {
    SupervisorRow {
        name: reg.identity.name.clone(),
        host: reg.identity.host.clone(),
        pid: reg.identity.pid,
        started_at: reg.started_at,
        heartbeat: reg.heartbeat,
        max_concurrent: reg.max_concurrent,
    }
}

fn count_status(reader: &Reader, status: Status) -> Result<u64, CliError> {
    let filter = ListFilter { statuses: vec![status], ..ListFilter::default() };
    Ok(reader.list(&filter)?.1 as u64)
}

/// A row per task in progress under a supervisor's lease.
fn running_rows(
    reader: &Reader,
    home: &Path,
    config: &RuntimeConfig,
    supervisors: &[Registration],
    now: Timestamp,
) -> Result<Vec<TaskRow>, CliError> {
    let filter = ListFilter { statuses: vec![Status::InProgress], ..ListFilter::default() };
    let (issues, _) = reader.list(&filter)?;
    let mut rows: Vec<TaskRow> = issues
        .into_iter()
        .filter(|s| crate::supervisor::lease::live_lease(&s.issue).is_some())
        .map(|s| {
            let alive = crate::supervisor::lease::live_lease(&s.issue)
                .is_some_and(|l| supervisors.iter().any(|r| r.identity.instance == l.instance));
            task_row(&s.issue, home, config, alive, now)
        })
        .collect();
    rows.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
    Ok(rows)
}

/// Rows of tasks that have a task directory but are not among `shown`, latest first.
fn finished_rows(
    reader: &Reader,
    home: &Path,
    config: &RuntimeConfig,
    shown: &[TaskRow],
    now: Timestamp,
) -> Result<Vec<TaskRow>, CliError> {
    let mut rows = Vec::new();
    for id in task_ids(home) {
        if shown.iter().any(|row| row.id == id) {
            continue;
        }
        if let Some(issue) = reader.issue(&id)? {
            rows.push(task_row(&issue, home, config, false, now));
        }
    }
    rows.sort_by(|a, b| (b.started_at, &b.id).cmp(&(a.started_at, &a.id)));
    Ok(rows)
}

/// The task directory of `id` (never outside `tasks/`).
pub fn task_root(home: &Path, id: &str) -> Option<PathBuf> {
    crate::supervisor::taskdir::TaskDir::new(home, id).ok().map(|dir| dir.root)
}

/// The coder and model a task runs with, and whether each is the configured default.
pub struct Effective {
    pub coder: String,
    pub model: String,
    pub default_coder: bool,
    pub default_model: bool,
}

/// What `issue` runs (or would run) with: its lease's coder and model while it runs, else its
/// own, else the configured defaults.
pub fn effective(issue: &Issue, config: &RuntimeConfig) -> Effective {
    let lease = issue.fleet.lease.as_ref();
    let pick = |leased: Option<&str>, own: &str| {
        leased.filter(|v| !v.is_empty()).or(Some(own).filter(|v| !v.is_empty())).map(str::to_owned)
    };
    let coder = pick(lease.map(|l| l.coder.as_str()), &issue.fleet.coder)
        .unwrap_or_else(|| config.coder.clone());
    let default_model = config
        .registry()
        .ok()
        .and_then(|r| r.get(&coder).ok())
        .map(|c| config.effective_model(c.as_ref(), None))
        .unwrap_or_default();
    let model =
        pick(lease.map(|l| l.model.as_str()), &issue.fleet.model).unwrap_or(default_model.clone());
    Effective {
        default_coder: coder == config.coder,
        default_model: model == default_model,
        coder,
        model,
    }
}

/// What `fleet show` adds about a task's runs.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub coder: String,
    pub model: String,
    /// The account the task runs (or last ran) on, when its coder has accounts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub default_coder: bool,
    pub default_model: bool,
    pub cwd: String,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl RunInfo {
    /// The runs of `issue` as its task files and the config under `home` tell them.
    pub fn of(issue: &Issue, home: &Path) -> RunInfo {
        let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME)).unwrap_or_default();
        let ledger = task_root(home, &issue.id).as_deref().map(Ledger::load).unwrap_or_default();
        let totals = ledger.totals();
        let effective = effective(issue, &config);
        RunInfo {
            account: account_of(issue, ledger.last()),
            coder: effective.coder,
            model: effective.model,
            default_coder: effective.default_coder,
            default_model: effective.default_model,
            cwd: if issue.fleet.cwd.is_empty() {
                home.display().to_string()
            } else {
                issue.fleet.cwd.clone()
            },
            attempts: issue.fleet.attempts,
            last_outcome: ledger.last().and_then(|a| a.outcome.clone()),
            tokens_in: totals.tokens_in,
            tokens_out: totals.tokens_out,
            cost_usd: totals.cost_usd,
        }
    }

    /// The lines `fleet show` prints.
    pub fn lines(&self) -> Vec<String> {
        let default = |is: bool| if is { " (default)" } else { "" };
        let model = if self.model.is_empty() { "(the CLI's own)" } else { self.model.as_str() };
        let mut lines = vec![
            format!("Coder: {}{}", printable(&self.coder), default(self.default_coder)),
            format!("Model: {}{}", printable(model), default(self.default_model)),
        ];
        if let Some(account) = &self.account {
            lines.push(format!("Account: {}", printable(account)));
        }
        lines.push(format!("Working directory: {}", printable(&self.cwd)));
        if self.attempts > 0 {
            let last =
                self.last_outcome.as_deref().map(|o| format!(", last: {o}")).unwrap_or_default();
            lines.push(format!("Attempts: {}{last}", self.attempts));
            lines.push(format!(
                "Tokens: {} in / {} out · cost {}",
                tokens(self.tokens_in),
                tokens(self.tokens_out),
                cost(self.cost_usd)
            ));
        }
        lines
    }
}

fn task_row(
    issue: &Issue,
    home: &Path,
    config: &RuntimeConfig,
    running: bool,
    now: Timestamp,
) -> TaskRow {
    let root = task_root(home, &issue.id);
    let ledger = root.as_deref().map(Ledger::load).unwrap_or_default();
    let lease = issue.fleet.lease.as_ref();
    let usage = lease.and_then(|l| ledger.attempt(&l.attempt)).or_else(|| ledger.last());
    let started_at = lease.map(|l| l.since).or_else(|| usage.map(|u| u.started_at));
    let ended_at = if lease.is_some() { None } else { usage.and_then(|u| u.ended_at) };
    let elapsed_secs = started_at.map(|at| secs_between(at, ended_at.unwrap_or(now)));
    let idle_secs = lease.map(|l| {
        let last = root.as_deref().and_then(last_output).filter(|t| *t > l.since);
        secs_between(last.unwrap_or(l.since), now)
    });
    let effective = effective(issue, config);
    let zero = AttemptUsage::start(issue.fleet.attempts, "", &effective.coder, &effective.model);
    let usage = usage.unwrap_or(&zero);
    TaskRow {
        id: issue.id.clone(),
        title: issue.title.clone(),
        status: issue.status.to_string(),
        running,
        account: account_of(issue, Some(usage)),
        coder: effective.coder,
        model: effective.model,
        default_coder: effective.default_coder,
        default_model: effective.default_model,
        supervisor: lease.map(|l| l.owner.clone()).unwrap_or_default(),
        attempt: issue.fleet.attempts,
        started_at,
        elapsed_secs,
        idle_secs,
        retrying: if lease.is_some() { usage.retrying.clone() } else { None },
        context_peak: usage.context_peak,
        context_limit: usage.context_limit,
        context_pct: usage.context_pct(),
        tokens_in: usage.tokens_in,
        tokens_out: usage.tokens_out,
        cost_usd: usage.cost_usd,
        total_cost_usd: ledger.totals().cost_usd,
        cwd: if issue.fleet.cwd.is_empty() {
            home.display().to_string()
        } else {
            issue.fleet.cwd.clone()
        },
    }
}

/// The account `issue` runs on (its lease's), else the one its attempt `usage` ran on.
fn account_of(issue: &Issue, usage: Option<&AttemptUsage>) -> Option<String> {
    let leased = issue.fleet.lease.as_ref().map(|lease| lease.account.as_str());
    leased.or(usage.map(|u| u.account.as_str())).filter(|a| !a.is_empty()).map(str::to_owned)
}

/// When the agent last printed something: the time of `events.jsonl`.
fn last_output(root: &Path) -> Option<Timestamp> {
    let modified = std::fs::metadata(root.join("events.jsonl")).ok()?.modified().ok()?;
    Timestamp::try_from(modified).ok()
}

fn secs_between(from: Timestamp, to: Timestamp) -> u64 {
    u64::try_from(to.duration_since(from).as_secs()).unwrap_or(0)
}

/// The cost of every attempt started today (local date), over all task ledgers.
pub fn cost_today(home: &Path, now: Timestamp) -> f64 {
    let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let today = now.to_zoned(zone.clone()).date();
    task_ids(home)
        .iter()
        .filter_map(|id| task_root(home, id))
        .flat_map(|root| Ledger::load(&root).attempts)
        .filter(|a| a.started_at.to_zoned(zone.clone()).date() == today)
        .filter_map(|a| a.cost_usd)
        // Folded from +0.0: an empty float sum is -0.0, which prints as "$-0.000".
        .fold(0.0, |total, cost| total + cost)
}

/// People's holds (`fleet pause`); a file that cannot be read is a warning, since the
/// supervisor will not start on it, and reads as no holds.
fn holds_and_warnings(home: &Path) -> (Holds, Vec<String>) {
    match Holds::read(home) {
        Ok(holds) => (holds, Vec::new()),
        Err(error) => (
            Holds::default(),
            vec![format!(
                "{error}. Until then `fleet run` will not start, and no `fleet pause` shows here"
            )],
        ),
    }
}

/// The supervisor's pauses in force (a coder whose every account is paused also as a whole),
/// then people's holds.
fn pause_rows(home: &Path, config: &RuntimeConfig, holds: &Holds, now: Timestamp) -> Vec<PauseRow> {
    let pauses = Pauses::load(home);
    let by_accounts = config.coders.keys().filter_map(|coder| {
        let pause = accounts::coder_paused_by_accounts(config, coder, &pauses, holds, now)?;
        Some((Scope::coder(coder), pause))
    });
    let mut rows: Vec<PauseRow> = pauses
        .all_active(now)
        .map(|(scope, pause)| (scope.clone(), pause.clone()))
        .chain(by_accounts)
        .map(|(scope, pause)| PauseRow {
            coder: scope.coder,
            account: scope.account,
            cause: pause.cause.as_str().to_owned(),
            until: Some(pause.until),
            detail: pause.detail,
        })
        .collect();
    let coders = holds.coders.iter().map(|(c, h)| (c.clone(), None, h));
    let accounts = holds.accounts.iter().flat_map(|(coder, accounts)| {
        accounts.iter().map(move |(account, h)| (coder.clone(), Some(account.clone()), h))
    });
    let held = holds.all.iter().map(|h| ("*".to_owned(), None, h)).chain(coders).chain(accounts);
    for (coder, account, hold) in held {
        let mut detail = format!("by {} since {}", hold.by, short_time(hold.since, now));
        if !hold.reason.is_empty() {
            detail.push_str(&format!(": {}", hold.reason));
        }
        rows.push(PauseRow { coder, account, cause: "fleet pause".into(), until: None, detail });
    }
    rows
}

/// The human view in parts: `--watch` keeps the head in place and scrolls the rows.
pub struct Rendered {
    /// The totals, the pauses and the table's column header.
    pub head: Vec<Styled>,
    /// Two lines per task (its numbers, then its title and directory), or a line saying there
    /// is none, and the footnote.
    pub rows: Vec<Styled>,
}

impl Rendered {
    /// Every line, head first.
    pub fn into_styled(self) -> Styled {
        let mut text = Styled::new();
        for (n, line) in self.head.into_iter().chain(self.rows).enumerate() {
            if n > 0 {
                text.newline();
            }
            text.append(line);
        }
        text
    }
}

/// The human view, fitted to `width` columns when it is known (a terminal): the header wraps
/// and the least needed columns are left out rather than cut off.
pub fn render(view: &TasksView, now: Timestamp, width: Option<usize>) -> Rendered {
    let mut head = header(view, width);
    for warning in &view.warnings {
        let mut line = Styled::new();
        line.tone(Tone::Bad, &format!("warning: {}", printable(warning)));
        head.push(line);
    }
    for pause in &view.pauses {
        let coder = match (pause.coder.as_str(), &pause.account) {
            ("*", _) => "every coder".to_owned(),
            (coder, account) => crate::coders::account::qualified(coder, account.as_deref()),
        };
        let until =
            pause.until.map(|u| format!(" until {}", short_time(u, now))).unwrap_or_default();
        let mut line = Styled::new();
        line.tone(Tone::Warn, &format!("⏸ {coder} paused{until} ({})", pause.cause))
            .plain(&format!(": {}", printable(&pause.detail)));
        head.push(line);
    }
    let mut rows = Vec::new();
    if view.tasks.is_empty() {
        let mut none = Styled::new();
        none.tone(Tone::Faint, "No running tasks.");
        rows.push(none);
    } else {
        let (column_header, table_rows) = table(&view.tasks, now, width);
        head.push(column_header);
        rows.extend(table_rows);
        if view.tasks.iter().any(|t| !t.default_coder || !t.default_model) {
            let mut note = Styled::new();
            note.tone(Tone::Faint, "* set on the task (not the configured default)");
            rows.push(note);
        }
    }
    for task in &view.not_here {
        let mut line = Styled::new();
        line.tone(Tone::Warn, &format!("○ {} not runnable here", task.id)).plain(&format!(
            ": {} — {}",
            printable(&task.title),
            printable(&task.reason)
        ));
        rows.push(line);
    }
    Rendered { head, rows }
}

/// `fleet: 1/2 running · 0 ready · 0 blocked · $0.013 today · supervisor …`, on two lines when
/// it does not fit `width`.
fn header(view: &TasksView, width: Option<usize>) -> Vec<Styled> {
    let who = match view.supervisors.as_slice() {
        [] => "no supervisor running".to_owned(),
        [one] => format!("supervisor {} (pid {} on {})", one.name, one.pid, one.host),
        many => format!("{} supervisors", many.len()),
    };
    let counts = format!(
        "fleet: {}/{} running · {} ready · {} blocked · {} today",
        view.running,
        view.max_concurrent,
        view.ready,
        view.blocked,
        cost(Some(view.cost_today_usd))
    );
    let mut first = Styled::new();
    first.tone(Tone::Strong, &counts);
    let one_line = counts.chars().count() + 3 + who.chars().count();
    if width.is_some_and(|width| one_line > width) {
        let mut second = Styled::new();
        second.plain(&format!("       {who}"));
        return vec![first, second];
    }
    first.plain(&format!(" · {who}"));
    vec![first]
}

/// The columns of the table, and which to leave out first when the terminal is narrow (the
/// start time, then the attempt, then the tokens; the rest always shows).
const COLUMNS: [&str; 9] =
    ["ID", "CODER·MODEL", "STARTED", "ELAPSED", "IDLE", "CTX", "IN/OUT", "COST", "TRY"];
const DROPPABLE: [&str; 3] = ["STARTED", "TRY", "IN/OUT"];

/// The table: its column header, then a line of numbers per task followed by its title and
/// working directory.
fn table(tasks: &[TaskRow], now: Timestamp, width: Option<usize>) -> (Styled, Vec<Styled>) {
    let mut cells: Vec<Vec<String>> = vec![COLUMNS.iter().map(|h| (*h).to_owned()).collect()];
    for task in tasks {
        cells.push(vec![
            task.id.clone(),
            coder_model(task),
            task.started_at.map_or_else(|| "-".into(), |t| short_time(t, now)),
            task.elapsed_secs.map_or_else(|| "-".into(), duration),
            match (task.running, task.idle_secs) {
                (true, _) if task.retrying.is_some() => {
                    let what = task.retrying.as_deref().unwrap_or_default();
                    format!("retry {}", what.trim_start_matches("HTTP "))
                }
                (true, Some(idle)) => duration(idle),
                (false, _) => task.status.clone(),
                _ => "-".into(),
            },
            task.context_pct.map_or_else(|| "-".into(), |p| format!("{p:.0}%")),
            format!("{}/{}", tokens(task.tokens_in), tokens(task.tokens_out)),
            cost(task.cost_usd),
            task.attempt.to_string(),
        ]);
    }
    let cells: Vec<Vec<String>> = cells
        .into_iter()
        .map(|row| row.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|col| cells.iter().map(|row| row[col].chars().count()).max().unwrap_or(0))
        .collect();
    let shown = shown_columns(&widths, width);
    let line = |row: &[String]| {
        let parts: Vec<String> = shown.iter().map(|&col| pad(&row[col], widths[col])).collect();
        parts.join("  ").trim_end().to_owned()
    };
    let mut column_header = Styled::new();
    column_header.tone(Tone::Faint, &line(&cells[0]));
    let mut rows = Vec::new();
    for (task, row) in tasks.iter().zip(&cells[1..]) {
        let text = line(row);
        let (id, rest) = text.split_at(row[0].len().min(text.len()));
        let mut numbers = Styled::new();
        numbers.tone(if task.running { Tone::Active } else { Tone::Faint }, id).plain(rest);
        rows.push(numbers);
        let mut title = Styled::new();
        title.plain(&format!(
            "{}  {} — {}",
            " ".repeat(widths[0]),
            printable(&task.title),
            printable(&tilde(&task.cwd))
        ));
        rows.push(title);
    }
    (column_header, rows)
}

/// The indexes of the columns that fit `width`, leaving out [`DROPPABLE`] ones in order.
fn shown_columns(widths: &[usize], width: Option<usize>) -> Vec<usize> {
    let mut shown: Vec<usize> = (0..COLUMNS.len()).collect();
    let total = |shown: &[usize]| {
        shown.iter().map(|&col| widths[col]).sum::<usize>() + 2 * shown.len().saturating_sub(1)
    };
    let Some(width) = width else { return shown };
    for name in DROPPABLE {
        if total(&shown) <= width {
            break;
        }
        shown.retain(|&col| COLUMNS[col] != name);
    }
    shown
}

fn pad(text: &str, width: usize) -> String {
    let count = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(count)))
}

/// `claude·sonnet`, with `*` after a part set on the task; `claude@work·sonnet` when the task
/// runs on the coder's account `work`.
fn coder_model(task: &TaskRow) -> String {
    let mark = |default: bool| if default { "" } else { "*" };
    let model = if task.model.is_empty() { "-" } else { task.model.as_str() };
    let account = task.account.as_deref().map(|a| format!("@{a}")).unwrap_or_default();
    format!(
        "{}{}{account}·{model}{}",
        task.coder,
        mark(task.default_coder),
        mark(task.default_model)
    )
}

/// A path with the home directory shown as `~`.
fn tilde(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&home) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_owned(),
    }
}

/// `14:02:11` today, else `Mar 01 14:02` (local time).
pub fn short_time(at: Timestamp, now: Timestamp) -> String {
    let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    let (at, now) = (at.to_zoned(zone.clone()), now.to_zoned(zone));
    if at.date() == now.date() {
        at.strftime("%H:%M:%S").to_string()
    } else {
        at.strftime("%b %d %H:%M").to_string()
    }
}

/// `42s`, `3m05s`, `2h07m`, `3d04h`.
pub fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        3600..86_400 => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3600),
    }
}

/// `950`, `12.3k`, `1.2M`.
pub fn tokens(count: u64) -> String {
    match count {
        0..1000 => count.to_string(),
        1000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

/// `$0.013`, `$12.40`, or `-` when unknown.
pub fn cost(usd: Option<f64>) -> String {
    match usd {
        None => "-".to_owned(),
        Some(usd) if usd < 1.0 => format!("${usd:.3}"),
        Some(usd) => format!("${usd:.2}"),
    }
}

/// Redraws the view every second, and at once on a key or a resize, until q or Ctrl-C (or
/// SIGINT, SIGTERM, SIGHUP), restoring the terminal however it ends.
fn watch(ctx: &Context, home: &Path, all: bool) -> Result<(), CliError> {
    let signals =
        BlockedSignals::block(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGWINCH])?;
    let screen = Screen::enter();
    let mut scroll = 0usize;
    loop {
        let (width, height) = terminal_size();
        let rendered = match gather(ctx, home, all) {
            Ok(view) => render(&view, Timestamp::now(), Some(width)),
            Err(error) => {
                let mut line = Styled::new();
                line.tone(Tone::Bad, &format!("error: {}", error.message));
                Rendered { head: vec![line], rows: Vec::new() }
            }
        };
        scroll = draw(&rendered, scroll, width, height, ctx.out.color);
        match next_input(&screen, &signals, Duration::from_secs(1)) {
            Input::Quit => return Ok(()),
            Input::Key(Key::Down) => scroll += 1,
            Input::Key(Key::Up) => scroll = scroll.saturating_sub(1),
            Input::Key(Key::PageDown) => scroll += page(&rendered, height),
            Input::Key(Key::PageUp) => scroll = scroll.saturating_sub(page(&rendered, height)),
            Input::Key(Key::Quit) => return Ok(()),
            Input::Key(Key::Other) | Input::Redraw => {}
        }
    }
}

/// The rows one screen holds below the head (at least one).
fn page(rendered: &Rendered, height: usize) -> usize {
    height.saturating_sub(rendered.head.len() + 1).max(1)
}

/// What ended a wait between redraws.
enum Input {
    Key(Key),
    /// A stop signal.
    Quit,
    /// The time is up, or the terminal was resized.
    Redraw,
}

/// Waits up to `timeout` for a key or a signal.
fn next_input(screen: &Screen, signals: &BlockedSignals, timeout: Duration) -> Input {
    const SLICE: Duration = Duration::from_millis(100);
    let start = std::time::Instant::now();
    while start.elapsed() < timeout {
        match signals.wait(Duration::ZERO) {
            Some(libc::SIGWINCH) => return Input::Redraw,
            Some(_) => return Input::Quit,
            None => {}
        }
        if let Some(key) = screen.key(SLICE) {
            return Input::Key(key);
        }
    }
    Input::Redraw
}

/// Draws the head, the rows from `scroll` on (as many as fit), and the footer line, each line
/// cut to `width`, over the previous screen; returns the scroll position it used.
fn draw(rendered: &Rendered, scroll: usize, width: usize, height: usize, color: bool) -> usize {
    let room = height.saturating_sub(rendered.head.len() + 1);
    let scroll = scroll.min(rendered.rows.len().saturating_sub(room));
    let visible = rendered.rows.iter().skip(scroll).take(room);
    // Home, then each line over the old one with the rest of the old line cleared, then the
    // rest of the screen cleared: no blank flash between two frames.
    let mut out = String::from("\x1b[H");
    for line in rendered.head.iter().take(height.saturating_sub(1)).chain(visible) {
        out.push_str(&line.truncated(width).render(color));
        out.push_str("\x1b[K\r\n");
    }
    let hidden = rendered.rows.len().saturating_sub(room);
    let position = if hidden > 0 {
        format!(
            " · rows {}-{} of {} · j/k PgUp/PgDn scroll",
            scroll + 1,
            (scroll + room).min(rendered.rows.len()),
            rendered.rows.len()
        )
    } else {
        String::new()
    };
    let mut footer = Styled::new();
    footer.tone(
        Tone::Faint,
        &format!("q quits{position} · {}", short_time(Timestamp::now(), Timestamp::now())),
    );
    out.push_str(&footer.truncated(width).render(color));
    out.push_str("\x1b[K\x1b[J");
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
    scroll
}

/// `(columns, rows)` of the terminal on stdout (80×24 when it cannot say).
fn terminal_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 && size.ws_row > 0 {
        (usize::from(size.ws_col), usize::from(size.ws_row))
    } else {
        (80, 24)
    }
}

enum Key {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Other,
}

/// The terminal while watching: the alternate screen, no cursor, and stdin — when it is the
/// terminal — read key by key (Ctrl-C arrives as a key); everything is restored on drop.
struct Screen {
    /// The terminal settings of stdin before, when stdin is a terminal put in raw mode.
    saved: Option<libc::termios>,
}

impl Screen {
    fn enter() -> Screen {
        let saved = std::io::stdin().is_terminal().then(raw_stdin).flatten();
        print_raw("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
        Screen { saved }
    }

    /// Waits up to `timeout` for a key; never reads stdin unless it is the terminal (a stdin
    /// at its end would read as a key at once, forever).
    fn key(&self, timeout: Duration) -> Option<Key> {
        if self.saved.is_none() {
            std::thread::sleep(timeout);
            return None;
        }
        let mut poll = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(1000);
        // SAFETY: polls one descriptor we describe in `poll`.
        if unsafe { libc::poll(&mut poll, 1, millis) } <= 0 {
            return None;
        }
        let mut buf = [0u8; 16];
        // SAFETY: reads into a buffer we own, at most its length.
        let read = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(read) = usize::try_from(read) else { return Some(Key::Quit) };
        Some(match &buf[..read] {
            [] | [b'q' | b'Q' | 3 | 4, ..] => Key::Quit,
            [b'j', ..] | [0x1b, b'[', b'B', ..] => Key::Down,
            [b'k', ..] | [0x1b, b'[', b'A', ..] => Key::Up,
            [b' ', ..] | [0x1b, b'[', b'6', b'~', ..] => Key::PageDown,
            [0x1b, b'[', b'5', b'~', ..] => Key::PageUp,
            _ => Key::Other,
        })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        print_raw("\x1b[?25h\x1b[?1049l");
        if let Some(saved) = &self.saved {
            // SAFETY: restores the terminal settings read in `raw_stdin`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
        }
    }
}

/// Puts stdin in non-canonical mode without echo or signals; returns the settings before.
fn raw_stdin() -> Option<libc::termios> {
    // SAFETY: tcgetattr/tcsetattr on stdin with a termios struct we own.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        (libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) == 0).then_some(saved)
    }
}

fn print_raw(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_on_an_account_fits_80_columns() {
        let now = Timestamp::now();
        let row = TaskRow {
            id: "fleet-a3f".into(),
            title: "Fix the login".into(),
            status: "in_progress".into(),
            running: true,
            coder: "claude".into(),
            model: "sonnet".into(),
            account: Some("work".into()),
            default_coder: true,
            default_model: true,
            supervisor: "fleet@host".into(),
            attempt: 1,
            started_at: Some(now),
            elapsed_secs: Some(725),
            idle_secs: Some(65),
            retrying: None,
            context_peak: 90_000,
            context_limit: Some(200_000),
            context_pct: Some(45.0),
            tokens_in: 123_400,
            tokens_out: 5_600,
            cost_usd: Some(0.123),
            total_cost_usd: Some(0.123),
            cwd: "/src".into(),
        };
        let text = |(header, rows): (Styled, Vec<Styled>)| -> Vec<String> {
            std::iter::once(header).chain(rows).map(|line| line.render(false)).collect()
        };
        let lines = text(table(std::slice::from_ref(&row), now, Some(80)));
        assert!(lines[1].starts_with("fleet-a3f  claude@work·sonnet  12m05s"), "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        let plain = TaskRow { account: None, tokens_in: 950, tokens_out: 20, ..row };
        let lines = text(table(&[plain], now, Some(80)));
        assert!(lines[0].contains("STARTED"), "room for every column: {lines:#?}");
    }

    #[test]
    fn units_read_at_a_glance() {
        assert_eq!(duration(42), "42s");
        assert_eq!(duration(185), "3m05s");
        assert_eq!(duration(7620), "2h07m");
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(1_200_000), "1.2M");
        assert_eq!(cost(Some(0.0125)), "$0.013");
        assert_eq!(cost(Some(12.4)), "$12.40");
        assert_eq!(cost(None), "-");
    }

    fn wide_view() -> TasksView {
        let now = Timestamp::now();
        let row = TaskRow {
            id: "fleet-3k2x".into(),
            title: "A title long enough to be cut at the edge of an eighty-column terminal".into(),
            status: "in_progress".into(),
            running: true,
            coder: "claude".into(),
            model: "claude-sonnet-4-5-20250929".into(),
            account: None,
            default_coder: true,
            default_model: false,
            supervisor: "fleet@a-long-host-name".into(),
            attempt: 12,
            started_at: Some(now),
            elapsed_secs: Some(7620),
            idle_secs: Some(75),
            retrying: None,
            context_peak: 150_000,
            context_limit: Some(200_000),
            context_pct: Some(75.0),
            tokens_in: 1_234_567,
            tokens_out: 98_765,
            cost_usd: Some(12.5),
            total_cost_usd: Some(30.0),
            cwd: "/srv/projects/one".into(),
        };
        TasksView {
            supervisors: Vec::new(),
            running: 1,
            max_concurrent: 8,
            ready: 120,
            blocked: 4,
            cost_today_usd: 123.45,
            pauses: Vec::new(),
            tasks: vec![row],
            not_here: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The watched screen shows what the view could not read at its head (the one-shot view
    /// prints it on stderr instead, before the view).
    #[test]
    fn a_warning_heads_the_rendered_view() {
        let view = TasksView { warnings: vec!["holds.json is broken".into()], ..wide_view() };
        let rendered = render(&view, Timestamp::now(), Some(200));
        let lines: Vec<String> = rendered.head.iter().map(|l| l.render(false)).collect();
        assert!(lines[1].contains("warning: holds.json is broken"), "{lines:?}");
    }

    #[test]
    fn a_narrow_terminal_loses_the_least_needed_columns_not_the_cost() {
        let view = wide_view();
        let full = render(&view, Timestamp::now(), None).into_styled().render(false);
        assert!(full.lines().any(|l| l.contains("STARTED") && l.chars().count() > 80), "{full}");
        let narrow = render(&view, Timestamp::now(), Some(80));
        let numbers = narrow.rows[0].render(false);
        assert!(numbers.chars().count() <= 80, "{numbers}");
        let header = narrow.head.last().unwrap().render(false);
        assert!(!header.contains("STARTED") && header.contains("COST"), "{header}");
        assert!(numbers.contains("$12.50") && numbers.contains("2h07m"), "{numbers}");
        assert_eq!(render(&view, Timestamp::now(), Some(200)).head.len(), 2, "one header line");
        assert_eq!(narrow.head.len(), 3, "the header wraps at 80 columns");
    }
}
