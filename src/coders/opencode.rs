//! The `opencode` coder: `opencode run` with JSON lines output.
//!
//! Command line: `opencode run --format json --print-logs --log-level ERROR [--model
//! provider/model] [permission args] --dir <cwd> <prompt>`. The model goes through as given (opencode wants `provider/model`);
//! with no model set, opencode uses its own configured default. No permission flags by
//! default (set `[coders.opencode] permission_args` if your version needs one).
//!
//! Each agent gets its own opencode database: `OPENCODE_DB` points at `opencode.db` in the
//! task directory ([`DB_FILE`]). opencode otherwise keeps one SQLite database per user
//! (`~/.local/share/opencode/opencode.db`), and two agents started together collide on it —
//! `database is locked`, or both running its migrations (`Failed query: CREATE TABLE
//! workspace …`) — in about half the runs (opencode 1.18). Sign-ins (`auth.json`), the config
//! and the provider cache stay where they are, shared, since only the database is moved. A
//! collision that still happens is [`Fault::Contention`](super::Fault::Contention) (released
//! uncharged, retried shortly), and opencode's colour codes, which it prints even with
//! `NO_COLOR`, are removed from everything fleet stores (the redactor strips them).
//!
//! Events:
//! - the first `step_start` → [`EventKind::SessionStarted`] (it repeats every step);
//! - `text` / `reasoning` → assistant text / thinking;
//! - `tool_use` → [`EventKind::ToolUse`] while pending or running, and
//!   [`EventKind::ToolResult`] once `completed` or `error` (a call seen only finished yields
//!   both);
//! - `step_finish` → the step's usage as the context size, on **every** step (the Python fleet
//!   read it only at the final `stop`, too late for context pressure): reason `stop` →
//!   [`EventKind::SessionEnded`], any other reason → [`EventKind::StepFinished`]. A step is one
//!   model request and its tokens are that request's own (not a running total), so they are
//!   the current context size as they stand;
//! - `error` (opencode prints it once its own retries are done) → [`EventKind::RateLimit`]
//!   (rejected) for a 429 or a rate-limit message, [`EventKind::ContextOverflow`] when the
//!   prompt no longer fits, else [`EventKind::Error`] with its [`fault`](AgentEvent::fault)
//!   (`ProviderAuthError`, a 401/403 → auth; a 5xx, `fetch failed`, `ECONNREFUSED` → outage).

use std::collections::HashSet;

use serde_json::Value;

use super::diagnose::failure_event;
use super::event::json;
use super::{
    AgentEvent, BuiltinSettings, Coder, CredentialFile, EventKind, EventParser, Probe, SignIn,
    SpawnSpec, TaskSpec, Usage, merge_env, tool_input_summary,
};

/// The context window assumed for opencode models unless the config says otherwise.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;
/// The agent's own opencode database, in the task directory.
pub const DB_FILE: &str = "opencode.db";

/// opencode (`opencode`).
#[derive(Debug, Clone, Default)]
pub struct OpencodeCoder {
    settings: BuiltinSettings,
}

impl OpencodeCoder {
    pub fn new(settings: BuiltinSettings) -> OpencodeCoder {
        OpencodeCoder { settings }
    }
}

/// `--version`, and the sign-ins opencode keeps (`opencode auth login` writes
/// `$XDG_DATA_HOME/opencode/auth.json`, default `~/.local/share/opencode`) or a provider's key
/// in the environment. A local provider configured in `opencode.json` needs none, so none
/// found is only a warning.
pub const PROBE: Probe = Probe {
    version_args: &["--version"],
    sign_in: SignIn {
        env: &[
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_GENERATIVE_AI_API_KEY",
            "OPENROUTER_API_KEY",
            "GROQ_API_KEY",
        ],
        files: &[CredentialFile {
            var: "XDG_DATA_HOME",
            under_var: "opencode",
            under_home: Some(".local/share/opencode"),
            file: "auth.json",
        }],
        status_args: None,
        fix: "sign in with `opencode auth login`, or set your provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, …); a local provider in opencode.json needs none",
        optional: true,
    },
};

