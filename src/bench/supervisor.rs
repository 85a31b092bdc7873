//! Supervisor responsiveness and overhead: how soon after `fleet create` commits an agent
//! process is running, and what the supervisor costs while it keeps many agents alive.
//!
//! A real `fleet run --json` is started on a scratch home whose tasks use the `exec` coder
//! with `sleep` as the command, so agents cost nothing and stay alive. For each sample a task
//! is created by a separate `fleet create` process (as a user or agent would) and the clock
//! runs until the supervisor reports `agent_started` for it. Then the queue is topped up to
//! each size of `agents` (64 and 256 by default) with busy agents — the fake agent printing
//! `lines_per_sec` Claude stream-json messages a second each, which the supervisor parses,
//! redacts, meters and logs — and the supervisor's resident memory and CPU time are read from
//! `/proc` over a window at each size. The Python fleet's figure for the first number is its
//! 5 s claim tick (spec/fleet.md §2.4), shown for scale.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::ready::Latency;
use super::workspace::ScratchDir;
use super::{BenchError, Machine, Progress, io_error, mark, table};

/// Goals from the issue.
const GOAL_SPAWN_MEDIAN_MS: f64 = 50.0;
const GOAL_RSS_MB: f64 = 30.0;
const GOAL_CPU_PERCENT: f64 = 3.0;
/// The Python fleet claims on a 5 s tick.
const PYTHON_FLEET_TICK_MS: f64 = 5000.0;
/// How long to wait for one agent to start before giving up.
const START_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    pub binary: PathBuf,
    /// Timed create → agent-started samples.
    pub samples: usize,
    /// Numbers of busy agents at which overhead is measured, ascending.
    pub agents: Vec<usize>,
    /// Lines each busy agent prints a second.
    pub lines_per_sec: u32,
    /// Length of the overhead window.
    pub window: Duration,
    /// How long the agents run before the window opens: the supervisor's start-up work for
    /// the agents just started (their claims, the first burst of their output) is not the
    /// steady cost the window measures.
    pub settle: Duration,
}

impl SupervisorConfig {
    pub fn new(binary: PathBuf) -> SupervisorConfig {
        SupervisorConfig {
            binary,
            samples: 30,
            agents: vec![64, 256],
            lines_per_sec: 10,
            window: Duration::from_secs(10),
            settle: Duration::from_secs(5),
        }
    }
}

/// The supervisor's cost with `agents` busy agents.
#[derive(Debug, Clone, Serialize)]
pub struct Overhead {
    pub agents: usize,
    pub rss_mb: f64,
    pub peak_rss_mb: f64,
    pub cpu_percent: f64,
}

/// The result of `fleet bench supervisor`.
#[derive(Debug, Clone, Serialize)]
pub struct SupervisorReport {
    pub machine: Machine,
    /// From `fleet create` returning (committed) to the agent process running.
    pub spawn_after_commit: Latency,
    /// The same, counting the `fleet create` process too.
    pub spawn_including_create: Latency,
    /// Lines each busy agent printed a second.
    pub lines_per_sec: u32,
    /// Memory and CPU at each number of busy agents.
    pub overhead: Vec<Overhead>,
}

/// A running `fleet run --json` and the agent starts it reports.
struct RunningSupervisor {
    child: Child,
    started: Receiver<(String, Instant)>,
}

impl RunningSupervisor {
    fn start(binary: &Path, home: &Path) -> Result<RunningSupervisor, BenchError> {
        let mut child = Command::new(binary)
            .args(["run", "--json"])
            .env("FLEET_HOME", home)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io_error("starting fleet run".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| BenchError::Failed("no stdout".into()))?;
        let (tx, started) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
                if event["type"] == "agent_started"
                    && let Some(id) = event["id"].as_str()
                    && tx.send((id.to_string(), Instant::now())).is_err()
                {
                    break;
                }
            }
        });
        Ok(RunningSupervisor { child, started })
    }

    /// Waits for `count` more agents to start; returns when each id started.
    fn wait_for(&self, count: usize) -> Result<Vec<(String, Instant)>, BenchError> {
        (0..count)
            .map(|_| {
                self.started
                    .recv_timeout(START_TIMEOUT)
                    .map_err(|_| BenchError::Failed("an agent did not start within 30 s".into()))
            })
            .collect()
    }

    fn stop(mut self) -> Result<(), BenchError> {
        let status = self.terminate().map_err(io_error("waiting for fleet run".into()))?;
        if !status.success() {
            return Err(BenchError::Failed(format!("fleet run exited with {status}")));
        }
        Ok(())
    }

    /// Stops `fleet run` (it stops its agents) and waits for it.
    fn terminate(&mut self) -> std::io::Result<std::process::ExitStatus> {
        let pid = i32::try_from(self.child.id()).unwrap_or(0);
        // SAFETY: sends SIGTERM to our own child process.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        self.child.wait()
    }
}

impl Drop for RunningSupervisor {
    /// A bench that failed half-way (an agent too slow to start) leaves no supervisor and no
    /// busy agents running.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.terminate();
        }
    }
}

