//! Every coder's usage is counted (issue 27): Gemini's session totals reach the ledger and are
//! priced from the built-in table, an attempt fleet kills before its CLI reported a cost is
//! priced from its usage, and a coder's context window comes from its model.

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

use crate::harness::Fleet;

/// The attempts of a task's ledger.
fn ledger(fleet: &Fleet, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fleet.task_file(id, "ledger.json")).expect("a ledger");
    serde_json::from_str::<Value>(&text).expect("JSON")["attempts"].as_array().unwrap().clone()
}

#[test]
fn gemini_session_totals_reach_the_ledger_priced_by_the_model() {
    let fleet = Fleet::new(&[]);
    // A stand-in for Gemini CLI: its stream-json result line, then the close.
    let cli = fleet.home().join("fake-gemini");
    std::fs::write(
        &cli,
        "#!/bin/sh\n\
         echo '{\"type\":\"init\",\"session_id\":\"s1\",\"model\":\"gemini-2.5-flash\"}'\n\
         bd close \"$FLEET_TASK_ID\" --reason done >/dev/null\n\
         echo '{\"type\":\"result\",\"status\":\"success\",\"stats\":{\"total_tokens\":2460,\"input_tokens\":2400,\"output_tokens\":60,\"cached\":400,\"input\":2000,\"duration_ms\":900,\"tool_calls\":1}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    fleet.configure_with(
        &[],
        &format!(
            "\n[coders.gem]\nargv = [{:?}, \"{{prompt}}\"]\nevents = \"gemini\"\n",
            cli.display().to_string()
        ),
    );
    let id = fleet.task_with("Ask Gemini", &[], &["--coder", "gem", "--model", "gemini-2.5-flash"]);
    fleet.run_until_idle(&[]).ok();
    let attempt = &ledger(&fleet, &id)[0];
    assert_eq!(
        (attempt["tokens_in"].as_u64(), attempt["tokens_out"].as_u64()),
        (Some(2400), Some(60))
    );
    assert_eq!(attempt["tokens_cached"], 400, "{attempt}");
    // 2,000 fresh at $0.30, 400 cached at $0.03, 60 out at $2.50 per million.
    let cost = attempt["cost_usd"].as_f64().expect("a cost");
    assert!((cost - 0.000762).abs() < 1e-9, "{cost}");
    assert_eq!(attempt["cost_source"], "priced");
    assert_eq!(attempt["context_limit"], 1_048_576);
}

#[test]
fn a_claude_attempt_killed_before_its_result_is_priced_from_its_usage() {
    let fleet = Fleet::new(&[]);
    // 380k tokens of a 200k window: fleet kills it for context pressure, before any result.
    let id = fleet.task_with(
        "Big context",
        &["spend 380000 2000", "stall"],
        &["--model", "claude-sonnet-4-5"],
    );
    let supervisor = fleet.start(&[]);
    supervisor.wait_finished(&id, 1);
    supervisor.stop().ok();
    let attempt = &ledger(&fleet, &id)[0];
    assert_eq!(attempt["outcome"], "context-pressure", "{attempt}");
    // 380k in at $3 and 2k out at $15 per million.
    let cost = attempt["cost_usd"].as_f64().expect("a cost");
    assert!((cost - 1.17).abs() < 1e-9, "{cost}");
    assert_eq!(attempt["cost_source"], "priced");
}

#[test]
fn a_price_in_runtime_toml_overrides_the_built_in_one() {
    let fleet = Fleet::new(&[("stall_timeout_secs", "2")]);
    fleet.configure_with(
        &[("stall_timeout_secs", "2")],
        "\n[prices.\"claude-sonnet-4-5\"]\ninput = 1.0\noutput = 1.0\n",
    );
    let id = fleet.task_with(
        "Priced by hand",
        &["spend 1000000 0", "stall"],
        &["--model", "claude-sonnet-4-5"],
    );
    let supervisor = fleet.start(&[]);
    supervisor.wait_finished(&id, 1);
    supervisor.stop().ok();
    let cost = ledger(&fleet, &id)[0]["cost_usd"].as_f64().expect("a cost");
    assert!((cost - 1.0).abs() < 1e-9, "{cost}");
}

/// Issue 33: cost shows while an attempt runs, from another coder's parser too — an
/// opencode stand-in reports a step with its cost and keeps working; `fleet tasks --json`
/// and `fleet task ID --json` show the cost so far, reported by the CLI.
#[test]
fn opencode_step_costs_show_while_the_attempt_runs() {
    let fleet = Fleet::new(&[]);
    let cli = fleet.home().join("fake-opencode");
    std::fs::write(
        &cli,
        "#!/bin/sh\n\
         echo '{\"type\":\"step_start\",\"sessionID\":\"s1\",\"part\":{\"type\":\"step-start\"}}'\n\
         echo '{\"type\":\"step_finish\",\"sessionID\":\"s1\",\"part\":{\"reason\":\"tool-calls\",\"cost\":0.042,\"tokens\":{\"input\":900,\"output\":40,\"cache\":{\"read\":100,\"write\":0}}}}'\n\
         exec sleep 600\n",
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    fleet.configure_with(
        &[],
        &format!(
            "\n[coders.oc]\nargv = [{:?}, \"{{prompt}}\"]\nevents = \"opencode\"\n",
            cli.display().to_string()
        ),
    );
    let id = fleet.task_with("Step by step", &[], &["--coder", "oc"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    let row = supervisor.wait_until("the step's cost in fleet tasks", || {
        let view = fleet.ws.json(&["tasks"]);
        let row = view["tasks"][0].clone();
        (row["cost_usd"].as_f64().is_some()).then_some(row)
    });
    assert_eq!(row["running"], true, "{row:#}");
    assert_eq!(row["cost_usd"], 0.042, "{row:#}");
    assert_eq!(row["cost_source"], "reported");
    assert_eq!((row["tokens_in"].as_u64(), row["tokens_out"].as_u64()), (Some(1000), Some(40)));
    let task = fleet.ws.json(&["task", &id]);
    assert_eq!((&task["cost_usd"], &task["running"]), (&row["cost_usd"], &row["running"]));
    supervisor.stop().ok();
}