impl Coder for OpencodeCoder {
    fn name(&self) -> &str {
        "opencode"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        let known = super::models::context_window(model).unwrap_or(DEFAULT_CONTEXT_LIMIT);
        self.settings.limits.resolve(model, Some(known))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        // Its log's errors on stderr: how opencode says it retries a failing provider.
        let mut args: Vec<String> =
            ["run", "--format", "json", "--print-logs", "--log-level", "ERROR"]
                .map(String::from)
                .into();
        if !task.model.is_empty() {
            args.extend(["--model".to_owned(), task.model.to_owned()]);
        }
        args.extend(self.settings.permission_args_or(&[]));
        args.extend(["--dir".to_owned(), task.cwd.display().to_string()]);
        args.push(task.prompt.to_owned());
        let db = task.task_dir.join(DB_FILE).display().to_string();
        SpawnSpec {
            program: self.settings.program_or("opencode"),
            args,
            env: merge_env(&[("OPENCODE_DB", &db)], &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    /// opencode retries a failing provider without a word on its stream; its log (on stderr,
    /// errors only) says `message="stream error" … error.error="AI_APICallError: …"` before
    /// each retry.
    fn stderr_event(&self, line: &str) -> Option<AgentEvent> {
        if !line.contains("level=ERROR") || !line.contains("message=\"stream error\"") {
            return None;
        }
        let error = line.split_once("error.error=").map_or(line, |(_, error)| error);
        super::diagnose::trouble_event(error.trim().trim_matches('"'))
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(OpencodeParser::default())
    }

    fn probe(&self) -> Option<&'static Probe> {
        Some(&PROBE)
    }
}

/// Parses `opencode run --format json` stdout.
#[derive(Debug, Default)]
pub struct OpencodeParser {
    started: bool,
    /// Tool calls already reported as started.
    calls: HashSet<String>,
}

impl EventParser for OpencodeParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(value) = json::object(line) else {
            return if line.trim().is_empty() {
                Vec::new()
            } else {
                vec![AgentEvent::output(line)]
            };
        };
        let session = json::string_at(&value, "sessionID");
        let part = value.get("part").cloned().unwrap_or(Value::Null);
        let mut events = match json::str_at(&value, "type").unwrap_or("") {
            "step_start" if !self.started => {
                self.started = true;
                vec![AgentEvent::new(EventKind::SessionStarted, value)]
            }
            "text" => vec![
                AgentEvent::new(EventKind::AssistantText, value)
                    .with_text(json::string_at(&part, "text")),
            ],
            "reasoning" => vec![
                AgentEvent::new(EventKind::Thinking, value)
                    .with_text(json::string_at(&part, "text")),
            ],
            "tool_use" => self.tool(&part, value),
            "step_finish" => {
                let kind = if json::str_at(&part, "reason") == Some("stop") {
                    EventKind::SessionEnded
                } else {
                    EventKind::StepFinished
                };
                let usage = part.get("tokens").map(step_usage);
                vec![AgentEvent::new(kind, value).with_usage(usage)]
            }
            "error" => vec![error_event(value)],
            _ => Vec::new(),
        };
        for event in &mut events {
            event.session_id.clone_from(&session);
        }
        events
    }
}

impl OpencodeParser {
    fn tool(&mut self, part: &Value, value: Value) -> Vec<AgentEvent> {
        let tool = json::string_at(part, "tool");
        let call = json::string_at(part, "callID")
            .or_else(|| json::string_at(part, "id"))
            .unwrap_or_default();
        let state = part.get("state").cloned().unwrap_or(Value::Null);
        let status = json::str_at(&state, "status").unwrap_or("");
        let finished = matches!(status, "completed" | "error");
        let mut events = Vec::new();
        if !finished || !self.calls.contains(&call) {
            let summary = state.get("input").and_then(tool_input_summary);
            events.push(
                AgentEvent::new(EventKind::ToolUse, value.clone())
                    .with_tool(tool.clone())
                    .with_text(summary),
            );
            self.calls.insert(call.clone());
        }
        if finished {
            self.calls.remove(&call);
            let failed = status == "error";
            let text = if failed {
                json::string_at(&state, "error")
            } else {
                json::string_at(&state, "output")
            };
            events.push(
                AgentEvent::new(EventKind::ToolResult, value)
                    .with_tool(tool)
                    .with_text(text)
                    .with_error(failed),
            );
        }
        events
    }
}

