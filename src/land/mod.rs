//! Landing work: a git worktree per task, the verify gate before a close counts, and the merge
//! queue that moves the base branch only to commits whose checks passed.
//!
//! ```text
//! claim → worktree (branch fleet/<id> from the base's commit) → agent works and commits
//!       → agent closes: the task joins the merge queue, still in progress
//!       → lane of (repo, base): leftovers committed, merge-tree, checks, CAS update-ref
//!       → task closed (dependents ready on a base that holds it) → `fleet gc` archives the
//!         tip under refs/fleet/archive/<id> and removes the worktree
//! ```
//!
//! - [`git`]: the `git` program, with errors that name the command and directory;
//! - [`worktree`]: where a task's worktree goes, making and checking it, the leftovers,
//!   archiving and removing it;
//! - [`checks`]: `merge.checks` run on a merged tree, with a timeout;
//! - [`lane`]: the order of a lane and the landing of one entry;
//! - [`push`]: `merge.push`, the base branch pushed after each landing, the lane rebased
//!   onto the remote's tip when someone else pushed;
//! - [`gc`]: removing landed worktrees after saving their tips.
//!
//! The store side — the landing record on the task, the close that becomes a submission, and
//! each step the lane records — is the tracker's (`crate::tracker::LandStep`); the supervisor
//! drives the lanes (`crate::supervisor::landing`). Nothing here writes the store.

pub mod checks;
pub mod gc;
pub mod git;
pub mod lane;
pub mod push;
pub mod worktree;

pub use lane::short;

/// Lands `entry` (see [`lane`]), then pushes the base when `merge.push` names a remote
/// (`crate::land::push`; its outcome goes in the receipt).
pub fn land(
    settings: &lane::LaneSettings,
    entry: &lane::Entry,
    record_checked: lane::RecordChecked<'_>,
) -> Result<lane::Landed, lane::LaneError> {
    let landed = match lane::land_here(settings, entry, record_checked)? {
        lane::Landed::Landed(mut receipt) if !settings.push.is_empty() => {
            push::publish(settings, entry, &mut receipt);
            lane::Landed::Landed(receipt)
        }
        landed => landed,
    };
    if matches!(landed, lane::Landed::Landed(_)) {
        // The base moved (and was pushed); the task's close is recorded next.
        crate::fault::point("land-landed");
    }
    Ok(landed)
}
