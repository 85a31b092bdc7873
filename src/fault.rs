//! Fault points, for the tests of what a kill at an exact moment leaves behind.
//!
//! A step that must survive a crash at a moment too short for a test to hit with a timed
//! `kill -9` (between making the journal repository aside and renaming it into place) calls
//! [`point`] with its name there. When `FLEET_FAULT` names that point, the process sends
//! itself SIGKILL: a real kill -9, at that moment, with nothing flushed or unwound. Unset (as
//! always outside the tests), a point costs one environment lookup.

/// Kills this process with SIGKILL when `FLEET_FAULT` is `name` (see the module docs).
pub fn point(name: &str) {
    if crate::env::fault_at(name) {
        // SAFETY: kill with this process's own id and a valid signal number.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
}
