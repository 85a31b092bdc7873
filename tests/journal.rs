//! The git journal, run as a user runs it: `fleet journal commit/log/verify` and
//! `fleet rebuild` on the real binary, checked with the `git` program.
//!
//! Covers where the journal goes (the enclosing git repository, else `.beads/journal.git`),
//! what git sees on `refs/fleet/journal/<replica>`, verify passing and then naming the first
//! divergence after the ref is moved by hand, import committing at its end, and a rebuild
//! whose export is byte-identical to the original's.

mod common;

use std::path::{Path, PathBuf};

use common::{Workspace, git};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A mix of commands: create, update, dep add, comment, close, label.
fn make_history(ws: &Workspace) -> (String, String) {
    let a = ws.create("first", &["-p", "1"]);
    let b = ws.create("second", &[]);
    ws.run(&["update", &b, "--title", "second, renamed", "--status", "in_progress"]).ok();
    ws.run(&["dep", "add", &b, &a]).ok();
    ws.run(&["comment", &a, "a note"]).ok();
    ws.run(&["label", "add", &a, "urgent"]).ok();
    ws.run(&["close", &a, "--reason", "done"]).ok();
    (a, b)
}

/// The replica of the workspace's store: the replica of its newest journal batch.
fn replica_of(ws: &Workspace) -> String {
    let log = ws.json(&["journal", "log", "-n", "1"]);
    log[0]["replica"].as_str().expect("a replica").to_string()
}

fn export_all(ws: &Workspace) -> String {
    ws.run(&["export", "--all"]).ok().stdout
}

#[test]
fn a_workspace_in_no_repository_journals_into_its_own_bare_repository() {
    let ws = Workspace::new();
    make_history(&ws);
    let committed = ws.json(&["journal", "commit"]);
    assert_eq!(committed["ops"], 7, "{committed}");
    assert_eq!(committed["repo_kind"], "own");
    let own = ws.beads_dir().join("journal.git");
    assert!(own.join("HEAD").is_file(), "a bare repository at {}", own.display());

    let replica = replica_of(&ws);
    let reference = format!("refs/fleet/journal/{replica}");
    let log = git(&["-C", own.to_str().unwrap(), "log", "--format=%an <%ae>|%s", &reference]);
    assert_eq!(
        log.trim(),
        format!("{replica} <journal@fleet.invalid>|fleet journal: 7 ops, seq 1..7")
    );
    let ops = git(&["-C", own.to_str().unwrap(), "show", &format!("{reference}:ops.jsonl")]);
    let kinds: Vec<String> = ops
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["op"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["create", "create", "update", "dep_add", "comment", "label_add", "close"],
        "one line per op, in journal order"
    );
    let batch: Value = serde_json::from_str(&git(&[
        "-C",
        own.to_str().unwrap(),
        "show",
        &format!("{reference}:batch.json"),
    ]))
    .unwrap();
    assert_eq!(batch["count"], 7);
    assert_eq!(batch["format"], 1);

    // Nothing pending: a second commit writes nothing.
    let again = ws.json(&["journal", "commit"]);
    assert_eq!(again["ops"], 0);
    assert_eq!(again["commits"].as_array().unwrap().len(), 0);
    ws.run(&["journal", "verify"]).ok();
}

#[test]
fn a_workspace_inside_a_git_repository_journals_into_it() {
    let ws = Workspace::empty();
    let home = ws.home().to_str().unwrap().to_string();
    git(&["init", "-q", &home]);
    ws.run(&["init", "--prefix", "t"]).ok();
    make_history(&ws);
    let committed = ws.json(&["journal", "commit"]);
    assert_eq!(committed["repo_kind"], "enclosing", "{committed}");
    assert!(!ws.beads_dir().join("journal.git").exists());

    let replica = replica_of(&ws);
    let reference = format!("refs/fleet/journal/{replica}");
    let log = git(&["-C", &home, "log", "--oneline", &reference]);
    assert_eq!(log.lines().count(), 1, "{log}");
    // Only objects and refs were written: no index, no branch, HEAD still unborn. Beside the
    // journal, the workspace's settings (prefix, replica, configuration) for a rebuild.
    assert!(!ws.home().join(".git/index").exists());
    let refs = git(&["-C", &home, "for-each-ref", "--format=%(refname)"]);
    assert_eq!(
        refs.lines().collect::<Vec<_>>(),
        [reference.as_str(), "refs/fleet/settings/%2Ebeads"]
    );
    let settings: Value = serde_json::from_str(&git(&[
        "-C",
        &home,
        "show",
        "refs/fleet/settings/%2Ebeads:settings.json",
    ]))
    .unwrap();
    assert_eq!(
        (settings["prefix"].as_str(), settings["replica"].as_str()),
        (Some("t"), Some(replica.as_str()))
    );
    git(&["-C", &home, "fsck", "--no-dangling"]);
}

