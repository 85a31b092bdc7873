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
use std::io::{self, Write as _};
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

/// Spawns `command` with the child registered as owned (see [`spawn_owned`]) for helper
/// programs such as `git`: a supervisor's orphan reaping (which waits for every zombie child
/// it does not own) must never take their exit status — the owner would then see ECHILD
/// instead of the result. Keep the guard until the child has been waited for.
fn spawn_std_owned(
    command: &mut std::process::Command,
) -> io::Result<(std::process::Child, OwnedChild)> {
    let mut owned = owned();
    let child = command.spawn()?;
    let pid = i32::try_from(child.id()).unwrap_or(0);
    owned.insert(pid);
    Ok((child, OwnedChild { pid }))
}

/// Runs `command` to its end like [`std::process::Command::output`], owned (see
/// [`spawn_std_owned`]) and with a deadline: see [`spawn_group_owned`] and
/// [`wait_or_kill_group`]; `Ok(None)` when the deadline killed it. For programs that talk to
/// the network, whose silence would otherwise hold their caller forever.
pub fn output_owned_within(
    command: &mut std::process::Command,
    limit: Duration,
) -> io::Result<Option<std::process::Output>> {
    output_of_input_within(command, None, limit)
}

/// [`output_owned_within`], with `input` written to the command's stdin (then closed); without
/// it, stdin is left as set.
pub fn output_of_input_within(
    command: &mut std::process::Command,
    input: Option<Vec<u8>>,
    limit: Duration,
) -> io::Result<Option<std::process::Output>> {
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    if input.is_some() {
        command.stdin(std::process::Stdio::piped());
    }
    let (mut child, _registration) = spawn_group_owned(command)?;
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // A thread of its own: a command that does not read its input must not hold us.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let read_all = |stream: Option<Box<dyn io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut stream) = stream {
                let _ = stream.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read_all(child.stdout.take().map(|s| Box::new(s) as Box<dyn io::Read + Send>));
    let stderr = read_all(child.stderr.take().map(|s| Box::new(s) as Box<dyn io::Read + Send>));
    let status = wait_or_kill_group(&mut child, limit)?;
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(status.map(|status| std::process::Output { status, stdout, stderr }))
}

/// Runs `command` to its end with its stdio left as set (a terminal, for a program that draws
/// its progress there), owned and with a deadline like [`output_owned_within`]: its exit
/// status, or `Ok(None)` when the deadline killed it.
///
/// When this process holds the foreground of the terminal on its stderr, the command's group
/// holds it while the command runs ([`LentTerminal`]), as a shell does for a job it starts:
/// programs such as git draw their progress only when they are in the foreground, and a
/// Ctrl-C then reaches the command (which ends, and this process reports it).
pub fn status_on_terminal_within(
    command: &mut std::process::Command,
    limit: Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let (mut child, registration) = spawn_group_owned(command)?;
    let _lent = LentTerminal::lend(registration.pid);
    wait_or_kill_group(&mut child, limit)
}

/// Spawns `command` owned (see [`spawn_std_owned`]) as the leader of a process group of its
/// own, so that [`wait_or_kill_group`] reaches everything it starts (git's ssh or remote
/// helper too). Being in a group of its own, it does not get a terminal's Ctrl-C unless it is
/// lent the terminal: it dies with this process instead ([`die_with_parent`]).
fn spawn_group_owned(
    command: &mut std::process::Command,
) -> io::Result<(std::process::Child, OwnedChild)> {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    die_with_parent(command);
    spawn_std_owned(command)
}

