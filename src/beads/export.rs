//! `bd export`: the queue as beads JSONL that `bd import` accepts (spec/beads.md §6.1), and
//! the auto-export that follows write commands when `export.auto` is on.
//!
//! One read snapshot, issues in id order, each line built by [`jsonl::record_value`] with its
//! dependencies, comments (by time, then id) and the computed counts; then memories sorted by
//! key when asked. By default the infra types (agent, rig, role, message), templates,
//! ephemeral issues and memories are left out, as beads does; `all` keeps the issues. The same state always gives the same
//! bytes.
//!
//! An export writes where it is pointed ([`write_export_to`]): a regular file (or nothing) is
//! replaced atomically — a temporary file next to it, synced, renamed over it; a symbolic link
//! is written through, to the file it names; a device or a FIFO (`/dev/stdout` into a pipe) is
//! written in place, and never replaced by a regular file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::batch::MEMORY_PREFIX;
use super::jsonl::{self, Counts, Record};
use super::{BeadsError, io_error};
use crate::model::dep_type;
use crate::store::{Reader, Store};
use crate::workspace::EXPORT_FILE;

/// Issue types `bd export` leaves out unless asked (spec §2).
pub const INFRA_TYPES: [&str; 4] = ["agent", "rig", "role", "message"];
/// The configuration key that turns auto-export on.
pub const EXPORT_STATE_FILE: &str = "export-state.json";

/// What to export. The default is what `bd export` writes: no infra types, templates,
/// ephemeral issues or memories (memories may hold private notes, so they leave the store
/// only when asked, as in beads).
///
/// Fleet's task fields travel under `metadata.fleet`, but the working directory `fleet create`
/// records is an absolute path on the creator's machine (often under their home directory),
/// which a git-tracked export must not spread: it is written relative to `root` (the project
/// holding `.beads/`) when it lies inside, left out otherwise, and written as it is only with
/// `absolute_paths`.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Include infra types, templates and ephemeral issues.
    pub all: bool,
    /// Write `_type: memory` lines after the issues.
    pub memories: bool,
    /// Write working directories as stored (absolute).
    pub absolute_paths: bool,
    /// The directory relative working directories are written against.
    pub root: Option<PathBuf>,
    /// Mask the secrets of every record with this redactor (`fleet export --redact`).
    pub redactor: Option<crate::redact::Redactor>,
}

impl ExportOptions {
    /// The defaults, with working directories relative to the project holding `beads_dir`.
    pub fn for_workspace(beads_dir: &Path) -> ExportOptions {
        let root = beads_dir.parent().filter(|p| !p.as_os_str().is_empty());
        let root = root.map(|r| std::fs::canonicalize(r).unwrap_or_else(|_| r.to_path_buf()));
        ExportOptions { root, ..ExportOptions::default() }
    }

