//! A scripted model API on 127.0.0.1: just enough of the Anthropic Messages API, the OpenAI
//! Responses API, Google's Gemini API (`generateContent` / `streamGenerateContent`) and the
//! OpenAI Chat Completions API (opencode's `@ai-sdk/openai-compatible` provider), served over
//! hand-written HTTP/1.1 with SSE streaming, for the real CLIs to run a task against.
//!
//! A [`Script`] (one of `scenarios/*.json`) says what the "model" answers. Its replies are
//! laid out by *session* (one CLI run; the CLI's own session id tells them apart) and *turn*
//! (how many tool results the request already carries): `sessions[s][t]`. A session or turn
//! past the end of its list gets the last entry, so `[[{"status": 429}]]` answers 429 forever.
//! `by_key` gives the requests of one API key replies of their own (laid out the same way), so
//! one account can be rate limited while another is served.
//! A reply is text and/or one tool call (the shell, or another tool by name — an MCP server's
//! tool by the name the CLI gives it) with a prompt size to report, an HTTP error, or a stall
//! (the request is read and never answered).
//!
//! Every request is recorded ([`MockApi::requests`]) so tests can check what reached the
//! "model": the model name, the API key, the prompt, the tool output fed back.
//!
//! Plumbing: one thread accepts, one thread per connection; each connection carries one
//! request and is closed after the reply (`connection: close`, the SSE body ends at EOF),
//! which both CLIs accept. Only `std::net` is used: the crate's tokio is built without its
//! `net` feature, and enabling it would change Cargo.lock for a test-only need.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

/// Which API the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/messages` (Claude Code).
    Anthropic,
    /// `POST /v1/responses` (Codex, custom provider with `wire_api = "responses"`).
    Responses,
    /// `POST /v1beta/models/MODEL:streamGenerateContent` (Gemini CLI with
    /// `GOOGLE_GEMINI_BASE_URL`). Its side requests — `:generateContent` for routing and
    /// next-speaker checks, `:countTokens` — are answered but are not model requests.
    Gemini,
    /// `POST /v1/chat/completions` (opencode with an OpenAI-compatible provider).
    Chat,
}

impl Api {
    /// Whether `path` (query included) is this API's model request.
    fn is_model_path(self, path: &str) -> bool {
        let path = path.split('?').next().unwrap_or_default();
        match self {
            Api::Anthropic => path == "/v1/messages",
            Api::Responses => path == "/v1/responses",
            Api::Gemini => path.ends_with(":streamGenerateContent"),
            Api::Chat => path == "/v1/chat/completions",
        }
    }
}

/// What the mock answers: `sessions[session][turn]`, the last entry standing for the rest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// What the scenario is for (documentation only).
    #[allow(dead_code)]
    pub about: String,
    pub sessions: Vec<Vec<Reply>>,
    /// Replies for the requests that carry one of these API keys (`x-api-key`, or a bearer
    /// token) instead of `sessions`.
    #[serde(default)]
    pub by_key: std::collections::BTreeMap<String, Vec<Vec<Reply>>>,
}

/// One answer of the "model".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reply {
    /// Assistant text.
    pub text: Option<String>,
    /// A shell command the model asks to run (Claude's `Bash`, Codex's `exec_command`).
    pub bash: Option<String>,
    /// Another tool the model calls, with its input.
    pub tool: Option<ToolCall>,
    /// The prompt size reported in the usage (Anthropic: `message_start.usage.input_tokens`).
    pub input_tokens: Option<u64>,
    /// Answer with this HTTP error status instead.
    pub status: Option<u16>,
    /// `retry-after` seconds sent with an error status.
    pub retry_after: Option<u64>,
    /// The JSON body sent with an error status, instead of the API's usual one (Gemini's
    /// `details` with a `QuotaFailure` or a `RetryInfo`).
    pub error_body: Option<Value>,
    /// Read the request and never answer.
    pub stall: bool,
}

