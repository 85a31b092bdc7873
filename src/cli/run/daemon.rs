//! `fleet run --detach` and `fleet run status|stop|restart`: the supervisor in the background.
//!
//! `--detach` takes the fleet home's lock (see `supervisor::daemon`) and starts this binary
//! again as `fleet --db <workspace> run … --detached-lock-fd N` in a new session (`setsid`),
//! with stdin on /dev/null and stdout and stderr appended to `$FLEET_HOME/logs/fleet-run.out`
//! (the run log, `fleet-run.log`, keeps the events as in the foreground). The child inherits
//! the lock and holds it for as long as it lives, and writes the pid file itself as soon as it
//! holds the lock (the command line as typed is handed down with `--detached-argv`), so a
//! `--detach` killed at any point leaves no supervisor without its record. The parent waits
//! for that record and returns once the supervisor has registered in the store — its config
//! loaded, its guard started, the store open — or reports the child's failure with the last
//! lines of its output, exit 1.
//!
//! `status` judges the pid file by pid and start time; a stale one is removed. Exit 0 when the
//! supervisor runs, [`exit_code::NOT_RUNNING`] when it does not. `stop` sends SIGTERM — the
//! supervisor's own graceful shutdown: agents get `shutdown_grace_secs` and their tasks are
//! released uncharged — waits, and sends SIGKILL if it has not exited in time. Its guard
//! process then kills what is left of the run and releases its tasks, and `stop` makes sure of
//! it: it waits for the supervisor's process group to empty, then kills whatever of the group,
//! or of the processes tagged with the run's instance, is still alive. `restart` is `stop`,
//! then `--detach` with the command line the pid file recorded.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde::Serialize;

use super::args::{StartArgs, StopArgs};
use crate::cli::context::{Context, fleet_home};
use crate::cli::error::{CliError, exit_code};
use crate::cli::logging::{LOG_DIR, RUN_LOG_FILE, create_private_dir, open_for_append};
use crate::cli::tasks::duration;
use crate::model::Status;
use crate::process;
use crate::store::{ListFilter, Store};
use crate::supervisor::daemon::{self, DaemonRecord, HomeLock, Liveness, Stopping};
use crate::supervisor::lease;

/// The file a detached supervisor's stdout and stderr go to, under `$FLEET_HOME/logs/`.
pub const OUTPUT_FILE: &str = "fleet-run.out";
/// The size past which the output file moves to `fleet-run.out.1` when a supervisor starts.
const OUTPUT_MAX_BYTES: u64 = 1024 * 1024;
/// How long `--detach` waits for the supervisor to come up.
const STARTUP_DEADLINE: Duration = Duration::from_secs(60);
/// How long a `--detach` that finds the lock taken waits for the other one's pid file.
const PID_FILE_WAIT: Duration = Duration::from_secs(3);
/// What `stop` adds to `shutdown_grace_secs` when no `--timeout` is given.
const STOP_MARGIN: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(50);
/// How many lines of its output a failed start shows.
const TAIL_LINES: usize = 20;

/// The supervisor's side of `--detach`: it holds the home's lock while it runs, and removes
/// its pid file when it ends (by returning or by an error; a killed one leaves a stale file).
pub struct Detached {
    home: PathBuf,
    _lock: HomeLock,
}

impl Detached {
    /// Adopts the lock `fleet run --detach` handed down as descriptor `fd`, then writes the
    /// pid file naming this process (`argv`: the command line `--detach` was typed as).
    pub fn start(
        ctx: &Context,
        fd: i32,
        home: &Path,
        argv: Vec<String>,
    ) -> Result<Detached, CliError> {
        let lock = HomeLock::adopt(fd, home).map_err(|error| {
            CliError::usage(format!("--detached-lock-fd {fd}: {error}"))
                .with_hint("this option is for `fleet run --detach` only; use `fleet run --detach`")
        })?;
        let home = canonical(home)?;
        let logs = home.join(LOG_DIR);
        let record = DaemonRecord::of_this_process(
            canonical_workspace(ctx)?,
            argv,
            logs.join(RUN_LOG_FILE),
            logs.join(OUTPUT_FILE),
        );
        daemon::save(&home, &record).map_err(|e| {
            CliError::new(format!("writing {}: {e}", daemon::record_path(&home).display()))
        })?;
        Ok(Detached { home, _lock: lock })
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        // Before the lock goes (the fields drop after this): no newer record can exist yet.
        let _ = daemon::remove_if_names(&self.home, std::process::id());
    }
}

