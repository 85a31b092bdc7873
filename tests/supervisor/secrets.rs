//! Secrets never reach the queue or the task files in clear: what an agent prints on stderr
//! becomes a redacted failure comment, and the values of secret-looking variables handed to
//! the agent are masked wherever they appear.

use crate::harness::{Fleet, counter};

/// A GitHub token shape (fake).
const GITHUB: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
/// An AWS access key id shape (AWS's documented example).
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
/// A Slack bot token shape (fake).
const SLACK: &str = "xoxb-1234567890-abcdefghijklmnop";
/// The value of a secret-looking variable in the coder's environment.
const ENV_SECRET: &str = "hunter2-very-private-value";

#[test]
fn a_failure_comment_quotes_stderr_with_every_secret_masked() {
    let fleet = Fleet::new(&[("max_failures", "1")]);
    // The shapes travel in harmless-looking variables (only their shape gives them away); the
    // last one is secret by its name. The task's own text names nothing secret.
    fleet.configure_with(
        &[("max_failures", "1")],
        &format!(
            "\n[coders.fake.env]\nGH = {GITHUB:?}\nAWS_ID = {AWS:?}\nSLACK_BOT = {SLACK:?}\nDEPLOY_TOKEN = {ENV_SECRET:?}\n"
        ),
    );
    let id = fleet.task("Leaky deploy", &["leak GH AWS_ID SLACK_BOT DEPLOY_TOKEN", "exit 2"]);
    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (failure-blocked)")]);

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked", "{}", run.stdout());
    assert_eq!(counter(&issue, "failures"), 0, "the count resets when the task is blocked");
    let comments = fleet.comments(&id).join("\n");
    assert!(comments.contains("deploy failed"), "the reason is quoted: {comments}");
    assert!(comments.contains("GH=ghp_<redacted>"), "{comments}");
    assert!(comments.contains("DEPLOY_TOKEN=<redacted:DEPLOY_TOKEN>"), "{comments}");
    let everything = [
        comments,
        fleet.ws.run(&["export", "--all"]).ok().stdout,
        std::fs::read_to_string(fleet.task_file(&id, "log.stderr")).unwrap(),
        std::fs::read_to_string(fleet.task_file(&id, "log.jsonl")).unwrap(),
        std::fs::read_to_string(fleet.task_file(&id, "events.jsonl")).unwrap(),
        std::fs::read_to_string(fleet.task_file(&id, "task.json")).unwrap(),
        run.stdout(),
        run.stderr.clone(),
    ]
    .join("\n");
    for secret in [GITHUB, AWS, SLACK, ENV_SECRET] {
        assert!(!everything.contains(secret), "{secret} leaked:\n{everything}");
    }
}

/// An Anthropic key shape (fake).
const ANTHROPIC: &str = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa9876";
/// An account's key: only the name of its variable gives it away.
const ACCOUNT_KEY: &str = "acct-key-5e1f0c9d7b3a";
/// A secret-looking variable of the supervisor's own environment.
const SUPERVISOR_SECRET: &str = "sup-token-b7c4e19a02fd";
/// A secret the agent's shell makes up by itself (the supervisor never sees it).
const AGENT_SECRET: &str = "agent-local-secret-4242";

/// Everything the journal's git repository holds, every object's content.
fn journal_objects(fleet: &Fleet) -> String {
    fleet.ws.run(&["journal", "commit"]).ok();
    let repo = fleet.ws.beads_dir().join("journal.git");
    let output = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&repo)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .expect("run git cat-file");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let objects = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(objects.contains("ops.jsonl"), "the journal has commits: {objects}");
    objects
}

#[test]
fn secrets_an_agent_writes_into_the_queue_are_masked_in_the_store_export_and_journal() {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(
        &[("coder", "\"exec\"")],
        &format!(
            "\n[coders.exec.env]\nANTH = {ANTHROPIC:?}\nGH = {GITHUB:?}\n\
             \n[[coders.exec.accounts]]\nname = \"main\"\nenv = {{ SERVICE_API_KEY = {ACCOUNT_KEY:?} }}\n"
        ),
    );
    // The command names the secrets only through variables, so the task's own text holds none.
    let script = [
        "export LOCAL_SECRET=\"agent-local-$(echo secret)-4242\"",
        "all=\"$ANTH $GH $SERVICE_API_KEY $SUPERVISOR_TOKEN $LOCAL_SECRET\"",
        "bd comment $FLEET_TASK_ID \"through the server: $all\"",
        "FLEET_DIRECT=1 bd comment $FLEET_TASK_ID \"written directly: $all\"",
        "bd update $FLEET_TASK_ID --notes \"notes: $all\" --title \"title $GH\"",
        "bd close $FLEET_TASK_ID --reason \"closing with $all\"",
    ]
    .join("\n");
    let id = fleet.ws.create("Leaks its keys", &["-d", &script]);
    let mut command = fleet.ws.command(&["run", "--until-idle"]);
    command.env("SUPERVISOR_TOKEN", SUPERVISOR_SECRET);
    let run = crate::harness::Supervisor::spawn(command).wait().ok();

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "closed", "{}", run.stdout());
    let comments = fleet.comments(&id).join("\n");
    assert!(comments.contains("through the server: sk-ant-<redacted>"), "{comments}");
    assert!(comments.contains("<redacted:SERVICE_API_KEY>"), "{comments}");
    assert!(comments.contains("<redacted:LOCAL_SECRET>"), "{comments}");
    assert!(comments.contains("written directly: sk-ant-<redacted> ghp_<redacted>"), "{comments}");
    let store_file = std::fs::read(fleet.ws.beads_dir().join("beads.db")).expect("the store");
    let everything = [
        issue.to_string(),
        comments,
        fleet.ws.run(&["export", "--all"]).ok().stdout,
        journal_objects(&fleet),
        String::from_utf8_lossy(&store_file).into_owned(),
    ]
    .join("\n");
    for secret in [ANTHROPIC, GITHUB, ACCOUNT_KEY, SUPERVISOR_SECRET, AGENT_SECRET] {
        assert!(!everything.contains(secret), "{secret} reached the queue:\n{everything}");
    }
    let doctor = fleet.ws.json(&["doctor"]);
    let check = doctor["setup"].as_array().unwrap().iter().find(|c| c["check"] == "secrets");
    assert_eq!(check.unwrap()["status"], "ok", "{doctor}");
}
