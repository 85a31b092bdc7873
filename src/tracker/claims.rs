//! The claim service: the one way any front end — the CLI, `bd`, the socket server's direct
//! fallback, the supervisor — claims work ([`Claims`]), locally or confirmed on a git remote
//! as the workspace's `claim_mode` says. Many claimers of one process share the server's
//! group commit instead ([`crate::server::InProcess`]); a claiming request in remote mode is
//! never grouped, and goes through [`submit_remote`] here.
//!
//! A claim is decided inside one write transaction — open and unassigned (or already the
//! claimer's) becomes in_progress with the claimer as assignee — so exactly one of any number
//! of concurrent claimers, in any number of processes, wins an issue. What a claimer records
//! with its claim (the supervisor's lease and attempt count) goes in the same transaction: the
//! claimer hands the service a [`Record`] step, which says from the claimed issue what else
//! to write on it.
//!
//! # Across machines (`claim_mode = "remote"`)
//!
//! The store setting [`MODE_KEY`] (`fleet config set claim_mode=remote`) makes a claim
//! count only once a git remote confirmed it ([`crate::journal::claims`]). The remote is
//! asked *first*: the issue is recorded on the remote's `refs/fleet/claims` by a
//! compare-and-swap push naming this replica, and only then claimed in the store, by an op
//! stamped after the clock of the claims state it was confirmed on. A claim the remote refuses
//! (another replica holds the issue) or cannot confirm makes no op at all, so nothing has to
//! be undone and no other machine's store ever sees a claim that was not confirmed: a merge
//! never turns a confirmed claim back, and a supervisor's agent is never stopped for another
//! machine's failed claim. [`Claims::claim_next`] then moves on to the next ready issue.
//!
//! While a claim is between its confirmation and its transaction, this replica's entry on the
//! remote names an issue that is still open in the store. Every claims commit of the replica
//! drops its entries for issues free in the store, so a claim under way holds a lock
//! ([`InFlight`], one of a few files in `.beads/claiming/`) that those commits respect: an
//! issue whose lock is held is not free. The kernel lets go of the lock of a claimer that died.
//!
//! The remote is [`REMOTE_KEY`] if set, else `origin`, else the journal repository's only
//! remote.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use crate::journal::claims::{ClaimMode, MODE_KEY, REMOTE_KEY};
use crate::journal::claims::{ClaimsRemote, Confirmed, Here, Holder, RemoteClaimError};
use jiff::Timestamp;

use super::{Refusal, Reply, Request, Summary, UpdateRequest};
use crate::model::{Issue, Status};
use crate::op::{Hlc, IssuePatch};
use crate::store::{ReadyFilter, Store, StoreError, Writer};
use crate::time::Clock;
use crate::tracker;
use crate::workspace::{CLAIMING_DIR, gitignore};

/// How many lock files claims under way share (by a hash of the issue id).
const IN_FLIGHT_LOCKS: u64 = 64;

/// Why a claim failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The remote refused or could not confirm it; nothing was claimed.
    #[error("{0}; nothing was claimed")]
    Remote(#[from] RemoteClaimError),
    #[error("locking {} for a claim: {source}", path.display())]
    InFlight { path: PathBuf, source: std::io::Error },
    /// One issue of several could not be claimed; those claimed with it were put back.
    #[error("could not claim {id}: {error}")]
    Of { id: String, error: Box<ClaimError> },
}

impl ClaimError {
    /// Whether another replica holds the issue (the claim was refused, not failed).
    pub fn claimed_elsewhere(&self) -> bool {
        match self {
            ClaimError::Remote(RemoteClaimError::ClaimedElsewhere { .. }) => true,
            ClaimError::Of { error, .. } => error.claimed_elsewhere(),
            _ => false,
        }
    }

    /// Whether the remote could not be used (unreachable, refusing pushes, misconfigured), as
    /// opposed to a refusal of this one issue or a fault of the store.
    pub fn remote_failed(&self) -> bool {
        match self {
            ClaimError::Remote(_) => !self.claimed_elsewhere(),
            ClaimError::Of { error, .. } => error.remote_failed(),
            _ => false,
        }
    }
}

/// What a claimer records on the issue with its claim, in the claim's transaction: a patch
/// made from the issue as the claim left it, at the transaction's time (`None`: nothing).
pub type Record<'a> = &'a dyn Fn(&Issue, Timestamp) -> Option<IssuePatch>;

/// The plain claim, which records nothing else.
pub fn plain_claim(_: &Issue, _: Timestamp) -> Option<IssuePatch> {
    None
}

