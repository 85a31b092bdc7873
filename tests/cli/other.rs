//! Comments, labels, search, stats, list filters and sorting, and a closed stdout.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use fleet::model::Issue;
use fleet::op::OpKind;
use fleet::time::Clock;

use crate::{NOW, Workspace, WorkspaceExt, ids_of, lines, strings};

#[test]
fn comments_are_added_and_listed_in_order() {
    let ws = Workspace::new();
    let id = ws.create("Discussed", &[]);
    assert_eq!(ws.run(&["comments", &id]).ok().stdout, format!("{id} has no comments\n"));
    let run = ws.run_at(NOW, &["comment", &id, "First thought"]).ok();
    assert_eq!(run.stdout, format!("✓ Comment added to {id} — Discussed\n"));
    let run = ws
        .run_at(
            "2026-03-02T13:00:00Z",
            &["comments", "add", &id, "Second\nover two lines", "--author", "alice"],
        )
        .ok();
    assert_eq!(run.stdout, format!("✓ Comment added to {id} — Discussed\n"));
    let run = ws.run(&["comments", &id]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            format!("💬 Comments on {id} (2):").as_str(),
            "",
            "[tester] 2026-03-02T12:00:00Z:",
            "  First thought",
            "",
            "[alice] 2026-03-02T13:00:00Z:",
            "  Second",
            "  over two lines",
        ]
    );
    let comments = ws.json(&["comments", &id]);
    assert_eq!(comments[0]["issue_id"], id);
    assert_eq!(comments[1]["author"], "alice");
    assert!(comments[0]["id"].is_string());
    assert_eq!(ws.show(&id)["comment_count"], 2);
    let added = ws.json(&["comment", &id, "Third"]);
    assert_eq!(added["text"], "Third");
    assert_eq!(added["author"], "tester");
    let run = ws.run(&["comments", "add", &id]).fails(2);
    assert!(
        run.stderr.contains("expected `comments ID` or `comments add ID TEXT`"),
        "{}",
        run.stderr
    );
}

#[test]
fn labels_are_added_removed_and_listed() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    assert_eq!(ws.run(&["label", "list", &a]).ok().stdout, format!("{a} has no labels\n"));
    assert_eq!(ws.run(&["label", "list-all"]).ok().stdout, "No labels in use\n");

    let run = ws.run(&["label", "add", &a, &b, "backend"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [format!("✓ Added label 'backend' to {a}"), format!("✓ Added label 'backend' to {b}")]
    );
    let run = ws.run(&["label", "add", &a, "backend"]).ok();
    assert_eq!(run.stdout, format!("{a} already has label 'backend'\n"));
    ws.run(&["label", "add", &a, "api"]).ok();
    let run = ws.run(&["label", "list", &a]).ok();
    assert_eq!(
        lines(&run.stdout),
        [format!("🏷 Labels for {a}:").as_str(), "  - api", "  - backend"]
    );
    assert_eq!(strings(&ws.json(&["label", "list", &a])), ["api", "backend"]);

    let run = ws.run(&["label", "list-all"]).ok();
    assert_eq!(
        lines(&run.stdout),
        ["🏷 All labels (2 unique):", "  api      (1 issues)", "  backend  (2 issues)"]
    );
    let all = ws.json(&["label", "list-all"]);
    assert_eq!(
        all,
        serde_json::json!([{"label": "api", "count": 1}, {"label": "backend", "count": 2}])
    );

    let run = ws.run(&["label", "remove", &a, "backend"]).ok();
    assert_eq!(run.stdout, format!("✓ Removed label 'backend' from {a}\n"));
    let run = ws.run(&["label", "remove", &a, "backend"]).ok();
    assert_eq!(run.stdout, format!("{a} does not have label 'backend'\n"));
    assert_eq!(strings(&ws.show(&a)["labels"]), ["api"]);
    assert_eq!(ids_of(&ws.json(&["list", "-l", "backend"])), [b.as_str()]);
    let changes = ws.json(&["label", "add", &b, "backend"]);
    assert_eq!(changes, serde_json::json!([{"id": b, "label": "backend", "changed": false}]));
}

/// The ids `search ARGS --json` prints, in its order.
fn searched(ws: &Workspace, args: &[&str]) -> Vec<String> {
    ids_of(&ws.run(&[&["search"], args, &["--json"]].concat()).ok().json())
}

