//! Errors (spec §7): the messages fleet shares with `bd`, the exit codes (1 for a failed
//! command, 2 for a usage error), JSON errors on stderr with `--json`, a missing workspace, the
//! close guards, and the rule that a failing command leaves nothing half-done.

use serde_json::Value;

use crate::{Run, Workspace, WorkspaceExt, ids_of, lines, strings};

// Unknown ids in these tests are `nope`: longer than the three-character hashes of a small
// queue, so partial id resolution cannot match a real issue by chance.

/// Asserts exit 1 with `message` on the first stderr line (`error: …`) and nothing on stdout.
#[track_caller]
fn assert_error(run: Run, message: &str) -> Run {
    let run = run.fails(1);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(message),
        "expected an error containing {message:?}, got stderr:\n{}",
        run.stderr
    );
    assert_eq!(run.stdout, "", "stdout of a failed command");
    run
}

#[test]
fn an_unknown_id_is_named_in_every_command() {
    let ws = Workspace::new();
    let real = ws.create("Real", &[]);
    let commands: &[&[&str]] = &[
        &["show", "nope"],
        &["update", "nope", "-p", "1"],
        &["close", "nope"],
        &["reopen", "nope"],
        &["delete", "nope"],
        &["delete", "nope", "--force"],
        &["dep", "add", "nope", &real],
        &["dep", "remove", "nope", &real],
        &["dep", "tree", "nope"],
        &["dep", "list", "nope"],
        &["label", "add", "nope", "l"],
        &["label", "list", "nope"],
        &["comment", "nope", "text"],
        &["comments", "nope"],
        &["claim", "nope"],
        &["release", "nope"],
        &["ready", "--parent", "nope"],
        &["blocked", "--parent", "nope"],
    ];
    for args in commands {
        let run = assert_error(ws.run(args), "no issue found matching \"nope\"");
        // `claim` and `close` report the message alone.
        if args[0] != "claim" && args[0] != "close" {
            assert!(
                run.stderr.contains("hint: run `fleet list --all` to see issue ids"),
                "{args:?}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn bad_priorities_are_refused() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    for args in [
        vec!["create", "T", "-p", "5"],
        vec!["create", "T", "-p", "high"],
        vec!["create", "T", "--priority", "P9"],
        vec!["update", &id, "-p", "-1"],
        vec!["update", &id, "--priority=-1"],
        vec!["list", "-p", "7"],
        vec!["ready", "-p", "P5"],
    ] {
        let run = ws.run(&args);
        if run.code == 2 {
            // `-p -1` is read by clap as a flag: a usage error is fine too.
            assert!(run.stderr.contains("Usage:"), "{args:?}: {}", run.stderr);
            continue;
        }
        assert_error(run, "invalid priority");
    }
    assert_error(
        ws.run(&["create", "T", "-p", "5"]),
        "invalid priority \"5\": expected 0-4 or P0-P4",
    );
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 1, "nothing was created");
    assert_eq!(ws.show(&id)["priority"], 2);
}

#[test]
fn bad_types_and_statuses_are_refused() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    assert_error(ws.run(&["create", "T", "-t", "bogus"]), "invalid issue type: bogus");
    assert_error(ws.run(&["create", "T", "--type", "agent"]), "invalid issue type: agent");
    assert_error(ws.run(&["update", &id, "-t", "bogus"]), "invalid issue type: bogus");
    assert_error(ws.run(&["list", "-t", "bogus"]), "invalid issue type: bogus");
    assert_error(ws.run(&["ready", "-t", "bogus"]), "invalid issue type: bogus");
    assert_error(ws.run(&["update", &id, "-s", "done"]), "invalid status \"done\"");
    assert_error(ws.run(&["list", "-s", "open,done"]), "invalid status \"done\"");
    assert_eq!(ws.show(&id)["issue_type"], "task");
}

/// Asserts exit 2 (a usage error) with `message` on the first stderr line, nothing on stdout.
#[track_caller]
fn assert_usage_error(run: Run, message: &str) -> Run {
    let run = run.fails(2);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("error: ") && first.contains(message),
        "expected a usage error containing {message:?}, got stderr:\n{}",
        run.stderr
    );
    assert_eq!(run.stdout, "", "stdout of a usage error");
    run
}

