//! `fleet fake-agent`: a scriptable stand-in for a coding-agent CLI, used by fleet's tests and
//! benchmarks (hidden from help).
//!
//! It prints Claude Code's real stream-json shapes (see the captured fixtures) and acts on
//! `fake:` directives found in its prompt (the task description), one per line, in order:
//!
//! | directive | what it does |
//! |---|---|
//! | `fake: close [reason]` | runs `bd close $FLEET_TASK_ID --reason …` through PATH |
//! | `fake: block QUESTION` | appends `## Q: QUESTION` to `$FLEET_ARTIFACT_DIR/Q&A.md`, runs `bd update $FLEET_TASK_ID --status blocked --notes "QUESTION: …"` |
//! | `fake: needanswer` | exits 1 unless `$FLEET_ARTIFACT_DIR/Q&A.md` holds an `## A:` block, then says the answer |
//! | `fake: exit N` | writes a line to stderr and exits with code N |
//! | `fake: sleep SECS` | sleeps (prints nothing meanwhile) |
//! | `fake: context PCT` | reports assistant usage growing to PCT % of a 200k window |
//! | `fake: ratelimit WINDOW` | prints a rejected `rate_limit_event` for WINDOW (five_hour, seven_day) |
//! | `fake: nearlimit PCT` | prints an `allowed_warning` `rate_limit_event`: the five-hour window is PCT % used |
//! | `fake: apiretry STATUS` | prints the CLI's notice that it retries a request that failed with STATUS, and goes on |
//! | `fake: 429` | prints the CLI's retries and a final 429 error result, exits 1 |
//! | `fake: chatter RATE` | prints RATE assistant messages a second, forever (a busy agent, for `fleet bench supervisor`) |
//! | `fake: stall` | goes silent forever |
//! | `fake: ignore-term` | ignores SIGTERM, starts two grandchildren that ignore it too, sleeps |
//! | `fake: touch PATH` | creates a file (proof the agent ran in its working directory) |
//! | `fake: say TEXT` | prints an assistant message with TEXT |
//! | `fake: exclusive DIR` | takes an exclusive lock on `DIR/<task>.lock` for the rest of its life and appends `start <task> <pid>` to `DIR/runs.log` — or `OVERLAP <task> <pid>` when another agent holds the lock (two agents on one task) |
//! | `fake: background SECS` | leaves `sleep SECS` running in its process group |
//! | `fake: detach SECS` | leaves `sleep SECS` running in a new session (outside its process group) |
//! | `fake: doublefork SECS` | leaves `sleep SECS` running in a new session whose parent has exited (re-parented, as a daemon that forks twice) |
//! | `fake: stderr TEXT` | writes TEXT to stderr |
//! | `fake: leak VAR…` | writes `VAR=<value>` of each variable to stderr and says them as assistant text (a careless agent) |
//! | `fake: authfail` | prints Claude Code's "Not logged in" result and exits 1 |
//! | `fake: overloaded` | prints the CLI's retries of a 529 and a final "Overloaded" API error result, exits 1 |
//! | `fake: spend IN OUT COST` | prints an assistant message whose request used IN prompt tokens and OUT output tokens; the final result reports the session's totals and a `total_cost_usd` summed from each COST |
//! | `fake: once DIRECTIVE` | runs DIRECTIVE only on the task's first run (a marker file in `$FLEET_TASK_DIR` remembers it), so a script can hit a limit once and then finish |
//! | `fake: when VAR=VALUE DIRECTIVE` | runs DIRECTIVE only when the variable VAR is VALUE (an agent on one account hits a limit, on the others it works) |
//! | `fake: envfile PATH VAR…` | appends a line `<task> VAR=<value> …` to PATH (proof of the environment the agent got) |
//!
//! Without directives it greets, closes the task and exits 0.

// The fake agent plays a coding-agent CLI, which prints with the macros; a test that closes
// its pipes sees the same panic a real CLI's failure would give.
#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::io::Write;
use std::time::Duration;

use serde_json::json;

use super::error::CliError;

#[derive(Debug, clap::Args)]
pub struct FakeAgentArgs {
    /// The prompt (as a coder passes it); `fake:` lines in it are the script.
    pub prompt: Vec<String>,
}