/// A tool call of a [`Reply`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool's name as the CLI declares it, or `<server>/<tool>` for a tool of an MCP
    /// server: the model calls it by the name the request gives it
    /// ([`Request::mcp_tool`]), as a real model reads it there (Claude Code
    /// `mcp__fleet__ask_human`, Gemini CLI `mcp_fleet_ask_human`, opencode
    /// `fleet_ask_human`), or by `<server>/<tool>` itself when the request has no such tool
    /// (which the CLI then refuses).
    pub name: String,
    pub input: Value,
}

impl Reply {
    /// The tool call of this reply in answer to `request`, if any: its shell command as `shell`
    /// calls it, or its other tool.
    fn call(
        &self,
        request: &Request,
        shell: impl FnOnce(&str) -> (String, Value),
    ) -> Option<(String, Value)> {
        match (&self.bash, &self.tool) {
            (Some(command), _) => Some(shell(command)),
            (None, Some(tool)) => Some(tool.in_answer_to(request)),
            (None, None) => None,
        }
    }
}

impl ToolCall {
    /// What to search for before this call, when it is an MCP server's tool that `request`
    /// does not offer yet but could load through a client-side `tool_search` tool.
    fn search_first(&self, request: &Request) -> Option<String> {
        let (server, tool) = self.name.split_once('/')?;
        let searchable = request.body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["type"] == "tool_search"));
        (searchable && request.mcp_tool(server, tool).is_none()).then(|| format!("{server} {tool}"))
    }

    /// The name and input of this call in answer to `request`.
    fn in_answer_to(&self, request: &Request) -> (String, Value) {
        let declared =
            self.name.split_once('/').and_then(|(server, tool)| request.mcp_tool(server, tool));
        (declared.unwrap_or_else(|| self.name.clone()), self.input.clone())
    }
}

/// The name of a declared tool: `name`, or Chat's `function.name`.
fn tool_name(tool: &Value) -> Option<&str> {
    tool["name"].as_str().or(tool["function"]["name"].as_str())
}

/// Whether `name` is how a CLI names `tool` of MCP server `server`: the tool's name after the
/// server's and separators (`mcp__fleet__ask_human`, `mcp_fleet_ask_human`,
/// `fleet_ask_human`).
fn names_mcp_tool(name: &str, server: &str, tool: &str) -> bool {
    name.replace('/', "__")
        .strip_suffix(tool)
        .and_then(|head| head.strip_suffix('_'))
        .is_some_and(|head| head.trim_end_matches('_').ends_with(server))
}

impl Script {
    /// Parses a scenario file's text.
    pub fn parse(text: &str) -> Script {
        let script: Script = serde_json::from_str(text).expect("a valid scenario file");
        let all = std::iter::once(&script.sessions).chain(script.by_key.values());
        assert!(
            all.clone()
                .all(|sessions| !sessions.is_empty() && sessions.iter().all(|s| !s.is_empty())),
            "a scenario needs at least one reply per session"
        );
        script
    }

    /// The reply to a request with API key `key` (if any) in `session` at `turn`.
    fn reply(&self, key: Option<&str>, session: usize, turn: usize) -> &Reply {
        let sessions = key.and_then(|key| self.by_key.get(key)).unwrap_or(&self.sessions);
        let replies = &sessions[session.min(sessions.len() - 1)];
        &replies[turn.min(replies.len() - 1)]
    }
}

