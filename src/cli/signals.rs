//! Signals taken as events by commands that wait in the foreground (`fleet serve`,
//! `fleet tasks --watch`): the signals are blocked, so they never end the process behind the
//! command's back (leaving a socket behind, or the terminal in raw mode), and the command picks
//! them up when it is ready.

use std::time::Duration;

use super::error::CliError;

/// A set of blocked signals, waited for with [`Blocked::wait`].
pub struct Blocked {
    set: libc::sigset_t,
}

impl Blocked {
    /// Blocks `signals` in the calling thread (and in threads it starts later, which inherit
    /// the mask). Call it before starting any thread, or a signal may go to a thread that has
    /// it unblocked.
    pub fn block(signals: &[i32]) -> Result<Blocked, CliError> {
        // SAFETY: sigemptyset/sigaddset initialise and fill the set they are given.
        let set = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            for signal in signals {
                libc::sigaddset(&raw mut set, *signal);
            }
            set
        };
        // SAFETY: `set` is an initialised set; the old mask is not wanted.
        let rc =
            unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(CliError::new("blocking the stop signals failed"));
        }
        Ok(Blocked { set })
    }

    /// Waits up to `timeout` (zero: only looks) for one of the signals; the signal that arrived.
    pub fn wait(&self, timeout: Duration) -> Option<i32> {
        let timeout = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(1),
            tv_nsec: libc::c_long::from(timeout.subsec_nanos()),
        };
        // SAFETY: `set` is initialised and blocked in this thread; the info is not wanted.
        let received = unsafe {
            libc::sigtimedwait(&raw const self.set, std::ptr::null_mut(), &raw const timeout)
        };
        (received > 0).then_some(received)
    }
}

/// The signals that ask a foreground command to stop: Ctrl-C, `kill`, a closed terminal.
pub const STOP: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
