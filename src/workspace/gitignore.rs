//! The `.gitignore` of a workspace's `.beads/`: the lines beads writes, plus fleet's own files.
//!
//! `fleet init` (and `bd init`) write it whole when there is none ([`CONTENTS`]), and add
//! fleet's lines ([`FLEET_ENTRIES`]) to one beads wrote. A workspace beads made and fleet never
//! initialised keeps beads' file, which lacks them, so `git status` in the user's repository
//! would list a file fleet creates there: the command that creates such a file adds its line
//! ([`ignore`]) — at the end, once, every other line left as it was.

use std::io::{self, Read, Write};
use std::path::Path;

/// The file's name in `.beads/`.
pub const FILE: &str = ".gitignore";

/// The file for a new workspace: beads' legacy lines, then fleet's own — the stores
/// `fleet rebuild` keeps aside, the journal's own repository, the serving socket and its lock,
/// the sync lock, the journal committer's lock, and the locks of remote claims under way.
pub const CONTENTS: &str = "# fleet / beads workspace\n*.db\n*.db-journal\n*.db-wal\n*.db-shm\n\
daemon.log\ndaemon.pid\nbd.sock\nlast-touched\n!*.jsonl\n!metadata.json\n!config.json\n\
*.db.bak-*\njournal.git/\nfleet.sock\nfleet.sock.lock\nsync.lock\ncommit.lock\nclaiming/\n";

/// Fleet's own lines of [`CONTENTS`]: the files fleet may create in `.beads/`.
pub const FLEET_ENTRIES: &[&str] = &[
    "*.db.bak-*",
    "journal.git/",
    "fleet.sock",
    "fleet.sock.lock",
    "sync.lock",
    "commit.lock",
    IN_FLIGHT_LOCKS_ENTRY,
];

/// The `.gitignore` line of the locks of claims under way ([`super::CLAIMING_DIR`]).
pub const IN_FLIGHT_LOCKS_ENTRY: &str = "claiming/";

/// Adds each of `entries` (patterns as [`CONTENTS`] writes them) that the `.gitignore` in the
/// workspace `dir` lacks, at its end. A file that has them all is only read; a workspace
/// without the file gets none (its files are ignored elsewhere, or meant to be seen). Returns
/// the entries added.
///
/// A `.gitignore` that is a symbolic link is refused: appending would write through it, to
/// wherever a cloned repository points it. The file is opened once, not following a link,
/// and locked while it is read and added to, so two fleet processes at once add the lines
/// once and a link swapped in meanwhile is not written through.
pub fn ignore<'e>(dir: &Path, entries: &[&'e str]) -> io::Result<Vec<&'e str>> {
    let path = dir.join(FILE);
    let mut file = match open_unfollowed(&path, true) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        // A file fleet may not write is only read: one that has every line needs nothing.
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
            let mut text = String::new();
            open_unfollowed(&path, false)?.read_to_string(&mut text)?;
            if entries.iter().all(|entry| has_line(&text, entry)) {
                return Ok(Vec::new());
            }
            return Err(error);
        }
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a symbolic link; fleet does not write through it", path.display()),
            ));
        }
        Err(error) => return Err(error),
    };
    file.lock()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let missing: Vec<&str> =
        entries.iter().copied().filter(|entry| !has_line(&text, entry)).collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let mut added = String::new();
    if !text.is_empty() && !text.ends_with('\n') {
        added.push('\n');
    }
    for entry in &missing {
        added.push_str(entry);
        added.push('\n');
    }
    // Appending keeps the file's mode and every byte before; the lock (released when the
    // file closes) keeps a second writer of the same lines out.
    file.write_all(added.as_bytes())?;
    Ok(missing)
}

/// Opens `path` to read (and to append, with `append`), refusing to follow a symbolic link.
fn open_unfollowed(path: &Path, append: bool) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).append(append).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// [`ignore`] for a command whose work is done either way: a `.gitignore` fleet may not write
/// only leaves its files listed by `git status`, so that is logged, not returned.
pub fn ignore_or_warn(dir: &Path, entries: &[&str]) {
    match ignore(dir, entries) {
        Ok(added) if !added.is_empty() => {
            tracing::info!(?added, workspace = %dir.display(), "added to .beads/.gitignore");
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(%error, workspace = %dir.display(), "could not add fleet's files to .beads/.gitignore");
        }
    }
}

/// Whether `text` has `entry` as a line of its own (also anchored: `/sync.lock`).
fn has_line(text: &str, entry: &str) -> bool {
    text.lines().map(str::trim).any(|line| line == entry || line.strip_prefix('/') == Some(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_gitignore_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "keep\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(FILE)).unwrap();
        let refused = ignore(dir.path(), &["sync.lock"]).unwrap_err();
        assert!(refused.to_string().contains("is a symbolic link"), "{refused}");
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "keep\n");
    }

    #[test]
    fn missing_lines_are_added_once_and_the_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let beads = "*.db\ndaemon.log\n!*.jsonl\n/fleet.sock";
        std::fs::write(&path, beads).unwrap();
        let added = ignore(dir.path(), &["sync.lock", "fleet.sock", "journal.git/"]).unwrap();
        assert_eq!(added, ["sync.lock", "journal.git/"]);
        assert!(ignore(dir.path(), &["sync.lock", "journal.git/"]).unwrap().is_empty());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{beads}\nsync.lock\njournal.git/\n"));
    }

    #[test]
    fn a_workspace_without_the_file_gets_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ignore(dir.path(), &["sync.lock"]).unwrap().is_empty());
        assert!(!dir.path().join(FILE).exists());
    }

    #[test]
    fn a_new_workspace_already_ignores_every_file_fleet_adds_later() {
        use super::super::*;
        let journal = format!("{JOURNAL_DIR}/");
        let claiming = format!("{CLAIMING_DIR}/");
        for entry in
            [SYNC_LOCK_FILE, SOCKET_LOCK_FILE, SOCKET_FILE, COMMIT_LOCK_FILE, &journal, &claiming]
        {
            assert!(FLEET_ENTRIES.contains(&entry), "{entry}");
        }
        for entry in FLEET_ENTRIES {
            assert!(has_line(CONTENTS, entry), "{entry}");
        }
    }
}
