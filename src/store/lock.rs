//! The store's write lock: waiting for it with a limit, and naming who holds it.
//!
//! In redb's multi-writer mode a write transaction — and the open of a writable handle —
//! takes an open-file-description lock on one byte far past the end of the file
//! ([`WRITER_BYTE`]) and waits for it without a limit. A process stopped while it holds that
//! byte (a Ctrl-Z on `fleet serve` or `fleet run` inside a group commit) would hold every other
//! writer, direct ones too, silently for as long as it is stopped.
//!
//! [`bounded`] runs such a step on a helper thread that the caller waits for: past the server
//! deadline it looks the holder up ([`holder`], from `/proc/<pid>/fdinfo`, which lists each
//! descriptor's locks) and gives up at once naming a stopped holder and how to resume it, or
//! goes on waiting for a running one up to [`patience`]. A step given up on finishes on its
//! thread when the lock comes free and is dropped there (a transaction dropped uncommitted
//! changes nothing). The step always runs on the helper: a byte found free a moment before may
//! be taken by a process that is then stopped, between the look and the step's own lock (the
//! race of issue 28), and a step on the caller's thread would wait for it without a limit. The
//! thread costs tens of microseconds, against the two syncs of a commit.
//!
//! [`Held`] takes the byte itself, for `fleet doctor --salvage`, so that no write transaction
//! commits between its copy of the file and its swap.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::StoreError;

/// The byte redb's write transactions lock in multi-writer mode (redb's `WRITER_BYTE`,
/// `1 << 62`; a test below checks that a write transaction holds it).
const WRITER_BYTE: i64 = 1 << 62;

/// How often a waiting writer looks at the holder again once the deadline has passed.
const LOOK_AGAIN: Duration = Duration::from_millis(500);

/// How long a writer waits before it looks at who holds the lock: the server deadline
/// (`FLEET_SERVER_DEADLINE_MS`, two seconds by default).
fn deadline() -> Duration {
    crate::env::server_deadline()
}

/// How long a writer waits for a running holder at most: `FLEET_LOCK_WAIT_SECS`, else two
/// minutes.
pub(super) fn patience() -> Duration {
    crate::env::lock_patience()
}

/// A process holding the store's write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: i32,
    /// What it is, in words: `the fleet server`, `` `fleet import x.jsonl` ``.
    pub what: String,
    /// Stopped (state `T`, a Ctrl-Z or SIGSTOP) or stopped by a tracer (`t`).
    pub stopped: bool,
}

/// Why a writer gave up on the store's write lock.
#[derive(Debug, Clone)]
pub struct LockWait {
    pub path: PathBuf,
    /// Who held it when the writer gave up, if this user can see the process.
    pub holder: Option<Holder>,
    pub waited: Duration,
    /// The command had sent its request to the server before it wrote directly: the server
    /// may still apply it once it runs again (see [`LockWait::with_request_sent`]).
    pub request_sent: bool,
}

impl LockWait {
    /// Notes, for a command whose request the server had been sent but did not answer, that
    /// the server may yet apply it: it applies a request it reads within a minute of its
    /// making (`crate::server`), and none later.
    pub fn with_request_sent(mut self: Box<Self>) -> Box<Self> {
        self.request_sent = true;
        self
    }
}

impl std::fmt::Display for LockWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        let secs = self.waited.as_secs_f64();
        match &self.holder {
            Some(Holder { pid, what, stopped: true }) => write!(
                f,
                "{what}, pid {pid}, is stopped and holds the write lock of {path}: resume it \
                 with `kill -CONT {pid}` or `fg`"
            ),
            Some(Holder { pid, what, stopped: false }) => write!(
                f,
                "{what}, pid {pid}, has held the write lock of {path} for {secs:.1} s; gave up \
                 waiting (FLEET_LOCK_WAIT_SECS)"
            ),
            None => write!(
                f,
                "the write lock of {path} has been held for {secs:.1} s by a process this user \
                 cannot see; gave up waiting (FLEET_LOCK_WAIT_SECS)"
            ),
        }?;
        if self.request_sent {
            write!(
                f,
                "; the server was sent this request and applies it if it runs again within a \
                 minute of it: look before running the command again"
            )?;
        }
        Ok(())
    }
}

