//! Work done ahead, on cores nothing else wants, until someone waits for it.
//!
//! A large import leaves a core idle while the store finishes and commits it; the journal's
//! commit trees, which follow, can be compressed there meanwhile. [`Ahead::start`] runs such
//! work on a thread of its own under Linux's `SCHED_IDLE` policy, so that it takes no time
//! from the work it is ahead of; [`Ahead::wait`] gives the thread its normal policy back
//! before joining it, so a busy machine cannot starve the work once it is needed. Leaving
//! `SCHED_IDLE` takes `CAP_SYS_NICE` or an `RLIMIT_NICE` that allows the thread's nice value:
//! a process that has neither (an ordinary user's), and every other system, runs the thread
//! at normal priority.
//!
//! The work must not start threads of its own: they would inherit the idle policy and keep
//! it after the wait. Dropping an [`Ahead`] tells the work it is abandoned (it should stop
//! early) and waits for the thread, so the work never outlives its owner.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// What the owner tells the work: that it is wanted now (normal priority), or abandoned.
#[derive(Default)]
pub struct Signals {
    wanted: AtomicBool,
    abandoned: AtomicBool,
}

impl Signals {
    /// Whether the owner gave the work up: its result will not be used.
    pub fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }
}

/// A thread doing work ahead (see the module docs).
pub struct Ahead<T> {
    thread: Option<JoinHandle<T>>,
    signals: Arc<Signals>,
}

impl<T: Send + 'static> Ahead<T> {
    /// Starts `work` on a thread that runs only on otherwise idle cores; an error if no
    /// thread could be started.
    pub fn start(work: impl FnOnce(&Signals) -> T + Send + 'static) -> std::io::Result<Ahead<T>> {
        let signals = Arc::new(Signals::default());
        let shared = Arc::clone(&signals);
        let thread = std::thread::Builder::new().name("fleet-ahead".into()).spawn(move || {
            if !shared.wanted.load(Ordering::SeqCst) && idle_policy::enter() {
                // Wanted while entering: the owner's restore may have come first.
                if shared.wanted.load(Ordering::SeqCst) {
                    idle_policy::leave_self();
                }
            }
            work(&shared)
        })?;
        Ok(Ahead { thread: Some(thread), signals })
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
        self.signals.wanted.store(true, Ordering::SeqCst);
        idle_policy::leave(&thread);
        thread.join().ok()
    }
}

impl<T> Drop for Ahead<T> {
    fn drop(&mut self) {
        self.signals.abandoned.store(true, Ordering::SeqCst);
        self.join();
    }
}

#[cfg(target_os = "linux")]
mod idle_policy {
    use std::os::unix::thread::JoinHandleExt;

    /// Puts the calling thread under `SCHED_IDLE`; false if the policy could not be left
    /// again, or the kernel refused (the thread then runs at normal priority).
    pub fn enter() -> bool {
        may_leave() && set(unsafe_self(), libc::SCHED_IDLE)
    }

    /// Gives the calling thread the normal policy back.
    pub fn leave_self() {
        set(unsafe_self(), libc::SCHED_OTHER);
    }

    /// Gives `thread` (not yet joined) the normal policy back. A pthread handle names its
    /// thread until the join, even one that has ended, so it never names another thread.
    pub fn leave<T>(thread: &std::thread::JoinHandle<T>) {
        set(thread.as_pthread_t(), libc::SCHED_OTHER);
    }

    fn unsafe_self() -> libc::pthread_t {
        // SAFETY: pthread_self has no preconditions.
        unsafe { libc::pthread_self() }
    }

    /// Sets `thread`'s policy; false (and a debug line) if the kernel refused.
    fn set(thread: libc::pthread_t, policy: libc::c_int) -> bool {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `thread` is a live or unjoined pthread of this process, `param` is valid.
        let rc = unsafe { libc::pthread_setschedparam(thread, policy, &param) };
        if rc != 0 {
            let error = std::io::Error::from_raw_os_error(rc);
            tracing::debug!(%error, policy, "a working-ahead thread's policy was not changed");
        }
        rc == 0
    }