#[test]
fn titles_are_required() {
    let ws = Workspace::new();
    // No title at all is a usage error; a blank one is refused input.
    let run = assert_usage_error(ws.run(&["create"]), "title required");
    assert!(run.stderr.contains("hint: fleet create \"Fix the login bug\""), "{}", run.stderr);
    assert_error(ws.run(&["create", "   "]), "title required");
    assert_error(ws.run(&["create", "--title", ""]), "title required");
    let id = ws.create("Real", &[]);
    assert_error(ws.run(&["update", &id, "--title", " "]), "title is required");
    assert_error(ws.run(&["create", &"x".repeat(501)]), "title is 501 bytes; the limit is 500");
    ws.create(&"x".repeat(500), &[]);
    assert_eq!(ws.show(&id)["title"], "Real");
}

#[test]
fn missing_arguments_have_their_own_messages() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    // A missing argument is a usage error (exit 2), however it is checked.
    let run = assert_usage_error(ws.run(&["update", &id]), "No updates specified");
    assert!(run.stderr.contains("hint: pass a field to change"), "{}", run.stderr);
    assert_usage_error(ws.run(&["search"]), "search query is required");
    assert_usage_error(ws.run(&["show"]), "issue ID is required");
    assert_usage_error(ws.run(&["delete"]), "no issue IDs provided");
    assert_usage_error(ws.run(&["delete", "--force"]), "no issue IDs provided");
    assert_usage_error(ws.run(&["comments", "add", &id]), "expected `comments ID`");
    // A blank value given is refused input (exit 1).
    assert_error(ws.run(&["search", "  "]), "search query is required");
    assert_error(ws.run(&["comment", &id, " "]), "comment text is empty");
    assert_error(ws.run(&["label", "add", &id, " "]), "label is empty");
}

#[test]
fn estimates_and_dates_are_checked() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    let negative = "estimate must be a non-negative number of minutes";
    assert_error(ws.run(&["create", "T", "--estimate=-5"]), negative);
    assert_error(ws.run(&["update", &id, "--estimate=-1"]), negative);
    let run = assert_error(
        ws.run(&["create", "T", "--due", "someday"]),
        "invalid --due format \"someday\"",
    );
    assert!(run.stderr.contains("Examples: +6h, +1d, +2w, tomorrow"), "{}", run.stderr);
    assert_error(ws.run(&["update", &id, "--due", "+3x"]), "invalid --due format \"+3x\"");
    assert_error(ws.run(&["create", "T", "--defer", "later"]), "invalid --defer format \"later\"");
    assert_error(ws.run(&["update", &id, "--defer", "2026-13-45"]), "invalid --defer format");
    // The forms beads documents are accepted.
    for due in
        ["+6h", "+1d", "+2w", "tomorrow", "next monday", "2025-01-15", "2025-01-15T10:00:00Z"]
    {
        ws.run(&["update", &id, "--due", due]).ok();
    }
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 1);
    assert!(ws.show(&id).get("estimated_minutes").is_none());
}

#[test]
fn close_refuses_an_issue_with_open_blockers() {
    let ws = Workspace::new();
    let blocker = ws.create("Blocker", &[]);
    let blocked = ws.create("Blocked", &["--deps", &blocker]);
    let run = assert_error(
        ws.run(&["close", &blocked]),
        &format!("cannot close {blocked}: blocked by open issues [{blocker}]"),
    );
    assert_eq!(
        lines(&run.stderr),
        [
            format!("error: cannot close {blocked}: blocked by open issues [{blocker}]").as_str(),
            "hint: pass --force to close it anyway",
        ],
        "the refusal is reported once"
    );
    assert_eq!(ws.show(&blocked)["status"], "open");
    // --force closes it anyway.
    let run = ws.run(&["close", &blocked, "--force"]).ok();
    assert_eq!(run.stdout, format!("✓ Closed {blocked} — Blocked: Closed\n"));
    // A closed blocker no longer guards.
    let second = ws.create("Second", &["--deps", &blocker]);
    ws.run(&["close", &blocker]).ok();
    ws.run(&["close", &second]).ok();
}

