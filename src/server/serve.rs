//! The serving side: a listener thread accepting connections from processes of this user, a
//! thread per connection reading envelopes, and one committer thread that applies every
//! request waiting at the moment in one write transaction (group commit) and then answers each.
//!
//! Only one process serves a workspace: it holds an exclusive `flock` on [`LOCK_FILE`] for as
//! long as it serves, so a socket file found without the lock held is stale (its server was
//! killed) and is replaced. The socket is made owner-only, and a connection whose peer runs as
//! another user is closed unanswered.
//!
//! A group is decided one request after another, each seeing the ones before, exactly as if
//! they had run one by one. A refused request changes nothing and the group goes on. A request
//! refused after it had already applied some of its ops (a close guard after an edit, say)
//! cannot be undone inside the transaction (redb's multi-writer mode has no savepoints), so the
//! transaction is dropped and the group decided again with that request settled as refused —
//! the requests before it meet the same state again, so their decisions stand. A failure of the
//! store itself answers every request of the group with [`Outcome::Direct`]: nothing was
//! committed, and each client applies its request itself and meets the error there.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use super::wire::{self, Answer, Envelope, Outcome, PROTOCOL_VERSION};
use super::{LOCK_FILE, SOCKET_FILE, socket_path};
use crate::claim::ClaimMode;
use crate::store::{Store, StoreError};
use crate::time::Clock;
use crate::tracker::{Refusal, WireRefusal};

/// The most requests decided in one transaction.
const MAX_GROUP: usize = 512;
/// A connection with no request for this long is closed.
const IDLE: Duration = Duration::from_secs(60);
/// Who the server's transactions act as when no request sets an actor (never seen in ops:
/// every request sets its own).
const SERVER_ACTOR: &str = "fleet-server";

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
/// received are still committed and answered.
pub struct Server {
    socket: PathBuf,
    stopping: Arc<AtomicBool>,
    /// Set by the committer when the store file was replaced under it (a rebuild, a salvage):
    /// it then stops serving, and the owner should stop too.
    lost: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
    /// The listening socket, shut down to end the listener's blocking accept.
    listener: UnixListener,
    /// Held (flock) while serving.
    _lock: File,
}

/// Called after every group commit (the supervisor wakes on it).
pub type OnCommit = Box<dyn Fn() + Send + 'static>;

struct Job {
    envelope: Envelope,
    answer: SyncSender<Outcome>,
}

impl Server {
    /// Serves `store`'s workspace until dropped.
    pub fn start(store: Arc<Store>, on_commit: OnCommit) -> Result<Server, ServeError> {
        let dir = store.dir().to_path_buf();
        let lock = take_lock(&dir)?;
        let socket = socket_path(&dir);
        let listener = bind(&socket)?;
        let (jobs, received) = channel::<Job>();
        let lost = Arc::new(AtomicBool::new(false));
        let committer = Committer { store, socket: socket.clone(), lost: Arc::clone(&lost) };
        std::thread::Builder::new()
            .name("fleet-committer".into())
            .spawn(move || committer.run(&received, &on_commit))
            .map_err(io_error("starting the committer thread".into()))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stopping);
        let listening = listener
            .try_clone()
            .map_err(io_error(format!("sharing the socket {}", socket.display())))?;
        let acceptor = std::thread::Builder::new()
            .name("fleet-listener".into())
            .spawn(move || accept_loop(&listener, &jobs, &flag))
            .map_err(io_error("starting the listener thread".into()))?;
        tracing::info!(socket = %socket.display(), "serving the workspace");
        Ok(Server {
            socket,
            stopping,
            lost,
            acceptor: Some(acceptor),
            listener: listening,
            _lock: lock,
        })
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
        self.stopping.store(true, Ordering::SeqCst);
        // End the listener's blocking accept (shutting a listening socket down makes accept
        // fail at once), then make the socket vanish before the lock is released, so no
        // client connects to a server that is gone.
        // SAFETY: shutdown on a descriptor this server owns.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
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

/// Binds the socket, replacing a stale one (the caller holds the serving lock), owner-only.
fn bind(socket: &Path) -> Result<UnixListener, ServeError> {
    match std::fs::remove_file(socket) {
        Ok(()) => tracing::info!(socket = %socket.display(), "replaced a stale socket"),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(format!("removing {}", socket.display()))(error)),
    }
    let listener = UnixListener::bind(socket)
        .map_err(io_error(format!("listening on {}", socket.display())))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(io_error(format!("making {} owner-only", socket.display())))?;
    Ok(listener)
}

fn accept_loop(listener: &UnixListener, jobs: &Sender<Job>, stopping: &AtomicBool) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                tracing::warn!(%error, "accepting a connection");
                // Out of descriptors, say: give the process a moment rather than spin.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if !super::peer_is_same_user(&stream) {
            tracing::warn!("refused a connection from another user");
            continue;
        }
        let jobs = jobs.clone();
        let spawned = std::thread::Builder::new()
            .name("fleet-connection".into())
            .spawn(move || serve_connection(stream, &jobs));
        if let Err(error) = spawned {
            tracing::warn!(%error, "starting a connection thread");
        }
    }
}

/// Reads envelopes from one client and answers each, until it hangs up or idles out.
fn serve_connection(mut stream: UnixStream, jobs: &Sender<Job>) {
    let _ = stream.set_read_timeout(Some(IDLE));
    loop {
        let frame = match wire::read_frame_bytes(&mut stream) {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%error, "reading a request");
                return;
            }
        };
        let Some(answer) = answer_frame(frame, jobs) else { return };
        if let Err(error) = wire::write_frame(&mut stream, &answer) {
            tracing::debug!(%error, "answering a request");
            return;
        }
    }
}

