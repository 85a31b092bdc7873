//! Read latency: the whole-process wall time of the read commands agents and people run most
//! (`fleet ready`, `fleet ready --json`, `fleet list --json -n 50`, `fleet blocked --json`; the
//! real binary, default limits) over a large generated graph, each against a spawned SQLite
//! baseline running the equivalent query (`fleet bench worker --engine sqlite --query …`).
//!
//! The graph is generated deterministically: every issue after the first two gets one
//! `blocks` edge and one `parent-child` edge to two distinct earlier issues picked at random,
//! so edges run from higher index to lower and the graph is acyclic; priorities are mixed and
//! most issues are closed, as in a queue with some history. The same graph fills both engines,
//! each in one transaction, and before anything is timed the two ready lists are compared.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::sqlite::{self, Purpose};
use super::worker::ReadQuery;
use super::workspace::{PlannedIssue, ScratchDir, fill_fleet, fleet_store_dir};
use super::{BenchError, Machine, Progress, io_error, mark, per_second, table, thousands};
use crate::model::dep_type;

/// The timed commands: the label, `fleet`'s arguments, the baseline's query, and the goal for
/// fleet's median in milliseconds (none: reported only).
const COMMANDS: [(&str, &[&str], ReadQuery, Option<f64>); 6] = [
    ("fleet ready", &["ready"], ReadQuery::Ready, Some(5.0)),
    ("fleet ready --json", &["ready", "--json"], ReadQuery::ReadyJson, Some(5.0)),
    ("fleet list --json -n 50", &["list", "--json", "-n", "50"], ReadQuery::List, Some(10.0)),
    ("fleet blocked --json", &["blocked", "--json"], ReadQuery::Blocked, Some(10.0)),
    (
        "fleet search \"issue 4242\" --json",
        &["search", sqlite::SEARCH_TEXT, "--json"],
        ReadQuery::Search,
        None,
    ),
    ("bd count", &["bd", "count"], ReadQuery::Count, None),
];
/// Untimed runs of each engine before the timed ones, to warm the page cache.
const WARMUP_RUNS: usize = 3;
/// Share of generated issues that are closed, in percent.
const CLOSED_PERCENT: usize = 60;
/// Seed of the graph generator: the same graph on every run.
const SEED: u64 = 0x5eed_f1ee_7000_0001;

/// What to run.
#[derive(Debug, Clone)]
pub struct ReadyConfig {
    /// The `fleet` binary to spawn.
    pub binary: PathBuf,
    pub issues: usize,
    /// Timed runs of each engine.
    pub runs: usize,
}

impl ReadyConfig {
    pub const DEFAULT_ISSUES: usize = 100_000;
    pub const DEFAULT_RUNS: usize = 30;

    pub fn new(binary: PathBuf) -> ReadyConfig {
        ReadyConfig { binary, issues: Self::DEFAULT_ISSUES, runs: Self::DEFAULT_RUNS }
    }
}

/// Wall times of one engine's runs.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub runs: usize,
    pub median_ms: f64,
    pub p90_ms: f64,
    pub min_ms: f64,
}

impl Latency {
    /// Median, p90 and min of `times`.
    pub(super) fn of(mut times: Vec<Duration>) -> Latency {
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let n = times.len();
        if n == 0 {
            return Latency { runs: 0, median_ms: 0.0, p90_ms: 0.0, min_ms: 0.0 };
        }
        let median = if n % 2 == 1 {
            ms(times[n / 2])
        } else {
            (ms(times[n / 2 - 1]) + ms(times[n / 2])) / 2.0
        };
        let p90 = times[(n * 9).div_ceil(10).saturating_sub(1)];
        Latency { runs: n, median_ms: median, p90_ms: ms(p90), min_ms: ms(times[0]) }
    }
}

/// One timed command against its baseline.
#[derive(Debug, Clone, Serialize)]
pub struct CommandLatency {
    pub command: String,
    pub fleet: Latency,
    pub sqlite: Latency,
    /// The goal for fleet's median, if the command has one.
    pub goal_median_ms: Option<f64>,
    pub goal_met: bool,
}

/// The result of `fleet bench ready`.
#[derive(Debug, Clone, Serialize)]
pub struct ReadyReport {
    pub issues: usize,
    pub edges: usize,
    /// Issues ready in all (the commands list the first 100).
    pub ready_issues: usize,
    pub fleet_fill_secs: f64,
    pub sqlite_fill_secs: f64,
    /// Both engines list the same issues in the same order.
    pub same_list: bool,
    /// Every timed command, `fleet ready` first.
    pub commands: Vec<CommandLatency>,
    /// Every command met its goal.
    pub goal_met: bool,
    pub machine: Machine,
}