#[test]
fn search_matches_ids_titles_and_descriptions() {
    let ws = Workspace::new();
    let login = ws.create("Fix LOGIN page", &["--id", "t-aaa"]);
    let desc = ws.create("Other", &["--id", "t-bbb", "-d", "the login form breaks"]);
    let by_id = ws.create("Unrelated", &["--id", "t-login"]);
    let closed = ws.create("Old login bug", &["--id", "t-ccc"]);
    ws.run(&["close", &closed]).ok();
    ws.create("Nothing here", &["--id", "t-ddd"]);

    let found = |args: &[&str]| searched(&ws, &[args, &["--sort", "id"]].concat());
    assert_eq!(found(&["login"]), [login.clone(), desc.clone(), by_id.clone()]);
    assert_eq!(found(&["Login", "--all"]), [login.clone(), desc.clone(), closed.clone(), by_id]);
    assert_eq!(found(&["login", "-s", "closed"]), [closed]);
    assert_eq!(found(&["FORM"]), [desc]);
    let run = ws.run(&["search", "login", "-n", "1", "--sort", "id"]).ok();
    assert_eq!(run.stdout, format!("{login} [● P2] [task] open - Fix LOGIN page\n"));
    assert_eq!(run.stderr, "Showing 1 of 3 issues (use --limit 0 for all)\n");
    assert_eq!(ws.run(&["search", "zzz"]).ok().stdout, "No issues found matching \"zzz\"\n");
}

#[test]
fn search_compares_the_lowercased_text_not_the_stored_row() {
    let ws = Workspace::new();
    // Lowercasing turns the Kelvin sign into an ASCII `k` and `É` into `é`.
    let kelvin = ws.create("\u{212A}elvin scale", &["--id", "t-aaa"]);
    let emile = ws.create("Ask ÉMILE", &["--id", "t-bbb"]);
    let quoted = ws.create("say \"hi\" twice", &["--id", "t-ccc"]);
    let path = ws.create("Path", &["--id", "t-ddd", "-d", r"under C:\Temp"]);
    let closed = ws.create("Kelvin, closed", &["--id", "t-eee"]);
    ws.run(&["close", &closed]).ok();

    // In the default order, which the order index serves (`--sort id` would decode every row).
    let found = |args: &[&str]| {
        let mut ids = searched(&ws, args);
        ids.sort();
        ids
    };
    assert_eq!(found(&["KELVIN", "--all"]), [kelvin.clone(), closed.clone()]);
    assert_eq!(found(&["kelvin"]), [kelvin]);
    assert_eq!(found(&["kelvin", "-s", "closed"]), [closed]);
    assert_eq!(found(&["émile"]), [emile]);
    assert_eq!(found(&["\"HI\""]), [quoted]);
    assert_eq!(found(&[r"c:\temp"]), [path]);
    // Every stored row names its fields; a field's name is not its text.
    assert_eq!(found(&["issue_type"]), Vec::<String>::new());
    assert_eq!(found(&["\"title\""]), Vec::<String>::new());
}

#[test]
fn stats_count_issues_by_state() {
    let ws = Workspace::new();
    let run = ws.run(&["stats"]).ok();
    assert!(run.stdout.contains("  Total Issues:  0\n"), "{}", run.stdout);

    let open = ws.create_at("2026-03-01T00:00:00Z", "Open", &[]);
    let wip = ws.create_at("2026-03-01T00:00:00Z", "Wip", &[]);
    let done = ws.create_at("2026-03-01T00:00:00Z", "Done", &[]);
    let blocked = ws.create_at("2026-03-01T00:00:00Z", "Blocked", &["--deps", &open]);
    let deferred = ws.create_at("2026-03-01T00:00:00Z", "Deferred", &[]);
    let pinned = ws.create_at("2026-03-01T00:00:00Z", "Pinned", &[]);
    let epic = ws.create_at("2026-03-01T00:00:00Z", "Epic", &["-t", "epic"]);
    let child = ws.create_at("2026-03-01T00:00:00Z", "Child", &["--parent", &epic]);
    ws.run(&["claim", &wip]).ok();
    ws.run_at("2026-03-01T06:00:00Z", &["close", &done]).ok();
    ws.run_at("2026-03-01T12:00:00Z", &["close", &child]).ok();
    ws.run(&["update", &deferred, "-s", "deferred"]).ok();
    ws.run(&["update", &pinned, "-s", "pinned"]).ok();

    let run = ws.run_at(NOW, &["stats"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            "📊 Issue Database Status",
            "",
            "  Total Issues:  8",
            "  Open:          3",
            "  In Progress:   1",
            "  Closed:        2",
            "  Blocked:       1",
            "  Deferred:      1",
            "  Pinned:        1",
            "  Ready:         2",
            "  Epics eligible for closure: 1",
            "  Avg lead time: 9.0 hours",
        ]
    );
    let stats = ws.run_at(NOW, &["stats", "--json"]).ok().json();
    assert_eq!(stats["total_issues"], 8);
    assert_eq!(stats["open_issues"], 3);
    assert_eq!(stats["in_progress_issues"], 1);
    assert_eq!(stats["closed_issues"], 2);
    assert_eq!(stats["blocked_issues"], 1);
    assert_eq!(stats["deferred_issues"], 1);
    assert_eq!(stats["pinned_issues"], 1);
    assert_eq!(stats["ready_issues"], 2);
    assert_eq!(stats["epics_eligible_for_closure"], 1);
    assert_eq!(stats["average_lead_time_hours"], 9.0);
    let _ = blocked;
}

