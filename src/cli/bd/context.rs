//! The shared [`Context`] in bd mode, plus what only bd has: `--readonly`, the check that the
//! workspace holds a store (with beads' messages), and the `.beads/last-touched` file.
//!
//! Workspace discovery, actor resolution, the store and the output are the shared context's
//! (`cli::context`), which applies bd's policies for [`Personality::Bd`] and
//! [`Personality::FleetBd`]. `BdContext` dereferences to it.

use std::ops::Deref;
use std::path::PathBuf;

use super::BdGlobal;
use crate::cli::CliError;
use crate::cli::context::{Context, ContextArgs, Personality, fleet_home, named_workspace};
use crate::store::Store;
use crate::workspace::{self, STORE_FILE};

pub struct BdContext {
    ctx: Context,
    readonly: bool,
}

impl Deref for BdContext {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.ctx
    }
}

impl BdContext {
    pub fn new(global: &BdGlobal, personality: Personality) -> Result<BdContext, CliError> {
        let args = ContextArgs {
            json: global.json,
            quiet: global.quiet,
            actor: global.actor.clone(),
            db: global.db.clone(),
            pretty: global.pretty,
            terse: global.terse,
            ..ContextArgs::default()
        };
        Ok(BdContext { ctx: Context::new(args, personality)?, readonly: global.readonly })
    }

    /// Where `bd init` creates the workspace: a named or discovered-by-variable directory,
    /// else `.beads` in the current directory (fleet's central queue for `fleet bd init`).
    pub fn init_dir(&self, global: &BdGlobal) -> Result<PathBuf, CliError> {
        if let Some(dir) = named_workspace(global.db.as_deref()) {
            return Ok(dir);
        }
        let parent = match self.personality() {
            Personality::Bd => std::env::current_dir()
                .map_err(|e| CliError::new(format!("reading the current directory: {e}")))?,
            Personality::Fleet | Personality::FleetBd => {
                fleet_home().map_err(CliError::message_only)?
            }
        };
        Ok(parent.join(workspace::DIR_NAME))
    }

    /// The context, once the workspace is known to hold a store; else beads' error, with a
    /// hint for the kind of workspace it is.
    pub fn require_store(&self) -> Result<&Context, CliError> {
        let dir = self.workspace_dir()?;
        if dir.join(STORE_FILE).is_file() {
            return Ok(&self.ctx);
        }
        let error = CliError::new(format!("no beads database found in {}", dir.display()));
        let hint = if dir.join("dolt").is_dir() || dir.join("embeddeddolt").is_dir() {
            format!(
                "this is a Dolt-backed beads workspace; make this project's fleet store from it \
                 with `bd import {} --via-bd` (runs beads' own bd to export it)",
                dir.display()
            )
        } else if crate::cli::context::journal_present(dir) {
            "the workspace's git journal holds its ops: run `fleet rebuild` to make the store again"
                .to_string()
        } else if dir.join(workspace::EXPORT_FILE).is_file() {
            format!(
                "run 'bd init --from-jsonl' to create this project's database from {}",
                dir.join(workspace::EXPORT_FILE).display()
            )
        } else {
            "run 'bd init' to create one".to_string()
        };
        Err(error.with_hint(hint))
    }

    /// Opens the workspace's store (the shared [`Context::open_store`]) once it is known to
    /// exist.
    pub fn open_store(&self) -> Result<Store, CliError> {
        self.require_store()?.open_store()
    }

    /// The store opened once for this command (see [`Context::store`]).
    pub fn store(&self) -> Result<&Store, CliError> {
        self.require_store()?.store()
    }

    /// Refuses a write in `--readonly` mode.
    pub fn check_writable(&self, command: &str) -> Result<(), CliError> {
        if self.readonly {
            return Err(CliError::new(format!("{command} is not allowed in read-only mode")));
        }
        self.workspace_dir().map(|_| ())
    }

    /// The issue the last create, update, close or show was about, if any.
    pub fn last_touched(&self) -> Option<String> {
        workspace::last_touched(self.workspace_dir().ok()?)
    }

    /// Records `id` as last touched. Best effort: failing to write it never fails a command.
    pub fn touch(&self, id: &str) {
        if let Ok(dir) = self.workspace_dir() {
            workspace::touch(dir, id);
        }
    }

    /// `ids`, or the last-touched issue when there are none.
    pub fn ids_or_last_touched(&self, ids: Vec<String>) -> Result<Vec<String>, CliError> {
        if !ids.is_empty() {
            return Ok(ids);
        }
        self.last_touched()
            .map(|id| vec![id])
            .ok_or_else(|| CliError::new("no issue ID provided and no last touched issue"))
    }

    /// After a write command: rewrites `.beads/issues.jsonl` when `export.auto` is on, and
    /// makes sure the ops reach the git journal soon (`cli::journal::commit_soon`).
    pub fn after_write(&self) {
        if let Ok(ctx) = self.require_store() {
            crate::cli::transfer::auto_export(ctx);
        }
        crate::cli::journal::commit_soon(self, false);
    }
}