/// Claims `id` with the writer and writes what `record` makes of it; returns the issue after.
fn take(writer: &mut Writer<'_>, id: &str, record: Record<'_>) -> Result<Issue, StoreError> {
    let claimed = tracker::claim(writer, id)?;
    let Some(patch) = record(&claimed, writer.now()) else { return Ok(claimed) };
    let id = tracker::update(writer, &UpdateRequest::edit(&claimed.id, patch))?;
    writer.issue(&id)?.ok_or(StoreError::NotFound(id))
}

/// The claim service of one store: local, or confirmed on its claims remote.
pub struct Claims<'s> {
    store: &'s Store,
    remote: Option<ClaimsRemote>,
}

impl<'s> Claims<'s> {
    /// The claim service of `store`, in the mode the store is set to.
    pub fn of(store: &'s Store) -> Result<Claims<'s>, ClaimError> {
        Ok(Claims { store, remote: ClaimsRemote::of_store(store)? })
    }

    /// The claim service of `store` deciding in the store alone, whatever its mode (the
    /// benchmarks of the store).
    pub fn local(store: &'s Store) -> Claims<'s> {
        Claims { store, remote: None }
    }

    /// The claims remote, in remote mode.
    pub fn remote(&self) -> Option<&ClaimsRemote> {
        self.remote.as_ref()
    }

    /// The issues the last state seen of the remote says other replicas hold (none in local
    /// mode, or if it cannot be read: confirmation decides anyway).
    pub fn held_elsewhere(&self) -> Vec<String> {
        let Some(remote) = &self.remote else { return Vec::new() };
        match remote.known().and_then(|s| remote.held_elsewhere(&s, &self.store.replica())) {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, "reading the last claims state seen failed");
                Vec::new()
            }
        }
    }

    /// Claims the issue `input` names for `actor`, writing what `record` makes of it in the
    /// claim's transaction; in remote mode, confirmed on the remote first.
    pub fn claim_id(
        &self,
        actor: &str,
        clock: Clock,
        input: &str,
        record: Record<'_>,
    ) -> Result<Issue, ClaimError> {
        let Some(remote) = &self.remote else {
            let (taken, _) = self.store.write(actor, clock, |w| {
                let id = w.resolve(input)?;
                take(w, &id, record)
            })?;
            return Ok(taken);
        };
        let id = self.store.read()?.resolve(input)?;
        self.confirmed_then_taken(remote, actor, clock, &id, Fresh::AsItIs, record)
    }

    /// Claims the first ready issue (in ready order) that `filter` and `accept` admit and
    /// `actor` may take, writing what `record` makes of it in the claim's transaction. In remote mode,
    /// issues other replicas hold are skipped, and so is one the remote refuses or that
    /// another process of this machine took meanwhile.
    pub fn claim_next(
        &self,
        actor: &str,
        clock: Clock,
        filter: &ReadyFilter,
        accept: &dyn Fn(&Issue) -> bool,
        record: Record<'_>,
    ) -> Result<Option<Issue>, ClaimError> {
        let Some(remote) = &self.remote else {
            let (taken, _) = self.store.write(actor, clock, |w| {
                let Some(id) = w.first_claimable_where(filter, accept)? else { return Ok(None) };
                take(w, &id, record).map(Some)
            })?;
            return Ok(taken);
        };
        let mut skipped: HashSet<String> = self.held_elsewhere().into_iter().collect();
        loop {
            let admits = |issue: &Issue| accept(issue) && !skipped.contains(&issue.id);
            let reader = self.store.read()?;
            let Some(id) = reader.first_claimable_where(actor, filter, clock.now(), &admits)?
            else {
                return Ok(None);
            };
            drop(reader);
            match self.confirmed_then_taken(remote, actor, clock, &id, Fresh::StillOpen, record) {
                Ok(taken) => return Ok(Some(taken)),
                Err(error) if error.claimed_elsewhere() => {
                    tracing::info!(%error, "skipping an issue claimed on another machine");
                    skipped.extend(self.held_elsewhere());
                }
                Err(ClaimError::Store(error)) if error.is_refusal() => {
                    tracing::debug!(%error, %id, "another claimer of this machine took it first");
                }
                Err(error) => return Err(error),
            }
            skipped.insert(id);
        }
    }

    /// Drops this replica's entries on the remote for issues free here (released, reopened,
    /// deleted); nothing in local mode. Returns their ids.
    pub fn drop_released(&self) -> Result<Vec<String>, ClaimError> {
        let Some(remote) = &self.remote else { return Ok(Vec::new()) };
        let here = StoreHere { store: self.store };
        Ok(remote.release(&self.store.replica(), &here)?)
    }

