//! Errors at the command-line edge, for both personalities: a message, hints on how to fix
//! it, and the exit code.
//!
//! Library errors convert here once (`From` impls), so commands just use `?`. How an error is
//! reported is the mode's business ([`CliError::report`]):
//!
//! - fleet: `error: …` followed by `hint: …` lines on stderr; with `--json` one JSON object
//!   `{"error", "hints", "errors"?}` on stderr, so stdout stays parseable. Exit codes are
//!   [`exit_code`]'s (README.md, "Exit codes").
//! - bd: beads' conventions — `Error: …` and `Hint: …` lines, with `--json`
//!   `{"error": …, "schema_version": 1}` on stderr (on stdout for an error that stands in for
//!   the result, [`CliError::respecting_json`]), exit 1. Hints of store errors name fleet
//!   commands, so bd does not print them.

use super::output::{Mode, SCHEMA_VERSION};
use crate::store::StoreError;

/// Every exit code fleet uses, in one place (README.md, "Exit codes", lists them too). These
/// are `fleet`'s own; as `bd`, beads' conventions apply instead.
pub mod exit_code {
    /// The command did what was asked, for every item it was given.
    pub const SUCCESS: i32 = 0;
    /// The command failed for at least one item: bad input, a missing issue, a refused change,
    /// a storage error. Items that succeeded are still reported on stdout.
    pub const FAILURE: i32 = 1;
    /// A usage error: the arguments could not be parsed (clap's usage errors), or a required
    /// one is missing.
    pub const USAGE: i32 = 2;
    /// `fleet run status`: no supervisor runs in the background (as `systemctl status` and
    /// LSB init scripts say "not running"). `fleet run restart` with nothing to restart.
    pub const NOT_RUNNING: i32 = 3;
    /// `fleet run --until-idle` (and `fleet demo`) stopped with tasks it ran that did not
    /// close: failed, blocked, or left open (a paused coder, a stop).
    pub const UNFINISHED: i32 = 4;
}

/// One item of a multi-id command that failed, while others may have succeeded.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ItemError {
    /// The id as the user typed it.
    pub id: String,
    /// Why it failed.
    pub error: String,
}

/// An error ready to show a user.
#[derive(Debug, Clone)]
pub struct CliError {
    pub message: String,
    pub hints: Vec<String>,
    /// fleet's hint for a store error; it names fleet commands, so only fleet prints it
    /// (before `hints`).
    store_hint: Option<&'static str>,
    pub code: i32,
    /// Per-item failures of a multi-id command; printed one `error:` line each (instead of
    /// `message`), and as `errors` with `--json`.
    pub items: Vec<ItemError>,
    /// Already reported on stderr (bd's per-issue messages); only the exit code is left.
    silent: bool,
    /// bd with `--json`: the JSON error goes to stdout, where the caller reads the result
    /// (beads' `FatalErrorRespectJSON`: `bd show nosuch --json`, `bd close nosuch --json`).
    on_stdout: bool,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            hints: Vec::new(),
            store_hint: None,
            code: exit_code::FAILURE,
            items: Vec::new(),
            silent: false,
            on_stdout: false,
        }
    }

    /// The same error, written as JSON to stdout when bd runs with `--json` (and as text to
    /// stderr otherwise), as beads reports a command's failure in place of its result.
    pub fn respecting_json(self) -> CliError {
        CliError { on_stdout: true, ..self }
    }

    /// Exit 1 without printing anything more (what bd calls a silent exit).
    pub fn silent() -> CliError {
        CliError { silent: true, ..CliError::new("") }
    }

    /// Exit with `code` and print nothing more: the command already said what it had to (a
    /// status that is not "running").
    pub fn exit_only(code: i32) -> CliError {
        CliError { code, ..CliError::silent() }
    }

    /// The same error with exit code `code` (one of [`exit_code`]).
    pub fn with_code(mut self, code: i32) -> CliError {
        self.code = code;
        self
    }

    /// The error by its message alone, exit 1: how bd reports a failure of the command code it
    /// shares with fleet (`cli::issue`, `cli::dep`, …), whose hints and codes are fleet's.
    pub fn message_only(self) -> CliError {
        CliError::new(self.message)
    }

    /// A usage error (exit 2): an argument is missing or arguments do not fit together.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { code: exit_code::USAGE, ..CliError::new(message) }
    }

    /// The failure of some items of a multi-id command: `message` sums them up (for
    /// `--json`); each item is reported on its own line.
    pub fn for_items(message: impl Into<String>, items: Vec<ItemError>) -> CliError {
        CliError { items, ..CliError::new(message) }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    /// Prints the error to stderr the way `mode` reports errors and returns the exit code.
    pub fn report(&self, mode: Mode, json: bool) -> i32 {
        if !self.silent {
            let on_stdout = self.on_stdout && json && mode == Mode::Bd;
            let pretty = json_error_is_pretty(on_stdout);
            let text = match (mode, json) {
                (Mode::Fleet, true) => self.fleet_json(pretty),
                (Mode::Fleet, false) => self.fleet_text(),
                (Mode::Bd, true) => self.bd_json(pretty),
                (Mode::Bd, false) => self.bd_text(),
            };
            if on_stdout {
                super::output::write_stdout(&text);
            } else {
                super::output::write_stderr(&text);
            }
        }
        match mode {
            Mode::Fleet => self.code,
            // beads exits 1 for every error.
            Mode::Bd => exit_code::FAILURE,
        }
    }

    fn fleet_hints(&self) -> impl Iterator<Item = &str> {
        self.store_hint.into_iter().chain(self.hints.iter().map(String::as_str))
    }

    fn fleet_json(&self, pretty: bool) -> String {
        let hints: Vec<&str> = self.fleet_hints().collect();
        let mut body = serde_json::json!({ "error": self.message, "hints": hints });
        if !self.items.is_empty() {
            body["errors"] = serde_json::to_value(&self.items).unwrap_or_default();
        }
        json_text(&body, pretty)
    }

    fn fleet_text(&self) -> String {
        let mut lines = Vec::new();
        if self.items.is_empty() {
            lines.push(format!("error: {}", self.message));
        }
        lines.extend(self.items.iter().map(|item| format!("error: {}", item.error)));
        lines.extend(self.fleet_hints().map(|hint| format!("hint: {hint}")));
        lines.join("\n")
    }

    fn bd_json(&self, pretty: bool) -> String {
        let body = serde_json::json!({ "error": self.message, "schema_version": SCHEMA_VERSION });
        json_text(&body, pretty)
    }

    fn bd_text(&self) -> String {
        let mut lines = vec![format!("Error: {}", self.message)];
        lines.extend(self.hints.iter().map(|hint| format!("Hint: {hint}")));
        lines.join("\n")
    }
}

