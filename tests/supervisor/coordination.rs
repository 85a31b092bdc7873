//! Issue 32 under a running supervisor, with the `exec` coder (the task's description is the
//! agent's shell script): an agent claiming another task is refused and nothing is left in
//! progress; mail sent by one task's agent reaches the next attempt's prompt of another and
//! leaves its inbox once acknowledged; a reservation made inside an attempt lapses when the
//! attempt ends; and two tasks whose `touches` overlap never run at once, the second shown
//! waiting and why.

use std::path::Path;

use crate::common::wait_for;
use crate::harness::Fleet;

fn exec_fleet(settings: &[(&str, &str)]) -> Fleet {
    let mut all = vec![("coder", "\"exec\"")];
    all.extend_from_slice(settings);
    Fleet::new(&all)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn an_agent_claiming_another_task_is_refused_and_nothing_is_left_in_progress() {
    let fleet = exec_fleet(&[("max_concurrent", "1")]);
    let other = fleet.ws.create("other work", &["-p", "3", "-d", "true"]);
    let log = fleet.home().join("claims.log");
    let script = format!(
        "bd update {other} --claim 2>>{log}; echo \"update=$?\" >>{log}\n\
         bd ready --claim 2>>{log}; echo \"ready=$?\" >>{log}\n\
         bd prime >{primer}",
        log = log.display(),
        primer = fleet.home().join("primer.md").display()
    );
    let own = fleet.ws.create("own work", &["-p", "0", "-d", &script]);
    fleet.run_until_idle(&[]).ok();

    let log = read(&log);
    assert!(log.contains("update=1") && log.contains("ready=1"), "{log}");
    assert!(log.contains(&format!("this agent runs {own} in a fleet run")), "{log}");
    // The other task ran under the supervisor, not the agent; nothing is held by no one.
    assert_eq!(fleet.show(&own)["status"], "closed");
    assert_eq!(fleet.show(&other)["status"], "closed");
    let tasks = fleet.ws.json(&["tasks"]);
    assert_eq!(tasks["unheld"], serde_json::json!([]), "{tasks}");
    // The primer inside the run says one task, and never to claim more.
    let primer = read(&fleet.home().join("primer.md"));
    assert!(primer.contains(&format!("exactly one task: {own}")), "{primer}");
    assert!(!primer.contains("`bd ready --claim` does both"), "{primer}");
}

#[test]
fn mail_between_two_tasks_reaches_the_inbox_and_the_next_prompt() {
    let fleet = exec_fleet(&[("max_concurrent", "1")]);
    let home = fleet.home().display().to_string();
    // The reader is created first (to know its id) but waits for the writer (a blocking edge).
    let reader_script = format!(
        "bd mail inbox >{home}/inbox.txt\n\
         id=$(bd mail inbox --json | grep -o 'm-[0-9a-z]\\{{8\\}}' | head -1)\n\
         bd mail ack \"$id\" && bd mail inbox >{home}/after.txt"
    );
    let reader = fleet.ws.create("reader", &["-d", &reader_script]);
    let writer = fleet.ws.create(
        "writer",
        &[
            "-d",
            &format!("bd mail send {reader} \"the API moved to v2\""),
            "--deps",
            &format!("blocks:{reader}"),
        ],
    );
    fleet.run_until_idle(&[]).ok();

    let inbox = read(&fleet.home().join("inbox.txt"));
    assert!(
        inbox.contains("the API moved to v2") && inbox.contains(&format!("({writer})")),
        "{inbox}"
    );
    let after = read(&fleet.home().join("after.txt"));
    assert!(after.contains(&format!("No messages for {reader}")), "{after}");
    let prompt = fleet.ws.run(&["task", &reader, "prompt"]).ok().stdout;
    assert!(prompt.contains("Messages for this task"), "{prompt}");
    assert!(prompt.contains(&format!("(task {writer}): the API moved to v2")), "{prompt}");
    // `fleet task ID` keeps the conversation in view, acknowledged or not.
    let view = fleet.ws.run(&["task", &reader]).ok().stdout;
    assert!(view.starts_with("── messages ──") && view.contains("read by"), "{view}");
}

#[test]
fn a_reservation_made_inside_an_attempt_lapses_when_the_attempt_ends() {
    let fleet = exec_fleet(&[]);
    let home = fleet.home().display().to_string();
    let script = format!(
        "bd reserve 'src/**' --exclusive --reason 'moving the store' >/dev/null\n\
         touch {home}/reserved\n\
         while [ ! -e {home}/go ]; do sleep 0.05; done"
    );
    let task = fleet.ws.create("reserves", &["-d", &script]);
    let supervisor = fleet.start(&["--until-idle"]);
    wait_for("the reservation", || fleet.home().join("reserved").exists().then_some(()));
    let live = fleet.ws.json(&["tasks"])["reservations"].clone();
    assert_eq!(live[0]["task"], task.as_str(), "{live}");
    assert_eq!(live[0]["globs"], serde_json::json!(["src/**"]));
    assert!(!live[0]["attempt"].as_str().unwrap_or_default().is_empty(), "{live}");
    std::fs::write(fleet.home().join("go"), "").unwrap();
    supervisor.wait().ok();

    assert_eq!(fleet.show(&task)["status"], "closed");
    assert_eq!(fleet.ws.json(&["tasks"])["reservations"], serde_json::json!([]));
    // The settlement released it: it is gone, not merely lapsed.
    let files = fleet.ws.run(&["task", &task, "files"]).ok().stdout;
    assert!(files.contains("holds no file reservations"), "{files}");
}

#[test]
fn two_tasks_whose_touches_overlap_never_run_at_once() {
    let fleet = exec_fleet(&[("max_concurrent", "3")]);
    let home = fleet.home().display().to_string();
    // Each agent holds a lock directory while it runs: a second one inside at once is caught.
    let hold = |name: &str, wait: bool| {
        let wait = if wait {
            format!("while [ ! -e {home}/go ]; do sleep 0.05; done\n")
        } else {
            String::new()
        };
        format!(
            "mkdir {home}/lock 2>/dev/null || echo OVERLAP >>{home}/runs.log\n\
             echo \"start {name}\" >>{home}/runs.log\n\
             touch {home}/started-{name}\n{wait}\
             rmdir {home}/lock"
        )
    };
    let first = fleet
        .ws
        .create("store", &["-p", "0", "--touches", "src/store/**", "-d", &hold("first", true)]);
    let second = fleet.ws.create(
        "all of src",
        &["-p", "1", "--touches", "src/**/*.rs", "-d", &hold("second", false)],
    );
    let apart = fleet.ws.create(
        "docs",
        &["-p", "2", "--touches", "docs/**", "-d", &format!("touch {home}/started-apart")],
    );
    let supervisor = fleet.start(&["--until-idle"]);
    wait_for("the first task to start", || {
        fleet.home().join("started-first").exists().then_some(())
    });
    // Tasks apart run meanwhile; the overlapping one waits, and says why.
    wait_for("the task apart to run", || fleet.home().join("started-apart").exists().then_some(()));
    let tasks = fleet.ws.json(&["tasks"]);
    let waiting = tasks["waiting"].as_array().unwrap();
    assert_eq!(waiting.len(), 1, "{tasks}");
    assert_eq!(waiting[0]["id"], second.as_str());
    let why = waiting[0]["reason"].as_str().unwrap();
    assert!(
        why.contains("src/**/*.rs") && why.contains(&first) && why.contains("src/store/**"),
        "{why}"
    );
    assert_eq!(fleet.show(&second)["status"], "open");
    let text = fleet.ws.run(&["tasks"]).ok().stdout;
    assert!(text.contains(&format!("○ {second} waiting")), "{text}");

    std::fs::write(fleet.home().join("go"), "").unwrap();
    supervisor.wait().ok();
    for id in [&first, &second, &apart] {
        assert_eq!(fleet.show(id)["status"], "closed", "{id}");
    }
    let runs = read(&fleet.home().join("runs.log"));
    assert!(!runs.contains("OVERLAP"), "{runs}");
    assert!(runs.find("start first") < runs.find("start second"), "{runs}");
}
