//! The `claude` coder: Claude Code in print mode with stream-json output.
//!
//! Command line: `claude -p --verbose --output-format stream-json [--model M]
//! --settings <mail hook> <permission args> <prompt>`. The settings add a `PostToolUse` hook
//! that runs `bd mail inbox --new --hook-json` ([`MAIL_HOOK`]): a message sent to the task
//! while its agent runs reaches it at its next turn, as additional context; with no new mail
//! the hook prints nothing and costs no token. `--verbose` is required with stream-json in
//! print mode (its absence made every attempt of the Python fleet fail). Unattended tool use needs a
//! permission mode: the default is `--dangerously-skip-permissions` with `IS_SANDBOX=1`,
//! because the CLI refuses that flag as root unless `IS_SANDBOX` is `1` (see
//! `tests/fixtures/claude-stream/README.md`). Both are configurable
//! (`[coders.claude] permission_args`, `env`).
//!
//! Stream-json, as the real CLI prints it:
//! - `system:init` (always first) → [`EventKind::SessionStarted`] with the session id and the
//!   model the CLI runs (`claude-opus-4-8[1m]` has a 1M window);
//! - `assistant` lines, **one per content block**, each repeating its message's usage → one
//!   event per block (text, thinking, `tool_use`), with the usage attached to the first line of
//!   each message id only. Usage of a subagent's messages (`parent_tool_use_id` set) and of
//!   the CLI's synthetic error message is left out: neither is the main context's size;
//! - `user` lines carrying `tool_result` blocks → [`EventKind::ToolResult`], named after the
//!   call they answer;
//! - `system:api_retry` → [`EventKind::ApiRetry`] with the HTTP status (a 429 also carries
//!   rate-limit info);
//! - `result` (always last) → [`EventKind::SessionEnded`], preceded on failure by
//!   [`EventKind::RateLimit`] (HTTP 429), [`EventKind::ContextOverflow`]
//!   (`terminal_reason: prompt_too_long`) or [`EventKind::Error`] (anything else). Its usage
//!   is a sum over turns, so it is not reported as the context size. On failure both events
//!   carry the API error as their text — claude prints it in `result` (`API Error: 529 …`,
//!   `Not logged in · Please run /login`), never on stderr; a result without one falls back to
//!   its `errors` list, then to the CLI's synthetic `API Error` message — and the
//!   [`fault`](AgentEvent::fault) it shows (401/403 and login prompts → auth; 5xx, 529,
//!   `Connection error`, `Request timed out` → outage). A login prompt is a failure even when
//!   the CLI forgets to set `is_error`. Retries (`api_retry`) never carry a fault;
//! - `rate_limit_event` (subscription logins) → one [`EventKind::RateLimit`] per window it
//!   describes: the one named by `rateLimitType` and any in `unifiedWindows` (`five_hour`,
//!   `seven_day`). Their `utilization` is a fraction (0.83 = 83 %, next to
//!   `surpassedThreshold: 0.75` in real captures) and becomes
//!   [`RateLimit::utilization_pct`] (0–100), which the supervisor compares with
//!   `rate_limit_threshold_pct` ([`RateLimit::above`]);
//! - `stream_event` and `system:status` (only with `--include-partial-messages`) → nothing.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::diagnose::{classify_failure, classify_text};
use super::event::{json, share_raw};
use super::{
    AgentEvent, BuiltinSettings, Coder, CredentialFile, EventKind, EventParser, Probe, RateLimit,
    RateLimitStatus, RawJson, SignIn, SpawnSpec, TaskSpec, Usage, merge_env, tool_input_summary,
};

/// The model used when the config names none.
pub const DEFAULT_MODEL: &str = "sonnet";
/// The settings (`--settings`) that deliver mail to a running agent: after each tool call,
/// the messages for its task not shown to it yet (`bd mail inbox --new --hook-json`).
pub const MAIL_HOOK: &str = r#"{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"bd mail inbox --new --hook-json","timeout":10}]}]}}"#;

/// The flags that let claude run tools unattended.
pub const DEFAULT_PERMISSION_ARGS: [&str; 1] = ["--dangerously-skip-permissions"];
/// The environment claude gets besides the task variables: lets the permission bypass work
/// when the supervisor runs as root.
pub const DEFAULT_ENV: [(&str, &str); 1] = [("IS_SANDBOX", "1")];

