//! What every command needs: the output mode, the actor, the clock, and the workspace.
//!
//! This is where the environment is read — `FLEET_HOME`, `BEADS_DIR`, the actor variables and
//! the test clock `FLEET_TEST_NOW` — once, so the library below never looks at it.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::GlobalArgs;
use super::error::CliError;
use super::output::Output;
use crate::store::{STORE_FILE, Store, StoreError, Writer};
use crate::time::Clock;

pub struct Context {
    pub out: Output,
    pub actor: String,
    pub clock: Clock,
    db: Option<PathBuf>,
}

impl Context {
    pub fn new(global: GlobalArgs) -> Result<Context, CliError> {
        let clock = match std::env::var("FLEET_TEST_NOW") {
            Ok(text) => Clock::Fixed(text.parse::<Timestamp>().map_err(|e| {
                CliError::new(format!("FLEET_TEST_NOW={text:?} is not an RFC 3339 time: {e}"))
            })?),
            Err(_) => Clock::System,
        };
        let actor = resolve_actor(global.actor);
        tracing::debug!(%actor, ?clock, "acting");
        Ok(Context { out: Output::new(global.json, global.quiet), actor, clock, db: global.db })
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The `.beads` directory this command works on.
    pub fn workspace_dir(&self) -> Result<PathBuf, CliError> {
        if let Some(path) = &self.db {
            return Ok(beads_dir_of(path));
        }
        if let Some(dir) = non_empty_env("BEADS_DIR") {
            return Ok(PathBuf::from(dir));
        }
        Ok(fleet_home()?.join(".beads"))
    }

    /// Opens the workspace's store for this one command (see [`Store::skip_close_on_exit`]).
    pub fn open_store(&self) -> Result<Store, CliError> {
        let dir = self.workspace_dir()?;
        tracing::debug!(workspace = %dir.display(), "opening the store");
        let mut store = Store::open(&dir)?;
        store.skip_close_on_exit();
        Ok(store)
    }

    /// Opens the store and runs `body` as one write transaction as this command's actor,
    /// returning what `body` returns (the applied ops are dropped).
    pub fn write<R>(
        &self,
        body: impl FnOnce(&mut Writer<'_>) -> Result<R, StoreError>,
    ) -> Result<R, CliError> {
        let (result, _) = self.open_store()?.write(&self.actor, self.clock, body)?;
        Ok(result)
    }
}

/// `--db` may name the `.beads` directory or the store file inside it.
pub(super) fn beads_dir_of(path: &Path) -> PathBuf {
    if path.file_name().is_some_and(|name| name == STORE_FILE) {
        path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    }
}

/// The variable `name`, unless it is unset or blank.
pub(super) fn non_empty_env(name: &str) -> Option<String> {
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

fn resolve_actor(flag: Option<String>) -> String {
    flag.filter(|a| !a.trim().is_empty())
        .or_else(|| non_empty_env("FLEET_ACTOR"))
        .or_else(|| non_empty_env("BEADS_ACTOR"))
        .or_else(|| non_empty_env("BD_ACTOR"))
        .or_else(|| non_empty_env("USER"))
        .unwrap_or_else(|| "unknown".to_string())
}
