//! `fleet mcp`: the queue as a Model Context Protocol server on stdin/stdout, for coding-agent
//! CLIs (Claude Code, Codex, Gemini CLI, opencode) that speak MCP rather than run `bd`.
//!
//! The protocol is JSON-RPC 2.0, one message a line: `initialize` (answered with the client's
//! protocol version when it is one of [`PROTOCOL_VERSIONS`], else the newest),
//! `notifications/initialized` and other notifications (no answer), `ping`, `tools/list` and
//! `tools/call`. A malformed line, an unknown method or an unknown tool is a JSON-RPC error; a
//! tool that fails (bad arguments, a refusal of the queue) is a result with `isError: true`
//! and the reason as text, which the model reads.
//!
//! Each tool is a fleet command line: the server runs this binary with `--json` and the
//! command's arguments, in its own environment (so the workspace and, inside a `fleet run`
//! attempt, `FLEET_TASK_ID` are the agent's; there the actor is the agent's `$BD_ACTOR`, by
//! which the supervisor knows the agent's own writes), and returns the command's compact
//! JSON. So a tool is exactly its command: the same request through the same route
//! ([`super::context::Context::submit`]), the same refusals (a claim of another task inside a
//! run, see [`crate::tracker::stay_on_task`]), the same auto-export; nothing of the command
//! is written twice, and the server holds no store open between calls. A call costs one
//! process start (a few milliseconds), nothing next to a model's turn.
//!
//! `ask_human` is the agent protocol's question (see `supervisor::prompt`): a `## Q:` block
//! in the task's `Q&A.md` and the task blocked with `QUESTION: …` notes, which `fleet
//! questions` lists and `fleet answer` answers.
//!
//! Descriptions are kept short on purpose: the tool list is sent to the model every session
//! (README.md gives its token count).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::error::CliError;

/// The protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

#[derive(Debug, clap::Args)]
pub struct McpArgs {}

/// The type of a tool's argument, as its JSON Schema says.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Int,
    Bool,
    /// An array of strings.
    List,
}

/// A tool: its name, description, arguments (name, kind, description — empty when the name
/// says it all) and the required ones.
struct Tool {
    name: &'static str,
    description: &'static str,
    args: &'static [(&'static str, Kind, &'static str)],
    required: &'static [&'static str],
}

use Kind::{Bool, Int, List, Str};

const TOOLS: [Tool; 13] = [
    Tool {
        name: "ready",
        description: "Open issues with no open blockers, in work order.",
        args: &[("limit", Int, "")],
        required: &[],
    },
    Tool {
        name: "show",
        description: "An issue in full: fields, deps, dependents, comments.",
        args: &[("id", Str, "")],
        required: &["id"],
    },
    Tool {
        name: "create",
        description: "Create an issue.",
        args: &[
            ("title", Str, ""),
            ("description", Str, ""),
            ("priority", Int, "0 (highest) to 4; default 2"),
            ("type", Str, "task, bug, feature, epic, chore"),
            ("deps", List, "ids it depends on, or type:id"),
            ("parent", Str, ""),
            ("labels", List, ""),
        ],
        required: &["title"],
    },
    Tool {
        name: "update",
        description: "Change an issue's fields; claim takes it (in_progress, yours).",
        args: &[
            ("id", Str, ""),
            ("status", Str, "open, in_progress, blocked, deferred, closed"),
            ("title", Str, ""),
            ("description", Str, ""),
            ("notes", Str, ""),
            ("priority", Int, ""),
            ("assignee", Str, ""),
            ("claim", Bool, ""),
        ],
        required: &["id"],
    },
    Tool {
        name: "comment",
        description: "Add a comment to an issue.",
        args: &[("id", Str, ""), ("text", Str, "")],
        required: &["id", "text"],
    },
    Tool {
        name: "close",
        description: "Close an issue.",
        args: &[("id", Str, ""), ("reason", Str, "")],
        required: &["id"],
    },
    Tool {
        name: "dep_add",
        description: "issue depends on depends_on (blocks by default).",
        args: &[("issue", Str, ""), ("depends_on", Str, ""), ("type", Str, "")],
        required: &["issue", "depends_on"],
    },
    Tool {
        name: "mail_send",
        description: "Message a task's agent (task id) or a person (name).",
        args: &[("to", Str, ""), ("body", Str, ""), ("about", Str, "task id")],
        required: &["to", "body"],
    },
    Tool {
        name: "mail_inbox",
        description: "Your unacknowledged messages, oldest first.",
        args: &[("all", Bool, "acknowledged too")],
        required: &[],
    },
    Tool {
        name: "mail_ack",
        description: "Acknowledge messages once read.",
        args: &[("ids", List, "")],
        required: &["ids"],
    },
    Tool {
        name: "reserve",
        description: "Reserve files for your task (advisory; exclusive blocks others' commits).",
        args: &[
            ("globs", List, "relative to the repo top"),
            ("reason", Str, ""),
            ("exclusive", Bool, ""),
            ("ttl", Str, "e.g. 30m, 1h"),
        ],
        required: &["globs", "reason"],
    },
    Tool {
        name: "release_files",
        description: "End your task's reservations (all, or the ids given).",
        args: &[("ids", List, "")],
        required: &[],
    },
    Tool {
        name: "ask_human",
        description: "Ask a person and block your task. Then exit 0 without closing it; the \
                      answer is in Q&A.md on your next run.",
        args: &[
            ("question", Str, "one line"),
            ("details", Str, "what you tried, what you need"),
            ("id", Str, "task (default: yours)"),
        ],
        required: &["question"],
    },
];

