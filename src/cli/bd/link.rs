//! `fleet link-bd [DIR]`: makes `DIR/bd` a symbolic link to the running fleet binary, so that
//! agents' `bd …` commands reach fleet's bd personality.
//!
//! The default DIR is the directory `fleet` was reached through: the directory of the path it
//! was run by, or the PATH entry whose `fleet` is this binary (a symbolic link such as
//! `~/.local/bin/fleet -> ~/src/fleet/target/release/fleet` puts the link in
//! `~/.local/bin`, which is on PATH, not beside the real binary, which is not). It is on PATH
//! whenever `fleet` is and needs no extra PATH setup. Pass a directory (e.g. `~/.local/bin`)
//! to put it elsewhere.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::CliError;
use crate::cli::output::Output;

#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    /// Where to create the `bd` link (default: the PATH directory `fleet` was run from).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Replace an existing `bd` there (a real beads binary, or another link).
    #[arg(short, long)]
    pub force: bool,
}

#[derive(Serialize)]
struct Linked {
    link: String,
    target: String,
    /// False when the link was already there.
    created: bool,
    /// Another `bd` that comes earlier on PATH and would be run instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    shadowed_by: Option<String>,
}

pub fn cmd_link_bd(out: &Output, args: LinkArgs) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CliError::new(format!("finding the fleet binary: {e}")))?;
    let dir = match args.dir {
        Some(dir) => dir,
        None => invoked_dir(&exe)
            .or_else(|| exe.parent().map(Path::to_path_buf))
            .ok_or_else(|| CliError::new("the fleet binary has no parent directory"))?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("creating {}: {e}", dir.display())))?;
    let link = dir.join("bd");
    let mut created = true;
    match std::fs::symlink_metadata(&link) {
        Ok(_) if points_to(&link, &exe) => created = false,
        Ok(_) if !args.force => {
            return Err(CliError::new(format!("{} already exists", link.display()))
                .with_hint("pass --force to replace it, or give another directory"));
        }
        Ok(_) => std::fs::remove_file(&link)
            .map_err(|e| CliError::new(format!("removing {}: {e}", link.display())))?,
        Err(_) => {}
    }
    if created {
        std::os::unix::fs::symlink(&exe, &link).map_err(|e| {
            CliError::new(format!("linking {} to {}: {e}", link.display(), exe.display()))
                .with_hint("give a directory you can write to, e.g. fleet link-bd ~/.local/bin")
        })?;
    }
    let result = Linked {
        link: link.display().to_string(),
        target: exe.display().to_string(),
        created,
        shadowed_by: first_bd_on_path()
            .filter(|found| !points_to(found, &exe))
            .map(|p| p.display().to_string()),
    };
    out.emit(&result, || {
        let mut lines = vec![if result.created {
            format!("✓ Linked {} -> {}", result.link, result.target)
        } else {
            format!("✓ {} already links to {}", result.link, result.target)
        }];
        if let Some(other) = &result.shadowed_by {
            lines.push(format!(
                "warning: {other} comes first on PATH, so `bd` runs that one; put {} earlier on PATH",
                dir.display()
            ));
        } else if !on_path(&dir) {
            lines.push(format!("note: {} is not on PATH; add it so agents find `bd`", dir.display()));
        }
        lines.join("\n")
    });
    Ok(())
}

/// The directory this run of fleet was reached through (see the module docs): the parent of
/// `argv[0]` when it is a path, else the first PATH entry whose `argv[0]` is this binary.
fn invoked_dir(exe: &Path) -> Option<PathBuf> {
    let argv0 = PathBuf::from(std::env::args_os().next()?);
    if argv0.components().count() > 1 {
        let parent = argv0.parent()?;
        let parent = std::path::absolute(parent).ok()?;
        return points_to(&parent.join(argv0.file_name()?), exe).then_some(parent);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| points_to(&dir.join(&argv0), exe))
}

/// Whether `dir` is one of PATH's directories.
fn on_path(dir: &Path) -> bool {
    let same = |a: &Path| match (a.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == dir,
    };
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| same(&d)))
}

fn points_to(link: &Path, exe: &Path) -> bool {
    link.canonicalize().is_ok_and(|target| target == exe)
}

fn first_bd_on_path() -> Option<PathBuf> {
    crate::fsutil::find_executable("bd", &std::env::var_os("PATH")?)
}
