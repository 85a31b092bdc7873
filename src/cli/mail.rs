//! `mail`: messages between agents and people — `bd mail …` for agents, `fleet mail …` for a
//! person; one command group, shared by both personalities.
//!
//! A message goes to a task (read by its agent: now, through `bd mail inbox` or the primer, or
//! in the prompt of its next attempt) or to a person by name. Inside a `fleet run` attempt the
//! sender is the agent's task and the inbox is that task's; elsewhere the inbox is the
//! actor's (`--task ID` reads a task's). Sending and acknowledging are requests
//! (`Request::MailSend`, `Request::MailAck`): ops, journaled and synced like issues. Nothing
//! polls: an inbox is one read of the store.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use crate::coord::{Mailbox, Message};
use crate::tracker::{MailRequest, Request};

#[derive(Debug, clap::Subcommand)]
pub enum MailCommand {
    /// Send a message to a task's agent (a task id) or to a person (a name).
    Send(SendArgs),
    /// Messages for you not yet acknowledged, oldest first (inside a run: for your task).
    Inbox(InboxArgs),
    /// Acknowledge messages (ids from the inbox): they leave it.
    Ack(AckArgs),
    /// Every message about a task, oldest first.
    Thread(ThreadArgs),
}

#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// A task id (its agent reads it) or a person's name.
    pub to: String,
    /// The message (several words are joined with spaces).
    #[arg(required = true, num_args = 1..)]
    pub body: Vec<String>,
    /// The task the message is about (default: the recipient task, else your own).
    #[arg(long, value_name = "TASK")]
    pub about: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// Acknowledged messages too.
    #[arg(long)]
    pub all: bool,
    /// The inbox of this task's agent (default: your task inside a run, else your name's).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Only messages not shown before in this attempt (its prompt, earlier `--new` calls),
    /// remembered in the attempt's task directory: what a coder's hook delivers mid-run.
    #[arg(long, conflicts_with = "all")]
    pub new: bool,
    /// Print the messages as a Claude Code `PostToolUse` hook's JSON (additional context for
    /// the agent's next turn), and nothing at all when there are none.
    #[arg(long)]
    pub hook_json: bool,
}