/// The `tools/list` result.
pub fn tools_list() -> Value {
    let tools: Vec<Value> = TOOLS.iter().map(tool_json).collect();
    json!({ "tools": tools })
}

fn tool_json(tool: &Tool) -> Value {
    let properties: Map<String, Value> = tool
        .args
        .iter()
        .map(|(name, kind, description)| {
            let mut schema = match kind {
                Str => json!({ "type": "string" }),
                Int => json!({ "type": "integer" }),
                Bool => json!({ "type": "boolean" }),
                List => json!({ "type": "array", "items": { "type": "string" } }),
            };
            if !description.is_empty() {
                schema["description"] = json!(description);
            }
            ((*name).to_string(), schema)
        })
        .collect();
    json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": { "type": "object", "properties": properties, "required": tool.required },
    })
}

pub fn cmd_mcp(_args: McpArgs) -> Result<(), CliError> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lines() {
        let line = line.map_err(|e| CliError::new(format!("reading stdin: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = handle_line(&line) {
            let sent = writeln!(stdout, "{reply}").and_then(|()| stdout.flush());
            if sent.is_err() {
                // The client went away: nothing is left to serve.
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The answer to one line of input, or none for a notification.
fn handle_line(line: &str) -> Option<Value> {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(e) => return Some(error(Value::Null, -32700, &format!("parse error: {e}"))),
    };
    if !message.is_object() {
        return Some(error(Value::Null, -32600, "invalid request: one JSON object a line"));
    }
    let id = message.get("id").cloned();
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        // A response to us (we send no requests) or garbage: answer only what has an id.
        return id.map(|id| error(id, -32600, "invalid request: no method"));
    };
    let id = id?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    tracing::debug!(method, "mcp request");
    Some(match method {
        "initialize" => result(id, initialize(&params)),
        "ping" => result(id, json!({})),
        "tools/list" => result(id, tools_list()),
        "tools/call" => match call(&params) {
            Ok(outcome) => result(id, outcome),
            Err(message) => error(id, -32602, &message),
        },
        other => error(id, -32601, &format!("method not found: {other}")),
    })
}

fn result(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": {} },
        "serverInfo": { "name": "fleet", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// A `tools/call`: the tool's result, failures included (`isError`), or a JSON-RPC error for
/// a call naming no known tool.
fn call(params: &Value) -> Result<Value, String> {
    let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs a name")?;
    let tool =
        TOOLS.iter().find(|t| t.name == name).ok_or_else(|| format!("unknown tool: {name}"))?;
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return Ok(tool_result(Err(format!("{name}: arguments must be an object")))),
    };
    Ok(tool_result(check(tool, args).and_then(|()| run_tool(tool, args))))
}

fn tool_result(outcome: Result<String, String>) -> Value {
    let (text, failed) = match outcome {
        Ok(text) => (text, false),
        Err(text) => (text, true),
    };
    json!({ "content": [{ "type": "text", "text": text }], "isError": failed })
}

/// Unknown and missing arguments, and values of the wrong type, named.
fn check(tool: &Tool, args: &Map<String, Value>) -> Result<(), String> {
    let known = || tool.args.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ");
    for (key, value) in args {
        let Some((_, kind, _)) = tool.args.iter().find(|(n, _, _)| n == key) else {
            return Err(format!("{}: unknown argument {key:?} (known: {})", tool.name, known()));
        };
        let fits = match kind {
            Str => value.is_string(),
            Int => value.is_i64() || value.as_str().is_some_and(|s| s.parse::<i64>().is_ok()),
            Bool => value.is_boolean(),
            List => value.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        };
        if !fits && !value.is_null() {
            let wanted = match kind {
                Str => "a string",
                Int => "an integer",
                Bool => "true or false",
                List => "an array of strings",
            };
            return Err(format!("{}: {key} must be {wanted}, not {value}", tool.name));
        }
    }
    match tool.required.iter().find(|r| args.get(**r).is_none_or(is_blank)) {
        Some(missing) => Err(format!("{}: {missing} is required", tool.name)),
        None => Ok(()),
    }
}

fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The fleet command line a call runs: options as `--flag=value` (a value starting with `-`
/// stays a value), then `--` and the positional arguments.
struct Argv<'a> {
    args: &'a Map<String, Value>,
    options: Vec<String>,
    positionals: Vec<String>,
}

impl<'a> Argv<'a> {
    fn new(args: &'a Map<String, Value>, words: &[&str]) -> Argv<'a> {
        Argv {
            args,
            options: words.iter().map(|w| (*w).to_string()).collect(),
            positionals: vec![],
        }
    }

    /// The argument as text (strings as they are, integers printed), if given.
    fn text(&self, key: &str) -> Option<String> {
        match self.args.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    fn strings(&self, key: &str) -> Vec<String> {
        let values = self.args.get(key).and_then(Value::as_array);
        values.into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
    }

    fn opt(mut self, key: &str, flag: &str) -> Self {
        if let Some(value) = self.text(key) {
            self.options.push(format!("--{flag}={value}"));
        }
        self
    }

    fn opts(mut self, key: &str, flag: &str) -> Self {
        for value in self.strings(key) {
            self.options.push(format!("--{flag}={value}"));
        }
        self
    }

    fn switch(mut self, key: &str, flag: &str) -> Self {
        if self.args.get(key).and_then(Value::as_bool) == Some(true) {
            self.options.push(format!("--{flag}"));
        }
        self
    }

    fn pos(mut self, key: &str) -> Self {
        self.positionals.extend(self.text(key));
        self
    }

    fn pos_list(mut self, key: &str) -> Self {
        let values = self.strings(key);
        self.positionals.extend(values);
        self
    }

    fn finish(mut self) -> Vec<String> {
        if !self.positionals.is_empty() {
            self.options.push("--".into());
            self.options.append(&mut self.positionals);
        }
        self.options
    }
}

/// The command line of a queue tool (every tool but `ask_human`).
fn argv(tool: &Tool, args: &Map<String, Value>) -> Vec<String> {
    let a = |words: &[&str]| Argv::new(args, words);
    match tool.name {
        "ready" => a(&["ready"]).opt("limit", "limit"),
        "show" => a(&["show"]).pos("id"),
        "create" => a(&["create"])
            .opt("title", "title")
            .opt("description", "description")
            .opt("priority", "priority")
            .opt("type", "type")
            .opts("deps", "deps")
            .opt("parent", "parent")
            .opts("labels", "labels"),
        "update" => a(&["update"])
            .opt("status", "status")
            .opt("title", "title")
            .opt("description", "description")
            .opt("notes", "notes")
            .opt("priority", "priority")
            .opt("assignee", "assignee")
            .switch("claim", "claim")
            .pos("id"),
        "comment" => a(&["comment"]).pos("id").pos("text"),
        "close" => a(&["close"]).opt("reason", "reason").pos("id"),
        "dep_add" => a(&["dep", "add"]).opt("type", "type").pos("issue").pos("depends_on"),
        "mail_send" => a(&["mail", "send"]).opt("about", "about").pos("to").pos("body"),
        "mail_inbox" => a(&["mail", "inbox"]).switch("all", "all"),
        "mail_ack" => a(&["mail", "ack"]).pos_list("ids"),
        "reserve" => a(&["reserve"])
            .opt("reason", "reason")
            .switch("exclusive", "exclusive")
            .opt("ttl", "ttl")
            .pos_list("globs"),
        _ => a(&["release-files"]).pos_list("ids"),
    }
    .finish()
}

fn run_tool(tool: &Tool, args: &Map<String, Value>) -> Result<String, String> {
    if tool.name == "ask_human" {
        return ask_human(args);
    }
    run_fleet(&argv(tool, args))
}

/// Runs this binary as `fleet --json ARGV` and returns its stdout, or its error.
fn run_fleet(argv: &[String]) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the fleet binary: {e}"))?;
    let mut command = std::process::Command::new(&exe);
    command.arg("--json");
    if let Some(actor) = super::context::run_agent_actor() {
        command.arg(format!("--actor={actor}"));
    }
    let output = command
        .args(argv)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("running {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if output.status.success() {
        return Ok(if stdout.is_empty() { "{}".into() } else { stdout });
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err(match error_text(&stderr) {
        Some(text) => text,
        None if stderr.is_empty() => format!("fleet {} failed", argv.join(" ")),
        None => stderr,
    })
}

/// A `--json` error (`{"error": …, "hints": […]}`) as the text a person would read: the
/// message, then each hint on a line of its own.
fn error_text(stderr: &str) -> Option<String> {
    let error: Value = serde_json::from_str(stderr.lines().last()?).ok()?;
    let mut lines = vec![error.get("error")?.as_str()?.to_string()];
    let hints = error.get("hints").and_then(Value::as_array).into_iter().flatten();
    lines.extend(hints.filter_map(Value::as_str).map(|hint| format!("hint: {hint}")));
    Some(lines.join("\n"))
}

/// `ask_human`: the question as a `## Q:` block in the task's `Q&A.md`, then the task
/// blocked with `QUESTION: …` notes through `fleet update`.
fn ask_human(args: &Map<String, Value>) -> Result<String, String> {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::trim).unwrap_or_default();
    let question = text("question").replace('\n', " ");
    let task = match text("id") {
        "" => crate::env::attempt_task().ok_or(
            "ask_human: which task? Outside a fleet run, pass its id (inside one it is yours)",
        )?,
        id => id.to_string(),
    };
    let qa = qa_file(&task).map_err(|e| format!("ask_human: {}", e.message))?;
    super::qa::append_question(&qa, &question, text("details")).map_err(|e| e.message)?;
    let notes = format!("--notes=QUESTION: {question}");
    run_fleet(&["update".into(), "--status=blocked".into(), notes, "--".into(), task.clone()])?;
    Ok(json!({
        "id": task,
        "status": "blocked",
        "qa_file": qa,
        "next": "Exit 0 now without closing the task. A person answers with `fleet answer`; \
                 the answer arrives in Q&A.md (an `## A:` block) on your next run.",
    })
    .to_string())
}

/// The task's `Q&A.md`: in the attempt's artifact directory inside a run, else where `fleet
/// answer` writes it.
fn qa_file(task: &str) -> Result<PathBuf, CliError> {
    match crate::env::artifact_dir() {
        Some(dir) if crate::env::attempt_task().as_deref() == Some(task) => {
            Ok(dir.join(super::task::QA_FILE))
        }
        _ => super::qa::qa_file(task),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn tool(name: &str) -> &'static Tool {
        TOOLS.iter().find(|t| t.name == name).expect("a tool")
    }

    #[test]
    fn values_stay_values_and_positionals_follow_a_double_dash() {
        let call =
            args(json!({ "title": "-x starts with a dash", "priority": 1, "deps": ["a", "b"] }));
        assert_eq!(
            argv(tool("create"), &call),
            ["create", "--title=-x starts with a dash", "--priority=1", "--deps=a", "--deps=b"]
        );
        let call = args(json!({ "id": "t-1", "claim": true }));
        assert_eq!(argv(tool("update"), &call), ["update", "--claim", "--", "t-1"]);
    }

    #[test]
    fn bad_arguments_are_named() {
        let unknown = check(tool("close"), &args(json!({ "id": "t-1", "why": "x" })));
        assert_eq!(unknown.unwrap_err(), "close: unknown argument \"why\" (known: id, reason)");
        let typed = check(tool("reserve"), &args(json!({ "globs": "src/**", "reason": "r" })));
        assert_eq!(
            typed.unwrap_err(),
            "reserve: globs must be an array of strings, not \"src/**\""
        );
        let missing = check(tool("comment"), &args(json!({ "id": "t-1", "text": " " })));
        assert_eq!(missing.unwrap_err(), "comment: text is required");
    }

    #[test]
    fn every_tool_has_a_command_line() {
        let lines: Vec<String> = TOOLS
            .iter()
            .filter(|t| t.name != "ask_human")
            .map(|t| argv(t, &Map::new())[0].clone())
            .collect();
        assert_eq!(lines.iter().filter(|l| *l == "release-files").count(), 1, "{lines:?}");
    }
}
