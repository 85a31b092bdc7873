//! The supervisor a test starts in the background (`fleet run --detach`), stopped when the
//! test ends however it ends, and the `/proc` facts the daemon tests judge processes by.
//!
//! A background supervisor is no child of the test (its parent, `fleet run --detach`, has
//! exited), so it cannot be reaped or killed through a `Child` handle. Its pid and its start
//! time together name it for good: the guard SIGKILLs the pid only while it still names the
//! process it started, never a process that reused the pid.

use super::Workspace;

/// A supervisor started with `fleet run --detach`; dropping it stops it (if a test failed
/// half-way), so no background process outlives a test.
pub struct Background<'a> {
    ws: &'a Workspace,
    pub pid: u32,
    /// The process's start time when the guard was made: with `pid`, the process itself.
    start_ticks: u64,
}

impl<'a> Background<'a> {
    /// `fleet run --detach ARGS`, asserted to succeed.
    #[track_caller]
    pub fn start(ws: &'a Workspace, args: &[&str]) -> Background<'a> {
        let mut all = vec!["run", "--detach"];
        all.extend_from_slice(args);
        let run = ws.run(&all).ok();
        Background::of(ws, pid_in(&run.stdout))
    }

    /// Guards the background supervisor `pid` (started by this test, and running now).
    #[track_caller]
    pub fn of(ws: &'a Workspace, pid: u32) -> Background<'a> {
        let start_ticks = start_ticks(pid).unwrap_or_else(|| panic!("process {pid} runs"));
        Background { ws, pid, start_ticks }
    }

    /// SIGKILLs the supervisor, if it still runs.
    pub fn kill(&self) {
        if alive(self.pid) && start_ticks(self.pid) == Some(self.start_ticks) {
            // SAFETY: sends SIGKILL to one pid, checked to still name the process started.
            unsafe { libc::kill(self.pid as i32, libc::SIGKILL) };
        }
    }
}

impl Drop for Background<'_> {
    fn drop(&mut self) {
        let _ = self.ws.run(&["run", "stop", "--timeout", "2"]);
        self.kill();
    }
}

/// The pid in `… (pid N)`.
#[track_caller]
pub fn pid_in(text: &str) -> u32 {
    let at = text.find("(pid ").unwrap_or_else(|| panic!("no pid in {text:?}")) + 5;
    let digits: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("no pid in {text:?}"))
}

/// The fields of `/proc/<pid>/stat` after the command name (state first), if the process
/// exists.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

pub use super::procs::{alive, start_ticks};
