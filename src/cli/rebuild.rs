//! `fleet rebuild`: a new store from the git journal alone, swapped in atomically, the old
//! one kept beside it — also when the old one is damaged or gone (see
//! [`crate::journal::rebuild`]).

use super::context::Context;
use super::error::CliError;
use crate::journal::{self, RebuildOptions, RebuildReport, SettingsFrom};

#[derive(Debug, clap::Args)]
pub struct RebuildArgs {
    /// Do not commit this replica's pending ops to the journal first: rebuild without them
    /// (the old store, which holds them, is kept as a backup).
    #[arg(long)]
    pub force: bool,
    /// The id prefix of the rebuilt store (default: the old store's, else the one the journal
    /// repository keeps).
    #[arg(long, value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// The replica id of the rebuilt store (default: the old store's, else the one the journal
    /// repository keeps, else a new one).
    #[arg(long, value_name = "ID")]
    pub replica: Option<String>,
}

pub fn cmd_rebuild(ctx: &Context, args: RebuildArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    let options = RebuildOptions { force: args.force, prefix: args.prefix, replica: args.replica };
    let report = journal::rebuild(dir, ctx.clock, &options)?;
    ctx.out.emit(&report, || render(&report));
    if report.rejected.is_empty() {
        return Ok(());
    }
    let kept = report
        .backup
        .as_ref()
        .map_or_else(String::new, |b| format!(", the old one is at {}", b.display()));
    Err(CliError::new(format!(
        "{} op(s) of the journal were refused on replay; the rebuilt store is in place{kept}",
        report.rejected.len(),
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
    if let Some(why) = &report.old_store {
        lines.push(format!("  the old store could not be used ({why})"));
    }
    if report.committed_first > 0 {
        lines.push(format!(
            "  committed the old store's {} pending op(s) to the journal first",
            report.committed_first
        ));
    }
    lines.push(format!(
        "  prefix {}, replica {} ({})",
        report.prefix,
        report.replica,
        match report.settings_from {
            SettingsFrom::Store => "from the old store",
            SettingsFrom::Saved => "as the journal repository kept them",
            SettingsFrom::Journal => "prefix from the journal, a new replica id",
        }
    ));
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
    if report.refused > 0 {
        lines.push(format!(
            "  {} op(s) refused by the rules on replay (claims that lost, edits a delete won over)",
            report.refused
        ));
    }
    for rejected in &report.rejected {
        lines.push(format!("  refused: {rejected}"));
    }
    if let Some(backup) = &report.backup {
        lines.push(format!("  old store kept at {}", backup.display()));
    }
    lines.join("\n")
}
