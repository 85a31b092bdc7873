//! The server's one thread: an event loop over the listening socket and every connection.
//!
//! Each turn waits until something is ready, reads every request that has arrived on any
//! connection, decides the waiting requests as one group in one write transaction (`group`),
//! and writes each answer back on its connection. Requests that arrive while a group commits
//! are the next group. No request passes from one thread to another (with 64 clients on two
//! cores and the store on tmpfs, where CPU is all there is, dropping the thread per connection
//! took the median from 7,132 to 8,830 served claims a second), and an idle connection costs a
//! buffer, not a thread.
//!
//! Sockets are nonblocking and edge-triggered (mio): a readable connection is read until it
//! would block, or for at most [`READ_BUDGET`] per turn and again in the next turns (so one
//! client streaming requests cannot hold up the others); an answer the client's buffer cannot
//! take at once waits in the connection until the socket says it is writable. A connection's
//! answers are written in the order of its requests. A client that ends its side after sending (a shutdown for writing) still gets
//! its answers before the connection closes. A client that hangs up before its answer still has
//! its request decided, as when a server is killed after its commit: sent again, the request
//! is answered from the reply recorded under its id.

use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Registry, Token};

use super::group::Committer;
use super::place::Check;
use super::place::lock_place;
use super::wire::{self, Answer, Envelope, MAX_FRAME, Outcome, PROTOCOL_VERSION};

/// The listening socket's token.
pub(super) const LISTENER: Token = Token(0);
/// The token of the waker that tells the loop to stop.
pub(super) const WAKER: Token = Token(1);
/// The most requests decided in one transaction.
const MAX_GROUP: usize = 512;
/// A connection that moves nothing (no request read, no answer written) for this long is
/// closed.
const IDLE: Duration = Duration::from_secs(60);
/// How often connections are checked for idleness.
const SWEEP: Duration = Duration::from_secs(1);
/// The most answer bytes a connection may leave unread before it is closed (a client that
/// sends requests and never reads their answers).
const MAX_UNREAD: usize = 2 * MAX_FRAME;
/// How much one read takes at most.
const READ_CHUNK: usize = 16 * 1024;
/// How much of one connection is read in one turn of the loop; the rest is read in the next
/// turns, so a client that sends without pause cannot keep the others waiting.
const READ_BUDGET: usize = 4 * READ_CHUNK;
/// The most requests of one connection read and not yet answered; past it, the connection is
/// not read until some are answered.
const MAX_UNANSWERED: usize = 1024;
/// How long the loop waits before accepting again after an accept failed (out of descriptors,
/// say): connections already queued bring no new event.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Called after every group commit (the supervisor wakes on it).
pub type OnCommit = Box<dyn Fn() + Send + 'static>;

/// One client's connection.
struct Connection {
    stream: UnixStream,
    /// Bytes read and not yet taken as whole frames.
    unread: Vec<u8>,
    /// Answer bytes the socket has not taken yet.
    unsent: Vec<u8>,
    /// Whether the socket is registered for writability (while `unsent` is not empty).
    awaits_writable: bool,
    /// When a read or a write last moved something: a connection without progress for
    /// [`IDLE`] is closed, whether it has answers waiting or not.
    last_progress: Instant,
    /// Requests read from it and not yet answered.
    unanswered: usize,
    /// The client ended its side (a shutdown for writing, or a close): it sends nothing more,
    /// and the connection is closed once its requests are answered.
    ended: bool,
    /// Whether it is in the loop's list of connections to read again in the next turn.
    again: bool,
}

impl Connection {
    /// Whether the client ended its side and has every answer.
    fn is_done(&self) -> bool {
        self.ended && self.unanswered == 0 && self.unsent.is_empty()
    }

