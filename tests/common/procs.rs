//! The suites' one look at `/proc`, built on the library's own scanner
//! ([`fleet::process::processes`], [`fleet::process::tagged`]): which processes a test's home
//! started (left behind or still running), a supervisor's guard, zombies, liveness.
//!
//! Everything a supervisor starts inherits `FLEET_HOME` from it (agents, their tool shells,
//! their detached helpers), so a home's processes are the ones whose environment names it —
//! or whose command line mentions it (a process that cleared its environment but was started
//! with the home's path). The test process itself is never one of them.

use std::path::Path;

use fleet::process::ProcessInfo;

/// A live process of a test's home.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// The command line, arguments joined by spaces.
    pub cmdline: String,
}

impl std::fmt::Display for Proc {
    /// `PID: COMMAND LINE` (its first 120 characters).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.pid, self.cmdline.chars().take(120).collect::<String>())
    }
}

/// The command line of process `pid`, arguments joined by spaces (empty once it is gone).
pub fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// Live processes (not zombies) of the home `home`: their environment holds
/// `FLEET_HOME=<home>`, or their command line mentions it. `except` leaves out a running
/// supervisor and its `fleet guard` child (which lives exactly as long as it does).
pub fn of_home(home: &Path, except: Option<u32>) -> Vec<Proc> {
    let home = home.display().to_string();
    let tagged: std::collections::HashSet<i32> =
        fleet::process::tagged(&format!("FLEET_HOME={home}")).iter().map(|p| p.pid).collect();
    let me = std::process::id() as i32;
    let except = except.and_then(|pid| i32::try_from(pid).ok());
    let mut found = Vec::new();
    for process in fleet::process::processes() {
        if process.zombie || process.pid == me || Some(process.pid) == except {
            continue;
        }
        let cmdline = cmdline(process.pid);
        if !tagged.contains(&process.pid) && !cmdline.contains(&home) {
            continue;
        }
        if except.is_some_and(|supervisor| is_guard(&process, &cmdline, supervisor)) {
            continue;
        }
        found.push(Proc { pid: process.pid, ppid: process.ppid, cmdline });
    }
    found
}

/// The live processes of `home` (as [`of_home`] with no exception) whose environment also
/// holds `entry` (`NAME=value`), e.g. `FLEET_TASK_ID=<id>`: one task's agent and what it
/// started.
pub fn of_home_tagged(home: &Path, entry: &str) -> Vec<Proc> {
    let tagged: Vec<i32> = fleet::process::tagged(entry).iter().map(|p| p.pid).collect();
    of_home(home, None).into_iter().filter(|p| tagged.contains(&p.pid)).collect()
}

/// Whether `process` (with this command line) is the `fleet guard` child of `supervisor`.
fn is_guard(process: &ProcessInfo, cmdline: &str, supervisor: i32) -> bool {
    process.ppid == supervisor && cmdline.contains(" guard --instance ")
}

/// The pid of the live `fleet guard` child of `supervisor`, if it has one.
pub fn guard_of(supervisor: u32) -> Option<u32> {
    let supervisor = i32::try_from(supervisor).ok()?;
    fleet::process::processes()
        .into_iter()
        .find(|p| !p.zombie && is_guard(p, &cmdline(p.pid), supervisor))
        .and_then(|p| u32::try_from(p.pid).ok())
}

/// How many zombie children `pid` has (exited, not yet reaped).
pub fn zombies_of(pid: u32) -> usize {
    let Ok(pid) = i32::try_from(pid) else { return 0 };
    fleet::process::processes().iter().filter(|p| p.ppid == pid && p.zombie).count()
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    i32::try_from(pid).ok().and_then(fleet::process::process).is_some_and(|p| !p.zombie)
}

/// The start time of process `pid` in clock ticks since boot, if it exists.
pub fn start_ticks(pid: u32) -> Option<u64> {
    i32::try_from(pid).ok().and_then(fleet::process::process).map(|p| p.start_ticks)
}

/// The live members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<ProcessInfo> {
    fleet::process::processes().into_iter().filter(|p| p.pgid == pgid && !p.zombie).collect()
}
