//! The `git` program, run for the landing steps (worktrees, merge-tree, update-ref): one
//! function per question or change, each error naming the command, the directory and what
//! git said.
//!
//! fleet reads and writes its journal through gix; landing uses the `git` CLI because it does
//! what gix does not (worktrees, `merge-tree --write-tree`, a checkout brought up to date),
//! and because the person's own git sees exactly what fleet did.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A `git` command that failed: which, where, and what it said.
#[derive(Debug, Clone, thiserror::Error)]
#[error("git {args} in {}: {message}", dir.display())]
pub struct GitError {
    pub args: String,
    pub dir: PathBuf,
    pub message: String,
    /// The `git` program itself was not found (not installed, or not on `PATH`).
    pub missing: bool,
    /// `git` could not be started for want of a resource of this process or the system
    /// (open files, processes; [`crate::process::exhausted_limit`]): a fault of the fleet.
    pub exhausted: Option<String>,
}

/// The longest a git command of the landing may run (they are all local).
const GIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// What a [`GitError`] of a missing `git` program says.
const MISSING: &str = "git is not installed or not on PATH";

/// The identity fleet commits as when the repository names none (`user.name`/`user.email`).
const FALLBACK_NAME: &str = "fleet";
const FALLBACK_EMAIL: &str = "fleet@localhost";

/// `git` run in one directory.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    pub fn at(dir: impl Into<PathBuf>) -> Git {
        Git { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `git` command in this directory, with no pager, no prompt and no system config, and
    /// an identity to commit as when the repository has none.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        // Only commands that write commits or reflogs need an identity: asking git for one
        // costs four more processes per command.
        let commits = matches!(args.first(), Some(&("commit" | "commit-tree" | "update-ref")));
        for (var, config, fallback) in [
            ("GIT_AUTHOR_NAME", "user.name", FALLBACK_NAME),
            ("GIT_AUTHOR_EMAIL", "user.email", FALLBACK_EMAIL),
            ("GIT_COMMITTER_NAME", "user.name", FALLBACK_NAME),
            ("GIT_COMMITTER_EMAIL", "user.email", FALLBACK_EMAIL),
        ] {
            if commits && !crate::env::is_set(var) && !self.has_config(config) {
                command.env(var, fallback);
            }
        }
        command
    }

    fn has_config(&self, key: &str) -> bool {
        let mut command = Command::new("git");
        command.arg("-C").arg(&self.dir).args(["config", "--get", key]).stdin(Stdio::null());
        matches!(
            crate::process::output_owned_within(&mut command, GIT_LIMIT),
            Ok(Some(out)) if out.status.success()
        )
    }

    /// Runs `git args`; its output whatever the exit status. The child is owned
    /// (`crate::process`): a supervisor's orphan reaping never takes its exit status.
    pub fn output(&self, args: &[&str]) -> Result<Output, GitError> {
        self.output_with(args, &[])
    }

    /// [`Git::output`] with `env` set for the command (an author to commit as).
    pub fn output_with(&self, args: &[&str], env: &[(&str, &str)]) -> Result<Output, GitError> {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        match crate::process::output_owned_within(&mut command, GIT_LIMIT) {
            Ok(Some(output)) => Ok(output),
            Ok(None) => Err(self.error(args, format!("killed after {}s", GIT_LIMIT.as_secs()))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let mut error = self.error(args, MISSING.to_owned());
                error.missing = true;
                Err(error)
            }
            Err(error) => {
                let mut failed = self.error(args, format!("cannot run git: {error}"));
                failed.exhausted = crate::process::exhausted_limit(&error);
                Err(failed)
            }
        }
    }

    /// Runs `git args`, which must succeed; its stdout, trimmed.
    pub fn run(&self, args: &[&str]) -> Result<String, GitError> {
        self.run_with(args, &[])
    }

    /// [`Git::run`] with `env` set for the command.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, GitError> {
        let output = self.output_with(args, env)?;
        if !output.status.success() {
            return Err(self.failed(args, &output));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim_end().to_owned())
    }

    /// Runs `git args`; whether it exited 0 (a question such as `rev-parse --verify`).
    pub fn test(&self, args: &[&str]) -> Result<bool, GitError> {
        Ok(self.output(args)?.status.success())
    }

    /// The error of a command that exited non-zero.
    pub fn failed(&self, args: &[&str], output: &Output) -> GitError {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = match stderr.trim() {
            "" => format!("exited with {}", output.status),
            text => text.lines().take(6).collect::<Vec<_>>().join("; "),
        };
        self.error(args, message)
    }

    /// An error of `git args` here; the arguments are shown on one line, shortened (a commit
    /// message is not worth repeating).
    pub fn error(&self, args: &[&str], message: String) -> GitError {
        let mut shown = args.join(" ").lines().next().unwrap_or_default().to_owned();
        if shown.len() > 80 {
            let cut = (0..=80).rev().find(|&at| shown.is_char_boundary(at)).unwrap_or(0);
            shown.truncate(cut);
            shown.push('…');
        }
        GitError { args: shown, dir: self.dir.clone(), message, missing: false, exhausted: None }
    }

    /// The commit `rev` names, if it names one.
    pub fn commit_of(&self, rev: &str) -> Result<Option<String>, GitError> {
        let spec = format!("{rev}^{{commit}}");
        let output = self.output(&["rev-parse", "--verify", "--quiet", &spec])?;
        Ok(output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned()))
    }

    /// Whether the checkout has changes of any kind: staged, unstaged, or untracked files.
    pub fn is_dirty(&self) -> Result<bool, GitError> {
        Ok(!self.run(&["status", "--porcelain", "--untracked-files=all"])?.is_empty())
    }

    /// Whether `ancestor` is an ancestor of (or the same as) `commit`.
    pub fn is_ancestor(&self, ancestor: &str, commit: &str) -> Result<bool, GitError> {
        self.test(&["merge-base", "--is-ancestor", ancestor, commit])
    }
}
