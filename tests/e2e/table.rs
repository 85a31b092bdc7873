//! The scenarios every coder plays, each written once and run for the coders of its row in
//! the table at the end of this file: one `#[test]` per row and coder, named
//! `<scenario>::<coder>`, skipped (with a reason on stderr) when that coder's CLI is not
//! installed.
//!
//! A scenario checks what holds for every CLI; what only one CLI reports is checked by the
//! extra check its cell names (`then …`), and what differs in the API's wire format is the
//! script its cell names (`scenarios/*.json`). A row lists only the coders it has been proven
//! with; a coder missing from a row is a scenario not yet tried with its CLI.

use std::time::Duration;

use crate::coder::Coder;
use crate::common::poll_within;
use crate::harness::Supervisor;
use crate::{
    DEADLINE, Scene, assert_both_close, assert_closed_done, assert_no_leftovers,
    assert_no_sign_in_pauses_the_coder, assert_outage_pauses_uncharged,
    assert_provider_trouble_is_recognised, assert_released_uncharged,
    assert_stall_killed_released_and_counted, counter, events_of,
};

/// A scenario that has run: its scene and its (stopped) supervisor, for a cell's extra check.
pub struct Ran {
    pub scene: Scene,
    pub supervisor: Supervisor,
}

impl Ran {
    /// The failure-message context.
    pub fn context(&self) -> impl Fn() -> String + '_ {
        self.scene.context(&self.supervisor)
    }
}

/// The comments of the scene's task.
fn comments(scene: &Scene) -> Vec<String> {
    scene.sandbox.comments(&scene.id)
}

