//! `fleet doctor`'s check of the journal repository: it opens, every replica's ref resolves,
//! and every commit and ops file of every ref's history is there and reads.
//!
//! A repository whose making was cut short by an older fleet (killed, or a full disk, before
//! the making became atomic: see `repo`) holds a few directories and nothing else, and every
//! commit fails on it. Such a one holds nothing (`empty`), so removing it loses nothing; one
//! that holds objects or refs but does not read needs its history back. The words of the fix
//! are the CLI's.

use std::path::{Path, PathBuf};

use super::{JournalRepo, read_all};
use crate::workspace::JOURNAL_DIR;

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// There is no journal repository yet (the first commit makes one).
    Absent,
    /// It reads whole: `replicas` refs, `ops` ops.
    Readable { replicas: usize, ops: usize },
    /// The repository at `git_dir` does not read: what is wrong, and whether it holds nothing
    /// (no object, no ref).
    Broken { git_dir: PathBuf, problem: String, empty: bool },
}

/// Checks the journal repository of the workspace `dir` (a `.beads` directory).
pub fn check_repository(dir: &Path) -> Health {
    let own = dir.join(JOURNAL_DIR);
    let repo = match JournalRepo::find(dir) {
        Ok(Some(repo)) => repo,
        Ok(None) => return Health::Absent,
        Err(error) => return broken(&own, &error.to_string()),
    };
    let read = repo.replicas().and_then(|replicas| Ok((replicas.len(), read_all(&repo)?.len())));
    match read {
        Ok((replicas, ops)) => Health::Readable { replicas, ops },
        Err(error) => broken(repo.git_dir(), &error.to_string()),
    }
}

/// The finding for a repository at `git_dir` that does not read.
fn broken(git_dir: &Path, error: &str) -> Health {
    Health::Broken {
        git_dir: git_dir.to_path_buf(),
        problem: format!("{} does not read: {error}", git_dir.display()),
        empty: holds_nothing(git_dir),
    }
}

/// Whether the directory `git_dir` holds no file under `objects/` or `refs/` and no
/// `packed-refs`: whatever it is, it holds no commit.
fn holds_nothing(git_dir: &Path) -> bool {
    fn has_file(dir: &Path) -> bool {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|entry| {
                entry
                    .file_type()
                    .is_ok_and(|t| if t.is_dir() { has_file(&entry.path()) } else { true })
            })
        })
    }
    !git_dir.join("packed-refs").exists()
        && !has_file(&git_dir.join("objects"))
        && !has_file(&git_dir.join("refs"))
}
