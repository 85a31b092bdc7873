//! A human in the loop: `fleet questions` lists what blocked agents asked, `fleet answer <id>
//! "…"` records the answer in the task's `artifacts/Q&A.md` and reopens the task, whose next
//! prompt points at the answer (see `supervisor::prompt`).
//!
//! An agent asks the way the agent protocol tells it: `bd update <id> --status blocked --notes
//! "QUESTION: …"`, with the details in `Q&A.md` as a `## Q:` block. A blocked task whose notes
//! hold a `QUESTION:` is an open question.

use std::io::Write;

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use super::task::QA_FILE;
use crate::model::{Issue, Status};
use crate::op::IssuePatch;
use crate::store::ListFilter;
use crate::tracker::{Request, UpdateRequest};

#[derive(Debug, clap::Args)]
pub struct QuestionsArgs {}

#[derive(Debug, clap::Args)]
pub struct AnswerArgs {
    /// The blocked task.
    pub id: String,
    /// The answer (recorded in its artifacts/Q&A.md).
    pub answer: String,
}

/// An open question.
#[derive(Debug, Serialize)]
pub struct Question {
    pub id: String,
    pub title: String,
    pub question: String,
    pub asked_at: jiff::Timestamp,
}

/// The question in a blocked task's notes (`QUESTION: …`), if any.
pub fn question_of(issue: &Issue) -> Option<String> {
    let at = issue.notes.find("QUESTION:")?;
    Some(issue.notes[at + "QUESTION:".len()..].trim().to_owned())
}

pub fn cmd_questions(ctx: &Context, _args: QuestionsArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?.skip_damaged();
    let filter = ListFilter { statuses: vec![Status::Blocked], ..ListFilter::default() };
    let (blocked, _) = reader.list(&filter)?;
    let questions: Vec<Question> = blocked
        .into_iter()
        .filter_map(|s| {
            let question = question_of(&s.issue)?;
            Some(Question {
                id: s.issue.id.clone(),
                title: s.issue.title.clone(),
                question,
                asked_at: s.issue.updated_at,
            })
        })
        .collect();
    ctx.out.emit(&questions, || render_questions(&questions));
    Ok(())
}

fn render_questions(questions: &[Question]) -> String {
    if questions.is_empty() {
        return "No open questions.".to_owned();
    }
    let mut lines = vec![format!("❓ Open questions ({}):", questions.len())];
    for q in questions {
        lines.push(String::new());
        lines.push(format!("{}: {}", q.id, printable(&q.title)));
        lines.push(format!("  QUESTION: {}", printable(&q.question)));
        lines.push(format!("  answer: fleet answer {} \"…\"", q.id));
    }
    lines.join("\n")
}

#[derive(Debug, Serialize)]
struct Answered {
    id: String,
    qa_file: String,
    reopened: bool,
}

pub fn cmd_answer(ctx: &Context, args: AnswerArgs) -> Result<(), CliError> {
    if args.answer.trim().is_empty() {
        return Err(CliError::usage("the answer is empty").with_hint("fleet answer <id> \"…\""));
    }
    let store = ctx.store()?;
    let reader = store.read()?;
    let id = reader.resolve(&args.id)?;
    let issue = reader.issue(&id)?.ok_or_else(|| CliError::new(format!("no issue {id}")))?;
    let qa = qa_file(&id)?;
    append_answer(&qa, ctx.actor(), ctx.now(), &args.answer)?;
    let reopened = issue.status == Status::Blocked;
    if reopened {
        let text = format!("[fleet] answered by {} in artifacts/{QA_FILE}; reopened", ctx.actor());
        ctx.submit(Request::Comment { id: id.clone(), author: None, text })?;
        let patch = IssuePatch {
            status: Some(Status::Open),
            assignee: Some(String::new()),
            ..IssuePatch::default()
        };
        ctx.submit(Request::Update(vec![UpdateRequest::edit(&id, patch)]))?;
    }
    let answered = Answered { id, qa_file: qa.display().to_string(), reopened };
    ctx.out.emit(&answered, || {
        let next = if reopened {
            "reopened: its next run reads the answer"
        } else {
            "the task was not blocked, so its status is unchanged"
        };
        format!("✓ answer recorded in {} ({next})", answered.qa_file)
    });
    Ok(())
}

/// The `Q&A.md` of task `id` in fleet's home: `tasks/<id>/artifacts/Q&A.md`, where each
/// attempt's `$FLEET_ARTIFACT_DIR` is.
pub fn qa_file(id: &str) -> Result<std::path::PathBuf, CliError> {
    let root = super::tasks::task_root(&fleet_home()?, id)
        .ok_or_else(|| CliError::new(format!("task id {id} cannot name a task directory")))?;
    Ok(root.join("artifacts").join(QA_FILE))
}

/// Appends a question as the agent protocol asks (`## Q: <question>`, then what was tried
/// and is needed) to the `Q&A.md` at `path`, redacted.
pub fn append_question(
    path: &std::path::Path,
    question: &str,
    details: &str,
) -> Result<(), CliError> {
    let details = if details.trim().is_empty() { "Tried: nothing yet." } else { details.trim() };
    let redactor = crate::supervisor::process_redactor();
    let block = format!("## Q: {question}\n\n{details}\n");
    append(path, &redactor.redact_text(&block))
}

/// Appends `text` to the file at `path`, making its directory.
fn append(path: &std::path::Path, text: &str) -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::new(format!("writing {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

/// Appends `## A: <time> — <actor>` and the answer (redacted) to `Q&A.md`.
fn append_answer(
    path: &std::path::Path,
    actor: &str,
    now: jiff::Timestamp,
    answer: &str,
) -> Result<(), CliError> {
    let answer = crate::supervisor::process_redactor().redact_text(answer.trim()).into_owned();
    append(path, &format!("\n## A: {now} — {actor}\n\n{answer}\n"))
}
