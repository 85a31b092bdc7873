//! `bd sync` and `bd dolt push|pull`: beads' ways of exchanging issues with other machines,
//! mapped onto `fleet sync` once a remote is configured (`fleet remote add`). Without one
//! there is nothing to sync, which is said plainly and is not an error.

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::sync::{fail_on_bad_refs, render_report, run_sync};
use crate::journal::sync::{Remote, pick_remote};

#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// Only commit this machine's pending changes to the local journal (no fetch or push).
    #[arg(long)]
    pub flush_only: bool,
    /// Show the sync state (remote, pending ops) without syncing.
    #[arg(long)]
    pub status: bool,
    /// The remote (default: origin, or the only remote).
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum DoltCommand {
    /// Send this machine's changes to the remote (fleet syncs both ways).
    Push,
    /// Fetch the remote's changes (fleet syncs both ways).
    Pull,
}

/// What `bd sync` says when there is no remote.
const NOTHING_TO_SYNC: &str =
    "Nothing to sync: no remote is configured (add one with `fleet remote add origin URL`)";

pub fn cmd_sync(ctx: &BdContext, args: SyncArgs) -> Result<(), CliError> {
    let fctx = ctx.require_store()?;
    let store = fctx.open_store()?;
    let remote = pick_remote(store.dir(), args.remote.as_deref())?;
    if args.flush_only || args.status {
        return flush_or_status(ctx, &store, remote.as_ref(), args.flush_only);
    }
    let Some(remote) = remote else {
        fctx.out.emit(&serde_json::json!({"synced": false, "reason": "no remote"}), || {
            NOTHING_TO_SYNC.to_string()
        });
        return Ok(());
    };
    let report = run_sync(fctx, &store, Some(&remote.name))?;
    fctx.out.emit(&report, || render_report(&report));
    fail_on_bad_refs(&report)
}

fn flush_or_status(
    ctx: &BdContext,
    store: &crate::store::Store,
    remote: Option<&Remote>,
    flush: bool,
) -> Result<(), CliError> {
    let committed = if flush { crate::journal::commit_pending(store)?.ops } else { 0 };
    let pending = crate::journal::pending_ops(store)?.len();
    let status = serde_json::json!({
        "remote": remote.map(|r| &r.name),
        "url": remote.map(|r| &r.url),
        "committed": committed,
        "pending": pending,
    });
    ctx.out.emit(&status, || {
        let remote = remote.map_or_else(
            || "no remote configured".to_string(),
            |r| format!("remote {} ({})", r.name, r.url),
        );
        let flushed = if flush { format!("Committed {committed} op(s); ") } else { String::new() };
        format!("{flushed}{pending} op(s) pending; {remote}")
    });
    Ok(())
}

pub fn cmd_dolt(ctx: &BdContext, _command: DoltCommand) -> Result<(), CliError> {
    cmd_sync(ctx, SyncArgs { flush_only: false, status: false, remote: None })
}