/// A request the mock received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Null` if there was none or it was not JSON).
    pub body: Value,
    /// Which CLI session sent it (0 for the first one seen).
    pub session: usize,
    /// How many tool results the conversation already holds.
    pub turn: usize,
    /// Whether it is a model request of the conversation (not a side request such as
    /// opencode's title generation or Gemini CLI's routing check).
    pub model: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// The API key the request carries: `x-api-key`, else a bearer token.
    pub fn api_key(&self) -> Option<&str> {
        self.header("x-api-key")
            .or_else(|| self.header("authorization").and_then(|v| v.strip_prefix("Bearer ")))
    }

    /// The names of the tools the request offers the model, in any of the four APIs' shapes
    /// (`tools[].name`, Chat's `tools[].function.name`, Gemini's
    /// `tools[].functionDeclarations[].name`), and the tools of the namespaces that earlier
    /// client-side tool searches loaded (the Responses API's `tool_search_output` items of
    /// `input`), named `<namespace>/<tool>`.
    pub fn declared_tools(&self) -> Vec<String> {
        let tools = self.body["tools"].as_array().into_iter().flatten();
        let gemini = tools.clone().filter_map(|tool| tool["functionDeclarations"].as_array());
        let mut names: Vec<String> =
            tools.chain(gemini.flatten()).filter_map(tool_name).map(str::to_owned).collect();
        let loaded = self.body["input"].as_array().into_iter().flatten();
        let loaded = loaded.filter(|item| item["type"] == "tool_search_output");
        for namespace in loaded.filter_map(|item| item["tools"].as_array()).flatten() {
            let Some(prefix) = namespace["name"].as_str() else { continue };
            let tools = namespace["tools"].as_array().into_iter().flatten().filter_map(tool_name);
            names.extend(tools.map(|tool| format!("{prefix}/{tool}")));
        }
        names
    }

    /// The name under which the request offers the model `tool` of MCP server `server`: in
    /// its tool list, or else named in its text (Claude Code lists MCP tools as "deferred
    /// tools" for its `ToolSearch` in a system reminder, and takes a direct call of one).
    pub fn mcp_tool(&self, server: &str, tool: &str) -> Option<String> {
        let named = |name: &String| names_mcp_tool(name, server, tool);
        self.declared_tools().into_iter().find(named).or_else(|| {
            let text = self.all_text();
            text.split(|c: char| !(c.is_alphanumeric() || c == '_')).map(str::to_owned).find(named)
        })
    }

    /// Every piece of text in the request body (prompt, system, tool results), joined.
    pub fn all_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.body, &mut out);
        out
    }
}

