//! The `codex` coder: OpenAI Codex CLI in `exec --json` mode.
//!
//! Command line: `codex exec --json --skip-git-repo-check -c allow_login_shell=false
//! <permission args> [--model M] --cd <cwd> <prompt>`. `allow_login_shell=false` makes codex
//! run its shell tool as `bash -c` instead of `bash -lc`: a login shell sources
//! `/etc/profile`, which on Debian and Ubuntu resets `PATH`, dropping the `bd` that fleet puts
//! first on the agent's `PATH` (found with the real CLI in `tests/e2e`: `bd: command not
//! found`). A model that explicitly asks for `login: true` is told by codex that login shells
//! are disabled and retries without. The default permission flag is
//! `--dangerously-bypass-approvals-and-sandbox`: without it codex runs in a read-only sandbox
//! and every write fails (fixture `bash_write_default_sandbox`). `--model` is passed only when
//! a model is set for codex; codex otherwise uses the model of its own config, so another
//! coder's default (`sonnet`) can never leak in.
//!
//! Events, as codex 0.169 prints them:
//! - `thread.started` → [`EventKind::SessionStarted`] (the thread id is the session id);
//! - `item.completed` `agent_message` / `reasoning` → assistant text / thinking;
//! - `item.started` / `item.completed` of `command_execution`, `file_change`,
//!   `mcp_tool_call`, `web_search` → [`EventKind::ToolUse`] / [`EventKind::ToolResult`] (an
//!   item seen only completed yields both); a failed command or a non-zero exit code is an
//!   error result;
//! - `turn.completed` → [`EventKind::SessionEnded`] with the turn's usage as the context size.
//!   Codex reports usage only per turn, summed over the turn's requests, and `exec` runs one
//!   turn, so this is an upper bound that arrives at the end; it still lets context pressure
//!   be noticed and recorded for codex;
//! - `error` "Reconnecting… n/m (…)" → [`EventKind::ApiRetry`]; any other `error`, and
//!   `turn.failed`, → [`EventKind::RateLimit`] (rejected) when the message shows a 429, a rate
//!   limit or a usage limit, else [`EventKind::Error`]. `turn.failed` then ends the session.

use std::collections::HashSet;

use serde_json::Value;

use super::event::json;
use super::{
    AgentEvent, BuiltinSettings, Coder, EventKind, EventParser, RateLimit, SpawnSpec, TaskSpec,
    Usage, merge_env,
};

/// The flags that let codex write files and run commands unattended.
pub const DEFAULT_PERMISSION_ARGS: [&str; 1] = ["--dangerously-bypass-approvals-and-sandbox"];
/// The context window assumed for codex models unless the config says otherwise.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;

/// OpenAI Codex CLI (`codex`).
#[derive(Debug, Clone, Default)]
pub struct CodexCoder {
    settings: BuiltinSettings,
}

impl CodexCoder {
    pub fn new(settings: BuiltinSettings) -> CodexCoder {
        CodexCoder { settings }
    }
}

