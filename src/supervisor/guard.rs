//! The guardian: a small process that outlives its supervisor only to clean up after it.
//!
//! `fleet run` starts `fleet guard --instance <id>` with a pipe as its standard input and
//! keeps the other end open for as long as it lives. The guardian runs in a session of its
//! own, so nothing aimed at the supervisor's process group or terminal reaches it: not
//! Ctrl-C or Ctrl-\\ (the terminal signals the foreground group), not `kill -9 -- -PGID`, not
//! the hang-up of a closed terminal. It also ignores the stop signals sent to it alone, and
//! blocks reading the pipe. When the pipe closes, the supervisor is gone — by a clean exit, or
//! killed with SIGKILL, which no handler can catch. The guardian then kills every process
//! tagged with the supervisor's instance (`FLEET_INSTANCE=<id>` in its environment: the agents
//! and whatever they started, even in another process group or session) and every descendant
//! of one, then the recorded process group of each attempt still leased to the instance,
//! releases those tasks, and exits. So no agent outlives its supervisor, and the queue does not
//! keep tasks "in progress" for a run that no longer exists.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::lease::INSTANCE_VAR;
use super::taskdir::TaskDir;
use crate::model::Status;
use crate::store::Store;
use crate::time::Clock;
use crate::tracker::{self, Abandoned, ReclaimRequest, Request};

/// Starts the guardian of supervisor `instance`. Keep the returned child (its stdin is the
/// pipe) for as long as the supervisor runs.
pub fn spawn(exe: &Path, instance: &str, home: &Path, beads_dir: &Path) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(exe);
    command
        .args(["guard", "--instance", instance, "--home"])
        .arg(home)
        .arg("--db")
        .arg(beads_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .env_remove(INSTANCE_VAR);
    // SAFETY: runs in the child between fork and exec and calls only setsid, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Whether the guard `child` still runs (a person may have killed it: then the supervisor
/// starts another).
pub fn is_running(child: &Child) -> bool {
    i32::try_from(child.id()).ok().and_then(crate::process::process).is_some_and(|p| !p.zombie)
}

/// Ends the guard of a supervisor that finished its own cleanup: kills and reaps it (its
/// cleanup would find nothing left to do).
pub fn stop(mut guard: Child) {
    let _ = guard.kill();
    let _ = guard.wait();
}

/// The guardian's life: wait for the supervisor to go, then clean up after it.
pub fn watch(instance: &str, home: &Path, beads_dir: &Path) {
    ignore_stop_signals();
    let mut pipe = std::io::stdin();
    let mut buf = [0u8; 64];
    // Anything read is ignored; end of file (or an error: the pipe is gone) ends the wait.
    while matches!(pipe.read(&mut buf), Ok(n) if n > 0) {}
    let killed = crate::process::kill_tagged(&format!("{INSTANCE_VAR}={instance}"));
    if killed > 0 {
        say(&format!(
            "fleet guard: the supervisor {instance} is gone; killed {killed} of its processes"
        ));
    }
    if let Err(error) = release_leases(instance, home, beads_dir) {
        say(&format!("fleet guard: releasing the tasks of supervisor {instance}: {error}"));
    }
}

/// A line on the guard's stderr; a closed stderr only loses the line (the guard's work goes on).
fn say(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

fn ignore_stop_signals() {
    for signal in
        [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGTSTP, libc::SIGPIPE]
    {
        // SAFETY: installs the default "ignore" disposition; no handler code runs.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

/// Releases every task still in progress under `instance`'s lease, with a comment, once its
/// attempt's recorded process group is dead too.
fn release_leases(
    instance: &str,
    home: &Path,
    beads_dir: &Path,
) -> Result<(), crate::store::StoreError> {
    let mut store = Store::open(beads_dir)?;
    store.skip_close_on_exit();
    let mut held = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        let lease = issue.live_lease().filter(|l| l.instance == instance);
        if let Some(lease) = lease.filter(|_| issue.status == Status::InProgress) {
            let record = TaskDir::new(home, &issue.id)
                .ok()
                .and_then(|dir| super::lease::AttemptRecord::load(&dir.root));
            super::lease::kill_survivors(&lease.attempt, record.as_ref());
            held.push((issue.id.clone(), lease.clone()));
        }
        Ok(true)
    })?;
    if held.is_empty() {
        return Ok(());
    }
    let tasks = held
        .into_iter()
        .map(|(id, lease)| Abandoned {
            id,
            author: lease.owner.clone(),
            comment: format!(
                "[fleet] released: its supervisor {} stopped without releasing it; its agent was killed",
                lease.owner
            ),
            lease: Some(lease),
        })
        .collect();
    let request = ReclaimRequest { tasks, gone: vec![instance.to_string()] };
    tracker::execute_in(
        &store,
        "fleet-guard",
        Clock::System,
        &Request::Reclaim(Box::new(request)),
    )?;
    Ok(())
}
