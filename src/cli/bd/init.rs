//! `bd init`: creates `.beads/` here (or at `--db` / `$BEADS_DIR`): the store `beads.db`,
//! `metadata.json` and the legacy `.gitignore` — through the same code as `fleet init`. It
//! creates no `issues.jsonl` or `export-state.json`; those appear once `export.auto` is set.
//!
//! In a clone whose remote holds a fleet journal (a team sharing its queue through the
//! project's repository), `bd init` without a prefix joins that queue, as `fleet join` does:
//! the prefix is the team's, and every issue is merged.

use std::path::Path;

use serde::Serialize;

use super::context::BdContext;
use super::{BdGlobal, transfer};
use crate::cli::CliError;
use crate::cli::init::init_workspace;
use crate::cli::join::{self, join_found};
use crate::cli::sync::fail_on_bad_refs;
use crate::journal::join::{Survey, survey};
use crate::workspace::STORE_FILE;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Issue id prefix (default: derived from the directory name).
    #[arg(short, long)]
    pub prefix: Option<String>,
    /// Import .beads/issues.jsonl (if present) into the new workspace.
    #[arg(long)]
    pub from_jsonl: bool,
    /// Accepted for compatibility (fleet writes no git hooks or repository files).
    #[arg(long)]
    pub stealth: bool,
    #[arg(long, hide = true)]
    pub contributor: bool,
    #[arg(long, hide = true)]
    pub team: bool,
    #[arg(long, hide = true)]
    pub skip_hooks: bool,
    #[arg(long, hide = true)]
    pub branch: Option<String>,
    #[command(flatten)]
    pub compat: super::compat::InitCompatArgs,
}

#[derive(Serialize)]
struct Initialized {
    path: String,
    database: String,
    prefix: String,
}

pub fn cmd_init(ctx: &BdContext, global: &BdGlobal, args: InitArgs) -> Result<(), CliError> {
    let dir = ctx.init_dir(global)?;
    let jsonl = dir.join(crate::workspace::EXPORT_FILE);
    let named = args.prefix.is_some() || prefix_from_config_yaml(&dir).is_some();
    if !named
        && !args.from_jsonl
        && !dir.join(STORE_FILE).exists()
        && let Some(found) = team_journal(ctx, &dir)
    {
        return join_team(ctx, &dir, &found);
    }
    let prefix = match (&args.prefix, &prefix_from_config_yaml(&dir)) {
        (Some(prefix), _) | (None, Some(prefix)) => prefix.trim().trim_end_matches('-').to_string(),
        // The file's issues belong in this store, whether imported now or later.
        (None, None) => prefix_from_jsonl(&jsonl).unwrap_or_else(|| prefix_from_dir(&dir)),
    };
    if args.compat.force && dir.join(STORE_FILE).exists() {
        ctx.out.note(&format!(
            "{} exists; kept as it is (fleet never re-initialises a store; `bd repair` rebuilds a \
             damaged one)",
            dir.join(STORE_FILE).display()
        ));
        return Ok(());
    }
    let beads_metadata = beads_backend(&dir);
    let store = init_workspace(&dir, &prefix).map_err(CliError::message_only)?;
    let result = Initialized {
        path: dir.display().to_string(),
        database: dir.join(STORE_FILE).display().to_string(),
        prefix: store.prefix().to_string(),
    };
    drop(store);
    if !ctx.out.quiet {
        ctx.out.emit(&result, || {
            format!(
                "✓ bd initialized successfully!\n\n  Database: {}\n  Issue prefix: {p}\n  \
                 Issues will be named: {p}-<hash> (e.g., {p}-a3f)\n\nRun `bd quickstart` to get started.",
                result.database,
                p = result.prefix
            )
        });
    }
    if let Some(backend) = beads_metadata {
        ctx.out.note(&format!(
            "Kept beads' metadata.json (backend {backend}) for teammates still on beads; fleet's \
             store is {}",
            dir.join(STORE_FILE).display()
        ));
        if dir.join("dolt").is_dir() || dir.join("embeddeddolt").is_dir() {
            ctx.out.note(&format!(
                "Bring the Dolt database's issues into this store with: bd import {} --via-bd",
                dir.display()
            ));
        }
    }
    if args.from_jsonl && jsonl.is_file() {
        let new_global = BdGlobal { db: Some(dir.clone()), ..global.clone() };
        let fresh = BdContext::new(&new_global, ctx.personality())?;
        transfer::import_path(&fresh, &jsonl, false)?;
    } else if jsonl.is_file() {
        ctx.out.note(&format!(
            "{} holds this project's issues; bring them into the new store with `bd import` \
             (or next time `bd init --from-jsonl`)",
            jsonl.display()
        ));
    }
    Ok(())
}