impl Coder for CodexCoder {
    fn name(&self) -> &str {
        "codex"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        self.settings.limits.resolve(model, Some(DEFAULT_CONTEXT_LIMIT))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let mut args: Vec<String> =
            ["exec", "--json", "--skip-git-repo-check", "-c", "allow_login_shell=false"]
                .map(String::from)
                .into();
        args.extend(self.settings.permission_args_or(&DEFAULT_PERMISSION_ARGS));
        if !task.model.is_empty() {
            args.extend(["--model".to_owned(), task.model.to_owned()]);
        }
        args.extend(["--cd".to_owned(), task.cwd.display().to_string()]);
        args.push(task.prompt.to_owned());
        SpawnSpec {
            program: self.settings.program_or("codex"),
            args,
            env: merge_env(&[], &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(CodexParser::default())
    }
}

/// Item types that are tool calls.
const TOOL_ITEMS: [&str; 5] =
    ["command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call"];

/// Parses `codex exec --json` stdout.
#[derive(Debug, Default)]
pub struct CodexParser {
    thread_id: Option<String>,
    /// Tool items already reported as started.
    started: HashSet<String>,
    /// A fatal `error` line was already turned into an event for this turn.
    failure_reported: bool,
}

impl EventParser for CodexParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(value) = json::object(line) else {
            return if line.trim().is_empty() {
                Vec::new()
            } else {
                vec![AgentEvent::output(line)]
            };
        };
        let mut events = match json::str_at(&value, "type").unwrap_or("") {
            "thread.started" => {
                self.thread_id = json::string_at(&value, "thread_id");
                vec![AgentEvent::new(EventKind::SessionStarted, value)]
            }
            "turn.started" => {
                self.failure_reported = false;
                Vec::new()
            }
            "item.started" => self.item(value, false),
            "item.completed" => self.item(value, true),
            "turn.completed" => {
                let usage = value.get("usage").map(turn_usage);
                vec![AgentEvent::new(EventKind::SessionEnded, value).with_usage(usage)]
            }
            "turn.failed" => {
                let message = value
                    .get("error")
                    .and_then(|e| json::string_at(e, "message"))
                    .unwrap_or_default();
                let mut events = Vec::new();
                if !self.failure_reported {
                    events.push(failure_event(&message, value.clone()));
                }
                events.push(
                    AgentEvent::new(EventKind::SessionEnded, value)
                        .with_text(Some(message))
                        .with_error(true),
                );
                events
            }
            "error" => {
                let message = json::string_at(&value, "message").unwrap_or_default();
                if message.starts_with("Reconnecting") {
                    let status = http_status_in(&message);
                    let rate_limit = is_rate_limit_text(&message).then(RateLimit::http_429);
                    vec![
                        AgentEvent::new(EventKind::ApiRetry, value)
                            .with_text(Some(message))
                            .with_http_status(status)
                            .with_rate_limit(rate_limit),
                    ]
                } else {
                    self.failure_reported = true;
                    vec![failure_event(&message, value)]
                }
            }
            _ => Vec::new(),
        };
        for event in &mut events {
            event.session_id.clone_from(&self.thread_id);
        }
        events
    }
}

impl CodexParser {
    fn item(&mut self, value: Value, completed: bool) -> Vec<AgentEvent> {
        let item = value.get("item").cloned().unwrap_or(Value::Null);
        let item_type = json::str_at(&item, "type").unwrap_or("");
        let id = json::string_at(&item, "id").unwrap_or_default();
        match item_type {
            "agent_message" if completed => vec![
                AgentEvent::new(EventKind::AssistantText, value)
                    .with_text(json::string_at(&item, "text")),
            ],
            "reasoning" if completed => vec![
                AgentEvent::new(EventKind::Thinking, value)
                    .with_text(json::string_at(&item, "text")),
            ],
            "error" => vec![
                AgentEvent::new(EventKind::Error, value)
                    .with_text(json::string_at(&item, "message"))
                    .with_error(true),
            ],
            t if TOOL_ITEMS.contains(&t) => {
                let tool = Some(item_type.to_owned());
                let mut events = Vec::new();
                if !completed || !self.started.contains(&id) {
                    events.push(
                        AgentEvent::new(EventKind::ToolUse, value.clone())
                            .with_tool(tool.clone())
                            .with_text(tool_summary(&item)),
                    );
                    self.started.insert(id.clone());
                }
                if completed {
                    self.started.remove(&id);
                    let failed = json::str_at(&item, "status") == Some("failed")
                        || item.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0);
                    let output = json::string_at(&item, "aggregated_output")
                        .or_else(|| item.get("result").and_then(json::content_text));
                    events.push(
                        AgentEvent::new(EventKind::ToolResult, value)
                            .with_tool(tool)
                            .with_text(output)
                            .with_error(failed),
                    );
                }
                events
            }
            _ => Vec::new(),
        }
    }
}

/// What a tool item is about: the command, the changed paths, the MCP tool, the query.
fn tool_summary(item: &Value) -> Option<String> {
    if let Some(command) = json::string_at(item, "command") {
        return Some(command);
    }
    if let Some(changes) = item.get("changes").and_then(Value::as_array) {
        let paths: Vec<&str> = changes.iter().filter_map(|c| json::str_at(c, "path")).collect();
        return (!paths.is_empty()).then(|| paths.join(", "));
    }
    if let (Some(server), Some(tool)) = (json::str_at(item, "server"), json::str_at(item, "tool")) {
        return Some(format!("{server}/{tool}"));
    }
    json::string_at(item, "query")
}

