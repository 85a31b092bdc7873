//! What a run leaves in `$FLEET_HOME/tasks/<id>/`, and what carries over between attempts:
//! the artifacts (never overwritten) and the task's coder and model (frozen at first spawn).

use serde_json::Value;

use crate::harness::{Fleet, counter};

const SECRET: &str = "sk-ant-XXXXXXXXXXXXXXXX";

/// Replaces the task's script (its description) and sets it open again.
fn rescript(fleet: &Fleet, id: &str, script: &[&str]) {
    let description: Vec<String> = script.iter().map(|s| format!("fake: {s}")).collect();
    fleet.ws.run(&["update", id, "-d", &description.join("\n"), "--status", "open"]).ok();
}

#[test]
fn task_dir_holds_the_record_the_logs_and_redacted_events() {
    let fleet = Fleet::new(&[]);
    let id =
        fleet.task("Rotate keys", &[&format!("say the old key was {SECRET}, now gone"), "close"]);

    fleet.run_until_idle(&[]).ok();

    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(fleet.task_file(&id, "task.json")).unwrap())
            .unwrap();
    assert_eq!(record["id"], id.as_str());
    assert_eq!(record["title"], "Rotate keys");
    assert_eq!(record["status"], "closed", "task.json mirrors the recorded outcome");
    assert_eq!(record["coder"], "fake");
    assert_eq!(record["attempts"], 1);
    assert_eq!(record["cwd"], fleet.home().display().to_string());

    let started = fleet.runner_lines(&id, "attempt_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["attempt"], 1);
    assert_eq!(started[0]["coder"], "fake");
    let args = started[0]["args"].as_array().unwrap();
    assert_eq!(args[0], "fake-agent");
    assert!(
        args[1].as_str().unwrap().starts_with("<prompt: "),
        "the prompt is not logged: {args:?}"
    );
    let finished = fleet.runner_lines(&id, "attempt_finished");
    assert_eq!(finished[0]["exit_code"], 0);
    assert_eq!(std::fs::read_to_string(fleet.task_file(&id, "log.stderr")).unwrap(), "");

    let events = fleet.json_lines(&id, "events.jsonl");
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["session_started", "assistant_text", "tool_use", "tool_result", "session_ended"],
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e["ts"].is_string()), "every event is stamped");
    assert_eq!(events[2]["tool_name"], "Bash");
    let said = events[1].to_string();
    assert!(said.contains("the old key was sk-ant-<redacted>, now gone"), "{said}");
    for file in ["events.jsonl", "log.jsonl"] {
        let text = std::fs::read_to_string(fleet.task_file(&id, file)).unwrap();
        assert!(!text.contains("XXXXXXXX"), "{file} leaks the key:\n{text}");
    }
}

#[test]
fn token_shapes_and_the_coders_env_secrets_never_reach_the_task_files() {
    const GITHUB: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const SLACK: &str = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp";
    const ENV_SECRET: &str = "correct-horse-battery-staple";
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[], &format!("\n[coders.fake.env]\nDEPLOY_TOKEN = \"{ENV_SECRET}\"\n"));
    let id = fleet.task(
        "Rotate keys",
        &[&format!("say push with {GITHUB} as {AWS}, tell {SLACK}, deploy {ENV_SECRET}"), "close"],
    );

    fleet.run_until_idle(&[]).ok();

    let events = std::fs::read_to_string(fleet.task_file(&id, "events.jsonl")).unwrap();
    assert!(
        events.contains(
            "push with ghp_<redacted> as AKIA<redacted>, tell xoxb-<redacted>, deploy \
             <redacted:DEPLOY_TOKEN>"
        ),
        "{events}"
    );
    let record = std::fs::read_to_string(fleet.task_file(&id, "task.json")).unwrap();
    assert!(record.contains("push with ghp_<redacted> as AKIA<redacted>"), "{record}");
    for file in ["events.jsonl", "log.jsonl", "task.json"] {
        let text = std::fs::read_to_string(fleet.task_file(&id, file)).unwrap();
        for secret in [GITHUB, AWS, SLACK] {
            assert!(!text.contains(secret), "{file} leaks {secret}:\n{text}");
        }
    }
    for file in ["events.jsonl", "log.jsonl"] {
        let text = std::fs::read_to_string(fleet.task_file(&id, file)).unwrap();
        assert!(!text.contains(ENV_SECRET), "{file} leaks the env secret:\n{text}");
    }
}

