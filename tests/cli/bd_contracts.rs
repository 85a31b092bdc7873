//! Issue 31 ("Beads compatibility, round three"), items 10–14: the JSON and exit-code
//! contracts scripts rely on, as beads 1.0.5 keeps them — `stats --json` under `summary`,
//! unknown ids (`show`, `update`, `close`), `show --json`'s linked issues and its
//! `--include-*` flags, `import --json`'s fields, and output into a closed pipe.

use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::agent_habits::run;
use super::beads_compat2::scratch;

#[track_caller]
fn ok(bin: &Path, dir: &Path, line: &str) -> String {
    let (code, stdout, stderr) = run(bin, dir, line);
    assert_eq!(code, 0, "bd {line}\n{stdout}\n{stderr}");
    stdout
}

#[track_caller]
fn json(bin: &Path, dir: &Path, line: &str) -> Value {
    let out = ok(bin, dir, line);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("bd {line}: {e}\n{out}"))
}

/// Item 10: `jq .summary.open_issues` answers, under both names of the command.
#[test]
fn stats_json_nests_the_counters_under_summary() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix st");
    ok(&bin, &work, "create One -q");
    let mine = ok(&bin, &work, "create Mine --silent");
    ok(&bin, &work, &format!("update {} --assignee agent", mine.trim()));
    for command in ["stats --json", "status --json", "status --json --no-activity --all"] {
        let stats = json(&bin, &work, command);
        assert_eq!(stats["summary"]["open_issues"], 2, "{command}: {stats}");
        assert_eq!(stats["summary"]["total_issues"], 2, "{command}");
        assert_eq!(stats["summary"]["ready_issues"], 2, "{command}");
        assert!(stats.get("open_issues").is_none(), "{command}: counters only under summary");
        // beads 1.0.5 has no git activity to report and leaves the object out.
        assert!(stats.get("recent_activity").is_none(), "{command}");
    }
    let assigned = json(&bin, &work, "stats --json --assigned --actor agent");
    assert_eq!(assigned["summary"]["total_issues"], 1, "{assigned}");
    assert_eq!(assigned["summary"]["ready_issues"], 1, "{assigned}");
}

/// Item 11: an id that names nothing is an error with exit 1; with `--json`, `show` and
/// `close` put the JSON error where the result would be, and stderr never mixes JSON in.
#[test]
fn unknown_ids_fail_with_bd_s_json_errors() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix un");
    let real = ok(&bin, &work, "create Real --silent").trim().to_string();

    let (code, stdout, stderr) = run(&bin, &work, "show nosuch --json");
    assert_eq!(code, 1, "{stdout}{stderr}");
    let error: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(error["error"], "no issues found matching the provided IDs");
    // gastown maps "no issue found" on stderr to its ErrNotFound.
    assert_eq!(stderr, "Error fetching nosuch: no issue found matching \"nosuch\"\n");

    let (code, stdout, stderr) = run(&bin, &work, "show nosuch");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");

    let (code, stdout, stderr) = run(&bin, &work, "update nosuch --json --status in_progress");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(stderr, "Error resolving nosuch: no issue found matching \"nosuch\"\n");

    let (code, stdout, stderr) = run(&bin, &work, &format!("close nosuch {real} --json"));
    assert_eq!((code, stderr.as_str()), (1, ""), "{stdout}");
    let error: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(error["error"], "resolving ID nosuch: no issue found matching \"nosuch\"");
    let shown = json(&bin, &work, &format!("show {real} --json"));
    assert_eq!(shown[0]["status"], "open", "nothing closes when one id is unknown");

    // One of two updated: the update stands and the command succeeds, as in beads.
    let (code, stdout, stderr) = run(&bin, &work, &format!("update nosuch {real} -p 1 --json"));
    assert_eq!(code, 0, "{stdout}{stderr}");
    let updated: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(updated[0]["priority"], 1);
}

