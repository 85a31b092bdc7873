//! The operator's views, from another shell while `fleet run` works: `fleet tasks` (rows,
//! totals, tokens and cost from the ledger) — also `--watch` on a pseudo-terminal, redrawing
//! in place, fitting 80 columns, scrolling 50 rows, restoring the terminal on q or Ctrl-C —
//! `fleet task <id> …` (the rendered log and the task's files) and `fleet log` (the
//! supervisor's log).

use serde_json::Value;

use crate::common::pty::Pty;
use crate::harness::{DEADLINE, Fleet};

/// The fake coder with a context window and a price for the model it reports (`fake`):
/// $1 per million prompt tokens, $10 per million output tokens.
const PRICED: &str = "context_limit = 100000\n\n[prices.fake]\ninput = 1.0\noutput = 10.0\n";

fn priced_fleet() -> Fleet {
    let fleet = Fleet::new(&[]);
    fleet.configure_with(&[], PRICED);
    fleet
}

/// `fleet tasks --json`.
fn tasks_json(fleet: &Fleet, extra: &[&str]) -> Value {
    let mut args = vec!["tasks"];
    args.extend_from_slice(extra);
    fleet.ws.json(&args)
}

#[test]
fn fleet_tasks_shows_a_running_agent_with_its_tokens_context_and_cost() {
    let fleet = priced_fleet();
    let id = fleet.task("Count tokens", &["spend 12000 300", "stall"]);
    let supervisor = fleet.start(&["--as", "sup"]);
    supervisor.wait_started(&id, 1);

    let view = supervisor.wait_until("the ledger to show the spend", || {
        let view = tasks_json(&fleet, &[]);
        (view["tasks"][0]["tokens_in"] == 12000).then_some(view)
    });
    assert_eq!(view["running"], 1, "{view:#}");
    assert_eq!(view["max_concurrent"], 2);
    assert_eq!(view["supervisors"][0]["name"], "sup");
    let row = &view["tasks"][0];
    assert_eq!(row["id"], id.as_str());
    assert_eq!(row["title"], "Count tokens");
    assert_eq!(row["coder"], "fake");
    assert_eq!(row["default_coder"], true);
    assert_eq!(row["attempt"], 1);
    assert_eq!(row["tokens_out"], 300);
    assert_eq!(row["context_peak"], 12000);
    assert_eq!(row["context_limit"], 100000);
    assert_eq!(row["context_pct"], 12.0);
    // Priced from the table: 12000 × $1/M + 300 × $10/M.
    let cost = row["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.015).abs() < 1e-9, "{cost}");
    assert!(row["idle_secs"].is_u64() && row["elapsed_secs"].is_u64(), "{row}");
    assert_eq!(row["cost_source"], "priced");
    assert!(view["prices_as_of"].as_str().is_some_and(|d| d.len() == 7), "{view:#}");
    // The task's own view says the same while it runs (issue 33): as JSON, and in the
    // log's opening line.
    let task = fleet.ws.json(&["task", &id]);
    assert_eq!((&task["id"], &task["running"]), (&row["id"], &Value::Bool(true)), "{task:#}");
    assert_eq!((&task["tokens_in"], &task["cost_usd"]), (&row["tokens_in"], &row["cost_usd"]));
    let log = fleet.ws.run(&["task", &id]).ok().stdout;
    let usage = log.lines().next().unwrap_or_default();
    assert!(usage.starts_with("usage: attempt 1 running "), "{log}");
    assert!(usage.ends_with("s · fake·- · 12.0k in / 300 out · ctx 12% · $0.015"), "{usage}");

    let human = fleet.ws.run(&["tasks"]).ok().stdout;
    assert!(human.starts_with("fleet: 1/2 running · 0 ready · 0 blocked"), "{human}");
    assert!(human.contains("supervisor sup (pid"), "{human}");
    for column in ["ID", "CODER·MODEL", "ELAPSED", "IDLE", "CTX", "IN/OUT", "COST"] {
        assert!(human.contains(column), "{column} in\n{human}");
    }
    let row_line = human.lines().find(|l| l.starts_with(&id)).expect("a row for the task");
    for cell in ["fake·", "12%", "12.0k/300", "$0.015"] {
        assert!(row_line.contains(cell), "{cell} in {row_line:?}");
    }
    assert!(human.contains("Count tokens — "), "{human}");
    // Not a terminal: --watch prints once and returns.
    let watched = fleet.ws.run(&["tasks", "--watch"]).ok().stdout;
    assert!(watched.starts_with("fleet: 1/2 running"), "{watched}");

    supervisor.stop();
    let after = fleet.ws.run(&["tasks"]).ok().stdout;
    assert!(after.contains("no supervisor running"), "{after}");
    assert!(after.contains("No running tasks."), "{after}");
}

#[test]
fn the_ledger_keeps_the_reported_cost_and_the_task_files_render_for_people() {
    let fleet = priced_fleet();
    let id = fleet.task("Spend and close", &["spend 5000 100 0.25", "close all done"]);
    fleet.run_until_idle(&[]).ok();

    let ledger: Value = serde_json::from_str(
        &std::fs::read_to_string(fleet.task_file(&id, "ledger.json")).unwrap(),
    )
    .unwrap();
    let attempt = &ledger["attempts"][0];
    assert_eq!(attempt["cost_usd"], 0.25, "the CLI's cost wins over the table: {ledger:#}");
    assert_eq!(attempt["cost_source"], "reported");
    assert_eq!(attempt["tokens_in"], 5000);
    assert_eq!(attempt["tokens_out"], 100);
    assert_eq!(attempt["outcome"], "closed");
    assert!(attempt["ended_at"].is_string());

    let view = tasks_json(&fleet, &["--all"]);
    assert_eq!(view["running"], 0);
    assert_eq!(view["cost_today_usd"], 0.25);
    let row = &view["tasks"][0];
    assert_eq!((row["id"].as_str(), row["status"].as_str()), (Some(id.as_str()), Some("closed")));
    assert_eq!(row["total_cost_usd"], 0.25);
    assert!(fleet.ws.run(&["tasks"]).ok().stdout.contains("$0.250 today"));

    let log = fleet.ws.run(&["task", &id]).ok().stdout;
    for line in [
        "▶ attempt 1 started: fake",
        "agent: spending tokens",
        "→ Bash: bd close",
        "── session ended",
        "■ attempt 1 finished: exit 0",
    ] {
        assert!(log.contains(line), "{line} in\n{log}");
    }
    assert!(!log.contains("{\""), "no raw JSON in the log view:\n{log}");
    let plan = fleet.ws.run(&["task", &id, "plan"]).ok().stdout;
    assert!(plan.contains("plan and status"), "{plan}");
    let prompt = fleet.ws.run(&["task", &id, "prompt"]).ok().stdout;
    assert!(prompt.starts_with(&format!("You are working on fleet task {id}: Spend and close")));
    // The events rendered for people (issue 27), or as they are with --json.
    let events = fleet.ws.run(&["task", &id, "events"]).ok().stdout;
    assert!(events.contains("agent: spending tokens"), "{events}");
    assert!(!events.contains("{\""), "no raw JSON:\n{events}");
    let json = fleet.ws.run(&["task", &id, "events", "--json"]).ok().stdout;
    assert!(json.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "{json}");
    // An agent that wrote nothing on stderr: an empty file is no error.
    let stderr = fleet.ws.run(&["task", &id, "stderr"]).ok().stdout;
    assert_eq!(stderr, "");
    assert!(!log.contains("Exited {") && !log.contains("Some("), "no Debug text:\n{log}");
    let missing = fleet.ws.run(&["task", &id, "qa"]).fails(1);
    assert!(missing.stderr.contains("has no Q&A.md"), "{}", missing.stderr);

    let log = fleet.ws.run(&["log", "-n", "3"]).ok().stdout;
    assert_eq!(log.lines().count(), 3, "{log}");
    let json = fleet.ws.run(&["log", "-n", "0", "--json"]).ok().stdout;
    let finished: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "finished")
        .collect();
    assert_eq!(finished.len(), 1, "{json}");
    assert!(finished[0]["message"].as_str().unwrap().starts_with(&format!("✓ {id} closed")));
}

