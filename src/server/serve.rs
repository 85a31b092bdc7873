//! Starting and stopping the server of a workspace: its place there (`place`: the serving lock
//! and the socket) and the thread of its event loop (`event_loop`), which reads the requests of
//! every connection and decides them in groups (`group`). A connection whose peer runs as
//! another user is closed unanswered.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mio::{Interest, Poll, Waker};

use super::event_loop::{EventLoop, LISTENER, OnCommit, WAKER};
use super::group::Committer;
use super::place::{Place, ServeError, SharedPlace, Stopped, io_error, lock_place};
use crate::store::Store;

/// How long dropping a server waits for its loop to answer the requests it has read.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running server. Dropping it stops listening and removes the socket file (if it is still
/// its own); requests already read are still committed and answered.
pub struct Server {
    socket: PathBuf,
    stopping: Arc<AtomicBool>,
    /// Wakes the loop to see `stopping`.
    waker: Waker,
    /// Disconnected when the loop's thread ends.
    finished: Receiver<()>,
    /// Set when the server stopped serving on its own: its store file was replaced (a rebuild,
    /// a salvage), another process took the workspace over, or waiting for requests failed.
    /// The owner should stop too.
    stopped: Stopped,
    /// The lock (held while serving) and the socket.
    place: SharedPlace,
}

impl Server {
    /// Serves `store`'s workspace until dropped.
    pub fn start(store: Arc<Store>, on_commit: OnCommit) -> Result<Server, ServeError> {
        let (place, mut listener) = Place::take(store.dir())?;
        let socket = place.socket().to_path_buf();
        let poll = Poll::new().map_err(io_error("starting the event loop".into()))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(io_error(format!("watching {}", socket.display())))?;
        let waker = Waker::new(poll.registry(), WAKER)
            .map_err(io_error("starting the event loop".into()))?;
        let place = Arc::new(Mutex::new(place));
        let stopped = Stopped::default();
        let stopping = Arc::new(AtomicBool::new(false));
        let committer =
            Committer { store, place: Arc::clone(&place), stopped: Arc::clone(&stopped) };
        let event_loop =
            EventLoop::new(poll, listener, committer, on_commit, Arc::clone(&stopping));
        let (finishing, finished) = channel::<()>();
        std::thread::Builder::new()
            .name("fleet-server".into())
            .spawn(move || {
                let _finishing = finishing;
                event_loop.run();
            })
            .map_err(io_error("starting the server thread".into()))?;
        tracing::info!(socket = %socket.display(), "serving the workspace");
        Ok(Server { socket, stopping, waker, finished, stopped, place })
    }

    /// The socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Why it stopped serving on its own, if it did: its store file was replaced (see
    /// [`Store::file_replaced`]), another process serves the workspace now, or its thread
    /// ended. Requests are then left to the commands themselves.
    pub fn stopped_serving(&self) -> Option<String> {
        if let Some(why) = self.stopped.get() {
            return Some(why.clone());
        }
        match self.finished.try_recv() {
            Err(TryRecvError::Disconnected) => Some("the server's thread ended".into()),
            Ok(()) | Err(TryRecvError::Empty) => None,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Stop the loop and give it a moment to answer what it has read (a group waiting for
        // the store's lock is left to finish on its own), then make the socket vanish before
        // the lock is released, so no client connects to a server that is gone.
        self.stopping.store(true, Ordering::SeqCst);
        if self.waker.wake().is_ok() {
            let _ = self.finished.recv_timeout(STOP_GRACE);
        }
        lock_place(&self.place).remove_socket();
    }
}