/// The context window of a Claude model: 1M for the `[1m]` variants, else the model table's
/// ([`super::models`]), 200k for a name it does not know.
pub fn known_context_limit(model: &str) -> u64 {
    if model.to_ascii_lowercase().contains("[1m]") {
        return 1_000_000;
    }
    super::models::context_window(model).unwrap_or(200_000)
}

/// Claude Code (`claude`).
#[derive(Debug, Clone, Default)]
pub struct ClaudeCoder {
    settings: BuiltinSettings,
}

impl ClaudeCoder {
    pub fn new(settings: BuiltinSettings) -> ClaudeCoder {
        ClaudeCoder { settings }
    }
}

/// `--version`, and the sign-in Claude Code reads: an API key or token in the environment
/// (or a cloud provider's switch), else the login of `/login` in
/// `$CLAUDE_CONFIG_DIR/.credentials.json` (default `~/.claude`).
pub const PROBE: Probe = Probe {
    version_args: &["--version"],
    sign_in: SignIn {
        env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CODE_USE_FOUNDRY",
        ],
        files: &[CredentialFile {
            var: "CLAUDE_CONFIG_DIR",
            under_var: "",
            under_home: Some(".claude"),
            file: ".credentials.json",
        }],
        status_args: None,
        fix: "sign in once by running `claude` (then /login), or set ANTHROPIC_API_KEY in the environment `fleet run` starts from",
        optional: false,
    },
};

impl Coder for ClaudeCoder {
    fn name(&self) -> &str {
        "claude"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or(DEFAULT_MODEL)
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        self.settings.limits.resolve(model, Some(known_context_limit(model)))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let mut args: Vec<String> =
            ["-p", "--verbose", "--output-format", "stream-json"].map(String::from).into();
        if !task.model.is_empty() {
            args.extend(["--model".to_owned(), task.model.to_owned()]);
        }
        args.extend(["--settings".to_owned(), MAIL_HOOK.to_owned()]);
        args.extend(self.settings.permission_args_or(&DEFAULT_PERMISSION_ARGS));
        args.push(task.prompt.to_owned());
        SpawnSpec {
            program: self.settings.program_or("claude"),
            args,
            env: merge_env(&DEFAULT_ENV, &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(ClaudeParser::default())
    }

    fn probe(&self) -> Option<&'static Probe> {
        Some(&PROBE)
    }
}

/// How many message ids a [`ClaudeParser`] remembers to count each message's usage once.
const RECENT_MESSAGES: usize = 16;

/// Parses claude's `--output-format stream-json --verbose` stdout.
#[derive(Debug, Default)]
pub struct ClaudeParser {
    /// The latest message ids whose usage was reported (each assistant line repeats it).
    counted_messages: VecDeque<String>,
    /// Tool-call id → tool name, so a result can say which tool it answers.
    tool_names: HashMap<String, String>,
    /// The text of the CLI's last synthetic `API Error: …` message, for a failed result that
    /// does not repeat it.
    last_api_error: Option<String>,
}

impl EventParser for ClaudeParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let trimmed = line.trim();
        // Most lines are assistant messages: read them into borrowed structs, without
        // building a tree. Any line those do not fit takes the general way below.
        if trimmed.contains("\"assistant\"")
            && let Ok(typed) = serde_json::from_str::<AssistantLine<'_>>(trimmed)
            && typed.kind == "assistant"
        {
            let mut events = self.typed_assistant_events(&typed);
            share_raw(&mut events, RawJson::from_line(trimmed));
            return events;
        }
        let Some(value) = json::object(line) else {
            return plain_line(line);
        };
        // The line is one JSON object: its text is the events' raw JSON, as it was printed.
        let mut events = self.value_line(value);
        share_raw(&mut events, RawJson::from_line(trimmed));
        events
    }
}

/// An assistant line, borrowed from the text. Only what the parser reads is declared;
/// anything else is skipped. A field of an unexpected type fails the whole line, which is
/// then read the general way (as a [`Value`]), so the two ways agree on every line.
#[derive(Deserialize)]
struct AssistantLine<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(default)]
    parent_tool_use_id: Option<IgnoredAny>,
    #[serde(default, borrow)]
    error: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<AssistantMessage<'a>>,
}

