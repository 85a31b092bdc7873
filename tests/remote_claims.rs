//! Claims confirmed on a git remote (`claim_mode = remote`), run as users run them: two
//! workspaces (two `FLEET_HOME`s, so two stores and two replicas) sharing the same issues and
//! one bare remote made with the `git` program, claiming with the real binary.
//!
//! Covers: a race of several claiming processes per workspace, after which every issue is
//! claimed exactly once across both machines (checked in `refs/fleet/claims` with `git` and in
//! each store); three machines racing through a `git daemon` and then syncing, after which every
//! acknowledged claim is still held everywhere; a release that never ends a claim its author
//! had not seen (local mode); a claim refused because the other machine holds the issue
//! (nothing claimed, the holder named), and the issue claimable there after a release; an unreachable remote
//! (the claim fails naming the remote, nothing stays claimed); and local mode, which never
//! touches the remote.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Workspace, git};
use serde_json::Value;

const ISSUES: usize = 100;
/// Concurrent claiming processes per workspace.
const CLAIMERS: usize = 3;

/// A bare repository to serve as the remote.
fn bare_remote(dir: &Path) -> PathBuf {
    let path = dir.join("remote.git");
    git(&["init", "--quiet", "--bare", path.to_str().unwrap()]);
    path
}

/// A JSONL export of `n` open issues `t-r1`…`t-rN`, to import into every workspace.
fn shared_issues(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("issues.jsonl");
    let lines: Vec<String> = (1..=n)
        .map(|i| {
            serde_json::json!({
                "id": format!("t-r{i}"),
                "title": format!("task {i}"),
                "status": "open",
                "priority": 2,
                "issue_type": "task",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            })
            .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// A workspace with `issues` imported, `remote` added to its journal repository as `origin`,
/// and `claim_mode` set to `mode` (none: left at its default).
fn workspace(issues: &Path, remote: &Path, mode: Option<&str>) -> Workspace {
    workspace_at(issues, remote.to_str().unwrap(), mode)
}

/// [`workspace`] with the remote at `url`.
fn workspace_at(issues: &Path, url: &str, mode: Option<&str>) -> Workspace {
    let ws = Workspace::new();
    ws.run(&["import", issues.to_str().unwrap()]).ok();
    ws.run(&["journal", "commit"]).ok();
    ws.run(&["remote", "add", "origin", url]).ok();
    if let Some(mode) = mode {
        ws.run(&["bd", "config", "set", "claim_mode", mode]).ok();
    }
    ws
}

/// `refs/fleet/claims` on the remote: issue id → the holder's JSON.
fn remote_claims(remote: &Path) -> BTreeMap<String, Value> {
    let git_dir = remote.to_str().unwrap();
    let names = git(&["--git-dir", git_dir, "ls-tree", "-r", "--name-only", "refs/fleet/claims"]);
    names
        .lines()
        .filter(|path| *path != "clock")
        .map(|path| {
            let id = path.strip_prefix("claims/").expect("a claims/<id> path").to_string();
            let blob = git(&["--git-dir", git_dir, "show", &format!("refs/fleet/claims:{path}")]);
            (id, serde_json::from_str(&blob).expect("a holder as JSON"))
        })
        .collect()
}

/// Whether the remote has a claims ref at all.
fn has_claims_ref(remote: &Path) -> bool {
    !git(&["--git-dir", remote.to_str().unwrap(), "for-each-ref", "refs/fleet/claims"]).is_empty()
}

/// The ids of the workspace's issues with `status`.
fn ids_with_status(ws: &Workspace, status: &str) -> BTreeSet<String> {
    let listed = ws.json(&["list", "--status", status, "--limit", "0"]);
    common::ids_of(&listed).into_iter().collect()
}

fn show(ws: &Workspace, id: &str) -> Value {
    ws.json(&["show", id])[0].clone()
}

/// Claims with `fleet claim --json` until there is no ready work; returns the ids claimed and
/// the errors met on the way.
fn claim_until_empty(ws_home: PathBuf) -> (Vec<String>, Vec<String>) {
    claim_until_empty_as(ws_home, "tester")
}

/// [`claim_until_empty`] as `actor`.
fn claim_until_empty_as(ws_home: PathBuf, actor: &str) -> (Vec<String>, Vec<String>) {
    let mut claimed = Vec::new();
    let mut errors = Vec::new();
    loop {
        let output = Command::new(common::fleet_bin())
            .env_clear()
            .env("FLEET_HOME", &ws_home)
            .env("FLEET_ACTOR", actor)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .args(["claim", "--json"])
            .output()
            .expect("run fleet claim");
        if !output.status.success() {
            errors.push(String::from_utf8_lossy(&output.stderr).into_owned());
            assert!(errors.len() < 20, "too many failed claims: {errors:#?}");
            continue;
        }
        let value: Value = serde_json::from_slice(&output.stdout).expect("claim --json");
        match value["id"].as_str() {
            Some(id) => claimed.push(id.to_string()),
            None => return (claimed, errors),
        }
    }
}

#[test]
fn racing_machines_claim_every_issue_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let remote = bare_remote(dir.path());
    let issues = shared_issues(dir.path(), ISSUES);
    let machines =
        [workspace(&issues, &remote, Some("remote")), workspace(&issues, &remote, Some("remote"))];

    let claimers: Vec<_> = machines
        .iter()
        .enumerate()
        .flat_map(|(m, ws)| {
            (0..CLAIMERS).map(move |_| {
                let home = ws.home().to_path_buf();
                std::thread::spawn(move || (m, claim_until_empty(home)))
            })
        })
        .collect();
    let mut by_machine: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for claimer in claimers {
        let (m, (claimed, errors)) = claimer.join().unwrap();
        assert!(errors.is_empty(), "claims failed: {errors:#?}");
        by_machine[m].extend(claimed);
    }

    // Exactly once across both machines.
    let all: Vec<&String> = by_machine.iter().flatten().collect();
    let distinct: BTreeSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), ISSUES, "claims made: {}", all.len());
    assert_eq!(distinct.len(), ISSUES, "an issue was claimed twice");
    assert!(by_machine.iter().all(|ids| !ids.is_empty()), "both machines won some claims");

    // The remote's claims ref names the machine that claimed each issue.
    let claims = remote_claims(&remote);
    assert_eq!(claims.len(), ISSUES);
    for (m, ids) in by_machine.iter().enumerate() {
        let replicas: BTreeSet<&str> =
            ids.iter().map(|id| claims[id]["replica"].as_str().unwrap()).collect();
        assert_eq!(replicas.len(), 1, "machine {m}'s claims name one replica: {replicas:?}");
        assert!(ids.iter().all(|id| claims[id]["actor"] == "tester"));
    }
    let replica = |m: usize| claims[&by_machine[m][0]]["replica"].clone();
    assert_ne!(replica(0), replica(1));

    // Each store holds exactly its own claims; the rest is open there.
    for (m, ws) in machines.iter().enumerate() {
        let mine: BTreeSet<String> = by_machine[m].iter().cloned().collect();
        assert_eq!(ids_with_status(ws, "in_progress"), mine, "machine {m}'s in-progress issues");
        assert_eq!(ids_with_status(ws, "open").len(), ISSUES - mine.len());
    }
}

