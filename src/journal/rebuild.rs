//! `fleet rebuild`: a new store from the journal alone, swapped in for the old one — also when
//! the old one cannot be opened or is gone.
//!
//! 1. The old store, if it opens, first commits what it has pending to git, so a rebuild of a
//!    healthy store loses nothing (`force` skips that, leaving those ops in the kept file).
//!    One that does not open (damaged, cut short, deleted) is not needed.
//! 2. The settings that are not ops — the id prefix, the replica id and the configuration
//!    values — come from the old store when it can be read, else from what the journal
//!    repository keeps of them ([`super::settings`]), else (a workspace from before that was
//!    kept) the prefix from the journal's batches and a new replica id. `prefix` and `replica`
//!    override them.
//! 3. A new store is made in a scratch directory inside `.beads/` with those settings, every
//!    op of every replica's ref is replayed into it (`Store::replay`, in the total order), and
//!    its journal is marked committed (everything in it came from git).
//! 4. If the old store's journal did not move meanwhile, the old file is kept as
//!    `beads.db.bak-<time>` (a hard link, or a copy) and the new one renamed over `beads.db`:
//!    other processes see the old store or the new one, never neither. Processes that hold
//!    the old file open (a running supervisor) keep writing to it: stop them first.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::read::read_all;
use super::repo::JournalRepo;
use super::settings::{self, Settings};
use super::write::pending_ops;
use super::{JournalError, REF_PREFIX, commit_pending};
use crate::store::{Outcome, Store, StoreError};
use crate::time::Clock;
use crate::workspace::STORE_FILE;

/// How to rebuild.
#[derive(Debug, Clone, Default)]
pub struct RebuildOptions {
    /// Do not commit the old store's pending ops first: rebuild without them (they stay in
    /// the backup).
    pub force: bool,
    /// The id prefix of the new store, instead of the old store's or the saved one.
    pub prefix: Option<String>,
    /// The replica id of the new store, instead of the old store's or the saved one.
    pub replica: Option<String>,
}

/// Where the settings of the rebuilt store came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingsFrom {
    /// The old store.
    Store,
    /// What the journal repository keeps of them.
    Saved,
    /// Neither: the prefix from the journal's batches, a new replica id, no configuration.
    Journal,
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
    /// Ops refused on replay when there was no readable old store to compare with.
    pub refused: usize,
    /// The old store's pending ops committed to git before the rebuild.
    pub committed_first: usize,
    /// Uncommitted ops of this replica left behind (with `force`).
    pub uncommitted: usize,
    /// Why the old store could not be used, if it could not: damaged, or not there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_store: Option<String>,
    /// The new store's settings, and where they came from.
    pub prefix: String,
    pub replica: String,
    pub settings_from: SettingsFrom,
    /// Configuration values copied.
    pub config_values: usize,
    /// Where the old store was kept (none when there was no file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<PathBuf>,
}

/// The store a rebuild replaces, as far as it can be used.
struct Old {
    /// Open, to check that its journal did not move before the swap.
    store: Option<Store>,
    head: Option<u64>,
    settings: Option<Settings>,
    /// Its ops that had no effect; unknown without a readable store.
    sidelined: Option<HashSet<ulid::Ulid>>,
    committed_first: usize,
    uncommitted: usize,
    /// Why it could not be used.
    unusable: Option<String>,
}

/// Rebuilds the store of the workspace `dir` (a `.beads` directory) from the journal and swaps
/// it in.
pub fn rebuild(
    dir: &Path,
    clock: Clock,
    options: &RebuildOptions,
) -> Result<RebuildReport, JournalError> {
    let repo = JournalRepo::find(dir)?.ok_or_else(|| JournalError::NoJournal(dir.into()))?;
    let replicas = repo.replicas()?;
    if replicas.is_empty() {
        return Err(JournalError::NoJournal(dir.into()));
    }
    let old = open_old(dir, options.force)?;
    let (settings, from) = choose_settings(&repo, dir, &old, options)?;
    let ops = read_all(&repo)?;
    let scratch = Scratch(dir.join(format!(".rebuild-{}", ulid::Ulid::generate())));
    let mut report = build(&scratch.0, clock, &settings, ops, old.sidelined.as_ref())?;
    if let (Some(store), Some(head)) = (&old.store, old.head)
        && store.journal_head()? != head
    {
        return Err(JournalError::Changed(dir.into()));
    }
    drop(old.store);
    report.backup = swap(dir, &scratch.0.join(STORE_FILE), clock)?;
    if let Err(error) = settings::save_settings(&repo, dir, &settings) {
        tracing::warn!(%error, "recording the rebuilt store's settings");
    }
    report.repo = repo.git_dir().to_path_buf();
    report.replicas = replicas;
    report.committed_first = old.committed_first;
    report.uncommitted = old.uncommitted;
    report.old_store = old.unusable;
    report.settings_from = from;
    Ok(report)
}

/// Opens the old store and commits what it has pending (unless `force`); a store that cannot
/// be opened or read is recorded as unusable, not an error. A store this fleet must not touch
/// (a newer layout, beads' SQLite file, no permission) is an error.
fn open_old(dir: &Path, force: bool) -> Result<Old, JournalError> {
    let mut old = Old {
        store: None,
        head: None,
        settings: None,
        sidelined: None,
        committed_first: 0,
        uncommitted: 0,
        unusable: None,
    };
    let store = match Store::open(dir) {
        Ok(store) => store,
        Err(StoreError::NotInitialized(_)) => {
            old.unusable =
                Some(format!("there is no store file at {}", dir.join(STORE_FILE).display()));
            return Ok(old);
        }
        Err(error @ (StoreError::LayoutVersion { .. } | StoreError::LegacySqlite(_))) => {
            return Err(error.into());
        }
        Err(error) if error.is_access_denied() => return Err(error.into()),
        Err(error) => {
            old.unusable = Some(why_unusable(&error));
            return Ok(old);
        }
    };
    if force {
        old.uncommitted = pending_ops(&store).map_or(0, |pending| pending.len());
    } else {
        match commit_pending(&store) {
            Ok(report) => old.committed_first = report.ops,
            Err(JournalError::Store(error)) if error.is_damage() => {
                old.unusable = Some(why_unusable(&error));
            }
            Err(error) => return Err(error),
        }
    }
    old.head = store.journal_head().ok();
    old.settings = Settings::of(&store).ok();
    old.sidelined = store.sidelined_ops().ok();
    old.store = Some(store);
    Ok(old)
}

