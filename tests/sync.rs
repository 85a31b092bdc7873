//! `fleet sync` between "machines" (workspaces) sharing one bare git remote, on the real
//! binary: convergence of concurrent histories (fixed ones and a property test), close wins
//! over a concurrent status change, the earliest claim wins and the loser hears of it, every
//! failure named and recovered from by the next sync, and `bd sync`.

mod common;

use common::pty::{Pty, strip_escapes};
use common::remote::{Fleet, export_all};
use common::{Run, Workspace, all_succeed, git};
use proptest::prelude::*;
use serde_json::Value;

fn as_actor(ws: &Workspace, actor: &str, args: &[&str]) -> Run {
    let mut cmd = ws.command(args);
    cmd.env("FLEET_ACTOR", actor);
    cmd.output().expect("run fleet").into()
}

fn field(ws: &Workspace, id: &str, name: &str) -> Value {
    let shown = ws.json(&["show", id]);
    let issue = if shown.is_array() { shown[0].clone() } else { shown };
    issue[name].clone()
}

#[test]
fn remotes_are_added_listed_and_removed() {
    let fleet = Fleet::new(1);
    let ws = &fleet.machines[0];
    let list = ws.json(&["remote", "list"]);
    assert_eq!(list[0]["name"], "origin");
    assert_eq!(list[0]["url"], fleet.remote().to_str().unwrap());
    let again = ws.run(&["remote", "add", "origin", "/elsewhere"]).fails(1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    ws.run(&["remote", "remove", "origin"]).ok();
    assert_eq!(ws.json(&["remote", "list"]), serde_json::json!([]));
    let none = ws.run(&["sync"]).fails(1);
    assert!(none.stderr.contains("no remote is configured"), "{}", none.stderr);
    // Names git would take for an option, or that nest refs in another remote's, are refused
    // before anything is written; so is a URL that reads as an option.
    for bad in ["--upload-pack=x", "a/b", ".hidden", ""] {
        let refused = ws.run(&["remote", "add", "--", bad, "/elsewhere"]).fails(1);
        assert!(refused.stderr.contains("a remote name is letters"), "{bad}: {}", refused.stderr);
    }
    let refused = ws.run(&["remote", "add", "up", "--", "-x"]).fails(1);
    assert!(refused.stderr.contains("is not a git URL"), "{}", refused.stderr);
    assert_eq!(ws.json(&["remote", "list"]), serde_json::json!([]));
}

/// A bare project repository with one commit on `main`, and a clone of it as the home of a
/// new workspace (no store yet): a machine of a team whose project lives in git.
fn project_and_clone(project_dir: &tempfile::TempDir) -> (String, Workspace) {
    let project = project_dir.path().join("project.git");
    let project = project.to_str().unwrap().to_string();
    if !std::path::Path::new(&project).exists() {
        let seed = project_dir.path().join("seed");
        let seed = seed.to_str().unwrap();
        git(&["init", "-q", "-b", "main", seed]);
        std::fs::write(project_dir.path().join("seed/README"), "a project\n").unwrap();
        git(&["-C", seed, "add", "README"]);
        git(&["-C", seed, "commit", "-q", "-m", "start"]);
        git(&["clone", "-q", "--bare", seed, &project]);
    }
    let ws = Workspace::empty();
    git(&["clone", "-q", &project, ws.home().to_str().unwrap()]);
    (project, ws)
}

/// Inside a project's clone, the project's `origin` is the queue's remote as it is: `fleet
/// remote add origin` with its URL uses it, `fleet remote list` says whose it is, and `fleet
/// remote remove origin` refuses to delete it; a remote fleet added itself is removed.
#[test]
fn a_projects_own_origin_is_used_and_never_removed() {
    let project_dir = tempfile::tempdir().unwrap();
    let (project, ws) = project_and_clone(&project_dir);
    ws.run(&["init", "--prefix", "app"]).ok();
    let added = ws.json(&["remote", "add", "origin", &project]);
    assert_eq!(added["owner"], "repository", "{added}");
    let list = ws.json(&["remote", "list"]);
    assert_eq!(list[0]["owner"], "repository", "{list}");
    assert!(ws.run(&["remote", "list"]).ok().stdout.contains("(the repository's own)"));
    let refused = ws.run(&["remote", "remove", "origin"]).fails(1);
    assert!(refused.stderr.contains("the repository's own remote"), "{}", refused.stderr);
    let home = ws.home().to_str().unwrap();
    assert_eq!(git(&["-C", home, "remote"]), "origin", "the project keeps its origin");

    let team = project_dir.path().join("team.git");
    git(&["init", "-q", "--bare", team.to_str().unwrap()]);
    assert_eq!(ws.json(&["remote", "add", "team", team.to_str().unwrap()])["owner"], "fleet");
    ws.run(&["remote", "remove", "team"]).ok();
    assert_eq!(git(&["-C", home, "remote"]), "origin");

    let id = ws.create("through origin", &[]);
    assert_eq!(ws.json(&["sync"])["remote"], "origin");
    let pushed = git(&["--git-dir", &project, "for-each-ref", "--format=%(refname)"]);
    assert!(pushed.contains("refs/fleet/journal/"), "{pushed}");
    assert!(id.starts_with("app-"));
}

/// A fresh clone of a project whose team shares its queue through the project's repository
/// joins that queue with one command: `bd init` there takes the team's prefix and every
/// issue; `fleet join URL` does the same for a machine's central queue.
#[test]
fn a_fresh_clone_joins_the_team_queue_with_one_command() {
    let project_dir = tempfile::tempdir().unwrap();
    let (project, first) = project_and_clone(&project_dir);
    first.run(&["bd", "init", "--prefix", "app"]).ok();
    let epic = first.create("the team's epic", &["-t", "epic"]);
    first.create("a task", &["--parent", &epic]);
    first.run(&["bd", "sync"]).ok();

    let (_, clone) = project_and_clone(&project_dir);
    let init = clone.run(&["bd", "init"]).ok();
    assert!(init.stdout.contains("Issue prefix: app"), "{}", init.stdout);
    assert!(export_all(&clone).contains(&epic), "the team's issues are here");
    let mine = clone.create("made in the clone", &[]);
    assert!(mine.starts_with("app-"), "{mine}");
    clone.run(&["bd", "sync"]).ok();
    first.run(&["bd", "sync"]).ok();
    assert_eq!(export_all(&first), export_all(&clone));

    let central = Workspace::empty();
    let joined = central.json(&["join", &project]);
    assert_eq!((joined["prefix"].clone(), joined["replicas"].clone()), ("app".into(), 2.into()));
    assert_eq!(export_all(&central), export_all(&first));
    assert!(central.create("central", &[]).starts_with("app-"));
    let again = central.run(&["join", &project]).fails(1);
    assert!(again.stderr.contains("already holds a store"), "{}", again.stderr);

    let bare = project_dir.path().join("empty.git");
    git(&["init", "-q", "--bare", bare.to_str().unwrap()]);
    let none = Workspace::empty().run(&["join", bare.to_str().unwrap()]).fails(1);
    assert!(none.stderr.contains("holds no fleet journal"), "{}", none.stderr);
}

#[test]
fn two_machines_editing_apart_converge_whatever_the_sync_order() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let one = a.create("one", &[]);
    let two = a.create("two", &[]);
    fleet.sync(0);
    fleet.sync(1);
    a.run(&["update", &one, "--title", "one, by a", "-p", "1"]).ok();
    b.run(&["update", &one, "--title", "one, by b"]).ok();
    a.run(&["comment", &two, "a says hi"]).ok();
    b.run(&["comment", &two, "b says hi"]).ok();
    a.run(&["label", "add", &two, "red"]).ok();
    b.run(&["label", "add", &two, "blue"]).ok();
    b.run(&["close", &one, "--reason", "done on b"]).ok();
    let three = b.create("three", &[]);
    let report = fleet.sync(1);
    assert!(report["sent"].as_u64().unwrap() > 0, "{report}");
    let report = fleet.sync(0);
    assert!(report["received"].as_u64().unwrap() > 0, "{report}");
    fleet.sync(1);
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
    assert_eq!(field(a, &two, "labels"), serde_json::json!(["blue", "red"]));
    assert_eq!(field(a, &one, "status"), "closed");
    assert!(exports[0].contains(&three));
    assert!(exports[0].contains("a says hi") && exports[0].contains("b says hi"));
}

