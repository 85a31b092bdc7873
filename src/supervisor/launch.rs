//! One claimed task's way from its claim to its outcome, as the task the supervisor spawns
//! for it: the worktree its isolation asks for, the checks that it can start at all (a known
//! coder, a task directory, a working directory that exists), then the runner.
//!
//! Everything the attempt needs travels in one box ([`Launch`]). A spawned task holds its
//! future for as long as the agent runs, and a future keeps what it captured beside what it
//! later builds from it; with the pieces captured one by one, the issue and the rest were held
//! twice per running agent (~2 KiB each), which hundreds of agents pay in resident memory.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::Stop;
use super::budget;
use super::outcome::Outcome;
use super::runner::{self, Attempt, Control, RunnerSettings, Signal};
use super::settling::Finished;
use super::taskdir::TaskDir;
use crate::coders::{Account, Coder, UnknownCoder};
use crate::config::Price;
use crate::land::git::GitError;
use crate::land::worktree::{self, WorktreeError};
use crate::model::{Issue, Landing, Lease};

/// A claimed task about to get its attempt.
pub(super) struct Launch {
    pub(super) issue: Issue,
    pub(super) lease: Lease,
    pub(super) coder: Result<Arc<dyn Coder>, UnknownCoder>,
    pub(super) task_dir: std::io::Result<TaskDir>,
    /// Where the agent works, unless the task gets a worktree of its own (`landing`).
    pub(super) cwd: PathBuf,
    /// How the attempt ends when the task cannot have the worktree its isolation asks for.
    pub(super) no_worktree: Option<Outcome>,
    pub(super) landing: Option<Landing>,
    pub(super) account: Option<Account>,
    pub(super) env: Vec<(String, String)>,
    pub(super) instance: String,
    pub(super) settings: RunnerSettings,
    pub(super) prices: std::collections::BTreeMap<String, Price>,
    pub(super) stop: watch::Receiver<Stop>,
    pub(super) control: watch::Receiver<Control>,
    pub(super) mail: Vec<crate::coord::Message>,
    pub(super) budget: budget::Cap,
}

impl Launch {
    /// Runs the attempt and reports how it ended.
    pub(super) async fn run(self: Box<Self>, signals: mpsc::UnboundedSender<Signal>) -> Finished {
        let closes_on_exit_zero = self.coder.as_ref().is_ok_and(|c| c.closes_on_exit_zero());
        let id = self.issue.id.clone();
        let lease = self.lease.clone();
        let outcome = match self.workdir().await {
            Err(unusable) => unusable,
            Ok(cwd) => self.attempt(cwd, signals).await,
        };
        Finished {
            id,
            attempt: lease.attempt,
            coder: lease.coder,
            account: lease.account,
            model: lease.model,
            outcome,
            closes_on_exit_zero,
        }
    }

    /// The directory the agent works in: the task's worktree when it gets one (made now, off
    /// the supervisor's thread), else the directory it was claimed for.
    async fn workdir(&self) -> Result<PathBuf, Outcome> {
        match (&self.no_worktree, &self.landing) {
            (Some(unusable), _) => Err(unusable.clone()),
            (None, None) => Ok(self.cwd.clone()),
            (None, Some(landing)) => {
                let (task, landing) = (self.issue.id.clone(), landing.clone());
                match tokio::task::spawn_blocking(move || worktree::ensure(&task, &landing)).await {
                    Ok(made) => made.map_err(|error| worktree_failed(&error)),
                    Err(error) => Err(Outcome::NoWorktree { detail: error.to_string() }),
                }
            }
        }
    }

    /// Runs the agent in `cwd`, unless the attempt cannot start at all.
    async fn attempt(
        self: Box<Self>,
        cwd: PathBuf,
        signals: mpsc::UnboundedSender<Signal>,
    ) -> Outcome {
        match self.into_attempt(cwd) {
            Ok(attempt) => runner::run(attempt, signals).await,
            Err(outcome) => outcome,
        }
    }

    /// The attempt to run in `cwd`, or the outcome of one that cannot start. Not async: the
    /// launch's box is freed on return rather than held while the agent runs.
    fn into_attempt(self: Box<Self>, cwd: PathBuf) -> Result<Box<Attempt>, Outcome> {
        let Launch {
            issue,
            lease,
            coder,
            task_dir,
            account,
            env,
            instance,
            settings,
            prices,
            stop,
            control,
            mail,
            budget,
            cwd: _,
            no_worktree: _,
            landing: _,
        } = *self;
        let coder = coder.map_err(|error| unknown_coder(&error, &lease.coder))?;
        let task_dir = task_dir.map_err(|error| Outcome::SpawnFailed {
            error: error.to_string(),
            fix: "give the task an id that can name a directory (fleet rename)".into(),
        })?;
        if !cwd.is_dir() {
            return Err(Outcome::missing_cwd(&cwd));
        }
        Ok(Box::new(Attempt {
            issue,
            coder,
            account,
            model: lease.model,
            cwd,
            task_dir,
            env,
            attempt_id: lease.attempt,
            instance,
            settings,
            prices,
            stop,
            control,
            mail,
            budget,
        }))
    }
}

/// The outcome of an attempt whose worktree cannot be made or used: a fault of the fleet when
/// `git` could not even start for want of open files or processes (spawning is then held
/// back, as for an agent that cannot start), else the worktree's own failure.
pub(super) fn worktree_failed(error: &WorktreeError) -> Outcome {
    match error {
        WorktreeError::Git(GitError { exhausted: Some(limit), .. }) => {
            Outcome::NoResources { detail: format!("preparing the task's worktree: {limit}") }
        }
        _ => Outcome::NoWorktree { detail: error.to_string() },
    }
}

/// The outcome of a task whose coder is not defined.
fn unknown_coder(error: &UnknownCoder, name: &str) -> Outcome {
    Outcome::SpawnFailed {
        error: error.to_string(),
        fix: format!(
            "define the coder in runtime.toml ([coders.{name}]), or give the task a known one: fleet update ID --coder NAME"
        ),
    }
}
