//! `fleet dep`: adding and removing edges, the validation order of spec §3.5 (self edges,
//! child-to-parent, epic/task, cycles, one edge per pair), trees, lists and cycle reports.

use crate::{Workspace, WorkspaceExt, ids_of, lines};

/// Ids of what `id` depends on, with the edge types.
fn edges(ws: &Workspace, id: &str) -> Vec<(String, String)> {
    ws.json(&["dep", "list", id])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (d["id"].as_str().unwrap().to_string(), d["dependency_type"].as_str().unwrap().into())
        })
        .collect()
}

#[test]
fn dep_add_reports_the_edge() {
    let ws = Workspace::new();
    let a = ws.create("Write docs", &[]);
    let b = ws.create("Ship feature", &[]);
    let run = ws.run(&["dep", "add", &a, &b]).ok();
    assert_eq!(
        run.stdout,
        format!("✓ Added dependency: {a} (Write docs) depends on {b} (Ship feature) (blocks)\n")
    );
    assert_eq!(run.stderr, "");
    assert_eq!(edges(&ws, &a), [(b.clone(), "blocks".to_string())]);

    let c = ws.create("Related one", &[]);
    let json = ws.json(&["dep", "add", &a, &c, "--type", "related"]);
    assert_eq!(
        json,
        serde_json::json!({"status": "added", "issue_id": a, "depends_on_id": c, "type": "related"})
    );
    // Any 1-50 character type is accepted; longer ones are refused.
    ws.run(&["dep", "add", &b, &c, "-t", "my-custom-link"]).ok();
    let run = ws.run(&["dep", "add", &c, &b, "-t", &"x".repeat(51)]).fails(1);
    assert!(run.stderr.contains("invalid dependency type"), "{}", run.stderr);
}

#[test]
fn dep_add_accepts_external_and_other_project_targets() {
    let ws = Workspace::new();
    let a = ws.create("Needs upstream", &[]);
    let run = ws.run(&["dep", "add", &a, "external:proj:cap"]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "✓ Added dependency: {a} (Needs upstream) depends on external:proj:cap (not in this workspace) (blocks)\n"
        )
    );
    ws.run(&["dep", "add", &a, "other-9z"]).ok();
    let shown = ws.show(&a);
    assert_eq!(shown["dependencies"][0]["missing"], true);
    // An id with our prefix that does not exist is a typo, not a foreign reference.
    let run = ws.run(&["dep", "add", &a, "t-nope"]).fails(1);
    assert!(run.stderr.contains("no issue found matching \"t-nope\""), "{}", run.stderr);
    let run = ws.run(&["dep", "add", "nope", &a]).fails(1);
    assert!(run.stderr.contains("no issue found matching \"nope\""), "{}", run.stderr);
}

#[test]
fn self_dependencies_are_refused_for_every_type() {
    let ws = Workspace::new();
    let a = ws.create("Alone", &[]);
    for kind in ["blocks", "related", "parent-child", "waits-for"] {
        let run = ws.run(&["dep", "add", &a, &a, "-t", kind]).fails(1);
        assert!(
            run.stderr
                .contains(&format!("cannot add self-dependency: {a} cannot depend on itself")),
            "{kind}: {}",
            run.stderr
        );
    }
    assert!(edges(&ws, &a).is_empty());
}