/// An import travels as bulk ops (many records per op, batch format 2): the other machine,
/// which made an issue of its own meanwhile, ends with exactly what the importing machine
/// exports, and an edit of an imported issue made there comes back.
#[test]
fn an_import_travels_to_another_machine_as_bulk_ops() {
    let fleet = Fleet::new(2);
    let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/beads-git-era-sample.jsonl");
    fleet.machines[0].run(&["import", fixture.to_str().unwrap()]).ok();
    let imported: Vec<Value> =
        fleet.machines[0].json(&["list", "--all", "-n", "0"]).as_array().unwrap().clone();
    assert!(imported.len() >= 20, "the fixture imported: {}", imported.len());
    let log = fleet.machines[0].json(&["journal", "log"]);
    assert_eq!(log[0]["format"], 2, "{log}");
    let own = fleet.machines[1].create("made apart", &[]);

    for machine in [0, 1, 0] {
        fleet.sync(machine);
    }
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
    assert!(exports[1].contains(&own), "{}", exports[1]);
    let first = imported[0]["id"].as_str().unwrap();
    assert!(exports[1].contains(&format!("\"id\":\"{first}\"")));

    fleet.machines[1].run(&["update", first, "--title", "Edited after the import"]).ok();
    for machine in [1, 0] {
        fleet.sync(machine);
    }
    assert_eq!(field(&fleet.machines[0], first, "title"), "Edited after the import");
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
}

/// An issue a closes while b, not having seen the close, changes its status (and title); b
/// syncs, then a: the issue, and a's sync report, which must list the kept close.
fn close_against_a_status_change(fleet: &Fleet) -> String {
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = a.create("contested", &[]);
    fleet.sync(0);
    fleet.sync(1);
    a.run(&["close", &id, "--reason", "done"]).ok();
    // Made later, but without having seen the close.
    std::thread::sleep(std::time::Duration::from_millis(20));
    b.run(&["update", &id, "--status", "blocked", "--title", "contested, retitled"]).ok();
    fleet.sync(1);
    let report = fleet.sync(0);
    assert_eq!(report["closes_kept"], serde_json::json!([id.clone()]), "{report}");
    id
}

#[test]
fn a_close_wins_over_a_concurrent_status_change() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = close_against_a_status_change(&fleet);
    fleet.sync(1);
    for ws in &fleet.machines {
        assert_eq!(field(ws, &id, "status"), "closed");
        assert_eq!(field(ws, &id, "title"), "contested, retitled", "other fields still apply");
    }
    assert_eq!(export_all(a), export_all(b));
    // A change of status made after seeing the close does reopen it.
    b.run(&["update", &id, "--status", "open"]).ok();
    fleet.sync(1);
    fleet.sync(0);
    assert_eq!(field(a, &id, "status"), "open");
}

/// A close kept over a concurrent status change is reported by the sync that merged it and by
/// no later one, however many later merges re-apply the history out of order.
#[test]
fn a_kept_close_is_reported_once() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = close_against_a_status_change(&fleet);
    for round in 0..3 {
        // b's op is made before a's, and reaches a after it: a's merge re-applies everything.
        b.create(&format!("b, round {round}"), &[]);
        a.create(&format!("a, round {round}"), &[]);
        fleet.sync(1);
        let later = a.run(&["sync", "--json"]).ok().json();
        assert_eq!(later["resequenced"], true, "{later}");
        assert_eq!(later["closes_kept"], serde_json::json!([]), "round {round}: {later}");
        assert_eq!(later["conflicts_resolved"], 0, "round {round}: {later}");
    }
    let human = a.run(&["sync"]).ok().stdout;
    assert!(!human.contains("stays closed"), "{human}");
    assert_eq!(field(a, &id, "status"), "closed");
}

#[test]
fn the_earliest_claim_wins_and_the_loser_hears_of_it() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = a.create("wanted", &[]);
    fleet.sync(0);
    fleet.sync(1);
    as_actor(a, "alice", &["claim", &id]).ok();
    std::thread::sleep(std::time::Duration::from_millis(20));
    as_actor(b, "bob", &["claim", &id]).ok();
    // The later claimer syncs first: nothing to lose yet.
    let first = fleet.sync(1);
    assert_eq!(first["lost_claims"], serde_json::json!([]));
    let winner = fleet.sync(0);
    assert_eq!(winner["rejected"][0]["issue"], id.as_str(), "{winner}");
    assert!(winner["rejected"][0]["reason"].as_str().unwrap().contains("claimed by alice"));
    let loser = fleet.sync(1);
    assert_eq!(loser["lost_claims"], serde_json::json!([id.clone()]), "{loser}");
    for ws in &fleet.machines {
        assert_eq!(field(ws, &id, "assignee"), "alice");
    }
    let human = b.run(&["sync"]).ok();
    assert!(!human.stdout.contains("Lost claims"), "reported once: {}", human.stdout);
}

