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
use std::process::Command;

use gix::ObjectId;
use serde::Serialize;

use super::identity::OwnRef;
use super::repo::JournalRepo;
use super::{Finally, JournalError, Periodic, REF_PREFIX, commit_pending, ref_name};
use crate::op::Op;
use crate::store::{Merged, Orphaned, Outcome, Overturned, Renamed, Store};
use crate::time::Clock;
use crate::workspace::SYNC_LOCK_FILE;

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

/// The key in a remote's git config section that marks it as added by fleet.
pub const FLEET_MARK: &str = "fleet";

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

fn no_remote(dir: &Path) -> JournalError {
    JournalError::Remote {
        context: format!("syncing the workspace at {}", dir.display()),
        message: "no remote is configured; add one with `fleet remote add origin URL`".to_string(),
    }
}

pub(super) fn staging(remote: &str) -> String {
    format!("{STAGING_PREFIX}{remote}/")
}

/// `git --git-dir <journal repo> ARGS`, never prompting and reading nothing from stdin.
fn git_command(repo: &JournalRepo, args: &[&str]) -> Command {
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
fn git(repo: &JournalRepo, args: &[&str], what: &str) -> Result<String, JournalError> {
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
fn no_answer(repo: &JournalRepo, what: &str, limit: std::time::Duration) -> JournalError {
    JournalError::NoAnswer {
        context: format!("{what} ({})", repo.git_dir().display()),
        secs: limit.as_secs(),
    }
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

/// Runs git with its stderr on this process's (for its progress display), within the same
/// time limit as [`git`].
fn git_on_terminal(repo: &JournalRepo, args: &[&str], what: &str) -> Result<(), JournalError> {
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

/// The ops of `replica`'s batches from `tip` back to (not including) `stop`, oldest first; all
/// of them if `stop` is not on the chain.
pub(super) fn read_since(
    repo: &JournalRepo,
    replica: &str,
    tip: ObjectId,
    stop: Option<ObjectId>,
) -> Result<Vec<Op>, JournalError> {
    let mut batches = Vec::new();
    let mut next = Some(tip);
    while let Some(id) = next {
        if Some(id) == stop {
            break;
        }
        let batch = repo.batch(replica, id)?;
        next = batch.parent;
        batches.push(batch);
    }
    super::read::ops_of_batches(repo, replica, batches.iter().rev())
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
