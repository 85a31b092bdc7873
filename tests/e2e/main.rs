//! End-to-end tests: `fleet run` driving the **real** agent CLIs — Claude Code
//! (`@anthropic-ai/claude-code`), the OpenAI Codex CLI (`@openai/codex`), Gemini CLI
//! (`@google/gemini-cli`) and opencode (`opencode-ai`) — against a scripted model API served
//! by the test itself on 127.0.0.1.
//!
//! The scenarios are written once (`table.rs`) and played by each coder of their row in the
//! table there, one test per coder (`<scenario>::<coder>`); what a coder needs — its CLI, its
//! API's wire format, how it is pointed at the mock and signed in — is its [`coder::Coder`]
//! (`coder.rs`). What only one coder does has a module of its own (`claude.rs`).
//!
//! Each test builds a [`harness::Sandbox`] (a temporary `FLEET_HOME` with a queue, the agent's
//! `HOME`, a project directory), starts a [`mock::MockApi`] playing one of `scenarios/*.json`,
//! writes a `runtime.toml` whose `[coders.NAME]` table points `program` at the installed CLI
//! and its `env` at the mock, creates a task, and runs `fleet run --json` as a child process —
//! either `--until-idle` (it exits when the queue is drained) or until the test sends SIGTERM.
//! It then checks what a user would: the task as `fleet show --json` reports it, its comments,
//! `tasks/<id>/events.jsonl`, what reached the mock, and that no process started for the
//! sandbox is left running.
//!
//! How the environment reaches the agent, as these tests use it: the supervisor's own
//! environment is inherited (here `HOME`, `ANTHROPIC_API_KEY`,
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`); `[coders.NAME] env` is set over it
//! (`ANTHROPIC_BASE_URL`, `CLAUDE_CODE_MAX_RETRIES`, `CODEX_HOME`, `MOCK_API_KEY`); the task
//! variables (`FLEET_TASK_ID`, …) and `FLEET_HOME`, `BEADS_DIR`, `PATH` (fleet's `bd` first)
//! come last.
//!
//! The CLIs are installed by `.ci/install-agent-clis` (pinned versions, npm registry only)
//! into `$FLEET_AGENT_CLIS` (default `~/.cache/fleet-agent-clis`). When a CLI is not there,
//! its tests print why on the real stderr and pass without running (a skip), so the suite
//! stays green on a machine without npm; set `FLEET_E2E_REQUIRE_CLIS=1` to make that a
//! failure instead. `FLEET_E2E_KEEP=1` keeps each sandbox (named on stderr) for a look at its
//! `tasks/<id>/` logs afterwards.

mod claude;
mod coder;
#[path = "../common/mod.rs"]
mod common;
mod harness;
mod mcp;
mod mock;
mod table;

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use harness::{Sandbox, Supervisor, say, toml_str};
use mock::{MockApi, Script};

/// How long anything in these tests may take before it counts as hung: generous, since the
/// CLIs start slowly and several scenarios share two cores.
pub const DEADLINE: Duration = Duration::from_secs(150);

/// The installed CLI `name` (`claude`, `codex`, `gemini`, `opencode`), or `None` after saying loudly why its tests
/// are skipped.
pub fn agent_cli(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("FLEET_AGENT_CLIS").map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/fleet-agent-clis"))
    });
    let path = dir.map(|d| d.join("bin").join(name));
    let runnable = path.as_ref().is_some_and(|p| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    });
    if runnable {
        return path;
    }
    let why = format!(
        "SKIPPED end-to-end test with the real `{name}` CLI: {} not found. Run `bash .ci/install-agent-clis` (needs npm and the npm registry).",
        path.map_or_else(|| "$HOME is not set, so the CLI".to_owned(), |p| p.display().to_string())
    );
    if std::env::var_os("FLEET_E2E_REQUIRE_CLIS").is_some_and(|v| v != "0") {
        panic!("{why} (FLEET_E2E_REQUIRE_CLIS is set)");
    }
    say(&format!("\n*** {why}\n"));
    None
}

/// A scenario file of `tests/e2e/scenarios/`.
pub fn scenario(name: &str) -> Script {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/e2e/scenarios")
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    Script::parse(&text)
}

/// A `runtime.toml`: one agent at a time, short timeouts, long backoffs and pauses (so a
/// requeued task stays put until the test looks at it), `overrides` replacing any of those,
/// and a `[coders.CODER]` table with `program` and `env`.
pub fn runtime_toml(
    coder: &str,
    model: &str,
    program: &Path,
    env: &[(&str, String)],
    overrides: &[(&str, &str)],
) -> String {
    let mut keys: Vec<(&str, &str)> = vec![
        ("max_concurrent", "1"),
        ("stall_timeout_secs", "60"),
        ("attempt_timeout_secs", "150"),
        ("shutdown_grace_secs", "5"),
        ("retry_backoff_secs", "600"),
        ("retry_backoff_max_secs", "600"),
        ("rate_limit_default_pause_secs", "600"),
    ];
    for (key, value) in overrides {
        match keys.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => keys.push((key, value)),
        }
    }
    let mut text = format!("coder = {}\nmodel = {}\n", toml_str(coder), toml_str(model));
    for (key, value) in keys {
        text.push_str(&format!("{key} = {value}\n"));
    }
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {}", toml_str(v))).collect();
    text.push_str(&format!(
        "\n[coders.{coder}]\nprogram = {}\nenv = {{ {} }}\n",
        toml_str(&program.display().to_string()),
        env.join(", ")
    ));
    text
}

/// A fleet field counter of an issue (`attempts`, `failures`, `noclose`, `stalls`); absent
/// means 0.
pub fn counter(issue: &Value, name: &str) -> u64 {
    issue["fleet"][name].as_u64().unwrap_or(0)
}

/// One scenario's pieces: the sandbox with a task, the mock playing its script, and what the
/// supervisor's own environment gives the agent (see [`coder::Coder::scene`]).
pub struct Scene {
    pub sandbox: Sandbox,
    pub mock: MockApi,
    pub id: String,
    pub supervisor_env: Vec<(&'static str, String)>,
}

impl Scene {
    /// Starts `fleet run` (`--until-idle` or not) with the scene's supervisor environment.
    pub fn start(&self, until_idle: bool) -> Supervisor {
        let env: Vec<(&str, &str)> =
            self.supervisor_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.sandbox.start_supervisor(until_idle, &env)
    }

    /// The failure-message context of this scene under `supervisor`.
    pub fn context<'a>(&'a self, supervisor: &'a Supervisor) -> impl Fn() -> String + 'a {
        move || diagnose(&self.sandbox, supervisor, &self.mock, &self.id)
    }
}

/// Asserts `fleet run --until-idle` exited 0 by itself after the agent closed its task as
/// "done" on the first attempt; returns the task as `fleet show` reports it.
#[track_caller]
pub fn assert_closed_done(
    scene: &Scene,
    status: Option<ExitStatus>,
    context: &dyn Fn() -> String,
) -> Value {
    assert!(
        status.is_some_and(|s| s.success()),
        "fleet run --until-idle exits 0 by itself{}",
        context()
    );
    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "closed", "{}", context());
    assert_eq!(issue["close_reason"], "done", "{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c == "[fleet] attempt 1: closed (done)"),
        "{comments:?}{}",
        context()
    );
    issue
}

/// Runs `fleet run --until-idle` with two agents at once on `scene`'s task and `second`
/// (created in the same queue) and asserts both closed on their first attempt, with no
/// fault, collision or retry in between.
#[track_caller]
pub fn assert_both_close(scene: &Scene, second: &str) -> Supervisor {
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    for id in [scene.id.as_str(), second] {
        let issue = scene.sandbox.show(id);
        assert_eq!(issue["status"], "closed", "{id}{}", context());
        assert_eq!(counter(&issue, "attempts"), 1, "{id}{}", context());
    }
    let verdicts: Vec<String> = supervisor
        .events_of("finished")
        .iter()
        .map(|e| e["verdict"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(verdicts, ["closed", "closed"], "{}", context());
    let starts: Vec<_> = supervisor.events_of("claimed");
    assert_eq!(starts.len(), 2, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    supervisor
}

/// Runs the supervisor on `scene`'s stalling agent and asserts the runner killed it (leaving
/// no process behind), released the task uncharged and counted the stall. Returns the
/// stopped supervisor and the task as it was left, for the checks a scenario adds.
#[track_caller]
pub fn assert_stall_killed_released_and_counted(scene: &Scene) -> (Supervisor, Value) {
    let mut supervisor = scene.start(false);
    let finished = supervisor.wait_finished(&scene.id, "stall-requeued", DEADLINE);
    // The runner itself stopped the agent's whole process group, before any shutdown.
    let left_while_running =
        scene.sandbox.wait_no_processes(Some(supervisor.pid()), Duration::from_secs(10));
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "the attempt ends as a stall{}", context());
    assert!(left_while_running.is_empty(), "left behind: {left_while_running:?}{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "stalls"), 1, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    (supervisor, issue)
}

/// A coder's CLI that cannot sign in: `fleet run --until-idle` pauses the coder for
/// authentication, charges the task nothing, and exits 4 naming it; nothing reached the model
/// API. Returns the stopped supervisor.
pub fn assert_no_sign_in_pauses_the_coder(scene: &Scene, coder: &str) -> Supervisor {
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(4),
        "--until-idle ends, the task left open: the coder needs a human{}",
        context()
    );
    let unfinished = format!("{} open (coder-paused)", scene.id);
    assert!(supervisor.stderr().contains(&unfinished), "{}", context());
    let paused = supervisor.events_of("paused");
    assert!(
        paused.iter().any(|p| p["cause"] == "auth" && p["coder"] == coder),
        "paused for authentication: {paused:?}{}",
        context()
    );
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "attempts"), 0, "{}", context());
    assert!(scene.mock.model_requests().is_empty(), "nothing reached the API{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    supervisor
}

/// Everything known about a scenario, for a failure message.
pub fn diagnose(sandbox: &Sandbox, supervisor: &Supervisor, mock: &MockApi, id: &str) -> String {
    format!(
        "\n{}\n{}\n--- mock requests\n{}\n--- runtime.toml\n{}",
        supervisor.diagnose(),
        sandbox.diagnose(id),
        mock.summary(),
        std::fs::read_to_string(sandbox.home.join("runtime.toml")).unwrap_or_default()
    )
}

/// The agent events of `kind` in a task's `events.jsonl`.
pub fn events_of(sandbox: &Sandbox, id: &str, kind: &str) -> Vec<Value> {
    sandbox.events(id).into_iter().filter(|e| e["kind"] == kind).collect()
}

/// Asserts the task is back in the queue: open, nobody holding it, no failure charged.
#[track_caller]
pub fn assert_released_uncharged(issue: &Value, context: &dyn Fn() -> String) {
    assert_eq!(issue["status"], "open", "the task is open again{}", context());
    assert!(
        issue["assignee"].as_str().unwrap_or_default().is_empty(),
        "nobody holds the task{}",
        context()
    );
    assert_eq!(counter(issue, "failures"), 0, "no failure is charged{}", context());
}

/// Asserts nothing started for the sandbox is still running except `except` (the supervisor,
/// while it is still up).
#[track_caller]
pub fn assert_no_leftovers(sandbox: &Sandbox, except: Option<u32>, context: &dyn Fn() -> String) {
    let left = sandbox.wait_no_processes(except, Duration::from_secs(10));
    assert!(left.is_empty(), "processes left behind: {left:?}{}", context());
}

/// Waits for the attempt of `scene` to end with `coder` paused for a provider outage, stops
/// the supervisor, and asserts the task went back uncharged (the attempt not even counted),
/// with a comment that contains each of `says`.
#[track_caller]
pub fn assert_outage_pauses_uncharged(
    scene: &Scene,
    supervisor: &mut Supervisor,
    coder: &str,
    says: &[&str],
) {
    let finished = supervisor.wait_finished(&scene.id, "coder-paused", DEADLINE);
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(supervisor);
    assert!(finished.is_some(), "the attempt ends with the coder paused{}", context());
    assert!(
        paused.as_ref().is_some_and(|p| p["cause"] == "outage" && p["coder"] == coder),
        "{coder} paused for an outage: {paused:?}{}",
        context()
    );
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "attempts"), 0, "a fault of the fleet is no attempt{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments
            .iter()
            .any(|c| c.contains("provider outage") && says.iter().all(|s| c.contains(s))),
        "the comment names the outage and the API's words {says:?}: {comments:?}{}",
        context()
    );
    assert_no_leftovers(&scene.sandbox, None, &context);
}

/// A provider in trouble that the CLI retries silently, saying so only on stderr (issue 27):
/// with `stall_timeout_secs = 60`, the supervisor recognises the retry from what the CLI says
/// and, well before a stall could be declared, releases the task uncharged with `verdict`
/// (`rate-limited`, or `coder-paused` for an outage) and pauses `coder` for `cause`. Returns
/// the stopped supervisor.
pub fn assert_provider_trouble_is_recognised(
    scene: &Scene,
    coder: &str,
    verdict: &str,
    cause: &str,
) -> Supervisor {
    let started = std::time::Instant::now();
    let mut supervisor = scene.start(false);
    let finished = supervisor.wait_event(DEADLINE, |e| e["type"] == "finished");
    let took = started.elapsed();
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    let finished = finished.unwrap_or_else(|| panic!("the attempt ends{}", context()));
    assert_eq!(finished["verdict"], verdict, "{finished}{}", context());
    assert!(
        took < Duration::from_secs(55),
        "recognised after {took:?}, not as a stall{}",
        context()
    );
    assert!(
        paused.as_ref().is_some_and(|p| p["coder"] == coder && p["cause"] == cause),
        "{coder} is paused for {cause}: {paused:?}{}",
        context()
    );
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "stalls"), 0, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    supervisor
}