#[test]
fn close_refuses_an_epic_with_open_children() {
    let ws = Workspace::new();
    let epic = ws.create("Epic", &["-t", "epic"]);
    let c1 = ws.create("One", &["--parent", &epic]);
    let c2 = ws.create("Two", &["--parent", &epic]);
    assert_error(
        ws.run(&["close", &epic]),
        &format!("cannot close {epic}: epic has 2 open children [{c1}, {c2}]"),
    );
    ws.run(&["close", &c1]).ok();
    assert_error(
        ws.run(&["close", &epic]),
        &format!("cannot close {epic}: epic has 1 open children [{c2}]"),
    );
    ws.run(&["close", &c2]).ok();
    ws.run(&["close", &epic]).ok();
    // A non-epic parent is not guarded; --force closes an epic with open children.
    let task = ws.create("Task parent", &[]);
    ws.create("Child", &["--parent", &task]);
    ws.run(&["close", &task]).ok();
    let epic2 = ws.create("Epic 2", &["-t", "epic"]);
    ws.create("Child", &["--parent", &epic2]);
    ws.run(&["close", &epic2, "-f"]).ok();
}

#[test]
fn close_refuses_a_pinned_issue() {
    let ws = Workspace::new();
    let id = ws.create("Pinned", &[]);
    ws.run(&["update", &id, "-s", "pinned"]).ok();
    assert_error(ws.run(&["close", &id]), &format!("cannot close {id}: issue is pinned"));
    ws.run(&["close", &id, "--force"]).ok();
    assert_eq!(ws.show(&id)["status"], "closed");
}

#[test]
fn close_of_several_ids_closes_what_it_can_and_fails_for_the_rest() {
    let ws = Workspace::new();
    let blocker = ws.create("Blocker", &[]);
    let blocked = ws.create("Blocked", &["--deps", &blocker]);
    let free = ws.create("Free", &[]);
    // What closed is on stdout; each id that did not is an error, and the exit code is 1.
    let run = ws.run(&["close", &blocked, &free, "nope"]).fails(1);
    assert_eq!(run.stdout, format!("✓ Closed {free} — Free: Closed\n"));
    assert_eq!(
        lines(&run.stderr),
        [
            format!("error: cannot close {blocked}: blocked by open issues [{blocker}]").as_str(),
            "error: no issue found matching \"nope\"",
            "hint: pass --force to close it anyway",
        ]
    );
    assert_eq!(ws.show(&free)["status"], "closed");
    assert_eq!(ws.show(&blocked)["status"], "open");
    // When none can be closed, the same: each refusal named, exit 1.
    let run = ws.run(&["close", &blocked, "nope"]).fails(1);
    assert_eq!(
        lines(&run.stderr),
        [
            format!("error: cannot close {blocked}: blocked by open issues [{blocker}]").as_str(),
            "error: no issue found matching \"nope\"",
            "hint: pass --force to close it anyway",
        ]
    );
    assert_eq!(run.stdout, "");
    let run = ws.run(&["close", &blocked, "nope", "--json"]).fails(1);
    let error: Value = serde_json::from_str(&run.stderr).unwrap();
    assert_eq!(error["error"], "2 of 2 issues could not be closed");
    assert_eq!(error["errors"][1]["id"], "nope");
    // A reason count that fits neither rule is a usage error, before anything closes.
    let other = ws.create("Other", &[]);
    let run = ws.run(&["close", &blocker, &other, "nope", "-r", "a", "-r", "b"]).fails(2);
    assert!(run.stderr.starts_with("error: 2 reasons for 3 issues"), "{}", run.stderr);
    assert_eq!(ws.show(&other)["status"], "open");
}