/// Three machines make 150 issues each while apart (short hash ids collide by chance), plus
/// an issue and a child under an id chosen on all three, and edit each of their own issues
/// before syncing. After the syncs every issue is there, each edit is on the issue its machine
/// meant, and the machines that lost an id hear of it once.
/// The id all three machines choose for one issue: `t-dup` was once also given by chance to one
/// of the 450 issues made alongside (three base-36 characters), failing the create.
const SHARED_ID: &str = "t-shared-dup";

#[test]
fn ids_made_apart_never_collide_and_every_edit_lands_on_its_issue() {
    const EACH: usize = 150;
    let fleet = Fleet::new(3);
    for (m, ws) in fleet.machines.iter().enumerate() {
        let mut made = Vec::new();
        for i in 0..EACH {
            made.push(ws.create(&format!("m{m} #{i}"), &[]));
        }
        // Longer than any id 450 issues are given, so no made-up id can take it first.
        made.push(ws.create(&format!("m{m} dup"), &["--id", SHARED_ID]));
        made.push(ws.create(&format!("m{m} dup child"), &["--parent", SHARED_ID]));
        // One process, one op per issue: every op names the issue it was made for.
        let notes = format!("made on m{m}");
        let mut update = vec!["update"];
        update.extend(made.iter().map(String::as_str));
        update.extend(["--notes", notes.as_str()]);
        ws.run(&update).ok();
        ws.run(&["comment", SHARED_ID, &format!("comment of m{m}")]).ok();
    }
    let mut renamed = vec![Vec::new(); 3];
    for machine in [0, 1, 2, 0, 1] {
        let report = fleet.sync(machine);
        renamed[machine].extend(report["renamed"].as_array().unwrap().iter().cloned());
    }
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
    assert_eq!(exports[0], exports[2]);
    let issues = fleet.machines[0].json(&["list", "--all", "--limit", "0"]);
    let issues = issues.as_array().unwrap();
    assert_eq!(issues.len(), 3 * (EACH + 2), "no issue is lost");
    for issue in issues {
        let title = issue["title"].as_str().unwrap();
        let maker = title.split(' ').next().unwrap();
        assert_eq!(issue["notes"], format!("made on {maker}"), "{issue}");
    }
    // The id chosen on all three: the earliest keeps it, the two others were renamed, and
    // each child followed its parent.
    let dups: Vec<&Value> =
        issues.iter().filter(|i| i["title"].as_str().unwrap().ends_with(" dup")).collect();
    assert_eq!(dups.len(), 3);
    for dup in &dups {
        let id = dup["id"].as_str().unwrap();
        let maker = dup["title"].as_str().unwrap().split(' ').next().unwrap();
        let shown = fleet.machines[0].json(&["show", id]);
        let shown = if shown.is_array() { shown[0].clone() } else { shown };
        let comments: Vec<&str> = shown["comments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap())
            .collect();
        assert_eq!(comments, [format!("comment of {maker}")], "{shown}");
        let child = issues
            .iter()
            .find(|i| i["title"] == format!("{maker} dup child"))
            .expect("the child is there");
        assert_eq!(child["id"], format!("{id}.1"), "the child follows its parent: {child}");
    }
    // Every machine hears of each rename once (the two of the shared id among them).
    for heard in &renamed {
        let ops: std::collections::BTreeSet<&str> =
            heard.iter().map(|r| r["op"].as_str().unwrap()).collect();
        assert_eq!(ops.len(), heard.len(), "each rename once: {heard:?}");
        let dup = heard.iter().filter(|r| r["asked"] == SHARED_ID).count();
        assert_eq!(dup, 2, "{heard:?}");
    }
    let human = fleet.machines[2].run(&["sync"]).ok();
    assert!(!human.stdout.contains("is now"), "reported once: {}", human.stdout);
}

/// An issue deleted on one machine while another makes a child of it and an issue blocked by
/// it: both new issues are kept (with their comments), without the edge, and the sync says so.
#[test]
fn a_create_under_a_concurrently_deleted_parent_is_kept_as_an_orphan() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let parent = a.create("parent", &[]);
    fleet.sync(0);
    fleet.sync(1);
    a.run(&["delete", &parent, "--force"]).ok();
    let child = b.create("child", &["--parent", &parent, "-d", "the child's text"]);
    let blocked = b.create("blocked", &["--deps", &format!("blocked-by:{parent}")]);
    b.run(&["comment", &child, "work done on the child"]).ok();
    fleet.sync(0);
    fleet.sync(1);
    let report = fleet.sync(0);
    let orphaned = report["orphaned"].as_array().unwrap();
    let targets: Vec<(&str, &str)> = orphaned
        .iter()
        .map(|o| (o["issue"].as_str().unwrap(), o["target"].as_str().unwrap()))
        .collect();
    assert!(targets.contains(&(child.as_str(), parent.as_str())), "{report}");
    assert!(targets.contains(&(blocked.as_str(), parent.as_str())), "{report}");
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
    for ws in &fleet.machines {
        assert_eq!(field(ws, &child, "description"), "the child's text");
        let shown = ws.json(&["show", &child]);
        let shown = if shown.is_array() { shown[0].clone() } else { shown };
        assert_eq!(shown["comments"][0]["text"], "work done on the child");
        assert!(!ids(ws).contains(&parent), "the parent stays deleted");
        assert!(ws.ready_ids().contains(&blocked), "nothing blocks it any more");
    }
}

