//! `fleet task [<id> [log|plan|knowledge|events|stderr|prompt|qa] [--follow]]`: one task's
//! files, for people.
//!
//! - `log` (the default): the attempts and the agent's conversation — its messages, tool calls
//!   and results, errors — rendered from `events.jsonl` and the runner's `log.jsonl`, in time
//!   order;
//! - `events`: `events.jsonl` as it is (JSON Lines, for tools);
//! - `stderr`: the agent's stderr (`log.stderr`);
//! - `plan`, `knowledge`, `qa`: `artifacts/PLAN_AND_STATUS.md`, `KNOWLEDGE.md`, `Q&A.md`;
//! - `prompt`: the prompt of the latest attempt (`--attempt N` for another), as saved, redacted;
//! - `receipt`, `diff`: the landing of a task with a worktree of its own — the receipt of its
//!   last landing attempt, and its change against its base (from the store and git);
//! - `mail`, `files`: the messages to or about the task, and its file reservations (from the
//!   store). `log` starts with both, so a task's conversation is always in view.
//!
//! `--follow` keeps printing `log`, `events` or `stderr` as they grow, until the task is no
//! longer in progress (or Ctrl-C). Without an id, the running tasks are listed.
//!
//! `log` opens with the latest attempt's usage — tokens, context and cost, growing while the
//! attempt runs (the supervisor saves the ledger every few seconds) — and `--json` prints that
//! attempt as a row of `fleet tasks --json` (schema/task.schema.json) instead of the log.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::{printable, printable_block, write_stdout};
use crate::model::Status;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Artifact {
    /// The attempts and the agent's messages and tool calls, rendered.
    Log,
    /// PLAN_AND_STATUS.md.
    Plan,
    /// KNOWLEDGE.md.
    Knowledge,
    /// events.jsonl as it is.
    Events,
    /// The agent's stderr.
    Stderr,
    /// The prompt an attempt was given.
    Prompt,
    /// Q&A.md: the agent's questions and the answers.
    Qa,
    /// The receipt of the last landing attempt: commits, checks, output tails (`--json`).
    Receipt,
    /// The task's change against its base (from its branch, or the commit it landed as).
    Diff,
    /// The messages to or about the task (`bd mail`), acknowledged or not.
    Mail,
    /// The task's file reservations (`bd reserve`), live or lapsed.
    Files,
}

#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    /// The task (without it: the running tasks).
    pub id: Option<String>,
    /// What to show.
    #[arg(value_enum, default_value_t = Artifact::Log)]
    pub artifact: Artifact,
    /// Keep printing as the file grows (log, events, stderr), until the task stops running.
    #[arg(short, long)]
    pub follow: bool,
    /// The attempt whose prompt to show (default: the latest).
    #[arg(long, value_name = "N")]
    pub attempt: Option<u32>,
}

