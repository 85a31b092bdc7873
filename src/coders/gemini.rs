//! The `gemini` coder: Google's Gemini CLI (`@google/gemini-cli`) in headless mode with
//! stream-json output. (`agy` is the Antigravity CLI, a different program.)
//!
//! Command line: `gemini --output-format stream-json [--model M] <permission args> -p
//! <prompt>`, with `--yolo` (every tool call approved) as the permission flag by default.
//!
//! Environment, found by reading and running Gemini CLI 0.61:
//! - `GEMINI_CLI_TRUST_WORKSPACE=true`: headless mode refuses a folder it does not trust (exit
//!   55); the variable trusts the task's folder for this run only and, unlike `--skip-trust`,
//!   is understood by older versions too;
//! - `GEMINI_CLI_HOME` → an agent-private home in the task directory ([`HOME_DIR`]), whose
//!   `.gemini/settings.json` fleet writes before the first spawn ([`Coder::prepare`]) selecting
//!   the API-key sign-in (`security.auth.selectedType = "gemini-api-key"`). Gemini CLI keeps
//!   its settings, chats and history under that home instead of `~/.gemini`, so the user's own
//!   Gemini settings are neither read nor changed. Without it, a custom endpoint
//!   (`GOOGLE_GEMINI_BASE_URL`) makes the CLI pick the "gateway" sign-in, which headless mode
//!   refuses (`Invalid auth method selected.`, exit 41). (A system settings file,
//!   `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, would leave `~/.gemini` in use, but Gemini CLI skips
//!   one whose directories are writable by others or not owned by root — `/tmp`, any user's
//!   `FLEET_HOME` — with only a warning.) The key itself comes from `GEMINI_API_KEY`, inherited
//!   or set in `[coders.gemini] env`, which may also set `GEMINI_CLI_HOME` back to a real home
//!   (a Google or Vertex AI sign-in kept there).
//!
//! Stream-json, as the CLI prints it (one JSON object per line):
//! - `init` {session_id, model} → [`EventKind::SessionStarted`];
//! - `message` with role `assistant` (text deltas) → [`EventKind::AssistantText`]; the `user`
//!   echo of the prompt is dropped;
//! - `tool_use` {tool_name, tool_id, parameters} → [`EventKind::ToolUse`] (the shell tool is
//!   `run_shell_command`, its `parameters.command` the text); `tool_result` {tool_id, status,
//!   output, error} → [`EventKind::ToolResult`], named after the call it answers;
//! - `error` {severity, message}: severity `error` → [`EventKind::Error`] (a warning, such as
//!   a detected loop, → [`EventKind::Output`]). Never a fault: the run may go on;
//! - `result` {status, error?, stats} → [`EventKind::SessionEnded`], preceded on failure by the
//!   failure itself ([`diagnose::failure_event`](super::diagnose)): a quota or rate-limit error
//!   (`TerminalQuotaError`, `RetryableQuotaError`, "You have exhausted your daily quota on this
//!   model.", a 429) → [`EventKind::RateLimit`] (rejected; window `daily` for the daily quota;
//!   reset time from "Please retry in 30s" when stated), an overlong prompt →
//!   [`EventKind::ContextOverflow`], else [`EventKind::Error`] with its fault
//!   (`FatalAuthenticationError` and 401/403 → auth; 5xx, `fetch failed` → outage).
//!
//! Usage: the stream reports tokens only in `result.stats`, summed over every model request of
//! the session, which is never a context size (the same reason codex leaves its totals unset),
//! so no event carries usage and fleet's context pressure cannot fire for gemini. Gemini CLI
//! keeps its own context in bounds: it compresses the chat past half the window and refuses a
//! request that would overflow it.
//!
//! Exit codes ([`Coder::exit_meaning`]): the CLI exits with the failing request's HTTP status
//! cut to a byte, so 173 is 429 (a per-minute limit after minutes of silent retries, or the
//! daily quota, whose stderr says only "exhausted your daily quota") → a rate limit; 41 is its
//! `FATAL_AUTHENTICATION_ERROR` (no key, `Invalid auth method selected.`) and 145/147 are
//! 401/403 → auth; 244/246/247 are 500/502/503 → outage.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::diagnose::{classify_text, failure_event};
use super::event::json;
use super::{
    AgentEvent, BuiltinSettings, Coder, CredentialFile, EventKind, EventParser, ExitMeaning, Fault,
    Probe, SignIn, SpawnSpec, TaskSpec, merge_env, tool_input_summary,
};

