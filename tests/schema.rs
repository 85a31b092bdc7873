//! The JSON Schemas in `schema/` against what fleet really prints and journals.
//!
//! One scenario drives the real binary through every command with `--json` (init, create with
//! parents, dependencies and labels, show, update, close with its guards, reopen, delete preview
//! and --force, the dep, comment and label commands, claim/release, the queries and failing
//! commands) and validates each stdout — and each JSON error on stderr — against the schema of
//! its command. The journal the scenario leaves behind is validated op by op against
//! `op.schema.json`. Other tests check that the schemas hang together (ids, references,
//! README), that beads' own JSONL lines fit `issue.schema.json`, and that the validator does
//! reject wrong documents, so a passing run means something. A second scenario runs the
//! supervisor with the fake agent (in the foreground, then in the background) and validates the
//! operator's outputs: `fleet run --json` events, `run status|stop|restart`, `tasks`,
//! `questions`, `answer`, `kill`, `pause`, `resume`, `log`, `demo` and `show`'s run info.

#[path = "common/mod.rs"]
mod common;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::daemon::Background;
use common::{Run, Workspace};
use fleet::op::OpKind;
use jsonschema::{Resource, Validator};
use serde_json::{Value, json};

/// The base of every schema's `$id`; relative `$ref`s between files resolve against it.
const BASE: &str = "https://fleet.example/schema/";

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// Every schema file, parsed, by file name.
fn schema_files() -> BTreeMap<String, Value> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(schema_dir()).expect("read schema/") {
        let path = entry.expect("schema/ entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".schema.json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
        files.insert(name, doc);
    }
    files
}

/// Compiled validators for every schema file, each able to resolve references to the others,
/// and a record of which ones a test used.
struct Schemas {
    validators: BTreeMap<String, Validator>,
    used: RefCell<BTreeSet<String>>,
}

impl Schemas {
    fn load() -> Schemas {
        let files = schema_files();
        let resources: Vec<(String, Resource)> = files
            .iter()
            .map(|(name, doc)| {
                let resource = Resource::from_contents(doc.clone())
                    .unwrap_or_else(|e| panic!("{name} is not a schema resource: {e}"));
                (format!("{BASE}{name}"), resource)
            })
            .collect();
        let validators = files
            .iter()
            .map(|(name, doc)| {
                // Building checks the schema against the draft 2020-12 meta-schema and resolves
                // every `$ref`; with no network or file retrieval compiled in, a reference to
                // a file that is not registered fails here.
                let validator = jsonschema::options()
                    .should_validate_formats(true)
                    .with_resources(resources.clone().into_iter())
                    .build(doc)
                    .unwrap_or_else(|e| panic!("{name} does not compile: {e}"));
                (name.clone(), validator)
            })
            .collect();
        Schemas { validators, used: RefCell::new(BTreeSet::new()) }
    }

    /// The validation errors of `doc` against schema `name` (`"show"` means show.schema.json).
    fn errors(&self, name: &str, doc: &Value) -> Vec<String> {
        let file = format!("{name}.schema.json");
        let validator = self.validators.get(&file).unwrap_or_else(|| panic!("no schema/{file}"));
        self.used.borrow_mut().insert(file);
        validator
            .iter_errors(doc)
            .map(|e| format!("at {:?}: {e}", e.instance_path.as_str()))
            .collect()
    }

    /// Asserts that `doc` is valid against schema `name`.
    #[track_caller]
    fn check(&self, name: &str, doc: &Value) {
        let errors = self.errors(name, doc);
        assert!(
            errors.is_empty(),
            "output does not match schema/{name}.schema.json:\n  {}\ndocument:\n{}",
            errors.join("\n  "),
            serde_json::to_string_pretty(doc).unwrap()
        );
    }

    /// Asserts that `doc` is invalid against schema `name`, with an error at `path` (a JSON
    /// pointer into the document), and returns the errors.
    #[track_caller]
    fn rejects(&self, name: &str, doc: &Value, path: &str) -> Vec<String> {
        let errors = self.errors(name, doc);
        let at = format!("at {path:?}:");
        assert!(
            errors.iter().any(|e| e.starts_with(&at)),
            "schema/{name}.schema.json should reject this document at {path:?}; errors: {errors:#?}\n{}",
            serde_json::to_string_pretty(doc).unwrap()
        );
        errors
    }
}

/// Runs the binary in a workspace and checks its JSON against a schema.
struct Session<'a> {
    ws: &'a Workspace,
    schemas: &'a Schemas,
}

