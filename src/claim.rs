//! Claiming work: the claim request of the [`tracker`] (a compare-and-set in the store)
//! wrapped for callers, one claim per transaction or many in one, and confirmed on a git
//! remote when the workspace's `claim_mode` is `remote`.
//!
//! A claim is decided inside one write transaction — open and unassigned (or already the
//! claimer's) becomes in_progress with the claimer as assignee — so exactly one of any number
//! of concurrent claimers, in any number of processes, wins an issue.
//!
//! # Across machines (`claim_mode = "remote"`)
//!
//! The store setting [`MODE_KEY`] (`fleet bd config set claim_mode remote`) makes a claim
//! count only once the remote confirmed it ([`crate::journal::claims`]): the local
//! compare-and-set comes first (it decides between the processes of this machine), then the
//! claim is recorded on the remote's `refs/fleet/claims` by a compare-and-swap push. If the
//! remote refuses (another replica holds the issue) or cannot be reached, the local claim is
//! undone ([`undo_claim`]: released, the assignee and fleet fields put back, so nothing is
//! charged) and the caller gets the error; [`claim_next`] then moves on to the next ready
//! issue. The remote is [`REMOTE_KEY`] if set, else `origin`, else the journal repository's
//! only remote.
//!
//! [`ClaimGroup`] serves many claimers in one process: a single committer thread takes every
//! request waiting at the moment, decides them one after another in one shared transaction,
//! commits once, and only then answers each claimer. Each decision sees the ones before it, so
//! the result is exactly what the same claims made one by one would give, at the cost of one
//! durable commit per group instead of one per claim. It claims locally only (a benchmark of
//! the store).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use crate::journal::claims::{ClaimsRemote, Confirmed, Holder, RemoteClaimError};
use crate::model::{Issue, Status};
use crate::op::{IssuePatch, Op};
use crate::store::{ReadyFilter, Store, StoreError, Writer};
use crate::time::Clock;
use crate::tracker;

/// The store setting choosing how claims are decided: `local` (default) or `remote`.
pub const MODE_KEY: &str = "claim_mode";
/// The store setting naming the git remote of remote claims.
pub const REMOTE_KEY: &str = "claim_remote";

/// How claims are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMode {
    /// In this store alone: fast; two machines syncing one queue may both start a task.
    Local,
    /// Confirmed on a git remote: no two machines ever start the same task.
    Remote,
}

impl ClaimMode {
    /// The mode `store` is set to.
    pub fn of(store: &Store) -> Result<ClaimMode, ClaimError> {
        match store.read()?.config(MODE_KEY)?.as_deref().map(str::trim) {
            None | Some("" | "local") => Ok(ClaimMode::Local),
            Some("remote") => Ok(ClaimMode::Remote),
            Some(other) => Err(ClaimError::BadMode(other.to_string())),
        }
    }
}

/// Why a claim failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The remote refused or could not confirm it; the local claim was undone.
    #[error("{0}; the claim was undone locally")]
    Remote(#[from] RemoteClaimError),
    #[error(
        "claim_mode is {0:?}; it must be \"local\" or \"remote\" (`fleet bd config set claim_mode local`)"
    )]
    BadMode(String),
}

impl ClaimError {
    /// Whether another replica holds the issue (the claim was refused, not failed).
    pub fn claimed_elsewhere(&self) -> bool {
        matches!(self, ClaimError::Remote(RemoteClaimError::ClaimedElsewhere { .. }))
    }
}

/// Claims `id` for the writer's actor. Returns the claimed issue.
pub fn claim_in(writer: &mut Writer<'_>, id: &str) -> Result<Issue, StoreError> {
    Ok(tracker::claim(writer, id)?)
}

/// Claims the first ready issue (in ready order) that the writer's actor may take.
pub fn claim_next_in(
    writer: &mut Writer<'_>,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, StoreError> {
    Ok(tracker::claim_next(writer, filter)?)
}

