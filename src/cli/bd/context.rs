//! What every `bd` command needs: the workspace it finds the way beads does, the actor it
//! resolves the way beads does, the output mode, and the `.beads/last-touched` file.
//!
//! Workspace discovery, in order: `--db` (a `.beads` directory or its `beads.db`), then
//! `$BEADS_DIR`, then the nearest `.beads/` holding a store or `metadata.json`, walking up from
//! the current directory. Invoked as `fleet bd …` the last step is replaced by fleet's central
//! queue, `$FLEET_HOME/.beads`, because the Python fleet ran `bd` from `FLEET_HOME`.
//!
//! Actor resolution: `--actor`, `$BEADS_ACTOR`, `$BD_ACTOR`, `git config user.name`, `$USER`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::output::BdOutput;
use super::{BdError, BdGlobal, Personality};
use crate::cli::context::{Context, beads_dir_of, fleet_home, non_empty_env};
use crate::cli::{CliError, GlobalArgs};
use crate::store::{STORE_FILE, Store};

/// File in `.beads/` naming the issue the last create, update, close or show was about.
const LAST_TOUCHED: &str = "last-touched";

pub struct BdContext {
    /// fleet's command context, pointed at the discovered workspace (so the shared store
    /// transactions of the fleet commands work unchanged). Reached through
    /// [`BdContext::fleet`], which first makes sure the workspace exists.
    fleet: Context,
    pub out: BdOutput,
    /// The `.beads` directory, when one was found or named.
    dir: Option<PathBuf>,
    personality: Personality,
    readonly: bool,
}

impl BdContext {
    pub fn new(global: &BdGlobal, personality: Personality) -> Result<BdContext, BdError> {
        let dir = discover(global.db.as_deref(), personality);
        let fleet = Context::new(GlobalArgs {
            json: global.json,
            actor: Some(resolve_actor(global.actor.as_deref())),
            db: dir.clone(),
            quiet: global.quiet,
        })
        .map_err(BdError::from)?;
        Ok(BdContext {
            fleet,
            out: BdOutput::new(global.json, global.quiet),
            dir,
            personality,
            readonly: global.readonly,
        })
    }

    pub fn personality(&self) -> Personality {
        self.personality
    }

    pub fn actor(&self) -> &str {
        &self.fleet.actor
    }

    /// The `.beads` directory to work on, or the error beads gives when there is none.
    pub fn workspace_dir(&self) -> Result<&Path, BdError> {
        self.dir.as_deref().ok_or_else(|| {
            BdError::new("no beads database found").with_hint(
                "run 'bd init' to create one here, or point BEADS_DIR at an existing .beads \
                 directory (fleet's central queue is ~/.fleet/.beads)",
            )
        })
    }

    /// Where `bd init` creates the workspace: a named or discovered-by-variable directory,
    /// else `.beads` in the current directory (fleet's central queue for `fleet bd init`).
    pub fn init_dir(&self, global: &BdGlobal) -> Result<PathBuf, BdError> {
        if let Some(db) = &global.db {
            return Ok(beads_dir_of(db));
        }
        if let Some(dir) = non_empty_env("BEADS_DIR") {
            return Ok(PathBuf::from(dir));
        }
        match self.personality {
            Personality::FleetBd => Ok(fleet_home().map_err(BdError::from)?.join(".beads")),
            Personality::Bd => Ok(std::env::current_dir()
                .map_err(|e| BdError::new(format!("reading the current directory: {e}")))?
                .join(".beads")),
        }
    }

    /// fleet's command context for the shared store transactions, once the workspace is known
    /// to hold a store.
    pub fn fleet(&self) -> Result<&Context, BdError> {
        let dir = self.workspace_dir()?;
        if !dir.join(STORE_FILE).is_file() {
            let error = BdError::new(format!("no beads database found in {}", dir.display()));
            let hint = if dir.join("dolt").is_dir() || dir.join("embeddeddolt").is_dir() {
                format!(
                    "this is a Dolt-backed beads workspace; bring it into fleet with \
                     `fleet import {} --via-bd`",
                    dir.display()
                )
            } else if dir.join("issues.jsonl").is_file() {
                "run 'bd init --from-jsonl' to create the database from .beads/issues.jsonl"
                    .to_string()
            } else {
                "run 'bd init' to create one".to_string()
            };
            return Err(error.with_hint(hint));
        }
        Ok(&self.fleet)
    }

    /// fleet's command context without the workspace check (for `init`, which creates it).
    pub fn fleet_unchecked(&self) -> &Context {
        &self.fleet
    }

    /// Opens the workspace's store.
    pub fn open_store(&self) -> Result<Store, BdError> {
        self.fleet()?;
        Ok(Store::open(self.workspace_dir()?)?)
    }

    /// Refuses a write in `--readonly` mode.
    pub fn check_writable(&self, command: &str) -> Result<(), BdError> {
        if self.readonly {
            return Err(BdError::new(format!("{command} is not allowed in read-only mode")));
        }
        self.workspace_dir().map(|_| ())
    }

    /// The issue the last create, update, close or show was about, if any.
    pub fn last_touched(&self) -> Option<String> {
        let dir = self.dir.as_ref()?;
        let text = std::fs::read_to_string(dir.join(LAST_TOUCHED)).ok()?;
        Some(text.trim().to_string()).filter(|id| !id.is_empty())
    }

    /// Records `id` as last touched. Best effort: failing to write it never fails a command.
    pub fn touch(&self, id: &str) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::write(dir.join(LAST_TOUCHED), format!("{id}\n"));
        }
    }

    /// `ids`, or the last-touched issue when there are none.
    pub fn ids_or_last_touched(&self, ids: Vec<String>) -> Result<Vec<String>, BdError> {
        if !ids.is_empty() {
            return Ok(ids);
        }
        self.last_touched()
            .map(|id| vec![id])
            .ok_or_else(|| BdError::new("no issue ID provided and no last touched issue"))
    }

    /// Rewrites `.beads/issues.jsonl` when `export.auto` is on (after a write command).
    pub fn after_write(&self) {
        super::transfer::auto_export(self);
    }
}

fn discover(db: Option<&Path>, personality: Personality) -> Option<PathBuf> {
    if let Some(db) = db {
        return Some(beads_dir_of(db));
    }
    if let Some(dir) = non_empty_env("BEADS_DIR") {
        return Some(PathBuf::from(dir));
    }
    match personality {
        Personality::FleetBd => fleet_home().ok().map(|home| home.join(".beads")),
        Personality::Bd => {
            let cwd = std::env::current_dir().ok()?;
            cwd.ancestors().map(|dir| dir.join(".beads")).find(|beads| is_workspace(beads))
        }
    }
}

/// A `.beads` directory counts when it holds a store or beads' `metadata.json` (a bare
/// `~/.beads` of global settings does not).
fn is_workspace(beads: &Path) -> bool {
    beads.join(STORE_FILE).is_file() || beads.join("metadata.json").is_file()
}

/// `--actor`, `$BEADS_ACTOR`, `$BD_ACTOR`, `git config user.name`, `$USER`.
fn resolve_actor(flag: Option<&str>) -> String {
    flag.map(str::to_string)
        .filter(|a| !a.trim().is_empty())
        .or_else(|| non_empty_env("BEADS_ACTOR"))
        .or_else(|| non_empty_env("BD_ACTOR"))
        .or_else(git_user_name)
        .or_else(|| non_empty_env("USER"))
        .unwrap_or_else(|| "unknown".to_string())
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

impl From<CliError> for BdError {
    fn from(error: CliError) -> BdError {
        BdError::new(error.message)
    }
}
