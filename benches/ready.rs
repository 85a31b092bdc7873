//! `cargo bench --bench ready`: whole-process wall time of `fleet ready` on a generated
//! 100k-issue graph against the SQLite baseline, as `fleet bench ready` measures it, spawning
//! the `fleet` binary Cargo built for this run.
//!
//! `FLEET_BENCH_ISSUES=N` and `FLEET_BENCH_RUNS=N` resize the run. Run without `--bench` (as
//! `cargo test --benches` does) it only checks that the benchmark works, on a tiny graph.

use std::path::PathBuf;
use std::process::ExitCode;

use fleet::bench::{ReadyConfig, ready};

fn env_size(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.parse().ok().filter(|&n| n > 0)
}

fn main() -> ExitCode {
    let mut config = ReadyConfig::new(PathBuf::from(env!("CARGO_BIN_EXE_fleet")));
    if std::env::args().any(|arg| arg == "--bench") {
        config.issues = env_size("FLEET_BENCH_ISSUES").unwrap_or(config.issues);
        config.runs = env_size("FLEET_BENCH_RUNS").unwrap_or(config.runs);
    } else {
        config.issues = 200;
        config.runs = 2;
    }
    match ready::run(&config, &mut |note| eprintln!("{note}")) {
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
