//! One attempt of one task: spawn the agent in its own process group, stream and log its
//! events, watch for context pressure, rate limits, the attempt's budget, silence, the attempt
//! deadline and the supervisor's orders, stop it when needed, clean up everything it left, and return an
//! [`Outcome`].
//!
//! The runner never writes the queue: the supervisor records the outcome. It talks to the
//! supervisor through its return value and, for rate limits that should pause other spawns
//! at once, a message on `signals`. The supervisor talks to it through two watch channels: the
//! fleet-wide [`Stop`] level and this task's [`Control`] (the task was changed by someone).
//!
//! Every process of the attempt carries `FLEET_INSTANCE` and `FLEET_ATTEMPT` in its
//! environment and the agent dies with the supervisor (`PR_SET_PDEATHSIG`), so when the
//! attempt ends — or the supervisor is killed — whatever it started can be found and killed,
//! even processes that left the agent's process group.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::LOG_FILTER_VAR;
use super::Stop;
use super::lease::{ATTEMPT_VAR, AttemptRecord};
use super::ledger::{AttemptUsage, Meter};
use super::outcome::Outcome;
use super::pause::PauseCause;
use super::taskdir::{TaskDir, TaskLogs};
use crate::coders::diagnose;
use crate::coders::{
    Account, AgentEvent, Coder, EventKind, ExitMeaning, Fault, RateLimitStatus, SpawnSpec, TaskSpec,
};
use crate::config::{Price, price_of};
use crate::model::Issue;
use crate::redact::Redactor;

/// Lines of stderr kept in memory for the failure reason.
const STDERR_TAIL_LINES: usize = 40;
/// How long an agent that closed or blocked its own task may take to finish by itself.
pub const WRAP_UP: Duration = Duration::from_secs(60);
/// After the agent exited, output is still read until its stdout closes or this long passes
/// without a line (something it left running may keep the pipe open; what the agent wrote
/// before it exited is already in the pipe and is read at once).
const DRAIN_IDLE: Duration = Duration::from_millis(200);
/// How long the stderr copy may take to finish once everything of the attempt was stopped.
const STDERR_FINISH: Duration = Duration::from_secs(2);
/// With many agents running ([`super::many_agents`]), how long an agent's stdout is left
/// unread once what was read of it is handled: its lines are then read a spell's worth at a
/// time, one read and one wake-up for several lines instead of one each (the most a reaction
/// to a line is delayed by; stalls and time limits are not, they run on their own clocks).
/// Not once the agent has exited: its output is then drained. A chatty agent's two seconds of
/// output are a few KiB (its pipe holds 64), and each spell costs a read, a wake-up and a write
/// of the event log: 2 s halves what 1 s cost 256 chatty agents' supervisor in system calls.
const READ_SPELL: Duration = Duration::from_millis(2000);

/// Timing knobs of one attempt (from the runtime config at spawn time).
#[derive(Debug, Clone, Copy)]
pub struct RunnerSettings {
    /// Kill after this long without output (`None`: never).
    pub stall_timeout: Option<Duration>,
    /// Kill after this long in all (`None`: never).
    pub attempt_timeout: Option<Duration>,
    pub grace: Duration,
    pub context_threshold_pct: u8,
    /// Pause spawning once the CLI reports a rate-limit window this full.
    pub rate_limit_threshold_pct: u8,
}

/// What the supervisor says about this task while its agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    Run,
    /// The agent closed or blocked its own task: let it finish within [`WRAP_UP`].
    WrapUp,
    /// Someone else changed the task (released, closed, blocked, reopened, deleted, took it):
    /// stop the agent now. The text says what happened.
    Revoke(String),
}

/// Everything one attempt needs.
pub struct Attempt {
    pub issue: Issue,
    pub coder: Arc<dyn Coder>,
    /// The coder's account the attempt runs on: its variables are set over the coder's own.
    pub account: Option<Account>,
    pub model: String,
    pub cwd: PathBuf,
    pub task_dir: TaskDir,
    /// Variables the supervisor adds (FLEET_HOME, BEADS_DIR, PATH, FLEET_INSTANCE…).
    pub env: Vec<(String, String)>,
    /// This attempt's id (the lease's), exported as `FLEET_ATTEMPT`.
    pub attempt_id: String,
    /// The supervisor instance, recorded with the attempt's processes.
    pub instance: String,
    pub settings: RunnerSettings,
    /// The `[prices.*]` table, for models whose CLI reports no cost.
    pub prices: std::collections::BTreeMap<String, Price>,
    /// The fleet-wide stop level.
    pub stop: watch::Receiver<Stop>,
    /// This task's orders.
    pub control: watch::Receiver<Control>,
    /// The messages for the task not yet acknowledged, for the prompt.
    pub mail: Vec<crate::coord::Message>,
    /// What the attempt may spend at most (`[budget]`): at it the agent is stopped.
    pub budget: super::budget::Cap,
}

