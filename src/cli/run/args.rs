//! The command line of `fleet run`, its controls (`status`, `stop`, `restart`) and `fleet
//! guard`: what each flag means. The foreground run is `run`'s, the background one `daemon`'s.

/// What `fleet run --help` adds under the options.
const RUN_AFTER_HELP: &str = "Exit status: 0, or 4 when an --until-idle run stopped with tasks it ran that did not close (failed, blocked, or left open); 1 on errors. `fleet run --detach` runs the supervisor in the background; `fleet run status|stop|restart` control it.";

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_help = RUN_AFTER_HELP)]
pub struct RunArgs {
    #[command(subcommand)]
    pub control: Option<RunControl>,
    #[command(flatten)]
    pub start: StartArgs,
}

/// How to run the supervisor (`fleet run [OPTIONS]`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StartArgs {
    /// Stop once nothing is running and nothing more can start without a human.
    #[arg(long)]
    pub until_idle: bool,
    /// Name this supervisor holds its tasks under (default: fleet@<hostname>). Several
    /// supervisors may share a name; each run is still its own instance.
    #[arg(long = "as", value_name = "NAME")]
    pub lease_name: Option<String>,
    /// Run in the background: start the supervisor detached from this terminal (its output
    /// in $FLEET_HOME/logs/), record it in $FLEET_HOME/state/fleet-run.pid, and return once it
    /// is up. One per fleet home.
    #[arg(long)]
    pub detach: bool,
    /// The lock descriptor a detached supervisor inherits from `fleet run --detach`.
    #[arg(long, hide = true, value_name = "FD")]
    pub detached_lock_fd: Option<i32>,
    /// The command line `fleet run --detach` was typed as, one argument per use, which the
    /// detached supervisor records in its pid file (for `fleet run status` and `restart`).
    #[arg(
        long,
        hide = true,
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "detached_lock_fd"
    )]
    pub detached_argv: Vec<String>,
}

/// `fleet run status|stop|restart`: the supervisor started with `--detach`.
#[derive(Debug, clap::Subcommand)]
pub enum RunControl {
    /// Whether a supervisor runs in the background: its pid, since when, its agents, its log.
    /// A stale pid file (the process is gone, or its pid names another process now) is
    /// reported and removed.
    #[command(
        after_help = "Exit status: 0 when it runs, 3 when it does not (as `systemctl status` and LSB init scripts), 1 on errors."
    )]
    Status,
    /// Stop the supervisor running in the background: SIGTERM (its agents get their
    /// shutdown grace and their tasks are released, not charged), then SIGKILL if it has not
    /// exited within the timeout; no process of its run is left.
    Stop(StopArgs),
    /// Stop the supervisor running in the background (as `stop`) and start it again with the
    /// command line it was started with.
    Restart(StopArgs),
}

/// `fleet guard`: the process `fleet run` starts to clean up after it if it is killed (see
/// `supervisor::guard`). Not for people.
#[derive(Debug, clap::Args)]
pub struct GuardArgs {
    /// The supervisor instance to guard.
    #[arg(long)]
    pub instance: String,
    /// The supervisor's `$FLEET_HOME` (where its attempts record their process groups).
    #[arg(long)]
    pub home: std::path::PathBuf,
}

/// `fleet run stop|restart`.
#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// Seconds to wait for a graceful exit before SIGKILL (default: `shutdown_grace_secs` of
    /// runtime.toml, plus 10).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
}