impl From<StoreError> for CliError {
    fn from(error: StoreError) -> CliError {
        let hint = match &error {
            StoreError::NotFound(_) | StoreError::Deleted(_) => {
                Some("run `fleet list --all` to see issue ids")
            }
            StoreError::Ambiguous { .. } => Some("type more of the id"),
            StoreError::NotInitialized(_) => Some(
                "create it with `fleet init`, or point --db / BEADS_DIR at an existing .beads directory",
            ),
            StoreError::AlreadyClaimed { .. } => {
                Some("run `fleet claim` with no id to take the next ready issue")
            }
            StoreError::Cycle { .. } => Some("run `fleet dep tree <id>` to see the existing chain"),
            StoreError::Corrupt(_) => {
                Some("run `fleet doctor` to see what is damaged and how to repair it")
            }
            _ if error.is_disk_full() => {
                Some("free space on the disk that holds the store, then run the command again")
            }
            _ if error.is_access_denied() => Some(
                "reading needs read access to the store file; changing it needs write access to the file and its directory",
            ),
            StoreError::Io { .. } | StoreError::DatabaseAt { .. } => {
                Some("check the path and its permissions")
            }
            _ => None,
        };
        CliError { store_hint: hint, ..CliError::new(error.to_string()) }
    }
}

impl From<crate::tracker::claims::ClaimError> for CliError {
    fn from(error: crate::tracker::claims::ClaimError) -> CliError {
        let hint = error
            .claimed_elsewhere()
            .then_some("run `fleet claim` with no id to take the next ready issue");
        match error {
            crate::tracker::claims::ClaimError::Store(error) => error.into(),
            other => CliError { store_hint: hint, ..CliError::new(other.to_string()) },
        }
    }
}

impl From<crate::model::ModelError> for CliError {
    fn from(error: crate::model::ModelError) -> CliError {
        CliError::new(error.to_string())
    }
}

impl From<crate::id::IdError> for CliError {
    fn from(error: crate::id::IdError) -> CliError {
        CliError::new(error.to_string())
    }
}

impl From<crate::time::DateError> for CliError {
    fn from(error: crate::time::DateError) -> CliError {
        let cli = CliError::new(error.to_string());
        match error.hint() {
            Some(hint) => cli.with_hint(hint),
            None => cli,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(error: std::io::Error) -> CliError {
        CliError::new(format!("i/o error: {error}"))
    }
}

/// Whether a `--json` error is indented: as `--json` output is (see `output`), by whether its
/// stream is a terminal, or `FLEET_JSON_PRETTY`; errors are reported before or outside the
/// command's output settings, so `--pretty` does not reach them.
fn json_error_is_pretty(on_stdout: bool) -> bool {
    use std::io::IsTerminal;
    let terminal =
        if on_stdout { std::io::stdout().is_terminal() } else { std::io::stderr().is_terminal() };
    terminal || crate::env::json_pretty()
}

/// `value` as JSON text, indented or compact.
fn json_text(value: &serde_json::Value, pretty: bool) -> String {
    let text =
        if pretty { serde_json::to_string_pretty(value) } else { serde_json::to_string(value) };
    text.unwrap_or_default()
}
