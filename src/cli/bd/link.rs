//! `fleet link-bd [DIR]`: makes `DIR/bd` a symbolic link to the running fleet binary, so that
//! agents' `bd …` commands reach fleet's bd personality.
//!
//! The default DIR is the directory the fleet binary itself is in: it is on PATH whenever
//! `fleet` is, needs no extra PATH setup, and keeps the link next to what it points at.
//! Pass a directory (e.g. `~/.local/bin`) to put it elsewhere.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::CliError;
use crate::cli::output::Output;

#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    /// Where to create the `bd` link (default: the directory of the fleet binary).
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
        None => exe
            .parent()
            .map(Path::to_path_buf)
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
        } else if first_bd_on_path().is_none() {
            lines.push(format!("note: {} is not on PATH; add it so agents find `bd`", dir.display()));
        }
        lines.join("\n")
    });
    Ok(())
}

fn points_to(link: &Path, exe: &Path) -> bool {
    link.canonicalize().is_ok_and(|target| target == exe)
}

fn first_bd_on_path() -> Option<PathBuf> {
    crate::fsutil::find_executable("bd", &std::env::var_os("PATH")?)
}