/// Three machines, eight claiming processes each, race for the same issues through a git
/// daemon (a network transport), then sync with each other in turn. Every claim a command
/// acknowledged is still held afterwards, in every store, by the actor that made it, and the
/// claims ref names its machine: no merge turns a confirmed claim back into open.
#[test]
fn confirmed_claims_stay_held_through_every_sync() {
    const MACHINES: usize = 3;
    const EACH: usize = 8;
    const ISSUES: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let daemon = common::remote::GitDaemon::start(dir.path());
    bare_remote(dir.path());
    let issues = shared_issues(dir.path(), ISSUES);
    let url = daemon.url("remote.git");
    let machines: Vec<Workspace> =
        (0..MACHINES).map(|_| workspace_at(&issues, &url, Some("remote"))).collect();
    for ws in &machines {
        ws.run(&["sync"]).ok();
    }
    let claimers: Vec<_> = machines
        .iter()
        .enumerate()
        .flat_map(|(m, ws)| {
            (0..EACH).map(move |_| {
                let home = ws.home().to_path_buf();
                std::thread::spawn(move || (m, claim_until_empty_as(home, &format!("m{m}"))))
            })
        })
        .collect();
    let mut acknowledged: BTreeMap<String, usize> = BTreeMap::new();
    for claimer in claimers {
        let (m, (claimed, errors)) = claimer.join().unwrap();
        assert!(errors.is_empty(), "claims failed: {errors:#?}");
        for id in claimed {
            assert!(acknowledged.insert(id.clone(), m).is_none(), "{id} claimed twice");
        }
    }
    assert_eq!(acknowledged.len(), ISSUES);
    for m in [0, 1, 2, 0, 1, 2] {
        machines[m].run(&["sync"]).ok();
    }
    let claims = remote_claims(&dir.path().join("remote.git"));
    for (m, ws) in machines.iter().enumerate() {
        let listed = ws.json(&["list", "--all", "--limit", "0"]);
        for issue in listed.as_array().unwrap() {
            let id = issue["id"].as_str().unwrap();
            let by = acknowledged[id];
            assert_eq!(
                (issue["status"].as_str(), issue["assignee"].as_str()),
                (Some("in_progress"), Some(format!("m{by}").as_str())),
                "machine {m}: {id}, acknowledged to m{by}"
            );
            assert_eq!(claims[id]["actor"], format!("m{by}"));
        }
    }
}