/// The answer to one frame; `None` when the committer is gone. An envelope of this protocol
/// decodes at once; anything else is looked at only for its id and version, and answered
/// with [`Outcome::Direct`].
fn answer_frame(frame: Vec<u8>, jobs: &Sender<Job>) -> Option<Answer> {
    let envelope = match serde_json::from_slice::<Envelope>(&frame) {
        Ok(envelope) if envelope.version == PROTOCOL_VERSION => envelope,
        parsed => return Some(not_understood(&frame, parsed.err())),
    };
    let id = envelope.id;
    let (answer, answered) = sync_channel(1);
    jobs.send(Job { envelope, answer }).ok()?;
    let outcome = answered.recv().ok()?;
    Some(Answer { version: PROTOCOL_VERSION, id, outcome })
}

/// The answer to a frame that is not an envelope of this protocol: [`Outcome::Direct`], under
/// its id when it has one.
fn not_understood(frame: &[u8], error: Option<serde_json::Error>) -> Answer {
    let value: serde_json::Value = serde_json::from_slice(frame).unwrap_or_default();
    let id = value
        .get("id")
        .and_then(|id| serde_json::from_value::<ulid::Ulid>(id.clone()).ok())
        .unwrap_or_default();
    let version = value.get("version").and_then(serde_json::Value::as_u64);
    let why = match error {
        Some(error) if version == Some(u64::from(PROTOCOL_VERSION)) => {
            format!("request not understood: {error}")
        }
        _ => format!("protocol version {version:?}; this server speaks {PROTOCOL_VERSION}"),
    };
    Answer { version: PROTOCOL_VERSION, id, outcome: Outcome::Direct(why) }
}

/// The committer thread: takes every request waiting, commits them as one group, answers.
struct Committer {
    store: Arc<Store>,
    socket: PathBuf,
    lost: Arc<AtomicBool>,
}

impl Committer {
    fn run(&self, jobs: &Receiver<Job>, on_commit: &OnCommit) {
        while let Ok(first) = jobs.recv() {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match jobs.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            let outcomes = match self.replaced() {
                Some(why) => vec![Outcome::Direct(why); group.len()],
                None => self.commit(&group),
            };
            tracing::debug!(requests = group.len(), "group committed");
            for (job, outcome) in group.into_iter().zip(outcomes) {
                let _ = job.answer.send(outcome);
            }
            on_commit();
        }
    }

    /// Commits `group`. Answers every request with [`Outcome::Direct`] (its client applies it
    /// itself, checking the request id) when the store file turned out to be replaced during
    /// the commit — the group went into a file nobody reads — or when deciding the group
    /// panicked: nothing of it was committed then, and the server goes on.
    fn commit(&self, group: &[Job]) -> Vec<Outcome> {
        let envelopes: Vec<&Envelope> = group.iter().map(|job| &job.envelope).collect();
        let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_group(&self.store, &envelopes)
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
        match self.replaced() {
            Some(why) => vec![Outcome::Direct(why); group.len()],
            None => outcomes,
        }
    }

    /// Whether the store file was replaced since it was opened: then this server would write
    /// to a file nobody reads, so it stops serving (the socket goes, commands write directly)
    /// and says so once.
    fn replaced(&self) -> Option<String> {
        if self.lost.load(Ordering::SeqCst) {
            return Some("the server lost its store file".into());
        }
        let why = self.store.file_replaced()?;
        tracing::error!(%why, "stopped serving the workspace");
        let _ = std::fs::remove_file(&self.socket);
        self.lost.store(true, Ordering::SeqCst);
        Some(why)
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
        let mut redo = None;
        let mut changed = false;
        let decided = store.write(SERVER_ACTOR, Clock::Fixed(now), |writer| {
            let mut outcomes = Vec::with_capacity(group.len());
            for (n, envelope) in group.iter().enumerate() {
                if let Some(outcome) = &settled[n] {
                    outcomes.push(outcome.clone());
                    continue;
                }
                writer.set_actor(&envelope.actor);
                writer.set_clock(Clock::Fixed(envelope.now.unwrap_or(now)));
                let before = writer.applied_count();
                match super::apply_once(writer, Some(envelope.id), &envelope.request) {
                    Ok(reply) => {
                        changed |= writer.applied_count() > before;
                        outcomes.push(Outcome::Applied(reply));
                    }
                    Err(refusal) if !refusal.is_fatal() && writer.applied_count() == before => {
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
                        redo = Some(Redo::Settle(n, outcome));
                        return Err(StoreError::Refused(refusal.to_string()));
                    }
                }
            }
            if !changed {
                // Nothing to make durable: roll back instead of paying a commit.
                redo = Some(Redo::Unchanged(outcomes));
                return Err(StoreError::Refused("nothing changed".into()));
            }
            Ok(outcomes)
        });
        match (decided, redo) {
            (Ok((outcomes, _)), _) => return outcomes,
            (Err(_), Some(Redo::Settle(n, outcome))) => settled[n] = Some(outcome),
            (Err(_), Some(Redo::Unchanged(outcomes))) => return outcomes,
            (Err(error), None) => {
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
    matches!(ClaimMode::of(store), Ok(ClaimMode::Local))
}

impl From<WireRefusal> for StoreError {
    fn from(refusal: WireRefusal) -> StoreError {
        Refusal::from(refusal).into()
    }
}
