//! Durable claims per second, fleet against the SQLite baseline, in four shapes:
//!
//! - `spawn`: a process per claim, as agents calling `fleet claim` make them — the real
//!   binary for fleet, a `fleet bench worker --engine sqlite` process for the baseline — with
//!   at most `claimers` processes alive at once;
//! - `loop`: `claimers` long-lived worker processes, each claiming until nothing is left;
//! - `threads`: `claimers` threads of this process, sharing the server's group commit
//!   ([`InProcess`]) for fleet, each with its own connection for the baseline;
//! - `cycle`: the agents' real shape, ready → claim → close as three processes per task
//!   (`cycle`), counted in completed cycles.
//!
//! Fleet's process shapes run by two routes ([`Route`]): served — a fleet process serves the
//! workspace's socket (`fleet serve`; for `cycle` a supervisor, `fleet run` with no agent
//! slots) and commits the claimers' requests in groups — and direct (`FLEET_DIRECT=1`), each
//! process opening the store and committing on its own. The baseline runs once per shape and
//! both routes are compared with it.
//!
//! Every shape starts from a fresh workspace holding the same open issues for both engines
//! and runs until every issue is claimed. Afterwards the final state is read back and audited:
//! each reported claim must match an issue that is in_progress and assigned to the claimer,
//! and each issue may be reported once. Claims that do not are counted as double claims.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::claims::Claims;
use super::cycle::Agent;
use super::serving::{ServerKind, ServingProcess};
use super::sqlite::{self, Purpose};
use super::worker::Engine;
use super::workspace::{PlannedIssue, ScratchDir, fill_fleet, fleet_store_dir, fleet_with_status};
use super::{BenchError, Machine, Progress, mark, per_second, table, thousands};
use crate::model::Status;
use crate::server::{InProcess, Outcome};
use crate::store::Store;
use crate::time::Clock;
use crate::tracker::{Refusal, Request};

/// How claimers reach the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// One process per claim.
    Spawn,
    /// Long-lived processes claiming in a loop.
    Loop,
    /// Threads of one process.
    Threads,
    /// Agents running ready → claim → close, a process per command.
    Cycle,
}

/// How fleet's claimers reach the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Route {
    /// Through the socket of a serving fleet process.
    Served,
    /// Each process on its own (`FLEET_DIRECT=1`).
    Direct,
    /// Threads of the measuring process.
    InProcess,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Served => "served",
            Route::Direct => "direct",
            Route::InProcess => "in-process",
        }
    }
}

/// What a shape should reach.
#[derive(Debug, Clone, Copy)]
enum Goal {
    /// At least this many times the baseline's rate.
    Ratio(f64),
    /// At least this many claims per second.
    Rate(f64),
}

impl Shape {
    pub const ALL: [Shape; 4] = [Shape::Spawn, Shape::Loop, Shape::Threads, Shape::Cycle];

    fn name(self) -> &'static str {
        match self {
            Shape::Spawn => "spawn",
            Shape::Loop => "loop",
            Shape::Threads => "threads",
            Shape::Cycle => "cycle",
        }
    }

    fn describe(self, claimers: usize) -> String {
        match self {
            Shape::Spawn => format!("{claimers} processes, one claim each"),
            Shape::Loop => format!("{claimers} processes, claiming in a loop"),
            Shape::Threads => format!("{claimers} threads in one process"),
            Shape::Cycle => format!("{claimers} agents, ready → claim → close"),
        }
    }

    /// The routes fleet is measured by.
    fn routes(self) -> &'static [Route] {
        match self {
            Shape::Threads => &[Route::InProcess],
            _ => &[Route::Served, Route::Direct],
        }
    }

    /// The goal of fleet by `route` (none for the direct route, which is reported to show it
    /// does not get slower).
    fn goal(self, route: Route) -> Option<Goal> {
        match (self, route) {
            (_, Route::Direct) => None,
            (Shape::Spawn, _) => Some(Goal::Ratio(2.0)),
            (Shape::Loop, _) => Some(Goal::Ratio(3.0)),
            (Shape::Threads, _) => Some(Goal::Rate(50_000.0)),
            (Shape::Cycle, _) => Some(Goal::Ratio(2.0)),
        }
    }

    /// Issues in the workspaces of this shape: a cycle costs three processes per issue, so it
    /// gets a quarter of the others'.
    fn issues(self, configured: usize) -> usize {
        match self {
            Shape::Cycle => (configured / 4).max(1),
            _ => configured,
        }
    }
}

