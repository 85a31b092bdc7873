//! Where a task runs, on every machine: its working directory as a place in a git repository
//! that each machine finds in its own checkout.
//!
//! A task's `cwd` is one machine's absolute path (`/home/alice/src/app/web`). Another machine
//! syncing the same queue keeps its checkouts elsewhere (`/Users/bob/code/app`), so when a task
//! records its directory it also records the repository that directory is in, as machines tell
//! it apart — the URL of its `origin` remote, normalised ([`repository_id`]: scheme, user and a
//! trailing `.git` dropped, so `git@github.com:org/app.git` and
//! `https://github.com/org/app` are one) — and the directory's path inside it
//! ([`RepoPlace`]). A supervisor resolves that on its own machine ([`Places::resolve`]):
//!
//! 1. the recorded directory, if it exists here and is in that repository (or the task names
//!    no repository);
//! 2. else the same path inside a checkout of that repository found directly under one of the
//!    machine's checkout roots (`repo_roots` in runtime.toml; by default the home directory
//!    and its `src`, `code`, `projects`, `work` and `dev`);
//! 3. else the task is not runnable here ([`NotHere`], with the reason): this machine leaves it
//!    to others, and `fleet tasks` says so — it is never claimed, failed or blocked here.
//!
//! Each directory's repository is read once per [`Places`] (a supervisor's run), and each
//! root's checkouts once a minute at most.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A working directory as a place in a git repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoPlace {
    /// The repository as machines tell it apart ([`repository_id`]).
    pub id: String,
    /// The directory inside the repository's checkout: `.` for its top, else a relative path
    /// with `/` between its parts.
    pub path: String,
}

/// Why a task's place is not on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotHere(pub String);

/// The place of directory `dir`: its repository and its path inside the checkout. `None` when
/// it is in no git repository, or in one without an `origin` remote (no other machine could
/// find that one; its absolute path is all there is).
pub fn locate(dir: &Path) -> Option<RepoPlace> {
    let (top, id) = checkout_of(dir)?;
    let id = id?;
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let inside = dir.strip_prefix(&top).ok()?;
    let path = if inside.as_os_str().is_empty() {
        ".".to_string()
    } else {
        inside.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    };
    Some(RepoPlace { id, path })
}

/// Whether `path` (a place's path inside its checkout, as another machine recorded it) stays
/// inside the checkout: `.`, or relative parts that are neither `..` nor empty.
fn stays_inside(path: &str) -> bool {
    path == "."
        || (!path.starts_with('/')
            && path.split('/').all(|part| !part.is_empty() && part != ".." && part != "."))
}

/// The top of the git checkout containing `dir` (canonical), and its repository id if it has
/// an `origin` remote.
fn checkout_of(dir: &Path) -> Option<(PathBuf, Option<String>)> {
    let repo = gix::discover(dir).ok()?;
    let top = repo.workdir()?.to_path_buf();
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let url = repo.config_snapshot().string("remote.origin.url").map(|url| url.to_string());
    Some((top, url.map(|url| repository_id(&url))))
}

/// A remote URL as machines tell a repository apart: host and path, lowercase host, without
/// scheme, user, port or a trailing `.git` or `/`. `git@github.com:org/app.git`,
/// `ssh://git@github.com/org/app`, `https://github.com/org/app.git` are all
/// `github.com/org/app`. A local path stays a path (without `.git`).
pub fn repository_id(url: &str) -> String {
    let url = url.trim();
    let without_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let scp_like = !url.contains("://") && !url.starts_with('/') && url.contains(':');
    let (host, path) = if url.contains("://") {
        without_scheme.split_once('/').unwrap_or((without_scheme, ""))
    } else if scp_like {
        without_scheme.split_once(':').unwrap_or((without_scheme, ""))
    } else {
        ("", without_scheme)
    };
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host = host.split_once(':').map_or(host, |(host, _)| host).to_ascii_lowercase();
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_start_matches('/');
    if host.is_empty() { format!("/{path}") } else { format!("{host}/{path}") }
}

