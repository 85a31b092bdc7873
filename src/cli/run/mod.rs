//! `fleet run`: the supervisor in the foreground, until Ctrl-C or SIGTERM (or, with
//! `--until-idle`, until the queue is drained). Progress is printed as it happens: one human
//! line per event, or JSON Lines with `--json`; every event is also logged at info, so it reaches
//! the run log (`$FLEET_HOME/logs/fleet-run.log`, see `cli::logging`).
//!
//! `fleet run --detach` starts the same supervisor in the background, and `fleet run
//! status|stop|restart` control it (see `cli::daemon`). An `--until-idle` run that ends with
//! tasks it ran not closed exits [`exit_code::UNFINISHED`] and names them on stderr.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

mod args;
mod daemon;

pub use args::{GuardArgs, RunArgs, RunControl, StartArgs};

use crate::cli::context::{Context, fleet_home};
use crate::cli::error::{CliError, exit_code};
use crate::cli::output::{write_stdout, write_styled};
use crate::cli::style::{Styled, Tone};
use crate::model::Status;
use crate::store::Store;
use crate::supervisor::outcome::Verdict;
use crate::supervisor::{Event, Options, Stop, Summary, Supervisor};

/// `fleet@<hostname>`.
pub fn default_supervisor_name() -> String {
    format!("fleet@{}", crate::process::hostname())
}

pub fn cmd_run(ctx: &Context, args: RunArgs) -> Result<(), CliError> {
    match args.control {
        Some(RunControl::Status) => daemon::cmd_status(ctx),
        Some(RunControl::Stop(stop)) => daemon::cmd_stop(ctx, &stop),
        Some(RunControl::Restart(stop)) => daemon::cmd_restart(ctx, &stop),
        None if args.start.detach => {
            let argv = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
            daemon::cmd_detach(ctx, &args.start, argv)
        }
        None => run_here(ctx, &args.start),
    }
}

/// Runs the supervisor in this process: in the foreground, or as the detached supervisor
/// `fleet run --detach` started (which prints no events: they are in the run log).
fn run_here(ctx: &Context, args: &StartArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let detached = args
        .detached_lock_fd
        .map(|fd| daemon::Detached::start(ctx, fd, &home, args.detached_argv.clone()))
        .transpose()?;
    let store = Arc::new(ctx.open_store()?);
    let options = Options {
        home,
        actor: args.lease_name.clone().unwrap_or_else(default_supervisor_name),
        exe: std::env::current_exe()?,
        user_home: std::env::home_dir(),
        until_idle: args.until_idle,
    };
    let (json, color) = (ctx.out.json, ctx.out.color);
    // Until the supervisor has loaded runtime.toml (see `supervise`), the secrets of this
    // process's environment.
    let redactor = crate::supervisor::process_redactor();
    if let Err(error) = super::logging::open_run_log(&options.home, redactor) {
        let dir = options.home.join(super::logging::LOG_DIR);
        tracing::warn!(%error, dir = %dir.display(), "cannot open the run log; logging to stderr only");
    }
    let print = detached.is_none();
    let summary = supervise(Arc::clone(&store), options, move |event| {
        log_event(&event);
        if print {
            print_event(&event, json, color);
        }
    })?;
    let line = summary_line(&summary);
    tracing::info!("{line}");
    if !json {
        write_stdout(&line);
    }
    drop(detached);
    if args.until_idle { check_all_closed(&store, &summary) } else { Ok(()) }
}

/// A task an `--until-idle` run attempted that did not end closed.
#[derive(Debug)]
struct Unfinished {
    id: String,
    status: Status,
    last_verdict: Verdict,
}

/// The tasks `summary`'s run attempted that are not closed now, by id. A task someone else
/// took over, or deleted, is not this run's to finish.
fn unfinished(store: &Store, summary: &Summary) -> Result<Vec<Unfinished>, CliError> {
    let reader = store.read()?;
    let mut left = Vec::new();
    for (id, verdict) in &summary.last_verdicts {
        if *verdict == Verdict::TakenOver {
            continue;
        }
        match reader.issue(id)? {
            Some(issue) if issue.status != Status::Closed => left.push(Unfinished {
                id: id.clone(),
                status: issue.status,
                last_verdict: *verdict,
            }),
            _ => {}
        }
    }
    Ok(left)
}

