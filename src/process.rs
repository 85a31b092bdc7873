//! Process groups, graceful termination, and orphan reaping for supervised agents.
//!
//! Each agent runs as the leader of its own process group, so one signal reaches the agent and
//! every tool shell or server it started. Stopping an agent is SIGTERM to the group, a grace
//! period, then SIGKILL to the group. The supervisor makes itself a child subreaper, so
//! descendants whose parent died are re-parented to it instead of to init; it reaps them (and
//! kills the ones still running when their agent is gone), which is how "no process left
//! behind" holds even for grandchildren that left the agent's group.
//!
//! Linux-specific: the subreaper flag and the `/proc` scan. Elsewhere those two steps are
//! skipped and only the group signals apply.

use std::collections::{BTreeSet, HashSet};
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Pids of direct children whose exit status their owner collects (each runner's agent). The
/// reapers below skip them: reaping one steals its status, and the owner's `wait` then fails
/// with ECHILD — with several agents running, one runner's cleanup used to reap another
/// runner's agent that had just exited, and that attempt was recorded as "could not start".
/// [`spawn_owned`] holds the lock across the spawn, so no reaper ever sees an owned child
/// before it is registered.
static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn owned() -> MutexGuard<'static, BTreeSet<i32>> {
    OWNED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registration of a child spawned by [`spawn_owned`]; dropping it (once the child's status
/// has been collected) lets the reapers treat the pid as anyone's again.
#[derive(Debug)]
pub struct OwnedChild {
    pid: i32,
}

impl Drop for OwnedChild {
    fn drop(&mut self) {
        owned().remove(&self.pid);
    }
}

/// Spawns `command` and registers the child as owned, so [`reap_orphans`] and
/// [`kill_stray_children`] leave it to the caller. Keep the returned guard until the child has
/// been waited for.
pub fn spawn_owned(
    command: &mut tokio::process::Command,
) -> io::Result<(tokio::process::Child, OwnedChild)> {
    let mut owned = owned();
    let child = command.spawn()?;
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok()).unwrap_or(0);
    owned.insert(pid);
    Ok((child, OwnedChild { pid }))
}

/// Marks this process as a child subreaper (Linux), so orphaned descendants become its
/// children and can be reaped and accounted for.
pub fn become_subreaper() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument and touches no
        // memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sends `signal` to every process in group `pgid`. Returns false if the group is gone.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<bool> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal group {pgid}"),
        ));
    }
    // SAFETY: killpg only sends a signal; the pid was checked above so it never targets every
    // process (0) or init (1).
    let rc = unsafe { libc::killpg(pgid, signal) };
    if rc == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(libc::ESRCH) => Ok(false),
        _ => Err(error),
    }
}

/// Whether any process of group `pgid` still exists and is not a zombie waiting to be reaped.
pub fn group_has_live_members(pgid: i32) -> bool {
    processes().into_iter().any(|p| p.pgid == pgid && !p.zombie)
}

/// Stops group `pgid`: SIGTERM, up to `grace` for it to exit, then SIGKILL. Reaps the group's
/// orphans (never `leader`, whose status its owner collects). Returns true if SIGKILL was
/// needed.
pub async fn terminate_group(pgid: i32, leader: i32, grace: Duration) -> bool {
    let _ = signal_group(pgid, libc::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline {
        reap_orphans(&HashSet::from([leader]));
        if !group_has_live_members(pgid) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let _ = signal_group(pgid, libc::SIGKILL);
    for _ in 0..200 {
        reap_orphans(&HashSet::from([leader]));
        if !group_has_live_members(pgid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Reaps exited processes that were re-parented to this (subreaper) process, except `keep` and
/// the children registered by [`spawn_owned`] (their owners collect their status). Returns
/// how many were reaped.
pub fn reap_orphans(keep: &HashSet<i32>) -> usize {
    let me = std::process::id() as i32;
    let owned = owned();
    let mut reaped = 0;
    for process in processes() {
        if process.ppid == me
            && process.zombie
            && !keep.contains(&process.pid)
            && !owned.contains(&process.pid)
        {
            let mut status = 0;
            // SAFETY: waitpid on a specific child pid with WNOHANG; `status` is a valid
            // out-pointer.
            if unsafe { libc::waitpid(process.pid, &mut status, libc::WNOHANG) } == process.pid {
                reaped += 1;
            }
        }
    }
    reaped
}

/// Kills and reaps every child of this process except `keep` and the owned ones: orphans that
/// outlived their agent (for example ones that left its process group). Returns how many were
/// killed.
pub fn kill_stray_children(keep: &HashSet<i32>) -> usize {
    let me = std::process::id() as i32;
    let owned = owned();
    let mut killed = 0;
    for process in processes() {
        if process.ppid != me || keep.contains(&process.pid) || owned.contains(&process.pid) {
            continue;
        }
        if !process.zombie {
            // SAFETY: sends SIGKILL to one specific pid that is our own child.
            unsafe { libc::kill(process.pid, libc::SIGKILL) };
            killed += 1;
        }
        let mut status = 0;
        // SAFETY: as in reap_orphans; blocking wait is fine, the process was just killed.
        unsafe { libc::waitpid(process.pid, &mut status, 0) };
    }
    killed
}

/// A process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy)]
pub struct ProcessInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub zombie: bool,
}

/// Every process visible in `/proc` (empty where there is no `/proc`).
pub fn processes() -> Vec<ProcessInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// Parses the fields after the command name, which may itself contain spaces and parentheses.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcessInfo> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(ProcessInfo { pid, ppid, pgid, zombie: state == "Z" || state == "X" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let info = parse_stat(42, "42 (a (weird) name) S 7 42 42 0 -1").unwrap();
        assert_eq!((info.ppid, info.pgid, info.zombie), (7, 42, false));
        let zombie = parse_stat(43, "43 (sh) Z 7 40 40 0").unwrap();
        assert!(zombie.zombie);
    }

    #[test]
    fn refuses_to_signal_everyone() {
        assert!(signal_group(0, libc::SIGTERM).is_err());
        assert!(signal_group(1, libc::SIGTERM).is_err());
    }
}