#[test]
fn a_missing_workspace_is_named_with_the_fix() {
    let ws = Workspace::empty();
    let beads = ws.beads_dir().display().to_string();
    for args in [vec!["list"], vec!["create", "T"], vec!["ready", "--json"]] {
        let run = ws.run(&args).fails(1);
        if args.contains(&"--json") {
            let error: Value = serde_json::from_str(&run.stderr).unwrap();
            assert!(error["error"].as_str().unwrap().contains(&beads), "{error}");
            continue;
        }
        assert_eq!(
            lines(&run.stderr),
            [
                format!("error: no fleet workspace at {beads}; run `fleet init` (or `bd init`) first"),
                "hint: create it with `fleet init`, or point --db / BEADS_DIR at an existing .beads directory"
                    .to_string(),
            ]
        );
        assert_eq!(run.stdout, "");
    }
    // BEADS_DIR and --db name other places.
    let elsewhere = ws.home().join("elsewhere");
    let output = ws.command(&["list"]).env("BEADS_DIR", &elsewhere).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains(&elsewhere.display().to_string()));
    let run = ws.run(&["list", "--db", "/nonexistent/.beads/beads.db"]).fails(1);
    assert!(run.stderr.contains("no fleet workspace at /nonexistent/.beads;"), "{}", run.stderr);
}

/// `fleet init` in a `.beads/` whose `.gitignore` beads wrote keeps the file and adds fleet's
/// lines at its end, once.
#[test]
fn init_adds_fleets_lines_to_a_gitignore_beads_wrote() {
    let ws = Workspace::empty();
    let beads = ws.beads_dir();
    std::fs::create_dir_all(&beads).unwrap();
    let theirs = "*.db\ndaemon.log\n!*.jsonl\nsync.lock\n";
    std::fs::write(beads.join(".gitignore"), theirs).unwrap();
    ws.run(&["init", "--prefix", "proj"]).ok();
    let text = std::fs::read_to_string(beads.join(".gitignore")).unwrap();
    assert_eq!(
        text,
        format!(
            "{theirs}*.db.bak-*\njournal.git/\nfleet.sock\nfleet.sock.lock\ncommit.lock\nclaiming/\n"
        )
    );
}

#[test]
fn init_creates_the_workspace_once() {
    let ws = Workspace::empty();
    let run = ws.run(&["init", "--prefix", "proj"]).ok();
    let beads = ws.beads_dir();
    assert_eq!(
        lines(&run.stdout),
        [
            "✓ fleet initialized successfully!",
            &format!("  Workspace: {}", beads.display()),
            "  Issue prefix: proj",
        ]
    );
    assert!(beads.join("beads.db").is_file());
    assert!(beads.join("metadata.json").is_file());
    let gitignore = std::fs::read_to_string(beads.join(".gitignore")).unwrap();
    for line in ["*.db", "*.db-journal", "*.db-wal", "*.db-shm", "daemon.log", "!*.jsonl"] {
        assert!(gitignore.lines().any(|l| l == line), "{line} in .gitignore");
    }
    assert!(ws.create("First", &[]).starts_with("proj-"));
    assert_error(ws.run(&["init", "--prefix", "other"]), "already exists");
    assert!(ws.create("Second", &[]).starts_with("proj-"), "the prefix did not change");
    let fresh = Workspace::empty();
    assert_error(fresh.run(&["init", "--prefix", "Bad_Prefix"]), "invalid prefix \"Bad_Prefix\"");
    assert!(!fresh.beads_dir().join("beads.db").exists());
}

/// An init killed after it published the store and before it wrote the workspace's other
/// files left a `.beads/` with only the store: the next `fleet init` still refuses to make a
/// second workspace, and puts the missing `.gitignore` (which keeps the store out of git) and
/// `metadata.json` in.
#[test]
fn init_on_a_half_made_workspace_writes_its_missing_files() {
    let ws = Workspace::empty();
    ws.run(&["init", "--prefix", "proj"]).ok();
    let beads = ws.beads_dir();
    let gitignore = std::fs::read_to_string(beads.join(".gitignore")).unwrap();
    let metadata = std::fs::read_to_string(beads.join("metadata.json")).unwrap();
    std::fs::remove_file(beads.join(".gitignore")).unwrap();
    std::fs::remove_file(beads.join("metadata.json")).unwrap();
    assert_error(ws.run(&["init", "--prefix", "proj"]), "already exists");
    assert_eq!(std::fs::read_to_string(beads.join(".gitignore")).unwrap(), gitignore);
    assert_eq!(std::fs::read_to_string(beads.join("metadata.json")).unwrap(), metadata);
    assert!(ws.create("Still here", &[]).starts_with("proj-"));
}

