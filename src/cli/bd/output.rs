//! Output as `bd` writes it: human text on stdout, `--json` in bd's shapes, errors on stderr.
//!
//! `--json` (spec/beads.md §7): pretty JSON with a two-space indent; an **object** gets an extra
//! `"schema_version": 1` and comes out with its keys sorted (bd re-marshals it through a map);
//! an **array** is written bare, its elements in field order. With `BD_JSON_ENVELOPE=1` every
//! payload is wrapped instead: `{"data": …, "schema_version": 1}`. Errors are `Error: <msg>` on
//! stderr (`{"error": …, "schema_version": 1}` with `--json`), exit 1.

use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::store::StoreError;

/// The version of bd's `--json` shapes that fleet writes.
pub const SCHEMA_VERSION: u64 = 1;

#[derive(Debug, Clone, Copy)]
pub struct BdOutput {
    pub json: bool,
    pub quiet: bool,
    envelope: bool,
}

impl BdOutput {
    pub fn new(json: bool, quiet: bool) -> BdOutput {
        let envelope = std::env::var("BD_JSON_ENVELOPE")
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "TRUE" | "yes"));
        BdOutput { json, quiet, envelope }
    }

    /// The same output with `--json` switched on (for `--format json`).
    pub fn with_json(self, json: bool) -> BdOutput {
        BdOutput { json: self.json || json, ..self }
    }

    /// Prints `value` in bd's JSON shape with `--json`, else the text `human` builds.
    pub fn emit<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            let value = serde_json::to_value(value).expect("output values serialise");
            write_stdout(&self.json_text(value));
        } else {
            write_stdout(&human());
        }
    }

    /// Prints human text (nothing with `--json`).
    pub fn text(&self, text: &str) {
        if !self.json {
            write_stdout(text);
        }
    }

    /// A note for people on stderr: not with `--json` or `--quiet`.
    pub fn note(&self, text: &str) {
        if !self.json && !self.quiet {
            eprintln!("{text}");
        }
    }

    /// A warning or per-item error on stderr, shown even with `--json` (stdout stays clean).
    pub fn warn(&self, text: &str) {
        eprintln!("{text}");
    }

    /// `value` shaped and pretty-printed the way bd prints it.
    pub fn json_text(&self, value: Value) -> String {
        let shaped = if self.envelope {
            let mut map = Map::new();
            map.insert("data".into(), value);
            map.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
            Value::Object(map)
        } else {
            match value {
                Value::Object(mut map) => {
                    map.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
                    sorted(Value::Object(map))
                }
                other => other,
            }
        };
        serde_json::to_string_pretty(&shaped).expect("JSON values serialise")
    }
}

/// Sorts the keys of every object in `value`, as a Go map round trip does.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Writes `text` and a newline to stdout; an empty text writes nothing. A reader that went
/// away (`bd list | head`) is not an error. Control characters other than newlines and tabs
/// are escaped (see [`printable_block`]; a no-op for JSON).
fn write_stdout(text: &str) {
    if text.is_empty() {
        return;
    }
    let text = crate::cli::output::printable_block(text);
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", text.trim_end_matches('\n')).and_then(|()| stdout.flush());
}

/// An error as bd reports it.
#[derive(Debug)]
pub struct BdError {
    pub message: String,
    pub hints: Vec<String>,
    pub code: i32,
    /// Already reported on stderr (per-issue messages); only the exit code is left to give.
    pub silent: bool,
}

impl BdError {
    pub fn new(message: impl Into<String>) -> BdError {
        BdError { message: message.into(), hints: Vec::new(), code: 1, silent: false }
    }

    /// Exit 1 without printing anything more (what bd calls a silent exit).
    pub fn silent() -> BdError {
        BdError { silent: true, ..BdError::new("") }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> BdError {
        self.hints.push(hint.into());
        self
    }

    /// Prints the error to stderr and returns the exit code.
    pub fn report(&self, json: bool) -> i32 {
        if self.silent {
            return self.code;
        }
        if json {
            let body =
                serde_json::json!({ "error": self.message, "schema_version": SCHEMA_VERSION });
            eprintln!("{}", serde_json::to_string_pretty(&body).unwrap_or_default());
        } else {
            eprintln!("Error: {}", self.message);
            for hint in &self.hints {
                eprintln!("Hint: {hint}");
            }
        }
        self.code
    }
}

impl From<StoreError> for BdError {
    fn from(error: StoreError) -> BdError {
        BdError::new(error.to_string())
    }
}

impl From<crate::model::ModelError> for BdError {
    fn from(error: crate::model::ModelError) -> BdError {
        BdError::new(error.to_string())
    }
}

impl From<crate::id::IdError> for BdError {
    fn from(error: crate::id::IdError) -> BdError {
        BdError::new(error.to_string())
    }
}

impl From<crate::time::DateError> for BdError {
    fn from(error: crate::time::DateError) -> BdError {
        let cli = BdError::new(error.to_string());
        match error.hint() {
            Some(hint) => cli.with_hint(hint),
            None => cli,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_get_a_schema_version_and_sorted_keys_arrays_stay_bare() {
        let out = BdOutput { json: true, quiet: false, envelope: false };
        let object = out.json_text(serde_json::json!({ "title": "t", "id": "x-1" }));
        assert_eq!(
            object,
            "{\n  \"id\": \"x-1\",\n  \"schema_version\": 1,\n  \"title\": \"t\"\n}"
        );
        let array = out.json_text(serde_json::json!([{ "title": "t", "id": "x-1" }]));
        assert!(array.starts_with("[\n  {\n    \"title\""), "{array}");
    }

    #[test]
    fn the_envelope_wraps_any_payload() {
        let out = BdOutput { json: true, quiet: false, envelope: true };
        let text = out.json_text(serde_json::json!([1]));
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value, serde_json::json!({ "data": [1], "schema_version": 1 }));
    }
}