fn emit(value: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}").and_then(|()| out.flush());
}

fn session() -> String {
    std::env::var("FLEET_TASK_ID").map_or_else(|_| "fake-session".into(), |id| format!("fake-{id}"))
}

fn assistant(text: &str, input_tokens: u64) {
    assistant_with(text, input_tokens, 1);
}

fn assistant_with(text: &str, input_tokens: u64, output_tokens: u64) {
    emit(json!({
        "type": "assistant",
        "message": {"id": format!("msg_{input_tokens}_{output_tokens}"), "role": "assistant", "model": "fake",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}},
        "session_id": session(),
    }));
}

/// What `fake: spend` directives added up, for the final result line.
#[derive(Default)]
struct Spent {
    input: u64,
    output: u64,
    cost: Option<f64>,
}

impl Spent {
    fn spend(&mut self, rest: &str) {
        let mut parts = rest.split_whitespace();
        let mut next = || parts.next().and_then(|p| p.parse::<f64>().ok());
        let (input, output, cost) = (next().unwrap_or(0.0), next().unwrap_or(0.0), next());
        let (input, output) = (input as u64, output as u64);
        assistant_with("spending tokens", input, output);
        self.input += input;
        self.output += output;
        if let Some(cost) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + cost);
        }
    }

    /// The final result line: the session's totals (the default ones when nothing was spent).
    fn result(&self) -> serde_json::Value {
        let mut result = json!({"type": "result", "subtype": "success", "is_error": false,
            "result": "done", "session_id": session(),
            "usage": {"input_tokens": self.input.max(100), "output_tokens": self.output.max(1)}});
        if let Some(cost) = self.cost {
            result["total_cost_usd"] = json!(cost);
        }
        result
    }
}

fn run_bd(args: &[&str]) -> Result<(), CliError> {
    let id =
        std::env::var("FLEET_TASK_ID").map_err(|_| CliError::new("FLEET_TASK_ID is not set"))?;
    let mut all: Vec<&str> = Vec::with_capacity(args.len() + 1);
    all.push(args[0]);
    all.push(&id);
    all.extend_from_slice(&args[1..]);
    emit(json!({"type": "assistant", "message": {"id": "msg_tool", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_fake", "name": "Bash",
                     "input": {"command": format!("bd {}", all.join(" "))}}],
        "usage": {"input_tokens": 10, "output_tokens": 1}}, "session_id": session()}));
    // The tool's output goes into the tool result, as a real agent reports it, not onto the
    // agent's own stdout (where it would be a stray non-JSON line).
    let output = std::process::Command::new("bd")
        .args(&all)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| CliError::new(format!("fake agent could not run bd: {e}")))?;
    let text = format!(
        "{}{}exit {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        output.status.code().unwrap_or(-1)
    );
    emit(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": "toolu_fake", "content": text,
        "is_error": !output.status.success()}]}, "session_id": session()}));
    Ok(())
}

/// Says the last answer in `Q&A.md`, or exits 1 when there is none (a run before the answer).
fn read_answer() -> Result<(), CliError> {
    let dir = std::env::var_os("FLEET_ARTIFACT_DIR").unwrap_or_default();
    let text =
        std::fs::read_to_string(std::path::Path::new(&dir).join("Q&A.md")).unwrap_or_default();
    let Some((_, answer)) = text.rsplit_once("## A:") else {
        eprintln!("fake agent: no answer in Q&A.md");
        std::process::exit(1);
    };
    let body = answer.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>();
    assistant(&format!("the answer is {}", body.join(" ")), 100);
    Ok(())
}

/// Appends the question to `$FLEET_ARTIFACT_DIR/Q&A.md`, as the agent protocol asks.
fn ask_in_qa(question: &str) -> Result<(), CliError> {
    let Some(dir) = crate::env::artifact_dir() else { return Ok(()) };
    super::qa::append_question(&dir.join(super::task::QA_FILE), question, "")
}

fn ignore_sigterm() {
    // SAFETY: installs SIG_IGN for SIGTERM; no handler code runs.
    unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
}

