//! The prompt every agent receives: a header naming its task (and the messages for it not yet
//! acknowledged: mail sent while no agent ran it reaches the next one here), then fleet's
//! protocol — how to pick up where an earlier run stopped, record progress, finish, ask for
//! help, and work beside other agents (one task only; mail; file reservations).

use std::path::Path;

use crate::coord::Message;
use crate::model::Issue;

/// The protocol part of the prompt. `bd` here is fleet itself (the drop-in on the agent's
/// PATH), pointed at the central queue by `BEADS_DIR`.
pub const PROTOCOL: &str = "\
# How fleet runs you
You run unattended; every run starts a fresh session. Only your artifact directory \
($FLEET_ARTIFACT_DIR) carries over between runs of this task.

Start: read PLAN_AND_STATUS.md and KNOWLEDGE.md there, and `bd show $FLEET_TASK_ID` (its \
comments say how earlier runs ended and carry humans' answers).

While working: keep PLAN_AND_STATUS.md current (restatement, numbered plan, Status: \
in_progress/blocked/completed with done, doing, blocked); append to KNOWLEDGE.md what the next \
run must know, never delete from it; put other outputs (reports, results) in the artifact \
directory. More work found: `bd create \"<title>\" -d \"<details>\" --deps \
discovered-from:$FLEET_TASK_ID`.

Done: finish the plan file, run `bd close $FLEET_TASK_ID --reason \"<one-line summary>\"`, \
exit 0. Exiting without closing means not finished: the task runs again, a few times at most, \
then waits for a human.

Need a human: append `## Q: <one line>` with what you tried and need to \
$FLEET_ARTIFACT_DIR/Q&A.md, run `bd update $FLEET_TASK_ID --status blocked --notes \
\"QUESTION: <question>\"`, exit 0 without closing. The answer comes as a `## A:` block there.

`bd` and `fleet` reach the central queue ($BEADS_DIR). Do not run `bd init`. You have exactly \
one task, $FLEET_TASK_ID: do not close or claim other tasks (claims are refused inside a run); \
file new work with `bd create` and leave it to the supervisor. A non-zero exit is retried a \
limited number of times; running out of context or into a rate limit does not count.

Other agents: `bd mail send <task-id> \"<text>\"` reaches that task's agent (now or at its next \
run); `bd mail inbox` lists yours, `bd mail ack <id>` marks one read. Before editing files others \
may edit: `bd reserve '<glob>' --exclusive --reason \"<why>\"` (globs from the repository's \
top); reservations end with your run (`bd release-files` ends them sooner).
";

/// The file of questions and answers in the artifact directory.
pub const QA_FILE: &str = "Q&A.md";

/// Whether the task's `Q&A.md` holds an answer.
fn has_answers(artifact_dir: &Path) -> bool {
    std::fs::read_to_string(artifact_dir.join(QA_FILE))
        .is_ok_and(|text| text.lines().any(|line| line.starts_with("## A:")))
}

/// The messages for the task not yet acknowledged, as the prompt lists them.
fn unread_mail(mail: &[Message]) -> String {
    let mut text =
        String::from("Messages for this task (acknowledge each once read: `bd mail ack <id>`):\n");
    for message in mail {
        let from = match &message.from_task {
            Some(task) => format!("{} (task {task})", message.from),
            None => message.from.clone(),
        };
        text.push_str(&format!("- {} from {from}: {}\n", message.id, message.body.trim()));
    }
    text.push('\n');
    text
}

/// The full prompt for `issue`, with `mail`, the messages for it not yet acknowledged.
pub fn build(
    issue: &Issue,
    cwd: &Path,
    (task_dir, artifact_dir): (&Path, &Path),
    mail: &[Message],
) -> String {
    let mut header = format!("You are working on fleet task {}: {}\n\n", issue.id, issue.title);
    if !issue.description.trim().is_empty() {
        header.push_str(issue.description.trim_end());
        header.push_str("\n\n");
    }
    for (name, text) in [
        ("Acceptance criteria", &issue.acceptance_criteria),
        ("Design", &issue.design),
        ("Notes", &issue.notes),
    ] {
        if !text.trim().is_empty() {
            header.push_str(&format!("{name}:\n{}\n\n", text.trim_end()));
        }
    }
    if !mail.is_empty() {
        header.push_str(&unread_mail(mail));
    }
    if has_answers(artifact_dir) {
        header.push_str(&format!(
            "A human answered your questions: read {} first (the `## A:` blocks).\n\n",
            artifact_dir.join(QA_FILE).display()
        ));
    }
    header.push_str(&format!(
        "Task directory: {}\nArtifact directory (PLAN_AND_STATUS.md, KNOWLEDGE.md): {}\nWorking directory: {}\n",
        task_dir.display(),
        artifact_dir.display(),
        cwd.display()
    ));
    if let Some(landing) = &issue.fleet.land {
        header.push('\n');
        header.push_str(&own_branch(landing));
    }
    format!("{header}\n---\n\n{PROTOCOL}")
}

