//! Issue 32: agents that coordinate through the queue, on the real binary without a
//! supervisor — `fleet mail` / `bd mail` (send, inbox, ack, thread; secrets masked), file
//! reservations (`reserve`, `release-files`, overlap warnings, the pre-commit guard), the
//! one-task rule of an agent inside a run (its environment as the supervisor sets it), and
//! in-progress tasks held by no one named by `fleet tasks` and `fleet doctor`.

use std::path::Path;
use std::process::Command;

use crate::common::{Run, Workspace, fleet_bin};

/// `args` run as an agent of a `fleet run` attempt at `task` (the variables the supervisor
/// sets), as `bd` would be.
fn as_agent(ws: &Workspace, task: &str, args: &[&str]) -> Run {
    let mut bd = vec!["bd"];
    bd.extend_from_slice(args);
    let mut cmd = ws.command(&bd);
    cmd.env("FLEET_TASK_ID", task)
        .env("FLEET_ATTEMPT", "01ATTEMPT")
        .env("BD_ACTOR", "fleet@h/agent");
    cmd.env_remove("FLEET_ACTOR");
    cmd.output().expect("run bd").into()
}

fn as_actor(ws: &Workspace, actor: &str, args: &[&str]) -> Run {
    let mut cmd = ws.command(args);
    cmd.env("FLEET_ACTOR", actor);
    cmd.output().expect("run fleet").into()
}

#[test]
fn mail_reaches_the_recipients_inbox_and_an_ack_takes_it_out() {
    let ws = Workspace::new();
    let (a, b) = (ws.create("writer", &[]), ws.create("reader", &[]));
    let sent = as_agent(&ws, &a, &["mail", "send", &b, "the", "schema", "moved", "--json"]).ok();
    let sent = sent.json();
    assert_eq!(
        (sent["to"].as_str(), sent["from_task"].as_str()),
        (Some(b.as_str()), Some(a.as_str()))
    );
    assert_eq!(sent["body"], "the schema moved");
    assert_eq!(sent["thread"], b.as_str());
    let id = sent["id"].as_str().unwrap().to_string();

    // The recipient's agent sees it; the sender's does not.
    let inbox = as_agent(&ws, &b, &["mail", "inbox"]).ok().stdout;
    assert!(inbox.contains(&id) && inbox.contains("the schema moved"), "{inbox}");
    assert!(inbox.contains(&format!("fleet@h/agent ({a}) → task {b}")), "{inbox}");
    let theirs = as_agent(&ws, &a, &["mail", "inbox", "--json"]).ok().json();
    assert_eq!(theirs, serde_json::json!([]));

    // Acknowledged by the unique end of its id, it leaves the inbox; --all still lists it.
    let acked = as_agent(&ws, &b, &["mail", "ack", &id[id.len() - 4..], "--json"]).ok().json();
    assert_eq!(acked["acked"], serde_json::json!([id]));
    assert_eq!(as_agent(&ws, &b, &["mail", "inbox", "--json"]).ok().json(), serde_json::json!([]));
    let all = as_agent(&ws, &b, &["mail", "inbox", "--all", "--json"]).ok().json();
    assert_eq!(all[0]["acked_by"], "fleet@h/agent");

    // A person reads a task's inbox and its thread, and gets mail of their own.
    let shown = ws.run(&["mail", "inbox", "--task", &b, "--all"]).ok().stdout;
    assert!(shown.contains("read by fleet@h/agent"), "{shown}");
    as_agent(&ws, &b, &["mail", "send", "alice", "need a decision on the schema"]).ok();
    let alices = as_actor(&ws, "alice", &["mail", "inbox", "--json"]).ok().json();
    assert_eq!(alices.as_array().unwrap().len(), 1, "{alices}");
    assert_eq!(alices[0]["thread"], b.as_str());
    let thread = ws.json(&["mail", "thread", &b]);
    assert_eq!(thread.as_array().unwrap().len(), 2, "{thread}");
    let task_view = ws.run(&["task", &b, "mail"]).ok().stdout;
    assert!(task_view.contains("need a decision"), "{task_view}");

    // Bad input is named.
    let empty = ws.run(&["mail", "send", &b, " "]).fails(1);
    assert!(empty.stderr.contains("the message is empty"), "{}", empty.stderr);
    let unknown = ws.run(&["mail", "ack", "m-nothere"]).fails(1);
    assert!(unknown.stderr.contains("no message m-nothere"), "{}", unknown.stderr);

    // A mistyped task id still goes out (to a person of that name), with a warning; a plain
    // name gets none.
    let mistyped = ws.run(&["mail", "send", &format!("{b}x"), "for the agent"]).ok();
    assert!(
        mistyped.stderr.contains(&format!("no task {b}x in this queue")),
        "{}",
        mistyped.stderr
    );
    let to_alice = ws.run(&["mail", "send", "alice", "hello"]).ok();
    assert!(!to_alice.stderr.contains("warning"), "{}", to_alice.stderr);
}

