//! One merge lane (a repository and its base branch): the order of its entries, and landing
//! one entry without touching any checkout but the scratch one.
//!
//! Landing an entry ([`land`]):
//! 1. the verify gate: what the agent left uncommitted is committed by fleet (saying so); a
//!    branch with no commits ahead of the base fails, unless the close said "no changes";
//! 2. the merged tree is built by `git merge-tree --write-tree` (a conflict stops here) and
//!    made commits on the base by `git commit-tree`, as `merge.strategy` says: `squash`, one
//!    commit (the task's title, its close reason, and a `Fleet-Task: <id>` trailer); `merge`,
//!    a merge commit of the base and the branch tip; `rebase`, each commit of the branch
//!    replayed in turn (`merge-tree --merge-base=<its parent>`), keeping its author and
//!    message and adding the trailer — a branch whose commits do not replay one by one (one
//!    conflicts on its own though the whole merges cleanly) lands as one commit, and the
//!    receipt says so;
//! 3. the checks run in the lane's scratch worktree, checked out at that commit;
//! 4. the caller records the entry as checked (base and merged commits, the receipt) — a
//!    restart finds it there — and then the base ref moves by compare-and-swap
//!    (`git update-ref refs/heads/<base> <new> <old>`): it is only ever at a commit whose checks
//!    passed, and a base moved meanwhile makes the entry go round again;
//! 5. checkouts of the base branch that were clean before the move are brought up to date
//!    (`git read-tree -m -u <old> <new>`); dirty ones are never touched, and the receipt says so.
//!
//! 6. with `merge.push`, the base branch is pushed (`crate::land::push`).
//!
//! An entry found checked ([`LandState::Checked`]) after a crash is finished, never merged
//! twice: the base at the merged commit means the move happened; the base still at the
//! recorded one means the move is due; anything else means someone moved the base, and the
//! entry is merged again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;

use super::git::{Git, GitError};
use super::{checks, worktree};
use crate::config::Strategy;
use crate::model::{CheckRun, LandState, Landing, Receipt};

/// An entry waiting in a lane: a task whose agent closed it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: String,
    pub title: String,
    pub priority: u8,
    pub landing: Landing,
    /// When it joined the queue (the close).
    pub queued_at: Timestamp,
    /// The close's reason (the squash commit's body).
    pub reason: String,
    pub no_changes: bool,
}

/// A lane: the repository's main checkout and the base branch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LaneKey {
    pub repo: String,
    pub base: String,
}

impl Entry {
    pub fn lane(&self) -> LaneKey {
        LaneKey { repo: self.landing.repo.clone(), base: self.landing.base.clone() }
    }
}

/// How long waiting in a lane raises an entry by one priority level: nothing starves behind
/// a stream of more urgent work.
pub const AGING: Duration = Duration::from_secs(30 * 60);

/// The entry's rank in its lane at `now` (smaller first): entries a person moved to the head
/// (`fleet merge ID --now`) first, in the order they were moved; then the others by priority,
/// raised one level per [`AGING`] waited, then by time of close.
pub fn rank(entry: &Entry, now: Timestamp) -> (bool, i64, Timestamp, String) {
    if let Some(at) = entry.landing.front_since {
        return (false, 0, at, entry.id.clone());
    }
    let waited = now.duration_since(entry.queued_at).as_secs().max(0);
    let raised = waited / i64::try_from(AGING.as_secs()).unwrap_or(i64::MAX);
    (true, i64::from(entry.priority) - raised, entry.queued_at, entry.id.clone())
}

/// The settings of a lane's work.
#[derive(Debug, Clone)]
pub struct LaneSettings {
    /// `$FLEET_HOME` (the scratch worktrees live under its `worktrees/`).
    pub home: PathBuf,
    pub checks: Vec<String>,
    pub timeout: Duration,
    pub strategy: Strategy,
    /// The remote the base branch is pushed to after each landing (`merge.push`; empty: none).
    pub push: String,
}

