//! The real Claude Code CLI under `fleet run`, against the mock Messages API: each outcome of
//! an attempt — the agent closes its task, blocks it, exits without closing; the API rate
//! limits, the prompt nears the context window, the API stalls; the supervisor is stopped.
//!
//! Setup as in `tests/fixtures/claude-stream/README.md`: `ANTHROPIC_BASE_URL` at the mock,
//! `ANTHROPIC_API_KEY=sk-test`, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, a throwaway
//! `HOME`, and the coder's defaults (`--dangerously-skip-permissions` with `IS_SANDBOX=1`, so
//! it runs tools as root). The model is `claude-sonnet-4-5`, a 200k-token window: the CLI's
//! default model has 1M, and the supervisor takes the window from the model the CLI reports.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::harness::{Sandbox, Supervisor};
use crate::mock::{Api, MockApi};
use crate::{
    DEADLINE, Scene, agent_cli, assert_closed_done, assert_no_leftovers,
    assert_outage_pauses_uncharged, assert_released_uncharged, counter, events_of, runtime_toml,
    scenario,
};

const MODEL: &str = "claude-sonnet-4-5";

/// What the supervisor's own environment gives the agent (inherited).
const SUPERVISOR_ENV: [(&str, &str); 2] =
    [("ANTHROPIC_API_KEY", "sk-test"), ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")];

/// A scene for claude: the mock playing `script`, and a runtime.toml with `overrides` and
/// extra coder `env`.
fn new_scene(cli: &Path, script: &str, overrides: &[(&str, &str)], env: &[(&str, &str)]) -> Scene {
    let sandbox = Sandbox::new();
    let mock = MockApi::start(Api::Anthropic, scenario(script));
    let mut coder_env = vec![("ANTHROPIC_BASE_URL", mock.base_url())];
    coder_env.extend(env.iter().map(|(k, v)| (*k, (*v).to_owned())));
    sandbox.write_runtime(&runtime_toml("claude", MODEL, cli, &coder_env, overrides));
    let id = sandbox.create_task(&format!("e2e {script}"));
    Scene { sandbox, mock, id }
}

/// Starts `fleet run` with claude's key in the supervisor's environment.
fn start(scene: &Scene, until_idle: bool) -> Supervisor {
    scene.start_with(until_idle, &SUPERVISOR_ENV)
}

#[test]
fn claude_closes_its_task_with_bd_close() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "close", &[], &[]);
    let mut supervisor = start(&scene, true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    let issue = assert_closed_done(&scene, status, &context);
    assert_eq!(counter(&issue, "attempts"), 1, "{}", context());
    let finished = supervisor.events_of("finished");
    assert_eq!(finished.len(), 1, "{}", context());
    assert_eq!(finished[0]["verdict"], "closed", "{}", context());

    // The real CLI's stream, as the supervisor normalised it.
    let started = events_of(&scene.sandbox, &scene.id, "session_started");
    assert_eq!(started.len(), 1, "{}", context());
    assert_eq!(started[0]["model"], MODEL, "{}", context());
    let calls = events_of(&scene.sandbox, &scene.id, "tool_use");
    assert!(
        calls.iter().any(|e| e["tool_name"] == "Bash"
            && e["text"].as_str().is_some_and(|t| t.contains("bd close $FLEET_TASK_ID"))),
        "{}",
        context()
    );
    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(results.iter().all(|e| e["is_error"] == false), "{}", context());
    let ended = events_of(&scene.sandbox, &scene.id, "session_ended");
    assert!(ended.len() == 1 && ended[0]["is_error"] == false, "{}", context());

    // What reached the model: the configured model and key, the task's prompt, and the
    // output of fleet's `bd close` fed back as the tool result.
    let requests = scene.mock.model_requests();
    assert_eq!(requests.len(), 2, "{}", context());
    assert_eq!(requests[0].body["model"], MODEL, "{}", context());
    assert_eq!(requests[0].header("x-api-key"), Some("sk-test"), "{}", context());
    assert!(requests[0].all_text().contains(&scene.id), "the prompt names the task{}", context());
    assert!(requests[1].all_text().contains(&scene.id), "{}", context());

    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_agent_marks_its_task_blocked() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "blocked", &[], &[]);
    let mut supervisor = start(&scene, true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert_eq!(status.and_then(|s| s.code()), Some(4), "a task left blocked: exit 4{}", context());
    let unfinished = format!("{} blocked (blocked-by-agent)", scene.id);
    assert!(supervisor.stderr().contains(&unfinished), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "blocked", "{}", context());
    assert!(issue["assignee"].as_str().unwrap_or_default().is_empty(), "{}", context());
    assert!(
        issue["notes"].as_str().is_some_and(|n| n.contains("QUESTION: which database?")),
        "{}",
        context()
    );
    assert!(supervisor.finished(&scene.id, "blocked-by-agent"), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_rate_limit_releases_uncharged_and_pauses_spawning() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "rate_limit", &[], &[("CLAUDE_CODE_MAX_RETRIES", "2")]);
    let mut supervisor = start(&scene, false);
    let finished = supervisor.wait_finished(&scene.id, "rate-limited", DEADLINE);
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "the attempt ends rate-limited{}", context());
    assert!(paused.is_some(), "spawning is paused{}", context());
    assert!(status.is_some_and(|s| s.success()), "fleet run exits 0 on SIGTERM{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "attempts"), 1, "{}", context());
    assert_eq!(supervisor.events_of("claimed").len(), 1, "no new spawn while paused{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.contains("rate limited") && c.contains("not charged")),
        "{comments:?}{}",
        context()
    );
    let saw_429 = scene.sandbox.events(&scene.id).iter().any(|e| e["http_status"] == 429);
    assert!(saw_429, "the CLI reported the 429{}", context());
    assert!(!scene.mock.model_requests().is_empty(), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_context_pressure_stops_the_agent_and_a_fresh_session_finishes() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "context_pressure", &[], &[]);
    let mut supervisor = start(&scene, true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let verdicts: Vec<String> = supervisor
        .events_of("finished")
        .iter()
        .map(|e| e["verdict"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(verdicts, ["context-pressure", "closed"], "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "closed", "{}", context());
    assert_eq!(counter(&issue, "attempts"), 2, "{}", context());
    assert_eq!(counter(&issue, "failures"), 0, "context pressure is not charged{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.starts_with(
            "[fleet] attempt 1: context pressure (190000 of 200000 tokens); released, not charged"
        )),
        "{comments:?}{}",
        context()
    );
    // Two separate CLI sessions reached the API; the first one was cut off after at most its
    // first tool result (2.1.197 was killed while `sleep 60` ran; 2.1.332 refuses a long
    // `sleep` at once and may send that refusal back before the SIGTERM lands).
    let requests = scene.mock.model_requests();
    assert!(requests.iter().any(|r| r.session == 1), "{}", context());
    assert!(!requests.iter().any(|r| r.session == 0 && r.turn > 1), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_stall_is_killed_released_and_counted() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "stall", &[("stall_timeout_secs", "8")], &[]);
    let issue = crate::assert_stall_killed_released_and_counted(&scene, &SUPERVISOR_ENV);
    assert!(issue["fleet"]["retry_after"].is_string(), "requeued with a backoff: {issue:#}");
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments
            .iter()
            .any(|c| c.starts_with("[fleet] attempt 1: no output for 8s, killed (stall 1 of 2)")),
        "{comments:?}"
    );
    assert_eq!(scene.mock.model_requests().len(), 1, "the CLI was waiting on the API");
}

#[test]
fn claude_exit_without_close_is_requeued() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "noclose", &[], &[]);
    let mut supervisor = start(&scene, false);
    let finished = supervisor.wait_finished(&scene.id, "noclose-requeued", DEADLINE);
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "noclose"), 1, "{}", context());
    assert!(issue["fleet"]["retry_after"].is_string(), "requeued with a backoff{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.starts_with(
            "[fleet] attempt 1: the agent exited 0 without closing the task (1 of 3 allowed); requeued"
        )),
        "{comments:?}{}",
        context()
    );
    let ended = events_of(&scene.sandbox, &scene.id, "session_ended");
    assert!(ended.len() == 1 && ended[0]["is_error"] == false, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_sigterm_to_the_supervisor_stops_the_agent_and_releases_the_task() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "stall", &[], &[]);
    let mut supervisor = start(&scene, false);
    // Wait until the agent is mid-request (the mock never answers).
    let end = Instant::now() + DEADLINE;
    while scene.mock.model_requests().is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    let reached = !scene.mock.model_requests().is_empty();
    // The agent is found by the same scan that checks for leftovers below.
    let running = scene.sandbox.leftover_processes(Some(supervisor.pid()));
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(reached, "the agent reached the API{}", context());
    assert!(running.iter().any(|(_, cmd)| cmd.contains("claude")), "{running:?}{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments
            .iter()
            .any(|c| c == "[fleet] attempt 1: supervisor shutting down; released, not charged"),
        "{comments:?}{}",
        context()
    );
    assert!(supervisor.finished(&scene.id, "shutdown"), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn claude_overloaded_api_pauses_the_coder_and_charges_nothing() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "overloaded", &[], &[("CLAUDE_CODE_MAX_RETRIES", "1")]);
    let mut supervisor = start(&scene, false);
    assert_outage_pauses_uncharged(&scene, &mut supervisor, "claude", &["529", "not charged"]);
}