/// A pid file whose process is gone (or one that does not read as a record).
#[derive(Debug, Clone, Serialize)]
pub struct StaleRecord {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub reason: String,
    #[serde(skip)]
    record: Option<DaemonRecord>,
}

/// What `fleet run status` (and `--detach`) reports.
#[derive(Debug, Serialize)]
pub struct DaemonStatus {
    pub running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uptime_secs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The command line it was started with (what `restart` runs again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// Its running agents and its `max_concurrent` (absent while it has not registered yet,
    /// or when the store cannot be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<usize>,
    pub log: String,
    pub output: String,
    pub pid_file: String,
    /// A stale pid file found (and removed) on the way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<StaleRecord>,
    /// Supervisors of the workspace started in the foreground (`fleet run` in a terminal),
    /// when none runs in the background: they count as running.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub foreground: Vec<ForegroundSupervisor>,
}

/// A live supervisor registered in the store that no pid file names.
#[derive(Debug, Serialize)]
pub struct ForegroundSupervisor {
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub started_at: Timestamp,
    pub max_concurrent: usize,
}

/// What `fleet run stop` reports.
#[derive(Debug, Serialize)]
pub struct StopReport {
    /// Whether a supervisor was running in the background.
    pub was_running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(flatten)]
    pub stopping: Stopping,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<StaleRecord>,
}

/// What `fleet run restart` reports.
#[derive(Debug, Serialize)]
struct Restarted {
    stopped: StopReport,
    started: DaemonStatus,
}

/// What the pid file says, judged.
enum Found {
    Running(DaemonRecord),
    NotRunning(Option<StaleRecord>),
}

pub fn cmd_detach(ctx: &Context, args: &StartArgs, argv: Vec<String>) -> Result<(), CliError> {
    let home = fleet_home()?;
    let store = ctx.open_store()?;
    let workspace = canonical_workspace(ctx)?;
    let status = detach(ctx, &home, &store, &workspace, args, &argv)?;
    ctx.out.emit(&status, || render_started(&status));
    Ok(())
}

pub fn cmd_status(ctx: &Context) -> Result<(), CliError> {
    let home = fleet_home()?;
    let status = match inspect(&home, None)? {
        Found::Running(record) => {
            status_of(&home, &record, open_workspace(&record.workspace).as_ref())
        }
        Found::NotRunning(stale) => {
            let mut status = not_running(&home, stale);
            status.foreground = foreground_supervisors(ctx);
            status.running = !status.foreground.is_empty();
            status
        }
    };
    ctx.out.emit(&status, || render_status(&status));
    if status.running { Ok(()) } else { Err(CliError::exit_only(exit_code::NOT_RUNNING)) }
}

pub fn cmd_stop(ctx: &Context, args: &StopArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let Stopped { report, .. } = stop(ctx, &home, args)?;
    ctx.out.emit(&report, || render_stop(&report));
    Ok(())
}

pub fn cmd_restart(ctx: &Context, args: &StopArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let Stopped { report: stopped, record, store } = stop(ctx, &home, args)?;
    let Some(record) = record else {
        return Err(CliError::new(format!(
            "nothing to restart: no supervisor was started with `fleet run --detach` in {}",
            home.display()
        ))
        .with_hint("start one with `fleet run --detach`")
        .with_code(exit_code::NOT_RUNNING));
    };
    let start = recorded_start_args(&record)?;
    let store = store.or_else(|| open_workspace(&record.workspace)).ok_or_else(|| {
        CliError::new(format!("cannot open the workspace {}", record.workspace.display()))
            .with_hint("check it still exists, or start anew with `fleet run --detach`")
    })?;
    let started = detach(ctx, &home, &store, &record.workspace, &start, &record.argv)?;
    let restarted = Restarted { stopped, started };
    ctx.out.emit(&restarted, || {
        format!("{}\n{}", render_stop(&restarted.stopped), render_started(&restarted.started))
    });
    Ok(())
}

