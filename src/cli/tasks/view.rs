//! The view of `fleet tasks`, gathered from the store and the task files: the live
//! supervisors, what runs and what it costs, the pauses, and the ready tasks this machine
//! cannot run. Nothing here writes or prints.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Serialize;

use super::units::{cost, short_time, tokens};
use crate::cli::context::Context;
use crate::cli::error::CliError;
use crate::cli::output::printable;
use crate::config::RuntimeConfig;
use crate::model::{Issue, Status};
use crate::store::{ListFilter, Reader, ReadyFilter};
use crate::supervisor::accounts;
use crate::supervisor::hold::Holds;
use crate::supervisor::lease::{self, Registration};
use crate::supervisor::ledger::{AttemptUsage, CostSource, Ledger};
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
    /// When fleet's built-in list prices were taken (`crate::coders::models`): what a cost
    /// priced without a `[prices."MODEL"]` entry in runtime.toml is as of.
    pub prices_as_of: &'static str,
    pub pauses: Vec<PauseRow>,
    pub tasks: Vec<TaskRow>,
    /// Ready tasks whose working directory is not on this machine (`crate::place`): this
    /// machine's supervisor leaves them to others.
    pub not_here: Vec<NotHereRow>,
    /// Ready tasks that wait for a running task whose `touches` overlap theirs.
    pub waiting: Vec<NotHereRow>,
    /// Tasks in progress that no live supervisor and no person holds (an agent's claim
    /// outside its attempt, a supervisor that died): nothing will finish or release them.
    pub unheld: Vec<lease::Unheld>,
    /// Live file reservations (`bd reserve`).
    pub reservations: Vec<crate::coord::Reservation>,
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
    /// The coder's model, when only it is paused (`""`: the model its CLI picks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `rate limit`, `not logged in`, …, `budget`, `fleet pause` or `canary`.
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
    #[serde(flatten)]
    pub runs_with: Effective,
    /// The coder's account the task runs (or last ran) on, when the coder has accounts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
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
    /// Where this attempt's cost comes from: the CLI reported it, or fleet priced its tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
    /// Priced from fleet's built-in list prices (no `[prices."MODEL"]` entry in runtime.toml).
    #[serde(skip)]
    pub list_priced: bool,
    /// Cost over every attempt of the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    pub cwd: String,
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
    let waiting = waiting_rows(&reader, now)?;
    let unheld = lease::unheld_tasks(&store, now)?;
    let reservations = live_reservations(&reader, now)?;
    Ok(TasksView {
        max_concurrent: supervisors.iter().map(|s| s.max_concurrent).sum(),
        supervisors: supervisors.iter().map(supervisor_row).collect(),
        running,
        ready: stats.ready_issues,
        blocked: stats.blocked_issues + blocked_status,
        cost_today_usd: cost_today(home, now),
        prices_as_of: crate::coders::models::PRICES_AS_OF,
        pauses: pause_rows(home, &config, &holds, now),
        tasks,
        not_here,
        waiting,
        unheld,
        reservations,
        warnings,
    })
}

/// The ready tasks (the first [`NOT_HERE_CHECKED`]) whose `touches` overlap a running task's:
/// a supervisor leaves them until that task is done (`crate::coord::touch_wait`).
fn waiting_rows(reader: &Reader, now: Timestamp) -> Result<Vec<NotHereRow>, CliError> {
    let filter = ReadyFilter { limit: NOT_HERE_CHECKED, ..ReadyFilter::default() };
    let ready: Vec<Issue> = reader
        .ready(&filter, now)?
        .issues
        .into_iter()
        .filter(|i| !i.fleet.touches.is_empty())
        .collect();
    if ready.is_empty() {
        return Ok(Vec::new());
    }
    let in_progress = ListFilter { statuses: vec![Status::InProgress], ..ListFilter::default() };
    let running: Vec<Issue> = reader
        .list(&in_progress)?
        .0
        .into_iter()
        .map(|s| s.issue)
        .filter(crate::coord::is_running)
        .collect();
    Ok(ready
        .into_iter()
        .filter_map(|issue| {
            let wait = crate::coord::touch_wait(&issue, &running)?;
            Some(NotHereRow { id: issue.id, title: issue.title, reason: wait.to_string() })
        })
        .collect())
}

