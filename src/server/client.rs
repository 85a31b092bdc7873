//! What a command does with a write request: send it to the workspace's server, or apply it
//! itself — and never both.
//!
//! [`submit`] tries the socket first. No socket file, a stale one (nobody listening), or a
//! server speaking another protocol means the request was not applied there: the command opens
//! the store and applies it in its own transaction, as it always could. A request that was sent
//! but not answered within the deadline (a hung or killed server) may or may not have been
//! applied, so the command's own transaction first looks up the request id among the recorded
//! replies and applies the request only if it is not there. `FLEET_DIRECT=1` skips the socket.
//!
//! A command talks only to its own workspace's server: the socket must be a socket of this
//! user's in the workspace's directory, not a symbolic link ([`check_socket`]), and every
//! request names its workspace ([`Envelope::workspace`]), which a server of another one leaves
//! to the command.

use std::borrow::Borrow;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::wire::{self, Answer, Envelope, Outcome, PROTOCOL_VERSION};
use crate::store::{Store, StoreError};
use crate::time::Clock;
use crate::tracker::claims::{self, ClaimError};
use crate::tracker::{Refusal, Reply, Request};

/// What came of sending a request.
#[derive(Debug)]
pub enum Sent {
    /// The server answered.
    Answered(Outcome),
    /// Nothing was sent (no server); the request is certainly not applied.
    NotServed(String),
    /// Sent, but no answer: the request may have been applied.
    Unanswered(String),
}

/// The deadline for an answer (`FLEET_SERVER_DEADLINE_MS`, see `crate::env`).
pub fn deadline() -> Duration {
    crate::env::server_deadline()
}

/// Whether commands skip the server (`FLEET_DIRECT`).
fn direct_only() -> bool {
    crate::env::direct_only()
}

/// Whether commands must fail rather than write directly when no server applied their
/// request (`FLEET_REQUIRE_SERVER`: tests that must prove their writes went through a server).
/// The failure is exact: a request the server did not answer is looked up, and either its
/// reply is the answer or it is recorded as given up, so the server never applies it later.
fn server_required() -> bool {
    crate::env::server_required()
}

/// A connection to the server of the workspace `dir`, if one is listening.
pub struct Connection {
    stream: UnixStream,
    deadline: Duration,
}

impl Connection {
    /// Connects to the server of the `.beads` directory `dir` within `deadline` (a server that
    /// stopped accepting, with its queue of connections full, would block a plain connect
    /// forever), and only to a server running as this user, through a socket this user owns
    /// in `dir` itself ([`check_socket`]).
    pub fn open(dir: &Path, deadline: Duration) -> Result<Connection, String> {
        let socket = crate::workspace::socket(dir);
        check_socket(&socket)?;
        let stream = connect_within(&socket, deadline)?;
        if !super::peer_is_same_user(&stream) {
            return Err(format!("{} is served by another user", socket.display()));
        }
        stream.set_write_timeout(Some(deadline)).map_err(|e| e.to_string())?;
        Ok(Connection { stream, deadline })
    }

    /// Sends one envelope and waits for its answer, at most the deadline in all.
    pub fn send(&mut self, envelope: &Envelope) -> Sent {
        let until = std::time::Instant::now() + self.deadline;
        if let Err(error) = wire::write_frame(&mut self.stream, envelope) {
            return Sent::Unanswered(format!("sending: {error}"));
        }
        let mut reader = DeadlineReader { stream: &self.stream, until };
        match wire::read_frame::<Answer>(&mut reader) {
            Ok(Some(answer)) if answer.id == envelope.id => Sent::Answered(answer.outcome),
            Ok(Some(answer)) => {
                Sent::Unanswered(format!("answer for another request {}", answer.id))
            }
            Ok(None) => Sent::Unanswered("the server hung up".into()),
            Err(error) => Sent::Unanswered(format!("waiting for the answer: {error}")),
        }
    }
}

/// Checks that `socket` is a socket of this user's, not a symbolic link: a link (or any
/// file put there by someone else) could send this workspace's writes to another
/// workspace's server. The server checks the workspace each request names as well.
fn check_socket(socket: &Path) -> Result<(), String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("no socket at {}", socket.display()));
        }
        Err(error) => return Err(format!("{}: {error}", socket.display())),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(format!(
            "{} is a symbolic link, not this workspace's socket; remove it (the serving process \
             makes its own)",
            socket.display()
        ));
    }
    if !kind.is_socket() {
        return Err(format!("{} is not a socket", socket.display()));
    }
    // SAFETY: geteuid has no preconditions.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(format!("{} belongs to another user (uid {})", socket.display(), meta.uid()));
    }
    Ok(())
}

