//! The per-task directory `$FLEET_HOME/tasks/<id>/`: what a run leaves behind for people and
//! for the next run.
//!
//! - `task.json`: the task as the supervisor ran it (id, title, cwd, coder, model, counters);
//! - `log.jsonl`: the runner's own lines (`attempt_started`, `attempt_finished`, …);
//! - `log.stderr`: the agent's raw stderr, appended across attempts;
//! - `events.jsonl`: the agent's normalised events, redacted;
//! - `artifacts/PLAN_AND_STATUS.md` and `artifacts/KNOWLEDGE.md`: stubs written once and never
//!   overwritten — the agent's memory between fresh runs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::model::Issue;

/// Paths of one task's directory.
#[derive(Debug, Clone)]
pub struct TaskDir {
    pub root: PathBuf,
}

/// `task.json`.
#[derive(Debug, Serialize)]
pub struct TaskRecord<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub status: &'a str,
    pub priority: u8,
    pub cwd: &'a str,
    pub coder: &'a str,
    pub model: &'a str,
    pub attempts: u32,
    pub failures: u32,
    pub noclose: u32,
    pub stalls: u32,
    pub context_resets: u32,
    pub updated_at: Timestamp,
}

impl TaskDir {
    pub fn new(home: &Path, id: &str) -> TaskDir {
        TaskDir { root: home.join("tasks").join(id) }
    }

    pub fn artifacts(&self) -> PathBuf {
        self.root.join("artifacts")
    }

    /// Creates the directory and the artifact stubs (never overwriting them).
    pub fn prepare(&self, issue: &Issue) -> io::Result<()> {
        std::fs::create_dir_all(self.artifacts())?;
        write_new(&self.artifacts().join("PLAN_AND_STATUS.md"), &plan_stub(issue))?;
        write_new(&self.artifacts().join("KNOWLEDGE.md"), &knowledge_stub(issue))?;
        Ok(())
    }

    /// Writes `task.json` atomically (creating the directory if needed; the runner adds the
    /// artifact stubs when it prepares the attempt).
    pub fn write_record(&self, record: &TaskRecord<'_>) -> io::Result<()> {
        std::fs::create_dir_all(&self.root)?;
        let text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
        crate::fsutil::write_atomic(&self.root.join("task.json"), format!("{text}\n").as_bytes())
    }

    /// Opens `log.stderr` for appending (the agent's stderr goes straight into it).
    pub fn stderr_file(&self) -> io::Result<File> {
        append(&self.root.join("log.stderr"))
    }

    pub fn stderr_path(&self) -> PathBuf {
        self.root.join("log.stderr")
    }

    /// Opens the event and runner logs for one attempt.
    pub fn logs(&self) -> io::Result<TaskLogs> {
        Ok(TaskLogs {
            events: append(&self.root.join("events.jsonl"))?,
            runner: append(&self.root.join("log.jsonl"))?,
        })
    }

    /// The last `max` bytes of `log.stderr` written since `offset` (this attempt's part).
    pub fn stderr_tail(&self, offset: u64, max: usize) -> String {
        let Ok(bytes) = std::fs::read(self.stderr_path()) else {
            return String::new();
        };
        let from = usize::try_from(offset).unwrap_or(0).min(bytes.len());
        let part = &bytes[from..];
        let start = part.len().saturating_sub(max);
        String::from_utf8_lossy(&part[start..]).into_owned()
    }
}

/// The open logs of one attempt.
pub struct TaskLogs {
    events: File,
    runner: File,
}

impl TaskLogs {
    /// Appends an agent event, stamped and redacted.
    pub fn event(&mut self, event: &impl Serialize, at: Timestamp) -> io::Result<()> {
        let mut value = serde_json::to_value(event).map_err(io::Error::other)?;
        if let Value::Object(map) = &mut value {
            map.insert("ts".into(), Value::String(at.to_string()));
        }
        redact(&mut value);
        writeln!(self.events, "{value}")
    }

    /// Appends a runner line: `{"ts", "event", …fields}`.
    pub fn runner(&mut self, event: &str, fields: Value, at: Timestamp) -> io::Result<()> {
        let mut line = serde_json::json!({ "ts": at.to_string(), "event": event });
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        redact(&mut line);
        writeln!(self.runner, "{line}")
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn write_new(path: &Path, text: &str) -> io::Result<()> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn plan_stub(issue: &Issue) -> String {
    format!(
        "# {id} — plan and status\n\n\
         _Written once by fleet; from here on the agent owns this file. Overwrite the Status \
         section as you go; keep earlier sections._\n\n\
         ## Restatement\n\n{title}\n\n## Plan\n\n1. …\n\n## Status\n\nin_progress\n\n\
         - Done:\n- In progress:\n- Blocked:\n",
        id = issue.id,
        title = issue.title
    )
}

fn knowledge_stub(issue: &Issue) -> String {
    format!(
        "# {id} — knowledge\n\n\
         _Append-only notes that the next run needs: where things are, what must stay true, \
         what surprised you._\n\n## Surface area\n\n## Invariants\n\n## Gotchas\n",
        id = issue.id
    )
}

/// Keys whose values are secrets, compared case-insensitively.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("password")
        || key.contains("secret")
        || key.contains("api_key")
        || key.contains("apikey")
        || key == "authorization"
        || (key.contains("token") && !key.contains("tokens"))
}

/// Replaces secrets in a JSON document: values under secret-looking keys, and API-key or
/// bearer-token shapes inside any string — in objects and arrays at any depth.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if is_secret_key(key) && !inner.is_null() && !inner.is_number() {
                    *inner = Value::String("<redacted>".into());
                } else {
                    redact(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(text) => {
            if let Some(clean) = redact_text(text) {
                *text = clean;
            }
        }
        _ => {}
    }
}

/// Masks `sk-…`/`sk-ant-…` keys and `Bearer …` tokens in free text. `None` if nothing changed.
fn redact_text(text: &str) -> Option<String> {
    if !text.contains("sk-") && !text.contains("Bearer ") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while !rest.is_empty() {
        let next = [rest.find("sk-"), rest.find("Bearer ")].into_iter().flatten().min();
        let Some(at) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let marker = if rest[at..].starts_with("sk-") { "sk-" } else { "Bearer " };
        let body = &rest[at + marker.len()..];
        let len = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
            .unwrap_or(body.len());
        if len >= 8 {
            out.push_str(marker);
            out.push_str("<redacted>");
            changed = true;
        } else {
            out.push_str(&rest[at..at + marker.len() + len]);
        }
        rest = &body[len..];
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_at_any_depth_but_usage_survives() {
        let mut doc = serde_json::json!({
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 2},
            "env": [{"OPENAI_API_KEY": "abc"}, {"auth_token": "xyz"}],
            "message": {"content": [{"text": "key sk-ant-abcdefghijklmnop and Bearer abcdefghijk ok"}]}
        });
        redact(&mut doc);
        assert_eq!(doc["usage"]["input_tokens"], 5);
        assert_eq!(doc["env"][0]["OPENAI_API_KEY"], "<redacted>");
        assert_eq!(doc["env"][1]["auth_token"], "<redacted>");
        assert_eq!(
            doc["message"]["content"][0]["text"],
            "key sk-<redacted> and Bearer <redacted> ok"
        );
    }

    #[test]
    fn short_lookalikes_are_left_alone() {
        assert_eq!(redact_text("task-sk-12 done"), None);
    }
}