    /// Writes as much of the unsent answers as the socket takes, and watches it for
    /// writability while some are left. An error when writing fails, or when the client leaves
    /// more than [`MAX_UNREAD`] bytes of answers unread.
    fn send_unsent(&mut self, registry: &Registry, token: Token) -> std::io::Result<()> {
        let written = write_available(&mut self.stream, &self.unsent)?;
        if written > 0 {
            self.unsent.drain(..written);
            self.last_progress = Instant::now();
        }
        if self.unsent.len() > MAX_UNREAD {
            return Err(std::io::Error::other("the client leaves its answers unread"));
        }
        let wants_writable = !self.unsent.is_empty();
        if wants_writable != self.awaits_writable {
            let interest = if wants_writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry.reregister(&mut self.stream, token, interest)?;
            self.awaits_writable = wants_writable;
        }
        Ok(())
    }
}

/// A request read and not yet answered.
struct Pending {
    from: Token,
    work: Work,
}

enum Work {
    /// A request of this protocol, decided with the next group.
    Decide(Envelope),
    /// A frame that is not one: its answer is known already, and waits only to keep the
    /// connection's answers in order.
    Known(Answer),
}

/// The loop's state: the sockets, and the requests read and not yet decided.
pub(super) struct EventLoop {
    poll: Poll,
    listener: UnixListener,
    committer: Committer,
    on_commit: OnCommit,
    /// Set by the owner to stop the loop (which it then wakes).
    stopping: Arc<AtomicBool>,
    connections: HashMap<Token, Connection>,
    /// The next connection's token. Tokens are never reused, so an answer whose connection
    /// went away is dropped rather than written to a newer connection.
    next_token: usize,
    pending: VecDeque<Pending>,
    /// Connections that may hold more than was read of them: their budget ran out, or they
    /// had too many requests unanswered. Edge-triggered readiness gives no new event for
    /// them, so they are read again in the next turn (each listed once: `Connection::again`).
    unfinished: Vec<Token>,
    /// When accepting failed, the loop tries again at this instant.
    accept_again: Option<Instant>,
    /// The workspace served, as requests name it ([`Envelope::workspace`]).
    workspace: std::path::PathBuf,
}

impl EventLoop {
    /// A loop over `listener`, registered with `poll` under [`LISTENER`].
    pub fn new(
        poll: Poll,
        listener: UnixListener,
        committer: Committer,
        on_commit: OnCommit,
        stopping: Arc<AtomicBool>,
    ) -> EventLoop {
        let workspace = super::client::workspace_name(committer.store.dir());
        EventLoop {
            poll,
            listener,
            workspace,
            committer,
            on_commit,
            stopping,
            connections: HashMap::new(),
            next_token: WAKER.0 + 1,
            pending: VecDeque::new(),
            unfinished: Vec::new(),
            accept_again: None,
        }
    }