/// Waits for `child`, the leader of its own process group ([`spawn_group_owned`]), for up to
/// `limit`: its exit status, or — when it has not ended by then — `None` once the whole group
/// has been killed and the child reaped.
fn wait_or_kill_group(
    child: &mut std::process::Child,
    limit: Duration,
) -> io::Result<Option<std::process::ExitStatus>> {
    let group = i32::try_from(child.id()).unwrap_or(0);
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if started.elapsed() >= limit {
            let _ = signal_group(group, libc::SIGKILL);
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The foreground of the terminal on this process's stderr, lent to a child's process group
/// and taken back when dropped (also when the child was killed or an error returns early).
struct LentTerminal {
    /// This process's own group, which held the foreground before.
    owner: libc::pid_t,
}

impl LentTerminal {
    /// Lends the terminal to group `group`, if this process's group holds its foreground (not
    /// when stderr is no terminal, or this process runs in the background of a shell).
    fn lend(group: i32) -> Option<LentTerminal> {
        // SAFETY: getpgrp, tcgetpgrp and tcsetpgrp read or set the terminal's foreground group
        // through a descriptor this process has open; they touch no memory of ours.
        unsafe {
            let owner = libc::getpgrp();
            if group <= 1 || libc::tcgetpgrp(libc::STDERR_FILENO) != owner {
                return None;
            }
            (libc::tcsetpgrp(libc::STDERR_FILENO, group) == 0).then_some(LentTerminal { owner })
        }
    }
}

impl Drop for LentTerminal {
    /// Takes the foreground back. This process is in the background until then, and the
    /// kernel stops a background process that sets the foreground with SIGTTOU unless the
    /// signal is blocked: it is, for this call, in this thread.
    fn drop(&mut self) {
        // SAFETY: sigemptyset/sigaddset fill sets we own; pthread_sigmask blocks and restores
        // this thread's mask; tcsetpgrp sets the foreground of the terminal on stderr.
        unsafe {
            let mut block: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut block);
            libc::sigaddset(&raw mut block, libc::SIGTTOU);
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const block, &raw mut before);
            libc::tcsetpgrp(libc::STDERR_FILENO, self.owner);
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
        }
    }
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

/// Raises this process's soft limit of open files (`RLIMIT_NOFILE`) to its hard limit, so a
/// supervisor of hundreds of agents is not held to a shell's stock 1024. Returns the soft
/// limit before and after (equal when nothing could be raised).
pub fn raise_open_file_limit() -> (u64, u64) {
    // SAFETY: getrlimit/setrlimit read and write a struct we own.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) != 0 {
            return (0, 0);
        }
        let before = limit.rlim_cur;
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) != 0 {
                return (before, before);
            }
        }
        (before, limit.rlim_cur)
    }
}

/// What a failure to open a file or start a process says about this machine's limits, when
/// it is one of running out of them: too many open files (this process's `RLIMIT_NOFILE`, or
/// the system's), or of processes or memory (`RLIMIT_NPROC`, `EAGAIN`/`ENOMEM` from fork).
/// `None` for any other error.
pub fn exhausted_limit(error: &io::Error) -> Option<String> {
    let (resource, name) = match error.raw_os_error()? {
        libc::EMFILE => (libc::RLIMIT_NOFILE, "open files (RLIMIT_NOFILE)"),
        libc::ENFILE => {
            let max = std::fs::read_to_string("/proc/sys/fs/file-max").unwrap_or_default();
            return Some(format!(
                "the system ran out of open files (fs.file-max = {})",
                max.trim()
            ));
        }
        libc::EAGAIN => (libc::RLIMIT_NPROC, "processes (RLIMIT_NPROC)"),
        libc::ENOMEM => return Some("the system ran out of memory to start a process".into()),
        _ => return None,
    };
    // SAFETY: getrlimit fills a struct we own.
    let (soft, hard) = unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        libc::getrlimit(resource, &raw mut limit);
        (limit.rlim_cur, limit.rlim_max)
    };
    let shown = |value: u64| {
        if value == libc::RLIM_INFINITY { "unlimited".to_string() } else { value.to_string() }
    };
    Some(format!(
        "fleet run reached its limit of {name}: soft {}, hard {}",
        shown(soft),
        shown(hard)
    ))
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

