//! Syncing the queue with other machines through a git remote of the journal repository.
//!
//! A remote is an ordinary git remote of the journal repository (`remote.<name>.url` in its
//! git config; `fleet remote add` writes it with the `git` program). [`sync`]:
//!
//! 1. commits this replica's pending ops ([`super::commit_pending`]);
//! 2. fetches every `refs/fleet/journal/*` of the remote into a staging namespace,
//!    `refs/fleet/remotes/<remote>/*`, with the `git` program (`git fetch --prune`). gix can
//!    fetch, but only with its network client features (a transport stack and many more
//!    crates) — the journal keeps gix to objects and refs, and the `git` program is needed
//!    anyway to push (gix has no push);
//! 3. moves each other replica's local ref forward to the fetched commit, once the new
//!    batches read as fleet batches — never this replica's own ref, which only this replica
//!    advances; a fetched ref that is not a fleet batch, or that rewrote a replica's history,
//!    is reported by name and left out;
//! 4. reads the ops of every other replica's ref since the commit last merged (kept per
//!    replica in the store's meta, [`Store::sync_marks`]) and merges them into the store
//!    ([`Store::merge`]: the total-order state, with the conflict rules of `store::merge`);
//! 5. pushes this replica's ref (`git push --porcelain`); a ref per replica never conflicts.
//!
//! [`SyncOptions`] can leave out steps 2–4 (`bd sync --no-pull`, `bd dolt push`) or step 5
//! (`--no-push`, `bd dolt pull`); [`plan`] says what a sync would do without the network. A
//! project's own remotes are used as they are: only remotes fleet added (marked in the
//! repository's config) are ever removed by it.
//!
//! Every step is safe to cut short: the ops of this replica are in the store and committed to
//! the local journal before anything touches the network, the merge is one store transaction
//! recording how far it read, and the next sync takes up whatever did not happen.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gix::ObjectId;
use serde::Serialize;

use super::identity::OwnRef;
use super::program::{git, git_on_terminal};
use super::read::read_since;
use super::remotes::{Remote, no_remote, pick, pick_remote, staging};
use super::repo::JournalRepo;
use super::{Finally, JournalError, Periodic, REF_PREFIX, commit_pending, ref_name};
use crate::op::Op;
use crate::store::{Merged, Orphaned, Outcome, Overturned, Renamed, Store};
use crate::time::Clock;
use crate::workspace::SYNC_LOCK_FILE;

/// One op of the remote that the rules refused.
#[derive(Debug, Clone, Serialize)]
pub struct Rejection {
    pub op: String,
    pub kind: &'static str,
    pub issue: String,
    pub replica: String,
    pub reason: String,
}

/// What [`sync`] did.
#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    pub remote: String,
    pub url: String,
    /// The journal repository's git directory.
    pub repo: String,
    /// Ops of this replica committed to the local journal by this sync.
    pub committed: usize,
    /// Ops of other replicas read that this store had not seen.
    pub received: usize,
    pub applied: usize,
    /// Received ops that were valid but changed nothing.
    pub unchanged: usize,
    pub rejected: Vec<Rejection>,
    /// Ops of this replica pushed to the remote.
    pub sent: usize,
    /// Whether the ops arrived out of order, so the state was made again from every op.
    pub resequenced: bool,
    /// Conflicts the rules decided: refused ops, ops whose effect changed, closes that kept
    /// a concurrent status change from reopening an issue.
    pub conflicts_resolved: usize,
    /// Issues this replica claimed that went to an earlier claim made elsewhere.
    pub lost_claims: Vec<String>,
    pub overturned: Vec<Overturned>,
    pub closes_kept: Vec<String>,
    /// Issues made here or elsewhere whose id an issue made on another machine had first, with
    /// the id each got instead.
    pub renamed: Vec<Renamed>,
    /// Edges of new issues left out because their target was deleted on another machine.
    pub orphaned: Vec<Orphaned>,
    /// Fetched refs left out, each with why (a foreign or corrupt ref, a rewritten history).
    pub bad_refs: Vec<String>,
    /// What the remote's journal ref of this replica said: in step, a lost history caught up
    /// with, or another copy of the store using its id (then this store took a new one).
    pub own_ref: OwnRef,
    /// Journal refs of other replicas the remote lacked or was behind on, pushed from here
    /// (a remote lost and made again is restored by any machine that syncs with it).
    pub restored_refs: Vec<String>,
    /// Whether the remote's journals were fetched and merged, and this replica's pushed
    /// (see [`SyncOptions`]).
    pub pulled: bool,
    pub pushed: bool,
}

