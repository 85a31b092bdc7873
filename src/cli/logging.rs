//! Where the library's `tracing` events go: stderr for every command, and a log file for
//! `fleet run`.
//!
//! [`init`] installs one subscriber per process with two layers:
//! - stderr, filtered by `FLEET_LOG`, else `RUST_LOG`, else `warn`: normal commands print
//!   nothing new, while the supervisor's errors (a failed claim, a lost outcome) reach the
//!   user. A filter that does not parse is reported once and replaced by the default; the
//!   command still runs. Invoked as `bd`, only `FLEET_LOG` counts and a bad one is ignored
//!   silently: beads' stderr is part of its contract, and agents inherit `RUST_LOG` meant for
//!   other tools.
//! - the run log, `$FLEET_HOME/logs/fleet-run.log`, opened by [`open_run_log`] (only `fleet run`
//!   does): filtered by `FLEET_LOG`, else `info`; one line per event with an RFC 3339 UTC
//!   timestamp, the level, the message and its fields; every line passes through the redactor
//!   before it is written. The file grows to [`RUN_LOG_MAX_BYTES`], then moves to
//!   `fleet-run.log.1` (replacing the previous one) and a new file starts.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::redact::Redactor;
use crate::supervisor::LOG_FILTER_VAR;

/// The stderr filter when neither `FLEET_LOG` nor `RUST_LOG` is set.
const DEFAULT_FILTER: &str = "warn";
/// The run log's filter when `FLEET_LOG` is not set.
const RUN_LOG_DEFAULT_FILTER: &str = "info";
/// The run log's directory under `FLEET_HOME`, and its file name.
pub const LOG_DIR: &str = "logs";
pub const RUN_LOG_FILE: &str = "fleet-run.log";
/// The size at which the run log is rotated to `fleet-run.log.1`.
pub const RUN_LOG_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// Who is running: `fleet` narrates, `bd` keeps beads' quiet stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Fleet,
    Bd,
}

/// Installs the subscriber (once per process; later calls do nothing).
pub fn init(flavor: Flavor) {
    let (stderr_filter, problem) = stderr_filter(flavor);
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(io::stderr)
        .without_time()
        .with_filter(stderr_filter);
    // Only `fleet run` opens the run log; bd never does, and skips building its layer.
    let run_log = (flavor == Flavor::Fleet).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(RunLogWriter)
            .with_target(false)
            .with_filter(run_log_filter())
    });
    let installed = tracing_subscriber::registry().with(stderr).with(run_log).try_init();
    if let (Ok(()), Some(problem), Flavor::Fleet) = (installed, problem, flavor) {
        // A closed stderr leaves nowhere to say it.
        let _ = writeln!(io::stderr(), "warning: {problem}");
    }
}

/// The stderr filter, and what was wrong with the one the user asked for.
fn stderr_filter(flavor: Flavor) -> (EnvFilter, Option<String>) {
    let variables: &[&str] = match flavor {
        Flavor::Fleet => &[LOG_FILTER_VAR, "RUST_LOG"],
        Flavor::Bd => &[LOG_FILTER_VAR],
    };
    let chosen = variables.iter().find_map(|name| Some((*name, user_filter(name)?)));
    let Some((name, text)) = chosen else {
        return (EnvFilter::new(DEFAULT_FILTER), None);
    };
    match EnvFilter::try_new(&text) {
        Ok(filter) => (filter, None),
        Err(error) => {
            let problem = format!(
                "ignoring {name}={text:?}: {error}; logging at {DEFAULT_FILTER:?} (a valid \
                 filter is a level such as \"debug\", or directives such as \"fleet=debug\")"
            );
            (EnvFilter::new(DEFAULT_FILTER), Some(problem))
        }
    }
}

/// The run log's filter: `FLEET_LOG` when it is valid, else `info`.
fn run_log_filter() -> EnvFilter {
    user_filter(LOG_FILTER_VAR)
        .and_then(|text| EnvFilter::try_new(text).ok())
        .unwrap_or_else(|| EnvFilter::new(RUN_LOG_DEFAULT_FILTER))
}

