//! Finding the journal's repository, and the object-level reads and writes on it.
//!
//! The workspace's own repository (`.beads/journal.git`) is made whole or not at all: it is
//! initialised in a directory beside it named for the making process
//! (`.journal.git.making-<pid>`) and renamed into place, so a process killed (or a disk
//! filled) while making it never leaves a half-made repository that every later commit fails
//! on. A making directory whose process is gone is removed by the next maker.

use std::path::Path;

use gix::ObjectId;
use gix::refs::transaction::PreviousValue;
use serde::Serialize;

use super::{BATCH_FILE, BatchInfo, JournalError, OPS_FILE, REF_PREFIX, ref_name};
use crate::workspace::JOURNAL_DIR;

/// The key in a remote's git config section that marks it as added by fleet.
pub const FLEET_MARK: &str = "fleet";

/// The file in the repository's git directory whose lock (`flock`, which dies with its
/// process) every fleet writer of the journal's refs holds while it edits one.
const REFS_LOCK: &str = "fleet-refs.lock";
/// How long a writer waits for [`REFS_LOCK`]: held for one ref edit at a time, it is let go
/// within milliseconds unless its holder is stopped.
const REFS_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The name prefix of a journal repository being made (see the module docs).
const MAKING: &str = ".journal.git.making-";