/// What an agent working in a worktree of its own must know: whose branch it is on, to commit
/// there, and what happens to its work after the close.
pub fn own_branch(landing: &crate::model::Landing) -> String {
    format!(
        "You work in a git worktree of your own ({}) on the branch `{}`, made from `{}`. \
Commit your changes on this branch as you go (`git add` and `git commit`); do not switch \
branches, and do not merge into or push `{}` yourself. When you close the task, fleet commits \
anything you left uncommitted, runs the project's checks on your work merged onto `{}`, and \
lands it there; if the checks fail or the merge conflicts, the task comes back to you with the \
evidence in its comments. If the task needs no change at all, close it with \
`bd close $FLEET_TASK_ID --no-changes --reason \"<why>\"`.\n",
        landing.worktree, landing.branch, landing.base, landing.base, landing.base
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 33 cut the protocol to fewer tokens; every instruction the supervisor's protocol
    /// depends on stays: where the memory is, how to close, to ask, to file more work.
    #[test]
    fn the_protocol_keeps_what_the_supervisor_depends_on() {
        for needle in [
            "$FLEET_ARTIFACT_DIR",
            "PLAN_AND_STATUS.md",
            "KNOWLEDGE.md",
            "bd show $FLEET_TASK_ID",
            "bd close $FLEET_TASK_ID --reason",
            "exit 0",
            "Exiting without closing means not finished",
            "Q&A.md",
            "## Q:",
            "## A:",
            "bd update $FLEET_TASK_ID --status blocked --notes",
            "QUESTION:",
            "without closing",
            "--deps discovered-from:$FLEET_TASK_ID",
            "Do not run `bd init`",
            "claim other tasks",
        ] {
            assert!(PROTOCOL.contains(needle), "{needle} in\n{PROTOCOL}");
        }
    }

    #[test]
    fn prompt_names_the_task_and_how_to_close_it() {
        let mut issue = Issue::new("t-1".into(), "Fix login".into(), jiff::Timestamp::UNIX_EPOCH);
        issue.description = "The login form 500s.".into();
        let dirs = (Path::new("/h/tasks/t-1"), Path::new("/h/tasks/t-1/artifacts"));
        let text = build(&issue, Path::new("/p"), dirs, &[]);
        assert!(
            text.starts_with(
                "You are working on fleet task t-1: Fix login\n\nThe login form 500s."
            )
        );
        assert!(text.contains("Working directory: /p"));
        assert!(text.contains("bd close $FLEET_TASK_ID --reason"));
        assert!(!text.contains("worktree of your own"));
        assert!(text.contains("You have exactly one task"), "{text}");
        assert!(!text.contains("Messages for this task"));
        issue.fleet.land = Some(crate::model::Landing {
            worktree: "/h/worktrees/t-1".into(),
            branch: "fleet/t-1".into(),
            base: "main".into(),
            ..crate::model::Landing::default()
        });
        let text = build(&issue, Path::new("/p"), (Path::new("/t"), Path::new("/a")), &[]);
        assert!(text.contains("on the branch `fleet/t-1`, made from `main`"), "{text}");
    }

    #[test]
    fn unread_mail_heads_the_prompt() {
        let issue = Issue::new("t-1".into(), "Fix login".into(), jiff::Timestamp::UNIX_EPOCH);
        let message = Message {
            id: "m-abcdefgh".into(),
            to: "t-1".into(),
            to_task: true,
            thread: Some("t-1".into()),
            from_task: Some("t-2".into()),
            body: "the schema moved to v2".into(),
            from: "fleet@h/agent".into(),
            at: None,
            stamp: None,
            acked_by: None,
            acked_at: None,
        };
        let text = build(&issue, Path::new("/p"), (Path::new("/t"), Path::new("/a")), &[message]);
        let head = text.split("---").next().unwrap();
        assert!(
            head.contains("- m-abcdefgh from fleet@h/agent (task t-2): the schema moved to v2")
        );
        assert!(head.contains("bd mail ack <id>"), "{head}");
    }
}
