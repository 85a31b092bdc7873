//! `fleet init`: creates the workspace — `.beads/` with the store, `metadata.json` and the
//! `.gitignore` beads writes.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use crate::store::{Store, StoreError};
use crate::workspace::STORE_FILE;
use crate::workspace::gitignore;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Prefix of new issue ids (`<prefix>-<hash>`).
    #[arg(short, long, default_value = "fleet")]
    pub prefix: String,
}

#[derive(Serialize)]
struct Initialized {
    path: String,
    store: String,
    prefix: String,
}

pub fn cmd_init(ctx: &Context, args: InitArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    let store = init_workspace(dir, &args.prefix)?;
    let result = Initialized {
        path: dir.display().to_string(),
        store: dir.join(STORE_FILE).display().to_string(),
        prefix: store.prefix().to_string(),
    };
    ctx.out.emit(&result, || {
        format!(
            "✓ fleet initialized successfully!\n  Workspace: {}\n  Issue prefix: {}",
            result.path, result.prefix
        )
    });
    Ok(())
}

/// Creates the workspace in `dir` (shared by `fleet init` and `bd init`): the store, beads'
/// `metadata.json`, and the legacy `.gitignore` — or fleet's lines added to the one there
/// ([`gitignore::ignore`]). Creates no `issues.jsonl` or `export-state.json`.
///
/// A `metadata.json` beads already wrote (a Dolt-era workspace: `backend: dolt`) is git-tracked
/// and read by teammates still on beads; it is left as it is — fleet finds its workspace by
/// its own store file.
pub(super) fn init_workspace(dir: &std::path::Path, prefix: &str) -> Result<Store, CliError> {
    // `Store::init` is the atomic step: of racing inits, only its winner gets here.
    match Store::init(dir, prefix) {
        Ok(store) => {
            lay_out_workspace(dir)?;
            Ok(store)
        }
        Err(error @ StoreError::AlreadyInitialized(_)) => {
            let mut refused = CliError::from(error).with_hint(
                "use the workspace as it is, or point --db / BEADS_DIR at another directory",
            );
            // An init killed between its store and these files left them out; this one puts
            // them in — only beside a store that opens (the name alone is not a workspace), and
            // a failure is a hint, not in place of what the user is told.
            if Store::open(dir).is_ok()
                && let Err(failed) = lay_out_workspace(dir)
            {
                refused = refused.with_hint(failed.message);
            }
            Err(refused)
        }
        Err(other) => Err(other.into()),
    }
}

/// Writes what a workspace holds besides its store, where it is missing: beads'
/// `metadata.json` and the legacy `.gitignore` (or fleet's lines added to the one there).
pub(super) fn lay_out_workspace(dir: &std::path::Path) -> Result<(), CliError> {
    if dir.join(gitignore::FILE).exists() {
        gitignore::ignore_or_warn(dir, gitignore::FLEET_ENTRIES);
    }
    write_missing_files(dir)
}

/// Writes `metadata.json` and the legacy `.gitignore` where they are missing, and changes
/// nothing that is there: the repair of a workspace whose making was cut short.
pub(super) fn write_missing_files(dir: &std::path::Path) -> Result<(), CliError> {
    let write = |name: &str, text: String| {
        crate::fsutil::write_atomic(&dir.join(name), text.as_bytes())
            .map_err(|e| CliError::new(format!("writing {}: {e}", dir.join(name).display())))
    };
    if !dir.join(crate::workspace::METADATA_FILE).exists() {
        let metadata = serde_json::json!({ "database": STORE_FILE, "backend": "fleet-redb" });
        write(
            crate::workspace::METADATA_FILE,
            format!("{}\n", serde_json::to_string_pretty(&metadata).unwrap_or_default()),
        )?;
    }
    if !dir.join(gitignore::FILE).exists() {
        write(gitignore::FILE, gitignore::CONTENTS.to_string())?;
    }
    Ok(())
}
