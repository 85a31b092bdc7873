//! Claims confirmed on a git remote (`claim_mode = "remote"`): one ref on the remote,
//! advanced only by compare-and-swap pushes, says which replica holds which issue.
//!
//! # Layout
//!
//! [`CLAIMS_REF`] (`refs/fleet/claims`) on the remote holds the whole queue's claims. Its
//! commit's tree has one blob per held issue, `claims/<issue id>`, with the [`Holder`] as JSON
//! (`{"replica", "actor", "claimed_at", "op"}`); the parent is the previous claims commit, so
//! the ref's history is the log of every claim and release. The local repository keeps the
//! last state it saw in [`tracking_ref`] (`refs/fleet/remote-claims/<remote>`).
//!
//! # Compare-and-swap
//!
//! A change (a claim, or dropping released entries) is a new commit on top of the state it
//! was decided on, pushed with `git push --force-with-lease=refs/fleet/claims:<that state>`
//! (empty: the ref must not exist yet). The receiving side moves the ref only if it is still
//! at that state, so of two machines deciding on the same state exactly one push lands; the
//! other fetches and decides again, after a random wait that grows with each loss, at most
//! [`MAX_ATTEMPTS`] times. A refusal ("held by another replica") is only ever given on a state
//! just fetched, never on the possibly stale tracking ref.
//!
//! # Releasing
//!
//! An entry is dropped by the replica that holds it once the issue is free there (open, or
//! gone): [`ClaimsRemote::release`] does so for every such entry, and every
//! [`ClaimsRemote::confirm`] drops them in the same commit as the new claim. Closed issues
//! keep their entry, so a machine that has not synced the close yet cannot run them again.
//! Whether an issue is free is read from the store *after* the claims state is read: every
//! entry was pushed after its local claim was committed, so that read sees the claim.
//!
//! # The clock
//!
//! Every claims commit carries a `clock` blob: the greatest hybrid-logical-clock stamp
//! (`crate::op::Hlc`) of the stores that wrote the ref so far. A replica writes its store's
//! clock, read after deciding what to drop, so the stamp is past every op that freed a dropped
//! entry (a release, a reopen); a claimer receives the clock of the state its claim was
//! confirmed on before it stamps its claim op. So a claim confirmed after another machine let
//! the issue go is ordered after that machine's release in every store, whatever the two
//! machines' wall clocks say, and the release can never end it.
//!
//! No worktree is used: objects are written with gix into the journal repository, and fetch
//! and push run the `git` program (gix has no push), with the remote's name, so the user's git
//! configuration (URL rewrites, credentials, ssh) applies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use gix::ObjectId;
use gix::refs::transaction::PreviousValue;
use serde::{Deserialize, Serialize};

use super::{EMAIL, JournalError, JournalRepo};
use crate::op::Hlc;

/// The store setting choosing how claims are decided: `local` (default) or `remote`.
pub const MODE_KEY: &str = "claim_mode";
/// The store setting naming the git remote of remote claims.
pub const REMOTE_KEY: &str = "claim_remote";
/// The claims ref on the remote.
pub const CLAIMS_REF: &str = "refs/fleet/claims";

/// How claims are decided (the store setting [`MODE_KEY`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMode {
    /// In this store alone: fast; two machines syncing one queue may both start a task.
    Local,
    /// Confirmed on a git remote: no two machines ever start the same task.
    Remote,
}

impl ClaimMode {
    /// The mode `store` is set to.
    pub fn of(store: &crate::store::Store) -> Result<ClaimMode, RemoteClaimError> {
        match store.read()?.config(MODE_KEY)?.as_deref().map(str::trim) {
            None | Some("" | "local") => Ok(ClaimMode::Local),
            Some("remote") => Ok(ClaimMode::Remote),
            Some(other) => Err(RemoteClaimError::BadMode(other.to_string())),
        }
    }
}
/// Where the last state seen of a remote's claims ref is kept locally.
pub const TRACKING_PREFIX: &str = "refs/fleet/remote-claims/";
/// The directory of the claims tree holding one blob per held issue.
pub const CLAIMS_DIR: &str = "claims";
/// The blob of the claims tree holding the clock (module docs, "The clock").
pub const CLOCK_FILE: &str = "clock";
/// How many times a change is decided and pushed before giving up.
pub const MAX_ATTEMPTS: u32 = 64;
/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// The local ref keeping the last state seen of `remote`'s claims ref.
pub fn tracking_ref(remote: &str) -> String {
    format!("{TRACKING_PREFIX}{remote}")
}