/// The workspace a request names ([`Envelope::workspace`]): the canonical path of `dir`.
pub fn workspace_name(dir: &Path) -> std::path::PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// Connects to `socket` within `deadline`. The connect does not block: a server that stopped
/// accepting, with its queue of connections full, refuses it at once (`EAGAIN`), and it is
/// tried again every millisecond until the deadline (a blocking connect would wait forever).
fn connect_within(socket: &Path, deadline: Duration) -> Result<UnixStream, String> {
    use std::io::ErrorKind;
    let until = std::time::Instant::now() + deadline;
    loop {
        match connect_nonblocking(socket) {
            Ok(stream) => {
                stream.set_nonblocking(false).map_err(|e| format!("connecting: {e}"))?;
                return Ok(stream);
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                if std::time::Instant::now() >= until {
                    return Err(format!("{}: no connection within {deadline:?}", socket.display()));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(format!("no socket at {}", socket.display()));
            }
            Err(error) => return Err(format!("{}: {error}", socket.display())),
        }
    }
}

/// One nonblocking connect to the Unix socket at `path`.
fn connect_nonblocking(path: &Path) -> std::io::Result<UnixStream> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let mut address =
        libc::sockaddr_un { sun_family: libc::AF_UNIX as libc::sa_family_t, sun_path: [0; 108] };
    let bytes = path.as_os_str().as_bytes();
    // The path and its terminating NUL must fit (the NUL is already there: the array is zeroed).
    if bytes.len() >= address.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "a socket path must be shorter than {} bytes, without NUL bytes",
                address.sun_path.len()
            ),
        ));
    }
    for (slot, byte) in address.sun_path.iter_mut().zip(bytes) {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: socket has no preconditions; a negative result is an error, checked below.
    let fd = unsafe {
        libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0)
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a socket just made and owned by nothing else.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let length = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `address` is a valid sockaddr_un of `length` bytes that outlives the call.
    let rc = unsafe { libc::connect(fd, (&raw const address).cast(), length) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(UnixStream::from(socket))
}

/// Reads from a stream with one deadline for all reads together.
struct DeadlineReader<'s> {
    stream: &'s UnixStream,
    until: std::time::Instant,
}

impl std::io::Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"));
        }
        self.stream.set_read_timeout(Some(left))?;
        (&mut &*self.stream).read(buf)
    }
}

/// A new envelope for `request` to the workspace `dir` by `actor` at `clock`.
pub fn envelope(dir: &Path, actor: &str, clock: Clock, request: Request) -> Envelope {
    Envelope {
        version: PROTOCOL_VERSION,
        id: ulid::Ulid::generate(),
        workspace: workspace_name(dir),
        actor: actor.to_string(),
        now: match clock {
            Clock::Fixed(now) => Some(now),
            Clock::System => None,
        },
        request,
    }
}

/// Applies `request` as `actor` on the workspace `dir`: through its server when one answers,
/// else in a transaction of its own on the store `open` opens — or hands over, for a caller
/// that keeps one open (see the module documentation).
pub fn submit<E: From<StoreError>, S: Borrow<Store>>(
    dir: &Path,
    actor: &str,
    clock: Clock,
    request: Request,
    open: impl FnOnce() -> Result<S, E>,
) -> Result<Reply, E> {
    Session::new(dir).submit(actor, clock, request, open)
}

/// A client that sends many requests (a long-lived process): it keeps its connection to the
/// server between requests instead of connecting for each.
pub struct Session<'d> {
    dir: &'d Path,
    connection: Option<Connection>,
}