/// How landing an entry ended.
#[derive(Debug, Clone)]
pub enum Landed {
    /// The base holds the work now.
    Landed(Receipt),
    /// Nothing to land: the close said so and the branch has no commits, or the base holds
    /// the same change already.
    NoChanges(Receipt),
    /// The branch has no commits and the close did not say "no changes".
    Empty(Receipt),
    /// A check failed on the merged tree; the base did not move.
    ChecksFailed(Receipt),
    /// The branch and the base conflict in `files`; `base_change` is what the base did since
    /// the worktree was made.
    Conflict { receipt: Receipt, files: Vec<String>, base_change: String },
    /// The base moved between the merge and the compare-and-swap: merged again next round.
    BaseMoved(Receipt),
}

/// Why an entry could not be worked on at all (git failed, the base is gone): the entry stays
/// queued, the error is reported.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LaneError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("the base branch {base} of {repo} has no commit; create it, or set merge.target")]
    NoBase { repo: String, base: String },
    #[error("recording the landing failed: {0}")]
    Record(String),
}

/// What the caller records before the base ref moves (see the module doc, step 4).
pub type RecordChecked<'a> = &'a mut dyn FnMut(&str, &str, &Receipt) -> Result<(), String>;

/// Lands `entry` on the base branch of its repository.
pub(super) fn land_here(
    settings: &LaneSettings,
    entry: &Entry,
    record_checked: RecordChecked<'_>,
) -> Result<Landed, LaneError> {
    let landing = &entry.landing;
    let repo = Git::at(&landing.repo);
    let base_ref = format!("refs/heads/{}", landing.base);
    if let LandState::Checked { base, merged, .. } = &landing.state
        && let Some(done) = finish_checked(&repo, entry, base, merged)?
    {
        return Ok(done);
    }
    let mut receipt =
        Receipt { verdict: String::new(), at: Timestamp::now(), ..Receipt::default() };
    let base = repo.commit_of(&base_ref)?.ok_or_else(|| LaneError::NoBase {
        repo: landing.repo.clone(),
        base: landing.base.clone(),
    })?;
    let merged = match merge_onto(settings, entry, &base, &mut receipt)? {
        Ok(merged) => merged,
        Err(done) => return Ok(done),
    };
    if !settings.checks.is_empty() {
        let scratch = scratch_checkout(settings, entry, &merged)?;
        receipt.checks = checks::run_all(&settings.checks, &scratch, settings.timeout);
        if !receipt.checks.iter().all(CheckRun::passed) {
            receipt.verdict = "checks failed".into();
            return Ok(Landed::ChecksFailed(receipt));
        }
    }
    receipt.verdict = "checked".into();
    crate::fault::point("land-checks-passed");
    record_checked(&base, &merged, &receipt).map_err(LaneError::Record)?;
    crate::fault::point("land-checked");
    move_base(&repo, entry, &base, &merged, receipt)
}