/// Copies everything under `from`'s FLEET_HOME into `to`'s (what `cp -a ~/.fleet` or a
/// restored backup does).
fn copy_home(from: &Workspace, to: &Workspace) {
    let _ = std::fs::remove_dir_all(to.beads_dir());
    let status = std::process::Command::new("cp")
        .args(["-a", &format!("{}/.", from.home().display()), to.home().to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The replica id of the workspace's store (the name of its journal ref).
fn replica_of(ws: &Workspace) -> String {
    let commit = ws.json(&["journal", "commit"]);
    let reference = commit["reference"].as_str().unwrap();
    reference.strip_prefix("refs/fleet/journal/").unwrap().to_string()
}

fn comments_of(ws: &Workspace, id: &str) -> Vec<String> {
    let shown = ws.json(&["show", id]);
    let shown = if shown.is_array() { shown[0].clone() } else { shown };
    shown["comments"]
        .as_array()
        .map(|c| c.iter().map(|c| c["text"].as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A copied `~/.fleet` goes on working beside the original (both as one replica): the copy
/// that syncs second finds the other's commits under its replica id, takes a new one with its
/// own ops re-stamped, and every op of both copies reaches every machine.
#[test]
fn a_copied_workspace_takes_a_new_replica_id_and_nothing_is_lost() {
    let fleet = Fleet::new(2);
    let (original, other) = (&fleet.machines[0], &fleet.machines[1]);
    let shared = original.create("shared", &[]);
    fleet.sync(0);
    // Made before the copy, not yet in git: both copies have it.
    let pending = original.create("pending at the copy", &[]);
    let copy = Workspace::empty();
    copy_home(original, &copy);
    let by_original = original.create("by the original", &[]);
    original.run(&["comment", &shared, "the original's comment"]).ok();
    let by_copy = copy.create("by the copy", &[]);
    copy.run(&["comment", &shared, "the copy's comment"]).ok();
    copy.run(&["update", &pending, "--notes", "the copy's note"]).ok();
    fleet.sync(0);
    let report = copy.json(&["sync"]);
    assert_eq!(report["own_ref"]["state"], "new_replica", "{report}");
    let old = replica_of(original);
    assert_eq!(report["own_ref"]["old"], old.as_str());
    let renamed = report["own_ref"]["new"].as_str().unwrap().to_string();
    assert_ne!(report["own_ref"]["old"], renamed);
    assert!(report["own_ref"]["ops"].as_array().unwrap().len() >= 3, "{report}");
    let human = copy.run(&["sync"]).ok();
    assert!(!human.stdout.contains("Another copy"), "once: {}", human.stdout);
    for _ in 0..2 {
        fleet.sync(0);
        fleet.sync(1);
        copy.json(&["sync"]);
    }
    let everyone = [original, other, &copy];
    let exports: Vec<String> = everyone.iter().map(|ws| export_all(ws)).collect();
    assert_eq!(exports[0], exports[1]);
    assert_eq!(exports[0], exports[2]);
    for ws in everyone {
        let ids = ids(ws);
        for id in [&shared, &pending, &by_original, &by_copy] {
            assert!(ids.contains(id), "{id} missing");
        }
        let mut comments = comments_of(ws, &shared);
        comments.sort();
        assert_eq!(comments, ["the copy's comment", "the original's comment"]);
        assert_eq!(field(ws, &pending, "notes"), "the copy's note");
    }
    // The original kept its id; the copy's new ops are its own from now on.
    assert_eq!(replica_of(original), old);
    assert_eq!(replica_of(&copy), renamed);
    let after = copy.create("after the new id", &[]);
    copy.json(&["sync"]);
    fleet.sync(1);
    assert!(ids(other).contains(&after));
    // Each journal alone rebuilds the same queue.
    copy.run(&["rebuild", "--force"]).ok();
    other.run(&["rebuild", "--force"]).ok();
    assert_eq!(export_all(&copy), export_all(other));
}

/// A store restored from a backup, with the machine's later work on the remote: the next sync
/// catches it up with its own lost ops; a backup that went on working before its first sync
/// takes a new replica id instead, and nothing of either is lost.
#[test]
fn a_restored_backup_catches_up_with_its_own_journal() {
    let fleet = Fleet::new(2);
    let (machine, other) = (&fleet.machines[0], &fleet.machines[1]);
    let before = machine.create("before the backup", &[]);
    fleet.sync(0);
    let backup = Workspace::empty();
    copy_home(machine, &backup);
    let lost = machine.create("after the backup", &[]);
    machine.run(&["comment", &before, "said after the backup"]).ok();
    fleet.sync(0);
    // The disk dies; the backup is put back.
    copy_home(&backup, machine);
    assert!(!ids(machine).contains(&lost));
    let report = machine.json(&["sync"]);
    assert_eq!(report["own_ref"]["state"], "caught_up", "{report}");
    assert!(ids(machine).contains(&lost));
    assert_eq!(comments_of(machine, &before), ["said after the backup"]);
    let next = machine.create("after the restore", &[]);
    fleet.sync(0);
    fleet.sync(1);
    assert!(ids(other).contains(&next));
    assert_eq!(export_all(machine), export_all(other));

    // The same backup again, but it works before it syncs: a fork.
    copy_home(&backup, machine);
    let forked = machine.create("made on the restored backup", &[]);
    let report = machine.json(&["sync"]);
    assert_eq!(report["own_ref"]["state"], "new_replica", "{report}");
    fleet.sync(1);
    machine.json(&["sync"]);
    for ws in [machine, other] {
        let ids = ids(ws);
        for id in [&before, &lost, &next, &forked] {
            assert!(ids.contains(id), "{id} missing");
        }
    }
    assert_eq!(export_all(machine), export_all(other));
}

/// The remote is lost and made again, empty: the first machine to sync pushes every replica's
/// journal it has, so a machine that joins afterwards gets the whole queue.
#[test]
fn a_remote_made_again_is_restored_by_any_machine_that_syncs() {
    let fleet = Fleet::new(3);
    let mut made = Vec::new();
    for (m, ws) in fleet.machines.iter().enumerate() {
        made.push(ws.create(&format!("made on m{m}"), &[]));
        fleet.sync(m);
    }
    fleet.sync(0);
    fleet.sync(1);
    std::fs::remove_dir_all(fleet.remote()).unwrap();
    git(&["init", "-q", "--bare", fleet.remote().to_str().unwrap()]);
    let report = fleet.sync(1);
    assert_eq!(report["restored_refs"].as_array().unwrap().len(), 2, "{report}");
    let newcomer = Workspace::new();
    newcomer.run(&["remote", "add", "origin", fleet.remote().to_str().unwrap()]).ok();
    newcomer.json(&["sync"]);
    let ids = ids(&newcomer);
    for id in &made {
        assert!(ids.contains(id), "{id} missing on the newcomer");
    }
}

#[test]
fn a_remote_that_does_not_exist_is_named_and_the_next_sync_completes() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = a.create("kept", &[]);
    let missing = fleet.remote_dir.path().join("nowhere.git");
    a.run(&["remote", "add", "gone", missing.to_str().unwrap()]).ok();
    let failed = a.run(&["sync", "gone"]).fails(1);
    assert!(failed.stderr.contains("remote gone"), "{}", failed.stderr);
    assert!(failed.stderr.contains("nowhere.git"), "{}", failed.stderr);
    let unknown = a.run(&["sync", "nosuch"]).fails(1);
    assert!(unknown.stderr.contains("no remote named nosuch"), "{}", unknown.stderr);
    // The remote that vanishes mid-way: the next sync, once it is back, does the job.
    std::fs::rename(fleet.remote(), &missing).unwrap();
    let cut = a.run(&["sync"]).fails(1);
    assert!(cut.stderr.contains("fetching the journal from remote origin"), "{}", cut.stderr);
    std::fs::rename(&missing, fleet.remote()).unwrap();
    assert_eq!(fleet.sync(0)["sent"], 1);
    fleet.sync(1);
    assert!(export_all(b).contains(&id));
}

#[test]
fn a_rejected_push_is_named_and_the_next_sync_completes() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    a.create("first", &[]);
    fleet.sync(0);
    b.create("on b", &[]);
    fleet.sync(1);
    let replica =
        a.json(&["journal", "log", "-n", "1"])[0]["replica"].as_str().unwrap().to_string();
    let ours = format!("refs/fleet/journal/{replica}");
    let remote = fleet.remote();
    let remote = remote.to_str().unwrap();
    // The remote's copy of a's ref moved to a commit that is not a's (b's tip).
    let b_ref = git(&["--git-dir", remote, "for-each-ref", "--format=%(refname)"])
        .lines()
        .find(|r| *r != ours)
        .unwrap()
        .to_string();
    let b_tip = git(&["--git-dir", remote, "rev-parse", &b_ref]);
    git(&["--git-dir", remote, "update-ref", &ours, &b_tip]);
    a.create("second", &[]);
    let rejected = a.run(&["sync"]).fails(1);
    assert!(rejected.stderr.contains(&format!("{ours} on remote origin")), "{}", rejected.stderr);
    assert!(rejected.stderr.contains("is not a fleet journal batch"), "{}", rejected.stderr);
    git(&["--git-dir", remote, "update-ref", "-d", &ours]);
    let report = fleet.sync(0);
    assert_eq!(report["sent"], 2, "{report}");
    fleet.sync(1);
    assert_eq!(export_all(a), export_all(b));
}

/// Every way a remote fails is named by its cause, with the fix for that cause (not one hint
/// for all): nothing listening at the address, no repository at the URL (a path, and a git
/// daemon that serves no such repository), a push a hook turned down. And the next sync, once
/// the remote is right, completes.
#[test]
fn each_remote_failure_is_named_by_its_cause() {
    let fleet = Fleet::new(1);
    let a = &fleet.machines[0];
    a.create("kept", &[]);
    let hint_of = |name: &str| {
        let failed = a.run(&["sync", name]).fails(1);
        let hint =
            failed.stderr.lines().find(|l| l.starts_with("hint: ")).unwrap_or("").to_string();
        (failed.stderr, hint)
    };
    let refused = format!("git://127.0.0.1:{}/queue.git", common::remote::closed_port());
    a.run(&["remote", "add", "refused", &refused]).ok();
    let (stderr, hint) = hint_of("refused");
    assert!(hint.contains("refused the connection"), "{stderr}");

    let missing = fleet.remote_dir.path().join("nowhere.git");
    a.run(&["remote", "add", "missing", &format!("file://{}", missing.display())]).ok();
    let (stderr, hint) = hint_of("missing");
    assert!(hint.contains("no git repository at the remote's URL"), "{stderr}");

    let daemon = common::remote::GitDaemon::start(fleet.remote_dir.path());
    a.run(&["remote", "add", "served", &daemon.url("nowhere.git")]).ok();
    let (stderr, hint) = hint_of("served");
    assert!(hint.contains("no git repository at the remote's URL"), "{stderr}");

    let hook = fleet.remote().join("hooks/pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho 'refs/fleet is frozen' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (stderr, hint) = hint_of("origin");
    assert!(hint.contains("turned the push down"), "{stderr}");
    assert!(stderr.contains("refs/fleet is frozen"), "git's own reason is shown: {stderr}");
    std::fs::remove_file(&hook).unwrap();
    assert_eq!(fleet.sync(0)["sent"], 1);
    for name in ["refused", "missing", "served"] {
        a.run(&["remote", "remove", name]).ok();
    }
}

#[test]
fn a_foreign_ref_is_named_left_out_and_the_rest_synced() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = a.create("good", &[]);
    fleet.sync(0);
    let remote = fleet.remote();
    let remote = remote.to_str().unwrap();
    let empty_tree = git(&["--git-dir", remote, "hash-object", "-t", "tree", "-w", "/dev/null"]);
    let commit = git(&["--git-dir", remote, "commit-tree", &empty_tree, "-m", "not fleet"]);
    git(&["--git-dir", remote, "update-ref", "refs/fleet/journal/bogus", &commit]);
    let failed = b.run(&["sync"]).fails(1);
    assert!(
        failed.stderr.contains("refs/fleet/journal/bogus on remote origin"),
        "{}",
        failed.stderr
    );
    assert!(failed.stderr.contains("not a fleet journal batch"), "{}", failed.stderr);
    assert!(export_all(b).contains(&id), "the good ref was synced all the same");
    git(&["--git-dir", remote, "update-ref", "-d", "refs/fleet/journal/bogus"]);
    b.run(&["sync"]).ok();
    fleet.sync(0);
    assert_eq!(export_all(a), export_all(b));
}

#[test]
fn bd_sync_runs_fleet_sync_once_a_remote_exists() {
    let ws = Workspace::new();
    let plain = ws.run(&["bd", "sync"]).ok();
    assert!(plain.stdout.contains("Nothing to sync"), "{}", plain.stdout);
    ws.run(&["bd", "dolt", "push"]).ok();
    ws.run(&["bd", "sync", "--status"]).ok();
    let fleet = Fleet::new(1);
    let a = &fleet.machines[0];
    let id = a.create("via bd", &[]);
    let flushed = a.run(&["bd", "sync", "--flush-only"]).ok();
    assert!(flushed.stdout.contains("Committed 1 op(s)"), "{}", flushed.stdout);
    let synced = a.run(&["bd", "sync"]).ok();
    assert!(synced.stdout.contains("Synced with origin"), "{}", synced.stdout);
    let other = Workspace::new();
    other.run(&["remote", "add", "origin", fleet.remote().to_str().unwrap()]).ok();
    other.run(&["bd", "dolt", "pull"]).ok();
    assert!(export_all(&other).contains(&id));
}

/// The journal refs a bare remote holds.
fn remote_refs(fleet: &Fleet) -> String {
    git(&["--git-dir", fleet.remote().to_str().unwrap(), "for-each-ref", "--format=%(refname)"])
}

/// beads' `bd sync` flags do what they did in beads, in fleet's terms; `bd dolt pull` only
/// pulls and `bd dolt push` only pushes.
#[test]
fn bd_sync_takes_beads_flags_and_dolt_pull_only_pulls() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let x = a.create("from a", &[]);
    let dry = a.run(&["bd", "sync", "--dry-run"]).ok().stdout;
    assert!(dry.contains("Would push 1 op(s) to remote origin"), "{dry}");
    assert!(dry.contains("Dry run complete (no changes made)"), "{dry}");
    assert_eq!(remote_refs(&fleet), "", "a dry run pushes nothing");
    assert_eq!(a.json(&["bd", "sync", "--status"])["pending"], 1, "nor commits");

    let kept = a.json(&["bd", "sync", "--no-push"]);
    assert_eq!((kept["committed"].clone(), kept["sent"].clone()), (1.into(), 0.into()), "{kept}");
    assert_eq!(remote_refs(&fleet), "");
    let sent = a.json(&["bd", "sync", "--no-pull", "-m", "end of session"]);
    assert_eq!((sent["sent"].clone(), sent["pulled"].clone()), (1.into(), false.into()), "{sent}");
    assert_eq!(remote_refs(&fleet).lines().count(), 1);

    let y = b.create("from b", &[]);
    let pulled = b.json(&["bd", "dolt", "pull"]);
    assert_eq!((pulled["received"].clone(), pulled["sent"].clone()), (1.into(), 0.into()));
    assert!(export_all(b).contains(&x));
    assert_eq!(remote_refs(&fleet).lines().count(), 1, "a pull pushes nothing: {pulled}");
    let pushed = b.json(&["bd", "dolt", "push"]);
    assert_eq!((pushed["sent"].clone(), pushed["received"].clone()), (1.into(), 0.into()));
    assert_eq!(remote_refs(&fleet).lines().count(), 2);
    assert!(!export_all(a).contains(&y), "nothing reached a without a pull");

    let nothing = a.run(&["bd", "sync", "--import-only"]).ok().stdout;
    assert!(nothing.contains("Nothing to import"), "{nothing}");
    let line = b.run(&["export"]).ok().stdout;
    std::fs::write(a.beads_dir().join("issues.jsonl"), line).unwrap();
    a.run(&["bd", "sync", "--import-only"]).ok();
    assert!(export_all(a).contains(&y), "imported from issues.jsonl");
}

#[test]
fn export_jsonl_writes_issues_jsonl_after_a_sync() {
    let fleet = Fleet::new(1);
    let a = &fleet.machines[0];
    a.run(&["bd", "config", "set", "sync.export_jsonl", "true"]).ok();
    let id = a.create("exported", &[]);
    fleet.sync(0);
    let text = std::fs::read_to_string(a.beads_dir().join("issues.jsonl")).unwrap();
    assert!(text.contains(&id));
}

/// One step of a random history.
#[derive(Debug, Clone)]
enum Step {
    Create {
        machine: usize,
    },
    Retitle {
        machine: usize,
        issue: usize,
        title: u8,
    },
    Status {
        machine: usize,
        issue: usize,
        status: usize,
    },
    Close {
        machine: usize,
        issue: usize,
    },
    Comment {
        machine: usize,
        issue: usize,
    },
    Label {
        machine: usize,
        issue: usize,
        label: usize,
    },
    Claim {
        machine: usize,
        issue: usize,
    },
    Release {
        machine: usize,
        issue: usize,
    },
    /// A child of an issue (which another machine may be deleting meanwhile).
    CreateChild {
        machine: usize,
        issue: usize,
    },
    Delete {
        machine: usize,
        issue: usize,
    },
    /// A copy of a machine's whole FLEET_HOME goes on working as a machine of its own.
    Clone {
        machine: usize,
    },
    Sync {
        machine: usize,
    },
}

fn step(machines: usize) -> impl Strategy<Value = Step> {
    let m = 0..machines;
    let i = 0usize..8;
    prop_oneof![
        2 => m.clone().prop_map(|machine| Step::Create { machine }),
        2 => (m.clone(), i.clone(), any::<u8>())
            .prop_map(|(machine, issue, title)| Step::Retitle { machine, issue, title }),
        1 => (m.clone(), i.clone(), 0usize..3)
            .prop_map(|(machine, issue, status)| Step::Status { machine, issue, status }),
        1 => (m.clone(), i.clone()).prop_map(|(machine, issue)| Step::Close { machine, issue }),
        1 => (m.clone(), i.clone()).prop_map(|(machine, issue)| Step::Comment { machine, issue }),
        1 => (m.clone(), i.clone(), 0usize..3)
            .prop_map(|(machine, issue, label)| Step::Label { machine, issue, label }),
        1 => (m.clone(), i.clone()).prop_map(|(machine, issue)| Step::Claim { machine, issue }),
        1 => (m.clone(), i.clone()).prop_map(|(machine, issue)| Step::Release { machine, issue }),
        1 => (m.clone(), i.clone())
            .prop_map(|(machine, issue)| Step::CreateChild { machine, issue }),
        1 => (m.clone(), i).prop_map(|(machine, issue)| Step::Delete { machine, issue }),
        1 => m.clone().prop_map(|machine| Step::Clone { machine }),
        2 => m.prop_map(|machine| Step::Sync { machine }),
    ]
}

fn ids(ws: &Workspace) -> Vec<String> {
    let list = ws.json(&["list", "--all", "--limit", "0"]);
    let mut ids: Vec<String> =
        list.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids
}

fn play(fleet: &mut Fleet, serial: usize, step: &Step) {
    if let Step::Clone { machine } = step {
        if fleet.machines.len() < 5 {
            let copy = Workspace::empty();
            copy_home(&fleet.machines[machine % fleet.machines.len()], &copy);
            fleet.machines.push(copy);
        }
        return;
    }
    let fleet = &*fleet;
    // Steps name machines 0..5; clones join as machines 3 and 4, until then the name wraps.
    let at = |machine: &usize| machine % fleet.machines.len();
    let pick = |machine: &usize, n: usize| {
        let ids = ids(&fleet.machines[at(machine)]);
        (!ids.is_empty()).then(|| ids[n % ids.len()].clone())
    };
    let run = |machine: &usize, args: &[&str]| {
        // A refusal (claiming a taken issue) is simply not an op.
        let _ = fleet.machines[at(machine)].run(args);
    };
    match step {
        Step::Create { machine } => run(machine, &["create", &format!("m{machine} #{serial}")]),
        Step::Retitle { machine, issue, title } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["update", &id, "--title", &format!("title {title}")]);
            }
        }
        Step::Status { machine, issue, status } => {
            if let Some(id) = pick(machine, *issue) {
                let status = ["open", "blocked", "deferred"][*status];
                run(machine, &["update", &id, "--status", status]);
            }
        }
        Step::Close { machine, issue } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["close", &id]);
            }
        }
        Step::Comment { machine, issue } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["comment", &id, &format!("note {serial}")]);
            }
        }
        Step::Label { machine, issue, label } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["label", "add", &id, ["red", "green", "blue"][*label]]);
            }
        }
        Step::Claim { machine, issue } => {
            if let Some(id) = pick(machine, *issue) {
                let actor = format!("agent-{machine}");
                let _ = as_actor(&fleet.machines[at(machine)], &actor, &["claim", &id]);
            }
        }
        Step::Release { machine, issue } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["release", &id]);
            }
        }
        Step::CreateChild { machine, issue } => {
            if let Some(parent) = pick(machine, *issue) {
                run(machine, &["create", &format!("child {serial}"), "--parent", &parent]);
            }
        }
        Step::Delete { machine, issue } => {
            if let Some(id) = pick(machine, *issue) {
                run(machine, &["delete", &id, "--force"]);
            }
        }
        Step::Clone { .. } => {}
        Step::Sync { machine } => {
            fleet.machines[at(machine)].json(&["sync"]);
        }
    }
}