#[derive(Deserialize)]
struct AssistantMessage<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<TypedUsage>,
    #[serde(default, borrow)]
    content: Option<Vec<ContentBlock<'a>>>,
}

/// Anthropic usage with integer counts (a float or a string sends the line the general way,
/// which reads those leniently).
#[derive(Deserialize)]
struct TypedUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
}

#[derive(Deserialize)]
struct ContentBlock<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<Value>,
}

/// An assistant line as both readings see it (the typed [`AssistantLine`] and the general
/// [`Value`]), so its events are made by one function ([`ClaudeParser::events_of`]).
struct Assistant<'a> {
    session: Option<&'a str>,
    model: Option<&'a str>,
    /// A subagent's message (`parent_tool_use_id`): its usage is not the session's.
    subagent: bool,
    is_error: bool,
    message_id: &'a str,
    usage: Option<Usage>,
    blocks: Vec<Block<'a>>,
}

/// One content block of an [`Assistant`] line.
struct Block<'a> {
    kind: &'a str,
    text: Option<&'a str>,
    thinking: Option<&'a str>,
    id: Option<&'a str>,
    name: Option<&'a str>,
    input: Option<&'a Value>,
}

impl ClaudeParser {
    /// The events of a JSON line read as a [`Value`]; the caller gives them their `raw`.
    fn value_line(&mut self, value: Value) -> Vec<AgentEvent> {
        match json::str_at(&value, "type").unwrap_or("") {
            "system" => system_line(value),
            "assistant" => self.assistant_events(&value),
            "user" => self.user_events(&value),
            "result" => self.result_line(value),
            "rate_limit_event" => rate_limit_event(value),
            // Older or synthetic streams put tool calls at the top level.
            "tool_use" => {
                let tool = json::string_at(&value, "name");
                vec![AgentEvent::new(EventKind::ToolUse, Value::Null).with_tool(tool)]
            }
            "tool_result" => {
                let tool = json::string_at(&value, "name");
                let is_error = json::bool_at(&value, "is_error");
                vec![
                    AgentEvent::new(EventKind::ToolResult, Value::Null)
                        .with_tool(tool)
                        .with_error(is_error),
                ]
            }
            _ if json::status_at(&value, "api_error_status") == Some(429)
                || json::str_at(&value, "error") == Some("rate_limit") =>
            {
                let mut limit = RateLimit::http_429();
                limit.resets_at = value.get("resetsAt").and_then(json::epoch_timestamp);
                let session = json::string_at(&value, "session_id");
                vec![
                    AgentEvent::new(EventKind::RateLimit, Value::Null)
                        .with_session(session)
                        .with_rate_limit(Some(limit))
                        .with_http_status(Some(429))
                        .with_error(true),
                ]
            }
            // stream_event, system:status and anything new: nothing to act on.
            _ => Vec::new(),
        }
    }

    /// The events of an assistant line read by [`AssistantLine`] (see [`Assistant`]).
    fn typed_assistant_events(&mut self, line: &AssistantLine<'_>) -> Vec<AgentEvent> {
        let message = line.message.as_ref();
        let content = message.and_then(|m| m.content.as_deref()).unwrap_or_default();
        let assistant = Assistant {
            session: line.session_id.as_deref(),
            model: message.and_then(|m| m.model.as_deref()),
            subagent: line.parent_tool_use_id.is_some(),
            is_error: line.error.is_some(),
            message_id: message.and_then(|m| m.id.as_deref()).unwrap_or_default(),
            usage: message.and_then(|m| m.usage.as_ref()).map(|raw| Usage {
                input_tokens: raw.input_tokens,
                output_tokens: raw.output_tokens,
                cache_creation_input_tokens: raw.cache_creation_input_tokens,
                cache_read_input_tokens: raw.cache_read_input_tokens,
            }),
            blocks: content
                .iter()
                .map(|block| Block {
                    kind: block.kind.as_deref().unwrap_or(""),
                    text: block.text.as_deref(),
                    thinking: block.thinking.as_deref(),
                    id: block.id.as_deref(),
                    name: block.name.as_deref(),
                    input: block.input.as_ref(),
                })
                .collect(),
        };
        self.events_of(&assistant, || {
            let parts: Vec<&str> = content.iter().filter_map(|b| b.text.as_deref()).collect();
            (!parts.is_empty()).then(|| parts.join("\n"))
        })
    }

