//! Why an agent failed, in words the supervisor can act on and show.
//!
//! Every coder CLI words its failures differently, and some of them are not the task's fault:
//! a CLI that is not logged in, or a provider that is down, fails every task the same way. This
//! module holds the one list of wordings that tell those apart, used by every parser (on the
//! final error events of a stream) and by the supervisor (on a failed agent's stderr):
//!
//! - [`classify_text`] / [`classify_failure`]: [`Fault::Auth`], [`Fault::Outage`] or
//!   [`Fault::Contention`] (a CLI's local database busy with another agent) from an
//!   error message (and its HTTP status, when known), or `None` when the failure may well be
//!   the task's own. A rate limit (HTTP 429, "usage limit", …) is never a fault: it has its own
//!   path ([`RateLimit`](super::RateLimit)).
//! - [`failure_reason`]: the last meaningful lines of a stderr tail, for a comment or a log
//!   line, without the CLIs' start-up noise and colour codes.
//! - [`strip_ansi`]: removes terminal escape sequences (opencode colours its output even with
//!   `NO_COLOR`).
//!
//! The lists match the real CLIs' messages: Claude Code (`Not logged in · Please run /login`,
//! `Invalid API key · Please run /login`, `API Error: 401 {…authentication_error…}`,
//! `API Error: 529 {…overloaded_error…}`, `API Error: Connection error.`, `Request timed out`),
//! codex (`exceeded retry limit, last status: 401 Unauthorized`, ``Missing environment
//! variable: `OPENAI_API_KEY`.``, `stream disconnected before completion: …`, `We’re currently
//! experiencing high demand, …` for a 5xx), opencode (`ProviderAuthError`, `APIError` with a
//! `statusCode`, `fetch failed`, `ECONNREFUSED`).

use std::borrow::Cow;

use serde_json::Value;

use super::{AgentEvent, EventKind, Fault, RateLimit};

/// At most this many lines in a [`failure_reason`].
pub const MAX_REASON_LINES: usize = 5;
/// At most this many characters in a [`failure_reason`] (its end is kept).
pub const MAX_REASON_CHARS: usize = 600;

/// HTTP statuses that mean the credentials were refused.
const AUTH_STATUSES: [u16; 2] = [401, 403];
/// HTTP statuses that mean the provider is failing (529 is Anthropic's "overloaded").
const OUTAGE_STATUSES: [u16; 5] = [500, 502, 503, 504, 529];

/// Lower-case wordings of a rate or usage limit: not a fault, the rate-limit path handles them.
const RATE_LIMIT_WORDS: [&str; 6] =
    ["rate limit", "rate_limit", "ratelimit", "too many requests", "usage limit", "quota"];

/// Lower-case wordings of missing, expired or refused credentials.
const AUTH_WORDS: [&str; 20] = [
    "not logged in",
    "please run /login",
    "invalid api key",
    "incorrect api key",
    "invalid_api_key",
    "invalid x-api-key",
    "api key is missing",
    "authentication_error",
    "authentication_failed",
    "authentication failed",
    "permission_error",
    "unauthorized",
    "providerautherror",
    "oauth token has expired",
    "token has expired",
    "could not be refreshed",
    "log in again",
    "login again",
    "sign in again",
    "codex login",
];

/// Lower-case wordings of a CLI's local database busy with another agent (opencode's SQLite:
/// `database is locked`, or a migration racing another process, `Failed query: CREATE TABLE
/// workspace …`).
const CONTENTION_WORDS: [&str; 3] =
    ["database is locked", "failed query: create table", "sqlite_busy"];

/// Lower-case wordings of a provider that is down, overloaded or unreachable.
const OUTAGE_WORDS: [&str; 19] = [
    "overloaded",
    "internal server error",
    "service unavailable",
    "bad gateway",
    "gateway timeout",
    "experiencing high demand",
    "connection refused",
    "econnrefused",
    "connection reset",
    "econnreset",
    "connection error",
    "fetch failed",
    "socket hang up",
    "stream disconnected before completion",
    "error sending request",
    "request timed out",
    "enotfound",
    "name does not resolve",
    "failed to connect",
];

/// Reason phrases that name the HTTP status they follow (`503 Service Unavailable`).
const REASON_PHRASES: [&str; 8] = [
    " Too Many Requests",
    " Internal Server Error",
    " Service Unavailable",
    " Bad Gateway",
    " Gateway Timeout",
    " Unauthorized",
    " Forbidden",
    " Overloaded",
];

