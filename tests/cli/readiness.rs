//! Ready and blocked work (spec/beads.md §3.2–3.4): every blocking rule as a table of small
//! scenarios, then deferral, excluded types, sort orders, limits, filters and the text of
//! `ready` and `blocked`.

use std::collections::BTreeMap;

use fleet::model::Dependency;
use fleet::op::OpKind;
use fleet::time::Clock;

use crate::{NOW, Workspace, WorkspaceExt, ids_of, lines, strings};

/// One step of a scenario. Issues are named; the names map to the ids fleet gives them.
#[derive(Clone, Copy)]
enum Step {
    /// A task.
    New(&'static str),
    /// An issue with extra `create` flags.
    NewWith(&'static str, &'static [&'static str]),
    /// A child (`create --parent`).
    Child(&'static str, &'static str),
    /// `dep add FROM TO --type KIND`; TO is a name, or taken literally if it is not one.
    Dep(&'static str, &'static str, &'static str),
    /// A waits-for edge whose metadata is `{"gate":"any-children"}` — the CLI cannot set edge
    /// metadata, so this goes through the library.
    WaitsAnyChildren(&'static str, &'static str),
    /// `update NAME --status STATUS`.
    Status(&'static str, &'static str),
    Close(&'static str),
    Reopen(&'static str),
    Undep(&'static str, &'static str),
    Delete(&'static str),
}

use Step::*;

struct Case {
    name: &'static str,
    steps: &'static [Step],
    /// Names expected in `ready --limit 0`, in any order.
    ready: &'static [&'static str],
    /// Names expected in `blocked`, in any order.
    blocked: &'static [&'static str],
}

/// The ready and blocked names a scenario ends with, each sorted.
type Outcome = (Vec<String>, Vec<String>);

/// Runs the steps in a fresh workspace and returns what is ready and what is blocked.
fn play(steps: &[Step]) -> Outcome {
    let ws = Workspace::new();
    let mut ids: BTreeMap<&str, String> = BTreeMap::new();
    let id = |ids: &BTreeMap<&str, String>, name: &str| {
        ids.get(name).cloned().unwrap_or_else(|| name.to_string())
    };
    for step in steps {
        match *step {
            New(name) => {
                ids.insert(name, ws.create(name, &[]));
            }
            NewWith(name, extra) => {
                ids.insert(name, ws.create(name, extra));
            }
            Child(name, parent) => {
                let parent = id(&ids, parent);
                ids.insert(name, ws.create(name, &["--parent", &parent]));
            }
            Dep(from, to, kind) => {
                ws.run(&["dep", "add", &id(&ids, from), &id(&ids, to), "-t", kind]).ok();
            }
            WaitsAnyChildren(from, to) => {
                let dep = Dependency {
                    issue_id: id(&ids, from),
                    depends_on_id: id(&ids, to),
                    kind: "waits-for".into(),
                    created_at: jiff::Timestamp::now(),
                    created_by: "tester".into(),
                    metadata: r#"{"gate":"any-children"}"#.into(),
                    thread_id: String::new(),
                };
                ws.store().apply("tester", Clock::System, vec![OpKind::DepAdd { dep }]).unwrap();
            }
            Status(name, status) => {
                ws.run(&["update", &id(&ids, name), "--status", status]).ok();
            }
            Close(name) => {
                ws.run(&["close", &id(&ids, name), "--force"]).ok();
            }
            Reopen(name) => {
                ws.run(&["reopen", &id(&ids, name)]).ok();
            }
            Undep(from, to) => {
                ws.run(&["dep", "remove", &id(&ids, from), &id(&ids, to)]).ok();
            }
            Delete(name) => {
                ws.run(&["delete", &id(&ids, name), "--force"]).ok();
            }
        }
    }
    let names: BTreeMap<String, &str> = ids.iter().map(|(n, i)| (i.clone(), *n)).collect();
    let named = |found: Vec<String>| {
        let mut out: Vec<String> =
            found.iter().map(|i| names.get(i).map_or(i.clone(), |n| n.to_string())).collect();
        out.sort();
        out
    };
    (named(ws.ready_ids()), named(ws.blocked_ids()))
}

const CASES: &[Case] = &[
    // Rule 1: blocks and conditional-blocks edges to an unsettled target.
    Case {
        name: "an open blocker blocks",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks")],
        ready: &["b"],
        blocked: &["x"],
    },
    Case {
        name: "an in_progress blocker blocks",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Status("b", "in_progress")],
        ready: &[],
        blocked: &["x"],
    },
    Case {
        name: "a blocker with manual status blocked or deferred still blocks",
        steps: &[
            New("x"),
            New("y"),
            New("b"),
            New("d"),
            Dep("x", "b", "blocks"),
            Dep("y", "d", "blocks"),
            Status("b", "blocked"),
            Status("d", "deferred"),
        ],
        ready: &[],
        blocked: &["x", "y"],
    },
    Case {
        name: "a closed blocker does not block",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Close("b")],
        ready: &["x"],
        blocked: &[],
    },
    Case {
        name: "a pinned blocker does not block",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Status("b", "pinned")],
        ready: &["x"],
        blocked: &[],
    },
    Case {
        name: "reopening the blocker blocks again",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Close("b"), Reopen("b")],
        ready: &["b"],
        blocked: &["x"],
    },
    Case {
        name: "removing the edge unblocks",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Undep("x", "b")],
        ready: &["b", "x"],
        blocked: &[],
    },
    Case {
        name: "deleting the blocker unblocks",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Delete("b")],
        ready: &["x"],
        blocked: &[],
    },
    Case {
        name: "conditional-blocks blocks while open",
        steps: &[New("x"), New("b"), Dep("x", "b", "conditional-blocks")],
        ready: &["b"],
        blocked: &["x"],
    },
    Case {
        name: "conditional-blocks on a closed target does not block",
        steps: &[New("x"), New("b"), Dep("x", "b", "conditional-blocks"), Close("b")],
        ready: &["x"],
        blocked: &[],
    },
    Case {
        name: "a chain blocks through open issues; the blocker's own blockedness is irrelevant",
        steps: &[New("a"), New("b"), New("c"), Dep("a", "b", "blocks"), Dep("b", "c", "blocks")],
        ready: &["c"],
        blocked: &["a", "b"],
    },
    Case {
        name: "closing the end of a chain frees only the next link",
        steps: &[
            New("a"),
            New("b"),
            New("c"),
            Dep("a", "b", "blocks"),
            Dep("b", "c", "blocks"),
            Close("c"),
        ],
        ready: &["b"],
        blocked: &["a"],
    },
    Case {
        name: "external and other-project targets do not block",
        steps: &[New("x"), Dep("x", "external:proj:cap", "blocks"), Dep("x", "other-9z", "blocks")],
        ready: &["x"],
        blocked: &[],
    },
    Case {
        name: "non-blocking edge types do not block",
        steps: &[
            New("x"),
            New("b"),
            New("c"),
            New("d"),
            Dep("x", "b", "related"),
            Dep("x", "c", "discovered-from"),
            Dep("x", "d", "tracks"),
        ],
        ready: &["b", "c", "d", "x"],
        blocked: &[],
    },
    // Closed and pinned issues are never blocked; other unsettled statuses are.
    Case {
        name: "closed and pinned issues are never listed as blocked",
        steps: &[
            New("x"),
            New("y"),
            New("b"),
            Dep("x", "b", "blocks"),
            Dep("y", "b", "blocks"),
            Close("x"),
            Status("y", "pinned"),
        ],
        ready: &["b"],
        blocked: &[],
    },
    Case {
        name: "an in_progress issue can be blocked",
        steps: &[New("x"), New("b"), Dep("x", "b", "blocks"), Status("x", "in_progress")],
        ready: &["b"],
        blocked: &["x"],
    },
    Case {
        name: "manual status blocked without edges is not listed as blocked",
        steps: &[New("x"), Status("x", "blocked")],
        ready: &[],
        blocked: &[],
    },
    // Rule 2: blockedness flows down parent-child edges, recursively.
    Case {
        name: "a blocked parent blocks its children and grandchildren",
        steps: &[New("p"), Child("c", "p"), Child("g", "c"), New("b"), Dep("p", "b", "blocks")],
        ready: &["b"],
        blocked: &["c", "g", "p"],
    },
    Case {
        name: "a child created under a blocked parent starts blocked",
        steps: &[New("p"), New("b"), Dep("p", "b", "blocks"), Child("c", "p"), Child("g", "c")],
        ready: &["b"],
        blocked: &["c", "g", "p"],
    },
    Case {
        name: "unblocking the parent frees the whole family",
        steps: &[
            New("p"),
            Child("c", "p"),
            Child("g", "c"),
            New("b"),
            Dep("p", "b", "blocks"),
            Close("b"),
        ],
        ready: &["c", "g", "p"],
        blocked: &[],
    },
    Case {
        name: "a blocked child does not block its parent or siblings",
        steps: &[New("p"), Child("c1", "p"), Child("c2", "p"), New("b"), Dep("c1", "b", "blocks")],
        ready: &["b", "c2", "p"],
        blocked: &["c1"],
    },
    Case {
        name: "an open parent does not block its children",
        steps: &[NewWith("p", &["-t", "epic"]), Child("c", "p"), Child("g", "c")],
        ready: &["c", "g", "p"],
        blocked: &[],
    },
    Case {
        name: "an in_progress parent does not block its children",
        steps: &[New("p"), Child("c", "p"), Status("p", "in_progress")],
        ready: &["c"],
        blocked: &[],
    },
    Case {
        name: "a parent-child edge added later inherits blockedness",
        steps: &[
            New("p"),
            New("c"),
            New("b"),
            Dep("p", "b", "blocks"),
            Dep("c", "p", "parent-child"),
        ],
        ready: &["b"],
        blocked: &["c", "p"],
    },
    // Rule 3: waits-for a spawner's children.
    Case {
        name: "waits-for blocks while the spawner has an open child",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            Dep("w", "s", "waits-for"),
        ],
        ready: &["c1", "c2", "s"],
        blocked: &["w"],
    },
    Case {
        name: "waits-for (all children) stays blocked with one child closed",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            Dep("w", "s", "waits-for"),
            Close("c1"),
        ],
        ready: &["c2", "s"],
        blocked: &["w"],
    },
    Case {
        name: "waits-for is satisfied when every child is closed or pinned",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            Dep("w", "s", "waits-for"),
            Close("c1"),
            Status("c2", "pinned"),
        ],
        ready: &["s", "w"],
        blocked: &[],
    },
    Case {
        name: "waits-for a spawner without children does not block",
        steps: &[New("s"), New("w"), Dep("w", "s", "waits-for")],
        ready: &["s", "w"],
        blocked: &[],
    },
    Case {
        name: "a new child of the spawner blocks the waiter again",
        steps: &[
            New("s"),
            Child("c1", "s"),
            New("w"),
            Dep("w", "s", "waits-for"),
            Close("c1"),
            Child("c2", "s"),
        ],
        ready: &["c2", "s"],
        blocked: &["w"],
    },
    Case {
        name: "waits-for with the any-children gate blocks while no child is closed",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            WaitsAnyChildren("w", "s"),
        ],
        ready: &["c1", "c2", "s"],
        blocked: &["w"],
    },
    Case {
        name: "waits-for with the any-children gate is satisfied by one closed child",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            WaitsAnyChildren("w", "s"),
            Close("c1"),
        ],
        ready: &["c2", "s", "w"],
        blocked: &[],
    },
    Case {
        name: "the any-children gate is not satisfied by a pinned child",
        steps: &[
            New("s"),
            Child("c1", "s"),
            Child("c2", "s"),
            New("w"),
            WaitsAnyChildren("w", "s"),
            Status("c1", "pinned"),
        ],
        ready: &["c2", "s"],
        blocked: &["w"],
    },
    // What ready shows beyond blocking: only open, unpinned issues.
    Case {
        name: "only open issues are ready",
        steps: &[
            New("open"),
            New("wip"),
            New("manual"),
            New("deferred"),
            New("pinned"),
            New("hooked"),
            New("closed"),
            Status("wip", "in_progress"),
            Status("manual", "blocked"),
            Status("deferred", "deferred"),
            Status("pinned", "pinned"),
            Status("hooked", "hooked"),
            Close("closed"),
        ],
        ready: &["open"],
        blocked: &[],
    },
];