/// Steps 1 and 2 of the module doc for `entry` onto `base`: the commit the base would move to,
/// or how the entry ends without one (no commits, no changes, a conflict).
fn merge_onto(
    settings: &LaneSettings,
    entry: &Entry,
    base: &str,
    receipt: &mut Receipt,
) -> Result<Result<String, Landed>, LaneError> {
    let landing = &entry.landing;
    let repo = Git::at(&landing.repo);
    if Path::new(&landing.worktree).is_dir() {
        if let Some(stat) = worktree::commit_leftovers(&entry.id, landing)? {
            receipt.leftovers = stat;
        }
    } else {
        receipt.notes.push(format!(
            "the worktree {} is gone; landing what its branch {} holds",
            landing.worktree, landing.branch
        ));
    }
    receipt.base = base.to_owned();
    let tip = repo.commit_of(&format!("refs/heads/{}", landing.branch))?.unwrap_or_default();
    let ahead = if tip.is_empty() {
        0
    } else {
        repo.run(&["rev-list", "--count", &format!("{base}..{tip}")])?.parse::<u64>().unwrap_or(0)
    };
    if ahead == 0 {
        return Ok(Err(if entry.no_changes {
            receipt.verdict = "no changes".into();
            Landed::NoChanges(std::mem::take(receipt))
        } else {
            receipt.verdict = "no commits".into();
            Landed::Empty(std::mem::take(receipt))
        }));
    }
    let merge =
        repo.output(&["merge-tree", "--write-tree", "--name-only", "--no-messages", base, &tip])?;
    let text = String::from_utf8_lossy(&merge.stdout).into_owned();
    let mut lines = text.lines();
    let tree = lines.next().unwrap_or_default().trim().to_owned();
    match merge.status.code() {
        Some(0) => {}
        Some(1) => {
            let files: Vec<String> =
                lines.filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
            receipt.verdict = "conflict".into();
            receipt.notes.push(format!("conflicting files: {}", files.join(", ")));
            let since = format!("{}..{base}", landing.base_commit);
            let base_change =
                repo.run(&["log", "--stat", "--format=%h %s", &since]).unwrap_or_default();
            let receipt = std::mem::take(receipt);
            return Ok(Err(Landed::Conflict { receipt, files, base_change }));
        }
        _ => return Err(repo.failed(&["merge-tree", "--write-tree", base, &tip], &merge).into()),
    }
    if repo.run(&["rev-parse", &format!("{base}^{{tree}}")])? == tree {
        receipt.verdict = "no changes".into();
        receipt.notes.push("the base holds this change already".into());
        return Ok(Err(Landed::NoChanges(std::mem::take(receipt))));
    }
    let merged = commit_onto(&repo, settings.strategy, entry, (base, &tip, &tree), receipt)?;
    receipt.merged.clone_from(&merged);
    receipt.diffstat = repo.run(&["diff", "--stat", base, &merged])?;
    Ok(Ok(merged))
}

/// What the caller records before the base ref moves in a batch: the entry, the base, the
/// checked commit the base moves to (the top of the good prefix), and the entry's receipt.
pub type RecordBatchChecked<'a> =
    &'a mut dyn FnMut(&Entry, &str, &str, &Receipt) -> Result<(), String>;

