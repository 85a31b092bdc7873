//! The record of a supervisor running in the background (`fleet run --detach`): its pid file,
//! `$FLEET_HOME/state/fleet-run.pid`, and the lock that keeps it to one per fleet home.
//!
//! The pid file holds a JSON [`DaemonRecord`]: the pid *and the process's start time* (after
//! the supervisor died its pid may name another program), the boot it ran in, when it started,
//! the workspace, the command line as typed (what `fleet run restart` runs again) and its log
//! files. A record whose process is gone, or whose pid now names another process, is stale
//! ([`DaemonRecord::liveness`]).
//!
//! The lock is an exclusive `flock` on `$FLEET_HOME/state/fleet-run.lock` ([`HomeLock`]).
//! `fleet run --detach` takes it before it starts the supervisor, which inherits the
//! descriptor ([`HomeLock::adopt`]) and holds it for as long as it lives; the kernel drops it
//! when the process ends, however it ends. The supervisor writes its own record as soon as it
//! holds the lock ([`DaemonRecord::of_this_process`]): whatever becomes of the `--detach` that
//! started it, no supervisor runs in the background unrecorded. So of two `--detach` racing on
//! one home, one starts a supervisor and the other is told which one runs. It lives next to
//! `holds.json` and
//! `pauses.json` because the supervisor's other state does: the unit is the fleet home (its
//! tasks, logs and pauses), whichever workspace the supervisor serves.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use std::time::{Duration, Instant};

use super::lease::{self, INSTANCE_VAR, Registration};
use crate::process;
use crate::store::Store;

/// The pid file's name under `$FLEET_HOME/state/`.
pub const RECORD_FILE: &str = "fleet-run.pid";
/// The lock file's name under `$FLEET_HOME/state/`.
pub const LOCK_FILE: &str = "fleet-run.lock";

/// What the pid file says about the supervisor in the background.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonRecord {
    pub pid: u32,
    /// The process's start time in clock ticks since boot: with the pid, it names one process
    /// for good.
    pub start_ticks: u64,
    /// The boot it started in (empty where the kernel does not say).
    #[serde(default)]
    pub boot_id: String,
    pub started_at: Timestamp,
    /// The `.beads` directory it serves.
    pub workspace: PathBuf,
    /// The command line as typed (`fleet run --detach …`).
    pub argv: Vec<String>,
    /// The run log (`fleet log`).
    pub log: PathBuf,
    /// The file its stdout and stderr go to.
    pub output: PathBuf,
}

/// Whether a record's process still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Running,
    /// The record is stale, and why.
    Stale(String),
}

impl DaemonRecord {
    /// The record of this process, started now: the supervisor in the background records
    /// itself (`argv` is the `fleet run --detach` command line it was started by).
    pub fn of_this_process(
        workspace: PathBuf,
        argv: Vec<String>,
        log: PathBuf,
        output: PathBuf,
    ) -> DaemonRecord {
        DaemonRecord {
            pid: std::process::id(),
            start_ticks: process::own_start_ticks(),
            boot_id: process::boot_id(),
            started_at: Timestamp::now(),
            workspace,
            argv,
            log,
            output,
        }
    }

    /// Judges the record by the process it names: alive, and started when the record says
    /// ([`process::is_alive`]); a stale record says why.
    pub fn liveness(&self) -> Liveness {
        let this_boot = process::boot_id();
        if !self.boot_id.is_empty() && !this_boot.is_empty() && self.boot_id != this_boot {
            return Liveness::Stale(format!("pid {} ran before the machine restarted", self.pid));
        }
        // Without its start time a record names only a pid, which the system reuses: not
        // proof enough to report, or to stop, a running supervisor.
        if self.start_ticks == 0 {
            return Liveness::Stale(format!("the record of pid {} has no start time", self.pid));
        }
        if process::is_alive(self.pid, self.start_ticks) {
            return Liveness::Running;
        }
        Liveness::Stale(self.why_not_running())
    }

    /// What became of the recorded process, which is not running.
    fn why_not_running(&self) -> String {
        match i32::try_from(self.pid).ok().and_then(process::process) {
            None => format!("process {} is gone", self.pid),
            Some(p) if p.zombie => format!("process {} has exited", self.pid),
            Some(p) => {
                let name = process::command_name(p.pid).unwrap_or_else(|| "?".to_owned());
                format!(
                    "pid {} now names another process ({name}, started at another time)",
                    self.pid
                )
            }
        }
    }
}

