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
    Commit(CommitArgs),
}

#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// Wait this many seconds first, and go on committing while writes come (the committer a
    /// write command starts; see `crate::journal::committer`).
    #[arg(long, hide = true, value_name = "SECS", requires = "lock_fd")]
    pub wait_secs: Option<u64>,
    /// The committer's lock, inherited locked from the command that started it.
    #[arg(long, hide = true, value_name = "FD")]
    pub lock_fd: Option<i32>,
}

/// `FLEET_JOURNAL_COMMIT_SECS`: how long after a write its ops are committed to git when no
/// supervisor does it (default 5 s; 0: only by `fleet journal commit`, a sync or a supervisor).
const COMMIT_DELAY_VAR: &str = "FLEET_JOURNAL_COMMIT_SECS";
const COMMIT_DELAY_DEFAULT: u64 = 5;

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
        JournalCommand::Commit(args) => match (args.wait_secs, args.lock_fd) {
            (Some(secs), Some(fd)) => cmd_commit_later(ctx, secs, fd),
            _ => cmd_commit(ctx),
        },
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
    if let Some(d) = &report.divergence {
        let seq = d.seq.map_or_else(String::new, |s| format!(", seq {s}"));
        return Err(CliError::new(format!(
            "the store and the journal ({}) diverge at op #{}{seq}: {}",
            report.reference, d.position, d.what
        ))
        .with_hint(
            "if the ref was moved by hand, point it back at the last good batch (`git update-ref`); \
             if the store is the damaged side, `fleet rebuild` makes a new one from the journal",
        ));
    }
    let what = report.record_divergence.as_ref().map_or_else(String::new, |d| d.what.clone());
    Err(CliError::new(format!("the store and the journal disagree: {what}")).with_hint(
        "the store's copy is the one that changed outside its ops (the journal's commits are \
         chained); `fleet rebuild` makes the store again from the journal, keeping this one",
    ))
}

fn render_verified(report: &VerifyReport) -> String {
    let repo = report.repo.as_deref().map_or_else(|| "no repository yet".into(), repo_text);
    format!(
        "✓ store and journal agree: {} committed op(s) in {} commit(s) on {} ({repo}); {} op(s) pending; {} issue record(s) match the journal's replay",
        report.journal_ops,
        report.commits,
        report.reference,
        report.store_ops.saturating_sub(report.store_committed_ops),
        report.records
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

/// The committer a write command started: commits after `secs` seconds, holding the lock it
/// inherited as descriptor `fd`. Its output goes nowhere; a failure is left for the next
/// commit (`fleet journal commit`, a sync, the next committer) to meet and report.
fn cmd_commit_later(ctx: &Context, secs: u64, fd: i32) -> Result<(), CliError> {
    use std::os::fd::FromRawFd;
    // SAFETY: the descriptor was opened and kept open for this process by the command that
    // started it (`commit_soon`), and nothing else here owns it.
    let lock = unsafe { std::fs::File::from_raw_fd(fd) };
    let store = ctx.open_store()?;
    let delay = std::time::Duration::from_secs(secs);
    if let Err(error) = journal::committer::run(&store, lock, delay) {
        tracing::warn!(%error, "committing the journal after a write");
    }
    Ok(())
}

/// After a write command: makes sure the ops it left pending reach git within
/// `FLEET_JOURNAL_COMMIT_SECS` (default 5 s) — by starting a committer in the background
/// unless one already waits for this workspace. `settings` starts one even with no op
/// pending: a configuration value changed, which the commit records beside the journal.
/// Best effort: a failure here never fails the command (its ops are safe in the store).
pub(super) fn commit_soon(ctx: &Context, settings: bool) {
    let Some(delay) = commit_delay() else { return };
    let (Ok(dir), Ok(store)) = (ctx.workspace_dir(), ctx.store()) else { return };
    if !settings && !journal::committer::has_pending(store).unwrap_or(false) {
        return;
    }
    let lock = match journal::committer::take_lock(dir) {
        Ok(Some(lock)) => lock,
        Ok(None) => return,
        Err(error) => {
            tracing::debug!(%error, "taking the committer's lock");
            return;
        }
    };
    if let Err(error) = start_committer(dir, &lock, delay) {
        tracing::warn!(%error, "starting the journal committer; run `fleet journal commit`");
    }
}

/// The commit delay, or `None` when it is 0 (see [`commit_soon`]).
fn commit_delay() -> Option<u64> {
    let secs = std::env::var(COMMIT_DELAY_VAR).ok().and_then(|v| v.trim().parse().ok());
    Some(secs.unwrap_or(COMMIT_DELAY_DEFAULT)).filter(|secs| *secs > 0)
}

/// Starts `fleet --db <dir> journal commit --wait-secs N --lock-fd FD` in a new session,
/// inheriting the locked `lock`, and does not wait for it.
fn start_committer(dir: &Path, lock: &std::fs::File, secs: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = lock.as_raw_fd();
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .arg("--db")
        .arg(dir)
        .args(["--quiet", "journal", "commit", "--wait-secs", &secs.to_string()])
        .args(["--lock-fd", &fd.to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    crate::process::in_new_session_keeping(&mut command, fd);
    command.spawn().map(drop)
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