/// Prints `rate` assistant messages a second until killed, like an agent at work.
fn chatter(rate: f64) -> ! {
    let pause = Duration::from_secs_f64(1.0 / rate.max(0.1));
    let mut n: u64 = 0;
    loop {
        n += 1;
        assistant_with(
            &format!("working on step {n}: reading src/lib.rs and thinking"),
            1000 + n,
            20,
        );
        std::thread::sleep(pause);
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Starts `sh -c COMMAND` and leaves it running; with `new_session` it leaves this agent's
/// process group and session first (as `setsid` does).
fn leave_running(command: &str, new_session: bool) {
    let mut child = std::process::Command::new("sh");
    child.args(["-c", command]).stdin(std::process::Stdio::null());
    if new_session {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid is async-signal-safe and touches no memory of ours.
        unsafe {
            child.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    let _ = child.spawn();
}

/// The overlap detector of the ownership tests: an exclusive lock per task, held until this
/// process dies (the kernel releases it, however the process ends).
fn hold_task_lock(dir: &std::path::Path) -> Result<(), CliError> {
    use std::os::fd::AsRawFd;
    let id = std::env::var("FLEET_TASK_ID").unwrap_or_default();
    let fail = |e: std::io::Error| CliError::new(format!("fake agent: {}: {e}", dir.display()));
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{id}.lock")))
        .map_err(fail)?;
    // SAFETY: flock on a descriptor we own.
    let taken = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    let word = if taken { "start" } else { "OVERLAP" };
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("runs.log"))
        .map_err(fail)?;
    writeln!(log, "{word} {id} {}", std::process::id()).map_err(fail)?;
    // Held for the rest of the process's life.
    std::mem::forget(lock);
    Ok(())
}

/// `envfile PATH VAR…`: appends `<task> VAR=<value> …` to PATH.
fn record_env(rest: &str) -> Result<(), CliError> {
    let mut words = rest.split_whitespace();
    let path = words.next().ok_or_else(|| CliError::new("fake agent: envfile needs a path"))?;
    let id = std::env::var("FLEET_TASK_ID").unwrap_or_default();
    let vars: Vec<String> =
        words.map(|name| format!("{name}={}", std::env::var(name).unwrap_or_default())).collect();
    let fail = |e: std::io::Error| CliError::new(format!("fake agent: {path}: {e}"));
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(fail)?;
    writeln!(file, "{id} {}", vars.join(" ")).map_err(fail)
}

pub fn cmd_fake_agent(args: FakeAgentArgs) -> Result<(), CliError> {
    let prompt = args.prompt.join(" ");
    emit(json!({"type": "system", "subtype": "init", "session_id": session(), "model": "fake",
                "permissionMode": "bypassPermissions", "cwd": std::env::current_dir().ok()}));
    let script: Vec<&str> =
        prompt.lines().filter_map(|l| l.trim().strip_prefix("fake:")).map(str::trim).collect();
    if script.is_empty() {
        assistant("Hello from the fake agent.", 100);
        run_bd(&["close", "--reason", "fake agent done"])?;
    }
    let mut spent = Spent::default();
    for (index, step) in script.into_iter().enumerate() {
        let (mut verb, mut rest) = step.split_once(' ').unwrap_or((step, ""));
        if verb == "when" {
            let (condition, directive) = rest.split_once(' ').unwrap_or((rest, ""));
            let (var, value) = condition.split_once('=').unwrap_or((condition, ""));
            if std::env::var(var).ok().as_deref() != Some(value) {
                continue;
            }
            (verb, rest) = directive.split_once(' ').unwrap_or((directive, ""));
        }
        if verb == "once" {
            let dir = std::env::var_os("FLEET_TASK_DIR")
                .ok_or_else(|| CliError::new("FLEET_TASK_DIR is not set"))?;
            let marker = std::path::Path::new(&dir).join(format!(".fake-once-{index}"));
            if marker.exists() {
                continue;
            }
            std::fs::write(&marker, b"").map_err(|e| {
                CliError::new(format!("fake agent could not write {}: {e}", marker.display()))
            })?;
            (verb, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        }
        match verb {
            "say" => assistant(rest, 100),
            "spend" => spent.spend(rest),
            "needanswer" => read_answer()?,
            "close" => {
                let reason = if rest.is_empty() { "fake agent done" } else { rest };
                run_bd(&["close", "--reason", reason])?;
            }
            "block" => {
                ask_in_qa(rest)?;
                run_bd(&["update", "--status", "blocked", "--notes", &format!("QUESTION: {rest}")])?
            }
            "exit" => {
                eprintln!("fake agent: exiting with {rest}");
                std::process::exit(rest.parse().unwrap_or(1));
            }
            "sleep" => std::thread::sleep(Duration::from_secs_f64(rest.parse().unwrap_or(1.0))),
            "context" => {
                let pct: u64 = rest.parse().unwrap_or(95);
                for step in 1..=5 {
                    assistant("thinking hard", 200_000 * pct / 100 * step / 5);
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            "ratelimit" => {
                let resets = jiff::Timestamp::now().as_second() + 3600;
                emit(json!({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected",
                    "resetsAt": resets, "rateLimitType": rest, "utilization": 1}, "session_id": session()}));
                std::thread::sleep(Duration::from_secs(30));
            }
            "nearlimit" => {
                let used: f64 = rest.parse().unwrap_or(95.0);
                let resets = jiff::Timestamp::now().as_second() + 3600;
                emit(json!({"type": "rate_limit_event", "rate_limit_info": {
                    "status": "allowed_warning", "resetsAt": resets, "rateLimitType": "five_hour",
                    "utilization": used / 100.0, "surpassedThreshold": 0.75}, "session_id": session()}));
            }
            "429" => {
                for attempt in 1..=2 {
                    emit(json!({"type": "system", "subtype": "api_retry", "attempt": attempt,
                        "max_retries": 2, "retry_delay_ms": 10, "error_status": 429, "error": "rate_limit"}));
                }
                emit(json!({"type": "result", "subtype": "success", "is_error": true,
                    "api_error_status": 429, "result": "API Error: 429 rate limited", "session_id": session()}));
                std::process::exit(1);
            }
            "apiretry" => emit(json!({"type": "system", "subtype": "api_retry", "attempt": 1,
                "max_retries": 10, "retry_delay_ms": 30000,
                "error_status": rest.parse::<u16>().unwrap_or(529), "error": "overloaded"})),
            "chatter" => chatter(rest.parse().unwrap_or(10.0)),
            "stall" => sleep_forever(),
            "ignore-term" => {
                ignore_sigterm();
                for _ in 0..2 {
                    let _ = std::process::Command::new("sh")
                        .args(["-c", "trap '' TERM; sleep 1000"])
                        .spawn();
                }
                assistant("working, and not stopping", 100);
                sleep_forever();
            }
            "touch" => {
                std::fs::write(rest, b"fake agent was here\n").map_err(|e| {
                    CliError::new(format!("fake agent could not write {rest}: {e}"))
                })?;
            }
            "exclusive" => hold_task_lock(std::path::Path::new(rest))?,
            "envfile" => record_env(rest)?,
            "background" => leave_running(&format!("sleep {rest} &"), false),
            "detach" => leave_running(&format!("sleep {rest}"), true),
            "doublefork" => leave_running(&format!("(sleep {rest} &)"), true),
            "stderr" => eprintln!("{rest}"),
            "leak" => {
                let shown: Vec<String> = rest
                    .split_whitespace()
                    .map(|name| format!("{name}={}", std::env::var(name).unwrap_or_default()))
                    .collect();
                eprintln!("deploy failed: {}", shown.join(" "));
                assistant(&format!("my environment: {}", shown.join(" ")), 100);
            }
            "authfail" => {
                emit(json!({"type": "result", "subtype": "success", "is_error": true,
                    "result": "Not logged in · Please run /login", "session_id": session()}));
                std::process::exit(1);
            }
            "overloaded" => {
                for attempt in 1..=2 {
                    emit(json!({"type": "system", "subtype": "api_retry", "attempt": attempt,
                        "max_retries": 2, "retry_delay_ms": 10, "error_status": 529, "error": "overloaded"}));
                }
                emit(json!({"type": "result", "subtype": "success", "is_error": true,
                    "api_error_status": 529,
                    "result": "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
                    "session_id": session()}));
                std::process::exit(1);
            }
            other => return Err(CliError::new(format!("fake agent: unknown directive {other:?}"))),
        }
    }
    emit(spent.result());
    Ok(())
}