fn collect_text(value: &Value, out: &mut String) {
    match value {
        Value::String(text) => {
            out.push_str(text);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|v| collect_text(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_text(v, out)),
        _ => {}
    }
}

/// State shared by the connection threads.
struct Shared {
    api: Api,
    script: Script,
    /// Session keys in order of first appearance.
    sessions: Mutex<Vec<String>>,
    requests: Mutex<Vec<Request>>,
    stopping: AtomicBool,
}

/// A running mock API; stops accepting when dropped.
pub struct MockApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockApi {
    /// Binds 127.0.0.1 on a free port and starts serving `script`.
    pub fn start(api: Api, script: Script) -> MockApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            api,
            script,
            sessions: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&accepting);
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        MockApi { addr, shared }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The model API requests (`POST …/messages`, `…/responses`, `…:streamGenerateContent`,
    /// `…/chat/completions`) received so far.
    pub fn model_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.model).collect()
    }

    /// One line per request, for failure messages.
    pub fn summary(&self) -> String {
        self.requests()
            .iter()
            .map(|r| format!("{} {} (session {}, turn {})", r.method, r.path, r.session, r.turn))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for MockApi {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// A request as read off the wire.
struct RawRequest {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let Some(raw) = read_request(&mut reader, shared)? else { return Ok(()) };
    let body: Value = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
    let on_model_path = raw.method == "POST" && shared.api.is_model_path(&raw.path);
    // opencode also asks its model for a session title, with no tools: a side request.
    let title_request =
        shared.api == Api::Chat && body["tools"].as_array().is_none_or(|tools| tools.is_empty());
    let is_model_request = on_model_path && !title_request;
    let (session_key, turn) = locate(shared.api, &raw, &body);
    // Only model requests open sessions (Claude Code also sends a `HEAD /` probe).
    let session = if is_model_request { session_index(shared, session_key, turn) } else { 0 };
    let request = Request {
        method: raw.method,
        path: raw.path,
        headers: raw.headers,
        body,
        session,
        turn,
        model: is_model_request,
    };
    shared.requests.lock().unwrap().push(request.clone());

    let mut out = stream;
    if request.method == "GET" && request.header("upgrade").is_some() {
        // A Responses WebSocket attempt: refuse it so the client falls back to HTTP at once.
        return write_json(&mut out, 426, "Upgrade Required", &[], &json!({"error": "no ws"}));
    }
    if request.method == "HEAD" {
        // Claude Code probes the base URL with `HEAD /` before its first request.
        out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")?;
        return out.flush();
    }
    if on_model_path && title_request {
        let reply = Reply { text: Some("Mock task title".to_owned()), ..Reply::default() };
        return write_stream(&mut out, shared.api, &reply, &request);
    }
    if !is_model_request {
        if let Some(body) = side_answer(shared.api, &request) {
            return write_json(&mut out, 200, "OK", &[], &body);
        }
        let body =
            json!({"type": "error", "error": {"type": "not_found_error", "message": "not mocked"}});
        return write_json(&mut out, 404, "Not Found", &[], &body);
    }
    let reply = shared.script.reply(request.api_key(), session, turn).clone();
    if reply.stall {
        // Hold the connection open, answering nothing, until the client gives up or the
        // mock stops.
        let mut sink = [0u8; 4096];
        loop {
            match reader.read(&mut sink) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    if shared.stopping.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                }
                Err(_) => return Ok(()),
            }
        }
    }
    if let Some(status) = reply.status {
        let retry_after = reply.retry_after.map(|s| s.to_string());
        let mut headers = Vec::new();
        if let Some(secs) = &retry_after {
            headers.push(("retry-after", secs.as_str()));
        }
        let body = reply.error_body.clone().unwrap_or_else(|| error_body(shared.api, status));
        return write_json(&mut out, status, reason(status), &headers, &body);
    }
    write_stream(&mut out, shared.api, &reply, &request)
}

/// Streams `reply` as `api`'s SSE events.
fn write_stream(out: &mut TcpStream, api: Api, reply: &Reply, request: &Request) -> io::Result<()> {
    let events = match api {
        Api::Anthropic => anthropic_stream(reply, request),
        Api::Responses => responses_stream(reply, request),
        Api::Gemini => gemini_stream(reply, request),
        Api::Chat => chat_stream(reply, request),
    };
    let (session, turn) = (request.session, request.turn);
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         request-id: req_mock_{session}_{turn}\r\nconnection: close\r\n\r\n"
    )?;
    for (name, data) in events {
        // Gemini's and Chat Completions' streams are bare `data:` lines.
        if !name.is_empty() {
            writeln!(out, "event: {name}")?;
        }
        write!(out, "data: {data}\n\n")?;
        out.flush()?;
    }
    if api == Api::Chat {
        write!(out, "data: [DONE]\n\n")?;
    }
    out.flush()
}

/// The index of the session a model request belongs to. A request with a session key joins
/// the session of that key (opening it when new). A request without one (Gemini CLI and
/// opencode name no session on the wire) opens a new session when it starts a conversation
/// (turn 0) and otherwise continues the latest one; a request retried at turn 0 therefore
/// counts as a new session, which the "last entry stands for the rest" rule absorbs.
fn session_index(shared: &Shared, key: Option<String>, turn: usize) -> usize {
    let mut sessions = shared.sessions.lock().unwrap();
    let key = match key {
        Some(key) => key,
        None if turn == 0 => format!("anonymous-{}", sessions.len()),
        None => return sessions.len().saturating_sub(1),
    };
    match sessions.iter().position(|known| *known == key) {
        Some(index) => index,
        None => {
            sessions.push(key);
            sessions.len() - 1
        }
    }
}