/// Lands up to all of `entries` (ready entries of one lane, in their order) as one batch: their
/// merges stacked on the base one upon the other, the checks run once on the top. All pass:
/// each entry is recorded checked with the top as its merged commit (a restart moves the base
/// straight to the top, never to an unchecked commit in between), then the base moves to the
/// top. A failure is bisected over the stack (the checks on the middle, and so on; a commit
/// that fails makes every one above it fail) to the first failing entry: the good prefix
/// below it lands the same way, at the last commit that passed, and the culprit gets
/// [`Landed::ChecksFailed`] with the failing checks. An entry that does not stack cleanly
/// (a conflict, no commits) ends the stack below it; the first entry alone, it gets its own
/// outcome. Returns the outcome of each entry dealt with, by its index in `entries`; the
/// others stay in the queue for the next round.
pub fn land_batch(
    settings: &LaneSettings,
    entries: &[Entry],
    record_checked: RecordBatchChecked<'_>,
) -> Result<Vec<(usize, Landed)>, LaneError> {
    let Some(first) = entries.first() else { return Ok(Vec::new()) };
    let landing = &first.landing;
    let repo = Git::at(&landing.repo);
    let base = repo.commit_of(&format!("refs/heads/{}", landing.base))?.ok_or_else(|| {
        LaneError::NoBase { repo: landing.repo.clone(), base: landing.base.clone() }
    })?;
    // (index in entries, its commit on the stack, its receipt)
    let mut stack: Vec<(usize, String, Receipt)> = Vec::new();
    let mut top = base.clone();
    for (index, entry) in entries.iter().enumerate() {
        let mut receipt =
            Receipt { verdict: String::new(), at: Timestamp::now(), ..Receipt::default() };
        match merge_onto(settings, entry, &top, &mut receipt)? {
            Ok(merged) => {
                top.clone_from(&merged);
                stack.push((index, merged, receipt));
            }
            Err(done) if stack.is_empty() => return Ok(vec![(index, done)]),
            Err(_) => break,
        }
    }
    let run = |merged: &str| -> Result<Vec<CheckRun>, LaneError> {
        if settings.checks.is_empty() {
            return Ok(Vec::new());
        }
        let scratch = scratch_checkout(settings, first, merged)?;
        Ok(checks::run_all(&settings.checks, &scratch, settings.timeout))
    };
    let passed = |runs: &[CheckRun]| runs.iter().all(CheckRun::passed);
    // Prefixes of the stack: `good` entries are known to pass, `bad` known to fail.
    let mut good = 0;
    let mut good_runs = Vec::new();
    let mut bad = stack.len();
    let mut bad_runs = run(&top)?;
    let mut rounds = 1;
    if passed(&bad_runs) {
        good = bad;
        good_runs = std::mem::take(&mut bad_runs);
    } else {
        while bad - good > 1 {
            let middle = good + (bad - good) / 2;
            let runs = run(&stack[middle - 1].1)?;
            rounds += 1;
            if passed(&runs) {
                (good, good_runs) = (middle, runs);
            } else {
                (bad, bad_runs) = (middle, runs);
            }
        }
    }
    let size = stack.len();
    let mut outcomes = Vec::new();
    if good < size {
        let (index, _, receipt) = &mut stack[good];
        receipt.checks = std::mem::take(&mut bad_runs);
        receipt.verdict = "checks failed".into();
        receipt.notes.push(format!(
            "checked in a batch of {size}; the checks failed, and {rounds} run(s) bisected the failure to this entry"
        ));
        outcomes.push((*index, Landed::ChecksFailed(std::mem::take(receipt))));
    }
    if good == 0 {
        return Ok(outcomes);
    }
    let landed_at = stack[good - 1].1.clone();
    let mut landing_now = Vec::new();
    for (index, own, mut receipt) in stack.into_iter().take(good) {
        receipt.checks.clone_from(&good_runs);
        receipt.verdict = "checked".into();
        receipt.merged.clone_from(&landed_at);
        if good > 1 {
            receipt.notes.push(format!(
                "landed in a batch of {good} (its own commit {}), checked together at {}",
                short(&own),
                short(&landed_at)
            ));
        }
        record_checked(&entries[index], &base, &landed_at, &receipt).map_err(LaneError::Record)?;
        landing_now.push((index, receipt));
    }
    crate::fault::point("land-checked");
    let mut notes = Vec::new();
    let reason = format!("fleet: land a batch of {good} ({})", first.id);
    let moved = swap_base(&repo, &landing.base, (&base, &landed_at), &reason, &mut notes)?;
    for (index, mut receipt) in landing_now {
        receipt.notes.extend(notes.iter().cloned());
        if moved {
            receipt.verdict = "landed".into();
            outcomes.push((index, Landed::Landed(receipt)));
        } else {
            receipt.verdict = "base moved".into();
            outcomes.push((index, Landed::BaseMoved(receipt)));
        }
    }
    if moved {
        crate::fault::point("land-landed");
    }
    outcomes.sort_by_key(|(index, _)| *index);
    Ok(outcomes)
}