/// Stops group `pgid`: SIGTERM, up to `grace` for it to exit (cut short when `cut`
/// resolves: a second Ctrl-C), then SIGKILL. Reaps the group's orphans (never `leader`, whose
/// status its owner collects). Returns true if SIGKILL was needed.
pub async fn terminate_group(
    pgid: i32,
    leader: i32,
    grace: Duration,
    cut: impl std::future::Future<Output = ()>,
) -> bool {
    let _ = signal_group(pgid, libc::SIGTERM);
    // The grace may come from configuration: saturate at a day rather than overflow the clock.
    let now = tokio::time::Instant::now();
    let deadline = now.checked_add(grace).unwrap_or_else(|| now + Duration::from_secs(86_400));
    tokio::pin!(cut);
    let mut cut_short = false;
    while !cut_short && tokio::time::Instant::now() < deadline {
        reap_orphans(&HashSet::from([leader]));
        if !group_has_live_members(pgid) {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(25)) => {}
            () = &mut cut => cut_short = true,
        }
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
    /// When the process started, in clock ticks since boot: with the pid, it names one
    /// process for good (pids are reused, start times are not).
    pub start_ticks: u64,
}

/// Every process visible in `/proc` (empty where there is no `/proc`).
pub fn processes() -> Vec<ProcessInfo> {
    all_pids().filter_map(process).collect()
}

fn all_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
}

/// This process's start time in clock ticks since boot (0 where `/proc` does not say).
pub fn own_start_ticks() -> u64 {
    i32::try_from(std::process::id()).ok().and_then(process).map_or(0, |p| p.start_ticks)
}

/// One process, if it exists.
pub fn process(pid: i32) -> Option<ProcessInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &stat)
}

/// The command name of process `pid` (`/proc/<pid>/comm`), if it exists.
pub fn command_name(pid: i32) -> Option<String> {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(name.trim_end().to_owned())
}

/// Parses the fields after the command name, which may itself contain spaces and parentheses.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcessInfo> {
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = *fields.first()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let pgid = fields.get(2)?.parse().ok()?;
    // Field 22 of the whole line (starttime) is the 20th after the command name.
    let start_ticks = fields.get(19).and_then(|f| f.parse().ok()).unwrap_or(0);
    Some(ProcessInfo { pid, ppid, pgid, zombie: state == "Z" || state == "X", start_ticks })
}

/// This boot of the kernel, so that a pid and start time recorded before a reboot are never
/// matched with a process of this one. Empty where the kernel does not say.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This machine's host name (`localhost` if it has none).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let host = String::from_utf8_lossy(&buf[..end]).into_owned();
    if host.is_empty() { "localhost".to_string() } else { host }
}

/// Whether the process `pid` that started at `start_ticks` is still alive (not a zombie).
/// A recorded start time of 0 (unknown) matches any process with that pid.
pub fn is_alive(pid: u32, start_ticks: u64) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    process(pid).is_some_and(|p| !p.zombie && (start_ticks == 0 || p.start_ticks == start_ticks))
}

/// Whether `/proc/<pid>/environ` holds exactly the entry `entry` (`NAME=value`).
fn has_env_entry(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|environ| environ.split(|b| *b == 0).any(|e| e == entry))
}

/// The values of the variables `names` in the environment of process `pid` (each `None` when
/// unset; all `None` when the environment cannot be read: the process is gone or not ours).
pub fn env_values<const N: usize>(pid: i32, names: [&str; N]) -> [Option<String>; N] {
    let mut values = [const { None }; N];
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return values };
    for entry in environ.split(|b| *b == 0) {
        for (name, value) in names.iter().zip(values.iter_mut()) {
            let matches = entry.len() > name.len()
                && entry.starts_with(name.as_bytes())
                && entry[name.len()] == b'=';
            if matches && value.is_none() {
                *value = Some(String::from_utf8_lossy(&entry[name.len() + 1..]).into_owned());
            }
        }
    }
    values
}

/// Processes (other than this one) whose environment holds `entry` (`NAME=value`), alive or
/// zombie. Agents and everything they start inherit the supervisor's tags, even processes that
/// left the agent's process group or session.
pub fn tagged(entry: &str) -> Vec<ProcessInfo> {
    let me = std::process::id() as i32;
    all_pids()
        .filter(|pid| *pid != me && has_env_entry(*pid, entry.as_bytes()))
        .filter_map(process)
        .collect()
}

