//! The guardian: a small process that outlives its supervisor only to clean up after it.
//!
//! `fleet run` starts `fleet guard --instance <id>` with a pipe as its standard input and
//! keeps the other end open for as long as it lives. The guardian ignores the terminal's
//! signals (SIGINT, SIGTERM, SIGHUP: the supervisor handles those itself) and blocks reading
//! the pipe. When the pipe closes, the supervisor is gone — by a clean exit, or killed with
//! SIGKILL, which no handler can catch. The guardian then kills every process tagged with the
//! supervisor's instance (`FLEET_INSTANCE=<id>` in its environment: the agents and whatever
//! they started, even in another process group or session), releases the tasks still leased
//! to that instance, and exits. So no agent outlives its supervisor, and the queue does not
//! keep tasks "in progress" for a run that no longer exists.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::lease::INSTANCE_VAR;
use crate::model::Status;
use crate::store::Store;
use crate::time::Clock;
use crate::tracker;

/// Starts the guardian of supervisor `instance`. Keep the returned child (its stdin is the
/// pipe) for as long as the supervisor runs.
pub fn spawn(exe: &Path, instance: &str, beads_dir: &Path) -> std::io::Result<Child> {
    Command::new(exe)
        .args(["guard", "--instance", instance, "--db"])
        .arg(beads_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .env_remove(INSTANCE_VAR)
        .spawn()
}

/// Ends the guard of a supervisor that finished its own cleanup: kills and reaps it (its
/// cleanup would find nothing left to do).
pub fn stop(mut guard: Child) {
    let _ = guard.kill();
    let _ = guard.wait();
}

/// The guardian's life: wait for the supervisor to go, then clean up after it.
pub fn watch(instance: &str, beads_dir: &Path) {
    ignore_stop_signals();
    let mut pipe = std::io::stdin();
    let mut buf = [0u8; 64];
    // Anything read is ignored; end of file (or an error: the pipe is gone) ends the wait.
    while matches!(pipe.read(&mut buf), Ok(n) if n > 0) {}
    let killed = crate::process::kill_tagged(&format!("{INSTANCE_VAR}={instance}"));
    if killed > 0 {
        eprintln!(
            "fleet guard: the supervisor {instance} is gone; killed {killed} of its processes"
        );
    }
    if let Err(error) = release_leases(instance, beads_dir) {
        eprintln!("fleet guard: releasing the tasks of supervisor {instance}: {error}");
    }
}

fn ignore_stop_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
        // SAFETY: installs the default "ignore" disposition; no handler code runs.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

/// Releases every task still in progress under `instance`'s lease, with a comment.
fn release_leases(instance: &str, beads_dir: &Path) -> Result<(), crate::store::StoreError> {
    let mut store = Store::open(beads_dir)?;
    store.skip_close_on_exit();
    let mut held = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        let leased = issue.fleet.lease.as_ref().is_some_and(|l| l.instance == instance);
        if issue.status == Status::InProgress && leased {
            held.push((issue.id, issue.assignee));
        }
        Ok(true)
    })?;
    if held.is_empty() {
        return Ok(());
    }
    store.write("fleet-guard", Clock::System, |w| {
        for (id, owner) in &held {
            let still_leased = w.issue(id)?.is_some_and(|issue| {
                issue.status == Status::InProgress
                    && issue.fleet.lease.as_ref().is_some_and(|l| l.instance == instance)
            });
            if !still_leased {
                continue;
            }
            tracker::release(w, id)?;
            let text = format!(
                "[fleet] released: its supervisor {owner} stopped without releasing it; its agent was killed"
            );
            tracker::comment(w, id, owner, &text)?;
        }
        super::lease::deregister(w, instance)
    })?;
    Ok(())
}