/// A checked entry after a restart: done, due to move, or to merge again (`None`).
fn finish_checked(
    repo: &Git,
    entry: &Entry,
    base: &str,
    merged: &str,
) -> Result<Option<Landed>, LaneError> {
    let tip = repo.commit_of(&format!("refs/heads/{}", entry.landing.base))?;
    let mut receipt = entry.landing.receipt.clone().unwrap_or_default();
    // The base at the merged commit, or past it (something landed on top meanwhile): the move
    // happened; the work is on the base, never to be merged a second time.
    let moved = match tip.as_deref() {
        Some(tip) if tip == merged => true,
        Some(tip) if tip != base => repo.is_ancestor(merged, tip)?,
        _ => false,
    };
    if moved {
        receipt.verdict = "landed".into();
        receipt.merged = merged.to_owned();
        receipt.notes.push("the base had moved before a restart; finished".into());
        if tip.as_deref() == Some(merged) {
            catch_up_checkouts(repo, &entry.landing.base, (base, merged), &mut receipt.notes)?;
        }
        return Ok(Some(Landed::Landed(receipt)));
    }
    if tip.as_deref() == Some(base) {
        receipt.notes.push("finished after a restart".into());
        return move_base(repo, entry, base, merged, receipt).map(Some);
    }
    Ok(None)
}

/// Moves the base ref from `base` to `merged` (compare-and-swap), then brings the clean
/// checkouts of the base branch up to date.
fn move_base(
    repo: &Git,
    entry: &Entry,
    base: &str,
    merged: &str,
    mut receipt: Receipt,
) -> Result<Landed, LaneError> {
    let reason = format!("fleet: land {}", entry.id);
    if !swap_base(repo, &entry.landing.base, (base, merged), &reason, &mut receipt.notes)? {
        receipt.verdict = "base moved".into();
        receipt
            .notes
            .push(format!("{} moved during the landing; merging again", entry.landing.base));
        return Ok(Landed::BaseMoved(receipt));
    }
    receipt.verdict = "landed".into();
    receipt.merged = merged.to_owned();
    Ok(Landed::Landed(receipt))
}

/// Moves `refs/heads/<branch>` from `old` to `new` by compare-and-swap (`reason` in its
/// reflog), then brings the checkouts of the branch that were clean before up to date and
/// leaves the dirty ones alone, a note for each in `notes`. Whether the ref moved (it had
/// moved elsewhere meanwhile when not).
pub fn swap_base(
    repo: &Git,
    branch: &str,
    (old, new): (&str, &str),
    reason: &str,
    notes: &mut Vec<String>,
) -> Result<bool, GitError> {
    let branch_ref = format!("refs/heads/{branch}");
    let clean: Vec<(PathBuf, bool)> = checkouts_of(repo, &branch_ref)?
        .into_iter()
        .map(|dir| {
            let dirty = Git::at(&dir).is_dirty().unwrap_or(true);
            (dir, !dirty)
        })
        .collect();
    let moved = repo.output(&["update-ref", "-m", reason, &branch_ref, new, old])?;
    if !moved.status.success() {
        return Ok(false);
    }
    crate::fault::point("land-ref-moved");
    for (dir, clean) in clean {
        let shown = dir.display();
        if !clean {
            notes.push(format!(
                "checkout {shown} has local changes: not touched (it still holds {} while {branch} is at {}; `git -C {shown} read-tree -m -u {} {}` brings it up to date keeping your changes)",
                short(old),
                short(new),
                short(old),
                short(new)
            ));
            continue;
        }
        match Git::at(&dir).run(&["read-tree", "-m", "-u", old, new]) {
            Ok(_) => notes.push(format!("checkout {shown} brought up to date")),
            Err(error) => notes.push(format!("checkout {shown} not updated: {error}")),
        }
    }
    Ok(true)
}

/// After a crash between the base ref's move and the update of its checkouts: brings up to
/// date each checkout of `branch` that still holds exactly `old` (its index is `old`'s tree
/// and its files match the index — what a clean checkout left half-way looks like); any other
/// is a person's work and is left alone (`read-tree -m -u` keeps untracked files, and refuses
/// to overwrite one).
pub fn catch_up_checkouts(
    repo: &Git,
    branch: &str,
    (old, new): (&str, &str),
    notes: &mut Vec<String>,
) -> Result<(), GitError> {
    for dir in checkouts_of(repo, &format!("refs/heads/{branch}"))? {
        let checkout = Git::at(&dir);
        let at_old = checkout.test(&["diff-index", "--cached", "--quiet", old, "--"])?
            && checkout.test(&["diff", "--quiet"])?;
        if !at_old {
            continue;
        }
        let shown = dir.display();
        match checkout.run(&["read-tree", "-m", "-u", old, new]) {
            Ok(_) => notes.push(format!("checkout {shown} brought up to date after a restart")),
            Err(error) => notes.push(format!("checkout {shown} not updated: {error}")),
        }
    }
    Ok(())
}