/// Claims `id` for `actor` in its own transaction; in remote mode, confirmed on the remote.
pub fn claim(store: &Store, actor: &str, clock: Clock, id: &str) -> Result<Issue, ClaimError> {
    let remote = RemoteClaims::for_store(store)?;
    let ((before, issue), ops) = store.write(actor, clock, |w| {
        let id = w.resolve(id)?;
        let before = w.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
        Ok((before, claim_in(w, &id)?))
    })?;
    if let Some(remote) = remote {
        remote.confirm_or_undo(store, actor, clock, &before, &ops)?;
    }
    Ok(issue)
}

/// Claims the first ready issue for `actor` in its own transaction. In remote mode, issues
/// the remote says other replicas hold are skipped, and one refused at confirmation is undone
/// and the next one tried.
pub fn claim_next(
    store: &Store,
    actor: &str,
    clock: Clock,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, ClaimError> {
    let Some(remote) = RemoteClaims::for_store(store)? else {
        return Ok(claim_next_local(store, actor, clock, filter)?);
    };
    let mut refused: HashSet<String> = HashSet::new();
    loop {
        refused.extend(remote.held_elsewhere());
        let accept = |issue: &Issue| !refused.contains(&issue.id);
        let (claimed, ops) = store.write(actor, clock, |w| {
            let Some(id) = w.first_claimable_where(filter, &accept)? else { return Ok(None) };
            let before = w.issue(&id)?.ok_or_else(|| StoreError::NotFound(id.clone()))?;
            Ok(Some((before, claim_in(w, &id)?)))
        })?;
        let Some((before, issue)) = claimed else { return Ok(None) };
        match remote.confirm_or_undo(store, actor, clock, &before, &ops) {
            Ok(_) => return Ok(Some(issue)),
            Err(error) if error.claimed_elsewhere() => {
                tracing::info!(%error, "skipping an issue claimed on another machine");
                refused.insert(issue.id);
            }
            Err(error) => return Err(error),
        }
    }
}

/// [`claim_next`] in this store alone, whatever the mode (benchmarks of the store).
pub fn claim_next_local(
    store: &Store,
    actor: &str,
    clock: Clock,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, StoreError> {
    store.write(actor, clock, |w| claim_next_in(w, filter)).map(|(issue, _)| issue)
}

/// Undoes a claim of `before.id` the remote did not confirm: the issue is released, and the
/// assignee and fleet fields it had before are put back (an attempt the claim counted is not
/// charged).
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

/// The claims remote of a workspace in remote mode, with this store's replica.
pub struct RemoteClaims {
    remote: ClaimsRemote,
    replica: String,
}

impl RemoteClaims {
    /// The claims remote of `store`, or `None` in local mode.
    pub fn for_store(store: &Store) -> Result<Option<RemoteClaims>, ClaimError> {
        if ClaimMode::of(store)? == ClaimMode::Local {
            return Ok(None);
        }
        let configured = store.read()?.config(REMOTE_KEY)?;
        let remote = ClaimsRemote::open(store.dir(), configured.as_deref())?;
        Ok(Some(RemoteClaims { remote, replica: store.replica().to_string() }))
    }

    /// The remote.
    pub fn remote(&self) -> &ClaimsRemote {
        &self.remote
    }

    /// The ids the last state seen of the remote says other replicas hold (none if it cannot
    /// be read: confirmation decides anyway).
    pub fn held_elsewhere(&self) -> Vec<String> {
        let known = self.remote.known();
        match known.and_then(|s| self.remote.held_elsewhere(&s, &self.replica)) {
            Ok(ids) => ids,
            Err(error) => {
                tracing::warn!(%error, "reading the last claims state seen failed");
                Vec::new()
            }
        }
    }

    /// Confirms on the remote that this replica holds `id` (claimed by `actor` through `ops`,
    /// empty if it was held already).
    pub fn confirm(
        &self,
        store: &Store,
        id: &str,
        actor: &str,
        clock: Clock,
        ops: &[Op],
    ) -> Result<Confirmed, RemoteClaimError> {
        let op = ops.iter().find(|op| op.kind.name() == "claim" && op.kind.subject() == id);
        let holder = Holder {
            replica: self.replica.clone(),
            actor: actor.to_string(),
            claimed_at: clock.now(),
            op: op.map_or_else(ulid::Ulid::generate, |op| op.meta.id).to_string(),
        };
        self.remote.confirm(id, &holder, &|ids| free_here(store, ids))
    }

    /// [`RemoteClaims::confirm`]; if it fails and the claim was made just now (`ops`), the
    /// claim is undone locally ([`undo_claim`]).
    pub fn confirm_or_undo(
        &self,
        store: &Store,
        actor: &str,
        clock: Clock,
        before: &Issue,
        ops: &[Op],
    ) -> Result<Confirmed, ClaimError> {
        let error = match self.confirm(store, &before.id, actor, clock, ops) {
            Ok(confirmed) => return Ok(confirmed),
            Err(error) => error,
        };
        if !ops.is_empty() {
            undo_claim(store, actor, clock, before)?;
        }
        Err(error.into())
    }

    /// Drops this replica's entries for issues free here (released, reopened, deleted).
    /// Returns their ids.
    pub fn release(&self, store: &Store) -> Result<Vec<String>, RemoteClaimError> {
        self.remote.release(&self.replica, &|ids| free_here(store, ids))
    }
}

/// The ids among `ids` that no claim holds in `store`: open, or gone. On a read error none
/// (an entry is kept rather than dropped by mistake).
fn free_here(store: &Store, ids: &[&str]) -> Vec<String> {
    let read = || -> Result<Vec<String>, StoreError> {
        let reader = store.read()?;
        let mut free = Vec::new();
        for id in ids {
            if reader.issue(id)?.is_none_or(|issue| issue.status == Status::Open) {
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

/// The answer to one claimer of a [`ClaimGroup`].
pub type ClaimReply = Result<Option<Issue>, String>;

struct ClaimRequest {
    actor: String,
    reply: SyncSender<ClaimReply>,
}

/// Group commit of claim-next requests from many threads of one process.
pub struct ClaimGroup {
    requests: Option<Sender<ClaimRequest>>,
    committer: Option<JoinHandle<()>>,
}

impl ClaimGroup {
    /// Starts the committer thread for `store`.
    pub fn start(store: Arc<Store>, clock: Clock) -> ClaimGroup {
        let (requests, incoming) = channel();
        let committer = std::thread::Builder::new()
            .name("fleet-claims".into())
            .spawn(move || run_committer(&store, clock, &incoming))
            .ok();
        ClaimGroup { requests: Some(requests), committer }
    }

    /// Claims the first ready issue for `actor`; blocks until the group holding the request
    /// has been durably committed.
    pub fn claim_next(&self, actor: &str) -> ClaimReply {
        let (reply, answer) = sync_channel(1);
        let request = ClaimRequest { actor: actor.to_string(), reply };
        self.requests
            .as_ref()
            .ok_or("claim group is shut down")?
            .send(request)
            .map_err(|_| "claim committer has stopped".to_string())?;
        answer.recv().map_err(|_| "claim committer has stopped".to_string())?
    }
}

impl Drop for ClaimGroup {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
    }
}

fn run_committer(store: &Store, clock: Clock, incoming: &Receiver<ClaimRequest>) {
    while let Ok(first) = incoming.recv() {
        let mut group = vec![first];
        group.extend(incoming.try_iter());
        let outcome = store.write("", clock, |writer| {
            let mut answers = Vec::with_capacity(group.len());
            for request in &group {
                writer.set_actor(&request.actor);
                let answer = claim_next_in(writer, &ReadyFilter::default());
                // A refused claim changed nothing, so the group goes on (see `store::apply`).
                answers.push(answer.map_err(|e| e.to_string()));
            }
            Ok(answers)
        });
        match outcome {
            Ok((answers, _)) => {
                for (request, answer) in group.iter().zip(answers) {
                    let _ = request.reply.send(answer);
                }
            }
            Err(error) => {
                for request in &group {
                    let _ = request.reply.send(Err(format!("claim commit failed: {error}")));
                }
            }
        }
    }
}
