//! Deciding a group of requests in one write transaction (group commit).
//!
//! A group is decided one request after another, each seeing the ones before, exactly as if
//! they had run one by one. A refused request changes nothing and the group goes on. A request
//! refused after it had already applied some of its ops (a close guard after an edit, say)
//! cannot be undone inside the transaction (redb's multi-writer mode has no savepoints), so the
//! transaction is dropped and the group decided again with that request settled as refused —
//! the requests before it meet the same state again, so their decisions stand. A failure of the
//! store itself answers every request of the group with [`Outcome::Direct`]: nothing was
//! committed, and each client applies its request itself and meets the error there.

use std::sync::Arc;

use super::place::{SharedPlace, Stopped, lock_place};
use super::wire::{Envelope, Outcome};
use crate::store::{Decided, Store, StoreError};
use crate::time::Clock;
use crate::tracker::claims;
use crate::tracker::{Refusal, WireRefusal};

/// Who the server's transactions act as when no request sets an actor (never seen in ops:
/// every request sets its own).
const SERVER_ACTOR: &str = "fleet-server";

/// What decides the server's groups: the store, and the server's place and reason to stop,
/// which it uses when it finds the store file replaced (and the loop when it stops for another
/// reason).
pub(super) struct Committer {
    pub store: Arc<Store>,
    /// The server's place, whose socket is removed when the store file turns out to be
    /// replaced.
    pub place: SharedPlace,
    /// Why the server stopped serving, once it did; every request is then left to its client.
    pub stopped: Stopped,
}

impl Committer {
    /// The outcome of every request of `group`, decided and committed together. Answers every
    /// request with [`Outcome::Direct`] (its client applies it itself, checking the request id)
    /// when the store file was replaced before or during the commit — the group went into a
    /// file nobody reads — or when deciding the group panicked: nothing of it was committed
    /// then, and the server goes on.
    pub fn decide(&self, group: &[&Envelope]) -> Vec<Outcome> {
        if let Some(why) = self.not_serving() {
            return vec![Outcome::Direct(why); group.len()];
        }
        let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_group(&self.store, group)
        }));
        let outcomes = match decided {
            Ok(outcomes) => outcomes,
            Err(_) => {
                tracing::error!("deciding a group of requests panicked; its clients apply them");
                return vec![
                    Outcome::Direct("the server failed on this request".into());
                    group.len()
                ];
            }
        };
        match self.not_serving() {
            Some(why) => vec![Outcome::Direct(why); group.len()],
            None => outcomes,
        }
    }

    /// Why this server decides nothing any more: it stopped serving, or its store file was
    /// replaced since it was opened — it would write to a file nobody reads, so it stops
    /// serving then (the socket goes, commands write directly) and says so once.
    fn not_serving(&self) -> Option<String> {
        if let Some(why) = self.stopped.get() {
            return Some(why.clone());
        }
        let why = self.store.file_replaced()?;
        Some(self.stop_serving(why))
    }

    /// Stops serving for `why`, whoever found it (the store file replaced, the workspace taken
    /// over, the loop failing): says so in the log, removes the socket if it is still this
    /// server's (commands then write directly), and keeps the reason for the owner. Returns the
    /// reason kept: the first one given.
    pub fn stop_serving(&self, why: String) -> String {
        tracing::error!(%why, "stopped serving the workspace");
        lock_place(&self.place).remove_socket();
        self.stopped.get_or_init(|| why).clone()
    }
}

/// Decides `group` in one transaction and commits it (see the module documentation). Each
/// request is decided at one instant fixed for the group, so deciding the group again (after a
/// partly applied refusal) meets the same state. A group that changed nothing is not committed.
pub(super) fn commit_group(store: &Store, group: &[&Envelope]) -> Vec<Outcome> {
    let mut settled: Vec<Option<Outcome>> = vec![None; group.len()];
    if group.iter().any(|e| e.request.claims()) && !claims_locally(store) {
        for (slot, envelope) in settled.iter_mut().zip(group) {
            if envelope.request.claims() {
                *slot = Some(Outcome::Direct("claims are confirmed on a git remote".into()));
            }
        }
    }
    let now = jiff::Timestamp::now();
    loop {
        let mut changed = false;
        let decided = store.write_or_roll_back(SERVER_ACTOR, Clock::Fixed(now), |writer| {
            let mut outcomes = Vec::with_capacity(group.len());
            for (n, envelope) in group.iter().enumerate() {
                if let Some(outcome) = &settled[n] {
                    outcomes.push(outcome.clone());
                    continue;
                }
                writer.set_actor(&envelope.actor);
                writer.set_clock(Clock::Fixed(envelope.now.unwrap_or(now)));
                let before = writer.change_count();
                match super::apply_once(writer, Some(envelope.id), &envelope.request) {
                    Ok(reply) => {
                        changed |= writer.change_count() > before;
                        outcomes.push(Outcome::Applied(reply));
                    }
                    Err(refusal) if !refusal.is_fatal() && writer.change_count() == before => {
                        outcomes.push(Outcome::Refused(WireRefusal::from(&refusal)));
                    }
                    Err(refusal) => {
                        // Partly applied, or the store failed on this request: settle it and
                        // decide the rest again without it.
                        let outcome = if refusal.is_fatal() {
                            Outcome::Direct(format!("the server failed on this request: {refusal}"))
                        } else {
                            Outcome::Refused(WireRefusal::from(&refusal))
                        };
                        return Ok(Decided::RollBack(Redo::Settle(n, outcome)));
                    }
                }
            }
            if !changed {
                // Nothing to make durable: roll back instead of paying a commit.
                return Ok(Decided::RollBack(Redo::Unchanged(outcomes)));
            }
            Ok(Decided::Commit(outcomes))
        });
        match decided {
            Ok(Decided::Commit((outcomes, _))) => return outcomes,
            Ok(Decided::RollBack(Redo::Settle(n, outcome))) => settled[n] = Some(outcome),
            Ok(Decided::RollBack(Redo::Unchanged(outcomes))) => return outcomes,
            Err(error) => {
                tracing::warn!(%error, "a group commit failed; its clients apply their requests themselves");
                let why = format!("the server's commit failed: {error}");
                return settled
                    .into_iter()
                    .map(|s| s.unwrap_or_else(|| Outcome::Direct(why.clone())))
                    .collect();
            }
        }
    }
}

/// Why a group's transaction was dropped on purpose.
enum Redo {
    /// Request `n` is settled with this outcome; decide the group again.
    Settle(usize, Outcome),
    /// Nothing changed: these are the answers, and there is nothing to commit.
    Unchanged(Vec<Outcome>),
}

/// Whether claims are decided in this store alone (not confirmed on a remote).
fn claims_locally(store: &Store) -> bool {
    matches!(claims::decided_remotely(store), Ok(false))
}

impl From<WireRefusal> for StoreError {
    fn from(refusal: WireRefusal) -> StoreError {
        Refusal::from(refusal).into()
    }
}
