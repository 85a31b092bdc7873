//! `fleet journal`: the git journal of this workspace — `log` its batches, `verify` it
//! against the store, `commit` what is pending now (see [`crate::journal`]).

use std::path::Path;

use super::context::Context;
use super::error::CliError;
use crate::journal::{self, CommitReport, JournalError, JournalRepo, LogEntry, VerifyReport};

#[derive(Debug, clap::Subcommand)]
pub enum JournalCommand {
    /// Show the journal's commits (batches of ops), newest first.
    Log {
        /// Only this replica's ref (default: every replica's).
        #[arg(long, value_name = "REPLICA")]
        replica: Option<String>,
        /// Show at most N commits.
        #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 20)]
        limit: usize,
    },
    /// Check that the store and the git journal agree; report the first divergence.
    Verify,
    /// Commit this replica's pending ops to git now.
    Commit,
}

impl From<JournalError> for CliError {
    fn from(error: JournalError) -> CliError {
        let hint = error.hint();
        let cli = match error {
            JournalError::Store(store) => CliError::from(store),
            other => CliError::new(other.to_string()),
        };
        match hint {
            Some(hint) => cli.with_hint(hint),
            None => cli,
        }
    }
}

pub fn cmd_journal(ctx: &Context, command: JournalCommand) -> Result<(), CliError> {
    match command {
        JournalCommand::Log { replica, limit } => cmd_log(ctx, replica.as_deref(), limit),
        JournalCommand::Verify => cmd_verify(ctx),
        JournalCommand::Commit => cmd_commit(ctx),
    }
}

fn cmd_log(ctx: &Context, replica: Option<&str>, limit: usize) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    // The workspace must exist, though only git is read.
    drop(ctx.open_store()?);
    let entries = match JournalRepo::find(dir)? {
        Some(repo) => journal::log(&repo, replica, limit)?,
        None => Vec::new(),
    };
    ctx.out.emit(&entries, || render_log(&entries));
    Ok(())
}

fn render_log(entries: &[LogEntry]) -> String {
    if entries.is_empty() {
        return "No journal commits yet (run `fleet journal commit`).".to_string();
    }
    entries
        .iter()
        .map(|e| {
            let plural = if e.info.count == 1 { "op" } else { "ops" };
            format!(
                "{} {} {} {plural}, seq {}..{}  {}",
                &e.commit[..12.min(e.commit.len())],
                e.info.replica,
                e.info.count,
                e.info.first_seq,
                e.info.last_seq,
                e.time
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn cmd_verify(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let report = journal::verify(&store)?;
    if report.ok {
        ctx.out.emit(&report, || render_verified(&report));
        return Ok(());
    }
    ctx.out.emit(&report, String::new);
    let divergence = report.divergence.as_ref().map_or_else(String::new, |d| {
        let seq = d.seq.map_or_else(String::new, |s| format!(", seq {s}"));
        format!("at op #{}{seq}: {}", d.position, d.what)
    });
    Err(CliError::new(format!(
        "the store and the journal ({}) diverge {divergence}",
        report.reference
    ))
    .with_hint(
        "if the ref was moved by hand, point it back at the last good batch (`git update-ref`); \
         if the store is the damaged side, `fleet rebuild` makes a new one from the journal",
    ))
}

fn render_verified(report: &VerifyReport) -> String {
    let repo = report.repo.as_deref().map_or_else(|| "no repository yet".into(), repo_text);
    format!(
        "✓ store and journal agree: {} committed op(s) in {} commit(s) on {} ({repo}); {} op(s) pending",
        report.journal_ops,
        report.commits,
        report.reference,
        report.store_ops.saturating_sub(report.store_committed_ops)
    )
}

fn repo_text(path: &Path) -> String {
    path.display().to_string()
}

fn cmd_commit(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let report = journal::commit_pending(&store)?;
    ctx.out.emit(&report, || render_commit(&report));
    Ok(())
}

fn render_commit(report: &CommitReport) -> String {
    let mut lines = Vec::new();
    if report.recovered > 0 {
        lines.push(format!(
            "{} op(s) were already on {} from an interrupted commit",
            report.recovered, report.reference
        ));
    }
    if report.commits.is_empty() {
        lines.push(format!("Nothing to commit: {} is up to date", report.reference));
    }
    for entry in &report.commits {
        lines.push(format!(
            "✓ Committed {} op(s), seq {}..{}, as {} on {}",
            entry.info.count,
            entry.info.first_seq,
            entry.info.last_seq,
            &entry.commit[..12.min(entry.commit.len())],
            report.reference
        ));
    }
    lines.push(format!("repository: {}", report.repo.display()));
    lines.join("\n")
}

/// Reports the journal's commit at the end of a long-running command (an import). A failure
/// is a warning, not the command's failure: the ops are safe in the store, and the next commit
/// takes them.
pub(super) fn report_commit_after(
    ctx: &Context,
    committed: Result<journal::CommitReport, journal::JournalError>,
) {
    match committed {
        Ok(report) if report.ops > 0 => {
            ctx.out
                .note(&format!("Journal: committed {} op(s) to {}", report.ops, report.reference));
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(
            %error,
            "the journal was not committed to git; the ops are safe in the store, run `fleet journal commit`"
        ),
    }
}
