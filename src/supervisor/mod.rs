//! The supervisor behind `fleet run`: keeps up to `max_concurrent` agents busy on ready tasks,
//! and never lets two agents work on one task.
//!
//! It is the dispatcher; [`runner`]s are the executors. The loop
//! 1. claims ready work in-process whenever a slot is free, skipping tasks it still runs and
//!    tasks of paused coders; the claim transaction counts the attempt and puts this
//!    supervisor's [`lease`] on the task (instance, host, pid, start time, attempt id);
//! 2. starts a runner per claimed task; the agent runs in its own process group, tagged with
//!    the instance and attempt, and dies with the supervisor;
//! 3. notices, through the store's change counter and the journal, when someone changes a
//!    running task ([`revocation`]) and stops its agent within a poll;
//! 4. records each runner's [`Outcome`] as ops (see [`outcome::plan`]); faults of the fleet
//!    (missing CLI, no login, provider outage) and rate limits pause the coder ([`pause`])
//!    instead of charging the task — a coder with accounts runs each attempt on one of them
//!    and has its rate limits and refused logins pause only that account ([`accounts`]);
//! 5. refreshes its registration (heartbeat) and takes back tasks of supervisors that died
//!    ([`recovery`]), after killing what their agents left;
//! 6. reloads `runtime.toml` when it changes, keeping the previous config if the new one is
//!    invalid;
//! 7. on shutdown (the [`Stop`] level rises), tells every runner to stop its agent (SIGTERM,
//!    grace, SIGKILL; a second Ctrl-C cuts the grace), records their outcomes (released, not
//!    charged), and kills and reaps whatever is left.
//!
//! A [`guard`] process started at the beginning cleans up if the supervisor itself is killed.
//! A supervisor started in the background (`fleet run --detach`) is recorded in a pid file
//! under a lock ([`daemon`]).
//! When the journal repository has a git remote, it also syncs with it every
//! `sync_interval_secs` ([`crate::journal::sync::spawn_periodic_sync`]): a claim lost to an
//! earlier claim made elsewhere changes the task's assignee in the store, which the revocation
//! check notices as any other change by someone else, and the agent is stopped.
//! Meanwhile the journal is committed to git every [`JOURNAL_EVERY`] and once more at the end
//! ([`crate::journal::spawn_periodic`]).

pub mod accounts;
pub mod budget;
pub mod canary;
mod claiming;
pub mod daemon;
pub mod guard;
pub mod hold;
pub mod landing;
mod launch;
pub mod lease;
pub mod ledger;
mod notices;
pub mod outcome;
pub mod overhead;
pub mod pause;
mod pausing;
pub mod prompt;
pub mod recovery;
pub mod revocation;
pub mod runner;
mod settling;
pub mod stats;
pub mod taskdir;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::config::{ConfigWatcher, Reload, RuntimeConfig};
use crate::land::lane::{Entry, LaneKey};
use crate::model::Issue;
use crate::place::Places;
use crate::redact::Redactor;
use crate::store::{ReadyFilter, Store, StoreError};
use crate::time::Clock;
use crate::tracker;
use crate::tracker::claims as claim;
use claiming::{Claimed, coder_of};
use launch::Launch;
use lease::{Identity, Registration};
use outcome::Verdict;
use pause::{PauseCause, Pauses, Scope};
use pausing::rate_limit_detail;
use recovery::{Reclaimed, Scan};
use revocation::Touch;
use runner::{Control, RunnerSettings, Signal};
use settling::{Finished, task_record};
use taskdir::TaskDir;

/// The variable holding fleet's log filter. Agents do not inherit it: the supervisor's log
/// level is not theirs, and their `bd` calls keep beads' quiet stderr.
pub const LOG_FILTER_VAR: &str = "FLEET_LOG";

/// How often the store file is looked at for changes (its change counter is read only when
/// the file changed, see [`StoreStamp`]).
pub const POLL: Duration = Duration::from_millis(20);
/// While many agents run ([`many_agents`]), how often the store, runtime.toml and the holds
/// are looked at instead of [`POLL`]: each look is three `stat`s, and at 20 ms they were a
/// twentieth of the CPU of a supervisor of 256 chatty agents. Writes served by this process
/// wake it at once ([`Supervisor::waker`]); only other processes' direct writes wait.
const POLL_MANY: Duration = Duration::from_millis(100);
/// A store file written this recently is read again on every poll: a second commit within
/// the file system's timestamp granularity may leave the time as it was.
const RECENT_WRITE: Duration = Duration::from_millis(250);

/// What `stat` says about the store file: a commit by any process changes it. Comparing it
/// costs one system call; reading the change counter costs a thread hop and a read
/// transaction, which every 20 ms was a few percent of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StoreStamp {
    modified: std::time::SystemTime,
    len: u64,
    ino: u64,
}

impl StoreStamp {
    fn of(path: &Path) -> Option<StoreStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(StoreStamp { modified: meta.modified().ok()?, len: meta.len(), ino: meta.ino() })
    }

    /// Whether the file was written so recently that a later write may not show.
    fn is_recent(&self) -> bool {
        std::time::SystemTime::now()
            .duration_since(self.modified)
            .map_or(true, |age| age < RECENT_WRITE)
    }
}
/// How long the supervisor's thread naps before it waits for events again while many agents
/// run ([`BATCH_FROM`]), so that their lines are handled in batches, at most fifty wake-ups a
/// second instead of one per line: the most a reaction is delayed then. (5 ms cost 256 agents'
/// supervisor twice the CPU; `fleet bench supervisor`.)
pub const EVENT_BATCH: Duration = Duration::from_millis(20);
/// From this many running agents on, the event loop naps ([`EVENT_BATCH`]); a small fleet
/// reacts at once.
pub const BATCH_FROM: usize = 16;