#[test]
fn kill_blocks_a_running_task_or_requeues_it_and_show_and_blocked_say_so() {
    let fleet = Fleet::new(&[]);
    let stuck = fleet.task("Stuck", &["stall"]);
    let again = fleet.task("Run me twice", &["once stall", "close second run"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&stuck, 1);
    supervisor.wait_started(&again, 1);

    let killed = fleet.ws.run(&["kill", &stuck, "--reason", "wrong approach"]).ok().stdout;
    assert!(killed.starts_with(&format!("■ {stuck} killed")), "{killed}");
    supervisor.wait_finished(&stuck, 1);
    assert_eq!(fleet.show(&stuck)["status"], "blocked");
    let comments = fleet.comments(&stuck);
    assert!(
        comments.iter().any(|c| c == "[fleet] killed by tester: wrong approach; blocked"),
        "{comments:?}"
    );

    let requeued = fleet.ws.json(&["kill", &again, "--requeue"]);
    assert_eq!(requeued["action"], "requeued");
    supervisor.wait_started(&again, 2);
    let finished = supervisor.wait_finished(&again, 2);
    assert!(finished.starts_with(&format!("✓ {again} closed")), "{finished}");

    let not_running = fleet.ws.run(&["kill", &stuck]).fails(1);
    assert!(
        not_running.stderr.contains("is not running (status blocked)"),
        "{}",
        not_running.stderr
    );

    let blocked = fleet.ws.run(&["blocked"]).ok().stdout;
    assert!(blocked.starts_with("✨ No issues blocked by dependencies"), "{blocked}");
    assert!(blocked.contains("⏸ Status blocked, waiting for a human (1):"), "{blocked}");
    // The why is the kill's reason, not the supervisor's note of the agent it stopped.
    let why = "  Why: [fleet] killed by tester: wrong approach; blocked";
    assert!(blocked.contains(&format!("{stuck}: Stuck\n{why}")), "{blocked}");
    assert!(fleet.ws.json(&["blocked"]).as_array().unwrap().is_empty(), "--json keeps bd's shape");
    let stats = fleet.ws.run(&["stats"]).ok().stdout;
    assert!(stats.contains("Status blocked: 1"), "{stats}");
    assert_eq!(fleet.ws.json(&["stats"])["status_blocked_issues"], 1);

    let shown = fleet.ws.run(&["show", &again]).ok().stdout;
    for line in
        ["Coder: fake (default)", "Attempts: 2, last: closed", "Tokens: ", "Working directory: "]
    {
        assert!(shown.contains(line), "{line} in\n{shown}");
    }
    let json = fleet.show(&again);
    assert_eq!(json["run"]["attempts"], 2);
    assert_eq!(json["run"]["last_outcome"], "closed");
    supervisor.stop();
}

#[test]
fn pause_holds_new_agents_until_resume() {
    let fleet = Fleet::new(&[]);
    let paused = fleet.ws.run(&["pause", "--reason", "lunch"]).ok().stdout;
    assert!(paused.starts_with("⏸ new agents paused for every coder"), "{paused}");
    let unknown = fleet.ws.run(&["pause", "--coder", "nosuch"]).fails(1);
    assert!(unknown.stderr.contains("nosuch"), "{}", unknown.stderr);

    // A run that looks at the queue while paused finds nothing it may start, and says so.
    let id = fleet.task("Wait for me", &["close done"]);
    let idle = fleet.run_until_idle(&[]).ok();
    assert!(
        idle.lines.iter().any(|l| l.starts_with("⏸ spawning paused: every coder")),
        "{}",
        idle.stdout()
    );
    let said = "nothing more can run without help — paused: fake: paused by `fleet pause`";
    assert_eq!(idle.starting(said).len(), 1, "{}", idle.stdout());
    assert!(idle.starting("▶ ").is_empty(), "{}", idle.stdout());
    assert_eq!(fleet.show(&id)["status"], "open", "nothing starts while paused");

    let supervisor = fleet.start(&[]);
    supervisor
        .wait_for("the pause to be announced", |l| l.starts_with("⏸ spawning paused: every coder"));
    let view = fleet.ws.run(&["tasks"]).ok().stdout;
    assert!(view.contains("⏸ every coder paused (fleet pause): by tester since"), "{view}");
    assert!(view.contains(": lunch"), "{view}");

    let resumed = fleet.ws.run(&["resume"]).ok().stdout;
    assert!(resumed.starts_with("▶ resumed"), "{resumed}");
    supervisor.wait_started(&id, 1);
    supervisor.wait_finished(&id, 1);
    assert_eq!(fleet.ws.run(&["resume"]).ok().stdout, "nothing was paused\n");
    supervisor.stop();
}

/// A broken runtime.toml — often why one pauses — does not stop pausing everything; a pause
/// that names a coder still needs the file and says what is wrong with it.
#[test]
fn pause_of_everything_works_with_a_broken_runtime_toml() {
    let fleet = Fleet::new(&[]);
    std::fs::write(fleet.home().join("runtime.toml"), "max_concurrent = [\n").unwrap();
    let paused = fleet.ws.run(&["pause"]).ok().stdout;
    assert!(paused.starts_with("⏸ new agents paused for every coder"), "{paused}");
    let named = fleet.ws.run(&["pause", "--coder", "fake"]).fails(1);
    assert!(named.stderr.contains("runtime.toml"), "{}", named.stderr);
    assert_eq!(fleet.ws.run(&["resume"]).ok().stdout.lines().count(), 1);
}

/// A holds file that does not parse (a hand edit gone wrong) is named, not overwritten by the
/// next pause with its one hold, which would drop every other one.
#[test]
fn a_pause_does_not_overwrite_a_holds_file_it_cannot_read() {
    let fleet = Fleet::new(&[]);
    let holds = fleet.home().join("state").join("holds.json");
    std::fs::create_dir_all(holds.parent().unwrap()).unwrap();
    std::fs::write(&holds, "{\"all\": ").unwrap();
    let refused = fleet.ws.run(&["pause"]).fails(1);
    assert!(refused.stderr.contains("holds.json"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&holds).unwrap(), "{\"all\": ");
}

/// A supervisor does not take a holds file it cannot read for "nothing is paused": it names
/// the file and does not start, and no agent runs a task a pause may be holding back.
#[test]
fn a_broken_holds_file_keeps_the_supervisor_from_starting() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Held back", &["close done"]);
    let holds = fleet.home().join("state").join("holds.json");
    std::fs::create_dir_all(holds.parent().unwrap()).unwrap();
    std::fs::write(&holds, "{\"all\": ").unwrap();
    let refused = fleet.ws.run(&["run", "--until-idle"]).fails(1);
    assert!(refused.stderr.contains("holds.json is not a holds file"), "{}", refused.stderr);
    assert!(refused.stderr.contains("lifts every `fleet pause`"), "{}", refused.stderr);
    assert_eq!(fleet.show(&id)["status"], "open");
    assert_eq!(std::fs::read_to_string(&holds).unwrap(), "{\"all\": ");
    // The operator's view says so too, rather than showing nothing paused.
    let tasks = fleet.ws.run(&["tasks"]).ok();
    assert!(tasks.stderr.contains("holds.json is not a holds file"), "{}", tasks.stderr);
    assert!(tasks.stderr.contains("`fleet run` will not start"), "{}", tasks.stderr);

    std::fs::remove_file(&holds).unwrap();
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&id)["status"], "closed");
}