/// Item 12: linked issues carry the issue's own fields; dependents and comments are listed only
/// when asked, counted otherwise.
#[test]
fn show_json_lists_whole_linked_issues_and_includes_on_request() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix sh");
    let epic = ok(&bin, &work, "create Epic -t epic --silent").trim().to_string();
    let child = ok(&bin, &work, &format!("create Child -t bug --parent {epic} --silent"));
    let child = child.trim();
    ok(&bin, &work, &format!("comment {epic} 'A note'"));

    let plain = json(&bin, &work, &format!("show {epic} --json"));
    let issue = &plain[0];
    assert!(issue.get("dependents").is_none(), "{issue}");
    assert!(issue.get("comments").is_none(), "{issue}");
    assert_eq!(issue["dependent_count"], 1);
    assert_eq!(issue["comment_count"], 1);

    let full =
        json(&bin, &work, &format!("show {epic} --json --include-dependents --include-comments"));
    let issue = &full[0];
    let dependent = &issue["dependents"][0];
    assert_eq!(dependent["id"], child);
    assert_eq!(dependent["issue_type"], "bug", "gastown reads issue_type: {dependent}");
    assert_eq!(dependent["dependency_type"], "parent-child");
    assert!(dependent["created_at"].is_string(), "{dependent}");
    assert_eq!(issue["comments"][0]["text"], "A note");
    assert_eq!(issue["epic_total_children"], 1);
    assert_eq!(issue["epic_closed_children"], 0);
    assert_eq!(issue["epic_closeable"], false);

    let shown = json(&bin, &work, &format!("show {child} --json"));
    let dependency = &shown[0]["dependencies"][0];
    assert_eq!(dependency["id"], epic.as_str());
    assert_eq!(dependency["issue_type"], "epic", "{dependency}");
    assert_eq!(dependency["dependency_type"], "parent-child");
    assert!(dependency["updated_at"].is_string(), "{dependency}");
    assert_eq!(shown[0]["parent"], epic.as_str());
}

/// Item 13: `skipped` is a number, `ids` the imported ids, `skipped_dependencies` strings.
#[test]
fn import_json_has_beads_fields_and_types() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix im");
    let file = work.join("in.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"id":"im-a","title":"A","status":"open","priority":1,"issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z"}"#,
            "\n",
            r#"{"id":"im-b","title":"B","status":"open","priority":2,"issue_type":"task","created_at":"2025-01-01T00:00:00Z","updated_at":"2025-01-01T00:00:00Z","dependencies":[{"issue_id":"im-b","depends_on_id":"im-a","type":"blocks"}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let report = json(&bin, &work, "import in.jsonl --json");
    assert_eq!(report["created"], 2, "{report}");
    assert!(report["skipped"].is_u64(), "skipped is a count: {report}");
    assert_eq!(report["ids"], serde_json::json!(["im-a", "im-b"]));
    match report.get("skipped_dependencies") {
        None => {}
        Some(Value::Array(items)) => assert!(items.iter().all(Value::is_string), "{report}"),
        Some(other) => panic!("skipped_dependencies is not a list of strings: {other}"),
    }
}

/// A pipe whose reading end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> std::fs::File {
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills both descriptors; the read end is closed at once and the write end
    // is owned by the returned file alone.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        std::fs::File::from_raw_fd(fds[1])
    }
}

/// Item 14: a usage error, an error, help and data written into a closed pipe never panic
/// (exit 101); the command's own exit code stands.
#[test]
fn output_into_a_closed_pipe_does_not_panic() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix pp");
    ok(&bin, &work, "create One -q");
    let cases: &[(&[&str], bool, i32)] = &[
        (&["list", "--no-such-flag"], false, 1),
        (&["show", "nosuch"], false, 1),
        (&["close", "nosuch", "--json"], true, 1),
        (&["list"], true, 0),
        (&["--help"], true, 0),
        (&["nosuchcommand"], false, 1),
    ];
    for (args, into_stdout, expected) in cases {
        let mut command = Command::new(bin.join("bd"));
        command.args(*args).current_dir(&work).env_clear().env("HOME", &work).stdin(Stdio::null());
        if *into_stdout {
            command.stdout(closed_pipe()).stderr(Stdio::null());
        } else {
            command.stdout(Stdio::null()).stderr(closed_pipe());
        }
        let status = command.status().unwrap();
        assert_eq!(status.code(), Some(*expected), "bd {args:?} into a closed pipe");
    }
    let mut fleet = Command::new(crate::common::fleet_bin());
    fleet.args(["--no-such-flag"]).current_dir(&work).env_clear().env("HOME", &work);
    let status = fleet.stdout(Stdio::null()).stderr(closed_pipe()).status().unwrap();
    assert_eq!(status.code(), Some(2), "fleet usage error into a closed pipe");
}

