//! `fleet serve`: serve the workspace's write requests on its socket when no supervisor runs
//! (a supervisor serves its workspace itself), until Ctrl-C or SIGTERM. Commands find the
//! socket on their own; see `crate::server`.

use std::sync::Arc;

use super::context::Context;
use super::error::CliError;
use crate::server::{ServeError, Server};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

pub fn cmd_serve(ctx: &Context, _args: ServeArgs) -> Result<(), CliError> {
    // Blocked before any thread starts, so every thread inherits the mask and the signals
    // wait for `sigwait` below.
    let signals = stop_signals();
    block(&signals)?;
    let store = Arc::new(ctx.open_store()?);
    let server = Server::start(store, Box::new(|| {})).map_err(serve_error)?;
    ctx.out.note(&format!(
        "serving {} on {}; Ctrl-C to stop",
        ctx.workspace_dir()?.display(),
        server.socket().display()
    ));
    while !wait_for(&signals, std::time::Duration::from_secs(1)) {
        if server.lost_store() {
            return Err(CliError::new("stopped serving: the store file was replaced")
                .with_hint("start `fleet serve` again to serve the new store"));
        }
    }
    drop(server);
    Ok(())
}

fn serve_error(error: ServeError) -> CliError {
    match error {
        ServeError::AlreadyServed(_) => CliError::new(error.to_string()).with_hint(
            "commands already send their writes to that process; stop it first to serve from here",
        ),
        ServeError::Io { .. } => CliError::new(error.to_string())
            .with_hint("commands keep working without a server; they write to the store directly"),
    }
}

fn stop_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&raw mut set, signal);
        }
        set
    }
}

fn block(signals: &libc::sigset_t) -> Result<(), CliError> {
    // SAFETY: `signals` is an initialised set; the old mask is not wanted.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, signals, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(CliError::new("blocking the stop signals failed"));
    }
    Ok(())
}

/// Waits up to `timeout` for one of `signals`; true when one arrived.
fn wait_for(signals: &libc::sigset_t, timeout: std::time::Duration) -> bool {
    let timeout = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(1),
        tv_nsec: libc::c_long::from(timeout.subsec_nanos()),
    };
    // SAFETY: `signals` is initialised and blocked in this thread; the info is not wanted.
    let received = unsafe { libc::sigtimedwait(signals, std::ptr::null_mut(), &raw const timeout) };
    if received > 0 {
        tracing::info!(signal = received, "stopping the server");
    }
    received > 0
}
