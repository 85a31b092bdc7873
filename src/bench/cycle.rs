//! The agents' real shape for `fleet bench claim`: `claimers` agents at once, each running the
//! three commands an agent runs per task — list ready work, claim one of it, close it — as
//! separate processes, until no ready work is left. Counted as completed cycles per second.
//!
//! fleet's agents run the real `bd` personality (`bd ready --json --limit 100`, `bd update ID
//! --claim --json`, `bd close ID --json`) while a supervisor (`fleet run` with no agent
//! slots) runs and serves the workspace — or, for the direct route, with `FLEET_DIRECT=1`, so
//! each command opens the store itself. The baseline's agents run the same three statements
//! on SQLite, each in a process of its own (`fleet bench worker --engine sqlite
//! --ready-ids|--claim-id|--close-id`). Agent `n` takes the `n`-th ready issue (modulo the
//! list), so 64 agents spread over the head of the queue instead of all fighting for its
//! first issue; a lost claim sends the agent back to the ready list, as it would a real one.

use std::path::Path;
use std::process::{Command, Stdio};

use super::claims::Claims;
use super::worker::Engine;
use super::workspace::fleet_store_dir;

/// Ready issues an agent asks for.
const READY_LIMIT: &str = "100";
/// Lost claims in a row after which an agent gives up (something else is wrong).
const MAX_LOST_IN_A_ROW: usize = 1000;

/// How one agent reaches its queue.
pub(super) struct Agent<'a> {
    pub engine: Engine,
    /// The `fleet` binary, and a `bd` link to it.
    pub fleet: &'a Path,
    pub bd: &'a Path,
    pub workspace: &'a Path,
    pub actor: String,
    pub index: usize,
    /// Skip the server (fleet's direct route).
    pub direct: bool,
}

impl Agent<'_> {
    /// Works until no ready issue is left; reports the issues it claimed and closed.
    pub fn work(&self) -> Claims {
        let mut claims = Claims::default();
        let mut lost_in_a_row = 0;
        loop {
            let ready = match self.ready() {
                Ok(ready) => ready,
                Err(error) => return claims.failing(error),
            };
            if ready.is_empty() {
                return claims;
            }
            let id = &ready[self.index % ready.len()];
            match self.claim(id) {
                Ok(true) => lost_in_a_row = 0,
                Ok(false) => {
                    lost_in_a_row += 1;
                    if lost_in_a_row >= MAX_LOST_IN_A_ROW {
                        return claims.failing(format!(
                            "{} lost {lost_in_a_row} claims in a row",
                            self.actor
                        ));
                    }
                    continue;
                }
                Err(error) => return claims.failing(error),
            }
            if let Err(error) = self.close(id) {
                return claims.failing(error);
            }
            claims.won.push((self.actor.clone(), id.clone()));
        }
    }

    fn ready(&self) -> Result<Vec<String>, String> {
        match self.engine {
            Engine::Fleet => {
                let out =
                    self.run(self.bd_command(&["ready", "--json", "--limit", READY_LIMIT]))?;
                let value: serde_json::Value = serde_json::from_str(&out.1)
                    .map_err(|e| format!("`bd ready --json` printed something else ({e})"))?;
                Ok(value
                    .as_array()
                    .map(|issues| {
                        issues.iter().filter_map(|i| i["id"].as_str().map(str::to_string)).collect()
                    })
                    .unwrap_or_default())
            }
            Engine::Sqlite => {
                let out = self.run(self.baseline_command(&["--ready-ids"]))?;
                Ok(out
                    .1
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect())
            }
        }
    }

    /// Whether the claim was won (a lost claim is not an error).
    fn claim(&self, id: &str) -> Result<bool, String> {
        match self.engine {
            Engine::Fleet => {
                let (succeeded, _, _) =
                    self.run_status(self.bd_command(&["update", id, "--claim", "--json"]))?;
                Ok(succeeded)
            }
            Engine::Sqlite => {
                let out = self.run(self.baseline_command(&["--claim-id", id]))?;
                Ok(!out.1.trim().is_empty())
            }
        }
    }

    fn close(&self, id: &str) -> Result<(), String> {
        match self.engine {
            Engine::Fleet => self.run(self.bd_command(&["close", id, "--json"])).map(drop),
            Engine::Sqlite => self.run(self.baseline_command(&["--close-id", id])).map(drop),
        }
    }

    fn bd_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.bd);
        command
            .args(args)
            .env("BEADS_DIR", fleet_store_dir(self.workspace))
            .env("BEADS_ACTOR", &self.actor)
            .env_remove("FLEET_HOME");
        if self.direct {
            command.env("FLEET_DIRECT", "1");
        }
        command
    }

    fn baseline_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.fleet);
        command.arg("--db").arg(self.workspace);
        command.args(["--actor", &self.actor, "bench", "worker", "--engine", "sqlite"]);
        command.args(args);
        command
    }

    /// Runs `command`; an exit other than 0 is an error naming the command and its stderr.
    fn run(&self, command: Command) -> Result<(bool, String), String> {
        let shown = format!("{:?}", command.get_args().collect::<Vec<_>>());
        match self.run_status(command)? {
            (true, stdout, _) => Ok((true, stdout)),
            (false, _, stderr) => {
                Err(format!("agent {}: {shown} failed: {}", self.actor, stderr.trim()))
            }
        }
    }

    /// Runs `command`: whether it succeeded, its stdout and its stderr.
    fn run_status(&self, mut command: Command) -> Result<(bool, String, String), String> {
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let output =
            command.output().map_err(|e| format!("agent {}: spawning: {e}", self.actor))?;
        Ok((
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ))
    }
}