/// The `fleet run` options of a recorded command line.
fn recorded_start_args(record: &DaemonRecord) -> Result<StartArgs, CliError> {
    let parsed = <crate::cli::Cli as clap::Parser>::try_parse_from(&record.argv);
    match parsed.map(|cli| cli.command) {
        Ok(crate::cli::Command::Run(run)) if run.control.is_none() => Ok(StartArgs {
            detach: true,
            detached_lock_fd: None,
            detached_argv: Vec::new(),
            ..run.start
        }),
        _ => Err(CliError::new(format!(
            "the pid file records a command line that is not `fleet run --detach`: {}",
            shell_line(&record.argv)
        ))
        .with_hint("start the supervisor with `fleet run --detach`")),
    }
}

/// Starts the supervisor in the background and waits until it is up.
fn detach(
    ctx: &Context,
    home: &Path,
    store: &Store,
    workspace: &Path,
    args: &StartArgs,
    argv: &[String],
) -> Result<DaemonStatus, CliError> {
    let lock = take_lock(home)?;
    // Absolute (it exists now): the supervisor runs in the fleet home, and the record names
    // its files wherever it is read from.
    let home = &canonical(home)?;
    let stale = match inspect(home, Some(&lock))? {
        Found::Running(record) => return Err(already_running(home, Some(&record))),
        Found::NotRunning(stale) => stale,
    };
    if let Some(stale) = &stale {
        ctx.out.note(&format!("fleet run: removed a stale pid file ({})", stale.reason));
    }
    let output = OutputFile::open(home)?;
    let exe = std::env::current_exe()?;
    let mut command = std::process::Command::new(exe);
    command
        .args(child_args(workspace, args, lock.raw_fd(), argv))
        .env("FLEET_HOME", home)
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(output.file.try_clone()?)
        .stderr(output.file.try_clone()?);
    process::in_new_session_keeping(&mut command, lock.raw_fd());
    let mut child = command
        .spawn()
        .map_err(|e| CliError::new(format!("starting the supervisor in the background: {e}")))?;
    let pid = child.id();
    let up = match wait_until_up(&mut child, home, store) {
        Startup::Up(record) => Some(record),
        Startup::Exited(status) if status.success() => {
            ctx.out.note("fleet run: the supervisor has already finished (--until-idle)");
            None
        }
        Startup::Exited(status) => return Err(failed_start(&status.to_string(), &output)),
        Startup::TimedOut => {
            return Err(CliError::new(format!(
                "the supervisor (pid {pid}) did not come up within {} s; it goes on starting in the background",
                STARTUP_DEADLINE.as_secs()
            ))
            .with_hint(format!(
                "`fleet run status` tells when it is up; {} says what it is doing",
                output.path.display()
            )));
        }
    };
    let mut status = match up {
        Some(record) if record.liveness() == Liveness::Running => {
            status_of(home, &record, Some(store))
        }
        _ => not_running(home, None),
    };
    status.stale = stale;
    Ok(status)
}

/// `--db <workspace> run [--until-idle] [--as NAME] --detached-lock-fd <fd>`, then
/// `--detached-argv ARG` for each argument of `typed` (the command line as typed).
fn child_args(
    workspace: &Path,
    args: &StartArgs,
    lock_fd: i32,
    typed: &[String],
) -> Vec<std::ffi::OsString> {
    let mut argv: Vec<std::ffi::OsString> = vec!["--db".into(), workspace.into(), "run".into()];
    if args.until_idle {
        argv.push("--until-idle".into());
    }
    if let Some(name) = &args.lease_name {
        argv.extend(["--as".into(), name.into()]);
    }
    argv.extend(["--detached-lock-fd".into(), lock_fd.to_string().into()]);
    for arg in typed {
        argv.extend(["--detached-argv".into(), arg.into()]);
    }
    argv
}

/// How the start of a detached supervisor went.
enum Startup {
    /// It recorded itself in the pid file and registered in the store.
    Up(DaemonRecord),
    /// It exited before or right after registering.
    Exited(ExitStatus),
    TimedOut,
}

/// Waits for the child to write its pid file under `home` and register as a supervisor in
/// `store` (or to exit, or for the deadline).
fn wait_until_up(child: &mut Child, home: &Path, store: &Store) -> Startup {
    let deadline = Instant::now() + STARTUP_DEADLINE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Startup::Exited(status);
        }
        if let Ok(Some(record)) = daemon::load(home)
            && record.pid == child.id()
            && record.registration(store).is_some()
        {
            return Startup::Up(record);
        }
        if Instant::now() >= deadline {
            return Startup::TimedOut;
        }
        std::thread::sleep(POLL);
    }
}

