//! The server's group commit for the threads of one process, without a socket: each
//! [`InProcess::submit`] hands a request to one committer thread, which takes every request
//! waiting at that moment, decides them together exactly as the server decides a group
//! (`group::commit_group`: one after another in one transaction, each seeing the ones before,
//! then one durable commit), and only then answers each caller. The claim benchmark's
//! `threads` shape runs on it, so what it measures is the server's own deciding.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::client::envelope;
use super::wire::{Envelope, Outcome};
use crate::store::Store;
use crate::time::Clock;
use crate::tracker::Request;

/// One request waiting for the committer, with where its outcome goes.
struct Waiting {
    envelope: Envelope,
    answer: SyncSender<Outcome>,
}

/// A committer thread deciding the requests of this process's threads in groups.
pub struct InProcess {
    requests: Option<Sender<Waiting>>,
    committer: Option<JoinHandle<()>>,
    clock: Clock,
    /// The workspace the envelopes name (the store's `.beads` directory).
    dir: std::path::PathBuf,
}

impl InProcess {
    /// Starts the committer thread for `store`; requests are stamped by `clock`.
    pub fn start(store: Arc<Store>, clock: Clock) -> std::io::Result<InProcess> {
        let (requests, incoming) = channel();
        let dir = store.dir().to_path_buf();
        let committer = std::thread::Builder::new()
            .name("fleet-group-commit".into())
            .spawn(move || commit_groups(&store, &incoming))?;
        Ok(InProcess { requests: Some(requests), committer: Some(committer), clock, dir })
    }

    /// Applies `request` as `actor` with whatever else is waiting; blocks until the group
    /// holding it was durably committed (or refused, or failed: [`Outcome::Direct`]).
    pub fn submit(&self, actor: &str, request: Request) -> Outcome {
        let (answer, outcome) = sync_channel(1);
        let waiting = Waiting { envelope: envelope(&self.dir, actor, self.clock, request), answer };
        let stopped = || Outcome::Direct("the group committer has stopped".into());
        let Some(requests) = self.requests.as_ref() else { return stopped() };
        if requests.send(waiting).is_err() {
            return stopped();
        }
        outcome.recv().unwrap_or_else(|_| stopped())
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.requests.take();
        if let Some(committer) = self.committer.take() {
            let _ = committer.join();
        }
    }
}

/// The committer: every request waiting when it wakes is one group.
fn commit_groups(store: &Store, incoming: &Receiver<Waiting>) {
    while let Ok(first) = incoming.recv() {
        let mut group = vec![first];
        group.extend(incoming.try_iter());
        let envelopes: Vec<&Envelope> = group.iter().map(|waiting| &waiting.envelope).collect();
        let outcomes = super::group::commit_group(store, &envelopes);
        for (waiting, outcome) in group.iter().zip(outcomes) {
            let _ = waiting.answer.send(outcome);
        }
    }
}