/// Runs the ready benchmark.
pub fn run(config: &ReadyConfig, progress: Progress<'_>) -> Result<ReadyReport, BenchError> {
    let scratch = ScratchDir::create("ready")?;
    let fleet_dir = scratch.subdir("fleet")?;
    let sqlite_dir = scratch.subdir("sqlite")?;
    let plan = graph_plan(config.issues);
    let edges = plan.iter().map(|planned| planned.deps.len()).sum();
    progress(&format!("generating {} issues and {edges} edges in fleet", plan.len()));
    let started = Instant::now();
    let ids = fill_fleet(&fleet_dir, &plan)?;
    let fleet_fill = started.elapsed();
    progress(&format!(
        "fleet filled in {:.1} s ({} issues/s); filling sqlite",
        fleet_fill.as_secs_f64(),
        thousands(per_second(plan.len(), fleet_fill))
    ));
    let started = Instant::now();
    sqlite::fill(&sqlite_dir, &ids, &plan, Purpose::Ready)?;
    let sqlite_fill = started.elapsed();
    let fleet_store = fleet_store_dir(&fleet_dir);
    let same_list = fleet_ready_ids(read_command(&config.binary, &fleet_store, &["ready"]))?
        == sqlite_ready_ids(&sqlite_dir)?;
    let mut commands = Vec::with_capacity(COMMANDS.len());
    for (label, args, query, goal) in COMMANDS {
        progress(&format!("timing {} runs of `{label}` and its baseline", config.runs));
        let (fleet, sqlite) = time_runs(
            config.runs,
            || read_command(&config.binary, &fleet_store, args),
            || baseline_command(&config.binary, &sqlite_dir, query),
        )?;
        commands.push(CommandLatency {
            command: label.to_string(),
            goal_met: goal.is_none_or(|goal| fleet.median_ms <= goal),
            goal_median_ms: goal,
            fleet,
            sqlite,
        });
    }
    let ready_issues = sqlite::ready_count(&sqlite::open(&sqlite_dir)?)?;
    Ok(ReadyReport {
        issues: plan.len(),
        edges,
        ready_issues,
        fleet_fill_secs: fleet_fill.as_secs_f64(),
        sqlite_fill_secs: sqlite_fill.as_secs_f64(),
        same_list,
        goal_met: commands.iter().all(|c| c.goal_met),
        commands,
        machine: Machine::this(),
    })
}

/// A small deterministic generator (SplitMix64): the same graph on every machine.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    fn below(&mut self, bound: usize) -> usize {
        usize::try_from(self.next() % bound as u64).expect("below a usize bound")
    }
}

/// The generated graph: see the module doc.
fn graph_plan(issues: usize) -> Vec<PlannedIssue> {
    let mut random = SplitMix64(SEED);
    let start: Timestamp = "2024-01-01T00:00:00Z".parse().expect("a valid constant timestamp");
    (0..issues)
        .map(|index| {
            let mut deps = Vec::with_capacity(2);
            if index >= 1 {
                let blocker = random.below(index);
                deps.push((blocker, dep_type::BLOCKS));
                if index >= 2 {
                    // Any earlier issue but the blocker: one edge per pair.
                    let parent = random.below(index - 1);
                    let parent = if parent >= blocker { parent + 1 } else { parent };
                    deps.push((parent, dep_type::PARENT_CHILD));
                }
            }
            PlannedIssue {
                priority: u8::try_from(random.below(5)).expect("below 5"),
                created_at: start + SignedDuration::from_secs(i64::try_from(index).unwrap_or(0)),
                closed: random.below(100) < CLOSED_PERCENT,
                deps,
            }
        })
        .collect()
}

/// `fleet <args>` on the store in `db`.
fn read_command(binary: &Path, db: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary);
    command.arg("--db").arg(db).args(args);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// The baseline worker answering `query` on the SQLite workspace `db`.
fn baseline_command(binary: &Path, db: &Path, query: ReadQuery) -> Command {
    let name = match query {
        ReadQuery::Ready => "ready",
        ReadQuery::ReadyJson => "ready-json",
        ReadQuery::List => "list",
        ReadQuery::Blocked => "blocked",
        ReadQuery::Search => "search",
        ReadQuery::Count => "count",
    };
    read_command(binary, db, &["bench", "worker", "--engine", "sqlite", "--query", name])
}

