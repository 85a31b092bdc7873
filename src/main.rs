//! The `fleet` binary: parse, dispatch, exit. Everything else is in the library.

/// mimalloc instead of the system allocator: an import makes and frees millions of small
/// strings, and glibc's malloc spends a large share of its time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (mimalloc.h, version 3).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // Freed memory is kept for reuse rather than handed back to the system: fleet's
    // processes are short, and purging made an import's threads wait on page faults (a
    // second of system time on a large import).
    // SAFETY: sets an option value; mimalloc reads options at any time, from any thread.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, -1) };
    let code = fleet::cli::run(std::env::args_os());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