/// Who holds an issue: the blob `claims/<id>` on the claims ref.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The replica (store) that claimed it.
    pub replica: String,
    /// The actor that claimed it there.
    pub actor: String,
    pub claimed_at: jiff::Timestamp,
    /// The id of the local Claim op (a fresh id when the issue was already held locally).
    pub op: String,
}

/// A claim the remote accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmed {
    /// The claims commit that holds it.
    pub commit: Option<ObjectId>,
    /// Pushes tried (1 when nobody raced).
    pub attempts: u32,
    /// The clock of the claims commit: the claim op is stamped after it.
    pub clock: Hlc,
}

/// Errors of remote claims, each naming the remote and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteClaimError {
    /// The issue is held by another replica.
    #[error("{id} is claimed elsewhere by {} (replica {}, since {}) on remote {remote}", holder.actor, holder.replica, holder.claimed_at)]
    ClaimedElsewhere { id: String, holder: Box<Holder>, remote: String },
    #[error(
        "claim_mode is remote but the journal repository {} has no git remote; add one with `git --git-dir {} remote add origin URL`, or set claim_remote",
        repo.display(), repo.display()
    )]
    NoRemote { repo: PathBuf },
    #[error(
        "claim_mode is remote but the journal repository {} has several remotes ({}) and none is named origin; set claim_remote to one of them",
        repo.display(), names.join(", ")
    )]
    WhichRemote { repo: PathBuf, names: Vec<String> },
    #[error(
        "claim_remote is {name:?} but the journal repository {} has no remote of that name; add it with `git --git-dir {} remote add {name} URL`",
        repo.display(), repo.display()
    )]
    UnknownRemote { name: String, repo: PathBuf },
    #[error(
        "remote {remote} ({url}) could not be reached for {CLAIMS_REF}: {detail}; check the URL and your access, or set claim_mode to local"
    )]
    Unreachable { remote: String, url: String, detail: String },
    #[error("remote {remote} ({url}) refused the update of {CLAIMS_REF}: {reason}")]
    Rejected { remote: String, url: String, reason: String },
    #[error(
        "{CLAIMS_REF} on remote {remote} kept changing: {attempts} attempts lost to other claimers; try again"
    )]
    Contended { remote: String, attempts: u32 },
    #[error(
        "{CLAIMS_REF} of remote {remote}: commit {commit} is not a fleet claims commit: {reason}"
    )]
    Format { remote: String, commit: String, reason: String },
    #[error("running git for remote {remote}: {source}; is git installed and on PATH?")]
    Spawn { remote: String, source: std::io::Error },
    #[error(
        "claim_mode is {0:?}; it must be \"local\" or \"remote\" (`fleet config set claim_mode=local`)"
    )]
    BadMode(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The state of the claims ref: its commit, the blob of each held issue, and its clock.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub tip: Option<ObjectId>,
    pub entries: BTreeMap<String, ObjectId>,
    /// The clock the commit carries ([`Hlc::ZERO`] for commits of older fleets).
    pub clock: Hlc,
    /// Fetched just now (not the tracking ref's possibly older state).
    pub fresh: bool,
}

/// What a decision on a [`Snapshot`] asks for.
enum Step<T> {
    /// Nothing to push.
    Done(T),
    /// Decide again on a state fetched now.
    Refetch,
    /// Push a commit whose claims are `entries`, with `clock`.
    Write { entries: BTreeMap<String, ObjectId>, clock: Hlc, message: String, value: T },
}

/// How a push ended.
enum Pushed {
    Landed,
    /// The ref was not at the expected state any more.
    Lost,
}

