//! The real Gemini CLI (`@google/gemini-cli`) under `fleet run`, against the mock Gemini API:
//! the agent closes its task through `run_shell_command`, exits without closing, hits a rate
//! limit or its daily quota, stalls, runs without credentials, and two agents start at once.
//!
//! Setup: `GOOGLE_GEMINI_BASE_URL` at the mock and `GEMINI_API_KEY` through `[coders.gemini]
//! env`; everything else is the coder's own (`--yolo`, `GEMINI_CLI_TRUST_WORKSPACE=true`, the
//! agent-private `GEMINI_CLI_HOME` whose settings select the API-key sign-in, without which the
//! custom endpoint makes the CLI refuse to start). The agent's `HOME` is the sandbox's.
//!
//! Not here: context pressure. Gemini CLI reports tokens only at the end of the session, summed
//! over its requests, which is no context size (see `src/coders/gemini.rs`).

use std::path::Path;
use std::time::Duration;

use crate::harness::Sandbox;
use crate::mock::{Api, MockApi};
use crate::{
    DEADLINE, Scene, agent_cli, assert_closed_done, assert_no_leftovers, assert_released_uncharged,
    counter, events_of, runtime_toml, scenario,
};

const MODEL: &str = "gemini-2.5-flash";
const KEY: &str = "gm-test-key-0123456789";

/// A scene for gemini: the mock playing `script`, a runtime.toml pointing gemini at it with
/// `overrides`, and `tasks` tasks.
fn new_scene_with(cli: &Path, script: &str, overrides: &[(&str, &str)], key: bool) -> Scene {
    let sandbox = Sandbox::new();
    let mock = MockApi::start(Api::Gemini, scenario(script));
    let mut env = vec![("GOOGLE_GEMINI_BASE_URL", mock.base_url())];
    if key {
        env.push(("GEMINI_API_KEY", KEY.to_owned()));
    }
    sandbox.write_runtime(&runtime_toml("gemini", MODEL, cli, &env, overrides));
    let id = sandbox.create_task(&format!("e2e gemini {script}"));
    Scene { sandbox, mock, id }
}

fn new_scene(cli: &Path, script: &str) -> Scene {
    new_scene_with(cli, script, &[], true)
}

#[test]
fn gemini_closes_its_task_with_bd_close() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene(&cli, "close");
    let mut supervisor = scene.start_with(true, &[]);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    let issue = assert_closed_done(&scene, status, &context);
    assert_eq!(counter(&issue, "attempts"), 1, "{}", context());

    let started = events_of(&scene.sandbox, &scene.id, "session_started");
    assert_eq!(started.len(), 1, "{}", context());
    assert_eq!(started[0]["model"], MODEL, "{}", context());
    let calls = events_of(&scene.sandbox, &scene.id, "tool_use");
    assert!(
        calls.iter().any(|e| e["tool_name"] == "run_shell_command"
            && e["text"].as_str().is_some_and(|t| t.contains("bd close $FLEET_TASK_ID"))),
        "{}",
        context()
    );
    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(
        results.iter().any(|e| e["tool_name"] == "run_shell_command" && e["is_error"] == false),
        "{}",
        context()
    );
    let ended = events_of(&scene.sandbox, &scene.id, "session_ended");
    assert!(ended.len() == 1 && ended[0]["is_error"] == false, "{}", context());

    let requests = scene.mock.model_requests();
    assert_eq!(requests.len(), 2, "{}", context());
    assert!(requests[0].path.contains(MODEL), "{}", context());
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY), "{}", context());
    assert!(requests[0].all_text().contains(&scene.id), "the prompt names the task{}", context());
    // The user's own Gemini settings are untouched: fleet's live in the task directory.
    assert!(!scene.sandbox.user_home.join(".gemini/settings.json").exists(), "{}", context());
    let settings = scene.sandbox.task_dir(&scene.id).join("gemini-home/.gemini/settings.json");
    assert!(settings.is_file(), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn gemini_exit_without_close_is_requeued() {
    let Some(cli) = agent_cli("gemini") else { return };
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

/// Waits for a rate-limited attempt, stops the supervisor, and checks the task went back
/// uncharged with spawning paused; returns the comments.
fn assert_rate_limited(scene: &Scene, says: &str) {
    let mut supervisor = scene.start_with(false, &[]);
    let finished = supervisor.wait_finished(&scene.id, "rate-limited", DEADLINE);
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "the attempt ends rate-limited{}", context());
    assert!(
        paused.as_ref().is_some_and(|p| p["coder"] == "gemini"),
        "gemini is paused: {paused:?}{}",
        context()
    );
    assert!(status.is_some_and(|s| s.success()), "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(supervisor.events_of("claimed").len(), 1, "no new spawn while paused{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.contains("rate limited") && c.contains("not charged")),
        "{comments:?}{}",
        context()
    );
    let limits = events_of(&scene.sandbox, &scene.id, "rate_limit");
    assert!(
        limits.iter().any(|e| e["text"].as_str().is_some_and(|t| t.contains(says))),
        "the CLI's words {says:?} are recorded{}",
        context()
    );
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn gemini_rate_limit_releases_uncharged_and_pauses_spawning() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene(&cli, "gemini_rate_limit");
    assert_rate_limited(&scene, "retry after 3600s");
}

#[test]
fn gemini_daily_quota_releases_uncharged_and_pauses_spawning() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene(&cli, "gemini_daily_quota");
    assert_rate_limited(&scene, "exhausted your daily quota");
    let comments = scene.sandbox.comments(&scene.id);
    assert!(comments.iter().any(|c| c.contains("(daily window)")), "{comments:?}");
}

#[test]
fn gemini_stall_is_killed_released_and_counted() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene_with(&cli, "stall", &[("stall_timeout_secs", "8")], true);
    crate::assert_stall_killed_released_and_counted(&scene, &[]);
}

#[test]
fn gemini_without_a_key_pauses_the_coder_and_charges_nothing() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene_with(&cli, "close", &[], false);
    crate::assert_no_sign_in_pauses_the_coder(&scene, "gemini", &[]);
}

#[test]
fn two_gemini_agents_started_together_both_close_their_tasks() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene_with(&cli, "close", &[("max_concurrent", "2")], true);
    let second = scene.sandbox.create_task("e2e gemini close, the second");
    crate::assert_both_close(&scene, &second);
}

#[test]
fn gemini_retrying_a_quota_429_on_stderr_is_a_rate_limit_at_once() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene(&cli, "quota_retry");
    crate::assert_provider_trouble_is_recognised(&scene, "gemini", "rate-limited", "rate_limit");
}

#[test]
fn gemini_retrying_a_500_on_stderr_is_an_outage_at_once() {
    let Some(cli) = agent_cli("gemini") else { return };
    let scene = new_scene(&cli, "server_error");
    crate::assert_provider_trouble_is_recognised(&scene, "gemini", "coder-paused", "outage");
}