/// What a line of gastown's client expects on stdout.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A JSON array of issues (gastown's `Issue`): may be empty.
    Issues,
    /// A JSON array of at least one issue.
    SomeIssues,
    /// One JSON issue object (`create --json`).
    Issue,
    /// A JSON array of row objects (`sql --json`) with at least one row.
    Rows,
    /// Anything: gastown only checks the exit code.
    Done,
}

/// The fields gastown's `Issue` decodes, with their JSON types: a mismatch fails its decoding.
#[track_caller]
fn assert_issue(line: &str, issue: &Value) {
    for field in ["id", "title", "status", "issue_type", "created_at", "updated_at"] {
        assert!(issue[field].is_string(), "bd {line}: {field} is not a string in {issue}");
    }
    assert!(issue["priority"].is_u64(), "bd {line}: priority in {issue}");
    for field in ["description", "assignee", "created_by", "closed_at", "parent"] {
        assert!(issue.get(field).is_none_or(Value::is_string), "bd {line}: {field} in {issue}");
    }
    if let Some(labels) = issue.get("labels") {
        assert!(labels.as_array().is_some_and(|l| l.iter().all(Value::is_string)), "bd {line}");
    }
    for list in ["dependencies", "dependents"] {
        for linked in issue.get(list).and_then(Value::as_array).into_iter().flatten() {
            assert!(linked["id"].is_string() && linked["issue_type"].is_string(), "bd {line}");
            assert!(linked["dependency_type"].is_string(), "bd {line}: {linked}");
        }
    }
    for count in ["dependency_count", "dependent_count"] {
        assert!(issue.get(count).is_none_or(Value::is_u64), "bd {line}: {count}");
    }
}

#[track_caller]
fn assert_shape(line: &str, shape: Shape, stdout: &str) {
    if matches!(shape, Shape::Done) {
        return;
    }
    let value: Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("bd {line}: {e}\n{stdout}"));
    match shape {
        Shape::Issue => assert_issue(line, &value),
        Shape::Issues | Shape::SomeIssues => {
            let items = value.as_array().unwrap_or_else(|| panic!("bd {line}: not an array"));
            assert!(!matches!(shape, Shape::SomeIssues) || !items.is_empty(), "bd {line}: empty");
            items.iter().for_each(|issue| assert_issue(line, issue));
        }
        Shape::Rows => {
            let rows = value.as_array().unwrap_or_else(|| panic!("bd {line}: not an array"));
            assert!(!rows.is_empty() && rows.iter().all(Value::is_object), "bd {line}: {value}");
        }
        Shape::Done => {}
    }
}