impl Goal {
    fn met(self, fleet: f64, ratio: f64) -> bool {
        match self {
            Goal::Ratio(wanted) => ratio >= wanted,
            Goal::Rate(wanted) => fleet >= wanted,
        }
    }

    fn text(self) -> String {
        match self {
            Goal::Ratio(wanted) => format!("≥ {wanted}× sqlite"),
            Goal::Rate(wanted) => format!("≥ {}/s", thousands(wanted)),
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ClaimConfig {
    /// The `fleet` binary to spawn.
    pub binary: PathBuf,
    /// Issues in each workspace; every one gets claimed.
    pub issues: usize,
    /// Concurrent claimers: processes or threads.
    pub claimers: usize,
    pub shapes: Vec<Shape>,
}

impl ClaimConfig {
    /// Sized so the three shapes finish in about two minutes on two cores.
    pub const DEFAULT_ISSUES: usize = 2000;
    pub const DEFAULT_CLAIMERS: usize = 64;

    pub fn new(binary: PathBuf) -> ClaimConfig {
        ClaimConfig {
            binary,
            issues: Self::DEFAULT_ISSUES,
            claimers: Self::DEFAULT_CLAIMERS,
            shapes: Shape::ALL.to_vec(),
        }
    }
}

/// One engine's run of one shape.
#[derive(Debug, Clone, Serialize)]
pub struct EngineRun {
    /// Claims the claimers reported as won.
    pub claims: usize,
    pub seconds: f64,
    pub claims_per_sec: f64,
    /// Durable commits that claimed something (fleet only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<u64>,
    /// Reported claims that the final state does not back: a second claim of the same issue,
    /// or a claim whose issue is not in_progress under the claimer.
    pub double_claims: usize,
    /// Issues in_progress at the end (closed, for `cycle`); equals `claims` when all is well.
    pub in_progress: usize,
    /// Claimers (processes or threads) that failed.
    pub failures: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// Both engines' runs of one shape, fleet by one route.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeResult {
    pub shape: Shape,
    pub route: Route,
    pub description: String,
    pub fleet: EngineRun,
    pub sqlite: EngineRun,
    /// Fleet's rate over the baseline's.
    pub ratio: f64,
    pub goal: String,
    pub goal_met: bool,
}

/// The result of `fleet bench claim`.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimReport {
    pub issues: usize,
    pub claimers: usize,
    pub machine: Machine,
    pub shapes: Vec<ShapeResult>,
    /// The machine's rate of starting the binary to do nothing, measured when a shape starts
    /// processes per claim (spawn, cycle).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_start: Option<ProcessStart>,
}

/// How many processes of the binary doing nothing (`fleet --version`) the machine starts and
/// reaps per second, `claimers` at once: the ceiling of any shape that starts one process per
/// claim (spawn) or three per task (cycle), whatever happens inside them — and the baseline's
/// workers are the same binary, so it starts them as fast.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessStart {
    pub processes: usize,
    pub seconds: f64,
    pub processes_per_sec: f64,
}

impl Shape {
    /// Processes a claim costs in this shape (`None`: processes live across claims).
    fn processes_per_claim(self) -> Option<f64> {
        match self {
            Shape::Spawn => Some(1.0),
            Shape::Cycle => Some(3.0),
            Shape::Loop | Shape::Threads => None,
        }
    }
}

/// Runs the claim benchmark.
pub fn run(config: &ClaimConfig, progress: Progress<'_>) -> Result<ClaimReport, BenchError> {
    let scratch = ScratchDir::create("claim")?;
    let bd = link_bd(&scratch, &config.binary)?;
    let mut shapes = Vec::new();
    for &shape in &config.shapes {
        let plan = claim_plan(shape.issues(config.issues));
        progress(&format!("{}: filling the workspaces with {} issues", shape.name(), plan.len()));
        let mut fleet_dirs = Vec::new();
        let mut ids = Vec::new();
        for &route in shape.routes() {
            let dir = scratch.subdir(&format!("{}-fleet-{}", shape.name(), route.name()))?;
            ids = fill_fleet(&dir, &plan)?;
            fleet_dirs.push((route, dir));
        }
        let sqlite_dir = scratch.subdir(&format!("{}-sqlite", shape.name()))?;
        sqlite::fill(&sqlite_dir, &ids, &plan, Purpose::Claim)?;
        progress(&format!("{}: sqlite baseline", shape.name()));
        let sqlite = measure(config, shape, Engine::Sqlite, Route::Direct, &sqlite_dir, &bd)?;
        for (route, fleet_dir) in fleet_dirs {
            progress(&format!(
                "{}: fleet {} ({})",
                shape.name(),
                route.name(),
                shape.describe(config.claimers)
            ));
            let fleet = measure(config, shape, Engine::Fleet, route, &fleet_dir, &bd)?;
            shapes.push(compare(shape, route, config.claimers, fleet, sqlite.clone()));
        }
    }
    let process_start = if config.shapes.iter().any(|s| s.processes_per_claim().is_some()) {
        progress("process start: the binary doing nothing, for the ceiling of spawn and cycle");
        Some(measure_process_start(config)?)
    } else {
        None
    };
    Ok(ClaimReport {
        issues: config.issues,
        claimers: config.claimers,
        machine: Machine::this(),
        shapes,
        process_start,
    })
}

/// Runs `fleet --version` as many times as the spawn shape claims, `claimers` at once.
fn measure_process_start(config: &ClaimConfig) -> Result<ProcessStart, BenchError> {
    let processes = Shape::Spawn.issues(config.issues);
    let (runs, elapsed) = run_claimers(
        config.claimers,
        processes,
        || Ok(()),
        |(), ticket| {
            let mut command = Command::new(&config.binary);
            command.arg("--version").stdin(Stdio::null()).stdout(Stdio::null());
            match command.status() {
                // Counted as a "claim" of ticket n, so `won` counts the processes run.
                Ok(status) if status.success() => {
                    Claims { won: vec![(String::new(), ticket.to_string())], ..Claims::default() }
                }
                Ok(status) => Claims::failed(format!("`fleet --version` {status}")),
                Err(error) => Claims::failed(format!("spawning `fleet --version`: {error}")),
            }
        },
    )?;
    if let Some(error) = runs.first_error {
        return Err(BenchError::Failed(error));
    }
    Ok(ProcessStart {
        processes: runs.won.len(),
        seconds: elapsed.as_secs_f64(),
        processes_per_sec: per_second(runs.won.len(), elapsed),
    })
}

/// Open issues with mixed priorities and distinct creation times, no edges.
fn claim_plan(issues: usize) -> Vec<PlannedIssue> {
    let start: Timestamp = "2025-01-01T00:00:00Z".parse().expect("a valid constant timestamp");
    (0..issues)
        .map(|index| PlannedIssue {
            priority: u8::try_from(index % 5).expect("below 5"),
            created_at: start + SignedDuration::from_secs(i64::try_from(index).unwrap_or(0)),
            closed: false,
            deps: Vec::new(),
        })
        .collect()
}

/// A `bd` link to the fleet binary in the scratch directory, for the agents of `cycle`.
fn link_bd(scratch: &ScratchDir, binary: &Path) -> Result<PathBuf, BenchError> {
    let bd = scratch.subdir("bin")?.join("bd");
    std::os::unix::fs::symlink(binary, &bd).map_err(super::io_error(format!(
        "linking {} to {}",
        bd.display(),
        binary.display()
    )))?;
    Ok(bd)
}

fn compare(
    shape: Shape,
    route: Route,
    claimers: usize,
    fleet: EngineRun,
    sqlite: EngineRun,
) -> ShapeResult {
    let ratio = if sqlite.claims_per_sec > 0.0 {
        fleet.claims_per_sec / sqlite.claims_per_sec
    } else {
        0.0
    };
    let goal = shape.goal(route);
    ShapeResult {
        shape,
        route,
        description: shape.describe(claimers),
        goal: goal.map_or_else(|| "— (reported)".to_string(), Goal::text),
        goal_met: goal.is_none_or(|goal| goal.met(fleet.claims_per_sec, ratio)),
        fleet,
        sqlite,
        ratio,
    }
}

/// Runs one engine in one shape on a filled workspace (fleet by `route`, with its server
/// running for the served route), then audits the final state.
fn measure(
    config: &ClaimConfig,
    shape: Shape,
    engine: Engine,
    route: Route,
    workspace: &Path,
    bd: &Path,
) -> Result<EngineRun, BenchError> {
    let server = match (engine, route, shape) {
        (Engine::Fleet, Route::Served, Shape::Cycle)
        | (Engine::Fleet, Route::Direct, Shape::Cycle) => {
            Some(ServingProcess::start(&config.binary, workspace, ServerKind::Supervisor)?)
        }
        (Engine::Fleet, Route::Served, _) => {
            Some(ServingProcess::start(&config.binary, workspace, ServerKind::Serve)?)
        }
        _ => None,
    };
    let commits_before = fleet_commits(engine, workspace)?;
    let direct = route == Route::Direct;
    let (claims, elapsed) = match shape {
        Shape::Spawn | Shape::Loop => {
            let tickets =
                if shape == Shape::Spawn { shape.issues(config.issues) } else { config.claimers };
            run_claimers(
                config.claimers,
                tickets,
                || Ok(()),
                |(), ticket| {
                    let actor = format!("w{ticket}");
                    let mut command =
                        claimer_command(&config.binary, engine, shape, workspace, &actor);
                    if direct {
                        command.env("FLEET_DIRECT", "1");
                    }
                    run_process(command, engine, shape, actor)
                },
            )?
        }
        Shape::Threads => claim_in_threads(config.claimers, engine, workspace)?,
        Shape::Cycle => run_claimers(
            config.claimers,
            config.claimers,
            || Ok(()),
            |(), index| {
                let agent = Agent {
                    engine,
                    fleet: &config.binary,
                    bd,
                    workspace,
                    actor: format!("agent{index}"),
                    index,
                    direct,
                };
                agent.work()
            },
        )?,
    };
    let commits_after = fleet_commits(engine, workspace)?;
    drop(server);
    let finished = if shape == Shape::Cycle { Status::Closed } else { Status::InProgress };
    let state = match (engine, finished) {
        (Engine::Fleet, status) => fleet_with_status(workspace, status)?,
        (Engine::Sqlite, Status::Closed) => sqlite::closed(workspace)?,
        (Engine::Sqlite, _) => sqlite::in_progress(workspace)?,
    };
    let commits = commits_after.zip(commits_before).map(|(a, b)| a.saturating_sub(b));
    Ok(engine_run(&claims, elapsed, &state, commits))
}

/// Fleet's commit counter (the store's change counter), to tell how many claims shared a
/// commit; `None` for the baseline, which commits once per claim.
fn fleet_commits(engine: Engine, workspace: &Path) -> Result<Option<u64>, BenchError> {
    match engine {
        Engine::Fleet => Ok(Some(Store::open(&fleet_store_dir(workspace))?.changes()?)),
        Engine::Sqlite => Ok(None),
    }
}

fn claim_in_threads(
    claimers: usize,
    engine: Engine,
    workspace: &Path,
) -> Result<(Claims, Duration), BenchError> {
    let actor = |ticket: usize| format!("t{ticket}");
    match engine {
        Engine::Fleet => {
            let store = Arc::new(Store::open(&fleet_store_dir(workspace))?);
            let group = InProcess::start(store, Clock::System)
                .map_err(super::io_error("starting the group committer".into()))?;
            run_claimers(
                claimers,
                claimers,
                || Ok(()),
                |(), ticket| claim_all(&actor(ticket), |actor| claim_in_group(&group, actor)),
            )
        }
        Engine::Sqlite => run_claimers(
            claimers,
            claimers,
            || sqlite::open(workspace).map_err(|e| e.to_string()),
            |conn, ticket| {
                claim_all(&actor(ticket), |actor| {
                    sqlite::claim_next(conn, actor).map_err(|e| e.to_string())
                })
            },
        ),
    }
}

/// Claims the next ready issue as `actor` through the group commit; its id, if any.
fn claim_in_group(group: &InProcess, actor: &str) -> Result<Option<String>, String> {
    let request = Request::ClaimNext { filter: Box::default() };
    match group.submit(actor, request) {
        Outcome::Applied(reply) => {
            let claimed = reply.into_claimed().map_err(|e| e.to_string())?;
            Ok(claimed.map(|summary| summary.issue.id))
        }
        Outcome::Refused(refusal) => Err(Refusal::from(refusal).to_string()),
        Outcome::Direct(why) => Err(why),
    }
}

/// Claims as `actor` until nothing is left or a claim fails.
fn claim_all(
    actor: &str,
    mut claim_one: impl FnMut(&str) -> Result<Option<String>, String>,
) -> Claims {
    let mut claims = Claims::default();
    loop {
        match claim_one(actor) {
            Ok(Some(id)) => claims.won.push((actor.to_string(), id)),
            Ok(None) => return claims,
            Err(error) => {
                claims.fail(error);
                return claims;
            }
        }
    }
}

/// Runs `workers` threads that take tickets `0..tickets` in turn and run `claim` on each.
/// Each thread first builds its state with `setup`; the clock starts once all are ready.
fn run_claimers<S>(
    workers: usize,
    tickets: usize,
    setup: impl Fn() -> Result<S, String> + Sync,
    claim: impl Fn(&mut S, usize) -> Claims + Sync,
) -> Result<(Claims, Duration), BenchError> {
    let next = AtomicUsize::new(0);
    let prepared = AtomicUsize::new(0);
    let gate = RwLock::new(());
    let closed = gate.write().unwrap_or_else(PoisonError::into_inner);
    let claimer = || {
        let state = setup();
        prepared.fetch_add(1, Ordering::SeqCst);
        drop(gate.read().unwrap_or_else(PoisonError::into_inner));
        let mut state = match state {
            Ok(state) => state,
            Err(error) => return Claims::failed(error),
        };
        let mut claims = Claims::default();
        loop {
            let ticket = next.fetch_add(1, Ordering::Relaxed);
            if ticket >= tickets {
                return claims;
            }
            claims.merge(claim(&mut state, ticket));
        }
    };
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(workers);
        let mut spawn_error = None;
        for n in 0..workers {
            match std::thread::Builder::new()
                .name(format!("claimer-{n}"))
                .spawn_scoped(scope, claimer)
            {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    spawn_error = Some(format!("starting claimer thread {n}: {error}"));
                    next.store(tickets, Ordering::Relaxed);
                    break;
                }
            }
        }
        while spawn_error.is_none() && prepared.load(Ordering::SeqCst) < handles.len() {
            std::thread::sleep(Duration::from_micros(200));
        }
        drop(closed);
        let started = Instant::now();
        let mut all = Claims::default();
        for handle in handles {
            match handle.join() {
                Ok(claims) => all.merge(claims),
                Err(_) => all.fail("a claimer thread panicked".to_string()),
            }
        }
        let elapsed = started.elapsed();
        match spawn_error {
            Some(error) => Err(BenchError::Failed(error)),
            None => Ok((all, elapsed)),
        }
    })
}

