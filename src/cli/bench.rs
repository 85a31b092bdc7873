//! `fleet bench`: claim throughput, ready latency and import time against a SQLite baseline, and the
//! supervisor's responsiveness and overhead, printed as tables (the measuring is in `crate::bench`). The hidden `worker` subcommand is the process
//! the benchmarks spawn to claim or list ready work.

use std::path::PathBuf;

use super::context::Context;
use super::error::CliError;
use crate::bench::{
    self, BenchError, ClaimConfig, Engine, ReadQuery, ReadyConfig, Shape, WorkerMode,
};

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Durable claims per second against a SQLite baseline: a process per claim, processes
    /// claiming in a loop, and threads of one process.
    Claim(ClaimArgs),
    /// Whole-process wall time of `fleet ready` on a large generated graph, against a SQLite
    /// baseline.
    Ready(ReadyArgs),
    /// Whole-process wall time and peak memory of `fleet import` of a generated beads JSONL
    /// file (about two edges per issue) into a fresh workspace, against a SQLite import of the
    /// same file.
    Import(ImportArgs),
    /// The supervisor: create → agent started latency, and memory and CPU with many agents
    /// running.
    Supervisor(SupervisorArgs),
    /// Whole-process `fleet sync` sending and receiving many ops through a local bare remote,
    /// and the journal's bytes per op.
    Sync(SyncBenchArgs),
    /// A merge of a few ops arriving out of order into a store of many records: by rewinding
    /// the undo log, against making the state again from every op.
    Merge(MergeBenchArgs),
    /// Landing work through one merge lane: merges per minute with a check of a given
    /// length, close → base moved, worktree creation time and disk per worktree, in a
    /// generated repository.
    Landing(LandingBenchArgs),
    /// One claimer or reader of a benchmark (spawned by `fleet bench`).
    #[command(hide = true)]
    Worker(WorkerArgs),
}

#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// Issues in each workspace; every one of them gets claimed.
    #[arg(long, default_value_t = ClaimConfig::DEFAULT_ISSUES)]
    pub issues: usize,
    /// Concurrent claimers: processes, or threads in the threads shape.
    #[arg(long, default_value_t = ClaimConfig::DEFAULT_CLAIMERS)]
    pub processes: usize,
    /// Shapes to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Shape::ALL)]
    pub shapes: Vec<Shape>,
}

#[derive(Debug, clap::Args)]
pub struct LandingBenchArgs {
    /// Files in the generated repository.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// Tasks landed through the lane in each run with the short check.
    #[arg(long, default_value_t = 12)]
    pub entries: usize,
    /// Seconds the short check takes (`sleep N`).
    #[arg(long, default_value_t = 1)]
    pub check_secs: u64,
    /// Tasks landed in each run with the slow check (0: no slow runs).
    #[arg(long, default_value_t = 4)]
    pub slow_entries: usize,
    /// Seconds the slow check takes.
    #[arg(long, default_value_t = 30)]
    pub slow_check_secs: u64,
    /// `merge.batch` of the batched runs (each check runs with batch 1 and with this).
    #[arg(long, default_value_t = 4)]
    pub batch: usize,
}

#[derive(Debug, clap::Args)]
pub struct ReadyArgs {
    /// Issues in the generated graph (with about twice as many edges).
    #[arg(long, default_value_t = ReadyConfig::DEFAULT_ISSUES)]
    pub issues: usize,
    /// Timed runs of each command.
    #[arg(long, default_value_t = ReadyConfig::DEFAULT_RUNS)]
    pub runs: usize,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Issues in the generated file (with about twice as many edges).
    #[arg(long, default_value_t = bench::ImportConfig::DEFAULT_ISSUES)]
    pub issues: usize,
    /// Timed imports of each engine; the best counts.
    #[arg(long, default_value_t = bench::ImportConfig::DEFAULT_RUNS)]
    pub runs: usize,
}

