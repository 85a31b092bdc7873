//! `fleet stats --agents` over ledgers the supervisor wrote from real agent output: the
//! built-in `claude` and `codex` coders run a script that replays streams captured from the
//! real CLIs (`tests/fixtures/*-stream/`) and closes its task, so the ledgers hold what those
//! CLIs reported — claude's own cost, codex's tokens priced by `[prices."MODEL"]`. Claude
//! rotates over two accounts.
//!
//! The captured totals: claude `hello` 1200 in / 20 out / $0.0065, `bash` 2400 / 40 / $0.013;
//! codex `hello` 1200 / 20, `bash` 2400 / 40, at $1 and $10 per million: $0.0014 and $0.0028.

use std::path::Path;

use serde_json::Value;

use crate::harness::Fleet;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A fleet whose claude (two accounts) and codex replay `$REPLAY_DIR/<task id>.jsonl`.
fn replaying_fleet() -> Fleet {
    let fleet = Fleet::new(&[]);
    let replay_dir = fleet.home().join("replay");
    std::fs::create_dir_all(&replay_dir).unwrap();
    let script = fleet.home().join("replay.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat \"$REPLAY_DIR/$FLEET_TASK_ID.jsonl\"\nbd close \"$FLEET_TASK_ID\" --reason replayed >/dev/null 2>&1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (script, replay) = (script.display().to_string(), replay_dir.display().to_string());
    let settings = [("coder", "\"claude\""), ("max_concurrent", "1")];
    fleet.configure_with(
        &settings,
        &format!(
            "\n[coders.claude]\nprogram = {script:?}\nenv = {{ REPLAY_DIR = {replay:?} }}\n\
             \n[[coders.claude.accounts]]\nname = \"a\"\nenv = {{ ANTHROPIC_API_KEY = \"key-a-0123456789\" }}\n\
             \n[[coders.claude.accounts]]\nname = \"b\"\nenv = {{ ANTHROPIC_API_KEY = \"key-b-0123456789\" }}\n\
             \n[coders.codex]\nprogram = {script:?}\nenv = {{ REPLAY_DIR = {replay:?} }}\n\
             \n[prices.\"gpt-5-codex\"]\ninput = 1.0\noutput = 10.0\n"
        ),
    );
    fleet
}

/// Creates a task that replays `stream` (`claude-stream/hello.jsonl`), with `extra` arguments.
fn replay_task(fleet: &Fleet, title: &str, stream: &str, extra: &[&str]) -> String {
    let mut args = vec!["-d", "replayed"];
    args.extend_from_slice(extra);
    let id = fleet.ws.create(title, &args);
    std::fs::copy(fixture(stream), fleet.home().join("replay").join(format!("{id}.jsonl")))
        .unwrap();
    id
}

/// `fleet stats --agents ARGS --json`, its groups by key.
fn groups(fleet: &Fleet, args: &[&str]) -> serde_json::Map<String, Value> {
    let mut all = vec!["stats", "--agents"];
    all.extend_from_slice(args);
    let stats = fleet.ws.json(&all);
    let mut by_key = serde_json::Map::new();
    for group in stats["groups"].as_array().unwrap() {
        by_key.insert(group["key"].as_str().unwrap().to_owned(), group.clone());
    }
    by_key.insert("total".to_owned(), stats["total"].clone());
    by_key
}

#[track_caller]
fn assert_sums(group: &Value, attempts: u64, tokens: (u64, u64), cost: f64, closed: u64) {
    assert_eq!(group["attempts"].as_u64(), Some(attempts), "{group:#}");
    assert_eq!(
        (group["tokens_in"].as_u64(), group["tokens_out"].as_u64()),
        (Some(tokens.0), Some(tokens.1)),
        "{group:#}"
    );
    let got = group["cost_usd"].as_f64().unwrap_or(f64::NAN);
    assert!((got - cost).abs() < 1e-9, "cost {got} != {cost}: {group:#}");
    assert_eq!(group["closed_tasks"].as_u64(), Some(closed), "{group:#}");
    let per_task = group["cost_per_closed_task_usd"].as_f64().unwrap_or(f64::NAN);
    assert!((per_task - cost / closed as f64).abs() < 1e-9, "{group:#}");
}

#[test]
fn agent_stats_sum_the_ledgers_of_replayed_claude_and_codex_streams() {
    let fleet = replaying_fleet();
    // Priorities fix the order: the claude tasks run first, on account a then b.
    let hello = replay_task(&fleet, "claude hello", "claude-stream/hello.jsonl", &["-p", "0"]);
    replay_task(&fleet, "claude bash", "claude-stream/bash.jsonl", &["-p", "1"]);
    let codex = ["--coder", "codex", "--model", "gpt-5-codex"];
    replay_task(
        &fleet,
        "codex hello",
        "codex-stream/hello.jsonl",
        &[&["-p", "2"], &codex[..]].concat(),
    );
    replay_task(
        &fleet,
        "codex bash",
        "codex-stream/bash.jsonl",
        &[&["-p", "3"], &codex[..]].concat(),
    );
    let run = fleet.run_until_idle(&[]).ok();
    assert_eq!(run.starting("✓ ").len(), 4, "every task closed:\n{}", run.stdout());

    let by_coder = groups(&fleet, &[]);
    assert_sums(&by_coder["claude"], 2, (3600, 60), 0.0195, 2);
    assert_sums(&by_coder["codex"], 2, (3600, 60), 0.0042, 2);
    assert_sums(&by_coder["total"], 4, (7200, 120), 0.0237, 4);

    let by_model = groups(&fleet, &["--by", "model"]);
    assert_sums(&by_model["sonnet"], 2, (3600, 60), 0.0195, 2);
    assert_sums(&by_model["gpt-5-codex"], 2, (3600, 60), 0.0042, 2);

    let by_account = groups(&fleet, &["--by", "account"]);
    assert_sums(&by_account["a"], 1, (1200, 20), 0.0065, 1);
    assert_sums(&by_account["b"], 1, (2400, 40), 0.013, 1);
    assert_sums(&by_account["-"], 2, (3600, 60), 0.0042, 2);

    let by_cwd = groups(&fleet, &["--by", "cwd"]);
    assert_sums(&by_cwd[&fleet.home().display().to_string()], 4, (7200, 120), 0.0237, 4);

    // --since leaves out what started before: the first claude attempt, moved three days back.
    let ledger_path = fleet.task_file(&hello, "ledger.json");
    let mut ledger: Value =
        serde_json::from_str(&std::fs::read_to_string(&ledger_path).unwrap()).unwrap();
    let three_days_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(72);
    ledger["attempts"][0]["started_at"] = Value::from(three_days_ago.to_string());
    std::fs::write(&ledger_path, ledger.to_string()).unwrap();
    let recent = groups(&fleet, &["--since", "1d", "--by", "account"]);
    assert!(!recent.contains_key("a"), "{recent:?}");
    assert_sums(&recent["b"], 1, (2400, 40), 0.013, 1);
    assert_sums(&recent["total"], 3, (6000, 100), 0.0172, 3);
    let all = groups(&fleet, &["--since", "7d"]);
    assert_sums(&all["total"], 4, (7200, 120), 0.0237, 4);
    let date = three_days_ago.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    assert_eq!(groups(&fleet, &["--since", &date])["total"]["attempts"], 4);

    // The fixed context: each claude attempt's first request (1,200 tokens), costliest a day
    // first — account a's attempt now started three days ago. Codex reports only a turn's
    // totals, so it has no first request.
    let overhead = fleet.ws.json(&["stats", "--overhead"]);
    let firsts: Vec<(String, String, u64, u64)> = overhead["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let text = |key: &str| g[key].as_str().unwrap().to_owned();
            let count = |key: &str| g[key].as_u64().unwrap();
            (text("account"), text("cwd"), count("median_tokens"), count("attempts_last_day"))
        })
        .collect();
    let home = fleet.home().display().to_string();
    assert_eq!(
        firsts,
        [("b".into(), home.clone(), 1200, 1), ("a".into(), home.clone(), 1200, 0)],
        "{overhead:#}"
    );
    // Sonnet's list price, $3 per million input tokens.
    assert!((overhead["groups"][0]["usd_per_day"].as_f64().unwrap() - 0.0036).abs() < 1e-9);
    assert_eq!(
        fleet.ws.json(&["stats", "--overhead", "--since", "1d"])["groups"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let table = fleet.ws.run(&["stats", "--overhead"]).ok().stdout;
    for cell in ["MEDIAN", "$/DAY", "claude", "1.2k"] {
        assert!(table.contains(cell), "{cell} in\n{table}");
    }
    let lone = fleet.ws.run(&["stats", "--since", "1d"]).fails(2);
    assert!(lone.stderr.contains("--overhead"), "{}", lone.stderr);

    let text = fleet.ws.run(&["stats", "--agents"]).ok().stdout;
    for cell in ["CODER", "COST/CLOSED", "claude", "codex", "total", "3.6k", "$0.019", "$0.004"] {
        assert!(text.contains(cell), "{cell} in\n{text}");
    }
    let bad = fleet.ws.run(&["stats", "--agents", "--since", "last tuesday-ish"]).fails(2);
    assert!(bad.stderr.contains("invalid --since \"last tuesday-ish\""), "{}", bad.stderr);
    let without = fleet.ws.run(&["stats", "--by", "model"]).fails(2);
    assert!(without.stderr.contains("--agents"), "{}", without.stderr);
    // Plain `fleet stats` is the queue's, as before.
    assert_eq!(fleet.ws.json(&["stats"])["closed_issues"], 4);
}
