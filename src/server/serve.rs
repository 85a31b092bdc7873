//! Starting and stopping the server of a workspace: its lock, its socket, and the thread of its
//! event loop (`event_loop`), which reads the requests of every connection and decides them in
//! groups (`group`).
//!
//! Only one process serves a workspace: it holds an exclusive `flock` on [`LOCK_FILE`] for as
//! long as it serves, so a socket file found without the lock held is stale (its server was
//! killed) and is replaced. The socket is made owner-only, and a connection whose peer runs as
//! another user is closed unanswered.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use mio::{Interest, Poll, Waker};

use super::event_loop::{EventLoop, LISTENER, OnCommit, WAKER};
use super::group::Committer;
use super::{LOCK_FILE, SOCKET_FILE, socket_path};
use crate::store::Store;

/// How long dropping a server waits for its loop to answer the requests it has read.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why a workspace cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{} is already served by another fleet process", .0.display())]
    AlreadyServed(PathBuf),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

fn io_error(context: String) -> impl FnOnce(std::io::Error) -> ServeError {
    move |source| ServeError::Io { context, source }
}

/// A running server. Dropping it stops listening and removes the socket file; requests already
/// read are still committed and answered.
pub struct Server {
    socket: PathBuf,
    stopping: Arc<AtomicBool>,
    /// Wakes the loop to see `stopping`.
    waker: Waker,
    /// Disconnected when the loop's thread ends.
    finished: Receiver<()>,
    /// Set by the committer when the store file was replaced under it (a rebuild, a salvage):
    /// it then stops serving, and the owner should stop too.
    lost: Arc<AtomicBool>,
    /// Held (flock) while serving.
    _lock: File,
}

impl Server {
    /// Serves `store`'s workspace until dropped.
    pub fn start(store: Arc<Store>, on_commit: OnCommit) -> Result<Server, ServeError> {
        let dir = store.dir().to_path_buf();
        let lock = take_lock(&dir)?;
        let socket = socket_path(&dir);
        let mut listener = bind(&socket)?;
        let poll = Poll::new().map_err(io_error("starting the event loop".into()))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(io_error(format!("watching {}", socket.display())))?;
        let waker = Waker::new(poll.registry(), WAKER)
            .map_err(io_error("starting the event loop".into()))?;
        let lost = Arc::new(AtomicBool::new(false));
        let stopping = Arc::new(AtomicBool::new(false));
        let committer = Committer { store, socket: socket.clone(), lost: Arc::clone(&lost) };
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
        Ok(Server { socket, stopping, waker, finished, lost, _lock: lock })
    }

    /// The socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Whether it stopped serving because the store file was replaced (see
    /// [`Store::file_replaced`]); requests are then left to the commands themselves.
    pub fn lost_store(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
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
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Takes the serving lock of the workspace `dir`, or says who holds it. Once taken, makes sure
/// the workspace's `.gitignore` ignores the lock and the socket (a file beads wrote lacks
/// them); best effort, logged.
fn take_lock(dir: &Path) -> Result<File, ServeError> {
    let path = dir.join(LOCK_FILE);
    let file = crate::fsutil::try_lock_exclusive(&path)
        .map_err(io_error(format!("locking {}", path.display())))?
        .ok_or_else(|| ServeError::AlreadyServed(dir.to_path_buf()))?;
    crate::beads::gitignore::ignore_or_warn(dir, &[LOCK_FILE, SOCKET_FILE]);
    Ok(file)
}

/// Binds the socket, replacing a stale one (the caller holds the serving lock), owner-only and
/// nonblocking.
fn bind(socket: &Path) -> Result<mio::net::UnixListener, ServeError> {
    match std::fs::remove_file(socket) {
        Ok(()) => tracing::info!(socket = %socket.display(), "replaced a stale socket"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(format!("removing {}", socket.display()))(error)),
    }
    let listener = mio::net::UnixListener::bind(socket)
        .map_err(io_error(format!("listening on {}", socket.display())))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(io_error(format!("making {} owner-only", socket.display())))?;
    Ok(listener)
}
