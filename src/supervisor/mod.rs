//! The supervisor behind `fleet run`: keeps up to `max_concurrent` agents busy on ready tasks.
//!
//! It is the dispatcher; [`runner`]s are the executors. The loop
//! 1. claims ready work in-process, in the claim transaction also counting the attempt and
//!    freezing the task's coder and model, whenever a slot is free, spawning is not paused,
//!    and the queue changed (the store's change counter, read every [`POLL`]) or a second
//!    passed (deferrals that expired make work ready without any write);
//! 2. starts a runner per claimed task, holding the task's lease: assignee = this
//!    supervisor's actor;
//! 3. records each runner's [`Outcome`] as ops (see [`outcome::plan`]);
//! 4. reloads `runtime.toml` when it changes, keeping the previous config if the new one is
//!    invalid;
//! 5. on shutdown, tells every runner to stop, records their outcomes (released, not
//!    charged), releases whatever it still holds, and kills and reaps stray processes.
//!
//! The shutdown story: `run` takes a `shutdown` future. When it resolves, the `stopping`
//! watch channel flips to true; every runner selects on it, stops its agent's process group
//! (SIGTERM, grace, SIGKILL) and returns [`Outcome::Shutdown`]. `run` waits for all runner
//! tasks, then returns the summary.

pub mod outcome;
pub mod prompt;
pub mod runner;
pub mod taskdir;

use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::{ConfigWatcher, Reload, RuntimeConfig};
use crate::model::{Comment, CommentId, Issue};
use crate::op::{IssuePatch, OpKind};
use crate::redact::Redactor;
use crate::store::{ReadyFilter, Store, StoreError};
use crate::time::Clock;
use outcome::Outcome;
use runner::{Attempt, RunnerSettings, Signal};
use taskdir::{TaskDir, TaskRecord};

/// How often the store's change counter is read.
pub const POLL: Duration = Duration::from_millis(20);
/// How often the queue is re-checked when nothing changed (deferrals expire silently).
const RECHECK: Duration = Duration::from_secs(1);

/// Where the supervisor lives and who it is.
#[derive(Debug, Clone)]
pub struct Options {
    /// `$FLEET_HOME`: holds `runtime.toml`, `tasks/`, `bin/`.
    pub home: PathBuf,
    /// The actor recorded as assignee of the tasks this supervisor holds.
    pub actor: String,
    /// This program, linked as `bd` and `fleet` into the agents' PATH.
    pub exe: PathBuf,
    /// Stop once nothing is running and nothing is ready (demos, scripted runs).
    pub until_idle: bool,
}

/// What the supervisor reports as it works (the live view and `fleet run --json`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Started { actor: String, max_concurrent: usize },
    Claimed { id: String, title: String, coder: String, model: String, attempt: u32 },
    AgentStarted { id: String, pid: u32 },
    Finished { id: String, verdict: String, comment: String },
    Paused { until: Timestamp },
    ConfigReloaded { max_concurrent: usize },
    ConfigRejected { error: String },
    Released { id: String },
    Stopped { finished: usize },
}

/// Counts for the final summary.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Summary {
    pub attempts: usize,
    pub verdicts: std::collections::BTreeMap<String, usize>,
}

pub struct Supervisor {
    store: Arc<Store>,
    options: Options,
    /// The current `runtime.toml` and the coders it defines, re-read when the file changes.
    config: ConfigWatcher,
    events: mpsc::UnboundedSender<Event>,
    /// Ids of the tasks with a runner in flight.
    running: HashSet<String>,
    paused_until: Option<Timestamp>,
    summary: Summary,
}

fn config_path(home: &Path) -> PathBuf {
    home.join("runtime.toml")
}