/// Syncs the workspace of `store` with `remote` (default: `origin` or the only remote); see
/// the module docs. Fetched refs that are not fleet journals are left out and listed in
/// [`SyncReport::bad_refs`]; the caller reports them as an error after the rest is done.
pub fn sync(store: &Store, remote: Option<&str>) -> Result<SyncReport, JournalError> {
    sync_showing(store, remote, FetchProgress::Quiet)
}

/// Whether `git fetch` shows its progress (on the terminal of a person running `fleet sync`)
/// or stays quiet (scripts, `--json`, the supervisor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchProgress {
    Quiet,
    /// git draws its progress on the inherited stderr; its error text is then on the terminal
    /// too, and the error returned says so.
    Terminal,
}

/// What a sync exchanges with the remote, and how its fetch shows progress: by default
/// everything (pull and push); `bd sync --no-pull|--no-push` and `bd dolt push|pull` do one
/// half. The pending ops are committed to the local journal either way.
#[derive(Debug, Clone, Copy)]
pub struct SyncOptions {
    pub progress: FetchProgress,
    /// Fetch the remote's journals and merge the new ops.
    pub pull: bool,
    /// Push this replica's journal.
    pub push: bool,
}

impl SyncOptions {
    /// Both ways, with the fetch's progress shown as `progress` says.
    pub fn both(progress: FetchProgress) -> SyncOptions {
        SyncOptions { progress, pull: true, push: true }
    }
}

/// [`sync`], with the fetch's progress shown or not.
pub fn sync_showing(
    store: &Store,
    remote: Option<&str>,
    progress: FetchProgress,
) -> Result<SyncReport, JournalError> {
    sync_with(store, remote, SyncOptions::both(progress))
}

/// [`sync`], exchanging what `options` say.
pub fn sync_with(
    store: &Store,
    remote: Option<&str>,
    options: SyncOptions,
) -> Result<SyncReport, JournalError> {
    let _one_at_a_time = SyncLock::take(store.dir())?;
    let committed = commit_pending(store)?;
    let repo = JournalRepo::find_or_create(store.dir())?;
    ignore_own_files(store.dir(), &repo);
    let remote = pick(&repo, remote)?.ok_or_else(|| no_remote(store.dir()))?;
    let mut bad_refs = Vec::new();
    let mut own_ref = OwnRef::InStep;
    let merged = if options.pull {
        fetch(&repo, &remote, options.progress)?;
        own_ref = match super::identity::reconcile(&repo, &remote, store) {
            Ok(own_ref) => own_ref,
            // The remote's copy of this replica's ref is not a fleet journal of it: named, left
            // as it is (the push of this replica's ref is then left out, and says so).
            Err(error @ JournalError::Format { .. }) => {
                let name = ref_name(&store.replica());
                bad_refs.push(format!("{name} on remote {}: {error}", remote.name));
                OwnRef::InStep
            }
            Err(error) => return Err(error),
        };
        let fetched = advance_foreign_refs(&repo, &remote, &store.replica(), &mut bad_refs)?;
        let (ops, marks) = unmerged_ops(&repo, store, fetched, &mut bad_refs)?;
        // Nothing new fetched: no write transaction (the supervisor syncs on an idle queue too).
        if !ops.is_empty() || !marks.is_empty() {
            store.merge(Clock::System, ops, &marks)?
        } else if matches!(own_ref, OwnRef::NewReplica { .. }) {
            // Re-stamped ops have new order keys: the state is made again in the total order.
            store.resequence(Clock::System)?
        } else {
            Merged::default()
        }
    } else {
        Merged::default()
    };
    if matches!(own_ref, OwnRef::NewReplica { .. }) {
        commit_pending(store)?;
    }
    let pushed = if options.push {
        push(&repo, &remote, &store.replica())?
    } else {
        Pushed { own: 0, restored: Vec::new() }
    };
    let mut report = report(&remote, &repo, merged, pushed.own, bad_refs);
    report.committed = committed.ops;
    report.own_ref = own_ref;
    report.restored_refs = pushed.restored;
    report.pulled = options.pull;
    report.pushed = options.push;
    Ok(report)
}

