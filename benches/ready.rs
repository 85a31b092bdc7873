//! `cargo bench --bench ready`: whole-process wall time of `fleet ready` on a generated
//! 100k-issue graph against the SQLite baseline, as `fleet bench ready` measures it, spawning
//! the `fleet` binary Cargo built for this run.
//!
//! `FLEET_BENCH_ISSUES=N` and `FLEET_BENCH_RUNS=N` resize the run. Run without `--bench` (as
//! `cargo test --benches` does) it only checks that the benchmark works, on a tiny graph.

mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use fleet::bench::{ReadyConfig, ready};

fn main() -> ExitCode {
    let mut config = ReadyConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_fleet")));
    if common::benchmarking() {
        config.issues = common::env_size("FLEET_BENCH_ISSUES").unwrap_or(config.issues);
        config.runs = common::env_size("FLEET_BENCH_RUNS").unwrap_or(config.runs);
    } else {
        config.issues = 200;
        config.runs = 2;
    }
    common::finish(ready::run(&config, &mut |note| eprintln!("{note}")), |report| report.render())
}
