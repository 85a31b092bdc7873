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
//! - `turn.completed` → [`EventKind::SessionEnded`]. Its `usage` is **not** a context size:
//!   `exec --json` (since openai/codex#4525, Sept. 2025, up to 0.169 at least) fills it from
//!   the thread's `total_token_usage`, summed over every model request of the session (four
//!   requests of 40k read as 160k; the `context_pressure` fixture's 975k is five requests of
//!   190k–200k), and the stream has no per-request figure (openai/codex#17539 asks for one, as
//!   `last_usage`). The difference between two totals does not help either: `exec` runs one
//!   turn, so it is the same sum. So the usage is left unset, unless the line carries a
//!   per-request `last_usage`/`last_token_usage`, taken as is. A prompt that outgrows the
//!   window still shows: codex compacts by itself, and when it cannot it fails with "ran out of
//!   room in the model's context window" → [`EventKind::ContextOverflow`];
//! - `token_count` protocol events, which the first `exec --json` (July–Sept. 2025, until
//!   openai/codex#4525) printed as `{"id":…,"msg":{"type":"token_count",…}}` once per model
//!   request → [`EventKind::StepFinished`] with that request's usage (`info.last_token_usage`;
//!   else the growth of `info.total_token_usage` since the previous event; else, in the oldest
//!   shape, the event's own counts) and one [`EventKind::RateLimit`] per window of
//!   `rate_limits` (`primary`, `secondary`: `used_percent` 0–100, `window_minutes`, `resets_at`
//!   or `resets_in_seconds`);
//! - `error` "Reconnecting… n/m (…)" → [`EventKind::ApiRetry`] (never a fault: codex is still
//!   retrying); any other `error`, and `turn.failed`, → [`EventKind::RateLimit`] (rejected) when
//!   the message shows a 429, a rate limit or a usage limit, [`EventKind::ContextOverflow`] when
//!   it says the context window is full, else [`EventKind::Error`] with its
//!   [`fault`](AgentEvent::fault) when the message shows one. `turn.failed` then ends the
//!   session, with the message as its text and the same fault.

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

