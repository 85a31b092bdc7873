//! The git remotes a journal syncs through: listing, adding (marked as fleet's), removing
//! (only fleet's own), and choosing the one a sync uses. Fetched refs of remote `<name>` are
//! staged under [`STAGING_PREFIX`]`<name>/`.

use std::path::Path;

use serde::Serialize;

use super::JournalError;
use super::program::git;
use super::repo::{FLEET_MARK, JournalRepo};

/// Where fetched journal refs of remote `<name>` are staged: `refs/fleet/remotes/<name>/`.
pub const STAGING_PREFIX: &str = "refs/fleet/remotes/";

/// A configured remote.
#[derive(Debug, Clone, Serialize)]
pub struct Remote {
    pub name: String,
    pub url: String,
    /// Who added it: fleet (`fleet remote add`, or any remote of the workspace's own
    /// `.beads/journal.git`), or the repository (a project's `origin`), which fleet syncs
    /// through but never removes.
    pub owner: RemoteOwner,
}

/// Who a remote belongs to (see [`Remote::owner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteOwner {
    Fleet,
    Repository,
}

impl Remote {
    fn of(repo: &JournalRepo, name: String, url: String) -> Remote {
        let owner =
            if repo.remote_is_fleets(&name) { RemoteOwner::Fleet } else { RemoteOwner::Repository };
        Remote { name, url, owner }
    }
}

/// The configured remotes of the workspace's journal repository (none without one).
pub fn remotes(dir: &Path) -> Result<Vec<Remote>, JournalError> {
    let Some(repo) = JournalRepo::find(dir)? else { return Ok(Vec::new()) };
    Ok(repo
        .remote_names()
        .into_iter()
        .map(|name| {
            let url = repo.remote_url(&name).unwrap_or_default();
            Remote::of(&repo, name, url)
        })
        .collect())
}

/// Adds remote `name` at `url` to the journal repository (creating `.beads/journal.git` if
/// the workspace has no repository yet), marked as fleet's (`remote.<name>.fleet`), so that
/// `fleet remote remove` may take it away again. A remote of that name and URL the repository
/// already has (a project's `origin`) is used as it is.
pub fn add_remote(dir: &Path, name: &str, url: &str) -> Result<Remote, JournalError> {
    check_remote_name(name)?;
    if url.trim().is_empty() || url.starts_with('-') {
        return Err(JournalError::Remote {
            context: format!("adding remote {name}"),
            message: format!(
                "{url:?} is not a git URL or path; give one such as ../queue.git or git@host:team/queue.git"
            ),
        });
    }
    let repo = JournalRepo::find_or_create(dir)?;
    if let Some(existing) = repo.remote_url(name) {
        if existing == url {
            return Ok(Remote::of(&repo, name.to_string(), existing));
        }
        let fix = if repo.remote_is_fleets(name) {
            format!("remove it first (`fleet remote remove {name}`), or give this one another name")
        } else {
            "it is the repository's own; give this one another name".to_string()
        };
        return Err(JournalError::Remote {
            context: format!("adding remote {name} to {}", repo.git_dir().display()),
            message: format!("remote {name} already exists ({existing}); {fix}"),
        });
    }
    git(&repo, &["remote", "add", "--", name, url], &format!("adding remote {name}"))?;
    let marker = format!("remote.{name}.{FLEET_MARK}");
    git(&repo, &["config", &marker, "true"], &format!("marking remote {name} as fleet's"))?;
    Ok(Remote { name: name.to_string(), url: url.to_string(), owner: RemoteOwner::Fleet })
}

/// Refuses a remote name that git would read as an option, or that would nest its staged refs
/// (`refs/fleet/remotes/<name>/`) inside another remote's: letters, digits, `.`, `_` and `-`,
/// not starting with `-` or `.`.
fn check_remote_name(name: &str) -> Result<(), JournalError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.starts_with(['-', '.']) || !name.chars().all(allowed) {
        return Err(JournalError::Remote {
            context: format!("adding remote {name:?}"),
            message: "a remote name is letters, digits, '.', '_' and '-', not starting with '-' or '.' (for example origin)".into(),
        });
    }
    Ok(())
}

/// Removes remote `name`, if fleet added it, and the journal refs staged from it. A remote of
/// the repository itself (a project's `origin`) is refused: fleet never deletes it.
pub fn remove_remote(dir: &Path, name: &str) -> Result<Remote, JournalError> {
    let repo = JournalRepo::find(dir)?.ok_or_else(|| no_remote(dir))?;
    let url = repo.remote_url(name).ok_or_else(|| unknown_remote(&repo, name))?;
    if !repo.remote_is_fleets(name) {
        return Err(JournalError::Remote {
            context: format!("removing remote {name} ({url})"),
            message: format!(
                "it is the repository's own remote (fleet did not add it), so fleet leaves it in {}; the queue syncs through it as long as it is there (`git remote remove {name}` removes it from the repository, for every use)",
                repo.git_dir().display()
            ),
        });
    }
    git(&repo, &["remote", "remove", name], &format!("removing remote {name}"))?;
    for (replica, _) in repo.refs_under(&staging(name))? {
        let staged = format!("{}{replica}", staging(name));
        git(&repo, &["update-ref", "-d", &staged], &format!("removing {staged}"))?;
    }
    Ok(Remote { name: name.to_string(), url, owner: RemoteOwner::Fleet })
}

/// The remote to sync with: `name`, or `origin`, or the only one.
pub fn pick_remote(dir: &Path, name: Option<&str>) -> Result<Option<Remote>, JournalError> {
    let Some(repo) = JournalRepo::find(dir)? else { return Ok(None) };
    pick(&repo, name)
}

pub(super) fn pick(repo: &JournalRepo, name: Option<&str>) -> Result<Option<Remote>, JournalError> {
    let names = repo.remote_names();
    let chosen = match name {
        Some(name) => Some(name.to_string()),
        None if names.iter().any(|n| n == "origin") => Some("origin".to_string()),
        None if names.len() == 1 => names.first().cloned(),
        None if names.is_empty() => None,
        None => {
            return Err(JournalError::Remote {
                context: format!("choosing a remote of {}", repo.git_dir().display()),
                message: format!(
                    "there are several remotes ({}) and none is origin; name one: `fleet sync NAME`",
                    names.join(", ")
                ),
            });
        }
    };
    let Some(name) = chosen else { return Ok(None) };
    let url = repo.remote_url(&name).ok_or_else(|| unknown_remote(repo, &name))?;
    Ok(Some(Remote::of(repo, name, url)))
}

fn unknown_remote(repo: &JournalRepo, name: &str) -> JournalError {
    JournalError::Remote {
        context: format!("remote {name}"),
        message: format!(
            "no remote named {name} in {}; add it with `fleet remote add {name} URL` (`fleet remote list` shows the remotes)",
            repo.git_dir().display()
        ),
    }
}

pub(super) fn no_remote(dir: &Path) -> JournalError {
    JournalError::Remote {
        context: format!("syncing the workspace at {}", dir.display()),
        message: "no remote is configured; add one with `fleet remote add origin URL`".to_string(),
    }
}

pub(super) fn staging(remote: &str) -> String {
    format!("{STAGING_PREFIX}{remote}/")
}