fn history() -> impl Strategy<Value = (Vec<Step>, Vec<usize>)> {
    (proptest::collection::vec(step(5), 4..16), Just(vec![0usize, 1, 2, 3, 4]).prop_shuffle())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random concurrent histories on three machines — claims and releases by several of
    /// them, deletes under new children, copies of a machine's store working beside it —
    /// synced now and then and at the end in a random order: every machine exports the same
    /// queue, and `fleet rebuild` from the journal alone gives it again.
    #[test]
    fn random_histories_synced_in_random_orders_converge((steps, order) in history()) {
        let mut fleet = Fleet::new(3);
        fleet.machines[0].create("shared", &[]);
        fleet.sync(0);
        for (serial, step) in steps.iter().enumerate() {
            play(&mut fleet, serial, step);
        }
        let order: Vec<usize> = order.into_iter().filter(|&m| m < fleet.machines.len()).collect();
        for _ in 0..2 {
            for &machine in &order {
                fleet.sync(machine);
            }
        }
        let exports = fleet.exports();
        for export in &exports[1..] {
            prop_assert_eq!(&exports[0], export);
        }
        // The journal alone rebuilds the same queue (every replica's refs were fetched).
        let rebuilt = &fleet.machines[order[0]];
        rebuilt.run(&["rebuild", "--force"]).ok();
        prop_assert_eq!(export_all(rebuilt), exports[0].clone());
    }
}