/// In local mode, a machine that lost a claim race it has not seen yet releases "its" claim
/// before syncing: the release ends only its own claim, never the earlier one that won.
#[test]
fn a_release_never_ends_a_claim_its_author_had_not_seen() {
    let dir = tempfile::tempdir().unwrap();
    let remote = bare_remote(dir.path());
    let issues = shared_issues(dir.path(), 2);
    let a = workspace(&issues, &remote, None);
    let b = workspace(&issues, &remote, None);
    a.run(&["sync"]).ok();
    b.run(&["sync"]).ok();
    let claim_as = |ws: &Workspace, actor: &str, args: &[&str]| {
        let mut command = ws.command(args);
        command.env("FLEET_ACTOR", actor);
        assert!(command.status().unwrap().success(), "{actor}: {args:?}");
    };
    claim_as(&a, "alice", &["claim", "t-r1"]);
    claim_as(&b, "bob", &["claim", "t-r1"]);
    claim_as(&b, "bob", &["release", "t-r1"]);
    for ws in [&a, &b, &a, &b] {
        ws.run(&["sync"]).ok();
    }
    for ws in [&a, &b] {
        let issue = show(ws, "t-r1");
        assert_eq!(
            (issue["status"].as_str(), issue["assignee"].as_str()),
            (Some("in_progress"), Some("alice"))
        );
    }
}