impl Attempt {
    /// The name of the account the attempt runs on (empty: none).
    fn account_name(&self) -> &str {
        self.account.as_ref().map_or("", |account| account.name.as_str())
    }
}

/// Messages a runner sends while it runs.
#[derive(Debug, Clone)]
pub enum Signal {
    /// The agent started with this pid.
    Started { task_id: String, pid: u32 },
    /// A rate limit was hit (`rejected`), or a window is above the configured threshold
    /// (`near`): stop spawning this coder until then.
    RateLimited {
        coder: String,
        /// The account the attempt runs on (empty: none): only it pauses.
        account: String,
        resets_at: Option<Timestamp>,
        window: Option<String>,
        near: Option<f64>,
    },
    /// The CLI of an attempt on an account reported one of its rate-limit windows (allowed
    /// or not): for choosing accounts by reset time.
    Window {
        coder: String,
        account: String,
        window: Option<String>,
        resets_at: Option<Timestamp>,
        utilization_pct: Option<f64>,
    },
}

/// Why the runner stopped the agent itself.
enum Halt {
    Pressure {
        peak: u64,
        limit: u64,
    },
    RateLimit {
        resets_at: Option<Timestamp>,
        window: Option<String>,
    },
    Stall(Duration),
    Timeout(Duration),
    Shutdown,
    Revoked(String),
    WrapUpOver,
    /// The CLI said on stderr that it retries a provider that fails (5xx, overloaded).
    Outage(String),
    /// The attempt reached what was left of a `[budget]` cap: what it spent.
    Budget(String),
}

/// What the agent's own output said went wrong, gathered while it ran.
#[derive(Debug, Default)]
struct Diagnosis {
    fault: Option<Fault>,
    /// The CLI's last error message (an API error in its result, an error event).
    error_text: Option<String>,
}

impl Diagnosis {
    fn observe(&mut self, event: &AgentEvent) {
        if let Some(fault) = event.fault {
            self.fault = Some(fault);
        }
        let is_failure = event.kind == EventKind::Error
            || (event.kind == EventKind::SessionEnded && event.is_error);
        if is_failure && let Some(text) = event.text.as_deref().filter(|t| !t.trim().is_empty()) {
            self.error_text = Some(text.to_string());
        }
    }
}