#[test]
fn claude_without_credentials_pauses_the_coder_and_charges_nothing() {
    let Some(cli) = agent_cli("claude") else { return };
    let scene = new_scene(&cli, "close", &[], &[]);
    // No API key anywhere and a HOME without a login: the CLI refuses to run.
    let env = [("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")];
    crate::assert_no_sign_in_pauses_the_coder(&scene, "claude", &env);
}

/// The keys of the two accounts of [`claude_account_rotation_goes_on_past_a_rate_limited_key`]:
/// no token shape gives them away, only the name of their variable.
const KEY_A: &str = "e2e-account-a-key-7f3c9d";
const KEY_B: &str = "e2e-account-b-key-2b8e41";

#[test]
fn claude_account_rotation_goes_on_past_a_rate_limited_key() {
    let Some(cli) = agent_cli("claude") else { return };
    let sandbox = Sandbox::new();
    // The mock refuses account a's key with 429 and serves account b's.
    let mock = MockApi::start(Api::Anthropic, scenario("account_rate_limit"));
    let coder_env =
        [("ANTHROPIC_BASE_URL", mock.base_url()), ("CLAUDE_CODE_MAX_RETRIES", "2".to_owned())];
    let mut toml = runtime_toml("claude", MODEL, &cli, &coder_env, &[("max_concurrent", "2")]);
    for (name, key) in [("a", KEY_A), ("b", KEY_B)] {
        toml.push_str(&format!(
            "\n[[coders.claude.accounts]]\nname = \"{name}\"\nenv = {{ ANTHROPIC_API_KEY = \"{key}\" }}\n"
        ));
    }
    sandbox.write_runtime(&toml);
    let ids: Vec<String> =
        (1..=3).map(|n| sandbox.create_task(&format!("e2e account {n}"))).collect();
    let scene = Scene { sandbox, mock, id: ids[0].clone() };
    // No key in the supervisor's environment: each agent has only its account's.
    let mut supervisor =
        scene.start_with(true, &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")]);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "--until-idle ends once all closed{}", context());

    // The first two agents started one on each account; a's met the 429 and a was paused,
    // the coder going on with b.
    let claimed = supervisor.events_of("claimed");
    assert_eq!(claimed[0]["account"], "a", "{claimed:?}{}", context());
    assert_eq!(claimed[1]["account"], "b", "{claimed:?}{}", context());
    let paused = supervisor.events_of("paused");
    assert!(
        paused
            .iter()
            .any(|p| p["coder"] == "claude" && p["account"] == "a" && p["cause"] == "rate_limit"),
        "account a paused: {paused:?}{}",
        context()
    );
    assert!(
        !paused.iter().any(|p| p["account"].is_null()),
        "the coder itself is never paused: {paused:?}{}",
        context()
    );
    for id in &ids {
        let issue = scene.sandbox.show(id);
        assert_eq!(issue["status"], "closed", "{id}{}", context());
        assert_eq!(counter(&issue, "attempts"), 1, "the 429 is not counted: {id}{}", context());
        assert_eq!(counter(&issue, "failures"), 0, "{id}{}", context());
    }
    let finished = supervisor.events_of("finished");
    let limited: Vec<&serde_json::Value> =
        finished.iter().filter(|f| f["verdict"] == "rate-limited").collect();
    assert_eq!(limited.len(), 1, "{finished:?}{}", context());
    let limited_id = limited[0]["id"].as_str().unwrap_or_default();
    let comments = scene.sandbox.comments(limited_id);
    assert!(
        comments.iter().any(|c| c.contains("on claude@a: rate limited; released, not charged")),
        "{comments:?}{}",
        context()
    );

    // What reached the API: a's key only got 429s, b's key did the work.
    let requests = scene.mock.model_requests();
    assert!(requests.iter().any(|r| r.api_key() == Some(KEY_A)), "{}", context());
    assert!(requests.iter().all(|r| [Some(KEY_A), Some(KEY_B)].contains(&r.api_key())));
    let b_sessions: std::collections::BTreeSet<usize> =
        requests.iter().filter(|r| r.api_key() == Some(KEY_B)).map(|r| r.session).collect();
    assert_eq!(b_sessions.len(), 3, "three sessions on b's key{}", context());

    // The operator's views: the paused account with its end, and the ledger split by account.
    let tasks: serde_json::Value =
        serde_json::from_str(&scene.sandbox.fleet(&["tasks", "--all", "--json"])).unwrap();
    let pause = &tasks["pauses"][0];
    assert_eq!((pause["coder"].as_str(), pause["account"].as_str()), (Some("claude"), Some("a")));
    assert_eq!(pause["cause"], "rate limit", "{tasks:#}");
    assert!(pause["until"].is_string(), "{tasks:#}");
    assert!(tasks["tasks"].as_array().unwrap().iter().all(|t| t["account"] == "b"), "{tasks:#}");
    let ledger = |id: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(scene.sandbox.task_dir(id).join("ledger.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let first = &ledger(limited_id)["attempts"][0];
    assert_eq!(
        (first["account"].as_str(), first["outcome"].as_str()),
        (Some("a"), Some("rate-limited"))
    );
    let stats: serde_json::Value = serde_json::from_str(
        &scene.sandbox.fleet(&["stats", "--agents", "--by", "account", "--json"]),
    )
    .unwrap();
    let group = |key: &str| {
        stats["groups"].as_array().unwrap().iter().find(|g| g["key"] == key).cloned().unwrap()
    };
    assert_eq!(
        (group("a")["attempts"].as_u64(), group("a")["closed_tasks"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(group("b")["closed_tasks"], 3, "{stats:#}");
    assert!(group("b")["tokens_in"].as_u64().unwrap_or(0) > 0, "{stats:#}");
    assert_eq!(stats["pauses"][0]["account"], "a", "{stats:#}");

    // The keys stayed in runtime.toml.
    let mut written = vec![
        tasks.to_string(),
        stats.to_string(),
        scene.sandbox.fleet(&["config", "show"]),
        std::fs::read_to_string(scene.sandbox.home.join("logs/fleet-run.log")).unwrap_or_default(),
        supervisor.events().iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
    ];
    for id in &ids {
        written.extend(scene.sandbox.comments(id));
        for name in ["ledger.json", "log.jsonl", "events.jsonl", "log.stderr", "task.json"] {
            written.push(
                std::fs::read_to_string(scene.sandbox.task_dir(id).join(name)).unwrap_or_default(),
            );
        }
    }
    let written = written.join("\n");
    for key in [KEY_A, KEY_B] {
        assert!(!written.contains(key), "{key} leaked:\n{written}");
    }
    assert_no_leftovers(&scene.sandbox, None, &context);
}