/// Words that, just before a number, say it is an HTTP status (`status: 429`, `API Error: 529`).
const STATUS_LEADS: [&str; 4] = ["status:", "status", "status code", "api error:"];

/// The fault an error message shows, if any: the auth and outage wordings above applied to
/// free text (a stderr line, an error message), with any HTTP status the text names.
pub fn classify_text(text: &str) -> Option<Fault> {
    classify_failure(None, text)
}

/// The fault of a failure that reported `http_status` (when the CLI gave one) and `message`.
/// A 429 or a rate-limit wording is never a fault; then 401/403 → auth and 500/502/503/504/529
/// → outage; then the wordings decide, auth first.
pub fn classify_failure(http_status: Option<u16>, message: &str) -> Option<Fault> {
    let message = strip_ansi(message);
    let status = http_status.or_else(|| http_status_in(&message));
    if status == Some(429) || is_rate_limit_text(&message) {
        return None;
    }
    match status {
        Some(code) if AUTH_STATUSES.contains(&code) => return Some(Fault::Auth),
        Some(code) if OUTAGE_STATUSES.contains(&code) => return Some(Fault::Outage),
        _ => {}
    }
    let lower = message.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|word| lower.contains(word));
    if has(&CONTENTION_WORDS) {
        Some(Fault::Contention)
    } else if has(&AUTH_WORDS) || names_a_missing_key(&lower) {
        Some(Fault::Auth)
    } else if has(&OUTAGE_WORDS) {
        Some(Fault::Outage)
    } else {
        None
    }
}

/// codex's ``Missing environment variable: `OPENAI_API_KEY`.``: the provider's key is not set.
fn names_a_missing_key(lower: &str) -> bool {
    lower.contains("missing environment variable")
        && (lower.contains("key") || lower.contains("token"))
}

/// Lower-case wordings of a prompt that no longer fits the model's context window.
const OVERFLOW_WORDS: [&str; 5] = [
    "ran out of room in the model's context window",
    "context_length_exceeded",
    "context window exceeded",
    "maximum context length",
    "prompt is too long",
];

/// Whether an error message says the prompt no longer fits the context window (codex's `Codex
/// ran out of room in the model's context window`, OpenAI's `context_length_exceeded`,
/// Anthropic's `prompt is too long`): the context-overflow path, not a fault.
pub fn is_context_overflow_text(message: &str) -> bool {
    let lower = message.to_lowercase();
    OVERFLOW_WORDS.iter().any(|word| lower.contains(word))
}

/// The event for a CLI's final failure message (after its own retries): a rejected
/// [`EventKind::RateLimit`] when it shows a 429 or a rate, usage or quota limit, a
/// [`EventKind::ContextOverflow`] when the prompt no longer fits, else an [`EventKind::Error`]
/// with the [`Fault`] that `fault_text` (the message, possibly with the error's name) and the
/// status show. `status` is the HTTP status the CLI stated, else the one the message mentions.
pub(crate) fn failure_event(
    message: &str,
    fault_text: &str,
    status: Option<u16>,
    raw: Value,
) -> AgentEvent {
    let status = status.or_else(|| http_status_in(message));
    let event = if status == Some(429) || is_rate_limit_text(message) {
        AgentEvent::new(EventKind::RateLimit, raw).with_rate_limit(Some(RateLimit {
            http_status: status.or(Some(429)),
            ..RateLimit::http_429()
        }))
    } else if is_context_overflow_text(message) {
        AgentEvent::new(EventKind::ContextOverflow, raw)
    } else {
        AgentEvent::new(EventKind::Error, raw).with_fault(classify_failure(status, fault_text))
    };
    event.with_text(Some(message.to_owned())).with_http_status(status).with_error(true)
}

/// The event for a line of a CLI's stderr saying it will retry a request the provider
/// refused or failed: an [`EventKind::ApiRetry`] with a rejected [`RateLimit`] for a 429 or a
/// rate, usage or quota limit, or with [`Fault::Outage`] for a 5xx, an overloaded or
/// unreachable provider. `None` for any other line (a retry of something else included).
///
/// The CLIs that retry without a word on their stream say so on stderr — Gemini CLI's
/// `Attempt 1 failed: You exceeded your current quota … Retrying after 5258ms...` and
/// `Attempt 1 failed with status 500. Retrying with backoff...`, opencode's retry notices —
/// and the supervisor acts on the line at once instead of taking the silence for a stall.
pub fn retry_line_event(line: &str) -> Option<AgentEvent> {
    let lower = strip_ansi(line).to_lowercase();
    if !says_it_retries(lower.trim_start()) {
        return None;
    }
    trouble_event(line)
}

