//! `fleet notify test`: sends one message through the `[notify]` table of runtime.toml, as
//! `fleet run` would, and says what each receiver did — the way to check a command or a
//! webhook before a run needs it.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::config::{NotifyConfig, RuntimeConfig};
use crate::notify::{Message, Notice, deliver};

#[derive(Debug, Args)]
pub struct NotifyArgs {
    #[command(subcommand)]
    pub command: NotifyCommand,
}

#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Send a test message to `notify.command` and `notify.webhook` now.
    Test,
}

/// What `fleet notify test --json` prints.
#[derive(Debug, Serialize)]
struct Tested {
    /// The receivers configured: `command`, `webhook`.
    receivers: Vec<&'static str>,
    /// What went wrong, one line per receiver (empty: delivered).
    problems: Vec<String>,
}

pub fn cmd_notify(ctx: &Context, args: NotifyArgs) -> Result<(), CliError> {
    match args.command {
        NotifyCommand::Test => test(ctx),
    }
}

fn test(ctx: &Context) -> Result<(), CliError> {
    let path = fleet_home()?.join(crate::config::FILE_NAME);
    let config = RuntimeConfig::load(&path).map_err(|error| CliError::new(error.to_string()))?;
    let receivers = receivers(&config.notify);
    if receivers.is_empty() {
        return Err(CliError::new("runtime.toml sends notices nowhere").with_hint(
            "add a [notify] table to $FLEET_HOME/runtime.toml with `command = \"…\"` or `webhook = \"https://…\"`",
        ));
    }
    let notice = Notice {
        kind: "test",
        task: None,
        text: "a test message from `fleet notify test`".to_owned(),
        at: jiff::Timestamp::now(),
    };
    let source = format!("{} (notify test)", crate::process::hostname());
    let message = Message::of(&source, vec![notice], 0, &config.redactor());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| CliError::new(format!("starting the runtime: {error}")))?;
    let problems = runtime.block_on(deliver::send(&config.notify, &message));
    let tested = Tested { receivers, problems };
    ctx.out.emit(&tested, || render(&tested));
    if tested.problems.is_empty() { Ok(()) } else { Err(CliError::silent()) }
}

fn receivers(config: &NotifyConfig) -> Vec<&'static str> {
    let command = (!config.command.trim().is_empty()).then_some("command");
    let webhook = (!config.webhook.trim().is_empty()).then_some("webhook");
    command.into_iter().chain(webhook).collect()
}

fn render(tested: &Tested) -> String {
    if tested.problems.is_empty() {
        let to = tested.receivers.iter().map(|r| format!("notify.{r}")).collect::<Vec<_>>();
        return format!("✓ delivered to {}", to.join(" and "));
    }
    let mut lines = vec!["✗ not delivered:".to_owned()];
    lines.extend(tested.problems.iter().map(|problem| format!("  {problem}")));
    lines.join("\n")
}