/// A `beads.db` that is no store (here an empty file) is refused, and nothing is written
/// beside it: the name alone does not make a workspace to lay out.
#[test]
fn init_beside_a_file_that_is_no_store_writes_nothing() {
    let other = Workspace::empty();
    let beads = other.beads_dir();
    std::fs::create_dir_all(&beads).unwrap();
    std::fs::write(beads.join("beads.db"), b"").unwrap();
    assert_error(other.run(&["init", "--prefix", "proj"]), "already exists");
    let left: Vec<_> = std::fs::read_dir(&beads).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["beads.db"]);
}

#[test]
fn json_errors_are_json_on_stderr() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    for (args, message) in [
        (vec!["show", "nope", "--json"], "no issue found matching \"nope\"".to_string()),
        (vec!["--json", "create", "T", "-t", "bogus"], "invalid issue type: bogus".to_string()),
        (
            vec!["update", &id, "nope", "-p", "1", "--json"],
            "no issue found matching \"nope\"".to_string(),
        ),
        (
            vec!["dep", "add", &id, &id, "--json"],
            format!("cannot add self-dependency: {id} cannot depend on itself"),
        ),
    ] {
        let run = ws.run(&args).fails(1);
        assert_eq!(run.stdout, "", "{args:?}");
        let error: Value = serde_json::from_str(&run.stderr)
            .unwrap_or_else(|e| panic!("{args:?}: stderr is not JSON ({e}): {}", run.stderr));
        assert_eq!(error["error"], message.as_str(), "{args:?}");
        assert!(error["hints"].is_array(), "{error}");
    }
    // A usage error fleet finds itself is JSON too, with exit 2.
    let run = ws.run(&["update", &id, "--json"]).fails(2);
    let error: Value = serde_json::from_str(&run.stderr).unwrap();
    assert_eq!(error["error"], "No updates specified");
    let run = ws.run(&["show", "nope", "--json"]).fails(1);
    let error: Value = serde_json::from_str(&run.stderr).unwrap();
    assert_eq!(strings(&error["hints"]), ["run `fleet list --all` to see issue ids"]);
}

#[test]
fn usage_errors_exit_2() {
    let ws = Workspace::new();
    for args in [
        vec!["frobnicate"],
        vec!["list", "--no-such-flag"],
        vec!["update"],
        vec!["close"],
        vec!["dep", "add", "only-one"],
        vec!["dep", "tree", "x", "--direction", "sideways"],
        vec!["ready", "--limit", "many"],
        vec!["label", "add", "just-a-label"],
    ] {
        let run = ws.run(&args).fails(2);
        assert!(run.stderr.starts_with("error: "), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("For more information, try '--help'."), "{args:?}");
        assert_eq!(run.stdout, "");
    }
    let run = ws.run(&[]).fails(2);
    assert!(run.stderr.contains("Usage: fleet"), "{}", run.stderr);
    // Help and version are not errors.
    let run = ws.run(&["--help"]).ok();
    assert!(run.stdout.contains("Usage: fleet"), "{}", run.stdout);
    for command in ["create", "list", "ready", "show", "update", "close", "dep", "claim"] {
        assert!(run.stdout.contains(&format!("\n  {command} ")), "{command} in --help");
    }
    let version = ws.run(&["--version"]).ok().stdout;
    assert!(version.starts_with(&format!("fleet {} (", env!("CARGO_PKG_VERSION"))), "{version}");
    assert!(version.trim_end().ends_with(')'), "the commit it was built from: {version}");
    assert_eq!(ws.run(&["-V"]).ok().stdout, version);
    assert_eq!(ws.run(&["--json", "--version"]).ok().stdout, version);
    assert!(ws.run(&["create", "--help"]).ok().stdout.contains("--parent"));
}

