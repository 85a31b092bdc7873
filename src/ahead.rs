//! Work done ahead, on cores nothing else wants, until someone waits for it.
//!
//! A large import leaves a core idle while the store finishes and commits it; the journal's
//! commit trees, which follow, can be compressed there meanwhile. [`Ahead::start`] runs such
//! work on a thread of its own under Linux's `SCHED_IDLE` policy, so that it takes no time
//! from the work it is ahead of; [`Ahead::wait`] gives the thread its normal policy back
//! before joining it, so a busy machine cannot starve the work once it is needed. Leaving
//! `SCHED_IDLE` takes `CAP_SYS_NICE` or a raised `RLIMIT_NICE`: a process that has neither
//! (an ordinary user's), and every other system, runs the thread at normal priority.
//!
//! The thread must not start threads of its own: they would inherit the idle policy and keep
//! it after the wait.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where the thread is, guarded so that its id is only used while it runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not yet running its work.
    Starting,
    /// Running its work at idle priority, as this kernel thread id.
    Idle(i32),
    /// Someone waits for it: it runs (or will) at normal priority.
    Wanted,
    /// Its work is done.
    Done,
}

/// A thread doing work ahead (see the module docs). Dropping it waits for the thread, so the
/// work never outlives its owner.
pub struct Ahead<T> {
    thread: Option<JoinHandle<T>>,
    state: Arc<Mutex<State>>,
}

impl<T: Send + 'static> Ahead<T> {
    /// Starts `work` on a thread that runs only on otherwise idle cores.
    pub fn start(work: impl FnOnce() -> T + Send + 'static) -> Ahead<T> {
        let state = Arc::new(Mutex::new(State::Starting));
        let shared = Arc::clone(&state);
        let thread = std::thread::spawn(move || {
            set(&shared, |state| {
                if *state == State::Starting
                    && let Some(id) = idle_policy::enter()
                {
                    *state = State::Idle(id);
                }
            });
            let done = work();
            set(&shared, |state| *state = State::Done);
            done
        });
        Ahead { thread: Some(thread), state }
    }
}

impl<T> Ahead<T> {
    /// The work's result, once done; its thread runs at normal priority from now on. `None`
    /// if the work panicked.
    pub fn wait(mut self) -> Option<T> {
        self.join()
    }

    fn join(&mut self) -> Option<T> {
        let thread = self.thread.take()?;
        self.want();
        thread.join().ok()
    }

    /// Gives the thread its normal priority for the rest of its work.
    fn want(&self) {
        set(&self.state, |state| {
            // Under the lock the thread cannot reach `Done`, so its id still names it.
            if let State::Idle(id) = *state {
                idle_policy::leave(id);
            }
            if *state != State::Done {
                *state = State::Wanted;
            }
        });
    }
}

impl<T> Drop for Ahead<T> {
    fn drop(&mut self) {
        self.join();
    }
}

/// Changes the state under its lock (a poisoned lock still holds a valid state).
fn set(state: &Mutex<State>, change: impl FnOnce(&mut State)) {
    let mut guard = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    change(&mut guard);
}

#[cfg(target_os = "linux")]
mod idle_policy {
    /// Puts the calling thread under `SCHED_IDLE`; its kernel thread id, or `None` if the
    /// policy could not be left again, or the kernel refused (the thread then runs at normal
    /// priority).
    pub fn enter() -> Option<i32> {
        if !may_leave() {
            return None;
        }
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread, and `param` is a valid parameter block.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            let error = std::io::Error::last_os_error();
            tracing::debug!(%error, "a thread working ahead runs at normal priority");
            return None;
        }
        // SAFETY: gettid has no preconditions.
        Some(unsafe { libc::gettid() })
    }

    /// Whether this process may give a thread under `SCHED_IDLE` the normal policy back: the
    /// kernel allows it with `CAP_SYS_NICE`, or with an `RLIMIT_NICE` that allows nice 0
    /// (sched(7)); an ordinary user has neither, and a thread it put there would stay.
    pub(super) fn may_leave() -> bool {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is a valid rlimit to fill.
        let nice_limit = match unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut limit) } {
            0 => limit.rlim_cur,
            _ => 0,
        };
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        permits_leaving(nice_limit, effective_capabilities(&status))
    }

    /// The effective capability set in the text of `/proc/self/status`.
    pub(super) fn effective_capabilities(status: &str) -> u64 {
        let field = status.lines().find_map(|line| line.strip_prefix("CapEff:"));
        field.and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok()).unwrap_or(0)
    }

    /// The kernel's rule for leaving `SCHED_IDLE` at nice 0.
    pub(super) fn permits_leaving(nice_limit: u64, capabilities: u64) -> bool {
        const CAP_SYS_NICE: u32 = 23;
        nice_limit >= 20 || capabilities & (1 << CAP_SYS_NICE) != 0
    }

    /// Gives thread `id` (of this process, still running) the normal policy back.
    pub fn leave(id: i32) {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `id` is a running thread of this process, and `param` is valid.
        if unsafe { libc::sched_setscheduler(id, libc::SCHED_OTHER, &param) } != 0 {
            let error = std::io::Error::last_os_error();
            tracing::debug!(%error, "a thread working ahead stays at idle priority");
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod idle_policy {
    pub fn enter() -> Option<i32> {
        None
    }

    pub fn leave(_id: i32) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_done_and_its_result_returned() {
        let ahead = Ahead::start(|| (1..=10).sum::<u32>());
        assert_eq!(ahead.wait(), Some(55));
    }

    #[test]
    fn a_panic_in_the_work_is_no_result() {
        let ahead = Ahead::start(|| -> u32 { panic!("the work failed") });
        assert_eq!(ahead.wait(), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_a_process_that_may_leave_the_idle_policy_enters_it() {
        use idle_policy::{effective_capabilities, permits_leaving};
        let status = "Name:\tfleet\nCapPrm:\t0000000000000000\nCapEff:\t0000000000800000\n";
        assert_eq!(effective_capabilities(status), 1 << 23);
        assert_eq!(effective_capabilities("Name:\tfleet\n"), 0);
        assert!(permits_leaving(0, 1 << 23), "CAP_SYS_NICE");
        assert!(permits_leaving(20, 0), "RLIMIT_NICE allows nice 0");
        assert!(permits_leaving(u64::MAX, 0), "no RLIMIT_NICE");
        assert!(!permits_leaving(0, 0), "an ordinary user");
        assert!(!permits_leaving(19, !(1 << 23)), "every capability but CAP_SYS_NICE");
    }

    /// The thread runs under the idle policy until it is wanted (as a wait begins), then under
    /// the normal one: it reports its policy before, and after it is let go.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_is_idle_until_waited_for() {
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let ahead = Ahead::start(move || {
            seen_tx.send(policy()).unwrap();
            go_rx.recv().unwrap();
            policy()
        });
        let expected = if idle_policy::may_leave() { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
        assert_eq!(seen_rx.recv().unwrap(), expected);
        ahead.want();
        go_tx.send(()).unwrap();
        assert_eq!(ahead.wait(), Some(libc::SCHED_OTHER));
    }
}