/// The variable `name`, unless unset or blank.
fn user_filter(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|text| !text.trim().is_empty())
}

// --- the run log --------------------------------------------------------------------------------

static RUN_LOG: OnceLock<Mutex<Option<RunLog>>> = OnceLock::new();

/// Starts appending log lines to `home/logs/fleet-run.log` (creating `logs/` with mode 0700
/// and the file with 0600), each line masked by `redactor` (which also masks token shapes).
/// Returns the file's path.
pub fn open_run_log(home: &Path, redactor: Redactor) -> io::Result<PathBuf> {
    let dir = home.join(LOG_DIR);
    create_private_dir(&dir)?;
    let mut log = RunLog::open(dir.join(RUN_LOG_FILE), RUN_LOG_MAX_BYTES)?;
    log.redactor = redactor;
    let path = log.path.clone();
    let slot = RUN_LOG.get_or_init(|| Mutex::new(None));
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(log);
    Ok(path)
}

/// Masks the run log's next lines with `redactor` (the secrets of a reloaded config).
pub fn set_run_log_redactor(redactor: Redactor) {
    let Some(slot) = RUN_LOG.get() else { return };
    if let Some(log) = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut() {
        log.redactor = redactor;
    }
}

pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The open log file, its size, and the redactor every line passes through.
struct RunLog {
    path: PathBuf,
    file: File,
    len: u64,
    max_bytes: u64,
    redactor: Redactor,
}

impl RunLog {
    fn open(path: PathBuf, max_bytes: u64) -> io::Result<RunLog> {
        let file = open_for_append(&path)?;
        let len = file.metadata()?.len();
        Ok(RunLog { path, file, len, max_bytes, redactor: Redactor::default() })
    }

    /// Appends one formatted event, redacted, rotating first when the file is full.
    fn append(&mut self, line: &str) -> io::Result<()> {
        let line = self.redactor.redact_text(line);
        if self.len > 0 && self.len + line.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        self.file.write_all(line.as_bytes())?;
        self.len += line.len() as u64;
        Ok(())
    }

    /// Moves the file to `fleet-run.log.1` and starts a new one.
    fn rotate(&mut self) -> io::Result<()> {
        let mut rotated = self.path.clone().into_os_string();
        rotated.push(".1");
        std::fs::rename(&self.path, &rotated)?;
        self.file = open_for_append(&self.path)?;
        self.len = 0;
        Ok(())
    }
}

pub fn open_for_append(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Hands the formatter a buffer per event; the buffer goes to the run log when dropped.
struct RunLogWriter;

impl<'a> MakeWriter<'a> for RunLogWriter {
    type Writer = EventBuffer;

    fn make_writer(&'a self) -> EventBuffer {
        EventBuffer(Vec::new())
    }
}

/// One formatted event on its way to the run log (dropped unwritten when no log is open).
struct EventBuffer(Vec<u8>);

impl Write for EventBuffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for EventBuffer {
    fn drop(&mut self) {
        let Some(slot) = RUN_LOG.get() else { return };
        if self.0.is_empty() {
            return;
        }
        let mut guard = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(log) = guard.as_mut() {
            // Nowhere left to report a failing log write; the event still reached stderr if
            // its level was high enough.
            let _ = log.append(&String::from_utf8_lossy(&self.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_log_rotates_once_full_and_redacts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(RUN_LOG_FILE);
        let mut log = RunLog::open(path.clone(), 48).unwrap();
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        log.append(&format!("first {token}\n")).unwrap();
        let first = std::fs::read_to_string(&path).unwrap();
        assert!(!first.contains(token), "{first}");
        log.append(&"x".repeat(40)).unwrap();
        let rotated = std::fs::read_to_string(dir.path().join("fleet-run.log.1")).unwrap();
        assert_eq!(rotated, first);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x".repeat(40));
    }
}
