//! The `agy` coder: the Antigravity CLI in print mode. (Google's Gemini CLI is a different
//! program, the [`gemini`](super::gemini) coder.)
//!
//! Command line: `agy -p <prompt> <permission args>`, with `--dangerously-skip-permissions`
//! by default. The model is not passed: agy reads it from its own settings, and fleet keeps
//! the model only for the context limit and the records.
//!
//! agy prints plain text, or JSON lines in a claude-like or gemini-like shape depending on
//! version and flags, so the parser takes what it recognises and keeps everything else as
//! text: `init`/`system:init` → session started, `assistant`/`message` → assistant text (with
//! `message.usage`, one message's own usage, as the context size), `tool_use`/`tool_result`,
//! `error` (with its [`fault`](AgentEvent::fault)), `result` → session ended (with the fault of
//! a failed one), any other JSON object → assistant text, a non-JSON line → output.

use serde_json::Value;

use super::diagnose::classify_text;
use super::event::json;
use super::{
    AgentEvent, BuiltinSettings, Coder, EventKind, EventParser, SpawnSpec, TaskSpec, merge_env,
};

/// The flags that let agy run tools unattended.
pub const DEFAULT_PERMISSION_ARGS: [&str; 1] = ["--dangerously-skip-permissions"];
/// The context window assumed for agy models unless the config says otherwise.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 128_000;

/// Antigravity CLI (`agy`).
#[derive(Debug, Clone, Default)]
pub struct AgyCoder {
    settings: BuiltinSettings,
}

impl AgyCoder {
    pub fn new(settings: BuiltinSettings) -> AgyCoder {
        AgyCoder { settings }
    }
}

impl Coder for AgyCoder {
    fn name(&self) -> &str {
        "agy"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        let known = super::models::context_window(model).unwrap_or(DEFAULT_CONTEXT_LIMIT);
        self.settings.limits.resolve(model, Some(known))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let mut args = vec!["-p".to_owned(), task.prompt.to_owned()];
        args.extend(self.settings.permission_args_or(&DEFAULT_PERMISSION_ARGS));
        SpawnSpec {
            program: self.settings.program_or("agy"),
            args,
            env: merge_env(&[], &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(AgyParser)
    }
}

/// Parses agy's stdout: JSON lines when it prints them, plain text otherwise.
#[derive(Debug, Default)]
pub struct AgyParser;

impl EventParser for AgyParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        let Some(value) = json::object(line) else {
            return if line.trim().is_empty() {
                Vec::new()
            } else {
                vec![AgentEvent::output(line)]
            };
        };
        let session = json::string_at(&value, "session_id");
        let kind = json::str_at(&value, "type").unwrap_or("");
        let event = match kind {
            "init" => AgentEvent::new(EventKind::SessionStarted, value),
            "system" if json::str_at(&value, "subtype") == Some("init") => {
                AgentEvent::new(EventKind::SessionStarted, value)
            }
            "tool_use" => {
                let tool = json::string_at(&value, "name")
                    .or_else(|| json::string_at(&value, "tool_name"));
                AgentEvent::new(EventKind::ToolUse, value).with_tool(tool)
            }
            "tool_result" => {
                let tool = json::string_at(&value, "name")
                    .or_else(|| json::string_at(&value, "tool_name"));
                let failed = json::bool_at(&value, "is_error")
                    || json::str_at(&value, "status") == Some("error");
                let text = value
                    .get("output")
                    .or_else(|| value.get("content"))
                    .and_then(json::content_text);
                AgentEvent::new(EventKind::ToolResult, value)
                    .with_tool(tool)
                    .with_text(text)
                    .with_error(failed)
            }
            "error" => {
                let text = json::string_at(&value, "message")
                    .or_else(|| value.get("error").and_then(|e| json::string_at(e, "message")));
                let fault = text.as_deref().and_then(classify_text);
                AgentEvent::new(EventKind::Error, value)
                    .with_text(text)
                    .with_fault(fault)
                    .with_error(true)
            }
            "result" => {
                let failed = json::bool_at(&value, "is_error")
                    || json::str_at(&value, "status") == Some("error");
                let text = json::string_at(&value, "result");
                let fault = text.as_deref().filter(|_| failed).and_then(classify_text);
                AgentEvent::new(EventKind::SessionEnded, value)
                    .with_text(text)
                    .with_fault(fault)
                    .with_error(failed)
            }
            _ => {
                // assistant / message / anything else: text, with the message's usage.
                let message = value.get("message").cloned().unwrap_or(Value::Null);
                let text = message
                    .get("content")
                    .and_then(json::content_text)
                    .or_else(|| value.get("content").and_then(json::content_text))
                    .or_else(|| json::string_at(&value, "text"));
                let usage =
                    message.get("usage").filter(|u| u.is_object()).map(json::anthropic_usage);
                AgentEvent::new(EventKind::AssistantText, value).with_text(text).with_usage(usage)
            }
        };
        vec![event.with_session(session)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_output_and_json_is_understood() {
        let mut parser = AgyParser;
        assert_eq!(parser.parse_line("Thinking about it")[0].kind, EventKind::Output);
        assert!(parser.parse_line("").is_empty());
        let events = parser.parse_line(r#"{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5000}}}"#);
        assert_eq!(events[0].kind, EventKind::AssistantText);
        assert_eq!(events[0].text.as_deref(), Some("hi"));
        assert_eq!(events[0].usage.unwrap().prompt_tokens(), 5000);
        let events = parser.parse_line(r#"{"type":"tool_use","tool_name":"run_shell_command"}"#);
        assert_eq!(events[0].tool_name.as_deref(), Some("run_shell_command"));
    }
}
