//! Claiming work: the claim request of the [`tracker`] (a compare-and-set in the store)
//! wrapped for callers, one claim per transaction or many in one.
//!
//! A claim is decided inside one write transaction — open and unassigned (or already the
//! claimer's) becomes in_progress with the claimer as assignee — so exactly one of any number
//! of concurrent claimers, in any number of processes, wins an issue.
//!
//! [`ClaimGroup`] serves many claimers in one process: a single committer thread takes every
//! request waiting at the moment, decides them one after another in one shared transaction,
//! commits once, and only then answers each claimer. Each decision sees the ones before it, so
//! the result is exactly what the same claims made one by one would give, at the cost of one
//! durable commit per group instead of one per claim.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use crate::model::Issue;
use crate::store::{ReadyFilter, Store, StoreError, Writer};
use crate::time::Clock;
use crate::tracker;

/// Claims `id` for the writer's actor. Returns the claimed issue.
pub fn claim_in(writer: &mut Writer<'_>, id: &str) -> Result<Issue, StoreError> {
    Ok(tracker::claim(writer, id)?)
}

/// Claims the first ready issue (in ready order) that the writer's actor may take.
pub fn claim_next_in(
    writer: &mut Writer<'_>,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, StoreError> {
    Ok(tracker::claim_next(writer, filter, &|_| true)?)
}

/// Claims `id` for `actor` in its own transaction.
pub fn claim(store: &Store, actor: &str, clock: Clock, id: &str) -> Result<Issue, StoreError> {
    store.write(actor, clock, |w| claim_in(w, id)).map(|(issue, _)| issue)
}

/// Claims the first ready issue for `actor` in its own transaction.
pub fn claim_next(
    store: &Store,
    actor: &str,
    clock: Clock,
    filter: &ReadyFilter,
) -> Result<Option<Issue>, StoreError> {
    store.write(actor, clock, |w| claim_next_in(w, filter)).map(|(issue, _)| issue)
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