fn fleet(binary: &Path, home: &Path, args: &[&str]) -> Result<String, BenchError> {
    let output = Command::new(binary)
        .args(args)
        .env("FLEET_HOME", home)
        .current_dir(home)
        .output()
        .map_err(io_error(format!("running fleet {}", args.join(" "))))?;
    if !output.status.success() {
        return Err(BenchError::Failed(format!(
            "fleet {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Resident and peak resident memory of `pid`, in MiB.
fn memory_mb(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) `pid` has used, including reaped children's is not counted.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rfind(')').map_or("", |at| &stat[at + 2..]);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat; after the name they are 11 and 12 (0-based).
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    // SAFETY: sysconf only reads a system constant.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
    Duration::from_secs_f64(ticks as f64 / per_second.max(1) as f64)
}

/// runtime.toml of the bench: `exec` sleepers for the latency samples, and a `chatter` coder
/// (the fake agent, read as Claude stream-json) for the busy agents.
fn bench_config(config: &SupervisorConfig) -> String {
    let most = config.agents.iter().copied().max().unwrap_or(0);
    format!(
        "max_concurrent = {}\ncoder = \"exec\"\nstall_timeout_secs = 0\nshutdown_grace_secs = 2\n\n\
         [coders.chatter]\nargv = [{:?}, \"fake-agent\", \"{{prompt}}\"]\nevents = \"claude\"\n",
        most + config.samples,
        config.binary.display().to_string()
    )
}

pub fn run(
    config: &SupervisorConfig,
    progress: Progress<'_>,
) -> Result<SupervisorReport, BenchError> {
    let scratch = ScratchDir::create("supervisor")?;
    let home = scratch.subdir("home")?;
    fleet(&config.binary, &home, &["init", "--prefix", "sv"])?;
    std::fs::write(home.join(crate::config::FILE_NAME), bench_config(config))
        .map_err(io_error("writing runtime.toml".into()))?;
    let supervisor = RunningSupervisor::start(&config.binary, &home)?;
    progress(&format!("timing {} create → agent started samples", config.samples));
    let mut after_commit = Vec::new();
    let mut including_create = Vec::new();
    for n in 0..config.samples {
        let before = Instant::now();
        let id = fleet(
            &config.binary,
            &home,
            &["create", &format!("probe {n}"), "-d", "sleep 600", "--silent"],
        )?;
        let committed = Instant::now();
        let (started_id, at) = supervisor.wait_for(1)?.remove(0);
        if started_id != id {
            return Err(BenchError::Failed(format!("expected {id} to start, {started_id} did")));
        }
        after_commit.push(at.saturating_duration_since(committed));
        including_create.push(at.saturating_duration_since(before));
    }
    let script = format!("fake: chatter {}", config.lines_per_sec);
    let mut busy = 0;
    let mut overhead = Vec::new();
    for &agents in &config.agents {
        let extra = agents.saturating_sub(busy);
        progress(&format!(
            "starting {extra} more busy agents ({agents} in all, {} lines/s each)",
            config.lines_per_sec
        ));
        for n in busy..busy + extra {
            let title = format!("busy {n}");
            let args = ["create", title.as_str(), "--coder", "chatter", "-d", &script, "--silent"];
            fleet(&config.binary, &home, &args)?;
        }
        supervisor.wait_for(extra)?;
        busy += extra;
        progress(&format!("letting {agents} agents settle for {}s", config.settle.as_secs()));
        std::thread::sleep(config.settle);
        progress(&format!("measuring overhead over {}s", config.window.as_secs()));
        overhead.push(measure(supervisor.child.id(), agents, config.window));
    }
    supervisor.stop()?;
    Ok(SupervisorReport {
        machine: Machine::this(),
        spawn_after_commit: Latency::of(after_commit),
        spawn_including_create: Latency::of(including_create),
        lines_per_sec: config.lines_per_sec,
        overhead,
    })
}

/// Memory and the share of a core process `pid` uses over `window`.
fn measure(pid: u32, agents: usize, window: Duration) -> Overhead {
    let cpu_before = cpu_time(pid);
    let window_start = Instant::now();
    std::thread::sleep(window);
    let cpu_used = cpu_time(pid).saturating_sub(cpu_before);
    let wall = window_start.elapsed();
    let (rss_mb, peak_rss_mb) = memory_mb(pid);
    Overhead {
        agents,
        rss_mb,
        peak_rss_mb,
        cpu_percent: 100.0 * cpu_used.as_secs_f64() / wall.as_secs_f64().max(f64::EPSILON),
    }
}

impl SupervisorReport {
    /// The report as a table.
    pub fn render(&self) -> String {
        let mut out = table(vec!["measure", "fleet", "goal", "met", "Python fleet", "ratio"]);
        let latency = |name: &str, l: &Latency| {
            vec![
                name.to_string(),
                format!("{:.1} ms median, {:.1} p90", l.median_ms, l.p90_ms),
                format!("≤ {GOAL_SPAWN_MEDIAN_MS} ms"),
                mark(l.median_ms <= GOAL_SPAWN_MEDIAN_MS).to_string(),
                format!("≥ {PYTHON_FLEET_TICK_MS:.0} ms"),
                format!("{:.0}× faster", PYTHON_FLEET_TICK_MS / l.median_ms.max(0.001)),
            ]
        };
        out.add_row(latency("create → agent started (after commit)", &self.spawn_after_commit));
        out.add_row(latency(
            "create → agent started (incl. fleet create)",
            &self.spawn_including_create,
        ));
        for o in &self.overhead {
            out.add_row(vec![
                format!("RSS with {} busy agents", o.agents),
                format!("{:.1} MiB (peak {:.1})", o.rss_mb, o.peak_rss_mb),
                format!("≤ {GOAL_RSS_MB} MiB"),
                mark(o.rss_mb <= GOAL_RSS_MB).to_string(),
                String::new(),
                String::new(),
            ]);
            out.add_row(vec![
                format!("CPU with {} agents × {} lines/s", o.agents, self.lines_per_sec),
                format!("{:.2} % of a core", o.cpu_percent),
                format!("≤ {GOAL_CPU_PERCENT} %"),
                mark(o.cpu_percent <= GOAL_CPU_PERCENT).to_string(),
                String::new(),
                String::new(),
            ]);
        }
        format!(
            "fleet bench supervisor — {} samples, {} cores\n{out}",
            self.spawn_after_commit.runs, self.machine.cores
        )
    }
}