#[test]
fn blocking_cycles_are_refused() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let c = ws.create("C", &[]);
    ws.run(&["dep", "add", &a, &b]).ok();
    ws.run(&["dep", "add", &b, &c]).ok();
    for (from, to, kind) in [
        (&b, &a, "blocks"),
        (&c, &a, "blocks"),
        (&c, &a, "conditional-blocks"), // the same class as blocks
    ] {
        let run = ws.run(&["dep", "add", from, to, "-t", kind]).fails(1);
        assert!(
            run.stderr.starts_with("error: adding dependency would create a cycle"),
            "{from} -> {to} ({kind}): {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint: run `fleet dep tree <id>`"), "{}", run.stderr);
    }
    assert!(edges(&ws, &c).is_empty(), "nothing was added");
    // Non-blocking edges are never cycle-checked.
    ws.run(&["dep", "add", &c, &a, "-t", "related"]).ok();
    ws.run(&["dep", "add", &b, &ws.create("D", &[]), "-t", "related"]).ok();
    assert_eq!(ws.run(&["dep", "cycles"]).ok().stdout, "✓ No dependency cycles detected\n");
    assert_eq!(ws.json(&["dep", "cycles"]), serde_json::json!({"cycles": []}));
}

/// An edge may point at another project's id that is created here later; the new issue's own
/// edges can then close a cycle through it, and are refused like any other.
#[test]
fn a_created_issue_cannot_close_a_cycle_through_edges_already_pointing_at_it() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    ws.run(&["dep", "add", &a, "ot-9"]).ok();
    let run = ws.run(&["create", "B", "--id", "ot-9", "--deps", &a]).fails(1);
    assert!(run.stderr.contains("adding dependency would create a cycle"), "{}", run.stderr);
    assert_eq!(ws.run(&["dep", "cycles"]).ok().stdout, "✓ No dependency cycles detected\n");
}

#[test]
fn parent_child_cycles_are_refused() {
    let ws = Workspace::new();
    let p = ws.create("Parent", &[]);
    let c = ws.create("Child", &["--parent", &p]);
    let g = ws.create("Grandchild", &["--parent", &c]);
    for (from, to) in [(&p, &c), (&p, &g)] {
        let run = ws.run(&["dep", "add", from, to, "-t", "parent-child"]).fails(1);
        assert!(run.stderr.contains("adding dependency would create a cycle"), "{}", run.stderr);
    }
    assert!(edges(&ws, &p).is_empty());
    // A child may not block on its own parent (that would deadlock), whatever the wording.
    let run = ws.run(&["dep", "add", &c, &p]).fails(1);
    assert!(run.stderr.contains(&format!("{c} is already a child of {p}")), "{}", run.stderr);
}

