//! The normalized agent event: what every coder's stdout turns into.
//!
//! Each coder CLI speaks its own dialect (claude's stream-json, codex's `exec --json`,
//! opencode's `run --format json`, plain text). An [`EventParser`](super::EventParser) turns
//! each stdout line into zero or more [`AgentEvent`]s, so the supervisor reacts to one
//! vocabulary: a session started, a tool ran, the context grew, a rate limit hit, the session
//! ended. The supervisor appends each event to the task's `events.jsonl` as an [`EventLine`]
//! (the event plus a `ts`).
//!
//! Two fields carry the signals the supervisor acts on:
//! - [`AgentEvent::usage`] is set only when the line reports the **current** context size: the
//!   prompt of the latest model request (one assistant message, one step). Never a sum over a
//!   turn's requests nor a session total — a stream that only reports those leaves it unset —
//!   so the supervisor can compare [`Usage::prompt_tokens`] with the coder's context limit on
//!   every event that has it, whatever its kind;
//! - [`AgentEvent::rate_limit`] is set when the line says something about a rate-limit window.
//!   Only an event of kind [`EventKind::RateLimit`] with status
//!   [`RateLimitStatus::Rejected`] means "this run cannot continue"; the same info on an
//!   [`EventKind::ApiRetry`] means the CLI is retrying by itself;
//! - [`AgentEvent::fault`] is set on a final error (after the CLI's own retries) that is the
//!   fleet's fault rather than the task's: the CLI is not logged in ([`Fault::Auth`]) or the
//!   provider is down ([`Fault::Outage`]). The supervisor pauses the coder instead of charging
//!   the task. The wording rules live in [`diagnose`](super::diagnose).

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The JSON text of the line an event came from, kept as the CLI printed it: written to
/// `events.jsonl` as it is (never decoded and re-encoded on the way), shared by the events
/// of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawJson(Arc<str>);

impl RawJson {
    /// `text`, which must be one valid JSON document (the caller parsed it).
    pub fn from_line(text: &str) -> RawJson {
        RawJson(Arc::from(text))
    }

    /// The JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The document decoded (`null` if the text is not JSON).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// Whether both are the text of the same line (not a copy).
    pub fn same_line(&self, other: &RawJson) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl From<Value> for RawJson {
    fn from(value: Value) -> RawJson {
        // Parsers make each event with a `null` the line's text then replaces: one shared text.
        static NULL: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from("null"));
        if value.is_null() {
            return RawJson(Arc::clone(&NULL));
        }
        RawJson(Arc::from(value.to_string()))
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match serde_json::from_str::<&serde_json::value::RawValue>(&self.0) {
            Ok(raw) => raw.serialize(serializer),
            Err(_) => Value::Null.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawJson, D::Error> {
        Value::deserialize(deserializer).map(RawJson::from)
    }
}

/// Token counts of one model request, as the CLI reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens that were neither read from nor written to the prompt cache.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation_input_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// The size of the prompt, which is what fills the context window: uncached input plus
    /// cache writes plus cache reads.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

/// What the provider said about a rate-limit window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateLimitStatus {
    /// Within the limit.
    Allowed,
    /// Within the limit but close to it.
    AllowedWarning,
    /// Over the limit: requests are refused until the window resets.
    Rejected,
}

impl RateLimitStatus {
    /// The status of a window whose provider stated none: rejected once fully used (100 % or
    /// more), else `otherwise`.
    pub fn from_utilization(utilization_pct: Option<f64>, otherwise: RateLimitStatus) -> Self {
        if utilization_pct.is_some_and(|pct| pct >= 100.0) {
            RateLimitStatus::Rejected
        } else {
            otherwise
        }
    }
}

/// One rate-limit observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    /// The window it is about: `five_hour`, `seven_day`, … `None` when the CLI only said
    /// "429" without naming one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    pub status: RateLimitStatus,
    /// When the window resets, if the CLI said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<Timestamp>,
    /// How much of the window is used, 0–100 (claude reports it only near or over the limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
    /// The HTTP status behind it (429), when the line came from a failed request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

impl RateLimit {
    /// Whether this observation says the window is at or over `threshold_pct` percent
    /// (`rate_limit_threshold_pct` in the config): its utilization reached the threshold, or
    /// the provider rejected requests. An observation without a utilization is above only when
    /// rejected.
    pub fn above(&self, threshold_pct: u8) -> bool {
        self.status == RateLimitStatus::Rejected
            || self.utilization_pct.is_some_and(|pct| pct >= f64::from(threshold_pct))
    }

