//! Benchmarks behind `fleet bench` and `benches/`: claim throughput and ready latency, each
//! measured in the same run against a SQLite baseline doing the same work.
//!
//! - `claim`: durable claims per second in three shapes (a process per claim, long-lived
//!   claiming processes, threads of one process) and the audit of the final state that counts
//!   double claims;
//! - `ready`: a generated dependency graph and the whole-process wall time of `fleet ready`;
//! - `import`: whole-process wall time and peak memory of `fleet import` of a generated beads
//!   JSONL file, against a SQLite import of the same file;
//! - `supervisor`: create → agent started latency of `fleet run`, and its memory and CPU with
//!   many agents running;
//! - `merge`: a merge of ops arriving out of order into a store of many records, by rewinding
//!   the undo log against making the state again from every op;
//! - `sqlite`: the baseline's schema, its claim and its ready query;
//! - `worker`: what the hidden `fleet bench worker` processes do;
//! - `workspace`: scratch directories and fleet stores filled in one transaction.
//!
//! Benchmarks spawn the real `fleet` binary, whose path the caller passes in (the CLI its own
//! executable, `benches/` Cargo's `CARGO_BIN_EXE_fleet`). The library measures and returns
//! reports, which render themselves as tables; it never prints.

pub mod claim;
mod claims;
mod cycle;
pub mod import;
pub mod landing;
pub mod merge;
pub mod ready;
mod serving;
mod sqlite;
pub mod supervisor;
pub mod sync;
mod worker;
mod workspace;

use std::time::Duration;

use serde::Serialize;

pub use claim::{ClaimConfig, ClaimReport, Shape};
pub use import::{ImportConfig, ImportReport};
pub use ready::{ReadyConfig, ReadyReport};
pub use supervisor::{SupervisorConfig, SupervisorReport};
pub use worker::{Engine, ReadQuery, WorkerMode, run_worker};

use crate::store::StoreError;

/// Errors of a benchmark run, naming what was being done.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("sqlite baseline: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("{0}")]
    Failed(String),
}

fn io_error(context: String) -> impl FnOnce(std::io::Error) -> BenchError {
    move |source| BenchError::Io { context, source }
}

/// Receives progress notes for people while a benchmark runs (the CLI prints them on stderr).
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// Events per second, 0 when no time passed.
fn per_second(count: usize, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 { count as f64 / seconds } else { 0.0 }
}

/// `12,345`: a whole number with thousands separators.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (n, digit) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `✓` or `✗`: whether a goal was met.
fn mark(met: bool) -> &'static str {
    if met { "✓" } else { "✗" }
}

/// A table in the style every benchmark report uses.
fn table(header: Vec<&str>) -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(header);
    table
}

/// How a report was measured, for the line above its table.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
}

impl Machine {
    fn this() -> Machine {
        Machine { cores: std::thread::available_parallelism().map_or(1, usize::from) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1234.0), "1,234");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
    }

    #[test]
    fn rate_of_no_time_is_zero() {
        assert_eq!(per_second(10, Duration::ZERO), 0.0);
        assert_eq!(per_second(10, Duration::from_millis(500)), 20.0);
    }
}