    /// Serves until stopped. Requests already read when it stops are still decided, and
    /// answered as far as their sockets take the answers at once.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut last_sweep = Instant::now();
        loop {
            if let Err(error) = self.poll.poll(&mut events, Some(self.timeout())) {
                if error.kind() == ErrorKind::Interrupted {
                    continue;
                }
                self.committer.stop_serving(format!("waiting for requests failed: {error}"));
                return;
            }
            for event in &events {
                match event.token() {
                    LISTENER => self.accept_all(),
                    WAKER => {}
                    token => {
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            self.read(token);
                        }
                        if event.is_writable() {
                            self.flush(token);
                        }
                    }
                }
            }
            for token in std::mem::take(&mut self.unfinished) {
                if let Some(connection) = self.connections.get_mut(&token) {
                    connection.again = false;
                }
                self.read(token);
            }
            if self.accept_again.is_some_and(|at| Instant::now() >= at) {
                self.accept_all();
            }
            if self.stopping.load(Ordering::SeqCst) || self.committer.stopped.get().is_some() {
                while !self.pending.is_empty() {
                    self.decide_group();
                }
                return;
            }
            if !self.pending.is_empty() {
                self.decide_group();
            }
            if last_sweep.elapsed() >= SWEEP {
                self.close_idle();
                self.keep_place();
                last_sweep = Instant::now();
            }
        }
    }

    /// Makes sure the serving lock and the socket are still this server's (`place`): listens
    /// on the socket made again when it had gone, and stops serving when another process took
    /// the workspace over.
    fn keep_place(&mut self) {
        let check = lock_place(&self.committer.place).check();
        match check {
            Check::Intact => {}
            Check::Rebound(mut listener) => {
                // Clients that connected to the old socket before it went are still served.
                self.accept_all();
                let registry = self.poll.registry();
                let _ = registry.deregister(&mut self.listener);
                if let Err(error) = registry.register(&mut listener, LISTENER, Interest::READABLE) {
                    // Without the socket, commands write directly; it is made again next time.
                    tracing::warn!(%error, "watching the socket made again");
                    lock_place(&self.committer.place).remove_socket();
                }
                self.listener = listener;
                self.accept_all();
            }
            Check::Lost(why) => {
                self.committer.stop_serving(why);
            }
        }
    }

    /// How long the next wait may last: not at all while requests wait or connections were
    /// not read to the end, until the next try when accepting failed, else until the next
    /// sweep for idle connections.
    fn timeout(&self) -> Duration {
        if !self.pending.is_empty() || !self.unfinished.is_empty() {
            return Duration::ZERO;
        }
        match self.accept_again {
            Some(at) => at.saturating_duration_since(Instant::now()).min(SWEEP),
            None => SWEEP,
        }
    }

    /// Accepts every connection waiting, from processes of this user only. When accepting
    /// fails (out of descriptors, say), it is tried again after [`ACCEPT_RETRY`]: the
    /// connections left in the queue bring no new event.
    fn accept_all(&mut self) {
        let failing = self.accept_again.take().is_some();
        loop {
            let mut stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(error) if error.kind() == ErrorKind::WouldBlock => return,
                Err(error) if error.kind() == ErrorKind::Interrupted => continue,
                Err(error) => {
                    if !failing {
                        tracing::warn!(%error, "accepting a connection; trying again shortly");
                    }
                    self.accept_again = Some(Instant::now() + ACCEPT_RETRY);
                    return;
                }
            };
            if !super::peer_is_same_user(&stream) {
                tracing::warn!("refused a connection from another user");
                continue;
            }
            let token = Token(self.next_token);
            self.next_token += 1;
            if let Err(error) =
                self.poll.registry().register(&mut stream, token, Interest::READABLE)
            {
                tracing::warn!(%error, "watching a connection");
                continue;
            }
            let connection = Connection {
                stream,
                unread: Vec::new(),
                unsent: Vec::new(),
                awaits_writable: false,
                last_progress: Instant::now(),
                unanswered: 0,
                ended: false,
                again: false,
            };
            self.connections.insert(token, connection);
        }
    }

    /// Reads what connection `token` has sent, up to [`READ_BUDGET`], and queues its whole
    /// frames. A client that ended its side still gets the answers to what it sent. A stream
    /// that fails, or a frame that is too large, closes the connection — after the requests
    /// read before it are queued: they are decided, as if the server had been killed after
    /// its commit.
    fn read(&mut self, token: Token) {
        let Some(connection) = self.connections.get_mut(&token) else { return };
        let room = MAX_UNANSWERED.saturating_sub(connection.unanswered);
        let outcome = if room == 0 {
            Ok(ReadEnd::MoreLeft)
        } else {
            let before = connection.unread.len();
            let outcome = read_available(&mut connection.stream, &mut connection.unread);
            if connection.unread.len() > before {
                connection.last_progress = Instant::now();
            }
            outcome
        };
        let (frames, used, bad) = wire::split_frames(&connection.unread, room);
        let all_taken = frames.len() < room;
        for frame in frames {
            let work = work_of(frame, &self.workspace);
            self.pending.push_back(Pending { from: token, work });
            connection.unanswered += 1;
        }
        connection.unread.drain(..used);
        if connection.unread.is_empty() && connection.unread.capacity() > READ_BUDGET {
            connection.unread = Vec::new();
        }
        let end = match (bad, outcome) {
            (Some(error), _) | (None, Err(error)) => {
                tracing::debug!(%error, "reading a request");
                self.close(token);
                return;
            }
            (None, Ok(end)) => end,
        };
        connection.ended |= matches!(end, ReadEnd::Ended);
        // More may be waiting in the socket, or in what was read: read it in the next turn (no
        // new event will say so).
        if (matches!(end, ReadEnd::MoreLeft) || !all_taken) && !connection.again {
            connection.again = true;
            self.unfinished.push(token);
        }
        if connection.is_done() {
            self.close(token);
        }
    }

    /// Decides the first waiting requests (at most [`MAX_GROUP`]) as one group and answers
    /// them.
    fn decide_group(&mut self) {
        let count = self.pending.len().min(MAX_GROUP);
        let batch: Vec<Pending> = self.pending.drain(..count).collect();
        let envelopes: Vec<&Envelope> = batch
            .iter()
            .filter_map(|p| match &p.work {
                Work::Decide(envelope) => Some(envelope),
                Work::Known(_) => None,
            })
            .collect();
        let committed = !envelopes.is_empty();
        let mut outcomes = Vec::new();
        if committed {
            outcomes = self.committer.decide(&envelopes);
            tracing::debug!(requests = envelopes.len(), "group committed");
        }
        let mut outcomes = outcomes.into_iter();
        let mut answered = Vec::new();
        for pending in batch {
            let answer = match pending.work {
                Work::Decide(envelope) => Answer {
                    version: PROTOCOL_VERSION,
                    id: envelope.id,
                    outcome: outcomes
                        .next()
                        .unwrap_or_else(|| Outcome::Direct("the server lost this request".into())),
                },
                Work::Known(answer) => answer,
            };
            if self.queue_answer(pending.from, &answer) {
                answered.push(pending.from);
            }
        }
        answered.sort_unstable();
        answered.dedup();
        for token in answered {
            self.flush(token);
        }
        if committed {
            (self.on_commit)();
        }
    }

    /// Puts `answer` in line on connection `token`; false when the connection is gone.
    fn queue_answer(&mut self, token: Token, answer: &Answer) -> bool {
        let Some(connection) = self.connections.get_mut(&token) else { return false };
        connection.unanswered = connection.unanswered.saturating_sub(1);
        match wire::encode_frame(answer) {
            Ok(frame) => {
                connection.unsent.extend_from_slice(&frame);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "encoding an answer");
                self.close(token);
                false
            }
        }
    }

    /// Writes what connection `token` has waiting, as far as its socket takes it, and closes
    /// the connection when that fails.
    fn flush(&mut self, token: Token) {
        let Some(connection) = self.connections.get_mut(&token) else { return };
        match connection.send_unsent(self.poll.registry(), token) {
            Ok(()) if connection.is_done() => self.close(token),
            Ok(()) => {}
            Err(error) => {
                tracing::debug!(%error, "answering a request");
                self.close(token);
            }
        }
    }

    /// Closes the connections that moved nothing for [`IDLE`].
    fn close_idle(&mut self) {
        let idle: Vec<Token> = self
            .connections
            .iter()
            .filter(|(_, c)| c.last_progress.elapsed() >= IDLE)
            .map(|(token, _)| *token)
            .collect();
        for token in idle {
            self.close(token);
        }
    }

    fn close(&mut self, token: Token) {
        if let Some(mut connection) = self.connections.remove(&token) {
            let _ = self.poll.registry().deregister(&mut connection.stream);
        }
    }
}

