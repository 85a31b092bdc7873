//! Errors at the command-line edge: a message, hints on how to fix it, and the exit code.
//!
//! Library errors convert here once (`From` impls), so commands just use `?`. Human errors go
//! to stderr as `error: …` followed by `hint: …` lines; with `--json` they are one JSON object
//! on stderr, so stdout stays parseable.

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
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub hints: Vec<String>,
    pub code: i32,
    /// Per-item failures of a multi-id command; printed one `error:` line each (instead of
    /// `message`), and as `errors` with `--json`.
    pub items: Vec<ItemError>,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            hints: Vec::new(),
            code: exit_code::FAILURE,
            items: Vec::new(),
        }
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

    /// Prints the error to stderr and returns the exit code.
    pub fn report(&self, json: bool) -> i32 {
        if json {
            let mut body = serde_json::json!({ "error": self.message, "hints": self.hints });
            if !self.items.is_empty() {
                body["errors"] = serde_json::to_value(&self.items).unwrap_or_default();
            }
            eprintln!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
        } else {
            if self.items.is_empty() {
                eprintln!("error: {}", self.message);
            }
            for item in &self.items {
                eprintln!("error: {}", item.error);
            }
            for hint in &self.hints {
                eprintln!("hint: {hint}");
            }
        }
        self.code
    }
}

impl From<StoreError> for CliError {
    fn from(error: StoreError) -> CliError {
        let hint = match &error {
            StoreError::NotFound(_) => Some("run `fleet list --all` to see issue ids"),
            StoreError::Ambiguous { .. } => Some("type more of the id"),
            StoreError::NotInitialized(_) => Some(
                "create it with `fleet init`, or point --db / BEADS_DIR at an existing .beads directory",
            ),
            StoreError::AlreadyClaimed { .. } => {
                Some("run `fleet claim` with no id to take the next ready issue")
            }
            StoreError::Cycle { .. } => Some("run `fleet dep tree <id>` to see the existing chain"),
            _ if error.is_access_denied() => Some(
                "reading needs read access to the store file; changing it needs write access to the file and its directory",
            ),
            StoreError::Io { .. } | StoreError::DatabaseAt { .. } => {
                Some("check the path and its permissions")
            }
            _ => None,
        };
        let cli = CliError::new(error.to_string());
        match hint {
            Some(hint) => cli.with_hint(hint),
            None => cli,
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
