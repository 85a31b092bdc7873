//! `fleet gc`: removes the worktrees of tasks whose work landed (or closed with nothing to
//! land), never losing a commit: the branch tip is saved under `refs/fleet/archive/<id>`
//! first, a worktree with uncommitted changes is refused by name, and nothing is touched while
//! the task is in progress (a lease lives, or its work waits in the queue).

use serde::Serialize;

use super::worktree::{self, WorktreeError};
use crate::model::{Issue, LandState, Status};

/// What `fleet gc` did with one task's worktree.
#[derive(Debug, Clone, Serialize)]
pub struct Collected {
    pub id: String,
    pub worktree: String,
    /// The tip saved under `refs/fleet/archive/<id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived: Option<String>,
    pub freed_bytes: u64,
    /// Why it was left alone (a dirty worktree); `None` when it was removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// Whether `issue`'s worktree may go: it is closed, and its work landed or a person dropped it.
pub fn collectable(issue: &Issue) -> bool {
    issue.status == Status::Closed
        && issue.fleet.lease.is_none()
        && issue.fleet.land.as_ref().is_some_and(|l| {
            matches!(l.state, LandState::Landed { .. } | LandState::Dropped { .. })
        })
}

/// Archives and removes the worktree of `issue` (which must be [`collectable`]).
pub fn collect(issue: &Issue) -> Collected {
    let Some(landing) = &issue.fleet.land else {
        return Collected {
            id: issue.id.clone(),
            worktree: String::new(),
            archived: None,
            freed_bytes: 0,
            refused: Some("it has no worktree".into()),
        };
    };
    let mut collected = Collected {
        id: issue.id.clone(),
        worktree: landing.worktree.clone(),
        archived: None,
        freed_bytes: 0,
        refused: None,
    };
    let dirty = std::path::Path::new(&landing.worktree).is_dir()
        && super::git::Git::at(&landing.worktree).is_dirty().unwrap_or(true);
    if dirty {
        collected.refused = Some(format!(
            "worktree {} of {} has uncommitted changes; commit or discard them, then run `fleet gc` again",
            landing.worktree, issue.id
        ));
        return collected;
    }
    match worktree::archive(&issue.id, landing) {
        Ok(tip) => collected.archived = tip,
        Err(error) => {
            collected.refused =
                Some(format!("saving the tip of {} failed: {error}", landing.branch));
            return collected;
        }
    }
    crate::fault::point("gc-archived");
    match worktree::remove(&issue.id, landing) {
        Ok(freed) => collected.freed_bytes = freed,
        Err(WorktreeError::Git(error)) => collected.refused = Some(error.to_string()),
        Err(error) => collected.refused = Some(error.to_string()),
    }
    collected
}