#[derive(Debug, clap::Args)]
pub struct AckArgs {
    /// Message ids (or their unique ends).
    #[arg(required = true)]
    pub ids: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ThreadArgs {
    /// The task the messages are about.
    pub task: String,
}

/// `mail ack --json`.
#[derive(Serialize)]
struct Acked {
    acked: Vec<String>,
}

pub fn cmd_mail(ctx: &Context, command: MailCommand) -> Result<(), CliError> {
    match command {
        MailCommand::Send(args) => cmd_send(ctx, args),
        MailCommand::Inbox(args) => cmd_inbox(ctx, &args),
        MailCommand::Ack(args) => cmd_ack(ctx, args),
        MailCommand::Thread(args) => cmd_thread(ctx, &args),
    }
}

/// Whether the command writes (for bd's `--readonly` and the auto-export).
pub fn writes(command: &MailCommand) -> bool {
    matches!(command, MailCommand::Send(_) | MailCommand::Ack(_))
}

fn cmd_send(ctx: &Context, args: SendArgs) -> Result<(), CliError> {
    let request = MailRequest {
        to: args.to,
        body: args.body.join(" "),
        from_task: ctx.attempt_task().map(str::to_string),
        about: args.about,
    };
    let message = ctx.submit(Request::MailSend(Box::new(request)))?.into_mail()?;
    ctx.out.emit(&message, || format!("✓ Sent {} to {}", message.id, recipient(&message)));
    if !message.to_task && looks_like_an_id(&message.to) {
        ctx.out.warn(&format!(
            "warning: no task {} in this queue, so the message went to a person of that name; \
             if you meant a task, `fleet list --all` shows the ids",
            message.to
        ));
    }
    Ok(())
}

/// Whether a recipient that is no task looks like a mistyped id or a path rather than a
/// person's name: `-`, `.` or `/` in it.
fn looks_like_an_id(name: &str) -> bool {
    name.contains(['-', '.', '/'])
}

fn cmd_inbox(ctx: &Context, args: &InboxArgs) -> Result<(), CliError> {
    let reader = ctx.store()?.read()?;
    let task = match &args.task {
        Some(task) => Some(reader.resolve(task)?),
        None => ctx.attempt_task().map(str::to_string),
    };
    // An agent's actor is shared by every agent of its supervisor: inside a run, the task is
    // the address.
    let mailbox = match &task {
        Some(task) => Mailbox::Task(task),
        None => Mailbox::Name(ctx.actor()),
    };
    let mut messages = crate::coord::inbox(reader.messages()?, mailbox, args.all);
    if args.new {
        messages = not_yet_delivered(messages);
    }
    if args.hook_json {
        if !messages.is_empty() {
            let context = format!(
                "New messages for your task (acknowledge each once read: `bd mail ack <id>`):\n{}",
                render(&messages)
            );
            super::output::write_stdout(&serde_json::json!({
                "hookSpecificOutput": { "hookEventName": "PostToolUse", "additionalContext": context }
            }).to_string());
        }
        return Ok(());
    }
    let whose = match mailbox {
        Mailbox::Task(whose) | Mailbox::Name(whose) => whose.to_string(),
    };
    ctx.out.emit(&messages, || {
        if messages.is_empty() { format!("○ No messages for {whose}") } else { render(&messages) }
    });
    Ok(())
}

/// Of `messages`, those the agent of this attempt was not shown yet, which are recorded as
/// shown now ([`crate::coord::DELIVERED_FILE`] in the attempt's task directory; outside a run
/// nothing is remembered). A file that cannot be written means a message may come twice, never
/// that one is lost.
fn not_yet_delivered(messages: Vec<Message>) -> Vec<Message> {
    let Some(dir) = crate::env::attempt_task_dir() else { return messages };
    let path = dir.join(crate::coord::DELIVERED_FILE);
    let known = std::fs::read_to_string(&path).unwrap_or_default();
    let fresh: Vec<Message> =
        messages.into_iter().filter(|m| !known.lines().any(|id| id == m.id)).collect();
    if !fresh.is_empty() {
        let lines: String = fresh.iter().map(|m| format!("{}\n", m.id)).collect();
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, lines.as_bytes()));
        if let Err(error) = appended {
            tracing::warn!(%error, path = %path.display(), "remembering delivered messages failed");
        }
    }
    fresh
}

fn cmd_ack(ctx: &Context, args: AckArgs) -> Result<(), CliError> {
    let acked = ctx.submit(Request::MailAck { ids: args.ids })?.into_ids()?;
    let output = Acked { acked };
    ctx.out.emit(&output, || {
        output.acked.iter().map(|id| format!("✓ Acknowledged {id}")).collect::<Vec<_>>().join("\n")
    });
    Ok(())
}

fn cmd_thread(ctx: &Context, args: &ThreadArgs) -> Result<(), CliError> {
    let reader = ctx.store()?.read()?;
    let task = reader.resolve(&args.task)?;
    let messages: Vec<Message> =
        reader.messages()?.into_iter().filter(|m| m.thread.as_deref() == Some(&task)).collect();
    ctx.out.emit(&messages, || {
        if messages.is_empty() {
            format!("○ No messages about {task}")
        } else {
            render(&messages)
        }
    });
    Ok(())
}

/// `task t-1` or `alice`.
fn recipient(message: &Message) -> String {
    if message.to_task { format!("task {}", message.to) } else { message.to.clone() }
}

/// Messages as a person reads them: a header line each (id, time, sender, recipient, thread,
/// whether acknowledged), then the body indented.
pub fn render(messages: &[Message]) -> String {
    let mut out = Vec::with_capacity(messages.len() * 2);
    for message in messages {
        let at = message.at.map(|at| at.strftime("%Y-%m-%d %H:%M").to_string()).unwrap_or_default();
        let from = match &message.from_task {
            Some(task) => format!("{} ({task})", message.from),
            None => message.from.clone(),
        };
        let mut header = format!("{}  {at}  {from} → {}", message.id, recipient(message));
        if let Some(thread) = message.thread.as_deref().filter(|t| *t != message.to) {
            header.push_str(&format!("  · about {thread}"));
        }
        if let Some(by) = &message.acked_by {
            header.push_str(&format!("  · read by {by}"));
        }
        out.push(header);
        out.extend(message.body.lines().map(|line| format!("    {line}")));
    }
    out.join("\n")
}
