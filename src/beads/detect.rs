//! What a path given to `fleet import` holds.
//!
//! - a file: SQLite (by its 16-byte header) or JSONL; a fleet store file (`beads.db` that is
//!   not SQLite) means its workspace;
//! - a `.beads/` directory: a Dolt database (`dolt/` or `embeddeddolt/`, which fleet cannot
//!   read), a `beads.db` (legacy SQLite, or another fleet store), or `issues.jsonl` /
//!   `beads.jsonl`;
//! - a project directory holding `.beads/`;
//! - a Python-fleet home: `.beads/` plus `tasks/<id>/task.json`, whose cwd, coder and model
//!   become the issues' fleet fields.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{BeadsError, io_error};
use crate::model::FleetFields;
use crate::workspace::STORE_FILE;

/// A place issues can be read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Beads JSONL; `None` is stdin.
    Jsonl(Option<PathBuf>),
    /// A legacy SQLite `beads.db`.
    Sqlite(PathBuf),
    /// Another fleet workspace (its `.beads/` directory).
    FleetStore(PathBuf),
    /// A Dolt-backed workspace: fleet cannot read it, `bd export` can.
    Dolt {
        beads_dir: PathBuf,
        project_dir: PathBuf,
        /// An older JSONL export lying next to the database, if any.
        stale_jsonl: Option<PathBuf>,
    },
}

impl Source {
    /// A short name for reports: `jsonl`, `sqlite`, `fleet`, `dolt`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Jsonl(_) => "jsonl",
            Source::Sqlite(_) => "sqlite",
            Source::FleetStore(_) => "fleet",
            Source::Dolt { .. } => "dolt",
        }
    }

    /// The path as a report shows it.
    pub fn display(&self) -> String {
        match self {
            Source::Jsonl(None) => "stdin".into(),
            Source::Jsonl(Some(path)) | Source::Sqlite(path) | Source::FleetStore(path) => {
                path.display().to_string()
            }
            Source::Dolt { beads_dir, .. } => beads_dir.display().to_string(),
        }
    }
}

/// The outcome of looking at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub source: Source,
    /// Set when the path is a Python-fleet home: the directory holding `tasks/`.
    pub fleet_home: Option<PathBuf>,
    /// What was found, in words, for the narration.
    pub description: String,
}

/// Looks at `path` (`-` for stdin) and says what it holds.
pub fn detect(path: &Path) -> Result<Detected, BeadsError> {
    if path == Path::new("-") {
        return Ok(plain(Source::Jsonl(None), "JSONL on stdin".into()));
    }
    if !path.exists() {
        return Err(BeadsError::Missing(path.to_path_buf()));
    }
    if path.is_file() {
        return detect_file(path);
    }
    let beads_dir = path.join(crate::workspace::DIR_NAME);
    if beads_dir.is_dir() {
        let inner = detect_beads_dir(&beads_dir)?;
        if path.join("tasks").is_dir() {
            return Ok(Detected {
                description: format!(
                    "a Python-fleet home at {} ({} and tasks/)",
                    path.display(),
                    inner.description
                ),
                source: inner.source,
                fleet_home: Some(path.to_path_buf()),
            });
        }
        return Ok(Detected {
            description: format!("a project at {}: {}", path.display(), inner.description),
            ..inner
        });
    }
    detect_beads_dir(path)
}

fn plain(source: Source, description: String) -> Detected {
    Detected { source, fleet_home: None, description }
}

fn detect_file(path: &Path) -> Result<Detected, BeadsError> {
    if is_sqlite(path) {
        return Ok(plain(
            Source::Sqlite(path.to_path_buf()),
            format!("a legacy SQLite beads database {}", path.display()),
        ));
    }
    if path.file_name().is_some_and(|n| n == STORE_FILE) {
        let dir = path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        return Ok(plain(
            Source::FleetStore(dir.clone()),
            format!("a fleet workspace {}", dir.display()),
        ));
    }
    Ok(plain(Source::Jsonl(Some(path.to_path_buf())), format!("a JSONL file {}", path.display())))
}

fn detect_beads_dir(dir: &Path) -> Result<Detected, BeadsError> {
    let jsonl = [crate::workspace::EXPORT_FILE, "beads.jsonl"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file());
    for dolt in ["dolt", "embeddeddolt"] {
        if dir.join(dolt).is_dir() {
            let project_dir = dir
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            return Ok(plain(
                Source::Dolt { beads_dir: dir.to_path_buf(), project_dir, stale_jsonl: jsonl },
                format!("a Dolt-backed beads workspace {} ({dolt}/)", dir.display()),
            ));
        }
    }
    let db = dir.join(STORE_FILE);
    if db.is_file() {
        let mut found = detect_file(&db)?;
        if let Some(jsonl) = &jsonl {
            found.description.push_str(&format!(
                " (also {}; the database is read — pass the file to import it instead)",
                jsonl.display()
            ));
        }
        return Ok(found);
    }
    match jsonl {
        Some(path) => Ok(plain(
            Source::Jsonl(Some(path.clone())),
            format!("a beads JSONL export {}", path.display()),
        )),
        None => Err(BeadsError::NothingFound(dir.to_path_buf())),
    }
}

/// Whether the file starts with SQLite's header.
pub fn is_sqlite(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// The fields of a Python-fleet `task.json` that fleet keeps.
#[derive(Debug, Deserialize)]
struct TaskJson {
    #[serde(default)]
    id: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    coder: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

/// Reads `home/tasks/<id>/task.json` files: issue id → fleet fields. A task.json that is not
/// valid JSON is an error naming the file.
pub fn read_tasks(home: &Path) -> Result<BTreeMap<String, FleetFields>, BeadsError> {
    let tasks = home.join("tasks");
    let mut out = BTreeMap::new();
    let entries =
        std::fs::read_dir(&tasks).map_err(io_error(format!("reading {}", tasks.display())))?;
    for entry in entries {
        let entry = entry.map_err(io_error(format!("reading {}", tasks.display())))?;
        let file = entry.path().join("task.json");
        if !file.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .map_err(io_error(format!("reading {}", file.display())))?;
        let task: TaskJson = serde_json::from_str(&text).map_err(|e| BeadsError::Io {
            context: format!("reading {}", file.display()),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        let id = if task.id.is_empty() {
            entry.file_name().to_string_lossy().into_owned()
        } else {
            task.id
        };
        let fields = FleetFields {
            cwd: task.cwd.unwrap_or_default(),
            coder: task.coder.unwrap_or_default(),
            model: task.model.unwrap_or_default(),
            ..FleetFields::default()
        };
        out.insert(id, fields);
    }
    Ok(out)
}