/// The answer to a request that is not a model request but that a CLI makes on the side:
/// Gemini CLI's `:countTokens` and its utility `:generateContent` calls (model routing,
/// next-speaker and loop checks, which all read a JSON object from the reply's text).
fn side_answer(api: Api, request: &Request) -> Option<Value> {
    let path = request.path.split('?').next().unwrap_or_default();
    if api != Api::Gemini || request.method != "POST" {
        return None;
    }
    if path.ends_with(":countTokens") {
        return Some(json!({"totalTokens": 1200}));
    }
    if !path.ends_with(":generateContent") {
        return None;
    }
    let verdict = json!({"reasoning": "mock", "next_speaker": "user", "model_choice": "flash",
                         "unproductive_state_confidence": 0.0, "unproductive_state_analysis": ""});
    Some(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": verdict.to_string()}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
                          "totalTokenCount": 110}
    }))
}

/// Reads one request: the request line, headers, and a `content-length` or chunked body.
/// `None` if the client closed the connection first.
fn read_request(
    reader: &mut BufReader<TcpStream>,
    shared: &Shared,
) -> io::Result<Option<RawRequest>> {
    let Some(request_line) = read_line(reader, shared)? else { return Ok(None) };
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut headers = Vec::new();
    loop {
        let Some(line) = read_line(reader, shared)? else { return Ok(None) };
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(length, 0);
        read_exact(reader, &mut body, shared)?;
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let Some(size_line) = read_line(reader, shared)? else { return Ok(None) };
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("0").trim(), 16)
                .unwrap_or(0);
            if size == 0 {
                // Trailers, then the blank line.
                while read_line(reader, shared)?.is_some_and(|l| !l.is_empty()) {}
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            read_exact(reader, &mut body[start..], shared)?;
            read_line(reader, shared)?;
        }
    }
    Ok(Some(RawRequest { method, path, headers, body }))
}

/// A line without its line ending, retrying read timeouts until the mock stops.
fn read_line(reader: &mut BufReader<TcpStream>, shared: &Shared) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    loop {
        match reader.read_until(b'\n', &mut line) {
            Ok(0) if line.is_empty() => return Ok(None),
            Ok(_) => break,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return Ok(None);
                }
            }
            Err(e) => return Err(e),
        }
    }
    let text = String::from_utf8_lossy(&line);
    Ok(Some(text.trim_end_matches(['\r', '\n']).to_owned()))
}