#[derive(Debug, clap::Args)]
pub struct SupervisorArgs {
    /// Timed create → agent started samples.
    #[arg(long, default_value_t = 30)]
    pub samples: usize,
    /// Numbers of busy agents at which memory and CPU are measured (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [64, 256])]
    pub agents: Vec<usize>,
    /// Lines each busy agent prints a second.
    #[arg(long, default_value_t = 10)]
    pub lines_per_sec: u32,
    /// Seconds of the memory and CPU window.
    #[arg(long, default_value_t = 10)]
    pub window: u64,
    /// Seconds the agents run before the window opens (their start-up is not steady cost).
    #[arg(long, default_value_t = 5)]
    pub settle: u64,
}

#[derive(Debug, clap::Args)]
pub struct SyncBenchArgs {
    /// Ops made on one machine, sent by its sync and received by the other's.
    #[arg(long, default_value_t = 10_000)]
    pub ops: usize,
}

#[derive(Debug, clap::Args)]
pub struct MergeBenchArgs {
    /// Issues in the store, made one op each.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Edits made here after the other replica's edits (how far back the merge places them).
    #[arg(long, default_value_t = 100)]
    pub behind: usize,
    /// The other replica's edits merged.
    #[arg(long, default_value_t = 10)]
    pub batch: usize,
    /// Timed rounds of each merge, on fresh copies of the store.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long, value_enum)]
    pub engine: Engine,
    /// Claim until nothing is left (default: claim once).
    #[arg(long = "loop", conflicts_with = "ready")]
    pub repeat: bool,
    /// List ready work instead of claiming.
    #[arg(long)]
    pub ready: bool,
    /// Run this read query instead of claiming (the baseline of `fleet bench ready`).
    #[arg(long, value_enum, conflicts_with_all = ["repeat", "ready"])]
    pub query: Option<ReadQuery>,
    /// Print the ids of ready work, one a line.
    #[arg(long, conflicts_with_all = ["ready", "repeat"])]
    pub ready_ids: bool,
    /// Claim this issue.
    #[arg(long, value_name = "ID", conflicts_with_all = ["ready", "repeat", "ready_ids"])]
    pub claim_id: Option<String>,
    /// Close this issue.
    #[arg(long, value_name = "ID", conflicts_with_all = ["ready", "repeat", "ready_ids", "claim_id"])]
    pub close_id: Option<String>,
    /// Import this beads JSONL file into a new SQLite baseline in the workspace directory
    /// (engine sqlite only).
    #[arg(long, conflicts_with_all = ["ready", "repeat", "ready_ids", "claim_id", "close_id"])]
    pub import: Option<PathBuf>,
}

impl From<BenchError> for CliError {
    fn from(error: BenchError) -> CliError {
        match error {
            BenchError::Store(error) => error.into(),
            other => CliError::new(other.to_string()),
        }
    }
}

pub fn cmd_bench(ctx: &Context, command: BenchCommand) -> Result<(), CliError> {
    match command {
        BenchCommand::Claim(args) => cmd_bench_claim(ctx, args),
        BenchCommand::Ready(args) => cmd_bench_ready(ctx, args),
        BenchCommand::Import(args) => cmd_bench_import(ctx, args),
        BenchCommand::Supervisor(args) => cmd_bench_supervisor(ctx, args),
        BenchCommand::Sync(args) => cmd_bench_sync(ctx, args),
        BenchCommand::Merge(args) => cmd_bench_merge(ctx, args),
        BenchCommand::Landing(args) => cmd_bench_landing(ctx, args),
        BenchCommand::Worker(args) => cmd_bench_worker(ctx, args),
    }
}