/// The reservations that hold now (`crate::coord::Reservation::is_live`).
pub fn live_reservations(
    reader: &Reader,
    now: Timestamp,
) -> Result<Vec<crate::coord::Reservation>, CliError> {
    let mut live = Vec::new();
    for reservation in reader.reservations()? {
        if reservation.is_live(reader.issue(&reservation.task)?.as_ref(), now) {
            live.push(reservation);
        }
    }
    Ok(live)
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
        .filter(|s| s.issue.live_lease().is_some())
        .map(|s| {
            let alive = s
                .issue
                .live_lease()
                .is_some_and(|l| supervisors.iter().any(|r| r.identity.instance == l.instance));
            task_row(&s.issue, home, config, alive, now)
        })
        .collect();
    rows.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
    Ok(rows)
}

/// The row of one task, as `fleet tasks` shows it: its latest (or running) attempt's
/// tokens, context and cost, live while it runs.
pub fn task_view(ctx: &Context, home: &Path, issue: &Issue) -> Result<TaskRow, CliError> {
    let now = ctx.now();
    let store = ctx.open_store()?;
    let supervisors = lease::live_supervisors(&store, now)?;
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME)).unwrap_or_default();
    let running = issue.status == Status::InProgress
        && issue
            .live_lease()
            .is_some_and(|l| supervisors.iter().any(|r| r.identity.instance == l.instance));
    Ok(task_row(issue, home, &config, running, now))
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

/// The coder and model a task runs with, and whether each is the configured default (not set
/// on the task).
#[derive(Debug, Clone, Serialize)]
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
    #[serde(flatten)]
    pub runs_with: Effective,
    /// The account the task runs (or last ran) on, when its coder has accounts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
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
        RunInfo {
            account: account_of(issue, ledger.last()),
            runs_with: effective(issue, &config),
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
        let Effective { coder, model, default_coder, default_model } = &self.runs_with;
        let model = if model.is_empty() { "(the CLI's own)" } else { model.as_str() };
        let mut lines = vec![
            format!("Coder: {}{}", printable(coder), default(*default_coder)),
            format!("Model: {}{}", printable(model), default(*default_model)),
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
        runs_with: effective,
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
        cost_source: usage.cost_source,
        list_priced: usage.cost_source == Some(CostSource::Priced)
            && config.price(&usage.model).is_none(),
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

/// The cost of every attempt started today (local date), over all task ledgers: the
/// spending the `[budget]` day caps count.
pub fn cost_today(home: &Path, now: Timestamp) -> f64 {
    crate::supervisor::budget::Spending::scan(home, now).fleet
}

/// The coder and account a `[budget]` hold's scope (`fleet`, `coder NAME`, `account C@A`)
/// stops: `*` for the whole fleet.
fn budget_scope(scope: &str) -> (String, Option<String>) {
    if let Some(coder) = scope.strip_prefix("coder ") {
        return (coder.to_owned(), None);
    }
    match scope.strip_prefix("account ").and_then(|name| name.split_once('@')) {
        Some((coder, account)) => (coder.to_owned(), Some(account.to_owned())),
        None => ("*".to_owned(), None),
    }
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
/// a day cap of `[budget]` holding every new attempt back, then people's holds.
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
            model: None,
            cause: pause.cause.as_str().to_owned(),
            until: Some(pause.until),
            detail: pause.detail,
        })
        .collect();
    if let Some(held) = crate::supervisor::budget::Held::load(home, now) {
        let (coder, account) = budget_scope(&held.scope);
        let detail = format!("{} (`fleet budget`)", held.detail);
        let until = Some(held.until);
        let model = None;
        rows.push(PauseRow { coder, account, model, cause: "budget".into(), until, detail });
    }
    rows.extend(hold_rows(holds, now));
    rows
}

/// The holds in force: people's (`fleet pause`) and the quality canary's.
fn hold_rows(holds: &Holds, now: Timestamp) -> Vec<PauseRow> {
    let coders = holds.coders.iter().map(|(c, h)| (c.clone(), None, None, h));
    let accounts = holds.accounts.iter().flat_map(|(coder, accounts)| {
        accounts.iter().map(move |(account, h)| (coder.clone(), Some(account.clone()), None, h))
    });
    let models = holds.models.iter().flat_map(|(coder, models)| {
        models.iter().map(move |(model, h)| (coder.clone(), None, Some(model.clone()), h))
    });
    let all = holds.all.iter().map(|h| ("*".to_owned(), None, None, h));
    let held = all.chain(coders).chain(models).chain(accounts);
    held.map(|(coder, account, model, hold)| {
        let mut detail = format!("by {} since {}", hold.by, short_time(hold.since, now));
        if !hold.reason.is_empty() {
            detail.push_str(&format!(": {}", hold.reason));
        }
        let cause = hold.cause.map_or("fleet pause", |cause| cause.as_str()).to_owned();
        PauseRow { coder, account, model, cause, until: None, detail }
    })
    .collect()
}