fn read_exact(
    reader: &mut BufReader<TcpStream>,
    mut buf: &mut [u8],
    shared: &Shared,
) -> io::Result<()> {
    while !buf.is_empty() {
        match reader.read(buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                if shared.stopping.load(Ordering::SeqCst) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The session key (if the request names one) and turn of a request.
///
/// Claude Code puts its session id in `metadata.user_id` (itself a JSON string); a turn is a
/// `tool_result` block in the messages. Codex sends a `session-id` header; a turn is a
/// `function_call_output` input item. Gemini CLI names no session; a turn is a
/// `functionResponse` part in the contents. opencode names none either; a turn is a `tool`
/// message.
fn locate(api: Api, raw: &RawRequest, body: &Value) -> (Option<String>, usize) {
    let header = |name: &str| raw.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    match api {
        Api::Anthropic => {
            let session = body["metadata"]["user_id"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|meta| meta["session_id"].as_str().map(str::to_owned))
                .or_else(|| header("x-claude-code-session-id"));
            let turn = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|block| block["type"] == "tool_result")
                .count();
            (session, turn)
        }
        Api::Responses => {
            let session = header("session-id")
                .or_else(|| header("thread-id"))
                .or_else(|| body["prompt_cache_key"].as_str().map(str::to_owned));
            let turn = body["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|item| item["type"] == "function_call_output")
                .count();
            (session, turn)
        }
        Api::Gemini => {
            let turn = body["contents"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["parts"].as_array())
                .flatten()
                .filter(|part| part.get("functionResponse").is_some())
                .count();
            (None, turn)
        }
        Api::Chat => {
            let turn = body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["role"] == "tool")
                .count();
            (None, turn)
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        404 => "Not Found",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        529 => "Overloaded",
        _ => "Error",
    }
}

fn error_body(api: Api, status: u16) -> Value {
    let (kind, message) = match status {
        429 => ("rate_limit_error", "Number of requests has exceeded your rate limit (mock)"),
        529 => ("overloaded_error", "Overloaded (mock)"),
        400 => ("invalid_request_error", "Invalid request (mock)"),
        _ => ("api_error", "Internal server error (mock)"),
    };
    match api {
        Api::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Api::Responses | Api::Chat => {
            json!({"error": {"type": kind, "message": message, "code": kind}})
        }
        Api::Gemini => {
            let status_name = match status {
                429 => "RESOURCE_EXHAUSTED",
                400 => "INVALID_ARGUMENT",
                503 => "UNAVAILABLE",
                _ => "INTERNAL",
            };
            json!({"error": {"code": status, "message": message, "status": status_name}})
        }
    }
}

fn write_json(
    out: &mut TcpStream,
    status: u16,
    reason: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> io::Result<()> {
    let body = body.to_string();
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

/// The Messages API SSE events of one reply: `message_start` (with the usage), a text block
/// and/or a `tool_use` block (`Bash`, or the reply's tool), `message_delta` (stop reason),
/// `message_stop`.
fn anthropic_stream(reply: &Reply, request: &Request) -> Vec<(&'static str, Value)> {
    let model = request.body["model"].as_str().unwrap_or("claude-sonnet-4-5");
    let id = format!("{}_{}", request.session, request.turn);
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{id}"), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": reply.input_tokens.unwrap_or(1200), "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    )];
    let mut index = 0;
    if let Some(text) = &reply.text {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "text", "text": ""}}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "text_delta", "text": text}}),
        ));
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let call = reply.call(request, |command| {
        ("Bash".to_owned(), json!({"command": command, "description": "Run the command"}))
    });
    if let Some((name, input)) = &call {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": format!("toolu_mock_{id}"),
                                     "name": name, "input": {}}}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ));
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    }
    let stop_reason = if call.is_some() { "tool_use" } else { "end_turn" };
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