impl<'d> Session<'d> {
    pub fn new(dir: &'d Path) -> Session<'d> {
        Session { dir, connection: None }
    }

    /// [`submit`] on this session's connection, made or remade as needed.
    pub fn submit<E: From<StoreError>, S: Borrow<Store>>(
        &mut self,
        actor: &str,
        clock: Clock,
        request: Request,
        open: impl FnOnce() -> Result<S, E>,
    ) -> Result<Reply, E> {
        let mut request = request;
        // The server masks what it knows of; this command's own variables only it knows.
        request.redact(&crate::tracker::environment_redactor());
        let envelope = envelope(self.dir, actor, clock, request);
        let (check, unanswered) = match self.send(&envelope) {
            Sent::Answered(Outcome::Applied(reply)) => return Ok(reply),
            Sent::Answered(Outcome::Refused(refusal)) => {
                return Err(StoreError::from(refusal).into());
            }
            Sent::Answered(Outcome::Direct(why)) if server_required() => {
                return Err(not_served(&format!(
                    "the server left the request to this command: {why}"
                ))
                .into());
            }
            Sent::Answered(Outcome::Direct(why)) => {
                tracing::debug!(%why, "the server left the request to this command");
                (Some(envelope.id), false)
            }
            Sent::NotServed(why) if server_required() => {
                return Err(not_served(&format!("no server answered: {why}")).into());
            }
            Sent::Unanswered(why) if server_required() => {
                let store = open()?;
                let (settled, _) = store.borrow().write(actor, clock, |writer| {
                    super::settle_unanswered(writer, envelope.id).map_err(Refusal::into)
                })?;
                return settled.ok_or_else(|| {
                    not_served(&format!("the server did not answer ({why}) and will not apply it"))
                        .into()
                });
            }
            Sent::NotServed(why) => {
                tracing::debug!(%why, "no server; applying the request directly");
                (None, false)
            }
            Sent::Unanswered(why) => {
                tracing::info!(%why, "no answer from the server; applying the request directly unless it was applied");
                (Some(envelope.id), true)
            }
        };
        let applied = apply_directly(open()?.borrow(), actor, clock, check, &envelope.request);
        Ok(applied.map_err(|error| match error {
            StoreError::LockWait(wait) if unanswered => {
                StoreError::LockWait(wait.with_request_sent())
            }
            other => other,
        })?)
    }

    fn send(&mut self, envelope: &Envelope) -> Sent {
        if direct_only() {
            return Sent::NotServed("FLEET_DIRECT is set".into());
        }
        let mut connection = match self.connection.take() {
            Some(connection) => connection,
            None => match Connection::open(self.dir, deadline()) {
                Ok(connection) => connection,
                Err(why) => return Sent::NotServed(why),
            },
        };
        let sent = connection.send(envelope);
        if matches!(sent, Sent::Answered(_)) {
            self.connection = Some(connection);
        }
        sent
    }
}

/// The refusal of a command under `FLEET_REQUIRE_SERVER` whose request no server applied.
fn not_served(why: &str) -> StoreError {
    StoreError::NotServed(why.to_string())
}

/// Applies `request` in a transaction of its own; with `check`, only if that request id is
/// not recorded as applied (then its recorded reply is the answer).
fn apply_directly(
    store: &Store,
    actor: &str,
    clock: Clock,
    id: Option<ulid::Ulid>,
    request: &Request,
) -> Result<Reply, StoreError> {
    // A claim in remote claim mode is confirmed on the git remote by the claim service; the
    // server never applies these, so there is no request id to check.
    if request.claims() && claims::decided_remotely(store).map_err(claim_error)? {
        return claims::submit_remote(store, actor, clock, request).map_err(claim_error);
    }
    let (reply, _) = store.write(actor, clock, |writer| {
        super::apply_once(writer, id, request).map_err(Refusal::into)
    })?;
    Ok(reply)
}

/// A failed claim as a store error with the claim's words (a refusal of the remote, a bad
/// claim mode).
fn claim_error(error: ClaimError) -> StoreError {
    match error {
        ClaimError::Store(error) => error,
        other => StoreError::Refused(Box::new(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixListener;

    #[test]
    fn a_listening_socket_connects() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let stream = connect_within(&path, Duration::from_secs(2)).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        // The stream is blocking again: a read waits for the answer.
        // SAFETY: F_GETFL on an open descriptor only reads its flags.
        let flags = unsafe { libc::fcntl(stream.as_raw_fd(), libc::F_GETFL) };
        assert!(flags >= 0 && flags & libc::O_NONBLOCK == 0, "flags {flags:#x}");
        std::io::Write::write_all(&mut &accepted, b"!").unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(std::io::Read::read(&mut &stream, &mut byte).unwrap(), 1);
    }

    /// A server that stopped accepting, its queue of connections full, is given up on at the
    /// deadline instead of blocking the command forever.
    #[test]
    fn a_server_with_a_full_queue_is_given_up_at_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        // The shortest queue (one waiting connection), so few descriptors fill it.
        // SAFETY: listen on a bound socket only changes its backlog.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 0) }, 0);
        let mut queued = Vec::new();
        loop {
            match connect_nonblocking(&path) {
                Ok(stream) => queued.push(stream),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(error) => panic!("filling the queue: {error}"),
            }
            assert!(queued.len() < 64, "the queue never filled");
        }
        let started = std::time::Instant::now();
        let error = connect_within(&path, Duration::from_millis(100)).unwrap_err();
        let took = started.elapsed();
        assert!(error.contains("no connection within"), "{error}");
        assert!(took >= Duration::from_millis(100) && took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn no_socket_and_a_too_long_path_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = connect_within(&dir.path().join("none.sock"), Duration::from_secs(1));
        assert!(missing.unwrap_err().contains("no socket at"));
        let long = dir.path().join("x".repeat(200));
        std::fs::write(&long, "").unwrap();
        let error = connect_within(&long, Duration::from_secs(1)).unwrap_err();
        assert!(error.contains("shorter than 108 bytes"), "{error}");
    }
}
