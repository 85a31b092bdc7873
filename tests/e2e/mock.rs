//! A scripted model API on 127.0.0.1: just enough of the Anthropic Messages API and of the
//! OpenAI Responses API, served over hand-written HTTP/1.1 with SSE streaming, for the real
//! CLIs to run a task against.
//!
//! A [`Script`] (one of `scenarios/*.json`) says what the "model" answers. Its replies are
//! laid out by *session* (one CLI run; the CLI's own session id tells them apart) and *turn*
//! (how many tool results the request already carries): `sessions[s][t]`. A session or turn
//! past the end of its list gets the last entry, so `[[{"status": 429}]]` answers 429 forever.
//! A reply is text and/or one shell tool call with a prompt size to report, an HTTP error, or
//! a stall (the request is read and never answered).
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
}

/// What the mock answers: `sessions[session][turn]`, the last entry standing for the rest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// What the scenario is for (documentation only).
    #[allow(dead_code)]
    pub about: String,
    pub sessions: Vec<Vec<Reply>>,
}

/// One answer of the "model".
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Reply {
    /// Assistant text.
    pub text: Option<String>,
    /// A shell command the model asks to run (Claude's `Bash`, Codex's `exec_command`).
    pub bash: Option<String>,
    /// The prompt size reported in the usage (Anthropic: `message_start.usage.input_tokens`).
    pub input_tokens: Option<u64>,
    /// Answer with this HTTP error status instead.
    pub status: Option<u16>,
    /// `retry-after` seconds sent with an error status.
    pub retry_after: Option<u64>,
    /// Read the request and never answer.
    pub stall: bool,
}

impl Script {
    /// Parses a scenario file's text.
    pub fn parse(text: &str) -> Script {
        let script: Script = serde_json::from_str(text).expect("a valid scenario file");
        assert!(
            !script.sessions.is_empty() && script.sessions.iter().all(|s| !s.is_empty()),
            "a scenario needs at least one reply per session"
        );
        script
    }

    fn reply(&self, session: usize, turn: usize) -> &Reply {
        let replies = &self.sessions[session.min(self.sessions.len() - 1)];
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
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
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

    /// The model API requests (`POST …/messages` or `…/responses`) received so far.
    pub fn model_requests(&self) -> Vec<Request> {
        let suffix = match self.shared.api {
            Api::Anthropic => "/v1/messages",
            Api::Responses => "/v1/responses",
        };
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.split('?').next() == Some(suffix))
            .collect()
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
    let endpoint = match shared.api {
        Api::Anthropic => "/v1/messages",
        Api::Responses => "/v1/responses",
    };
    let is_model_request = raw.method == "POST" && raw.path.split('?').next() == Some(endpoint);
    let (session_key, turn) = locate(shared.api, &raw, &body);
    // Only model requests open sessions (Claude Code also sends a `HEAD /` probe).
    let session = if !is_model_request {
        0
    } else {
        let mut sessions = shared.sessions.lock().unwrap();
        match sessions.iter().position(|key| *key == session_key) {
            Some(index) => index,
            None => {
                sessions.push(session_key);
                sessions.len() - 1
            }
        }
    };
    let request =
        Request { method: raw.method, path: raw.path, headers: raw.headers, body, session, turn };
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
    if !is_model_request {
        let body =
            json!({"type": "error", "error": {"type": "not_found_error", "message": "not mocked"}});
        return write_json(&mut out, 404, "Not Found", &[], &body);
    }
    let reply = shared.script.reply(session, turn).clone();
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
        let body = error_body(shared.api, status);
        return write_json(&mut out, status, reason(status), &headers, &body);
    }
    let events = match shared.api {
        Api::Anthropic => anthropic_stream(&reply, &request),
        Api::Responses => responses_stream(&reply, &request),
    };
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         request-id: req_mock_{session}_{turn}\r\nconnection: close\r\n\r\n"
    )?;
    for (name, data) in events {
        write!(out, "event: {name}\ndata: {data}\n\n")?;
        out.flush()?;
    }
    Ok(())
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

/// The session key and turn of a request.
///
/// Claude Code puts its session id in `metadata.user_id` (itself a JSON string); a turn is a
/// `tool_result` block in the messages. Codex sends a `session-id` header; a turn is a
/// `function_call_output` input item.
fn locate(api: Api, raw: &RawRequest, body: &Value) -> (String, usize) {
    let header = |name: &str| raw.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    match api {
        Api::Anthropic => {
            let session = body["metadata"]["user_id"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .and_then(|meta| meta["session_id"].as_str().map(str::to_owned))
                .or_else(|| header("x-claude-code-session-id"))
                .unwrap_or_default();
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
                .or_else(|| body["prompt_cache_key"].as_str().map(str::to_owned))
                .unwrap_or_default();
            let turn = body["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|item| item["type"] == "function_call_output")
                .count();
            (session, turn)
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
        Api::Responses => json!({"error": {"type": kind, "message": message, "code": kind}}),
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
/// and/or a `Bash` `tool_use` block, `message_delta` (stop reason), `message_stop`.
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
    if let Some(command) = &reply.bash {
        let input = json!({"command": command, "description": "Run the command"});
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": format!("toolu_mock_{id}"),
                                     "name": "Bash", "input": {}}}),
        ));
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ));
        events.push(("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    }
    let stop_reason = if reply.bash.is_some() { "tool_use" } else { "end_turn" };
    events.push((
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 20}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

/// The Responses API SSE events of one reply: `response.created`, an assistant message and/or
/// a shell `function_call` (as whichever shell tool the request advertises), and
/// `response.completed` with the usage.
fn responses_stream(reply: &Reply, request: &Request) -> Vec<(&'static str, Value)> {
    let id = format!("{}_{}", request.session, request.turn);
    let response_id = format!("resp_mock_{id}");
    let mut events = vec![(
        "response.created",
        json!({"type": "response.created", "response": {"id": response_id}}),
    )];
    let mut index = 0;
    if let Some(text) = &reply.text {
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index,
                   "item": {"type": "message", "role": "assistant", "id": format!("msg_mock_{id}"),
                            "content": [{"type": "output_text", "text": text}]}}),
        ));
        index += 1;
    }
    if let Some(command) = &reply.bash {
        let tools: Vec<&str> = request.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .collect();
        let (name, arguments) = if tools.contains(&"exec_command") || tools.is_empty() {
            ("exec_command", json!({"cmd": command}))
        } else if tools.contains(&"shell_command") {
            ("shell_command", json!({"command": command}))
        } else {
            ("shell", json!({"command": ["bash", "-c", command]}))
        };
        events.push((
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": index,
                   "item": {"type": "function_call", "id": format!("fc_mock_{id}"),
                            "call_id": format!("call_mock_{id}"), "name": name,
                            "arguments": arguments.to_string()}}),
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