#[test]
fn one_edge_per_pair() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    ws.run(&["dep", "add", &a, &b]).ok();
    // The same edge again is fine and changes nothing.
    ws.run(&["dep", "add", &a, &b]).ok();
    ws.run(&["dep", "add", &a, &b, "-t", "blocks"]).ok();
    assert_eq!(edges(&ws, &a), [(b.clone(), "blocks".to_string())]);
    // A different type for the same pair is refused.
    let run = ws.run(&["dep", "add", &a, &b, "-t", "related"]).fails(1);
    assert!(
        run.stderr.contains(&format!(
            "{a} already depends on {b} as blocks; remove that dependency before adding it as related"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(edges(&ws, &a), [(b.clone(), "blocks".to_string())]);
    // The reverse direction is another pair.
    ws.run(&["dep", "add", &b, &a, "-t", "related"]).ok();
}

#[test]
fn epics_block_only_epics() {
    let ws = Workspace::new();
    let epic = ws.create("Epic", &["-t", "epic"]);
    let other_epic = ws.create("Other epic", &["-t", "epic"]);
    let task = ws.create("Task", &[]);
    let run = ws.run(&["dep", "add", &epic, &task]).fails(1);
    assert!(run.stderr.contains("epics can only block other epics, not tasks"), "{}", run.stderr);
    let run = ws.run(&["dep", "add", &task, &epic]).fails(1);
    assert!(run.stderr.contains("tasks can only block other tasks, not epics"), "{}", run.stderr);
    assert!(edges(&ws, &epic).is_empty() && edges(&ws, &task).is_empty());
    ws.run(&["dep", "add", &epic, &other_epic]).ok();
    // The rule is about blocks only.
    ws.run(&["dep", "add", &task, &epic, "-t", "related"]).ok();
    ws.run(&["dep", "add", &task, &epic, "-t", "related"]).ok();
}

#[test]
fn dep_remove_deletes_the_edge() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    ws.run(&["dep", "add", &a, &b]).ok();
    assert_eq!(ws.blocked_ids(), [a.as_str()]);
    let run = ws.run(&["dep", "remove", &a, &b]).ok();
    assert_eq!(run.stdout, format!("✓ Removed dependency: {a} no longer depends on {b}\n"));
    assert!(edges(&ws, &a).is_empty());
    assert!(ws.blocked_ids().is_empty());
    let run = ws.run(&["dep", "remove", &a, &b]).fails(1);
    assert!(run.stderr.contains(&format!("{a} does not depend on {b}")), "{}", run.stderr);
    // Foreign targets are removed by their text; --json names the type removed.
    ws.run(&["dep", "add", &a, "external:x:y"]).ok();
    let json = ws.json(&["dep", "remove", &a, "external:x:y"]);
    assert_eq!(json["status"], "removed");
    assert_eq!(json["type"], "blocks");
}

#[test]
fn dep_tree_draws_each_direction() {
    let ws = Workspace::new();
    let top = ws.create("Top", &["-p", "1"]);
    let mid = ws.create("Mid", &[]);
    let left = ws.create("Left", &[]);
    let right = ws.create("Right", &[]);
    ws.run(&["dep", "add", &top, &mid]).ok();
    ws.run(&["dep", "add", &mid, &left]).ok();
    ws.run(&["dep", "add", &mid, &right, "-t", "related"]).ok();
    ws.run(&["close", &right]).ok();
    let (first, second) = if left < right { (&left, &right) } else { (&right, &left) };
    let label = |id: &String| {
        if id == &left {
            format!("{left}: Left [P2] ○ open (blocks)")
        } else {
            format!("{right}: Right [P2] ✓ closed (related)")
        }
    };
    let run = ws.run(&["dep", "tree", &top]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            format!("🌲 Dependency tree for {top} (what it depends on):"),
            format!("{top}: Top [P1] ○ open"),
            format!("└── {mid}: Mid [P2] ○ open (blocks)"),
            format!("    ├── {}", label(first)),
            format!("    └── {}", label(second)),
        ]
    );
    let run = ws.run(&["dep", "tree", &left, "--direction", "up"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            format!("🌲 Dependents of {left} (what depends on it):"),
            format!("{left}: Left [P2] ○ open"),
            format!("└── {mid}: Mid [P2] ○ open (blocks)"),
            format!("    └── {top}: Top [P1] ○ open (blocks)"),
        ]
    );
    let run = ws.run(&["dep", "tree", &mid, "--direction", "both", "-d", "1"]).ok();
    let text = lines(&run.stdout);
    assert!(text.contains(&format!("🌲 Dependency tree for {mid} (what it depends on):").as_str()));
    assert!(text.contains(&format!("🌲 Dependents of {mid} (what depends on it):").as_str()));
    assert!(text.contains(&format!("└── {top}: Top [P1] ○ open (blocks)").as_str()));
    let run = ws.run(&["dep", "tree", &top, "--max-depth", "1"]).ok();
    assert_eq!(
        lines(&run.stdout)[2],
        format!("└── {mid}: Mid [P2] ○ open (blocks) (deeper levels hidden)")
    );
    let tree = ws.json(&["dep", "tree", &top]);
    assert_eq!(tree["down"]["id"], top);
    assert_eq!(tree["down"]["children"][0]["id"], mid);
    assert!(tree.get("up").is_none());
}

