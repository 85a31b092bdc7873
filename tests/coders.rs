//! Coders against real CLI output: every captured stream in `tests/fixtures/claude-stream/`
//! (Claude Code 2.1.197) and `tests/fixtures/codex-stream/` (codex-cli 0.169.0) is parsed,
//! and the normalized events the supervisor depends on are asserted — sessions, tool calls,
//! per-message context size, retries, rate limits, errors, context overflow, stalls. Then the
//! command lines and environments of the built-ins, and coders defined in `runtime.toml`.
//!
//! Parsing is pure, so these tests call the library; the fixtures' READMEs describe each case.

use std::path::{Path, PathBuf};

use fleet::coders::diagnose::{classify_text, failure_reason};
use fleet::coders::{
    AgentEvent, EventKind, Fault, RateLimitStatus, Registry, SpawnSpec, TaskSpec, Usage,
};
use fleet::config::RuntimeConfig;

fn fixture_dir(format: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{format}-stream"))
}

/// Every event of one captured stream, through a fresh parser of the built-in `coder`.
fn parse_case(coder: &str, case: &str) -> Vec<AgentEvent> {
    let path = fixture_dir(coder).join(format!("{case}.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = Registry::builtin().get(coder).unwrap().parser();
    text.lines().flat_map(|line| parser.parse_line(line)).collect()
}

fn kinds(events: &[AgentEvent]) -> Vec<EventKind> {
    events.iter().map(|e| e.kind).collect()
}

fn count(events: &[AgentEvent], kind: EventKind) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

/// The context sizes the stream reported, in order.
fn context_sizes(events: &[AgentEvent]) -> Vec<u64> {
    events.iter().filter_map(|e| e.usage).map(|u: Usage| u.prompt_tokens()).collect()
}

fn cases(format: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir(format))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".jsonl").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

// --- every fixture ----------------------------------------------------------------------

#[test]
fn every_captured_stream_starts_a_session_and_round_trips_as_json() {
    for (coder, expected_cases) in [("claude", 18), ("codex", 9)] {
        let cases = cases(coder);
        assert_eq!(cases.len(), expected_cases, "{coder} fixtures: {cases:?}");
        for case in cases {
            let events = parse_case(coder, &case);
            assert_eq!(
                events.first().map(|e| e.kind),
                Some(EventKind::SessionStarted),
                "{coder}/{case}"
            );
            assert!(events[0].session_id.is_some(), "{coder}/{case}: session id");
            assert_eq!(count(&events, EventKind::Output), 0, "{coder}/{case}: every line is JSON");
            for event in &events {
                let line = serde_json::to_string(event).unwrap();
                let back: AgentEvent = serde_json::from_str(&line).unwrap();
                assert_eq!(&back, event, "{coder}/{case}: {line}");
                assert_eq!(back.session_id, events[0].session_id, "{coder}/{case}: one session");
            }
        }
    }
}

// --- claude -------------------------------------------------------------------------------

#[test]
fn claude_hello_is_start_text_end_and_names_the_real_model() {
    for case in ["hello", "hello_partial"] {
        let events = parse_case("claude", case);
        assert_eq!(
            kinds(&events),
            [EventKind::SessionStarted, EventKind::AssistantText, EventKind::SessionEnded],
            "{case}: partial-message deltas are dropped"
        );
        assert_eq!(events[1].text.as_deref(), Some("Hello from mockllm! hi"));
        assert!(!events[2].is_error);
        // The CLI chose a 1M-window model; the supervisor can size the limit from it.
        let model = events[0].model.as_deref().unwrap();
        assert_eq!(model, "claude-opus-4-8[1m]");
        let claude = Registry::builtin().get("claude").unwrap();
        assert_eq!(claude.context_limit(model), Some(1_000_000));
        assert_eq!(claude.context_limit("sonnet"), Some(200_000));
    }
}

#[test]
fn claude_tool_calls_come_from_message_content_blocks() {
    let events = parse_case("claude", "bash");
    assert_eq!(
        kinds(&events),
        [
            EventKind::SessionStarted,
            EventKind::AssistantText,
            EventKind::ToolUse,
            EventKind::ToolResult,
            EventKind::AssistantText,
            EventKind::SessionEnded,
        ]
    );
    let call = &events[2];
    assert_eq!(call.tool_name.as_deref(), Some("Bash"));
    assert_eq!(call.text.as_deref(), Some("echo MOCK_MARKER_$((6*7)) && uname -s"));
    let result = &events[3];
    assert_eq!(result.tool_name.as_deref(), Some("Bash"), "named after the call it answers");
    assert_eq!(result.text.as_deref(), Some("MOCK_MARKER_42\nLinux"));
    assert!(!result.is_error);
    // Two messages (text + tool_use share one id): usage is reported once per message.
    assert_eq!(context_sizes(&events), [1200, 1200]);
    assert!(events[2].usage.is_none(), "the second line of a message repeats its usage");

    let seq = tool_counts("bash_seq");
    assert_eq!(seq, (3, 3));
}

/// (tool calls, tool results) of a claude case.
fn tool_counts(case: &str) -> (usize, usize) {
    let events = parse_case("claude", case);
    (count(&events, EventKind::ToolUse), count(&events, EventKind::ToolResult))
}

#[test]
fn claude_refused_tool_calls_are_error_results() {
    let events = parse_case("claude", "bash_denied");
    let result = events.iter().find(|e| e.kind == EventKind::ToolResult).unwrap();
    assert!(result.is_error);
    assert!(result.text.as_deref().unwrap().contains("was blocked"));
    let allowed = tool_counts("bash_allowedtools");
    assert_eq!(allowed, (1, 1));
}

#[test]
fn claude_context_size_is_reported_per_message_and_crosses_the_threshold() {
    let events = parse_case("claude", "context_pressure");
    assert_eq!(context_sizes(&events), [190_000, 192_500, 195_000, 197_500, 200_000]);
    // The result's usage is a sum over turns (975000), never reported as the context size.
    let end = events.last().unwrap();
    assert_eq!(end.kind, EventKind::SessionEnded);
    assert!(end.usage.is_none());
    // What the supervisor computes: 90 % of sonnet's 200k window is reached at once.
    let config = RuntimeConfig::default();
    let claude = Registry::builtin().get("claude").unwrap();
    let limit = claude.context_limit(claude.default_model()).unwrap();
    let threshold = limit * u64::from(config.context_pressure_threshold_pct) / 100;
    let first_over =
        events.iter().position(|e| e.usage.is_some_and(|u| u.prompt_tokens() >= threshold));
    assert_eq!(first_over, Some(1), "the first assistant line already reports 190000 ≥ 180000");
}

#[test]
fn claude_429_retries_then_a_rejected_rate_limit() {
    for (case, retries) in
        [("rate_limit", 10), ("rate_limit_maxretries2", 2), ("rate_limit_unified", 2)]
    {
        let events = parse_case("claude", case);
        let retry_events: Vec<&AgentEvent> =
            events.iter().filter(|e| e.kind == EventKind::ApiRetry).collect();
        assert_eq!(retry_events.len(), retries, "{case}");
        for retry in &retry_events {
            assert_eq!(retry.http_status, Some(429), "{case}");
            let info = retry.rate_limit.as_ref().expect("a 429 retry carries rate-limit info");
            assert_eq!(info.http_status, Some(429));
            assert!(!retry.is_rate_limit_rejection(), "{case}: retrying is not giving up");
        }
        let tail: Vec<EventKind> = kinds(&events[events.len() - 2..]);
        assert_eq!(tail, [EventKind::RateLimit, EventKind::SessionEnded], "{case}");
        let limit = &events[events.len() - 2];
        assert!(limit.is_rate_limit_rejection(), "{case}");
        assert_eq!(limit.rate_limit.as_ref().unwrap().status, RateLimitStatus::Rejected);
        assert_eq!(limit.http_status, Some(429));
        assert!(events.last().unwrap().is_error);
        assert_eq!(count(&events, EventKind::RateLimit), 1, "{case}: reported once");
        assert_eq!(count(&events, EventKind::Error), 0, "{case}");
        // The synthetic "API Error" message says nothing about the context size.
        assert!(context_sizes(&events).is_empty(), "{case}");
    }
}

#[test]
fn claude_recovering_from_429_ends_cleanly() {
    let events = parse_case("claude", "rate_limit_then_ok");
    assert_eq!(count(&events, EventKind::ApiRetry), 2);
    assert_eq!(count(&events, EventKind::RateLimit), 0);
    assert!(!events.iter().any(AgentEvent::is_rate_limit_rejection));
    assert!(!events.last().unwrap().is_error);
}

#[test]
fn claude_server_errors_are_errors_not_rate_limits() {
    for (case, status, retries) in [
        ("error500", 500, 10),
        ("error500_maxretries2", 500, 2),
        ("overloaded_maxretries2", 529, 2),
    ] {
        let events = parse_case("claude", case);
        assert_eq!(count(&events, EventKind::ApiRetry), retries, "{case}");
        assert!(events.iter().all(|e| e.rate_limit.is_none()), "{case}: no rate-limit info");
        assert_eq!(count(&events, EventKind::RateLimit), 0, "{case}");
        let error = events.iter().find(|e| e.kind == EventKind::Error).expect(case);
        assert_eq!(error.http_status, Some(status), "{case}");
        assert!(error.text.as_deref().unwrap().starts_with("API Error"), "{case}");
        assert!(events.last().unwrap().is_error, "{case}");
    }
}

#[test]
fn claude_prompt_too_long_is_a_context_overflow() {
    let events = parse_case("claude", "prompt_too_long");
    assert_eq!(
        kinds(&events),
        [
            EventKind::SessionStarted,
            EventKind::AssistantText,
            EventKind::ContextOverflow,
            EventKind::SessionEnded,
        ]
    );
    assert_eq!(events[2].http_status, Some(400));
    assert!(events[2].text.as_deref().unwrap().starts_with("Prompt is too long"));
    assert_eq!(count(&events, EventKind::Error), 0, "an overflow is not a plain error");
}

#[test]
fn claude_stalls_show_only_the_session_start() {
    for case in ["stall", "stall_midstream"] {
        assert_eq!(kinds(&parse_case("claude", case)), [EventKind::SessionStarted], "{case}");
    }
    let events = parse_case("claude", "stall_apitimeout");
    let retries: Vec<_> = events.iter().filter(|e| e.kind == EventKind::ApiRetry).collect();
    assert_eq!(retries.len(), 2);
    assert!(retries.iter().all(|r| r.http_status.is_none() && r.rate_limit.is_none()));
    let error = events.iter().find(|e| e.kind == EventKind::Error).unwrap();
    assert_eq!(error.text.as_deref(), Some("Request timed out"));
}

// --- codex --------------------------------------------------------------------------------

#[test]
fn codex_hello_and_commands() {
    for case in ["hello", "hello_openai_base_url"] {
        assert_eq!(
            kinds(&parse_case("codex", case)),
            [EventKind::SessionStarted, EventKind::AssistantText, EventKind::SessionEnded],
            "{case}"
        );
    }
    let events = parse_case("codex", "bash");
    assert_eq!(
        kinds(&events),
        [
            EventKind::SessionStarted,
            EventKind::AssistantText,
            EventKind::ToolUse,
            EventKind::ToolResult,
            EventKind::AssistantText,
            EventKind::SessionEnded,
        ]
    );
    assert_eq!(events[0].session_id.as_deref(), Some("01a21497-f4c8-7702-9536-b3f41e35aa99"));
    assert_eq!(events[2].tool_name.as_deref(), Some("command_execution"));
    assert!(events[2].text.as_deref().unwrap().contains("echo MOCK_MARKER_$((6*7))"));
    assert_eq!(events[3].text.as_deref(), Some("MOCK_MARKER_42\nLinux\n"));
    assert!(!events[3].is_error);

    let seq = parse_case("codex", "bash_seq");
    assert_eq!((count(&seq, EventKind::ToolUse), count(&seq, EventKind::ToolResult)), (3, 3));
    let denied = parse_case("codex", "bash_write_default_sandbox");
    assert!(denied.iter().any(|e| e.kind == EventKind::ToolResult && e.is_error));
    let bypass = parse_case("codex", "bash_write_bypass");
    assert!(bypass.iter().all(|e| !e.is_error));
}

#[test]
fn codex_turn_totals_are_never_the_context_size() {
    // turn.completed reports 975000: the sum of the turn's five requests (190k … 200k), over
    // seven times the 128k window. It is not a context size and must not read as pressure.
    let events = parse_case("codex", "context_pressure");
    let end = events.last().unwrap();
    assert_eq!(end.kind, EventKind::SessionEnded);
    assert_eq!(end.raw.value()["usage"]["input_tokens"], 975_000, "kept in raw for the records");
    for case in cases("codex") {
        assert!(context_sizes(&parse_case("codex", &case)).is_empty(), "{case}");
    }
}

#[test]
fn codex_per_request_usage_of_four_40k_requests_is_40k() {
    // The first codex `exec --json` (2025) printed one token_count per request: each is seen.
    let mut parser = Registry::builtin().get("codex").unwrap().parser();
    let mut events = parser.parse_line(r#"{"id":"0","msg":{"type":"session_configured"}}"#);
    for n in 1..=4u64 {
        let line = format!(
            r#"{{"id":"1","msg":{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{}}},"last_token_usage":{{"input_tokens":40000,"cached_input_tokens":30000,"output_tokens":100}}}}}}}}"#,
            40_000 * n,
            30_000 * n,
            100 * n
        );
        events.extend(parser.parse_line(&line));
    }
    events.extend(parser.parse_line(
        r#"{"type":"turn.completed","usage":{"input_tokens":160000,"cached_input_tokens":120000,"output_tokens":400}}"#,
    ));
    assert_eq!(context_sizes(&events), [40_000; 4], "never 160000");
}

#[test]
fn codex_429_is_a_rejected_rate_limit_and_500_an_error() {
    let events = parse_case("codex", "rate_limit");
    assert_eq!(
        kinds(&events),
        [
            EventKind::SessionStarted,
            EventKind::ApiRetry,
            EventKind::RateLimit,
            EventKind::SessionEnded,
        ]
    );
    assert_eq!(events[1].http_status, Some(429));
    assert!(events[1].rate_limit.is_some() && !events[1].is_rate_limit_rejection());
    assert!(events[2].is_rate_limit_rejection());
    assert_eq!(events[2].rate_limit.as_ref().unwrap().http_status, Some(429));
    assert!(events[3].is_error);

    let events = parse_case("codex", "error500");
    assert_eq!(
        kinds(&events),
        [EventKind::SessionStarted, EventKind::ApiRetry, EventKind::Error, EventKind::SessionEnded]
    );
    assert!(events.iter().all(|e| e.rate_limit.is_none()));
    assert!(events[2].text.as_deref().unwrap().contains("high demand"));
}

// --- faults of the fleet ----------------------------------------------------------------

/// The kind and fault of the events of a case that have a fault, in order.
fn faults(events: &[AgentEvent]) -> Vec<(EventKind, Fault)> {
    events.iter().filter_map(|e| e.fault.map(|f| (e.kind, f))).collect()
}

#[test]
fn provider_outages_are_faults_once_the_cli_gave_up() {
    for (coder, case) in [
        ("claude", "overloaded_maxretries2"),
        ("claude", "error500"),
        ("claude", "error500_maxretries2"),
        ("claude", "stall_apitimeout"),
        ("codex", "error500"),
    ] {
        let events = parse_case(coder, case);
        assert_eq!(
            faults(&events),
            [(EventKind::Error, Fault::Outage), (EventKind::SessionEnded, Fault::Outage)],
            "{coder}/{case}"
        );
        assert!(
            events.iter().filter(|e| e.kind == EventKind::ApiRetry).all(|e| e.fault.is_none()),
            "{coder}/{case}: the CLI was still retrying"
        );
    }
    // The API error is the session end's text: claude prints it in `result`, not on stderr.
    let end = parse_case("claude", "overloaded_maxretries2").pop().unwrap();
    assert!(end.text.as_deref().unwrap().starts_with("API Error: 529 Overloaded"), "{end:?}");
    assert_eq!(end.http_status, Some(529));
    let end = parse_case("codex", "error500").pop().unwrap();
    assert!(end.text.as_deref().unwrap().contains("high demand"));
}

#[test]
fn rate_limits_overflows_and_successes_are_not_faults() {
    for (coder, case) in [
        ("claude", "rate_limit"),
        ("claude", "rate_limit_maxretries2"),
        ("claude", "rate_limit_unified"),
        ("claude", "rate_limit_then_ok"),
        ("claude", "prompt_too_long"),
        ("claude", "hello"),
        ("claude", "bash_denied"),
        ("claude", "context_pressure"),
        ("codex", "rate_limit"),
        ("codex", "hello"),
        ("codex", "bash_write_default_sandbox"),
    ] {
        assert!(faults(&parse_case(coder, case)).is_empty(), "{coder}/{case}");
    }
}

#[test]
fn login_failures_are_auth_faults() {
    let mut parser = Registry::builtin().get("claude").unwrap().parser();
    let events: Vec<AgentEvent> = [
        r#"{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}"#,
        r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login","session_id":"s1"}"#,
    ]
    .iter()
    .flat_map(|line| parser.parse_line(line))
    .collect();
    assert_eq!(
        faults(&events),
        [(EventKind::Error, Fault::Auth), (EventKind::SessionEnded, Fault::Auth)]
    );
    assert_eq!(events.last().unwrap().text.as_deref(), Some("Not logged in · Please run /login"));

    let mut parser = Registry::builtin().get("codex").unwrap().parser();
    let events: Vec<AgentEvent> = [
        r#"{"type":"thread.started","thread_id":"t1"}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: Invalid API key)"}"#,
        r#"{"type":"error","message":"unexpected status 401 Unauthorized: Invalid API key, url: http://localhost/v1/responses"}"#,
        r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Invalid API key, url: http://localhost/v1/responses"}}"#,
    ]
    .iter()
    .flat_map(|line| parser.parse_line(line))
    .collect();
    assert_eq!(
        faults(&events),
        [(EventKind::Error, Fault::Auth), (EventKind::SessionEnded, Fault::Auth)]
    );
}

#[test]
fn stderr_tails_explain_themselves() {
    // codex's real start-up lines (see the fixture README), then the failure.
    let stderr = "Reading additional input from stdin...\n\
        WARNING: proceeding, even though we could not create PATH aliases: Refusing to create \
        helper binaries under temporary dir \"/tmp\"\n\
        \u{1b}[31mERROR\u{1b}[0m: exceeded retry limit, last status: 401 Unauthorized\n";
    assert_eq!(
        failure_reason(stderr),
        "ERROR: exceeded retry limit, last status: 401 Unauthorized"
    );
    assert_eq!(classify_text(stderr), Some(Fault::Auth));
    let root = "--dangerously-skip-permissions cannot be used with root/sudo privileges";
    assert_eq!(classify_text(root), None, "a setup error of the task's command line");
}

#[test]
fn no_line_makes_a_parser_fail() {
    let lines = [
        "",
        "\u{1b}[31mcoloured\u{1b}[0m",
        "{",
        "[1,2]",
        "null",
        r#"{"type":42}"#,
        r#"{"type":"result","is_error":true,"result":null,"errors":[1,null],"api_error_status":70000}"#,
        r#"{"type":"turn.failed","error":"not an object"}"#,
        r#"{"type":"turn.completed","usage":[],"last_usage":"x"}"#,
        r#"{"type":"error","error":{"name":7,"data":{"statusCode":-1}}}"#,
        r#"{"msg":{"type":"token_count","info":{"total_token_usage":"x","last_token_usage":null}}}"#,
        r#"{"msg":{"type":"token_count","rate_limits":{"primary":{"used_percent":-5,"resets_in_seconds":1e300,"resets_at":"soon"},"secondary":7}}}"#,
        r#"{"type":"rate_limit_event","rate_limit_info":{"utilization":"high","resetsAt":-1e308}}"#,
    ];
    for coder in ["claude", "codex", "gemini", "opencode", "agy", "exec"] {
        let mut parser = Registry::builtin().get(coder).unwrap().parser();
        for line in lines {
            for event in parser.parse_line(line) {
                serde_json::to_string(&event).unwrap();
            }
        }
    }
}

// --- command lines and environment ----------------------------------------------------------

struct Paths {
    cwd: PathBuf,
    task_dir: PathBuf,
    artifact_dir: PathBuf,
}

fn paths() -> Paths {
    Paths {
        cwd: PathBuf::from("/work/project"),
        task_dir: PathBuf::from("/home/u/.fleet/tasks/fl-7"),
        artifact_dir: PathBuf::from("/home/u/.fleet/tasks/fl-7/artifacts"),
    }
}

fn task<'a>(paths: &'a Paths, model: &'a str) -> TaskSpec<'a> {
    TaskSpec {
        id: "fl-7",
        title: "Fix the build",
        description: "echo building && echo done",
        cwd: &paths.cwd,
        task_dir: &paths.task_dir,
        artifact_dir: &paths.artifact_dir,
        model,
        prompt: "You have been assigned fl-7. Say \"hi\".",
    }
}

fn spec(registry: &Registry, coder: &str, model: &str) -> SpawnSpec {
    let paths = paths();
    registry.get(coder).unwrap().spawn_spec(&task(&paths, model))
}

fn assert_task_env(spec: &SpawnSpec) {
    assert_eq!(spec.env_var("FLEET_TASK_ID"), Some("fl-7"));
    assert_eq!(spec.env_var("FLEET_TASK_DIR"), Some("/home/u/.fleet/tasks/fl-7"));
    assert_eq!(spec.env_var("FLEET_ARTIFACT_DIR"), Some("/home/u/.fleet/tasks/fl-7/artifacts"));
    assert_eq!(spec.cwd, Path::new("/work/project"));
}

const PROMPT: &str = "You have been assigned fl-7. Say \"hi\".";

#[test]
fn claude_runs_unattended_with_verbose_stream_json() {
    let registry = Registry::builtin();
    let claude = registry.get("claude").unwrap();
    let spec = spec(&registry, "claude", claude.default_model());
    assert_eq!(spec.program, "claude");
    assert_eq!(
        spec.args,
        [
            "-p",
            "--verbose",
            "--output-format",
            "stream-json",
            "--model",
            "sonnet",
            "--settings",
            fleet::coders::claude::MAIL_HOOK,
            "--dangerously-skip-permissions",
            PROMPT,
        ]
    );
    assert_eq!(spec.env_var("IS_SANDBOX"), Some("1"), "needed when the supervisor is root");
    assert_task_env(&spec);
    // An empty model lets the CLI choose: no --model at all.
    assert!(!self::spec(&registry, "claude", "").args.contains(&"--model".to_owned()));
}

#[test]
fn codex_gets_no_model_unless_one_is_set() {
    let registry = Registry::builtin();
    let codex = registry.get("codex").unwrap();
    assert_eq!(codex.default_model(), "", "codex never inherits another coder's model");
    let spec = spec(&registry, "codex", "");
    assert_eq!(spec.program, "codex");
    assert_eq!(
        spec.args,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-c",
            "allow_login_shell=false",
            "--dangerously-bypass-approvals-and-sandbox",
            "--cd",
            "/work/project",
            PROMPT,
        ]
    );
    assert_task_env(&spec);
    assert!(spec.env_var("IS_SANDBOX").is_none());
    let with_model = self::spec(&registry, "codex", "gpt-5.5");
    let at = with_model.args.iter().position(|a| a == "--model").unwrap();
    assert_eq!(with_model.args[at + 1], "gpt-5.5");
}

#[test]
fn agy_opencode_and_exec_command_lines() {
    let registry = Registry::builtin();
    let agy = spec(&registry, "agy", "");
    assert_eq!(
        (agy.program.as_str(), agy.args.as_slice()),
        (
            "agy",
            &["-p".to_owned(), PROMPT.to_owned(), "--dangerously-skip-permissions".to_owned()][..]
        )
    );
    assert_task_env(&agy);

    let opencode = spec(&registry, "opencode", "ollama/qwen3");
    assert_eq!(opencode.program, "opencode");
    assert_eq!(
        opencode.args,
        [
            "run",
            "--format",
            "json",
            "--print-logs",
            "--log-level",
            "ERROR",
            "--model",
            "ollama/qwen3",
            "--dir",
            "/work/project",
            PROMPT
        ]
    );
    // Each agent has its own opencode database: agents started together never share one.
    assert_eq!(opencode.env_var("OPENCODE_DB"), Some("/home/u/.fleet/tasks/fl-7/opencode.db"));
    assert_task_env(&opencode);
    assert!(!spec(&registry, "opencode", "").args.contains(&"--model".to_owned()));

    let exec = spec(&registry, "exec", "");
    assert_eq!(exec.program, "sh");
    assert_eq!(exec.args, ["-c", "echo building && echo done"]);
    assert_task_env(&exec);
    let coder = registry.get("exec").unwrap();
    assert_eq!(coder.context_limit(""), None, "a shell command has no context to run out of");
    assert!(coder.closes_on_exit_zero());
    assert!(!registry.get("claude").unwrap().closes_on_exit_zero());
    for name in ["codex", "agy", "opencode"] {
        assert_eq!(registry.get(name).unwrap().context_limit(""), Some(128_000), "{name}");
    }
}

#[test]
fn gemini_runs_headless_with_its_own_home_and_the_api_key_sign_in() {
    let registry = Registry::builtin();
    let gemini = spec(&registry, "gemini", "gemini-2.5-pro");
    assert_eq!(gemini.program, "gemini");
    assert_eq!(
        gemini.args,
        ["--output-format", "stream-json", "--model", "gemini-2.5-pro", "--yolo", "-p", PROMPT]
    );
    assert_eq!(gemini.env_var("GEMINI_CLI_TRUST_WORKSPACE"), Some("true"));
    assert_eq!(gemini.env_var("GEMINI_CLI_HOME"), Some("/home/u/.fleet/tasks/fl-7/gemini-home"));
    assert_task_env(&gemini);
    assert!(!spec(&registry, "gemini", "").args.contains(&"--model".to_owned()));
    let coder = registry.get("gemini").unwrap();
    assert_eq!(coder.context_limit(""), Some(1_048_576));

    // The settings go into the task directory, never into the user's ~/.gemini.
    let dir = tempfile::tempdir().unwrap();
    let artifacts = dir.path().join("artifacts");
    let task = TaskSpec {
        id: "fl-7",
        title: "t",
        description: "",
        cwd: dir.path(),
        task_dir: dir.path(),
        artifact_dir: &artifacts,
        model: "",
        prompt: PROMPT,
    };
    coder.prepare(&task).unwrap();
    let settings = dir.path().join("gemini-home/.gemini/settings.json");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(written["security"]["auth"]["selectedType"], "gemini-api-key");
    // A file already there (edited by a user) is kept.
    std::fs::write(&settings, "{}").unwrap();
    coder.prepare(&task).unwrap();
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{}");

    // Its exit codes are HTTP statuses cut to a byte: 173 is a 429; 41 is its auth failure.
    use fleet::coders::ExitMeaning;
    assert_eq!(coder.exit_meaning(173), Some(ExitMeaning::RateLimit));
    assert_eq!(coder.exit_meaning(41), Some(ExitMeaning::Fault(Fault::Auth)));
    assert_eq!(registry.get("claude").unwrap().exit_meaning(173), None);
}

#[test]
fn the_exec_coder_runs_and_its_output_lines_are_events() {
    let dir = tempfile::tempdir().unwrap();
    let paths = Paths {
        cwd: dir.path().to_path_buf(),
        task_dir: dir.path().into(),
        artifact_dir: dir.path().into(),
    };
    let mut task = task(&paths, "");
    task.description = "echo \"$FLEET_TASK_ID in $(pwd)\"; echo; echo second";
    let coder = Registry::builtin().get("exec").unwrap();
    let spec = coder.spawn_spec(&task);
    let output = std::process::Command::new(&spec.program)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .output()
        .unwrap();
    assert!(output.status.success());
    let mut parser = coder.parser();
    let events: Vec<AgentEvent> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .flat_map(|l| parser.parse_line(l))
        .collect();
    let texts: Vec<&str> = events.iter().map(|e| e.text.as_deref().unwrap()).collect();
    let first = format!("fl-7 in {}", dir.path().canonicalize().unwrap().display());
    assert_eq!(texts, [first.as_str(), "second"]);
    assert!(events.iter().all(|e| e.kind == EventKind::Output));
}

// --- coders from runtime.toml -----------------------------------------------------------------

fn registry_from(toml: &str) -> Registry {
    let config = RuntimeConfig::parse(toml, Path::new("runtime.toml")).unwrap();
    config.registry().unwrap()
}

#[test]
fn built_ins_take_program_permissions_env_and_limits_from_config() {
    let registry = registry_from(
        r#"
[coders.claude]
program = "/opt/fake/claude"
permission_args = ["--allowedTools", "Bash,Edit"]
env = { IS_SANDBOX = "0", EXTRA = "yes" }
default_model = "opus"
context_limit = 150000
model_context_limits = { "opus[1m]" = 1000000 }

[coders.codex]
default_model = "gpt-5.5"
context_limit = 272000
"#,
    );
    let claude = registry.get("claude").unwrap();
    assert_eq!(claude.default_model(), "opus");
    assert_eq!(claude.context_limit("opus"), Some(150_000));
    assert_eq!(claude.context_limit("opus[1m]"), Some(1_000_000));
    let spec = spec(&registry, "claude", "opus");
    assert_eq!(spec.program, "/opt/fake/claude");
    assert!(spec.args.ends_with(&[
        "--allowedTools".to_owned(),
        "Bash,Edit".to_owned(),
        PROMPT.to_owned()
    ]));
    assert!(!spec.args.contains(&"--dangerously-skip-permissions".to_owned()));
    assert_eq!(spec.env_var("IS_SANDBOX"), Some("0"));
    assert_eq!(spec.env_var("EXTRA"), Some("yes"));
    let codex = registry.get("codex").unwrap();
    assert_eq!(codex.default_model(), "gpt-5.5");
    assert_eq!(codex.context_limit("gpt-5.5"), Some(272_000));
}

#[test]
fn a_coder_defined_in_config_renders_its_argv() {
    let registry = registry_from(
        r#"
coder = "mybot"

[coders.mybot]
argv = ["mybot", "--json", "--model={model}", "--in", "{cwd}", "{{literal}}", "{prompt}"]
events = "codex"
default_model = "big-1"
context_limit = 64000
env = { MYBOT_LOG = "{task_dir}/mybot.log", MYBOT_TASK = "{task_id}: {title}" }
"#,
    );
    let bot = registry.get("mybot").unwrap();
    assert_eq!(bot.name(), "mybot");
    assert_eq!(bot.default_model(), "big-1");
    assert_eq!(bot.context_limit("big-1"), Some(64_000));
    let spec = spec(&registry, "mybot", "big-1");
    assert_eq!(spec.program, "mybot");
    assert_eq!(
        spec.args,
        ["--json", "--model=big-1", "--in", "/work/project", "{literal}", PROMPT]
    );
    assert_eq!(spec.env_var("MYBOT_LOG"), Some("/home/u/.fleet/tasks/fl-7/mybot.log"));
    assert_eq!(spec.env_var("MYBOT_TASK"), Some("fl-7: Fix the build"));
    assert_task_env(&spec);
    // events = "codex": its stdout is read as codex's.
    let mut parser = bot.parser();
    let events = parser.parse_line(r#"{"type":"thread.started","thread_id":"t-1"}"#);
    assert_eq!(events[0].kind, EventKind::SessionStarted);
    assert_eq!(events[0].session_id.as_deref(), Some("t-1"));
    // Plain-text coders by default, with no context limit.
    let plain = registry_from("[coders.job]\nargv = [\"make\", \"{description}\"]\n");
    let job = plain.get("job").unwrap();
    assert_eq!(job.context_limit(""), None);
    assert_eq!(job.parser().parse_line("compiling")[0].kind, EventKind::Output);
}

#[test]
fn unknown_coders_say_what_exists() {
    let registry = registry_from("[coders.mybot]\nargv = [\"mybot\", \"{prompt}\"]\n");
    let error = registry.get("codx").err().unwrap();
    assert_eq!(error.name, "codx");
    assert_eq!(error.available, ["agy", "claude", "codex", "exec", "gemini", "mybot", "opencode"]);
    assert!(error.to_string().contains("did you mean \"codex\""), "{error}");
}

/// A coder's context window comes from its model (issue 27): opencode's `provider/model`
/// names included, and the config still wins.
#[test]
fn context_windows_come_from_the_model() {
    let registry = Registry::from_config(&Default::default()).unwrap();
    let opencode = registry.get("opencode").unwrap();
    assert_eq!(opencode.context_limit("anthropic/claude-sonnet-4-5"), Some(200_000));
    assert_eq!(opencode.context_limit("openai/gpt-4.1"), Some(1_047_576));
    assert_eq!(opencode.context_limit("ollama/qwen3:8b"), Some(40_960));
    assert_eq!(opencode.context_limit("local/unknown-model"), Some(128_000));
    let codex = registry.get("codex").unwrap();
    assert_eq!(codex.context_limit("gpt-5-codex"), Some(400_000));
}