/// What a replica's store says to the claims ref: which issues are free there (open, or gone,
/// and no claim of them under way): the subset of the given ids, whose entries of this replica
/// are dropped; and the store's clock now, written into the commit.
pub trait Here {
    fn free(&self, ids: &[&str]) -> Vec<String>;
    fn clock(&self) -> Hlc;
}

/// A git remote of the journal repository, used for claims.
pub struct ClaimsRemote {
    repo: JournalRepo,
    name: String,
    url: String,
}

impl ClaimsRemote {
    /// The claims remote of `store` if it is set to remote claims ([`ClaimMode::Remote`]):
    /// [`REMOTE_KEY`] if set, else `origin`, else the only remote.
    pub fn of_store(store: &crate::store::Store) -> Result<Option<ClaimsRemote>, RemoteClaimError> {
        if ClaimMode::of(store)? == ClaimMode::Local {
            return Ok(None);
        }
        let configured = store.read()?.config(REMOTE_KEY)?;
        Ok(Some(ClaimsRemote::open(store.dir(), configured.as_deref())?))
    }

    /// The remote of the journal repository of workspace `dir`: the one named `configured`,
    /// else `origin`, else the only one.
    pub fn open(dir: &Path, configured: Option<&str>) -> Result<ClaimsRemote, RemoteClaimError> {
        let repo = JournalRepo::find_or_create(dir)?;
        let name = pick_remote(&repo, configured)?;
        let key = format!("remote.{name}.url");
        let url = repo.repo.config_snapshot().string(key.as_str()).map(|u| u.to_string());
        let url = url.unwrap_or_default();
        Ok(ClaimsRemote { repo, name, url })
    }

    /// The remote's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The remote's URL (for messages).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The journal repository's git directory.
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The state last seen (the tracking ref), without asking the remote.
    pub fn known(&self) -> Result<Snapshot, RemoteClaimError> {
        let tip = self.tracking_tip()?;
        self.snapshot(tip, false)
    }

    /// The state on the remote now.
    pub fn fetched(&self) -> Result<Snapshot, RemoteClaimError> {
        let tip = self.fetch()?;
        self.snapshot(tip, true)
    }

    /// Reads the holder of one entry.
    pub fn holder(
        &self,
        snapshot: &Snapshot,
        id: &str,
    ) -> Result<Option<Holder>, RemoteClaimError> {
        let Some(blob) = snapshot.entries.get(id) else { return Ok(None) };
        let bad = |reason: String| self.format_error(snapshot.tip, reason);
        let data = self.repo.repo.find_blob(*blob).map_err(|e| bad(e.to_string()))?;
        let holder = serde_json::from_slice(&data.data)
            .map_err(|e| bad(format!("{CLAIMS_DIR}/{id}: {e}")))?;
        Ok(Some(holder))
    }

    /// The ids `snapshot` says are held by replicas other than `replica`.
    pub fn held_elsewhere(
        &self,
        snapshot: &Snapshot,
        replica: &str,
    ) -> Result<Vec<String>, RemoteClaimError> {
        let mut out = Vec::new();
        for id in snapshot.entries.keys() {
            if self.holder(snapshot, id)?.is_some_and(|h| h.replica != replica) {
                out.push(id.clone());
            }
        }
        Ok(out)
    }

    /// Records `holder` as the holder of `id` on the remote, unless another replica holds it
    /// ([`RemoteClaimError::ClaimedElsewhere`]). Entries of `holder.replica` for issues
    /// `free_here` says are free are dropped in the same commit.
    pub fn confirm(
        &self,
        id: &str,
        holder: &Holder,
        here: &dyn Here,
    ) -> Result<Confirmed, RemoteClaimError> {
        check_id(id, &self.name)?;
        let blob = self.write_blob(&serde_json::to_vec(holder).unwrap_or_default())?;
        let mut attempts = 0;
        let mut clock = Hlc::ZERO;
        let commit = self.transact(false, |snapshot| {
            attempts += 1;
            if let Some(current) = self.holder(snapshot, id)?
                && current.replica != holder.replica
            {
                if !snapshot.fresh {
                    return Ok(Step::Refetch);
                }
                return Err(RemoteClaimError::ClaimedElsewhere {
                    id: id.to_string(),
                    holder: Box::new(current),
                    remote: self.name.clone(),
                });
            }
            let mut entries = self.without_released(snapshot, &holder.replica, here)?;
            entries.insert(id.to_string(), blob);
            clock = snapshot.clock.max(here.clock());
            let message = format!(
                "fleet claims: {id} claimed by {} (replica {})\n",
                holder.actor, holder.replica
            );
            Ok(Step::Write { entries, clock, message, value: () })
        })?;
        let ((), commit) = commit;
        Ok(Confirmed { commit, attempts, clock })
    }