    /// Remote mode: confirms on the remote that this replica holds `id`, then claims it (and
    /// writes what `record` makes of it) in a transaction whose claim op is stamped after the confirmed state's clock and carries
    /// the op id the remote entry names. A claim that fails (another process of this machine
    /// claimed it first) leaves the entry to the replica's next commit, which drops it if the
    /// issue is free here.
    fn confirmed_then_taken(
        &self,
        remote: &ClaimsRemote,
        actor: &str,
        clock: Clock,
        id: &str,
        fresh: Fresh,
        record: Record<'_>,
    ) -> Result<Issue, ClaimError> {
        let _under_way = InFlight::take(self.store.dir(), id)?;
        // Chosen from a read before the lock: another claimer of this machine (even with the
        // same actor) may have taken it since.
        let still_open = |issue: Option<Issue>| -> Result<(), StoreError> {
            match issue {
                Some(issue) if fresh == Fresh::StillOpen && issue.status != Status::Open => {
                    Err(StoreError::NotClaimable { id: issue.id, status: issue.status.to_string() })
                }
                _ => Ok(()),
            }
        };
        still_open(self.store.read()?.issue(id)?)?;
        let claim_op = ulid::Ulid::generate();
        let holder = Holder {
            replica: self.store.replica(),
            actor: actor.to_string(),
            claimed_at: clock.now(),
            op: claim_op.to_string(),
        };
        let Confirmed { clock: confirmed_at, .. } =
            remote.confirm(id, &holder, &StoreHere { store: self.store })?;
        let taken = self.store.write(actor, clock, |w| {
            still_open(w.issue(id)?)?;
            w.receive_clock(confirmed_at);
            w.name_next_claim(claim_op);
            take(w, id, record)
        });
        match taken {
            Ok((taken, _)) => Ok(taken),
            Err(error) => {
                drop(_under_way);
                if let Err(release) = self.drop_released() {
                    tracing::warn!(%release, %id, "dropping an unused claim entry failed");
                }
                Err(error.into())
            }
        }
    }
}

/// Whether a claim confirmed on the remote must still find its issue open (an issue chosen as
/// the next ready one), or takes it as it is (an issue named: re-claiming one's own is fine).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fresh {
    StillOpen,
    AsItIs,
}

/// Claims `id` for `actor` in the store's claim mode (see [`Claims::claim_id`]).
pub fn claim(store: &Store, actor: &str, clock: Clock, id: &str) -> Result<Issue, ClaimError> {
    Claims::of(store)?.claim_id(actor, clock, id, &plain_claim)
}