/// Syncs of one workspace started at once (two shells, or a person and the supervisor) all
/// succeed — one after the other — while writes go on between them, and the other machine
/// then receives every op.
#[test]
fn syncs_of_one_workspace_at_once_all_succeed() {
    let fleet = Fleet::new(2);
    let a = &fleet.machines[0];
    for round in 0..3 {
        for n in 0..5 {
            a.create(&format!("round {round} task {n}"), &[]);
        }
        let syncs = (0..3).map(|_| a.command(&["sync", "--json"]));
        all_succeed(syncs, &format!("round {round}"));
    }
    let report = fleet.sync(1);
    assert_eq!(report["received"], 15, "{report}");
    let exports = fleet.exports();
    assert_eq!(exports[0], exports[1]);
}

/// Makes the machine's remote take the connection and then say nothing, by running `marker`
/// (e.g. `sleep 317`: a duration no other test uses, to find the process afterwards) as its
/// upload-pack; `None` makes it answer again.
fn silence_the_remote(machine: &Workspace, marker: Option<&str>) {
    let journal = machine.beads_dir().join("journal.git");
    let journal = journal.to_str().unwrap();
    match marker {
        Some(marker) => {
            let pack = format!("{marker}; :");
            git(&["--git-dir", journal, "config", "remote.origin.uploadpack", &pack])
        }
        None => git(&["--git-dir", journal, "config", "--unset", "remote.origin.uploadpack"]),
    };
}

