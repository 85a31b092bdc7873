//! The `fleet` binary: parse, dispatch, exit. Everything else is in the library.

/// mimalloc instead of the system allocator: an import makes and frees millions of small
/// strings, and glibc's malloc spends a large share of its time on them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let code = fleet::cli::run(std::env::args_os());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