#[test]
fn a_question_is_answered_and_the_next_run_reads_the_answer() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task(
        "Needs a number",
        &["once block magic number?", "once exit 0", "needanswer", "close answered"],
    );
    fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (blocked-by-agent)")]);
    assert_eq!(fleet.show(&id)["status"], "blocked");

    let questions = fleet.ws.run(&["questions"]).ok().stdout;
    assert!(
        questions.contains(&format!("{id}: Needs a number\n  QUESTION: magic number?")),
        "{questions}"
    );
    assert_eq!(fleet.ws.json(&["questions"]).as_array().unwrap().len(), 1);
    let qa = fleet.ws.run(&["task", &id, "qa"]).ok().stdout;
    assert!(qa.contains("## Q: magic number?"), "{qa}");
    let blocked = fleet.ws.run(&["blocked"]).ok().stdout;
    assert!(blocked.contains("Why: QUESTION: magic number?"), "{blocked}");

    let answered = fleet.ws.run(&["answer", &id, "42"]).ok().stdout;
    assert!(answered.starts_with("✓ answer recorded in "), "{answered}");
    assert!(answered.contains("reopened"), "{answered}");
    assert_eq!(fleet.show(&id)["status"], "open");
    assert_eq!(fleet.ws.run(&["questions"]).ok().stdout, "No open questions.\n");
    let qa = fleet.ws.run(&["task", &id, "qa"]).ok().stdout;
    assert!(qa.contains("## A: ") && qa.ends_with("— tester\n\n42\n"), "{qa}");

    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&id)["status"], "closed");
    let prompt = std::fs::read_to_string(fleet.task_file(&id, "prompts/2.md")).unwrap();
    assert!(prompt.contains("A human answered your questions: read "), "{prompt}");
    let log = fleet.ws.run(&["task", &id]).ok().stdout;
    assert!(log.contains("agent: the answer is 42"), "{log}");
}

