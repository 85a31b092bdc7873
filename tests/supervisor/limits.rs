//! Limits the supervisor enforces on an agent: rate limits (which pause spawning with that coder), stalls
//! (no output for `stall_timeout_secs`) and the attempt timeout.

use jiff::{SignedDuration, Timestamp};

use crate::harness::{Fleet, counter};

/// The time in a `⏸ fake paused until <time> (rate limit): …` line.
fn pause_end(line: &str) -> Timestamp {
    let rest = line.strip_prefix("⏸ fake paused until ").expect("a pause line");
    rest.split_whitespace().next().unwrap().parse().expect("a timestamp")
}

/// An agent hits a subscription window's limit: it is stopped and released without charge,
/// and no other task starts while spawning is paused.
fn rate_limit_window_pauses_spawning(window: &str) {
    let fleet = Fleet::new(&[("max_concurrent", "1")]);
    let limited = fleet.task_with(
        "Hits the limit",
        &[&format!("once ratelimit {window}"), "close"],
        &["--priority", "0"],
    );
    let other = fleet.task_with("Waits its turn", &["close"], &["--priority", "2"]);

    let supervisor = fleet.start(&["--until-idle"]);
    supervisor.wait_started(&limited, 1);
    let finished = supervisor.wait_finished(&limited, 1);
    assert!(
        finished.starts_with(&format!(
            "• {limited} rate-limited: [fleet] attempt 1: rate limited ({window} window); \
             released, not charged; spawning paused until "
        )),
        "{finished}"
    );
    let pause = supervisor.wait_for("the pause", |l| l.starts_with("⏸ fake paused until "));
    // The fake agent's limit resets in an hour: the pause lasts until then.
    let until = pause_end(&pause);
    assert!(until > Timestamp::now() + SignedDuration::from_mins(50), "{pause}");

    // The supervisor looks at the queue with the pause in force and finds nothing it may
    // start: it says so, and an `--until-idle` run ends.
    let idle = supervisor.wait_for("the idle line", |l| {
        l.starts_with("nothing more can run without help — paused: ")
    });
    assert!(idle.contains("fake: rate limit until "), "{idle}");
    let run = supervisor.wait().unfinished(&[&format!("{limited} open (rate-limited)")]);
    let lines = &run.lines;
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("▶ ")).count(),
        1,
        "nothing may start during the pause:\n{}",
        lines.join("\n")
    );
    let issue = fleet.show(&limited);
    assert_eq!(issue["status"], "open");
    assert_eq!(issue["assignee"], serde_json::Value::Null);
    assert_eq!(counter(&issue, "failures"), 0, "a rate limit is not charged");
    assert_eq!(counter(&issue, "attempts"), 1);
    let waiting = fleet.show(&other);
    assert_eq!(waiting["status"], "open");
    assert_eq!(counter(&waiting, "attempts"), 0, "the other ready task was not started");
    let finished = fleet.runner_lines(&limited, "attempt_finished");
    assert!(finished[0]["outcome"].as_str().unwrap().contains(&format!("({window} window)")));
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — rate-limited 1");
    fleet.assert_no_processes_left(None);
}

#[test]
fn five_hour_rate_limit_releases_uncharged_and_pauses_spawning() {
    rate_limit_window_pauses_spawning("five_hour");
}

#[test]
fn seven_day_rate_limit_releases_uncharged_and_pauses_spawning() {
    rate_limit_window_pauses_spawning("seven_day");
}