/// Ok when every task the run attempted closed; else the error (exit
/// [`exit_code::UNFINISHED`]) whose message is the one-line account of those that did not.
pub fn check_all_closed(store: &Store, summary: &Summary) -> Result<(), CliError> {
    let left = unfinished(store, summary)?;
    if left.is_empty() {
        return Ok(());
    }
    let tasks: Vec<String> =
        left.iter().map(|t| format!("{} {} ({})", t.id, t.status, t.last_verdict)).collect();
    let message = format!(
        "stopped with {} of {} tasks it ran not closed: {}",
        left.len(),
        summary.last_verdicts.len(),
        tasks.join(", ")
    );
    Err(CliError::new(message)
        .with_code(exit_code::UNFINISHED)
        .with_hint("`fleet show ID` says what happened to each; `fleet questions` lists the questions of blocked agents"))
}

pub fn cmd_guard(ctx: &Context, args: GuardArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    crate::supervisor::guard::watch(&args.instance, &args.home, dir);
    Ok(())
}

/// Builds the runtime, runs the supervisor until it is stopped (Ctrl-C, SIGTERM, SIGHUP, or
/// `--until-idle`), and feeds its events to `on_event` as they happen. The run log (when one
/// is open) masks the secrets of the config the supervisor loaded, and of each reload.
pub fn supervise(
    store: Arc<Store>,
    options: Options,
    mut on_event: impl FnMut(Event) + Send + 'static,
) -> Result<Summary, CliError> {
    crate::allocator::long_running();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // With many agents, a short nap before each wait for events: their lines then come in
        // batches (see `nap_between_events`).
        .on_thread_park(crate::supervisor::nap_between_events)
        .build()
        .map_err(|e| CliError::new(format!("starting the async runtime: {e}")))?;
    runtime.block_on(async move {
        let (events, mut received) = mpsc::unbounded_channel();
        let printer = tokio::spawn(async move {
            while let Some(event) = received.recv().await {
                if let Event::ConfigReloaded { redactor, .. } = &event {
                    // The reloaded file may give accounts new keys: mask them from now on.
                    super::logging::set_run_log_redactor(redactor.clone());
                }
                on_event(event);
            }
        });
        let (stop_tx, stop) = watch::channel(Stop::No);
        let stop_tx = Arc::new(stop_tx);
        listen_for_stop_signals(Arc::clone(&stop_tx))
            .map_err(|e| CliError::new(format!("installing signal handlers: {e}")))?;
        let server_store = Arc::clone(&store);
        let supervisor = Supervisor::new(store, options, events)
            .map_err(|e| CliError::new(e.to_string()).with_hint(e.hint()))?;
        super::logging::set_run_log_redactor(supervisor.redactor().clone());
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
/// process outright): the first SIGINT, SIGTERM, SIGQUIT (Ctrl-\\) or SIGHUP asks for a
/// graceful stop, a second SIGINT, SIGTERM or SIGQUIT for an immediate one.
fn listen_for_stop_signals(stop: Arc<watch::Sender<Stop>>) -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut quit = signal(SignalKind::quit())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::spawn(async move {
        loop {
            let hung_up = tokio::select! {
                _ = interrupt.recv() => false,
                _ = terminate.recv() => false,
                _ = quit.recv() => false,
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
        Event::Finished { .. }
        | Event::Paused { .. }
        | Event::Held { .. }
        | Event::Budget { .. }
        | Event::ShortOfResources { .. } => Tone::Warn,
        Event::Released { .. } | Event::StraysKilled { .. } => Tone::Warn,
        Event::ConfigRejected { .. } | Event::Revoked { .. } => Tone::Bad,
        Event::Land(report) if report.verdict == "landed" || report.verdict == "no changes" => {
            Tone::Good
        }
        Event::Land(_) => Tone::Warn,
        _ => return None,
    })
}

/// Logs an event at info, one line: its human line, or its JSON when it has none.
fn log_event(event: &Event) {
    let json = serde_json::to_value(event).unwrap_or_default();
    let kind = json["type"].as_str().unwrap_or("event");
    let line = match (event_line(event), event) {
        (Some(line), _) => line.replace('\n', " "),
        // Not worth a line on the terminal, but the log tells the whole story.
        (None, Event::AgentStarted { id, pid }) => format!("  {id}: agent started (pid {pid})"),
        (None, Event::Stopped { finished }) => format!("stopped after {finished} attempts"),
        // Once per change of the store: the story in detail, not at info.
        (None, Event::Waiting { running, slots, changes }) => {
            let line = format!("waiting: {running} of {slots} slots busy at change {changes}");
            tracing::debug!(event = kind, "{line}");
            return;
        }
        (None, _) => json.to_string(),
    };
    tracing::info!(event = kind, "{line}");
}

/// One human line for an event (`None` for events not worth a line).
pub fn event_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::Started { actor, max_concurrent, .. } => {
            format!(
                "fleet run: supervising as {actor}, up to {max_concurrent} agents at once (Ctrl-C stops)"
            )
        }
        Event::Claimed { id, title, coder, model, account, attempt } => {
            let coder = crate::coders::account::qualified(coder, account.as_deref());
            let model = if model.is_empty() { String::new() } else { format!(", {model}") };
            format!("▶ {id} attempt {attempt} ({coder}{model}): {title}")
        }
        Event::AgentStarted { .. } | Event::Stopped { .. } | Event::Waiting { .. } => return None,
        Event::Finished { id, verdict, comment } => {
            let mark = if *verdict == Verdict::Closed { "✓" } else { "•" };
            let detail = comment.lines().next().unwrap_or_default();
            format!("{mark} {id} {verdict}: {detail}")
        }
        Event::Paused { coder, account, until, cause, detail, fix, news } => {
            let coder = crate::coders::account::qualified(coder, account.as_deref());
            let head = format!("⏸ {coder} paused until {until} ({}): {detail}", cause.as_str());
            if *news { format!("{head}\n  fix: {fix}") } else { head }
        }
        Event::ConfigReloaded { max_concurrent, .. } => {
            format!("⚙ runtime.toml reloaded (max_concurrent = {max_concurrent})")
        }
        Event::Held { all: false, coders, accounts, models }
            if coders.is_empty() && accounts.is_empty() && models.is_empty() =>
        {
            "▶ spawning resumed (fleet resume)".to_string()
        }
        Event::Held { all, coders, accounts, models } => {
            let whom = if *all {
                "every coder".to_string()
            } else {
                coders.iter().chain(models).chain(accounts).cloned().collect::<Vec<_>>().join(", ")
            };
            format!("⏸ spawning paused: {whom} (until `fleet resume`); running agents go on")
        }
        Event::Canary { subject, detail, fix, .. } => {
            format!("⏸ {subject} paused by the canary: {detail}\n  fix: {fix}")
        }
        Event::ConfigRejected { error } => {
            format!("⚠ runtime.toml is invalid, keeping the previous config: {error}")
        }
        Event::Budget { detail, .. } if detail.is_empty() => {
            "▶ the budget allows new attempts again".to_string()
        }
        Event::Budget { detail, until, .. } => {
            let until = until.map(|u| format!(" until {u}")).unwrap_or_default();
            format!("⏸ new attempts held by the budget{until}: {detail} (`fleet budget`)")
        }
        Event::Released { id, why, survivors_killed } => {
            let killed = match survivors_killed {
                0 => String::new(),
                n => format!("; killed {n} processes its agent left"),
            };
            format!("↩ {id} released: {why}{killed}")
        }
        Event::ShortOfResources { detail, running, hold_secs } => format!(
            "⏸ spawning held at {running} agents for {hold_secs} s: {detail}\n  fix: raise the limit for fleet run (`ulimit -n` / `ulimit -u` in its shell, LimitNOFILE= in a systemd unit), or lower max_concurrent"
        ),
        Event::StraysKilled { count } => {
            format!("↩ killed {count} processes left by stopped runs of this workspace")
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
        Event::Land(report) => {
            let mark = match report.verdict.as_str() {
                "landed" | "no changes" => "⇡",
                "conflict" => "⚡",
                "base moved" => "↻",
                _ => "✗",
            };
            format!("{mark} {} {}: {}", report.id, report.verdict, report.detail)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The live view's words for a rejected config, and no line for a claim pass that only
    /// waits (it reaches `--json` and the debug log).
    #[test]
    fn a_rejected_config_reads_as_kept_and_waiting_has_no_line() {
        let rejected = Event::ConfigRejected { error: "runtime.toml:1:18: bad".into() };
        assert_eq!(
            event_line(&rejected).as_deref(),
            Some("⚠ runtime.toml is invalid, keeping the previous config: runtime.toml:1:18: bad")
        );
        assert_eq!(event_line(&Event::Waiting { running: 2, slots: 2, changes: 9 }), None);
    }
}
