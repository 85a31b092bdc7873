//! What every command of either personality needs: the output, the actor, the clock, and the
//! workspace — found and resolved by the policy of the [`Personality`] that is running.
//!
//! This is where the environment is read — `FLEET_HOME`, `BEADS_DIR`, the actor variables and
//! the test clock `FLEET_TEST_NOW` — once, so the library below never looks at it.
//!
//! Workspace discovery, in order:
//!
//! - `fleet`: `--db` (a `.beads` directory or its `beads.db`), `$BEADS_DB` / `$BD_DB` (the
//!   same, from the environment), `$BEADS_DIR`, then
//!   `$FLEET_HOME/.beads` (FLEET_HOME defaulting to `~/.fleet`).
//! - `bd`: `--db`, `$BEADS_DB` / `$BD_DB`, `$BEADS_DIR`, then the nearest `.beads/` holding a store or
//!   `metadata.json`, walking up from the current directory, as beads does.
//! - `fleet bd`: as `bd`, but the last step is fleet's central queue, `$FLEET_HOME/.beads`,
//!   because the Python fleet ran `bd` from `FLEET_HOME`.
//!
//! Actor resolution: `--actor`, then
//!
//! - fleet: `$FLEET_ACTOR`, `$BEADS_ACTOR`, `$BD_ACTOR`, `$USER`;
//! - bd: `$BEADS_ACTOR`, `$BD_ACTOR`, `git config user.name`, `$USER`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use jiff::Timestamp;

use super::error::CliError;
use super::output::{Mode, Output};
use super::style::{ColorWhen, Stream};
use crate::store::{Store, StoreError};
use crate::time::Clock;
use crate::tracker::{Reply, Request};
use crate::workspace::{self, STORE_FILE};

/// Whether `--json` is indented: asked for (`--pretty`, `FLEET_JSON_PRETTY`), or read by a
/// person (stdout is a terminal). Into a pipe it is compact (see `output`).
fn json_is_pretty(flag: bool) -> bool {
    use std::io::IsTerminal;
    flag || crate::env::json_pretty() || std::io::stdout().is_terminal()
}

/// How the binary was reached; it decides the [`Mode`] and where the workspace is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Personality {
    /// `fleet …`.
    Fleet,
    /// Invoked as `bd`: the nearest `.beads/` upwards from the current directory.
    Bd,
    /// `fleet bd …`: bd's commands on fleet's central queue `$FLEET_HOME/.beads`.
    FleetBd,
}

impl Personality {
    pub fn mode(self) -> Mode {
        match self {
            Personality::Fleet => Mode::Fleet,
            Personality::Bd | Personality::FleetBd => Mode::Bd,
        }
    }
}

/// The flags every command of either personality takes that the context needs.
#[derive(Debug, Clone, Default)]
pub struct ContextArgs {
    pub json: bool,
    pub quiet: bool,
    pub actor: Option<String>,
    pub db: Option<PathBuf>,
    /// `--color` (fleet only: bd's output is never coloured).
    pub color: ColorWhen,
    /// `--pretty`: indented `--json` even into a pipe.
    pub pretty: bool,
    /// `--terse`: the short text form of `ready`, `list` and `show`.
    pub terse: bool,
}

pub struct Context {
    pub out: Output,
    /// `--actor`; the actor is resolved from it and the environment on first use
    /// ([`Context::actor`]), so reads that never act spawn no `git config` for bd.
    actor_flag: Option<String>,
    actor: std::sync::OnceLock<String>,
    pub clock: Clock,
    personality: Personality,
    /// The `.beads` directory, or why there is none (reported when a command needs it).
    workspace: Result<PathBuf, CliError>,
    /// The store, opened once for the settings and checks around a command's write.
    store: std::sync::OnceLock<Store>,
    /// The task of the `fleet run` attempt this command runs in (an agent's), if any.
    attempt_task: Option<String>,
}

impl Context {
    pub fn new(args: ContextArgs, personality: Personality) -> Result<Context, CliError> {
        let clock = test_clock()?;
        tracing::debug!(?clock, "acting");
        Ok(Context {
            out: Output::new(personality.mode(), args.json, args.quiet)
                .with_color(personality == Personality::Fleet && args.color.enabled(Stream::Stdout))
                .with_layout(json_is_pretty(args.pretty), args.terse || crate::env::terse()),
            actor_flag: args.actor,
            actor: std::sync::OnceLock::new(),
            clock,
            personality,
            workspace: discover(args.db.as_deref(), personality),
            store: std::sync::OnceLock::new(),
            attempt_task: crate::env::attempt_task(),
        })
    }

    /// Who is acting (see the module documentation), resolved on first use.
    pub fn actor(&self) -> &str {
        self.actor.get_or_init(|| {
            let actor = resolve_actor(self.actor_flag.clone(), self.personality.mode());
            tracing::debug!(%actor, "acting as");
            actor
        })
    }