/// A remote that takes the connection and then says nothing (here: an upload-pack that only
/// sleeps) stops the sync at the time limit with a message that says so, kills git and what
/// it started, and the next sync with a live remote completes.
#[test]
fn a_silent_remote_stops_the_sync_at_the_time_limit() {
    let fleet = Fleet::new(1);
    let a = &fleet.machines[0];
    a.create("first", &[]);
    // A duration no other test uses, to find the process afterwards.
    let marker = "sleep 317";
    silence_the_remote(a, Some(marker));
    let started = std::time::Instant::now();
    let stopped = a.command(&["sync"]).env("FLEET_GIT_TIMEOUT_SECS", "2").output().unwrap();
    let stopped = Run::from(stopped).fails(1);
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(stopped.stderr.contains("git gave no answer within 2 s"), "{}", stopped.stderr);
    let left = std::process::Command::new("pgrep").args(["-f", marker]).output().unwrap();
    assert!(left.stdout.is_empty(), "the sleeping upload-pack is gone: {left:?}");

    silence_the_remote(a, None);
    let report = fleet.sync(0);
    assert_eq!(report["sent"], 1, "{report}");
}

/// The same silent remote, with `fleet sync` run on a terminal, where git draws its progress
/// there: the fetch is held to the same time limit, git's whole process group is killed, the
/// message names the remote and what to do, and the sync lock is released.
#[test]
fn a_silent_remote_stops_a_sync_on_a_terminal_at_the_time_limit() {
    let fleet = Fleet::new(1);
    let a = &fleet.machines[0];
    a.create("first", &[]);
    let marker = "sleep 331";
    silence_the_remote(a, Some(marker));
    let mut command = a.command(&["sync"]);
    command.env("FLEET_GIT_TIMEOUT_SECS", "2").env("TERM", "xterm");
    let started = std::time::Instant::now();
    let mut pty = Pty::spawn(command, 200, 40);

    let hanging = wait_for_processes(marker, std::time::Duration::from_secs(20));
    let group = hanging[0].pgid;
    let status = pty.wait(std::time::Duration::from_secs(60)).expect("the sync ends");
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(15), "stopped after {took:?}, not at 2 s");
    assert_eq!(status.code(), Some(1), "{}", pty.text());
    let text = strip_escapes(&pty.text()).replace("\r\n", "\n");
    assert!(
        text.contains("fetching the journal from remote origin (")
            && text.contains("git gave no answer within 2 s and was stopped"),
        "{text}"
    );
    assert!(text.contains("check the network and the remote's URL"), "{text}");
    assert!(text.contains("FLEET_GIT_TIMEOUT_SECS"), "{text}");
    let left = common::procs::group_members(group);
    assert!(left.is_empty(), "git's process group {group} is gone: {left:?}");

    // The lock went with the process: the next sync runs (and, the remote answering, ends).
    silence_the_remote(a, None);
    let report = fleet.sync(0);
    assert_eq!(report["sent"], 1, "{report}");
}

