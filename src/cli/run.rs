//! `fleet run`: the supervisor in the foreground, until Ctrl-C or SIGTERM (or, with
//! `--until-idle`, until the queue is drained). Progress is printed as it happens: one human
//! line per event, or JSON Lines with `--json`; every event is also logged at info, so it reaches
//! the run log (`$FLEET_HOME/logs/fleet-run.log`, see `cli::logging`).

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::{write_stdout, write_styled};
use super::style::{Styled, Tone};
use crate::store::Store;
use crate::supervisor::outcome::Verdict;
use crate::supervisor::{Event, Options, Stop, Summary, Supervisor};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Stop once nothing is running and nothing more can start without a human.
    #[arg(long)]
    pub until_idle: bool,
    /// Name this supervisor holds its tasks under (default: fleet@<hostname>). Several
    /// supervisors may share a name; each run is still its own instance.
    #[arg(long = "as", value_name = "NAME")]
    pub lease_name: Option<String>,
}

/// `fleet guard`: the process `fleet run` starts to clean up after it if it is killed (see
/// `supervisor::guard`). Not for people.
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    /// The supervisor instance to guard.
    #[arg(long)]
    pub instance: String,
}

/// `fleet@<hostname>`.
pub fn default_supervisor_name() -> String {
    format!("fleet@{}", crate::process::hostname())
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
    let (json, color) = (ctx.out.json, ctx.out.color);
    if let Err(error) = super::logging::open_run_log(&options.home) {
        let dir = options.home.join(super::logging::LOG_DIR);
        tracing::warn!(%error, dir = %dir.display(), "cannot open the run log; logging to stderr only");
    }
    let summary = supervise(store, options, move |event| {
        log_event(&event);
        print_event(&event, json, color);
    })?;
    if !json {
        write_stdout(&summary_line(&summary));
    }
    Ok(())
}

pub fn cmd_guard(ctx: &Context, args: GuardArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    crate::supervisor::guard::watch(&args.instance, dir);
    Ok(())
}

/// Builds the runtime, runs the supervisor until it is stopped (Ctrl-C, SIGTERM, SIGHUP, or
/// `--until-idle`), and feeds its events to `on_event` as they happen.
pub fn supervise(
    store: Arc<Store>,
    options: Options,
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
        let (stop_tx, stop) = watch::channel(Stop::No);
        let stop_tx = Arc::new(stop_tx);
        listen_for_stop_signals(Arc::clone(&stop_tx))
            .map_err(|e| CliError::new(format!("installing signal handlers: {e}")))?;
        let server_store = Arc::clone(&store);
        let supervisor = Supervisor::new(store, options, events).map_err(|e| {
            CliError::new(e).with_hint("fix runtime.toml (see `fleet config show`)")
        })?;
        let server = serve_while_running(server_store, supervisor.waker());
        let summary = supervisor.run(stop).await.map_err(CliError::new)?;
        drop(server);
        drop(stop_tx);
        let _ = printer.await;
        Ok(summary)
    })
}

/// Serves the workspace's socket for as long as the supervisor runs, so agents' `bd` and
/// `fleet` writes are committed in groups by this process and wake it at once. Without it
/// (another process serves the workspace, or the socket cannot be made) commands write
/// directly, as they always can.
fn serve_while_running(
    store: Arc<Store>,
    wake: Arc<tokio::sync::Notify>,
) -> Option<crate::server::Server> {
    match crate::server::Server::start(store, Box::new(move || wake.notify_one())) {
        Ok(server) => Some(server),
        Err(error) => {
            tracing::warn!(%error, "not serving the workspace socket; commands write directly");
            None
        }
    }
}

/// Installs the handlers before any agent starts (until then a signal would kill this
/// process outright): the first SIGINT, SIGTERM or SIGHUP asks for a graceful stop, a second
/// SIGINT or SIGTERM for an immediate one.
fn listen_for_stop_signals(stop: Arc<watch::Sender<Stop>>) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        loop {
            let hung_up = tokio::select! {
                _ = interrupt.recv() => false,
                _ = terminate.recv() => false,
                _ = hangup.recv() => true,
            };
            let level = *stop.borrow();
            let next = match level {
                Stop::No => Stop::Graceful,
                // A hang-up after Ctrl-C (the terminal closing) does not cut the grace.
                Stop::Graceful if !hung_up => Stop::Now,
                other => other,
            };
            stop.send_replace(next);
        }
    });
    Ok(())
}

