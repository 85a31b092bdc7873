//! Flags beads 1.0.5 registers whose effect cannot apply to fleet, accepted so that scripts
//! and tools passing them keep working. Each says in `--help` why it changes nothing.
//!
//! - `init`: Dolt server and proxy settings (fleet has no server: the store is a file in
//!   `.beads/`, and the socket server starts with `fleet run`/`fleet serve`), the AGENTS.md
//!   generator (fleet's `bd init` writes no AGENTS.md; `bd setup` and `bd onboard` do), and
//!   the interactive prompts (fleet's init never asks).
//! - `update`: Dolt commit history switches (fleet journals every change) and gate fields
//!   (fleet has no gates).
//! - `create`: routing to another repository's database and Dolt history switches; beads'
//!   molecule, wisp, skill and event fields are kept in the issue's metadata.

/// `bd init` flags with nothing to configure in fleet.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InitCompatArgs {
    /// On a workspace that exists already: keep its store as it is and succeed (fleet never
    /// re-initialises a store that holds issues; `bd repair` rebuilds a damaged one).
    #[arg(long)]
    pub force: bool,
    /// Accepted: fleet has no local Dolt database to re-initialise.
    #[arg(long)]
    pub reinit_local: bool,
    /// Accepted: fleet has no Dolt remote to discard (its journal's remotes: `fleet remote`).
    #[arg(long)]
    pub discard_remote: bool,
    /// Accepted: fleet has no Dolt database to destroy.
    #[arg(long, value_name = "TOKEN")]
    pub destroy_token: Option<String>,
    /// Accepted: fleet syncs through its journal's git remotes (`fleet remote add NAME URL`),
    /// not a Dolt remote.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
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
    /// Accepted: fleet never refuses an empty description.
    #[arg(long)]
    pub allow_empty_description: bool,
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
    /// Molecule type (swarm, patrol, work): fleet has no molecules; kept in the issue's
    /// metadata as `mol_type`.
    #[arg(long, value_name = "TYPE")]
    pub mol_type: Option<String>,
    /// Wisp TTL class: kept in the issue's metadata as `wisp_type`.
    #[arg(long, value_name = "TYPE")]
    pub wisp_type: Option<String>,
    /// Skills the work needs: kept in the issue's metadata as `skills`.
    #[arg(long, value_name = "SKILLS")]
    pub skills: Option<String>,
    /// Context for the work: kept in the issue's metadata as `context`.
    #[arg(long, value_name = "TEXT")]
    pub context: Option<String>,
    /// Refused: fleet does not create issue graphs from a file; create each issue with `bd
    /// create` and link them with `bd dep add`.
    #[arg(long, value_name = "FILE")]
    pub graph: Option<String>,
    /// Event category (requires --type=event): kept in the issue's metadata as `event_kind`.
    #[arg(long, value_name = "CATEGORY")]
    pub event_category: Option<String>,
    /// Who caused the event (requires --type=event): metadata `actor`.
    #[arg(long, value_name = "URI")]
    pub event_actor: Option<String>,
    /// What the event affected (requires --type=event): metadata `target`.
    #[arg(long, value_name = "URI")]
    pub event_target: Option<String>,
    /// The event's JSON data (requires --type=event): metadata `payload`.
    #[arg(long, value_name = "JSON")]
    pub event_payload: Option<String>,
}

impl CreateCompatArgs {
    /// The fields beads keeps on the issue for molecules, wisps, agents' skills and events,
    /// merged into the issue's `metadata` (a `--metadata` document of the caller's own keeps
    /// its keys). Event fields need `--type=event`, as in beads; `--graph` is refused.
    pub fn with_beads_fields(
        &self,
        issue_type: &str,
        metadata: Option<serde_json::Value>,
    ) -> Result<Option<serde_json::Value>, crate::cli::CliError> {
        use serde_json::Value;
        if self.graph.is_some() {
            return Err(crate::cli::CliError::new(
                "--graph is not supported: create each issue with bd create and link them with bd dep add",
            ));
        }
        let events = [
            ("event_kind", &self.event_category),
            ("actor", &self.event_actor),
            ("target", &self.event_target),
            ("payload", &self.event_payload),
        ];
        if events.iter().any(|(_, v)| v.is_some()) && issue_type != "event" {
            return Err(crate::cli::CliError::new(
                "--event-category, --event-actor, --event-target and --event-payload require --type=event",
            ));
        }
        let others = [
            ("mol_type", &self.mol_type),
            ("wisp_type", &self.wisp_type),
            ("skills", &self.skills),
            ("context", &self.context),
        ];
        let fields: Vec<(&str, Value)> = events
            .into_iter()
            .chain(others)
            .filter_map(|(key, value)| {
                let value = value.as_deref()?;
                let json = match key {
                    "payload" => serde_json::from_str(value)
                        .unwrap_or_else(|_| Value::String(value.to_owned())),
                    _ => Value::String(value.to_owned()),
                };
                Some((key, json))
            })
            .collect();
        if fields.is_empty() {
            return Ok(metadata);
        }
        let mut merged = match metadata {
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(crate::cli::CliError::new(format!(
                    "--metadata must be a JSON object to take beads' fields too, not {other}"
                )));
            }
            None => serde_json::Map::new(),
        };
        for (key, value) in fields {
            merged.entry(key.to_owned()).or_insert(value);
        }
        Ok(Some(Value::Object(merged)))
    }
}