/// `fleet tasks --watch` on a terminal of `cols` × `rows`.
fn watch_on_terminal(fleet: &Fleet, cols: u16, rows: u16) -> Pty {
    let mut command = fleet.ws.command(&["tasks", "--watch"]);
    command.env("TERM", "xterm-256color");
    Pty::spawn(command, cols, rows)
}

/// Asserts that no line of `screen` is wider than `cols` characters.
#[track_caller]
fn assert_fits(screen: &[String], cols: usize) {
    for line in screen {
        assert!(line.chars().count() <= cols, "wider than {cols}: {line:?}\n{}", screen.join("\n"));
    }
}

/// The task row of `id` on `screen`, if shown.
fn row<'s>(screen: &'s [String], id: &str) -> Option<&'s String> {
    screen.iter().find(|line| line.starts_with(&format!("{id} ")))
}

#[test]
fn tasks_watch_redraws_in_place_on_a_terminal_and_q_restores_it() {
    // The agent idles while the view is watched: no stall check may end it meanwhile.
    let fleet = Fleet::new(&[("stall_timeout_secs", "3600")]);
    let id = fleet.task("Watch me work", &["stall"]);
    let supervisor = fleet.start(&["--as", "sup"]);
    supervisor.wait_started(&id, 1);
    let mut pty = watch_on_terminal(&fleet, 80, 24);

    let screen = pty.wait_screen("the running task's row", DEADLINE, |s| row(s, &id).is_some());
    assert!(screen[0].starts_with("fleet: 1/2 running · 0 ready · 0 blocked"), "{screen:#?}");
    let cells: Vec<&str> = row(&screen, &id).unwrap().split_whitespace().collect();
    assert!(cells[1].starts_with("fake·"), "the coder: {cells:?}");
    assert!(
        cells.iter().any(|c| c.ends_with('s') && c[..c.len() - 1].parse::<u64>().is_ok()),
        "an elapsed time: {cells:?}"
    );
    assert!(screen.iter().any(|l| l.contains("Watch me work — ")), "{screen:#?}");
    assert!(screen.last().unwrap().starts_with("q quits"), "{screen:#?}");
    assert_fits(&screen, 80);

    // The task ends (closed by a person, so its agent is stopped): the row goes and the
    // header counts change, on the same screen.
    fleet.ws.run(&["close", &id, "--reason", "done by hand"]).ok();
    let screen = pty.wait_screen("the row to go", DEADLINE, |s| {
        s[0].starts_with("fleet: 0/2 running") && row(s, &id).is_none()
    });
    assert!(screen.contains(&"No running tasks.".to_owned()), "{screen:#?}");

    pty.send(b"q");
    let status = pty.wait(DEADLINE).expect("q quits");
    assert!(status.success(), "exit 0: {status:?}");
    let text = pty.text();
    assert!(text.starts_with("\u{1b}[?1049h\u{1b}[?25l"), "the alternate screen, no cursor");
    assert!(
        text.ends_with("\u{1b}[?25h\u{1b}[?1049l"),
        "cursor back, alternate screen left: {:?}",
        &text[text.len().saturating_sub(80)..]
    );
    assert!(text.matches("\u{1b}[H").count() >= 3, "redrawn in place");
    assert_eq!(
        text.matches("\u{1b}[2J").count(),
        1,
        "cleared once, on entering, never between frames"
    );
    let lflag = pty.termios().c_lflag;
    assert_eq!(
        lflag & (libc::ICANON | libc::ECHO),
        libc::ICANON | libc::ECHO,
        "the terminal is cooked again"
    );
    supervisor.stop();
}

