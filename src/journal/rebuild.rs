//! `fleet rebuild`: a new store from the journal alone, swapped in for the old one.
//!
//! 1. Refuse if this replica has ops not committed to git yet (they would be lost), unless
//!    forced.
//! 2. Make a new store in a scratch directory inside `.beads/`, with the old store's prefix
//!    and replica id, and its configuration values — settings that are not ops and so are not
//!    in the journal.
//! 3. Replay every op of every replica's ref (`Store::replay`, in the total order), and mark
//!    the new journal committed (everything in it came from git).
//! 4. If the old store's journal did not move meanwhile, keep the old file as
//!    `beads.db.bak-<time>` (a hard link, or a copy) and rename the new one over `beads.db`:
//!    other processes see the old store or the new one, never neither. Processes that hold
//!    the old file open (a running supervisor) keep writing to it: stop them first.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::JournalError;
use super::read::read_all;
use super::repo::JournalRepo;
use super::write::pending_ops;
use crate::store::{Outcome, STORE_FILE, Store};
use crate::time::Clock;

/// How to rebuild.
#[derive(Debug, Clone, Copy, Default)]
pub struct RebuildOptions {
    /// Rebuild even if ops of this replica are not committed yet (they stay in the backup).
    pub force: bool,
}

/// What a rebuild did.
#[derive(Debug, Clone, Serialize)]
pub struct RebuildReport {
    /// The journal repository read.
    pub repo: PathBuf,
    /// The replicas whose refs were replayed.
    pub replicas: Vec<String>,
    /// Ops read from the journal, and what became of them.
    pub ops: usize,
    pub applied: usize,
    pub unchanged: usize,
    pub duplicates: usize,
    /// Ops the rules refused on replay that took effect in the old store, with the reason:
    /// the journal and the old store disagree.
    pub rejected: Vec<String>,
    /// Ops refused on replay that had no effect in the old store either (a claim that lost to
    /// an earlier one on another machine, an edit of an issue a delete won over): expected.
    pub refused_as_before: usize,
    /// Uncommitted ops of this replica left behind (with `force`).
    pub uncommitted: usize,
    /// Configuration values copied from the old store.
    pub config_values: usize,
    /// Where the old store was kept.
    pub backup: PathBuf,
}

/// Rebuilds the store in `store.dir()` from the journal and swaps it in; `store` is closed
/// on the way.
pub fn rebuild(
    store: Store,
    clock: Clock,
    options: RebuildOptions,
) -> Result<RebuildReport, JournalError> {
    let dir = store.dir().to_path_buf();
    let repo = JournalRepo::find(&dir)?.ok_or_else(|| JournalError::NoJournal(dir.clone()))?;
    let replicas = repo.replicas()?;
    if replicas.is_empty() {
        return Err(JournalError::NoJournal(dir));
    }
    let uncommitted = match pending_ops(&store) {
        Ok(pending) => pending.len(),
        // A damaged store may not even read its own journal; with --force the git journal
        // alone is trusted, which is what a rebuild of a damaged store needs.
        Err(error) if options.force => {
            tracing::warn!(%error, "reading the damaged store's journal; rebuilding from git alone");
            0
        }
        Err(error) => return Err(error),
    };
    if uncommitted > 0 && !options.force {
        return Err(JournalError::Pending { count: uncommitted });
    }
    let head = store.journal_head()?;
    let ops = read_all(&repo)?;
    let scratch = Scratch(dir.join(format!(".rebuild-{}", ulid::Ulid::generate())));
    let (mut report, config_values) = build(&store, &scratch.0, clock, ops)?;
    if store.journal_head()? != head {
        return Err(JournalError::Changed(dir));
    }
    drop(store);
    let backup = swap(&dir, &scratch.0.join(STORE_FILE), clock)?;
    report.repo = repo.git_dir().to_path_buf();
    report.replicas = replicas;
    report.uncommitted = uncommitted;
    report.config_values = config_values;
    report.backup = backup;
    Ok(report)
}

/// Makes the new store in `scratch` and replays `ops` into it.
fn build(
    old: &Store,
    scratch: &Path,
    clock: Clock,
    ops: Vec<crate::op::Op>,
) -> Result<(RebuildReport, usize), JournalError> {
    let new = Store::init_as(scratch, old.prefix(), &old.replica())?;
    let config = old.read()?.config_all()?;
    new.write(&old.replica(), clock, |writer| {
        for (key, value) in &config {
            writer.set_config(key, Some(value))?;
        }
        Ok(())
    })?;
    let mut report = RebuildReport {
        repo: PathBuf::new(),
        replicas: Vec::new(),
        ops: ops.len(),
        applied: 0,
        unchanged: 0,
        duplicates: 0,
        rejected: Vec::new(),
        refused_as_before: 0,
        uncommitted: 0,
        config_values: config.len(),
        backup: PathBuf::new(),
    };
    // Unreadable in a damaged store: then every refusal is reported as unexpected.
    let sidelined_before = old.sidelined_ops().unwrap_or_default();
    for replayed in new.replay(clock, ops)? {
        match replayed.outcome {
            Outcome::Applied => report.applied += 1,
            Outcome::Unchanged => report.unchanged += 1,
            Outcome::Duplicate => report.duplicates += 1,
            Outcome::Rejected(_) if sidelined_before.contains(&replayed.key.id) => {
                report.refused_as_before += 1;
            }
            Outcome::Rejected(error) => {
                report.rejected.push(format!("{} {}: {error}", replayed.kind, replayed.key.id));
            }
        }
    }
    new.reset_journal_committed(new.journal_head()?)?;
    Ok((report, config.len()))
}

/// Keeps `dir/beads.db` as a backup and renames `new` over it. Returns the backup's path.
fn swap(dir: &Path, new: &Path, clock: Clock) -> Result<PathBuf, JournalError> {
    let current = dir.join(STORE_FILE);
    let stamp = clock.now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let mut backup = dir.join(format!("{STORE_FILE}.bak-{stamp}"));
    let mut n = 1;
    while backup.exists() {
        n += 1;
        backup = dir.join(format!("{STORE_FILE}.bak-{stamp}-{n}"));
    }
    if let Err(error) = std::fs::hard_link(&current, &backup) {
        tracing::debug!(%error, "hard link failed; copying the old store instead");
        std::fs::copy(&current, &backup).map_err(JournalError::io(format!(
            "keeping {} as {}",
            current.display(),
            backup.display()
        )))?;
    }
    std::fs::rename(new, &current).map_err(JournalError::io(format!(
        "moving the rebuilt store {} over {}",
        new.display(),
        current.display()
    )))?;
    Ok(backup)
}

/// The scratch directory of a rebuild, removed when done (with the new store in it if the
/// rebuild failed before the swap).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
