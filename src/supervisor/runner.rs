//! One attempt of one task: spawn the agent in its own process group, stream and log its
//! events, watch for context pressure, rate limits, silence and the attempt deadline, stop it
//! when needed, and return an [`Outcome`].
//!
//! The runner never writes the queue: the supervisor records the outcome. It talks to the
//! supervisor only through its return value and, for rate limits that should pause other
//! spawns at once, a message on `signals`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::outcome::Outcome;
use super::taskdir::{TaskDir, TaskLogs};
use crate::coders::{AgentEvent, Coder, EventKind, RateLimitStatus, TaskSpec};
use crate::model::Issue;
use crate::redact::Redactor;

/// Bytes of stderr quoted in a failure comment.
const STDERR_TAIL_BYTES: usize = 2048;

/// Timing knobs of one attempt (from the runtime config at spawn time).
#[derive(Debug, Clone, Copy)]
pub struct RunnerSettings {
    /// Kill after this long without output (`None`: never).
    pub stall_timeout: Option<Duration>,
    /// Kill after this long in all (`None`: never).
    pub attempt_timeout: Option<Duration>,
    pub grace: Duration,
    pub context_threshold_pct: u8,
}

/// Everything one attempt needs.
pub struct Attempt {
    pub issue: Issue,
    pub coder: Arc<dyn Coder>,
    pub model: String,
    pub cwd: PathBuf,
    pub task_dir: TaskDir,
    /// Variables the supervisor adds (FLEET_HOME, BEADS_DIR, PATH, …).
    pub env: Vec<(String, String)>,
    pub settings: RunnerSettings,
    /// Becomes true when the supervisor shuts down.
    pub shutdown: watch::Receiver<bool>,
}

/// Messages a runner sends while it runs.
#[derive(Debug, Clone)]
pub enum Signal {
    /// The agent started with this pid.
    Started { task_id: String, pid: u32 },
    /// A rate limit was hit: stop spawning until then.
    RateLimited { resets_at: Option<Timestamp>, window: Option<String> },
}

/// Why the runner stopped the agent itself.
enum Stop {
    Pressure { peak: u64, limit: u64 },
    RateLimit { resets_at: Option<Timestamp>, window: Option<String> },
    Stall(Duration),
    Timeout(Duration),
    Shutdown,
}

/// Runs one attempt to its end.
pub async fn run(mut attempt: Attempt, signals: mpsc::UnboundedSender<Signal>) -> Outcome {
    match run_inner(&mut attempt, &signals).await {
        Ok(outcome) => outcome,
        Err(error) => Outcome::SpawnFailed { error },
    }
}

async fn run_inner(
    attempt: &mut Attempt,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Result<Outcome, String> {
    let issue = &attempt.issue.clone();
    let dir = &attempt.task_dir.clone();
    dir.prepare(issue).map_err(|e| format!("preparing {}: {e}", dir.root.display()))?;
    attempt.coder.prepare(&attempt.cwd).map_err(|e| {
        format!("preparing {} for {}: {e}", attempt.cwd.display(), attempt.coder.name())
    })?;
    let artifacts = dir.artifacts();
    let prompt = super::prompt::build(issue, &attempt.cwd, &dir.root, &artifacts);
    let spec = attempt.coder.spawn_spec(&TaskSpec {
        id: &issue.id,
        title: &issue.title,
        description: &issue.description,
        cwd: &attempt.cwd,
        task_dir: &dir.root,
        artifact_dir: &artifacts,
        model: &attempt.model,
        prompt: &prompt,
    });
    let stderr_offset = std::fs::metadata(dir.stderr_path()).map_or(0, |m| m.len());
    let stderr = dir.stderr_file().map_err(|e| format!("opening log.stderr: {e}"))?;
    let redactor = Redactor::from_env(
        spec.env.iter().chain(&attempt.env).map(|(k, v)| (k.as_str(), v.as_str())),
    );
    let mut logs = dir.logs(redactor).map_err(|e| format!("opening task logs: {e}"))?;
    let mut command = tokio::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().cloned())
        .envs(attempt.env.iter().cloned())
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    // Registered as owned until its status is collected below, so no other runner's orphan
    // reaping takes it.
    let (mut child, _owned) = crate::process::spawn_owned(&mut command)
        .map_err(|e| format!("could not run {:?}: {e}", spec.program))?;
    let pid = child.id().unwrap_or(0);
    let _ = signals.send(Signal::Started { task_id: issue.id.clone(), pid });
    let shown_args: Vec<String> = spec
        .args
        .iter()
        .map(|a| if *a == prompt { format!("<prompt: {} bytes>", a.len()) } else { a.clone() })
        .collect();
    let _ = logs.runner(
        "attempt_started",
        json!({ "attempt": issue.fleet.attempts, "pid": pid, "coder": attempt.coder.name(),
                "model": attempt.model, "program": spec.program, "args": shown_args,
                "cwd": spec.cwd }),
        Timestamp::now(),
    );
    let stdout = child.stdout.take().ok_or("the agent's stdout was not captured")?;
    let stop = watch_output(attempt, &mut child, stdout, &mut logs, signals).await;
    let pgid = i32::try_from(pid).unwrap_or(0);
    // Stop whatever is left of the group: the agent if we are stopping it, or the background
    // processes an agent that exited by itself left behind.
    let forced =
        pgid > 1 && crate::process::terminate_group(pgid, pgid, attempt.settings.grace).await;
    let status = child.wait().await.map_err(|e| format!("waiting for the agent: {e}"))?;
    let outcome = match stop {
        Some(Stop::Pressure { peak, limit }) => {
            Outcome::ContextPressure { peak_tokens: peak, limit }
        }
        Some(Stop::RateLimit { resets_at, window }) => Outcome::RateLimited { resets_at, window },
        Some(Stop::Stall(silent_for)) => Outcome::Stalled { silent_for },
        Some(Stop::Timeout(after)) => Outcome::TimedOut { after },
        Some(Stop::Shutdown) => Outcome::Shutdown,
        None => Outcome::Exited {
            code: status.code(),
            stderr_tail: dir.stderr_tail(stderr_offset, STDERR_TAIL_BYTES),
        },
    };
    let _ = logs.runner(
        "attempt_finished",
        json!({ "attempt": issue.fleet.attempts, "exit_code": status.code(),
                "forced_kill": forced, "outcome": format!("{outcome:?}") }),
        Timestamp::now(),
    );
    Ok(outcome)
}