/// The section "The commands and flags real agents and tools use": every `bd` line gastown's
/// client (internal/beads/*.go) runs, with its own quoting and its `--flat` / `--allow-stale`
/// additions, succeeds with beads' semantics and prints the JSON types gastown decodes.
#[test]
fn gastown_s_bd_lines_run_with_beads_semantics() {
    let (_root, bin, work) = scratch();
    let lines: &[(&str, Shape)] = &[
        ("init --prefix gt --quiet", Shape::Done),
        (
            "create --json --title=Epic --labels=gt:task --priority=1 --description=Plan --actor=mayor",
            Shape::Issue,
        ),
        (
            "create --json --id=gt-agent-1 --title=Agent --description=desc --type=task --labels=gt:agent --force --actor=mayor",
            Shape::Issue,
        ),
        (
            "create --json --title=Step --labels=gt:task,x --priority=2 --description=Do --parent={epic} --actor=mayor",
            Shape::Issue,
        ),
        (
            "create --json --ephemeral --title=Ctx --description=d --type=task --labels=gt:sling-context",
            Shape::Issue,
        ),
        (
            "--allow-stale list --json --flat --status=open --label=gt:task --priority=1 --limit=0",
            Shape::SomeIssues,
        ),
        ("list --json --flat --status=all --no-assignee --limit=0", Shape::SomeIssues),
        ("list --json --flat --status=open --parent={epic} --limit=5", Shape::SomeIssues),
        (
            "query --json 'ephemeral=true AND label=gt:sling-context AND status=open' --all --limit=10",
            Shape::SomeIssues,
        ),
        (
            "sql --json \"SELECT w.id, w.title, w.status, w.priority, w.assignee, w.created_at, GROUP_CONCAT(al.label) as labels_csv FROM wisps w JOIN wisp_labels l ON w.id = l.issue_id LEFT JOIN wisp_labels al ON w.id = al.issue_id WHERE l.label = 'gt:sling-context' AND w.status = 'open' GROUP BY w.id, w.title, w.status, w.priority, w.assignee, w.created_at\"",
            Shape::Rows,
        ),
        ("ready --json", Shape::SomeIssues),
        ("ready --mol {epic} --json -n 100", Shape::SomeIssues),
        ("ready --json --label gt:task -n 100", Shape::SomeIssues),
        ("show {epic} --json", Shape::SomeIssues),
        ("show --json {epic} gt-agent-1", Shape::SomeIssues),
        ("show {epic} --json --include-dependents", Shape::SomeIssues),
        ("list --json --flat --limit 0 --title Epic --assignee mayor", Shape::Issues),
        ("blocked --json", Shape::Issues),
        (
            "search --json Epic --status=open --label=gt:task --limit=5 --desc-contains=Plan",
            Shape::SomeIssues,
        ),
        ("search --json --desc-contains=desc", Shape::SomeIssues),
        (
            "update {epic} --title=Epic2 --status=in_progress --priority=1 --description=Plan2 --assignee=mayor --set-labels=gt:task --add-label=y --remove-label=y",
            Shape::Done,
        ),
        ("update gt-agent-1 '--set-metadata=delegated_from={\"parent\":\"gt-x\"}'", Shape::Done),
        ("update gt-agent-1 --unset-metadata=delegated_from", Shape::Done),
        ("update {epic} --status=open --assignee= '--notes=Released: stuck'", Shape::Done),
        ("dep add gt-agent-1 {epic}", Shape::Done),
        ("dep remove gt-agent-1 {epic}", Shape::Done),
        ("dep add gt-agent-1 {epic} --type=tracks", Shape::Done),
        ("dep relate gt-agent-1 {step}", Shape::Done),
        ("dep unrelate gt-agent-1 {step}", Shape::Done),
        ("stats", Shape::Done),
        ("list --label=gt:agent --include-infra --json --flat --no-pager", Shape::SomeIssues),
        (
            "list --label=gt:task --label=x --json --flat --limit=0 --sort=created",
            Shape::SomeIssues,
        ),
        ("close {step} --session=S1", Shape::Done),
        ("reopen {step} --reason=re-spawning", Shape::Done),
        ("close {step} --reason=done --session=S1", Shape::Done),
        ("close gt-agent-1 --reason=retired --force", Shape::Done),
        ("delete gt-agent-1 --hard --force", Shape::Done),
    ];
    let mut ids: Vec<(&str, String)> = Vec::new();
    for (template, shape) in lines {
        let mut line = template.to_string();
        for (name, id) in &ids {
            line = line.replace(&format!("{{{name}}}"), id);
        }
        let (code, stdout, stderr) = run(&bin, &work, &line);
        assert_eq!(code, 0, "bd {line}\n{stdout}\n{stderr}");
        assert_shape(&line, *shape, &stdout);
        let created: Option<Value> =
            line.starts_with("create").then(|| serde_json::from_str(&stdout).unwrap());
        for (name, title) in [("epic", "Epic"), ("step", "Step")] {
            if let Some(issue) = created.as_ref().filter(|i| i["title"] == title) {
                ids.push((name, issue["id"].as_str().unwrap().to_string()));
            }
        }
    }
    // beads' semantics of the lines above, checked on the state they leave.
    let epic = &ids[0].1;
    let (step, closed) = (&ids[1].1, json(&bin, &work, &format!("show {} --json", ids[1].1)));
    assert_eq!(closed[0]["status"], "closed", "{step}");
    assert_eq!(closed[0]["closed_by_session"], "S1");
    let all = json(&bin, &work, "list --json --status=all --limit=0");
    assert!(all.as_array().unwrap().iter().any(|i| i["id"] == step.as_str()), "all has closed");
    let relations = json(&bin, &work, &format!("show {epic} --json"));
    assert_eq!(relations[0]["labels"], serde_json::json!(["gt:task"]), "--set-labels replaced");
    assert_eq!(relations[0]["assignee"], Value::Null, "--assignee= unassigns");
}