fn cmd_bench_merge(ctx: &Context, args: MergeBenchArgs) -> Result<(), CliError> {
    let config = bench::merge::MergeConfig {
        records: at_least_one("records", args.records)?,
        behind: at_least_one("behind", args.behind)?,
        batch: at_least_one("batch", args.batch)?,
        rounds: at_least_one("rounds", args.rounds)?,
    };
    if config.behind > config.records || config.batch > config.records {
        return Err(CliError::usage(
            "--behind and --batch edit existing issues: at most --records",
        )
        .with_hint("fleet bench merge --records 100000 --behind 100 --batch 10"));
    }
    let report = bench::merge::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_landing(ctx: &Context, args: LandingBenchArgs) -> Result<(), CliError> {
    use bench::landing::LaneRunConfig;
    let entries = at_least_one("entries", args.entries)?;
    let batch = at_least_one("batch", args.batch)?;
    let mut runs = Vec::new();
    let mut add = |check_secs: u64, entries: usize| {
        runs.push(LaneRunConfig { check_secs, batch: 1, entries });
        if batch > 1 {
            runs.push(LaneRunConfig { check_secs, batch, entries });
        }
    };
    add(args.check_secs, entries);
    if args.slow_entries > 0 {
        add(args.slow_check_secs, args.slow_entries);
    }
    let config = bench::landing::LandingConfig { files: at_least_one("files", args.files)?, runs };
    let report = bench::landing::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_sync(ctx: &Context, args: SyncBenchArgs) -> Result<(), CliError> {
    let config =
        bench::sync::SyncConfig { binary: fleet_binary()?, ops: at_least_one("ops", args.ops)? };
    let report = bench::sync::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

/// The binary the benchmarks spawn: this one.
fn fleet_binary() -> Result<PathBuf, CliError> {
    std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot find the fleet binary to spawn: {e}")))
}

fn at_least_one(flag: &str, value: usize) -> Result<usize, CliError> {
    if value == 0 {
        return Err(CliError::new(format!("--{flag} must be at least 1")));
    }
    Ok(value)
}

fn cmd_bench_claim(ctx: &Context, args: ClaimArgs) -> Result<(), CliError> {
    let config = ClaimConfig {
        binary: fleet_binary()?,
        issues: at_least_one("issues", args.issues)?,
        claimers: at_least_one("processes", args.processes)?,
        shapes: args.shapes,
    };
    let report = bench::claim::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_ready(ctx: &Context, args: ReadyArgs) -> Result<(), CliError> {
    let config = ReadyConfig {
        binary: fleet_binary()?,
        issues: at_least_one("issues", args.issues)?,
        runs: at_least_one("runs", args.runs)?,
    };
    let report = bench::ready::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_import(ctx: &Context, args: ImportArgs) -> Result<(), CliError> {
    let config = bench::ImportConfig {
        binary: fleet_binary()?,
        issues: at_least_one("issues", args.issues)?,
        runs: at_least_one("runs", args.runs)?,
    };
    let report = bench::import::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_supervisor(ctx: &Context, args: SupervisorArgs) -> Result<(), CliError> {
    let config = bench::SupervisorConfig {
        binary: fleet_binary()?,
        samples: at_least_one("samples", args.samples)?,
        agents: {
            let mut sizes = args.agents.clone();
            sizes.sort_unstable();
            sizes.dedup();
            if sizes.first() == Some(&0) || sizes.is_empty() {
                return Err(CliError::new("--agents must name at least one number above 0"));
            }
            sizes
        },
        lines_per_sec: at_least_one("lines-per-sec", args.lines_per_sec as usize)? as u32,
        window: std::time::Duration::from_secs(args.window.max(1)),
        settle: std::time::Duration::from_secs(args.settle),
    };
    let report = bench::supervisor::run(&config, &mut |note| ctx.out.note(note))?;
    ctx.out.emit(&report, || report.render());
    Ok(())
}

fn cmd_bench_worker(ctx: &Context, args: WorkerArgs) -> Result<(), CliError> {
    if let Some(file) = &args.import {
        if args.engine != Engine::Sqlite {
            return Err(CliError::new("--import is the SQLite baseline's; pass --engine sqlite")
                .with_hint("fleet's own import is `fleet import FILE`"));
        }
        let issues = bench::import::sqlite_import(ctx.workspace_dir()?, file)?;
        ctx.out.emit(&issues, || format!("imported {issues} issues"));
        return Ok(());
    }
    let mode = if let Some(id) = &args.claim_id {
        WorkerMode::Claim(id)
    } else if let Some(id) = &args.close_id {
        WorkerMode::Close(id)
    } else if args.ready_ids {
        WorkerMode::ReadyIds
    } else if let Some(query) = args.query {
        WorkerMode::Read(query)
    } else if args.ready {
        WorkerMode::Read(ReadQuery::Ready)
    } else if args.repeat {
        WorkerMode::Loop
    } else {
        WorkerMode::Once
    };
    let lines = bench::run_worker(args.engine, ctx.workspace_dir()?, ctx.actor(), mode)?;
    ctx.out.emit(&lines, || lines.join("\n"));
    Ok(())
}
