//! `fleet run`: the supervisor in the foreground, until Ctrl-C or SIGTERM (or, with
//! `--until-idle`, until the queue is drained). Progress is printed as it happens: one human
//! line per event, or JSON Lines with `--json`.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::write_stdout;
use crate::store::Store;
use crate::supervisor::{Event, Options, Summary, Supervisor};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Stop once nothing is running and nothing is ready.
    #[arg(long)]
    pub until_idle: bool,
    /// Name this supervisor holds its tasks under (default: fleet@<hostname>). Tasks still held
    /// under this name when it starts are released.
    #[arg(long = "as", value_name = "NAME")]
    pub lease_name: Option<String>,
}

/// `fleet@<hostname>`.
pub fn default_supervisor_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let host = if rc == 0 {
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    format!("fleet@{host}")
}

pub fn cmd_run(ctx: &Context, args: RunArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let store = Arc::new(ctx.open_store()?);
    let options = Options {
        home,
        actor: args.lease_name.unwrap_or_else(default_supervisor_name),
        exe: std::env::current_exe()?,
        until_idle: args.until_idle,
    };
    let json = ctx.out.json;
    let summary = supervise(store, options, stop_signal(), move |event| print_event(&event, json))?;
    if !json {
        write_stdout(&summary_line(&summary));
    }
    Ok(())
}

/// Builds the runtime, runs the supervisor until `shutdown`, and feeds its events to `on_event`
/// as they happen.
pub fn supervise(
    store: Arc<Store>,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
    mut on_event: impl FnMut(Event) + Send + 'static,
) -> Result<Summary, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("starting the async runtime: {e}")))?;
    runtime.block_on(async move {
        let (events, mut received) = mpsc::unbounded_channel();
        let printer = tokio::spawn(async move {
            while let Some(event) = received.recv().await {
                on_event(event);
            }
        });
        let supervisor = Supervisor::new(store, options, events).map_err(|e| {
            CliError::new(e).with_hint("fix runtime.toml (see `fleet config show`)")
        })?;
        let summary = supervisor.run(shutdown).await.map_err(CliError::new)?;
        let _ = printer.await;
        Ok(summary)
    })
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn print_event(event: &Event, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            write_stdout(&line);
        }
    } else if let Some(line) = event_line(event) {
        write_stdout(&line);
    }
}

/// One human line for an event (`None` for events not worth a line).
pub fn event_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Started { actor, max_concurrent } => {
            format!(
                "fleet run: supervising as {actor}, up to {max_concurrent} agents at once (Ctrl-C stops)"
            )
        }
        Event::Claimed { id, title, coder, model, attempt } => {
            let model = if model.is_empty() { String::new() } else { format!(", {model}") };
            format!("▶ {id} attempt {attempt} ({coder}{model}): {title}")
        }
        Event::AgentStarted { .. } => return None,
        Event::Finished { id, verdict, comment } => {
            let mark = if verdict == "closed" { "✓" } else { "•" };
            let detail = comment.lines().next().unwrap_or_default();
            format!("{mark} {id} {verdict}: {detail}")
        }
        Event::Paused { until } => format!("⏸ spawning paused until {until} (rate limit)"),
        Event::ConfigReloaded { max_concurrent } => {
            format!("⚙ runtime.toml reloaded (max_concurrent = {max_concurrent})")
        }
        Event::ConfigRejected { error } => {
            format!("⚠ runtime.toml is invalid, keeping the previous config: {error}")
        }
        Event::Released { id } => format!("↩ {id} released (held by an earlier run)"),
        Event::Stopped { .. } => return None,
    })
}

/// `fleet run: 7 attempts — closed 6, failure-retry 1` (just `fleet run: 0 attempts` when
/// nothing ran).
pub fn summary_line(summary: &Summary) -> String {
    let parts: Vec<String> = summary.verdicts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if parts.is_empty() {
        return format!("fleet run: {} attempts", summary.attempts);
    }
    format!("fleet run: {} attempts — {}", summary.attempts, parts.join(", "))
}