#[test]
fn every_readiness_rule() {
    // Each case has its own workspace; runs wait on fsync more than on the CPU, so a few
    // threads shorten the test.
    let outcomes: Vec<(&Case, Outcome)> = std::thread::scope(|scope| {
        let workers: Vec<_> = CASES
            .chunks(CASES.len().div_ceil(4))
            .map(|chunk| {
                scope.spawn(move || chunk.iter().map(|c| (c, play(c.steps))).collect::<Vec<_>>())
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a case ran to the end")).collect()
    });
    let mut failures = Vec::new();
    for (case, (ready, blocked)) in outcomes {
        if ready != case.ready || blocked != case.blocked {
            failures.push(format!(
                "{}:\n  ready   {ready:?}, expected {:?}\n  blocked {blocked:?}, expected {:?}",
                case.name, case.ready, case.blocked
            ));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), CASES.len(), {
        failures.join("\n")
    });
}

#[test]
fn blocked_lists_what_blocks_each_issue() {
    let ws = Workspace::new();
    assert_eq!(ws.run(&["blocked"]).ok().stdout, "✨ No blocked issues\n");
    let b1 = ws.create("Blocker one", &[]);
    let b2 = ws.create("Blocker two", &[]);
    let x = ws.create("Needs both", &["-p", "1", "--deps", &format!("{b1},{b2}")]);
    let parent = ws.create("Parent", &["-p", "3", "--deps", &b1]);
    let child = ws.create("Child", &["--parent", &parent]);
    let run = ws.run(&["blocked"]).ok();
    let mut pair = [b1.clone(), b2.clone()];
    pair.sort();
    assert_eq!(
        lines(&run.stdout),
        [
            "🚫 Blocked issues (3):",
            "",
            &format!("[● P1] {x}: Needs both"),
            &format!("  Blocked by 2 open dependencies: [{}]", pair.join(", ")),
            &format!("[● P2] {child}: Child"),
            &format!("  Blocked by 1 open dependencies: [{parent}]"),
            &format!("[● P3] {parent}: Parent"),
            &format!("  Blocked by 1 open dependencies: [{b1}]"),
        ]
    );
    let blocked = ws.json(&["blocked"]);
    assert_eq!(ids_of(&blocked), [x.clone(), child.clone(), parent.clone()]);
    assert_eq!(blocked[0]["blocked_by_count"], 2);
    assert_eq!(strings(&blocked[1]["blocked_by"]), [parent.as_str()], "inherited: the parent");

    // Closing one blocker leaves the other named.
    ws.run(&["close", &b1]).ok();
    let blocked = ws.json(&["blocked"]);
    assert_eq!(ids_of(&blocked), [x]);
    assert_eq!(strings(&blocked[0]["blocked_by"]), [b2]);

    // --parent keeps the descendants of an issue.
    ws.run(&["dep", "add", &parent, &ws.create("Another", &[])]).ok();
    assert_eq!(ids_of(&ws.json(&["blocked", "--parent", &parent])), [child]);
}

#[test]
fn deferral_hides_issues_until_their_time() {
    let ws = Workspace::new();
    let later = ws.create_at(NOW, "Later", &["--defer", "+1d"]);
    let past = ws.create_at(NOW, "Past", &["--defer", "2026-01-01T00:00:00Z"]);
    let now = ws.create_at(NOW, "Now", &[]);
    let parent = ws.create_at(NOW, "Deferred parent", &["--defer", "2026-03-10T00:00:00Z"]);
    let child = ws.create_at(NOW, "Child of deferred", &["--parent", &parent]);
    let ready = |at: &str, extra: &[&str]| {
        let mut args = vec!["ready", "--json", "--sort", "oldest"];
        args.extend_from_slice(extra);
        let mut ids = ids_of(&ws.run_at(at, &args).ok().json());
        ids.sort();
        ids
    };
    let sorted = |mut v: Vec<&String>| {
        v.sort();
        v.into_iter().cloned().collect::<Vec<_>>()
    };

    assert_eq!(ready(NOW, &[]), sorted(vec![&past, &now]), "future deferral hides");
    assert_eq!(
        ready(NOW, &["--include-deferred"]),
        sorted(vec![&later, &past, &now, &parent, &child]),
        "--include-deferred shows everything"
    );
    assert!(ws.blocked_ids().is_empty(), "deferred is not blocked");
    // A day later the first deferral has passed; the parent's (and so its child's) has not.
    assert_eq!(ready("2026-03-03T12:00:00Z", &[]), sorted(vec![&later, &past, &now]));
    assert_eq!(
        ready("2026-03-10T00:00:00Z", &[]),
        sorted(vec![&later, &past, &now, &parent, &child]),
        "a deferral ends at its instant"
    );
    // Clearing the parent's deferral shows the child at once.
    ws.run_at(NOW, &["update", &parent, "--defer", ""]).ok();
    assert_eq!(ready(NOW, &[]), sorted(vec![&past, &now, &parent, &child]));
    // Deferring a parent later hides a child created before.
    ws.run_at(NOW, &["update", &parent, "--defer", "+2d"]).ok();
    assert_eq!(ready(NOW, &[]), sorted(vec![&past, &now]));
}

#[test]
fn clearing_a_deferral_reopens_a_deferred_issue() {
    let ws = Workspace::new();
    let id = ws.create_at(NOW, "Parked", &[]);
    ws.run_at(NOW, &["update", &id, "--status", "deferred", "--defer", "+1w"]).ok();
    let ready = ws.run_at(NOW, &["ready", "--json", "--include-deferred"]).ok().json();
    assert_eq!(ready.as_array().map(Vec::len), Some(0), "status deferred is never ready");
    ws.run_at(NOW, &["update", &id, "--defer", ""]).ok();
    let issue = ws.show(&id);
    assert_eq!(issue["status"], "open");
    assert!(issue.get("defer_until").is_none(), "{issue}");
    assert_eq!(ids_of(&ws.run_at(NOW, &["ready", "--json"]).ok().json()), [id]);
}

#[test]
fn infrastructure_types_are_ready_only_when_asked_for() {
    let ws = Workspace::new();
    let task = ws.create("Task", &[]);
    for kind in ["gate", "molecule", "message", "merge-request"] {
        let id = ws.create(kind, &["-t", kind]);
        assert_eq!(ws.ready_ids(), [task.as_str()], "{kind} is left out by default");
        assert_eq!(ids_of(&ws.json(&["ready", "-t", kind])), [id.as_str()], "--type {kind}");
    }
    // Aliases work for --type too, and --type narrows to that type.
    assert_eq!(ids_of(&ws.json(&["ready", "-t", "mol"])).len(), 1);
    assert_eq!(ids_of(&ws.json(&["ready", "-t", "task"])), [task.as_str()]);
    assert_eq!(ids_of(&ws.json(&["ready", "-t", "task,gate"])).len(), 2);
    // Other types are ready by default.
    let bug = ws.create("Bug", &["-t", "bug"]);
    let epic = ws.create("Epic", &["-t", "epic"]);
    let mut expected = vec![task, bug, epic];
    expected.sort();
    let mut ready = ws.ready_ids();
    ready.sort();
    assert_eq!(ready, expected);
}

/// Five issues created at pinned instants, against a clock of 2026-03-10T12:00:00Z.
fn sort_fixture() -> (Workspace, BTreeMap<String, &'static str>) {
    let ws = Workspace::new();
    let mut names = BTreeMap::new();
    for (name, at, priority) in [
        ("old1", "2026-03-08T11:00:00Z", "1"), // 49 hours before the clock
        ("old2", "2026-03-02T00:00:00Z", "0"),
        ("new1", "2026-03-08T13:00:00Z", "2"), // 47 hours before
        ("new2", "2026-03-10T00:00:00Z", "1"),
        ("new3", "2026-03-10T06:00:00Z", "1"),
    ] {
        names.insert(ws.create_at(at, name, &["-p", priority]), name);
    }
    (ws, names)
}

#[test]
fn ready_sort_orders() {
    let (ws, names) = sort_fixture();
    let order = |args: &[&str]| -> Vec<&str> {
        let mut all = vec!["ready", "--json"];
        all.extend_from_slice(args);
        ids_of(&ws.run_at("2026-03-10T12:00:00Z", &all).ok().json())
            .iter()
            .map(|id| names[id])
            .collect()
    };
    // priority: priority, then newest first.
    assert_eq!(order(&[]), ["old2", "new3", "new2", "old1", "new1"]);
    assert_eq!(order(&["--sort", "priority"]), ["old2", "new3", "new2", "old1", "new1"]);
    // oldest: creation time only.
    assert_eq!(order(&["--sort", "oldest"]), ["old2", "old1", "new1", "new2", "new3"]);
    // hybrid: the last 48 hours by priority then age, then older issues by age.
    assert_eq!(order(&["-s", "hybrid"]), ["new2", "new3", "new1", "old2", "old1"]);
    let run = ws.run(&["ready", "--sort", "newest"]).fails(2);
    assert!(run.stderr.contains("unknown sort order"), "{}", run.stderr);
}

#[test]
fn ready_ties_break_by_id() {
    let ws = Workspace::new();
    let mut ids: Vec<String> =
        ["a", "b", "c", "d"].iter().map(|t| ws.create_at(NOW, t, &[])).collect();
    ids.sort();
    assert_eq!(ids_of(&ws.run_at(NOW, &["ready", "--json"]).ok().json()), ids);
    assert_eq!(ids_of(&ws.run_at(NOW, &["ready", "--json", "-s", "oldest"]).ok().json()), ids);
}

#[test]
fn ready_text_lists_numbered_issues_with_estimates_and_assignees() {
    let ws = Workspace::new();
    assert_eq!(ws.run(&["ready"]).ok().stdout, "✨ No open issues\n");
    let a = ws.create_at(NOW, "Urgent bug", &["-p", "0", "-t", "bug", "-e", "90"]);
    let b = ws.create_at(NOW, "Someone's task", &["-a", "alice"]);
    let run = ws.run_at(NOW, &["ready"]).ok();
    assert_eq!(
        lines(&run.stdout),
        [
            "📋 Ready work (2 issues with no active blockers):",
            "",
            &format!("1. [● P0] [bug] {a}: Urgent bug"),
            "   Estimate: 90 min",
            &format!("2. [● P2] [task] {b}: Someone's task"),
            "   Assignee: alice",
        ]
    );
    assert_eq!(run.stderr, "");
    ws.run(&["dep", "add", &a, &b]).ok();
    ws.run(&["dep", "add", &b, &ws.create("Gate", &["-t", "gate"])]).ok();
    assert_eq!(
        ws.run(&["ready"]).ok().stdout,
        "✨ No ready work found (all issues have blocking dependencies)\n"
    );
}

#[test]
fn ready_limit_truncates_with_a_note() {
    let ws = Workspace::new();
    for title in ["one", "two", "three"] {
        ws.create(title, &[]);
    }
    let run = ws.run(&["ready", "-n", "2"]).ok();
    assert_eq!(lines(&run.stdout)[0], "📋 Ready work (2 issues with no active blockers):");
    assert_eq!(lines(&run.stdout).len(), 4);
    assert_eq!(
        run.stderr,
        "Showing the first 2 ready issues; more are ready (use --limit 0 for all)\n"
    );
    let run = ws.run(&["ready", "--limit", "3"]).ok();
    assert_eq!(run.stderr, "", "no note when everything fits");
    let run = ws.run(&["ready", "--limit", "2", "--json"]).ok();
    assert_eq!(run.json().as_array().unwrap().len(), 2);
    assert_eq!(run.stderr, "", "--json keeps stderr quiet");
    assert_eq!(ws.json(&["ready", "--limit", "0"]).as_array().unwrap().len(), 3);
}

#[test]
fn ready_shows_at_most_100_by_default() {
    let ws = Workspace::new();
    let now: jiff::Timestamp = NOW.parse().unwrap();
    let creates = (0..101)
        .map(|n| OpKind::Create {
            issue: Box::new(fleet::model::Issue::new(
                format!("t-n{n:03}"),
                format!("Issue {n}"),
                now,
            )),
            deps: Vec::new(),
        })
        .collect();
    ws.store().apply("tester", Clock::Fixed(now), creates).unwrap();
    let run = ws.run(&["ready"]).ok();
    assert_eq!(lines(&run.stdout)[0], "📋 Ready work (100 issues with no active blockers):");
    assert!(run.stderr.contains("Showing the first 100 ready issues"), "{}", run.stderr);
    assert_eq!(ws.ready_ids().len(), 101);
}

#[test]
fn ready_filters() {
    let ws = Workspace::new();
    let mut ids = BTreeMap::new();
    let epic = ws.create("e", &["-t", "epic", "-l", "fe"]);
    let e1 =
        ws.create("e1", &["--parent", &epic, "-l", "be", "-a", "alice", "-p", "1", "-t", "bug"]);
    let e11 = ws.create("e11", &["--parent", &e1, "-p", "3"]);
    let x = ws.create("x", &["-l", "be,ops", "-p", "0", "-t", "feature", "-a", "bob"]);
    let y = ws.create("y", &["-l", "ops", "-t", "chore"]);
    // A dotted id under e that has no parent-child edge still counts as e's descendant.
    let dotted = ws.create("dotted", &["--id", &format!("{epic}.7"), "-p", "4"]);
    for (id, name) in
        [(&epic, "e"), (&e1, "e1"), (&e11, "e11"), (&x, "x"), (&y, "y"), (&dotted, "dotted")]
    {
        ids.insert(id.clone(), name);
    }
    let cases: &[(&[&str], &[&str])] = &[
        (&[], &["dotted", "e", "e1", "e11", "x", "y"]),
        (&["-a", "alice"], &["e1"]),
        (&["--assignee", "bob"], &["x"]),
        (&["-u"], &["dotted", "e", "e11", "y"]),
        (&["--unassigned", "-l", "ops"], &["y"]),
        (&["-l", "be"], &["e1", "e11", "x"]),
        (&["-l", "be", "-l", "fe"], &["e1", "e11"]),
        (&["-l", "be,ops"], &["x"]),
        (&["--label-any", "be,ops"], &["e1", "e11", "x", "y"]),
        (&["--label-any", "fe", "--label-any", "ops"], &["e", "e1", "e11", "x", "y"]),
        (&["-l", "nothing"], &[]),
        (&["-p", "1"], &["e1"]),
        (&["--priority", "P0"], &["x"]),
        (&["--parent", &epic], &["dotted", "e1", "e11"]),
        (&["--parent", &e1], &["e11"]),
        (&["-t", "bug"], &["e1"]),
        (&["--exclude-type", "epic,bug"], &["dotted", "e11", "x", "y"]),
        (&["-t", "chore", "-l", "ops"], &["y"]),
    ];
    let mut failures = Vec::new();
    for (args, expected) in cases {
        let mut all = vec!["ready", "--json"];
        all.extend_from_slice(args);
        let mut got: Vec<&str> = ids_of(&ws.run(&all).ok().json()).iter().map(|i| ids[i]).collect();
        got.sort();
        if got != *expected {
            failures.push(format!("ready {args:?}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Inherited labels: e11 carries e's and e1's labels.
    assert_eq!(strings(&ws.show(&e11)["labels"]), ["be", "fe"]);
}

#[test]
fn blocked_pages_like_list_but_bd_blocked_prints_every_one() {
    let ws = Workspace::new();
    let now: jiff::Timestamp = NOW.parse().unwrap();
    let mut ops = vec![OpKind::Create {
        issue: Box::new(fleet::model::Issue::new("t-gate".into(), "Gate".into(), now)),
        deps: Vec::new(),
    }];
    ops.extend((0..52).map(|n| {
        let mut issue = fleet::model::Issue::new(format!("t-b{n:02}"), format!("Held {n}"), now);
        issue.priority = u8::try_from(n % 5).unwrap();
        OpKind::Create {
            issue: Box::new(issue),
            deps: vec![Dependency {
                issue_id: String::new(),
                depends_on_id: "t-gate".into(),
                kind: "blocks".into(),
                created_at: now,
                created_by: String::new(),
                metadata: String::new(),
                thread_id: String::new(),
            }],
        }
    }));
    ws.store().apply("tester", Clock::Fixed(now), ops).unwrap();
    let every = ids_of(&ws.json(&["blocked", "--limit", "0"]));
    assert_eq!(every.len(), 52);
    let mut sorted = every.clone();
    sorted.sort_by_key(|id| (id.trim_start_matches("t-b").parse::<u8>().unwrap() % 5, id.clone()));
    assert_eq!(every, sorted, "priority first, then id (same creation time)");

    let run = ws.run(&["blocked"]).ok();
    assert_eq!(lines(&run.stdout)[0], "🚫 Blocked issues (50):");
    assert_eq!(run.stderr, "Showing 50 of 52 blocked issues (use --limit 0 for all)\n");
    assert_eq!(ids_of(&ws.json(&["blocked"])), every[..50]);
    assert_eq!(ids_of(&ws.json(&["blocked", "-n", "3"])), every[..3]);
    let bd = ws.run(&["bd", "blocked", "--json"]).ok();
    assert_eq!(ids_of(&bd.json()), every, "bd blocked has no limit");

    // Closing the gate unblocks every one; reopening blocks them again, in the same order.
    ws.run(&["close", "t-gate"]).ok();
    assert_eq!(ws.run(&["blocked"]).ok().stdout, "✨ No blocked issues\n");
    ws.run(&["reopen", "t-gate"]).ok();
    assert_eq!(ids_of(&ws.json(&["blocked", "--limit", "0"])), every);
}

#[test]
fn list_pages_count_and_stale_agree_after_claims_and_closes() {
    let ws = Workspace::new();
    let ids: Vec<String> =
        (0..6).map(|n| ws.create(&format!("Item {n}"), &["-p", &(n % 3).to_string()])).collect();
    ws.run(&["close", &ids[0]]).ok();
    ws.run(&["update", &ids[1], "--claim"]).ok();
    let all = ids_of(&ws.json(&["list", "--limit", "0"]));
    assert_eq!(all.len(), 5, "closed issues are left out");
    let run = ws.run(&["list", "-n", "2"]).ok();
    assert_eq!(run.stderr, "Showing 2 of 5 issues (use --limit 0 for all)\n");
    assert_eq!(ids_of(&ws.json(&["list", "-n", "2"])), all[..2]);
    assert_eq!(ids_of(&ws.json(&["list", "--status", "in_progress"])), [ids[1].clone()]);
    assert_eq!(ws.run(&["bd", "count"]).ok().stdout, "6\n");
    let by_status = ws.run(&["bd", "count", "--by-status"]).ok().stdout;
    assert_eq!(by_status, "Total: 6\n\nclosed: 1\nin_progress: 1\nopen: 4\n");
    // From the kept status counts, and by walking the index for anything more than a status.
    assert_eq!(ws.run(&["bd", "count", "--status", "open"]).ok().stdout, "4\n");
    let some = ws.json(&["bd", "count", "--by-status", "--status", "closed,in_progress"]);
    let groups =
        serde_json::json!([{"group": "closed", "count": 1}, {"group": "in_progress", "count": 1}]);
    assert_eq!((&some["total"], &some["groups"]), (&serde_json::json!(2), &groups));
    assert_eq!(ws.run(&["bd", "count", "-p", "0"]).ok().stdout, "2\n");
    assert_eq!(ws.run(&["bd", "count", "--by-type"]).ok().stdout, "Total: 6\n\ntask: 6\n");
    let stale = ws.json(&["bd", "stale", "--days", "0", "-n", "2"]);
    assert_eq!(stale.as_array().unwrap().len(), 2);
}

/// `ready --json` prints each issue as `show --json` does — its fields, its counts and its
/// parent — after the edges, comments, labels and edits that change them, made on the issue
/// itself or on the issues at the other end of its edges; and `bd ready --json` the same.
#[test]
fn ready_json_prints_each_issue_as_show_does() {
    let ws = Workspace::new();
    let parent = ws.create("Parent", &[]);
    let child = ws.create("Child", &["--parent", &parent]);
    let other = ws.create("Other", &[]);
    let gone = ws.create("Gone", &[]);
    ws.run(&["dep", "add", &other, &child, "--type", "related"]).ok();
    ws.run(&["dep", "add", &gone, &child, "--type", "related"]).ok();
    ws.run(&["dep", "add", &child, &other, "--type", "tracks"]).ok();
    ws.run(&["comment", &child, "first"]).ok();
    ws.run(&["comment", &parent, "on the parent"]).ok();
    ws.run(&["label", "add", &child, "ui"]).ok();
    ws.run(&["update", &child, "--title", "Child renamed"]).ok();
    ws.run(&["dep", "remove", &child, &other]).ok();
    ws.run(&["delete", &gone, "--force"]).ok();

    let ready = ws.json(&["ready"]);
    assert_eq!(ids_of(&ready).len(), 3, "{ready}");
    for printed in ready.as_array().unwrap() {
        let shown = ws.show(printed["id"].as_str().unwrap());
        for (key, value) in printed.as_object().unwrap() {
            assert_eq!(&shown[key], value, "{key} of {}", printed["id"]);
        }
    }
    let child_printed = ready.as_array().unwrap().iter().find(|i| i["id"] == child).unwrap();
    assert_eq!(child_printed["title"], "Child renamed");
    assert_eq!(child_printed["labels"], serde_json::json!(["ui"]));
    let counts = ["dependency_count", "dependent_count", "comment_count", "parent"]
        .map(|key| child_printed[key].clone());
    let one = serde_json::Value::from(1);
    assert_eq!(counts, [one.clone(), one.clone(), one, serde_json::Value::from(parent)]);
    // As bd, the same issues in bd's shape: without fleet's own task fields.
    let bd = ws.run(&["bd", "ready", "--json"]).ok().json();
    let mut without_fleet = ready.clone();
    for issue in without_fleet.as_array_mut().unwrap() {
        issue.as_object_mut().unwrap().shift_remove("fleet");
    }
    assert_eq!(bd, without_fleet);
}