/// The Responses API SSE events of one reply: `response.created`, its output items
/// ([`responses_items`]), and `response.completed` with the usage.
fn responses_stream(reply: &Reply, request: &Request) -> Vec<(&'static str, Value)> {
    let id = format!("{}_{}", request.session, request.turn);
    let response_id = format!("resp_mock_{id}");
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": response_id}}),
    )];
    for (index, item) in responses_items(reply, request, &id).into_iter().enumerate() {
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    let input_tokens = reply.input_tokens.unwrap_or(1200);
    events.push((
        "response.completed",
        json!({"type": "response.completed", "response": {"id": response_id, "usage": {
            "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + 20}}}),
    ));
    events
}

/// The output items of one reply: an assistant message and/or a `function_call` (the shell,
/// as whichever shell tool the request advertises, or the reply's tool). An MCP tool that
/// the request offers only behind its client-side `tool_search` (Codex defers MCP servers'
/// tools so) is searched for first: the reply is then that search alone, and the same reply
/// is given again once the search's output is in the conversation (a search is no turn).
fn responses_items(reply: &Reply, request: &Request, id: &str) -> Vec<Value> {
    if let Some(query) = reply.tool.as_ref().and_then(|tool| tool.search_first(request)) {
        return vec![json!({"type": "tool_search_call", "id": format!("ts_mock_{id}"),
                           "call_id": format!("call_search_mock_{id}"), "execution": "client",
                           "status": "completed", "arguments": {"query": query}})];
    }
    let mut items = Vec::new();
    if let Some(text) = &reply.text {
        items.push(json!({"type": "message", "role": "assistant", "id": format!("msg_mock_{id}"),
                          "content": [{"type": "output_text", "text": text}]}));
    }
    if let Some((name, arguments)) =
        reply.call(request, |command| responses_shell_call(command, request))
    {
        let mut call = json!({"type": "function_call", "id": format!("fc_mock_{id}"),
                              "call_id": format!("call_mock_{id}"), "name": name,
                              "arguments": arguments.to_string()});
        if let Some((namespace, name)) = name.split_once('/') {
            call["namespace"] = json!(namespace);
            call["name"] = json!(name);
        }
        items.push(call);
    }
    items
}

/// A Responses API call of `command` by whichever shell tool `request` advertises.
fn responses_shell_call(command: &str, request: &Request) -> (String, Value) {
    let tools = request.declared_tools();
    let offers = |name: &str| tools.iter().any(|t| t == name);
    let (name, arguments) = if offers("exec_command") || tools.is_empty() {
        ("exec_command", json!({"cmd": command}))
    } else if offers("shell_command") {
        ("shell_command", json!({"command": command}))
    } else {
        ("shell", json!({"command": ["bash", "-c", command]}))
    };
    (name.to_owned(), arguments)
}

/// The Gemini API SSE chunk of one reply: the text and/or a function call (`run_shell_command`,
/// or the reply's tool), with `usageMetadata.promptTokenCount` as the prompt size.
fn gemini_stream(reply: &Reply, request: &Request) -> Vec<(&'static str, Value)> {
    let model = request.path.split("/models/").nth(1).and_then(|rest| rest.split(':').next());
    let mut parts = Vec::new();
    if let Some(text) = &reply.text {
        parts.push(json!({"text": text}));
    }
    let call = reply.call(request, |command| {
        let args = json!({"command": command, "description": "Run the command"});
        ("run_shell_command".to_owned(), args)
    });
    if let Some((name, args)) = call {
        parts.push(json!({"functionCall": {"name": name, "args": args}}));
    }
    let prompt = reply.input_tokens.unwrap_or(1200);
    vec![(
        "",
        json!({
            "candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 20,
                              "totalTokenCount": prompt + 20},
            "modelVersion": model.unwrap_or("gemini-2.5-flash"),
            "responseId": format!("mock_{}_{}", request.session, request.turn),
        }),
    )]
}

/// The Chat Completions SSE chunks of one reply: a text delta and/or a tool call (`bash`,
/// opencode's shell tool, or the reply's tool), then the finish reason and the usage.
fn chat_stream(reply: &Reply, request: &Request) -> Vec<(&'static str, Value)> {
    let id = format!("chatcmpl_mock_{}_{}", request.session, request.turn);
    let model = request.body["model"].as_str().unwrap_or("mock-model").to_owned();
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![("", chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
    if let Some(text) = &reply.text {
        events.push(("", chunk(json!({"content": text}), Value::Null)));
    }
    let call = reply.call(request, |command| {
        ("bash".to_owned(), json!({"command": command, "description": "Run the command"}))
    });
    if let Some((name, arguments)) = &call {
        events.push((
            "",
            chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_{id}"), "type": "function",
                       "function": {"name": name, "arguments": arguments.to_string()}}]}),
                Value::Null,
            ),
        ));
    }
    let finish = if call.is_some() { "tool_calls" } else { "stop" };
    events.push(("", chunk(json!({}), json!(finish))));
    let prompt = reply.input_tokens.unwrap_or(1200);
    events.push((
        "",
        json!({"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [],
               "usage": {"prompt_tokens": prompt, "completion_tokens": 20,
                         "total_tokens": prompt + 20}}),
    ));
    events
}