/// Runs `step`, which takes the write lock of the store file at `path` (a write transaction
/// begins, a writable handle opens), with the wait described in the module docs.
pub(super) fn bounded<T: Send + 'static>(
    path: &Path,
    step: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    bounded_within(path, patience(), step)
}

/// [`bounded`], waiting for a running holder up to `patience`.
fn bounded_within<T: Send + 'static>(
    path: &Path,
    patience: Duration,
    step: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let (sent, received) = std::sync::mpsc::sync_channel(1);
    let carried = super::guard::carry();
    std::thread::Builder::new()
        .name("fleet-store-lock".into())
        .spawn(move || {
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| carried.run(step)));
            // Nobody listens once the writer gave up; the step's result is dropped here.
            let _ = sent.send(outcome);
        })
        .map_err(|source| StoreError::Io { context: "starting a thread".into(), source })?;
    let started = Instant::now();
    let mut wait = deadline();
    loop {
        match received.recv_timeout(wait) {
            Ok(Ok(result)) => return result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(StoreError::Corrupt("waiting for the write lock failed".into()));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let holder = holder(path);
        let waited = started.elapsed();
        let stopped = holder.as_ref().is_some_and(|h| h.stopped);
        if stopped || waited >= patience {
            let wait = LockWait { path: path.to_path_buf(), holder, waited, request_sent: false };
            tracing::warn!(%wait, "gave up waiting for the store's write lock");
            return Err(StoreError::LockWait(Box::new(wait)));
        }
        if let Some(holder) = &holder {
            tracing::info!(pid = holder.pid, what = %holder.what, "waiting for the store's write lock");
        }
        wait = LOOK_AGAIN;
    }
}

/// Whether another open file description holds the write lock of the file at `path` (any
/// error reads as held).
#[cfg(test)]
fn is_held(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else { return true };
    let mut lock = writer_byte(libc::F_WRLCK);
    // SAFETY: F_OFD_GETLK reads and writes the flock structure passed, which lives on.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &raw mut lock) };
    rc != 0 || i32::from(lock.l_type) != libc::F_UNLCK
}

/// The flock structure of the writer byte, of lock type `kind`.
fn writer_byte(kind: i32) -> libc::flock {
    // SAFETY: flock is plain data; all zeros is a valid value of it.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = WRITER_BYTE;
    lock.l_len = 1;
    lock
}

/// The process holding the write lock of the file at `path`, found by the lock lines of every
/// descriptor in `/proc/<pid>/fdinfo` that this user may read.
pub fn holder(path: &Path) -> Option<Holder> {
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(path).ok()?.ino();
    let wanted = format!(":{ino} {WRITER_BYTE} {WRITER_BYTE}");
    for process in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = process.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(descriptors) = std::fs::read_dir(process.path().join("fdinfo")) else { continue };
        let holds = descriptors.flatten().any(|fd| {
            std::fs::read_to_string(fd.path()).is_ok_and(|info| {
                info.lines()
                    .any(|l| l.starts_with("lock:") && l.contains("WRITE") && l.ends_with(&wanted))
            })
        });
        if holds {
            return Some(Holder { pid, what: describe(pid), stopped: is_stopped(pid) });
        }
    }
    None
}

/// Whether process `pid` is stopped (state `T`) or stopped by a tracer (`t`).
fn is_stopped(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|s| s == "T" || s == "t")
}