/// Runs a command to the end; its output must be a success.
fn run_to_end(mut command: Command) -> Result<(Duration, Vec<u8>), BenchError> {
    let started = Instant::now();
    let output = command.output().map_err(io_error(format!("running {command:?}")))?;
    let elapsed = started.elapsed();
    if !output.status.success() {
        return Err(BenchError::Failed(format!(
            "{command:?} {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok((elapsed, output.stdout))
}

/// The ids `fleet ready --json` lists.
fn fleet_ready_ids(mut command: Command) -> Result<Vec<String>, BenchError> {
    command.arg("--json");
    let (_, stdout) = run_to_end(command)?;
    let listed: Vec<serde_json::Value> = serde_json::from_slice(&stdout)
        .map_err(|e| BenchError::Failed(format!("`fleet ready --json` printed no list: {e}")))?;
    Ok(listed
        .iter()
        .filter_map(|issue| issue.get("id").and_then(|id| id.as_str()).map(str::to_string))
        .collect())
}

fn sqlite_ready_ids(workspace: &Path) -> Result<Vec<String>, BenchError> {
    let rows = sqlite::ready(&sqlite::open(workspace)?, sqlite::READY_LIMIT)?;
    Ok(rows.into_iter().map(|row| row.id).collect())
}

/// Warms up, then times `runs` runs of each command, alternating so both see the same
/// machine.
fn time_runs(
    runs: usize,
    fleet: impl Fn() -> Command,
    sqlite: impl Fn() -> Command,
) -> Result<(Latency, Latency), BenchError> {
    for _ in 0..WARMUP_RUNS {
        run_to_end(fleet())?;
        run_to_end(sqlite())?;
    }
    let mut fleet_times = Vec::with_capacity(runs);
    let mut sqlite_times = Vec::with_capacity(runs);
    for _ in 0..runs {
        fleet_times.push(run_to_end(fleet())?.0);
        sqlite_times.push(run_to_end(sqlite())?.0);
    }
    Ok((Latency::of(fleet_times), Latency::of(sqlite_times)))
}

impl ReadyReport {
    /// The comparison table, with the graph it was measured on above it.
    pub fn render(&self) -> String {
        let runs = self.commands.first().map_or(0, |c| c.fleet.runs);
        let mut out = format!(
            "Read latency: {} issues, {} edges (blocks and parent-child), {} ready; whole-process \
             wall time with default limits (ready: first {}, list and blocked: first {}), {} runs \
             each, {} cores\n\
             Generated in one transaction: fleet {:.1} s ({} issues/s), sqlite {:.1} s. \
             Both list the same ready issues: {}\n",
            self.issues,
            self.edges,
            self.ready_issues,
            sqlite::READY_LIMIT,
            sqlite::PAGE_LIMIT,
            runs,
            self.machine.cores,
            self.fleet_fill_secs,
            thousands(per_second(self.issues, Duration::from_secs_f64(self.fleet_fill_secs))),
            self.sqlite_fill_secs,
            if self.same_list { "yes" } else { "NO" },
        );
        let mut grid = table(vec![
            "command",
            "fleet median",
            "fleet p90",
            "fleet min",
            "sqlite median",
            "sqlite vs fleet",
            "goal",
        ]);
        let ms = |value: f64| format!("{value:.2} ms");
        for command in &self.commands {
            let ratio = if command.fleet.median_ms > 0.0 {
                command.sqlite.median_ms / command.fleet.median_ms
            } else {
                0.0
            };
            grid.add_row(vec![
                command.command.clone(),
                ms(command.fleet.median_ms),
                ms(command.fleet.p90_ms),
                ms(command.fleet.min_ms),
                ms(command.sqlite.median_ms),
                format!("{ratio:.2}×"),
                match command.goal_median_ms {
                    Some(goal) => format!("≤ {goal} ms median {}", mark(command.goal_met)),
                    None => "— (reported)".to_string(),
                },
            ]);
        }
        out.push_str(&grid.to_string());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_is_deterministic_and_points_backwards() {
        let plan = graph_plan(500);
        assert_eq!(plan.iter().map(|p| p.deps.len()).sum::<usize>(), 2 * 500 - 3);
        for (index, planned) in plan.iter().enumerate() {
            assert!(planned.deps.iter().all(|&(target, _)| target < index));
            if let [(a, _), (b, _)] = planned.deps.as_slice() {
                assert_ne!(a, b);
            }
        }
        let again = graph_plan(500);
        let edges = |p: &[PlannedIssue]| p.iter().map(|i| i.deps.clone()).collect::<Vec<_>>();
        assert_eq!(edges(&plan), edges(&again));
    }

    #[test]
    fn latency_reads_median_p90_and_min() {
        let times = (1..=10).rev().map(Duration::from_millis).collect();
        let latency = Latency::of(times);
        assert_eq!(latency.min_ms, 1.0);
        assert_eq!(latency.median_ms, 5.5);
        assert_eq!(latency.p90_ms, 9.0);
    }

    #[test]
    fn both_engines_list_the_same_ready_issues() {
        let scratch = ScratchDir::create("test").unwrap();
        let fleet_dir = scratch.subdir("fleet").unwrap();
        let sqlite_dir = scratch.subdir("sqlite").unwrap();
        let plan = graph_plan(400);
        let ids = fill_fleet(&fleet_dir, &plan).unwrap();
        sqlite::fill(&sqlite_dir, &ids, &plan, Purpose::Ready).unwrap();
        let store = crate::store::Store::open(&fleet_store_dir(&fleet_dir)).unwrap();
        let filter = crate::store::ReadyFilter { limit: 0, ..Default::default() };
        let page = store.read().unwrap().ready(&filter, Timestamp::now()).unwrap();
        let fleet: Vec<_> = page.issues.into_iter().map(|issue| issue.id).collect();
        let baseline = sqlite::ready(&sqlite::open(&sqlite_dir).unwrap(), 1000).unwrap();
        let baseline: Vec<_> = baseline.into_iter().map(|row| row.id).collect();
        assert!(!fleet.is_empty());
        assert_eq!(fleet, baseline);
    }
}