pub(crate) use super::diagnose::{classify_failure, http_status_in, is_rate_limit_text};
use super::event::json;
use super::{
    AgentEvent, BuiltinSettings, Coder, CredentialFile, EventKind, EventParser, Probe, RateLimit,
    RateLimitStatus, SignIn, SpawnSpec, TaskSpec, Usage, merge_env,
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

/// `--version`, and the sign-in of `codex login status` (offline: it reads
/// `$CODEX_HOME/auth.json`, default `~/.codex`), or a key in the environment (`codex exec`
/// takes `CODEX_API_KEY`, the OpenAI provider `OPENAI_API_KEY`).
pub const PROBE: Probe = Probe {
    version_args: &["--version"],
    sign_in: SignIn {
        env: &["CODEX_API_KEY", "OPENAI_API_KEY"],
        files: &[CredentialFile {
            var: "CODEX_HOME",
            under_var: "",
            under_home: Some(".codex"),
            file: "auth.json",
        }],
        status_args: Some(&["login", "status"]),
        fix: "sign in with `codex login`, or set OPENAI_API_KEY in the environment `fleet run` starts from",
        optional: false,
    },
};

impl Coder for CodexCoder {
    fn name(&self) -> &str {
        "codex"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        let known = super::models::context_window(model).unwrap_or(DEFAULT_CONTEXT_LIMIT);
        self.settings.limits.resolve(model, Some(known))
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

    fn probe(&self) -> Option<&'static Probe> {
        Some(&PROBE)
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
    /// The session total of the last `token_count` event, to tell a new request from a repeat
    /// and to turn a bare total into the latest request's usage.
    last_total: Option<Usage>,
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
        let mut events = match value.get("msg").filter(|m| m.is_object()).cloned() {
            Some(msg) => self.legacy_line(&msg, value),
            None => self.thread_line(value),
        };
        for event in &mut events {
            event.session_id.clone_from(&self.thread_id);
        }
        events
    }
}

impl CodexParser {
    /// A line of the `thread.*` / `turn.*` / `item.*` stream (codex since Sept. 2025).
    fn thread_line(&mut self, value: Value) -> Vec<AgentEvent> {
        match json::str_at(&value, "type").unwrap_or("") {
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
                // Only a per-request figure is a context size; `usage` is a session sum.
                let usage = ["last_usage", "last_token_usage"]
                    .iter()
                    .find_map(|key| value.get(*key).filter(|u| u.is_object()))
                    .map(openai_usage);
                vec![AgentEvent::new(EventKind::SessionEnded, value).with_usage(usage)]
            }
            "token_count" => self.token_count(&value.clone(), value),
            "turn.failed" => self.turn_failed(value),
            "error" => {
                let message = json::string_at(&value, "message").unwrap_or_default();
                if message.starts_with("Reconnecting") {
                    vec![retry_event(message, value)]
                } else {
                    self.failure_reported = true;
                    vec![failure_event(&message, value)]
                }
            }
            _ => Vec::new(),
        }
    }

    /// A protocol event as the first `exec --json` printed it, `{"id":…,"msg":{…}}`: only its
    /// token counts are read (that format is not otherwise supported).
    fn legacy_line(&mut self, msg: &Value, raw: Value) -> Vec<AgentEvent> {
        if json::str_at(msg, "type") == Some("token_count") {
            self.token_count(msg, raw)
        } else {
            Vec::new()
        }
    }

    /// `turn.failed`: the failure (unless an `error` line already reported it), then the end.
    fn turn_failed(&mut self, value: Value) -> Vec<AgentEvent> {
        let message =
            value.get("error").and_then(|e| json::string_at(e, "message")).unwrap_or_default();
        let mut events = Vec::new();
        if !self.failure_reported {
            events.push(failure_event(&message, value.clone()));
        }
        let fault = classify_failure(None, &message);
        events.push(
            AgentEvent::new(EventKind::SessionEnded, value)
                .with_text(Some(message))
                .with_fault(fault)
                .with_error(true),
        );
        events
    }

    /// A `token_count` protocol event: the request's usage, then one rate-limit observation
    /// per window it reports.
    fn token_count(&mut self, msg: &Value, raw: Value) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        if let Some(usage) = self.request_usage(msg) {
            events.push(
                AgentEvent::new(EventKind::StepFinished, raw.clone()).with_usage(Some(usage)),
            );
        }
        for limit in rate_limit_windows(msg) {
            events.push(
                AgentEvent::new(EventKind::RateLimit, raw.clone()).with_rate_limit(Some(limit)),
            );
        }
        events
    }

    /// The latest request's usage in a `token_count` event: `info.last_token_usage`; else how
    /// much `info.total_token_usage` grew since the previous event (the first total of a fresh
    /// session is its first request); else the event's own counts (the oldest shape, one event
    /// per request). `None` when the total did not move: the event repeats the last request.
    fn request_usage(&mut self, msg: &Value) -> Option<Usage> {
        let Some(info) = msg.get("info").filter(|i| i.is_object()) else {
            return msg.get("input_tokens").is_some().then(|| openai_usage(msg));
        };
        let total = info.get("total_token_usage").filter(|t| t.is_object()).map(openai_usage);
        let previous = match total {
            Some(total) => self.last_total.replace(total),
            None => None,
        };
        if total.is_some() && total == previous {
            return None;
        }
        if let Some(last) = info.get("last_token_usage").filter(|l| l.is_object()) {
            return Some(openai_usage(last));
        }
        total.map(|total| growth(total, previous.unwrap_or_default()))
    }

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

/// A `Reconnecting… n/m (reason)` line: codex retries by itself, so never a fault.
fn retry_event(message: String, raw: Value) -> AgentEvent {
    let status = http_status_in(&message);
    let rate_limit = is_rate_limit_text(&message).then(RateLimit::http_429);
    AgentEvent::new(EventKind::ApiRetry, raw)
        .with_text(Some(message))
        .with_http_status(status)
        .with_rate_limit(rate_limit)
}

/// A fatal failure message: a rejected rate limit if it says so, a context overflow if the
/// prompt no longer fits, else an error with the fault the message shows.
fn failure_event(message: &str, raw: Value) -> AgentEvent {
    super::diagnose::failure_event(message, message, None, raw)
}