#[test]
fn list_prints_one_line_per_issue_and_hides_closed() {
    let ws = Workspace::new();
    assert_eq!(ws.run(&["list"]).ok().stdout, "No issues found\n");
    let bug = ws.create("Crash", &["-t", "bug", "-p", "1", "-a", "alice"]);
    let task = ws.create("Chore work", &[]);
    let closed = ws.create("Finished", &["-p", "0"]);
    ws.run(&["close", &closed]).ok();
    let run = ws.run(&["list"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            format!("{bug} [● P1] [bug] open - Crash @alice"),
            format!("{task} [● P2] [task] open - Chore work"),
        ]
    );
    assert_eq!(run.stderr, "");
    let run = ws.run(&["list", "--all"]).ok();
    assert_eq!(lines(&run.stdout)[0], format!("{closed} [● P0] [task] closed - Finished"));
    let listed = ws.json(&["list"]);
    assert_eq!(listed[0]["dependency_count"], 0);
    assert_eq!(listed[0]["assignee"], "alice");
}

#[test]
fn list_filters() {
    let ws = Workspace::new();
    let a = ws.create("a", &["-t", "bug", "-p", "0", "-l", "x,y", "-a", "alice"]);
    let b = ws.create("b", &["-t", "feature", "-p", "1", "-l", "x"]);
    let c = ws.create("c", &["-p", "1", "-a", "bob"]);
    let d = ws.create("d", &[]);
    ws.run(&["update", &c, "-s", "in_progress"]).ok();
    ws.run(&["update", &d, "-s", "blocked"]).ok();
    let e = ws.create("e", &[]);
    ws.run(&["close", &e]).ok();
    let names = [(&a, "a"), (&b, "b"), (&c, "c"), (&d, "d"), (&e, "e")];
    let name = |id: &String| names.iter().find(|(i, _)| *i == id).map(|(_, n)| *n).unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&[], &["a", "b", "c", "d"]),
        (&["--all"], &["a", "b", "c", "d", "e"]),
        (&["-s", "in_progress"], &["c"]),
        (&["--status", "blocked,closed"], &["d", "e"]),
        (&["-s", "in-progress", "-s", "open"], &["a", "b", "c"]),
        (&["-p", "1"], &["b", "c"]),
        (&["-p", "P0"], &["a"]),
        (&["-t", "bug"], &["a"]),
        (&["-t", "bug,feature"], &["a", "b"]),
        (&["-t", "feat"], &["b"]),
        (&["-a", "bob"], &["c"]),
        (&["-l", "x"], &["a", "b"]),
        (&["-l", "x", "-l", "y"], &["a"]),
        (&["-l", "x", "-p", "1"], &["b"]),
        (&["-l", "none"], &[]),
    ];
    let mut failures = Vec::new();
    for (args, expected) in cases {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        let mut got: Vec<&str> = ids_of(&ws.run(&all).ok().json()).iter().map(name).collect();
        got.sort();
        if got != *expected {
            failures.push(format!("list {args:?}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn list_sorts_and_limits() {
    let ws = Workspace::new();
    let a = ws.create_at("2026-03-01T00:00:00Z", "Charlie", &["-p", "2", "--id", "t-a"]);
    ws.create_at("2026-03-02T00:00:00Z", "Alpha", &["-p", "1", "--id", "t-b"]);
    ws.create_at("2026-03-03T00:00:00Z", "Bravo", &["-p", "2", "--id", "t-c"]);
    ws.run_at("2026-03-04T00:00:00Z", &["update", &a, "--notes", "touched"]).ok();
    let order = |args: &[&str]| {
        let mut all = vec!["list", "--json"];
        all.extend_from_slice(args);
        ids_of(&ws.run(&all).ok().json())
    };
    assert_eq!(order(&[]), ["t-b", "t-c", "t-a"], "priority, then newest");
    assert_eq!(order(&["--sort", "created"]), ["t-c", "t-b", "t-a"], "newest first");
    assert_eq!(order(&["--sort", "updated"]), ["t-a", "t-c", "t-b"]);
    assert_eq!(order(&["--sort", "id"]), ["t-a", "t-b", "t-c"]);
    assert_eq!(order(&["--sort", "title"]), ["t-b", "t-c", "t-a"]);
    assert_eq!(order(&["--sort", "id", "-r"]), ["t-c", "t-b", "t-a"]);
    assert_eq!(order(&["--sort", "id", "-n", "2"]), ["t-a", "t-b"]);
    let run = ws.run(&["list", "--sort", "id", "--limit", "2"]).ok();
    assert_eq!(lines(&run.stdout).len(), 2);
    assert_eq!(run.stderr, "Showing 2 of 3 issues (use --limit 0 for all)\n");
    assert_eq!(ws.run(&["list", "-n", "3"]).ok().stderr, "");
    assert_eq!(ws.run(&["list", "-n", "2", "--quiet"]).ok().stderr, "", "--quiet drops narration");
}

#[test]
fn list_shows_at_most_50_by_default() {
    let ws = Workspace::new();
    fill(&ws, 60, 10);
    let run = ws.run(&["list"]).ok();
    assert_eq!(lines(&run.stdout).len(), 50);
    assert_eq!(run.stderr, "Showing 50 of 60 issues (use --limit 0 for all)\n");
    assert_eq!(ws.json(&["list", "-n", "0"]).as_array().unwrap().len(), 60);
}

/// Creates `count` issues with titles of `title_len` bytes, through the library in one
/// transaction.
fn fill(ws: &Workspace, count: usize, title_len: usize) {
    let now: jiff::Timestamp = NOW.parse().unwrap();
    let creates = (0..count)
        .map(|n| {
            let title = format!("{n:05} {}", "x".repeat(title_len.saturating_sub(6)));
            OpKind::Create {
                issue: Box::new(Issue::new(format!("t-f{n:05}"), title, now)),
                deps: Vec::new(),
            }
        })
        .collect();
    ws.store().apply("tester", Clock::Fixed(now), creates).unwrap();
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let ws = Workspace::new();
    // About 150 KB of output: more than a pipe holds, so the writer meets a closed pipe.
    fill(&ws, 300, 480);
    for args in
        [vec!["list", "-n", "0"], vec!["ready", "-n", "0"], vec!["list", "-n", "0", "--json"]]
    {
        // `fleet list | head -n 1`: read one line, then close the pipe.
        let mut child =
            ws.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "{args:?}");
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
    }
}

/// `fleet completions SHELL` prints a completion script that knows the commands, also
/// without any workspace; an unknown shell is a usage error naming the choices.
#[test]
fn completion_scripts_know_the_commands() {
    let ws = Workspace::empty();
    let bash = ws.run(&["completions", "bash"]).ok().stdout;
    assert!(bash.starts_with("_fleet()"), "{bash}");
    for command in ["serve", "tasks", "ready", "claim"] {
        assert!(bash.contains(command), "bash completion lacks {command}");
    }
    // A subcommand's own flags and the `help` tree's nested commands (`fleet help run
    // restart`) are there too: the script is made from the whole command tree.
    for word in ["--coder", "--ready-ids", "help__subcmd__run__subcmd__restart"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    let zsh = ws.run(&["completions", "zsh"]).ok().stdout;
    assert!(zsh.starts_with("#compdef fleet"), "{zsh}");
    let fish = ws.run(&["completions", "fish"]).ok().stdout;
    assert!(fish.contains("complete -c fleet"), "{fish}");
    let bad = ws.run(&["completions", "tcsh"]).fails(2);
    assert!(bad.stderr.contains("possible values"), "{}", bad.stderr);
}
