//! A guard against panics of the database engine on a damaged file.
//!
//! redb trusts the pages it reads. A page overwritten with zeros or garbage can reach an
//! `unreachable!()` in its B-tree code instead of an error: with 64 zeroed bytes at offset
//! 4096, opening the file for writing panics in `Btree::get_helper`. That is a defect of the
//! dependency, not something fleet uses for control flow. Every entry point of [`super::Store`]
//! that reaches redb runs its work through [`guarded`], which turns such a panic into
//! [`StoreError::Damaged`] naming the file and the fix, so no fleet process dies with exit
//! code 101 over a damaged store.
//!
//! Only panics raised inside redb's own source are caught this way (the panic hook looks at
//! the panic's location): a panic of fleet's code inside a transaction body is a bug of fleet
//! and goes on unwinding as before, printed as usual. An engine panic is logged at debug
//! instead of printed, since the error that replaces it says what happened.
//!
//! A path that reads through a view outside [`guarded`] (on a thread that did not carry the
//! guard, say) is covered by the net of [`command`], which a whole CLI command runs inside:
//! while it runs, an engine panic on any thread of the process is quiet, and one that reaches
//! the command's thread ends the command as a damaged store ([`note_store`] names the file).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

use super::StoreError;

thread_local! {
    /// How many [`guarded`] calls this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The last panic on this thread inside a guard came from the database engine.
    static ENGINE_PANIC: Cell<bool> = const { Cell::new(false) };
}

static HOOK: Once = Once::new();

/// A whole command runs inside [`command`]: engine panics on every thread are quiet.
static COMMAND: AtomicBool = AtomicBool::new(false);
/// An engine panic happened on some thread of the process since [`command`] began.
static ENGINE_PANICKED: AtomicBool = AtomicBool::new(false);
/// The store file this process opened last, for the error of [`command`].
static STORE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Where redb's source lives in a panic location (`…/redb-4.6.0/src/…`).
fn is_engine_location(file: &str) -> bool {
    file.contains("/redb-") || file.contains("\\redb-")
}

/// Installs, once per process, a panic hook that keeps engine panics inside a guard quiet and
/// leaves every other panic to the hook that was there before.
fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let guarded = DEPTH.with(Cell::get) > 0 || COMMAND.load(Ordering::Relaxed);
            let engine = info.location().is_some_and(|at| is_engine_location(at.file()));
            if guarded && engine {
                ENGINE_PANIC.with(|flag| flag.set(true));
                ENGINE_PANICKED.store(true, Ordering::Relaxed);
                tracing::debug!("the database engine panicked on a damaged file: {info}");
            } else {
                previous(info);
            }
        }));
    });
}

/// Runs `work`, which uses the store file at `path`; a panic of the database engine inside it
/// becomes [`StoreError::Damaged`]. Any other panic goes on unwinding.
pub(crate) fn guarded<R>(
    path: &Path,
    work: impl FnOnce() -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    match inside_guard(work) {
        Ok(result) => result,
        Err(engine_panic) => Err(StoreError::Damaged {
            path: path.to_path_buf(),
            detail: format!("the database engine failed on it ({engine_panic})"),
        }),
    }
}

/// Runs `work` inside a guard on this thread: its value, or the message of an engine panic
/// in it (raised here, or carried from a worker thread it joined). Any other panic goes on
/// unwinding.
fn inside_guard<R>(work: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    DEPTH.with(|depth| depth.set(depth.get() + 1));
    ENGINE_PANIC.with(|flag| flag.set(false));
    // The work's state is abandoned whole on a panic (the transaction is dropped, nothing is
    // committed), so nothing observes it half-changed: asserting unwind safety is sound.
    let result = catch_unwind(AssertUnwindSafe(work));
    DEPTH.with(|depth| depth.set(depth.get() - 1));
    match result {
        Ok(value) => Ok(value),
        Err(payload)
            if ENGINE_PANIC.with(Cell::get)
                || payload.is::<EnginePanic>()
                || (DEPTH.with(Cell::get) == 0 && ENGINE_PANICKED.load(Ordering::Relaxed)) =>
        {
            Err(panic_text(&*payload).to_string())
        }
        Err(payload) => resume_unwind(payload),
    }
}