/// The rate-limit windows of a `token_count` event (`rate_limits`, or `info.rate_limits` in
/// some versions): `primary` and `secondary`, each `{used_percent, window_minutes, resets_at |
/// resets_in_seconds}`, `used_percent` being 0–100.
fn rate_limit_windows(msg: &Value) -> Vec<RateLimit> {
    let limits = msg
        .get("rate_limits")
        .or_else(|| msg.get("info").and_then(|info| info.get("rate_limits")))
        .filter(|l| l.is_object());
    let Some(limits) = limits else {
        return Vec::new();
    };
    ["primary", "secondary"]
        .iter()
        .filter_map(|key| {
            let window = limits.get(*key).filter(|w| w.is_object())?;
            let utilization_pct = window.get("used_percent").and_then(Value::as_f64);
            Some(RateLimit {
                window: Some(window_name(key, window)),
                status: RateLimitStatus::from_utilization(
                    utilization_pct,
                    RateLimitStatus::Allowed,
                ),
                resets_at: window.get("resets_at").and_then(json::epoch_timestamp).or_else(|| {
                    let seconds = window.get("resets_in_seconds")?.as_f64()?;
                    Timestamp::now().checked_add(SignedDuration::from_secs(seconds as i64)).ok()
                }),
                utilization_pct,
                http_status: None,
            })
        })
        .collect()
}

/// A window's name as claude spells it when its length is one of claude's (`five_hour`,
/// `seven_day`), else codex's key (`primary`, `secondary`).
fn window_name(key: &str, window: &Value) -> String {
    match json::count_at(window, "window_minutes") {
        300 => "five_hour".to_owned(),
        10_080 => "seven_day".to_owned(),
        _ => key.to_owned(),
    }
}

/// OpenAI-style usage (`turn.completed.usage`, the usages of `token_count`): `input_tokens` is
/// the whole prompt, cached part included.
fn openai_usage(raw: &Value) -> Usage {
    split_prompt(
        json::count_at(raw, "input_tokens"),
        json::count_at(raw, "cached_input_tokens"),
        json::count_at(raw, "cache_write_input_tokens"),
        json::count_at(raw, "output_tokens"),
    )
}

/// A [`Usage`] from OpenAI-style counts: the cached and cache-written tokens are moved out of
/// the prompt into the cache fields, so [`Usage::prompt_tokens`] is the prompt size codex
/// reported.
fn split_prompt(prompt: u64, cached: u64, written: u64, output: u64) -> Usage {
    let cached = cached.min(prompt);
    let written = written.min(prompt - cached);
    Usage {
        input_tokens: prompt - cached - written,
        output_tokens: output,
        cache_creation_input_tokens: written,
        cache_read_input_tokens: cached,
    }
}