/// How long output is still read after the agent exited, while something it left running
/// keeps its stdout open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// Reads the agent's stdout until it closes (or the agent has exited and the drain period is
/// over), or until a reason to stop it appears.
async fn watch_output(
    attempt: &mut Attempt,
    child: &mut tokio::process::Child,
    stdout: tokio::process::ChildStdout,
    logs: &mut TaskLogs,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Option<Stop> {
    let settings = attempt.settings;
    let mut pressure = Pressure::new(attempt.coder.context_limit(&attempt.model), settings);
    let mut parser = attempt.coder.parser();
    let mut lines = BufReader::new(stdout).lines();
    let started = Instant::now();
    let mut last_output = Instant::now();
    let mut exited_at: Option<Instant> = None;
    loop {
        let stall_at = settings.stall_timeout.map(|t| last_output + t);
        let timeout_at = settings.attempt_timeout.map(|t| started + t);
        let drain_until = exited_at.map(|at| at + DRAIN_AFTER_EXIT);
        tokio::select! {
            _ = child.wait(), if exited_at.is_none() => exited_at = Some(Instant::now()),
            () = sleep_until_opt(drain_until) => return None,
            line = lines.next_line() => {
                let Ok(Some(line)) = line else { return None };
                last_output = Instant::now();
                for event in parser.parse_line(&line) {
                    let _ = logs.event(&event, Timestamp::now());
                    if let Some(model) = &event.model {
                        pressure.limit = attempt.coder.context_limit(model).or(pressure.limit);
                    }
                    if let Some(stop) = judge(&event, &mut pressure, signals) {
                        return Some(stop);
                    }
                }
            }
            () = sleep_until_opt(stall_at) => {
                return Some(Stop::Stall(settings.stall_timeout.unwrap_or_default()));
            }
            () = sleep_until_opt(timeout_at) => {
                return Some(Stop::Timeout(settings.attempt_timeout.unwrap_or_default()));
            }
            changed = attempt.shutdown.changed() => {
                if changed.is_err() || *attempt.shutdown.borrow() {
                    return Some(Stop::Shutdown);
                }
            }
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The context window of the running model and the largest prompt seen so far.
struct Pressure {
    limit: Option<u64>,
    threshold_pct: u8,
    peak: u64,
}

impl Pressure {
    fn new(limit: Option<u64>, settings: RunnerSettings) -> Pressure {
        Pressure { limit, threshold_pct: settings.context_threshold_pct, peak: 0 }
    }

    /// Records a prompt size; true once it reaches the threshold share of the window.
    fn exceeded(&mut self, prompt_tokens: u64) -> bool {
        self.peak = self.peak.max(prompt_tokens);
        self.limit.is_some_and(|limit| {
            limit > 0 && self.peak >= limit.saturating_mul(u64::from(self.threshold_pct)) / 100
        })
    }
}

/// Whether an event means the agent must be stopped now.
fn judge(
    event: &AgentEvent,
    pressure: &mut Pressure,
    signals: &mpsc::UnboundedSender<Signal>,
) -> Option<Stop> {
    let limit = pressure.limit.unwrap_or(0);
    if let Some(usage) = &event.usage
        && pressure.exceeded(usage.prompt_tokens())
    {
        return Some(Stop::Pressure { peak: pressure.peak, limit });
    }
    if event.kind == EventKind::ContextOverflow {
        return Some(Stop::Pressure { peak: pressure.peak.max(limit), limit });
    }
    // An API retry that carries a 429 is informational: the CLI retries by itself and may
    // recover. Only a rate-limit event (or a final 429 result) stops the agent.
    if let Some(rate) = &event.rate_limit
        && rate.status == RateLimitStatus::Rejected
        && event.kind != EventKind::ApiRetry
    {
        let _ = signals
            .send(Signal::RateLimited { resets_at: rate.resets_at, window: rate.window.clone() });
        return Some(Stop::RateLimit { resets_at: rate.resets_at, window: rate.window.clone() });
    }
    None
}
