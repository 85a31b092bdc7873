//! Work done ahead, on cores nothing else wants, until someone waits for it.
//!
//! A large import leaves a core idle while the store finishes and commits it; the journal's
//! commit trees, which follow, can be compressed there meanwhile. [`Ahead::start`] runs such
//! work on a thread of its own under Linux's `SCHED_IDLE` policy, so that it takes no time
//! from the work it is ahead of; [`Ahead::wait`] gives the thread its own policy back before
//! joining it, so a busy machine cannot starve the work once it is needed, and the thread
//! gives it back itself when its work ends. Leaving `SCHED_IDLE` takes `CAP_SYS_NICE` (in the
//! initial user namespace) or an `RLIMIT_NICE` that allows the thread's nice value: a process
//! that has neither (an ordinary user's, a rootless container's), a thread under a real-time
//! policy, and every other system run the work at the thread's own priority.
//!
//! The work must not start threads of its own: they would inherit the idle policy and keep
//! it after the wait. Dropping an [`Ahead`] tells the work it is abandoned (it should stop
//! early) and waits for the thread, so the work never outlives its owner.
//!
//! Who restores the policy is settled through one atomic state: the owner only while the
//! thread is idle and working (so its thread id cannot have been reused), the thread itself
//! otherwise.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::thread::JoinHandle;

/// Under its own policy, not idle.
const NORMAL: u8 = 0;
/// Under `SCHED_IDLE`, working.
const IDLE: u8 = 1;
/// The owner is giving the thread its policy back.
const RESTORING: u8 = 2;
/// The work has ended.
const DONE: u8 = 3;

/// What the owner and the thread share.
#[derive(Default)]
pub struct Signals {
    wanted: AtomicBool,
    abandoned: AtomicBool,
    state: AtomicU8,
    /// The thread's kernel id, and the policy it had before `SCHED_IDLE`.
    thread_id: AtomicI32,
    own_policy: AtomicI32,
}

impl Signals {
    /// Whether the owner gave the work up: its result will not be used.
    pub fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// On the thread: goes idle unless the work is already wanted.
    fn go_idle(&self) {
        if self.wanted.load(Ordering::SeqCst) {
            return;
        }
        let Some((thread_id, own_policy)) = idle_policy::enter() else { return };
        self.thread_id.store(thread_id, Ordering::SeqCst);
        self.own_policy.store(own_policy, Ordering::SeqCst);
        self.state.store(IDLE, Ordering::SeqCst);
        // Wanted meanwhile: the owner found the thread not yet idle and left it be.
        if self.wanted.load(Ordering::SeqCst) {
            self.restore_self(NORMAL);
        }
    }

    /// On the thread: gives its own policy back if it is still idle, leaving `then`.
    fn restore_self(&self, then: u8) {
        if self.state.compare_exchange(IDLE, then, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            idle_policy::leave(0, self.own_policy.load(Ordering::SeqCst));
        }
    }

    /// On the thread, as its work ends (or unwinds): its policy back, then `DONE`. While the
    /// owner restores it, the thread stays alive.
    fn finish(&self) {
        self.restore_self(DONE);
        while self
            .state
            .compare_exchange(NORMAL, DONE, Ordering::SeqCst, Ordering::SeqCst)
            .is_err_and(|state| state != DONE)
        {
            std::thread::yield_now();
        }
    }

    /// On the owner: the work is wanted now; an idle thread gets its policy back.
    fn want(&self) {
        self.wanted.store(true, Ordering::SeqCst);
        if self.state.compare_exchange(IDLE, RESTORING, Ordering::SeqCst, Ordering::SeqCst).is_ok()
        {
            // The thread waits in `finish` while the state is RESTORING: its id is its own.
            let thread_id = self.thread_id.load(Ordering::SeqCst);
            idle_policy::leave(thread_id, self.own_policy.load(Ordering::SeqCst));
            self.state.store(NORMAL, Ordering::SeqCst);
        }
    }
}

/// Calls [`Signals::finish`] when the work returns or unwinds.
struct Finish(Arc<Signals>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.finish();
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
            let finish = Finish(shared);
            finish.0.go_idle();
            work(&finish.0)
        })?;
        Ok(Ahead { thread: Some(thread), signals })
    }
}

impl<T> Ahead<T> {
    /// The work's result, once done; its thread runs under its own policy from now on.
    /// `None` if the work panicked.
    pub fn wait(mut self) -> Option<T> {
        self.join()
    }