/// The checkout roots a machine searches when nothing else is given: the home directory and
/// the usual folders of checkouts in it.
pub const DEFAULT_ROOTS: &[&str] = &["~", "~/src", "~/code", "~/projects", "~/work", "~/dev"];

/// How long a root's list of checkouts is trusted before it is read again.
const ROOTS_FRESH: Duration = Duration::from_secs(60);

/// A machine's view of places: the roots it searches, and what it read of directories.
pub struct Places {
    roots: Vec<PathBuf>,
    /// Directory → its repository id (`None`: no checkout, or no origin).
    ids: HashMap<PathBuf, Option<String>>,
    /// Repository id → checkout tops under the roots, and when they were listed.
    found: Option<(Instant, HashMap<String, Vec<PathBuf>>)>,
}

impl Places {
    /// Places on this machine, searching `roots` (`~` is the home directory; empty: the
    /// defaults, [`DEFAULT_ROOTS`]).
    pub fn new(roots: &[String], home: Option<&Path>) -> Places {
        let roots: Vec<String> = if roots.iter().all(|r| r.trim().is_empty()) {
            DEFAULT_ROOTS.iter().map(|r| r.to_string()).collect()
        } else {
            roots.to_vec()
        };
        let expand = |root: &str| -> Option<PathBuf> {
            let root = root.trim();
            match root.strip_prefix('~') {
                Some(rest) => Some(home?.join(rest.trim_start_matches('/'))),
                None if root.is_empty() => None,
                None => Some(PathBuf::from(root)),
            }
        };
        Places {
            roots: roots.iter().filter_map(|r| expand(r)).collect(),
            ids: HashMap::new(),
            found: None,
        }
    }

    /// Whether these places were made with no roots at all (a placeholder to be made again).
    pub fn is_unset(&self) -> bool {
        self.roots.is_empty()
    }

    /// Where a task recorded at `cwd` with `place` runs on this machine (module docs).
    pub fn resolve(&mut self, cwd: &str, place: Option<&RepoPlace>) -> Result<PathBuf, NotHere> {
        let recorded = Path::new(cwd);
        let exists = !cwd.is_empty() && recorded.is_dir();
        let Some(place) = place else {
            return if exists || cwd.is_empty() {
                Ok(recorded.to_path_buf())
            } else {
                Err(NotHere(format!(
                    "its working directory {cwd} does not exist on this machine (the task names no git repository to find it by)"
                )))
            };
        };
        if exists && self.id_of(recorded).as_deref() == Some(place.id.as_str()) {
            return Ok(recorded.to_path_buf());
        }
        if !stays_inside(&place.path) {
            return Err(NotHere(format!(
                "its place {:?} in {} is not a path inside the repository (it may only name directories under the checkout's top)",
                place.path, place.id
            )));
        }
        for top in self.checkouts_of(&place.id) {
            let dir = if place.path == "." { top.clone() } else { top.join(&place.path) };
            if dir.is_dir() {
                return Ok(dir);
            }
        }
        Err(NotHere(format!(
            "no checkout of {} here (searched {cwd} and the folders directly under {}); clone it there, or set repo_roots in runtime.toml",
            place.id,
            self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
        )))
    }

    /// The repository id of `dir`, read once.
    fn id_of(&mut self, dir: &Path) -> Option<String> {
        self.ids
            .entry(dir.to_path_buf())
            .or_insert_with(|| checkout_of(dir).and_then(|(_, id)| id))
            .clone()
    }

    /// The checkouts of repository `id` directly under the roots (listed at most once a
    /// minute).
    fn checkouts_of(&mut self, id: &str) -> Vec<PathBuf> {
        let stale = self.found.as_ref().is_none_or(|(at, _)| at.elapsed() > ROOTS_FRESH);
        if stale {
            self.found = Some((Instant::now(), self.list_checkouts()));
        }
        self.found.as_ref().and_then(|(_, found)| found.get(id).cloned()).unwrap_or_default()
    }