    /// The working directory as this export writes it: relative to the root (`.` for the root
    /// itself), empty (left out) when it lies elsewhere, unchanged with `absolute_paths`.
    fn exported_cwd(&self, cwd: &str) -> String {
        let path = Path::new(cwd);
        if self.absolute_paths || !path.is_absolute() {
            return cwd.to_string();
        }
        let Some(relative) = self.root.as_deref().and_then(|root| path.strip_prefix(root).ok())
        else {
            return String::new();
        };
        if relative.as_os_str().is_empty() {
            ".".to_string()
        } else {
            relative.display().to_string()
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExportSummary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub issues: usize,
    pub memories: usize,
    /// Issues left out by the default excludes.
    pub excluded: usize,
}

/// Whether `export` leaves this issue out.
fn excluded(issue: &crate::model::Issue, options: &ExportOptions) -> bool {
    !options.all
        && (issue.ephemeral
            || issue.is_template
            || INFRA_TYPES.contains(&issue.issue_type.as_str()))
}

/// Writes the export of `reader`'s snapshot to `out`.
pub fn write_export(
    reader: &Reader,
    options: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, BeadsError> {
    let mut summary = ExportSummary::default();
    let mut line = Vec::with_capacity(4096);
    let mut failure: Option<BeadsError> = None;
    // Under the guard: a damaged page reached by the scan is an error naming the fix, never a
    // panic of the database engine.
    reader.guarded(|view| {
        view.scan_issues(&mut |mut issue| {
            issue.fleet.cwd = options.exported_cwd(&issue.fleet.cwd);
            if excluded(&issue, options) {
                summary.excluded += 1;
                return Ok(true);
            }
            let deps = view.deps_of(&issue.id)?;
            let mut comments = view.comments_of(&issue.id)?;
            crate::model::sort_comments(&mut comments);
            let counts = Counts {
                dependency_count: deps.len(),
                dependent_count: view.dependents_of(&issue.id)?.len(),
                comment_count: comments.len(),
                parent: deps
                    .iter()
                    .find(|d| d.kind == dep_type::PARENT_CHILD)
                    .map(|d| d.depends_on_id.clone()),
            };
            let record = Record { issue: Box::new(issue), deps, comments };
            line.clear();
            let mut value = Value::Object(jsonl::record_value(&record, &counts));
            if let Some(redactor) = &options.redactor {
                redactor.redact_json(&mut value);
            }
            jsonl::write_line(&mut line, &value);
            if let Err(error) = out.write_all(&line) {
                failure =
                    Some(BeadsError::Io { context: "writing the export".into(), source: error });
                return Ok(false);
            }
            summary.issues += 1;
            Ok(true)
        })
    })?;
    if let Some(error) = failure {
        return Err(error);
    }
    // What a damaged key moved out of its issue's reach is named, not left out.
    reader.guarded(|view| view.check_links())?;
    if options.memories {
        for (key, value) in reader.config_all()? {
            let Some(name) = key.strip_prefix(MEMORY_PREFIX) else { continue };
            line.clear();
            jsonl::write_line(&mut line, &jsonl::memory_value(name, &value));
            out.write_all(&line).map_err(io_error("writing the export"))?;
            summary.memories += 1;
        }
    }
    out.flush().map_err(io_error("writing the export"))?;
    Ok(summary)
}

/// Exports `store` to `path`, atomically.
pub fn export_to_path(
    store: &Store,
    options: &ExportOptions,
    path: &Path,
) -> Result<ExportSummary, BeadsError> {
    let reader = store.read()?;
    export_snapshot(&reader, options, path)
}

fn export_snapshot(
    reader: &Reader,
    options: &ExportOptions,
    path: &Path,
) -> Result<ExportSummary, BeadsError> {
    let mut summary = None;
    write_export_to(path, |file| {
        summary = Some(write_export(reader, options, file)?);
        Ok(())
    })?;
    let mut summary = summary.expect("the export ran");
    summary.path = Some(path.display().to_string());
    Ok(summary)
}

/// How an export reaches what is at its path.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// Nothing, or a regular file: written aside and renamed over this path.
    Replace(PathBuf),
    /// A device, a FIFO, a terminal: opened and written in place.
    InPlace,
}

/// What is at `path` and how an export writes it: symbolic links are followed to the file they
/// name (by the kernel where it can, so `/dev/stdout` reaches the pipe or terminal behind it);
/// a directory or a socket is refused, naming what it is.
fn target_of(path: &Path) -> Result<Target, BeadsError> {
    use std::os::unix::fs::FileTypeExt;
    let refuse = |what: &str| BeadsError::Io {
        context: format!("exporting to {}", path.display()),
        source: std::io::Error::other(format!(
            "it is {what}; export to a file, a device or a FIFO"
        )),
    };
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            let real = if is_symlink(path) {
                std::fs::canonicalize(path)
                    .map_err(io_error(format!("following the link {}", path.display())))?
            } else {
                path.to_path_buf()
            };
            Ok(Target::Replace(real))
        }
        Ok(meta) if meta.is_dir() => Err(refuse("a directory")),
        Ok(meta) if meta.file_type().is_socket() => Err(refuse("a socket")),
        Ok(_) => Ok(Target::InPlace),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Ok(Target::Replace(dangling_target(path)?))
        }
        Err(error) => Err(io_error(format!("looking at {}", path.display()))(error)),
    }
}