    /// Whether this process may give a thread under `SCHED_IDLE` the normal policy back (see
    /// [`permits_leaving`]); an ordinary user may not, and a thread it put there would stay.
    pub(super) fn may_leave() -> bool {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `limit` is a valid rlimit to fill.
        let nice_limit = match unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut limit) } {
            0 => limit.rlim_cur,
            _ => 0,
        };
        // SAFETY: getpriority has no preconditions; -1 is also a valid nice value, and an
        // error (errno) only makes the check stricter.
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        permits_leaving(nice_limit, nice, effective_capabilities(&status))
    }

    /// The effective capability set in the text of `/proc/self/status`.
    pub(super) fn effective_capabilities(status: &str) -> u64 {
        let field = status.lines().find_map(|line| line.strip_prefix("CapEff:"));
        field.and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok()).unwrap_or(0)
    }

    /// The kernel's rule for leaving `SCHED_IDLE` (sched(7)): `CAP_SYS_NICE`, or an
    /// `RLIMIT_NICE` of at least 20 minus the thread's nice value.
    pub(super) fn permits_leaving(nice_limit: u64, nice: i32, capabilities: u64) -> bool {
        const CAP_SYS_NICE: u32 = 23;
        let needed = u64::try_from(20 - i64::from(nice)).unwrap_or(0);
        nice_limit >= needed || capabilities & (1 << CAP_SYS_NICE) != 0
    }
}

#[cfg(not(target_os = "linux"))]
mod idle_policy {
    pub fn enter() -> bool {
        false
    }

    pub fn leave_self() {}

    pub fn leave<T>(_thread: &std::thread::JoinHandle<T>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_done_and_its_result_returned() {
        let ahead = Ahead::start(|_: &Signals| (1..=10).sum::<u32>()).unwrap();
        assert_eq!(ahead.wait(), Some(55));
    }

    #[test]
    fn a_panic_in_the_work_is_no_result() {
        let ahead = Ahead::start(|_: &Signals| -> u32 { panic!("the work failed") }).unwrap();
        assert_eq!(ahead.wait(), None);
    }

    /// Dropped, it tells the work it is abandoned, and returns only once the work did.
    #[test]
    fn dropping_abandons_the_work_and_waits_for_it() {
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let ahead = Ahead::start(move |signals: &Signals| {
            started_tx.send(()).unwrap();
            while !signals.abandoned() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            ended_tx.send(()).unwrap();
        })
        .unwrap();
        started_rx.recv().unwrap();
        drop(ahead);
        assert!(ended_rx.try_recv().is_ok(), "the work ended before the drop returned");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn only_a_process_that_may_leave_the_idle_policy_enters_it() {
        use idle_policy::{effective_capabilities, permits_leaving};
        let status = "Name:\tfleet\nCapPrm:\t0000000000000000\nCapEff:\t0000000000800000\n";
        assert_eq!(effective_capabilities(status), 1 << 23);
        assert_eq!(effective_capabilities("Name:\tfleet\n"), 0);
        assert!(permits_leaving(0, 0, 1 << 23), "CAP_SYS_NICE");
        assert!(permits_leaving(20, 0, 0), "RLIMIT_NICE allows nice 0");
        assert!(!permits_leaving(20, -5, 0), "RLIMIT_NICE does not allow nice -5");
        assert!(permits_leaving(1, 19, 0), "RLIMIT_NICE allows nice 19");
        assert!(permits_leaving(u64::MAX, -20, 0), "no RLIMIT_NICE");
        assert!(!permits_leaving(0, 0, 0), "an ordinary user");
        assert!(!permits_leaving(19, 0, !(1 << 23)), "every capability but CAP_SYS_NICE");
    }

    /// The thread runs under the idle policy (where the process may leave it) until it is
    /// waited for, then under the normal one: it reports its policy before, and after the
    /// wait began.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_is_idle_until_waited_for() {
        // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let ahead = Ahead::start(move |signals: &Signals| {
            seen_tx.send(policy()).unwrap();
            go_rx.recv().unwrap();
            assert!(signals.wanted.load(Ordering::SeqCst));
            // The wait marks the work wanted, then restores the policy: allow it a moment.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while policy() != libc::SCHED_OTHER && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            policy()
        })
        .unwrap();
        let idle = idle_policy::may_leave();
        let expected = if idle { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
        assert_eq!(seen_rx.recv().unwrap(), expected);
        // Let the work go once the wait has begun: the wait marks it wanted first.
        let signals = Arc::clone(&ahead.signals);
        let release = std::thread::spawn(move || {
            while !signals.wanted.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            go_tx.send(()).unwrap();
        });
        assert_eq!(ahead.wait(), Some(libc::SCHED_OTHER));
        release.join().unwrap();
    }
}
