//! What only Claude Code does under `fleet run`, against the mock Messages API: accounts of
//! one coder, each with its own key, rotated past the one the API rate limits. The scenarios
//! every coder plays, claude among them, are in `table.rs`; its setup is in `coder.rs`.

use crate::coder::CLAUDE;
use crate::harness::Sandbox;
use crate::mock::{Api, MockApi};
use crate::{DEADLINE, Scene, assert_no_leftovers, counter, runtime_toml, scenario};

/// The keys of the two accounts of [`account_rotation_goes_on_past_a_rate_limited_key`]:
/// no token shape gives them away, only the name of their variable.
const KEY_A: &str = "e2e-account-a-key-7f3c9d";
const KEY_B: &str = "e2e-account-b-key-2b8e41";

#[test]
fn account_rotation_goes_on_past_a_rate_limited_key() {
    let Some(cli) = CLAUDE.cli() else { return };
    let sandbox = Sandbox::new();
    // The mock refuses account a's key with 429 and serves account b's.
    let mock = MockApi::start(Api::Anthropic, scenario("account_rate_limit"));
    let coder_env =
        [("ANTHROPIC_BASE_URL", mock.base_url()), ("CLAUDE_CODE_MAX_RETRIES", "2".to_owned())];
    let mut toml =
        runtime_toml(CLAUDE.name, CLAUDE.model, &cli, &coder_env, &[("max_concurrent", "2")]);
    for (name, key) in [("a", KEY_A), ("b", KEY_B)] {
        toml.push_str(&format!(
            "\n[[coders.claude.accounts]]\nname = \"{name}\"\nenv = {{ ANTHROPIC_API_KEY = \"{key}\" }}\n"
        ));
    }
    sandbox.write_runtime(&toml);
    let ids: Vec<String> =
        (1..=3).map(|n| sandbox.create_task(&format!("e2e account {n}"))).collect();
    // No key in the supervisor's environment: each agent has only its account's.
    let supervisor_env = vec![("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned())];
    let scene = Scene { sandbox, mock, id: ids[0].clone(), supervisor_env };
    let mut supervisor = scene.start(true);
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

/// Runs `git ARGS` in `dir`, asserts success, returns stdout.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Issue 30: the real Claude Code works in the task's own worktree — it edits, commits on its
/// branch and closes with `bd close` — and fleet lands the commit on the base branch, with the
/// task's trailer, bringing the person's clean checkout up to date.
#[test]
fn works_in_its_own_worktree_and_its_commit_lands() {
    let Some(scene) = CLAUDE.scene_with("worktree_commit", &[]) else { return };
    let repo = scene.sandbox.root().join("project");
    std::fs::create_dir_all(&repo).expect("create the project");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Person"]);
    git(&repo, &["config", "user.email", "person@example.invalid"]);
    std::fs::write(repo.join("README"), "project\n").expect("write README");
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-qm", "Start"]);
    let repo_text = repo.display().to_string();
    scene.sandbox.fleet(&["update", &scene.id, "--cwd", &repo_text]);

    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "--until-idle ends once it landed{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "closed", "{}", context());
    assert_eq!(issue["close_reason"], "done", "{}", context());

    // The agent worked on its own branch, in fleet's worktree, not in the person's checkout.
    let worktree = issue["fleet"]["land"]["worktree"].as_str().unwrap_or_default().to_owned();
    assert!(worktree.starts_with(&scene.sandbox.home.display().to_string()), "{}", context());
    let seen = std::fs::read_to_string(std::path::Path::new(&worktree).join("../branch-seen.txt"))
        .unwrap_or_default();
    assert_eq!(seen.trim(), format!("fleet/{}", scene.id), "{}", context());

    // Landed once on main, with the trailer; the clean checkout was brought up to date.
    let log = git(&repo, &["log", "main", "--format=%B%x00"]);
    let trailer = format!("Fleet-Task: {}", scene.id);
    assert_eq!(log.matches(&trailer).count(), 1, "{log}{}", context());
    assert_eq!(git(&repo, &["show", "main:hello.txt"]), "hello\n", "{}", context());
    assert_eq!(std::fs::read_to_string(repo.join("hello.txt")).unwrap_or_default(), "hello\n");
    assert!(git(&repo, &["status", "--porcelain"]).is_empty(), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}

/// Issue 32: a message sent to a task while Claude Code works on it reaches the agent at its
/// next turn — fleet's `PostToolUse` hook (`claude --settings`, `bd mail inbox --new
/// --hook-json`) adds it to the context of the request after the tool call, once.
#[test]
fn mail_reaches_a_running_agent_at_its_next_turn() {
    let Some(scene) = CLAUDE.scene_with("mail_mid_run", &[]) else { return };
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "the run ends with the task closed{}", context());
    assert_eq!(scene.sandbox.show(&scene.id)["status"], "closed", "{}", context());
    let requests = scene.mock.model_requests();
    let carries = |r: &crate::mock::Request| r.all_text().contains("mid-run note from a peer");
    let first = requests.iter().position(|r| carries(r) && r.all_text().contains("New messages"));
    let first = first.unwrap_or_else(|| panic!("no request carried the message{}", context()));
    // Delivered after the tool call that sent it, and by the hook only once.
    assert!(first >= 1, "{}", context());
    let hook_deliveries = requests
        .iter()
        .map(|r| r.all_text().matches("New messages for your task").count())
        .max()
        .unwrap_or(0);
    assert_eq!(hook_deliveries, 1, "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
}