/// `$FLEET_HOME/state/fleet-run.pid`.
pub fn record_path(home: &Path) -> PathBuf {
    home.join("state").join(RECORD_FILE)
}

/// `$FLEET_HOME/state/fleet-run.lock`.
pub fn lock_path(home: &Path) -> PathBuf {
    home.join("state").join(LOCK_FILE)
}

/// The record under `home`: `Ok(None)` when there is no pid file, `Err` (saying why) when
/// there is one that does not read as a record.
pub fn load(home: &Path) -> Result<Option<DaemonRecord>, String> {
    let path = record_path(home);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("reading {}: {error}", path.display())),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| format!("{} is not a fleet pid file: {error}", path.display()))
}

/// Writes the record under `home` atomically (owner-only: it holds the command line).
pub fn save(home: &Path, record: &DaemonRecord) -> io::Result<()> {
    let path = record_path(home);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    crate::fsutil::write_atomic_private(&path, format!("{text}\n").as_bytes())
}

/// Removes the pid file under `home` (nothing to do when there is none).
pub fn remove(home: &Path) -> io::Result<()> {
    match std::fs::remove_file(record_path(home)) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// Removes the pid file under `home` if it names process `pid`: a supervisor clears its own
/// record, never one a newer supervisor wrote.
pub fn remove_if_names(home: &Path, pid: u32) -> io::Result<()> {
    match load(home) {
        Ok(Some(record)) if record.pid == pid => remove(home),
        _ => Ok(()),
    }
}

/// The exclusive lock on `$FLEET_HOME/state/fleet-run.lock`, held while a supervisor starts
/// or runs in the background. Dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct HomeLock {
    file: File,
}

impl HomeLock {
    /// Takes the lock of `home` if no one holds it (`Ok(None)` when someone does).
    pub fn try_take(home: &Path) -> io::Result<Option<HomeLock>> {
        let path = lock_path(home);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        Ok(crate::fsutil::try_lock_exclusive(&path)?.map(|file| HomeLock { file }))
    }

    /// The descriptor a child must inherit to hold the lock after this process exits.
    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Adopts the lock of `home` inherited as descriptor `fd` (see [`HomeLock::raw_fd`]), and
    /// marks it close-on-exec so the programs this process starts do not hold it too. Refuses a
    /// descriptor that is not open on the lock file.
    pub fn adopt(fd: RawFd, home: &Path) -> io::Result<HomeLock> {
        let expected = std::fs::metadata(lock_path(home))?;
        // SAFETY: fstat writes into a zeroed stat buffer we own; a closed or foreign
        // descriptor only makes it fail.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstat(fd, &mut stat) };
        if rc != 0 || (stat.st_dev, stat.st_ino) != (expected.dev(), expected.ino()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("descriptor {fd} is not open on {}", lock_path(home).display()),
            ));
        }
        // SAFETY: the descriptor is open on the lock file (checked above) and was handed to
        // this process to own; nothing else here uses it.
        let file = unsafe { File::from_raw_fd(fd) };
        // SAFETY: sets a descriptor flag on a descriptor this function now owns.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(HomeLock { file })
    }
}

/// What stopping a background supervisor took ([`DaemonRecord::stop`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stopping {
    /// It had not exited within the timeout and was killed (SIGKILL).
    pub forced: bool,
    pub waited_secs: f64,
    /// Processes of its run still alive after it ended, which were killed.
    pub leftovers_killed: usize,
}

/// How long a killed supervisor is given to be gone.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long the guard of a supervisor that ended is given to clean up after it.
const GUARD_WAIT: Duration = Duration::from_secs(10);
/// How often a stop looks again.
const POLL: Duration = Duration::from_millis(50);

impl DaemonRecord {
    /// The recorded supervisor's registration in `store`, if it registered there.
    pub fn registration(&self, store: &Store) -> Option<Registration> {
        lease::registry(store)
            .ok()?
            .into_iter()
            .find(|r| r.identity.pid == self.pid && r.identity.start_ticks == self.start_ticks)
    }