#[test]
fn a_bad_test_clock_is_refused() {
    let ws = Workspace::new();
    let run = ws.run_at("yesterday", &["list"]).fails(1);
    assert!(
        run.stderr.contains("FLEET_TEST_NOW=\"yesterday\" is not an RFC 3339 time"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_failing_command_leaves_nothing_half_done() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let before = ws.json(&["show", &a, &b]);

    // update: the second id fails, so the first is not changed either.
    assert_error(ws.run(&["update", &a, "nope", "-p", "0", "--add-label", "x"]), "no issue found");
    // update: a later issue's edit is refused by validation.
    ws.run(&["claim", &b, "--actor", "other"]).ok();
    assert_error(ws.run(&["update", &a, &b, "--claim"]), "already claimed by other");
    ws.run(&["release", &b]).ok();
    // labels, deletes and releases of several ids.
    assert_error(ws.run(&["label", "add", &a, "nope", "x"]), "no issue found");
    assert_error(ws.run(&["delete", &a, "nope", "--force"]), "no issue found");
    assert_error(ws.run(&["reopen", &a, "nope"]), "no issue found");
    // create: a bad dependency refuses the issue.
    assert_error(
        ws.run(&["create", "C", "--deps", "t-missing"]),
        "no issue found matching \"t-missing\"",
    );
    assert_error(ws.run(&["create", "C", "--parent", "t-missing"]), "no issue found");

    let after = ws.json(&["show", &a, &b]);
    for (old, new) in before.as_array().unwrap().iter().zip(after.as_array().unwrap()) {
        for key in ["status", "priority", "labels", "assignee", "dependency_count"] {
            assert_eq!(old.get(key), new.get(key), "{key} of {}", old["id"]);
        }
    }
    assert_eq!(after[0]["updated_at"], before[0]["updated_at"], "A was never written");
    let mut all = ids_of(&ws.json(&["list", "--all"]));
    all.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(all, expected, "no issue was created or deleted");
}

/// Ids that are not one safe path component (the supervisor names `tasks/<id>/` after them),
/// as they can be typed on a command line. `--id=…` so clap takes `-rf` as the value.
const BAD_IDS: &[&str] = &["/abs/dir", "../x", "a/b", "..", ".", "-rf", "a b", "a\nb", "", "a..b"];

/// The names in the workspace home and its `.beads/`, to show a refused command created none.
fn entries(ws: &Workspace) -> Vec<String> {
    let mut names = Vec::new();
    for dir in [ws.home().to_path_buf(), ws.beads_dir()] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            names.push(entry.unwrap().path().display().to_string());
        }
    }
    names.sort();
    names
}

#[test]
fn create_refuses_an_id_that_is_not_one_path_component() {
    let ws = Workspace::new();
    let before = entries(&ws);
    for id in BAD_IDS {
        let flag = format!("--id={id}");
        let run =
            assert_error(ws.run(&["create", "T", &flag]), &format!("invalid issue id {id:?}"));
        assert!(
            run.stderr.contains("ids may contain only letters, digits, '-', '_' and '.'"),
            "{id:?}: the fix is named: {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: leave out --id"), "{id:?}: {}", run.stderr);
        // The same refusal as JSON on stderr with --json.
        let run = ws.run(&["create", "T", &flag, "--json"]).fails(1);
        assert_eq!(run.stdout, "");
        let error: Value = serde_json::from_str(&run.stderr).unwrap();
        assert!(
            error["error"].as_str().unwrap().starts_with(&format!("invalid issue id {id:?}: ")),
            "{error}"
        );
    }
    assert_eq!(ws.json(&["list", "--all"]), Value::Array(Vec::new()), "nothing was created");
    assert_eq!(entries(&ws), before, "no file or directory was created");
    assert!(!std::path::Path::new("/abs/dir").exists());
    // Ids of the beads shapes are still taken as given.
    for id in ["t-mine", "t-mine.1", "other-proj-x9", "t_under-1"] {
        assert_eq!(ws.create("T", &["--id", id]), id);
    }
}

