//! `bd hooks run|install|list` and the older `bd hook NAME`: the git hooks beads installs.
//!
//! Every era of beads' hooks calls back into `bd` (`bd hooks run pre-commit "$@"`, `bd hook
//! pre-commit`) and passes its exit code on to git, so a `bd` that does not know the command
//! aborts every `git commit`. Fleet keeps the queue in its own store and its history in the
//! git journal, so a hook has little to do:
//!
//! - `pre-commit`: where the repository tracks the JSONL export (`.beads/issues.jsonl`), it is
//!   rewritten from the store and staged, so a commit carries the queue as beads' hook did;
//!   elsewhere nothing happens;
//! - every other hook (`post-merge`, `post-checkout`, `pre-push`, `prepare-commit-msg`, …)
//!   succeeds and does nothing: a merged JSONL is brought in with `fleet import`, and the
//!   queue travels between machines with `fleet sync`.
//!
//! A hook never fails a git operation because of fleet: problems are warnings on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::context::BdContext;
use crate::cli::CliError;
use crate::workspace::EXPORT_FILE;

/// The hooks beads installs, and so does `bd hooks install`.
const HOOKS: [&str; 5] =
    ["pre-commit", "post-merge", "pre-push", "post-checkout", "prepare-commit-msg"];

/// What marks a hook file as ours (so `install` never overwrites someone else's hook).
const MARKER: &str = "# installed by fleet (bd hooks install)";

#[derive(Debug, clap::Subcommand)]
pub enum HooksCommand {
    /// Run the work of a git hook (what the installed hooks call).
    Run {
        /// The hook: pre-commit, post-merge, pre-push, post-checkout, prepare-commit-msg.
        hook: String,
        /// The arguments git passed to the hook (ignored).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Install the git hooks into the repository's hooks directory.
    Install {
        /// Replace hooks of the same name that fleet did not write.
        #[arg(long)]
        force: bool,
    },
    /// List the git hooks and whether they are installed.
    List,
}

#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// The hook name (older beads hooks call `bd hook <name>`).
    pub hook: String,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

pub fn cmd_hooks(ctx: &BdContext, command: HooksCommand) -> Result<(), CliError> {
    match command {
        HooksCommand::Run { hook, .. } => {
            run_hook(ctx, &hook);
            Ok(())
        }
        HooksCommand::Install { force } => install(ctx, force),
        HooksCommand::List => list(ctx),
    }
}

pub fn cmd_hook(ctx: &BdContext, args: HookArgs) -> Result<(), CliError> {
    run_hook(ctx, &args.hook);
    Ok(())
}

/// The work of one hook; see the module docs. Never an error: a hook must not fail git.
fn run_hook(ctx: &BdContext, hook: &str) {
    if hook != "pre-commit" {
        return;
    }
    let Ok(dir) = ctx.workspace_dir().map(Path::to_path_buf) else { return };
    let export = dir.join(EXPORT_FILE);
    if !tracked_by_git(&export) {
        return;
    }
    if let Err(error) = refresh_export(ctx, &export) {
        ctx.out
            .warn(&format!("Warning: pre-commit: could not export {}: {error}", export.display()));
        return;
    }
    if let Err(error) = git_in(&dir, &["add", "--", EXPORT_FILE]) {
        ctx.out
            .warn(&format!("Warning: pre-commit: could not stage {}: {error}", export.display()));
    }
}

/// Rewrites the export from the store.
fn refresh_export(ctx: &BdContext, export: &Path) -> Result<(), String> {
    let store = ctx.open_store().map_err(|e| e.message)?;
    let options = crate::beads::ExportOptions::default();
    crate::beads::export_to_path(&store, &options, export).map(drop).map_err(|e| e.to_string())
}

/// Whether git tracks `path` (in the repository that contains it).
fn tracked_by_git(path: &Path) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return false };
    let name = name.to_string_lossy();
    git_in(dir, &["ls-files", "--error-unmatch", "--", &name]).is_ok()
}

/// Runs `git ARGS` in `dir`; the error is git's message.
fn git_in(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_string())
    }
}

/// The repository's hooks directory (honouring `core.hooksPath`).
fn hooks_dir(ctx: &BdContext) -> Result<PathBuf, CliError> {
    let dir = ctx.workspace_dir()?.to_path_buf();
    let path = git_in(&dir, &["rev-parse", "--git-path", "hooks"])
        .map_err(|e| CliError::new(format!("not in a git repository ({}): {e}", dir.display())))?;
    let path = PathBuf::from(path.trim());
    Ok(if path.is_absolute() { path } else { dir.join(path) })
}

fn hook_script(hook: &str) -> String {
    format!("#!/bin/sh\n{MARKER}\nexec bd hooks run {hook} \"$@\"\n")
}

fn install(ctx: &BdContext, force: bool) -> Result<(), CliError> {
    let dir = hooks_dir(ctx)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
    let mut installed = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let existing = std::fs::read_to_string(&path).ok();
        if existing.as_deref().is_some_and(|text| !text.contains(MARKER)) && !force {
            ctx.out.warn(&format!(
                "Warning: {} exists and was not written by fleet; left alone (--force replaces it)",
                path.display()
            ));
            continue;
        }
        write_executable(&path, &hook_script(hook))?;
        installed.push(hook);
    }
    let report = serde_json::json!({ "installed": installed, "dir": dir });
    ctx.out.emit(&report, || {
        format!("✓ Installed git hooks in {}: {}", dir.display(), installed.join(", "))
    });
    Ok(())
}

fn write_executable(path: &Path, text: &str) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    crate::fsutil::write_atomic(path, text.as_bytes())
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|e| CliError::new(format!("writing {}: {e}", path.display())))
}

fn list(ctx: &BdContext) -> Result<(), CliError> {
    let dir = hooks_dir(ctx)?;
    let rows: Vec<serde_json::Value> = HOOKS
        .iter()
        .map(|hook| {
            let text = std::fs::read_to_string(dir.join(hook)).ok();
            let state = match text {
                None => "not installed",
                Some(t) if t.contains(MARKER) || t.contains("bd hook") => "installed",
                Some(_) => "other",
            };
            serde_json::json!({ "hook": hook, "state": state })
        })
        .collect();
    ctx.out.emit(&rows, || {
        rows.iter()
            .map(|r| {
                format!(
                    "{:<20} {}",
                    r["hook"].as_str().unwrap_or(""),
                    r["state"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}