/// Makes the store in `dir` from the team's queue `found` (see [`team_journal`]), as
/// `fleet join` does, and says so as `bd init` does.
fn join_team(ctx: &BdContext, dir: &Path, found: &Survey) -> Result<(), CliError> {
    let prefix = found.prefix.clone().unwrap_or_else(|| prefix_from_dir(dir));
    let (joined, report) =
        join_found(ctx, dir, found, &prefix, "journal").map_err(CliError::message_only)?;
    if !ctx.out.quiet {
        ctx.out.emit(&joined, || {
            format!("✓ bd initialized successfully!\n\n{}", join::render(&joined))
        });
    }
    fail_on_bad_refs(&report).map_err(CliError::message_only)
}

/// The fleet journal on the remote of the git repository `dir` is in (a clone of a project
/// whose team shares its queue), if there is one. Reaching the remote is best effort: when it
/// fails, the init goes on without it and says so.
fn team_journal(ctx: &BdContext, dir: &Path) -> Option<Survey> {
    std::fs::create_dir_all(dir).ok()?;
    match survey(dir, None) {
        Ok(Some(found)) if found.replicas > 0 => Some(found),
        Ok(_) => None,
        Err(error) => {
            ctx.out.note(&format!(
                "could not look for the team's queue on the repository's remote ({error}); \
                 initializing a new one (`bd sync` merges it later)"
            ));
            None
        }
    }
}

/// The backend a `metadata.json` beads wrote names (`dolt`, `sqlite`), if there is one that
/// is not fleet's.
fn beads_backend(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(crate::workspace::METADATA_FILE)).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    let backend = value.get("backend").and_then(|b| b.as_str()).unwrap_or("sqlite");
    (backend != "fleet-redb").then(|| backend.to_string())
}

/// The `issue-prefix` (or `issue_prefix`) of `.beads/config.yaml`, where beads keeps it.
fn prefix_from_config_yaml(dir: &Path) -> Option<String> {
    use crate::workspace::config_yaml;
    config_yaml::value(dir, "issue-prefix").or_else(|| config_yaml::value(dir, "issue_prefix"))
}

/// The prefix of the first issue id in a JSONL file (`bd-a1f.2` → `bd`).
fn prefix_from_jsonl(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim_start_matches('\u{feff}').lines().find_map(|line| {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        let id = value.get("id")?.as_str()?;
        crate::id::prefix_of(id).map(str::to_string)
    })
}

/// The default prefix: the name of the directory holding `.beads`, lowercased, with runs of
/// other characters turned into one hyphen, starting with a letter; `bd` if nothing is left.
fn prefix_from_dir(beads_dir: &Path) -> String {
    let name = beads_dir
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut prefix = String::new();
    for c in name.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            prefix.push(c);
        } else if !prefix.is_empty() && !prefix.ends_with('-') {
            prefix.push('-');
        }
    }
    let prefix = prefix.trim_start_matches(|c: char| !c.is_ascii_lowercase());
    let mut prefix: String = prefix.chars().take(20).collect();
    while prefix.ends_with('-') {
        prefix.pop();
    }
    if prefix.is_empty() { "bd".to_string() } else { prefix }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_yaml_names_the_prefix() {
        let dir = std::env::temp_dir().join(format!("bd-init-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.yaml"),
            "# beads\nissue-prefix: \"api\"  # ids\nsync:\n  issue-prefix: no\n",
        )
        .unwrap();
        assert_eq!(prefix_from_config_yaml(&dir).as_deref(), Some("api"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn prefixes_come_from_the_directory_name() {
        assert_eq!(prefix_from_dir(Path::new("/x/My_Project 2/.beads")), "my-project-2");
        assert_eq!(prefix_from_dir(Path::new("/x/42things/.beads")), "things");
        assert_eq!(prefix_from_dir(Path::new("/x/___/.beads")), "bd");
        assert_eq!(prefix_from_dir(Path::new("/x/fleet/.beads")), "fleet");
    }
}
