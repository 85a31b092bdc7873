//! `bd sync` and `bd dolt push|pull`: beads' ways of exchanging issues with other machines,
//! mapped onto `fleet sync` once a remote is configured (`fleet remote add`). Without one
//! there is nothing to sync, which is said plainly and is not an error.
//!
//! beads' own `bd sync` flags mean here what they meant there, in fleet's terms: `--no-pull`
//! and `--no-push` leave out one half of the exchange, `--dry-run` says what would happen and
//! changes nothing, `--import-only` imports `.beads/issues.jsonl` and talks to no remote,
//! `--flush-only` only commits the pending changes to the local journal, and `-m` is
//! accepted (fleet's journal commits name their ops themselves). `bd dolt pull` only pulls,
//! `bd dolt push` only pushes.

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::sync::{fail_on_bad_refs, render_report, run_sync_with};
use crate::journal::remotes::{Remote, pick_remote};

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
    /// Say what a sync would do, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not push this machine's changes.
    #[arg(long)]
    pub no_push: bool,
    /// Do not fetch and merge the remote's changes.
    #[arg(long)]
    pub no_pull: bool,
    /// Only import .beads/issues.jsonl (no remote is contacted).
    #[arg(long)]
    pub import_only: bool,
    /// Accepted for compatibility: fleet's journal commits name their ops themselves.
    #[arg(short, long, value_name = "TEXT")]
    pub message: Option<String>,
    /// Accepted for compatibility (ids are never renamed on import).
    #[arg(long, hide = true)]
    pub rename_on_import: bool,
    /// Accepted for compatibility: fleet's sync retries nothing (pushes never race).
    #[arg(long, hide = true, value_name = "N")]
    pub attempts: Option<u32>,
}

#[derive(Debug, clap::Subcommand)]
pub enum DoltCommand {
    /// Send this machine's changes to the remote (nothing is fetched).
    Push,
    /// Fetch the remote's changes and merge them (nothing is pushed).
    Pull,
}

/// What `bd sync` says when there is no remote.
const NOTHING_TO_SYNC: &str =
    "Nothing to sync: no remote is configured (add one with `fleet remote add origin URL`)";

pub fn cmd_sync(ctx: &BdContext, args: SyncArgs) -> Result<(), CliError> {
    let fctx = ctx.require_store()?;
    if args.import_only {
        return import_only(ctx, args.dry_run);
    }
    let store = fctx.open_store()?;
    let remote = pick_remote(store.dir(), args.remote.as_deref())?;
    if args.flush_only || args.status {
        return flush_or_status(ctx, &store, remote.as_ref(), args.flush_only && !args.dry_run);
    }
    let Some(remote) = remote else {
        fctx.out.emit(&serde_json::json!({"synced": false, "reason": "no remote"}), || {
            NOTHING_TO_SYNC.to_string()
        });
        return Ok(());
    };
    if args.dry_run {
        return dry_run(ctx, &store, &remote, !args.no_pull, !args.no_push);
    }
    if args.message.is_some() {
        fctx.out.note("fleet's journal commits name their ops themselves; -m is not used");
    }
    let report = run_sync_with(fctx, &store, Some(&remote.name), !args.no_pull, !args.no_push)?;
    fctx.out.emit(&report, || render_report(&report));
    fail_on_bad_refs(&report)
}

/// `bd sync --dry-run`: what a sync would commit, fetch and push, from what this machine knows.
fn dry_run(
    ctx: &BdContext,
    store: &crate::store::Store,
    remote: &Remote,
    pull: bool,
    push: bool,
) -> Result<(), CliError> {
    let plan = crate::journal::sync::plan(store, Some(&remote.name))?;
    let output = serde_json::json!({
        "dry_run": true,
        "remote": plan.remote,
        "url": plan.url,
        "pending": plan.pending,
        "pull": pull,
        "push": push,
        "to_send": if push { plan.to_send } else { 0 },
    });
    ctx.out.emit(&output, || {
        let mut lines = vec![format!(
            "→ [DRY RUN] Would commit {} pending op(s) to the local journal",
            plan.pending
        )];
        if pull {
            lines.push(format!(
                "→ [DRY RUN] Would fetch and merge the journals of remote {} ({})",
                plan.remote, plan.url
            ));
        }
        if push {
            lines.push(format!(
                "→ [DRY RUN] Would push {} op(s) to remote {}",
                plan.to_send, plan.remote
            ));
        }
        lines.push("✓ Dry run complete (no changes made)".to_string());
        lines.join("\n")
    });
    Ok(())
}

/// `bd sync --import-only`: imports `.beads/issues.jsonl`, as beads did after a `git pull`.
fn import_only(ctx: &BdContext, dry_run: bool) -> Result<(), CliError> {
    let path = ctx.workspace_dir()?.join(crate::workspace::EXPORT_FILE);
    if !path.is_file() {
        ctx.out.emit(&serde_json::json!({"imported": false, "reason": "no issues.jsonl"}), || {
            format!("Nothing to import: there is no {}", path.display())
        });
        return Ok(());
    }
    super::transfer::import_path(ctx, &path, dry_run)
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

pub fn cmd_dolt(ctx: &BdContext, command: DoltCommand) -> Result<(), CliError> {
    let (no_pull, no_push) = match command {
        DoltCommand::Push => (true, false),
        DoltCommand::Pull => (false, true),
    };
    let args = SyncArgs {
        flush_only: false,
        status: false,
        remote: None,
        dry_run: false,
        no_push,
        no_pull,
        import_only: false,
        message: None,
        rename_on_import: false,
        attempts: None,
    };
    cmd_sync(ctx, args)
}