#[test]
fn an_issue_held_by_another_machine_is_refused_until_released_there() {
    let dir = tempfile::tempdir().unwrap();
    let remote = bare_remote(dir.path());
    let issues = shared_issues(dir.path(), 3);
    let a = workspace(&issues, &remote, Some("remote"));
    let b = workspace(&issues, &remote, Some("remote"));

    a.run(&["claim", "t-r1"]).ok();
    let refused = b.run(&["claim", "t-r1"]).fails(1);
    assert!(refused.stderr.contains("t-r1 is claimed elsewhere by tester"), "{}", refused.stderr);
    assert!(refused.stderr.contains("on remote origin"), "{}", refused.stderr);
    let issue = show(&b, "t-r1");
    assert_eq!((issue["status"].as_str(), issue["assignee"].as_str()), (Some("open"), None));

    // `update --claim` is refused the same way, and edits nothing.
    let refused = b.run(&["update", "t-r1", "--claim", "--priority", "0"]).fails(1);
    assert!(refused.stderr.contains("claimed elsewhere"), "{}", refused.stderr);
    assert_eq!(show(&b, "t-r1")["priority"], 2);
    // So is bd's claim.
    b.run(&["bd", "update", "t-r1", "--claim"]).fails(1);
    assert_eq!(show(&b, "t-r1")["status"], "open");
    // Claiming several where one is held elsewhere claims none: the free one is put back.
    let refused = b.run(&["update", "t-r2", "t-r1", "--claim"]).fails(1);
    assert!(refused.stderr.contains("could not claim t-r1"), "{}", refused.stderr);
    let free = show(&b, "t-r2");
    assert_eq!((free["status"].as_str(), free["assignee"].as_str()), (Some("open"), None));

    // Claiming the next ready issue skips the one held elsewhere.
    assert_eq!(b.json(&["claim"])["id"], "t-r2");

    // Released on A, the entry leaves the remote and B can claim it.
    a.run(&["release", "t-r1"]).ok();
    assert!(!remote_claims(&remote).contains_key("t-r1"));
    assert_eq!(b.json(&["claim", "t-r1"])["assignee"], "tester");
    assert_eq!(remote_claims(&remote).keys().collect::<Vec<_>>(), ["t-r1", "t-r2"]);
}

#[test]
fn an_unreachable_remote_fails_the_claim_and_leaves_nothing_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-remote.git");
    let issues = shared_issues(dir.path(), 2);
    let ws = workspace(&issues, &missing, Some("remote"));

    for args in [&["claim", "t-r1"][..], &["claim"], &["update", "t-r1", "--claim"]] {
        let failed = ws.run(args).fails(1);
        assert!(failed.stderr.contains("remote origin"), "{args:?}: {}", failed.stderr);
        assert!(failed.stderr.contains(missing.to_str().unwrap()), "{}", failed.stderr);
        assert!(failed.stderr.contains("could not be reached"), "{}", failed.stderr);
    }
    assert_eq!(ids_with_status(&ws, "open").len(), 2, "nothing stays claimed");
    assert!(ids_with_status(&ws, "in_progress").is_empty());
    assert_eq!(show(&ws, "t-r1").get("assignee"), None);
}

#[test]
fn a_workspace_without_a_remote_says_how_to_add_one() {
    let ws = Workspace::new();
    let id = ws.create("alone", &[]);
    ws.run(&["bd", "config", "set", "claim_mode", "remote"]).ok();
    let failed = ws.run(&["claim", &id]).fails(1);
    assert!(failed.stderr.contains("has no git remote"), "{}", failed.stderr);
    assert!(failed.stderr.contains("remote add origin"), "{}", failed.stderr);
    assert_eq!(show(&ws, &id)["status"], "open");
}

#[test]
fn local_mode_claims_without_the_remote() {
    let dir = tempfile::tempdir().unwrap();
    let remote = bare_remote(dir.path());
    let issues = shared_issues(dir.path(), 2);
    let a = workspace(&issues, &remote, None);
    let b = workspace(&issues, &remote, Some("local"));
    a.run(&["claim", "t-r1"]).ok();
    b.run(&["claim", "t-r1"]).ok();
    assert_eq!(show(&a, "t-r1")["status"], "in_progress");
    assert_eq!(show(&b, "t-r1")["status"], "in_progress");
    assert!(!has_claims_ref(&remote), "local mode never writes refs/fleet/claims");

    // A claim mode fleet does not know is refused where it is set, naming the ones it does;
    // the workspace keeps claiming as it did.
    let refused = b.run(&["bd", "config", "set", "claim_mode", "sometimes"]).fails(1);
    let words = "claim_mode takes one of local, remote, not \"sometimes\"";
    assert!(refused.stderr.contains(words), "{}", refused.stderr);
    b.run(&["claim", "t-r2"]).ok();
    assert_eq!(show(&b, "t-r2")["status"], "in_progress");
    assert!(!has_claims_ref(&remote), "still local mode");
}
