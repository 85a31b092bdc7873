//! Errors at the command-line edge: a message, hints on how to fix it, and the exit code.
//!
//! Library errors convert here once (`From` impls), so commands just use `?`. Human errors go
//! to stderr as `error: …` followed by `hint: …` lines; with `--json` they are one JSON object
//! on stderr, so stdout stays parseable.

use crate::store::StoreError;

/// Every exit code fleet uses, in one place.
pub mod exit_code {
    /// The command did what was asked.
    pub const SUCCESS: i32 = 0;
    /// The command failed: bad input, a missing issue, a refused change, a storage error.
    pub const FAILURE: i32 = 1;
    /// The arguments could not be parsed (clap's usage errors).
    pub const USAGE: i32 = 2;
}

/// An error ready to show a user.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub hints: Vec<String>,
    pub code: i32,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> CliError {
        CliError { message: message.into(), hints: Vec::new(), code: exit_code::FAILURE }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    /// Prints the error to stderr and returns the exit code.
    pub fn report(&self, json: bool) -> i32 {
        if json {
            let body = serde_json::json!({ "error": self.message, "hints": self.hints });
            eprintln!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
        } else {
            eprintln!("error: {}", self.message);
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
            StoreError::Io { .. } => Some("check the path and its permissions"),
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