/// The command one claimer process runs.
fn claimer_command(
    binary: &Path,
    engine: Engine,
    shape: Shape,
    workspace: &Path,
    actor: &str,
) -> Command {
    let mut command = Command::new(binary);
    if engine == Engine::Fleet && shape == Shape::Spawn {
        command.arg("--db").arg(fleet_store_dir(workspace));
        command.args(["--json", "--actor", actor, "claim"]);
    } else {
        let engine = match engine {
            Engine::Fleet => "fleet",
            Engine::Sqlite => "sqlite",
        };
        command.arg("--db").arg(workspace);
        command.args(["--actor", actor, "bench", "worker", "--engine", engine]);
        if shape == Shape::Loop {
            command.arg("--loop");
        }
    }
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Runs one claimer process to the end and reads the ids it claimed.
fn run_process(mut command: Command, engine: Engine, shape: Shape, actor: String) -> Claims {
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => return Claims::failed(format!("spawning claimer {actor}: {error}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Claims::failed(format!("claimer {actor} {}: {}", output.status, stderr.trim()));
    }
    match claimed_ids(engine, shape, &stdout) {
        Ok(ids) => Claims {
            won: ids.into_iter().map(|id| (actor.clone(), id)).collect(),
            ..Claims::default()
        },
        Err(error) => Claims::failed(format!("claimer {actor}: {error}")),
    }
}

/// The ids a claimer process reports: `fleet claim --json` prints the claimed issue or `null`;
/// workers print one id a line.
fn claimed_ids(engine: Engine, shape: Shape, stdout: &str) -> Result<Vec<String>, String> {
    if engine == Engine::Fleet && shape == Shape::Spawn {
        let value: serde_json::Value = serde_json::from_str(stdout)
            .map_err(|e| format!("`fleet claim --json` printed something else ({e}): {stdout}"))?;
        return Ok(value
            .get("id")
            .and_then(|id| id.as_str())
            .map(str::to_string)
            .into_iter()
            .collect());
    }
    Ok(stdout.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect())
}

fn engine_run(
    claims: &Claims,
    elapsed: Duration,
    state: &[(String, String)],
    commits: Option<u64>,
) -> EngineRun {
    EngineRun {
        claims: claims.won.len(),
        commits,
        seconds: elapsed.as_secs_f64(),
        claims_per_sec: per_second(claims.won.len(), elapsed),
        double_claims: double_claims(&claims.won, state),
        in_progress: state.len(),
        failures: claims.failures,
        first_error: claims.first_error.clone(),
    }
}

/// Reported claims the final state does not back: each must name an in_progress issue
/// assigned to its claimer, and no issue may be reported twice.
fn double_claims(won: &[(String, String)], state: &[(String, String)]) -> usize {
    let assignee: HashMap<&str, &str> =
        state.iter().map(|(id, actor)| (id.as_str(), actor.as_str())).collect();
    let mut seen = HashSet::new();
    let backed = won
        .iter()
        .filter(|(actor, id)| {
            assignee.get(id.as_str()) == Some(&actor.as_str()) && seen.insert(id.as_str())
        })
        .count();
    won.len() - backed
}

impl ClaimReport {
    /// The comparison table, followed by a line for anything that went wrong.
    pub fn render(&self) -> String {
        let mut out = format!(
            "Durable claims per second: {} issues ({} for cycle, counted in completed \
             cycles), {} concurrent claimers, {} cores (sqlite: WAL, synchronous=FULL, BEGIN \
             IMMEDIATE)\n",
            self.issues,
            Shape::Cycle.issues(self.issues),
            self.claimers,
            self.machine.cores
        );
        let mut grid = table(vec![
            "shape",
            "claims (fleet / sqlite)",
            "fleet claims/s",
            "sqlite claims/s",
            "ratio",
            "goal",
            "double claims (fleet / sqlite)",
            "fleet claims per commit",
        ]);
        for result in &self.shapes {
            grid.add_row(vec![
                format!(
                    "{} ({}): {}",
                    result.shape.name(),
                    result.route.name(),
                    result.description
                ),
                format!("{} / {}", result.fleet.claims, result.sqlite.claims),
                thousands(result.fleet.claims_per_sec),
                thousands(result.sqlite.claims_per_sec),
                format!("{:.2}×", result.ratio),
                format!("{} {}", result.goal, mark(result.goal_met)),
                format!("{} / {}", result.fleet.double_claims, result.sqlite.double_claims),
                claims_per_commit(&result.fleet),
            ]);
        }
        out.push_str(&grid.to_string());
        if let Some(start) = &self.process_start {
            out.push_str(&self.ceilings(start));
        }
        for result in &self.shapes {
            for (engine, run) in [("fleet", &result.fleet), ("sqlite", &result.sqlite)] {
                out.push_str(&problems(result.shape, engine, run));
            }
        }
        out
    }

    /// The process-start line, and for each served shape that starts processes the most it
    /// could reach against what its goal asks: how much the goal leaves a claim's own work
    /// (beyond starting its processes), and how much fleet's took, both as a share of a bare
    /// start.
    fn ceilings(&self, start: &ProcessStart) -> String {
        let mut out = format!(
            "\nProcess start alone (`fleet --version`, {} at once): {}/s.",
            self.claimers,
            thousands(start.processes_per_sec)
        );
        for result in self.shapes.iter().filter(|r| r.route == Route::Served) {
            let Some(per_claim) = result.shape.processes_per_claim() else { continue };
            let Some(Goal::Ratio(wanted)) = result.shape.goal(result.route) else { continue };
            let ceiling = start.processes_per_sec / per_claim;
            let needed = wanted * result.sqlite.claims_per_sec;
            // At `rate` claims a second, a claim's own work costs `ceiling / rate - 1` of its
            // bare start.
            let work_at = |rate: f64| format!("{:.0}%", (ceiling / rate - 1.0) * 100.0);
            let verdict = if ceiling >= needed {
                format!(
                    "work beyond starting the processes may cost at most {} of their bare start; fleet's took {}",
                    work_at(needed),
                    work_at(result.fleet.claims_per_sec)
                )
            } else {
                "out of reach on this machine".to_string()
            };
            out.push_str(&format!(
                "\n  {}: at most {}/s with no work at all ({} process{} each); {}× sqlite needs \
                 {}/s: {verdict}",
                result.shape.name(),
                thousands(ceiling),
                per_claim,
                if per_claim > 1.0 { "es" } else { "" },
                wanted,
                thousands(needed),
            ));
        }
        out
    }
}

fn claims_per_commit(run: &EngineRun) -> String {
    match run.commits {
        Some(commits) if commits > 0 => format!("{:.1}", run.claims as f64 / commits as f64),
        _ => "-".to_string(),
    }
}

/// Lines about failed claimers and a final state that disagrees with the claims.
fn problems(shape: Shape, engine: &str, run: &EngineRun) -> String {
    let mut out = String::new();
    if run.failures > 0 {
        let first = run.first_error.as_deref().unwrap_or("");
        out.push_str(&format!(
            "\n{} {engine}: {} claimers failed; first: {first}",
            shape.name(),
            run.failures
        ));
    }
    if run.in_progress != run.claims {
        let state = if shape == Shape::Cycle { "closed" } else { "in_progress" };
        out.push_str(&format!(
            "\n{} {engine}: {} issues {state}, but {} claims reported",
            shape.name(),
            run.in_progress,
            run.claims
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn a_claim_the_state_backs_is_not_double() {
        let won = pairs(&[("w1", "a"), ("w2", "b")]);
        let state = pairs(&[("a", "w1"), ("b", "w2")]);
        assert_eq!(double_claims(&won, &state), 0);
    }

    #[test]
    fn two_winners_of_one_issue_count_once_as_double() {
        let won = pairs(&[("w1", "a"), ("w2", "a")]);
        let state = pairs(&[("a", "w2")]);
        assert_eq!(double_claims(&won, &state), 1);
    }

    #[test]
    fn a_claim_missing_from_the_state_is_double() {
        let won = pairs(&[("w1", "a")]);
        assert_eq!(double_claims(&won, &[]), 1);
    }

    #[test]
    fn fleet_claim_json_is_read_as_one_id_or_none() {
        let ids = claimed_ids(Engine::Fleet, Shape::Spawn, r#"{"id": "bench-x1", "title": "t"}"#);
        assert_eq!(ids.unwrap(), ["bench-x1"]);
        assert!(claimed_ids(Engine::Fleet, Shape::Spawn, "null").unwrap().is_empty());
        assert!(claimed_ids(Engine::Fleet, Shape::Spawn, "oops").is_err());
        let lines = claimed_ids(Engine::Sqlite, Shape::Loop, "a\nb\n").unwrap();
        assert_eq!(lines, ["a", "b"]);
    }

    /// An engine's run of 10 claims at `rate` per second, in 5 commits, all backed.
    fn run(rate: f64) -> EngineRun {
        EngineRun {
            claims: 10,
            seconds: 1.0,
            claims_per_sec: rate,
            commits: Some(5),
            double_claims: 0,
            in_progress: 10,
            failures: 0,
            first_error: None,
        }
    }

    #[test]
    fn report_renders_every_shape_and_its_double_claims() {
        let report = ClaimReport {
            issues: 10,
            claimers: 2,
            machine: Machine { cores: 2 },
            shapes: vec![
                compare(Shape::Loop, Route::Served, 2, run(3000.0), run(1000.0)),
                compare(Shape::Loop, Route::Direct, 2, run(500.0), run(1000.0)),
            ],
            process_start: None,
        };
        let text = report.render();
        assert!(text.contains("loop (served): 2 processes, claiming in a loop"), "{text}");
        assert!(text.contains("loop (direct)"), "{text}");
        assert!(text.contains("— (reported)"), "the direct route has no goal: {text}");
        assert!(text.contains("3.00×"), "{text}");
        assert!(text.contains("≥ 3× sqlite ✓"), "{text}");
        assert!(text.contains("0 / 0"), "{text}");
        assert!(text.contains("2.0"), "claims per commit: {text}");
        assert!(!text.contains("Process start alone"), "no process shape ran: {text}");
    }

    /// Starting processes caps the shapes that start them: a served shape whose goal needs
    /// more than the machine's process-start rate allows is said to be out of reach.
    #[test]
    fn the_process_start_rate_caps_spawn_and_cycle() {
        let report = ClaimReport {
            issues: 10,
            claimers: 64,
            machine: Machine { cores: 2 },
            shapes: vec![
                compare(Shape::Spawn, Route::Served, 64, run(500.0), run(450.0)),
                compare(Shape::Spawn, Route::Direct, 64, run(300.0), run(450.0)),
                compare(Shape::Cycle, Route::Served, 64, run(100.0), run(100.0)),
            ],
            process_start: Some(ProcessStart {
                processes: 10,
                seconds: 0.01,
                processes_per_sec: 1200.0,
            }),
        };
        let text = report.render();
        assert!(
            text.contains("Process start alone (`fleet --version`, 64 at once): 1,200/s"),
            "{text}"
        );
        assert!(
            text.contains("spawn: at most 1,200/s with no work at all (1 process each); 2× sqlite needs 900/s: work beyond starting the processes may cost at most 33% of their bare start; fleet's took 140%"),
            "{text}"
        );
        assert!(
            text.contains("cycle: at most 400/s with no work at all (3 processes each); 2× sqlite needs 200/s: work beyond starting the processes may cost at most 100% of their bare start; fleet's took 300%"),
            "{text}"
        );
        assert_eq!(text.matches("spawn: at most").count(), 1, "served only: {text}");
        let slow = ClaimReport {
            process_start: Some(ProcessStart {
                processes: 10,
                seconds: 0.1,
                processes_per_sec: 500.0,
            }),
            ..report
        };
        let text = slow.render();
        assert!(text.contains("cycle: at most 167/s"), "{text}");
        assert!(text.contains("2× sqlite needs 200/s: out of reach on this machine"), "{text}");
    }
}