/// Runs one attempt to its end.
pub async fn run(mut attempt: Box<Attempt>, signals: mpsc::UnboundedSender<Signal>) -> Outcome {
    match run_inner(&mut attempt, &signals).await {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

/// The outcome of an attempt that could not start because `what` failed with `error`: short
/// of a resource (open files, processes) is the fleet's fault; anything else blocks the task
/// with `fix`.
fn unstarted(what: &str, error: &std::io::Error, fix: &str) -> Outcome {
    let redact = |text: String| super::process_redactor().redact_text(&text).into_owned();
    match crate::process::exhausted_limit(error) {
        Some(limit) => Outcome::NoResources { detail: redact(format!("{what}: {limit}")) },
        None => Outcome::SpawnFailed { error: redact(format!("{what}: {error}")), fix: fix.into() },
    }
}

/// What to do when the task directory cannot be written.
const TASK_DIR_FIX: &str = "make $FLEET_HOME/tasks a writable directory on a disk with room (fleet run writes each task's logs there)";

/// The redactor of one attempt: token shapes, and the values of every secret-looking variable
/// the agent is given (inherited, the coder's own, the supervisor's).
fn attempt_redactor(spec_env: &[(String, String)], added: &[(String, String)]) -> Redactor {
    let inherited = crate::env::all();
    let all = inherited.iter().chain(spec_env).chain(added);
    Redactor::from_env(all.map(|(k, v)| (k.as_str(), v.as_str())))
}

async fn run_inner(
    attempt: &mut Attempt,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Result<Outcome, Outcome> {
    let (spec, prompt) = prepare(attempt)?;
    let redactor = attempt_redactor(&spec.env, &attempt.env);
    let dir = attempt.task_dir.clone();
    let mut logs = dir.logs(redactor.clone());
    if let Err(error) = dir.save_prompt(attempt.issue.fleet.attempts, &prompt, &redactor) {
        tracing::warn!(%error, task = %attempt.issue.id, "cannot save the attempt's prompt");
    }
    let mut meter = start_meter(attempt);
    let mut child = spawn_agent(attempt, &spec).map_err(|error| spawn_error(&spec, &error))?;
    let pid = child.child.id().unwrap_or(0);
    record_start(attempt, &spec, &prompt, pid, &mut logs, signals);
    // Not kept while the agent runs: the prompt (and its copy among the arguments) is a few
    // KiB an agent.
    drop((spec, prompt));
    let (Some(stderr), Some(stdout)) = (child.child.stderr.take(), child.child.stdout.take())
    else {
        let error = std::io::Error::other("the agent's stdout or stderr was not captured");
        return Err(unstarted("starting the agent", &error, "report this as a bug of fleet"));
    };
    let (trouble_tx, trouble) = mpsc::unbounded_channel();
    let reader = attempt.coder.reports_provider_faults().then(|| Arc::clone(&attempt.coder));
    let stderr_log = dir.stderr_writer(redactor.clone());
    let stderr_task = tokio::spawn(collect_stderr(stderr, stderr_log, reader, trouble_tx));
    let mut diagnosis = Diagnosis::default();
    let mut sinks =
        Sinks { logs: &mut logs, diagnosis: &mut diagnosis, meter: &mut meter, trouble };
    let stop = watch_output(attempt, &mut child.child, stdout, &mut sinks, signals).await;
    let _ = logs.flush();
    meter.finish(&dir.root);
    let pgid = i32::try_from(pid).unwrap_or(0);
    let grace = stop.as_ref().map(|halt| grace_for(halt, attempt));
    let forced = stop_everything(attempt, pgid, grace).await;
    let status = child.child.wait().await.map_err(|error| {
        unstarted("waiting for the agent", &error, "nothing to fix if it does not happen again")
    })?;
    let stderr_tail = match tokio::time::timeout(STDERR_FINISH, stderr_task).await {
        Ok(Ok(tail)) => tail,
        _ => String::new(),
    };
    let outcome = match stop {
        Some(stop) => stopped_outcome(stop, status.code()),
        None => exited_outcome(
            status.code(),
            attempt.coder.as_ref(),
            &diagnosis,
            &stderr_tail,
            &redactor,
        ),
    };
    let _ = logs.runner(
        "attempt_finished",
        json!({ "attempt": attempt.issue.fleet.attempts, "exit_code": status.code(),
                "forced_kill": forced, "outcome": outcome.to_string() }),
        Timestamp::now(),
    );
    Ok(outcome)
}

/// Records the messages the prompt lists as shown to this attempt's agent, so a coder's hook
/// (`bd mail inbox --new`) delivers only later ones. A failure only means they may come twice.
fn remember_delivered(root: &std::path::Path, mail: &[crate::coord::Message]) {
    let ids: String = mail.iter().map(|m| format!("{}\n", m.id)).collect();
    if let Err(error) = std::fs::write(root.join(crate::coord::DELIVERED_FILE), ids) {
        tracing::warn!(%error, "recording the messages of the prompt failed");
    }
}

/// Gets the task directory and the project ready, and builds the prompt and the command
/// line. Returns the spawn spec and the prompt.
fn prepare(attempt: &Attempt) -> Result<(SpawnSpec, String), Outcome> {
    let issue = &attempt.issue;
    let dir = &attempt.task_dir;
    dir.prepare(issue).map_err(|error| {
        unstarted(&format!("preparing {}", dir.root.display()), &error, TASK_DIR_FIX)
    })?;
    let artifacts = dir.artifacts();
    remember_delivered(&dir.root, &attempt.mail);
    let prompt = super::prompt::build(issue, &attempt.cwd, (&dir.root, &artifacts), &attempt.mail);
    let task = TaskSpec {
        id: &issue.id,
        title: &issue.title,
        description: &issue.description,
        cwd: &attempt.cwd,
        task_dir: &dir.root,
        artifact_dir: &artifacts,
        model: &attempt.model,
        prompt: &prompt,
    };
    attempt.coder.prepare(&task).map_err(|error| {
        let what = format!("preparing {} for {}", attempt.cwd.display(), attempt.coder.name());
        let fix = format!(
            "make {} writable by the user fleet runs as (the {} coder writes its settings there)",
            attempt.cwd.display(),
            attempt.coder.name()
        );
        unstarted(&what, &error, &fix)
    })?;
    let mut spec = attempt.coder.spawn_spec(&task);
    if let Some(account) = &attempt.account {
        spec.set_env(&account.env);
    }
    Ok((spec, prompt))
}

/// The ledger entry of this attempt, priced by the model's entry of the price table.
fn start_meter(attempt: &Attempt) -> Meter {
    let mut usage = AttemptUsage::start(
        attempt.issue.fleet.attempts,
        &attempt.attempt_id,
        attempt.coder.name(),
        &attempt.model,
    );
    usage.account = attempt.account_name().to_owned();
    usage.cwd = attempt.cwd.display().to_string();
    let mut meter =
        Meter::start(&attempt.task_dir.root, usage, price_of(&attempt.prices, &attempt.model));
    meter.set_context_limit(attempt.coder.context_limit(&attempt.model));
    meter
}

/// Where the agent's events go: the task's logs, the failure diagnosis, the ledger; and where
/// the provider trouble its stderr reports comes from.
struct Sinks<'a> {
    logs: &'a mut TaskLogs,
    diagnosis: &'a mut Diagnosis,
    meter: &'a mut Meter,
    /// Boxed: a channel holds its first block of 32 slots from the start, which at the size
    /// of an event would be ~7 KiB an agent for a channel that is nearly always empty.
    trouble: mpsc::UnboundedReceiver<Box<AgentEvent>>,
}

/// A spawned agent, registered as owned until its status has been collected, so no other
/// runner's orphan reaping takes it.
struct SpawnedAgent {
    child: tokio::process::Child,
    _owned: crate::process::OwnedChild,
}

/// Starts the agent as the leader of its own process group, tagged with the attempt, dying
/// with the supervisor.
fn spawn_agent(attempt: &Attempt, spec: &SpawnSpec) -> std::io::Result<SpawnedAgent> {
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        // The supervisor's log filter is not the agent's: its `bd` calls stay quiet.
        .env_remove(LOG_FILTER_VAR)
        .envs(spec.env.iter().cloned())
        .envs(attempt.env.iter().cloned())
        .env(ATTEMPT_VAR, &attempt.attempt_id)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    crate::process::die_with_parent(command.as_std_mut());
    let (child, owned) = crate::process::spawn_owned(&mut command)?;
    Ok(SpawnedAgent { child, _owned: owned })
}

/// Records the started agent: its process group for a later run (`attempt.json`), the
/// supervisor's live view, and `log.jsonl` (with the prompt shown by its size only).
fn record_start(
    attempt: &Attempt,
    spec: &SpawnSpec,
    prompt: &str,
    pid: u32,
    logs: &mut TaskLogs,
    signals: &mpsc::UnboundedSender<Signal>,
) {
    let issue = &attempt.issue;
    let record = AttemptRecord::of_child(&attempt.instance, &attempt.attempt_id, pid);
    if let Err(error) = record.save(&attempt.task_dir.root) {
        tracing::warn!(%error, task = %issue.id, "cannot record the attempt's process group");
    }
    let _ = signals.send(Signal::Started { task_id: issue.id.clone(), pid });
    let shown_args: Vec<String> = spec
        .args
        .iter()
        .map(|a| if a == prompt { format!("<prompt: {} bytes>", a.len()) } else { a.clone() })
        .collect();
    let _ = logs.runner(
        "attempt_started",
        json!({ "attempt": issue.fleet.attempts, "attempt_id": attempt.attempt_id, "pid": pid,
                "coder": attempt.coder.name(), "account": attempt.account.as_ref().map(|a| &a.name),
                "model": attempt.model, "program": spec.program, "args": shown_args,
                "cwd": spec.cwd }),
        Timestamp::now(),
    );
}

/// A spawn that failed, by its real cause: a missing or unrunnable program is the fleet's
/// fault (the coder is paused, the task is not charged), and so is a limit of open files or
/// processes (spawning is held back); a working directory that is gone or a command line too
/// long for the system block the task with their own fix.
fn spawn_error(spec: &SpawnSpec, error: &std::io::Error) -> Outcome {
    use std::io::ErrorKind;
    let program = &spec.program;
    if !spec.cwd.is_dir() {
        return Outcome::missing_cwd(&spec.cwd);
    }
    if error.raw_os_error() == Some(libc::E2BIG) {
        let bytes: usize = spec.args.iter().map(String::len).sum();
        return Outcome::SpawnFailed {
            error: format!(
                "the command line of {program:?} is too long for the system ({bytes} bytes of arguments: argument list too long)"
            ),
            fix: "shorten the task's description (the prompt is passed as an argument), or move its details to a file the description names".into(),
        };
    }
    let detail = match error.kind() {
        ErrorKind::NotFound => format!("the program {program:?} was not found"),
        ErrorKind::PermissionDenied => format!("the program {program:?} is not executable"),
        _ => {
            let fix = format!(
                "check that {program:?} runs for the user fleet runs as (fleet doctor checks each coder's CLI)"
            );
            return unstarted(&format!("could not run {program:?}"), error, &fix);
        }
    };
    Outcome::CoderFault { cause: PauseCause::Spawn, detail }
}

/// How long an agent stopped for `halt` gets to exit after SIGTERM: the shutdown grace, but
/// for a task someone else changed only [`REVOKED_GRACE`] — the task is no longer the agent's
/// to finish, and a person who released or closed it expects it stopped at once (Claude Code
/// takes about two seconds to exit on SIGTERM).
fn grace_for(halt: &Halt, attempt: &Attempt) -> Duration {
    match halt {
        Halt::Revoked(_) => REVOKED_GRACE.min(attempt.settings.grace),
        _ => attempt.settings.grace,
    }
}

/// The grace of an agent whose task someone else changed.
pub const REVOKED_GRACE: Duration = Duration::from_millis(300);

/// Stops the agent's process group — with `grace` after SIGTERM when the runner is stopping
/// the agent, none for whatever an agent that exited by itself left in its group — then kills
/// every other process of the attempt (those that left the group) and reaps. Returns true if
/// SIGKILL was needed.
async fn stop_everything(attempt: &Attempt, pgid: i32, grace: Option<Duration>) -> bool {
    let grace = match grace {
        Some(grace) if *attempt.stop.borrow() != Stop::Now => grace,
        _ => Duration::ZERO,
    };
    let mut stop = attempt.stop.clone();
    let cut = async move {
        let _ = stop.wait_for(|level| *level == Stop::Now).await;
    };
    let forced = pgid > 1 && crate::process::terminate_group(pgid, pgid, grace, cut).await;
    let tag = format!("{ATTEMPT_VAR}={}", attempt.attempt_id);
    let leftovers =
        tokio::task::spawn_blocking(move || crate::process::kill_tagged(&tag)).await.unwrap_or(0);
    if leftovers > 0 {
        tracing::info!(leftovers, task = %attempt.issue.id, "killed processes the agent left");
    }
    crate::process::reap_orphans(&Default::default());
    forced
}

fn stopped_outcome(stop: Halt, code: Option<i32>) -> Outcome {
    match stop {
        Halt::Pressure { peak, limit } => Outcome::ContextPressure { peak_tokens: peak, limit },
        Halt::RateLimit { resets_at, window } => Outcome::RateLimited { resets_at, window },
        Halt::Stall(silent_for) => Outcome::Stalled { silent_for },
        Halt::Timeout(after) => Outcome::TimedOut { after },
        Halt::Shutdown => Outcome::Shutdown,
        Halt::Revoked(reason) => Outcome::Revoked { reason },
        Halt::WrapUpOver => Outcome::Exited { code, reason: String::new() },
        Halt::Outage(detail) => Outcome::CoderFault { cause: PauseCause::Outage, detail },
        Halt::Budget(detail) => Outcome::OverBudget { detail },
    }
}

/// The outcome of an agent that exited by itself and failed, when the failure was not the
/// task's: for coders that talk to a model provider, a rate limit its last words (its error
/// output, else its stderr) or its exit code show, or a fault of the fleet its output, its
/// exit code or its stderr show (in that order); else its exit with the best reason there is.
fn exited_outcome(
    code: Option<i32>,
    coder: &dyn Coder,
    diagnosis: &Diagnosis,
    stderr_tail: &str,
    redactor: &Redactor,
) -> Outcome {
    let reason = match &diagnosis.error_text {
        Some(text) => diagnose::failure_reason(text),
        None => diagnose::failure_reason(stderr_tail),
    };
    let reason = redactor.redact_text(&reason).into_owned();
    if code == Some(0) {
        return Outcome::Exited { code, reason };
    }
    let reports_faults = coder.reports_provider_faults();
    let last_words = diagnosis.error_text.as_deref().unwrap_or(stderr_tail);
    let meaning = code.and_then(|c| coder.exit_meaning(c));
    let rate_limited = reports_faults
        && (diagnose::is_rate_limit_text(last_words) || meaning == Some(ExitMeaning::RateLimit));
    if rate_limited {
        return Outcome::RateLimited { resets_at: None, window: None };
    }
    let fault = diagnosis.fault.or_else(|| {
        if !reports_faults {
            return None;
        }
        diagnosis
            .error_text
            .as_deref()
            .and_then(diagnose::classify_text)
            .or(match meaning {
                Some(ExitMeaning::Fault(fault)) => Some(fault),
                _ => None,
            })
            .or_else(|| diagnose::classify_text(stderr_tail))
    });
    match fault {
        Some(Fault::Auth) => Outcome::CoderFault { cause: PauseCause::Auth, detail: reason },
        Some(Fault::Outage) => Outcome::CoderFault { cause: PauseCause::Outage, detail: reason },
        Some(Fault::Contention) => Outcome::Contention { detail: reason },
        None => Outcome::Exited { code, reason },
    }
}

/// Copies the agent's stderr, line by line and redacted, into `log.stderr` (in batches);
/// returns the last lines (raw: the caller redacts what it quotes).
///
/// With `reader` (the coder, when its CLI reports provider faults), each line that reports
/// provider trouble the CLI retries by itself is also sent on `trouble` as its event.
async fn collect_stderr(
    stderr: tokio::process::ChildStderr,
    mut log: super::taskdir::StderrLog,
    reader: Option<Arc<dyn Coder>>,
    trouble: mpsc::UnboundedSender<Box<AgentEvent>>,
) -> String {
    // Small buffers: a line longer than one still reads whole (the line grows), and hundreds
    // of agents' pipes hold less memory.
    let mut lines = BufReader::with_capacity(1024, stderr).lines();
    // Grown on demand: most agents print nothing on stderr.
    let mut tail: VecDeque<String> = VecDeque::new();
    loop {
        let due = log.flush_due().map(Instant::from_std);
        let line = tokio::select! {
            line = lines.next_line() => line,
            () = sleep_until_opt(due) => {
                let _ = log.flush();
                continue;
            }
        };
        let Ok(Some(line)) = line else { break };
        if let Some(event) = reader.as_ref().and_then(|coder| coder.stderr_event(&line)) {
            let _ = trouble.send(Box::new(event));
        }
        let _ = log.write_line(&line);
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    let _ = log.flush();
    Vec::from(tail).join("\n")
}

/// Reads the agent's stdout until it closes (or the agent has exited and the drain period is
/// over), or until a reason to stop it appears.
async fn watch_output(
    attempt: &mut Attempt,
    child: &mut tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    sinks: &mut Sinks<'_>,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Option<Halt> {
    let root = attempt.task_dir.root.clone();
    let settings = attempt.settings;
    let scope = (attempt.coder.name().to_string(), attempt.account_name().to_owned());
    let mut pressure = Pressure::new(attempt.coder.context_limit(&attempt.model), settings);
    let mut parser = attempt.coder.parser();
    let mut lines = AgentStdout::Resting(stdout);
    let started = Instant::now();
    let mut last_output = Instant::now();
    let mut exited_at: Option<Instant> = None;
    let mut wrap_up_until: Option<Instant> = None;
    // The output is left unread until then (see READ_SPELL).
    let mut unread_until: Option<Instant> = None;
    // One timer for every deadline, kept across lines: a timer made anew for each deadline on
    // each line cost hundreds of agents' supervisor a few percent of a core.
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    let mut armed: Option<Instant> = None;
    loop {
        if let Some(stop) = standing_order(attempt, &mut wrap_up_until) {
            return Some(stop);
        }
        let clock = Clocks {
            // Timeouts come from runtime.toml: one past the end of the clock is no deadline.
            stall: settings.stall_timeout.and_then(|t| last_output.checked_add(t)),
            timeout: settings.attempt_timeout.and_then(|t| started.checked_add(t)),
            drain: exited_at.map(|at| at.max(last_output) + DRAIN_IDLE),
            wrap_up: wrap_up_until,
            save: sinks.meter.save_due(),
            flush: sinks.logs.flush_due().map(Instant::from_std),
            read: unread_until,
        };
        let next = clock.next();
        if next != armed {
            if let Some(at) = next {
                timer.as_mut().reset(at);
            }
            armed = next;
        }
        tokio::select! {
            _ = child.wait(), if exited_at.is_none() => {
                exited_at = Some(Instant::now());
                unread_until = None;
            }
            line = lines.next_line(), if unread_until.is_none() => {
                let Ok(Some(line)) = line else { return None };
                last_output = Instant::now();
                for event in parser.parse_line(&line) {
                    let _ = sinks.logs.event(&event, Timestamp::now());
                    sinks.diagnosis.observe(&event);
                    if let Some(model) = &event.model {
                        pressure.limit = attempt.coder.context_limit(model).or(pressure.limit);
                        sinks.meter.set_context_limit(pressure.limit);
                        sinks.meter.price_model(price_of(&attempt.prices, model));
                    }
                    sinks.meter.observe(&event);
                    if let Some(stop) = judge(&event, &mut pressure, &scope, settings, signals) {
                        return Some(stop);
                    }
                    if let Some(spent) = attempt.budget.exceeded(sinks.meter.usage()) {
                        return Some(Halt::Budget(spent));
                    }
                }
                sinks.meter.save_if_due(&root);
                if lines.drained() && exited_at.is_none() && super::many_agents() {
                    unread_until = Some(Instant::now() + READ_SPELL);
                    lines.rest();
                    // The spell's lines are written as it ends, in one write, and their buffer
                    // freed: nothing of an agent's output is held while it is not read.
                    let _ = sinks.logs.flush();
                }
            }
            Some(event) = sinks.trouble.recv() => {
                let _ = sinks.logs.event(&event, Timestamp::now());
                sinks.meter.observe(&event);
                return Some(provider_trouble(&event, &scope, signals));
            }
            () = &mut timer, if armed.is_some() => {
                // Fired: armed again for whatever is next on the next turn.
                armed = None;
                match clock.due(Instant::now(), settings) {
                    Some(Due::Stop(halt)) => return halt,
                    Some(Due::Save) => sinks.meter.save(&root),
                    Some(Due::Flush) => {
                        let _ = sinks.logs.flush();
                    }
                    Some(Due::Read) => unread_until = None,
                    None => {}
                }
            }
            _ = attempt.stop.changed() => {}
            _ = attempt.control.changed() => {}
        }
    }
}

/// The agent's stdout, read a line at a time. Between read spells only the pipe is kept: the
/// read buffer (4 KiB) and the line buffers (as long as the longest line so far) are dropped
/// while the output is left unread, which is most of the time with hundreds of agents.
enum AgentStdout {
    Reading(Lines<BufReader<tokio::process::ChildStdout>>),
    Resting(tokio::process::ChildStdout),
    /// Only while one state turns into the other.
    Between,
}

impl AgentStdout {
    /// The next line (`None` at the end). Cancel-safe, as `Lines::next_line` is.
    async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        if let AgentStdout::Resting(_) = self
            && let AgentStdout::Resting(pipe) = std::mem::replace(self, AgentStdout::Between)
        {
            *self = AgentStdout::Reading(BufReader::with_capacity(4096, pipe).lines());
        }
        match self {
            AgentStdout::Reading(lines) => lines.next_line().await,
            AgentStdout::Resting(_) | AgentStdout::Between => Ok(None),
        }
    }

    /// Whether everything read from the pipe has been returned as lines.
    fn drained(&mut self) -> bool {
        match self {
            AgentStdout::Reading(lines) => lines.get_ref().buffer().is_empty(),
            AgentStdout::Resting(_) | AgentStdout::Between => true,
        }
    }

    /// Drops the buffers until the next read, if nothing is left in them: right after a
    /// whole line was returned, so no part of a line is held either.
    fn rest(&mut self) {
        if !self.drained() {
            return;
        }
        if let AgentStdout::Reading(lines) = std::mem::replace(self, AgentStdout::Between) {
            *self = AgentStdout::Resting(lines.into_inner().into_inner());
        }
    }
}

/// The deadlines of [`watch_output`] on one turn of its loop (`None`: none).
struct Clocks {
    /// Silence for the stall timeout (not while the agent wraps up).
    stall: Option<Instant>,
    /// The attempt's time limit.
    timeout: Option<Instant>,
    /// The end of the output drain after the agent exited.
    drain: Option<Instant>,
    /// The end of the wrap-up of an agent that closed or blocked its task.
    wrap_up: Option<Instant>,
    /// The ledger's next save.
    save: Option<Instant>,
    /// The event log's next write.
    flush: Option<Instant>,
    /// The end of a pause in reading the output ([`READ_SPELL`]).
    read: Option<Instant>,
}

/// What a deadline that passed asks of [`watch_output`].
enum Due {
    /// Return this: `None` when the output was drained, else why the agent is stopped.
    Stop(Option<Halt>),
    Save,
    Flush,
    /// Read the output again.
    Read,
}

impl Clocks {
    /// The earliest deadline.
    fn next(&self) -> Option<Instant> {
        let stall = self.stall.filter(|_| self.wrap_up.is_none());
        [stall, self.timeout, self.drain, self.wrap_up, self.save, self.flush, self.read]
            .into_iter()
            .flatten()
            .min()
    }

    /// The first thing to do for a deadline passed at `now`, ends before chores.
    fn due(&self, now: Instant, settings: RunnerSettings) -> Option<Due> {
        let passed = |at: Option<Instant>| at.is_some_and(|at| at <= now);
        if passed(self.drain) {
            Some(Due::Stop(None))
        } else if self.wrap_up.is_none() && passed(self.stall) {
            Some(Due::Stop(Some(Halt::Stall(settings.stall_timeout.unwrap_or_default()))))
        } else if passed(self.timeout) {
            Some(Due::Stop(Some(Halt::Timeout(settings.attempt_timeout.unwrap_or_default()))))
        } else if passed(self.wrap_up) {
            Some(Due::Stop(Some(Halt::WrapUpOver)))
        } else if passed(self.save) {
            Some(Due::Save)
        } else if passed(self.flush) {
            Some(Due::Flush)
        } else if passed(self.read) {
            Some(Due::Read)
        } else {
            None
        }
    }
}

/// Stops the agent for the provider trouble its CLI reported retrying on stderr (an event of
/// [`Coder::stderr_event`]): a rate limit pauses spawning at once (the supervisor is told
/// before the agent is even stopped), anything else is an outage.
fn provider_trouble(
    event: &AgentEvent,
    scope: &(String, String),
    signals: &mpsc::UnboundedSender<Signal>,
) -> Halt {
    let said = event.text.clone().unwrap_or_default();
    if event.rate_limit.is_some() {
        let _ = signals.send(Signal::RateLimited {
            coder: scope.0.clone(),
            account: scope.1.clone(),
            resets_at: None,
            window: None,
            near: None,
        });
        return Halt::RateLimit { resets_at: None, window: None };
    }
    Halt::Outage(
        super::process_redactor().redact_text(&diagnose::failure_reason(&said)).into_owned(),
    )
}

/// What the supervisor's channels say now: stop for shutdown or revocation, or start the
/// wrap-up clock.
fn standing_order(attempt: &Attempt, wrap_up_until: &mut Option<Instant>) -> Option<Halt> {
    if *attempt.stop.borrow() != Stop::No {
        return Some(Halt::Shutdown);
    }
    match &*attempt.control.borrow() {
        Control::Run => None,
        Control::Revoke(reason) => Some(Halt::Revoked(reason.clone())),
        Control::WrapUp => {
            wrap_up_until.get_or_insert_with(|| Instant::now() + WRAP_UP);
            None
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The context window of the running model and the largest request seen so far.
struct Pressure {
    limit: Option<u64>,
    threshold_pct: u8,
    peak: u64,
}

impl Pressure {
    fn new(limit: Option<u64>, settings: RunnerSettings) -> Pressure {
        Pressure { limit, threshold_pct: settings.context_threshold_pct, peak: 0 }
    }

    /// Records the prompt size of one request; true once it reaches the threshold share of
    /// the window.
    fn exceeded(&mut self, prompt_tokens: u64) -> bool {
        self.peak = self.peak.max(prompt_tokens);
        self.limit.is_some_and(|limit| {
            limit > 0 && self.peak >= limit.saturating_mul(u64::from(self.threshold_pct)) / 100
        })
    }
}

/// Whether an event means the agent must be stopped now; tells the supervisor about rate
/// limits (stopping on a rejection, pausing early on a window above the threshold).
/// `scope` is the coder and the account (empty: none) the attempt runs on.
fn judge(
    event: &AgentEvent,
    pressure: &mut Pressure,
    scope: &(String, String),
    settings: RunnerSettings,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Option<Halt> {
    let limit = pressure.limit.unwrap_or(0);
    if let Some(usage) = &event.usage
        && pressure.exceeded(usage.prompt_tokens())
    {
        return Some(Halt::Pressure { peak: pressure.peak, limit });
    }
    if event.kind == EventKind::ContextOverflow {
        return Some(Halt::Pressure { peak: pressure.peak.max(limit), limit });
    }
    let rate = event.rate_limit.as_ref()?;
    if !scope.1.is_empty() {
        let _ = signals.send(Signal::Window {
            coder: scope.0.clone(),
            account: scope.1.clone(),
            window: rate.window.clone(),
            resets_at: rate.resets_at,
            utilization_pct: rate.utilization_pct,
        });
    }
    // An API retry that carries a 429 is informational: the CLI retries by itself and may
    // recover. Only a rate-limit event (or a final 429 result) stops the agent.
    if rate.status == RateLimitStatus::Rejected && event.kind != EventKind::ApiRetry {
        let _ = signals.send(Signal::RateLimited {
            coder: scope.0.clone(),
            account: scope.1.clone(),
            resets_at: rate.resets_at,
            window: rate.window.clone(),
            near: None,
        });
        return Some(Halt::RateLimit { resets_at: rate.resets_at, window: rate.window.clone() });
    }
    if rate.status != RateLimitStatus::Rejected && rate.above(settings.rate_limit_threshold_pct) {
        let _ = signals.send(Signal::RateLimited {
            coder: scope.0.clone(),
            account: scope.1.clone(),
            resets_at: rate.resets_at,
            window: rate.window.clone(),
            near: rate.utilization_pct,
        });
    }
    None
}
