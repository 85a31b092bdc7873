//! Flags beads 1.0.5 registers whose effect cannot apply to fleet, accepted so that scripts
//! and tools passing them keep working. Each says in `--help` why it changes nothing.
//!
//! - `init`: Dolt server and proxy settings (fleet has no server: the store is a file in
//!   `.beads/`, and the socket server starts with `fleet run`/`fleet serve`), the AGENTS.md
//!   generator (fleet's `bd init` writes no AGENTS.md; `bd setup` and `bd onboard` do), and
//!   the interactive prompts (fleet's init never asks).
//! - `update`: Dolt commit history switches (fleet journals every change) and gate fields
//!   (fleet has no gates).
//! - `create`: routing to another repository's database and Dolt history switches.

/// `bd init` flags with nothing to configure in fleet.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InitCompatArgs {
    /// Accepted: fleet's init never prompts.
    #[arg(long)]
    pub non_interactive: bool,
    /// Accepted: the beads role has no effect on fleet's store.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Accepted: fleet's init writes nothing into .git/info/exclude.
    #[arg(long)]
    pub setup_exclude: bool,
    /// Accepted: fleet's init writes no AGENTS.md (see `bd setup`, `bd onboard`).
    #[arg(long)]
    pub skip_agents: bool,
    /// Accepted: fleet's init writes no AGENTS.md.
    #[arg(long, value_name = "PATH")]
    pub agents_template: Option<String>,
    /// Accepted: fleet's init writes no AGENTS.md.
    #[arg(long, value_name = "PROFILE")]
    pub agents_profile: Option<String>,
    /// Accepted: fleet's init writes no AGENTS.md.
    #[arg(long, value_name = "NAME")]
    pub agents_file: Option<String>,
    /// Accepted: the store is always fleet's redb file (.beads/beads.db).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Accepted: fleet has no Dolt server (nor server database names).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// Accepted: fleet has no Dolt server to debug.
    #[arg(long)]
    pub debug: bool,
    /// Accepted: fleet has no Dolt server.
    #[arg(long)]
    pub server: bool,
    /// Accepted: fleet has no Dolt server.
    #[arg(long, value_name = "HOST")]
    pub server_host: Option<String>,
    /// Accepted: fleet has no Dolt server.
    #[arg(long, value_name = "PORT")]
    pub server_port: Option<String>,
    /// Accepted: fleet has no Dolt server.
    #[arg(long, value_name = "PATH")]
    pub server_socket: Option<String>,
    /// Accepted: fleet has no Dolt server.
    #[arg(long, value_name = "USER")]
    pub server_user: Option<String>,
    /// Accepted: fleet has no shared Dolt server.
    #[arg(long)]
    pub shared_server: bool,
    /// Accepted: fleet has no Dolt server to manage.
    #[arg(long)]
    pub external: bool,
    /// Accepted: fleet has no proxied Dolt server.
    #[arg(long)]
    pub proxied_server: bool,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_config_path: Option<String>,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_log_path: Option<String>,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_root_path: Option<String>,
    #[arg(long, hide = true, value_name = "HOST")]
    pub proxied_server_external_host: Option<String>,
    #[arg(long, hide = true, value_name = "PORT")]
    pub proxied_server_external_port: Option<String>,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_external_socket_path: Option<String>,
    #[arg(long, hide = true, value_name = "USER")]
    pub proxied_server_external_user: Option<String>,
    #[arg(long, hide = true)]
    pub proxied_server_external_tls: bool,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_external_tls_cert_path: Option<String>,
    #[arg(long, hide = true, value_name = "PATH")]
    pub proxied_server_external_tls_key_path: Option<String>,
    #[arg(long, hide = true, value_name = "DURATION")]
    pub proxied_server_external_keep_alive: Option<String>,
}

/// `bd update` flags with nothing to change in fleet.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UpdateCompatArgs {
    /// Accepted: fleet keeps every change in its journal; there is no Dolt history to skip.
    #[arg(long, conflicts_with = "history")]
    pub no_history: bool,
    /// Accepted: fleet keeps every change in its journal.
    #[arg(long)]
    pub history: bool,
    /// Accepted: fleet has no gates, so no gate await_id to set.
    #[arg(long, value_name = "ID")]
    pub await_id: Option<String>,
}

/// `bd create` flags with nothing to change in fleet.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CreateCompatArgs {
    /// Accepted: fleet does not route issues to other repositories' databases; the issue is
    /// created in this workspace.
    #[arg(long, value_name = "REPO")]
    pub repo: Option<String>,
    /// Accepted: fleet keeps every change in its journal; there is no Dolt history to skip.
    #[arg(long)]
    pub no_history: bool,
}
