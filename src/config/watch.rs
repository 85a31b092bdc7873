//! Hot reload: noticing that `runtime.toml` changed and re-reading it.
//!
//! [`file_stamp`] tells whether the file changed (time, size, inode), and [`ConfigWatcher`]
//! wraps the loop every supervisor needs — re-read on change, keep the previous config when
//! the new one is invalid, report the error once. A change is read only once the file has
//! stayed as it is for [`SETTLE`] (an empty file for [`EMPTY_SETTLE`]): an editor or a script
//! rewriting the file in place leaves it empty or half-written for a moment, and that moment
//! must not be applied as "every key at its default". Reading goes through [`RuntimeConfig::load`],
//! so a reload checks exactly what a first load checks. Each load also builds the config's
//! coders and its redactor, once, for everything written until the next load.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use super::check::coder_error;
use super::{ConfigError, RuntimeConfig};
use crate::coders::Registry;
use crate::redact::Redactor;

/// What identifies one version of a file: modification time, size and inode. An atomic
/// replace (rename) changes the inode even within one timestamp tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub modified: Option<SystemTime>,
    pub len: u64,
    pub inode: u64,
}

/// The stamp of `path`, `None` when it does not exist (or cannot be read).
pub fn file_stamp(path: &Path) -> Option<FileStamp> {
    let metadata = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
    #[cfg(not(unix))]
    let inode = 0;
    Some(FileStamp { modified: metadata.modified().ok(), len: metadata.len(), inode })
}

/// What [`ConfigWatcher::poll`] found.
#[derive(Debug)]
pub enum Reload {
    /// The file has not changed since the last poll.
    Unchanged,
    /// The file changed (or appeared, or went away: back to defaults) and is valid; the new
    /// config is current.
    Reloaded,
    /// The file changed but is invalid; the previous config stays current. Reported once per
    /// change of the file.
    Invalid(ConfigError),
}

/// Keeps the current config of one `runtime.toml`, re-reading it when it changes.
///
/// The supervisor calls [`poll`](ConfigWatcher::poll) every few seconds (or on a file
/// notification) and reads [`config`](ConfigWatcher::config) and
/// [`registry`](ConfigWatcher::registry) when it claims and spawns. An invalid edit never
/// takes the supervisor down or loses the working settings.
#[derive(Debug)]
pub struct ConfigWatcher {
    path: PathBuf,
    stamp: Option<FileStamp>,
    config: RuntimeConfig,
    registry: Registry,
    /// [`RuntimeConfig::redactor`] of `config`.
    redactor: Redactor,
    /// A change not read yet: the file's stamp, and since when it has been that.
    settling: Option<(Option<FileStamp>, Instant)>,
}

/// How long a changed `runtime.toml` must stay unchanged before it is read.
pub const SETTLE: Duration = Duration::from_millis(300);
/// How long an emptied `runtime.toml` must stay empty before it counts as "all defaults".
pub const EMPTY_SETTLE: Duration = Duration::from_secs(2);

impl ConfigWatcher {
    /// Loads `path` for the first time; an invalid file is an error here (there is no previous
    /// config to keep).
    pub fn new(path: &Path) -> Result<ConfigWatcher, ConfigError> {
        let stamp = file_stamp(path);
        let config = RuntimeConfig::load(path)?;
        let registry = config.registry().map_err(|e| coder_error(path, &e))?;
        let redactor = config.redactor();
        Ok(ConfigWatcher {
            path: path.to_path_buf(),
            stamp,
            config,
            registry,
            redactor,
            settling: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The current config.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// The coders of the current config.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The redactor of the current config: what is written about its runs passes through it.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Re-reads the file if its stamp changed and has since settled (see the module
    /// documentation).
    pub fn poll(&mut self) -> Reload {
        let stamp = file_stamp(&self.path);
        if stamp == self.stamp {
            self.settling = None;
            return Reload::Unchanged;
        }
        let settle = if stamp.is_some_and(|s| s.len == 0) { EMPTY_SETTLE } else { SETTLE };
        match self.settling {
            Some((seen, since)) if seen == stamp && since.elapsed() >= settle => {}
            Some((seen, _)) if seen == stamp => return Reload::Unchanged,
            _ => {
                self.settling = Some((stamp, Instant::now()));
                return Reload::Unchanged;
            }
        }
        self.settling = None;
        self.stamp = stamp;
        let loaded = RuntimeConfig::load(&self.path).and_then(|config| {
            let registry = config.registry().map_err(|e| coder_error(&self.path, &e))?;
            Ok((config, registry))
        });
        match loaded {
            Ok((config, registry)) => {
                self.redactor = config.redactor();
                self.config = config;
                self.registry = registry;
                Reload::Reloaded
            }
            Err(error) => Reload::Invalid(error),
        }
    }
}
