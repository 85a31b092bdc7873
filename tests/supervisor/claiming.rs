//! Claiming: work created by another process is noticed without a fixed poll interval, and
//! leases left by a supervisor that died are released when it starts again.

use std::time::{Duration, Instant};

use crate::common::git;
use crate::harness::{Fleet, counter};

#[test]
fn task_created_by_another_process_is_picked_up_quickly() {
    let fleet = Fleet::new(&[]);
    let supervisor = fleet.start(&["--json"]);
    // The supervisor looked at the empty queue and waits on it.
    supervisor.wait_event("waiting", |e| e["running"] == 0);

    let id = fleet.task("Created while running", &["close picked up"]);
    let created = Instant::now();
    supervisor.wait_event("claimed", |e| e["id"] == id.as_str());
    let waited = created.elapsed();
    // A generous bound for a loaded machine; the latency goal itself lives in the benchmarks.
    assert!(waited < Duration::from_secs(2), "the new task started after {waited:?}");

    let finished = supervisor.wait_event("finished", |e| e["id"] == id.as_str());
    assert_eq!(finished["verdict"], "closed");
    supervisor.stop().ok();
    assert_eq!(fleet.show(&id)["close_reason"], "picked up");
}

#[test]
fn stale_lease_of_this_supervisor_is_released_at_start() {
    let fleet = Fleet::new(&[]);
    let stale = fleet.task("Held by a dead run", &["close finished after all"]);
    let foreign = fleet.task("Held by another supervisor", &["close"]);
    fleet.ws.run(&["claim", &stale, "--actor", "sup-a"]).ok();
    fleet.ws.run(&["claim", &foreign, "--actor", "sup-b"]).ok();
    assert_eq!(fleet.show(&stale)["status"], "in_progress");

    let run = fleet.run_until_idle(&["--as", "sup-a"]).ok();

    assert_eq!(
        run.starting("↩ "),
        [format!(
            "↩ {stale} released: it was held by sup-a from a run that stopped without releasing it"
        )],
        "{}",
        run.stdout()
    );
    let issue = fleet.show(&stale);
    assert_eq!(issue["status"], "closed", "released, then claimed and run");
    assert_eq!(issue["close_reason"], "finished after all");
    assert_eq!(counter(&issue, "failures"), 0);
    let comments = fleet.comments(&stale);
    assert_eq!(
        comments[0],
        "[fleet] released: it was held by sup-a from a run that stopped without releasing it"
    );
    // Another supervisor's lease is not ours to break.
    let other = fleet.show(&foreign);
    assert_eq!(other["status"], "in_progress");
    assert_eq!(other["assignee"], "sup-b");
    assert_eq!(counter(&other, "attempts"), 0);
}

/// Adds `remote` as `origin` of the workspace's journal repository and sets remote claims.
fn claim_remotely(ws: &crate::common::Workspace, remote: &std::path::Path) {
    ws.run(&["journal", "commit"]).ok();
    ws.run(&["remote", "add", "origin", remote.to_str().unwrap()]).ok();
    ws.run(&["bd", "config", "set", "claim_mode", "remote"]).ok();
}

#[test]
fn in_remote_claim_mode_a_task_held_by_another_machine_is_skipped_uncharged() {
    let fleet = Fleet::new(&[]);
    let held = fleet.task("Held by another machine", &["close should not run here"]);
    let free = fleet.task("Free", &["close ran here"]);
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
    let export = dir.path().join("issues.jsonl");
    std::fs::write(&export, fleet.ws.run(&["export", "--all"]).ok().stdout).unwrap();
    let other = crate::common::Workspace::new();
    other.run(&["import", export.to_str().unwrap()]).ok();
    claim_remotely(&fleet.ws, &remote);
    claim_remotely(&other, &remote);
    other.run(&["claim", &held]).ok();

    let run = fleet.run_until_idle(&[]).ok();

    assert_eq!(fleet.show(&free)["close_reason"], "ran here", "{}", run.stdout());
    let skipped = fleet.show(&held);
    assert_eq!(skipped["status"], "open", "{}", run.stdout());
    assert_eq!(counter(&skipped, "attempts"), 0, "a refused claim is not charged");
    assert!(!run.stdout().contains(&format!("{held} closed")), "{}", run.stdout());
    let holders = git(&[
        "--git-dir",
        remote.to_str().unwrap(),
        "ls-tree",
        "-r",
        "--name-only",
        "refs/fleet/claims",
    ]);
    assert!(holders.contains(&format!("claims/{held}")), "{holders}");
    assert!(holders.contains(&format!("claims/{free}")), "{holders}");
}