/// Agents running in this process (for [`nap_between_events`]).
static RUNNING_AGENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What the supervisor's runtime does before it waits for events (`on_thread_park`): with
/// many agents running, a nap of [`EVENT_BATCH`]. With 256 agents printing 10 lines a second,
/// the wake-ups of one per line were a tenth of a core.
pub fn nap_between_events() {
    if many_agents() {
        std::thread::sleep(EVENT_BATCH);
    }
}

/// Whether [`BATCH_FROM`] agents or more run in this process: their events are then handled
/// in batches (the event loop naps, each runner reads its agent's output in spells).
pub fn many_agents() -> bool {
    RUNNING_AGENTS.load(std::sync::atomic::Ordering::Relaxed) >= BATCH_FROM
}
/// How often the ops of the run are committed to the git journal.
pub const JOURNAL_EVERY: Duration = Duration::from_secs(5);
/// How often the queue is re-checked when nothing changed (deferrals expire silently).
const RECHECK: Duration = Duration::from_secs(1);
/// An `--until-idle` run waits for a coder pause that ends within this long (a provider
/// outage, a short rate limit); a longer one, or one that needs a human, ends the run.
const IDLE_WAIT_FOR_PAUSE: Duration = Duration::from_secs(600);
/// After the claims remote failed (remote claim mode), claiming waits this long.
const REMOTE_RETRY: Duration = Duration::from_secs(10);

/// Why a supervisor cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `runtime.toml` is not valid.
    #[error("{0}")]
    Config(String),
    /// The holds file (`fleet pause`) cannot be read: nothing says what is paused.
    #[error(transparent)]
    Holds(std::io::Error),
}

impl StartError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            StartError::Config(_) => "fix runtime.toml (see `fleet config show`)",
            StartError::Holds(_) => {
                "fix its JSON, or remove it (which lifts every `fleet pause`), and start again"
            }
        }
    }
}

/// How far a shutdown has gone: the first Ctrl-C (or SIGTERM, SIGHUP) asks for a graceful
/// stop, a second one for an immediate one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    No,
    Graceful,
    Now,
}

/// Where the supervisor lives and who it is.
#[derive(Debug, Clone)]
pub struct Options {
    /// `$FLEET_HOME`: holds `runtime.toml`, `tasks/`, `bin/`, `state/`.
    pub home: PathBuf,
    /// The name tasks are assigned to while this supervisor runs them.
    pub actor: String,
    /// This program, linked as `bd` and `fleet` into the agents' PATH.
    pub exe: PathBuf,
    /// Stop once nothing is running and nothing is ready (demos, scripted runs).
    pub until_idle: bool,
    /// The user's home directory (`~` of `repo_roots`), if known.
    pub user_home: Option<PathBuf>,
}

/// What the supervisor reports as it works (the live view and `fleet run --json`).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Started {
        actor: String,
        instance: String,
        max_concurrent: usize,
    },
    Claimed {
        id: String,
        title: String,
        coder: String,
        model: String,
        /// The coder's account the attempt runs on, when the coder has accounts.
        #[serde(skip_serializing_if = "Option::is_none")]
        account: Option<String>,
        attempt: u32,
    },
    AgentStarted {
        id: String,
        pid: u32,
    },
    Finished {
        id: String,
        verdict: Verdict,
        comment: String,
    },
    /// No new task starts with `coder` — or, when `account` is given, on that account of it —
    /// until `until`. `news` is false when the same cause repeats (the live view then prints a
    /// short line).
    Paused {
        coder: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        account: Option<String>,
        until: Timestamp,
        cause: PauseCause,
        detail: String,
        fix: String,
        news: bool,
    },
    ConfigReloaded {
        max_concurrent: usize,
        /// The reloaded config's redactor (its accounts may have new keys), for the logs of
        /// whoever receives the events; not part of the event's JSON.
        #[serde(skip)]
        redactor: Redactor,
    },
    /// A person paused or resumed spawning (`fleet pause`, `fleet resume`): no new agent
    /// starts for `all` coders, for those listed, or on the accounts listed
    /// (`coder@account`); running agents go on.
    Held {
        all: bool,
        coders: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        accounts: Vec<String>,
        /// Held coder·models (`coder·model`), by `fleet pause --model` or the canary.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        models: Vec<String>,
    },
    /// The quality canary held `subject` (`coder·model` or `coder@account`): the `metric` of
    /// its latest attempts went well above its baseline (`detail` says by how much). No new
    /// agent starts for it until a person resumes it (`fix`); running agents go on.
    Canary {
        subject: String,
        coder: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        account: Option<String>,
        metric: canary::Metric,
        detail: String,
        fix: String,
    },
    ConfigRejected {
        error: String,
    },
    /// A task of a supervisor that is gone was taken back.
    Released {
        id: String,
        why: String,
        survivors_killed: usize,
    },
    /// Processes that stopped supervisors of this workspace left (of tasks no lease names any
    /// more: closed meanwhile) were killed.
    StraysKilled {
        count: usize,
    },
    /// An agent could not start for want of a resource (open files, processes): its task was
    /// released uncharged, and no more than `running` agents start for `hold_secs`.
    ShortOfResources {
        detail: String,
        running: usize,
        hold_secs: u64,
    },
    /// A running task was changed by someone else: its agent is being stopped.
    Revoked {
        id: String,
        reason: String,
    },
    /// Shutdown began: `agents` are being stopped with `grace_secs` to exit.
    Stopping {
        agents: usize,
        grace_secs: u64,
    },
    /// A second request: the agents are killed now.
    StoppingNow {
        agents: usize,
    },
    /// A claim pass started nothing: `running` agents fill `slots`, and nothing else ready
    /// could start. Sent once per change of the store (`changes`, its change counter), so a
    /// script sees that a change was looked at and left waiting; no line in the live view.
    Waiting {
        running: usize,
        slots: usize,
        changes: u64,
    },
    /// `--until-idle`: nothing more can run without a human (the pauses say why).
    Idle {
        paused: Vec<String>,
    },
    Stopped {
        finished: usize,
    },
    /// A merge lane finished with an entry: landed, refused, in conflict, or back in line.
    Land(landing::LandReport),
    /// `[budget]` holds back new attempts: `scope` (`fleet`, `coder NAME`, `account
    /// CODER@ACCOUNT`, `task`) has too little left for the next one; a day cap resets at
    /// `until`. Sent when the reason changes; `detail` empty and no `until` means claims go on
    /// again.
    Budget {
        scope: String,
        detail: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        until: Option<Timestamp>,
    },
}