    /// Drops every entry of `replica` for an issue `free_here` says is free. Returns the ids
    /// dropped (none: nothing was pushed).
    pub fn release(&self, replica: &str, here: &dyn Here) -> Result<Vec<String>, RemoteClaimError> {
        let (dropped, _) = self.transact(true, |snapshot| {
            let entries = self.without_released(snapshot, replica, here)?;
            let dropped: Vec<String> =
                snapshot.entries.keys().filter(|id| !entries.contains_key(*id)).cloned().collect();
            if dropped.is_empty() {
                return Ok(Step::Done(dropped));
            }
            let message =
                format!("fleet claims: released {} (replica {replica})\n", dropped.join(" "));
            let clock = snapshot.clock.max(here.clock());
            Ok(Step::Write { entries, clock, message, value: dropped })
        })?;
        Ok(dropped)
    }

    /// Names `new` as the holder of every entry of `old` whose claim op is among `ops`: the
    /// claims a store made as `old` before it took the replica id `new` (`super::identity`).
    /// Returns the ids of the entries moved.
    pub fn reassign(
        &self,
        old: &str,
        new: &str,
        ops: &std::collections::HashSet<String>,
        here: &dyn Here,
    ) -> Result<Vec<String>, RemoteClaimError> {
        let (moved, _) = self.transact(true, |snapshot| {
            let mut entries = snapshot.entries.clone();
            let mut moved = Vec::new();
            for id in snapshot.entries.keys() {
                let Some(mut holder) = self.holder(snapshot, id)? else { continue };
                if holder.replica == old && ops.contains(&holder.op) {
                    new.clone_into(&mut holder.replica);
                    let blob = self.write_blob(&serde_json::to_vec(&holder).unwrap_or_default())?;
                    entries.insert(id.clone(), blob);
                    moved.push(id.clone());
                }
            }
            if moved.is_empty() {
                return Ok(Step::Done(moved));
            }
            let message =
                format!("fleet claims: {} moved from replica {old} to {new}\n", moved.join(" "));
            let clock = snapshot.clock.max(here.clock());
            Ok(Step::Write { entries, clock, message, value: moved })
        })?;
        Ok(moved)
    }

    /// `snapshot`'s entries without those of `replica` for issues free here.
    fn without_released(
        &self,
        snapshot: &Snapshot,
        replica: &str,
        here: &dyn Here,
    ) -> Result<BTreeMap<String, ObjectId>, RemoteClaimError> {
        let ids: Vec<&str> = snapshot.entries.keys().map(String::as_str).collect();
        let mut entries = snapshot.entries.clone();
        for id in here.free(&ids) {
            if self.holder(snapshot, &id)?.is_some_and(|h| h.replica == replica) {
                entries.remove(&id);
            }
        }
        Ok(entries)
    }

    /// Decides on the known state (or a fetched one when `fresh`), pushes what `decide` asks
    /// for, and on a lost race fetches and decides again. Returns the decision's value and the
    /// commit pushed, if any.
    fn transact<T>(
        &self,
        fresh: bool,
        mut decide: impl FnMut(&Snapshot) -> Result<Step<T>, RemoteClaimError>,
    ) -> Result<(T, Option<ObjectId>), RemoteClaimError> {
        let mut snapshot = if fresh { self.fetched()? } else { self.known()? };
        for attempt in 1..=MAX_ATTEMPTS {
            match decide(&snapshot)? {
                Step::Done(value) => return Ok((value, None)),
                Step::Refetch => {}
                Step::Write { entries, clock, message, value } => {
                    let commit = self.write_commit(&entries, clock, snapshot.tip, &message)?;
                    if let Pushed::Landed = self.push(commit, snapshot.tip)? {
                        self.set_tracking(commit);
                        return Ok((value, Some(commit)));
                    }
                    tracing::debug!(remote = %self.name, attempt, "lost the claims ref; fetching");
                    backoff(attempt);
                }
            }
            snapshot = self.fetched()?;
        }
        Err(RemoteClaimError::Contended { remote: self.name.clone(), attempts: MAX_ATTEMPTS })
    }

