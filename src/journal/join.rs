//! Joining a team's queue: what a remote's journal holds for a machine that has no store yet
//! — whether there is a fleet journal at all, and the id prefix the team's stores give new
//! issues — so that one command (`fleet join`, or `bd init` in a clone) makes the store with
//! that prefix and merges the queue.
//!
//! The prefix is read from the newest batch of any replica (`batch.json`'s `prefix`); a
//! journal written before batches recorded it gives the prefix most of its issues were
//! created with.

use std::collections::BTreeMap;
use std::path::Path;

use super::JournalError;
use super::read::read_since;
use super::remotes::{Remote, pick, staging};
use super::repo::JournalRepo;
use super::sync::{FetchProgress, fetch};

/// What a remote's journal holds (see [`survey`]).
#[derive(Debug, Clone)]
pub struct Survey {
    pub remote: Remote,
    /// The replicas whose journals the remote has (none: no fleet journal there).
    pub replicas: usize,
    /// The prefix the team's stores give new issues, if the journal tells.
    pub prefix: Option<String>,
}

/// Fetches the journals of the workspace's remote `name` (default: origin, or the only
/// remote) and reads what they hold. `None` when the workspace has no repository or remote.
pub fn survey(dir: &Path, name: Option<&str>) -> Result<Option<Survey>, JournalError> {
    let Some(repo) = JournalRepo::find(dir)? else { return Ok(None) };
    let Some(remote) = pick(&repo, name)? else { return Ok(None) };
    fetch(&repo, &remote, FetchProgress::Quiet)?;
    let staged = repo.refs_under(&staging(&remote.name))?;
    let prefix = prefix_of_journal(&repo, &staged)?;
    Ok(Some(Survey { remote, replicas: staged.len(), prefix }))
}

/// The id prefix the journals of `refs` (replica, tip) record, else the one most of their
/// created issues have.
pub(super) fn prefix_of_journal(
    repo: &JournalRepo,
    refs: &[(String, gix::ObjectId)],
) -> Result<Option<String>, JournalError> {
    match newest_prefix(repo, refs)? {
        Some(prefix) => Ok(Some(prefix)),
        None => commonest_prefix(repo, refs),
    }
}

/// The prefix recorded by the newest tip batch among `refs` (replica, commit).
fn newest_prefix(
    repo: &JournalRepo,
    refs: &[(String, gix::ObjectId)],
) -> Result<Option<String>, JournalError> {
    let mut newest: Option<(i64, String)> = None;
    for (replica, tip) in refs {
        let batch = repo.batch(replica, *tip)?;
        if let Some(prefix) = batch.info.prefix
            && newest.as_ref().is_none_or(|(seconds, _)| batch.seconds > *seconds)
        {
            newest = Some((batch.seconds, prefix));
        }
    }
    Ok(newest.map(|(_, prefix)| prefix))
}

/// The prefix most issues created in the journals of `refs` have.
fn commonest_prefix(
    repo: &JournalRepo,
    refs: &[(String, gix::ObjectId)],
) -> Result<Option<String>, JournalError> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (replica, tip) in refs {
        for op in read_since(repo, replica, *tip, None)? {
            let created = op.kind.entries().iter().filter(|e| matches!(e.name(), "create" | "put"));
            for prefix in created.filter_map(|entry| crate::id::prefix_of(entry.subject())) {
                *counts.entry(prefix.to_string()).or_default() += 1;
            }
        }
    }
    Ok(counts.into_iter().max_by_key(|(_, count)| *count).map(|(prefix, _)| prefix))
}