    pub fn personality(&self) -> Personality {
        self.personality
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The `.beads` directory this command works on.
    pub fn workspace_dir(&self) -> Result<&Path, CliError> {
        self.workspace.as_deref().map_err(Clone::clone)
    }

    /// Opens the workspace's store for this one command: read-only until the first write, and
    /// without the close-time commit a short-lived process does not need (see
    /// [`Store::open`] and [`Store::skip_close_on_exit`]).
    pub fn open_store(&self) -> Result<Store, CliError> {
        let dir = self.workspace_dir()?;
        tracing::debug!(workspace = %dir.display(), "opening the store");
        let mut store = Store::open(dir).map_err(|error| missing_store(dir, error))?;
        store.skip_close_on_exit();
        Ok(store)
    }

    /// The workspace's store, opened on first use and kept for the rest of the command: the
    /// settings a write consults and its direct fallback share one open (each open costs a
    /// few file reads, and a short-lived command pays them on every call).
    pub fn store(&self) -> Result<&Store, CliError> {
        if let Some(store) = self.store.get() {
            return Ok(store);
        }
        let store = self.open_store()?;
        Ok(self.store.get_or_init(|| store))
    }

    /// The workspace's custom issue types (config `types.custom`); none when there is no
    /// store or setting.
    pub fn custom_types(&self) -> Vec<String> {
        self.custom_setting("types.custom")
    }

    /// The workspace's custom statuses (config `status.custom`).
    pub fn custom_statuses(&self) -> Vec<String> {
        self.custom_setting("status.custom")
    }

    /// A setting of names: the store's, else `.beads/config.yaml`'s (beads' fallback).
    fn custom_setting(&self, key: &str) -> Vec<String> {
        let value = self.store().ok().and_then(|s| s.read().ok()?.config(key).ok().flatten());
        let value = value
            .filter(|v| !v.trim().is_empty())
            .or_else(|| crate::workspace::config_yaml::value(self.workspace_dir().ok()?, key));
        crate::model::custom_names(value.as_deref())
    }

    /// The task of the `fleet run` attempt this command runs in: an agent's own task.
    pub fn attempt_task(&self) -> Option<&str> {
        self.attempt_task.as_deref()
    }

    /// Inside an attempt, refuses a request that would take another task than the agent's
    /// own ([`crate::tracker::stay_on_task`]); what a claim that does not go through
    /// [`Context::submit`] checks first.
    pub fn stay_on_task(&self, request: &Request) -> Result<(), CliError> {
        let Some(task) = &self.attempt_task else { return Ok(()) };
        if !matches!(
            request,
            Request::Claim { .. } | Request::ClaimNext { .. } | Request::Update(_)
        ) {
            return Ok(());
        }
        let reader = self.store()?.read()?;
        crate::tracker::stay_on_task(&reader, request, task).map_err(StoreError::from)?;
        Ok(())
    }

    /// Applies a write request as this command's actor: through the process serving the
    /// workspace when one answers, else in a transaction of its own (see [`crate::server`]).
    pub fn submit(&self, request: Request) -> Result<Reply, CliError> {
        self.stay_on_task(&request)?;
        let dir = self.workspace_dir()?;
        crate::server::client::submit(dir, self.actor(), self.clock, request, || self.store())
    }
}

/// The error of a store that did not open: for a workspace whose store file is gone while its
/// git journal is there (a tidy-up removed it), the fix is a rebuild, not a new workspace.
fn missing_store(dir: &Path, error: StoreError) -> CliError {
    if !matches!(error, StoreError::NotInitialized(_)) || !journal_present(dir) {
        return error.into();
    }
    CliError::new(format!(
        "there is no store at {}, but the workspace's git journal holds its ops",
        dir.join(STORE_FILE).display()
    ))
    .with_hint("run `fleet rebuild` to make the store again from the journal")
}

/// Whether the workspace `dir` has a git journal with ops in it, for `fleet rebuild` to make
/// the store from (found as `fleet journal` finds it).
pub fn journal_present(dir: &Path) -> bool {
    crate::journal::JournalRepo::find(dir)
        .ok()
        .flatten()
        .and_then(|repo| repo.replicas().ok())
        .is_some_and(|replicas| !replicas.is_empty())
}

/// `$FLEET_TEST_NOW` (an RFC 3339 time) as a fixed clock, else the system clock.
fn test_clock() -> Result<Clock, CliError> {
    match std::env::var("FLEET_TEST_NOW") {
        Ok(text) => Ok(Clock::Fixed(text.parse::<Timestamp>().map_err(|e| {
            CliError::new(format!("FLEET_TEST_NOW={text:?} is not an RFC 3339 time: {e}"))
        })?)),
        Err(_) => Ok(Clock::System),
    }
}

/// The workspace by `personality`'s policy (see the module documentation).
fn discover(db: Option<&Path>, personality: Personality) -> Result<PathBuf, CliError> {
    if let Some(dir) = named_workspace(db) {
        return Ok(dir);
    }
    match personality {
        Personality::Fleet => Ok(fleet_home()?.join(workspace::DIR_NAME)),
        Personality::FleetBd => {
            fleet_home().map(|home| home.join(workspace::DIR_NAME)).map_err(|_| no_beads_database())
        }
        Personality::Bd => {
            let cwd = std::env::current_dir().map_err(|_| no_beads_database())?;
            workspace::find_upward(&cwd).ok_or_else(no_beads_database)
        }
    }
}

/// The workspace named by `--db`, `$BEADS_DB` (or the older `$BD_DB`, both the environment's
/// `--db`) or `$BEADS_DIR`: the first steps of every policy.
pub fn named_workspace(db: Option<&Path>) -> Option<PathBuf> {
    db.map(workspace::of_database)
        .or_else(|| {
            let env = non_empty_env("BEADS_DB").or_else(|| non_empty_env("BD_DB"))?;
            Some(workspace::of_database(Path::new(&env)))
        })
        .or_else(|| non_empty_env("BEADS_DIR").map(PathBuf::from))
}

/// bd's error when no workspace was found or named. In a beads checkout of the git era (a
/// `.beads/issues.jsonl` and nothing else), the hint makes that project's store from the file.
fn no_beads_database() -> CliError {
    let cwd = std::env::current_dir().unwrap_or_default();
    let export = cwd
        .ancestors()
        .map(|dir| dir.join(workspace::DIR_NAME).join(workspace::EXPORT_FILE))
        .find(|file| file.is_file());
    if let Some(export) = export {
        let beads = export.parent().unwrap_or(&cwd);
        let project = beads.parent().unwrap_or(beads);
        return CliError::new(format!("no beads database found in {}", beads.display())).with_hint(
            format!(
                "run 'bd init --from-jsonl' in {} to create this project's database from {}",
                project.display(),
                export.display()
            ),
        );
    }
    CliError::new("no beads database found").with_hint(
        "run 'bd init' to create one here, or point BEADS_DIR at an existing .beads \
         directory (fleet's central queue is ~/.fleet/.beads)",
    )
}

/// The variable `name`, unless it is unset or blank.
fn non_empty_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `$FLEET_HOME`, else `~/.fleet`.
pub fn fleet_home() -> Result<PathBuf, CliError> {
    if let Some(home) = non_empty_env("FLEET_HOME") {
        return Ok(PathBuf::from(home));
    }
    non_empty_env("HOME").map(|home| Path::new(&home).join(".fleet")).ok_or_else(|| {
        CliError::new("neither FLEET_HOME nor HOME is set")
            .with_hint("set FLEET_HOME to the directory that holds your fleet workspace")
    })
}

/// Where an actor name may come from after `--actor`.
#[derive(Debug, Clone, Copy)]
enum ActorSource {
    Env(&'static str),
    GitUserName,
}

impl ActorSource {
    fn read(self) -> Option<String> {
        match self {
            ActorSource::Env(name) => non_empty_env(name),
            ActorSource::GitUserName => git_user_name(),
        }
    }
}

/// Each mode's actor sources, in order (see the module documentation).
fn actor_sources(mode: Mode) -> &'static [ActorSource] {
    use ActorSource::{Env, GitUserName};
    match mode {
        Mode::Fleet => &[Env("FLEET_ACTOR"), Env("BEADS_ACTOR"), Env("BD_ACTOR"), Env("USER")],
        Mode::Bd => &[Env("BEADS_ACTOR"), Env("BD_ACTOR"), GitUserName, Env("USER")],
    }
}

/// `--actor` unless blank, else the first of `mode`'s sources that is set, else `unknown`.
fn resolve_actor(flag: Option<String>, mode: Mode) -> String {
    flag.filter(|a| !a.trim().is_empty())
        .or_else(|| actor_sources(mode).iter().find_map(|source| source.read()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The actor of a `fleet run` agent: inside an attempt (`FLEET_TASK_ID`), `$BD_ACTOR`, which
/// the supervisor sets for its agents and by which it knows their writes as their own (a
/// `$FLEET_ACTOR` the agent inherited from the person's shell must not hide it). `fleet mcp`
/// acts as it, as the agent's `bd` would.
pub fn run_agent_actor() -> Option<String> {
    crate::env::attempt_task()?;
    non_empty_env("BD_ACTOR")
}

/// `git config user.name`, if git is installed and it is set. One short process (~1 ms).
fn git_user_name() -> Option<String> {
    let output = Command::new("git")
        .args(["config", "--get", "user.name"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string()).filter(|n| !n.is_empty())
}