    fn format_error(&self, tip: Option<ObjectId>, reason: String) -> RemoteClaimError {
        RemoteClaimError::Format {
            remote: self.name.clone(),
            commit: tip.map(|t| t.to_string()).unwrap_or_default(),
            reason,
        }
    }

    /// The entries of the claims commit `tip`.
    fn snapshot(&self, tip: Option<ObjectId>, fresh: bool) -> Result<Snapshot, RemoteClaimError> {
        let Some(commit) = tip else {
            return Ok(Snapshot { tip, entries: BTreeMap::new(), clock: Hlc::ZERO, fresh });
        };
        let bad = |e: String| self.format_error(tip, e);
        let repo = &self.repo.repo;
        let commit = repo.find_commit(commit).map_err(|e| bad(e.to_string()))?;
        let tree = commit.tree().map_err(|e| bad(e.to_string()))?;
        let mut entries = BTreeMap::new();
        if let Some(dir) = tree.find_entry(CLAIMS_DIR) {
            let dir = repo.find_tree(dir.object_id()).map_err(|e| bad(e.to_string()))?;
            for entry in dir.iter() {
                let entry = entry.map_err(|e| bad(e.to_string()))?;
                entries.insert(entry.filename().to_string(), entry.object_id());
            }
        }
        let mut clock = Hlc::ZERO;
        if let Some(blob) = tree.find_entry(CLOCK_FILE) {
            let data = repo.find_blob(blob.object_id()).map_err(|e| bad(e.to_string()))?;
            clock = serde_json::from_slice(&data.data)
                .map_err(|e| bad(format!("{CLOCK_FILE}: {e}")))?;
        }
        Ok(Snapshot { tip, entries, clock, fresh })
    }

    fn write_blob(&self, bytes: &[u8]) -> Result<ObjectId, RemoteClaimError> {
        let context = format!("writing a claims blob in {}", self.git_dir().display());
        Ok(self.repo.repo.write_blob(bytes).map_err(JournalError::git(context))?.detach())
    }