/// The error of a supervisor that stopped while starting: its output since it was started.
fn failed_start(status: &str, output: &OutputFile) -> CliError {
    let lines = output.lines_since_start();
    let shown = if lines.is_empty() {
        " (it printed nothing)".to_owned()
    } else {
        format!("; the last lines of {}:\n  {}", output.path.display(), lines.join("\n  "))
    };
    CliError::new(format!("the supervisor stopped while starting ({status}){shown}"))
        .with_hint("fix what it says, then run `fleet run --detach` again")
}

/// The output file of a detached supervisor, opened for appending, with the offset its new
/// start begins at.
struct OutputFile {
    path: PathBuf,
    file: std::fs::File,
    start: u64,
}

impl OutputFile {
    /// Opens `$FLEET_HOME/logs/fleet-run.out` (moving a full one to `.1` first) and writes a
    /// line marking this start.
    fn open(home: &Path) -> Result<OutputFile, CliError> {
        let dir = home.join(LOG_DIR);
        let path = dir.join(OUTPUT_FILE);
        let fail = |e: std::io::Error| CliError::new(format!("opening {}: {e}", path.display()));
        create_private_dir(&dir).map_err(fail)?;
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > OUTPUT_MAX_BYTES) {
            let mut rotated = path.clone().into_os_string();
            rotated.push(".1");
            std::fs::rename(&path, rotated).map_err(fail)?;
        }
        let mut file = open_for_append(&path).map_err(fail)?;
        writeln!(file, "--- {} fleet run --detach (pid {})", Timestamp::now(), std::process::id())
            .map_err(fail)?;
        let start = file.metadata().map_err(fail)?.len();
        Ok(OutputFile { path, file, start })
    }

    /// The last lines written since this start.
    fn lines_since_start(&self) -> Vec<String> {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.path)
            && file.seek(SeekFrom::Start(self.start)).is_ok()
        {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec()
    }
}

/// Takes the home's lock, or reports the supervisor that holds it (waiting a moment for the
/// pid file of one that is just starting).
fn take_lock(home: &Path) -> Result<HomeLock, CliError> {
    let taken = HomeLock::try_take(home).map_err(|e| {
        CliError::new(format!("locking {}: {e}", daemon::lock_path(home).display()))
    })?;
    if let Some(lock) = taken {
        return Ok(lock);
    }
    let deadline = Instant::now() + PID_FILE_WAIT;
    loop {
        if let Ok(Found::Running(record)) = inspect(home, None) {
            return Err(already_running(home, Some(&record)));
        }
        if Instant::now() >= deadline {
            return Err(already_running(home, None));
        }
        std::thread::sleep(POLL);
    }
}

fn already_running(home: &Path, record: Option<&DaemonRecord>) -> CliError {
    let message = match record {
        Some(record) => format!(
            "a supervisor already runs in the background for {} (pid {}, since {})",
            home.display(),
            record.pid,
            record.started_at.round(jiff::Unit::Second).unwrap_or(record.started_at)
        ),
        None => format!("a supervisor is starting in the background for {}", home.display()),
    };
    CliError::new(message).with_hint(
        "`fleet run status` shows it, `fleet run stop` stops it, `fleet run restart` restarts it",
    )
}

/// Reads and judges the pid file under `home`. A stale one is removed — by the holder of the
/// home's lock (`held`), or when the lock is free (no supervisor is starting, which would
/// write a new file).
fn inspect(home: &Path, held: Option<&HomeLock>) -> Result<Found, CliError> {
    let (record, reason) = match daemon::load(home) {
        Ok(None) => return Ok(Found::NotRunning(None)),
        Ok(Some(record)) => match record.liveness() {
            Liveness::Running => return Ok(Found::Running(record)),
            Liveness::Stale(reason) => (Some(record), reason),
        },
        Err(reason) => (None, reason),
    };
    // The lock is held until the file is gone: a `--detach` taking it meanwhile would write
    // its own pid file, which this must not remove.
    let taken = if held.is_some() { None } else { HomeLock::try_take(home).ok().flatten() };
    if held.is_some() || taken.is_some() {
        daemon::remove(home).map_err(|e| {
            CliError::new(format!(
                "removing the stale pid file {}: {e}",
                daemon::record_path(home).display()
            ))
        })?;
    }
    Ok(Found::NotRunning(Some(StaleRecord { pid: record.as_ref().map(|r| r.pid), reason, record })))
}

