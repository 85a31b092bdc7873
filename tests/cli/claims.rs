//! Claiming (spec §4): `claim ID`, `claim` (the next ready issue), `update --claim`,
//! `release`, and who the actor is.

use crate::{NOW, Workspace, WorkspaceExt, ids_of};

#[test]
fn claim_by_id_takes_the_issue() {
    let ws = Workspace::new();
    let id = ws.create("Take me", &[]);
    let run = ws.run_at(NOW, &["claim", &id]).ok();
    assert_eq!(run.stdout, format!("✓ Claimed issue: {id} — Take me\n"));
    assert_eq!(run.stderr, "");
    let issue = ws.show(&id);
    assert_eq!(issue["status"], "in_progress");
    assert_eq!(issue["assignee"], "tester");
    assert_eq!(issue["started_at"], NOW);
    assert!(ws.ready_ids().is_empty(), "a claimed issue is no longer ready");
    // --json gives the claimed issue.
    let other = ws.create("Other", &[]);
    let claimed = ws.json(&["claim", &other, "--actor", "agent-2"]);
    assert_eq!(claimed["id"], other);
    assert_eq!(claimed["assignee"], "agent-2");
    assert_eq!(claimed["status"], "in_progress");
}

#[test]
fn claim_without_an_id_takes_ready_work_in_order() {
    let ws = Workspace::new();
    let p2 = ws.create("P2", &["-p", "2"]);
    let p0 = ws.create("P0", &["-p", "0"]);
    let p1 = ws.create("P1", &["-p", "1"]);
    // Never claimable by `claim`: blocked, deferred, an infra type, someone else's.
    let blocker = ws.create("Blocker", &["-p", "3"]);
    ws.create("Blocked", &["-p", "0", "--deps", &blocker]);
    ws.create("Deferred", &["-p", "0", "--defer", "+1w"]);
    ws.create("Gate", &["-p", "0", "-t", "gate"]);
    ws.create("Bob's", &["-p", "0", "-a", "bob"]);

    let claimed: Vec<String> = (0..4)
        .map(|_| {
            let run = ws.run(&["claim"]).ok();
            let line = run.stdout.trim_end().to_string();
            line.strip_prefix("✓ Claimed issue: ")
                .unwrap_or_else(|| panic!("{line}"))
                .split(" — ")
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(claimed, [p0, p1, p2, blocker]);
    assert_eq!(ws.run(&["claim"]).ok().stdout, "○ No ready work to claim\n");
}

#[test]
fn claim_next_takes_work_already_assigned_to_the_actor() {
    let ws = Workspace::new();
    let mine = ws.create("Assigned to bob", &["-p", "1", "-a", "bob"]);
    let free = ws.create("Free", &["-p", "2"]);
    assert_eq!(ws.json(&["claim"])["id"], free, "tester skips bob's issue");
    assert_eq!(ws.json(&["claim", "--actor", "bob"])["id"], mine);
    assert_eq!(ws.show(&mine)["status"], "in_progress");
}

/// `bd ready --claim` takes the first issue `bd ready` with the same filters would list:
/// `--parent` keeps it under the parent, `--unassigned` skips work already the actor's.
#[test]
fn ready_claim_honours_parent_and_unassigned() {
    let ws = Workspace::new();
    let outside = ws.create("Outside, most urgent", &["-p", "0"]);
    let epic = ws.create("Epic", &["-t", "epic", "-p", "4"]);
    let child = ws.create("Child", &["-p", "3", "--parent", &epic]);
    let claimed = ws.json(&["bd", "ready", "--claim", "--parent", &epic, "--actor", "a"]);
    assert_eq!(ids_of(&claimed), [child]);
    assert_eq!(ws.show(&outside)["status"], "open");

    // Created after `outside` at the same priority, so `bd ready` lists it first (newest
    // first): only --unassigned makes the claim pass it over.
    let mine = ws.create("Mine already", &["-p", "0", "-a", "b"]);
    let claimed = ws.json(&["bd", "ready", "--claim", "--unassigned", "--actor", "b"]);
    assert_eq!(ids_of(&claimed), std::slice::from_ref(&outside), "not {mine}, b has it");
    assert_eq!(ws.show(&mine)["status"], "open");
}

#[test]
fn an_issue_claimed_by_someone_else_is_refused() {
    let ws = Workspace::new();
    let id = ws.create("Contested", &[]);
    ws.run(&["claim", &id, "--actor", "agent-1"]).ok();
    for args in [vec!["claim", &id], vec!["update", &id, "--claim"]] {
        let run = ws.run(&args).fails(1);
        assert!(run.stderr.contains("already claimed by agent-1"), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "");
    }
    let issue = ws.show(&id);
    assert_eq!(issue["assignee"], "agent-1");
    assert_eq!(issue["status"], "in_progress");
    // With --json the refusal is a JSON error.
    let run = ws.run(&["claim", &id, "--json"]).fails(1);
    let error: serde_json::Value = serde_json::from_str(&run.stderr).unwrap();
    assert!(error["error"].as_str().unwrap().contains("already claimed by agent-1"), "{error}");
}

#[test]
fn reclaiming_ones_own_issue_is_a_no_op() {
    let ws = Workspace::new();
    let id = ws.create("Mine", &[]);
    ws.run_at("2026-03-02T12:00:00Z", &["claim", &id]).ok();
    let run = ws.run_at("2026-03-02T13:00:00Z", &["claim", &id]).ok();
    assert_eq!(run.stdout, format!("✓ Claimed issue: {id} — Mine\n"));
    ws.run_at("2026-03-02T14:00:00Z", &["update", &id, "--claim"]).ok();
    let issue = ws.show(&id);
    assert_eq!(issue["assignee"], "tester");
    assert_eq!(issue["updated_at"], "2026-03-02T12:00:00Z", "nothing changed the second time");
    assert_eq!(issue["started_at"], "2026-03-02T12:00:00Z");
}

#[test]
fn only_open_issues_can_be_claimed() {
    let ws = Workspace::new();
    let closed = ws.create("Closed", &[]);
    ws.run(&["close", &closed]).ok();
    let run = ws.run(&["claim", &closed]).fails(1);
    assert!(run.stderr.contains("issue not claimable: status closed"), "{}", run.stderr);
    let deferred = ws.create("Deferred", &[]);
    ws.run(&["update", &deferred, "-s", "deferred"]).ok();
    let run = ws.run(&["claim", &deferred]).fails(1);
    assert!(run.stderr.contains("issue not claimable: status deferred"), "{}", run.stderr);
    let run = ws.run(&["claim", "nope"]).fails(1);
    assert!(run.stderr.contains("no issue found matching \"nope\""), "{}", run.stderr);
}

#[test]
fn release_puts_the_issue_back() {
    let ws = Workspace::new();
    let id = ws.create("Round trip", &[]);
    ws.run(&["claim", &id]).ok();
    let run = ws.run(&["release", &id]).ok();
    assert_eq!(run.stdout, format!("✓ Released {id} — Round trip\n"));
    let issue = ws.show(&id);
    assert_eq!(issue["status"], "open");
    assert!(issue.get("assignee").is_none(), "{issue}");
    assert_eq!(ws.ready_ids(), [id.as_str()]);
    // Someone else may take it now.
    ws.run(&["claim", &id, "--actor", "agent-2"]).ok();
    assert_eq!(ws.show(&id)["assignee"], "agent-2");
    // Only open or in_progress issues can be released.
    ws.run(&["close", &id, "--actor", "agent-2"]).ok();
    let run = ws.run(&["release", &id]).fails(1);
    assert!(
        run.stderr.contains(&format!(
            "issue {id} is closed; only open or in_progress issues can be released"
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn update_claim_claims_and_applies_other_fields() {
    let ws = Workspace::new();
    let id = ws.create("Claim and edit", &[]);
    let run = ws.run(&["update", &id, "--claim", "-p", "0"]).ok();
    assert_eq!(run.stdout, format!("✓ Updated issue: {id} — Claim and edit\n"));
    let issue = ws.show(&id);
    assert_eq!(issue["status"], "in_progress");
    assert_eq!(issue["assignee"], "tester");
    assert_eq!(issue["priority"], 0);
}

#[test]
fn a_refused_claim_in_a_batch_changes_nothing() {
    let ws = Workspace::new();
    let free = ws.create("Free", &[]);
    let taken = ws.create("Taken", &[]);
    ws.run(&["claim", &taken, "--actor", "agent-1"]).ok();
    ws.run(&["update", &free, &taken, "--claim"]).fails(1);
    let issue = ws.show(&free);
    assert_eq!(issue["status"], "open", "the first claim was rolled back");
    assert!(issue.get("assignee").is_none(), "{issue}");
}

#[test]
fn the_actor_comes_from_the_flag_then_the_environment() {
    let ws = Workspace::new();
    let ids: Vec<String> = (0..4).map(|n| ws.create(&format!("Issue {n}"), &[])).collect();
    let claim_as = |id: &str, env: &[(&str, &str)], flag: Option<&str>| {
        let mut args = vec!["claim", id];
        if let Some(actor) = flag {
            args.extend(["--actor", actor]);
        }
        let mut cmd = ws.command(&args);
        cmd.env_remove("FLEET_ACTOR");
        for (key, value) in env {
            cmd.env(key, value);
        }
        let output = cmd.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        ws.show(id)["assignee"].as_str().unwrap().to_string()
    };
    assert_eq!(claim_as(&ids[0], &[("FLEET_ACTOR", "fleet-env")], Some("flag")), "flag");
    assert_eq!(claim_as(&ids[1], &[("FLEET_ACTOR", "fleet-env"), ("BEADS_ACTOR", "b")], None), {
        "fleet-env"
    });
    assert_eq!(
        claim_as(&ids[2], &[("BEADS_ACTOR", "beads-env"), ("USER", "u")], None),
        "beads-env"
    );
    assert_eq!(claim_as(&ids[3], &[("USER", "unix-user")], None), "unix-user");
    // The creator is recorded the same way.
    assert_eq!(ws.show(&ids[0])["created_by"], "tester");
    assert_eq!(ids_of(&ws.json(&["list", "-a", "flag"])), [ids[0].clone()]);
}