#[test]
fn the_store_refuses_ops_that_would_store_a_bad_id() {
    use fleet::model::Issue;
    use fleet::op::OpKind;
    use fleet::store::StoreError;
    use fleet::time::Clock;

    let ws = Workspace::new();
    let now: jiff::Timestamp = crate::NOW.parse().unwrap();
    let issue = |id: &str| Box::new(Issue::new(id.to_string(), "T".to_string(), now));
    for id in ["../x", "/abs/dir", "t-1\0", "-rf"] {
        for op in [
            OpKind::Create { issue: issue(id), deps: Vec::new() },
            OpKind::Put { issue: issue(id) },
        ] {
            let good = OpKind::Create { issue: issue("t-good"), deps: Vec::new() };
            let error = ws.store().apply("tester", Clock::Fixed(now), vec![good, op]).unwrap_err();
            assert!(matches!(error, StoreError::InvalidId(_)), "{id:?}: {error:?}");
            assert!(error.to_string().starts_with(&format!("invalid issue id {id:?}")), "{error}");
        }
    }
    assert_eq!(
        ws.json(&["list", "--all"]),
        Value::Array(Vec::new()),
        "the batch was refused whole"
    );
}

/// Issue 29: `validation.on-close = error` refuses a terse reason on every way to close —
/// `bd close`, `fleet close`, `bd update --status closed` — and `warn` closes with a warning.
#[test]
fn the_close_reason_policy_holds_on_every_way_to_close() {
    let ws = Workspace::new();
    ws.run(&["bd", "config", "set", "validation.on-close", "error"]).ok();
    let id = ws.create("policy", &[]);
    for args in [
        &["bd", "close", &id, "--reason", "ok"][..],
        &["close", &id, "--reason", "ok"],
        &["bd", "update", &id, "--status", "closed"],
    ] {
        let refused = ws.run(args).fails(1);
        assert!(refused.stderr.contains("close reason is"), "{args:?}: {}", refused.stderr);
        assert_eq!(ws.json(&["show", &id])[0]["status"], "open", "{args:?}");
    }
    ws.run(&["close", &id, "--reason", "fixed the parser and added its tests"]).ok();
    ws.run(&["bd", "config", "set", "validation.on-close", "warn"]).ok();
    let other = ws.create("warned", &[]);
    let warned = ws.run(&["close", &other, "--reason", "ok"]).ok();
    assert!(
        warned.stderr.contains("Warning:") && warned.stderr.contains("terse"),
        "{}",
        warned.stderr
    );
    assert_eq!(ws.json(&["show", &other])[0]["status"], "closed");
}

/// Issue 29: `validation.on-create` holds on every way to create — `fleet create`, `bd
/// create`, `bd q` — and through the server: `error` refuses a task without its Acceptance
/// Criteria and creates nothing; `warn` creates it and says what is missing.
#[test]
fn the_create_policy_holds_on_every_way_to_create() {
    let ws = Workspace::new();
    ws.run(&["config", "set", "validation.on-create=error"]).ok();
    for args in
        [&["create", "terse task"][..], &["bd", "create", "terse task"], &["bd", "q", "terse task"]]
    {
        let refused = ws.run(args).fails(1);
        let words = "missing required sections for task: ## Acceptance Criteria";
        assert!(refused.stderr.contains(words), "{args:?}: {}", refused.stderr);
    }
    assert_eq!(ws.json(&["list", "--all"]), Value::Array(Vec::new()), "nothing was created");
    let full = ["create", "complete task", "-d", "## Acceptance Criteria\nit works"];
    ws.run(&full).ok();
    ws.run(&["config", "set", "validation.on-create=warn"]).ok();
    let warned = ws.run(&["create", "terse but allowed"]).ok();
    assert!(warned.stderr.contains("Warning: missing required sections"), "{}", warned.stderr);
    assert_eq!(ws.json(&["list", "--all"]).as_array().map(Vec::len), Some(2));
}