#[test]
fn log_shows_batches_newest_first() {
    let ws = Workspace::new();
    let (a, _) = make_history(&ws);
    ws.run(&["journal", "commit"]).ok();
    ws.run(&["reopen", &a]).ok();
    ws.run(&["journal", "commit"]).ok();
    let log = ws.json(&["journal", "log"]);
    let batches = log.as_array().unwrap();
    assert_eq!(batches.len(), 2, "{log}");
    assert_eq!(batches[0]["count"], 1);
    assert_eq!(batches[0]["first_seq"], 8);
    assert_eq!(batches[0]["parent"], batches[1]["commit"]);
    assert_eq!(batches[1]["count"], 7);
    assert!(batches[1].get("parent").is_none());
    assert_eq!(ws.json(&["journal", "log", "-n", "1"]).as_array().unwrap().len(), 1);
    let other = ws.json(&["journal", "log", "--replica", "nobody"]);
    assert_eq!(other.as_array().unwrap().len(), 0);
    let human = ws.run(&["journal", "log"]).ok().stdout;
    assert!(human.contains("1 op, seq 8..8"), "{human}");
}

#[test]
fn import_commits_the_journal_at_its_end() {
    let ws = Workspace::new();
    let fixture = fixture("beads-git-era-sample.jsonl");
    ws.run(&["import", fixture.to_str().unwrap()]).ok();
    let log = ws.json(&["journal", "log"]);
    let batches = log.as_array().unwrap();
    assert_eq!(batches.len(), 1, "{log}");
    // The import's records travel as one bulk op, in a format 2 batch.
    assert_eq!(batches[0]["count"], 1, "{log}");
    assert_eq!(batches[0]["format"], 2, "{log}");
    ws.run(&["journal", "verify"]).ok();
}