/// `path` made absolute, symbolic links resolved (it exists).
fn canonical(path: &Path) -> Result<PathBuf, CliError> {
    std::fs::canonicalize(path)
        .map_err(|e| CliError::new(format!("resolving {}: {e}", path.display())))
}

/// The workspace of this command, absolute: the one a detached supervisor serves.
fn canonical_workspace(ctx: &Context) -> Result<PathBuf, CliError> {
    let dir = ctx.workspace_dir()?;
    std::fs::canonicalize(dir)
        .map_err(|e| CliError::new(format!("resolving the workspace {}: {e}", dir.display())))
}

fn open_workspace(dir: &Path) -> Option<Store> {
    let mut store = Store::open(dir).ok()?;
    store.skip_close_on_exit();
    Some(store)
}

/// The live supervisors registered in the workspace (none of them started with `--detach`,
/// when no pid file names one).
fn foreground_supervisors(ctx: &Context) -> Vec<ForegroundSupervisor> {
    let live =
        ctx.store().ok().and_then(|store| lease::live_supervisors(store, Timestamp::now()).ok());
    live.unwrap_or_default()
        .into_iter()
        .map(|r| ForegroundSupervisor {
            name: r.identity.name,
            host: r.identity.host,
            pid: r.identity.pid,
            started_at: r.started_at,
            max_concurrent: r.max_concurrent,
        })
        .collect()
}

/// The recorded supervisor's running agents and its `max_concurrent`.
fn agents_of(store: &Store, record: &DaemonRecord) -> Option<(usize, usize)> {
    let registration = record.registration(store)?;
    let filter = ListFilter { statuses: vec![Status::InProgress], ..ListFilter::default() };
    let (issues, _) = store.read().ok()?.list(&filter).ok()?;
    let instance = &registration.identity.instance;
    let running = issues
        .iter()
        .filter(|s| s.issue.fleet.lease.as_ref().is_some_and(|l| &l.instance == instance))
        .count();
    Some((running, registration.max_concurrent))
}

/// What `status` says of the running supervisor `record` names, whose workspace is `store`
/// (`None` when it cannot be opened: its agents are then unknown).
fn status_of(home: &Path, record: &DaemonRecord, store: Option<&Store>) -> DaemonStatus {
    let agents = store.and_then(|store| agents_of(store, record));
    let uptime = Timestamp::now().duration_since(record.started_at).as_secs().max(0);
    DaemonStatus {
        running: true,
        pid: Some(record.pid),
        started_at: Some(record.started_at),
        uptime_secs: Some(uptime.unsigned_abs()),
        workspace: Some(record.workspace.display().to_string()),
        argv: Some(record.argv.clone()),
        agents: agents.map(|(running, _)| running),
        max_concurrent: agents.map(|(_, max)| max),
        log: record.log.display().to_string(),
        output: record.output.display().to_string(),
        pid_file: daemon::record_path(home).display().to_string(),
        stale: None,
        foreground: Vec::new(),
    }
}

fn not_running(home: &Path, stale: Option<StaleRecord>) -> DaemonStatus {
    let logs = home.join(LOG_DIR);
    DaemonStatus {
        running: false,
        pid: None,
        started_at: None,
        uptime_secs: None,
        workspace: None,
        argv: None,
        agents: None,
        max_concurrent: None,
        log: logs.join(RUN_LOG_FILE).display().to_string(),
        output: logs.join(OUTPUT_FILE).display().to_string(),
        pid_file: daemon::record_path(home).display().to_string(),
        stale,
        foreground: Vec::new(),
    }
}

/// What [`stop`] found and did.
struct Stopped {
    report: StopReport,
    /// The pid file's record (also a stale one's, for `restart`).
    record: Option<DaemonRecord>,
    /// The workspace of the supervisor it stopped, opened once (for `restart` to reuse).
    store: Option<Store>,
}