#[test]
fn tasks_watch_with_many_tasks_fits_80_columns_and_scrolls_under_a_fixed_header() {
    const TASKS: usize = 25;
    let fleet = Fleet::new(&[("max_concurrent", "25"), ("stall_timeout_secs", "3600")]);
    let ids: Vec<String> =
        (1..=TASKS).map(|n| fleet.task(&format!("Job {n}"), &["stall"])).collect();
    let supervisor = fleet.start(&["--as", "sup"]);
    for id in &ids {
        supervisor.wait_started(id, 1);
    }
    let mut pty = watch_on_terminal(&fleet, 80, 50);
    let all_running = |s: &[String]| {
        s.first().is_some_and(|l| l.starts_with(&format!("fleet: {TASKS}/{TASKS} running")))
    };
    let screen = pty.wait_screen("every task running", DEADLINE, all_running);
    assert_eq!(screen.len(), 50, "the whole terminal, no more: {screen:#?}");
    assert_fits(&screen, 80);
    // The header wraps rather than being cut, and no column is cut.
    assert!(screen[1].trim_start().starts_with("supervisor sup (pid "), "{screen:#?}");
    let column_header =
        screen.iter().position(|l| l.starts_with("ID ")).expect("the column header");
    assert!(screen[column_header].ends_with("COST  TRY"), "{screen:#?}");
    let footer = screen.last().unwrap();
    assert!(
        footer.starts_with(&format!(
            "q quits · rows 1-{} of {}",
            50 - column_header - 2,
            2 * TASKS
        )),
        "{footer}"
    );
    let first_shown =
        |s: &[String]| s[column_header + 1].split_whitespace().next().unwrap().to_owned();
    let top = first_shown(&screen);

    // Down a page: the header stays, other rows show.
    pty.send(b" ");
    let paged = pty.wait_screen("a page down", DEADLINE, |s| {
        all_running(s)
            && s.len() > column_header + 1
            && s[column_header + 1].split_whitespace().next() != Some(top.as_str())
    });
    assert!(paged[column_header].starts_with("ID "), "{paged:#?}");
    assert!(paged.last().unwrap().contains(&format!(" of {}", 2 * TASKS)), "{paged:#?}");
    assert_fits(&paged, 80);
    // Up a page: back at the top.
    pty.send(b"\x1b[5~");
    pty.wait_screen("a page up", DEADLINE, |s| {
        all_running(s) && s.len() > column_header + 1 && first_shown(s) == top
    });

    // Ctrl-C quits as q does.
    pty.send(b"\x03");
    let status = pty.wait(DEADLINE).expect("Ctrl-C quits");
    assert!(status.success(), "{status:?}");
    assert!(pty.text().ends_with("\u{1b}[?25h\u{1b}[?1049l"));
    supervisor.stop();
}

