//! `cargo bench --bench claim`: durable claims per second against the SQLite baseline, as
//! `fleet bench claim` measures them, spawning the `fleet` binary Cargo built for this run.
//!
//! `FLEET_BENCH_ISSUES=N` and `FLEET_BENCH_PROCESSES=N` resize the run. Run without `--bench`
//! (as `cargo test --benches` does) it only checks that the benchmark works, on a tiny queue.

use std::path::PathBuf;
use std::process::ExitCode;

use fleet::bench::{ClaimConfig, claim};

fn env_size(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok().filter(|&n| n > 0)
}

fn main() -> ExitCode {
    let mut config = ClaimConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_fleet")));
    if std::env::args().any(|arg| arg == "--bench") {
        config.issues = env_size("FLEET_BENCH_ISSUES").unwrap_or(config.issues);
        config.claimers = env_size("FLEET_BENCH_PROCESSES").unwrap_or(config.claimers);
    } else {
        config.issues = 20;
        config.claimers = 2;
    }
    match claim::run(&config, &mut |note| eprintln!("{note}")) {
        Ok(report) => {
            println!("{}", report.render());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
