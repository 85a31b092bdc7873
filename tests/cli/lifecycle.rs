//! The issue lifecycle: `create`, `show`, `update`, `close`, `reopen`, `delete`, child ids,
//! inherited labels, the working directory default, and partial id resolution.

use crate::{NOW, Workspace, WorkspaceExt, ids_of, lines, strings};

/// The id in a `✓ Created issue: <id> — <title>` line.
fn created_id(stdout: &str) -> String {
    let first = stdout.lines().next().unwrap_or_default();
    let rest = first.strip_prefix("✓ Created issue: ").unwrap_or_else(|| panic!("{stdout}"));
    rest.split(" — ").next().unwrap().to_string()
}

#[test]
fn create_prints_the_bd_success_block() {
    let ws = Workspace::new();
    let run = ws.run(&["create", "Fix the login bug", "-p", "1"]).ok();
    let id = created_id(&run.stdout);
    assert_eq!(
        lines(&run.stdout),
        [
            format!("✓ Created issue: {id} — Fix the login bug").as_str(),
            "  Priority: P1",
            "  Status: open",
        ]
    );
    assert_eq!(run.stderr, "");
    // A hash id: the prefix, then three base-36 characters while the queue is small.
    let suffix = id.strip_prefix("t-").expect("prefix t");
    assert_eq!(suffix.len(), 3, "{id}");
    assert!(suffix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()), "{id}");
}

#[test]
fn create_silent_prints_only_the_id() {
    let ws = Workspace::new();
    let run = ws.run(&["create", "Quiet one", "--silent"]).ok();
    let id = run.stdout.trim_end().to_string();
    assert_eq!(run.stdout, format!("{id}\n"));
    assert_eq!(run.stderr, "");
    assert_eq!(ws.show(&id)["title"], "Quiet one");
}

#[test]
fn create_json_prints_the_issue_with_its_counts() {
    let ws = Workspace::new();
    let run = ws.run_at(NOW, &["create", "Json one", "--json"]).ok();
    let issue = run.json();
    assert_eq!(issue["title"], "Json one");
    assert_eq!(issue["status"], "open");
    assert_eq!(issue["priority"], 2, "bd create defaults to P2");
    assert_eq!(issue["issue_type"], "task");
    assert_eq!(issue["created_by"], "tester");
    assert_eq!(issue["created_at"], NOW);
    assert_eq!(issue["updated_at"], NOW);
    assert_eq!(issue["dependency_count"], 0);
    assert_eq!(issue["dependent_count"], 0);
    assert_eq!(issue["comment_count"], 0);
    assert!(issue.get("closed_at").is_none());
    assert_eq!(run.stderr, "");
    // --json wins over --silent: stdout stays parseable.
    let both = ws.run(&["create", "Both", "--silent", "--json"]).ok().json();
    assert_eq!(both["title"], "Both");
}

#[test]
fn create_records_every_field_it_is_given() {
    let ws = Workspace::new();
    let id = ws.create_at(
        NOW,
        "Full",
        &[
            "-d",
            "the description",
            "--design",
            "the design",
            "--acceptance",
            "it works",
            "--notes",
            "a note",
            "-t",
            "bug",
            "-p",
            "P0",
            "-a",
            "alice",
            "-e",
            "30",
            "--external-ref",
            "gh-9",
            "--due",
            "2026-04-01T00:00:00Z",
            "--defer",
            "+1d",
            "-l",
            "b,a",
            "--label",
            "c",
            "--coder",
            "claude",
            "--model",
            "opus",
        ],
    );
    let issue = ws.show(&id);
    assert_eq!(issue["description"], "the description");
    assert_eq!(issue["design"], "the design");
    assert_eq!(issue["acceptance_criteria"], "it works");
    assert_eq!(issue["notes"], "a note");
    assert_eq!(issue["issue_type"], "bug");
    assert_eq!(issue["priority"], 0);
    assert_eq!(issue["assignee"], "alice");
    assert_eq!(issue["estimated_minutes"], 30);
    assert_eq!(issue["external_ref"], "gh-9");
    assert_eq!(issue["due_at"], "2026-04-01T00:00:00Z");
    assert_eq!(issue["defer_until"], "2026-03-03T12:00:00Z");
    assert_eq!(strings(&issue["labels"]), ["a", "b", "c"], "labels are stored sorted");
    assert_eq!(issue["fleet"]["coder"], "claude");
    assert_eq!(issue["fleet"]["model"], "opus");
    // An explicit id is used as given.
    let explicit = ws.create("Explicit", &["--id", "t-mine"]);
    assert_eq!(explicit, "t-mine");
}