pub fn cmd_task(ctx: &Context, args: TaskArgs) -> Result<(), CliError> {
    let Some(input) = &args.id else {
        return super::tasks::cmd_tasks(ctx, super::tasks::TasksArgs { all: false, watch: false });
    };
    let home = fleet_home()?;
    let store = ctx.open_store()?;
    let id = store.read()?.resolve(input)?;
    if matches!(args.artifact, Artifact::Receipt | Artifact::Diff) {
        let issue = store
            .read()?
            .issue(&id)?
            .ok_or_else(|| CliError::new(format!("no issue found matching {id:?}")))?;
        return show_landing(ctx, &issue, args.artifact);
    }
    let reader = store.read()?;
    let messages: Vec<crate::coord::Message> = reader
        .messages()?
        .into_iter()
        .filter(|m| m.thread.as_deref() == Some(&id) || (m.to_task && m.to == id))
        .collect();
    let mut reservations = reader.reservations()?;
    reservations.retain(|r| r.task == id);
    match args.artifact {
        Artifact::Mail => {
            ctx.out.emit(&messages, || {
                if messages.is_empty() {
                    format!("○ No messages to or about {id}")
                } else {
                    super::mail::render(&messages)
                }
            });
            return Ok(());
        }
        Artifact::Files => {
            let live = |r: &crate::coord::Reservation| {
                r.is_live(reader.issue(&r.task).ok().flatten().as_ref(), ctx.now())
            };
            ctx.out.emit(&reservations, || render_reservations(&reservations, &id, &live));
            return Ok(());
        }
        Artifact::Log if !ctx.out.json && (!messages.is_empty() || !reservations.is_empty()) => {
            let mut head = Vec::new();
            if !messages.is_empty() {
                head.push(format!("── messages ──\n{}", super::mail::render(&messages)));
            }
            if !reservations.is_empty() {
                let live = |r: &crate::coord::Reservation| {
                    r.is_live(reader.issue(&r.task).ok().flatten().as_ref(), ctx.now())
                };
                let files = render_reservations(&reservations, &id, &live);
                head.push(format!("── files ──\n{files}"));
            }
            write_stdout(&format!("{}\n── log ──", head.join("\n")));
        }
        _ => {}
    }
    let root =
        super::tasks::task_root(&home, &id).filter(|root| root.is_dir()).ok_or_else(|| {
            CliError::new(format!("task {id} has no task directory yet"))
                .with_hint("a task gets one when a supervisor first runs it")
        })?;
    let running = || {
        ctx.open_store()
            .ok()
            .and_then(|s| s.read().ok()?.issue(&id).ok()?)
            .is_some_and(|issue| issue.status == Status::InProgress)
    };
    match args.artifact {
        Artifact::Log if ctx.out.json => {
            let issue = store.read()?.issue(&id)?;
            let issue =
                issue.ok_or_else(|| CliError::new(format!("no issue found matching {id:?}")))?;
            let row = super::tasks::task_view(ctx, &home, &issue)?;
            ctx.out.emit(&row, String::new);
            Ok(())
        }
        Artifact::Log => {
            if let Some(issue) = store.read()?.issue(&id)? {
                write_stdout(&usage_line(&super::tasks::task_view(ctx, &home, &issue)?));
            }
            show_log(&root, args.follow, &running)
        }
        Artifact::Events if ctx.out.json => {
            show_lines(&root.join("events.jsonl"), args.follow, &running, &id, &|l| {
                Some(l.to_owned())
            })
        }
        Artifact::Events => {
            show_lines(&root.join("events.jsonl"), args.follow, &running, &id, &render_json_line)
        }
        Artifact::Stderr => {
            show_lines(&root.join("log.stderr"), args.follow, &running, &id, &|l| {
                Some(l.to_owned())
            })
        }
        Artifact::Plan => show_file(&root.join("artifacts/PLAN_AND_STATUS.md"), &id),
        Artifact::Knowledge => show_file(&root.join("artifacts/KNOWLEDGE.md"), &id),
        Artifact::Qa => show_file(&root.join("artifacts").join(QA_FILE), &id),
        Artifact::Prompt => show_file(&prompt_path(&root, args.attempt, &id)?, &id),
        // Read from the store above: they need no task directory.
        Artifact::Receipt | Artifact::Diff | Artifact::Mail | Artifact::Files => Ok(()),
    }
}

pub use crate::supervisor::prompt::QA_FILE;

/// A task's reservations, one line each, those that no longer hold (`live` says) marked.
fn render_reservations(
    reservations: &[crate::coord::Reservation],
    id: &str,
    live: &dyn Fn(&crate::coord::Reservation) -> bool,
) -> String {
    if reservations.is_empty() {
        return format!("○ {id} holds no file reservations");
    }
    let lines: Vec<String> = reservations
        .iter()
        .map(|r| {
            let lapsed = if live(r) { "" } else { " (lapsed)" };
            format!("⚑ {} {}{lapsed}", r.id, printable(&super::reserve::describe(r)))
        })
        .collect();
    lines.join("\n")
}

/// `receipt` and `diff`: from the task's landing record.
fn show_landing(
    ctx: &Context,
    issue: &crate::model::Issue,
    artifact: Artifact,
) -> Result<(), CliError> {
    let Some(landing) = &issue.fleet.land else {
        return Err(CliError::new(format!("task {} has no worktree of its own: nothing lands", issue.id))
            .with_hint("tasks get one at their first attempt when their directory is in a git repository (isolation in runtime.toml)"));
    };
    if artifact == Artifact::Receipt {
        ctx.out.emit(&landing, || super::receipt::render(&issue.id, landing));
        return Ok(());
    }
    let git = crate::land::git::Git::at(&landing.repo);
    let diff = match &landing.state {
        crate::model::LandState::Landed { merged, .. }
        | crate::model::LandState::Archived { merged, .. }
            if !merged.is_empty() =>
        {
            git.run(&["show", "--stat", "--patch", merged])
        }
        _ => {
            let range = format!("refs/heads/{}...refs/heads/{}", landing.base, landing.branch);
            git.run(&["diff", "--stat", "--patch", &range])
        }
    }
    .map_err(|e| CliError::new(e.to_string()))?;
    write_stdout(&format!("{diff}\n"));
    Ok(())
}

