//! The server's place in its workspace: the serving lock and the socket, and keeping them its
//! own while it serves.
//!
//! Only one process serves a workspace: it holds an exclusive `flock` on [`crate::workspace::SOCKET_LOCK_FILE`] for as
//! long as it serves, so a socket file found without the lock held is stale (its server was
//! killed) and is replaced. The socket is made owner-only.
//!
//! Both are files in `.beads/` that something else can remove while the server runs — a user
//! tidying up, or `git clean -X`, since the workspace's `.gitignore` lists them. The event loop
//! checks them every second ([`Place::check`]):
//!
//! - **The lock file at its path must be the one held.** Removed or replaced, the lock is taken
//!   at the path again. If another process holds it by then (a second server, started while
//!   the lock file was missing), this server stops serving and leaves the socket to it; so it
//!   does when the workspace directory is gone. Any other failure to make the lock again is
//!   tried again a second later, serving on meanwhile.
//! - **The socket at its path must be the one listened on.** Removed or replaced, it is bound
//!   again, so commands do not fall back to writing directly for as long as the server runs.
//!
//! A file is told to be the same by its device and inode. The socket is removed at the end
//! only if it is still the server's own, so a server that stops never removes the socket of
//! the one that took over.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use mio::net::UnixListener;

use crate::workspace::{SOCKET_FILE, SOCKET_LOCK_FILE};

/// Why a workspace cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{} is already served by another fleet process", .0.display())]
    AlreadyServed(PathBuf),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

pub(super) fn io_error(context: String) -> impl FnOnce(std::io::Error) -> ServeError {
    move |source| ServeError::Io { context, source }
}

/// Why a server stopped serving on its own, set once by whoever found out.
pub(super) type Stopped = Arc<OnceLock<String>>;

/// The place a server holds, shared by its loop (which keeps it) and its owner (which removes
/// the socket when the loop does not end in time).
pub(super) type SharedPlace = Arc<Mutex<Place>>;