/// How much a session total grew: the usage of the requests in between.
fn growth(total: Usage, previous: Usage) -> Usage {
    split_prompt(
        total.prompt_tokens().saturating_sub(previous.prompt_tokens()),
        total.cache_read_input_tokens.saturating_sub(previous.cache_read_input_tokens),
        total.cache_creation_input_tokens.saturating_sub(previous.cache_creation_input_tokens),
        total.output_tokens.saturating_sub(previous.output_tokens),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coders::Fault;

    fn parse(lines: &[&str]) -> Vec<AgentEvent> {
        let mut parser = CodexParser::default();
        lines.iter().flat_map(|line| parser.parse_line(line)).collect()
    }

    fn sizes(events: &[AgentEvent]) -> Vec<u64> {
        events.iter().filter_map(|e| e.usage).map(|u| u.prompt_tokens()).collect()
    }

    #[test]
    fn a_session_total_is_never_a_context_size() {
        // Four requests of 40k, as codex 0.169 reports them: one summed total at the end.
        let events = parse(&[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":160000,"cached_input_tokens":120000,"output_tokens":400}}"#,
        ]);
        assert_eq!(events.last().unwrap().kind, EventKind::SessionEnded);
        assert!(sizes(&events).is_empty(), "160000 is a sum over requests, not a context size");
        // A per-request figure next to it (openai/codex#17539) is taken as is.
        let events = parse(&[
            r#"{"type":"turn.completed","usage":{"input_tokens":160000},"last_usage":{"input_tokens":40000,"cached_input_tokens":39000,"output_tokens":100}}"#,
        ]);
        assert_eq!(sizes(&events), [40_000]);
    }

    #[test]
    fn token_counts_report_each_request() {
        // codex 0.3x: `info` with the last request and the running total; a repeat adds nothing.
        let line = |last: u64, total: u64| {
            format!(
                r#"{{"id":"1","msg":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{total},"cached_input_tokens":0,"output_tokens":10}},"last_token_usage":{{"input_tokens":{last},"cached_input_tokens":0,"output_tokens":10}},"model_context_window":128000}}}}}}"#
            )
        };
        let lines = [
            line(40_000, 40_000),
            line(40_000, 80_000),
            line(40_000, 80_000),
            line(40_000, 120_000),
            line(40_000, 160_000),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let events = parse(&refs);
        assert_eq!(sizes(&events), [40_000; 4]);
        assert!(events.iter().all(|e| e.kind == EventKind::StepFinished));

        // Only running totals: each request is the growth since the previous one.
        let total = |n: u64, cached: u64| {
            format!(
                r#"{{"msg":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{n},"cached_input_tokens":{cached},"output_tokens":5}}}}}}}}"#
            )
        };
        let lines = [
            total(40_000, 0),
            total(80_000, 30_000),
            total(120_000, 60_000),
            total(160_000, 90_000),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let events = parse(&refs);
        assert_eq!(sizes(&events), [40_000; 4]);
        assert_eq!(events[1].usage.unwrap().cache_read_input_tokens, 30_000);

        // The oldest shape: flat counts, one event per request.
        let events = parse(&[
            r#"{"id":"0","msg":{"type":"token_count","input_tokens":3804,"cached_input_tokens":0,"output_tokens":95,"total_tokens":3899}}"#,
        ]);
        assert_eq!(sizes(&events), [3804]);
    }

    #[test]
    fn token_counts_carry_rate_limit_windows() {
        let events = parse(&[
            r#"{"id":"1","msg":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":93.5,"window_minutes":300,"resets_at":1763483205},"secondary":{"used_percent":100.0,"window_minutes":10080,"resets_in_seconds":3600}}}}"#,
        ]);
        let limits: Vec<&RateLimit> = events.iter().filter_map(|e| e.rate_limit.as_ref()).collect();
        assert_eq!(limits.len(), 2);
        assert_eq!(limits[0].window.as_deref(), Some("five_hour"));
        assert_eq!(limits[0].utilization_pct, Some(93.5));
        assert_eq!(limits[0].status, RateLimitStatus::Allowed);
        assert_eq!(limits[0].resets_at, Some(jiff::Timestamp::from_second(1_763_483_205).unwrap()));
        assert!(limits[0].above(90) && !limits[0].above(95));
        assert_eq!(limits[1].window.as_deref(), Some("seven_day"));
        assert_eq!(limits[1].status, RateLimitStatus::Rejected);
        assert!(limits[1].resets_at.is_some_and(|at| at > jiff::Timestamp::now()));
        assert!(sizes(&events).is_empty());
        let nested = parse(&[
            r#"{"msg":{"type":"token_count","info":{"rate_limits":{"primary":{"used_percent":12,"window_minutes":60}}}}}"#,
        ]);
        assert_eq!(nested[0].rate_limit.as_ref().unwrap().window.as_deref(), Some("primary"));
    }

    #[test]
    fn final_errors_carry_their_fault_and_retries_do_not() {
        let events = parse(&[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 401 Unauthorized)"}"#,
            r#"{"type":"error","message":"exceeded retry limit, last status: 401 Unauthorized, request id: 9a4a"}"#,
            r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 401 Unauthorized, request id: 9a4a"}}"#,
        ]);
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::SessionStarted,
                EventKind::ApiRetry,
                EventKind::Error,
                EventKind::SessionEnded
            ]
        );
        assert_eq!(events[1].fault, None, "still retrying");
        assert_eq!(events[2].fault, Some(Fault::Auth));
        assert_eq!(events[3].fault, Some(Fault::Auth));
        assert!(events[3].text.as_deref().unwrap().contains("401 Unauthorized"));

        let missing = parse(&[
            r#"{"type":"turn.failed","error":{"message":"Missing environment variable: `OPENAI_API_KEY`."}}"#,
        ]);
        assert!(missing.iter().all(|e| e.fault == Some(Fault::Auth)));
        let cut = parse(&[
            r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request"}}"#,
        ]);
        assert!(cut.iter().all(|e| e.fault == Some(Fault::Outage)));
        let full = parse(&[
            r#"{"type":"turn.failed","error":{"message":"Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying."}}"#,
        ]);
        assert_eq!(full[0].kind, EventKind::ContextOverflow);
        assert!(full.iter().all(|e| e.fault.is_none()));
        let task = parse(&[r#"{"type":"turn.failed","error":{"message":"turn failed"}}"#]);
        assert!(task.iter().all(|e| e.fault.is_none() && e.is_error));
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
        let usage = openai_usage(
            &serde_json::json!({"input_tokens": 1000, "cached_input_tokens": 600, "output_tokens": 5}),
        );
        assert_eq!(usage.prompt_tokens(), 1000);
        assert_eq!(usage.cache_read_input_tokens, 600);
    }
}