#[test]
fn create_type_aliases_resolve() {
    let ws = Workspace::new();
    for (alias, canonical) in [("feat", "feature"), ("adr", "decision"), ("mr", "merge-request")] {
        let id = ws.create(alias, &["-t", alias]);
        assert_eq!(ws.show(&id)["issue_type"], canonical, "-t {alias}");
    }
}

#[test]
fn working_directory_defaults_to_the_current_directory() {
    let ws = Workspace::new();
    let project = ws.home().join("project");
    std::fs::create_dir_all(project.join("sub")).unwrap();
    let project = project.canonicalize().unwrap();

    let run = ws.run_in(&project, &["create", "Here", "--silent"]).ok();
    let here = run.stdout.trim();
    assert_eq!(ws.show(here)["fleet"]["cwd"], project.display().to_string());

    // A relative --cwd is taken from the current directory.
    let run = ws.run_in(&project, &["create", "Sub", "--cwd", "sub", "--silent"]).ok();
    let sub = run.stdout.trim();
    assert_eq!(ws.show(sub)["fleet"]["cwd"], project.join("sub").display().to_string());

    // An absolute one is kept, and `update --cwd` changes it without touching the coder.
    let id = ws.create("Elsewhere", &["--cwd", "/srv/app", "--coder", "codex"]);
    assert_eq!(ws.show(&id)["fleet"]["cwd"], "/srv/app");
    ws.run(&["update", &id, "--cwd", "/srv/other"]).ok();
    let issue = ws.show(&id);
    assert_eq!(issue["fleet"]["cwd"], "/srv/other");
    assert_eq!(issue["fleet"]["coder"], "codex");
}

#[test]
fn children_get_dotted_ids_and_a_parent_child_edge() {
    let ws = Workspace::new();
    let parent = ws.create("Parent", &["-t", "epic"]);
    let run = ws.run(&["create", "First child", "--parent", &parent]).ok();
    assert_eq!(lines(&run.stdout)[0], format!("✓ Created issue: {parent}.1 — First child"));
    // The parent may be given as a partial id.
    let short = parent.strip_prefix("t-").unwrap();
    assert_eq!(ws.create("Second child", &["--parent", short]), format!("{parent}.2"));
    assert_eq!(ws.create("Grandchild", &["--parent", &format!("{parent}.1")]), {
        format!("{parent}.1.1")
    });

    let child = ws.show(&format!("{parent}.1"));
    assert_eq!(child["parent"], parent);
    assert_eq!(child["dependency_count"], 1);
    assert_eq!(child["dependencies"][0]["id"], parent);
    assert_eq!(child["dependencies"][0]["dependency_type"], "parent-child");
    let shown = ws.show(&parent);
    assert_eq!(shown["dependent_count"], 2);
    assert_eq!(ids_of(&shown["dependents"]), [format!("{parent}.1"), format!("{parent}.2")]);

    // Numbers are not reused after a delete.
    ws.run(&["delete", &format!("{parent}.2"), "--force"]).ok();
    assert_eq!(ws.create("Third child", &["--parent", &parent]), format!("{parent}.3"));
}

