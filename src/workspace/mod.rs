//! The workspace: the `.beads/` directory fleet shares with beads, and the one place that
//! names every file in it.
//!
//! Every part of fleet that keeps a file in a workspace takes its name (or its path) from
//! here, and the `.gitignore` fleet writes there ([`gitignore`]) lists the same constants, so
//! a new file cannot be forgotten in one of them. Which workspace a command uses (`--db`,
//! `$BEADS_DIR`, the current directory's ancestors, `$FLEET_HOME`) is the CLI's policy; it is
//! built on [`is_workspace`] and [`of_database`].
//!
//! | file | written by | in git |
//! |---|---|---|
//! | [`STORE_FILE`] | the store (redb) | ignored |
//! | [`METADATA_FILE`] | `fleet init`, `bd init` (beads' own) | tracked |
//! | [`EXPORT_FILE`] | `fleet export`, `export.auto`, the hooks | tracked |
//! | [`JOURNAL_DIR`] | the journal (its own bare repository) | ignored |
//! | [`SOCKET_FILE`], [`SOCKET_LOCK_FILE`] | the server of a running fleet process | ignored |
//! | [`SYNC_LOCK_FILE`] | `fleet sync` | ignored |
//! | [`COMMIT_LOCK_FILE`] | the journal committer | ignored |
//! | [`CLAIMING_DIR`] | remote claims under way | ignored |
//! | [`LAST_TOUCHED_FILE`] | `bd` (the issue last touched) | ignored |
//! | [`config_yaml::FILE`] | beads (fleet only reads it) | tracked |

pub mod config_yaml;
pub mod gitignore;

use std::path::{Path, PathBuf};

/// The workspace directory's name in a project (or in `$FLEET_HOME`).
pub const DIR_NAME: &str = ".beads";
/// The store's database file.
pub const STORE_FILE: &str = "beads.db";
/// beads' description of the workspace (which database, which backend).
pub const METADATA_FILE: &str = "metadata.json";
/// The JSONL export a team tracks in git.
pub const EXPORT_FILE: &str = "issues.jsonl";
/// The journal's own bare git repository, when the workspace is not inside one.
pub const JOURNAL_DIR: &str = "journal.git";
/// The Unix socket a running fleet process serves writes on.
pub const SOCKET_FILE: &str = "fleet.sock";
/// The lock held by the process serving [`SOCKET_FILE`].
pub const SOCKET_LOCK_FILE: &str = "fleet.sock.lock";
/// The lock one `fleet sync` at a time holds.
pub const SYNC_LOCK_FILE: &str = "sync.lock";
/// The lock the journal committer holds while it writes git objects.
pub const COMMIT_LOCK_FILE: &str = "commit.lock";
/// The directory of the locks of remote claims under way.
pub const CLAIMING_DIR: &str = "claiming";
/// The file naming the issue the last `bd` create, update, close or show was about.
pub const LAST_TOUCHED_FILE: &str = "last-touched";

/// The store's database file in the workspace `dir`.
pub fn store_file(dir: &Path) -> PathBuf {
    dir.join(STORE_FILE)
}

/// The serving socket of the workspace `dir`.
pub fn socket(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// A `.beads` directory counts as a workspace when it holds a store or beads'
/// `metadata.json` (a bare `~/.beads` of global settings does not).
pub fn is_workspace(dir: &Path) -> bool {
    store_file(dir).is_file() || dir.join(METADATA_FILE).is_file()
}

/// The nearest workspace at or above `start`: `<ancestor>/.beads`, as beads finds it.
pub fn find_upward(start: &Path) -> Option<PathBuf> {
    start.ancestors().map(|dir| dir.join(DIR_NAME)).find(|beads| is_workspace(beads))
}

/// The workspace directory a database path names: `--db` may name the `.beads` directory or
/// the database file inside it (`beads.db`, or any other `*.db` file beads was pointed at).
pub fn of_database(path: &Path) -> PathBuf {
    let database = path.file_name().is_some_and(|name| name == STORE_FILE)
        || path.is_file()
        || path.extension().is_some_and(|ext| ext == "db");
    if database {
        path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    }
}

/// The issue last touched in the workspace `dir`, if one is recorded.
pub fn last_touched(dir: &Path) -> Option<String> {
    let text = crate::fsutil::read_note(&dir.join(LAST_TOUCHED_FILE)).ok()?;
    let id = text.trim();
    (!id.is_empty() && !id.contains(['\n', '\0'])).then(|| id.to_string())
}

/// Records `id` as last touched. Best effort: failing to write it never fails a command.
pub fn touch(dir: &Path, id: &str) {
    let _ = crate::fsutil::write_note(&dir.join(LAST_TOUCHED_FILE), format!("{id}\n").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_path_names_its_directory_and_a_directory_itself() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(of_database(&dir.path().join(STORE_FILE)), dir.path());
        assert_eq!(of_database(&dir.path().join("other.db")), dir.path());
        assert_eq!(of_database(dir.path()), dir.path());
    }

    #[test]
    fn the_nearest_workspace_above_is_found() {
        let root = tempfile::tempdir().unwrap();
        let beads = root.path().join(DIR_NAME);
        std::fs::create_dir(&beads).unwrap();
        let deep = root.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_upward(&deep), None, "an empty .beads is not a workspace");
        std::fs::write(beads.join(METADATA_FILE), "{}").unwrap();
        assert_eq!(find_upward(&deep), Some(beads));
    }

    #[test]
    fn last_touched_round_trips_and_refuses_a_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(last_touched(dir.path()), None);
        touch(dir.path(), "t-1");
        assert_eq!(last_touched(dir.path()).as_deref(), Some("t-1"));
        std::fs::write(dir.path().join(LAST_TOUCHED_FILE), "a\nb\n").unwrap();
        assert_eq!(last_touched(dir.path()), None);
    }
}
