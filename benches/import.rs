//! `cargo bench --bench import`: whole-process wall time and peak memory of `fleet import` of a
//! generated 100k-issue beads JSONL file (about 200k edges) into a fresh workspace, against a
//! SQLite import of the same file, as `fleet bench import` measures it, spawning the `fleet`
//! binary Cargo built for this run. Goal: 100k issues in at most 2 s.
//!
//! `FLEET_BENCH_ISSUES=N` and `FLEET_BENCH_RUNS=N` resize the run; `FLEET_BENCH_WRITE=FILE`
//! only writes the generated file (for profiling an import by hand). Run without `--bench` (as
//! `cargo test --benches` does) it only checks that the benchmark works, on a small file.

mod common;

use std::path::PathBuf;
use std::process::ExitCode;

use fleet::bench::{ImportConfig, import};

fn main() -> ExitCode {
    let mut config = ImportConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_fleet")));
    if common::benchmarking() {
        config.issues = common::env_size("FLEET_BENCH_ISSUES").unwrap_or(config.issues);
        config.runs = common::env_size("FLEET_BENCH_RUNS").unwrap_or(config.runs);
    } else {
        config.issues = 500;
        config.runs = 1;
    }
    if let Ok(path) = std::env::var("FLEET_BENCH_WRITE") {
        let generated = import::generate(config.issues);
        return match std::fs::write(&path, &generated.text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: writing {path}: {error}");
                ExitCode::FAILURE
            }
        };
    }
    common::finish(import::run(&config, &mut |note| eprintln!("{note}")), |report| report.render())
}