#[test]
fn children_nest_at_most_three_levels() {
    let ws = Workspace::new();
    let mut id = ws.create("Root", &[]);
    for level in 1..=3 {
        id = ws.create(&format!("Level {level}"), &["--parent", &id]);
    }
    assert!(id.ends_with(".1.1.1"), "{id}");
    let run = ws.run(&["create", "Too deep", "--parent", &id]).fails(1);
    assert!(run.stderr.contains("children may be nested at most 3 levels deep"), "{}", run.stderr);
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 4, "nothing was created");
}

#[test]
fn children_inherit_the_parents_labels_unless_told_not_to() {
    let ws = Workspace::new();
    let parent = ws.create("Parent", &["-l", "frontend,urgent"]);
    let child = ws.create("Child", &["--parent", &parent, "-l", "css"]);
    assert_eq!(strings(&ws.show(&child)["labels"]), ["css", "frontend", "urgent"]);
    let plain = ws.create("Plain", &["--parent", &parent, "-l", "css", "--no-inherit-labels"]);
    assert_eq!(strings(&ws.show(&plain)["labels"]), ["css"]);
    let same = ws.create("Same label", &["--parent", &parent, "-l", "urgent"]);
    assert_eq!(strings(&ws.show(&same)["labels"]), ["frontend", "urgent"], "no duplicates");
}

#[test]
fn show_prints_the_legacy_block() {
    let ws = Workspace::new();
    let blocker = ws.create_at(NOW, "Blocker", &[]);
    let id = ws.create_at(
        NOW,
        "Shown",
        &["-d", "line one\nline two", "-p", "1", "-t", "bug", "-a", "alice", "-l", "x,y"],
    );
    ws.run_at(NOW, &["dep", "add", &id, &blocker]).ok();
    let home = ws.home().display().to_string();
    let run = ws.run(&["show", &id]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            format!("{id}: Shown").as_str(),
            "Status: open",
            "Priority: P1",
            "Type: bug",
            "Assignee: alice",
            "Created: 2026-03-02T12:00:00Z by tester",
            "Updated: 2026-03-02T12:00:00Z",
            "Labels: x, y",
            "Coder: claude (default)",
            "Model: sonnet (default)",
            &format!("Working directory: {home}"),
            "Blocked: yes (see dependencies)",
            "",
            "Description:",
            "  line one",
            "  line two",
            "",
            "Dependencies (1):",
            &format!("  → {blocker}: Blocker ○ open (blocks)"),
        ]
    );
    let run = ws.run(&["show", &blocker]).ok();
    let text = lines(&run.stdout);
    assert!(text.contains(&"Dependencies (0):"), "{}", run.stdout);
    assert!(text.contains(&"Dependents (1):"), "{}", run.stdout);
    assert!(text.contains(&format!("  ← {id}: Shown ○ open (blocks)").as_str()), "{}", run.stdout);
}

#[test]
fn show_takes_several_ids_and_json_is_an_array_of_details() {
    let ws = Workspace::new();
    let a = ws.create("Alpha", &[]);
    let b = ws.create("Beta", &[]);
    ws.run(&["dep", "add", &b, &a]).ok();
    ws.run(&["comment", &a, "looks good"]).ok();
    let run = ws.run(&["show", &a, &b]).ok();
    assert!(run.stdout.starts_with(&format!("{a}: Alpha\n")), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("\n\n{b}: Beta\n")), "{}", run.stdout);

    let shown = ws.json(&["show", &a, &b]);
    assert_eq!(ids_of(&shown), [a.clone(), b.clone()]);
    assert_eq!(shown[0]["blocked"], false);
    assert_eq!(shown[0]["comment_count"], 1);
    assert_eq!(shown[0]["comments"][0]["text"], "looks good");
    assert_eq!(ids_of(&shown[0]["dependents"]), [b.as_str()]);
    assert_eq!(shown[1]["blocked"], true);
    assert_eq!(shown[1]["dependencies"][0]["id"], a);
    assert_eq!(shown[1]["dependencies"][0]["dependency_type"], "blocks");
    assert_eq!(shown[1]["dependencies"][0]["status"], "open");
}