    /// A bare "the request got a 429" observation: rejected, no window, no reset time.
    pub fn http_429() -> RateLimit {
        RateLimit {
            window: None,
            status: RateLimitStatus::Rejected,
            resets_at: None,
            utilization_pct: None,
            http_status: Some(429),
        }
    }
}

/// A failure that is the fleet's fault, not the task's: every task on this coder would fail the
/// same way until someone acts (logs in) or the provider recovers. Set only on final events,
/// after the CLI's own retries; never for a 429 (that is a [`RateLimit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The CLI is not logged in, or its key or token is missing, expired or rejected (HTTP
    /// 401/403).
    Auth,
    /// The provider is down or unreachable: HTTP 5xx/529, overloaded, connection refused,
    /// stream cut, request timed out.
    Outage,
    /// The CLI's own local state was busy for a moment: opencode's database locked by another
    /// agent (`database is locked`, `Failed query: CREATE TABLE …`). The task is released
    /// uncharged and the coder is not paused: the next attempt will most likely work.
    Contention,
}

/// What kind of thing happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The CLI started a session (claude `system:init`, codex `thread.started`, …).
    SessionStarted,
    /// Text the model wrote.
    AssistantText,
    /// The model's visible reasoning.
    Thinking,
    /// The model called a tool (`tool_name` says which).
    ToolUse,
    /// A tool's result came back (`is_error` when the tool failed or was refused).
    ToolResult,
    /// A model request failed and the CLI is retrying by itself. `http_status` says why;
    /// a 429 also carries `rate_limit` (informational: the run may still recover).
    ApiRetry,
    /// A rate-limit observation (`rate_limit` is set). Status `rejected` means the run is
    /// stopped by the limit and the supervisor should stop it and pause spawning.
    RateLimit,
    /// The prompt no longer fits the model's context window: the CLI refused it (claude's
    /// `terminal_reason: prompt_too_long`). The same recovery as context pressure applies —
    /// a fresh session, not a failure.
    ContextOverflow,
    /// The CLI reported an error that is not a rate limit or an overflow (a 500, a crash of
    /// the turn, an invalid request). Retries and exit codes decide what it means.
    Error,
    /// One model step (a request and the tool calls it made) finished and the session goes on;
    /// carries that step's `usage` (opencode's `step_finish`).
    StepFinished,
    /// The session ended (`is_error` when the CLI says it failed).
    SessionEnded,
    /// A line of plain text output (coders without a JSON protocol, and non-JSON lines).
    Output,
}

/// One normalized event, ready to be written as a line of `events.jsonl`.
///
/// Optional fields are left out of the JSON when empty. `raw` is the line as the CLI printed
/// it (parsed JSON, or `{"text": …}` for plain text), so nothing is lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The tool, for `tool_use` and `tool_result` (`Bash`, `command_execution`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The human-readable part: the model's text, a tool's command or output, an error
    /// message, a plain output line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The model the CLI says it is running (session start), when it says so. Its context
    /// window may differ from the one the configured model implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The current context size, present only when this line reports it (see the module doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// The HTTP status of the failed API request this line reports (api retries, final errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The CLI marked this as a failure: a failed tool call, an error, an errored session end.
    #[serde(default)]
    pub is_error: bool,
    /// Why a final failure is the fleet's fault (not logged in, provider down), when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    pub raw: RawJson,
}

/// Every field of an [`AgentEvent`] but `raw`, serialised in the same order with the same
/// rules: the head of an `events.jsonl` line, to which the line's own text is added as it is.
#[derive(Serialize)]
pub struct EventFields<'a> {
    kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: &'a Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_limit: &'a Option<RateLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    http_status: &'a Option<u16>,
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    fault: &'a Option<Fault>,
}