/// Claims the first ready issue for `actor` in the store's claim mode (see
/// [`Claims::claim_next`]).
pub fn claim_next(
    store: &Store,
    actor: &str,
    clock: Clock,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, ClaimError> {
    Claims::of(store)?.claim_next(actor, clock, filter, &|_| true, &plain_claim)
}

/// Whether claims in `store` are confirmed on a git remote (`claim_mode = "remote"`): then
/// a claiming request goes through [`submit_remote`], never a shared group commit.
pub fn decided_remotely(store: &Store) -> Result<bool, ClaimError> {
    Ok(ClaimMode::of(store)? == ClaimMode::Remote)
}

/// Carries out a claiming request ([`Request::claims`]) in remote claim mode: each issue is
/// claimed and confirmed on the remote first, then the rest of the request applies. An update
/// with `--claim` of several issues claims them all before its edit; if one cannot be claimed,
/// those claimed for it are put back ([`undo_claim`]) and nothing is edited.
pub fn submit_remote(
    store: &Store,
    actor: &str,
    clock: Clock,
    request: &Request,
) -> Result<Reply, ClaimError> {
    let summary =
        |issue| -> Result<Summary, StoreError> { Ok(store.read()?.summary(issue)?.into()) };
    match request {
        Request::Claim { id } => {
            Ok(Reply::Summary(Box::new(summary(claim(store, actor, clock, id)?)?)))
        }
        Request::ClaimNext { filter } => {
            let issue = claim_next(store, actor, clock, filter)?;
            Ok(Reply::Claimed(issue.map(summary).transpose()?.map(Box::new)))
        }
        other => {
            if let Request::Update(updates) = other {
                let claimed: Vec<&str> =
                    updates.iter().filter(|u| u.claim).map(|u| u.id.as_str()).collect();
                claim_all_or_none(store, actor, clock, &claimed)?;
            }
            let (reply, _) = store.write(actor, clock, |writer| {
                tracker::execute(writer, other).map_err(Refusal::into)
            })?;
            Ok(reply)
        }
    }
}

/// Claims each issue of `inputs`, confirmed on the remote; on the first that fails, puts back
/// those this call claimed (not those the actor held already) and fails naming that issue.
fn claim_all_or_none(
    store: &Store,
    actor: &str,
    clock: Clock,
    inputs: &[&str],
) -> Result<(), ClaimError> {
    let mut claimed: Vec<Issue> = Vec::new();
    for input in inputs {
        let before = store.read().and_then(|reader| reader.issue(&reader.resolve(input)?));
        match (claim(store, actor, clock, input), before) {
            (Ok(_), Ok(Some(before))) if before.status == Status::Open => claimed.push(before),
            (Ok(_), _) => {}
            (Err(error), _) => {
                for before in &claimed {
                    undo_claim(store, actor, clock, before)?;
                }
                if !claimed.is_empty()
                    && let Err(release) = Claims::of(store)?.drop_released()
                {
                    tracing::warn!(%release, "the remote still holds what was put back");
                }
                return Err(ClaimError::Of { id: (*input).to_string(), error: Box::new(error) });
            }
        }
    }
    Ok(())
}

/// Puts back a claim made here that the caller gives up (one of several issues a command
/// claims could not be claimed): the issue is released — the release names the claim it ends
/// — and the assignee and fleet fields it had before are put back (an attempt the claim counted
/// is not charged). In remote mode the caller then drops the entry ([`Claims::drop_released`]).
pub fn undo_claim(
    store: &Store,
    actor: &str,
    clock: Clock,
    before: &Issue,
) -> Result<(), StoreError> {
    store.write(actor, clock, |w| {
        tracker::release(w, &before.id)?;
        let now = w.issue(&before.id)?.ok_or_else(|| StoreError::NotFound(before.id.clone()))?;
        let mut patch = IssuePatch::default();
        if now.assignee != before.assignee {
            patch.assignee = Some(before.assignee.clone());
        }
        if now.fleet != before.fleet {
            patch.fleet = Some(before.fleet.clone());
        }
        if !patch.is_empty() {
            tracker::update(w, &tracker::UpdateRequest::edit(&before.id, patch))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// What this replica's store tells its claims commits: the issues free here (open or gone, and
/// no claim of them under way), and its clock.
struct StoreHere<'a> {
    store: &'a Store,
}

impl Here for StoreHere<'_> {
    /// On a read error none: an entry is kept rather than dropped by mistake.
    fn free(&self, ids: &[&str]) -> Vec<String> {
        let read = || -> Result<Vec<String>, StoreError> {
            let reader = self.store.read()?;
            let mut free = Vec::new();
            for id in ids {
                let open = reader.issue(id)?.is_none_or(|issue| issue.status == Status::Open);
                if open && !InFlight::under_way(self.store.dir(), id) {
                    free.push((*id).to_string());
                }
            }
            Ok(free)
        };
        read().unwrap_or_else(|error| {
            tracing::warn!(%error, "reading which claimed issues are free failed");
            Vec::new()
        })
    }

    fn clock(&self) -> Hlc {
        self.store.clock().unwrap_or_else(|error| {
            tracing::warn!(%error, "reading the store's clock failed");
            Hlc::ZERO
        })
    }
}

/// The lock a claim holds from before the remote confirms it until its transaction is over
/// (module docs). Claims of issues whose ids hash alike share a lock file; one waits for the
/// other, and an issue sharing a held lock counts as under way (kept, never wrongly dropped).
struct InFlight {
    _file: std::fs::File,
}

impl InFlight {
    fn path(workspace: &Path, id: &str) -> PathBuf {
        let bucket = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        }) % IN_FLIGHT_LOCKS;
        workspace.join(CLAIMING_DIR).join(format!("{bucket:02}.lock"))
    }

    /// Takes the lock of `id`'s claim, waiting for another claim sharing it.
    fn take(workspace: &Path, id: &str) -> Result<InFlight, ClaimError> {
        let path = InFlight::path(workspace, id);
        let failed = |source| ClaimError::InFlight { path: path.clone(), source };
        let dir = workspace.join(CLAIMING_DIR);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir).map_err(failed)?;
            gitignore::ignore_or_warn(workspace, &[gitignore::IN_FLIGHT_LOCKS_ENTRY]);
        }
        let file = std::os::unix::fs::OpenOptionsExt::mode(
            std::fs::OpenOptions::new().create(true).truncate(false).write(true),
            0o600,
        )
        .open(&path)
        .map_err(failed)?;
        file.lock().map_err(failed)?;
        Ok(InFlight { _file: file })
    }

    /// Whether a claim of `id` (or of an issue sharing its lock) is under way in any process.
    /// One that cannot be told counts as under way.
    fn under_way(workspace: &Path, id: &str) -> bool {
        let path = InFlight::path(workspace, id);
        if !path.exists() {
            return false;
        }
        !matches!(crate::fsutil::try_lock_exclusive(&path), Ok(Some(_)))
    }
}