/// The flags that let Gemini CLI run tools unattended.
pub const DEFAULT_PERMISSION_ARGS: [&str; 1] = ["--yolo"];
/// The context window of Gemini models (1M tokens for 2.5 and 3).
pub const DEFAULT_CONTEXT_LIMIT: u64 = 1_048_576;
/// The agent-private home of Gemini CLI, in the task directory.
pub const HOME_DIR: &str = "gemini-home";
/// The variable that moves Gemini CLI's home (`$GEMINI_CLI_HOME/.gemini/…`).
pub const HOME_VAR: &str = "GEMINI_CLI_HOME";

/// What fleet's settings file says: sign in with the API key of `GEMINI_API_KEY`.
pub fn settings() -> Value {
    json!({ "security": { "auth": { "selectedType": "gemini-api-key" } } })
}

/// Gemini CLI (`gemini`).
#[derive(Debug, Clone, Default)]
pub struct GeminiCoder {
    settings: BuiltinSettings,
}

impl GeminiCoder {
    pub fn new(settings: BuiltinSettings) -> GeminiCoder {
        GeminiCoder { settings }
    }
}

/// The agent-private home of the task whose directory is `task_dir`.
fn home_dir(task_dir: &Path) -> PathBuf {
    task_dir.join(HOME_DIR)
}

/// `--version`, and the sign-in fleet's agents can use: the settings fleet writes select the
/// API key of `GEMINI_API_KEY`; a Google sign-in (`oauth_creds.json`) counts only where
/// `GEMINI_CLI_HOME` is pointed at a home that holds one (`[coders.gemini] env`), since each
/// agent otherwise gets a home of its own.
pub const PROBE: Probe = Probe {
    version_args: &["--version"],
    sign_in: SignIn {
        env: &["GEMINI_API_KEY"],
        files: &[CredentialFile {
            var: HOME_VAR,
            under_var: ".gemini",
            under_home: None,
            file: "oauth_creds.json",
        }],
        status_args: None,
        fix: "set GEMINI_API_KEY in the environment `fleet run` starts from (each gemini agent gets a home of its own, so a Google sign-in in ~/.gemini is used only with `fleet config set coders.gemini.env.GEMINI_CLI_HOME=<that home>`)",
        optional: false,
    },
};

impl Coder for GeminiCoder {
    fn name(&self) -> &str {
        "gemini"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        let known = super::models::context_window(model).unwrap_or(DEFAULT_CONTEXT_LIMIT);
        self.settings.limits.resolve(model, Some(known))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let mut args: Vec<String> = ["--output-format", "stream-json"].map(String::from).into();
        if !task.model.is_empty() {
            args.extend(["--model".to_owned(), task.model.to_owned()]);
        }
        args.extend(self.settings.permission_args_or(&DEFAULT_PERMISSION_ARGS));
        args.extend(["-p".to_owned(), task.prompt.to_owned()]);
        let home = home_dir(task.task_dir).display().to_string();
        let defaults = [("GEMINI_CLI_TRUST_WORKSPACE", "true"), (HOME_VAR, home.as_str())];
        SpawnSpec {
            program: self.settings.program_or("gemini"),
            args,
            env: merge_env(&defaults, &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(GeminiParser::default())
    }

    fn probe(&self) -> Option<&'static Probe> {
        Some(&PROBE)
    }

    /// Writes the agent-private home's settings file (once; a file already there is kept, so
    /// a user may edit it for a task).
    fn prepare(&self, task: &TaskSpec) -> std::io::Result<()> {
        let dir = home_dir(task.task_dir).join(".gemini");
        let path = dir.join("settings.json");
        if path.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&dir)?;
        let text = serde_json::to_string_pretty(&settings()).expect("JSON values serialize");
        std::fs::write(path, text + "\n")
    }

    fn exit_meaning(&self, code: i32) -> Option<ExitMeaning> {
        exit_meaning(code)
    }
}

/// What a Gemini CLI exit code says by itself (see the module doc).
pub fn exit_meaning(code: i32) -> Option<ExitMeaning> {
    const BYTE: i32 = 256;
    match code {
        41 => Some(ExitMeaning::Fault(Fault::Auth)),
        c if c == 429 % BYTE => Some(ExitMeaning::RateLimit),
        c if c == 401 % BYTE || c == 403 % BYTE => Some(ExitMeaning::Fault(Fault::Auth)),
        c if [500, 502, 503].iter().any(|s| c == s % BYTE) => {
            Some(ExitMeaning::Fault(Fault::Outage))
        }
        _ => None,
    }
}

/// Parses Gemini CLI's `--output-format stream-json` stdout.
#[derive(Debug, Default)]
pub struct GeminiParser {
    session: Option<String>,
    /// Tool-call id → tool name, so a result can say which tool it answers.
    tool_names: HashMap<String, String>,
}