/// What a sync would do, found without touching the network or writing anything
/// (`bd sync --dry-run`).
#[derive(Debug, Clone, Serialize)]
pub struct SyncPlan {
    pub remote: String,
    pub url: String,
    /// This replica's ops a sync would commit to the local journal first.
    pub pending: usize,
    /// This replica's ops the remote lacks, as far as the last sync saw it (the pending ones
    /// included).
    pub to_send: usize,
}

/// What a sync with `remote` (default: origin or the only remote) would do; see [`SyncPlan`].
pub fn plan(store: &Store, remote: Option<&str>) -> Result<SyncPlan, JournalError> {
    let repo = JournalRepo::find(store.dir())?.ok_or_else(|| no_remote(store.dir()))?;
    let remote = pick(&repo, remote)?.ok_or_else(|| no_remote(store.dir()))?;
    let pending = super::pending_ops(store)?.len();
    let me = &store.replica();
    let unsent = match repo.ref_target(&ref_name(me))? {
        Some(tip) => {
            let theirs = repo.ref_target(&format!("{}{me}", staging(&remote.name)))?;
            count_ops(&repo, me, tip, theirs)?
        }
        None => 0,
    };
    Ok(SyncPlan { remote: remote.name, url: remote.url, pending, to_send: pending + unsent })
}

/// Makes sure the workspace's `.gitignore` (a file beads wrote lacks fleet's lines) ignores
/// what a sync leaves in `.beads/`: the sync lock, and the journal's own repository when the
/// workspace has one. Checked on every sync, under its lock — one small read next to a fetch —
/// so a workspace whose `git status` already lists them is mended too. Best effort: a
/// `.gitignore` that cannot be written is logged, never a failed sync.
fn ignore_own_files(workspace: &Path, repo: &JournalRepo) {
    let journal = format!("{}/", crate::workspace::JOURNAL_DIR);
    let mut entries = vec![SYNC_LOCK_FILE];
    if repo.kind == super::RepoKind::Own {
        entries.push(&journal);
    }
    crate::workspace::gitignore::ignore_or_warn(workspace, &entries);
}

