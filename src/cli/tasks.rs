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
//! `--watch` redraws the view every second on a terminal (alternate screen, keys: `q` or
//! Ctrl-C quits, `j`/`k` or the arrows scroll); without a terminal it prints once.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use crate::config::RuntimeConfig;
use crate::model::{Issue, Status};
use crate::store::{ListFilter, Reader};
use crate::supervisor::accounts::{self, Blocked};
use crate::supervisor::hold::Holds;
use crate::supervisor::lease::{self, Identity, Registration};
use crate::supervisor::ledger::{AttemptUsage, Ledger};
use crate::supervisor::pause::Pauses;
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
    let view = gather(ctx, &home, args.all)?;
    ctx.out.emit(&view, || render(&view, ctx.now()));
    Ok(())
}

/// Reads the store and the task files into a view.
pub fn gather(ctx: &Context, home: &Path, all: bool) -> Result<TasksView, CliError> {
    let now = ctx.now();
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let supervisors = live_supervisors(&lease::registry(&store)?, now);
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME)).unwrap_or_default();
    let stats = reader.stats(now)?;
    let blocked_status = count_status(&reader, Status::Blocked)?;
    let mut tasks = running_rows(&reader, home, &config, &supervisors, now)?;
    if all {
        tasks.extend(finished_rows(&reader, home, &config, &tasks, now)?);
    }
    let running = tasks.iter().filter(|t| t.running).count();
    Ok(TasksView {
        max_concurrent: supervisors.iter().map(|s| s.max_concurrent).sum(),
        supervisors: supervisors.iter().map(supervisor_row).collect(),
        running,
        ready: stats.ready_issues,
        blocked: stats.blocked_issues + blocked_status,
        cost_today_usd: cost_today(home, now),
        pauses: pause_rows(home, &config, now),
        tasks,
    })
}