/// Locks the shared place; a panic while it was held leaves nothing half-changed in it.
pub(super) fn lock_place(place: &SharedPlace) -> std::sync::MutexGuard<'_, Place> {
    place.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which file a path names: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    fn of(metadata: &std::fs::Metadata) -> FileId {
        FileId { device: metadata.dev(), inode: metadata.ino() }
    }

    /// The file at `path` itself (a link is not followed); `None` when there is none.
    fn at(path: &Path) -> std::io::Result<Option<FileId>> {
        match std::fs::symlink_metadata(path) {
            Ok(metadata) => Ok(Some(FileId::of(&metadata))),
            Err(error) if error.kind() == ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// The lock and the socket a server holds in its workspace directory.
pub(super) struct Place {
    dir: PathBuf,
    lock: File,
    lock_id: FileId,
    socket: PathBuf,
    /// The socket file this server bound; `None` once it removed it.
    socket_id: Option<FileId>,
    /// Binding the socket again failed at the last check (said once until it succeeds).
    rebind_failing: bool,
    /// Taking the lock again failed at the last check (said once until it succeeds).
    relock_failing: bool,
}

/// What a [`Place::check`] found.
pub(super) enum Check {
    /// The lock and the socket are the server's.
    Intact,
    /// The socket had gone or been replaced: the server now listens on this one.
    Rebound(UnixListener),
    /// The server can no longer hold the workspace (another process serves it now, or the lock
    /// cannot be made again), and why: it must stop serving.
    Lost(String),
}

impl Place {
    /// Takes the serving lock of the workspace `dir` and binds its socket, replacing a stale
    /// one; the error says who serves it when another process does. Once the lock is taken,
    /// makes sure the workspace's `.gitignore` ignores the lock and the socket (a file beads
    /// wrote lacks them; best effort, logged).
    pub fn take(dir: &Path) -> Result<(Place, UnixListener), ServeError> {
        let lock_path = dir.join(SOCKET_LOCK_FILE);
        let lock = crate::fsutil::try_lock_exclusive(&lock_path)
            .map_err(io_error(format!("locking {}", lock_path.display())))?
            .ok_or_else(|| ServeError::AlreadyServed(dir.to_path_buf()))?;
        let lock_id = lock
            .metadata()
            .map(|m| FileId::of(&m))
            .map_err(io_error(format!("reading {}", lock_path.display())))?;
        crate::workspace::gitignore::ignore_or_warn(dir, &[SOCKET_LOCK_FILE, SOCKET_FILE]);
        let socket = crate::workspace::socket(dir);
        let (listener, socket_id) = bind(&socket)?;
        let place = Place {
            dir: dir.to_path_buf(),
            lock,
            lock_id,
            socket,
            socket_id: Some(socket_id),
            rebind_failing: false,
            relock_failing: false,
        };
        Ok((place, listener))
    }

    /// The socket's path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Whether the lock and the socket are still the server's, putting back what went missing
    /// (see the module documentation).
    pub fn check(&mut self) -> Check {
        if let Err(why) = self.keep_lock() {
            return Check::Lost(why);
        }
        match self.keep_socket() {
            Some(listener) => Check::Rebound(listener),
            None => Check::Intact,
        }
    }

    /// Removes the socket, if the file at its path is still the one this server bound.
    /// It is known gone only once it was removed, or found gone or another's: a removal that
    /// failed is tried again by the next call (the owner's, when the server is dropped).
    pub fn remove_socket(&mut self) {
        let Some(bound) = self.socket_id else { return };
        let removed = match FileId::at(&self.socket) {
            Ok(Some(id)) if id == bound => match std::fs::remove_file(&self.socket) {
                Ok(()) => true,
                Err(error) if error.kind() == ErrorKind::NotFound => true,
                Err(error) => {
                    tracing::warn!(%error, socket = %self.socket.display(), "removing the socket");
                    false
                }
            },
            Ok(_) => true,
            Err(_) => false,
        };
        if removed {
            self.socket_id = None;
        }
    }

    /// Makes sure the lock file at its path is the one held, taking the lock there again when
    /// it was removed or replaced; why this server must stop, when another process holds it or
    /// the workspace directory is gone. When the lock cannot be made again for another reason
    /// (no permission for a moment, out of descriptors, a directory in its place), the server
    /// goes on serving on the lock it holds and tries again next time: no other process can
    /// take a lock there either.
    fn keep_lock(&mut self) -> Result<(), String> {
        let path = self.dir.join(SOCKET_LOCK_FILE);
        match FileId::at(&path) {
            Ok(Some(id)) if id == self.lock_id => return Ok(()),
            // A failure to look is not evidence of a loss: looked at again next time.
            Err(_) => return Ok(()),
            Ok(_) => {}
        }
        match crate::fsutil::try_lock_exclusive(&path) {
            Ok(Some(lock)) => {
                let Ok(metadata) = lock.metadata() else { return Ok(()) };
                tracing::warn!(lock = %path.display(), "the serving lock was removed; took it again");
                self.lock_id = FileId::of(&metadata);
                self.lock = lock;
                self.relock_failing = false;
                Ok(())
            }
            Ok(None) => Err(format!(
                "another fleet process serves {} now (the serving lock {} was removed while this \
                 one served)",
                self.dir.display(),
                path.display()
            )),
            Err(_) if !self.dir.is_dir() => {
                Err(format!("the workspace {} is gone", self.dir.display()))
            }
            Err(error) => {
                if !self.relock_failing {
                    tracing::warn!(%error, lock = %path.display(), "the serving lock was removed and cannot be made again yet; serving on and trying again");
                }
                self.relock_failing = true;
                Ok(())
            }
        }
    }

    /// Makes sure the socket at its path is the one bound (the caller holds the lock, so
    /// whatever else is there is stale); the new listener when it had to bind it again.
    fn keep_socket(&mut self) -> Option<UnixListener> {
        let found = FileId::at(&self.socket).ok()?;
        if found.is_some() && found == self.socket_id {
            return None;
        }
        match bind(&self.socket) {
            Ok((listener, id)) => {
                tracing::warn!(socket = %self.socket.display(), "the socket was removed; listening on it again");
                self.socket_id = Some(id);
                self.rebind_failing = false;
                Some(listener)
            }
            Err(error) => {
                if !self.rebind_failing {
                    tracing::warn!(%error, "the socket was removed and cannot be made again yet; commands write directly meanwhile");
                }
                self.rebind_failing = true;
                None
            }
        }
    }
}

/// Binds the socket at `path`, replacing whatever is there (the caller holds the serving lock),
/// owner-only and nonblocking; the listener and the file it made.
fn bind(path: &Path) -> Result<(UnixListener, FileId), ServeError> {
    match std::fs::remove_file(path) {
        Ok(()) => tracing::info!(socket = %path.display(), "replaced a stale socket"),
        Err(error) if error.kind() == ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(format!("removing {}", path.display()))(error)),
    }
    let listener =
        UnixListener::bind(path).map_err(io_error(format!("listening on {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io_error(format!("making {} owner-only", path.display())))?;
    let id =
        FileId::at(path).map_err(io_error(format!("reading {}", path.display())))?.ok_or_else(
            || io_error(format!("reading {}", path.display()))(ErrorKind::NotFound.into()),
        )?;
    Ok((listener, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken() -> (tempfile::TempDir, Place, UnixListener) {
        let dir = tempfile::tempdir().unwrap();
        let (place, listener) = Place::take(dir.path()).unwrap();
        (dir, place, listener)
    }

    #[test]
    fn an_intact_place_is_left_alone() {
        let (_dir, mut place, _listener) = taken();
        assert!(matches!(place.check(), Check::Intact));
    }

    #[test]
    fn a_removed_socket_is_bound_again_owner_only() {
        let (_dir, mut place, _listener) = taken();
        std::fs::remove_file(place.socket()).unwrap();
        assert!(matches!(place.check(), Check::Rebound(_)));
        let mode = std::fs::metadata(place.socket()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(place.check(), Check::Intact));
    }

    #[test]
    fn a_removed_lock_is_taken_again() {
        let (dir, mut place, _listener) = taken();
        std::fs::remove_file(dir.path().join(SOCKET_LOCK_FILE)).unwrap();
        assert!(matches!(place.check(), Check::Intact));
        // The lock at the path is held again: nobody else can take it.
        let other = crate::fsutil::try_lock_exclusive(&dir.path().join(SOCKET_LOCK_FILE)).unwrap();
        assert!(other.is_none());
    }

    /// A lock that cannot be made again for a while (here a directory in its place) is no
    /// loss: nobody else can take it either. The server serves on and takes it once it can.
    #[test]
    fn a_lock_that_cannot_be_made_again_yet_is_tried_again() {
        let (dir, mut place, _listener) = taken();
        let lock = dir.path().join(SOCKET_LOCK_FILE);
        std::fs::remove_file(&lock).unwrap();
        std::fs::create_dir(&lock).unwrap();
        assert!(matches!(place.check(), Check::Intact));
        std::fs::remove_dir(&lock).unwrap();
        assert!(matches!(place.check(), Check::Intact));
        assert!(crate::fsutil::try_lock_exclusive(&lock).unwrap().is_none(), "taken again");
    }

    #[test]
    fn a_gone_workspace_loses_the_place() {
        let (dir, mut place, _listener) = taken();
        let workspace = dir.path().to_path_buf();
        std::fs::remove_dir_all(&workspace).unwrap();
        let Check::Lost(why) = place.check() else { panic!("the place should be lost") };
        assert!(why.contains("is gone"), "{why}");
    }

    #[test]
    fn a_lock_taken_by_another_loses_the_place_and_keeps_its_socket() {
        let (dir, mut place, _listener) = taken();
        std::fs::remove_file(dir.path().join(SOCKET_LOCK_FILE)).unwrap();
        std::fs::remove_file(place.socket()).unwrap();
        let (mut other, _other_listener) = Place::take(dir.path()).unwrap();
        let Check::Lost(why) = place.check() else { panic!("the place should be lost") };
        assert!(why.contains("another fleet process serves"), "{why}");
        place.remove_socket();
        assert!(other.socket().exists(), "the other server's socket must stay");
        other.remove_socket();
        assert!(!other.socket().exists());
    }
}