/// Notes `path` as the store file this process uses, for the error of [`command`].
pub(crate) fn note_store(path: &Path) {
    *STORE.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(path.to_path_buf());
}

/// Runs `work`, a whole command, inside the net described in the module docs: its value, or,
/// when an engine panic (on any thread) unwound into it, [`StoreError::Damaged`] naming the
/// store file last opened. Any other panic goes on unwinding.
pub fn command<R>(work: impl FnOnce() -> R) -> Result<R, StoreError> {
    install_hook();
    COMMAND.store(true, Ordering::Relaxed);
    let result = inside_guard(work);
    let caught = match result {
        Ok(value) => return Ok(value),
        Err(engine_panic) => engine_panic,
    };
    let path = STORE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    Err(StoreError::Damaged {
        path: path.unwrap_or_else(|| PathBuf::from(crate::workspace::STORE_FILE)),
        detail: format!("the database engine failed on it ({caught})"),
    })
}

/// The payload a worker thread's engine panic travels on to the thread that joins it.
struct EnginePanic(String);

/// Whether the thread that starts a worker thread is inside a guard, carried into the worker
/// ([`carry`], then [`Carried::run`] there).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Carried {
    guarded: bool,
}

/// The guard of this thread, to carry into a worker thread it starts.
pub(crate) fn carry() -> Carried {
    Carried { guarded: DEPTH.with(Cell::get) > 0 }
}

impl Carried {
    /// Runs `work` on the worker thread so that, when the starting thread was guarded, an
    /// engine panic in it reaches [`guarded`], through the join, as the engine's: quiet, and
    /// turned into [`StoreError::Damaged`]. Other panics unwind as they are.
    pub(crate) fn run<R>(self, work: impl FnOnce() -> R) -> R {
        if !self.guarded {
            return work();
        }
        inside_guard(work)
            .unwrap_or_else(|engine_panic| resume_unwind(Box::new(EnginePanic(engine_panic))))
    }
}

/// The message of a panic payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .or_else(|| payload.downcast_ref::<EnginePanic>().map(|engine| engine.0.as_str()))
        .unwrap_or("a panic")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_panics_go_on_unwinding() {
        let caught =
            catch_unwind(|| guarded(Path::new("x.db"), || -> Result<(), _> { panic!("ours") }));
        assert!(caught.is_err());
    }

    /// Runs `work` on a worker thread that carries the guard it is started inside, joining it
    /// as the store's worker threads are joined.
    fn guarded_worker(work: fn()) -> Result<(), StoreError> {
        guarded(Path::new("x.db"), || {
            let carried = carry();
            std::thread::scope(|scope| {
                let worker = scope.spawn(move || carried.run(work));
                worker.join().unwrap_or_else(|panic| resume_unwind(panic));
            });
            Ok(())
        })
    }

    /// An engine panic on a worker thread of a guarded transaction is the engine's when the
    /// guarded thread joins it; any other panic of a worker unwinds as it is.
    #[test]
    fn engine_panics_of_workers_are_carried_to_the_guard() {
        let result = guarded_worker(|| {
            // What the hook records for a panic raised in the engine's source.
            ENGINE_PANIC.with(|flag| flag.set(true));
            panic!("an engine panic");
        });
        match result {
            Err(StoreError::Damaged { detail, .. }) => assert!(detail.contains("an engine panic")),
            other => panic!("not damage: {other:?}"),
        }
        assert!(catch_unwind(|| guarded_worker(|| panic!("ours"))).is_err());
    }

    #[test]
    fn engine_locations_are_recognised() {
        assert!(is_engine_location(
            "/root/.cargo/registry/src/x/redb-4.6.0/src/tree_store/btree.rs"
        ));
        assert!(!is_engine_location("src/store/mod.rs"));
    }
}
