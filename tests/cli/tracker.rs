//! One tracker layer under every front end: a rule of a request holds whichever way the
//! request arrives — `fleet` or `bd`, `close` or `update --status closed`, `dep add` or
//! `--deps`.

use crate::{Workspace, WorkspaceExt};

/// The two personalities, as a user types them.
const FRONT_ENDS: [&[&str]; 2] = [&[], &["bd"]];

fn with(front: &[&str], args: &[&str]) -> Vec<String> {
    front.iter().chain(args).map(|s| (*s).to_string()).collect()
}

fn run(ws: &Workspace, front: &[&str], args: &[&str]) -> crate::common::Run {
    let all = with(front, args);
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    ws.run(&refs)
}

#[test]
fn setting_the_status_to_closed_is_a_close_with_its_guards_on_every_path() {
    for front in FRONT_ENDS {
        let ws = Workspace::new();
        let blocker = ws.create("Blocker", &[]);
        let blocked = ws.create("Blocked", &["--deps", &blocker]);
        let pinned = ws.create("Pinned", &[]);
        ws.run(&["update", &pinned, "--status", "pinned"]).ok();

        for id in [&blocked, &pinned] {
            let refused = run(&ws, front, &["update", id, "--status", "closed"]);
            assert_eq!(
                refused.code, 1,
                "{front:?} update {id}: {}{}",
                refused.stdout, refused.stderr
            );
            assert!(
                refused.stderr.contains(&format!("cannot close {id}")),
                "{front:?}: {}",
                refused.stderr
            );
            assert_ne!(ws.show(id)["status"], "closed", "{front:?}: the guard held");
        }

        let plain = ws.create("Plain", &[]);
        run(&ws, front, &["update", &plain, "--status", "closed"]).ok();
        let closed = ws.show(&plain);
        assert_eq!(closed["status"], "closed", "{front:?}");
        assert_eq!(closed["close_reason"], "Closed", "{front:?}: closed as a close is");
        assert!(closed["closed_at"].is_string(), "{front:?}");
    }
}

#[test]
fn update_force_closes_past_the_guards() {
    let ws = Workspace::new();
    let blocker = ws.create("Blocker", &[]);
    let blocked = ws.create("Blocked", &["--deps", &blocker]);
    ws.run(&["update", &blocked, "--status", "closed", "--force"]).ok();
    assert_eq!(ws.show(&blocked)["status"], "closed");
}

#[test]
fn the_epic_rule_holds_for_dep_add_and_for_deps_in_both_personalities() {
    for front in FRONT_ENDS {
        let ws = Workspace::new();
        let epic = ws.create("Epic", &["-t", "epic"]);
        let task = ws.create("Task", &[]);
        let added = run(&ws, front, &["dep", "add", &task, &epic]);
        assert_eq!(added.code, 1, "{front:?}: {}{}", added.stdout, added.stderr);
        assert!(
            added.stderr.contains("tasks can only block other tasks, not epics"),
            "{}",
            added.stderr
        );
        let created = run(&ws, front, &["create", "Another task", "--deps", &epic]);
        assert_eq!(created.code, 1, "{front:?}: {}{}", created.stdout, created.stderr);
        assert!(
            created.stderr.contains("tasks can only block other tasks, not epics"),
            "{}",
            created.stderr
        );
        assert_eq!(ws.json(&["list", "--all"]).as_array().unwrap().len(), 2, "nothing was created");
    }
}

#[test]
fn one_answer_to_is_this_id_foreign() {
    let ws = Workspace::new();
    let task = ws.create("Task", &[]);
    // Another project's id and an external capability are kept as typed…
    ws.run(&["dep", "add", &task, "other-3kf"]).ok();
    ws.run(&["dep", "add", &task, "external:auth:login"]).ok();
    let also = ws.create("Also", &["--deps", "other-9zz"]);
    // …a bare word is a mistyped id of ours, whichever command it is typed in.
    let typo = ws.run(&["dep", "add", &task, "nosuch"]);
    assert_eq!(typo.code, 1);
    assert!(typo.stderr.contains("no issue found matching \"nosuch\""), "{}", typo.stderr);
    let created = ws.run(&["create", "Typo", "--deps", "nosuch"]);
    assert_eq!(created.code, 1);
    assert!(created.stderr.contains("no issue found matching \"nosuch\""), "{}", created.stderr);
    let shown = ws.show(&also);
    assert_eq!(shown["dependencies"][0]["id"], "other-9zz");
    assert_eq!(shown["dependencies"][0]["missing"], true);
}