/// Counts for the final summary.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Summary {
    pub attempts: usize,
    pub verdicts: std::collections::BTreeMap<String, usize>,
    /// Every task this run attempted, with the verdict of its last attempt (what
    /// `--until-idle`'s exit status is decided on).
    pub last_verdicts: std::collections::BTreeMap<String, Verdict>,
}

/// After each periodic sync: the export `sync.export_jsonl` asks for, as `fleet sync` does.
fn export_after_sync(store: &Store) {
    if let Err(error) = crate::beads::export_after_sync(store) {
        tracing::warn!(%error, "sync.export_jsonl: exporting after the sync failed");
    }
}

/// The places of a machine, for the roots they were made for (see [`Supervisor::places`]).
type SharedPlaces = Arc<std::sync::Mutex<(String, Places)>>;

/// Where `issue` runs on this machine, or why it cannot (`crate::place`).
fn resolve_here(places: &SharedPlaces, issue: &Issue) -> Result<PathBuf, crate::place::NotHere> {
    let mut places = places.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    places.1.resolve(&issue.fleet.cwd, issue.fleet.repo.as_ref())
}

/// Whether `issue`'s place is on this machine: a task whose place is not is left to the other
/// machines, never claimed, failed or blocked here.
fn runnable_here(places: &SharedPlaces, issue: &Issue) -> bool {
    resolve_here(places, issue).is_ok()
}

/// What claimable work this machine has, for `--until-idle`: the coders with tasks that no
/// hold of their coder·model holds (one scan per coder), and the held coder·models
/// (`coder·model`) with tasks waiting (one scan each). Tasks another machine holds (remote
/// claim mode), or whose place is not on this machine, are not work for this one.
fn work_left_here(
    store: &Store,
    actor: &str,
    (config, registry, holds, places): (
        &RuntimeConfig,
        &crate::coders::Registry,
        &hold::Holds,
        &SharedPlaces,
    ),
) -> Result<(Vec<String>, Vec<String>), StoreError> {
    let filter = ReadyFilter::default();
    let default_coder = &config.coder;
    let elsewhere =
        claim::Claims::of(store).map(|claims| claims.held_elsewhere()).unwrap_or_default();
    let reader = store.read()?;
    let now = Timestamp::now();
    // The coder·model a task's next attempt runs, when a hold of that model (and not of the
    // whole coder) holds it.
    let held_model = |i: &Issue| {
        let coder = coder_of(i, default_coder);
        let model = claiming::model_of(i, &coder, config, registry);
        let held = holds.models.get(&coder).is_some_and(|m| m.contains_key(&model));
        (held && !holds.holds(&coder)).then(|| hold::model_scope(&coder, &model))
    };
    let mine = |i: &Issue| !elsewhere.contains(&i.id) && runnable_here(places, i);
    let mut coders = Vec::new();
    while let Some(id) = reader.first_claimable_where(actor, &filter, now, &|i| {
        !coders.contains(&coder_of(i, default_coder))
            && mine(i)
            && (holds.models.is_empty() || held_model(i).is_none())
    })? {
        let issue = reader.issue(&id)?;
        coders.push(issue.map_or_else(String::new, |i| coder_of(&i, default_coder)));
    }
    let mut models: Vec<String> = Vec::new();
    while !holds.models.is_empty() {
        let next = reader.first_claimable_where(actor, &filter, now, &|i| {
            mine(i) && held_model(i).is_some_and(|m| !models.contains(&m))
        })?;
        let issue = match next {
            Some(id) => reader.issue(&id)?,
            None => None,
        };
        let Some(model) = issue.as_ref().and_then(held_model) else { break };
        models.push(model);
    }
    Ok((coders, models))
}

/// A task with a runner in flight.
struct Running {
    attempt: String,
    coder: String,
    /// The account it runs on (empty: none).
    account: String,
    control: watch::Sender<Control>,
}

pub struct Supervisor {
    store: Arc<Store>,
    options: Options,
    me: Identity,
    /// The current `runtime.toml` and the coders it defines, re-read when the file changes.
    config: ConfigWatcher,
    events: mpsc::UnboundedSender<Event>,
    running: HashMap<String, Running>,
    pauses: Pauses,
    /// The next journal sequence to read for changes to running tasks.
    journal_next: u64,
    started_at: Timestamp,
    summary: Summary,
    /// The claims remote failed: no claim is tried before then.
    remote_retry_at: Option<tokio::time::Instant>,
    /// A claim found the store file damaged (the error): nothing more starts without a
    /// person, so `--until-idle` stops, failing with it.
    damaged: Option<String>,
    /// Notified after the socket server commits (see [`Supervisor::waker`]).
    wake: Arc<tokio::sync::Notify>,
    /// People's pauses of spawning (`fleet pause`), re-read when the file changes.
    holds: hold::HoldWatch,
    /// When each account last started an agent (the tie-break of account rotation).
    rotation: accounts::Rotation,
    /// The accounts' rate-limit windows as their CLIs reported them (accounts that reset
    /// soonest are used first).
    windows: accounts::Windows,
    /// The machine ran out of a resource starting an agent: spawning is held back.
    short: Option<Shortage>,
    /// Where tasks' working directories are on this machine (`crate::place`), for the roots
    /// of the config in force.
    places: SharedPlaces,
    /// The merge lanes landing an entry now (one entry per lane at a time).
    lanes_busy: std::collections::BTreeSet<crate::land::lane::LaneKey>,
    /// The merge queue must be read again: an agent closed a task, a landing ended, or the
    /// queue changed while entries wait (a resolution task may have closed).
    landing_due: bool,
    /// Entries in the merge queue at the last read, including those waiting for a resolution
    /// task: while there are any, every change of the queue reads it again.
    landing_waiting: usize,
    /// Entries that can be landed now, at the last read: an `--until-idle` run goes on while
    /// there are any.
    landing_ready: usize,
    /// Where notices for a person go (`[notify]`); started with the run.
    notifier: Option<crate::notify::Notifier>,
    /// Which events become notices.
    noticer: notices::Noticer,
    /// What `[budget]` refused in the last claim pass that started nothing.
    budget_refused: Option<budget::Refusal>,
    /// The day cap holding new attempts back, as told (event, `state/budget-held.json`).
    budget_held: Option<budget::Held>,
    /// The quality canary: each coder·model's and account's latest attempts, seeded from the
    /// ledgers at start and fed every settled attempt.
    canaries: canary::Canaries,
}