impl Supervisor {
    /// Loads the config (an invalid one is an error here: there is nothing to fall back to).
    pub fn new(
        store: Arc<Store>,
        options: Options,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Supervisor, String> {
        let config = ConfigWatcher::new(&config_path(&options.home)).map_err(|e| e.to_string())?;
        Ok(Supervisor {
            store,
            options,
            config,
            events,
            running: HashSet::new(),
            paused_until: None,
            summary: Summary::default(),
        })
    }

    fn cfg(&self) -> &RuntimeConfig {
        self.config.config()
    }

    fn max_concurrent(&self) -> usize {
        usize::try_from(self.cfg().max_concurrent).unwrap_or(usize::MAX)
    }

    fn emit(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Runs until `shutdown` resolves (or, with `until_idle`, until the queue is drained).
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<Summary, String> {
        let _ = crate::process::become_subreaper();
        self.link_tools()
            .map_err(|e| format!("linking bd/fleet into {}: {e}", self.bin_dir().display()))?;
        self.release_stale_leases().await?;
        self.emit(Event::Started {
            actor: self.options.actor.clone(),
            max_concurrent: self.max_concurrent(),
        });
        let (stopping_tx, stopping) = watch::channel(false);
        let (signals_tx, mut signals) = mpsc::unbounded_channel();
        let mut runners: JoinSet<Finished> = JoinSet::new();
        let mut last_changes = u64::MAX;
        let mut next_recheck = tokio::time::Instant::now();
        tokio::pin!(shutdown);
        // Poll `shutdown` once before any agent starts: a signal future installs its handlers
        // when first polled, and until then SIGTERM or Ctrl-C would kill this process outright,
        // leaving agents running and their tasks claimed.
        let mut stopped = tokio::select! {
            biased;
            () = &mut shutdown => true,
            () = std::future::ready(()) => false,
        };
        while !stopped {
            self.reload_config_if_changed();
            let changes = self.changes().await;
            let due = tokio::time::Instant::now() >= next_recheck;
            if changes != last_changes || due {
                last_changes = changes;
                next_recheck = tokio::time::Instant::now() + RECHECK;
                let started = self.fill_slots(&mut runners, &stopping, &signals_tx).await;
                if self.options.until_idle
                    && started == 0
                    && runners.is_empty()
                    && !self.work_pending().await
                {
                    break;
                }
            }
            tokio::select! {
                () = &mut shutdown => stopped = true,
                Some(done) = runners.join_next() => {
                    if let Ok(finished) = done {
                        self.record(finished).await;
                    }
                    next_recheck = tokio::time::Instant::now();
                }
                Some(signal) = signals.recv() => self.on_signal(signal),
                () = tokio::time::sleep(POLL) => {}
            }
        }
        let _ = stopping_tx.send(true);
        while let Some(done) = runners.join_next().await {
            if let Ok(finished) = done {
                self.record(finished).await;
            }
        }
        let strays = crate::process::kill_stray_children(&Default::default());
        if strays > 0 {
            tracing::warn!(strays, "killed processes left behind by agents");
        }
        self.emit(Event::Stopped { finished: self.summary.attempts });
        Ok(self.summary)
    }

    fn bin_dir(&self) -> PathBuf {
        self.options.home.join("bin")
    }

    /// Puts `bd` and `fleet` (links to this program) in `$FLEET_HOME/bin`, first on the agents'
    /// PATH, so an agent's `bd close` reaches this queue with no `bd` installed.
    fn link_tools(&self) -> std::io::Result<()> {
        let dir = self.bin_dir();
        std::fs::create_dir_all(&dir)?;
        for name in ["bd", "fleet"] {
            let link = dir.join(name);
            if std::fs::read_link(&link).is_ok_and(|target| target == self.options.exe) {
                continue;
            }
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&self.options.exe, &link)?;
        }
        Ok(())
    }

    /// The environment every agent gets on top of the coder's own.
    fn agent_env(&self) -> Vec<(String, String)> {
        let path = std::env::var("PATH").unwrap_or_default();
        vec![
            ("FLEET_HOME".into(), self.options.home.display().to_string()),
            ("BEADS_DIR".into(), self.store.dir().display().to_string()),
            ("PATH".into(), format!("{}:{path}", self.bin_dir().display())),
            ("BD_ACTOR".into(), format!("{}/agent", self.options.actor)),
        ]
    }

    async fn blocking<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> R + Send + 'static,
    ) -> R {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || work(&store)).await.expect("store work does not panic")
    }

    async fn changes(&self) -> u64 {
        self.blocking(|store| store.changes().unwrap_or(0)).await
    }

    /// Whether anything could still become claimable without a human: ready work, including
    /// tasks waiting out a retry backoff.
    async fn work_pending(&self) -> bool {
        let actor = self.options.actor.clone();
        self.blocking(move |store| {
            let filter = ReadyFilter { include_deferred: true, ..ReadyFilter::default() };
            store
                .read()
                .and_then(|r| r.first_claimable(&actor, &filter, Timestamp::now()))
                .map(|found| found.is_some())
                .unwrap_or(false)
        })
        .await
    }

    /// Tasks still assigned to this actor from an earlier run that died: release them.
    async fn release_stale_leases(&self) -> Result<(), String> {
        let actor = self.options.actor.clone();
        let released = self
            .blocking(move |store| -> Result<Vec<String>, StoreError> {
                let held = held_by(store, &actor)?;
                if held.is_empty() {
                    return Ok(held);
                }
                let comment = "[fleet] released: the supervisor that held this task stopped without releasing it";
                store.write(&actor, Clock::System, |w| {
                    for id in &held {
                        w.apply(OpKind::Release { id: id.clone() })?;
                        w.apply(OpKind::Comment { comment: fleet_comment(id, &actor, comment) })?;
                    }
                    Ok(())
                })?;
                Ok(held)
            })
            .await
            .map_err(|e| format!("releasing stale leases: {e}"))?;
        for id in released {
            self.emit(Event::Released { id });
        }
        Ok(())
    }

    fn paused(&self) -> bool {
        self.paused_until.is_some_and(|until| Timestamp::now() < until)
    }

    /// Claims and starts tasks while slots are free. Returns how many were started.
    async fn fill_slots(
        &mut self,
        runners: &mut JoinSet<Finished>,
        stopping: &watch::Receiver<bool>,
        signals: &mpsc::UnboundedSender<Signal>,
    ) -> usize {
        let mut started = 0;
        while self.running.len() < self.max_concurrent() && !self.paused() {
            let Some(issue) = self.claim_next().await else { break };
            started += 1;
            self.start(issue, runners, stopping, signals);
        }
        started
    }

    /// Claims the next ready task, counting the attempt and freezing its coder and model in
    /// the same transaction. A read comes first so an idle queue costs no write.
    async fn claim_next(&self) -> Option<Issue> {
        let actor = self.options.actor.clone();
        let config = self.cfg().clone();
        let registry = self.config.registry().clone();
        let result = self
            .blocking(move |store| -> Result<Option<Issue>, StoreError> {
                let filter = ReadyFilter::default();
                if store.read()?.first_claimable(&actor, &filter, Timestamp::now())?.is_none() {
                    return Ok(None);
                }
                let (claimed, _) = store.write(&actor, Clock::System, |w| {
                    let Some(issue) = crate::claim::claim_next_in(w, &filter)? else {
                        return Ok(None);
                    };
                    let mut fleet = issue.fleet.clone();
                    let first_spawn = fleet.attempts == 0;
                    fleet.attempts += 1;
                    // The effective coder and model are frozen at the first spawn, so later
                    // config changes do not switch a task's agent between attempts. The model
                    // is resolved only then: an empty one ("let the CLI choose", the default
                    // of several coders) stays empty rather than picking up a `model` set in
                    // runtime.toml later.
                    if fleet.coder.is_empty() {
                        fleet.coder.clone_from(&config.coder);
                    }
                    if fleet.model.is_empty()
                        && first_spawn
                        && let Ok(coder) = registry.get(&fleet.coder)
                    {
                        fleet.model = config.effective_model(coder.as_ref(), None);
                    }
                    let patch = IssuePatch { fleet: Some(fleet), ..IssuePatch::default() };
                    w.apply(OpKind::Update { id: issue.id.clone(), patch: Box::new(patch) })?;
                    w.issue(&issue.id)
                })?;
                Ok(claimed)
            })
            .await;
        match result {
            Ok(issue) => issue,
            Err(error) => {
                tracing::error!(%error, "claiming failed");
                None
            }
        }
    }

    fn start(
        &mut self,
        issue: Issue,
        runners: &mut JoinSet<Finished>,
        stopping: &watch::Receiver<bool>,
        signals: &mpsc::UnboundedSender<Signal>,
    ) {
        let id = issue.id.clone();
        self.emit(Event::Claimed {
            id: id.clone(),
            title: issue.title.clone(),
            coder: issue.fleet.coder.clone(),
            model: issue.fleet.model.clone(),
            attempt: issue.fleet.attempts,
        });
        self.running.insert(id.clone());
        let task_dir = match TaskDir::new(&self.options.home, &id) {
            Ok(task_dir) => task_dir,
            Err(error) => {
                let outcome = Outcome::SpawnFailed { error: error.to_string() };
                runners.spawn(async move { Finished { id, outcome, closes_on_exit_zero: false } });
                return;
            }
        };
        let _ = task_dir.write_record(&task_record(&issue), &Redactor::default());
        let coder = self.config.registry().get(&issue.fleet.coder);
        let cwd = if issue.fleet.cwd.is_empty() {
            self.options.home.clone()
        } else {
            PathBuf::from(&issue.fleet.cwd)
        };
        let settings = RunnerSettings {
            stall_timeout: self.cfg().stall_timeout(),
            attempt_timeout: self.cfg().attempt_timeout(),
            grace: self.cfg().shutdown_grace(),
            context_threshold_pct: self.cfg().context_pressure_threshold_pct,
        };
        let env = self.agent_env();
        let shutdown = stopping.clone();
        let signals = signals.clone();
        runners.spawn(async move {
            let closes_on_exit_zero = coder.as_ref().is_ok_and(|c| c.closes_on_exit_zero());
            let outcome = match coder {
                Err(error) => Outcome::SpawnFailed { error: error.to_string() },
                Ok(_) if !cwd.is_dir() => Outcome::SpawnFailed {
                    error: format!("working directory {} does not exist", cwd.display()),
                },
                Ok(coder) => {
                    let model = issue.fleet.model.clone();
                    let attempt =
                        Attempt { issue, coder, model, cwd, task_dir, env, settings, shutdown };
                    runner::run(attempt, signals).await
                }
            };
            Finished { id, outcome, closes_on_exit_zero }
        });
    }

    fn on_signal(&mut self, signal: Signal) {
        match signal {
            Signal::Started { task_id, pid } => self.emit(Event::AgentStarted { id: task_id, pid }),
            Signal::RateLimited { resets_at, .. } => self.pause(resets_at),
        }
    }

    fn pause(&mut self, resets_at: Option<Timestamp>) {
        let now = Timestamp::now();
        let default = self.cfg().rate_limit_default_pause();
        let until = resets_at
            .filter(|t| *t > now)
            .unwrap_or_else(|| now + jiff::SignedDuration::try_from(default).unwrap_or_default());
        // A pause is never shortened by a later, earlier reset time. Extending it by less than
        // a second (the runner's signal, then the recorded outcome, for one rate limit) is not
        // worth a second line.
        if self.paused_until.is_none_or(|current| until > current) {
            let noticeable = self.paused_until.is_none_or(|current| {
                until.duration_since(current) >= jiff::SignedDuration::from_secs(1)
            });
            self.paused_until = Some(until);
            if noticeable {
                self.emit(Event::Paused { until });
            }
        }
    }

    /// Writes an attempt's outcome to the queue.
    async fn record(&mut self, finished: Finished) {
        let id = finished.id.clone();
        self.running.remove(&id);
        let actor = self.options.actor.clone();
        let config = self.cfg().clone();
        let home = self.options.home.clone();
        let recorded = self
            .blocking(move |store| record_outcome(store, &actor, &finished, &config, &home))
            .await;
        match recorded {
            Ok(Some(plan)) => {
                self.summary.attempts += 1;
                *self.summary.verdicts.entry(plan.verdict.to_string()).or_default() += 1;
                if let Some(until) = plan.pause_until {
                    self.pause(Some(until));
                }
                self.emit(Event::Finished {
                    id: id.clone(),
                    verdict: plan.verdict.to_string(),
                    comment: plan.comment,
                });
            }
            Ok(None) => {}
            Err(error) => tracing::error!(%error, task = %id, "recording the outcome failed"),
        }
    }

    fn reload_config_if_changed(&mut self) {
        match self.config.poll() {
            Reload::Unchanged => {}
            Reload::Reloaded => {
                self.emit(Event::ConfigReloaded { max_concurrent: self.max_concurrent() });
            }
            Reload::Invalid(error) => self.emit(Event::ConfigRejected { error: error.to_string() }),
        }
    }
}

