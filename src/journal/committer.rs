//! Committing the journal soon after a write when no supervisor does: a write command that
//! leaves ops pending makes sure a committer process is waiting for the workspace, which
//! commits them after a delay — so a store lost to a tidy-up (`git clean -fdX`) or damage
//! loses at most the ops of that delay, however long no other command runs.
//!
//! One committer waits per workspace: it holds the lock of `.beads/commit.lock` from the
//! moment the write command that starts it takes it ([`take_lock`]; the committer inherits the
//! locked descriptor), so the commands that write while it waits find the lock taken and
//! start nothing. [`run`] waits, commits, lets the lock go and looks again: a write that
//! found the lock taken had made its op before trying the lock, and the lock is let go only
//! after the commit, so that op is either committed or seen pending here — then the committer
//! takes the lock again and goes on (or another committer has taken it meanwhile and commits
//! it). A committer whose store file is deleted or replaced (a rebuild) stops at once.

use std::path::Path;
use std::time::Duration;

use super::{JournalError, commit_pending};
use crate::store::Store;
use crate::workspace::COMMIT_LOCK_FILE;

/// Whether the store journaled ops past its committed mark (this replica's to commit, or
/// others' to move the mark past).
pub fn has_pending(store: &Store) -> Result<bool, JournalError> {
    Ok(store.journal_head()? > store.journal_committed()?)
}

/// The committer's lock of the workspace `dir`, unless a committer holds it.
pub fn take_lock(dir: &Path) -> std::io::Result<Option<std::fs::File>> {
    crate::fsutil::try_lock_exclusive(&dir.join(COMMIT_LOCK_FILE))
}

/// The committer's work, holding `lock` (see the module docs): waits `delay`, commits what is
/// pending, and repeats while writes keep coming. Returns the ops committed.
pub fn run(store: &Store, lock: std::fs::File, delay: Duration) -> Result<usize, JournalError> {
    let dir = store.dir().to_path_buf();
    crate::workspace::gitignore::ignore_or_warn(&dir, &[COMMIT_LOCK_FILE]);
    let mut lock = Some(lock);
    let mut committed = 0;
    loop {
        std::thread::sleep(delay);
        if let Some(why) = store.file_replaced() {
            tracing::debug!(%why, "the committer stops: its store file is gone");
            return Ok(committed);
        }
        committed += commit_pending(store)?.ops;
        drop(lock.take());
        if !has_pending(store)? {
            return Ok(committed);
        }
        match take_lock(&dir).map_err(JournalError::io(format!("locking {}", dir.display())))? {
            Some(taken) => lock = Some(taken),
            None => return Ok(committed),
        }
    }
}