#[test]
fn tasks_watch_restores_the_terminal_when_stopped_by_a_signal() {
    let fleet = Fleet::new(&[]);
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let mut pty = watch_on_terminal(&fleet, 80, 24);
        pty.wait_screen("the view", DEADLINE, |s| s[0].starts_with("fleet: 0/0 running"));
        let pid = i32::try_from(pty.pid()).unwrap();
        // SAFETY: signals our own child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let status = pty.wait(DEADLINE).expect("a stop signal ends the watch");
        assert!(status.success(), "signal {signal}: {status:?}");
        assert!(pty.text().ends_with("\u{1b}[?25h\u{1b}[?1049l"), "signal {signal}: restored");
        let lflag = pty.termios().c_lflag;
        assert_eq!(lflag & (libc::ICANON | libc::ECHO), libc::ICANON | libc::ECHO);
    }
}

/// Issue 27: a running task given to someone else leaves `fleet tasks` at once (its agent is
/// stopped; the old lease record names no one's work).
#[test]
fn a_task_handed_to_someone_else_leaves_the_running_list() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 60", "close"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    supervisor.wait_until("the row", || {
        let view = fleet.ws.json(&["tasks"]);
        (view["running"] == 1).then_some(())
    });
    fleet.ws.run(&["update", &id, "--assignee", "bob"]).ok();
    let view = fleet.ws.json(&["tasks"]);
    assert_eq!(view["running"], 0, "{view}");
    assert!(view["tasks"].as_array().unwrap().iter().all(|t| t["id"] != id.as_str()), "{view}");
    supervisor.wait_finished(&id, 1);
    let issue = fleet.show(&id);
    assert_eq!(
        (issue["status"].as_str(), issue["assignee"].as_str()),
        (Some("in_progress"), Some("bob"))
    );
    supervisor.stop().ok();
}