/// The registrations whose supervisor still runs.
fn live_supervisors(registry: &[Registration], now: Timestamp) -> Vec<Registration> {
    let me = Identity::current("fleet tasks");
    registry.iter().filter(|r| lease::registration_alive(r, &me, now)).cloned().collect()
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
    let mut rows: Vec<TaskRow> =
        issues
            .into_iter()
            .filter(|s| s.issue.fleet.lease.is_some())
            .map(|s| {
                let alive =
                    s.issue.fleet.lease.as_ref().is_some_and(|l| {
                        supervisors.iter().any(|r| r.identity.instance == l.instance)
                    });
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
        .sum()
}

/// The supervisor's pauses in force (a coder whose every account is paused also as a whole),
/// then people's holds.
fn pause_rows(home: &Path, config: &RuntimeConfig, now: Timestamp) -> Vec<PauseRow> {
    let pauses = Pauses::load(home);
    let holds = Holds::load(home);
    let mut rows: Vec<PauseRow> = pauses
        .all_active(now)
        .map(|(scope, pause)| PauseRow {
            coder: scope.coder.clone(),
            account: scope.account.clone(),
            cause: pause.cause.as_str().to_owned(),
            until: Some(pause.until),
            detail: pause.detail.clone(),
        })
        .collect();
    for coder in config.coders.keys() {
        let blocked = accounts::blocked(config, coder, &pauses, &holds, now);
        if let Some(Blocked::Paused(scope, pause)) = blocked.filter(|_| !holds.holds(coder))
            && scope.account.is_some()
        {
            rows.push(PauseRow {
                coder: coder.clone(),
                account: None,
                cause: pause.cause.as_str().to_owned(),
                until: Some(pause.until),
                detail: format!("every account is paused; {scope} resumes first"),
            });
        }
    }
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

/// The human view.
pub fn render(view: &TasksView, now: Timestamp) -> String {
    let mut lines = vec![header(view)];
    for pause in &view.pauses {
        let coder = match (pause.coder.as_str(), &pause.account) {
            ("*", _) => "every coder".to_owned(),
            (coder, Some(account)) => crate::coders::account::qualified(coder, account),
            (coder, None) => coder.to_owned(),
        };
        let until =
            pause.until.map(|u| format!(" until {}", short_time(u, now))).unwrap_or_default();
        lines.push(format!(
            "⏸ {coder} paused{until} ({}): {}",
            pause.cause,
            printable(&pause.detail)
        ));
    }
    if view.tasks.is_empty() {
        lines.push("No running tasks.".to_owned());
        return lines.join("\n");
    }
    lines.extend(table(&view.tasks, now));
    if view.tasks.iter().any(|t| !t.default_coder || !t.default_model) {
        lines.push("* set on the task (not the configured default)".to_owned());
    }
    lines.join("\n")
}

fn header(view: &TasksView) -> String {
    let who = match view.supervisors.as_slice() {
        [] => "no supervisor running".to_owned(),
        [one] => format!("supervisor {} (pid {} on {})", one.name, one.pid, one.host),
        many => format!("{} supervisors", many.len()),
    };
    format!(
        "fleet: {}/{} running · {} ready · {} blocked · {} today · {who}",
        view.running,
        view.max_concurrent,
        view.ready,
        view.blocked,
        cost(Some(view.cost_today_usd))
    )
}

/// The width the table's lines keep to when they can: a terminal's.
const TABLE_WIDTH: usize = 80;

/// The table: a line of numbers per task, then its title and working directory.
fn table(tasks: &[TaskRow], now: Timestamp) -> Vec<String> {
    let head = ["ID", "CODER·MODEL", "STARTED", "ELAPSED", "IDLE", "CTX", "IN/OUT", "COST", "TRY"];
    let mut cells: Vec<Vec<String>> = vec![head.iter().map(|h| (*h).to_owned()).collect()];
    for task in tasks {
        cells.push(vec![
            task.id.clone(),
            coder_model(task),
            task.started_at.map_or_else(|| "-".into(), |t| short_time(t, now)),
            task.elapsed_secs.map_or_else(|| "-".into(), duration),
            match (task.running, task.idle_secs) {
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
    let mut widths: Vec<usize> = (0..head.len())
        .map(|col| cells.iter().map(|row| row[col].chars().count()).max().unwrap_or(0))
        .collect();
    // Too wide for a terminal (a long model, an account): ELAPSED says what STARTED does.
    let width = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
    if width > TABLE_WIDTH {
        let started = head.iter().position(|h| *h == "STARTED").expect("a column of the table");
        widths.remove(started);
        for row in &mut cells {
            row.remove(started);
        }
    }
    let mut lines = Vec::new();
    for (index, row) in cells.iter().enumerate() {
        let line: Vec<String> =
            row.iter().zip(&widths).map(|(cell, width)| pad(&printable(cell), *width)).collect();
        lines.push(line.join("  ").trim_end().to_owned());
        if index > 0 {
            let task = &tasks[index - 1];
            lines.push(format!(
                "{}  {} — {}",
                " ".repeat(widths[0]),
                printable(&task.title),
                printable(&tilde(&task.cwd))
            ));
        }
    }
    lines
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

/// Redraws the view every second until q or Ctrl-C.
fn watch(ctx: &Context, home: &Path, all: bool) -> Result<(), CliError> {
    let _screen = Screen::enter();
    let mut scroll = 0usize;
    loop {
        let (width, height) = terminal_size();
        let text = match gather(ctx, home, all) {
            Ok(view) => render(&view, Timestamp::now()),
            Err(error) => format!("error: {}", error.message),
        };
        let lines: Vec<&str> = text.lines().collect();
        let room = height.saturating_sub(1).max(1);
        scroll = scroll.min(lines.len().saturating_sub(room));
        draw(&lines[scroll..], room, width, lines.len());
        match Screen::key(Duration::from_secs(1)) {
            Key::Quit => return Ok(()),
            Key::Down => scroll += 1,
            Key::Up => scroll = scroll.saturating_sub(1),
            Key::Other => {}
        }
    }
}

fn draw(lines: &[&str], room: usize, width: usize, total: usize) {
    let mut out = String::from("\x1b[H\x1b[2J");
    for line in lines.iter().take(room) {
        out.push_str(&line.chars().take(width).collect::<String>());
        out.push_str("\r\n");
    }
    let more = if total > room { " · j/k scroll" } else { "" };
    out.push_str(&format!(
        "\x1b[2mq quits{more} · {}\x1b[0m",
        short_time(Timestamp::now(), Timestamp::now())
    ));
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
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
    Other,
}

/// The terminal while watching: the alternate screen, no cursor, and stdin read key by key
/// (Ctrl-C arrives as a key); everything is restored on drop.
struct Screen {
    saved: Option<libc::termios>,
}

impl Screen {
    fn enter() -> Screen {
        let saved = std::io::stdin().is_terminal().then(raw_stdin).flatten();
        print_raw("\x1b[?1049h\x1b[?25l");
        Screen { saved }
    }

    /// Waits up to `timeout` for a key.
    fn key(timeout: Duration) -> Key {
        let mut poll = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(1000);
        // SAFETY: polls one descriptor we describe in `poll`.
        if unsafe { libc::poll(&mut poll, 1, millis) } <= 0 {
            return Key::Other;
        }
        let mut buf = [0u8; 16];
        // SAFETY: reads into a buffer we own, at most its length.
        let read = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(read) = usize::try_from(read) else { return Key::Quit };
        match &buf[..read] {
            [] | [b'q' | b'Q' | 3 | 4, ..] => Key::Quit,
            [b'j', ..] | [0x1b, b'[', b'B', ..] => Key::Down,
            [b'k', ..] | [0x1b, b'[', b'A', ..] => Key::Up,
            _ => Key::Other,
        }
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
            context_peak: 90_000,
            context_limit: Some(200_000),
            context_pct: Some(45.0),
            tokens_in: 123_400,
            tokens_out: 5_600,
            cost_usd: Some(0.123),
            total_cost_usd: Some(0.123),
            cwd: "/src".into(),
        };
        let lines = table(std::slice::from_ref(&row), now);
        assert!(lines[1].starts_with("fleet-a3f  claude@work·sonnet  12m05s"), "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= TABLE_WIDTH), "{lines:#?}");
        let plain = TaskRow { account: None, tokens_in: 950, tokens_out: 20, ..row };
        let lines = table(&[plain], now);
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
}