/// The [`EventKind::ApiRetry`] event of a failure message the CLI retries: a rejected
/// [`RateLimit`] for a 429 or a rate, usage or quota limit, [`Fault::Outage`] for a 5xx or an
/// overloaded or unreachable provider, `None` for anything else.
pub fn trouble_event(message: &str) -> Option<AgentEvent> {
    let clean = strip_ansi(message);
    let lower = clean.to_lowercase();
    let status = http_status_in(&clean);
    let raw = serde_json::json!({ "stderr": clean.trim() });
    let event = if status == Some(429) || is_rate_limit_text(&clean) {
        AgentEvent::new(EventKind::ApiRetry, raw)
            .with_rate_limit(Some(RateLimit { http_status: Some(429), ..RateLimit::http_429() }))
    } else if status.is_some_and(|code| OUTAGE_STATUSES.contains(&code))
        || OUTAGE_WORDS.iter().any(|word| lower.contains(word))
    {
        AgentEvent::new(EventKind::ApiRetry, raw).with_fault(Some(Fault::Outage))
    } else {
        return None;
    };
    Some(event.with_text(Some(clean.trim().to_owned())).with_http_status(status))
}

/// Lower-case wordings of a CLI about to try a failed request again.
const RETRY_WORDS: [&str; 3] = ["retrying", "retry in", "will retry"];

/// Whether a lower-case stderr line says a request failed and will be tried again: a retry
/// wording, or Gemini CLI's `attempt N failed…`, whose reason comes on that line and whose
/// `Retrying after …ms` may follow on the next.
fn says_it_retries(lower: &str) -> bool {
    let gemini_attempt = lower.strip_prefix("attempt ").is_some_and(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(" failed")
    });
    gemini_attempt || RETRY_WORDS.iter().any(|word| lower.contains(word))
}

/// Whether an error message describes a rate or usage limit (HTTP 429, "rate limit", "Too Many
/// Requests", "usage limit", an exhausted quota).
pub fn is_rate_limit_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    http_status_in(message) == Some(429) || RATE_LIMIT_WORDS.iter().any(|w| lower.contains(w))
}

/// The HTTP status an error message mentions: a standalone 4xx or 5xx number that follows
/// "status" or "API Error:", or is followed by its reason phrase ("429 Too Many Requests").
pub fn http_status_in(message: &str) -> Option<u16> {
    let bytes = message.as_bytes();
    let mut i = 0;
    while i + 3 <= bytes.len() {
        let standalone = bytes[i..i + 3].iter().all(u8::is_ascii_digit)
            && (i == 0 || !bytes[i - 1].is_ascii_digit())
            && bytes.get(i + 3).is_none_or(|b| !b.is_ascii_digit());
        if !standalone {
            i += 1;
            continue;
        }
        // Three ASCII digits: both ends are char boundaries.
        let code: u16 = message[i..i + 3].parse().unwrap_or(0);
        let before = message[..i].trim_end().to_ascii_lowercase();
        let after = &message[i + 3..];
        let named = STATUS_LEADS.iter().any(|lead| before.ends_with(lead))
            || REASON_PHRASES.iter().any(|phrase| after.starts_with(phrase));
        if (400..600).contains(&code) && named {
            return Some(code);
        }
        i += 3;
    }
    None
}

/// The last meaningful lines of a failed agent's stderr: at most [`MAX_REASON_LINES`] lines and
/// [`MAX_REASON_CHARS`] characters (the end is kept, so the final error survives), colour codes
/// removed, a line redrawn with `\r` reduced to its last drawing, repeated lines kept once.
///
/// Noise, dropped:
/// - blank lines;
/// - Node and npm start-up warnings: `(node:123) Warning: …`, `ExperimentalWarning`,
///   `DeprecationWarning` and `[DEP0…]` notices, ``(Use `node --trace-warnings …`)``,
///   `npm WARN …`, `npm notice …`;
/// - JavaScript stack frames (`at fn (file.js:1:2)`) and Rust's ``note: run with
///   `RUST_BACKTRACE=1` `` hint, which push the message itself out of the tail;
/// - progress spinners: lines that start with a spinner glyph (`⠋`, `◐`, …) or are nothing
///   but spinner characters and dots;
/// - Gemini CLI's start-up notices (`YOLO mode is enabled…`, `Ripgrep is not available…`,
///   `Warning: 256-color support not detected…`, `Loaded cached credentials.`);
/// - codex's fixed start-up lines: `Reading additional input from stdin...` and `WARNING:
///   proceeding, even though we could not create PATH aliases…`.
///
/// Everything else — error messages, `Reconnecting…`, exit explanations — is kept.
pub fn failure_reason(stderr_tail: &str) -> String {
    let clean = strip_ansi(stderr_tail);
    let mut lines: Vec<&str> = Vec::new();
    for line in clean.lines().map(last_drawing).map(str::trim) {
        if !is_noise(line) && lines.last() != Some(&line) {
            lines.push(line);
        }
    }
    let kept = &lines[lines.len().saturating_sub(MAX_REASON_LINES)..];
    keep_end(&kept.join("\n"), MAX_REASON_CHARS)
}

