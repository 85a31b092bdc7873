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