impl AgentEvent {
    /// Every field but `raw`, for writing the line with its raw text as it is.
    pub fn fields(&self) -> EventFields<'_> {
        EventFields {
            kind: self.kind,
            session_id: &self.session_id,
            tool_name: &self.tool_name,
            text: &self.text,
            model: &self.model,
            usage: &self.usage,
            rate_limit: &self.rate_limit,
            http_status: &self.http_status,
            is_error: self.is_error,
            fault: &self.fault,
        }
    }

    /// The strings of the event's fields (all but `raw`) that come from the agent's output:
    /// the session, the tool, the text, the model and a rate limit's window. The other fields
    /// are fleet's own names (`kind`, statuses), numbers and times, under fleet's own keys.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        [&self.session_id, &self.tool_name, &self.text, &self.model]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .chain(self.rate_limit.as_ref().and_then(|limit| limit.window.as_deref()))
    }

    /// An event of `kind` with only `raw` set; the builder methods below fill the rest.
    pub fn new(kind: EventKind, raw: impl Into<RawJson>) -> AgentEvent {
        AgentEvent {
            kind,
            session_id: None,
            tool_name: None,
            text: None,
            model: None,
            usage: None,
            rate_limit: None,
            http_status: None,
            is_error: false,
            fault: None,
            raw: raw.into(),
        }
    }

    /// A plain text output line.
    pub fn output(line: &str) -> AgentEvent {
        AgentEvent::new(EventKind::Output, serde_json::json!({ "text": line }))
            .with_text(Some(line.to_owned()))
    }

    pub fn with_session(mut self, session_id: Option<String>) -> AgentEvent {
        self.session_id = session_id;
        self
    }

    pub fn with_tool(mut self, tool_name: Option<String>) -> AgentEvent {
        self.tool_name = tool_name;
        self
    }

    pub fn with_text(mut self, text: Option<String>) -> AgentEvent {
        self.text = text;
        self
    }

    pub fn with_usage(mut self, usage: Option<Usage>) -> AgentEvent {
        self.usage = usage;
        self
    }

    pub fn with_rate_limit(mut self, rate_limit: Option<RateLimit>) -> AgentEvent {
        self.rate_limit = rate_limit;
        self
    }

    pub fn with_http_status(mut self, status: Option<u16>) -> AgentEvent {
        self.http_status = status;
        self
    }

    pub fn with_error(mut self, is_error: bool) -> AgentEvent {
        self.is_error = is_error;
        self
    }

    pub fn with_fault(mut self, fault: Option<Fault>) -> AgentEvent {
        self.fault = fault;
        self
    }

    /// True for a rate-limit event that means the run cannot go on.
    pub fn is_rate_limit_rejection(&self) -> bool {
        self.kind == EventKind::RateLimit
            && self.rate_limit.as_ref().is_some_and(|r| r.status == RateLimitStatus::Rejected)
    }
}

/// Gives the events of one line their `raw` JSON, shared (no copy of the text).
pub fn share_raw(events: &mut [AgentEvent], raw: impl Into<RawJson>) {
    let raw = raw.into();
    for event in events {
        event.raw = raw.clone();
    }
}

/// One line of a task's `events.jsonl`: the event and the time the supervisor read it
/// (`{"ts": "2026-…Z", "kind": "tool_use", …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    pub ts: Timestamp,
    #[serde(flatten)]
    pub event: AgentEvent,
}

/// Small readers for the loosely typed JSON the CLIs print. Missing or mistyped fields read
/// as `None`/0: a CLI adding or changing a field must never break parsing.
pub(crate) mod json {
    use serde_json::Value;

    use super::Usage;