#[test]
fn secrets_in_mail_and_reservation_reasons_are_masked() {
    let ws = Workspace::new();
    let task = ws.create("t", &[]);
    let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
    ws.run(&["mail", "send", &task, &format!("use {key} for the API")]).ok();
    ws.run(&["reserve", "src/**", "--task", &task, "--reason", &format!("rotating {key}")]).ok();
    let inbox = ws.run(&["mail", "inbox", "--task", &task]).ok().stdout;
    assert!(inbox.contains("use sk-ant-<redacted> for the API"), "{inbox}");
    let files = ws.run(&["task", &task, "files"]).ok().stdout;
    assert!(files.contains("rotating sk-ant-<redacted>"), "{files}");
    let store = std::fs::read(ws.beads_dir().join("beads.db")).unwrap();
    assert!(!String::from_utf8_lossy(&store).contains(key), "the key reached the store");
}

#[test]
fn an_agent_inside_a_run_may_not_claim_another_task() {
    let ws = Workspace::new();
    let (own, other) = (ws.create("own", &[]), ws.create("other", &[]));
    for args in [
        vec!["update", other.as_str(), "--claim"],
        vec!["claim", other.as_str()],
        vec!["ready", "--claim"],
        vec!["update", other.as_str(), "--status", "in_progress"],
        vec!["close", own.as_str(), "--claim-next"],
    ] {
        let refused = as_agent(&ws, &own, &args).fails(1);
        assert!(
            refused.stderr.contains(&format!("this agent runs {own} in a fleet run")),
            "{args:?}: {}",
            refused.stderr
        );
    }
    // Its own task it may take (the supervisor already has), and nothing else changed: the
    // close that asked to claim the next task did not happen either.
    assert_eq!(ws.json(&["show", &own])[0]["status"], "open");
    as_agent(&ws, &own, &["update", &own, "--claim"]).ok();
    let shown = ws.json(&["show", &other]);
    assert_eq!((shown[0]["status"].as_str(), shown[0].get("assignee")), (Some("open"), None));
    // Outside a run the same claim goes through.
    ws.run(&["claim", &other]).ok();
}

#[test]
fn tasks_and_doctor_name_an_in_progress_task_held_by_no_one() {
    let ws = Workspace::new();
    let (orphan, persons) = (ws.create("orphan", &[]), ws.create("a person's", &[]));
    // An agent's claim made outside any attempt (as older primers told agents to do).
    as_actor(&ws, "fleet@gone-host/agent", &["claim", &orphan]).ok();
    as_actor(&ws, "alice", &["claim", &persons]).ok();

    let tasks = ws.json(&["tasks"]);
    let unheld = tasks["unheld"].as_array().unwrap();
    assert_eq!(unheld.len(), 1, "{tasks}");
    assert_eq!(unheld[0]["id"], orphan.as_str());
    assert!(unheld[0]["why"].as_str().unwrap().contains("outside any attempt"), "{tasks}");
    let text = ws.run(&["tasks"]).ok().stdout;
    assert!(text.contains(&format!("✗ {orphan} in progress, held by no one")), "{text}");
    assert!(text.contains(&format!("fleet release {orphan}")), "{text}");

    let doctor = ws.run(&["doctor", "--json"]);
    let setup = doctor.json()["setup"].clone();
    let check = setup.as_array().unwrap().iter().find(|c| c["subject"] == "tasks in progress");
    let check = check.unwrap_or_else(|| panic!("no check of tasks in progress: {setup}"));
    assert_eq!(check["status"], "problem", "{check}");
    assert!(check["detail"].as_str().unwrap().contains(&orphan), "{check}");
    assert!(!check["detail"].as_str().unwrap().contains(&persons), "{check}");
    assert_eq!(doctor.code, 1);
}

#[test]
fn reservations_are_listed_warn_of_overlaps_and_end_when_released() {
    let ws = Workspace::new();
    let (a, b) = (ws.create("a", &[]), ws.create("b", &[]));
    as_actor(&ws, "alice", &["claim", &a]).ok();
    as_actor(&ws, "bob", &["claim", &b]).ok();
    let made = ws
        .run(&[
            "reserve",
            "src/store/**",
            "--exclusive",
            "--ttl",
            "1h",
            "--task",
            &a,
            "--reason",
            "new table",
            "--json",
        ])
        .ok()
        .json();
    let id = made["reservation"]["id"].as_str().unwrap().to_string();
    assert!(made["reservation"]["expires_at"].is_string(), "{made}");
    // An overlapping reservation is granted, with a warning naming the other one.
    let overlap = ws.run(&["reserve", "src/**/*.rs", "--task", &b, "--reason", "lint"]).ok();
    assert!(
        overlap.stderr.contains(&format!("{a}'s exclusive reservation {id}")),
        "{}",
        overlap.stderr
    );
    let apart = ws.run(&["reserve", "docs/**", "--task", &b, "--reason", "docs"]).ok();
    assert!(!apart.stderr.contains("overlaps"), "{}", apart.stderr);

    let live = ws.json(&["tasks"])["reservations"].clone();
    assert_eq!(live.as_array().unwrap().len(), 3, "{live}");
    let released = ws.json(&["release-files", "--task", &a]);
    assert_eq!(released["released"], serde_json::json!([id]));
    assert_eq!(ws.json(&["tasks"])["reservations"].as_array().unwrap().len(), 2);

    let bad = ws.run(&["reserve", "/etc/**", "--task", &b, "--reason", "x"]).fails(1);
    assert!(bad.stderr.contains("absolute"), "{}", bad.stderr);
    let no_task = ws.run(&["reserve", "src/**", "--reason", "x"]).fails(1);
    assert!(no_task.stderr.contains("--task ID"), "{}", no_task.stderr);
}