/// Line prefixes (lower case) of start-up noise.
const NOISE_PREFIXES: [&str; 12] = [
    "(node:",
    "warning: 256-color support not detected",
    "yolo mode is enabled",
    "ripgrep is not available",
    "loaded cached credentials",
    "data collection is disabled",
    "(use `node --trace-",
    "npm warn",
    "npm notice",
    "note: run with `rust_backtrace",
    "reading additional input from stdin",
    "warning: proceeding, even though we could not create path aliases",
];

/// Line fragments (lower case) of start-up noise.
const NOISE_FRAGMENTS: [&str; 3] = ["experimentalwarning", "deprecationwarning", "[dep0"];

/// Whether a trimmed, colourless stderr line is noise (see [`failure_reason`]).
fn is_noise(line: &str) -> bool {
    if line.is_empty() || is_spinner(line) || is_stack_frame(line) {
        return true;
    }
    let lower = line.to_lowercase();
    NOISE_PREFIXES.iter().any(|prefix| lower.starts_with(prefix))
        || NOISE_FRAGMENTS.iter().any(|fragment| lower.contains(fragment))
}

/// A spinner frame: a leading spinner glyph, or only spinner characters and dots.
fn is_spinner(line: &str) -> bool {
    let glyph = |c: char| ('\u{2800}'..='\u{28ff}').contains(&c) || "◐◓◑◒◴◷◶◵".contains(c);
    line.starts_with(glyph) || line.chars().all(|c| glyph(c) || "|/-\\.…· ".contains(c))
}

/// A JavaScript stack frame (`at Foo.bar (file.js:10:5)`, `at async file:///x.mjs:3:1`).
fn is_stack_frame(line: &str) -> bool {
    line.starts_with("at ")
        && (line.ends_with(')')
            || [".js:", ".mjs:", ".cjs:", ".ts:", "node:"].iter().any(|m| line.contains(m)))
}

/// What a line shows once its `\r` redraws are done: its last non-blank segment.
fn last_drawing(line: &str) -> &str {
    line.rsplit('\r').find(|segment| !segment.trim().is_empty()).unwrap_or("")
}

/// `text` cut to its last `max` characters, marked with a leading `…` when cut.
fn keep_end(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let skip = count - (max - 1);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(at, _)| at);
    format!("…{}", &text[start..])
}

/// Whether `text` holds an ESC or the 8-bit CSI (U+009B): [`strip_ansi`] changes exactly
/// such texts.
pub fn holds_terminal_escape(text: &str) -> bool {
    // A byte test first: U+009B is the bytes C2 9B, so a text without an ESC or a 9B byte
    // has neither (the test of every line an agent prints).
    memchr::memchr2(0x1b, 0x9b, text.as_bytes()).is_some() && text.contains(['\u{1b}', '\u{9b}'])
}

/// `text` without terminal escape sequences: CSI (`ESC [ … m`, colours and cursor moves, also
/// the 8-bit `0x9B` form), OSC and other string sequences (`ESC ] … BEL` or `ESC \`, hyperlinks
/// and titles), and two-character escapes. Borrowed when there is nothing to remove.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !holds_terminal_escape(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\u{9b}' => skip_csi(&mut chars),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// Skips what follows an ESC.
fn skip_escape(chars: &mut Chars) {
    match chars.peek().copied() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            chars.next();
            skip_string(chars);
        }
        Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
            // `ESC ( B` and the like: intermediates, then one final character.
            while chars.next_if(|c| ('\u{20}'..='\u{2f}').contains(c)).is_some() {}
            chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
        }
        Some(c) if ('\u{30}'..='\u{7e}').contains(&c) => {
            chars.next();
        }
        _ => {}
    }
}