/// SIGKILLs every live process tagged with `entry` (see [`tagged`]) and every descendant of
/// one (a child that cleared its environment is still a child), and returns how many. They are
/// stopped first (SIGSTOP: a stopped process cannot fork), the set gathered again until no new
/// one appears, and only then killed: killing a parent first would hand its untagged children
/// to another parent before they were found.
pub fn kill_tagged(entry: &str) -> usize {
    let me = std::process::id() as i32;
    let mut frozen: BTreeSet<i32> = BTreeSet::new();
    for _ in 0..50 {
        let all = processes();
        let tagged: Vec<i32> = all
            .iter()
            .filter(|p| p.pid != me && !p.zombie && has_env_entry(p.pid, entry.as_bytes()))
            .map(|p| p.pid)
            .collect();
        let found = with_descendants(&all, &tagged, me);
        let new: Vec<i32> = found.difference(&frozen).copied().collect();
        if new.is_empty() {
            break;
        }
        for pid in new {
            // SAFETY: sends SIGSTOP to one specific pid, never 0, -1, init or this process.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            frozen.insert(pid);
        }
    }
    frozen
        .into_iter()
        // SAFETY: sends SIGKILL to one specific pid, never 0, -1, init or this process.
        .filter(|pid| unsafe { libc::kill(*pid, libc::SIGKILL) } == 0)
        .count()
}

/// `roots` and every live descendant of one of them among `all`, leaving out init and `me`.
fn with_descendants(all: &[ProcessInfo], roots: &[i32], me: i32) -> BTreeSet<i32> {
    let mut found: BTreeSet<i32> = roots.iter().copied().filter(|pid| *pid > 1).collect();
    let mut grew = true;
    while grew {
        grew = false;
        for process in all {
            let eligible = !process.zombie && process.pid > 1 && process.pid != me;
            if eligible && found.contains(&process.ppid) && found.insert(process.pid) {
                grew = true;
            }
        }
    }
    found.remove(&me);
    found
}

/// Makes the child of `command` receive SIGKILL when this process dies, even by SIGKILL
/// (Linux `PR_SET_PDEATHSIG`). If this process is already gone by the time the child sets it
/// up, the child exits at once instead of running unsupervised.
///
/// The signal follows the thread that spawned the child: spawn from a thread that lives as
/// long as the supervisor (the runtime's own thread), never from a short-lived worker.
pub fn die_with_parent(command: &mut std::process::Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the child between fork and exec and only calls the
        // async-signal-safe functions prctl, getppid and _exit.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before the prctl: then nobody would signal us.
                if libc::getppid() != parent {
                    libc::_exit(137);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Makes the child of `command` the leader of a new session (no controlling terminal, its own
/// process group) that inherits descriptor `keep`.
pub fn in_new_session_keeping(command: &mut std::process::Command, keep: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and only calls the
    // async-signal-safe functions setsid and fcntl.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 || libc::fcntl(keep, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line =
            "42 (a (weird) name) S 7 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000";
        let info = parse_stat(42, line).unwrap();
        assert_eq!((info.ppid, info.pgid, info.zombie), (7, 42, false));
        assert_eq!(info.start_ticks, 98765);
        let zombie = parse_stat(43, "43 (sh) Z 7 40 40 0").unwrap();
        assert!(zombie.zombie);
    }

    #[test]
    fn this_process_is_alive_with_its_own_start_time_only() {
        let me = process(std::process::id() as i32).unwrap();
        assert!(me.start_ticks > 0);
        assert!(is_alive(std::process::id(), me.start_ticks));
        assert!(!is_alive(std::process::id(), me.start_ticks + 1));
    }

    #[test]
    fn refuses_to_signal_everyone() {
        assert!(signal_group(0, libc::SIGTERM).is_err());
        assert!(signal_group(1, libc::SIGTERM).is_err());
    }
}