    /// The events of an assistant line read as a [`Value`] (see [`Assistant`]).
    fn assistant_events(&mut self, value: &Value) -> Vec<AgentEvent> {
        let message = value.get("message").unwrap_or(&Value::Null);
        let content = message.get("content").unwrap_or(&Value::Null);
        let blocks = content.as_array().map_or(&[][..], Vec::as_slice);
        let assistant = Assistant {
            session: json::str_at(value, "session_id"),
            model: json::str_at(message, "model"),
            subagent: value.get("parent_tool_use_id").is_some_and(|id| !id.is_null()),
            // The CLI's own "API Error: …" message carries a top-level `error`.
            is_error: json::str_at(value, "error").is_some(),
            message_id: json::str_at(message, "id").unwrap_or_default(),
            usage: message.get("usage").filter(|u| u.is_object()).map(json::anthropic_usage),
            blocks: blocks
                .iter()
                .map(|block| Block {
                    kind: json::str_at(block, "type").unwrap_or(""),
                    text: json::str_at(block, "text"),
                    thinking: json::str_at(block, "thinking"),
                    id: json::str_at(block, "id"),
                    name: json::str_at(block, "name"),
                    input: block.get("input"),
                })
                .collect(),
        };
        self.events_of(&assistant, || json::content_text(content))
    }

    /// The events of an assistant line, their `raw` left for the caller to fill in: one per
    /// text, thinking or tool-use block, the message's usage on the first (counted once per
    /// message id, never for a subagent's or the CLI's own synthetic message). A synthetic
    /// error message's text (`api_error`) is kept for the attempt's final error.
    fn events_of(
        &mut self,
        line: &Assistant<'_>,
        api_error: impl FnOnce() -> Option<String>,
    ) -> Vec<AgentEvent> {
        let session = line.session.map(str::to_owned);
        let synthetic = line.model == Some("<synthetic>");
        let mut usage = None;
        if !synthetic
            && !line.subagent
            && line.usage.is_some()
            && (line.message_id.is_empty() || self.first_sight(line.message_id))
        {
            usage.clone_from(&line.usage);
        }
        let mut events = Vec::new();
        for block in &line.blocks {
            let owned = |text: Option<&str>| text.map(str::to_owned);
            let event = match block.kind {
                "text" => AgentEvent::new(EventKind::AssistantText, Value::Null)
                    .with_text(owned(block.text)),
                "thinking" => AgentEvent::new(EventKind::Thinking, Value::Null)
                    .with_text(owned(block.thinking)),
                "tool_use" | "server_tool_use" => {
                    let name = owned(block.name);
                    if let (Some(id), Some(name)) = (owned(block.id), &name) {
                        self.tool_names.insert(id, name.clone());
                    }
                    let summary = block.input.and_then(tool_input_summary);
                    AgentEvent::new(EventKind::ToolUse, Value::Null)
                        .with_tool(name)
                        .with_text(summary)
                }
                _ => continue,
            };
            events.push(event.with_session(session.clone()).with_error(line.is_error));
        }
        if synthetic && line.is_error {
            self.last_api_error = api_error();
        }
        if events.is_empty() && usage.is_some() {
            // A message with no block we show still reports the context size.
            events
                .push(AgentEvent::new(EventKind::AssistantText, Value::Null).with_session(session));
        }
        if let Some(first) = events.first_mut() {
            first.usage = usage;
        }
        events
    }

    /// Whether message `id` is seen for the first time (its usage is then counted). A
    /// message's lines come one after another (a subagent's are not counted), so the last
    /// [`RECENT_MESSAGES`] ids are enough: the parser's memory stays bounded however long the
    /// session.
    fn first_sight(&mut self, id: &str) -> bool {
        if self.counted_messages.iter().any(|seen| seen == id) {
            return false;
        }
        if self.counted_messages.len() == RECENT_MESSAGES {
            // The oldest id's string is reused: no allocation per message once full.
            if let Some(mut oldest) = self.counted_messages.pop_front() {
                oldest.clear();
                oldest.push_str(id);
                self.counted_messages.push_back(oldest);
            }
            return true;
        }
        self.counted_messages.push_back(id.to_owned());
        true
    }

