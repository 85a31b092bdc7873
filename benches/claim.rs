//! `cargo bench --bench claim`: durable claims per second against the SQLite baseline, as
//! `fleet bench claim` measures them, spawning the `fleet` binary Cargo built for this run.
//!
//! `FLEET_BENCH_ISSUES=N` and `FLEET_BENCH_PROCESSES=N` resize the run. Run without `--bench`
//! (as `cargo test --benches` does) it only checks that the benchmark works, on a tiny queue.

mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use fleet::bench::{ClaimConfig, claim};

fn main() -> ExitCode {
    let mut config = ClaimConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_fleet")));
    if common::benchmarking() {
        config.issues = common::env_size("FLEET_BENCH_ISSUES").unwrap_or(config.issues);
        config.claimers = common::env_size("FLEET_BENCH_PROCESSES").unwrap_or(config.claimers);
    } else {
        config.issues = 20;
        config.claimers = 2;
    }
    common::finish(claim::run(&config, &mut |note| eprintln!("{note}")), |report| report.render())
}