/// Issue 27: among tasks of equal priority the supervisor runs the oldest first (FIFO), so old
/// tasks never starve behind new ones; a more urgent task still goes first.
#[test]
fn equal_priorities_run_oldest_first() {
    let fleet = Fleet::new(&[("max_concurrent", "1")]);
    let first = fleet.task("First in", &["close"]);
    let second = fleet.task("Second in", &["close"]);
    let urgent = fleet.task_with("Urgent, but last in", &["close"], &["--priority", "0"]);
    let third = fleet.task("Third in", &["close"]);
    let run = fleet.run_until_idle(&[]).ok();
    let order: Vec<&str> =
        run.starting("▶ ").iter().filter_map(|l| l.strip_prefix("▶ ")?.split(' ').next()).collect();
    assert_eq!(order, [&urgent, &first, &second, &third], "{}", run.stdout());
}

/// A git checkout at `dir` whose origin is `url`, with a directory `web` inside.
fn checkout(dir: &std::path::Path, url: &str) {
    std::fs::create_dir_all(dir.join("web")).unwrap();
    git(&["-C", dir.to_str().unwrap(), "init", "--quiet"]);
    git(&["-C", dir.to_str().unwrap(), "remote", "add", "origin", url]);
}

/// Issue 26: a task made on one machine, in its checkout of a repository, runs on another
/// machine whose checkout of that repository is elsewhere (another path, another form of the
/// origin URL); a machine with no checkout of it leaves it alone and says why, and never
/// claims, fails or blocks it.
#[test]
fn a_task_made_on_one_machine_runs_in_another_machines_checkout() {
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
    let theirs = dir.path().join("alice/src/app");
    checkout(&theirs, "git@github.com:team/app.git");
    let ours = dir.path().join("bob/code/application");
    checkout(&ours, "https://github.com/team/app");
    let roots = format!("{:?}", dir.path().join("bob/code").display().to_string());

    let made_there = Fleet::new(&[]);
    let web = theirs.join("web");
    let id = made_there.task_with(
        "Built where it was made?",
        &["touch ran-here", "close"],
        &["--cwd", web.to_str().unwrap()],
    );
    let runs_here = Fleet::new(&[("repo_roots", roots.as_str())]);
    let no_checkout = Fleet::new(&[("repo_roots", "\"/nonexistent\"")]);
    for fleet in [&made_there, &runs_here, &no_checkout] {
        fleet.ws.run(&["remote", "add", "origin", remote.to_str().unwrap()]).ok();
        fleet.ws.run(&["sync"]).ok();
    }
    made_there.ws.run(&["sync"]).ok();
    // Alice's machine is not this one: her path does not exist here.
    std::fs::remove_dir_all(dir.path().join("alice")).unwrap();

    for fleet in [&runs_here, &no_checkout] {
        fleet.ws.run(&["sync"]).ok();
    }
    let tasks = no_checkout.ws.json(&["tasks"]);
    let reason = tasks["not_here"][0]["reason"].as_str().unwrap_or_default().to_string();
    assert_eq!(tasks["not_here"][0]["id"], id.as_str(), "{tasks}");
    assert!(reason.contains("no checkout of github.com/team/app"), "{reason}");
    let human = no_checkout.ws.run(&["tasks"]).ok().stdout;
    assert!(human.contains(&format!("{id} not runnable here")), "{human}");
    let idle = no_checkout.run_until_idle(&[]).ok();
    let left = no_checkout.show(&id);
    assert_eq!(left["status"], "open", "{}", idle.stdout());
    assert_eq!(counter(&left, "attempts"), 0, "never claimed where it cannot run");

    runs_here.run_until_idle(&[]).ok();
    assert_eq!(runs_here.show(&id)["status"], "closed");
    assert!(ours.join("web/ran-here").exists(), "the agent ran in this machine's checkout");
    no_checkout.ws.run(&["sync"]).ok();
    runs_here.ws.run(&["sync"]).ok();
    no_checkout.ws.run(&["sync"]).ok();
    assert_eq!(no_checkout.show(&id)["status"], "closed");
    assert_eq!(no_checkout.show(&id)["fleet"]["repo"]["path"], "web");
}

/// Issue 29: `fleet run`'s periodic sync writes `.beads/issues.jsonl` when
/// `sync.export_jsonl` is on, as `fleet sync` does.
#[test]
fn the_supervisors_periodic_sync_exports_when_asked_to() {
    let fleet = Fleet::new(&[("sync_interval_secs", "1")]);
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remote.git");
    git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
    fleet.ws.run(&["remote", "add", "origin", remote.to_str().unwrap()]).ok();
    fleet.ws.run(&["bd", "config", "set", "sync.export_jsonl", "yes"]).ok();
    let id = fleet.task("Exported by the run's sync", &["close exported"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the close", |l| l.starts_with(&format!("✓ {id} closed: ")));
    let export = fleet.ws.beads_dir().join("issues.jsonl");
    supervisor.wait_until("the export of the closed task", || {
        let text = std::fs::read_to_string(&export).ok()?;
        text.lines().any(|l| l.contains(&id) && l.contains("\"closed\"")).then_some(())
    });
    supervisor.stop().ok();
}
