//! A task's own worktree: where it goes, how it is made and checked at each attempt, what
//! fleet commits of an agent's leftovers, and how it is archived and removed.
//!
//! A worktree lives at `$FLEET_HOME/worktrees/<id>` on the branch `fleet/<id>`; the id is
//! checked by the id grammar ([`crate::id::check_id`]) first, so it is one safe path component
//! and a valid branch name. The worktree is planned (repository, base branch and commit) before
//! the claim, recorded in the claim's transaction, and made by [`ensure`] before the agent
//! starts; every later attempt finds it as the last one left it.

use std::path::{Path, PathBuf};

use super::git::{Git, GitError};
use crate::config::Isolation;
use crate::model::{Issue, LandState, Landing};

/// The directory of `$FLEET_HOME` holding the worktrees.
pub const DIR: &str = "worktrees";
/// The namespace of the refs that keep the tips of removed worktrees.
pub const ARCHIVE: &str = "refs/fleet/archive";

/// Why a task cannot have (or use) its worktree.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorktreeError {
    #[error("task id {id:?} cannot name a worktree: {why}")]
    BadId { id: String, why: String },
    #[error(
        "{dir} is not in a git repository with a commit on a branch (isolation = \"worktree\")"
    )]
    NotARepository { dir: String },
    #[error(
        "git is not installed or not on PATH, so the task in {dir} cannot have a worktree of its own (isolation = \"{isolation}\"); install git or put it on the supervisor's PATH, or set isolation = \"none\" to let agents share the checkout"
    )]
    NoGit { dir: String, isolation: &'static str },
    #[error(
        "the worktree {path} of {id} is missing (its branch {branch} keeps what was committed); restore it with `git -C {repo} worktree add {path} {branch}`, or drop the task's landing record"
    )]
    Missing { id: String, path: String, branch: String, repo: String },
    #[error("the worktree {path} is broken: {why}")]
    Broken { path: String, why: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// Where the worktree of task `id` goes.
pub fn path_of(home: &Path, id: &str) -> Result<PathBuf, WorktreeError> {
    crate::id::check_id(id)
        .map_err(|e| WorktreeError::BadId { id: id.to_owned(), why: e.to_string() })?;
    Ok(home.join(DIR).join(id))
}

/// The branch of task `id`.
pub fn branch_of(id: &str) -> String {
    format!("fleet/{id}")
}

/// The isolation a task asks for: its `isolation` metadata, else the config's.
pub fn isolation_of(issue: &Issue, configured: Isolation) -> Isolation {
    issue
        .metadata
        .as_ref()
        .and_then(|meta| meta.get("isolation").and_then(|v| v.as_str()).and_then(Isolation::parse))
        .unwrap_or(configured)
}

/// The landing record of a task about to run in `cwd` for the first time, or `None` when it
/// works in `cwd` itself: with isolation `none`; with `auto` when `cwd` is in no repository
/// with a commit on a branch, or already in one of fleet's worktrees (a resolution task works
/// in the worktree of the task it resolves). `target` is the base branch (empty: the one
/// checked out there).
pub fn plan(
    home: &Path,
    id: &str,
    cwd: &Path,
    isolation: Isolation,
    target: &str,
) -> Result<Option<Landing>, WorktreeError> {
    if isolation == Isolation::None {
        return Ok(None);
    }
    let not_a_repo = || WorktreeError::NotARepository { dir: cwd.display().to_string() };
    let inside_fleet = std::fs::canonicalize(home.join(DIR))
        .is_ok_and(|dir| std::fs::canonicalize(cwd).is_ok_and(|cwd| cwd.starts_with(dir)));
    let asked = if inside_fleet { Ok(None) } else { repository_of(cwd, target) };
    let found = match asked {
        Ok(found) => found,
        // Without git, "auto" cannot tell a repository by asking git: a `.git` above the
        // directory says it is one, and the agent must not work in the shared checkout.
        Err(error) if error.missing => {
            if isolation == Isolation::Auto && !looks_like_a_repository(cwd) {
                return Ok(None);
            }
            let dir = cwd.display().to_string();
            return Err(WorktreeError::NoGit { dir, isolation: isolation.name() });
        }
        Err(error) => return Err(error.into()),
    };
    let Some((repo, base, base_commit, subdir)) = found else {
        return match isolation {
            Isolation::Worktree => Err(not_a_repo()),
            _ => Ok(None),
        };
    };
    Ok(Some(Landing {
        repo: repo.display().to_string(),
        base,
        base_commit,
        worktree: path_of(home, id)?.display().to_string(),
        branch: branch_of(id),
        subdir,
        state: LandState::Working,
        ..Landing::default()
    }))
}

/// Whether `dir` or a directory above it has a `.git` (a directory, or the file of a linked
/// worktree): what tells a repository when git itself cannot be asked.
fn looks_like_a_repository(dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors().any(|above| above.join(".git").exists())
}

/// The main checkout of the repository holding `cwd`, its base branch and that branch's
/// commit, and `cwd`'s place inside it; `None` when `cwd` is in no repository, or the base has
/// no commit.
fn repository_of(
    cwd: &Path,
    target: &str,
) -> Result<Option<(PathBuf, String, String, String)>, GitError> {
    if !cwd.is_dir() {
        return Ok(None);
    }
    let git = Git::at(cwd);
    let top = match git.output(&["rev-parse", "--show-toplevel"])? {
        out if out.status.success() => PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()),
        _ => return Ok(None),
    };
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let here = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let subdir = match here.strip_prefix(&top) {
        Ok(inside) if inside.as_os_str().is_empty() => ".".to_owned(),
        Ok(inside) => inside.display().to_string(),
        Err(_) => ".".to_owned(),
    };
    let base = if target.is_empty() {
        let head = git.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        if !head.status.success() {
            return Ok(None);
        }
        String::from_utf8_lossy(&head.stdout).trim().to_owned()
    } else {
        target.to_owned()
    };
    let Some(commit) = git.commit_of(&format!("refs/heads/{base}"))? else { return Ok(None) };
    Ok(Some((top, base, commit, subdir)))
}

