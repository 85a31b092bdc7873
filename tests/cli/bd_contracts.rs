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