impl EventParser for GeminiParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(value) = json::object(line) else {
            return if line.trim().is_empty() {
                Vec::new()
            } else {
                vec![AgentEvent::output(line)]
            };
        };
        let mut events = match json::str_at(&value, "type").unwrap_or("") {
            "init" => {
                self.session = json::string_at(&value, "session_id");
                let mut event = AgentEvent::new(EventKind::SessionStarted, value.clone());
                event.model = json::string_at(&value, "model");
                vec![event]
            }
            "message" if json::str_at(&value, "role") == Some("assistant") => {
                let text = json::string_at(&value, "content");
                vec![AgentEvent::new(EventKind::AssistantText, value).with_text(text)]
            }
            "tool_use" => vec![self.tool_use(value)],
            "tool_result" => vec![self.tool_result(value)],
            "error" => vec![error_line(value)],
            "result" => result_line(value),
            _ => Vec::new(),
        };
        for event in &mut events {
            event.session_id.clone_from(&self.session);
        }
        events
    }
}

impl GeminiParser {
    fn tool_use(&mut self, value: Value) -> AgentEvent {
        let tool = json::string_at(&value, "tool_name");
        if let (Some(id), Some(name)) = (json::string_at(&value, "tool_id"), &tool) {
            self.tool_names.insert(id, name.clone());
        }
        let summary = value.get("parameters").and_then(tool_input_summary);
        AgentEvent::new(EventKind::ToolUse, value).with_tool(tool).with_text(summary)
    }

    fn tool_result(&mut self, value: Value) -> AgentEvent {
        let tool = json::str_at(&value, "tool_id").and_then(|id| self.tool_names.get(id)).cloned();
        let failed = json::str_at(&value, "status") == Some("error");
        let text = if failed {
            value.get("error").and_then(|e| json::string_at(e, "message"))
        } else {
            None
        }
        .or_else(|| json::string_at(&value, "output"));
        AgentEvent::new(EventKind::ToolResult, value)
            .with_tool(tool)
            .with_text(text)
            .with_error(failed)
    }
}

/// An `error` line: an error the run may survive, or a warning.
fn error_line(value: Value) -> AgentEvent {
    let text = json::string_at(&value, "message");
    if json::str_at(&value, "severity") == Some("warning") {
        return AgentEvent::new(EventKind::Output, value).with_text(text);
    }
    AgentEvent::new(EventKind::Error, value).with_text(text).with_error(true)
}

/// Error types of Gemini CLI that are rate or quota limits, whatever their message says.
const QUOTA_ERRORS: [&str; 2] = ["TerminalQuotaError", "RetryableQuotaError"];

/// The `result` line: the failure first when it failed, then the end of the session.
fn result_line(value: Value) -> Vec<AgentEvent> {
    let failed = json::str_at(&value, "status") == Some("error");
    if !failed {
        return vec![AgentEvent::new(EventKind::SessionEnded, value)];
    }
    let error = value.get("error").cloned().unwrap_or(Value::Null);
    let message = json::string_at(&error, "message").unwrap_or_default();
    let error_type = json::str_at(&error, "type").unwrap_or("");
    let fault_text = format!("{error_type}: {message}");
    // Gemini CLI makes its quota errors only of 429s (and 499/503 saying "limit: 0").
    let status = QUOTA_ERRORS.contains(&error_type).then_some(429);
    let mut failure = failure_event(&message, &fault_text, status, value.clone());
    if error_type == "FatalAuthenticationError" && failure.kind == EventKind::Error {
        failure = failure.with_fault(Some(Fault::Auth));
    }
    if let Some(limit) = failure.rate_limit.as_mut() {
        limit.window = quota_window(&message);
        limit.resets_at = retry_delay(&message);
    }
    let fault = failure.fault.or_else(|| classify_text(&fault_text));
    let ended = AgentEvent::new(EventKind::SessionEnded, value)
        .with_text(Some(message))
        .with_fault(fault.filter(|_| failure.kind == EventKind::Error))
        .with_error(true);
    vec![failure, ended]
}

/// `daily` for Gemini's "You have exhausted your daily quota on this model."
fn quota_window(message: &str) -> Option<String> {
    message.to_ascii_lowercase().contains("daily quota").then(|| "daily".to_owned())
}

