//! The real Codex CLI under `fleet run`, against the mock Responses API: the agent closes its
//! task through a shell tool call, and the two API failures (a rate limit, a server error).
//!
//! Setup as in `tests/fixtures/codex-stream/README.md`: a custom model provider in
//! `$CODEX_HOME/config.toml` pointing at the mock (`OPENAI_BASE_URL` is ignored by codex), its
//! dummy key in `MOCK_API_KEY`, both passed through `[coders.codex] env`.

use std::path::Path;
use std::time::Duration;

use crate::harness::{Sandbox, toml_str};
use crate::mock::{Api, MockApi};
use crate::{
    DEADLINE, Scene, agent_cli, assert_closed_done, assert_no_leftovers,
    assert_outage_pauses_uncharged, assert_released_uncharged, events_of, runtime_toml, scenario,
};

const MODEL: &str = "gpt-5.5";

/// `$CODEX_HOME/config.toml` for a provider served by `mock`.
fn codex_config(mock: &MockApi) -> String {
    format!(
        "model = {model}\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
         base_url = {url}\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
         request_max_retries = 1\nstream_max_retries = 1\n",
        model = toml_str(MODEL),
        url = toml_str(&format!("{}/v1", mock.base_url())),
    )
}

/// A scene for codex: the mock playing `script`, and a runtime.toml pointing codex at it.
fn new_scene(cli: &Path, script: &str) -> Scene {
    let sandbox = Sandbox::new();
    let mock = MockApi::start(Api::Responses, scenario(script));
    let codex_home = sandbox.root().join("codexhome");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    std::fs::write(codex_home.join("config.toml"), codex_config(&mock))
        .expect("write codex config");
    let env = [("CODEX_HOME", path_text(&codex_home)), ("MOCK_API_KEY", "sk-test".to_owned())];
    sandbox.write_runtime(&runtime_toml("codex", MODEL, cli, &env, &[]));
    let id = sandbox.create_task(&format!("e2e codex {script}"));
    Scene { sandbox, mock, id }
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn codex_closes_its_task_with_bd_close() {
    let Some(cli) = agent_cli("codex") else { return };
    let scene = new_scene(&cli, "close");
    let mut supervisor = scene.start_with(true, &[]);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert_closed_done(&scene, status, &context);

    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(
        results.iter().any(|e| e["tool_name"] == "command_execution" && e["is_error"] == false),
        "{}",
        context()
    );
    let requests = scene.mock.model_requests();
    assert_eq!(requests.len(), 2, "{}", context());
    assert_eq!(requests[0].body["model"], MODEL, "{}", context());
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"), "{}", context());
    assert!(requests[0].all_text().contains(&scene.id), "the prompt names the task{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn codex_rate_limit_releases_uncharged_and_pauses_spawning() {
    let Some(cli) = agent_cli("codex") else { return };
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
    assert_eq!(supervisor.events_of("claimed").len(), 1, "no new spawn while paused{}", context());
    let comments = scene.sandbox.comments(&scene.id);
    assert!(
        comments.iter().any(|c| c.contains("rate limited") && c.contains("not charged")),
        "{comments:?}{}",
        context()
    );
    assert_no_leftovers(&scene.sandbox, None, &context);
}

#[test]
fn codex_server_error_pauses_the_coder_and_charges_nothing() {
    let Some(cli) = agent_cli("codex") else { return };
    let scene = new_scene(&cli, "server_error");
    let mut supervisor = scene.start_with(false, &[]);
    let errors = || events_of(&scene.sandbox, &scene.id, "error");
    assert_outage_pauses_uncharged(&scene, &mut supervisor, "codex", &["not charged"]);
    assert!(!errors().is_empty(), "the CLI's error is recorded in events.jsonl");
}