/// The directory the agent of a task with `landing` works in: the worktree, at the task's
/// place inside the repository.
pub fn agent_dir(landing: &Landing) -> PathBuf {
    let worktree = PathBuf::from(&landing.worktree);
    match landing.subdir.as_str() {
        "" | "." => worktree,
        sub => worktree.join(sub),
    }
}

/// Makes the worktree of `landing` if it was never made (its branch does not exist yet), from
/// the recorded base commit; checks it otherwise. A worktree that was made and is gone or
/// broken is an error: the agent must never work anywhere else.
pub fn ensure(id: &str, landing: &Landing) -> Result<PathBuf, WorktreeError> {
    let repo = Git::at(&landing.repo);
    let path = PathBuf::from(&landing.worktree);
    let branch_ref = format!("refs/heads/{}", landing.branch);
    let branch_exists = repo.commit_of(&branch_ref)?.is_some();
    if !branch_exists && !path.exists() {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| WorktreeError::Broken {
                path: parent.display().to_string(),
                why: e.to_string(),
            })?;
        }
        let shown = path.display().to_string();
        repo.run(&[
            "worktree",
            "add",
            "--quiet",
            "-b",
            &landing.branch,
            &shown,
            &landing.base_commit,
        ])?;
        return Ok(agent_dir(landing));
    }
    if !path.is_dir() {
        return Err(WorktreeError::Missing {
            id: id.to_owned(),
            path: path.display().to_string(),
            branch: landing.branch.clone(),
            repo: landing.repo.clone(),
        });
    }
    let head = Git::at(&path).output(&["symbolic-ref", "--quiet", "HEAD"])?;
    let on = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    if !head.status.success() || on != branch_ref {
        return Err(WorktreeError::Broken {
            path: path.display().to_string(),
            why: format!(
                "it is not on {} (HEAD: {})",
                landing.branch,
                if on.is_empty() { "detached or unreadable" } else { &on }
            ),
        });
    }
    Ok(agent_dir(landing))
}

/// Commits whatever the agent left uncommitted in the worktree (new, changed and deleted
/// files) with a message saying so; the `--stat` of that commit, or `None` when it was clean.
pub fn commit_leftovers(id: &str, landing: &Landing) -> Result<Option<String>, GitError> {
    let tree = Git::at(&landing.worktree);
    if !tree.is_dirty()? {
        return Ok(None);
    }
    tree.run(&["add", "--all"])?;
    let message = format!(
        "fleet: commit what the agent of {id} left uncommitted\n\nFleet-Task: {id}\nFleet-Leftovers: true"
    );
    tree.run(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(Some(tree.run(&["show", "--stat", "--format=", "HEAD"])?))
}

/// Saves the branch tip of task `id` under `refs/fleet/archive/<id>`; the tip saved.
pub fn archive(id: &str, landing: &Landing) -> Result<Option<String>, GitError> {
    let repo = Git::at(&landing.repo);
    let Some(tip) = repo.commit_of(&format!("refs/heads/{}", landing.branch))? else {
        return Ok(None);
    };
    repo.run(&["update-ref", &format!("{ARCHIVE}/{id}"), &tip])?;
    Ok(Some(tip))
}

/// Removes the worktree and the branch of task `id` (after [`archive`]): refuses a dirty
/// worktree. Returns the bytes its files took.
pub fn remove(id: &str, landing: &Landing) -> Result<u64, WorktreeError> {
    let path = PathBuf::from(&landing.worktree);
    let repo = Git::at(&landing.repo);
    let mut freed = 0;
    if path.is_dir() {
        if Git::at(&path).is_dirty()? {
            return Err(WorktreeError::Broken {
                path: path.display().to_string(),
                why: format!(
                    "it has uncommitted changes; commit or discard them, then run `fleet gc` again (task {id})"
                ),
            });
        }
        freed = disk_usage(&path);
        repo.run(&["worktree", "remove", "--force", &path.display().to_string()])?;
    }
    crate::fault::point("gc-worktree-removed");
    let _ = repo.run(&["worktree", "prune"]);
    if repo.commit_of(&format!("refs/heads/{}", landing.branch))?.is_some() {
        repo.run(&["branch", "-D", "--quiet", &landing.branch])?;
    }
    Ok(freed)
}

/// The disk the files under `dir` take, in bytes of allocated blocks (not following links).
pub fn disk_usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            }
            total += meta.blocks() * 512;
        }
    }
    total
}