/// When the provider said to retry ("Please retry in 31.5s", "Suggested retry after 60s.").
fn retry_delay(message: &str) -> Option<Timestamp> {
    let lower = message.to_ascii_lowercase();
    let at = ["retry in ", "retry after "].iter().find_map(|lead| {
        let start = lower.find(lead)? + lead.len();
        Some(&lower[start..])
    })?;
    let number: String = at.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let value: f64 = number.parse().ok()?;
    let unit = &at[number.len()..];
    let seconds = if unit.starts_with("ms") { value / 1000.0 } else { value };
    let delay = SignedDuration::try_from_secs_f64(seconds.ceil()).ok()?;
    Timestamp::now().checked_add(delay).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lines: &[&str]) -> Vec<AgentEvent> {
        let mut parser = GeminiParser::default();
        lines.iter().flat_map(|line| parser.parse_line(line)).collect()
    }

    #[test]
    fn a_shell_call_is_named_in_its_result() {
        let events = parse(&[
            r#"{"type":"init","timestamp":"t","session_id":"s-1","model":"gemini-2.5-flash"}"#,
            r#"{"type":"message","timestamp":"t","role":"user","content":"prompt"}"#,
            r#"{"type":"message","timestamp":"t","role":"assistant","content":"Closing.","delta":true}"#,
            r#"{"type":"tool_use","timestamp":"t","tool_name":"run_shell_command","tool_id":"c1","parameters":{"command":"bd close x"}}"#,
            r#"{"type":"tool_result","timestamp":"t","tool_id":"c1","status":"success","output":"Closed x"}"#,
            r#"{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":9,"input_tokens":5}}"#,
        ]);
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::SessionStarted,
                EventKind::AssistantText,
                EventKind::ToolUse,
                EventKind::ToolResult,
                EventKind::SessionEnded
            ]
        );
        assert_eq!(events[0].model.as_deref(), Some("gemini-2.5-flash"));
        assert!(events.iter().all(|e| e.session_id.as_deref() == Some("s-1")));
        assert_eq!(events[2].text.as_deref(), Some("bd close x"));
        assert_eq!(events[3].tool_name.as_deref(), Some("run_shell_command"));
        assert_eq!(events[3].text.as_deref(), Some("Closed x"));
        assert!(events.iter().all(|e| e.usage.is_none()), "session sums are no context size");
        assert!(!events[4].is_error);
    }

    #[test]
    fn the_daily_quota_is_a_rejected_rate_limit() {
        let events = parse(&[
            r#"{"type":"result","status":"error","error":{"type":"TerminalQuotaError","message":"You have exhausted your daily quota on this model."},"stats":{}}"#,
        ]);
        assert!(events[0].is_rate_limit_rejection(), "{events:?}");
        let limit = events[0].rate_limit.as_ref().unwrap();
        assert_eq!(limit.window.as_deref(), Some("daily"));
        assert_eq!(events[0].http_status, Some(429));
        assert_eq!(events[1].kind, EventKind::SessionEnded);
        assert_eq!(events[1].fault, None);
        let retry = parse(&[
            r#"{"type":"result","status":"error","error":{"type":"RetryableQuotaError","message":"Resource exhausted. Please retry in 31.5s."}}"#,
        ]);
        let limit = retry[0].rate_limit.as_ref().unwrap();
        assert!(limit.resets_at.is_some_and(|at| at > Timestamp::now()));
    }

    #[test]
    fn auth_and_outage_results_are_faults() {
        let auth = parse(&[
            r#"{"type":"result","status":"error","error":{"type":"FatalAuthenticationError","message":"Invalid auth method selected."}}"#,
        ]);
        assert_eq!(auth[0].fault, Some(Fault::Auth));
        assert_eq!(auth[1].fault, Some(Fault::Auth));
        let down = parse(&[
            r#"{"type":"result","status":"error","error":{"type":"Error","message":"[API Error: exception TypeError: fetch failed sending request]"}}"#,
        ]);
        assert_eq!(down[0].fault, Some(Fault::Outage));
    }

    #[test]
    fn exit_codes_are_statuses_cut_to_a_byte() {
        assert_eq!(exit_meaning(173), Some(ExitMeaning::RateLimit));
        assert_eq!(exit_meaning(41), Some(ExitMeaning::Fault(Fault::Auth)));
        assert_eq!(exit_meaning(247), Some(ExitMeaning::Fault(Fault::Outage)));
        assert_eq!(exit_meaning(1), None);
        assert_eq!(exit_meaning(0), None);
    }

    #[test]
    fn warnings_are_output_and_errors_are_not_faults() {
        let events = parse(&[
            r#"{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}"#,
            r#"{"type":"error","severity":"error","message":"Maximum session turns exceeded"}"#,
        ]);
        assert_eq!(events[0].kind, EventKind::Output);
        assert_eq!(events[1].kind, EventKind::Error);
        assert!(events.iter().all(|e| e.fault.is_none()));
    }
}
