//! Quality canaries (issue 33): a coder·model whose attempts fail well above its baseline is
//! held — cause `canary` — until a person resumes it: its remaining tasks stay open, a
//! `canary` notice goes out, `fleet stats --canaries` and `fleet tasks` say so, and after
//! `fleet resume` the coder runs again on a fresh window. A healthy run trips nothing.
//!
//! The window is small (`window = 4`, `min_attempts = 3`) and one agent runs at a time, so
//! the third failure is the one that trips, before the fourth task can be claimed.

use serde_json::Value;

use crate::harness::{Fleet, counter};

/// `[canary]` for a short window, and `[notify]` appending each message to `out`.
fn canary_and_notify(out: &std::path::Path) -> String {
    let command = format!("cat >> '{}' && echo >> '{}'", out.display(), out.display());
    format!(
        "\n[canary]\nwindow = 4\nmin_attempts = 3\n\n[notify]\ncommand = {command:?}\nwindow_secs = 0\n"
    )
}

/// The notices the command received, as `(kind, text)`.
fn notices(out: &std::path::Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(out).unwrap_or_default();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .flat_map(|line| {
            let message: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            message["notices"].as_array().cloned().unwrap_or_default()
        })
        .map(|n| {
            (
                n["kind"].as_str().unwrap_or("").to_owned(),
                n["text"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_run_of_failing_attempts_pauses_the_coder_until_it_is_resumed() {
    let fleet = Fleet::new(&[]);
    let out = fleet.home().join("notices.jsonl");
    let settings = [("max_concurrent", "1"), ("max_failures", "1")];
    fleet.configure_with(&settings, &canary_and_notify(&out));
    let failing: Vec<String> =
        (1..=3).map(|n| fleet.task(&format!("Broken {n}"), &["exit 2"])).collect();
    let waiting = fleet.task("Fine", &["close done"]);

    let run = fleet.run_until_idle(&["--json"]);
    let stdout = run.stdout();
    let events: Vec<Value> =
        stdout.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    let canary = events.iter().find(|e| e["type"] == "canary");
    let canary = canary.unwrap_or_else(|| panic!("no canary event in {stdout}"));
    assert_eq!(canary["subject"], "fake·default", "{canary}");
    assert_eq!(canary["metric"], "failure_rate", "{canary}");
    let detail = canary["detail"].as_str().unwrap();
    assert!(detail.starts_with("failure rate 100% over the last 3 attempts"), "{detail}");
    assert!(
        canary["fix"].as_str().unwrap().contains("fleet resume --coder fake --model default"),
        "{canary}"
    );
    for id in &failing {
        assert_eq!(fleet.show(id)["status"], "blocked", "{id}");
    }
    // The run stopped starting the coder's tasks: the fourth was never claimed.
    let task = fleet.show(&waiting);
    assert_eq!(
        (task["status"].as_str(), counter(&task, "attempts")),
        (Some("open"), 0),
        "{task:#}"
    );
    let idle = events.iter().find(|e| e["type"] == "idle").expect("an idle event");
    assert!(idle["paused"][0].as_str().unwrap().starts_with("fake·default: held"), "{idle}");

    let told = notices(&out);
    let canary_notice = told.iter().find(|(kind, _)| kind == "canary");
    let (_, text) = canary_notice.unwrap_or_else(|| panic!("no canary notice in {told:?}"));
    assert!(text.contains("fake·default paused by the canary: failure rate 100%"), "{text}");

    let view = fleet.ws.json(&["stats", "--canaries"]);
    let row = &view["canaries"][0];
    assert_eq!(
        (row["subject"].as_str(), row["status"].as_str()),
        (Some("fake·default"), Some("tripped")),
        "{view:#}"
    );
    assert_eq!(
        (row["window"]["attempts"].as_u64(), row["window"]["failure_rate"].as_f64()),
        (Some(3), Some(1.0))
    );
    let human = fleet.ws.run(&["stats", "--canaries"]).ok().stdout;
    assert!(human.contains("tripped") && human.contains("100%"), "{human}");
    let tasks = fleet.ws.json(&["tasks"]);
    let pause = tasks["pauses"].as_array().unwrap().iter().find(|p| p["cause"] == "canary");
    let pause = pause.unwrap_or_else(|| panic!("no canary pause in {tasks:#}"));
    assert_eq!((pause["coder"].as_str(), pause["model"].as_str()), (Some("fake"), Some("")));

    // Still held by a new run; resumed, the coder runs again and is judged afresh.
    fleet.run_until_idle(&[]);
    assert_eq!(counter(&fleet.show(&waiting), "attempts"), 0);
    // As the hint says: `default` names the model the CLI picks itself.
    let resumed = fleet.ws.run(&["resume", "--coder", "fake", "--model", "default"]).ok().stdout;
    assert!(resumed.contains("resumed"), "{resumed}");
    let after = fleet.ws.json(&["stats", "--canaries"]);
    assert_eq!(after["canaries"][0]["status"], "learning", "a fresh window: {after:#}");
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&waiting)["status"], "closed");
    let after = fleet.ws.json(&["stats", "--canaries"]);
    assert_eq!(after["canaries"][0]["window"]["attempts"], 1, "{after:#}");
}

#[test]
fn a_healthy_run_trips_no_canary() {
    let fleet = Fleet::new(&[]);
    let out = fleet.home().join("notices.jsonl");
    fleet.configure_with(&[("max_concurrent", "1")], &canary_and_notify(&out));
    let ids: Vec<String> =
        (1..=3).map(|n| fleet.task(&format!("Fine {n}"), &["close done"])).collect();
    let run = fleet.run_until_idle(&["--json"]).ok();
    assert!(!run.stdout().contains(r#""type":"canary""#), "{}", run.stdout());
    for id in &ids {
        assert_eq!(fleet.show(id)["status"], "closed");
    }
    assert!(notices(&out).iter().all(|(kind, _)| kind != "canary"));
    let view = fleet.ws.json(&["stats", "--canaries"]);
    let row = &view["canaries"][0];
    assert_eq!(
        (row["status"].as_str(), row["window"]["attempts"].as_u64()),
        (Some("ok"), Some(3)),
        "{view:#}"
    );
}
