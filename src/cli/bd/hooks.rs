//! `bd hooks run|install|list` and the older `bd hook NAME`: the git hooks beads installs.
//!
//! Every era of beads' hooks calls back into `bd` (`bd hooks run pre-commit "$@"`, `bd hook
//! pre-commit`) and passes its exit code on to git, so a `bd` that does not know the command
//! aborts every `git commit`. What each hook does follows beads 1.0:
//!
//! - first, always: a team's own hook chained as `<hook>.old` in the hooks directory runs with
//!   git's arguments, and its failure is the hook's failure (beads' `runChainedHook`); a
//!   `.old` that is itself a bd hook is skipped, so a chain never calls itself;
//! - `pre-commit`, first: the reservation guard — a commit staging a file that another live
//!   task's exclusive reservation names (`bd reserve --exclusive`) is refused, naming the file,
//!   the task and the reservation (`git commit --no-verify` overrides, as for any hook). The
//!   committer's own task (`FLEET_TASK_ID`) is not another. Reservations of tasks that run in
//!   another repository (by their recorded place) do not apply. A queue that cannot be read
//!   refuses nothing;
//! - `pre-commit`: only when `export.auto` is on *and* paths under `.beads/` are already
//!   staged, `.beads/issues.jsonl` is rewritten from the store, keeping every record of the
//!   file the store does not hold (`beads::keep`), and staged when `export.git-add` is on;
//! - `post-merge`, and `post-checkout` of a branch: when `import.auto` is on (the default),
//!   `.beads/issues.jsonl` as the merge left it is imported into the store — an upsert in one
//!   transaction, so what a teammate pushed arrives and nothing of this store is removed;
//! - every other hook (`pre-push`, `prepare-commit-msg`, …) does nothing more.
//!
//! `bd hooks install` writes them into the repository of the current directory (a project
//! whose queue lives elsewhere, as fleet's central one does), else the workspace's.
//!
//! Settings are read from the store, else from `.beads/config.yaml` as beads keeps them.
//! Fleet's own work never fails a git operation: its problems are warnings on stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::context::BdContext;
use crate::beads::{ExportOptions, ImportOptions, NoProgress};
use crate::cli::CliError;
use crate::settings::{EXPORT_AUTO, EXPORT_GIT_ADD, IMPORT_AUTO, is_on_for};
use crate::workspace::EXPORT_FILE;

/// The hooks beads installs, and so does `bd hooks install`.
const HOOKS: [&str; 5] =
    ["pre-commit", "post-merge", "pre-push", "post-checkout", "prepare-commit-msg"];

/// What marks a hook file as ours (so `install` never overwrites someone else's hook).
const MARKER: &str = "# installed by fleet (bd hooks install)";

/// The suffix of a chained hook: the team's own hook, run before ours.
const CHAINED: &str = ".old";

#[derive(Debug, clap::Subcommand)]
pub enum HooksCommand {
    /// Run the work of a git hook (what the installed hooks call).
    Run {
        /// The hook: pre-commit, post-merge, pre-push, post-checkout, prepare-commit-msg.
        hook: String,
        /// The arguments git passed to the hook (handed on to a chained `<hook>.old`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Install the git hooks into the repository's hooks directory.
    Install {
        /// Replace hooks of the same name that fleet did not write.
        #[arg(long, conflicts_with = "chain")]
        force: bool,
        /// Keep hooks fleet did not write: each is renamed `<hook>.old` and runs first.
        #[arg(long)]
        chain: bool,
    },
    /// List the git hooks and whether they are installed.
    List,
}

/// `bd migrate …`: what fleet can bring up to the current layout.
#[derive(Debug, clap::Subcommand)]
pub enum MigrateCommand {
    /// Reinstall fleet's git hooks in the current layout; a team's own hook is kept, renamed
    /// `<hook>.old`, and runs first.
    Hooks,
}

/// `bd migrate hooks`: the install with `--chain`, which rewrites fleet's own hooks and keeps
/// any other.
pub fn cmd_migrate(ctx: &BdContext, command: MigrateCommand) -> Result<(), CliError> {
    match command {
        MigrateCommand::Hooks => install(ctx, false, true),
    }
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
        HooksCommand::Run { hook, args } => run_hook(ctx, &hook, &args),
        HooksCommand::Install { force, chain } => install(ctx, force, chain),
        HooksCommand::List => list(ctx),
    }
}

pub fn cmd_hook(ctx: &BdContext, args: HookArgs) -> Result<(), CliError> {
    run_hook(ctx, &args.hook, &args.args)
}

/// The work of one hook; see the module docs. Fails only with the chained hook's exit code.
fn run_hook(ctx: &BdContext, hook: &str, args: &[String]) -> Result<(), CliError> {
    let code = run_chained(ctx, hook, args);
    if code != 0 {
        return Err(CliError::exit_only(code));
    }
    match hook {
        "pre-commit" => {
            reservation_guard(ctx)?;
            export_for_commit(ctx);
        }
        "post-merge" => import_after(ctx, hook),
        // Only a branch checkout (flag 1), not `git checkout -- file`.
        "post-checkout" if args.get(2).is_some_and(|flag| flag == "1") => import_after(ctx, hook),
        _ => {}
    }
    Ok(())
}