/// The agent closes its task with fleet's `bd close` on the first attempt: `--until-idle`
/// ends by itself, the supervisor saw the shell tool succeed, and the model was asked with
/// the configured model and key, given the task in the prompt and the tool output back.
pub fn closes_its_task_with_bd_close(coder: &Coder, script: &str) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    let issue = assert_closed_done(&scene, status, &context);
    assert_eq!(counter(&issue, "attempts"), 1, "{}", context());
    let finished = supervisor.events_of("finished");
    assert_eq!(finished.len(), 1, "{}", context());
    assert_eq!(finished[0]["verdict"], "closed", "{}", context());

    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(
        results.iter().any(|e| e["tool_name"] == coder.shell_tool && e["is_error"] == false),
        "{}",
        context()
    );
    let requests = scene.mock.model_requests();
    let (header, key) = coder.key_header;
    assert_eq!(requests[0].header(header), Some(key), "{}", context());
    if coder.one_request_per_turn {
        assert_eq!(requests.len(), 2, "{}", context());
        assert!(coder.asks_for_the_model(&requests[0]), "{}", context());
        let prompt = requests[0].all_text();
        assert!(prompt.contains(&scene.id), "the prompt names the task{}", context());
    } else {
        assert!(requests.len() >= 2, "{}", context());
        let named = requests.iter().any(|r| r.all_text().contains(&scene.id));
        assert!(named, "the prompt names the task{}", context());
    }
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The agent marks its task blocked with a question: `--until-idle` exits 4 naming it, the
/// task blocked, unassigned, the question in its notes.
pub fn marks_its_task_blocked(coder: &Coder, script: &str) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert_eq!(status.and_then(|s| s.code()), Some(4), "a task left blocked: exit 4{}", context());
    let unfinished = format!("{} blocked (blocked-by-agent)", scene.id);
    assert!(supervisor.stderr().contains(&unfinished), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "blocked", "{}", context());
    assert!(issue["assignee"].as_str().unwrap_or_default().is_empty(), "{}", context());
    assert!(
        issue["notes"].as_str().is_some_and(|n| n.contains("QUESTION: which database?")),
        "{}",
        context()
    );
    assert!(supervisor.finished(&scene.id, "blocked-by-agent"), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The agent exits 0 without closing its task: it is requeued, uncharged, with a backoff and
/// a comment saying so.
pub fn exit_without_close_is_requeued(coder: &Coder, script: &str) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let mut supervisor = scene.start(false);
    let finished = supervisor.wait_finished(&scene.id, "noclose-requeued", DEADLINE);
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "noclose"), 1, "{}", context());
    assert!(issue["fleet"]["retry_after"].is_string(), "requeued with a backoff{}", context());
    let comments = comments(&scene);
    assert!(
        comments.iter().any(|c| c.starts_with(
            "[fleet] attempt 1: the agent exited 0 without closing the task (1 of 3 allowed); requeued"
        )),
        "{comments:?}{}",
        context()
    );
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The API rate limits the agent: the attempt ends rate-limited, the task goes back
/// uncharged with a comment saying so (no colour codes in it), the coder is paused and nothing
/// new starts. `words` are the CLI's own words about the limit, recorded in its `rate_limit`
/// events.
pub fn rate_limit_releases_uncharged_and_pauses_spawning(
    coder: &Coder,
    script: &str,
    words: &'static [&'static str],
) -> Option<Ran> {
    let scene = coder.scene(script, &[], &coder.retries(2), true)?;
    let mut supervisor = scene.start(false);
    let finished = supervisor.wait_finished(&scene.id, "rate-limited", DEADLINE);
    let paused = supervisor.wait_event(Duration::from_secs(5), |e| e["type"] == "paused");
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(finished.is_some(), "the attempt ends rate-limited{}", context());
    assert!(
        paused.as_ref().is_some_and(|p| p["coder"] == coder.name),
        "spawning of {} is paused: {paused:?}{}",
        coder.name,
        context()
    );
    assert!(status.is_some_and(|s| s.success()), "fleet run exits 0 on SIGTERM{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    assert_eq!(counter(&issue, "attempts"), 1, "{}", context());
    assert_eq!(supervisor.events_of("claimed").len(), 1, "no new spawn while paused{}", context());
    let comments = comments(&scene);
    assert!(
        comments.iter().any(|c| c.contains("rate limited") && c.contains("not charged")),
        "{comments:?}{}",
        context()
    );
    assert!(comments.iter().all(|c| !c.contains('\u{1b}')), "no colour codes: {comments:?}");
    let limits = events_of(&scene.sandbox, &scene.id, "rate_limit");
    for says in words {
        assert!(
            limits.iter().any(|e| e["text"].as_str().is_some_and(|t| t.contains(says))),
            "the CLI's words {says:?} are recorded{}",
            context()
        );
    }
    assert!(!scene.mock.model_requests().is_empty(), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The prompt nears the model's window: the supervisor stops the agent, releases the task
/// uncharged, and a fresh session closes it.
pub fn context_pressure_stops_the_agent_and_a_fresh_session_finishes(
    coder: &Coder,
    script: &str,
) -> Option<Ran> {
    let window = coder.window.expect("a coder whose context size fleet knows");
    let scene = coder.scene_with(script, &[])?;
    let mut supervisor = scene.start(true);
    let status = supervisor.wait_exit(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let verdicts: Vec<String> = supervisor
        .events_of("finished")
        .iter()
        .map(|e| e["verdict"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(verdicts, ["context-pressure", "closed"], "{}", context());
    let issue = scene.sandbox.show(&scene.id);
    assert_eq!(issue["status"], "closed", "{}", context());
    assert_eq!(counter(&issue, "attempts"), 2, "{}", context());
    assert_eq!(counter(&issue, "failures"), 0, "context pressure is not charged{}", context());
    let comments = comments(&scene);
    let said = format!(
        "[fleet] attempt 1: context pressure (190000 of {window} tokens); released, not charged"
    );
    assert!(comments.iter().any(|c| c.starts_with(&said)), "{comments:?}{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The API never answers: after `stall_timeout_secs` (8) the runner kills the agent, leaving
/// no process behind, and requeues the task uncharged with a backoff, the stall counted.
pub fn stall_is_killed_released_and_counted(coder: &Coder, script: &str) -> Option<Ran> {
    let scene = coder.scene_with(script, &[("stall_timeout_secs", "8")])?;
    let (supervisor, issue) = assert_stall_killed_released_and_counted(&scene);
    assert!(issue["fleet"]["retry_after"].is_string(), "requeued with a backoff: {issue:#}");
    let comments = comments(&scene);
    assert!(
        comments
            .iter()
            .any(|c| c.starts_with("[fleet] attempt 1: no output for 8s, killed (stall 1 of 2)")),
        "{comments:?}"
    );
    Some(Ran { scene, supervisor })
}

/// SIGTERM to the supervisor while the agent waits on the API: the agent is stopped and the
/// task released uncharged, with a comment saying why.
pub fn sigterm_to_the_supervisor_stops_the_agent_and_releases_the_task(
    coder: &Coder,
    script: &str,
) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let mut supervisor = scene.start(false);
    // Wait until the agent is mid-request (the mock never answers).
    let reached =
        poll_within(DEADLINE, || (!scene.mock.model_requests().is_empty()).then_some(())).is_some();
    // The agent is found by the same scan that checks for leftovers below.
    let running = scene.sandbox.leftover_processes(Some(supervisor.pid()));
    let status = supervisor.terminate(DEADLINE);
    let context = scene.context(&supervisor);
    assert!(reached, "the agent reached the API{}", context());
    assert!(running.iter().any(|(_, cmd)| cmd.contains(coder.name)), "{running:?}{}", context());
    assert!(status.is_some_and(|s| s.success()), "{}", context());

    let issue = scene.sandbox.show(&scene.id);
    assert_released_uncharged(&issue, &context);
    let comments = comments(&scene);
    assert!(
        comments
            .iter()
            .any(|c| c == "[fleet] attempt 1: supervisor shutting down; released, not charged"),
        "{comments:?}{}",
        context()
    );
    assert!(supervisor.finished(&scene.id, "shutdown"), "{}", context());
    assert_no_leftovers(&scene.sandbox, None, &context);
    drop(context);
    Some(Ran { scene, supervisor })
}

/// The provider is down (the CLI gives up after one retry): the coder is paused for an
/// outage and the task goes back uncharged, not even counted as an attempt, with a comment
/// quoting `words` of the API.
pub fn provider_outage_pauses_the_coder_and_charges_nothing(
    coder: &Coder,
    script: &str,
    words: &'static [&'static str],
) -> Option<Ran> {
    let scene = coder.scene(script, &[], &coder.retries(1), true)?;
    let mut supervisor = scene.start(false);
    let mut says = vec!["not charged"];
    says.extend_from_slice(words);
    assert_outage_pauses_uncharged(&scene, &mut supervisor, coder.name, &says);
    Some(Ran { scene, supervisor })
}

/// The CLI cannot sign in (no key): the coder is paused for authentication, the task
/// charged nothing, and nothing reached the API.
pub fn without_credentials_pauses_the_coder_and_charges_nothing(
    coder: &Coder,
    script: &str,
) -> Option<Ran> {
    let scene = coder.scene(script, &[], &[], false)?;
    let supervisor = assert_no_sign_in_pauses_the_coder(&scene, coder.name);
    Some(Ran { scene, supervisor })
}

/// Two agents started at the same moment (each with its own CLI state) both close their
/// tasks on the first attempt.
pub fn two_agents_started_together_both_close_their_tasks(
    coder: &Coder,
    script: &str,
) -> Option<Ran> {
    let scene = coder.scene_with(script, &[("max_concurrent", "2")])?;
    let second = scene.sandbox.create_task(&format!("e2e {} {script}, the second", coder.name));
    let supervisor = assert_both_close(&scene, &second);
    Some(Ran { scene, supervisor })
}

/// The CLI retries a rate limit (a 429 with a quota) silently, saying so only on stderr: the
/// supervisor recognises it at once, not as a stall.
pub fn retrying_a_429_on_stderr_is_a_rate_limit_at_once(
    coder: &Coder,
    script: &str,
) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let supervisor =
        assert_provider_trouble_is_recognised(&scene, coder.name, "rate-limited", "rate_limit");
    Some(Ran { scene, supervisor })
}

/// The CLI retries a server error (500) silently, saying so only on stderr: the supervisor
/// recognises an outage at once, not as a stall.
pub fn retrying_a_500_on_stderr_is_an_outage_at_once(coder: &Coder, script: &str) -> Option<Ran> {
    let scene = coder.scene_with(script, &[])?;
    let supervisor =
        assert_provider_trouble_is_recognised(&scene, coder.name, "coder-paused", "outage");
    Some(Ran { scene, supervisor })
}

// --- what only some CLIs report ---------------------------------------------------------------

/// The CLI's stream names the model and the shell command, and ends its session cleanly
/// (claude, gemini).
fn reports_model_command_and_end(ran: &Ran, coder: &Coder) {
    let (scene, context) = (&ran.scene, ran.context());
    let started = events_of(&scene.sandbox, &scene.id, "session_started");
    assert_eq!(started.len(), 1, "{}", context());
    assert_eq!(started[0]["model"], coder.model, "{}", context());
    let calls = events_of(&scene.sandbox, &scene.id, "tool_use");
    assert!(
        calls.iter().any(|e| e["tool_name"] == coder.shell_tool
            && e["text"].as_str().is_some_and(|t| t.contains("bd close $FLEET_TASK_ID"))),
        "{}",
        context()
    );
    ends_its_session_cleanly(ran);
}

/// The CLI's one session ended without an error.
fn ends_its_session_cleanly(ran: &Ran) {
    let (scene, context) = (&ran.scene, ran.context());
    let ended = events_of(&scene.sandbox, &scene.id, "session_ended");
    assert!(ended.len() == 1 && ended[0]["is_error"] == false, "{}", context());
}

/// claude's closing session: every tool call succeeded, and its second request carried the
/// output of fleet's `bd close`, which names the task.
fn claude_closes(ran: &Ran) {
    reports_model_command_and_end(ran, &crate::coder::CLAUDE);
    let (scene, context) = (&ran.scene, ran.context());
    let results = events_of(&scene.sandbox, &scene.id, "tool_result");
    assert!(results.iter().all(|e| e["is_error"] == false), "{}", context());
    let requests = scene.mock.model_requests();
    assert!(requests[1].all_text().contains(&scene.id), "{}", context());
}

/// gemini's closing session; the user's own Gemini settings are untouched: fleet's live in
/// the task directory.
fn gemini_closes(ran: &Ran) {
    reports_model_command_and_end(ran, &crate::coder::GEMINI);
    let (scene, context) = (&ran.scene, ran.context());
    assert!(!scene.sandbox.user_home.join(".gemini/settings.json").exists(), "{}", context());
    let settings = scene.sandbox.task_dir(&scene.id).join("gemini-home/.gemini/settings.json");
    assert!(settings.is_file(), "{}", context());
}

/// The agent's opencode database is its own, in the task directory.
fn opencode_closes(ran: &Ran) {
    let (scene, context) = (&ran.scene, ran.context());
    assert!(scene.sandbox.task_dir(&scene.id).join("opencode.db").is_file(), "{}", context());
}

/// claude reports the API's 429 in its stream.
fn claude_saw_the_429(ran: &Ran) {
    let (scene, context) = (&ran.scene, ran.context());
    let saw_429 = scene.sandbox.events(&scene.id).iter().any(|e| e["http_status"] == 429);
    assert!(saw_429, "the CLI reported the 429{}", context());
}

/// A daily quota is said to be one in the comment.
fn says_daily_window(ran: &Ran) {
    let comments = comments(&ran.scene);
    assert!(comments.iter().any(|c| c.contains("(daily window)")), "{comments:?}");
}

/// claude's stalled session: the CLI was waiting on its one request.
fn claude_waited_on_the_api(ran: &Ran) {
    assert_eq!(ran.scene.mock.model_requests().len(), 1, "the CLI was waiting on the API");
}

/// claude's first session was cut off after at most its first tool result (2.1.197 was
/// killed while `sleep 60` ran; 2.1.332 refuses a long `sleep` at once and may send that
/// refusal back before the SIGTERM lands), and a second session reached the API.
fn claude_sessions_cut_and_fresh(ran: &Ran) {
    let (scene, context) = (&ran.scene, ran.context());
    let requests = scene.mock.model_requests();
    assert!(requests.iter().any(|r| r.session == 1), "{}", context());
    assert!(!requests.iter().any(|r| r.session == 0 && r.turn > 1), "{}", context());
}

/// codex's error is recorded in events.jsonl.
fn codex_recorded_the_error(ran: &Ran) {
    let errors = events_of(&ran.scene.sandbox, &ran.scene.id, "error");
    assert!(!errors.is_empty(), "the CLI's error is recorded in events.jsonl");
}

// --- the table ---------------------------------------------------------------------------------

/// `scenario { test: CODER(args…) [then check], … }` makes a module `scenario` with one
/// `#[test] fn test` per cell, which plays `scenario(&CODER, args…)` and, if the CLI was
/// there, runs the cell's extra check on what ran.
macro_rules! table {
    ($($scenario:ident { $($test:ident: $coder:ident($($arg:expr),*) $(then $check:expr)?),+ $(,)? })+) => {
        $(
            mod $scenario {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    fn $test() {
                        #[allow(unused_variables)]
                        let Some(ran) = super::$scenario(&crate::coder::$coder, $($arg),*) else {
                            return;
                        };
                        $( ($check)(&ran); )?
                    }
                )+
            }
        )+
    };
}

table! {
    closes_its_task_with_bd_close {
        claude: CLAUDE("close") then claude_closes,
        codex: CODEX("close"),
        gemini: GEMINI("close") then gemini_closes,
        opencode: OPENCODE("close") then opencode_closes,
    }
    marks_its_task_blocked {
        claude: CLAUDE("blocked"),
    }
    exit_without_close_is_requeued {
        claude: CLAUDE("noclose") then ends_its_session_cleanly,
        gemini: GEMINI("noclose"),
        opencode: OPENCODE("noclose"),
    }
    rate_limit_releases_uncharged_and_pauses_spawning {
        claude: CLAUDE("rate_limit", &[]) then claude_saw_the_429,
        codex: CODEX("rate_limit", &[]),
        gemini: GEMINI("gemini_rate_limit", &["retry after 3600s"]),
        gemini_daily_quota: GEMINI("gemini_daily_quota", &["exhausted your daily quota"])
            then says_daily_window,
        opencode: OPENCODE("rate_limit", &[]),
    }
    context_pressure_stops_the_agent_and_a_fresh_session_finishes {
        claude: CLAUDE("context_pressure") then claude_sessions_cut_and_fresh,
        opencode: OPENCODE("context_pressure_after_step"),
    }
    stall_is_killed_released_and_counted {
        claude: CLAUDE("stall") then claude_waited_on_the_api,
        gemini: GEMINI("stall"),
        opencode: OPENCODE("stall"),
    }
    sigterm_to_the_supervisor_stops_the_agent_and_releases_the_task {
        claude: CLAUDE("stall"),
    }
    provider_outage_pauses_the_coder_and_charges_nothing {
        claude: CLAUDE("overloaded", &["529"]),
        codex: CODEX("server_error", &[]) then codex_recorded_the_error,
    }
    without_credentials_pauses_the_coder_and_charges_nothing {
        claude: CLAUDE("close"),
        gemini: GEMINI("close"),
    }
    two_agents_started_together_both_close_their_tasks {
        gemini: GEMINI("close"),
        opencode: OPENCODE("close"),
    }
    retrying_a_429_on_stderr_is_a_rate_limit_at_once {
        gemini: GEMINI("quota_retry"),
        opencode: OPENCODE("quota_retry_chat"),
    }
    retrying_a_500_on_stderr_is_an_outage_at_once {
        gemini: GEMINI("server_error"),
        opencode: OPENCODE("server_error"),
    }
}