/// The abbreviated form of a commit id.
pub fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

/// The checkouts (main and linked worktrees) that have `branch_ref` checked out.
pub fn checkouts_of(repo: &Git, branch_ref: &str) -> Result<Vec<PathBuf>, GitError> {
    let list = repo.run(&["worktree", "list", "--porcelain"])?;
    let mut found = Vec::new();
    let mut current: Option<PathBuf> = None;
    for line in list.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            current = Some(PathBuf::from(path));
        } else if line.strip_prefix("branch ") == Some(branch_ref)
            && let Some(path) = current.take()
        {
            found.push(path);
        }
    }
    Ok(found)
}

/// Makes the commits that put `tree` (the branch at `tip` merged onto `base`) on the base, by
/// `strategy` (see the module doc); the commit the base moves to.
fn commit_onto(
    repo: &Git,
    strategy: Strategy,
    entry: &Entry,
    (base, tip, tree): (&str, &str, &str),
    receipt: &mut Receipt,
) -> Result<String, GitError> {
    let squash =
        |repo: &Git| repo.run(&["commit-tree", tree, "-p", base, "-m", &squash_message(entry)]);
    match strategy {
        Strategy::Squash => squash(repo),
        Strategy::Merge => {
            let message = format!("Merge {}: {}", entry.landing.branch, squash_message(entry));
            repo.run(&["commit-tree", tree, "-p", base, "-p", tip, "-m", &message])
        }
        Strategy::Rebase => match replay(repo, Some(entry.id.as_str()), (base, tip), base)? {
            Some(last) => Ok(last),
            None => {
                receipt.notes.push(format!(
                    "merge.strategy = \"rebase\": the commits of {} do not replay one by one onto {} (one conflicts on its own); landed as one commit",
                    entry.landing.branch, entry.landing.base
                ));
                squash(repo)
            }
        },
    }
}

/// Replays the commits of `from..tip` onto `onto`, oldest first, each keeping its author and
/// message, with a `Fleet-Task: <id>` trailer added when `id` is given (a merge commit as its
/// change against its first parent; a commit that adds nothing is left out). The last commit
/// made, or `None` when one does not apply cleanly.
pub fn replay(
    repo: &Git,
    id: Option<&str>,
    (from, tip): (&str, &str),
    onto: &str,
) -> Result<Option<String>, GitError> {
    let commits =
        repo.run(&["rev-list", "--reverse", "--topo-order", &format!("{from}..{tip}")])?;
    let mut onto = onto.to_owned();
    for commit in commits.lines() {
        let Some(parent) = repo.commit_of(&format!("{commit}^1"))? else { return Ok(None) };
        let merge_base = format!("--merge-base={parent}");
        let args = ["merge-tree", "--write-tree", "--no-messages", &merge_base, &onto, commit];
        let merged = repo.output(&args)?;
        match merged.status.code() {
            Some(0) => {}
            Some(1) => return Ok(None),
            _ => return Err(repo.failed(&args, &merged)),
        }
        let stdout = String::from_utf8_lossy(&merged.stdout);
        let tree = stdout.lines().next().unwrap_or_default().trim().to_owned();
        if repo.run(&["rev-parse", &format!("{onto}^{{tree}}")])? == tree {
            continue;
        }
        let about = repo.run(&["log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", commit])?;
        let mut fields = about.splitn(4, '\0');
        let mut next = || fields.next().unwrap_or_default();
        let (name, email, date, message) = (next(), next(), next(), next());
        let env =
            [("GIT_AUTHOR_NAME", name), ("GIT_AUTHOR_EMAIL", email), ("GIT_AUTHOR_DATE", date)];
        let message = match id {
            Some(id) => with_trailer(message, id),
            None => message.trim_end().to_owned(),
        };
        onto = repo.run_with(&["commit-tree", &tree, "-p", &onto, "-m", &message], &env)?;
    }
    Ok(Some(onto))
}

