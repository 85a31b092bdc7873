//! `merge.push = "<remote>"`: after each landing the base branch is pushed to the remote with
//! `--force-with-lease=refs/heads/<branch>:<expected>`, `<expected>` being the commit the
//! work was merged onto, so a push never overwrites commits fleet has not seen.
//!
//! A push the remote rejects (someone else pushed meanwhile) fetches the remote's tip into
//! `refs/fleet/remotes/<remote>/<branch>`. If that tip is already in the local base, only the
//! lease was stale and the push is tried again; otherwise the lane is re-based: the local
//! commits the remote lacks are replayed onto its tip (`crate::land::lane::replay`, no checkout
//! touched), the checks run on the result, the local base moves there by compare-and-swap
//! (clean checkouts brought along) and the push is tried again — at most [`TRIES`] times. The
//! outcome is one line in the receipt (`Receipt::push`), which `fleet merges` shows. A push
//! that fails leaves the work landed on the local base: nothing is lost, the next landing
//! pushes it along.

use super::git::{Git, GitError};
use super::lane::{self, Entry, LaneSettings, short};
use crate::model::{CheckRun, Receipt};

/// Pushes tried per landing before giving up.
pub const TRIES: u32 = 3;

/// Pushes the base branch of `entry` (just landed, as `receipt` says) to `settings.push`,
/// recording the outcome in `receipt`.
pub fn publish(settings: &LaneSettings, entry: &Entry, receipt: &mut Receipt) {
    receipt.push = match push(settings, entry, receipt) {
        Ok(done) => done,
        Err(why) => format!(
            "not pushed to {}: {why}; the work is on the local {} and goes with the next push",
            settings.push, entry.landing.base
        ),
    };
}

/// The pushes, rejections and re-bases of one landing; what was done, or why it stopped.
fn push(settings: &LaneSettings, entry: &Entry, receipt: &mut Receipt) -> Result<String, String> {
    let repo = Git::at(&entry.landing.repo);
    let (remote, branch) = (settings.push.as_str(), entry.landing.base.as_str());
    let text = |e: GitError| e.to_string();
    let mut expected = receipt.base.clone();
    let mut rebased = 0;
    for _ in 0..TRIES {
        let local = repo
            .commit_of(&format!("refs/heads/{branch}"))
            .map_err(text)?
            .ok_or_else(|| format!("the branch {branch} is gone"))?;
        let lease = format!("--force-with-lease=refs/heads/{branch}:{expected}");
        let refspec = format!("{local}:refs/heads/{branch}");
        let args = ["push", "--quiet", "--no-verify", &lease, remote, &refspec];
        let pushed = repo.output(&args).map_err(text)?;
        if pushed.status.success() {
            let after = match rebased {
                0 => String::new(),
                n => format!(" (after {n} re-base{} onto its tip)", if n == 1 { "" } else { "s" }),
            };
            return Ok(format!("pushed {branch} to {remote} at {}{after}", short(&local)));
        }
        let rejected = repo.failed(&args, &pushed).message;
        let theirs = fetch(&repo, remote, branch)
            .map_err(|e| format!("the push was rejected ({rejected}), and fetching failed: {e}"))?;
        if repo.is_ancestor(&theirs, &local).map_err(text)? {
            // Only the lease was stale: the local base holds the remote's tip.
            expected = theirs;
            continue;
        }
        let moved = rebase_lane(settings, entry, (&local, &theirs), receipt)?;
        receipt.notes.push(format!(
            "{remote}/{branch} had moved to {}: {branch} re-based onto it as {}",
            short(&theirs),
            short(&moved)
        ));
        receipt.merged = moved;
        expected = theirs;
        rebased += 1;
    }
    Err(format!("{remote} rejected {TRIES} pushes (it keeps moving)"))
}

/// The remote's tip of `branch`, fetched into `refs/fleet/remotes/<remote>/<branch>`.
fn fetch(repo: &Git, remote: &str, branch: &str) -> Result<String, GitError> {
    let keep = format!("refs/fleet/remotes/{remote}/{branch}");
    repo.run(&["fetch", "--quiet", "--no-tags", remote, &format!("+refs/heads/{branch}:{keep}")])?;
    repo.commit_of(&keep)?.ok_or_else(|| repo.error(&["fetch"], format!("{keep} is missing")))
}

/// Replays the local commits of the base that the remote lacks onto `theirs`, checks the
/// result, and moves the local base there (compare-and-swap); the new tip.
fn rebase_lane(
    settings: &LaneSettings,
    entry: &Entry,
    (local, theirs): (&str, &str),
    receipt: &mut Receipt,
) -> Result<String, String> {
    let repo = Git::at(&entry.landing.repo);
    let branch = &entry.landing.base;
    let replayed = lane::replay(&repo, None, (theirs, local), theirs).map_err(|e| e.to_string())?;
    let Some(tip) = replayed else {
        return Err(format!(
            "{branch} conflicts with {}/{branch} ({}); merge it by hand",
            settings.push,
            short(theirs)
        ));
    };
    if !settings.checks.is_empty() {
        let scratch = lane::scratch_checkout(settings, entry, &tip).map_err(|e| e.to_string())?;
        let runs = super::checks::run_all(&settings.checks, &scratch, settings.timeout);
        if let Some(failed) = runs.iter().find(|c| !c.passed()) {
            return Err(format!(
                "{branch} re-based onto {}/{branch} fails the check `{}`; not moved",
                settings.push, failed.command
            ));
        }
        receipt.checks.extend(runs.into_iter().filter(CheckRun::passed));
    }
    let reason = format!("fleet: re-base onto {}/{branch}", settings.push);
    match lane::swap_base(&repo, branch, (local, &tip), &reason, &mut receipt.notes) {
        Ok(true) => Ok(tip),
        Ok(false) => Err(format!("{branch} moved meanwhile; not re-based")),
        Err(error) => Err(error.to_string()),
    }
}