/// `{"type":"error","error":{"name":…,"data":{"message":…,"statusCode":429}}}`, or a bare
/// message. The error's name (`ProviderAuthError`, `APIError`, …) is part of what is classified.
fn error_event(value: Value) -> AgentEvent {
    let error = value.get("error").cloned().unwrap_or(Value::Null);
    let data = error.get("data").cloned().unwrap_or(Value::Null);
    let message = json::string_at(&data, "message")
        .or_else(|| json::string_at(&error, "message"))
        .or_else(|| error.as_str().map(str::to_owned))
        .or_else(|| json::string_at(&value, "message"))
        .unwrap_or_default();
    let status = json::status_at(&data, "statusCode");
    let named = match json::str_at(&error, "name") {
        Some(name) => format!("{name}: {message}"),
        None => message.clone(),
    };
    failure_event(&message, &named, status, value)
}

/// `part.tokens`: `{input, output, reasoning, cache: {read, write}}`; `input` excludes the
/// cached part.
fn step_usage(tokens: &Value) -> Usage {
    let cache = tokens.get("cache").cloned().unwrap_or(Value::Null);
    Usage {
        input_tokens: json::count_at(tokens, "input"),
        output_tokens: json::count_at(tokens, "output") + json::count_at(tokens, "reasoning"),
        cache_creation_input_tokens: json::count_at(&cache, "write"),
        cache_read_input_tokens: json::count_at(&cache, "read"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coders::Fault;

    fn parse(lines: &[&str]) -> Vec<AgentEvent> {
        let mut parser = OpencodeParser::default();
        lines.iter().flat_map(|line| parser.parse_line(line)).collect()
    }

    #[test]
    fn every_step_reports_usage() {
        let events = parse(&[
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"ls"},"output":"a\n"}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","tokens":{"input":100,"output":5,"reasoning":0,"cache":{"read":120000,"write":300}}}}"#,
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"text":"done"}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":10,"output":5,"cache":{"read":121000,"write":0}}}}"#,
        ]);
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::SessionStarted,
                EventKind::ToolUse,
                EventKind::ToolResult,
                EventKind::StepFinished,
                EventKind::AssistantText,
                EventKind::SessionEnded,
            ]
        );
        let sizes: Vec<u64> =
            events.iter().filter_map(|e| e.usage).map(|u| u.prompt_tokens()).collect();
        assert_eq!(sizes, [120_400, 121_010]);
        assert!(events.iter().all(|e| e.session_id.as_deref() == Some("ses_1")));
        assert_eq!(events[1].text.as_deref(), Some("ls"));
    }

    #[test]
    fn a_429_error_is_a_rate_limit() {
        let events = parse(&[
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"Too many requests","statusCode":429}}}"#,
        ]);
        assert!(events[0].is_rate_limit_rejection());
        let events = parse(&[
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"boom","statusCode":500}}}"#,
        ]);
        assert_eq!(events[0].kind, EventKind::Error);
        assert_eq!(events[0].http_status, Some(500));
        assert_eq!(events[0].fault, Some(Fault::Outage));
        assert_eq!(events[0].text.as_deref(), Some("boom"));
    }

    #[test]
    fn auth_and_connection_errors_are_faults() {
        let auth = parse(&[
            r#"{"type":"error","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"Anthropic API key is missing."}}}"#,
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"Unauthorized","statusCode":401,"isRetryable":false}}}"#,
        ]);
        assert!(auth.iter().all(|e| e.kind == EventKind::Error && e.fault == Some(Fault::Auth)));
        let down = parse(&[
            r#"{"type":"error","error":{"name":"UnknownError","data":{"message":"TypeError: fetch failed"}}}"#,
        ]);
        assert_eq!(down[0].fault, Some(Fault::Outage));
        let task = parse(&[
            r#"{"type":"error","error":{"name":"UnknownError","data":{"message":"tool crashed"}}}"#,
        ]);
        assert_eq!(task[0].fault, None);
        let rate = parse(&[
            r#"{"type":"error","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":429}}}"#,
        ]);
        assert!(rate[0].is_rate_limit_rejection() && rate[0].fault.is_none());
    }
}