#[test]
fn dep_tree_shows_a_shared_dependency_once() {
    let ws = Workspace::new();
    let top = ws.create("Top", &[]);
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let shared = ws.create("Shared", &[]);
    for (from, to) in [(&top, &a), (&top, &b), (&a, &shared), (&b, &shared)] {
        ws.run(&["dep", "add", from, to]).ok();
    }
    let run = ws.run(&["dep", "tree", &top]).ok();
    let shared_lines: Vec<&str> =
        run.stdout.lines().filter(|l| l.contains(&format!("{shared}: Shared"))).collect();
    assert_eq!(shared_lines.len(), 2, "{}", run.stdout);
    assert!(!shared_lines[0].ends_with("(shown above)"), "{}", run.stdout);
    assert!(shared_lines[1].ends_with("(blocks) (shown above)"), "{}", run.stdout);
}

#[test]
fn dep_list_shows_direct_edges() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let c = ws.create("C", &[]);
    ws.run(&["dep", "add", &a, &b]).ok();
    ws.run(&["dep", "add", &a, &c, "-t", "related"]).ok();
    let run = ws.run(&["dep", "list", &a]).ok();
    let mut expected =
        vec![format!("  {b}: B [open] (blocks)"), format!("  {c}: C [open] (related)")];
    expected.sort();
    let text = lines(&run.stdout);
    assert_eq!(text[0], format!("Dependencies of {a} (2):"));
    let mut rest: Vec<String> = text[1..].iter().map(|l| l.to_string()).collect();
    rest.sort();
    assert_eq!(rest, expected);
    assert_eq!(ids_of(&ws.json(&["dep", "list", &a, "-t", "related"])), [c.as_str()]);
    let run = ws.run(&["dep", "list", &b, "--direction", "up"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [format!("Dependents of {b} (1):"), format!("  {a}: A [open] (blocks)")]
    );
    assert_eq!(ws.run(&["dep", "list", &b]).ok().stdout, format!("{b} has no dependencies\n"));
    assert_eq!(
        ws.run(&["dep", "list", &a, "--direction", "up"]).ok().stdout,
        format!("{a} has no dependents\n")
    );
}

#[test]
fn create_deps_adds_edges_of_each_form() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let c = ws.create("C", &[]);
    let d = ws.create("D", &[]);
    let x = ws.create(
        "X",
        &[
            "--deps",
            &format!("{a},blocked-by:{b}"),
            "--deps",
            &format!("related:{c},depends-on:{d}"),
        ],
    );
    let mut got = edges(&ws, &x);
    got.sort();
    let mut expected = vec![
        (a.clone(), "blocks".to_string()),
        (b.clone(), "blocks".to_string()),
        (c.clone(), "related".to_string()),
        (d.clone(), "blocks".to_string()),
    ];
    expected.sort();
    assert_eq!(got, expected);
    assert_eq!(ws.blocked_ids(), [x]);
    // An edge that breaks a rule refuses the whole create.
    let epic = ws.create("Epic", &["-t", "epic"]);
    let run = ws.run(&["create", "Y", "--deps", &epic]).fails(1);
    assert!(run.stderr.contains("tasks can only block other tasks"), "{}", run.stderr);
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 6, "Y was not created");
}

/// Issue 29: `bd create --waits-for X --waits-for-gate any-children` is one op (it took two
/// transactions, and a kill between them left the gate unset): the waiter is ready as soon as
/// one of the spawner's children closes.
#[test]
fn a_waits_for_gate_is_made_with_its_issue_in_one_op() {
    let ws = Workspace::new();
    let spawner = ws.create("spawner", &[]);
    let first = ws.create("first child", &["--parent", &spawner]);
    ws.create("second child", &["--parent", &spawner]);
    ws.run(&["journal", "commit"]).ok();
    let waiter = ws
        .run(&[
            "bd",
            "create",
            "waiter",
            "--waits-for",
            &spawner,
            "--waits-for-gate",
            "any-children",
            "--silent",
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_eq!(ws.json(&["journal", "commit"])["ops"], 1, "the create and its gate are one op");
    assert!(!ws.ready_ids().contains(&waiter));
    ws.run(&["close", &first, "--reason", "done"]).ok();
    assert!(ws.ready_ids().contains(&waiter), "any child closed ends the wait");
}