/// A fatal failure message: a rejected rate limit if it says so, else an error.
fn failure_event(message: &str, raw: Value) -> AgentEvent {
    let status = http_status_in(message);
    let event = if is_rate_limit_text(message) {
        AgentEvent::new(EventKind::RateLimit, raw).with_rate_limit(Some(RateLimit {
            http_status: status.or(Some(429)),
            ..RateLimit::http_429()
        }))
    } else {
        AgentEvent::new(EventKind::Error, raw)
    };
    event.with_text(Some(message.to_owned())).with_http_status(status).with_error(true)
}

/// `turn.completed.usage`: `input_tokens` counts the whole prompt, cached part included (the
/// OpenAI convention), so the cached tokens are moved out of it and into the cache fields;
/// [`Usage::prompt_tokens`] is then the prompt size codex reported.
fn turn_usage(raw: &Value) -> Usage {
    let input = json::count_at(raw, "input_tokens");
    let cached = json::count_at(raw, "cached_input_tokens").min(input);
    let written = json::count_at(raw, "cache_write_input_tokens").min(input - cached);
    Usage {
        input_tokens: input - cached - written,
        output_tokens: json::count_at(raw, "output_tokens"),
        cache_creation_input_tokens: written,
        cache_read_input_tokens: cached,
    }
}

/// Whether an error message describes a rate or usage limit (HTTP 429, "rate limit", "Too Many
/// Requests", "usage limit", an exhausted quota).
pub(crate) fn is_rate_limit_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    http_status_in(message) == Some(429)
        || ["rate limit", "rate_limit", "ratelimit", "too many requests", "usage limit", "quota"]
            .iter()
            .any(|needle| lower.contains(needle))
}

/// The HTTP status an error message mentions: a standalone 4xx or 5xx number following
/// "status" or followed by its reason phrase ("429 Too Many Requests").
pub(crate) fn http_status_in(message: &str) -> Option<u16> {
    let bytes = message.as_bytes();
    let mut found = None;
    let mut i = 0;
    while i + 3 <= bytes.len() {
        let standalone = bytes[i..i + 3].iter().all(u8::is_ascii_digit)
            && (i == 0 || !bytes[i - 1].is_ascii_digit())
            && bytes.get(i + 3).is_none_or(|b| !b.is_ascii_digit());
        if standalone {
            let code: u16 = message[i..i + 3].parse().unwrap_or(0);
            let before = message[..i].to_ascii_lowercase();
            let after = &message[i + 3..];
            let named = before.trim_end().ends_with("status:")
                || before.trim_end().ends_with("status")
                || before.trim_end().ends_with("status code")
                || after.starts_with(" Too Many Requests")
                || after.starts_with(" Internal Server Error")
                || after.starts_with(" Service Unavailable")
                || after.starts_with(" Bad Gateway")
                || after.starts_with(" Gateway Timeout");
            if (400..600).contains(&code) && named {
                found = Some(code);
                break;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_http_statuses_in_messages() {
        assert_eq!(
            http_status_in("exceeded retry limit, last status: 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(http_status_in("unexpected status 503 Service Unavailable: busy"), Some(503));
        assert_eq!(http_status_in("500 Internal Server Error"), Some(500));
        assert_eq!(http_status_in("item 4290 of 429"), None);
        assert_eq!(http_status_in("We’re currently experiencing high demand"), None);
    }

    #[test]
    fn recognises_rate_limit_messages() {
        assert!(is_rate_limit_text("exceeded retry limit, last status: 429 Too Many Requests"));
        assert!(is_rate_limit_text("You've hit your usage limit. Try again at 3:04 PM."));
        assert!(!is_rate_limit_text(
            "We’re currently experiencing high demand, which may cause temporary errors."
        ));
    }

    #[test]
    fn a_file_change_seen_only_completed_is_a_call_and_a_result() {
        let mut parser = CodexParser::default();
        let events = parser.parse_line(r#"{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"src/a.rs","kind":"update"}],"status":"completed"}}"#);
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EventKind::ToolUse, EventKind::ToolResult]);
        assert_eq!(events[0].text.as_deref(), Some("src/a.rs"));
    }

    #[test]
    fn cached_input_is_part_of_the_prompt() {
        let usage = turn_usage(
            &serde_json::json!({"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 5}),
        );
        assert_eq!(usage.prompt_tokens(), 1000);
        assert_eq!(usage.cache_read_input_tokens, 600);
    }
}
