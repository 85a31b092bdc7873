//! Hints to the allocator the `fleet` binary runs on (mimalloc, chosen in `main.rs`).
//!
//! By default mimalloc gives freed memory back to the system: it purges it 10 ms after it was
//! freed, and all of it when the process exits. A short command, such as the `bd ready`,
//! `bd update --claim` and `bd close` that agents run dozens of times a minute, ends within a
//! few milliseconds, so that work is wasted: it is 8% of the CPU of `bd --version` and 10% of
//! `bd ready --json`. [`short_lived`] turns purging off for such a process. Commands that read
//! or write a whole queue (an import) and the server keep the default, so their resident
//! memory shrinks again after a peak.
//!
//! The supervisor ([`long_running`]) purges at once instead: hundreds of agents' lines are
//! parsed, redacted and freed every second, and with the 10 ms delay (100 ms for arena
//! memory) the pages they freed were still resident whenever it was measured — 2–5 MiB of its
//! resident memory at 256 agents (`fleet bench supervisor`, same CPU within noise).

use std::ffi::{c_int, c_long};

// The crate that builds and links mimalloc; its options are set through the C API below.
use mimalloc as _;

// mimalloc's option API (`mimalloc.h` of its v2 line, which the `v2` feature builds).
unsafe extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> c_long;
}

/// `mi_option_purge_delay` in v2's `mi_option_e`: how long freed memory waits before it goes
/// back to the system, in milliseconds (default 10; -1 never).
const PURGE_DELAY: c_int = 15;
const NEVER: c_long = -1;

/// Keeps freed memory in the process until it exits (see the module documentation).
pub fn short_lived() {
    // SAFETY: sets one of mimalloc's options, which it reads and writes atomically; -1 is a
    // documented value of this option.
    unsafe { mi_option_set(PURGE_DELAY, NEVER) }
}

/// Gives freed memory back to the system at once (see the module documentation).
pub fn long_running() {
    // SAFETY: as in `short_lived`; 0 is the documented value for purging at once.
    unsafe { mi_option_set(PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long freed memory waits before it goes back to the system (-1: never).
    fn purge_delay() -> c_long {
        // SAFETY: reads one of mimalloc's options.
        unsafe { mi_option_get(PURGE_DELAY) }
    }

    /// The option set is mimalloc's purge delay (its default is 10 ms, which no option next
    /// to it has), and a short-lived process never purges.
    #[test]
    fn short_lived_processes_never_purge_and_long_running_ones_at_once() {
        assert_eq!(purge_delay(), 10, "option {PURGE_DELAY} is mimalloc's purge delay");
        short_lived();
        assert_eq!(purge_delay(), NEVER);
        long_running();
        assert_eq!(purge_delay(), 0);
    }
}