    /// Writes the claims commit holding `entries` and `clock`, child of `parent`.
    fn write_commit(
        &self,
        entries: &BTreeMap<String, ObjectId>,
        clock: Hlc,
        parent: Option<ObjectId>,
        message: &str,
    ) -> Result<ObjectId, RemoteClaimError> {
        let repo = &self.repo.repo;
        let at = format!("writing a claims commit in {}", self.git_dir().display());
        let kind = |k: gix::objs::tree::EntryKind| k.into();
        let claims = gix::objs::Tree {
            entries: entries
                .iter()
                .map(|(id, oid)| gix::objs::tree::Entry {
                    mode: kind(gix::objs::tree::EntryKind::Blob),
                    filename: id.as_str().into(),
                    oid: *oid,
                })
                .collect(),
        };
        let mut top = gix::objs::Tree::empty();
        if !claims.entries.is_empty() {
            let oid = repo.write_object(&claims).map_err(JournalError::git(at.clone()))?.detach();
            top.entries.push(gix::objs::tree::Entry {
                mode: kind(gix::objs::tree::EntryKind::Tree),
                filename: CLAIMS_DIR.into(),
                oid,
            });
        }
        let clock = serde_json::to_vec(&clock).expect("a clock stamp serialises");
        top.entries.push(gix::objs::tree::Entry {
            mode: kind(gix::objs::tree::EntryKind::Blob),
            filename: CLOCK_FILE.into(),
            oid: self.write_blob(&clock)?,
        });
        let tree = repo.write_object(&top).map_err(JournalError::git(at.clone()))?.detach();
        let signature = gix::actor::Signature {
            name: "fleet".into(),
            email: EMAIL.into(),
            time: gix::date::Time { seconds: jiff::Timestamp::now().as_second(), offset: 0 },
        };
        let commit = gix::objs::Commit {
            tree,
            parents: parent.into_iter().collect(),
            author: signature.clone(),
            committer: signature,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(repo.write_object(&commit).map_err(JournalError::git(at))?.detach())
    }

    fn tracking_tip(&self) -> Result<Option<ObjectId>, RemoteClaimError> {
        let name = tracking_ref(&self.name);
        let context = format!("reading {name} in {}", self.git_dir().display());
        let found = self
            .repo
            .repo
            .try_find_reference(name.as_str())
            .map_err(JournalError::git(&context))?;
        let Some(mut reference) = found else { return Ok(None) };
        let id = reference.peel_to_id().map_err(JournalError::git(context))?;
        Ok(Some(id.detach()))
    }

    /// Moves the tracking ref to a state just pushed. Best effort: it is only where the next
    /// decision starts from, and a stale one costs a lost push and a fetch.
    fn set_tracking(&self, commit: ObjectId) {
        let name = tracking_ref(&self.name);
        if let Err(error) =
            self.repo.repo.reference(name.as_str(), commit, PreviousValue::Any, "fleet claims push")
        {
            tracing::debug!(%error, reference = %name, "could not update the tracking ref");
        }
    }

    /// Runs `git --git-dir <journal repo> args…` (C locale, never prompting).
    fn git(&self, args: &[&str]) -> Result<Output, RemoteClaimError> {
        let mut command = Command::new("git");
        command
            .arg("--git-dir")
            .arg(self.git_dir())
            .args(args)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null());
        // Owned: the supervisor's reaping must not take git's exit status.
        let limit = super::git_time_limit();
        let output = crate::process::output_owned_within(&mut command, limit)
            .map_err(|source| RemoteClaimError::Spawn { remote: self.name.clone(), source })?;
        // A remote that said nothing in time fails like one that cannot be reached.
        Ok(output.unwrap_or_else(|| Output {
            status: std::os::unix::process::ExitStatusExt::from_raw(1 << 8),
            stdout: Vec::new(),
            stderr: format!(
                "fatal: git gave no answer within {} s and was stopped (FLEET_GIT_TIMEOUT_SECS sets the limit)",
                limit.as_secs()
            )
            .into_bytes(),
        }))
    }

    /// Fetches the claims ref into the tracking ref; `None` if the remote has none yet.
    fn fetch(&self) -> Result<Option<ObjectId>, RemoteClaimError> {
        let refspec = format!("+{CLAIMS_REF}:{}", tracking_ref(&self.name));
        let args = ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", &self.name, &refspec];
        for attempt in 1..=MAX_ATTEMPTS {
            let output = self.git(&args)?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            if output.status.success() {
                return self.tracking_tip();
            }
            if stderr.contains("couldn't find remote ref") {
                return Ok(None);
            }
            if !stderr.contains("cannot lock ref") {
                return Err(self.unreachable(&stderr));
            }
            // Another process of this machine is updating the tracking ref right now.
            backoff(attempt);
        }
        Err(RemoteClaimError::Contended { remote: self.name.clone(), attempts: MAX_ATTEMPTS })
    }