/// What a runner task hands back.
struct Finished {
    id: String,
    outcome: Outcome,
    /// The coder treats exit 0 as done (`exec`): the supervisor closes the task itself.
    closes_on_exit_zero: bool,
}

/// Ids of the in-progress tasks assigned to `actor`.
fn held_by(store: &Store, actor: &str) -> Result<Vec<String>, StoreError> {
    let mut held = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        if issue.status == crate::model::Status::InProgress && issue.assignee == actor {
            held.push(issue.id);
        }
        Ok(true)
    })?;
    Ok(held)
}

fn fleet_comment(id: &str, author: &str, text: &str) -> Comment {
    Comment {
        id: CommentId::Text(ulid::Ulid::generate().to_string()),
        issue_id: id.to_string(),
        author: author.to_string(),
        text: text.to_string(),
        created_at: Timestamp::now(),
    }
}

fn task_record(issue: &Issue) -> TaskRecord<'_> {
    TaskRecord {
        id: &issue.id,
        title: &issue.title,
        description: &issue.description,
        status: issue.status.as_str(),
        priority: issue.priority,
        cwd: &issue.fleet.cwd,
        coder: &issue.fleet.coder,
        model: &issue.fleet.model,
        attempts: issue.fleet.attempts,
        failures: issue.fleet.failures,
        noclose: issue.fleet.noclose,
        stalls: issue.fleet.stalls,
        context_resets: issue.fleet.context_resets,
        updated_at: issue.updated_at,
    }
}

