//! The prompt every agent receives: a header naming its task, then fleet's protocol — how to
//! pick up where an earlier run stopped, record progress, finish, and ask for help.

use std::path::Path;

use crate::model::Issue;

/// The protocol part of the prompt. `bd` here is fleet itself (the drop-in on the agent's
/// PATH), pointed at the central queue by `BEADS_DIR`.
pub const PROTOCOL: &str = "\
# How fleet runs you

You run unattended: nobody reads your questions while you work, and every run starts with a \
fresh session. The files in your artifact directory are the only memory that carries over \
from one run of this task to the next.

## When you start
1. Read `$FLEET_ARTIFACT_DIR/PLAN_AND_STATUS.md` and `$FLEET_ARTIFACT_DIR/KNOWLEDGE.md`.
2. Run `bd show $FLEET_TASK_ID`: its comments say how earlier runs ended (for example \
context pressure or a failure) and carry answers from humans.

## While you work
- Keep `PLAN_AND_STATUS.md` current: a one-paragraph restatement of the task, a numbered plan \
with assumptions and open questions, and a Status section (in_progress, blocked or completed; \
done, in progress, blocked). Rewrite the status as you go; keep earlier sections.
- Append to `KNOWLEDGE.md` whatever the next run must know: where things are, invariants, \
gotchas. Never delete from it.
- Put other outputs (reports, results) in the artifact directory too.
- Found more work? `bd create \"<title>\" -d \"<details>\" --deps discovered-from:$FLEET_TASK_ID`.

## When you are done
Finish the plan file, then run `bd close $FLEET_TASK_ID --reason \"<one-line summary>\"` and \
exit 0. Exiting without closing means \"not finished\": fleet runs the task again, a few times \
at most, and then blocks it for a human.

## When you need a human
Run `bd update $FLEET_TASK_ID --status blocked --notes \"QUESTION: <your question>\"`, add \
the context with `bd comment $FLEET_TASK_ID \"<what you tried, what you need>\"`, and exit 0. \
A human answers in a comment and sets the task open; the next run reads the answer with `bd \
show`.

## Notes
- `bd` and `fleet` on your PATH reach the central queue (`BEADS_DIR` points at it). Do not \
run `bd init`, and do not close or claim tasks other than `$FLEET_TASK_ID`.
- A failed run (non-zero exit) is retried with a growing delay, a limited number of times. \
Running out of context or into a rate limit is not counted against you.
";

/// The full prompt for `issue`.
pub fn build(issue: &Issue, cwd: &Path, task_dir: &Path, artifact_dir: &Path) -> String {
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
    header.push_str(&format!(
        "Task directory: {}\nArtifact directory (PLAN_AND_STATUS.md, KNOWLEDGE.md): {}\nWorking directory: {}\n",
        task_dir.display(),
        artifact_dir.display(),
        cwd.display()
    ));
    format!("{header}\n---\n\n{PROTOCOL}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_names_the_task_and_how_to_close_it() {
        let mut issue = Issue::new("t-1".into(), "Fix login".into(), jiff::Timestamp::UNIX_EPOCH);
        issue.description = "The login form 500s.".into();
        let text = build(
            &issue,
            Path::new("/p"),
            Path::new("/h/tasks/t-1"),
            Path::new("/h/tasks/t-1/artifacts"),
        );
        assert!(
            text.starts_with(
                "You are working on fleet task t-1: Fix login\n\nThe login form 500s."
            )
        );
        assert!(text.contains("Working directory: /p"));
        assert!(text.contains("bd close $FLEET_TASK_ID --reason"));
    }
}