fn show_file(path: &Path, id: &str) -> Result<(), CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            write_stdout(text.trim_end_matches('\n'));
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Err(CliError::new(format!(
            "task {id} has no {}",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ))),
        Err(error) => Err(CliError::new(format!("reading {}: {error}", path.display()))),
    }
}

/// `prompts/<n>.md` of attempt `attempt`, else of the latest attempt saved.
fn prompt_path(root: &Path, attempt: Option<u32>, id: &str) -> Result<PathBuf, CliError> {
    let dir = root.join("prompts");
    if let Some(n) = attempt {
        return Ok(dir.join(format!("{n}.md")));
    }
    let latest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".md")?.parse::<u32>().ok())
        .max();
    latest
        .map(|n| dir.join(format!("{n}.md")))
        .ok_or_else(|| CliError::new(format!("task {id} has no saved prompt")))
}

/// A file of lines, each shown as `show` renders it (`None`: left out), followed while the
/// task runs. An empty file shows nothing (there is nothing yet, which is no error); a missing
/// one is an error.
fn show_lines(
    path: &Path,
    follow: bool,
    running: &dyn Fn() -> bool,
    id: &str,
    show: &dyn Fn(&str) -> Option<String>,
) -> Result<(), CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !follow => {
            return Err(CliError::new(format!(
                "task {id} has no {} yet",
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ))
            .with_hint("a task gets its files when a supervisor first runs it"));
        }
        Err(_) => String::new(),
    };
    for line in text.lines() {
        if let Some(shown) = show(line) {
            write_stdout(&shown);
        }
    }
    if follow {
        let print = |line: &str| {
            if let Some(shown) = show(line) {
                write_stdout(&shown);
            }
        };
        super::log::follow(path, text.len() as u64, || !running(), print);
    }
    Ok(())
}

/// `usage: attempt 2 running 3m05s · claude·sonnet · 12.0k in / 300 out · ctx 12% · $0.015`: the
/// latest attempt's usage, so far while it runs.
fn usage_line(row: &super::tasks::TaskRow) -> String {
    use super::tasks::{cost, duration, tokens};
    let state = if row.running { "running" } else { row.status.as_str() };
    let mut line = format!("usage: attempt {} {state}", row.attempt);
    if let Some(secs) = row.elapsed_secs {
        line.push_str(&format!(" {}", duration(secs)));
    }
    line.push_str(&format!(
        " · {} · {} in / {} out",
        printable(&super::tasks::coder_model(row)),
        tokens(row.tokens_in),
        tokens(row.tokens_out)
    ));
    if let Some(pct) = row.context_pct {
        line.push_str(&format!(" · ctx {pct:.0}%"));
    }
    line.push_str(&format!(" · {}", cost(row.cost_usd)));
    line
}

/// A line of `events.jsonl` rendered for people (a line that is no JSON, as it is).
fn render_json_line(line: &str) -> Option<String> {
    match serde_json::from_str::<Value>(line) {
        Ok(value) => render_line(&value),
        Err(_) => Some(line.to_owned()),
    }
}