/// `message` with a `Fleet-Task: <id>` trailer (added to its trailer block if it ends in one).
fn with_trailer(message: &str, id: &str) -> String {
    let message = message.trim_end();
    let trailer = format!("Fleet-Task: {id}");
    if message.lines().any(|line| line.trim() == trailer) {
        return message.to_owned();
    }
    let is_trailer = |line: &str| {
        line.split_once(": ").is_some_and(|(key, _)| {
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let ends_in_trailers =
        message.rsplit_once("\n\n").is_some_and(|(_, last)| last.lines().all(is_trailer));
    if ends_in_trailers {
        format!("{message}\n{trailer}")
    } else {
        format!("{message}\n\n{trailer}")
    }
}

/// The squash commit's message: the title, the close reason, the trailer.
fn squash_message(entry: &Entry) -> String {
    let reason = entry.reason.trim();
    let body = if reason.is_empty() || reason == entry.title.trim() {
        String::new()
    } else {
        format!("{reason}\n\n")
    };
    format!("{}\n\n{body}Fleet-Task: {}", entry.title.trim(), entry.id)
}

/// The lane's scratch worktree, checked out at `merged` with nothing else in it but ignored
/// files (kept, so incremental builds stay warm).
pub fn scratch_checkout(
    settings: &LaneSettings,
    entry: &Entry,
    merged: &str,
) -> Result<PathBuf, GitError> {
    let repo = Git::at(&entry.landing.repo);
    let dir = settings.home.join(worktree::DIR).join(".scratch").join(lane_name(&entry.lane()));
    if dir.join(".git").exists() {
        let scratch = Git::at(&dir);
        if scratch.run(&["checkout", "--quiet", "--detach", "--force", merged]).is_ok() {
            scratch.run(&["clean", "-fdq"])?;
            return Ok(dir);
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = repo.run(&["worktree", "prune"]);
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            repo.error(&["worktree", "add"], format!("creating {}: {e}", parent.display()))
        })?;
    }
    repo.run(&["worktree", "add", "--quiet", "--detach", &dir.display().to_string(), merged])?;
    Ok(dir)
}

/// A directory name for a lane: its branch (made safe) and a hash of the repository path.
pub fn lane_name(lane: &LaneKey) -> String {
    let safe: String = lane
        .base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in lane.repo.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{safe}-{:08x}", hash & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, priority: u8, queued_at: Timestamp) -> Entry {
        Entry {
            id: id.into(),
            title: "t".into(),
            priority,
            landing: Landing::default(),
            queued_at,
            reason: String::new(),
            no_changes: false,
        }
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        Git::at(dir).run(args).unwrap()
    }

    /// A repository with `main` at one commit, and a task branch `fleet/t-1` adding a file.
    fn repo_with_branch(dir: &Path) -> (PathBuf, Entry) {
        let repo = dir.join("repo");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "base\n").unwrap();
        git(&repo, &["add", "README"]);
        git(&repo, &["commit", "-qm", "init"]);
        let base = git(&repo, &["rev-parse", "main"]);
        git(&repo, &["branch", "fleet/t-1"]);
        let tree = dir.join("wt");
        git(&repo, &["worktree", "add", "-q", tree.to_str().unwrap(), "fleet/t-1"]);
        std::fs::write(tree.join("a.txt"), "a\n").unwrap();
        let landing = Landing {
            repo: repo.display().to_string(),
            base: "main".into(),
            base_commit: base,
            worktree: tree.display().to_string(),
            branch: "fleet/t-1".into(),
            subdir: ".".into(),
            ..Landing::default()
        };
        let mut entry = entry("t-1", 2, Timestamp::now());
        entry.landing = landing;
        (repo, entry)
    }

    /// A crash after "checked" was recorded, before or after the base ref moved: the restart
    /// moves the base once, or only finishes; the merged commit lands exactly once.
    #[test]
    fn a_checked_entry_is_finished_once_after_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, mut entry) = repo_with_branch(dir.path());
        let settings = LaneSettings {
            home: dir.path().join("home"),
            checks: vec![],
            timeout: Duration::from_secs(10),
            strategy: Strategy::Squash,
            push: String::new(),
        };
        let before = git(&repo, &["rev-parse", "main"]);
        let mut seen = None;
        let mut crash = |base: &str, merged: &str, _: &Receipt| {
            seen = Some((base.to_owned(), merged.to_owned()));
            Err("killed".to_owned())
        };
        assert!(matches!(
            crate::land::land(&settings, &entry, &mut crash),
            Err(LaneError::Record(_))
        ));
        assert_eq!(git(&repo, &["rev-parse", "main"]), before, "moved before it was recorded");
        let (base, merged) = seen.unwrap();
        entry.landing.state = LandState::Checked {
            reason: String::new(),
            at: Timestamp::now(),
            base,
            merged: merged.clone(),
        };
        let mut unexpected = |_: &str, _: &str, _: &Receipt| Err("merged again".to_owned());
        assert!(matches!(
            crate::land::land(&settings, &entry, &mut unexpected),
            Ok(Landed::Landed(_))
        ));
        assert_eq!(git(&repo, &["rev-parse", "main"]), merged);
        // Killed again before the close was recorded: only the close is due.
        assert!(matches!(
            crate::land::land(&settings, &entry, &mut unexpected),
            Ok(Landed::Landed(_))
        ));
        assert_eq!(git(&repo, &["rev-list", "--count", "main"]), "2");
        // The checkout of main was clean: it holds the landed file.
        assert!(repo.join("a.txt").is_file());
    }

    #[test]
    fn a_trailer_joins_the_trailer_block_or_starts_one() {
        assert_eq!(with_trailer("fix it\n", "t-1"), "fix it\n\nFleet-Task: t-1");
        let signed = "fix it\n\nbody text\n\nSigned-off-by: a <a@b>\n";
        assert_eq!(
            with_trailer(signed, "t-1"),
            "fix it\n\nbody text\n\nSigned-off-by: a <a@b>\nFleet-Task: t-1"
        );
        assert_eq!(with_trailer("x\n\nFleet-Task: t-1", "t-1"), "x\n\nFleet-Task: t-1");
    }

    /// Priority first, then the time of close; an old entry rises past newer urgent ones.
    #[test]
    fn entries_rank_by_priority_then_age_and_old_ones_rise() {
        let now = Timestamp::now();
        let minutes = |m: i64| now - jiff::SignedDuration::from_mins(m);
        let mut entries = [
            entry("late-p1", 1, minutes(1)),
            entry("early-p1", 1, minutes(2)),
            entry("p3", 3, minutes(5)),
        ];
        entries.sort_by_key(|e| rank(e, now));
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["early-p1", "late-p1", "p3"]);
        let starving = entry("old-p3", 3, minutes(3 * 30 + 1));
        assert!(rank(&starving, now) < rank(&entries[0], now));
        // `fleet merge ID --now`: ahead of everything, in the order moved.
        let mut pushed = entry("late-p4", 4, minutes(0));
        pushed.landing.front_since = Some(minutes(1));
        let mut pushed_later = entry("p0", 0, minutes(9));
        pushed_later.landing.front_since = Some(now);
        assert!(rank(&pushed, now) < rank(&pushed_later, now));
        assert!(rank(&pushed_later, now) < rank(&starving, now));
    }
}
