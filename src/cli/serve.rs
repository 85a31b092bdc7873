//! `fleet serve`: serve the workspace's write requests on its socket when no supervisor runs
//! (a supervisor serves its workspace itself), until Ctrl-C or SIGTERM. Commands find the
//! socket on their own; see `crate::server`.

use std::sync::Arc;

use super::context::Context;
use super::error::CliError;
use super::signals::{self, Blocked};
use crate::server::{ServeError, Server};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

pub fn cmd_serve(ctx: &Context, _args: ServeArgs) -> Result<(), CliError> {
    // Blocked before any thread starts, so every thread inherits the mask and the signals
    // wait for `sigwait` below.
    let stop = Blocked::block(&signals::STOP)?;
    let store = Arc::new(ctx.open_store()?);
    // Writes served here are masked with the secrets of the home's coders and accounts too.
    if let Ok(home) = super::context::fleet_home()
        && let Ok(config) = crate::config::RuntimeConfig::load(&home.join("runtime.toml"))
    {
        crate::tracker::set_inbound_redactor(config.redactor());
    }
    let server = Server::start(store, Box::new(|| {})).map_err(serve_error)?;
    ctx.out.note(&format!(
        "serving {} on {}; Ctrl-C to stop",
        ctx.workspace_dir()?.display(),
        server.socket().display()
    ));
    loop {
        if let Some(signal) = stop.wait(std::time::Duration::from_secs(1)) {
            tracing::info!(signal, "stopping the server");
            break;
        }
        if let Some(why) = server.stopped_serving() {
            return Err(CliError::new(format!("stopped serving: {why}")).with_hint(
                "commands keep working: they write directly, or through the process that serves \
                 the workspace now; start `fleet serve` again to serve it from here",
            ));
        }
    }
    drop(server);
    Ok(())
}

fn serve_error(error: ServeError) -> CliError {
    match error {
        ServeError::AlreadyServed(_) => CliError::new(error.to_string()).with_hint(
            "commands already send their writes to that process; stop it first to serve from here",
        ),
        ServeError::Io { .. } => CliError::new(error.to_string())
            .with_hint("commands keep working without a server; they write to the store directly"),
    }
}
