//! A replica's one identity: what a sync does when this replica's journal ref on the remote is
//! not the history this store has.
//!
//! Only this replica advances `refs/fleet/journal/<replica>`, so the remote's copy of it is
//! either this store's own ref or an older state of it. When it is not, someone else wrote
//! commits as this replica, and the sync finds out right after its fetch ([`reconcile`]):
//!
//! - **The store is behind** (a restored backup or VM snapshot that has made nothing since):
//!   the remote's commits hold this replica's ops the store lost. They are merged, marked as
//!   committed, and the local ref moves to the remote's: the store catches up.
//! - **The histories forked** (a copied `~/.fleet`, or a restored backup that went on working,
//!   while the other copy pushed): two live stores share the replica id. This store takes a new
//!   one (`Store::take_new_replica`): its ops the other copy lacks are re-stamped as the new
//!   replica's and go to the remote under its own ref; the old replica is the other copy's
//!   from now on, and its ops after the shared commit are merged like any other machine's. In
//!   remote claim mode, the claims this store made as the old replica are moved to the new one.
//!   The store's own commits of the old replica after the shared one are kept under
//!   `refs/fleet/retired/<old>` (nothing is deleted): their ops are the re-stamped ones.
//!
//! The sync reports either, and a person sees the new replica id in its output.

use std::collections::HashSet;

use gix::ObjectId;
use serde::Serialize;

use super::claims::{ClaimsRemote, Here};
use super::read::read_since;
use super::remotes::{Remote, staging};
use super::repo::JournalRepo;
use super::{JournalError, ref_name};
use crate::op::Hlc;
use crate::store::{Restamped, Store};
use crate::time::Clock;

/// Where this store's own commits of a replica id it gave up are kept.
pub const RETIRED_PREFIX: &str = "refs/fleet/retired/";

/// What [`reconcile`] found of this replica's ref on the remote.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum OwnRef {
    /// The remote has this store's history or an older state of it.
    InStep,
    /// The store was behind its own replica's history on the remote, and caught up.
    CaughtUp { ops: usize },
    /// Another copy of the store wrote as this replica: the store took a new replica id.
    NewReplica {
        #[serde(flatten)]
        restamped: Restamped,
        /// Claims on the remote moved from the old replica to the new one.
        claims_moved: Vec<String>,
    },
}

/// Compares the remote's ref of this replica (fetched into the staging namespace of `remote`)
/// with the local one, and acts on what it finds (module docs).
pub(super) fn reconcile(
    repo: &JournalRepo,
    remote: &Remote,
    store: &Store,
) -> Result<OwnRef, JournalError> {
    let me = store.replica();
    let local = repo.tip(&me)?;
    let Some(theirs) = repo.ref_target(&format!("{}{me}", staging(&remote.name)))? else {
        return Ok(OwnRef::InStep);
    };
    if local == Some(theirs) || local.is_some_and(|l| repo.is_ancestor(theirs, l)) {
        return Ok(OwnRef::InStep);
    }
    if local.is_none_or(|l| repo.is_ancestor(l, theirs)) {
        let lost = read_since(repo, &me, theirs, local)?;
        if let Some(merged) = store.merge_own_lost(Clock::System, lost)? {
            repo.set_ref(&ref_name(&me), theirs, local)?;
            tracing::info!(replica = %me, ops = merged.replayed.len(), "caught up with this replica's own journal on the remote");
            return Ok(OwnRef::CaughtUp { ops: merged.replayed.len() });
        }
    }
    take_new_replica(repo, store, &me, local, theirs)
}

/// The forked case of [`reconcile`]: this store takes a new replica id.
fn take_new_replica(
    repo: &JournalRepo,
    store: &Store,
    old: &str,
    local: Option<ObjectId>,
    theirs: ObjectId,
) -> Result<OwnRef, JournalError> {
    let their_ops: HashSet<u128> =
        read_since(repo, old, theirs, None)?.iter().map(|op| op.meta.id.0).collect();
    let shared = local.and_then(|local| merge_base(repo, local, theirs));
    let new = ulid::Ulid::generate().to_string().to_lowercase();
    let shared_hex = shared.map(|commit| commit.to_string());
    let restamped = store.take_new_replica(&new, &their_ops, shared_hex.as_deref())?;
    if let Some(local) = local {
        let retired = format!("{RETIRED_PREFIX}{old}");
        let kept = repo.ref_target(&retired)?;
        repo.set_ref(&retired, local, kept)?;
    }
    repo.set_ref(&ref_name(old), theirs, local)?;
    tracing::warn!(
        old, new = %restamped.new, ops = restamped.ops.len(),
        "another copy of this store uses its replica id: it took a new one"
    );
    let claims_moved = move_claims(store, &restamped);
    Ok(OwnRef::NewReplica { restamped, claims_moved })
}

/// In remote claim mode, names the new replica as the holder of the claims the store made as
/// the old one. Best effort: a claim left under the old replica is one the other copy may
/// drop, and this store's next claims commit names its own again.
fn move_claims(store: &Store, restamped: &Restamped) -> Vec<String> {
    let remote = match ClaimsRemote::of_store(store) {
        Ok(Some(remote)) => remote,
        Ok(None) => return Vec::new(),
        Err(error) => {
            tracing::warn!(%error, "the claims remote could not be opened to move claims");
            return Vec::new();
        }
    };
    let ops: HashSet<String> = restamped.ops.iter().map(ulid::Ulid::to_string).collect();
    match remote.reassign(&restamped.old, &restamped.new, &ops, &ClockOf(store)) {
        Ok(moved) => moved,
        Err(error) => {
            tracing::warn!(%error, "moving claims to the new replica id failed");
            Vec::new()
        }
    }
}

/// The store's clock for a claims commit that drops nothing.
struct ClockOf<'a>(&'a Store);

impl Here for ClockOf<'_> {
    fn free(&self, _ids: &[&str]) -> Vec<String> {
        Vec::new()
    }

    fn clock(&self) -> Hlc {
        self.0.clock().unwrap_or_default()
    }
}

/// The newest commit both first-parent chains `a` and `b` have.
fn merge_base(repo: &JournalRepo, a: ObjectId, b: ObjectId) -> Option<ObjectId> {
    let in_b: HashSet<ObjectId> = first_parents(repo, b).collect();
    first_parents(repo, a).find(|commit| in_b.contains(commit))
}

/// `tip` and its first-parent ancestors, newest first (a missing commit ends the walk).
fn first_parents(repo: &JournalRepo, tip: ObjectId) -> impl Iterator<Item = ObjectId> + '_ {
    std::iter::successors(Some(tip), move |id| {
        repo.repo
            .find_commit(*id)
            .ok()
            .and_then(|commit| commit.parent_ids().next().map(|p| p.detach()))
    })
}