    /// The final `result`: a failure event when it failed, then the session end.
    fn result_line(&mut self, value: Value) -> Vec<AgentEvent> {
        let session = json::string_at(&value, "session_id");
        let status = json::status_at(&value, "api_error_status");
        let flagged = json::bool_at(&value, "is_error")
            || json::str_at(&value, "subtype").is_some_and(|s| s.starts_with("error"));
        let mut text = json::string_at(&value, "result").filter(|t| !t.trim().is_empty());
        if flagged && text.is_none() {
            text = error_list(&value).or_else(|| self.last_api_error.take());
        }
        let is_error = flagged || text.as_deref().is_some_and(is_login_prompt);
        let overflow = json::str_at(&value, "terminal_reason") == Some("prompt_too_long");
        let fault = (is_error && !overflow)
            .then(|| classify_failure(status, text.as_deref().unwrap_or("")))
            .flatten();
        let mut events = Vec::new();
        if overflow {
            events.push(AgentEvent::new(EventKind::ContextOverflow, Value::Null));
        } else if is_error && status == Some(429) {
            events.push(
                AgentEvent::new(EventKind::RateLimit, Value::Null)
                    .with_rate_limit(Some(RateLimit::http_429())),
            );
        } else if is_error {
            events.push(AgentEvent::new(EventKind::Error, Value::Null).with_fault(fault));
        }
        events.push(AgentEvent::new(EventKind::SessionEnded, value).with_fault(fault));
        let failure_count = events.len() - 1;
        for (at, event) in events.iter_mut().enumerate() {
            event.session_id.clone_from(&session);
            event.text.clone_from(&text);
            event.http_status = status;
            event.is_error = is_error || at < failure_count;
        }
        events
    }

    /// The events of a user line, their `raw` left for the caller to fill in.
    fn user_events(&mut self, value: &Value) -> Vec<AgentEvent> {
        let session = json::string_at(value, "session_id");
        let Some(blocks) =
            value.get("message").and_then(|m| m.get("content")).and_then(Value::as_array)
        else {
            return Vec::new();
        };
        let mut events = Vec::new();
        for block in blocks {
            if json::str_at(block, "type") != Some("tool_result") {
                continue;
            }
            let tool = json::str_at(block, "tool_use_id").and_then(|id| self.tool_names.remove(id));
            let text = block.get("content").and_then(json::content_text);
            events.push(
                AgentEvent::new(EventKind::ToolResult, Value::Null)
                    .with_session(session.clone())
                    .with_tool(tool)
                    .with_text(text)
                    .with_error(json::bool_at(block, "is_error")),
            );
        }
        events
    }
}

fn plain_line(line: &str) -> Vec<AgentEvent> {
    if line.trim().is_empty() { Vec::new() } else { vec![AgentEvent::output(line)] }
}

fn system_line(value: Value) -> Vec<AgentEvent> {
    let session = json::string_at(&value, "session_id");
    match json::str_at(&value, "subtype").unwrap_or("") {
        "init" => {
            let model = json::string_at(&value, "model");
            let mut event = AgentEvent::new(EventKind::SessionStarted, value).with_session(session);
            event.model = model;
            vec![event]
        }
        "api_retry" => {
            let status = json::status_at(&value, "error_status");
            let text = format!(
                "API request failed ({}), retry {} of {}",
                json::str_at(&value, "error").unwrap_or("unknown"),
                json::count_at(&value, "attempt"),
                json::count_at(&value, "max_retries"),
            );
            let rate_limit = (status == Some(429)).then(RateLimit::http_429);
            vec![
                AgentEvent::new(EventKind::ApiRetry, value)
                    .with_session(session)
                    .with_text(Some(text))
                    .with_http_status(status)
                    .with_rate_limit(rate_limit),
            ]
        }
        "error" => {
            let text =
                json::string_at(&value, "error").or_else(|| json::string_at(&value, "message"));
            let fault = text.as_deref().and_then(classify_text);
            vec![
                AgentEvent::new(EventKind::Error, value)
                    .with_session(session)
                    .with_text(text)
                    .with_fault(fault)
                    .with_error(true),
            ]
        }
        _ => Vec::new(),
    }
}