    pub fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
        value.get(key).and_then(Value::as_str)
    }

    pub fn string_at(value: &Value, key: &str) -> Option<String> {
        str_at(value, key).map(str::to_owned)
    }

    /// A non-negative integer count; floats are truncated, anything else is 0.
    pub fn count_at(value: &Value, key: &str) -> u64 {
        match value.get(key) {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// An HTTP status code, if the field holds one.
    pub fn status_at(value: &Value, key: &str) -> Option<u16> {
        value.get(key).and_then(Value::as_u64).and_then(|n| u16::try_from(n).ok())
    }

    pub fn bool_at(value: &Value, key: &str) -> bool {
        value.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    /// Anthropic-style usage (`input_tokens` without the cached part, `cache_creation_input_tokens`,
    /// `cache_read_input_tokens`, `output_tokens`), as claude and agy report it per message.
    pub fn anthropic_usage(raw: &Value) -> Usage {
        Usage {
            input_tokens: count_at(raw, "input_tokens"),
            output_tokens: count_at(raw, "output_tokens"),
            cache_creation_input_tokens: count_at(raw, "cache_creation_input_tokens"),
            cache_read_input_tokens: count_at(raw, "cache_read_input_tokens"),
        }
    }

    /// An epoch time in seconds (or milliseconds, when it is too large to be seconds).
    pub fn epoch_timestamp(value: &Value) -> Option<jiff::Timestamp> {
        let number = value.as_f64()?;
        let seconds = if number > 1e11 { number / 1000.0 } else { number };
        jiff::Timestamp::from_second(seconds as i64).ok()
    }

    /// Parses one stdout line as a JSON object; `None` for anything else.
    pub fn object(line: &str) -> Option<Value> {
        let trimmed = line.trim();
        if !trimmed.starts_with('{') {
            return None;
        }
        serde_json::from_str::<Value>(trimmed).ok().filter(Value::is_object)
    }

    /// Text from a tool result's `content`, which is a string or a list of text blocks.
    pub fn content_text(content: &Value) -> Option<String> {
        match content {
            Value::String(text) => Some(text.clone()),
            Value::Array(blocks) => {
                let parts: Vec<&str> =
                    blocks.iter().filter_map(|block| str_at(block, "text")).collect();
                (!parts.is_empty()).then(|| parts.join("\n"))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_tokens_sum_every_prompt_part() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 99,
            cache_creation_input_tokens: 20,
            cache_read_input_tokens: 30,
        };
        assert_eq!(usage.prompt_tokens(), 60);
    }

    #[test]
    fn a_window_is_above_the_threshold_when_used_that_much_or_rejected() {
        let limit = |status, utilization_pct| RateLimit {
            window: Some("five_hour".to_owned()),
            status,
            resets_at: None,
            utilization_pct,
            http_status: None,
        };
        assert!(limit(RateLimitStatus::AllowedWarning, Some(90.0)).above(90));
        assert!(!limit(RateLimitStatus::AllowedWarning, Some(89.9)).above(90));
        assert!(!limit(RateLimitStatus::Allowed, None).above(0), "no utilization, not rejected");
        assert!(limit(RateLimitStatus::Rejected, None).above(100));
        assert!(RateLimit::http_429().above(90));
        assert_eq!(
            RateLimitStatus::from_utilization(Some(100.0), RateLimitStatus::Allowed),
            RateLimitStatus::Rejected
        );
    }

    #[test]
    fn faults_serialise_in_snake_case_and_only_when_set() {
        let event = AgentEvent::new(EventKind::Error, serde_json::json!({}))
            .with_fault(Some(Fault::Outage));
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["fault"], "outage");
        assert_eq!(serde_json::from_value::<AgentEvent>(json).unwrap(), event);
        assert_eq!(serde_json::to_value(Fault::Auth).unwrap(), "auth");
    }

    #[test]
    fn events_serialise_without_empty_fields() {
        let event = AgentEvent::output("hi");
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "output", "text": "hi", "is_error": false, "raw": {"text": "hi"}})
        );
        let back: AgentEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn fields_and_raw_text_make_the_serialised_event() {
        let event =
            AgentEvent::new(EventKind::ToolUse, RawJson::from_line(r#"{"type": "x",  "n":1}"#))
                .with_tool(Some("Bash".into()))
                .with_text(Some("ls".into()))
                .with_usage(Some(Usage::default()))
                .with_rate_limit(Some(RateLimit::http_429()))
                .with_http_status(Some(429))
                .with_error(true)
                .with_fault(Some(Fault::Auth))
                .with_session(Some("s".into()));
        let mut fields = serde_json::to_value(event.fields()).unwrap();
        fields["raw"] = event.raw.value();
        assert_eq!(serde_json::to_value(&event).unwrap(), fields);
        let whole = serde_json::to_string(&event).unwrap();
        assert!(whole.ends_with(r#""raw":{"type": "x",  "n":1}}"#), "raw kept as printed: {whole}");
        let back: AgentEvent = serde_json::from_str(&whole).unwrap();
        assert_eq!(back.raw.value(), event.raw.value());
    }

    /// The event log judges an event's fields clean by its [`AgentEvent::texts`] alone: every
    /// other string and every key of the fields must be fleet's own and never need masking.
    #[test]
    fn the_fields_hold_nothing_to_mask_beyond_their_texts() {
        let mut limit = RateLimit::http_429();
        limit.window = Some("five_hour".into());
        limit.resets_at = Some(Timestamp::from_second(1_700_000_000).unwrap());
        limit.utilization_pct = Some(99.5);
        let kinds = [EventKind::SessionStarted, EventKind::ApiRetry, EventKind::ContextOverflow];
        let faults = [Fault::Auth, Fault::Outage, Fault::Contention];
        for (kind, fault) in kinds.into_iter().zip(faults) {
            let event = AgentEvent::new(kind, Value::Null)
                .with_session(Some("s".into()))
                .with_tool(Some("Bash".into()))
                .with_text(Some("ls".into()))
                .with_usage(Some(Usage::default()))
                .with_rate_limit(Some(limit.clone()))
                .with_http_status(Some(429))
                .with_error(true)
                .with_fault(Some(fault));
            let fields = serde_json::to_string(&event.fields()).unwrap();
            let redactor = crate::redact::Redactor::new(["xxxxxxxxxxxx".to_string()]);
            assert!(redactor.is_clean_json_text(&fields), "{fields}");
            let texts: Vec<&str> = event.texts().collect();
            assert_eq!(texts, ["s", "Bash", "ls", "five_hour"]);
        }
    }

    #[test]
    fn event_lines_put_the_time_first_and_read_back() {
        let line = EventLine {
            ts: Timestamp::from_second(1_700_000_000).unwrap(),
            event: AgentEvent::output("x"),
        };
        let text = serde_json::to_string(&line).unwrap();
        assert!(text.starts_with(r#"{"ts":"2023-11-14T22:13:20Z","kind":"output""#), "{text}");
        assert_eq!(serde_json::from_str::<EventLine>(&text).unwrap(), line);
    }
}
