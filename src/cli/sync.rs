//! `fleet remote add|remove|list` (git remotes of the journal repository) and `fleet sync`
//! (see [`crate::journal::sync`]).

use std::io::IsTerminal;

use super::context::Context;
use super::error::CliError;
use crate::journal::identity::OwnRef;
use crate::journal::remotes::{self, Remote, RemoteOwner};
use crate::journal::sync::{self, SyncReport};
use crate::store::Store;

#[derive(Debug, clap::Subcommand)]
pub enum RemoteCommand {
    /// Add a remote (a git URL or path) to the journal repository.
    Add { name: String, url: String },
    /// Remove a remote.
    #[command(visible_alias = "rm")]
    Remove { name: String },
    /// List the remotes.
    List,
}

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The remote (default: origin, or the only remote).
    pub name: Option<String>,
}

pub fn cmd_remote(ctx: &Context, command: RemoteCommand) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?.to_path_buf();
    drop(ctx.open_store()?);
    match command {
        RemoteCommand::Add { name, url } => {
            let remote = remotes::add_remote(&dir, &name, &url)?;
            ctx.out.emit(&remote, || match remote.owner {
                RemoteOwner::Fleet => format!("✓ Added remote {} ({})", remote.name, remote.url),
                RemoteOwner::Repository => format!(
                    "✓ The repository's remote {} ({}) is there already; the queue syncs through it",
                    remote.name, remote.url
                ),
            });
        }
        RemoteCommand::Remove { name } => {
            let remote = remotes::remove_remote(&dir, &name)?;
            ctx.out.emit(&remote, || format!("✓ Removed remote {} ({})", remote.name, remote.url));
        }
        RemoteCommand::List => {
            let listed = remotes::remotes(&dir)?;
            ctx.out.emit(&listed, || render_remotes(&listed));
        }
    }
    Ok(())
}

fn render_remotes(remotes: &[Remote]) -> String {
    if remotes.is_empty() {
        return "No remotes (add one with `fleet remote add origin URL`).".to_string();
    }
    let line = |r: &Remote| match r.owner {
        RemoteOwner::Fleet => format!("{}\t{}", r.name, r.url),
        RemoteOwner::Repository => format!("{}\t{}\t(the repository's own)", r.name, r.url),
    };
    remotes.iter().map(line).collect::<Vec<_>>().join("\n")
}

pub fn cmd_sync(ctx: &Context, args: SyncArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let report = run_sync(ctx, &store, args.name.as_deref())?;
    ctx.out.emit(&report, || render_report(&report));
    fail_on_bad_refs(&report)
}

/// Syncs and, with `sync.export_jsonl`, writes `.beads/issues.jsonl`.
pub(super) fn run_sync(
    ctx: &Context,
    store: &Store,
    remote: Option<&str>,
) -> Result<SyncReport, CliError> {
    run_sync_with(ctx, store, remote, true, true)
}

/// [`run_sync`], pulling and pushing only as asked.
pub(super) fn run_sync_with(
    ctx: &Context,
    store: &Store,
    remote: Option<&str>,
    pull: bool,
    push: bool,
) -> Result<SyncReport, CliError> {
    // git draws its own progress for a person at a terminal; scripts and --json stay quiet.
    let progress = if ctx.out.json || ctx.out.quiet || !std::io::stderr().is_terminal() {
        sync::FetchProgress::Quiet
    } else {
        sync::FetchProgress::Terminal
    };
    let options = sync::SyncOptions { progress, pull, push };
    let report = sync::sync_with(store, remote, options)?;
    export_if_enabled(ctx, store);
    Ok(report)
}

/// The error for refs left out, once the rest of the sync is done and reported.
pub(super) fn fail_on_bad_refs(report: &SyncReport) -> Result<(), CliError> {
    if report.bad_refs.is_empty() {
        return Ok(());
    }
    Err(CliError::new(format!(
        "sync with remote {} left out {} ref(s):\n  {}",
        report.remote,
        report.bad_refs.len(),
        report.bad_refs.join("\n  ")
    ))
    .with_hint(
        "everything else was synced; fix or delete the ref on the remote (`git push REMOTE :REF`) and sync again",
    ))
}

fn export_if_enabled(ctx: &Context, store: &Store) {
    match crate::beads::export_after_sync(store) {
        Ok(Some(summary)) => ctx.out.note(&format!(
            "Exported {} issue(s) to {}",
            summary.issues,
            summary.path.unwrap_or_default()
        )),
        Ok(None) => {}
        Err(error) => ctx.out.warn(&format!("sync.export_jsonl: exporting failed: {error}")),
    }
}

/// The human summary of a sync.
pub(super) fn render_report(report: &SyncReport) -> String {
    let received = format!(
        "received {} op(s) ({} applied, {} unchanged, {} rejected)",
        report.received,
        report.applied,
        report.unchanged,
        report.rejected.len()
    );
    let sent = format!("sent {}", report.sent);
    let exchanged = match (report.pulled, report.pushed) {
        (true, true) => format!("{received}, {sent}"),
        (true, false) => format!("{received}; nothing pushed"),
        (false, true) => format!("{sent}; nothing fetched"),
        (false, false) => "nothing fetched or pushed".to_string(),
    };
    let mut lines = vec![format!("✓ Synced with {} ({}): {exchanged}", report.remote, report.url)];
    match &report.own_ref {
        OwnRef::InStep => {}
        OwnRef::CaughtUp { ops } => lines.push(format!(
            "This store was behind its own journal on the remote (a restored backup?): caught up with {ops} op(s)"
        )),
        OwnRef::NewReplica { restamped, claims_moved } => lines.push(format!(
            "Another copy of this store (a copied ~/.fleet, a restored backup or snapshot) pushed as replica {}: this store is replica {} from now on, {} op(s) of its own re-stamped{}",
            restamped.old,
            restamped.new,
            restamped.ops.len(),
            if claims_moved.is_empty() {
                String::new()
            } else {
                format!(", {} claim(s) on the remote moved", claims_moved.len())
            }
        )),
    }
    if !report.restored_refs.is_empty() {
        lines.push(format!(
            "Restored on the remote the journals of {} other replica(s) it lacked",
            report.restored_refs.len()
        ));
    }
    if report.conflicts_resolved > 0 {
        lines.push(format!("Conflicts resolved: {}", report.conflicts_resolved));
    }
    for rejection in &report.rejected {
        lines.push(format!(
            "  rejected {} of {} (replica {}): {}",
            rejection.kind, rejection.issue, rejection.replica, rejection.reason
        ));
    }
    for overturned in &report.overturned {
        lines.push(format!(
            "  {} of {} by {}: {}",
            overturned.kind, overturned.issue, overturned.actor, overturned.now
        ));
    }
    for id in &report.closes_kept {
        lines.push(format!("  {id} stays closed: a close wins over a concurrent status change"));
    }
    for renamed in &report.renamed {
        lines.push(format!(
            "  {} is now {}: an issue made on another machine had the id first (made by replica {})",
            renamed.asked, renamed.given, renamed.replica
        ));
    }
    for orphan in &report.orphaned {
        lines.push(format!(
            "  {} is kept without its {} edge to {}, which was deleted on another machine",
            orphan.issue, orphan.kind, orphan.target
        ));
    }
    if !report.lost_claims.is_empty() {
        lines.push(format!(
            "Lost claims (an earlier claim elsewhere won): {}",
            report.lost_claims.join(", ")
        ));
    }
    lines.join("\n")
}
