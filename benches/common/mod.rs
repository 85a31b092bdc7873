//! What the `fleet bench` wrappers among the benchmarks share: reading a size from the
//! environment, telling a real `--bench` run from `cargo test --benches`, and printing the
//! report (or the error) with the matching exit code.

use std::fmt::Display;
use std::process::ExitCode;

/// Whether Cargo runs this as a benchmark (`cargo bench`), not as a quick check.
pub fn benchmarking() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// The positive number in the variable `name`, if it holds one.
pub fn env_size(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok().filter(|&n| n > 0)
}

/// Prints the report `render` makes of a successful run, or the error.
pub fn finish<R, E: Display>(result: Result<R, E>, render: impl FnOnce(&R) -> String) -> ExitCode {
    match result {
        Ok(report) => {
            println!("{}", render(&report));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