fn is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// The path a chain of symbolic links starting at `path` ends on, when that names nothing yet
/// (the export creates the file the link names); `path` itself when it is not a link.
fn dangling_target(path: &Path) -> Result<PathBuf, BeadsError> {
    /// As many links as the kernel follows before it gives up (ELOOP).
    const MAX_LINKS: usize = 40;
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if !is_symlink(&at) {
            return Ok(at);
        }
        let link = std::fs::read_link(&at)
            .map_err(io_error(format!("reading the link {}", at.display())))?;
        at = match at.parent() {
            Some(dir) => dir.join(link),
            None => link,
        };
    }
    Err(BeadsError::Io {
        context: format!("following the link {}", path.display()),
        source: std::io::Error::other("too many levels of symbolic links"),
    })
}

/// Writes an export to `path` as [`target_of`] decides: atomically for a regular file or a new
/// one ([`write_atomic`]), in place for a device or a FIFO.
pub fn write_export_to(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), BeadsError>,
) -> Result<(), BeadsError> {
    match target_of(path)? {
        Target::Replace(real) => write_atomic(&real, fill),
        Target::InPlace => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(io_error(format!("opening {}", path.display())))?;
            let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
            fill(&mut writer)?;
            writer.flush().map_err(io_error(format!("writing {}", path.display())))
        }
    }
}

/// Writes a file atomically: `fill` writes a temporary file next to `path`, which is synced
/// and renamed over `path`. On failure the temporary file is removed and `path` is untouched.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), BeadsError>,
) -> Result<(), BeadsError> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name =
        path.file_name().map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.tmp-{}-{}", std::process::id(), ulid::Ulid::generate()));
    let result = (|| {
        let file = std::fs::File::create(&temp)
            .map_err(io_error(format!("creating {}", temp.display())))?;
        let mut writer = std::io::BufWriter::with_capacity(1 << 20, file);
        fill(&mut writer)?;
        let file = writer.into_inner().map_err(|e| BeadsError::Io {
            context: format!("writing {}", temp.display()),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(io_error(format!("syncing {}", temp.display())))?;
        std::fs::rename(&temp, path).map_err(io_error(format!(
            "renaming {} to {}",
            temp.display(),
            path.display()
        )))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// What `.beads/export-state.json` records about the last auto-export.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportState {
    /// The store's change counter when the export was taken.
    pub changes: u64,
    pub exported_at: jiff::Timestamp,
    pub path: String,
    pub issues: usize,
    pub memories: usize,
}

/// After a sync: when `sync.export_jsonl` is on, writes `.beads/issues.jsonl` (what `fleet
/// sync` and `fleet run`'s periodic sync both do). Returns what was exported, if anything.
pub fn export_after_sync(store: &Store) -> Result<Option<ExportSummary>, BeadsError> {
    if !crate::settings::is_on(&store.read()?, crate::settings::SYNC_EXPORT)? {
        return Ok(None);
    }
    let target = store.dir().join(EXPORT_FILE);
    Ok(Some(export_to_path(store, &ExportOptions::default(), &target)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_directories_are_written_relative_to_the_project_or_left_out() {
        let options = ExportOptions { root: Some("/p/app".into()), ..ExportOptions::default() };
        assert_eq!(options.exported_cwd("/p/app"), ".");
        assert_eq!(options.exported_cwd("/p/app/sub"), "sub");
        assert_eq!(options.exported_cwd("/home/me/secret"), "");
        assert_eq!(options.exported_cwd("sub"), "sub");
        let absolute = ExportOptions { absolute_paths: true, ..options };
        assert_eq!(absolute.exported_cwd("/home/me/secret"), "/home/me/secret");
    }
}
