//! `bd export` and `bd import`, and the auto-export after write commands: the same engine and
//! messages as `fleet export` / `fleet import` (`cli::transfer`), which already print what bd
//! prints (`Exported N issues to FILE`, `Imported N issues from SRC` on stderr).

use std::path::{Path, PathBuf};

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::transfer as fleet;

#[derive(Debug, clap::Args)]
#[group(id = "bd_export")]
pub struct ExportArgs {
    #[command(flatten)]
    pub fleet: fleet::ExportArgs,
}

#[derive(Debug, clap::Args)]
#[group(id = "bd_import")]
pub struct ImportArgs {
    #[command(flatten)]
    pub fleet: fleet::ImportArgs,
    /// Accepted for compatibility (ids are never renamed on import).
    #[arg(long, hide = true)]
    pub rename_on_import: bool,
}

pub fn cmd_export(ctx: &BdContext, args: ExportArgs) -> Result<(), CliError> {
    fleet::cmd_export(ctx.require_store()?, args.fleet).map_err(CliError::message_only)?;
    Ok(())
}

pub fn cmd_import(ctx: &BdContext, args: ImportArgs) -> Result<(), CliError> {
    // Importing into a directory without a store creates it, as `fleet import` does.
    ctx.workspace_dir()?;
    fleet::cmd_import(ctx, args.fleet).map_err(CliError::message_only)?;
    Ok(())
}

/// Imports one file into the workspace (for `bd init --from-jsonl`).
pub fn import_path(ctx: &BdContext, path: &Path, dry_run: bool) -> Result<(), CliError> {
    let args = fleet::ImportArgs {
        path: Some(PathBuf::from(path)),
        input: None,
        dry_run,
        skip_bad_lines: false,
        via_bd: false,
    };
    fleet::cmd_import(ctx.require_store()?, args).map_err(CliError::message_only)?;
    Ok(())
}