/// A workspace beads made keeps beads' `.gitignore`, which lacks fleet's lines: the first sync
/// adds the sync lock's (and the journal repository's) at the end, once, the other lines kept,
/// so `git status` of the project lists neither; serving the workspace adds the socket's and
/// its lock's.
#[test]
fn a_gitignore_beads_wrote_gets_fleets_lines_once() {
    let mut fleet = Fleet::new(1);
    let home = fleet.machines[0].home().to_str().unwrap().to_owned();
    let gitignore = fleet.machines[0].beads_dir().join(".gitignore");
    let beads = "# beads\n*.db\n*.db-journal\n*.db-wal\n*.db-shm\ndaemon.log\ndaemon.pid\nbd.sock\n\
                 !*.jsonl\n!metadata.json\n!config.json\n";
    std::fs::write(&gitignore, beads).unwrap();
    git(&["-C", &home, "init", "-q"]);
    fleet.machines[0].create("first", &[]);
    fleet.sync(0);
    fleet.sync(0);
    let text = std::fs::read_to_string(&gitignore).unwrap();
    assert_eq!(text, format!("{beads}sync.lock\njournal.git/\n"));
    let untracked = git(&["-C", &home, "status", "--porcelain", "--untracked-files=all"]);
    assert!(untracked.contains(".beads/.gitignore"), "{untracked}");
    assert!(!untracked.contains("sync.lock") && !untracked.contains("journal.git"), "{untracked}");

    fleet.machines[0].serve();
    let text = std::fs::read_to_string(&gitignore).unwrap();
    assert_eq!(text, format!("{beads}sync.lock\njournal.git/\nfleet.sock.lock\nfleet.sock\n"));
    let untracked = git(&["-C", &home, "status", "--porcelain", "--untracked-files=all"]);
    assert!(!untracked.contains("fleet.sock"), "{untracked}");
}

/// The live processes whose command line contains `marker`; panics when none shows up within
/// `within`.
fn wait_for_processes(
    marker: &str,
    within: std::time::Duration,
) -> Vec<fleet::process::ProcessInfo> {
    common::poll_until(&format!("a process running {marker:?}"), within, || {
        let found: Vec<_> = fleet::process::processes()
            .into_iter()
            .filter(|p| !p.zombie)
            .filter(|p| common::procs::cmdline(p.pid).contains(marker))
            .collect();
        (!found.is_empty()).then_some(found)
    })
}

/// Issue 32: messages are ops. Sent on two machines to one task, they reach both inboxes
/// exactly once, each sender's in the order sent; an ack made on one machine takes the message
/// out of the other's inbox after a sync; a reservation travels too; and a store rebuilt from
/// the journal holds the same messages.
#[test]
fn mail_across_two_synced_machines_is_delivered_once_in_order_per_sender() {
    let fleet = Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let task = a.create("shared task", &[]);
    fleet.sync(0);
    fleet.sync(1);
    for n in 1..=3 {
        as_actor(a, "alice", &["mail", "send", &task, &format!("a{n}")]).ok();
        as_actor(b, "bob", &["mail", "send", &task, &format!("b{n}")]).ok();
    }
    as_actor(b, "bob", &["reserve", "src/**", "--task", &task, "--reason", "from b"]).ok();
    fleet.sync(0);
    fleet.sync(1);
    fleet.sync(0);
    let bodies = |ws: &Workspace| -> Vec<String> {
        let inbox = ws.json(&["mail", "inbox", "--task", &task]);
        inbox.as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap().to_string()).collect()
    };
    for ws in [a, b] {
        let got = bodies(ws);
        assert_eq!(got.len(), 6, "{got:?}");
        for sender in ["a", "b"] {
            let theirs: Vec<&String> = got.iter().filter(|m| m.starts_with(sender)).collect();
            assert_eq!(
                theirs,
                [&format!("{sender}1"), &format!("{sender}2"), &format!("{sender}3")]
            );
        }
        let files = ws.run(&["task", &task, "files"]).ok().stdout;
        assert!(files.contains("src/** for") && files.contains("from b"), "{files}");
    }
    let first = a.json(&["mail", "inbox", "--task", &task])[0]["id"].as_str().unwrap().to_string();
    as_actor(b, "bob", &["mail", "ack", &first]).ok();
    fleet.sync(1);
    fleet.sync(0);
    assert_eq!(bodies(a).len(), 5);
    let before = a.run(&["mail", "inbox", "--task", &task, "--all", "--json"]).ok().stdout;
    a.run(&["rebuild"]).ok();
    let after = a.run(&["mail", "inbox", "--task", &task, "--all", "--json"]).ok().stdout;
    assert_eq!(before, after, "the rebuilt store holds the same messages");
}