/// Applies the plan for an attempt's outcome in one transaction; `None` if the task is gone.
fn record_outcome(
    store: &Store,
    actor: &str,
    finished: &Finished,
    config: &RuntimeConfig,
    home: &Path,
) -> Result<Option<outcome::Plan>, StoreError> {
    let id = finished.id.as_str();
    let (recorded, _) = store.write(actor, Clock::System, |w| {
        let Some(mut issue) = w.issue(id)? else { return Ok(None) };
        let succeeded = matches!(finished.outcome, Outcome::Exited { code: Some(0), .. });
        if succeeded && finished.closes_on_exit_zero && issue.assignee == actor {
            let reason = "command exited 0".to_string();
            w.apply(OpKind::Close { id: id.to_string(), reason, session: String::new() })?;
            issue = w.issue(id)?.unwrap_or(issue);
        }
        let plan = outcome::plan(&finished.outcome, &issue, actor, config, w.now());
        if plan.release {
            w.apply(OpKind::Release { id: id.to_string() })?;
        }
        if let Some(patch) = &plan.patch {
            w.apply(OpKind::Update { id: id.to_string(), patch: Box::new(patch.clone()) })?;
        }
        w.apply(OpKind::Comment { comment: fleet_comment(id, actor, &plan.comment) })?;
        Ok(Some((plan, w.issue(id)?)))
    })?;
    let Some((plan, after)) = recorded else { return Ok(None) };
    // task.json is written after the commit: a file write (with its sync) inside the
    // transaction would hold the store's writer lock, which every other process waits on.
    if let Some(after) = after {
        let _ = TaskDir::new(home, id)
            .and_then(|dir| dir.write_record(&task_record(&after), &Redactor::default()));
    }
    Ok(Some(plan))
}