impl Session<'_> {
    fn run(&self, args: &[&str]) -> Run {
        let mut all = args.to_vec();
        all.push("--json");
        self.ws.run(&all)
    }

    /// Runs `args --json`, asserts success, and validates stdout against schema `name`.
    #[track_caller]
    fn out(&self, name: &str, args: &[&str]) -> Value {
        let run = self.run(args).ok();
        let doc = run.json();
        self.schemas.check(name, &doc);
        doc
    }

    /// Runs `args --json`, asserts exit 1, and validates the error on stderr. Returns the error
    /// object and stdout.
    #[track_caller]
    fn fail(&self, args: &[&str]) -> (Value, String) {
        let run = self.run(args).fails(1);
        let error: Value = serde_json::from_str(&run.stderr)
            .unwrap_or_else(|e| panic!("stderr is not one JSON error ({e}):\n{}", run.stderr));
        self.schemas.check("error", &error);
        (error, run.stdout)
    }

    /// `create … --json`, validated; returns the new id.
    #[track_caller]
    fn create(&self, args: &[&str]) -> String {
        let mut all = vec!["create"];
        all.extend_from_slice(args);
        let issue = self.out("create", &all);
        // The record of a created issue is a valid beads JSONL line too.
        self.schemas.check("issue", &issue);
        issue["id"].as_str().unwrap().to_string()
    }
}

fn ids(doc: &Value) -> Vec<&str> {
    doc.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect()
}