#[test]
fn partial_ids_resolve_to_the_one_issue_they_name() {
    let ws = Workspace::new();
    ws.create("One", &["--id", "t-abc1"]);
    ws.create("Two", &["--id", "t-abc2"]);
    ws.create("Three", &["--id", "t-xyz"]);
    for (input, expected) in [
        ("t-abc1", "t-abc1"), // exact
        ("xyz", "t-xyz"),     // without the prefix
        ("abc2", "t-abc2"),   // without the prefix, exact hash
        ("xy", "t-xyz"),      // a unique start of the hash
        ("yz", "t-xyz"),      // a unique end
        ("abc", ""),          // ambiguous
    ] {
        let run = ws.run(&["show", input, "--json"]);
        if expected.is_empty() {
            let run = run.fails(1);
            assert!(run.stderr.contains("matches several issues: t-abc1, t-abc2"), "{input}");
        } else {
            assert_eq!(ids_of(&run.ok().json()), [expected], "input {input:?}");
        }
    }
    // Every command resolves the same way.
    ws.run(&["update", "xy", "-p", "0"]).ok();
    assert_eq!(ws.show("t-xyz")["priority"], 0);
    ws.run(&["close", "abc1"]).ok();
    assert_eq!(ws.show("t-abc1")["status"], "closed");
    let run = ws.run(&["show", "abc"]).fails(1);
    assert!(run.stderr.contains("hint: type more of the id"), "{}", run.stderr);
    // A full id names one issue or none: `t-ab` is no part of `t-abc1`.
    let run = ws.run(&["show", "t-ab"]).fails(1);
    assert!(run.stderr.contains(r#"no issue found matching "t-ab""#), "{}", run.stderr);
}

/// Issue 28: a deleted id names nothing, not the issue whose id merely begins with it — its
/// child, or a longer id. Typed in full, without the prefix, or by an agent as
/// `bd close $FLEET_TASK_ID` after a person deleted its task: every close is refused, saying
/// the issue was deleted, and the others stay open.
#[test]
fn a_deleted_id_never_closes_its_child_or_a_longer_id() {
    let ws = Workspace::new();
    for (id, parent) in
        [("t-2i0", None), ("t-abc", None), ("t-abcd", None), ("t-2i0.1", Some("t-2i0"))]
    {
        let mut args = vec!["--id", id];
        args.extend(parent.iter().flat_map(|p| ["--parent", *p]));
        ws.create(id, &args);
    }
    ws.run(&["delete", "t-2i0", "t-abc", "--force"]).ok();
    for input in ["t-2i0", "2i0", "t-abc", "abc"] {
        let run = ws.run(&["close", input]).fails(1);
        let id = if input.starts_with("t-") { input.to_string() } else { format!("t-{input}") };
        assert!(
            run.stderr.contains(&format!("no issue found matching {id:?} (it was deleted)")),
            "{input}: {}",
            run.stderr
        );
    }
    let bd = ws.home().join("bin/bd");
    std::fs::create_dir_all(bd.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(crate::common::fleet_bin(), &bd).unwrap();
    let path = format!("{}:{}", bd.parent().unwrap().display(), std::env::var("PATH").unwrap());
    for task in ["t-2i0", "t-abc"] {
        // The agent's environment: the workspace's, its task, and `bd` on the PATH.
        let template = ws.command(&[]);
        let agent = std::process::Command::new("sh")
            .env_clear()
            .envs(template.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("PATH", &path)
            .env("FLEET_TASK_ID", task)
            .current_dir(ws.home())
            .args(["-c", r#"bd close "$FLEET_TASK_ID" --reason done"#])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&agent.stderr);
        assert!(!agent.status.success(), "bd close ${task} must fail: {stderr}");
        assert!(stderr.contains(task), "{stderr}");
    }
    for id in ["t-2i0.1", "t-abcd"] {
        assert_eq!(ws.show(id)["status"], "open", "{id} was closed through a deleted id");
    }
    // Made again, the id names the new issue.
    ws.create("again", &["--id", "t-abc"]);
    ws.run(&["close", "t-abc"]).ok();
    assert_eq!(ws.show("t-abcd")["status"], "open");
}

#[test]
fn update_changes_fields_and_reports_each_issue() {
    let ws = Workspace::new();
    let a = ws.create("Alpha", &["-l", "keep,drop", "--notes", "first"]);
    let b = ws.create("Beta", &[]);
    let run = ws
        .run_at(
            NOW,
            &[
                "update",
                &a,
                &b,
                "--status",
                "in_progress",
                "-p",
                "P1",
                "--append-notes",
                "second",
                "--add-label",
                "new",
                "--remove-label",
                "drop",
                "-e",
                "45",
                "--due",
                "2026-03-05",
                "-t",
                "chore",
            ],
        )
        .ok();
    assert_eq!(
        lines(&run.stdout),
        [format!("✓ Updated issue: {a} — Alpha"), format!("✓ Updated issue: {b} — Beta")]
    );
    let alpha = ws.show(&a);
    assert_eq!(alpha["status"], "in_progress");
    assert_eq!(alpha["started_at"], NOW, "first move to in_progress sets started_at");
    assert_eq!(alpha["updated_at"], NOW);
    assert_eq!(alpha["priority"], 1);
    assert_eq!(alpha["issue_type"], "chore");
    assert_eq!(alpha["notes"], "first\nsecond");
    assert_eq!(alpha["estimated_minutes"], 45);
    assert!(alpha["due_at"].as_str().is_some_and(|d| d.starts_with("2026-03-0")), "{alpha}");
    assert_eq!(strings(&alpha["labels"]), ["keep", "new"]);
    assert_eq!(ws.show(&b)["notes"], "second");

    // Retitle, unassign, clear the due date; --json gives the updated issues.
    ws.run(&["update", &a, "-a", "bob"]).ok();
    let updated = ws.json(&["update", &a, "--title", "Renamed", "-a", "", "--due", ""]);
    assert_eq!(updated[0]["title"], "Renamed");
    assert!(updated[0].get("assignee").is_none(), "{updated}");
    assert!(updated[0].get("due_at").is_none(), "{updated}");
}

#[test]
fn update_status_closed_and_back_keeps_closed_at_in_step() {
    let ws = Workspace::new();
    let id = ws.create("Flip", &[]);
    ws.run_at(NOW, &["update", &id, "-s", "closed"]).ok();
    let closed = ws.show(&id);
    assert_eq!(closed["closed_at"], NOW);
    assert_eq!(closed["close_reason"], "Closed");
    ws.run(&["update", &id, "-s", "open"]).ok();
    let open = ws.show(&id);
    assert!(open.get("closed_at").is_none(), "{open}");
    assert!(open.get("close_reason").is_none(), "{open}");
}

#[test]
fn close_sets_the_reason_and_hides_the_issue_from_list() {
    let ws = Workspace::new();
    let a = ws.create("Alpha", &[]);
    let b = ws.create("Beta", &[]);
    let run = ws.run_at(NOW, &["close", &a]).ok();
    assert_eq!(run.stdout, format!("✓ Closed {a} — Alpha: Closed\n"));
    let run = ws.run(&["close", &b, "--reason", "Duplicate of the other", "--session", "s-1"]).ok();
    assert_eq!(run.stdout, format!("✓ Closed {b} — Beta: Duplicate of the other\n"));

    let alpha = ws.show(&a);
    assert_eq!(alpha["status"], "closed");
    assert_eq!(alpha["closed_at"], NOW);
    assert_eq!(alpha["close_reason"], "Closed");
    assert_eq!(ws.show(&b)["closed_by_session"], "s-1");
    assert_eq!(ws.run(&["list"]).ok().stdout, "No issues found\n");
    assert_eq!(ids_of(&ws.json(&["list", "--all", "--sort", "id"])).len(), 2);
    // Closing again changes nothing and still succeeds.
    ws.run(&["close", &a]).ok();
    assert_eq!(ws.show(&a)["closed_at"], NOW);
}

#[test]
fn close_takes_one_reason_per_id_or_one_for_all() {
    let ws = Workspace::new();
    let ids: Vec<String> = ["A", "B", "C"].iter().map(|t| ws.create(t, &[])).collect();
    let closed = ws.json(&["close", &ids[0], &ids[1], "-r", "first", "-r", "second"]);
    assert_eq!(closed[0]["close_reason"], "first");
    assert_eq!(closed[1]["close_reason"], "second");
    ws.run(&["reopen", &ids[0], &ids[1]]).ok();
    let closed = ws.json(&["close", &ids[0], &ids[1], &ids[2], "--resolution", "wontfix"]);
    assert_eq!(closed.as_array().unwrap().len(), 3);
    assert!(closed.as_array().unwrap().iter().all(|c| c["close_reason"] == "wontfix"));
}

#[test]
fn reopen_clears_the_closed_fields_and_records_the_reason() {
    let ws = Workspace::new();
    let id = ws.create("Again", &[]);
    ws.run(&["close", &id, "-r", "done"]).ok();
    let run = ws.run(&["reopen", &id, "--reason", "regressed"]).ok();
    assert_eq!(run.stdout, format!("↻ Reopened {id}: regressed\n"));
    let issue = ws.show(&id);
    assert_eq!(issue["status"], "open");
    assert!(issue.get("closed_at").is_none(), "{issue}");
    assert!(issue.get("close_reason").is_none(), "{issue}");
    assert_eq!(issue["comments"][0]["text"], "Reopened: regressed");
    assert_eq!(ws.ready_ids(), [id.as_str()]);

    let plain = ws.create("Plain", &[]);
    ws.run(&["close", &plain]).ok();
    assert_eq!(ws.run(&["reopen", &plain]).ok().stdout, format!("↻ Reopened {plain}\n"));
    assert_eq!(ws.show(&plain)["comment_count"], 0);
}

#[test]
fn delete_without_force_only_previews() {
    let ws = Workspace::new();
    let a = ws.create("Doomed", &["-p", "1"]);
    let b = ws.create("Dependent", &[]);
    ws.run(&["dep", "add", &b, &a]).ok();
    let run = ws.run(&["delete", &a]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            "⚠️  DELETE PREVIEW",
            "",
            "Would delete:",
            &format!("  {a} [● P1] Doomed"),
            &format!("Would remove edges from 1 dependent issues: {b}"),
            "",
            "Run again with --force to delete.",
        ]
    );
    assert_eq!(ws.show(&a)["title"], "Doomed");
    assert_eq!(ws.show(&b)["dependency_count"], 1);
    let preview = ws.json(&["delete", &a]);
    assert_eq!(preview["preview"], true);
    assert_eq!(strings(&preview["affected_dependents"]), [b]);
}

#[test]
fn delete_with_force_removes_the_issue_and_its_edges() {
    let ws = Workspace::new();
    let a = ws.create("Doomed", &[]);
    let b = ws.create("Dependent", &[]);
    ws.run(&["dep", "add", &b, &a]).ok();
    ws.run(&["comment", &a, "gone soon"]).ok();
    assert_eq!(ws.ready_ids(), [a.as_str()]);
    let run = ws.run(&["delete", &a, "--force"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [format!("✓ Deleted {a} — Doomed"), format!("Removed edges from 1 dependent issues: {b}")]
    );
    let run = ws.run(&["show", &a]).fails(1);
    assert!(
        run.stderr.contains(&format!("no issue found matching {a:?} (it was deleted)")),
        "{}",
        run.stderr
    );
    assert_eq!(ws.show(&b)["dependency_count"], 0);
    assert_eq!(ws.ready_ids(), [b], "the dependent is no longer blocked");
}
