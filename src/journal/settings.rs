//! The workspace's settings in its journal repository: what a store holds that is not an op —
//! the id prefix, the replica id and the configuration values (`bd config set`, memories) —
//! kept where a damaged, deleted or `git clean`ed store file does not take them along, so that
//! `fleet rebuild` makes the same store again from the journal and these.
//!
//! They live on a ref of the journal repository, `refs/fleet/settings/<workspace>`, whose
//! commit's tree holds `settings.json` (`{"format", "replica", "prefix", "config"}`); each
//! change is a new commit on the previous one. `<workspace>` names the workspace's directory
//! (its path inside the repository, each byte other than a letter, digit, `-` or `_` written
//! `%XX`), so that several workspaces in one repository keep theirs apart. The ref is local:
//! a sync fetches and pushes journal refs only, so configuration values never leave the
//! machine. [`save`] runs with every journal commit and writes only when something changed.

use std::collections::BTreeMap;
use std::path::Path;

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use super::JournalError;
use super::repo::{JournalRepo, RepoKind};
use crate::store::Store;

/// Prefix of the settings refs.
pub const SETTINGS_PREFIX: &str = "refs/fleet/settings/";
/// The file of a settings commit.
const SETTINGS_FILE: &str = "settings.json";
/// Version of the settings format.
const FORMAT: u32 = 1;

/// What a store holds besides its ops.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub format: u32,
    pub replica: String,
    pub prefix: String,
    /// Configuration values by key (`Reader::config_all`).
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

impl Settings {
    /// Settings with no configuration values.
    pub fn new(replica: String, prefix: String) -> Settings {
        Settings { format: FORMAT, replica, prefix, config: BTreeMap::new() }
    }

    /// The settings of `store` now.
    pub fn of(store: &Store) -> Result<Settings, JournalError> {
        let config = store.read()?.config_all()?.into_iter().collect();
        Ok(Settings {
            format: FORMAT,
            replica: store.replica().to_string(),
            prefix: store.prefix().to_string(),
            config,
        })
    }
}

/// The settings ref of the workspace `dir` in `repo`.
pub fn settings_ref(repo: &JournalRepo, dir: &Path) -> String {
    format!("{SETTINGS_PREFIX}{}", workspace_key(repo, dir))
}

/// The workspace's name among the settings refs: its path inside the repository's worktree
/// (its directory name for the workspace's own repository, or where the path cannot be
/// related), escaped into one ref name component.
fn workspace_key(repo: &JournalRepo, dir: &Path) -> String {
    let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
    let dir = canonical(dir);
    let inside = match (repo.kind, repo.workdir()) {
        (RepoKind::Enclosing, Some(workdir)) => {
            dir.strip_prefix(canonical(&workdir)).ok().map(Path::to_path_buf)
        }
        _ => None,
    };
    let name = inside.or_else(|| dir.file_name().map(Into::into)).unwrap_or_default();
    escape(&name.to_string_lossy())
}

/// Every byte of `text` other than an ASCII letter, digit, `-` or `_` as `%XX`: a valid ref
/// name component, however the path is spelled.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    if out.is_empty() { "workspace".to_string() } else { out }
}

/// The settings saved for the workspace `dir`, if any.
pub fn load(repo: &JournalRepo, dir: &Path) -> Result<Option<Settings>, JournalError> {
    let reference = settings_ref(repo, dir);
    let Some(tip) = repo.ref_target(&reference)? else { return Ok(None) };
    read(repo, &reference, tip).map(Some)
}

fn read(repo: &JournalRepo, reference: &str, tip: ObjectId) -> Result<Settings, JournalError> {
    let bad = |reason: String| JournalError::Format {
        reference: reference.to_string(),
        commit: tip.to_string(),
        reason,
    };
    let bytes = repo.file(tip, SETTINGS_FILE).map_err(|e| bad(e.to_string()))?;
    let bytes = bytes.ok_or_else(|| bad(format!("it has no {SETTINGS_FILE}")))?;
    let settings: Settings =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("{SETTINGS_FILE}: {e}")))?;
    if settings.format > FORMAT {
        return Err(bad(format!(
            "settings format {} is newer than this fleet reads ({FORMAT}); upgrade fleet",
            settings.format
        )));
    }
    Ok(settings)
}

/// Records `store`'s settings on its workspace's settings ref, unless they are what the ref
/// holds already. Returns whether a commit was written.
pub fn save(repo: &JournalRepo, store: &Store) -> Result<bool, JournalError> {
    save_settings(repo, store.dir(), &Settings::of(store)?)
}

/// [`save`] for given settings of the workspace `dir`.
pub fn save_settings(
    repo: &JournalRepo,
    dir: &Path,
    settings: &Settings,
) -> Result<bool, JournalError> {
    let reference = settings_ref(repo, dir);
    let tip = repo.ref_target(&reference)?;
    if let Some(tip) = tip
        && read(repo, &reference, tip).is_ok_and(|saved| saved == *settings)
    {
        return Ok(false);
    }
    let mut json = serde_json::to_vec_pretty(settings).expect("settings serialise");
    json.push(b'\n');
    let message =
        format!("fleet settings: prefix {}, replica {}\n", settings.prefix, settings.replica);
    let commit = repo.write_file_commit(SETTINGS_FILE, &json, tip, &settings.replica, &message)?;
    repo.set_ref(&reference, commit, tip)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_path_escapes_into_one_ref_component() {
        assert_eq!(escape(".beads"), "%2Ebeads");
        assert_eq!(escape("sub dir/.beads"), "sub%20dir%2F%2Ebeads");
        assert_eq!(escape(""), "workspace");
    }

    #[test]
    fn settings_are_saved_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let beads = dir.path().join(".beads");
        let store = Store::init(&beads, "app").unwrap();
        store
            .write("t", crate::time::Clock::System, |w| w.set_config("claim_mode", Some("remote")))
            .unwrap();
        let repo = JournalRepo::find_or_create(&beads).unwrap();
        assert!(save(&repo, &store).unwrap());
        assert!(!save(&repo, &store).unwrap(), "nothing changed, nothing written");
        let loaded = load(&repo, &beads).unwrap().unwrap();
        assert_eq!(
            (loaded.prefix.as_str(), loaded.replica.as_str()),
            ("app", store.replica().as_str())
        );
        assert_eq!(loaded.config.get("claim_mode").map(String::as_str), Some("remote"));
    }
}
