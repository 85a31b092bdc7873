//! Compatibility with beads' own files: reading what `bd` wrote, writing what `bd import`
//! accepts (spec/beads.md §1 and §6).
//!
//! Data flows one way through the submodules:
//!
//! ```text
//!  path ──detect──▶ Source ──read──▶ Batch (records, memories, tombstones, bad lines)
//!                     │  jsonl: beads JSONL of both eras, or stdin
//!                     │  sqlite: a legacy SQLite beads.db
//!                     │  fleet store: another fleet workspace
//!                     ▼
//!            import::run ── plan against the store (stale rows, label unions, comment
//!                           dedupe, dependency checks and cycles over the whole batch),
//!                           then one store transaction of Create/Put/DepAdd/Comment ops
//!
//!  store ──export::records──▶ ordered JSONL (`jsonl::write_record`) ──▶ file or stdout
//! ```
//!
//! - [`jsonl`]: one record ⇄ one line: lenient parsing (any era, any offset, legacy keys
//!   kept) and byte-stable writing (beads' key order, UTC timestamps, Go's escaping);
//! - [`detect`]: what a path holds — a JSONL file, a `.beads/` directory, a project, a
//!   Dolt-backed workspace (which fleet cannot read), or a Python-fleet home;
//! - [`batch`]: what was read from a source, before it meets the store;
//! - [`sqlite`]: reads a legacy SQLite `beads.db` column by column;
//! - [`import`]: the upsert semantics of `bd import`, as one transaction or nothing;
//! - [`export`]: `bd export` and the auto-export that follows write commands;
//! - [`fidelity`]: what a source holds against what the store holds after an import.
//!
//! Nothing here prints or reads the environment; progress goes through [`Progress`].

pub mod batch;
pub mod detect;
pub mod export;
pub mod fidelity;
pub mod import;
pub mod jsonl;
pub mod keep;
pub mod sqlite;

use std::path::PathBuf;

use crate::store::StoreError;

pub use batch::Batch;
pub use detect::{Detected, Source, detect};
pub use export::{ExportOptions, ExportSummary, export_after_sync, export_to_path};
pub use import::{DuplicateId, ImportOptions, ImportReport, SkippedDependency};
pub use jsonl::{BadLine, Line, Record};
pub use keep::{KeptExport, auto_export_if_enabled, export_keeping};

/// Errors of reading, importing and exporting beads data, each naming the line, file or
/// workspace it is about.
#[derive(Debug, thiserror::Error)]
pub enum BeadsError {
    /// A record that cannot be imported; the whole import stops (unless bad lines are skipped).
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("reading SQLite database {path}: {source}")]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// A Dolt-backed workspace: fleet cannot read Dolt's storage.
    #[error("{beads_dir} is a Dolt-backed beads workspace; fleet cannot read Dolt's storage")]
    Dolt { beads_dir: PathBuf, project_dir: PathBuf },
    #[error(
        "no beads data found in {0} (looked for issues.jsonl, beads.jsonl, beads.db and dolt/)"
    )]
    NothingFound(PathBuf),
    #[error("{0} does not exist")]
    Missing(PathBuf),
    #[error("cannot import the workspace {0} into itself")]
    SelfImport(PathBuf),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub(crate) fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> BeadsError {
    let context = context.into();
    move |source| BeadsError::Io { context, source }
}

/// Where long imports and exports report how far they got. The CLI draws a progress bar;
/// the library only counts.
pub trait Progress: Sync {
    /// A new phase with `total` steps (lines, issues).
    fn start(&self, _phase: &'static str, _total: u64) {}
    /// `steps` more steps of the current phase are done.
    fn advance(&self, _steps: u64) {}
    /// The whole job is done.
    fn finish(&self) {}
}

/// Progress that nobody watches.
pub struct NoProgress;

impl Progress for NoProgress {}