/// Spawning held back after an agent could not start for want of a resource (open files,
/// processes): no more than `cap` agents run until `until`, when spawning tries again.
#[derive(Debug, Clone, Copy)]
struct Shortage {
    cap: usize,
    until: tokio::time::Instant,
}

/// How long spawning stays held back after a shortage of resources.
const SHORTAGE_HOLD: Duration = Duration::from_secs(30);

fn config_path(home: &Path) -> PathBuf {
    home.join("runtime.toml")
}

/// Where `fleet run` links `bd` and `fleet` to itself: `$FLEET_HOME/bin`, first on its agents'
/// PATH.
pub fn bin_dir(home: &Path) -> PathBuf {
    home.join("bin")
}

/// The PATH agents get: [`bin_dir`] first, then `inherited` (the supervisor's own), where
/// they — and the supervisor, spawning them — find their programs.
pub fn agent_path(home: &Path, inherited: &str) -> String {
    format!("{}:{inherited}", bin_dir(home).display())
}

impl Supervisor {
    /// What wakes the main loop at once when another part of this process committed a write
    /// (the socket server serving agents' commands), instead of at its next poll.
    pub fn waker(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.wake)
    }

    /// Loads the config and the holds (an invalid one is an error here: there is nothing to
    /// fall back to, and a broken holds file must not start agents a pause holds back).
    pub fn new(
        store: Arc<Store>,
        options: Options,
        events: mpsc::UnboundedSender<Event>,
    ) -> Result<Supervisor, StartError> {
        let config = ConfigWatcher::new(&config_path(&options.home))
            .map_err(|e| StartError::Config(e.to_string()))?;
        let me = Identity::current(&options.actor);
        let pauses = Pauses::load(&options.home);
        // A hold recorded by an earlier run is told over (or cleared) by this one's claims.
        let budget_held = budget::Held::load(&options.home, Timestamp::now());
        // What the accounts' CLIs said of their windows before a restart still orders them.
        let windows = accounts::Windows::load(&options.home);
        let holds = hold::HoldWatch::new(&options.home).map_err(StartError::Holds)?;
        let canaries = canary::Canaries::seed(
            &options.home,
            &config.config().canary,
            holds.holds(),
            Timestamp::now(),
        );
        // Agents' writes served by this process are masked with the config's secrets too.
        tracker::set_inbound_redactor(config.redactor().clone());
        Ok(Supervisor {
            holds,
            store,
            options,
            me,
            config,
            events,
            running: HashMap::new(),
            pauses,
            journal_next: 0,
            started_at: Timestamp::now(),
            summary: Summary::default(),
            remote_retry_at: None,
            damaged: None,
            wake: Arc::new(tokio::sync::Notify::new()),
            rotation: accounts::Rotation::default(),
            windows,
            short: None,
            places: Arc::new(std::sync::Mutex::new((String::new(), Places::new(&[], None)))),
            lanes_busy: std::collections::BTreeSet::new(),
            landing_due: true,
            landing_waiting: 0,
            landing_ready: 0,
            notifier: None,
            noticer: notices::Noticer::default(),
            budget_refused: None,
            budget_held,
            canaries,
        })
    }

    /// The places of this machine for the config in force (made again when `repo_roots`
    /// changes).
    fn places(&self) -> SharedPlaces {
        let roots = self.cfg().repo_roots.clone();
        let mut places = self.places.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if places.0 != roots || places.1.is_unset() {
            let list: Vec<String> = roots.split(':').map(str::to_string).collect();
            *places = (roots, Places::new(&list, self.options.user_home.as_deref()));
        }
        drop(places);
        Arc::clone(&self.places)
    }

    fn cfg(&self) -> &RuntimeConfig {
        self.config.config()
    }

    /// The redactor of the config in force (see [`RuntimeConfig::redactor`]); a reload comes
    /// with its own ([`Event::ConfigReloaded`]).
    pub fn redactor(&self) -> &Redactor {
        self.config.redactor()
    }

    fn max_concurrent(&self) -> usize {
        usize::try_from(self.cfg().max_concurrent).unwrap_or(usize::MAX)
    }

    /// How many agents may run now: `max_concurrent`, or fewer while a shortage of resources
    /// holds spawning back.
    fn slots(&mut self) -> usize {
        match self.short {
            Some(short) if tokio::time::Instant::now() < short.until => {
                short.cap.min(self.max_concurrent())
            }
            _ => {
                self.short = None;
                self.max_concurrent()
            }
        }
    }

    fn emit(&self, event: Event) {
        if let Some(notifier) = &self.notifier
            && let Some(notice) = self.noticer.notice(&event)
        {
            notifier.offer(notice);
        }
        let _ = self.events.send(event);
    }

    /// Runs until `stop` rises above [`Stop::No`] (or, with `until_idle`, until nothing more
    /// can run).
    pub async fn run(mut self, mut stop: watch::Receiver<Stop>) -> Result<Summary, String> {
        let _ = crate::process::become_subreaper();
        let (before, after) = crate::process::raise_open_file_limit();
        if after > before {
            tracing::info!(before, after, "raised the soft limit of open files to the hard limit");
        }
        self.link_tools()
            .map_err(|e| format!("linking bd/fleet into {}: {e}", self.bin_dir().display()))?;
        let mut guard = self.spawn_guard()?;
        self.register().await?;
        let source = format!("{} ({})", self.me.name, self.me.instance);
        self.notifier = Some(crate::notify::Notifier::start(
            self.cfg().notify.clone(),
            self.redactor().clone(),
            source,
        ));
        self.journal_next =
            self.blocking(|s| s.journal_head()).await.map_err(|e| e.to_string())? + 1;
        self.reclaim(Scan::Always).await;
        self.emit(Event::Started {
            actor: self.me.name.clone(),
            instance: self.me.instance.clone(),
            max_concurrent: self.max_concurrent(),
        });
        self.announce_carried_over_pauses();
        if !self.holds.holds().is_empty() {
            self.emit_holds();
        }
        let journal = crate::journal::spawn_periodic(Arc::clone(&self.store), JOURNAL_EVERY);
        let sync_every = Duration::from_secs(self.cfg().sync_interval_secs);
        let syncing = crate::journal::sync::spawn_periodic_sync(
            Arc::clone(&self.store),
            sync_every,
            export_after_sync,
        );
        let (signals_tx, mut signals) = mpsc::unbounded_channel();
        let mut runners: JoinSet<Finished> = JoinSet::new();
        let mut landings: JoinSet<(LaneKey, Vec<landing::LandReport>)> = JoinSet::new();
        let mut children = child_exits();
        let mut last_changes = u64::MAX;
        // The change counter the last `Event::Waiting` was sent at.
        let mut waited_at: Option<u64> = None;
        let store_path = self.store.path();
        let mut store_stamp: Option<StoreStamp> = None;
        let mut next_recheck = tokio::time::Instant::now();
        let mut next_heartbeat = tokio::time::Instant::now() + lease::HEARTBEAT;
        while *stop.borrow() == Stop::No {
            self.reload_config_if_changed();
            let now = tokio::time::Instant::now();
            if self.holds.poll() {
                self.holds_changed();
                // Resumed: claim at once rather than at the next recheck.
                next_recheck = now;
            }
            if now >= next_heartbeat {
                next_heartbeat = now + lease::HEARTBEAT;
                if let Some(lost) = self.store.file_replaced() {
                    return Err(self.abandon(&mut runners, guard, &lost).await);
                }
                self.heartbeat().await;
                self.keep_guard(&mut guard);
                self.reclaim(Scan::IfSomeoneDied).await;
            }
            let stamp = StoreStamp::of(&store_path);
            let changes = if stamp.is_none_or(|s| Some(s) != store_stamp || s.is_recent()) {
                store_stamp = stamp;
                self.changes().await
            } else {
                last_changes
            };
            if changes != last_changes {
                self.check_running_tasks().await;
            }
            if changes != last_changes || now >= next_recheck {
                if self.landing_due || (changes != last_changes && self.landing_waiting > 0) {
                    self.drive_lanes(&mut landings).await;
                }
                last_changes = changes;
                next_recheck = now + RECHECK;
                let started = self.fill_slots(&mut runners, &stop, &signals_tx).await;
                if started == 0 && waited_at != Some(changes) {
                    waited_at = Some(changes);
                    let (running, slots) = (self.running.len(), self.slots());
                    self.emit(Event::Waiting { running, slots, changes });
                }
                if self.options.until_idle
                    && started == 0
                    && runners.is_empty()
                    && landings.is_empty()
                    && self.landing_ready == 0
                    && !self.landing_due
                    && (self.damaged.is_some() || self.idle().await)
                {
                    break;
                }
            }
            tokio::select! {
                _ = stop.changed() => {}
                Some(done) = runners.join_next() => {
                    // What a runner signalled as it ran (a rate limit) is handled before its
                    // outcome: the runner sent it before it returned, so it is queued by now.
                    while let Ok(signal) = signals.try_recv() {
                        self.on_signal(signal);
                    }
                    if let Ok(finished) = done {
                        self.record(finished).await;
                    }
                    next_recheck = tokio::time::Instant::now();
                }
                Some(done) = landings.join_next() => {
                    if let Ok((lane, reports)) = done {
                        self.landed(&lane, reports);
                    }
                    next_recheck = tokio::time::Instant::now();
                }
                Some(signal) = signals.recv() => self.on_signal(signal),
                // `Some`: without a SIGCHLD handler the channel is closed and must not spin.
                Some(()) = children.recv() => { crate::process::reap_orphans(&Default::default()); }
                () = self.wake.notified() => {}
                () = tokio::time::sleep(if many_agents() { POLL_MANY } else { POLL }) => {}
            }
        }
        self.shut_down(&mut runners, &mut stop, guard.id()).await;
        // A landing under way finishes (its checks are bounded by their timeout): stopping
        // it halfway would only make the next run redo it.
        while let Some(done) = landings.join_next().await {
            if let Ok((lane, reports)) = done {
                self.landed(&lane, reports);
            }
        }
        if let Some(syncing) = syncing {
            syncing.finish().await;
        }
        journal.finish().await;
        guard::stop(guard);
        self.emit(Event::Stopped { finished: self.summary.attempts });
        if let Some(notifier) = self.notifier.take() {
            notifier.finish().await;
        }
        match self.damaged {
            Some(error) if self.options.until_idle => Err(error),
            _ => Ok(self.summary),
        }
    }

    fn spawn_guard(&self) -> Result<std::process::Child, String> {
        guard::spawn(&self.options.exe, &self.me.instance, &self.options.home, self.store.dir())
            .map_err(|e| format!("starting the guard process: {e}"))
    }

    /// Starts a new guard when the old one is gone (killed by hand): without one, a supervisor
    /// killed next would leave its agents' helpers running.
    fn keep_guard(&self, guard: &mut std::process::Child) {
        if guard::is_running(guard) {
            return;
        }
        match self.spawn_guard() {
            Ok(new) => {
                tracing::warn!(
                    old = guard.id(),
                    new = new.id(),
                    "the guard process was gone; started another"
                );
                let _ = guard.try_wait();
                *guard = new;
            }
            Err(error) => {
                tracing::error!(%error, "the guard process is gone and cannot be restarted")
            }
        }
    }

    /// Stops every runner (they see the stop level), records their outcomes, deregisters, and
    /// kills whatever is left except the guard process (`guard_pid`), which is no stray.
    async fn shut_down(
        &mut self,
        runners: &mut JoinSet<Finished>,
        stop: &mut watch::Receiver<Stop>,
        guard_pid: u32,
    ) {
        let agents = self.running.len();
        if *stop.borrow() == Stop::Now {
            self.emit(Event::StoppingNow { agents });
        } else if agents > 0 || *stop.borrow() == Stop::Graceful {
            self.emit(Event::Stopping {
                agents,
                grace_secs: self.cfg().shutdown_grace().as_secs(),
            });
        }
        let mut told_now = *stop.borrow() == Stop::Now;
        loop {
            tokio::select! {
                done = runners.join_next() => match done {
                    Some(Ok(finished)) => self.record(finished).await,
                    Some(Err(_)) => {}
                    None => break,
                },
                _ = stop.changed(), if !told_now => {
                    if *stop.borrow() == Stop::Now {
                        told_now = true;
                        self.emit(Event::StoppingNow { agents: self.running.len() });
                    }
                }
            }
        }
        let instance = self.me.instance.clone();
        let _ = self
            .blocking(move |s| {
                tracker::execute_in(s, "", Clock::System, &lease::deregister(&instance))
            })
            .await;
        let tag = self.me.tag();
        let strays = tokio::task::spawn_blocking(move || crate::process::kill_tagged(&tag))
            .await
            .unwrap_or(0)
            + crate::process::kill_stray_children(&i32::try_from(guard_pid).into_iter().collect());
        if strays > 0 {
            tracing::warn!(strays, "killed processes left behind by agents");
        }
    }

    /// The store file was deleted or replaced under this supervisor (`lost` says which):
    /// whatever it writes now would go to a file no one reads. Stops every agent without
    /// recording outcomes or releasing tasks (those writes would go to the old file too), and
    /// returns the error that ends the run; the next `fleet run` takes the tasks back through
    /// the lease rules, since this instance is then gone.
    async fn abandon(
        &mut self,
        runners: &mut JoinSet<Finished>,
        guard: std::process::Child,
        lost: &str,
    ) -> String {
        let tasks: Vec<String> = self.running.keys().cloned().collect();
        tracing::error!(tasks = %tasks.join(","), "{lost}; stopping without writing to it");
        for running in self.running.values() {
            let _ = running.control.send(Control::Revoke(format!("{lost}; the supervisor stops")));
        }
        while runners.join_next().await.is_some() {}
        self.running.clear();
        let tag = self.me.tag();
        let _ = tokio::task::spawn_blocking(move || crate::process::kill_tagged(&tag)).await;
        // The guard would release the leases in whatever file is at the path now: not ours.
        guard::stop(guard);
        let mut message =
            format!("{lost}; fleet run stopped rather than write to a file no one reads");
        if !tasks.is_empty() {
            message.push_str(&format!(
                ". Its agents were stopped; their tasks ({}) could not be released in the replaced store, and the next `fleet run` takes them back through the lease rules",
                tasks.join(", ")
            ));
        }
        message
    }

    fn bin_dir(&self) -> PathBuf {
        bin_dir(&self.options.home)
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

    /// The messages for task `id` not yet acknowledged (none if the store cannot be read:
    /// they stay in its inbox).
    fn unread_mail(&self, id: &str) -> Vec<crate::coord::Message> {
        let read = self.store.read().and_then(|reader| reader.messages());
        match read {
            Ok(messages) => crate::coord::inbox(messages, crate::coord::Mailbox::Task(id), false),
            Err(error) => {
                tracing::warn!(%error, task = %id, "reading the task's messages failed");
                Vec::new()
            }
        }
    }

    /// The actor the agents write as (`BD_ACTOR`).
    fn agent_actor(&self) -> String {
        format!("{}/agent", self.me.name)
    }

    /// The environment every agent gets on top of the coder's own.
    fn agent_env(&self) -> Vec<(String, String)> {
        let path = crate::env::path();
        vec![
            ("FLEET_HOME".into(), self.options.home.display().to_string()),
            ("BEADS_DIR".into(), self.store.dir().display().to_string()),
            ("PATH".into(), agent_path(&self.options.home, &path)),
            ("BD_ACTOR".into(), self.agent_actor()),
            (lease::INSTANCE_VAR.into(), self.me.instance.clone()),
        ]
    }

    async fn blocking<R: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> R + Send + 'static,
    ) -> R {
        let store = Arc::clone(&self.store);
        match tokio::task::spawn_blocking(move || work(&store)).await {
            Ok(result) => result,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        }
    }

    async fn changes(&self) -> u64 {
        self.blocking(|store| store.changes().unwrap_or(0)).await
    }

    fn registration(&self) -> Registration {
        Registration {
            identity: self.me.clone(),
            started_at: self.started_at,
            heartbeat: Timestamp::now(),
            max_concurrent: self.max_concurrent(),
        }
    }

    async fn register(&self) -> Result<(), String> {
        let registration = self.registration();
        self.blocking(move |s| {
            tracker::execute_in(s, "", Clock::System, &lease::register(&registration)?)
        })
        .await
        .map(|_| ())
        .map_err(|e| format!("registering the supervisor: {e}"))
    }

    async fn heartbeat(&self) {
        if let Err(error) = self.register().await {
            let instance = &self.me.instance;
            tracing::error!(%error, %instance, "refreshing the supervisor's heartbeat failed");
        }
    }

    /// Takes back tasks of supervisors that are gone.
    async fn reclaim(&self, scan: Scan) {
        let me = self.me.clone();
        let home = self.options.home.clone();
        let result = self.blocking(move |s| recovery::reclaim_abandoned(s, &me, &home, scan)).await;
        match result {
            Ok(reclaim) => {
                for Reclaimed { id, why, survivors_killed, .. } in reclaim.tasks {
                    self.emit(Event::Released { id, why, survivors_killed });
                }
                if reclaim.strays_killed > 0 {
                    self.emit(Event::StraysKilled { count: reclaim.strays_killed });
                }
            }
            Err(error) => {
                tracing::error!(%error, "taking back the tasks of stopped supervisors failed")
            }
        }
    }

    /// Tells the runner of every running task that someone else changed what to do.
    async fn check_running_tasks(&mut self) {
        if self.running.is_empty() {
            self.journal_next = self.blocking(|s| s.journal_head()).await.unwrap_or(0) + 1;
            return;
        }
        let from = self.journal_next;
        let ids: HashMap<String, ()> = self.running.keys().map(|id| (id.clone(), ())).collect();
        let read = self
            .blocking(move |s| -> Result<_, StoreError> {
                let (next, touched, reader) = revocation::touched_since(s, from, &ids)?;
                let mut issues = Vec::new();
                for (id, touch) in touched {
                    issues.push((reader.issue(&id)?, id, touch));
                }
                Ok((next, issues))
            })
            .await;
        let (next, touched) = match read {
            Ok(read) => read,
            Err(error) => {
                let tasks = self.running.keys().cloned().collect::<Vec<_>>().join(",");
                tracing::error!(
                    %error,
                    %tasks,
                    "reading the journal for changes to running tasks failed"
                );
                return;
            }
        };
        self.journal_next = next;
        for (issue, id, touch) in touched {
            self.apply_control(&id, issue.as_ref(), &touch);
        }
    }

    fn apply_control(&self, id: &str, issue: Option<&Issue>, touch: &Touch) {
        let Some(running) = self.running.get(id) else { return };
        let control =
            revocation::decide(issue, &self.me, &running.attempt, touch, &self.agent_actor());
        let changed = running.control.send_if_modified(|current| {
            let escalate = *current == Control::Run || matches!(control, Control::Revoke(_));
            if escalate && *current != control && !matches!(current, Control::Revoke(_)) {
                *current = control.clone();
                true
            } else {
                false
            }
        });
        if changed && let Control::Revoke(reason) = control {
            self.emit(Event::Revoked { id: id.to_string(), reason });
        }
    }

    /// With `--until-idle`: whether the run should end — nothing can be claimed now, nothing
    /// waits out the supervisor's own retry backoff, and no coder pause that ends soon by itself
    /// holds work back. Work a person deferred (`defer_until`) does not keep the run going.
    async fn idle(&self) -> bool {
        if let Some(refusal) = &self.budget_refused {
            let why = format!("budget ({}): {} (`fleet budget`)", refusal.scope, refusal.detail);
            self.emit(Event::Idle { paused: vec![why] });
            return true;
        }
        let actor = self.me.name.clone();
        let config = self.cfg().clone();
        let registry = self.config.registry().clone();
        let holds = self.holds.holds().clone();
        let places = self.places();
        let (pending, held_models) = self
            .blocking(move |store| {
                let context = (&config, &registry, &holds, &places);
                work_left_here(store, &actor, context)
            })
            .await
            .unwrap_or_default();
        let now = Timestamp::now();
        let soon = now + SignedDuration::try_from(IDLE_WAIT_FOR_PAUSE).unwrap_or_default();
        let mut paused: Vec<String> = held_models
            .iter()
            .map(|model| format!("{model}: held (`fleet tasks` says why; `fleet resume` lifts it)"))
            .collect();
        for coder in &pending {
            match accounts::blocked(self.cfg(), coder, &self.pauses, self.holds.holds(), now) {
                None => return false,
                Some(accounts::Blocked::Held) => paused
                    .push(format!("{coder}: paused by `fleet pause` (`fleet resume` lifts it)")),
                Some(accounts::Blocked::Paused(_, p)) if !p.needs_a_human() && p.until <= soon => {
                    return false;
                }
                Some(accounts::Blocked::Paused(scope, p)) => {
                    paused.push(format!("{scope}: {} until {}", p.cause.as_str(), p.until));
                }
            }
        }
        if !paused.is_empty() {
            self.emit(Event::Idle { paused });
        }
        true
    }

    fn start(
        &mut self,
        Claimed { issue, no_worktree, budget }: Claimed,
        runners: &mut JoinSet<Finished>,
        stop: &watch::Receiver<Stop>,
        signals: &mpsc::UnboundedSender<Signal>,
    ) {
        let id = issue.id.clone();
        let lease = issue.fleet.lease.clone().unwrap_or_default();
        self.emit(Event::Claimed {
            id: id.clone(),
            title: issue.title.clone(),
            coder: lease.coder.clone(),
            model: lease.model.clone(),
            account: (!lease.account.is_empty()).then(|| lease.account.clone()),
            attempt: issue.fleet.attempts,
        });
        let (control_tx, control) = watch::channel(Control::Run);
        self.running.insert(
            id.clone(),
            Running {
                attempt: lease.attempt.clone(),
                coder: lease.coder.clone(),
                account: lease.account.clone(),
                control: control_tx,
            },
        );
        RUNNING_AGENTS.store(self.running.len(), std::sync::atomic::Ordering::Relaxed);
        let account = self.cfg().account(&lease.coder, &lease.account).cloned();
        if account.is_some() {
            self.rotation.started(&lease.coder, &lease.account);
        }
        let task_dir = TaskDir::new(&self.options.home, &id);
        let coder = self.config.registry().get(&lease.coder);
        let cwd = match self.place_of(&issue) {
            Some(dir) if dir.as_os_str().is_empty() => self.options.home.clone(),
            Some(dir) => dir,
            // Resolved when the task was claimed; a checkout gone since runs where it was.
            None => PathBuf::from(&issue.fleet.cwd),
        };
        let settings = RunnerSettings {
            stall_timeout: self.cfg().stall_timeout(),
            attempt_timeout: self.cfg().attempt_timeout(),
            grace: self.cfg().shutdown_grace(),
            context_threshold_pct: self.cfg().context_pressure_threshold_pct,
            rate_limit_threshold_pct: self.cfg().rate_limit_threshold_pct,
        };
        let env = self.agent_env();
        let prices = self.cfg().prices.clone();
        if let Ok(dir) = &task_dir {
            let _ = dir.write_record(&task_record(&issue), self.redactor());
        }
        let launch = Box::new(Launch {
            landing: issue.fleet.land.clone(),
            mail: self.unread_mail(&id),
            issue,
            lease,
            coder,
            task_dir,
            cwd,
            no_worktree,
            account,
            env,
            instance: self.me.instance.clone(),
            settings,
            prices,
            stop: stop.clone(),
            control,
            budget,
        });
        runners.spawn(launch.run(signals.clone()));
    }

    fn on_signal(&mut self, signal: Signal) {
        match signal {
            Signal::Started { task_id, pid } => self.emit(Event::AgentStarted { id: task_id, pid }),
            Signal::RateLimited { coder, account, resets_at, window, near } => {
                let detail = rate_limit_detail(window.as_deref(), near);
                let scope = Scope::of_attempt(&coder, &account, PauseCause::RateLimit);
                self.pause_for_rate_limit(&scope, resets_at, &detail);
            }
            Signal::Window { coder, account, window, resets_at, utilization_pct } => {
                let seen = accounts::Window { resets_at, utilization_pct };
                if self.windows.observe((&coder, &account), window.as_deref(), seen)
                    && let Err(error) = self.windows.save(&self.options.home)
                {
                    tracing::warn!(%error, "cannot record the accounts' windows in state/windows.json");
                }
            }
        }
    }

    /// Reads the merge queue and starts landing the next entry of every free lane.
    async fn drive_lanes(&mut self, landings: &mut JoinSet<(LaneKey, Vec<landing::LandReport>)>) {
        self.landing_due = false;
        let busy = self.lanes_busy.clone();
        let actor = self.me.name.clone();
        let how = (self.cfg().merge.review, self.cfg().merge.batch);
        let read = self.blocking(move |store| landing::scan(store, &actor, &busy, how)).await;
        let waiting = match read {
            Ok(waiting) => waiting,
            Err(error) => {
                tracing::error!(%error, "reading the merge queue failed");
                return;
            }
        };
        self.landing_ready = waiting.ready;
        self.landing_waiting = waiting.ready + waiting.blocked;
        for entries in waiting.next {
            let Some(lane) = entries.first().map(Entry::lane) else { continue };
            self.lanes_busy.insert(lane.clone());
            let store = Arc::clone(&self.store);
            let actor = self.me.name.clone();
            let home = self.options.home.clone();
            let config = self.cfg().clone();
            let redactor = self.redactor().clone();
            landings.spawn_blocking(move || {
                let reports =
                    landing::land_lane(&store, &actor, home, &entries, (&config, &redactor));
                (lane, reports)
            });
        }
    }

    /// A lane finished with an entry: reported, and the queue read again.
    fn landed(&mut self, lane: &LaneKey, reports: Vec<landing::LandReport>) {
        self.lanes_busy.remove(lane);
        self.landing_due = true;
        for report in reports {
            if report.verdict == "error" {
                tracing::error!(task = %report.id, "landing failed: {}", report.detail);
            }
            self.emit(Event::Land(report));
        }
    }

    fn reload_config_if_changed(&mut self) {
        match self.config.poll() {
            Reload::Unchanged => {}
            Reload::Reloaded => {
                let redactor = self.redactor().clone();
                tracker::set_inbound_redactor(redactor.clone());
                if let Some(notifier) = &self.notifier {
                    notifier.reconfigure(&self.cfg().notify, &redactor);
                }
                self.emit(Event::ConfigReloaded {
                    max_concurrent: self.max_concurrent(),
                    redactor,
                });
            }
            Reload::Invalid(error) => self.emit(Event::ConfigRejected { error: error.to_string() }),
        }
    }
}

/// The redactor for what the supervisor writes itself: token shapes, and the values of the
/// secret-looking variables of its own environment (which every agent inherits). Built once:
/// the supervisor's environment does not change while it runs.
pub fn process_redactor() -> Redactor {
    static PROCESS: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
    PROCESS
        .get_or_init(|| {
            let vars = crate::env::all();
            Redactor::from_env(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        })
        .clone()
}

/// A stream that yields when a child process of this one exits (SIGCHLD), so orphans the
/// agents left are reaped at once instead of piling up as zombies.
fn child_exits() -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    if let Ok(mut sigchld) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
        tokio::spawn(async move {
            while sigchld.recv().await.is_some() {
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
    }
    rx
}