/// A `rate_limit_event`: one event per window it reports.
fn rate_limit_event(value: Value) -> Vec<AgentEvent> {
    let session = json::string_at(&value, "session_id");
    let Some(info) = value.get("rate_limit_info").filter(|i| i.is_object()) else {
        return Vec::new();
    };
    // While overage billing is allowed, a rejected window does not stop the run.
    let overage_allowed = json::str_at(info, "overageStatus") == Some("allowed");
    let main_window = json::string_at(info, "rateLimitType");
    let mut limits = vec![window_limit(info, main_window.clone(), None)];
    if let Some(windows) = info.get("unifiedWindows").and_then(Value::as_object) {
        for (name, window) in windows {
            if Some(name) == main_window.as_ref() {
                // Fill what the top level left out from the window's own entry.
                let merged = window_limit(window, Some(name.clone()), None);
                let first = &mut limits[0];
                first.resets_at = first.resets_at.or(merged.resets_at);
                first.utilization_pct = first.utilization_pct.or(merged.utilization_pct);
            } else {
                limits.push(window_limit(
                    window,
                    Some(name.clone()),
                    Some(RateLimitStatus::Allowed),
                ));
            }
        }
    }
    limits
        .into_iter()
        .map(|mut limit| {
            if overage_allowed && limit.status == RateLimitStatus::Rejected {
                limit.status = RateLimitStatus::AllowedWarning;
            }
            AgentEvent::new(EventKind::RateLimit, value.clone())
                .with_session(session.clone())
                .with_rate_limit(Some(limit))
        })
        .collect()
}

/// One window's status, reset time and utilization. A window that states no status gets
/// `fallback`, else is rejected when fully used and allowed otherwise.
fn window_limit(
    info: &Value,
    window: Option<String>,
    fallback: Option<RateLimitStatus>,
) -> RateLimit {
    // A fraction of the window (0.83), reported as a percentage.
    let utilization_pct = info.get("utilization").and_then(Value::as_f64).map(|u| u * 100.0);
    let status = match json::str_at(info, "status") {
        Some("allowed") => RateLimitStatus::Allowed,
        Some("allowed_warning") => RateLimitStatus::AllowedWarning,
        Some("rejected") => RateLimitStatus::Rejected,
        _ => RateLimitStatus::from_utilization(
            utilization_pct,
            fallback.unwrap_or(RateLimitStatus::Allowed),
        ),
    };
    RateLimit {
        window,
        status,
        resets_at: info.get("resetsAt").and_then(json::epoch_timestamp),
        utilization_pct,
        http_status: None,
    }
}

/// A failed result's `errors` (a list of messages), joined one per line.
fn error_list(value: &Value) -> Option<String> {
    let errors = value.get("errors")?.as_array()?;
    let messages: Vec<&str> = errors.iter().filter_map(Value::as_str).collect();
    (!messages.is_empty()).then(|| messages.join("\n"))
}