/// What is wrong with an old store that cannot be used: the damage itself (its error's advice
/// to run `fleet doctor` is what led here).
fn why_unusable(error: &StoreError) -> String {
    match error {
        StoreError::Damaged { path, detail } => format!("{} is damaged: {detail}", path.display()),
        other => other.to_string(),
    }
}

/// The new store's settings (see the module docs), and where they came from.
fn choose_settings(
    repo: &JournalRepo,
    dir: &Path,
    old: &Old,
    options: &RebuildOptions,
) -> Result<(Settings, SettingsFrom), JournalError> {
    let saved = || settings::load(repo, dir).ok().flatten();
    let (mut settings, from) = match (&old.settings, saved()) {
        (Some(settings), _) => (settings.clone(), SettingsFrom::Store),
        (None, Some(saved)) => (saved, SettingsFrom::Saved),
        (None, None) => {
            let local = repo.refs_under(REF_PREFIX)?;
            let prefix = super::join::prefix_of_journal(repo, &local)?.unwrap_or_default();
            let replica = ulid::Ulid::generate().to_string().to_lowercase();
            (Settings::new(replica, prefix), SettingsFrom::Journal)
        }
    };
    if let Some(prefix) = &options.prefix {
        settings.prefix.clone_from(prefix);
    }
    if let Some(replica) = &options.replica {
        settings.replica.clone_from(replica);
    }
    if settings.prefix.is_empty() {
        return Err(JournalError::NoPrefix(dir.into()));
    }
    Ok((settings, from))
}

/// Makes the new store in `scratch` with `settings` and replays `ops` into it. `sidelined`:
/// the old store's ops that had no effect there, when it could be read.
fn build(
    scratch: &Path,
    clock: Clock,
    settings: &Settings,
    ops: Vec<crate::op::Op>,
    sidelined: Option<&HashSet<ulid::Ulid>>,
) -> Result<RebuildReport, JournalError> {
    let new = Store::init_as(scratch, &settings.prefix, &settings.replica)?;
    new.write(&settings.replica, clock, |writer| {
        for (key, value) in &settings.config {
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
        refused: 0,
        committed_first: 0,
        uncommitted: 0,
        old_store: None,
        prefix: settings.prefix.clone(),
        replica: settings.replica.clone(),
        settings_from: SettingsFrom::Store,
        config_values: settings.config.len(),
        backup: None,
    };
    for replayed in new.replay(clock, ops)? {
        match (replayed.outcome, sidelined) {
            (Outcome::Applied, _) => report.applied += 1,
            (Outcome::Unchanged, _) => report.unchanged += 1,
            (Outcome::Duplicate, _) => report.duplicates += 1,
            (Outcome::Rejected(_), None) => report.refused += 1,
            (Outcome::Rejected(_), Some(before)) if before.contains(&replayed.key.id) => {
                report.refused_as_before += 1;
            }
            (Outcome::Rejected(error), Some(_)) => {
                report.rejected.push(format!("{} {}: {error}", replayed.kind, replayed.key.id));
            }
        }
    }
    new.reset_journal_committed(new.journal_head()?)?;
    Ok(report)
}

/// Keeps `dir/beads.db` (if there is one) as a backup and renames `new` over it. Returns the
/// backup's path.
fn swap(dir: &Path, new: &Path, clock: Clock) -> Result<Option<PathBuf>, JournalError> {
    let current = dir.join(STORE_FILE);
    let backup = if current.exists() { Some(keep(dir, &current, clock)?) } else { None };
    std::fs::rename(new, &current).map_err(JournalError::io(format!(
        "moving the rebuilt store {} over {}",
        new.display(),
        current.display()
    )))?;
    Ok(backup)
}

/// Keeps the store file `current` as `beads.db.bak-<time>` (a hard link, or a copy).
fn keep(dir: &Path, current: &Path, clock: Clock) -> Result<PathBuf, JournalError> {
    let stamp = clock.now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let mut backup = dir.join(format!("{STORE_FILE}.bak-{stamp}"));
    let mut n = 1;
    while backup.exists() {
        n += 1;
        backup = dir.join(format!("{STORE_FILE}.bak-{stamp}-{n}"));
    }
    if let Err(error) = std::fs::hard_link(current, &backup) {
        tracing::debug!(%error, "hard link failed; copying the old store instead");
        std::fs::copy(current, &backup).map_err(JournalError::io(format!(
            "keeping {} as {}",
            current.display(),
            backup.display()
        )))?;
    }
    Ok(backup)
}

/// A scratch directory, removed (with what it holds) when dropped: a rebuild's new store
/// until the swap, a verify's replay.
pub(super) struct Scratch(pub PathBuf);

impl Scratch {
    /// A new directory under the system's temporary directory, named `<what>-<ulid>`.
    pub(super) fn in_temp_dir(what: &str) -> Scratch {
        let name = format!("{what}-{}", ulid::Ulid::generate().to_string().to_lowercase());
        Scratch(std::env::temp_dir().join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