fn print_event(event: &Event, json: bool, color: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            write_stdout(&line);
        }
    } else if let Some(line) = event_line(event) {
        write_styled(&marked(&line, event_tone(event)), color);
    }
}

/// `line` with its leading mark (`▶`, `✓`, `⏸`, …) in `tone`.
fn marked(line: &str, tone: Option<Tone>) -> Styled {
    let mut styled = Styled::new();
    match (tone, line.split_once(' ')) {
        (Some(tone), Some((mark, rest))) => styled.tone(tone, mark).plain(" ").plain(rest),
        _ => styled.plain(line),
    };
    styled
}

/// The colour of an event's mark: what started, finished well, needs a look, or failed.
fn event_tone(event: &Event) -> Option<Tone> {
    Some(match event {
        Event::Claimed { .. } => Tone::Active,
        Event::Finished { verdict, .. } if *verdict == Verdict::Closed => Tone::Good,
        Event::Finished { .. } | Event::Paused { .. } | Event::Held { .. } => Tone::Warn,
        Event::Released { .. } => Tone::Warn,
        Event::ConfigRejected { .. } | Event::Revoked { .. } => Tone::Bad,
        _ => return None,
    })
}

/// Logs an event at info, one line: its human line, or its JSON when it has none.
fn log_event(event: &Event) {
    let json = serde_json::to_value(event).unwrap_or_default();
    let kind = json["type"].as_str().unwrap_or("event");
    match event_line(event) {
        Some(line) => tracing::info!(event = kind, "{}", line.replace('\n', " ")),
        None => tracing::info!(event = kind, "{json}"),
    }
}

/// One human line for an event (`None` for events not worth a line).
pub fn event_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Started { actor, max_concurrent, .. } => {
            format!(
                "fleet run: supervising as {actor}, up to {max_concurrent} agents at once (Ctrl-C stops)"
            )
        }
        Event::Claimed { id, title, coder, model, attempt } => {
            let model = if model.is_empty() { String::new() } else { format!(", {model}") };
            format!("▶ {id} attempt {attempt} ({coder}{model}): {title}")
        }
        Event::AgentStarted { .. } | Event::Stopped { .. } => return None,
        Event::Finished { id, verdict, comment } => {
            let mark = if *verdict == Verdict::Closed { "✓" } else { "•" };
            let detail = comment.lines().next().unwrap_or_default();
            format!("{mark} {id} {verdict}: {detail}")
        }
        Event::Paused { coder, until, cause, detail, fix, news } => {
            let head = format!("⏸ {coder} paused until {until} ({}): {detail}", cause.as_str());
            if *news { format!("{head}\n  fix: {fix}") } else { head }
        }
        Event::ConfigReloaded { max_concurrent } => {
            format!("⚙ runtime.toml reloaded (max_concurrent = {max_concurrent})")
        }
        Event::Held { all: false, coders } if coders.is_empty() => {
            "▶ spawning resumed (fleet resume)".to_string()
        }
        Event::Held { all, coders } => {
            let whom = if *all { "every coder".to_string() } else { coders.join(", ") };
            format!("⏸ spawning paused by fleet pause: {whom}; running agents go on")
        }
        Event::ConfigRejected { error } => {
            format!("⚠ runtime.toml is invalid, keeping the previous config: {error}")
        }
        Event::Released { id, why, survivors_killed } => {
            let killed = match survivors_killed {
                0 => String::new(),
                n => format!("; killed {n} processes its agent left"),
            };
            format!("↩ {id} released: {why}{killed}")
        }
        Event::Revoked { id, reason } => format!("■ {id}: {reason}; stopping its agent"),
        Event::Stopping { agents: 0, .. } => "stopping: no agents running".to_string(),
        Event::Stopping { agents, grace_secs } => format!(
            "stopping {agents} agent{}, grace {grace_secs} s; press Ctrl-C again to kill now",
            if *agents == 1 { "" } else { "s" }
        ),
        Event::StoppingNow { agents } => format!("killing {agents} agents now"),
        Event::Idle { paused } => {
            format!("nothing more can run without help — paused: {}", paused.join("; "))
        }
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