    fn list_checkouts(&self) -> HashMap<String, Vec<PathBuf>> {
        let mut found: HashMap<String, Vec<PathBuf>> = HashMap::new();
        for root in &self.roots {
            let Ok(entries) = std::fs::read_dir(root) else { continue };
            for entry in entries.flatten() {
                let dir = entry.path();
                if !dir.join(".git").exists() {
                    continue;
                }
                if let Some((top, Some(id))) = checkout_of(&dir) {
                    found.entry(id).or_default().push(top);
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A git checkout at `dir` whose origin is `url`, with a directory `web` inside.
    fn checkout(dir: &Path, url: &str) {
        std::fs::create_dir_all(dir.join("web")).unwrap();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["remote", "add", "origin", url]);
    }

    #[test]
    fn a_place_recorded_on_one_machine_resolves_in_another_machines_checkout() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let there = one.path().join("src/app");
        checkout(&there, "git@github.com:org/app.git");
        let place = locate(&there.join("web")).expect("a place");
        assert_eq!(place, RepoPlace { id: "github.com/org/app".into(), path: "web".into() });
        assert_eq!(locate(&there).unwrap().path, ".");
        let recorded = there.join("web").display().to_string();

        // Another machine: the same repository cloned elsewhere, under a root it searches.
        let here = two.path().join("code/application");
        checkout(&here, "https://github.com/org/app");
        std::fs::remove_dir_all(one.path()).unwrap();
        let mut places = Places::new(&["~/code".into()], Some(two.path()));
        let resolved = places.resolve(&recorded, Some(&place)).unwrap();
        assert_eq!(
            std::fs::canonicalize(resolved).unwrap(),
            std::fs::canonicalize(here.join("web")).unwrap()
        );

        // A machine with no checkout of it says why, and the task is not for it.
        let mut elsewhere = Places::new(&["/nonexistent".into()], None);
        let not_here = elsewhere.resolve(&recorded, Some(&place)).unwrap_err();
        assert!(not_here.0.contains("no checkout of github.com/org/app here"), "{not_here}");
        // Without a repository, only the recorded directory itself will do.
        let missing = elsewhere.resolve(&recorded, None).unwrap_err();
        assert!(missing.0.contains("does not exist on this machine"), "{missing}");
        assert!(elsewhere.resolve("", None).is_ok());
    }

    #[test]
    fn a_place_never_leads_out_of_its_checkout() {
        for inside in [".", "web", "web/static", "a-b.c/d_e"] {
            assert!(stays_inside(inside), "{inside}");
        }
        for outside in ["..", "../etc", "web/../../etc", "/etc", "", "web//x", "./web"] {
            assert!(!stays_inside(outside), "{outside}");
        }
        let two = tempfile::tempdir().unwrap();
        checkout(&two.path().join("code/app"), "git@github.com:org/app.git");
        let mut places = Places::new(&["~/code".into()], Some(two.path()));
        let hostile = RepoPlace { id: "github.com/org/app".into(), path: "../../..".into() };
        let refused = places.resolve("/nowhere", Some(&hostile)).unwrap_err();
        assert!(refused.0.contains("not a path inside the repository"), "{refused}");
    }

    #[test]
    fn a_directory_of_another_repository_at_the_recorded_path_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let app = dir.path().join("app");
        checkout(&app, "git@example.com:team/other.git");
        let place = RepoPlace { id: "github.com/org/app".into(), path: "web".into() };
        let recorded = app.join("web").display().to_string();
        let mut places = Places::new(&["/nonexistent".into()], None);
        assert!(places.resolve(&recorded, Some(&place)).is_err());
    }

    #[test]
    fn remote_urls_of_one_repository_are_one_id() {
        for url in [
            "git@github.com:org/app.git",
            "ssh://git@github.com/org/app",
            "https://github.com/org/app.git",
            "https://user@GitHub.com:443/org/app/",
            "git://github.com/org/app.git",
        ] {
            assert_eq!(repository_id(url), "github.com/org/app", "{url}");
        }
        assert_eq!(repository_id("/srv/git/app.git"), "/srv/git/app");
        assert_ne!(
            repository_id("git@github.com:org/app.git"),
            repository_id("git@github.com:other/app.git")
        );
    }
}
