//! Running the `git` program on the journal repository, for what the journal leaves to it:
//! fetch and push (gix has no push) and the remotes' config. Every run has a time limit
//! ([`super::git_time_limit`]), never prompts, and reads nothing from stdin; a failure names
//! what was being done and carries git's own message.

use std::process::Command;

use super::JournalError;
use super::repo::JournalRepo;

/// `git --git-dir <journal repo> ARGS`, never prompting and reading nothing from stdin.
pub(super) fn git_command(repo: &JournalRepo, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .arg("--git-dir")
        .arg(repo.git_dir())
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        // git's own English words, which `Failure::of` reads to name a failure's cause.
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null());
    command
}

/// Runs the `git` program on the journal repository (registered as owned, so a supervisor's
/// reaping never takes its exit status); a failure names what was being done and carries
/// git's own message.
pub(super) fn git(repo: &JournalRepo, args: &[&str], what: &str) -> Result<String, JournalError> {
    let limit = super::git_time_limit();
    let output = crate::process::output_owned_within(&mut git_command(repo, args), limit)
        .map_err(JournalError::io(format!("{what}: running git (is it installed?)")))?;
    let Some(output) = output else { return Err(no_answer(repo, what, limit)) };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        return Ok(stdout);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = [stderr.trim(), stdout.trim()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    Err(JournalError::Git {
        context: format!("{what} ({})", repo.git_dir().display()),
        message: if message.is_empty() { output.status.to_string() } else { message },
    })
}

/// The error for a git command stopped at the time limit ([`super::git_time_limit`]); `what`
/// names the remote.
pub(super) fn no_answer(
    repo: &JournalRepo,
    what: &str,
    limit: std::time::Duration,
) -> JournalError {
    JournalError::NoAnswer {
        context: format!("{what} ({})", repo.git_dir().display()),
        secs: limit.as_secs(),
    }
}

/// Runs git with its stderr on this process's (for its progress display), within the same
/// time limit as [`git`].
pub(super) fn git_on_terminal(
    repo: &JournalRepo,
    args: &[&str],
    what: &str,
) -> Result<(), JournalError> {
    let mut command = git_command(repo, args);
    command.stdout(std::process::Stdio::null());
    let limit = super::git_time_limit();
    let status = crate::process::status_on_terminal_within(&mut command, limit)
        .map_err(JournalError::io(format!("{what}: running git (is it installed?)")))?;
    let Some(status) = status else { return Err(no_answer(repo, what, limit)) };
    if status.success() {
        return Ok(());
    }
    if std::os::unix::process::ExitStatusExt::signal(&status) == Some(libc::SIGINT) {
        return Err(JournalError::Interrupted(what.to_string()));
    }
    Err(JournalError::Git {
        context: format!("{what} ({})", repo.git_dir().display()),
        message: format!("git {status}; its message is above"),
    })
}
