//! `fleet bench sync`: whole-process `fleet sync` sending and receiving many ops through a
//! bare git remote on this machine, and the journal's bytes per op in the remote.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{BenchError, Progress, io_error, mark, table, thousands};
use crate::model::Issue;
use crate::store::Store;
use crate::time::Clock;

/// The goal for receiving 10k ops (whole process).
const RECEIVE_GOAL: Duration = Duration::from_secs(1);

pub struct SyncConfig {
    pub binary: PathBuf,
    pub ops: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SyncReport {
    pub ops: usize,
    pub send_secs: f64,
    pub receive_secs: f64,
    pub receive_goal_secs: f64,
    /// Bytes of the remote's objects divided by the ops in it.
    pub remote_bytes_per_op: f64,
    pub profile: &'static str,
}

impl SyncReport {
    pub fn render(&self) -> String {
        let mut t = table(vec!["measure", "value", "goal", ""]);
        let ops = thousands(self.ops as f64);
        t.add_row(vec![
            format!("send {ops} ops (fleet sync)"),
            secs(self.send_secs),
            "-".into(),
            String::new(),
        ]);
        t.add_row(vec![
            format!("receive {ops} ops (fleet sync)"),
            secs(self.receive_secs),
            format!("≤ {}", secs(self.receive_goal_secs)),
            mark(self.receive_secs <= self.receive_goal_secs).to_string(),
        ]);
        t.add_row(vec![
            "journal bytes per op (remote)".into(),
            format!("{:.1}", self.remote_bytes_per_op),
            "-".into(),
            String::new(),
        ]);
        format!("{t}\n{} build", self.profile)
    }
}

fn secs(value: f64) -> String {
    format!("{value:.3} s")
}

/// Runs the benchmark in a temporary directory.
pub fn run(config: &SyncConfig, progress: Progress<'_>) -> Result<SyncReport, BenchError> {
    let dir = super::workspace::ScratchDir::create("sync")?;
    let remote = dir.subdir("remote.git")?;
    let (a, b) = (dir.subdir("a")?, dir.subdir("b")?);
    run_ok(Command::new("git").args(["init", "-q", "--bare"]).arg(&remote))?;
    for home in [&a, &b] {
        fleet(config, home, &["init", "-q", "--prefix", "b"])?;
        fleet(config, home, &["remote", "add", "origin", &remote.display().to_string()])?;
    }
    progress(&format!("making {} ops on machine a", config.ops));
    make_ops(&a.join(".beads"), config.ops)?;
    progress("a: fleet sync (commit + push)");
    let send = timed(|| fleet(config, &a, &["sync", "-q"]))?;
    progress("b: fleet sync (fetch + merge)");
    let receive = timed(|| fleet(config, &b, &["sync", "-q"]))?;
    let bytes = dir_bytes(&remote.join("objects"));
    Ok(SyncReport {
        ops: config.ops,
        send_secs: send.as_secs_f64(),
        receive_secs: receive.as_secs_f64(),
        receive_goal_secs: RECEIVE_GOAL.as_secs_f64() * config.ops as f64 / 10_000.0,
        remote_bytes_per_op: bytes as f64 / config.ops.max(1) as f64,
        profile: if cfg!(debug_assertions) { "debug" } else { "release" },
    })
}

/// `ops` creates, one op each, in one transaction.
fn make_ops(dir: &Path, ops: usize) -> Result<(), BenchError> {
    let store = Store::open(dir)?;
    let now = jiff::Timestamp::now();
    store.write("bench", Clock::System, |w| {
        for n in 0..ops {
            let mut issue = Issue::new(format!("b-{n}"), format!("benchmark issue {n}"), now);
            issue.description = format!("generated for fleet bench sync, number {n}");
            crate::tracker::import_new(w, issue, Vec::new())?;
        }
        Ok(())
    })?;
    Ok(())
}

fn timed(body: impl FnOnce() -> Result<(), BenchError>) -> Result<Duration, BenchError> {
    let started = Instant::now();
    body()?;
    Ok(started.elapsed())
}

fn fleet(config: &SyncConfig, home: &Path, args: &[&str]) -> Result<(), BenchError> {
    let mut command = Command::new(&config.binary);
    command.env("FLEET_HOME", home).env_remove("BEADS_DIR").args(args);
    run_ok(&mut command)
}

fn run_ok(command: &mut Command) -> Result<(), BenchError> {
    let output = command.output().map_err(io_error(format!("running {command:?}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(BenchError::Failed(format!(
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => dir_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