/// How long a sync waits for one already running on the same workspace (a slow remote).
const SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// Syncs of one workspace run one after the other: two at once (a person's `fleet sync` and
/// the supervisor's periodic one, or two shells) would push the same ref from two processes
/// and one would fail on git's ref lock. The second waits for the first, then finds little or
/// nothing left to do. The lock is the kernel's (`flock`), so a killed sync releases it.
struct SyncLock(#[allow(dead_code)] std::fs::File);

impl SyncLock {
    fn take(workspace: &Path) -> Result<SyncLock, JournalError> {
        let path = workspace.join(SYNC_LOCK_FILE);
        let taken = crate::fsutil::lock_exclusive_within(&path, SYNC_WAIT)
            .map_err(JournalError::io(format!("locking {}", path.display())))?;
        let file = taken.ok_or_else(|| {
            JournalError::SyncBusy(workspace.to_path_buf(), SYNC_WAIT.as_secs(), path.clone())
        })?;
        Ok(SyncLock(file))
    }
}

/// `git fetch --prune <remote> +refs/fleet/journal/*:refs/fleet/remotes/<remote>/*`.
pub(super) fn fetch(
    repo: &JournalRepo,
    remote: &Remote,
    progress: FetchProgress,
) -> Result<(), JournalError> {
    let refspec = format!("+{REF_PREFIX}*:{}*", staging(&remote.name));
    let what = format!("fetching the journal from remote {} ({})", remote.name, remote.url);
    let mut args = vec!["fetch", "--no-tags", "--prune", "--no-write-fetch-head"];
    args.push(match progress {
        FetchProgress::Quiet => "--quiet",
        FetchProgress::Terminal => "--progress",
    });
    args.extend([remote.name.as_str(), refspec.as_str()]);
    match progress {
        FetchProgress::Quiet => git(repo, &args, &what).map(drop),
        FetchProgress::Terminal => git_on_terminal(repo, &args, &what),
    }
}

/// Ops of a replica's new batches, read while checking a fetched ref.
struct Fetched {
    tip: ObjectId,
    /// The commit the reading stopped at (the local ref before the fetch).
    base: Option<ObjectId>,
    ops: Vec<Op>,
}

/// Moves every other replica's local ref forward to the commit fetched from `remote`, once
/// the new batches read as that replica's fleet batches. Returns what was read, by replica.
fn advance_foreign_refs(
    repo: &JournalRepo,
    remote: &Remote,
    me: &str,
    bad_refs: &mut Vec<String>,
) -> Result<BTreeMap<String, Fetched>, JournalError> {
    let mut fetched = BTreeMap::new();
    for (replica, staged) in repo.refs_under(&staging(&remote.name))? {
        if replica == me {
            continue;
        }
        let name = ref_name(&replica);
        let local = repo.ref_target(&name)?;
        if local == Some(staged) || local.is_some_and(|l| repo.is_ancestor(staged, l)) {
            continue;
        }
        if local.is_some_and(|l| !repo.is_ancestor(l, staged)) {
            bad_refs.push(format!(
                "{name} on remote {}: its history does not continue this repository's (the replica's journal was rewritten); left as it is here",
                remote.name
            ));
            continue;
        }
        match read_since(repo, &replica, staged, local) {
            Ok(ops) => {
                repo.set_ref(&name, staged, local)?;
                fetched.insert(replica, Fetched { tip: staged, base: local, ops });
            }
            Err(error) => bad_refs.push(format!("{name} on remote {}: {error}", remote.name)),
        }
    }
    Ok(fetched)
}

/// Per replica, the commit its ops are merged through (hex).
type Marks = Vec<(String, String)>;

/// Every other replica's ops since the commit the store last merged, and the new marks.
fn unmerged_ops(
    repo: &JournalRepo,
    store: &Store,
    mut fetched: BTreeMap<String, Fetched>,
    bad_refs: &mut Vec<String>,
) -> Result<(Vec<Op>, Marks), JournalError> {
    let marks = store.sync_marks()?;
    let mut ops = Vec::new();
    let mut new_marks = Vec::new();
    let bad: BTreeSet<String> = bad_refs.iter().cloned().collect();
    for replica in repo.replicas()? {
        if replica == store.replica() {
            continue;
        }
        let Some(tip) = repo.ref_target(&ref_name(&replica))? else { continue };
        let mark = marks.get(&replica).and_then(|m| ObjectId::from_hex(m.as_bytes()).ok());
        if mark == Some(tip) {
            continue;
        }
        let read = match fetched.remove(&replica) {
            Some(f) if f.tip == tip && f.base == mark => Ok(f.ops),
            _ => read_since(repo, &replica, tip, mark),
        };
        match read {
            Ok(read) => {
                ops.extend(read);
                new_marks.push((replica, tip.to_string()));
            }
            Err(error) if !bad.iter().any(|b| b.starts_with(&ref_name(&replica))) => {
                bad_refs.push(format!("{}: {error}", ref_name(&replica)));
            }
            Err(_) => {}
        }
    }
    Ok((ops, new_marks))
}

/// What [`push`] sent.
struct Pushed {
    /// This replica's ops.
    own: usize,
    /// The other replicas' refs pushed.
    restored: Vec<String>,
}

/// Pushes every journal ref the remote lacks or is behind on: this replica's, and any other
/// replica's this repository has further than the remote (fast-forward only, so a ref that
/// its replica moved meanwhile is left to it). A rejected push of this replica's own ref means
/// another copy of the store pushed as this replica since the fetch: the error says so, and
/// the next sync gives this store a new replica id.
fn push(repo: &JournalRepo, remote: &Remote, me: &str) -> Result<Pushed, JournalError> {
    let mut refspecs = Vec::new();
    let mut own = 0;
    let mut restored = Vec::new();
    for (replica, tip) in repo.refs_under(REF_PREFIX)? {
        let staged_name = format!("{}{replica}", staging(&remote.name));
        let theirs = repo.ref_target(&staged_name)?;
        if theirs == Some(tip) || theirs.is_some_and(|t| !repo.is_ancestor(t, tip)) {
            continue;
        }
        if replica == me {
            own = count_ops(repo, me, tip, theirs)?;
        } else {
            restored.push(replica.clone());
        }
        let name = ref_name(&replica);
        refspecs.push((replica, tip, theirs, staged_name, format!("{name}:{name}")));
    }
    if refspecs.is_empty() {
        return Ok(Pushed { own: 0, restored });
    }
    let mut args = vec!["push", "--porcelain", "--quiet", remote.name.as_str()];
    args.extend(refspecs.iter().map(|(.., spec)| spec.as_str()));
    let what = format!("pushing the journal to remote {} ({})", remote.name, remote.url);
    let rejected = match git(repo, &args, &what) {
        Ok(stdout) => rejected_refs(&stdout),
        // A push the remote turned down (a hook, a rule) is its own failure, with its reason.
        Err(error @ JournalError::Git { .. }) if turned_down(&error, &ref_name(me)) => {
            return Err(error);
        }
        Err(JournalError::Git { message, .. }) if !rejected_refs(&message).is_empty() => {
            rejected_refs(&message)
        }
        Err(error) => return Err(error),
    };
    for (replica, tip, theirs, staged_name, _) in &refspecs {
        if rejected.contains(&ref_name(replica)) {
            continue;
        }
        // What the remote now has, so that the next sync compares against it.
        repo.set_ref(staged_name, *tip, *theirs)?;
    }
    if rejected.contains(&ref_name(me)) {
        // Only another copy of this store can move this replica's ref (see `super::identity`).
        let name = ref_name(me);
        return Err(JournalError::Git {
            context: format!("pushing {name} to remote {} ({})", remote.name, remote.url),
            message: format!(
                "! {name}:{name} [rejected] (the remote's copy moved since the fetch)"
            ),
        });
    }
    restored.retain(|replica| !rejected.contains(&ref_name(replica)));
    Ok(Pushed { own, restored })
}

/// Whether the push `error` failed because the remote turned down `reference` (a hook, a
/// protected ref), not because the ref moved there meanwhile.
fn turned_down(error: &JournalError, reference: &str) -> bool {
    let JournalError::Git { message, .. } = error else { return false };
    message.lines().any(|line| {
        line.starts_with('!') && line.contains(reference) && line.contains("[remote rejected]")
    })
}

/// The refs `git push --porcelain` output says were rejected.
fn rejected_refs(porcelain: &str) -> Vec<String> {
    porcelain
        .lines()
        .filter(|line| line.starts_with('!'))
        .filter_map(|line| line.split('\t').nth(1))
        .filter_map(|refs| refs.split(':').nth(1))
        .map(str::to_string)
        .collect()
}

/// The number of ops in `replica`'s batches from `tip` back to `stop`.
fn count_ops(
    repo: &JournalRepo,
    replica: &str,
    tip: ObjectId,
    stop: Option<ObjectId>,
) -> Result<usize, JournalError> {
    let mut count = 0;
    let mut next = Some(tip);
    while let Some(id) = next {
        if Some(id) == stop {
            break;
        }
        let batch = repo.batch(replica, id)?;
        count += batch.info.count;
        next = batch.parent;
    }
    Ok(count)
}

fn report(
    remote: &Remote,
    repo: &JournalRepo,
    merged: Merged,
    sent: usize,
    bad_refs: Vec<String>,
) -> SyncReport {
    let mut rejected = Vec::new();
    let (mut applied, mut unchanged) = (0, 0);
    for replayed in &merged.replayed {
        match &replayed.outcome {
            Outcome::Applied => applied += 1,
            Outcome::Unchanged | Outcome::Duplicate => unchanged += 1,
            Outcome::Rejected(error) => rejected.push(Rejection {
                op: replayed.key.id.to_string(),
                kind: replayed.kind,
                issue: replayed.subject.clone(),
                replica: replayed.key.replica.clone(),
                reason: error.to_string(),
            }),
        }
    }
    let closes_kept = new_closes_kept(&merged);
    let conflicts_resolved = rejected.len()
        + merged.overturned.len()
        + closes_kept.len()
        + merged.renamed.len()
        + merged.orphaned.len();
    SyncReport {
        remote: remote.name.clone(),
        url: remote.url.clone(),
        repo: repo.git_dir().display().to_string(),
        committed: 0,
        received: merged.replayed.len(),
        applied,
        unchanged,
        rejected,
        sent,
        resequenced: merged.resequenced,
        conflicts_resolved,
        lost_claims: merged.lost_claims,
        overturned: merged.overturned,
        closes_kept,
        renamed: merged.renamed,
        orphaned: merged.orphaned,
        bad_refs,
        own_ref: OwnRef::InStep,
        restored_refs: Vec::new(),
        pulled: true,
        pushed: true,
    }
}

/// The kept closes this merge brought: those where the close or the status change it kept out
/// is among the ops received. A merge that re-applies the whole history (ops arriving out of
/// order) meets every earlier kept close again; those were reported by the sync that brought
/// them, and are not reported again.
fn new_closes_kept(merged: &Merged) -> Vec<String> {
    let received: BTreeSet<&str> = merged
        .replayed
        .iter()
        .filter(|op| matches!(op.kind, "close" | "update"))
        .map(|op| op.subject.as_str())
        .collect();
    let mut kept: Vec<String> =
        merged.closes_kept.iter().filter(|id| received.contains(id.as_str())).cloned().collect();
    kept.sort();
    kept.dedup();
    kept
}

/// Starts syncing `store` with its default remote every `every` (on a blocking thread; a
/// workspace without a remote is skipped, failures are logged, never fatal). `None` when
/// `every` is zero.
pub fn spawn_periodic_sync(
    store: std::sync::Arc<Store>,
    every: std::time::Duration,
    after: AfterSync,
) -> Option<Periodic> {
    if every.is_zero() {
        return None;
    }
    let work = move || sync_in_background(std::sync::Arc::clone(&store), after);
    Some(Periodic::start(every, Finally::JustStop, work))
}

/// What the caller of [`spawn_periodic_sync`] does after each sync that completed (the export
/// `sync.export_jsonl` asks for, which `fleet sync` does too).
pub type AfterSync = fn(&Store);

async fn sync_in_background(store: std::sync::Arc<Store>, after: AfterSync) {
    let result = tokio::task::spawn_blocking(move || {
        if pick_remote(store.dir(), None)?.is_none() {
            return Ok(None);
        }
        let report = sync(&store, None)?;
        after(&store);
        Ok::<_, JournalError>(Some(report))
    })
    .await;
    match result {
        Ok(Ok(Some(report))) => log_report(&report),
        Ok(Ok(None)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "syncing with the git remote failed"),
        Err(error) => tracing::warn!(%error, "the sync task failed"),
    }
}

fn log_report(report: &SyncReport) {
    if report.received > 0 || report.sent > 0 {
        tracing::info!(
            remote = %report.remote,
            received = report.received,
            applied = report.applied,
            rejected = report.rejected.len(),
            sent = report.sent,
            "synced"
        );
    }
    if !report.lost_claims.is_empty() {
        tracing::warn!(ids = ?report.lost_claims, "claims lost to earlier claims made elsewhere");
    }
    for bad in &report.bad_refs {
        tracing::warn!(%bad, "a fetched journal ref was left out");
    }
}