    fn join(&mut self) -> Option<T> {
        let thread = self.thread.take()?;
        self.signals.want();
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
    /// Puts the calling thread under `SCHED_IDLE`: its kernel id and the policy it had, or
    /// `None` where it could not be given back, or the kernel refused.
    pub fn enter() -> Option<(i32, i32)> {
        // SAFETY: pid 0 names the calling thread.
        let own = unsafe { libc::sched_getscheduler(0) };
        if !matches!(own, libc::SCHED_OTHER | libc::SCHED_BATCH) || !may_leave() {
            return None;
        }
        // SAFETY: gettid has no preconditions.
        let thread_id = unsafe { libc::gettid() };
        set(0, libc::SCHED_IDLE).then_some((thread_id, own))
    }

    /// Gives thread `thread_id` (0: the calling one), which is alive, `policy` back.
    pub fn leave(thread_id: i32, policy: i32) {
        if !set(thread_id, policy) {
            let error = std::io::Error::last_os_error();
            tracing::warn!(%error, "a thread working ahead stays at idle priority");
        }
    }

    fn set(thread_id: i32, policy: i32) -> bool {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `thread_id` is 0 or a live thread of this process; `param` is valid.
        unsafe { libc::sched_setscheduler(thread_id, policy, &param) == 0 }
    }

    /// Whether this process may give a thread under `SCHED_IDLE` its policy back (see
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
        let uid_map = std::fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
        let capabilities =
            if is_initial_namespace(&uid_map) { effective_capabilities(&status) } else { 0 };
        permits_leaving(nice_limit, nice, capabilities)
    }

    /// Whether `/proc/self/uid_map` is the initial user namespace's, where the capabilities
    /// `/proc/self/status` shows are the ones the scheduler checks.
    pub(super) fn is_initial_namespace(uid_map: &str) -> bool {
        let fields: Vec<&str> = uid_map.split_whitespace().collect();
        fields == ["0", "0", "4294967295"]
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
    pub fn enter() -> Option<(i32, i32)> {
        None
    }

    pub fn leave(_thread_id: i32, _policy: i32) {}
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
        use idle_policy::{effective_capabilities, is_initial_namespace, permits_leaving};
        let status = "Name:\tfleet\nCapPrm:\t0000000000000000\nCapEff:\t0000000000800000\n";
        assert_eq!(effective_capabilities(status), 1 << 23);
        assert_eq!(effective_capabilities("Name:\tfleet\n"), 0);
        assert!(is_initial_namespace("         0          0 4294967295\n"));
        assert!(!is_initial_namespace("         0       1000          1\n"), "rootless");
        assert!(permits_leaving(0, 0, 1 << 23), "CAP_SYS_NICE");
        assert!(permits_leaving(20, 0, 0), "RLIMIT_NICE allows nice 0");
        assert!(!permits_leaving(20, -5, 0), "RLIMIT_NICE does not allow nice -5");
        assert!(permits_leaving(1, 19, 0), "RLIMIT_NICE allows nice 19");
        assert!(permits_leaving(u64::MAX, -20, 0), "no RLIMIT_NICE");
        assert!(!permits_leaving(0, 0, 0), "an ordinary user");
        assert!(!permits_leaving(19, 0, !(1 << 23)), "every capability but CAP_SYS_NICE");
    }

    /// The calling thread's scheduling policy.
    #[cfg(target_os = "linux")]
    fn policy() -> i32 {
        // SAFETY: sched_getscheduler(0) only reads the calling thread's policy.
        unsafe { libc::sched_getscheduler(0) }
    }

    /// The thread runs under the idle policy (where the process may leave it) until it is
    /// waited for, then under its own one: it reports its policy before, and after the wait
    /// began.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_is_idle_until_waited_for() {
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
        if !idle {
            eprintln!("this process may not leave SCHED_IDLE: the thread is never idle");
        }
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

    /// Waiting for work that has already ended changes no thread's policy: not the waiter's
    /// (a thread under `SCHED_BATCH` stays there), and the worker gave its own back.
    #[cfg(target_os = "linux")]
    #[test]
    fn waiting_for_ended_work_leaves_the_waiter_as_it_was() {
        let waiter = std::thread::spawn(|| {
            let param = libc::sched_param { sched_priority: 0 };
            // SAFETY: pid 0 names this thread; `param` is valid. Lowering is always allowed.
            assert_eq!(unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) }, 0);
            let ahead = Ahead::start(|_: &Signals| {
                // SAFETY: gettid has no preconditions.
                let id = unsafe { libc::gettid() };
                (id, policy())
            })
            .unwrap();
            // The worker inherits SCHED_BATCH, goes idle where allowed, and ends: wait until
            // the kernel no longer knows its thread.
            let signals = Arc::clone(&ahead.signals);
            while signals.state.load(Ordering::SeqCst) != DONE {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let id = signals.thread_id.load(Ordering::SeqCst);
            let task = format!("/proc/self/task/{id}");
            while id != 0 && std::path::Path::new(&task).exists() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let (_, worker_policy) = ahead.wait().unwrap();
            assert_eq!(policy(), libc::SCHED_BATCH, "the waiter's policy");
            worker_policy
        });
        let worker_policy = waiter.join().unwrap();
        let idle = idle_policy::may_leave();
        assert_eq!(worker_policy, if idle { libc::SCHED_IDLE } else { libc::SCHED_BATCH });
    }
}