/// Claude Code's own "log in first" answer (`Not logged in · Please run /login`, `Invalid API
/// key · Please run /login`), which some versions print as a result without `is_error`.
fn is_login_prompt(text: &str) -> bool {
    let text = text.trim_start();
    (text.starts_with("Not logged in") || text.starts_with("Invalid API key"))
        && text.contains("/login")
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;
    use crate::coders::Fault;

    fn parse(lines: &[&str]) -> Vec<AgentEvent> {
        let mut parser = ClaudeParser::default();
        lines.iter().flat_map(|line| parser.parse_line(line)).collect()
    }

    fn assistant(id: &str, blocks: &str) -> String {
        format!(
            r#"{{"type":"assistant","message":{{"id":"{id}","content":[{blocks}],"usage":{{"input_tokens":7}}}},"session_id":"s"}}"#
        )
    }

    #[test]
    fn usage_counts_once_per_message_and_the_parser_forgets_old_ids() {
        let mut parser = ClaudeParser::default();
        let text = r#"{"type":"text","text":"hi"}"#;
        for n in 0..100 {
            let id = format!("msg_{n}");
            let first = parser.parse_line(&assistant(&id, text));
            let again = parser.parse_line(&assistant(&id, r#"{"type":"thinking","thinking":"t"}"#));
            assert!(first[0].usage.is_some() && again[0].usage.is_none(), "{id}");
        }
        assert_eq!(parser.counted_messages.len(), RECENT_MESSAGES);
    }

    #[test]
    fn every_event_of_a_line_carries_the_line() {
        let line = assistant(
            "msg_1",
            r#"{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}"#,
        );
        let events = parse(&[&line]);
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|event| event.raw.text() == line));
        assert!(events[0].raw.same_line(&events[1].raw), "shared, not copied");
        let result = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"},{"type":"tool_result","tool_use_id":"t2","content":"no"}]}}"#;
        let events = parse(&[&line, result]);
        assert_eq!(events[2].tool_name.as_deref(), Some("Bash"));
        assert!(events[2..].iter().all(|event| event.raw.text() == result));
    }

    #[test]
    fn typed_assistant_lines_read_as_the_general_way_reads_them() {
        let lines = [
            assistant("m1", r#"{"type":"text","text":"a \"q\" \u00e9"},{"type":"thinking","thinking":"t"}"#),
            assistant("m2", r#"{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"x":1}"#),
            r#"{"type":"assistant","message":{"id":"m3","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529"}]},"error":"unknown","session_id":"s"}"#.to_owned(),
            r#"{"type":"assistant","parent_tool_use_id":"t9","message":{"id":"m4","content":[],"usage":{"input_tokens":5}}}"#.to_owned(),
            r#"{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m5","content":[],"usage":{"input_tokens":5}}}"#.to_owned(),
            // Lines the typed structs refuse (a float count, a string content) still read.
            r#"{"type":"assistant","message":{"id":"m6","content":"plain","usage":{"input_tokens":5.5}}}"#.to_owned(),
        ];
        for line in &lines {
            let mut typed = ClaudeParser::default();
            let mut general = ClaudeParser::default();
            let got = typed.parse_line(line);
            let mut want = general.value_line(json::object(line).unwrap());
            share_raw(&mut want, RawJson::from_line(line));
            assert_eq!(got, want, "{line}");
            assert_eq!(typed.last_api_error, general.last_api_error, "{line}");
            assert_eq!(typed.tool_names, general.tool_names, "{line}");
        }
    }

    #[test]
    fn rate_limit_event_reports_both_windows() {
        let events = parse(&[
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1784283600,"rateLimitType":"five_hour","overageStatus":"rejected","unifiedWindows":{"five_hour":{"utilization":1,"resetsAt":1784283600},"seven_day":{"utilization":0.49,"resetsAt":1784800000}}}}"#,
        ]);
        assert_eq!(events.len(), 2);
        let five = events[0].rate_limit.as_ref().unwrap();
        assert_eq!(five.window.as_deref(), Some("five_hour"));
        assert_eq!(five.status, RateLimitStatus::Rejected);
        assert_eq!(five.utilization_pct, Some(100.0));
        assert_eq!(five.resets_at, Some(Timestamp::from_second(1_784_283_600).unwrap()));
        assert!(events[0].is_rate_limit_rejection());
        let seven = events[1].rate_limit.as_ref().unwrap();
        assert_eq!(seven.window.as_deref(), Some("seven_day"));
        assert_eq!(seven.status, RateLimitStatus::Allowed);
        assert_eq!(seven.utilization_pct, Some(49.0));
    }

    #[test]
    fn a_seven_day_event_is_kept() {
        let events = parse(&[
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1784283600,"rateLimitType":"seven_day","utilization":0.91}}"#,
        ]);
        let limit = events[0].rate_limit.as_ref().unwrap();
        assert_eq!(limit.window.as_deref(), Some("seven_day"));
        assert_eq!(limit.status, RateLimitStatus::AllowedWarning);
        assert!((limit.utilization_pct.unwrap() - 91.0).abs() < 1e-9);
        assert!(!events[0].is_rate_limit_rejection());
    }

    #[test]
    fn rejection_with_overage_allowed_is_only_a_warning() {
        let events = parse(&[
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1784283600,"rateLimitType":"five_hour","overageStatus":"allowed","isUsingOverage":true}}"#,
        ]);
        assert_eq!(events[0].rate_limit.as_ref().unwrap().status, RateLimitStatus::AllowedWarning);
    }

    fn result(fields: &str) -> String {
        format!(r#"{{"type":"result","subtype":"success","session_id":"s1",{fields}}}"#)
    }

    #[test]
    fn login_failures_are_auth_faults_with_the_message_as_text() {
        for line in [
            result(
                r#""is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login""#,
            ),
            result(r#""is_error":false,"result":"Invalid API key · Please run /login""#),
            result(
                r#""is_error":true,"api_error_status":401,"result":"API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}""#,
            ),
        ] {
            let events = parse(&[&line]);
            let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
            assert_eq!(kinds, [EventKind::Error, EventKind::SessionEnded], "{line}");
            for event in &events {
                assert_eq!(event.fault, Some(Fault::Auth), "{line}");
                assert!(event.is_error);
                assert!(event.text.as_deref().is_some_and(|t| !t.is_empty()));
            }
        }
    }

    #[test]
    fn a_failed_result_without_text_takes_the_synthetic_api_error() {
        let events = parse(&[
            r#"{"type":"assistant","message":{"id":"m1","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}]},"error":"server_error","session_id":"s1"}"#,
            &result(r#""is_error":true,"api_error_status":529"#),
        ]);
        let end = events.last().unwrap();
        assert_eq!(end.kind, EventKind::SessionEnded);
        assert!(end.text.as_deref().unwrap().starts_with("API Error: 529"));
        assert_eq!(end.fault, Some(Fault::Outage));
        let events = parse(&[&result(
            r#""subtype":"error_during_execution","is_error":true,"errors":["Connection error."]"#,
        )]);
        assert_eq!(events.last().unwrap().text.as_deref(), Some("Connection error."));
        assert_eq!(events.last().unwrap().fault, Some(Fault::Outage));
    }

    #[test]
    fn retries_and_successes_never_carry_a_fault() {
        let events = parse(&[
            r#"{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"error_status":529,"error":"overloaded","session_id":"s1"}"#,
            r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"error_status":401,"error":"authentication_failed","session_id":"s1"}"#,
            // A model answer that talks about API keys is not a login failure.
            &result(
                r#""is_error":false,"result":"Fixed: an invalid API key now shows a 401 Unauthorized page.""#,
            ),
        ]);
        assert!(events.iter().all(|e| e.fault.is_none() && !e.is_error));
    }

    #[test]
    fn utilization_is_a_fraction_and_drives_the_threshold() {
        let events = parse(&[
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","rateLimitType":"seven_day","utilization":0.83,"surpassedThreshold":0.75,"resetsAt":1790856000,"unifiedWindows":{"five_hour":{"utilization":0.67,"resetsAt":1790425800},"seven_day":{"utilization":0.83,"resetsAt":1790856000}}}}"#,
        ]);
        let limits: Vec<&RateLimit> = events.iter().filter_map(|e| e.rate_limit.as_ref()).collect();
        assert_eq!(limits.len(), 2);
        assert_eq!(limits[0].window.as_deref(), Some("seven_day"));
        assert!((limits[0].utilization_pct.unwrap() - 83.0).abs() < 1e-9);
        assert!(limits[0].above(80) && !limits[0].above(90));
        assert_eq!(limits[1].window.as_deref(), Some("five_hour"));
        assert!((limits[1].utilization_pct.unwrap() - 67.0).abs() < 1e-9);
        assert!(!limits[1].above(80));
    }

    #[test]
    fn noise_and_garbage_never_fail() {
        assert!(parse(&["", "   "]).is_empty());
        assert_eq!(parse(&["not json"])[0].kind, EventKind::Output);
        assert_eq!(parse(&[r#"{"type":"stream_event","event":{}}"#, "[1,2]"]).len(), 1);
        assert!(parse(&[r#"{"type":"assistant","message":"odd"}"#]).is_empty());
    }
}