/// Runs `program args` in `dir` with the workspace's queue and `bd` on PATH (a link to fleet),
/// as an agent of `task` when given.
fn in_repo(ws: &Workspace, dir: &Path, task: Option<&str>, program: &str, args: &[&str]) -> Run {
    let bin = ws.home().join("bin");
    if !bin.join("bd").exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(fleet_bin(), bin.join("bd")).unwrap();
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()))
        .env("HOME", dir)
        .env("BEADS_DIR", ws.beads_dir())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    if let Some(task) = task {
        cmd.env("FLEET_TASK_ID", task);
    }
    cmd.output().expect("run").into()
}

#[test]
fn the_pre_commit_guard_refuses_a_commit_touching_another_tasks_exclusive_files() {
    let ws = Workspace::new();
    let repo = tempfile::tempdir().unwrap();
    let repo = repo.path();
    in_repo(&ws, repo, None, "git", &["init", "-q", "-b", "main"]).ok();
    in_repo(&ws, repo, None, "bd", &["hooks", "install"]).ok();
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    let (a, b) = (ws.create("a", &[]), ws.create("b", &[]));
    as_actor(&ws, "fleet@h", &["claim", &a]).ok();
    ws.run(&["reserve", "src/**", "--exclusive", "--task", &a, "--reason", "moving modules"]).ok();

    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/lib.rs"), "// b's change\n").unwrap();
    std::fs::write(repo.join("README.md"), "b's docs\n").unwrap();
    in_repo(&ws, repo, Some(&b), "git", &["add", "src/lib.rs"]).ok();
    let refused = in_repo(&ws, repo, Some(&b), "git", &["commit", "-q", "-m", "b"]).fails(1);
    assert!(
        refused.stderr.contains(&format!("src/lib.rs is reserved by {a}")),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("moving modules") && refused.stderr.contains("--no-verify"));
    // Files no one reserved commit; so does the reserving task's own agent.
    in_repo(&ws, repo, Some(&b), "git", &["reset", "-q"]).ok();
    in_repo(&ws, repo, Some(&b), "git", &["add", "README.md"]).ok();
    in_repo(&ws, repo, Some(&b), "git", &["commit", "-q", "-m", "docs"]).ok();
    in_repo(&ws, repo, Some(&a), "git", &["add", "src/lib.rs"]).ok();
    in_repo(&ws, repo, Some(&a), "git", &["commit", "-q", "-m", "a"]).ok();

    // Once the task is no longer in progress, its reservation lapses.
    std::fs::write(repo.join("src/lib.rs"), "// b again\n").unwrap();
    in_repo(&ws, repo, Some(&b), "git", &["add", "src/lib.rs"]).ok();
    in_repo(&ws, repo, Some(&b), "git", &["commit", "-q", "-m", "b"]).fails(1);
    ws.run(&["close", &a, "--reason", "done"]).ok();
    in_repo(&ws, repo, Some(&b), "git", &["commit", "-q", "-m", "b"]).ok();
    let files = ws.run(&["task", &a, "files"]).ok().stdout;
    assert!(files.contains("moving modules (lapsed)"), "{files}");
}

/// What Claude Code's `PostToolUse` hook runs inside an attempt (`claude --settings`): each new
/// message once, as the hook's additional context; nothing at all when there is none.
#[test]
fn the_coders_hook_delivers_each_new_message_once() {
    let ws = Workspace::new();
    let (task, other) = (ws.create("runs", &[]), ws.create("writes", &[]));
    let task_dir = tempfile::tempdir().unwrap();
    let hook = || {
        let mut cmd = ws.command(&["bd", "mail", "inbox", "--new", "--hook-json"]);
        cmd.env("FLEET_TASK_ID", &task).env("FLEET_TASK_DIR", task_dir.path());
        Run::from(cmd.output().expect("run bd"))
    };
    assert_eq!(hook().ok().stdout, "");
    as_agent(&ws, &other, &["mail", "send", &task, "first"]).ok();
    let out = hook().ok().stdout;
    let json: serde_json::Value = serde_json::from_str(&out).expect("hook JSON");
    assert_eq!(json["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let context = json["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("first") && context.contains("bd mail ack"), "{context}");
    assert_eq!(hook().ok().stdout, "", "a message is delivered once");
    as_agent(&ws, &other, &["mail", "send", &task, "second"]).ok();
    let again = hook().ok().stdout;
    assert!(again.contains("second") && !again.contains("first"), "{again}");
}