/// Skips a CSI's parameters and intermediates, and its final character. Stops early, keeping the
/// character, at anything a CSI cannot contain (a malformed sequence never eats text).
fn skip_csi(chars: &mut Chars) {
    while chars.next_if(|c| ('\u{20}'..='\u{3f}').contains(c)).is_some() {}
    chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
}

/// Skips an OSC/DCS/… string up to and including its terminator (BEL, `ESC \` or ST).
fn skip_string(chars: &mut Chars) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_start_up_notices_are_not_a_failure_reason() {
        let tail = "Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.\n\
                    YOLO mode is enabled. All tool calls will be automatically approved.\n\
                    Ripgrep is not available. Falling back to GrepTool.\n\
                    Error: the model refused";
        assert_eq!(failure_reason(tail), "Error: the model refused");
    }

    #[test]
    fn gemini_and_opencode_retry_lines_are_rate_limits_or_outages() {
        let quota = retry_line_event(
            "Attempt 1 failed: You exceeded your current quota, please check your plan and billing details.",
        )
        .expect("a retry line");
        assert_eq!(quota.kind, EventKind::ApiRetry);
        assert!(quota.rate_limit.is_some() && quota.fault.is_none());
        let outage = retry_line_event(
            "Attempt 2 failed with status 500. Retrying with backoff... _ApiError: {\"error\":{\"code\":500}}",
        )
        .expect("a retry line");
        assert_eq!((outage.fault, outage.http_status), (Some(Fault::Outage), Some(500)));
        assert!(outage.rate_limit.is_none());
        for quiet in [
            "Suggested retry after 5s.. Retrying after 5485ms...",
            "Ripgrep is not available. Falling back to GrepTool.",
            "YOLO mode is enabled. All tool calls will be automatically approved.",
            "Attempted to read a file that does not exist",
        ] {
            assert!(retry_line_event(quiet).is_none(), "{quiet}");
        }
    }

    #[test]
    fn finds_http_statuses_in_messages() {
        assert_eq!(
            http_status_in("exceeded retry limit, last status: 429 Too Many Requests"),
            Some(429)
        );
        assert_eq!(http_status_in("unexpected status 503 Service Unavailable: busy"), Some(503));
        assert_eq!(http_status_in("500 Internal Server Error"), Some(500));
        assert_eq!(http_status_in("API Error: 529 {\"type\":\"error\"}"), Some(529));
        assert_eq!(http_status_in("unexpected status 401 Unauthorized: Invalid"), Some(401));
        assert_eq!(http_status_in("item 4290 of 429"), None);
        assert_eq!(http_status_in("wrote 500 lines"), None);
        assert_eq!(http_status_in("We’re currently experiencing high demand"), None);
        assert_eq!(http_status_in("é429 Too Many Requests"), Some(429));
    }

    #[test]
    fn recognises_rate_limit_messages() {
        assert!(is_rate_limit_text("exceeded retry limit, last status: 429 Too Many Requests"));
        assert!(is_rate_limit_text("You've hit your usage limit. Try again at 3:04 PM."));
        assert!(!is_rate_limit_text(
            "We’re currently experiencing high demand, which may cause temporary errors."
        ));
        assert!(is_context_overflow_text(
            "Codex ran out of room in the model's context window. Start a new thread."
        ));
        assert!(!is_context_overflow_text("Overloaded"));
    }

    #[test]
    fn auth_failures_of_every_cli() {
        for text in [
            "Not logged in · Please run /login",
            "Invalid API key · Please run /login",
            "Invalid API key · Fix external API key",
            r#"API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            r#"API Error: 403 {"type":"error","error":{"type":"permission_error","message":"no"}}"#,
            "OAuth token has expired. Please obtain a new token or refresh your existing token.",
            "exceeded retry limit, last status: 401 Unauthorized, request id: 9a4af587",
            "unexpected status 401 Unauthorized: Invalid API key, url: http://localhost/v1/responses",
            "Missing environment variable: `OPENAI_API_KEY`.",
            "Your access token could not be refreshed because your refresh token has expired. Please log out and sign in again.",
            "ProviderAuthError: Anthropic API key is missing. Pass it using the 'apiKey' parameter",
        ] {
            assert_eq!(classify_text(text), Some(Fault::Auth), "{text}");
        }
        assert_eq!(classify_failure(Some(403), "Forbidden"), Some(Fault::Auth));
    }

    #[test]
    fn outages_of_every_cli() {
        for text in [
            r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "API Error: 500 Internal server error (mockllm). This is a server-side issue",
            "API Error: Connection error.",
            "Request timed out",
            "We’re currently experiencing high demand, which may cause temporary errors.",
            "stream disconnected before completion: error decoding response body",
            "unexpected status 503 Service Unavailable: upstream connect error",
            "error sending request for url (https://api.openai.com/v1/responses)",
            "TypeError: fetch failed",
            "connect ECONNREFUSED 127.0.0.1:11435",
        ] {
            assert_eq!(classify_text(text), Some(Fault::Outage), "{text}");
        }
        assert_eq!(classify_failure(Some(502), "boom"), Some(Fault::Outage));
    }

    #[test]
    fn a_busy_local_database_is_contention() {
        for text in [
            "Error: database is locked",
            "Failed query: CREATE TABLE `workspace` (\n\t`id` text PRIMARY KEY\n)\nparams: ",
            "SQLiteError: SQLITE_BUSY: database is locked",
        ] {
            assert_eq!(classify_text(text), Some(Fault::Contention), "{text}");
        }
    }

    #[test]
    fn rate_limits_and_task_failures_are_not_faults() {
        for text in [
            "exceeded retry limit, last status: 429 Too Many Requests",
            "API Error: Request rejected (429) · rate limit",
            "You've hit your usage limit. Try again at 3:04 PM.",
            "Prompt is too long · the request is ~210000 tokens",
            "error: build failed",
            "",
        ] {
            assert_eq!(classify_text(text), None, "{text}");
        }
        assert_eq!(classify_failure(Some(429), "Overloaded"), None, "429 is the rate-limit path");
        assert_eq!(classify_failure(Some(400), "invalid_request_error"), None);
    }

    #[test]
    fn strips_colours_cursor_moves_and_links() {
        assert!(matches!(strip_ansi("plain"), Cow::Borrowed("plain")));
        assert_eq!(strip_ansi("\u{1b}[1;31mError:\u{1b}[0m boom"), "Error: boom");
        assert_eq!(strip_ansi("\u{1b}[2K\u{1b}[1Gdone"), "done");
        assert_eq!(strip_ansi("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\!"), "link!");
        assert_eq!(strip_ansi("\u{1b}(Bok\u{1b}7"), "ok");
        assert_eq!(strip_ansi("\u{9b}32mgreen"), "green");
        // `Û` is the bytes C3 9B: a 9B byte that is no CSI leaves the text as it is.
        assert!(matches!(strip_ansi("Ûber"), Cow::Borrowed("Ûber")));
        assert_eq!(strip_ansi("Û\u{9b}1mÛ"), "ÛÛ");
        // Malformed or cut sequences never panic and never eat the text after them.
        assert_eq!(strip_ansi("a\u{1b}[\nb"), "a\nb");
        assert_eq!(strip_ansi("end\u{1b}"), "end");
        assert_eq!(strip_ansi("\u{1b}]unterminated"), "");
    }

    #[test]
    fn failure_reason_keeps_the_error_and_drops_noise() {
        let stderr = "\n(node:4242) ExperimentalWarning: The Fetch API is an experimental feature.\n\
            (Use `node --trace-warnings ...` to show where the warning was created)\n\
            npm WARN deprecated inflight@1.0.6: This module is not supported\n\
            Reading additional input from stdin...\n\
            ⠋ Connecting\r⠙ Connecting\r\u{1b}[31mError: connect ECONNREFUSED 127.0.0.1:11435\u{1b}[0m\n\
            \x20   at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n\
            \x20   at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n\
            \n";
        assert_eq!(failure_reason(stderr), "Error: connect ECONNREFUSED 127.0.0.1:11435");
        assert_eq!(failure_reason(""), "");
        assert_eq!(failure_reason("⠹\n...\n  \n"), "");
    }

    #[test]
    fn failure_reason_is_bounded_and_keeps_the_end() {
        let many: String = (1..=9).map(|n| format!("line {n}\n")).collect();
        assert_eq!(failure_reason(&many), "line 5\nline 6\nline 7\nline 8\nline 9");
        assert_eq!(failure_reason("same\nsame\nsame\nlast"), "same\nlast");
        let long = format!("{}THE END", "é".repeat(2000));
        let reason = failure_reason(&long);
        assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
        assert!(reason.starts_with('…') && reason.ends_with("THE END"));
    }
}
