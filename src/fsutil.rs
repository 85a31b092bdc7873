//! Small filesystem helpers shared by everything that writes user-visible files, the lock
//! files that keep one process at a job, and the search of a program on a PATH.

use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over the target. Readers see the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with_mode(path, bytes, None)
}

/// [`write_atomic`] for a file that may hold secrets: the result has mode 0600 (readable and
/// writable by its owner only), set on the temporary file before anything is written to it.
pub fn write_atomic_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with_mode(path, bytes, Some(0o600))
}

/// Makes `bytes` the content of the small, best-effort note at `path` (created if missing),
/// writing nothing when it already holds them. The file is overwritten in place and then cut to
/// the new length, never truncated to zero first: on ext4, a file truncated to zero and written
/// again is flushed to disk when it is closed (`auto_da_alloc`), a disk write per command that a
/// note such as bd's last-touched issue does not need. Writers take the file's lock (`flock`),
/// so two never interleave, and [`read_note`] never sees one half-way. Not crash-atomic: a
/// crash in the middle can leave a mix of the old and the new text, so only for notes whose
/// loss is harmless.
pub fn write_note(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.lock()?;
    let mut current = Vec::with_capacity(bytes.len() + 1);
    (&file).take(bytes.len() as u64 + 1).read_to_end(&mut current)?;
    if current == bytes {
        return Ok(());
    }
    file.write_all_at(bytes, 0)?;
    // Trimmed only when the old text was longer: a truncation is a journalled change of the
    // file's size, and a note such as a running attempt's ledger mostly grows.
    if current.len() > bytes.len() { file.set_len(bytes.len() as u64) } else { Ok(()) }
}

/// The text of the note at `path` (see [`write_note`]), read under the file's shared lock.
pub fn read_note(path: &Path) -> io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    file.lock_shared()?;
    let mut text = String::new();
    (&file).read_to_string(&mut text)?;
    Ok(text)
}

/// Takes an exclusive lock on the file at `path` (created owner-only if missing) without
/// waiting: `Ok(None)` when another open file description holds it. The lock is the kernel's
/// (`flock`): it goes with the returned file, and with the process if that is killed.
pub fn try_lock_exclusive(path: &Path) -> io::Result<Option<std::fs::File>> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(error)) => Err(error),
    }
}

/// [`try_lock_exclusive`], waiting up to `wait` for the process that holds the lock to let
/// go: `Ok(None)` when it still holds it then.
pub fn lock_exclusive_within(
    path: &Path,
    wait: std::time::Duration,
) -> io::Result<Option<std::fs::File>> {
    let started = std::time::Instant::now();
    loop {
        if let Some(file) = try_lock_exclusive(path)? {
            return Ok(Some(file));
        }
        if started.elapsed() >= wait {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Whether the file at `path` exists and is closed to group and others (mode `0?00`).
pub fn is_private(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o077 == 0)
}

fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        if let Some(mode) = mode {
            options.mode(mode);
        }
        let mut file = options.open(&temp)?;
        if let Some(mode) = mode {
            // `mode` above applies only when the file is new; a leftover temporary file keeps
            // its old mode unless set here.
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// The first executable file called `program` in the directories of `path` (a PATH value), as
/// a shell would find it.
pub fn find_executable(program: &str, path: &std::ffi::OsStr) -> Option<std::path::PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a file someone may execute.
pub fn is_executable(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_note_is_replaced_whole_whether_longer_or_shorter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last-touched");
        super::write_note(&path, b"bd-1\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"bd-1\n");
        super::write_note(&path, b"bd-longer.2\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"bd-longer.2\n");
        super::write_note(&path, b"bd-3\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"bd-3\n");
    }

    /// The same note again is not written: the file keeps its modification time.
    #[test]
    fn an_unchanged_note_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last-touched");
        super::write_note(&path, b"bd-1\n").unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(old).unwrap();
        super::write_note(&path, b"bd-1\n").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), old);
        super::write_note(&path, b"bd-1\nx").unwrap();
        assert_ne!(std::fs::metadata(&path).unwrap().modified().unwrap(), old);
        // A note that begins the current text is written too (and the rest cut).
        super::write_note(&path, b"bd-1\n").unwrap();
        assert_eq!(super::read_note(&path).unwrap(), "bd-1\n");
    }

    /// Three writers, each with a file of its own as separate processes would have, racing
    /// with a reader: every read is one whole note.
    #[test]
    fn racing_writers_never_leave_a_mix_of_notes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("last-touched");
        let notes = ["bd-123456789\n", "bd-4\n", "bd-55.1\n"];
        std::thread::scope(|scope| {
            for note in notes {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..5000 {
                        super::write_note(path, note.as_bytes()).unwrap();
                    }
                });
            }
            scope.spawn(|| {
                for _ in 0..5000 {
                    if let Ok(text) = super::read_note(&path) {
                        assert!(text.is_empty() || notes.contains(&text.as_str()), "{text:?}");
                    }
                }
            });
        });
        assert!(notes.contains(&super::read_note(&path).unwrap().as_str()));
    }

    #[test]
    fn replaces_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "old old old").unwrap();
        super::write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_private_write_leaves_the_file_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secrets.toml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(!super::is_private(&path));
        super::write_atomic_private(&path, b"key = 1").unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(super::is_private(&path));
    }
}