/// Drives every command through a realistic session, validating every JSON output. Returns the
/// workspace so the journal can be inspected.
fn scenario(schemas: &Schemas) -> Workspace {
    let ws = Workspace::empty();
    let s = Session { ws: &ws, schemas };

    let init = s.out("init", &["init", "--prefix", "sc"]);
    assert_eq!(init["prefix"], "sc");

    // An epic with two children (the second blocked by the first and referring to an external
    // capability), a related spike, a chore, and a task that will be deleted.
    let epic = s.create(&[
        "Ship the login flow",
        "--type",
        "epic",
        "--priority",
        "1",
        "--labels",
        "auth,backend",
        "--description",
        "Everything needed for OAuth login.",
    ]);
    let home = ws.home().display().to_string();
    let child = s.create(&[
        "Token refresh",
        "--parent",
        &epic,
        "--design",
        "Refresh 5 minutes before expiry.",
        "--acceptance",
        "Tokens never expire mid-request.",
        "--notes",
        "See RFC 6749 §6.",
        "--estimate",
        "45",
        "--cwd",
        &home,
        "--coder",
        "claude",
        "--model",
        "opus",
    ]);
    let shown = s.out("show", &["show", &child]);
    assert_eq!(shown[0]["parent"], epic.as_str(), "a child shows its parent");
    assert_eq!(shown[0]["labels"], json!(["auth", "backend"]), "a child inherits labels");
    let login = s.create(&[
        "Login page",
        "--parent",
        &epic,
        "--no-inherit-labels",
        "--deps",
        &format!("{child},external:billing:invoices"),
        "--due",
        "+2d",
        "--external-ref",
        "gh-9",
        "-p",
        "0",
    ]);
    let spike = s.create(&[
        "Try passkeys",
        "-t",
        "spike",
        "--deps",
        &format!("related:{login}"),
        "-a",
        "ana",
    ]);
    let chore = s.create(&["Tidy the README", "-t", "chore", "-p", "3", "-l", "docs"]);
    let doomed = s.create(&["Duplicate of the login page", "--deps", &login]);

    let details = s.out("show", &["show", &login, &epic]);
    assert_eq!(ids(&details), [login.as_str(), epic.as_str()]);
    assert_eq!(details[0]["blocked"], true);
    let missing: Vec<&Value> = details[0]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["missing"] == true)
        .collect();
    assert_eq!(missing.len(), 1, "the external dependency is shown as missing");

    // Edits, including clearing a date (a null in the journal's patch) and fleet's fields.
    let updated = s.out(
        "update",
        &[
            "update",
            &login,
            "--status",
            "in_progress",
            "--append-notes",
            "Started on the form.",
            "--add-label",
            "ui",
        ],
    );
    assert_eq!(updated[0]["status"], "in_progress");
    s.out("update", &["update", &login, "--due", "", "--estimate", "120", "--coder", "codex"]);
    s.out("update", &["update", &spike, &chore, "--priority", "2", "--remove-label", "docs"]);

    // Close guards: an epic with open children, an issue with open blockers.
    let (error, stdout) = s.fail(&["close", &epic]);
    assert!(error["error"].as_str().unwrap().contains("open children"), "{error}");
    if !stdout.trim().is_empty() {
        schemas.check("close", &serde_json::from_str(&stdout).unwrap());
    }
    let (error, _) = s.fail(&["close", &login]);
    assert!(error["error"].as_str().unwrap().contains("blocked by open issues"), "{error}");
    // Some ids closed, some not: the closed ones on stdout, each failure under `errors`.
    let (error, stdout) = s.fail(&["close", &login, "sc-nope"]);
    schemas.check("close", &serde_json::from_str(&stdout).unwrap());
    assert_eq!(error["errors"].as_array().map(Vec::len), Some(2), "{error}");
    let closed =
        s.out("close", &["close", &child, "--reason", "Shipped in v2", "--session", "sess-1"]);
    assert_eq!(closed[0]["close_reason"], "Shipped in v2");
    assert_eq!(closed[0]["closed_by_session"], "sess-1");
    let reopened = s.out("reopen", &["reopen", &child, "--reason", "Refresh races on resume"]);
    assert_eq!(reopened[0]["comment_count"], 1, "the reopen reason is a comment");
    s.out("close", &["close", &child]);

    // Dependencies.
    let added = s.out("dep-add", &["dep", "add", &spike, &child]);
    assert_eq!(added["type"], "blocks");
    s.out("dep-add", &["dep", "add", &chore, &spike, "--type", "discovered-from"]);
    // Adding an edge that exists with the same type changes nothing, and says so the same way.
    s.out("dep-add", &["dep", "add", &spike, &login, "--type", "related"]);
    let removed = s.out("dep-remove", &["dep", "remove", &chore, &spike]);
    assert_eq!(removed["type"], "discovered-from");
    s.out("dep-tree", &["dep", "tree", &epic, "--direction", "both"]);
    let tree = s.out("dep-tree", &["dep", "tree", &doomed]);
    // The epic is reached twice (as the parent of the login page and of the token refresh).
    assert!(tree.to_string().contains(r#""repeated":true"#), "{tree}");
    assert!(tree.to_string().contains(r#""missing":true"#), "{tree}");
    s.out("dep-tree", &["dep", "tree", &doomed, "--direction", "up"]);
    let shallow = s.out("dep-tree", &["dep", "tree", &doomed, "--max-depth", "0"]);
    assert_eq!(shallow["down"]["truncated"], true);
    s.out("dep-list", &["dep", "list", &login]);
    let up = s.out("dep-list", &["dep", "list", &login, "--direction", "up"]);
    assert!(!up.as_array().unwrap().is_empty());
    s.out("dep-list", &["dep", "list", &login, "--type", "parent-child"]);
    s.out("dep-cycles", &["dep", "cycles"]);

    // Comments.
    s.out("comment", &["comment", &login, "Form layout agreed with design."]);
    s.out("comment", &["comments", "add", &login, "Looks good.", "--author", "reviewer"]);
    let comments = s.out("comments", &["comments", &login]);
    assert_eq!(comments.as_array().unwrap().len(), 2);
    s.out("comments", &["comments", &chore]);

    // Labels.
    let changes = s.out("label-change", &["label", "add", &login, &spike, "urgent"]);
    assert_eq!(changes[0]["changed"], true);
    let again = s.out("label-change", &["label", "add", &login, "urgent"]);
    assert_eq!(again[0]["changed"], false);
    s.out("label-change", &["label", "remove", &spike, "urgent"]);
    let labels = s.out("label-list", &["label", "list", &login]);
    assert_eq!(labels, json!(["ui", "urgent"]));
    s.out("label-list", &["label", "list", &chore]);
    s.out("label-list-all", &["label", "list-all"]);

    // Queries in the middle of the work.
    let ready = s.out("ready", &["ready"]);
    assert!(ids(&ready).contains(&chore.as_str()), "{ready}");
    let blocked = s.out("blocked", &["blocked"]);
    for entry in blocked.as_array().unwrap() {
        assert_eq!(entry["blocked_by_count"], entry["blocked_by"].as_array().unwrap().len());
    }
    assert!(ids(&blocked).contains(&doomed.as_str()), "{blocked}");
    for args in
        [&["list"][..], &["list", "--all"], &["list", "--status", "closed"], &["search", "login"]]
    {
        let list = s.out("list", args);
        for issue in list.as_array().unwrap() {
            // A listed issue is also a valid beads JSONL record.
            schemas.check("issue", issue);
        }
    }
    coordination(&s, &epic);

    s.out("stats", &["stats"]);
    agent_stats(&s);

    // Claims: a given id, then whatever is ready until nothing is.
    let claimed = s.out("claim", &["claim", &chore]);
    assert_eq!(claimed["assignee"], "tester");
    let (error, _) = s.fail(&["claim", &chore, "--actor", "someone-else"]);
    assert!(error["error"].as_str().unwrap().contains("claim"), "{error}");
    let mut taken = vec![chore.clone()];
    loop {
        let next = s.out("claim", &["claim"]);
        if next.is_null() {
            break;
        }
        taken.push(next["id"].as_str().unwrap().to_string());
        assert!(taken.len() < 20, "claim keeps returning work");
    }
    let mut release = vec!["release"];
    release.extend(taken.iter().map(String::as_str));
    let released = s.out("release", &release);
    assert_eq!(released.as_array().unwrap().len(), taken.len());

    // Delete: the preview changes nothing, --force deletes.
    let preview = s.out("delete", &["delete", &doomed]);
    assert_eq!(preview["preview"], true);
    s.out("show", &["show", &doomed]);
    let deleted = s.out("delete", &["delete", &doomed, "--force"]);
    assert_eq!(deleted["preview"], false);

    // Failures report a JSON error on stderr and nothing on stdout.
    for args in [
        &["show", "sc-nope"][..],
        &["update", "sc-nope", "-p", "1"],
        &["dep", "add", &login, &login],
        &["create", ""],
        &["comment", &login, " "],
    ] {
        let (_, stdout) = s.fail(args);
        assert_eq!(stdout, "", "stdout of failed {args:?}");
    }

    s.out("stats", &["stats"]);
    agent_stats(&s);
    s.out("ready", &["ready", "--limit", "0"]);
    s.out("blocked", &["blocked"]);

    // Whether doctor passes depends on the machine (a coder's CLI installed and signed in);
    // its report is on stdout either way.
    let doctor = s.run(&["doctor"]);
    assert!(matches!(doctor.code, 0 | 1), "doctor: {}", doctor.stderr);
    schemas.check("doctor", &doctor.json());
    ws
}

/// Messages and file reservations (issue 32): every output, and the ops they journal.
fn coordination(s: &Session, task: &str) {
    let sent = s.out("mail-send", &["mail", "send", task, "the token format changed"]);
    s.out("mail-send", &["mail", "send", "alice", "a question for a person", "--about", task]);
    let inbox = s.out("mail", &["mail", "inbox", "--task", task]);
    assert_eq!(inbox.as_array().unwrap().len(), 1, "{inbox}");
    s.out("mail-ack", &["mail", "ack", sent["id"].as_str().unwrap()]);
    s.out("mail", &["mail", "thread", task]);
    let reserved = s.out(
        "reserve",
        &["reserve", "src/auth/**", "--exclusive", "--ttl", "1h", "--task", task, "--reason", "x"],
    );
    assert!(reserved["reservation"]["exclusive"].as_bool().unwrap());
    let files = s.out("task-files", &["task", task, "files"]);
    assert_eq!(files.as_array().unwrap().len(), 1, "{files}");
    s.out("mail", &["task", task, "mail"]);
    s.out("release-files", &["release-files", "--task", task]);
}

/// Validates every line of a JSON Lines stdout against schema `name`; returns the lines.
#[track_caller]
fn check_lines(schemas: &Schemas, name: &str, stdout: &str) -> Vec<Value> {
    assert!(!stdout.trim().is_empty(), "no {name} lines");
    stdout
        .lines()
        .map(|line| {
            let doc: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("a line that is not JSON ({e}): {line}"));
            schemas.check(name, &doc);
            doc
        })
        .collect()
}

/// The supervisor's and the operator's outputs, with real runs of the supervisor and the
/// scriptable fake agent (`fleet fake-agent`): `fleet run --json` (with tasks that close,
/// block and fail, so it exits 4), `show`'s run info, `questions`, `answer`, `pause`,
/// `resume`, the supervisor in the background (`run --detach`, `run status`, `tasks`,
/// `kill`, `run restart`, `run stop`, a stale pid file), `log` and `demo`.
fn operator_scenario(schemas: &Schemas) {
    let ws = Workspace::new();
    let s = Session { ws: &ws, schemas };
    let fleet = common::fleet_bin().display().to_string();
    let config = format!(
        "max_concurrent = 2\ncoder = \"fake\"\nmax_failures = 1\nretry_backoff_secs = 0\n\
         shutdown_grace_secs = 1\nstall_timeout_secs = 60\n\n[coders.fake]\n\
         argv = [{fleet:?}, \"fake-agent\", \"{{prompt}}\"]\nevents = \"claude\"\n\n\
         [budget]\nusd_per_day = 100.0\nusd_per_task = 10.0\n[budget.coders.fake]\nusd_per_day = 50.0\n"
    );
    std::fs::write(ws.home().join("runtime.toml"), config).unwrap();
    let task = |title: &str, script: &[&str]| {
        let script: Vec<String> = script.iter().map(|step| format!("fake: {step}")).collect();
        ws.create(title, &["-d", &script.join("\n")])
    };
    let closes = task("Closes", &["spend 1200 30 0.02", "close done"]);
    let asks = task("Asks", &["once block magic number?", "once exit 0", "close answered"]);
    task("Fails", &["exit 3"]);

    let run = s.run(&["run", "--until-idle"]).fails(4);
    let events = check_lines(schemas, "run-event", &run.stdout);
    assert_eq!(events.last().unwrap()["type"], "stopped");
    schemas.check("error", &serde_json::from_str(&run.stderr).expect("one JSON error"));
    assert_eq!(s.out("accounts", &["accounts"])["accounts"], json!([]));
    let budget = s.out("budget", &["budget"]);
    assert_eq!(
        (&budget["days"][0]["scope"], &budget["spent_today_usd"]),
        (&json!("fleet"), &json!(0.02))
    );
    let shown = s.out("show", &["show", &closes]);
    assert_eq!(shown[0]["run"]["last_outcome"], "closed", "{shown:#}");
    assert_eq!(shown[0]["run"]["tokens_in"], 1200, "{shown:#}");
    let questions = s.out("questions", &["questions"]);
    assert_eq!(questions[0]["id"], asks.as_str());
    s.out("answer", &["answer", &asks, "42"]);
    s.out("pause", &["pause", "--coder", "fake", "--reason", "lunch"]);
    let all = s.out("pause", &["pause"]);
    assert!(all["holds"]["all"]["since"].is_string() && all["holds"]["coders"]["fake"].is_object());
    s.out("pause", &["resume", "--coder", "fake"]);
    let resumed = s.out("pause", &["resume"]);
    assert_eq!(resumed, json!({ "changed": true, "holds": {} }));

    let long = task("Long", &["sleep 30"]);
    let started = s.out("run-status", &["run", "--detach"]);
    assert_eq!(started["running"], true);
    let _first = Background::of(&ws, pid_of(&started["pid"]));
    // The answered task is ready again too: its next runs (an exit, then its close) may
    // overlap the long one's for a moment, so wait until the long task runs alone.
    let (view, status) = common::wait_for("the long task to run alone", || {
        let view = s.out("tasks", &["tasks"]);
        let status = s.out("run-status", &["run", "status"]);
        let alone = view["running"] == 1 && status["agents"] == 1;
        (alone && view["tasks"][0]["id"] == long.as_str()).then_some((view, status))
    });
    assert_eq!(view["tasks"][0]["id"], long.as_str());
    assert_eq!(status["agents"], 1, "{status:#}");
    let row = s.out("task", &["task", &long]);
    assert_eq!((&row["id"], &row["running"]), (&json!(long), &json!(true)), "{row:#}");
    s.out("tasks", &["tasks", "--all"]);
    s.out("kill", &["kill", &long, "--reason", "enough"]);
    let restarted = s.out("run-restart", &["run", "restart"]);
    let _second = Background::of(&ws, pid_of(&restarted["started"]["pid"]));
    assert_ne!(restarted["started"]["pid"], restarted["stopped"]["pid"]);
    let stopped = s.out("run-stop", &["run", "stop"]);
    assert_eq!(stopped["was_running"], true);
    let status = s.run(&["run", "status"]).fails(3).json();
    schemas.check("run-status", &status);
    s.out("run-stop", &["run", "stop"]);
    std::fs::write(ws.home().join("state").join("fleet-run.pid"), "not a record").unwrap();
    let stale = s.run(&["run", "status"]).fails(3).json();
    schemas.check("run-status", &stale);
    assert!(stale["stale"]["reason"].is_string(), "{stale:#}");

    let log = s.run(&["log", "-n", "0"]).ok();
    let lines = check_lines(schemas, "log", &log.stdout);
    assert!(lines.iter().any(|l| l["event"] == "finished"), "{}", log.stdout);

    let demo = ws.command(&["demo", "--json"]).env("TMPDIR", ws.home()).output().unwrap();
    let demo = Run::from(demo).ok();
    let events = check_lines(schemas, "demo", &demo.stdout);
    assert_eq!(events.first().unwrap()["type"], "started");
}

/// The pid in a `--json` document.
#[track_caller]
fn pid_of(value: &Value) -> u32 {
    value
        .as_u64()
        .and_then(|pid| u32::try_from(pid).ok())
        .unwrap_or_else(|| panic!("no pid: {value}"))
}

/// `fleet stats --agents`, over a ledger and a pause history as the supervisor writes them:
/// an attempt on an account that was rate limited (no cost), and one that closed its task.
fn agent_stats(s: &Session) {
    let state = s.ws.home().join("state");
    let task = s.ws.home().join("tasks").join("sc-agents");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(&task).unwrap();
    let ledger = json!({"attempts": [
        {"attempt": 1, "attempt_id": "A1", "coder": "claude", "model": "sonnet", "account": "work",
         "cwd": "/src/app", "started_at": "2026-03-01T10:00:00Z", "ended_at": "2026-03-01T10:00:05Z",
         "tokens_in": 0, "tokens_cached": 0, "tokens_out": 0, "context_peak": 0,
         "outcome": "rate-limited"},
        {"attempt": 1, "attempt_id": "A2", "coder": "claude", "model": "sonnet", "account": "home",
         "cwd": "/src/app", "started_at": "2026-03-01T10:01:00Z", "ended_at": "2026-03-01T10:09:00Z",
         "tokens_in": 5000, "tokens_cached": 1000, "tokens_out": 300, "context_peak": 4000,
         "first_prompt": 3000, "cost_usd": 0.25, "cost_source": "reported", "outcome": "closed"}
    ]});
    std::fs::write(task.join("ledger.json"), ledger.to_string()).unwrap();
    let pause = json!({"at": "2026-03-01T10:00:05Z", "coder": "claude", "account": "work",
                       "cause": "rate_limit", "until": "2026-03-01T10:05:05Z"});
    std::fs::write(state.join("pause-history.jsonl"), format!("{pause}\n")).unwrap();
    let by_account = s.out("stats-agents", &["stats", "--agents", "--by", "account"]);
    assert_eq!(by_account["groups"][0]["key"], "home");
    assert_eq!(by_account["groups"][1]["cost_usd"], Value::Null);
    assert_eq!(by_account["pauses"][0]["paused_secs"], 300);
    let recent = s.out("stats-agents", &["stats", "--agents", "--since", "2026-03-01T10:00:30Z"]);
    assert_eq!(recent["total"]["attempts"], 1);
    let overhead = s.out("stats-overhead", &["stats", "--overhead"]);
    assert_eq!(overhead["groups"][0]["median_tokens"], 3000);
    // The rate-limited attempt is not judged; the close is one attempt of claude·sonnet and
    // of claude@home, too few to judge.
    let canaries = s.out("stats-canaries", &["stats", "--canaries"]);
    assert_eq!(canaries["canaries"][0]["subject"], "claude·sonnet");
    assert_eq!(canaries["canaries"][0]["status"], "learning");
    assert_eq!(canaries["canaries"][1]["window"]["usd_per_closed_task"], 0.25);
}

#[test]
fn every_json_output_matches_its_schema() {
    let schemas = Schemas::load();
    scenario(&schemas);
    operator_scenario(&schemas);
    let used = schemas.used.borrow();
    let unused: Vec<&String> = schemas
        .validators
        .keys()
        .filter(|name| {
            !used.contains(*name)
                && !["op.schema.json", "dep-edge.schema.json"].contains(&name.as_str())
        })
        .collect();
    assert!(unused.is_empty(), "the scenario never produced output for {unused:?}");
}

#[test]
fn every_journaled_op_matches_the_op_schema() {
    let schemas = Schemas::load();
    let ws = scenario(&schemas);
    let store = fleet::store::Store::open(&ws.beads_dir()).expect("open the store");
    // No command writes a put op yet (it is an import's upsert): write one the way an importer
    // would, a record carrying a key fleet does not model.
    let first = store.journal(0).expect("read the journal")[1].1.kind.subject().to_string();
    let mut record = store.read().unwrap().issue(&first).unwrap().expect("the issue exists");
    record.title = "Imported title".to_string();
    record.extra.insert("rig".to_string(), json!("beads"));
    store
        .apply(
            "importer",
            fleet::time::Clock::System,
            vec![OpKind::Put { issue: Box::new(record) }],
        )
        .expect("apply a put op");
    drop(store);
    // An import journals its records as a bulk op.
    let file = ws.home().join("import.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"id":"sc-imp1","title":"Imported","status":"open","priority":2,"issue_type":"task","labels":["x"],"comments":[{"id":1,"author":"a","text":"hi","created_at":"2026-01-02T03:04:05Z"}]}"#,
            "\n",
            r#"{"id":"sc-imp2","title":"Imported too","status":"open","priority":2,"issue_type":"task","dependencies":[{"issue_id":"sc-imp2","depends_on_id":"sc-imp1","type":"blocks"}]}"#,
            "\n"
        ),
    )
    .expect("write the import file");
    ws.run(&["import", file.to_str().unwrap()]).ok();
    let store = fleet::store::Store::open(&ws.beads_dir()).expect("open the store");
    let journal = store.journal(0).expect("read the journal");
    assert!(!journal.is_empty());
    let mut kinds = BTreeSet::new();
    for (seq, op) in journal {
        let doc = serde_json::to_value(&op).unwrap();
        let errors = schemas.errors("op", &doc);
        assert!(
            errors.is_empty(),
            "journal entry {seq} does not match schema/op.schema.json:\n  {}\n{}",
            errors.join("\n  "),
            serde_json::to_string_pretty(&doc).unwrap()
        );
        let entries = doc.get("ops").and_then(|ops| ops.as_array()).cloned();
        for entry in entries.unwrap_or_else(|| vec![doc.clone()]) {
            if let Some(issue) = entry.get("issue") {
                schemas.check("issue", issue);
            }
        }
        kinds.insert(doc["op"].as_str().unwrap().to_string());
    }
    let all: BTreeSet<String> = [
        "bulk",
        "create",
        "put",
        "update",
        "claim",
        "release",
        "close",
        "reopen",
        "delete",
        "dep_add",
        "dep_remove",
        "comment",
        "label_add",
        "label_remove",
        "mail",
        "mail_ack",
        "reserve",
        "release_files",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(kinds, all, "the scenario should journal every kind of op");
}

#[test]
fn schemas_have_ids_references_and_a_readme_line() {
    let files = schema_files();
    let readme = std::fs::read_to_string(schema_dir().join("README.md")).expect("schema/README.md");
    for (name, doc) in &files {
        assert_eq!(doc["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name}");
        assert_eq!(doc["$id"], format!("{BASE}{name}"), "{name}");
        assert!(readme.contains(&format!("`{name}`")), "schema/README.md does not describe {name}");
    }
    for word in readme.split('`').filter(|w| w.ends_with(".schema.json")) {
        assert!(files.contains_key(word), "schema/README.md lists {word}, which does not exist");
    }
    // Compiles every schema, resolving all cross-file references.
    let schemas = Schemas::load();
    assert_eq!(schemas.validators.len(), files.len());
}

#[test]
fn beads_jsonl_lines_fit_the_issue_schema() {
    let schemas = Schemas::load();
    // spec/beads.md §1.5, and lines in the shape of real exports of both eras.
    let lines = [
        r###"{"_type":"issue","id":"bd-a1f","title":"Add OAuth login","description":"## Acceptance Criteria\n- login works","status":"open","priority":1,"issue_type":"feature","owner":"dev@example.com","created_at":"2026-02-28T03:42:10Z","created_by":"alice","updated_at":"2026-02-28T03:42:10Z","labels":["auth","backend"],"dependency_count":0,"dependent_count":1,"comment_count":0}"###,
        r#"{"_type":"issue","id":"bd-a1f.1","title":"Token refresh","status":"closed","priority":2,"issue_type":"task","assignee":"agent-7","created_at":"2026-02-28T03:50:00Z","updated_at":"2026-02-28T04:10:00Z","started_at":"2026-02-28T03:55:00Z","closed_at":"2026-02-28T04:10:00Z","close_reason":"Closed","dependencies":[{"issue_id":"bd-a1f.1","depends_on_id":"bd-a1f","type":"parent-child","created_at":"2026-02-28T03:50:00Z","created_by":"alice","metadata":"{}"}],"comments":[{"id":"0195","issue_id":"bd-a1f.1","author":"agent-7","text":"done","created_at":"2026-02-28T04:09:00Z"}],"dependency_count":1,"dependent_count":0,"comment_count":1,"parent":"bd-a1f"}"#,
        r#"{"id":"bd-0088","title":"Create npm package structure","status":"closed","priority":1,"issue_type":"task","created_at":"2025-11-02T21:58:07.295058-08:00","updated_at":"2025-11-03T20:56:22.700641-08:00","closed_at":"2025-11-03T20:56:22.700641-08:00","dependencies":[{"issue_id":"bd-0088","depends_on_id":"bd-44d0","type":"parent-child","created_at":"2025-11-02T22:23:49.475356-08:00","created_by":"stevey"}],"comments":[{"id":7,"issue_id":"bd-0088","author":"stevey","text":"legacy integer id","created_at":"2025-11-03T20:56:22.700641-08:00"}]}"#,
        r#"{"id": "bd-pr-sheriff", "title": "PR Sheriff", "status": "pinned", "priority": 1, "issue_type": "task", "assignee": "beads/crew/emma", "created_at": "2026-02-27T00:02:09Z", "updated_at": "2026-02-27T07:11:36Z", "pinned": true, "dependency_count": 0, "dependent_count": 0, "comment_count": 0}"#,
        r#"{"id":"bd-beads-polecat-ruby","title":"bd-beads-polecat-ruby","status":"open","priority":2,"issue_type":"agent","created_at":"2026-02-27T23:55:15Z","updated_at":"2026-02-28T00:43:11Z","labels":["gt:agent"],"ephemeral":true,"agent_state":"idle","last_activity":"2026-02-28T00:41:05Z"}"#,
        r#"{"id":"fl-9","title":"Run in the repo","priority":2,"created_at":"2026-02-28T03:42:10Z","updated_at":"2026-02-28T03:42:10Z","metadata":{"fleet":{"cwd":"/src/app","coder":"codex"}}}"#,
    ];
    for line in lines {
        schemas.check("issue", &serde_json::from_str(line).unwrap());
    }
    // A legacy tombstone is not an issue any more: importers skip it.
    let tombstone = json!({"id":"bd-06px","title":"gone","status":"tombstone","priority":1,"issue_type":"bug","created_at":"2025-12-17T14:32:02.998106-08:00","updated_at":"2025-12-25T01:21:01.952723-08:00","deleted_at":"2025-12-25T01:21:01.952723-08:00"});
    schemas.rejects("issue", &tombstone, "/status");
}

/// A document valid against list.schema.json, to be broken in one place at a time.
fn sample_summary() -> Value {
    json!({
        "id": "sc-a1",
        "title": "Token refresh",
        "status": "open",
        "priority": 2,
        "issue_type": "task",
        "created_at": "2026-02-28T03:50:00Z",
        "created_by": "tester",
        "updated_at": "2026-02-28T03:50:00.123456789Z",
        "labels": ["auth"],
        "fleet": { "cwd": "/src/app" },
        "dependency_count": 1,
        "dependent_count": 0,
        "comment_count": 0,
        "parent": "sc-a"
    })
}

fn sample_op() -> Value {
    json!({
        "v": 1,
        "meta": {
            "id": "01JQ3Z7V4X2K8M9N0P1R2S3T4V",
            "actor": "tester",
            "replica": "r-1",
            "stamp": { "wall_ms": 1_740_000_000_000_u64, "logical": 0 },
            "at": "2026-02-28T03:50:00Z"
        },
        "op": "close",
        "id": "sc-a1",
        "reason": "",
        "session": "sess-1"
    })
}

#[test]
fn the_validator_rejects_wrong_documents() {
    let schemas = Schemas::load();

    // The samples are valid to begin with, so each rejection below is for the one change.
    schemas.check("list", &json!([sample_summary()]));
    schemas.check("op", &sample_op());

    let with = |change: &dyn Fn(&mut Value)| {
        let mut doc = sample_summary();
        change(&mut doc);
        doc
    };
    schemas.rejects("list", &json!([with(&|d| d["status"] = json!("bogus"))]), "/0/status");
    schemas.rejects("issue", &with(&|d| d["status"] = json!("bogus")), "/status");
    schemas.rejects("list", &json!([with(&|d| d["priority"] = json!(7))]), "/0/priority");
    schemas.rejects(
        "list",
        &json!([with(&|d| d["created_at"] = json!("yesterday"))]),
        "/0/created_at",
    );
    schemas.rejects("list", &json!([with(&|d| d["fleet"]["lease"] = json!(1))]), "/0/fleet/lease");
    schemas.rejects("list", &json!([with(&|d| d["fleet"]["bogus"] = json!(1))]), "/0/fleet");
    schemas.rejects("list", &json!([with(&|d| d["labels"] = json!([]))]), "/0/labels");
    schemas.rejects("list", &json!([with(&|d| d["pinned"] = json!(false))]), "/0/pinned");
    schemas.rejects(
        "list",
        &json!([with(&|d| {
            d.as_object_mut().unwrap().remove("dependency_count");
        })]),
        "/0",
    );
    // closed_at is set exactly when the status is closed.
    schemas.rejects("issue", &with(&|d| d["status"] = json!("closed")), "");
    schemas.rejects("issue", &with(&|d| d["closed_at"] = json!("2026-02-28T04:00:00Z")), "");
    // Command-specific constraints on the same record.
    schemas.rejects("ready", &json!([with(&|d| d["status"] = json!("in_progress"))]), "/0/status");
    schemas.rejects("claim", &with(&|_| {}), "");
    schemas.rejects("create", &with(&|d| d["status"] = json!("closed")), "/status");
    schemas.rejects("show", &json!([sample_summary()]), "/0");
    schemas.rejects("show", &json!([]), "");

    let op_with = |change: &dyn Fn(&mut Value)| {
        let mut doc = sample_op();
        change(&mut doc);
        doc
    };
    schemas.rejects("op", &op_with(&|d| d["op"] = json!("explode")), "/op");
    schemas.rejects("op", &op_with(&|d| d["v"] = json!(2)), "/v");
    schemas.rejects("op", &op_with(&|d| d["meta"]["id"] = json!("not-a-ulid")), "/meta/id");
    schemas.rejects("op", &op_with(&|d| d["label"] = json!("stray")), "");
    schemas.rejects(
        "op",
        &op_with(&|d| {
            d.as_object_mut().unwrap().remove("reason");
        }),
        "",
    );
    schemas.rejects(
        "op",
        &op_with(&|d| {
            d["op"] = json!("update");
            d["patch"] = json!({ "status": "bogus" });
            d.as_object_mut().unwrap().remove("reason");
            d.as_object_mut().unwrap().remove("session");
        }),
        "/patch/status",
    );

    schemas.rejects("error", &json!({ "error": "boom" }), "");
    schemas.rejects("error", &json!({ "error": "boom", "hints": [], "code": 1 }), "");
    schemas.rejects(
        "dep-tree",
        &json!({ "down": { "id": "sc-a1", "title": "t", "status": "open", "priority": 2, "depth": 0, "dep_type": "blocks", "children": [] } }),
        "/down",
    );
    schemas.rejects("dep-add", &json!({ "status": "removed", "issue_id": "a-1", "depends_on_id": "a-2", "type": "blocks" }), "/status");

    // The supervisor's outputs.
    let finished = json!({ "type": "finished", "id": "sc-a1", "verdict": "closed", "comment": "[fleet] done" });
    schemas.check("run-event", &finished);
    schemas.check("demo", &finished);
    schemas.rejects("run-event", &json!({ "type": "exploded" }), "/type");
    let mut bad_verdict = finished.clone();
    bad_verdict["verdict"] = json!("fine");
    schemas.rejects("run-event", &bad_verdict, "/verdict");
    let not_running = json!({ "running": false, "log": "/h/logs/fleet-run.log", "output": "/h/logs/fleet-run.out", "pid_file": "/h/state/fleet-run.pid" });
    schemas.check("run-status", &not_running);
    let mut claims_a_pid = not_running.clone();
    claims_a_pid["pid"] = json!(42);
    schemas.rejects("run-status", &claims_a_pid, "/pid");
    let mut running_without_pid = not_running.clone();
    running_without_pid["running"] = json!(true);
    schemas.rejects("run-status", &running_without_pid, "");
    schemas.rejects(
        "run-stop",
        &json!({ "was_running": true, "forced": false, "waited_secs": 0.5, "leftovers_killed": 0 }),
        "",
    );
    schemas.rejects("kill", &json!({ "id": "sc-a1", "action": "exploded" }), "/action");
    schemas.rejects("log", &json!({ "ts": "yesterday", "level": "INFO", "message": "m" }), "/ts");
}