    /// Pushes `commit` to the claims ref if it is still at `expected` (absent: `None`).
    fn push(
        &self,
        commit: ObjectId,
        expected: Option<ObjectId>,
    ) -> Result<Pushed, RemoteClaimError> {
        let expected = expected.map(|e| e.to_string()).unwrap_or_default();
        let lease = format!("--force-with-lease={CLAIMS_REF}:{expected}");
        let refspec = format!("{commit}:{CLAIMS_REF}");
        let output =
            self.git(&["push", "--porcelain", "--no-verify", &lease, &self.name, &refspec])?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let target = format!(":{CLAIMS_REF}");
        let line =
            stdout.lines().find(|l| l.split('\t').nth(1).is_some_and(|r| r.ends_with(&target)));
        let Some(line) = line else {
            return Err(self.unreachable(&String::from_utf8_lossy(&output.stderr)));
        };
        if !line.starts_with('!') {
            return Ok(Pushed::Landed);
        }
        let reason = line.split('\t').nth(2).unwrap_or_default().to_string();
        if is_lost_race(&reason) {
            return Ok(Pushed::Lost);
        }
        Err(RemoteClaimError::Rejected { remote: self.name.clone(), url: self.url.clone(), reason })
    }

    fn unreachable(&self, stderr: &str) -> RemoteClaimError {
        let detail: Vec<&str> = stderr
            .lines()
            .map(|l| l.trim().trim_start_matches("fatal: ").trim_start_matches("error: "))
            .map(|l| l.trim_end_matches('.'))
            .filter(|l| {
                !l.is_empty()
                    && !l.starts_with("Please make sure")
                    && !l.starts_with("and the repository")
            })
            .collect();
        RemoteClaimError::Unreachable {
            remote: self.name.clone(),
            url: self.url.clone(),
            detail: detail.join("; "),
        }
    }
}

/// The remote to use: `configured`, else `origin`, else the only one.
fn pick_remote(repo: &JournalRepo, configured: Option<&str>) -> Result<String, RemoteClaimError> {
    let names: Vec<String> = repo.repo.remote_names().iter().map(|n| n.to_string()).collect();
    let git_dir = repo.git_dir().to_path_buf();
    if let Some(name) = configured.filter(|n| !n.is_empty()) {
        if names.iter().any(|n| n == name) {
            return Ok(name.to_string());
        }
        return Err(RemoteClaimError::UnknownRemote { name: name.to_string(), repo: git_dir });
    }
    match names.as_slice() {
        [] => Err(RemoteClaimError::NoRemote { repo: git_dir }),
        [only] => Ok(only.clone()),
        _ if names.iter().any(|n| n == "origin") => Ok("origin".to_string()),
        _ => Err(RemoteClaimError::WhichRemote { repo: git_dir, names }),
    }
}

/// Whether a push rejection means another claimer moved the ref first.
fn is_lost_race(reason: &str) -> bool {
    [
        "stale info",
        "fetch first",
        "non-fast-forward",
        "lock",
        "failed to update ref",
        "incorrect old value",
    ]
    .iter()
    .any(|sign| reason.contains(sign))
}

/// An issue id must be a plain file name in the claims tree.
fn check_id(id: &str, remote: &str) -> Result<(), RemoteClaimError> {
    let plain = !id.is_empty() && id != "." && id != ".." && !id.contains(['/', '\0', '\n']);
    if plain {
        return Ok(());
    }
    Err(RemoteClaimError::Format {
        remote: remote.to_string(),
        commit: String::new(),
        reason: format!("issue id {id:?} cannot be a file name in the claims tree"),
    })
}

/// Waits a random time, growing with `attempt`, before trying again.
fn backoff(attempt: u32) {
    let ceiling = Duration::from_millis(2u64 << attempt.min(7)).min(MAX_BACKOFF);
    let ceiling = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX).max(1);
    let random = ulid::Ulid::generate().random();
    let nanos = u64::try_from(random % u128::from(ceiling)).unwrap_or(0);
    std::thread::sleep(Duration::from_nanos(nanos));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_races_are_told_from_refusals() {
        assert!(is_lost_race("[rejected] (stale info)"));
        assert!(is_lost_race("[remote rejected] (failed to lock)"));
        assert!(!is_lost_race("[remote rejected] (pre-receive hook declined)"));
    }

    #[test]
    fn ids_must_be_plain_file_names() {
        assert!(check_id("t-1.2", "origin").is_ok());
        assert!(check_id("a/b", "origin").is_err());
        assert!(check_id("..", "origin").is_err());
    }

    #[test]
    fn backoff_is_bounded() {
        let start = std::time::Instant::now();
        backoff(MAX_ATTEMPTS);
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