#[test]
fn artifacts_are_written_once_and_never_overwritten() {
    let fleet = Fleet::new(&[("max_noclose", "2")]);
    let id = fleet.task("Long investigation", &[]);
    let plan = fleet.task_file(&id, "artifacts/PLAN_AND_STATUS.md");
    let knowledge = fleet.task_file(&id, "artifacts/KNOWLEDGE.md");
    // Run 1 writes the plan and stops without closing; run 2 does nothing and stops again.
    rescript(&fleet, &id, &[&format!("once touch {}", plan.display())]);

    fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (noclose-blocked)")]);

    assert_eq!(counter(&fleet.show(&id), "attempts"), 2);
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "fake agent was here\n");
    let stub = std::fs::read_to_string(&knowledge).unwrap();
    assert!(stub.starts_with(&format!("# {id} — knowledge")), "{stub}");

    // A human adds knowledge and sets the task open; the next run keeps both files as they are.
    std::fs::write(&knowledge, "- the API needs a trailing slash\n").unwrap();
    rescript(&fleet, &id, &["close"]);
    fleet.run_until_idle(&[]).ok();

    assert_eq!(fleet.show(&id)["status"], "closed");
    assert_eq!(std::fs::read_to_string(&plan).unwrap(), "fake agent was here\n");
    assert_eq!(std::fs::read_to_string(&knowledge).unwrap(), "- the API needs a trailing slash\n");
}

/// A second coder that would fail at once, to tell which coder ran.
fn failing_coder() -> String {
    format!(
        "\n[coders.fake2]\nargv = [{:?}, \"fake-agent\", \"fake: exit 9\"]\nevents = \"claude\"\n",
        crate::common::fleet_bin().display().to_string()
    )
}

#[test]
fn coder_and_model_are_frozen_at_the_first_spawn() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[("model", "\"m1\""), ("max_noclose", "1")], &failing_coder());
    let id = fleet.task("Keeps its agent", &["say not done yet"]);

    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (noclose-blocked)")]);
    assert_eq!(run.starting(&format!("▶ {id} attempt 1 (fake, m1)")).len(), 1, "{}", run.stdout());
    assert_eq!(fleet.show(&id)["status"], "blocked");

    // The config now names another coder and model; the task keeps its first ones, a new task
    // gets the new ones.
    fleet.configure_with(
        &[("coder", "\"fake2\""), ("model", "\"m2\""), ("max_failures", "1")],
        &failing_coder(),
    );
    rescript(&fleet, &id, &["close"]);
    let newcomer = fleet.task("New task", &["close"]);
    let run =
        fleet.run_until_idle(&[]).unfinished(&[&format!("{newcomer} blocked (failure-blocked)")]);

    assert_eq!(run.starting(&format!("▶ {id} attempt 2 (fake, m1)")).len(), 1, "{}", run.stdout());
    assert_eq!(run.starting(&format!("▶ {newcomer} attempt 1 (fake2, m2)")).len(), 1);
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "closed");
    assert_eq!(
        (issue["fleet"]["coder"].as_str(), issue["fleet"]["model"].as_str()),
        (Some("fake"), Some("m1"))
    );
    for started in fleet.runner_lines(&id, "attempt_started") {
        assert_eq!(
            (started["coder"].as_str(), started["model"].as_str()),
            (Some("fake"), Some("m1"))
        );
    }
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(fleet.task_file(&id, "task.json")).unwrap())
            .unwrap();
    assert_eq!((record["coder"].as_str(), record["model"].as_str()), (Some("fake"), Some("m1")));
    assert_eq!(fleet.show(&newcomer)["status"], "blocked", "fake2 exits 9");
}

/// Regression: an empty effective model ("let the CLI choose", the default of several coders)
/// was resolved again on every claim, so a `model` set in runtime.toml later switched the
/// retries of tasks already started.
#[test]
fn an_empty_first_model_is_frozen_too() {
    let fleet = Fleet::new(&[("max_noclose", "1")]);
    let id = fleet.task("Started with the CLI's default model", &["say not done yet"]);
    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (noclose-blocked)")]);
    assert_eq!(run.starting(&format!("▶ {id} attempt 1 (fake): ")).len(), 1, "{}", run.stdout());

    fleet.configure(&[("model", "\"m2\""), ("max_noclose", "1")]);
    rescript(&fleet, &id, &["close"]);
    let run = fleet.run_until_idle(&[]).ok();

    assert_eq!(run.starting(&format!("▶ {id} attempt 2 (fake): ")).len(), 1, "{}", run.stdout());
    for started in fleet.runner_lines(&id, "attempt_started") {
        assert_eq!(started["model"], "", "{started}");
    }
}
