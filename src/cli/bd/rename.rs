//! `bd rename-prefix <new>`: every issue with the workspace's prefix gets the new one, and
//! every reference to an old id in any issue's text follows (see
//! [`crate::tracker::rename_prefix`]). `--dry-run` shows what would change.

use super::context::BdContext;
use crate::cli::CliError;

#[derive(Debug, clap::Args)]
pub struct RenamePrefixArgs {
    /// The new prefix: lowercase letters, digits and hyphens, starting with a letter.
    pub new_prefix: String,
    /// Show the changes; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also move issues with other prefixes to the new one (consolidates mixed prefixes).
    #[arg(long)]
    pub repair: bool,
}

pub fn cmd_rename_prefix(ctx: &BdContext, args: RenamePrefixArgs) -> Result<(), CliError> {
    let new = args.new_prefix.trim().trim_end_matches('-').to_string();
    crate::id::validate_prefix(&new).map_err(|e| {
        CliError::new(format!("invalid prefix {new:?}: {e}"))
            .with_hint("a prefix is lowercase letters, digits and hyphens, starting with a letter")
    })?;
    let store = ctx.store()?;
    let old = store.prefix().to_string();
    let ids: Vec<String> = store
        .read()?
        .list(&crate::store::ListFilter { all: true, ..Default::default() })?
        .0
        .into_iter()
        .map(|s| s.issue.id)
        .collect();
    let mut plan = crate::tracker::rename_plan(&ids, &old, &new);
    if args.repair {
        for id in &ids {
            if let Some((prefix, rest)) = id.split_once('-')
                && prefix != new
                && !plan.contains_key(id)
            {
                plan.insert(id.clone(), format!("{new}-{rest}"));
            }
        }
    }
    let renames: Vec<serde_json::Value> =
        plan.iter().map(|(from, to)| serde_json::json!({ "old_id": from, "new_id": to })).collect();
    if args.dry_run {
        let shown = serde_json::json!({ "dry_run": true, "old_prefix": old, "new_prefix": new, "renames": renames });
        ctx.out.emit(&shown, || {
            let mut lines = vec![format!(
                "DRY RUN: Would rename {} issues from prefix '{old}' to '{new}'\n\nSample changes:",
                plan.len()
            )];
            lines.extend(plan.iter().take(5).map(|(from, to)| format!("  {from} -> {to}")));
            if plan.len() > 5 {
                lines.push(format!("... and {} more issues", plan.len() - 5));
            }
            lines.join("\n")
        });
        return Ok(());
    }
    ctx.check_writable("rename-prefix")?;
    let request = crate::tracker::Request::RenamePrefix { plan: plan.clone(), prefix: new.clone() };
    ctx.submit(request)?.into_done()?;
    crate::cli::journal::commit_soon(ctx, true);
    let done = serde_json::json!({ "old_prefix": old, "new_prefix": new, "renamed": plan.len() });
    ctx.out.emit(&done, || {
        format!(
            "Renaming {} issues from prefix '{old}' to '{new}'...\n✓ Successfully renamed prefix from {old} to {new}",
            plan.len()
        )
    });
    Ok(())
}