/// The rendered log: runner lines and events merged by time.
fn show_log(root: &Path, follow: bool, running: &dyn Fn() -> bool) -> Result<(), CliError> {
    let events_path = root.join("events.jsonl");
    let events = std::fs::read_to_string(&events_path).unwrap_or_default();
    let runner = std::fs::read_to_string(root.join("log.jsonl")).unwrap_or_default();
    let mut lines: Vec<(String, String)> = runner
        .lines()
        .chain(events.lines())
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| {
            let ts = value["ts"].as_str().unwrap_or_default().to_owned();
            render_line(&value).map(|text| (ts, text))
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    if lines.is_empty() && !follow {
        return Err(CliError::new("nothing logged for this task yet"));
    }
    for (_, text) in &lines {
        write_stdout(text);
    }
    if follow {
        let print = |line: &str| {
            if let Some(text) =
                serde_json::from_str::<Value>(line).ok().as_ref().and_then(render_line)
            {
                write_stdout(&text);
            }
        };
        super::log::follow(&events_path, events.len() as u64, || !running(), print);
    }
    Ok(())
}

/// One line of `log.jsonl` or `events.jsonl` for people; `None` for lines not worth one.
pub fn render_line(value: &Value) -> Option<String> {
    let time = value["ts"].as_str().and_then(clock).unwrap_or_default();
    let text = |key: &str| value[key].as_str().map(str::trim).unwrap_or_default().to_owned();
    let body = if let Some(event) = value["event"].as_str() {
        runner_line(event, value)?
    } else {
        match value["kind"].as_str()? {
            "session_started" => {
                format!(
                    "── session started{}",
                    value["model"].as_str().map(|m| format!(" ({m})")).unwrap_or_default()
                )
            }
            "assistant_text" => format!("agent: {}", indent(&text("text"))),
            "thinking" => format!("(thinking) {}", first_line(&text("text"), 160)),
            "tool_use" => format!("→ {}: {}", text("tool_name"), first_line(&text("text"), 200)),
            "tool_result" => {
                let status = if value["is_error"].as_bool() == Some(true) { "error" } else { "ok" };
                format!("← {status}: {}", first_line(&text("text"), 200))
            }
            "api_retry" => format!("⟳ API retry{}", http(value)),
            "rate_limit" => {
                let window = value["rate_limit"]["window"].as_str().unwrap_or("a window");
                let status = value["rate_limit"]["status"].as_str().unwrap_or("limited");
                format!("⏸ rate limit: {window} {status}")
            }
            "context_overflow" => "✗ the prompt no longer fits the context window".to_owned(),
            "error" => format!("✗ error{}: {}", http(value), first_line(&text("text"), 300)),
            "session_ended" => {
                let how =
                    if value["is_error"].as_bool() == Some(true) { "with an error" } else { "" };
                format!("── session ended {how}{}", suffix(&first_line(&text("text"), 200)))
            }
            "output" => text("text"),
            _ => return None,
        }
    };
    Some(printable_block(&format!("{time:>8}  {body}")).into_owned())
}

fn runner_line(event: &str, value: &Value) -> Option<String> {
    let attempt = value["attempt"].as_u64().unwrap_or(0);
    Some(match event {
        "attempt_started" => format!(
            "▶ attempt {attempt} started: {} {} (pid {}) in {}",
            crate::coders::account::qualified(
                value["coder"].as_str().unwrap_or("?"),
                value["account"].as_str()
            ),
            value["model"].as_str().unwrap_or(""),
            value["pid"].as_u64().unwrap_or(0),
            value["cwd"].as_str().unwrap_or("?")
        ),
        "attempt_finished" => {
            let exit =
                value["exit_code"].as_i64().map_or_else(|| "by signal".into(), |c| c.to_string());
            // The outcome says more than the exit only when the agent did not just exit.
            let outcome = value["outcome"].as_str().filter(|o| !o.starts_with("exited with code"));
            format!(
                "■ attempt {attempt} finished: exit {exit}{}",
                outcome.map(|o| format!(" — {o}")).unwrap_or_default()
            )
        }
        _ => return None,
    })
}

/// `HH:MM:SS` of an RFC 3339 time, local.
fn clock(ts: &str) -> Option<String> {
    let at: jiff::Timestamp = ts.parse().ok()?;
    let zone = jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC);
    Some(at.to_zoned(zone).strftime("%H:%M:%S").to_string())
}

fn http(value: &Value) -> String {
    value["http_status"].as_u64().map(|s| format!(" (HTTP {s})")).unwrap_or_default()
}

fn suffix(text: &str) -> String {
    if text.is_empty() { String::new() } else { format!(": {text}") }
}

/// The first line of `text`, cut at `max` characters.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let cut: String = line.chars().take(max).collect();
    let more = cut.len() < line.len() || text.lines().nth(1).is_some();
    format!("{}{}", printable(&cut), if more { " …" } else { "" })
}

/// Multi-line text with its later lines indented under the first.
fn indent(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join("\n            ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_render_as_messages_and_tool_calls() {
        let line = |v: Value| render_line(&v).unwrap();
        let tool = line(serde_json::json!({"ts": "2026-03-01T12:00:00Z", "kind": "tool_use",
            "tool_name": "Bash", "text": "cargo test\nmore"}));
        assert!(tool.ends_with("→ Bash: cargo test …"), "{tool}");
        let said = line(serde_json::json!({"ts": "2026-03-01T12:00:00Z", "kind": "assistant_text",
            "text": "Done."}));
        assert!(said.ends_with("agent: Done."), "{said}");
        let started = line(serde_json::json!({"ts": "2026-03-01T12:00:00Z",
            "event": "attempt_started", "attempt": 2, "coder": "claude", "model": "opus",
            "pid": 7, "cwd": "/p"}));
        assert!(started.ends_with("▶ attempt 2 started: claude opus (pid 7) in /p"), "{started}");
        let on_account = line(serde_json::json!({"ts": "2026-03-01T12:00:00Z",
            "event": "attempt_started", "attempt": 1, "coder": "claude", "account": "work",
            "model": "opus", "pid": 7, "cwd": "/p"}));
        assert!(on_account.ends_with("started: claude@work opus (pid 7) in /p"), "{on_account}");
        assert!(render_line(&serde_json::json!({"kind": "step_finished"})).is_none());
    }
}