/// What the new lines mean: `--no-assignee` and `--status all` filter as beads does, `query`
/// speaks beads' language, `sql` reads beads' tables and refuses writes, `dep relate` links
/// both ways.
#[test]
fn the_new_lines_mean_what_beads_means() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix nm");
    let a = ok(&bin, &work, "create Mine -p 1 --silent").trim().to_string();
    let b = ok(&bin, &work, "create Free -p 3 -l backend --silent").trim().to_string();
    ok(&bin, &work, &format!("update {a} --assignee agent"));
    let c = ok(&bin, &work, "create Done --silent").trim().to_string();
    ok(&bin, &work, &format!("close {c}"));

    let ids = |v: Value| -> Vec<String> {
        v.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(ids(json(&bin, &work, "list --json --no-assignee")), [b.as_str()]);
    assert_eq!(ids(json(&bin, &work, "list --json --status=all --sort id")).len(), 3);
    let query =
        json(&bin, &work, "query --json '(priority<2 OR label=backend) AND NOT assignee=none'");
    assert_eq!(ids(query), [a.as_str()]);
    assert_eq!(ids(json(&bin, &work, "query --json 'status=closed'")), [c.as_str()]);
    let (code, _, stderr) = run(&bin, &work, "query 'colour=red'");
    assert_eq!(code, 1);
    assert!(stderr.contains("unknown field \"colour\""), "{stderr}");

    let rows = json(
        &bin,
        &work,
        "sql --json 'SELECT status, COUNT(*) AS n FROM issues GROUP BY status ORDER BY status'",
    );
    assert_eq!(rows, serde_json::json!([{"n": 1, "status": "closed"}, {"n": 2, "status": "open"}]));
    let (code, stdout, _) = run(&bin, &work, "sql --json 'DELETE FROM issues'");
    assert_eq!(code, 1);
    assert!(stdout.contains("bd sql is read-only"), "{stdout}");
    assert_eq!(ids(json(&bin, &work, "list --json --all")).len(), 3, "nothing deleted");

    let related = json(&bin, &work, &format!("dep relate {a} {b} --json"));
    assert_eq!(related["related"], true);
    for (from, to) in [(&a, &b), (&b, &a)] {
        let shown = json(&bin, &work, &format!("show {from} --json"));
        assert_eq!(shown[0]["dependencies"][0]["id"], to.as_str());
        assert_eq!(shown[0]["dependencies"][0]["dependency_type"], "relates-to");
    }
    ok(&bin, &work, &format!("dep unrelate {a} {b}"));
    assert_eq!(json(&bin, &work, &format!("show {a} --json"))[0]["dependency_count"], 0);
    assert_eq!(
        ids(json(&bin, &work, "ready --json")),
        [a.clone(), b.clone()],
        "relates-to never blocks"
    );

    let (code, _, stderr) = run(&bin, &work, "search");
    assert_eq!(code, 1, "a search with neither text nor filter: {stderr}");
}

