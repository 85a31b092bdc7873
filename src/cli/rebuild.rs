//! `fleet rebuild`: a new store from the git journal alone, swapped in atomically, the old
//! one kept beside it (see [`crate::journal::rebuild`]).

use super::context::Context;
use super::error::CliError;
use crate::journal::{self, RebuildOptions, RebuildReport};

#[derive(Debug, clap::Args)]
pub struct RebuildArgs {
    /// Rebuild even if this replica has ops not committed to the journal (they are lost from
    /// the new store; the old one is kept as a backup).
    #[arg(long)]
    pub force: bool,
}

pub fn cmd_rebuild(ctx: &Context, args: RebuildArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let options = RebuildOptions { force: args.force };
    let report = journal::rebuild(store, ctx.clock, options)?;
    ctx.out.emit(&report, || render(&report));
    if report.rejected.is_empty() {
        return Ok(());
    }
    Err(CliError::new(format!(
        "{} op(s) of the journal were refused on replay; the rebuilt store is in place, the old one is at {}",
        report.rejected.len(),
        report.backup.display()
    ))
    .with_hint("run `fleet journal verify` to find where the journal and the old store differ"))
}

fn render(report: &RebuildReport) -> String {
    let mut lines = vec![format!(
        "✓ Rebuilt the store from {} op(s) of {} replica(s) in {}: {} applied, {} unchanged, {} duplicate(s)",
        report.ops,
        report.replicas.len(),
        report.repo.display(),
        report.applied,
        report.unchanged,
        report.duplicates
    )];
    if report.config_values > 0 {
        lines.push(format!("  copied {} configuration value(s)", report.config_values));
    }
    if report.uncommitted > 0 {
        lines.push(format!(
            "  left out {} uncommitted op(s) (--force); they are in the backup",
            report.uncommitted
        ));
    }
    if report.refused_as_before > 0 {
        lines.push(format!(
            "  {} op(s) refused as they were in the old store (claims that lost, edits a delete won over)",
            report.refused_as_before
        ));
    }
    for rejected in &report.rejected {
        lines.push(format!("  refused: {rejected}"));
    }
    lines.push(format!("  old store kept at {}", report.backup.display()));
    lines.join("\n")
}