#[test]
fn http_429_pauses_spawning_for_the_default_pause_then_work_resumes() {
    let fleet = Fleet::new(&[("max_concurrent", "1"), ("rate_limit_default_pause_secs", "2")]);
    let limited =
        fleet.task_with("Hits a 429", &["once 429", "close after the pause"], &["--priority", "0"]);
    let other = fleet.task_with("Runs after the pause", &["close"], &["--priority", "2"]);

    let run = fleet.run_until_idle(&[]).ok();

    let pauses = run.starting("⏸ fake paused until ");
    assert_eq!(pauses.len(), 1, "one pause, one line:\n{}", run.stdout());
    let until = pause_end(pauses[0]);
    let first = fleet.show(&limited);
    assert_eq!(first["status"], "closed");
    assert_eq!(counter(&first, "attempts"), 2);
    assert_eq!(counter(&first, "failures"), 0, "a 429 is not charged");
    let comments = fleet.comments(&limited);
    assert!(
        comments[0].starts_with(
            "[fleet] attempt 1: rate limited; released, not charged; spawning paused until "
        ),
        "{comments:#?}"
    );
    assert_eq!(fleet.show(&other)["status"], "closed");
    // Nothing started before the pause ended.
    for (id, attempt) in [(&limited, 1), (&other, 0)] {
        let started = &fleet.runner_lines(id, "attempt_started")[attempt];
        let at: Timestamp = started["ts"].as_str().unwrap().parse().unwrap();
        assert!(at >= until, "{id} started at {at}, during the pause (until {until})");
    }
    // The CLI's own retries of the 429 are informational; only its final 429 result stopped it.
    let events = fleet.json_lines(&limited, "events.jsonl");
    let retries = events.iter().filter(|e| e["kind"] == "api_retry").count();
    let limits: Vec<_> = events.iter().filter(|e| e["kind"] == "rate_limit").collect();
    assert_eq!(retries, 2, "{events:#?}");
    assert_eq!(limits.len(), 1, "{events:#?}");
    assert_eq!(limits[0]["http_status"], 429);
}

#[test]
fn silent_agent_is_killed_as_a_stall_and_counted_apart_from_failures() {
    let fleet = Fleet::new(&[
        ("stall_timeout_secs", "1"),
        ("max_stalls", "2"),
        ("retry_backoff_secs", "600"),
    ]);
    let id = fleet.task("Hangs on a prompt", &["stall"]);

    let supervisor = fleet.start(&[]);
    let finished = supervisor.wait_finished(&id, 1);
    assert_eq!(
        finished,
        format!(
            "• {id} stall-requeued: [fleet] attempt 1: no output for 1s, killed (stall 1 of 2); \
             requeued after 600s"
        )
    );
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(issue["assignee"], serde_json::Value::Null);
    assert_eq!(counter(&issue, "stalls"), 1);
    assert_eq!(counter(&issue, "failures"), 0, "a stall is not a failure");
    assert_eq!(issue["defer_until"], serde_json::Value::Null, "a backoff is not a deferral");
    let deferred: Timestamp =
        issue["fleet"]["retry_after"].as_str().expect("backoff").parse().unwrap();
    assert!(deferred > Timestamp::now() + SignedDuration::from_mins(5));
    fleet.assert_no_processes_left(Some(supervisor.pid()));
    supervisor.stop().ok();
}

#[test]
fn attempt_running_past_the_timeout_is_killed_and_charged() {
    let fleet = Fleet::new(&[("attempt_timeout_secs", "1"), ("max_failures", "1")]);
    let id = fleet.task("Endless build", &["say building", "sleep 60"]);

    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (failure-blocked)")]);

    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked");
    assert_eq!(counter(&issue, "attempts"), 1);
    assert_eq!(
        issue["notes"],
        "[fleet] retry limit (1) exhausted; last failure: ran past the attempt timeout of 1s"
    );
    assert_eq!(
        fleet.comments(&id),
        ["[fleet] attempt 1: the agent ran past the attempt timeout of 1s; failure 1 of 1 — \
          retry limit reached, blocked."]
    );
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — failure-blocked 1");
    fleet.assert_no_processes_left(None);
}

#[test]
fn until_idle_waits_for_its_own_backoff_but_not_for_work_a_person_deferred() {
    let fleet = Fleet::new(&[("retry_backoff_secs", "1"), ("retry_backoff_max_secs", "1")]);
    let flaky = fleet.task("Fails once", &["once exit 1", "close"]);
    let later = fleet.task_with("Deferred by a person", &["close"], &["--defer", "+1d"]);

    let run = fleet.run_until_idle(&[]).ok();

    let issue = fleet.show(&flaky);
    assert_eq!(issue["status"], "closed", "the run waited out its backoff\n{}", run.stdout());
    assert_eq!(counter(&issue, "attempts"), 2);
    assert_eq!(issue["defer_until"], serde_json::Value::Null, "a backoff is not a deferral");
    let deferred = fleet.show(&later);
    assert_eq!(deferred["status"], "open", "a person's deferral is left alone");
    assert_eq!(counter(&deferred, "attempts"), 0);
}