#[test]
fn verify_names_the_first_divergence_after_the_ref_is_moved() {
    let ws = Workspace::new();
    let (a, _) = make_history(&ws);
    ws.run(&["journal", "commit"]).ok();
    ws.run(&["reopen", &a]).ok();
    ws.run(&["journal", "commit"]).ok();
    let verified = ws.json(&["journal", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    assert_eq!(verified["journal_ops"], 8);
    assert_eq!(verified["commits"], 2);

    // Point the ref back at the first batch: the reopen is committed in the store's eyes,
    // but no longer in git.
    let log = ws.json(&["journal", "log"]);
    let first = log[1]["commit"].as_str().unwrap().to_string();
    let reference = format!("refs/fleet/journal/{}", log[0]["replica"].as_str().unwrap());
    let own = ws.beads_dir().join("journal.git");
    git(&["-C", own.to_str().unwrap(), "update-ref", &reference, &first]);

    let run = ws.run(&["journal", "verify", "--json"]).fails(1);
    let report = run.json();
    assert_eq!(report["ok"], false);
    let divergence = &report["divergence"];
    assert_eq!(divergence["position"], 8, "{report}");
    assert_eq!(divergence["seq"], 8);
    assert!(divergence["what"].as_str().unwrap().contains("(reopen)"), "{report}");
    let human = ws.run(&["journal", "verify"]).fails(1);
    assert!(human.stderr.contains("at op #8, seq 8"), "{}", human.stderr);

    // A ref moved to a commit that is no journal batch at all.
    let stray = git(&["-C", own.to_str().unwrap(), "commit-tree", "-m", "stray", &tree_of(&own)]);
    git(&["-C", own.to_str().unwrap(), "update-ref", &reference, stray.trim()]);
    let run = ws.run(&["journal", "verify", "--json"]).fails(1);
    let what = run.json()["divergence"]["what"].as_str().unwrap().to_string();
    assert!(what.contains("not a journal batch") && what.contains(stray.trim()), "{what}");
}

/// The empty tree, written into `repo`.
fn tree_of(repo: &Path) -> String {
    git(&["-C", repo.to_str().unwrap(), "mktree"]).trim().to_string()
}

#[test]
fn rebuild_gives_a_store_that_exports_byte_identically() {
    let ws = Workspace::new();
    let fixture = fixture("fleet-own-issues.jsonl");
    ws.run(&["import", fixture.to_str().unwrap()]).ok();
    let memories = ws.home().join("memories.jsonl");
    std::fs::write(&memories, "{\"_type\":\"memory\",\"key\":\"style\",\"value\":\"terse\"}\n")
        .unwrap();
    ws.run(&["import", memories.to_str().unwrap()]).ok();
    make_history(&ws);
    ws.run(&["journal", "commit"]).ok();
    let before = export_all(&ws);
    assert!(before.contains("\"_type\":\"memory\""), "the memory is exported");

    let report = ws.json(&["rebuild"]);
    assert_eq!(report["rejected"].as_array().unwrap().len(), 0, "{report}");
    assert_eq!(report["applied"], report["ops"]);
    assert_eq!(report["config_values"], 1);
    let backup = PathBuf::from(report["backup"].as_str().unwrap());
    assert!(backup.is_file(), "the old store is kept at {}", backup.display());
    assert_eq!(export_all(&ws), before, "the rebuilt store exports the same bytes");

    // The rebuilt store carries on: same prefix, same replica, journal in agreement.
    ws.run(&["journal", "verify"]).ok();
    let id = ws.create("after the rebuild", &[]);
    assert!(id.starts_with("t-"), "the prefix carried over: {id}");
    let committed = ws.json(&["journal", "commit"]);
    assert_eq!(committed["ops"], 1, "{committed}");
    assert_eq!(
        ws.json(&["journal", "log"]).as_array().unwrap().len(),
        3,
        "the fixture import, the history, the create after"
    );
}

/// A rebuild of a healthy store first commits what it has pending, so nothing is lost;
/// `--force` rebuilds without those ops (they stay in the kept file).
#[test]
fn rebuild_commits_what_is_pending_first() {
    let ws = Workspace::new();
    let (a, _) = make_history(&ws);
    ws.run(&["journal", "commit"]).ok();
    ws.run(&["reopen", &a]).ok();
    let before = export_all(&ws);
    let rebuilt = ws.json(&["rebuild"]);
    assert_eq!(rebuilt["committed_first"], 1, "{rebuilt}");
    assert_eq!(export_all(&ws), before, "the reopen is in the rebuilt store");
    ws.run(&["journal", "verify"]).ok();

    ws.run(&["close", &a]).ok();
    let forced = ws.json(&["rebuild", "--force"]);
    assert_eq!(
        (forced["uncommitted"].clone(), forced["committed_first"].clone()),
        (1.into(), 0.into())
    );
    // The close is gone from the rebuilt store: the issue is open again.
    let shown = ws.json(&["show", &a]);
    let issue = if shown.is_array() { shown[0].clone() } else { shown };
    assert_eq!(issue["status"], "open", "{issue}");
}

#[test]
fn a_damaged_store_is_named_by_doctor_and_rebuilt_whole_from_the_journal() {
    let ws = Workspace::new();
    let (a, _) = make_history(&ws);
    for n in 0..20 {
        ws.create(&format!("filler issue number {n} with a findable title"), &[]);
    }
    ws.run(&["journal", "commit"]).ok();
    let before = export_all(&ws);
    // Break one issue's row: a control character inside its JSON.
    let db = ws.beads_dir().join("beads.db");
    // The title is in the issue's row and in its op in the store's journal table: break both.
    let mut bytes = std::fs::read(&db).unwrap();
    let needle = b"filler issue number 7 ";
    let places: Vec<usize> = bytes
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert!(!places.is_empty(), "the title is in the file");
    for at in places {
        bytes[at - 3] = 0x01;
    }
    std::fs::write(&db, bytes).unwrap();

    let doctor = ws.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{}{}", doctor.stdout, doctor.stderr);
    // The control character breaks the row's checksum before its JSON.
    assert!(doctor.stdout.contains("does not match its checksum"), "{}", doctor.stdout);
    assert!(doctor.stdout.contains("fleet rebuild"), "the fix is named: {}", doctor.stdout);

    ws.run(&["rebuild", "--force"]).ok();
    assert_eq!(export_all(&ws), before, "every issue the journal holds is back, byte for byte");
    let report: serde_json::Value =
        serde_json::from_str(&ws.run(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(report["healthy"], true, "the store is healthy again: {report:#}");
    assert_eq!(ws.json(&["show", &a])[0]["status"], "closed");
}

/// Runs `fleet ARGS` with the journal committer on (a 1 s delay), as a user's shell runs it.
fn with_committer(ws: &Workspace, args: &[&str]) -> common::Run {
    let mut command = ws.command(args);
    command.env("FLEET_JOURNAL_COMMIT_SECS", "1");
    common::Run::from(command.output().expect("run fleet")).ok()
}

/// The number of ops on the journal refs of the git repository `home`.
fn ops_in_git(home: &str) -> usize {
    let refs = git(&["-C", home, "for-each-ref", "--format=%(refname)", "refs/fleet/journal/"]);
    refs.lines()
        .map(|reference| {
            let ops = git(&["-C", home, "log", "--format=%H", reference]);
            ops.lines()
                .map(|commit| {
                    let blob = git(&["-C", home, "show", &format!("{commit}:ops.jsonl")]);
                    blob.lines().count()
                })
                .sum::<usize>()
        })
        .sum()
}

/// With no supervisor and no sync, the ops of plain commands (fleet and bd) reach git within
/// the commit delay: a tidy-up that then deletes the store (`git clean -fdX`) loses nothing,
/// and `fleet rebuild` brings every issue back.
#[test]
fn writes_reach_git_within_the_commit_delay_without_a_supervisor() {
    let ws = Workspace::empty();
    let home = ws.home().to_str().unwrap().to_string();
    git(&["init", "-q", &home]);
    ws.run(&["init", "--prefix", "t"]).ok();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(with_committer(&ws, &["create", &format!("task {n}"), "--silent"]).stdout);
    }
    ids.push(with_committer(&ws, &["bd", "create", "from bd", "--silent"]).stdout);
    with_committer(&ws, &["close", ids[0].trim()]);
    common::poll_until("the ops to reach git", std::time::Duration::from_secs(60), || {
        (ops_in_git(&home) >= 5).then_some(())
    });
    let before = export_all(&ws);

    git(&["-C", &home, "clean", "-q", "-f", "-d", "-X"]);
    assert!(!ws.beads_dir().join("beads.db").exists(), "the tidy-up took the store");
    let gone = ws.run(&["list"]).fails(1);
    assert!(gone.stderr.contains("fleet rebuild"), "{}", gone.stderr);
    ws.run(&["rebuild"]).ok();
    assert_eq!(export_all(&ws), before, "every issue is back");
}

/// After a rebuild, `journal verify` agrees: the replica's own claim that lost to an earlier
/// one made elsewhere is on its ref but (refused in the total order) not in the rebuilt
/// store's journal, which is no divergence.
#[test]
fn verify_agrees_after_a_rebuild_in_which_a_claim_lost() {
    let fleet = common::remote::Fleet::new(2);
    let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
    let id = a.create("wanted by both", &[]);
    fleet.sync(0);
    fleet.sync(1);
    common::Run::from(a.command(&["claim", &id]).env("FLEET_ACTOR", "alice").output().unwrap())
        .ok();
    common::Run::from(b.command(&["claim", &id]).env("FLEET_ACTOR", "bob").output().unwrap()).ok();
    fleet.sync(0);
    let lost = fleet.sync(1);
    assert_eq!(lost["lost_claims"], serde_json::json!([id]), "{lost}");
    b.run(&["journal", "verify"]).ok();
    let rebuilt = b.json(&["rebuild"]);
    assert_eq!(rebuilt["rejected"], serde_json::json!([]), "{rebuilt}");
    let verified = b.json(&["journal", "verify"]);
    assert_eq!(verified["ok"], true, "{verified}");
    assert!(verified["records"].as_u64().unwrap() >= 1, "{verified}");
}

/// A stored record whose text no longer matches its ops (here: a letter of an imported
/// issue's description changed in the store file, where the import's op is kept deflated) is
/// damage every read and `journal verify` name, with the issue.
#[test]
fn verify_finds_a_stored_record_whose_text_no_longer_matches_its_ops() {
    let ws = Workspace::new();
    let line = r#"{"id":"t-k2m","title":"imported","description":"alpha bravo charlie","status":"open","priority":2,"issue_type":"task","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}"#;
    let file = ws.home().join("one.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    ws.run(&["import", file.to_str().unwrap()]).ok();
    ws.create("made here", &["-d", "delta echo"]);
    ws.run(&["journal", "commit"]).ok();
    let agreed = ws.json(&["journal", "verify"]);
    assert_eq!(agreed["ok"], true, "{agreed}");

    // The issue's record (and the ready index's copy of it) start with its id; in the op that
    // made it, the same JSON is nested after a key. Only the records change.
    let db = ws.beads_dir().join("beads.db");
    let mut bytes = std::fs::read(&db).unwrap();
    let (record, text) = (br#"{"id":"t-k2m""#, b"alpha bravo charlie");
    let mut changed = 0;
    for at in 1..bytes.len().saturating_sub(record.len()) {
        if &bytes[at..at + record.len()] != record || bytes[at - 1] == b':' {
            continue;
        }
        let end = (at + 400).min(bytes.len());
        if let Some(found) = bytes[at..end].windows(text.len()).position(|w| w == text) {
            bytes[at + found] = b'A';
            changed += 1;
        }
    }
    assert!(changed > 0, "the record is in the store file as text");
    std::fs::write(&db, bytes).unwrap();
    // Issue 28: the record's checksum no longer matches, so the store never serves the
    // change (it did before, and only this comparison found it): reads and `journal verify`
    // name the record as damaged, with the fix.
    let shown = ws.run(&["show", "t-k2m"]).fails(1);
    assert!(
        shown.stderr.contains("issue t-k2m: its row does not match its checksum"),
        "{}",
        shown.stderr
    );
    assert_eq!(agreed["records"], 2, "both records were compared before: {agreed}");
    let failed = ws.run(&["journal", "verify"]).fails(1);
    assert!(
        failed.stderr.contains("t-k2m") && failed.stderr.contains("fleet doctor"),
        "{}",
        failed.stderr
    );
}

/// The `journal repository` entry of `fleet doctor --json`.
fn journal_entry(ws: &Workspace) -> Value {
    let report: Value = serde_json::from_str(&ws.run(&["doctor", "--json"]).stdout).unwrap();
    let setup = report["setup"].as_array().unwrap();
    let entry = setup.iter().find(|c| c["subject"] == "journal repository");
    entry.cloned().unwrap_or_else(|| panic!("doctor checks the journal repository: {report:#}"))
}

/// Whether a making directory of the journal repository is left in the workspace.
fn making_left(ws: &Workspace) -> Vec<String> {
    std::fs::read_dir(ws.beads_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".journal.git.making-"))
        .collect()
}

/// Issue 28: a process killed (kill -9) after making the journal repository aside and before
/// renaming it into place leaves no `journal.git`: the next commit makes it whole, removes
/// the dead maker's directory, and doctor finds the repository readable.
#[test]
fn a_kill_while_making_the_journal_repository_leaves_nothing_half_made() {
    let ws = Workspace::new();
    ws.create("first", &[]);
    let killed =
        ws.command(&["journal", "commit"]).env("FLEET_FAULT", "journal-made-aside").output();
    let killed = killed.unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(killed.status.signal(), Some(libc::SIGKILL), "the fault point was reached");
    assert!(!ws.beads_dir().join("journal.git").exists(), "nothing is in place yet");
    assert_eq!(making_left(&ws).len(), 1, "the killed maker's directory is left");

    ws.run(&["journal", "commit"]).ok();
    assert!(making_left(&ws).is_empty(), "{:?}", making_left(&ws));
    assert_eq!(ws.json(&["journal", "log"]).as_array().unwrap().len(), 1);
    let entry = journal_entry(&ws);
    assert_eq!(entry["status"], "ok", "{entry}");
}

/// Issue 28: real kills at random moments of a first commit (which makes the journal
/// repository) never leave a repository that later commits fail on: after each, a commit
/// succeeds and the journal holds the op. (`FLEET_KILLS` runs, 12 by default.)
#[test]
fn kills_at_random_moments_of_the_first_commit_never_break_the_journal() {
    let runs = std::env::var("FLEET_KILLS").ok().and_then(|n| n.parse().ok()).unwrap_or(12);
    let mut seed: u64 = 0x2828;
    let mut interrupted = 0;
    for _ in 0..runs {
        let ws = Workspace::new();
        ws.create("first", &[]);
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut child = ws.command(&["journal", "commit"]).spawn().unwrap();
        // A moment inside the command's life: the process starts, opens the store, makes the
        // repository and commits within a few tens of milliseconds.
        std::thread::sleep(std::time::Duration::from_micros((seed >> 33) % 40_000));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if !status.success() {
            interrupted += 1;
        }
        let after = ws.run(&["journal", "commit"]);
        assert_eq!(after.code, 0, "a commit after the kill: {}", after.stderr);
        assert_eq!(ws.json(&["journal", "log"]).as_array().unwrap().len(), 1);
        assert_eq!(journal_entry(&ws)["status"], "ok");
    }
    eprintln!(
        "{runs} first commits, {interrupted} killed before they ended: the journal works after each"
    );
}

/// Issue 28: a journal repository whose making was cut short by an older fleet (a full disk
/// left only `info/`) fails every commit; doctor names it with the fix, and after the fix a
/// commit makes it again.
#[test]
fn a_half_made_journal_repository_is_named_by_doctor_with_its_fix() {
    let ws = Workspace::new();
    ws.create("first", &[]);
    let repo = ws.beads_dir().join("journal.git");
    std::fs::create_dir_all(repo.join("info")).unwrap();
    std::fs::write(repo.join("info").join("exclude"), "").unwrap();
    let failed = ws.run(&["journal", "commit"]);
    assert_eq!(failed.code, 1, "{}", failed.stderr);

    let entry = journal_entry(&ws);
    assert_eq!(entry["status"], "problem", "{entry}");
    let fix = entry["fix"].as_str().unwrap();
    assert!(fix.contains(&format!("rm -r {}", repo.display())), "{fix}");
    std::fs::remove_dir_all(&repo).unwrap();
    ws.run(&["journal", "commit"]).ok();
    assert_eq!(journal_entry(&ws)["status"], "ok");
}

/// Issue 28: a writer killed inside its edit of the journal ref leaves git's lock file of the
/// ref (`<ref>.lock`), on which every later commit failed ("Could not prepare reference edit",
/// found by the random kills above). Fleet's writers hold a lock of their own around each ref
/// edit, so a ref lock file found under it is a dead writer's: the next commit goes through.
#[test]
fn a_ref_lock_left_by_a_killed_writer_does_not_stop_later_commits() {
    let ws = Workspace::new();
    ws.create("first", &[]);
    ws.run(&["journal", "commit"]).ok();
    let replica = ws.json(&["journal", "log"])[0]["replica"].as_str().unwrap().to_string();
    let refs = ws.beads_dir().join("journal.git/refs/fleet/journal");
    std::fs::write(refs.join(format!("{replica}.lock")), "").unwrap();
    ws.create("second", &[]);
    ws.run(&["journal", "commit"]).ok();
    assert_eq!(ws.json(&["journal", "log"]).as_array().unwrap().len(), 2);
    assert!(!refs.join(format!("{replica}.lock")).exists());
}