/// What process `pid` is, from its command line: the fleet server and the supervisor by name,
/// any other command as it was typed.
fn describe(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let program = args.first().map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    let is_fleet = matches!(program.as_deref(), Some("fleet" | "bd"));
    let command = args.iter().skip(1).find(|a| !a.starts_with('-')).map(String::as_str);
    match (is_fleet, command) {
        (true, Some("serve")) => "the fleet server".into(),
        (true, Some("run")) => "the fleet supervisor (`fleet run`)".into(),
        _ if args.is_empty() => "a process".into(),
        _ => {
            let mut typed = args.clone();
            typed[0] = program.unwrap_or_default();
            format!("`{}`", typed.join(" "))
        }
    }
}

/// The store's write lock, held by this process (see the module docs); released on drop.
pub(crate) struct Held {
    _file: std::fs::File,
}

impl Held {
    /// Takes the write lock of the store file at `path`, with the wait of [`bounded`].
    pub fn take(path: &Path) -> Result<Held, StoreError> {
        let opened = path.to_path_buf();
        bounded(path, move || Ok(Held { _file: lock_byte(&opened)? }))
    }
}

/// Opens the store file at `path` and takes its write lock on the new descriptor, waiting for
/// it without a limit (run it through [`bounded`]).
fn lock_byte(path: &Path) -> Result<std::fs::File, StoreError> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).map_err(|source| {
        StoreError::Io { context: format!("opening {} to lock it", path.display()), source }
    })?;
    let mut lock = writer_byte(libc::F_WRLCK);
    loop {
        // SAFETY: F_OFD_SETLKW reads the flock structure passed, which lives on.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLKW, &raw mut lock) };
        if rc == 0 {
            return Ok(file);
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(StoreError::Io {
                context: format!("locking {} for writing", path.display()),
                source: error,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::time::Clock;

    /// The byte [`Held`] takes is the one redb's write transactions take: while it is held, a
    /// write transaction of the store waits, and the lock is seen held.
    #[test]
    fn the_held_byte_is_the_one_write_transactions_take() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let path = store.path();
        assert!(!is_held(&path));
        let txn = store.writable().unwrap().begin_write().unwrap();
        assert!(is_held(&path), "a write transaction holds the byte");
        assert_eq!(holder(&path).map(|h| h.pid), Some(std::process::id() as i32));
        drop(txn);
        assert!(!is_held(&path));
        let held = Held::take(&path).unwrap();
        assert!(is_held(&path));
        drop(held);
        store.apply("a", Clock::System, Vec::new()).unwrap();
    }

    /// Issue 28: the byte is free when a writer begins, and another holder takes it before
    /// the step's own lock does (the race between a look at the byte and its lock): the wait
    /// is bounded all the same, and names the holder. (Before, a byte seen free sent the step
    /// to wait on the caller's thread, without a limit.)
    #[test]
    fn a_holder_coming_between_the_look_and_the_lock_is_waited_for_with_a_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        let path = store.path();
        let (kept, holding) = std::sync::mpsc::channel();
        let raced = path.clone();
        let step = move || {
            // What the other process does inside the race: take the byte first, and keep it.
            kept.send(lock_byte(&raced)?).expect("the test keeps the holder");
            lock_byte(&raced)
        };
        match bounded_within(&path, Duration::ZERO, step) {
            Err(StoreError::LockWait(wait)) => {
                assert_eq!(wait.holder.map(|h| h.pid), Some(std::process::id() as i32));
            }
            other => panic!("not a bounded wait: {other:?}"),
        }
        // The step given up on takes the byte once the holder lets go, and drops it.
        drop(holding.recv().unwrap());
        Held::take(&path).unwrap();
    }

    #[test]
    fn a_stopped_holder_is_named_with_the_way_to_resume_it() {
        let wait = LockWait {
            path: PathBuf::from("/w/.beads/beads.db"),
            holder: Some(Holder { pid: 42, what: "the fleet server".into(), stopped: true }),
            waited: Duration::from_secs(2),
            request_sent: false,
        };
        assert_eq!(
            wait.to_string(),
            "the fleet server, pid 42, is stopped and holds the write lock of /w/.beads/beads.db: \
             resume it with `kill -CONT 42` or `fg`"
        );
    }
}