/// Makes the bare repository `own` in the workspace `dir`: initialised aside, then renamed
/// into place. Another process that made it first wins; this one's copy is removed.
fn make_aside_and_rename(dir: &Path, own: &Path) -> Result<(), JournalError> {
    remove_abandoned_makings(dir);
    let aside = dir.join(format!("{MAKING}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&aside);
    // Made with the repository's own configuration only: a user's or the system's git
    // configuration (broken, or being rewritten by another program that moment) has no say
    // in how fleet's own bare repository is made.
    let made = gix::ThreadSafeRepository::init_opts(
        &aside,
        gix::create::Kind::Bare,
        gix::create::Options::default(),
        gix::open::Options::isolated(),
    )
    .map(drop)
    .map_err(JournalError::git(format!("creating the journal repository {}", own.display())));
    crate::fault::point("journal-made-aside");
    let placed = made.and_then(|()| {
        std::fs::rename(&aside, own)
            .or_else(|error| {
                // Made meanwhile by another process: theirs stands.
                if own.join("HEAD").is_file() { Ok(()) } else { Err(error) }
            })
            .map_err(|source| JournalError::Io {
                context: format!("moving the new journal repository into {}", own.display()),
                source,
            })
    });
    if placed.is_err() || aside.exists() {
        let _ = std::fs::remove_dir_all(&aside);
    }
    placed
}

/// Opens the workspace's own bare repository with its own configuration only. fleet reads and
/// writes its objects and refs itself and reaches remotes through the `git` program (which
/// reads the user's configuration as usual), so nothing outside the repository has a say —
/// and a user's or the system's git configuration that is broken, or half-written by another
/// program at that moment, cannot stop a journal commit.
fn open_own(git_dir: &Path) -> Result<gix::Repository, JournalError> {
    gix::open_opts(git_dir, gix::open::Options::isolated())
        .map_err(JournalError::git(format!("opening {}", git_dir.display())))
}

/// Removes the making directories (see the module docs) of processes that are gone.
fn remove_abandoned_makings(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(MAKING)) else { continue };
        let alive = pid.parse::<u32>().is_ok_and(|pid| crate::process::is_alive(pid, 0));
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Which repository holds the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RepoKind {
    /// The git repository that contains the workspace.
    Enclosing,
    /// The workspace's own bare repository, `.beads/journal.git`.
    Own,
}

/// An open journal repository.
pub struct JournalRepo {
    pub(super) repo: gix::Repository,
    pub kind: RepoKind,
}

/// One journal commit, read.
pub(super) struct Batch {
    pub id: ObjectId,
    pub parent: Option<ObjectId>,
    pub info: BatchInfo,
    /// Commit time, seconds since the epoch.
    pub seconds: i64,
}

impl JournalRepo {
    /// The journal repository of the workspace `dir` (a `.beads` directory), if there is one:
    /// `.beads/journal.git` if it exists, else the git repository containing `dir`.
    pub fn find(dir: &Path) -> Result<Option<JournalRepo>, JournalError> {
        let own = dir.join(JOURNAL_DIR);
        if own.exists() {
            return Ok(Some(JournalRepo { repo: open_own(&own)?, kind: RepoKind::Own }));
        }
        match gix::discover(dir) {
            Ok(repo) => Ok(Some(JournalRepo { repo, kind: RepoKind::Enclosing })),
            Err(error) => {
                tracing::debug!(workspace = %dir.display(), %error, "no enclosing git repository");
                Ok(None)
            }
        }
    }

    /// The repository whose git directory is `git_dir`, found before as `kind` (a gix
    /// repository is not shared between threads: each thread opens its own).
    pub(super) fn open_again(git_dir: &Path, kind: RepoKind) -> Result<JournalRepo, JournalError> {
        let repo = match kind {
            RepoKind::Own => open_own(git_dir)?,
            RepoKind::Enclosing => gix::open(git_dir)
                .map_err(JournalError::git(format!("opening {}", git_dir.display())))?,
        };
        Ok(JournalRepo { repo, kind })
    }

    /// [`JournalRepo::find`], creating `.beads/journal.git` when there is none.
    pub fn find_or_create(dir: &Path) -> Result<JournalRepo, JournalError> {
        if let Some(found) = JournalRepo::find(dir)? {
            return Ok(found);
        }
        let own = dir.join(JOURNAL_DIR);
        make_aside_and_rename(dir, &own)?;
        Ok(JournalRepo { repo: open_own(&own)?, kind: RepoKind::Own })
    }

    /// The repository's git directory (for messages and for `git -C`).
    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// The repository's worktree, if it has one (an enclosing repository does).
    pub(super) fn workdir(&self) -> Option<std::path::PathBuf> {
        self.repo.workdir().map(Path::to_path_buf)
    }

    /// Writes a commit whose tree holds one file, `name` with `bytes`, on `parent`, by
    /// `author` (with the journal's email), dated now; the ref is not moved.
    pub(super) fn write_file_commit(
        &self,
        name: &str,
        bytes: &[u8],
        parent: Option<ObjectId>,
        author: &str,
        message: &str,
    ) -> Result<ObjectId, JournalError> {
        let tree = self.write_files_tree(&[(name, bytes)])?;
        let now = jiff::Timestamp::now().as_second();
        self.write_commit(tree, parent, &signature(author, now), message)
    }

    /// Writes a tree of `files` (name, contents), given sorted by name as git requires.
    fn write_files_tree(&self, files: &[(&str, &[u8])]) -> Result<ObjectId, JournalError> {
        let mut entries = Vec::with_capacity(files.len());
        for (name, bytes) in files {
            let oid = self
                .repo
                .write_blob(bytes)
                .map_err(JournalError::git(self.at("writing a blob")))?
                .detach();
            let mode = gix::objs::tree::EntryKind::Blob.into();
            entries.push(gix::objs::tree::Entry { mode, filename: (*name).into(), oid });
        }
        let tree = gix::objs::Tree { entries };
        let id =
            self.repo.write_object(&tree).map_err(JournalError::git(self.at("writing a tree")))?;
        Ok(id.detach())
    }

    /// Writes a commit of `tree` on `parent`, authored and committed by `signature`.
    fn write_commit(
        &self,
        tree: ObjectId,
        parent: Option<ObjectId>,
        signature: &gix::actor::Signature,
        message: &str,
    ) -> Result<ObjectId, JournalError> {
        let commit = gix::objs::Commit {
            tree,
            parents: parent.into_iter().collect(),
            author: signature.clone(),
            committer: signature.clone(),
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        let id = self
            .repo
            .write_object(&commit)
            .map_err(JournalError::git(self.at("writing a commit")))?;
        Ok(id.detach())
    }

    fn at(&self, what: &str) -> String {
        format!("{what} in {}", self.git_dir().display())
    }

    /// The commit `replica`'s ref points at, if the ref exists.
    pub(super) fn tip(&self, replica: &str) -> Result<Option<ObjectId>, JournalError> {
        self.ref_target(&ref_name(replica))
    }

    /// The replicas that have a journal ref, sorted.
    pub fn replicas(&self) -> Result<Vec<String>, JournalError> {
        Ok(self.refs_under(REF_PREFIX)?.into_iter().map(|(replica, _)| replica).collect())
    }

    /// The commit the ref `name` (a full ref name) points at, if it exists.
    pub(super) fn ref_target(&self, name: &str) -> Result<Option<ObjectId>, JournalError> {
        let found = self
            .repo
            .try_find_reference(name)
            .map_err(JournalError::git(self.at(&format!("reading {name}"))))?;
        let Some(mut reference) = found else { return Ok(None) };
        let id = reference
            .peel_to_id()
            .map_err(JournalError::git(self.at(&format!("resolving {name}"))))?;
        Ok(Some(id.detach()))
    }

    /// The refs under `prefix` (ending in `/`) and their commits, by the name after it.
    pub(super) fn refs_under(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>, JournalError> {
        let context = self.at(&format!("listing {prefix}*"));
        let platform = self.repo.references().map_err(JournalError::git(context.clone()))?;
        let refs = platform
            .prefixed(prefix.trim_end_matches('/'))
            .map_err(JournalError::git(context.clone()))?;
        let mut out = Vec::new();
        for reference in refs {
            let mut reference = reference.map_err(|e| JournalError::Git {
                context: context.clone(),
                message: e.to_string(),
            })?;
            let name = reference.name().as_bstr().to_string();
            let id = reference.peel_to_id().map_err(JournalError::git(context.clone()))?;
            if let Some(rest) = name.strip_prefix(prefix) {
                out.push((rest.to_string(), id.detach()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Whether `ancestor` is `descendant` or one of its first-parent ancestors (a journal
    /// chain has one parent per commit). A commit that is missing ends the walk.
    pub(super) fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> bool {
        let mut next = Some(descendant);
        while let Some(id) = next {
            if id == ancestor {
                return true;
            }
            next = self
                .repo
                .find_commit(id)
                .ok()
                .and_then(|commit| commit.parent_ids().next().map(|p| p.detach()));
        }
        false
    }

    /// Points `name` at `id`, if it is still at `expected` (`None`: absent).
    pub(super) fn set_ref(
        &self,
        name: &str,
        id: ObjectId,
        expected: Option<ObjectId>,
    ) -> Result<(), JournalError> {
        use gix::refs::transaction::RefEdit;
        let previous = match expected {
            Some(old) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(old)),
            None => PreviousValue::MustNotExist,
        };
        let full_name = name.try_into().map_err(|e: gix::validate::reference::name::Error| {
            JournalError::Git { context: format!("ref name {name}"), message: e.to_string() }
        })?;
        let edit = RefEdit::update(full_name, id, previous, "fleet sync");
        let signature = gix::actor::Signature {
            name: "fleet sync".into(),
            email: super::EMAIL.into(),
            time: gix::date::Time { seconds: jiff::Timestamp::now().as_second(), offset: 0 },
        };
        self.edit_ref(name, edit, &signature)?.map_err(|e| JournalError::Git {
            context: self.at(&format!("updating {name}")),
            message: e.to_string(),
        })
    }

    /// Applies `edit` to the journal ref `name` as `signature`, holding the lock every fleet
    /// writer of the journal's refs takes ([`REFS_LOCK`]). A killed writer leaves the ref's git
    /// lock file (`<name>.lock`) behind, which fails every later edit of the ref; found while
    /// that lock is held, it can only be such a one, and is removed first. The outer error is
    /// the lock's; the inner one the edit's.
    fn edit_ref(
        &self,
        name: &str,
        edit: gix::refs::transaction::RefEdit,
        signature: &gix::actor::Signature,
    ) -> Result<gix::Result<()>, JournalError> {
        let lock_path = self.git_dir().join(REFS_LOCK);
        let held = crate::fsutil::lock_exclusive_within(&lock_path, REFS_LOCK_WAIT)
            .map_err(JournalError::io(format!("locking {}", lock_path.display())))?;
        if held.is_none() {
            return Err(JournalError::Git {
                context: self.at(&format!("updating {name}")),
                message: format!(
                    "another process has held {} for {} s",
                    lock_path.display(),
                    REFS_LOCK_WAIT.as_secs()
                ),
            });
        }
        let stale = self.git_dir().join(format!("{name}.lock"));
        if stale.exists() {
            tracing::warn!(lock = %stale.display(), "removing the ref lock a killed writer left");
            std::fs::remove_file(&stale)
                .map_err(JournalError::io(format!("removing {}", stale.display())))?;
        }
        let mut time = gix::date::parse::TimeBuf::default();
        Ok(self.repo.edit_references_as(Some(edit), Some(signature.to_ref(&mut time))).map(drop))
    }

    /// The URL of remote `name` in the repository's git config, if it is configured.
    pub fn remote_url(&self, name: &str) -> Option<String> {
        let config = self.repo.config_snapshot();
        config.string(format!("remote.{name}.url").as_str()).map(|url| url.to_string())
    }

    /// Whether fleet added remote `name` (see [`super::remotes::add_remote`]): every remote of the
    /// workspace's own repository is, a remote of an enclosing repository only when marked.
    pub fn remote_is_fleets(&self, name: &str) -> bool {
        if self.kind == RepoKind::Own {
            return true;
        }
        let key = format!("remote.{name}.{}", FLEET_MARK);
        self.repo.config_snapshot().boolean(key.as_str()).unwrap_or(false)
    }

    /// The names of the remotes in the repository's git config, sorted.
    pub fn remote_names(&self) -> Vec<String> {
        self.repo.remote_names().into_iter().map(|name| name.to_string()).collect()
    }

    /// Reads the commit `id` of `replica`'s ref as a batch.
    pub(super) fn batch(&self, replica: &str, id: ObjectId) -> Result<Batch, JournalError> {
        let bad = |reason: String| JournalError::Format {
            reference: ref_name(replica),
            commit: id.to_string(),
            reason,
        };
        let commit = self.repo.find_commit(id).map_err(|e| bad(e.to_string()))?;
        let parent = commit.parent_ids().next().map(|p| p.detach());
        let seconds = commit.time().map_err(|e| bad(e.to_string()))?.seconds;
        let bytes = self.file(id, BATCH_FILE).map_err(|e| bad(e.to_string()))?;
        let bytes = bytes.ok_or_else(|| bad(format!("it has no {BATCH_FILE}")))?;
        let info: BatchInfo =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("{BATCH_FILE}: {e}")))?;
        if info.format > super::FORMAT_VERSION {
            return Err(bad(format!(
                "format {} is newer than this fleet reads ({}); upgrade fleet",
                info.format,
                super::FORMAT_VERSION
            )));
        }
        if info.replica != replica {
            return Err(bad(format!("{BATCH_FILE} names replica {}", info.replica)));
        }
        Ok(Batch { id, parent, info, seconds })
    }

    /// The ops of the batch `id` (checked against its `batch.json`), in journal order.
    pub(super) fn ops(
        &self,
        replica: &str,
        batch: &Batch,
    ) -> Result<Vec<crate::op::Op>, JournalError> {
        let bad = |reason: String| JournalError::Format {
            reference: ref_name(replica),
            commit: batch.id.to_string(),
            reason,
        };
        let bytes = self.file(batch.id, OPS_FILE).map_err(|e| bad(e.to_string()))?;
        let bytes = bytes.ok_or_else(|| bad(format!("it has no {OPS_FILE}")))?;
        let mut ops = Vec::with_capacity(batch.info.count);
        for (n, line) in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).enumerate() {
            let op = serde_json::from_slice(line)
                .map_err(|e| bad(format!("{OPS_FILE} line {}: {e}", n + 1)))?;
            ops.push(op);
        }
        if ops.len() != batch.info.count {
            return Err(bad(format!(
                "{OPS_FILE} has {} ops, {BATCH_FILE} says {}",
                ops.len(),
                batch.info.count
            )));
        }
        Ok(ops)
    }

    /// The contents of the file `name` at the top of commit `id`'s tree.
    pub(super) fn file(&self, id: ObjectId, name: &str) -> Result<Option<Vec<u8>>, gix::Error> {
        let tree = self.repo.find_commit(id)?.tree()?;
        let Some(entry) = tree.find_entry(name) else { return Ok(None) };
        let oid = entry.object_id();
        Ok(Some(self.repo.find_blob(oid)?.data.clone()))
    }

    /// The commits of `replica`'s ref, newest first, at most `limit`.
    pub(super) fn chain(&self, replica: &str, limit: usize) -> Result<Vec<Batch>, JournalError> {
        let mut out = Vec::new();
        let mut next = self.tip(replica)?;
        while let Some(id) = next {
            if out.len() >= limit {
                break;
            }
            let batch = self.batch(replica, id)?;
            next = batch.parent;
            out.push(batch);
        }
        Ok(out)
    }

    /// Writes a batch commit and moves `replica`'s ref from `parent` to it (compare-and-swap:
    /// the ref must still be at `parent`, or absent when there is none). Returns the new
    /// commit, or `None` if the ref had moved.
    #[cfg(test)]
    pub(super) fn commit_batch(
        &self,
        info: &BatchInfo,
        ops_jsonl: &[u8],
        parent: Option<ObjectId>,
        seconds: i64,
    ) -> Result<Option<ObjectId>, JournalError> {
        let tree = self.write_tree(info, ops_jsonl)?;
        self.commit_tree(info, tree, parent, seconds)
    }

    /// [`JournalRepo::commit_batch`] for a tree [`JournalRepo::write_tree`] wrote.
    pub(super) fn commit_tree(
        &self,
        info: &BatchInfo,
        tree: ObjectId,
        parent: Option<ObjectId>,
        seconds: i64,
    ) -> Result<Option<ObjectId>, JournalError> {
        let signature = signature(&info.replica, seconds);
        let id = self.write_commit(tree, parent, &signature, &message(info))?;
        let moved = self.move_ref(&info.replica, id, parent, &signature)?;
        Ok(moved.then_some(id))
    }

    /// Writes the tree of one journal commit: `batch.json` and `ops.jsonl`.
    pub(super) fn write_tree(
        &self,
        info: &BatchInfo,
        ops_jsonl: &[u8],
    ) -> Result<ObjectId, JournalError> {
        let batch_json = serde_json::to_vec_pretty(info).expect("batch info serialises");
        // Sorted by name, as git requires: batch.json < ops.jsonl.
        self.write_files_tree(&[(BATCH_FILE, &batch_json), (OPS_FILE, ops_jsonl)])
    }

    /// Moves the ref; `false` if it was not at `parent` any more.
    fn move_ref(
        &self,
        replica: &str,
        id: ObjectId,
        parent: Option<ObjectId>,
        signature: &gix::actor::Signature,
    ) -> Result<bool, JournalError> {
        use gix::refs::transaction::RefEdit;
        let name = ref_name(replica);
        let expected = match parent {
            Some(parent) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(parent)),
            None => PreviousValue::MustNotExist,
        };
        let full_name =
            name.as_str().try_into().map_err(|e: gix::validate::reference::name::Error| {
                JournalError::Git { context: format!("ref name {name}"), message: e.to_string() }
            })?;
        let edit = RefEdit::update(full_name, id, expected, "fleet journal commit");
        match self.edit_ref(&name, edit, signature)? {
            Ok(()) => Ok(true),
            Err(error) if self.tip(replica)? != parent => {
                tracing::debug!(%error, reference = %name, "the ref moved while committing");
                Ok(false)
            }
            Err(error) => Err(JournalError::Git {
                context: self.at(&format!("updating {name}")),
                message: error.to_string(),
            }),
        }
    }
}

/// The author and committer of a journal commit: `name` with the journal's email, at
/// `seconds` since the epoch (UTC).
fn signature(name: &str, seconds: i64) -> gix::actor::Signature {
    gix::actor::Signature {
        name: name.into(),
        email: super::EMAIL.into(),
        time: gix::date::Time { seconds, offset: 0 },
    }
}

/// The commit message of a batch: the count and the sequence range.
fn message(info: &BatchInfo) -> String {
    let plural = if info.count == 1 { "op" } else { "ops" };
    format!(
        "fleet journal: {} {plural}, seq {}..{}\n\nreplica {}\n",
        info.count, info.first_seq, info.last_seq, info.replica
    )
}