/// Where a read of a connection stopped.
enum ReadEnd {
    /// Everything there was is read.
    WouldBlock,
    /// The budget ran out first: there may be more.
    MoreLeft,
    /// The client ended its side.
    Ended,
}

/// Reads from `stream` into `into` until it would block, the client's stream ends, or
/// [`READ_BUDGET`] bytes are read.
fn read_available(stream: &mut UnixStream, into: &mut Vec<u8>) -> std::io::Result<ReadEnd> {
    let mut chunk = [0u8; READ_CHUNK];
    let mut read = 0;
    while read < READ_BUDGET {
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(ReadEnd::Ended),
            Ok(n) => {
                into.extend_from_slice(&chunk[..n]);
                read += n;
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(ReadEnd::WouldBlock),
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(ReadEnd::MoreLeft)
}

/// Writes as much of `bytes` as `stream` takes without blocking; how much it took.
fn write_available(stream: &mut UnixStream, bytes: &[u8]) -> std::io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        match stream.write(&bytes[written..]) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(error) if error.kind() == ErrorKind::WouldBlock => break,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(written)
}

/// What to do with one frame: decide it, when it is an envelope of this protocol for
/// `workspace`; else answer it with [`Outcome::Direct`].
fn work_of(frame: &[u8], workspace: &std::path::Path) -> Work {
    match serde_json::from_slice::<Envelope>(frame) {
        Ok(envelope) if envelope.version == PROTOCOL_VERSION => {
            if envelope.workspace == workspace {
                return Work::Decide(envelope);
            }
            let why = format!(
                "this server serves {}, not {}",
                workspace.display(),
                envelope.workspace.display()
            );
            Work::Known(Answer {
                version: PROTOCOL_VERSION,
                id: envelope.id,
                outcome: Outcome::Direct(why),
            })
        }
        parsed => Work::Known(not_understood(frame, parsed.err())),
    }
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

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;

    use super::super::wire::{self, Answer, Envelope, Outcome};
    use super::super::{Server, client};
    use crate::store::Store;
    use crate::time::Clock;
    use crate::tracker::{CreateRequest, Request};

    /// A store in a temporary directory, served.
    fn served() -> (tempfile::TempDir, Arc<Store>, Server) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::init(&dir.path().join(".beads"), "t").unwrap());
        let server = Server::start(Arc::clone(&store), Box::new(|| {})).unwrap();
        (dir, store, server)
    }

    fn create(store: &Store, title: &str) -> Envelope {
        let request = Request::Create(Box::new(CreateRequest {
            title: title.into(),
            issue_type: "task".into(),
            priority: 2,
            ..CreateRequest::default()
        }));
        client::envelope(store.dir(), "tester", Clock::System, request)
    }

    fn connect(server: &Server) -> UnixStream {
        let stream = UnixStream::connect(server.socket()).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        stream
    }

    fn frame(value: &impl serde::Serialize) -> Vec<u8> {
        wire::encode_frame(value).unwrap()
    }

    fn answer(stream: &mut UnixStream) -> Answer {
        wire::read_frame::<Answer>(stream).unwrap().expect("an answer")
    }

    fn titles(store: &Store) -> Vec<String> {
        let filter = crate::store::ListFilter { all: true, ..Default::default() };
        let (listed, _) = store.read().unwrap().list(&filter).unwrap();
        let mut titles: Vec<String> = listed.into_iter().map(|s| s.issue.title).collect();
        titles.sort();
        titles
    }

    fn created_title(answer: Answer) -> String {
        match answer.outcome {
            Outcome::Applied(reply) => reply.into_summary().unwrap().issue.title,
            other => panic!("not applied: {other:?}"),
        }
    }

    /// Several requests in one write, with a frame of another protocol between them, are
    /// answered in their order on the connection.
    #[test]
    fn pipelined_requests_are_answered_in_order() {
        let (_dir, store, server) = served();
        let mut stream = connect(&server);
        let (first, second) = (create(&store, "first"), create(&store, "second"));
        let foreign = serde_json::json!({"version": 99, "id": ulid::Ulid::generate()});
        let mut bytes = frame(&first);
        bytes.extend(frame(&foreign));
        bytes.extend(frame(&second));
        stream.write_all(&bytes).unwrap();
        let answers: Vec<Answer> = (0..3).map(|_| answer(&mut stream)).collect();
        assert_eq!(answers[0].id, first.id);
        assert!(matches!(answers[1].outcome, Outcome::Direct(ref why) if why.contains("99")));
        assert_eq!(answers[2].id, second.id);
        assert_eq!(created_title(answers[0].clone()), "first");
        assert_eq!(created_title(answers[2].clone()), "second");
        assert_eq!(titles(&store), ["first", "second"]);
    }

    /// A request sent a few bytes at a time is read whole and answered once.
    #[test]
    fn a_request_split_across_writes_is_answered() {
        let (_dir, store, server) = served();
        let mut stream = connect(&server);
        let envelope = create(&store, "slow");
        for piece in frame(&envelope).chunks(7) {
            stream.write_all(piece).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(created_title(answer(&mut stream)), "slow");
        assert_eq!(titles(&store), ["slow"]);
    }

    /// A client that hangs up right after sending still has its request applied; sent again,
    /// the request is answered with the recorded reply and applied no second time.
    #[test]
    fn a_request_whose_client_hung_up_is_still_applied() {
        let (_dir, store, server) = served();
        let envelope = create(&store, "orphan");
        {
            let mut stream = connect(&server);
            stream.write_all(&frame(&envelope)).unwrap();
        }
        wait_for_titles(&store, &["orphan"]);
        let mut stream = connect(&server);
        stream.write_all(&frame(&envelope)).unwrap();
        assert_eq!(created_title(answer(&mut stream)), "orphan");
        assert_eq!(titles(&store), ["orphan"]);
    }

    /// A client that ends its side after sending (a shutdown for writing, as `nc -N` does)
    /// still gets its answers, and then the end of the stream.
    #[test]
    fn a_client_that_ended_its_side_gets_its_answers() {
        let (_dir, store, server) = served();
        let mut stream = connect(&server);
        let mut bytes = frame(&create(&store, "one"));
        bytes.extend(frame(&create(&store, "two")));
        stream.write_all(&bytes).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(created_title(answer(&mut stream)), "one");
        assert_eq!(created_title(answer(&mut stream)), "two");
        let mut rest = Vec::new();
        assert_eq!(stream.read_to_end(&mut rest).unwrap(), 0, "then closed");
        assert_eq!(titles(&store), ["one", "two"]);
    }

    /// Polls `store` until it holds `expected` titles (or fails after ten seconds).
    fn wait_for_titles(store: &Store, expected: &[&str]) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while titles(store) != expected {
            assert!(std::time::Instant::now() < until, "still {:?}", titles(store));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The requests sent before a frame too large to trust are still decided; the connection
    /// is then closed.
    #[test]
    fn requests_before_an_oversized_frame_are_decided() {
        let (_dir, store, server) = served();
        let mut stream = connect(&server);
        let mut bytes = frame(&create(&store, "before"));
        bytes.extend(u32::MAX.to_be_bytes());
        stream.write_all(&bytes).unwrap();
        wait_for_titles(&store, &["before"]);
    }

    /// One client streaming frames without pause is read a budget at a time, so another
    /// client's request is decided while the stream goes on — and the stream's own frames are
    /// still answered after it.
    #[test]
    fn a_flooding_client_does_not_hold_up_the_others() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let (_dir, store, server) = served();
        let mut flood = connect(&server);
        flood.set_nonblocking(true).unwrap();
        let empty_frames = vec![0u8; 4 * 4096];
        let flooding = Arc::new(AtomicBool::new(true));
        let answered_after = Arc::new(AtomicUsize::new(0));
        let other_answered = Arc::new(AtomicBool::new(false));
        let (still, after, other_done) =
            (Arc::clone(&flooding), Arc::clone(&answered_after), Arc::clone(&other_answered));
        let flooder = std::thread::spawn(move || -> Result<(), String> {
            let mut discard = vec![0u8; 1 << 16];
            while still.load(Ordering::SeqCst) {
                match flood.write(&empty_frames) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(format!("writing: {e}")),
                }
                loop {
                    match flood.read(&mut discard) {
                        Ok(0) => return Err("the server closed the stream".into()),
                        Ok(n) if other_done.load(Ordering::SeqCst) => {
                            after.fetch_add(n, Ordering::SeqCst);
                        }
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => return Err(format!("reading: {e}")),
                    }
                }
            }
            Ok(())
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut other = connect(&server);
        other.write_all(&frame(&create(&store, "other"))).unwrap();
        assert_eq!(created_title(answer(&mut other)), "other");
        other_answered.store(true, Ordering::SeqCst);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while answered_after.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        flooding.store(false, Ordering::SeqCst);
        flooder.join().unwrap().unwrap();
        assert!(answered_after.load(Ordering::SeqCst) > 0, "the stream was not answered on");
        assert_eq!(titles(&store), ["other"]);
    }

    /// More frames in one go than one turn reads (its budget) and than may wait unanswered
    /// (1024) are all answered, in order, with no further write from the client to wake the
    /// server: what is left is read again in the next turns.
    #[test]
    fn more_than_a_turn_reads_is_answered_without_another_event() {
        let (_dir, _store, server) = served();
        let mut stream = connect(&server);
        let frames = 3000;
        let ids: Vec<ulid::Ulid> = (0..frames).map(|_| ulid::Ulid::generate()).collect();
        let mut bytes = Vec::new();
        for id in &ids {
            bytes.extend(frame(&serde_json::json!({"version": 99, "id": id})));
        }
        assert!(bytes.len() > super::READ_BUDGET);
        let mut writer = stream.try_clone().unwrap();
        let sending = std::thread::spawn(move || writer.write_all(&bytes).unwrap());
        for id in &ids {
            assert_eq!(answer(&mut stream).id, *id);
        }
        sending.join().unwrap();
    }

    /// A frame that announces more than the largest frame closes that connection unanswered;
    /// other connections are served on.
    #[test]
    fn an_oversized_frame_closes_only_its_connection() {
        let (_dir, store, server) = served();
        let mut bad = connect(&server);
        bad.write_all(&u32::MAX.to_be_bytes()).unwrap();
        let mut rest = Vec::new();
        assert_eq!(bad.read_to_end(&mut rest).unwrap(), 0, "closed without an answer");
        let mut good = connect(&server);
        good.write_all(&frame(&create(&store, "fine"))).unwrap();
        assert_eq!(created_title(answer(&mut good)), "fine");
        assert_eq!(titles(&store), ["fine"]);
    }

    /// Many clients at once, each sending its requests one after another: every request is
    /// answered with its own reply, and the store holds each once.
    #[test]
    fn many_clients_each_get_their_own_answers() {
        let (_dir, store, server) = served();
        let socket = server.socket().to_path_buf();
        let clients: Vec<_> = (0..16)
            .map(|c| {
                let (socket, store) = (socket.clone(), Arc::clone(&store));
                std::thread::spawn(move || {
                    let mut stream = UnixStream::connect(&socket).unwrap();
                    for n in 0..20 {
                        let envelope = create(&store, &format!("c{c:02}-{n:02}"));
                        stream.write_all(&frame(&envelope)).unwrap();
                        let answer = answer(&mut stream);
                        assert_eq!(answer.id, envelope.id);
                        assert_eq!(created_title(answer), format!("c{c:02}-{n:02}"));
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().unwrap();
        }
        let titles = titles(&store);
        assert_eq!(titles.len(), 16 * 20);
        let expected: Vec<String> =
            (0..16).flat_map(|c| (0..20).map(move |n| format!("c{c:02}-{n:02}"))).collect();
        assert_eq!(titles, expected);
        drop(server);
    }

    /// A request naming another workspace (a client reaching this server through a link or
    /// a misplaced socket) is left to its client, unapplied.
    #[test]
    fn a_request_for_another_workspace_is_left_to_its_client() {
        let (_dir, store, server) = served();
        let elsewhere = tempfile::tempdir().unwrap();
        let mut envelope = create(&store, "astray");
        envelope.workspace = elsewhere.path().to_path_buf();
        let mut stream = connect(&server);
        stream.write_all(&frame(&envelope)).unwrap();
        let answer = answer(&mut stream);
        assert_eq!(answer.id, envelope.id);
        match answer.outcome {
            Outcome::Direct(why) => assert!(why.contains("this server serves"), "{why}"),
            other => panic!("applied for another workspace: {other:?}"),
        }
        let total = store.read().unwrap().stats(jiff::Timestamp::now()).unwrap().total_issues;
        assert_eq!(total, 0);
    }

    /// Dropping the server closes its connections and removes the socket.
    #[test]
    fn a_dropped_server_closes_its_connections_and_removes_its_socket() {
        let (_dir, store, server) = served();
        let socket = server.socket().to_path_buf();
        let mut stream = connect(&server);
        stream.write_all(&frame(&create(&store, "kept"))).unwrap();
        assert_eq!(created_title(answer(&mut stream)), "kept");
        drop(server);
        let mut rest = Vec::new();
        assert_eq!(stream.read_to_end(&mut rest).unwrap(), 0, "the connection is closed");
        assert!(!socket.exists());
        assert_eq!(titles(&store), ["kept"]);
    }
}