/// Stops the supervisor the pid file names, if it runs.
fn stop(ctx: &Context, home: &Path, args: &StopArgs) -> Result<Stopped, CliError> {
    let record = match inspect(home, None)? {
        Found::Running(record) => record,
        Found::NotRunning(stale) => {
            let record = stale.as_ref().and_then(|s| s.record.clone());
            let report =
                StopReport { was_running: false, pid: None, stopping: Stopping::default(), stale };
            return Ok(Stopped { report, record, store: None });
        }
    };
    let timeout = args.timeout.map_or_else(|| default_timeout(home), Duration::from_secs);
    ctx.out.note(&format!(
        "fleet run: stopping the supervisor (pid {}): SIGTERM, then SIGKILL after {} s",
        record.pid,
        timeout.as_secs()
    ));
    let store = open_workspace(&record.workspace);
    let stopping = record.stop(store.as_ref(), timeout);
    let report = StopReport { was_running: true, pid: Some(record.pid), stopping, stale: None };
    let _ = daemon::remove_if_names(home, record.pid);
    Ok(Stopped { report, record: Some(record), store })
}

/// `shutdown_grace_secs` of runtime.toml (30 s when it cannot be read) plus a margin.
fn default_timeout(home: &Path) -> Duration {
    let config = crate::config::RuntimeConfig::load(&home.join(crate::config::FILE_NAME));
    config.map_or(Duration::from_secs(30), |c| c.shutdown_grace()) + STOP_MARGIN
}

/// A command line for people: arguments with spaces or quotes are quoted.
fn shell_line(argv: &[String]) -> String {
    let quoted: Vec<String> = argv.iter().map(|arg| crate::cli::output::shell_word(arg)).collect();
    quoted.join(" ")
}

fn render_started(status: &DaemonStatus) -> String {
    let Some(pid) = status.pid else {
        return format!("fleet run: the supervisor ran and finished; its log: {}", status.log);
    };
    [
        format!("fleet run: started in the background (pid {pid})"),
        format!("  log:    {} (`fleet log -f` follows it)", status.log),
        format!("  output: {} (its stdout and stderr)", status.output),
        "`fleet run status` shows it; `fleet run stop` stops it.".to_owned(),
    ]
    .join("\n")
}

fn render_status(status: &DaemonStatus) -> String {
    let (Some(pid), Some(started_at)) = (status.pid, status.started_at) else {
        let why = match &status.stale {
            Some(stale) => format!("removed a stale pid file: {}", stale.reason),
            None => format!("no pid file at {}", status.pid_file),
        };
        if !status.foreground.is_empty() {
            let mut lines = vec![format!("fleet run: not running in the background ({why})")];
            for sup in &status.foreground {
                let since = sup.started_at.round(jiff::Unit::Second).unwrap_or(sup.started_at);
                lines.push(format!(
                    "  running in the foreground: {} (pid {} on {}) since {since}, up to {} agents; Ctrl-C in its terminal stops it",
                    sup.name, sup.pid, sup.host, sup.max_concurrent
                ));
            }
            return lines.join("\n");
        }
        return format!(
            "fleet run: not running in the background ({why})\n  start it: fleet run --detach"
        );
    };
    let agents = match (status.agents, status.max_concurrent) {
        (Some(running), Some(max)) => format!("{running} of {max} running"),
        _ => "unknown (not registered in the store yet)".to_owned(),
    };
    let since = started_at.round(jiff::Unit::Second).unwrap_or(started_at);
    [
        format!(
            "fleet run: running in the background (pid {pid}) since {since}, up {}",
            duration(status.uptime_secs.unwrap_or(0))
        ),
        format!("  agents:    {agents}"),
        format!("  workspace: {}", status.workspace.as_deref().unwrap_or("?")),
        format!("  command:   {}", shell_line(status.argv.as_deref().unwrap_or_default())),
        format!("  log:       {} (`fleet log -f` follows it)", status.log),
        format!("  output:    {}", status.output),
    ]
    .join("\n")
}

fn render_stop(report: &StopReport) -> String {
    let Some(pid) = report.pid else {
        return match &report.stale {
            Some(stale) => format!(
                "fleet run: not running in the background (removed a stale pid file: {})",
                stale.reason
            ),
            None => "fleet run: not running in the background; nothing to stop".to_owned(),
        };
    };
    let how = if report.stopping.forced {
        format!(
            "did not exit in time: killed (pid {pid}) after {:.1} s",
            report.stopping.waited_secs
        )
    } else {
        format!("stopped (pid {pid}) in {:.1} s", report.stopping.waited_secs)
    };
    let leftovers = match report.stopping.leftovers_killed {
        0 => String::new(),
        n => format!("; killed {n} processes its run left"),
    };
    format!("■ fleet run {how}{leftovers}")
}
