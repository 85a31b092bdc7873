//! `fleet join [URL]`: this machine's store made from a team's queue in one command — the
//! remote added (unless the repository the workspace is in already has it), its journals
//! fetched, the store created with the id prefix the journal records, and the queue merged.
//! `bd init` in a clone whose remote holds a fleet journal does the same ([`join_found`]).

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::init::init_workspace;
use super::sync::{fail_on_bad_refs, run_sync};
use crate::journal::join::{Survey, survey};
use crate::journal::remotes::add_remote;
use crate::workspace::STORE_FILE;

#[derive(Debug, clap::Args)]
pub struct JoinArgs {
    /// The team's git remote (a URL or path). Without it: the remote of the git repository
    /// the workspace is in (origin, or the only one), as in a clone of the project.
    pub url: Option<String>,
    /// The name the remote gets in the journal repository.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// The id prefix of new issues, when the journal does not record one (a journal of a
    /// fleet before it did, with no issues yet). Default: the journal's.
    #[arg(short, long)]
    pub prefix: Option<String>,
}

/// What `fleet join` (and `bd init` in a clone) did.
#[derive(Debug, Serialize)]
pub(super) struct Joined {
    pub path: String,
    pub prefix: String,
    /// Where the prefix came from: `journal` or `flag`.
    pub prefix_from: &'static str,
    pub remote: String,
    pub url: String,
    /// The machines (replicas) whose journals the remote holds.
    pub replicas: usize,
    /// Ops merged into the new store, and how many of them took effect.
    pub received: usize,
    pub applied: usize,
}

pub fn cmd_join(ctx: &Context, args: JoinArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    if dir.join(STORE_FILE).exists() {
        return Err(CliError::new(format!("{} already holds a store", dir.display())).with_hint(
            "to share it with a team: `fleet remote add origin URL`, then `fleet sync`; to join \
             a team's queue instead, point --db or BEADS_DIR at a new directory",
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
    let name = match &args.url {
        Some(url) => Some(add_remote(dir, &args.remote, url)?.name),
        None => None,
    };
    let found = survey(dir, name.as_deref())?.ok_or_else(|| {
        CliError::new(format!("{} is in no git repository with a remote", dir.display()))
            .with_hint("name the team's remote: `fleet join URL`")
    })?;
    if found.replicas == 0 {
        return Err(no_journal(&found));
    }
    let (prefix, from) = match (&args.prefix, &found.prefix) {
        (Some(prefix), _) => (prefix.clone(), "flag"),
        (None, Some(prefix)) => (prefix.clone(), "journal"),
        (None, None) => {
            return Err(CliError::new(format!(
                "the journal on remote {} records no id prefix and holds no issues to take one from",
                found.remote.name
            ))
            .with_hint("give the team's prefix: `fleet join --prefix P`"));
        }
    };
    let joined = join_found(ctx, dir, &found, &prefix, from)?;
    ctx.out.emit(&joined.0, || render(&joined.0));
    fail_on_bad_refs(&joined.1)
}

/// The error for a remote that holds no fleet journal.
fn no_journal(found: &Survey) -> CliError {
    CliError::new(format!(
        "remote {} ({}) holds no fleet journal (no refs/fleet/journal/*)",
        found.remote.name, found.remote.url
    ))
    .with_hint(
        "check the URL; to start the team's queue there: `fleet init --prefix P`, `fleet remote \
         add origin URL`, `fleet sync`",
    )
}

/// Makes the store in `dir` with `prefix` and merges the queue of the remote `found` surveyed
/// (which holds a fleet journal); `prefix_from` says where the prefix came from.
pub(super) fn join_found(
    ctx: &Context,
    dir: &Path,
    found: &Survey,
    prefix: &str,
    prefix_from: &'static str,
) -> Result<(Joined, crate::journal::sync::SyncReport), CliError> {
    let store = init_workspace(dir, prefix)?;
    let report = run_sync(ctx, &store, Some(&found.remote.name))?;
    let joined = Joined {
        path: dir.display().to_string(),
        prefix: store.prefix().to_string(),
        prefix_from,
        remote: found.remote.name.clone(),
        url: found.remote.url.clone(),
        replicas: found.replicas,
        received: report.received,
        applied: report.applied,
    };
    Ok((joined, report))
}

/// The human lines of a join.
pub(super) fn render(joined: &Joined) -> String {
    format!(
        "✓ Joined the queue of remote {} ({}): {} op(s) of {} machine(s) merged\n  Workspace: {}\n  Issue prefix: {} (from the {})",
        joined.remote,
        joined.url,
        joined.received,
        joined.replicas,
        joined.path,
        joined.prefix,
        if joined.prefix_from == "journal" { "team's journal" } else { "--prefix flag" }
    )
}