    /// Stops the recorded supervisor: SIGTERM, up to `timeout` for it to exit, SIGKILL if it
    /// did not; then the clean-up of whatever its run left ([`clean_up_after`]), the
    /// processes tagged with its instance as its registration in `store` names it.
    pub fn stop(&self, store: Option<&Store>, timeout: Duration) -> Stopping {
        let began = Instant::now();
        let instance =
            store.and_then(|store| self.registration(store)).map(|r| r.identity.instance);
        let pid = i32::try_from(self.pid).unwrap_or(0);
        let leads_group = process::process(pid).is_some_and(|p| p.pgid == p.pid);
        self.signal(libc::SIGTERM);
        let mut forced = false;
        if !self.wait_gone(timeout) {
            forced = true;
            self.signal(libc::SIGKILL);
            self.wait_gone(KILL_WAIT);
        }
        let leftovers_killed = clean_up_after(pid, leads_group, instance.as_deref());
        Stopping {
            forced,
            waited_secs: (began.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            leftovers_killed,
        }
    }

    /// Sends `signal` to the recorded process if it is still that process.
    fn signal(&self, signal: i32) {
        let Ok(pid) = i32::try_from(self.pid) else { return };
        if pid > 1 && self.liveness() == Liveness::Running {
            // SAFETY: sends a signal to one specific pid, checked to be the recorded process.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Waits up to `within` for the recorded process to be gone; whether it is.
    fn wait_gone(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.liveness() != Liveness::Running {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }
}

/// After the supervisor `pid` ended: waits for its process group — its guard, cleaning up
/// after a killed supervisor — to empty, then kills what is left of the group and every
/// process still tagged with the run's `instance`. Returns how many it killed.
fn clean_up_after(pid: i32, leads_group: bool, instance: Option<&str>) -> usize {
    let mut killed = 0;
    if leads_group {
        let deadline = Instant::now() + GUARD_WAIT;
        while process::group_has_live_members(pid) && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        let left = process::processes().into_iter().filter(|p| p.pgid == pid && !p.zombie).count();
        if left > 0 && process::signal_group(pid, libc::SIGKILL).unwrap_or(false) {
            killed += left;
        }
    }
    if let Some(instance) = instance {
        killed += process::kill_tagged(&format!("{INSTANCE_VAR}={instance}"));
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_of(pid: u32, start_ticks: u64) -> DaemonRecord {
        DaemonRecord {
            pid,
            start_ticks,
            boot_id: process::boot_id(),
            started_at: Timestamp::UNIX_EPOCH,
            workspace: PathBuf::from("/w/.beads"),
            argv: vec!["fleet".into(), "run".into(), "--detach".into()],
            log: PathBuf::from("/w/logs/fleet-run.log"),
            output: PathBuf::from("/w/logs/fleet-run.out"),
        }
    }

    #[test]
    fn a_record_is_running_only_with_its_own_start_time() {
        let me = process::process(std::process::id() as i32).unwrap();
        assert_eq!(record_of(std::process::id(), me.start_ticks).liveness(), Liveness::Running);
        let reused = record_of(std::process::id(), me.start_ticks + 1).liveness();
        assert!(matches!(&reused, Liveness::Stale(why) if why.contains("another process")));
        let unknown_start = record_of(std::process::id(), 0).liveness();
        assert!(matches!(&unknown_start, Liveness::Stale(why) if why.contains("no start time")));
        let mut rebooted = record_of(std::process::id(), me.start_ticks);
        rebooted.boot_id = "another-boot".into();
        if !process::boot_id().is_empty() {
            assert!(matches!(rebooted.liveness(), Liveness::Stale(_)));
        }
    }

    #[test]
    fn records_round_trip_and_are_removed_only_by_their_own_process() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(load(home.path()), Ok(None));
        let record = record_of(42, 7);
        save(home.path(), &record).unwrap();
        assert_eq!(load(home.path()), Ok(Some(record)));
        assert!(crate::fsutil::is_private(&record_path(home.path())));
        remove_if_names(home.path(), 43).unwrap();
        assert!(record_path(home.path()).exists());
        remove_if_names(home.path(), 42).unwrap();
        assert!(!record_path(home.path()).exists());
        std::fs::write(record_path(home.path()), "garbage").unwrap();
        assert!(load(home.path()).unwrap_err().contains("is not a fleet pid file"));
    }

    #[test]
    fn the_lock_is_exclusive_and_adoption_checks_the_descriptor() {
        let home = tempfile::tempdir().unwrap();
        let lock = HomeLock::try_take(home.path()).unwrap().expect("free at first");
        assert!(HomeLock::try_take(home.path()).unwrap().is_none());
        let stdin = std::io::stdin();
        assert!(HomeLock::adopt(stdin.as_raw_fd(), home.path()).is_err());
        drop(lock);
        assert!(HomeLock::try_take(home.path()).unwrap().is_some());
    }
}
