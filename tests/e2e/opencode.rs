//! The real opencode CLI (`opencode-ai`) under `fleet run`, against the mock Chat Completions
//! API: the agent closes its task through its `bash` tool, exits without closing, hits a rate
//! limit, fills its context, stalls, and two agents start at the same moment (each on its own
//! opencode database, so they never collide).
//!
//! Setup: an OpenAI-compatible provider `mock` pointing at the mock, given in
//! `OPENCODE_CONFIG_CONTENT` through `[coders.opencode] env`, with the model `mock/mock-model`;
//! opencode's model-list fetch and auto-update are turned off (no network in tests).

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::harness::Sandbox;
use crate::mock::{Api, MockApi};
use crate::{
    DEADLINE, Scene, agent_cli, assert_closed_done, assert_no_leftovers, assert_released_uncharged,
    counter, events_of, runtime_toml, scenario,
};

const MODEL: &str = "mock/mock-model";

/// opencode's config: one OpenAI-compatible provider served by `mock`. Its model claims a
/// 400k window, above fleet's 128k for opencode, so that opencode's own compaction (which it
/// starts by itself when a step overflows the window it knows) does not pre-empt fleet's
/// context pressure in the scenario that tests it.
fn opencode_config(mock: &MockApi) -> String {
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "mock",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "sk-test"},
            "models": {"mock-model": {"name": "Mock", "tool_call": true,
                                      "limit": {"context": 400_000, "output": 8_000}}}
        }}
    })
    .to_string()
}

fn new_scene_with(cli: &Path, script: &str, overrides: &[(&str, &str)]) -> Scene {
    let sandbox = Sandbox::new();
    let mock = MockApi::start(Api::Chat, scenario(script));
    let env = [
        ("OPENCODE_CONFIG_CONTENT", opencode_config(&mock)),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_owned()),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".to_owned()),
    ];
    sandbox.write_runtime(&runtime_toml("opencode", MODEL, cli, &env, overrides));
    let id = sandbox.create_task(&format!("e2e opencode {script}"));
    Scene { sandbox, mock, id }
}

fn new_scene(cli: &Path, script: &str) -> Scene {
    new_scene_with(cli, script, &[])
}

#[test]
fn opencode_closes_its_task_with_bd_close() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "close");
    let mut supervisor = scene.start_with(true, &[]);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert_closed_done(&scene, status, &context);

    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(
        results.iter().any(|e| e["tool_name"] == "bash" && e["is_error"] == false),
        "{}",
        context()
    );
    let requests = scene.mock.model_requests();
    assert!(requests.len() >= 2, "{}", context());
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"), "{}", context());
    assert!(requests.iter().any(|r| r.all_text().contains(&scene.id)), "{}", context());
    // The agent's opencode database is its own, in the task directory.
    assert!(scene.sandbox.task_dir(&scene.id).join("opencode.db").is_file(), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn opencode_exit_without_close_is_requeued() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "noclose");
    let mut supervisor = scene.start_with(false, &[]);
    let finished = supervisor.wait_finished(&scene.id, "noclose-requeued", DEADLINE);
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "noclose"), 1, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn opencode_rate_limit_releases_uncharged_and_pauses_spawning() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "rate_limit");
    let mut supervisor = scene.start_with(false, &[]);
    let finished = supervisor.wait_finished(&scene.id, "rate-limited", DEADLINE);
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "the attempt ends rate-limited{}", context());
    assert!(paused.is_some(), "spawning is paused{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.contains("rate limited") && c.contains("not charged")),
        "{comments:?}{}",
        context()
    );
    assert!(comments.iter().all(|c| !c.contains('\u{1b}')), "no colour codes: {comments:?}");
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn opencode_context_pressure_stops_the_agent_and_a_fresh_session_finishes() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "context_pressure_after_step");
    let mut supervisor = scene.start_with(true, &[]);
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
    assert_eq!(counter(&issue, "failures"), 0, "context pressure is not charged{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.starts_with(
            "[fleet] attempt 1: context pressure (190000 of 128000 tokens); released, not charged"
        )),
        "{comments:?}{}",
        context()
    );
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn opencode_stall_is_killed_released_and_counted() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene_with(&cli, "stall", &[("stall_timeout_secs", "8")]);
    crate::assert_stall_killed_released_and_counted(&scene, &[]);
}

#[test]
fn two_opencode_agents_started_together_both_close_their_tasks() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene_with(&cli, "close", &[("max_concurrent", "2")]);
    let second = scene.sandbox.create_task("e2e opencode close, the second");
    crate::assert_both_close(&scene, &second);
}

#[test]
fn opencode_retrying_a_429_on_stderr_is_a_rate_limit_at_once() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "quota_retry_chat");
    crate::assert_provider_trouble_is_recognised(&scene, "opencode", "rate-limited", "rate_limit");
}

#[test]
fn opencode_retrying_a_500_on_stderr_is_an_outage_at_once() {
    let Some(cli) = agent_cli("opencode") else { return };
    let scene = new_scene(&cli, "server_error");
    crate::assert_provider_trouble_is_recognised(&scene, "opencode", "coder-paused", "outage");
}