/// The everyday commands beads has and fleet lacked: `assign`, `note`, `priority`, `tag`,
/// `link`, `types`, `codex-hook`, `setup claude|gemini --project`.
#[test]
fn everyday_shorthands_change_what_beads_changes() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix sh");
    let a = ok(&bin, &work, "create Target --silent").trim().to_string();
    let b = ok(&bin, &work, "create Waiter --silent").trim().to_string();
    assert_eq!(
        ok(&bin, &work, &format!("assign {a} bob")),
        format!("✓ Assigned {a} — Target to bob\n")
    );
    ok(&bin, &work, &format!("note {a} first line"));
    std::fs::write(work.join("note.txt"), "second\n").unwrap();
    ok(&bin, &work, &format!("note {a} --stdin < note.txt"));
    ok(&bin, &work, &format!("priority {a} P0"));
    let tagged = json(&bin, &work, &format!("tag {a} urgent --json"));
    assert_eq!(tagged["labels"], serde_json::json!(["urgent"]));
    let link = json(&bin, &work, &format!("link {b} {a} --json"));
    assert_eq!(
        (link["issue_id"].as_str(), link["type"].as_str()),
        (Some(b.as_str()), Some("blocks"))
    );

    let shown = json(&bin, &work, &format!("show {a} --json"));
    let issue = &shown[0];
    assert_eq!(issue["assignee"], "bob");
    assert_eq!(issue["notes"], "first line\nsecond");
    assert_eq!(issue["priority"], 0);
    assert_eq!(json(&bin, &work, "ready --json")[0]["id"], a.as_str(), "the link blocks {b}");
    let (code, stdout, _) = run(&bin, &work, &format!("priority {a} 9 --json"));
    assert_eq!(code, 1);
    assert!(serde_json::from_str::<Value>(&stdout).unwrap()["error"].is_string(), "{stdout}");
    ok(&bin, &work, &format!("assign {a} ''"));
    assert!(json(&bin, &work, &format!("show {a} --json"))[0].get("assignee").is_none());

    let types = json(&bin, &work, "types --json");
    assert_eq!(types["core_types"][0]["name"], "task");
    assert!(ok(&bin, &work, "types").starts_with("Core work types (built-in):\n"));

    for agent in ["claude", "gemini"] {
        ok(&bin, &work, &format!("setup {agent} --project"));
        assert!(work.join(format!(".{agent}/settings.json")).is_file(), "{agent}");
    }

    let input = |name: &str, json: &str| std::fs::write(work.join(name), json).unwrap();
    input("start.json", r#"{"session_id":"s1","cwd":"/w","hook_event_name":"SessionStart"}"#);
    input("session.json", r#"{"session_id":"s1","cwd":"/w"}"#);
    let (code, stdout, _) = run(&bin, &work, "codex-hook SessionStart < start.json");
    assert_eq!(code, 0);
    let hook: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(hook["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(hook["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("bd ready"));
    let prompt = "codex-hook UserPromptSubmit < session.json";
    assert_eq!(run(&bin, &work, prompt).1, "", "no compaction yet: nothing to add");
    assert_eq!(run(&bin, &work, "codex-hook PostCompact < session.json").0, 0);
    let (_, stdout, _) = run(&bin, &work, prompt);
    let hook: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(hook["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    assert_eq!(run(&bin, &work, prompt).1, "", "the primer comes back once");
}

/// Every flag of tests/cli/beads_flags.txt (beads 1.0.5's flags of the agent-facing commands)
/// parses: none is refused as unknown.
#[test]
fn every_listed_beads_flag_is_taken() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix fl");
    let list = include_str!("beads_flags.txt");
    let mut refused = Vec::new();
    for line in list.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let flag = words[words.len() - 1];
        let output = Command::new(bin.join("bd"))
            .args(&words)
            .current_dir(&work)
            .env_clear()
            .env("HOME", &work)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains(&format!("unexpected argument '{flag}'")) {
            refused.push(line);
        }
    }
    assert!(refused.is_empty(), "bd refuses beads' flags: {refused:#?}");
    assert!(list.lines().count() > 250, "the list is whole");
}

/// What some of the newly taken flags do: `dep add --file` (all or none), `dep tree --reverse`
/// and `--status`, `count --by-label` (beads' `total`/`groups`), `list --exclude-label`.
#[test]
fn newly_taken_flags_do_what_beads_does() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix nf");
    let a = ok(&bin, &work, "create A -l x,y --silent").trim().to_string();
    let b = ok(&bin, &work, "create B -l x --silent").trim().to_string();
    let c = ok(&bin, &work, "create C --silent").trim().to_string();
    let edges = format!(
        "{{\"issue_id\":\"{b}\",\"depends_on_id\":\"{a}\"}}\n{{\"from\":\"{c}\",\"to\":\"{b}\",\"type\":\"related\"}}\n"
    );
    std::fs::write(work.join("edges.jsonl"), edges).unwrap();
    std::fs::write(
        work.join("bad.jsonl"),
        format!("{{\"from\":\"{c}\",\"to\":\"{a}\"}}\nnot json\n"),
    )
    .unwrap();
    let (code, _, stderr) = run(&bin, &work, "dep add --file bad.jsonl");
    assert_eq!(code, 1);
    assert!(stderr.contains("bad.jsonl line 2"), "{stderr}");
    assert_eq!(
        json(&bin, &work, &format!("show {c} --json"))[0]["dependency_count"],
        0,
        "none added"
    );
    let added = json(&bin, &work, "dep add --file edges.jsonl --json");
    assert_eq!(added["count"], 2);
    assert_eq!(added["dependencies"][1]["type"], "related");

    let up = json(&bin, &work, &format!("dep tree {a} --reverse --json"));
    assert_eq!(up["up"]["children"][0]["id"], b.as_str(), "{up}");
    ok(&bin, &work, &format!("close {c} --force"));
    let open_only = json(&bin, &work, &format!("dep tree {a} --reverse --status open --json"));
    assert!(
        open_only["up"]["children"][0]["children"].as_array().unwrap().is_empty(),
        "{open_only}"
    );

    let counts = json(&bin, &work, "count --by-label --json");
    assert_eq!(counts["total"], 3);
    let groups = serde_json::json!([
        {"group": "(no labels)", "count": 1}, {"group": "x", "count": 2}, {"group": "y", "count": 1}
    ]);
    assert_eq!(counts["groups"], groups);
    ok(&bin, &work, &format!("update {b} --ephemeral --spec-id docs/b.md"));
    let shown = json(&bin, &work, &format!("show {b} --json"));
    assert_eq!(
        (&shown[0]["ephemeral"], &shown[0]["spec_id"]),
        (&Value::Bool(true), &Value::from("docs/b.md"))
    );
    ok(&bin, &work, &format!("update {b} --persistent"));
    assert!(json(&bin, &work, &format!("show {b} --json"))[0].get("ephemeral").is_none());
    let listed = json(&bin, &work, "list --json --all --exclude-label y");
    let ids: Vec<&str> =
        listed.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert!(!ids.contains(&a.as_str()) && ids.contains(&b.as_str()), "{ids:?}");
}

/// The new requests (`dep relate`/`unrelate`, `dep add --file`, the shorthands) take the same
/// route as every write: through the socket when a server holds the workspace
/// (`FLEET_TEST_SERVER=1`), directly otherwise.
#[test]
fn the_new_writes_go_through_the_one_route() {
    let ws = crate::Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    ws.run(&["bd", "dep", "relate", &a, &b]).ok();
    assert_eq!(ws.json(&["bd", "show", &b])[0]["dependencies"][0]["id"], a.as_str());
    ws.run(&["bd", "dep", "unrelate", &a, &b]).ok();
    let edges = format!("{{\"issue_id\":\"{b}\",\"depends_on_id\":\"{a}\"}}\n");
    let file = ws.home().join("edges.jsonl");
    std::fs::write(&file, edges).unwrap();
    ws.run(&["bd", "dep", "add", "--file", file.to_str().unwrap()]).ok();
    ws.run(&["bd", "assign", &b, "carol"]).ok();
    ws.run(&["bd", "tag", &b, "later"]).ok();
    let shown = ws.json(&["bd", "show", &b]);
    assert_eq!(shown[0]["dependencies"][0]["dependency_type"], "blocks");
    assert_eq!(
        (&shown[0]["assignee"], &shown[0]["labels"][0]),
        (&Value::from("carol"), &Value::from("later"))
    );
    assert_eq!(ws.blocked_ids(), [b]);
}

/// The last of beads' create/init flags: `--spec-id` sets the issue's spec, the molecule and
/// event fields land in its metadata (events only on `--type=event`), `--graph` is refused
/// with the way to do it, and `init --force` on an existing store keeps it and succeeds.
#[test]
fn beads_issue_fields_and_init_force_do_what_they_say() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix bf");
    let made = json(&bin, &work, "create Spec --spec-id docs/spec.md --mol-type swarm --json");
    let id = made["id"].as_str().unwrap().to_string();
    let shown = json(&bin, &work, &format!("show {id} --json"));
    assert_eq!(shown[0]["spec_id"], "docs/spec.md", "{shown}");
    assert_eq!(shown[0]["metadata"]["mol_type"], "swarm", "{shown}");
    let event = json(
        &bin,
        &work,
        r#"create Started -t event --event-category agent.started --event-payload '{"n":1}' --json"#,
    );
    let id = event["id"].as_str().unwrap().to_string();
    let shown = json(&bin, &work, &format!("show {id} --json"));
    assert_eq!(shown[0]["metadata"]["event_kind"], "agent.started", "{shown}");
    assert_eq!(shown[0]["metadata"]["payload"]["n"], 1, "{shown}");
    let (code, _, stderr) = run(&bin, &work, "create Wrong --event-category x");
    assert_eq!(code, 1);
    assert!(stderr.contains("require --type=event"), "{stderr}");
    let (code, _, stderr) = run(&bin, &work, "create Many --graph g.json");
    assert_eq!(code, 1);
    assert!(stderr.contains("bd dep add"), "{stderr}");
    let count = json(&bin, &work, "count --json");
    let (code, _, stderr) = run(&bin, &work, "init --force");
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("kept as it is"), "{stderr}");
    assert_eq!(json(&bin, &work, "count --json"), count, "nothing was re-initialised");
}