/// Runs `<hooks dir>/<hook>.old` with git's arguments when it is there, executable and not a
/// bd hook; its exit code (0 when there is none).
fn run_chained(ctx: &BdContext, hook: &str, args: &[String]) -> i32 {
    use std::os::unix::fs::PermissionsExt;
    let Ok(dir) = git_hooks_dir(Path::new(".")) else { return 0 };
    let path = dir.join(format!("{hook}{CHAINED}"));
    let Ok(meta) = std::fs::metadata(&path) else { return 0 };
    if meta.permissions().mode() & 0o111 == 0 {
        return 0;
    }
    if std::fs::read_to_string(&path).is_ok_and(|text| is_bd_hook(&text)) {
        return 0;
    }
    match Command::new(&path).args(args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(error) => {
            ctx.out.warn(&format!("Warning: chained hook {} failed: {error}", path.display()));
            1
        }
    }
}

/// Whether a hook's text calls bd (ours, or any beads era's), so chaining it would recurse.
fn is_bd_hook(text: &str) -> bool {
    text.contains(MARKER) || text.contains("bd hooks run") || text.contains("bd hook ")
}

/// pre-commit: refuses a commit that stages a file another live task reserved exclusively
/// (module docs).
fn reservation_guard(ctx: &BdContext) -> Result<(), CliError> {
    let Ok(store) = ctx.store() else { return Ok(()) };
    let Ok(reader) = store.read() else { return Ok(()) };
    let now = ctx.now();
    let own = ctx.attempt_task();
    let here = crate::place::locate(Path::new("."));
    let mut others = Vec::new();
    for reservation in reader.reservations().unwrap_or_default() {
        if !reservation.exclusive || own == Some(reservation.task.as_str()) {
            continue;
        }
        let Ok(task) = reader.issue(&reservation.task) else { continue };
        let elsewhere = match (&here, task.as_ref().and_then(|t| t.fleet.repo.as_ref())) {
            (Some(here), Some(theirs)) => here.id != theirs.id,
            _ => false,
        };
        if !elsewhere && reservation.is_live(task.as_ref(), now) {
            others.push(reservation);
        }
    }
    if others.is_empty() {
        return Ok(());
    }
    let staged =
        git_in(Path::new("."), &["diff", "--cached", "--name-only", "-z"]).unwrap_or_default();
    let mut refused = Vec::new();
    for path in staged.split('\0').filter(|p| !p.is_empty()) {
        for reservation in &others {
            if let Some(glob) =
                reservation.globs.iter().find(|glob| crate::coord::glob::matches(glob, path))
            {
                refused.push(format!(
                    "{path} is reserved by {} ({} {glob}, {}: {})",
                    reservation.task, reservation.id, reservation.holder, reservation.reason
                ));
                break;
            }
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let tasks: std::collections::BTreeSet<&str> = others.iter().map(|r| r.task.as_str()).collect();
    Err(CliError::new(format!(
        "pre-commit: refused: {} staged file(s) reserved exclusively by another task:\n  {}",
        refused.len(),
        refused.join("\n  ")
    ))
    .with_hint(format!(
        "leave them to {} (ask with `bd mail send <task> …`), wait for the reservation to end, \
         or commit anyway with `git commit --no-verify`",
        tasks.into_iter().collect::<Vec<_>>().join(", ")
    )))
}

/// pre-commit: the export beads' hook makes, under beads' conditions (module docs).
fn export_for_commit(ctx: &BdContext) {
    let Ok(dir) = ctx.workspace_dir().map(Path::to_path_buf) else { return };
    let Ok(store) = ctx.store() else { return };
    let Ok(reader) = store.read() else { return };
    if !is_on_for(&reader, &dir, EXPORT_AUTO).unwrap_or(false) || !beads_paths_staged(&dir) {
        return;
    }
    let export = dir.join(EXPORT_FILE);
    let options = ExportOptions::for_workspace(&dir);
    if let Err(error) = crate::beads::export_keeping(&reader, &options, &export) {
        ctx.out
            .warn(&format!("Warning: pre-commit: {} was not exported: {error}", export.display()));
        return;
    }
    if is_on_for(&reader, &dir, EXPORT_GIT_ADD).unwrap_or(false)
        && let Err(error) = git_in_project(&dir, &["add"], EXPORT_FILE)
    {
        ctx.out
            .warn(&format!("Warning: pre-commit: could not stage {}: {error}", export.display()));
    }
}

/// Whether the commit being made already stages paths under the workspace `dir`.
fn beads_paths_staged(dir: &Path) -> bool {
    git_in_project(dir, &["diff", "--cached", "--name-only"], "")
        .is_ok_and(|names| !names.trim().is_empty())
}

/// Runs `git ARGS -- <workspace>/<inside>` from the project holding the workspace `dir`, not
/// from inside it, so a relative `GIT_DIR` git gave the hook still names the repository.
fn git_in_project(dir: &Path, args: &[&str], inside: &str) -> Result<String, String> {
    let (Some(project), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(format!("{} has no parent directory", dir.display()));
    };
    let project = if project.as_os_str().is_empty() { Path::new(".") } else { project };
    let path = Path::new(name).join(inside);
    let path = path.to_string_lossy();
    let mut all = args.to_vec();
    all.extend(["--", &path]);
    git_in(project, &all)
}

/// post-merge / post-checkout: imports the workspace's JSONL as the merge left it.
fn import_after(ctx: &BdContext, hook: &str) {
    let Ok(dir) = ctx.workspace_dir().map(Path::to_path_buf) else { return };
    let file = dir.join(EXPORT_FILE);
    if std::fs::metadata(&file).map_or(true, |meta| meta.len() == 0) {
        return;
    }
    let Ok(store) = ctx.store() else { return };
    match store.read().and_then(|reader| is_on_for(&reader, &dir, IMPORT_AUTO)) {
        Ok(true) => {}
        Ok(false) | Err(_) => return,
    }
    match import_file(ctx, &file) {
        Ok(report) if report.created + report.updated > 0 => ctx.out.note(&format!(
            "{hook}: imported {} new and {} changed issues from {}",
            report.created,
            report.updated,
            file.display()
        )),
        Ok(_) => {}
        Err(error) => ctx.out.warn(&format!(
            "Warning: {hook}: {} was not imported: {error}; fix it, then run `bd import`",
            file.display()
        )),
    }
    crate::cli::journal::commit_soon(ctx, false);
}

/// Imports `file` into the workspace's store in one transaction; a bad line imports nothing.
fn import_file(ctx: &BdContext, file: &Path) -> Result<crate::beads::ImportReport, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("reading it: {e}"))?;
    let batch = crate::beads::import::read_jsonl(&bytes, ctx.now(), &NoProgress);
    if let Some(error) = batch.first_error() {
        return Err(error.to_string());
    }
    let store = ctx.store().map_err(|e| e.message)?;
    crate::beads::import::run(
        store,
        ctx.actor(),
        ctx.clock,
        batch,
        &ImportOptions::default(),
        &NoProgress,
    )
    .map_err(|e| e.to_string())
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

/// The hooks directory of the repository `dir` is in (honouring `core.hooksPath`).
fn git_hooks_dir(dir: &Path) -> Result<PathBuf, String> {
    let path = git_in(dir, &["rev-parse", "--git-path", "hooks"])?;
    let path = PathBuf::from(path.trim());
    Ok(if path.is_absolute() { path } else { dir.join(path) })
}

/// The hooks directory of the repository of the current directory (a project whose queue is
/// elsewhere, as fleet's central one is), else of the workspace's repository.
fn hooks_dir(ctx: &BdContext) -> Result<PathBuf, CliError> {
    if let Ok(dir) = git_hooks_dir(Path::new(".")) {
        return Ok(dir);
    }
    let dir = ctx.workspace_dir()?.to_path_buf();
    git_hooks_dir(&dir)
        .map_err(|e| CliError::new(format!("not in a git repository ({}): {e}", dir.display())))
}

fn hook_script(hook: &str) -> String {
    format!("#!/bin/sh\n{MARKER}\nexec bd hooks run {hook} \"$@\"\n")
}

fn install(ctx: &BdContext, force: bool, chain: bool) -> Result<(), CliError> {
    let dir = hooks_dir(ctx)?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
    let mut installed = Vec::new();
    let mut chained = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let existing = std::fs::read_to_string(&path).ok();
        let foreign = existing.as_deref().is_some_and(|text| !is_bd_hook(text));
        if foreign && chain {
            let old = dir.join(format!("{hook}{CHAINED}"));
            if old.exists() {
                return Err(CliError::new(format!(
                    "{} exists, so {} cannot be chained as it",
                    old.display(),
                    path.display()
                ))
                .with_hint("merge the two by hand, or remove the .old one, then install again"));
            }
            std::fs::rename(&path, &old).map_err(|e| {
                CliError::new(format!("renaming {} to {}: {e}", path.display(), old.display()))
            })?;
            chained.push(hook);
        } else if foreign && !force {
            ctx.out.warn(&format!(
                "Warning: {} exists and was not written by fleet; left alone (--chain runs it \
                 before fleet's, --force replaces it)",
                path.display()
            ));
            continue;
        }
        write_executable(&path, &hook_script(hook))?;
        installed.push(hook);
    }
    if !chained.is_empty() {
        ctx.out.note(&format!(
            "Chained the existing {} hooks: each runs first as <hook>{CHAINED}",
            chained.join(", ")
        ));
    }
    let report = serde_json::json!({ "installed": installed, "chained": chained, "dir": dir });
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
