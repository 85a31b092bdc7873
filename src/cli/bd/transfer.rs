//! `bd export` and `bd import`, and the auto-export after write commands.
//!
//! These delegate to `fleet export` / `fleet import` (`cli::transfer`), whose engine lives in
//! `crate::beads`; until that lands they say so instead of half-working.

use std::path::{Path, PathBuf};

use super::context::BdContext;
use super::output::BdError;

#[derive(Debug, clap::Args)]
#[group(id = "bd_export")]
pub struct ExportArgs {
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Include infra types, templates and ephemeral issues.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, clap::Args)]
#[group(id = "bd_import")]
pub struct ImportArgs {
    /// A beads JSONL file (`-` for stdin).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
}

fn unavailable(what: &str) -> BdError {
    BdError::new(format!("{what} is not available in this build yet"))
}

pub fn cmd_export(_ctx: &BdContext, _args: ExportArgs) -> Result<(), BdError> {
    Err(unavailable("bd export"))
}

pub fn cmd_import(_ctx: &BdContext, _args: ImportArgs) -> Result<(), BdError> {
    Err(unavailable("bd import"))
}

/// Imports one file into the workspace (for `bd init --from-jsonl`).
pub fn import_path(_ctx: &BdContext, _path: &Path, _dry_run: bool) -> Result<(), BdError> {
    Err(unavailable("bd init --from-jsonl"))
}

/// After a write command: `.beads/issues.jsonl` when `export.auto` is on (not yet).
pub fn auto_export(_ctx: &BdContext) {}
