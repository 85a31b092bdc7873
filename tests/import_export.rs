//! `fleet import` and `fleet export`, run as a user runs them: the real binary in a throwaway
//! FLEET_HOME with a cleared environment and a pinned clock.
//!
//! Covers both beads eras and fleet's own queue (tests/fixtures), the upsert rules of
//! `bd import` (stale rows, label unions, comment dedupe, dependency checks), the
//! all-or-nothing transaction, legacy SQLite databases, Dolt workspaces, Python-fleet homes,
//! byte-stable round trips and auto-export.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{Run, Workspace};
use serde_json::{Value, json};

const NOW: &str = "2026-06-01T12:00:00Z";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A FLEET_HOME, initialised or not, whose commands run at the pinned time [`NOW`].
struct Home {
    ws: Workspace,
}

impl Home {
    /// No workspace yet: the first import creates it.
    fn empty() -> Home {
        Home { ws: Workspace::empty() }
    }

    fn initialised(prefix: &str) -> Home {
        let home = Home::empty();
        home.run(&["init", "--prefix", prefix]).ok();
        home
    }

    fn path(&self) -> &Path {
        self.ws.home()
    }

    fn beads(&self) -> PathBuf {
        self.ws.beads_dir()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.ws.command(args);
        cmd.env("FLEET_TEST_NOW", NOW);
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.command(args))
    }

    fn run_with(&self, mut cmd: Command) -> Run {
        cmd.output().expect("run fleet").into()
    }

    /// `fleet import … --json`, which must succeed; returns the report.
    #[track_caller]
    fn import(&self, path: &Path, extra: &[&str]) -> Value {
        let path = path.display().to_string();
        let mut args = vec!["import", path.as_str(), "--json"];
        args.extend_from_slice(extra);
        self.run(&args).ok().json()
    }

    /// Writes `lines` to a file in the home and returns its path.
    fn write(&self, name: &str, lines: &[Value]) -> PathBuf {
        let path = self.path().join(name);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).expect("write input");
        path
    }

    /// `fleet export --all` to stdout.
    fn export_all(&self) -> String {
        self.run(&["export", "--all", "--include-paths"]).ok().stdout
    }

    /// The exported issue lines keyed by id.
    fn exported(&self) -> BTreeMap<String, Value> {
        self.export_all()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("export line is JSON"))
            .filter(|v| v["_type"] == "issue")
            .map(|v| (v["id"].as_str().unwrap().to_string(), v))
            .collect()
    }

    fn show(&self, id: &str) -> Value {
        let shown = self.run(&["show", id, "--json"]).ok().json();
        // `show` prints an array, as bd does; older builds printed the object.
        if shown.is_array() { shown[0].clone() } else { shown }
    }

    fn issue_ids(&self) -> Vec<String> {
        self.exported().into_keys().collect()
    }
}

fn issue(id: &str, title: &str, updated: &str) -> Value {
    json!({"id": id, "title": title, "status": "open", "priority": 2, "issue_type": "task",
           "created_at": "2026-01-01T00:00:00Z", "updated_at": updated})
}

fn skipped(report: &Value) -> Vec<(String, String, String)> {
    report["skipped_dependencies"]
        .as_array()
        .expect("skipped_dependencies")
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap().to_string();
            (text("issue_id"), text("depends_on_id"), text("reason"))
        })
        .collect()
}

#[test]
fn git_era_fixture_imports_into_a_new_workspace() {
    let home = Home::empty();
    let run = home.run(&["import", fixture("beads-git-era-sample.jsonl").to_str().unwrap()]).ok();
    assert!(run.stderr.contains("Found a JSONL file"), "{}", run.stderr);
    assert!(run.stderr.contains("Created workspace"), "{}", run.stderr);
    assert!(run.stderr.contains("Imported 30 issues from"), "{}", run.stderr);
    assert!(run.stderr.contains("tombstones skipped: 10"), "{}", run.stderr);
    assert!(
        run.stderr.contains("Skipped dependency: bd-0088 -> bd-44d0: target not found"),
        "{}",
        run.stderr
    );
    let ids = home.issue_ids();
    assert_eq!(ids.len(), 30);
    // The prefix was taken from the first id, so a new issue gets it too.
    let created = home.run(&["create", "new one", "--silent"]).ok();
    assert!(created.stdout.starts_with("bd-"), "{}", created.stdout);
    // Local-offset nanosecond times come back in UTC.
    let first = &home.exported()["bd-0088"];
    assert_eq!(first["created_at"], "2025-11-03T05:58:07.295058Z");
}

#[test]
fn dolt_era_fixture_keeps_statuses_labels_and_legacy_keys() {
    let home = Home::initialised("bd");
    let report = home.import(&fixture("beads-dolt-era-sample.jsonl"), &[]);
    assert_eq!(report["created"], 25);
    assert_eq!(report["kind"], "jsonl");
    let skips = skipped(&report);
    assert!(skips.iter().all(|(_, _, reason)| reason == "target not found"), "{skips:?}");
    // The external and cross-project edge is kept as a foreign reference.
    assert!(!skips.iter().any(|(from, _, _)| from == "hq-cv-d46qe"));
    let exported = home.exported();
    assert_eq!(exported["bd-xmf"]["status"], "hooked");
    assert_eq!(exported["bd-pr-sheriff"]["pinned"], true);
    assert_eq!(
        exported["hq-cv-d46qe"]["dependencies"][0]["depends_on_id"],
        "external:gastown:gt-5kjn"
    );
    let labelled = &exported["bd-xq2"]["labels"];
    assert_eq!(
        labelled,
        &json!(["plugin:rebuild-gt", "result:success", "rig:gastown", "type:plugin-run"])
    );
    let legacy =
        exported.values().find(|v| v.get("agent_state").is_some()).expect("agent_state kept");
    assert_eq!(legacy["agent_state"], "idle");
    assert_eq!(legacy["last_activity"], "2026-02-28T00:41:05Z");
    // Ephemeral issues are left out of a default export, as bd does.
    let default_ids: Vec<String> = home
        .run(&["export"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    assert!(default_ids.iter().all(|id| exported[id]["ephemeral"] != true));
    assert!(default_ids.len() < exported.len());
}

#[test]
fn fleet_own_issues_export_byte_for_byte_as_beads_wrote_them() {
    let home = Home::empty();
    let report = home.import(&fixture("fleet-own-issues.jsonl"), &[]);
    assert_eq!(report["created"], 9);
    assert_eq!(report["comments_added"], 62);
    assert_eq!(report["initialized_prefix"], "fleet");
    let exported: BTreeMap<String, String> = home
        .run(&["export"])
        .ok()
        .stdout
        .lines()
        .map(|l| {
            (
                serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string(),
                l.to_string(),
            )
        })
        .collect();
    let original = std::fs::read_to_string(fixture("fleet-own-issues.jsonl")).unwrap();
    for line in original.lines() {
        let id = serde_json::from_str::<Value>(line).unwrap()["id"].as_str().unwrap().to_string();
        assert_eq!(exported[&id], line, "line of {id} differs");
    }
}

#[test]
fn reimport_is_idempotent_and_comments_are_not_duplicated() {
    let home = Home::empty();
    home.import(&fixture("fleet-own-issues.jsonl"), &[]);
    let before = home.export_all();
    let again = home.import(&fixture("fleet-own-issues.jsonl"), &[]);
    assert_eq!(again["created"], 0);
    assert_eq!(again["updated"], 0);
    assert_eq!(again["unchanged"], 9);
    assert_eq!(again["comments_added"], 0);
    assert_eq!(again["comments_duplicate"], 62);
    assert_eq!(home.export_all(), before);
}

/// The import's counters (comment numbers, ids made, issues per status) reach the store: a
/// comment added afterwards joins the imported ones instead of replacing one, a new issue
/// gets an id of its own, and the status counts match the issues.
#[test]
fn writes_after_an_import_build_on_its_counters() {
    let home = Home::empty();
    home.import(&fixture("fleet-own-issues.jsonl"), &[]);
    let comments =
        |id: &str| home.run(&["comments", id, "--json"]).json().as_array().unwrap().len();
    assert_eq!(comments("fleet-ca4"), 2);
    home.run(&["comment", "fleet-ca4", "added after the import"]).ok();
    assert_eq!(comments("fleet-ca4"), 3);
    // (The issue counter after a bulk import: `store::tests::a_bulk_import_counts_its_issues`;
    // a create here could not show it, as new ids skip taken ones whatever the counter says.)
    // The store's own checks (setup checks of coders' CLIs aside) agree with a rebuild.
    let doctor = home.run_with(home.command(&["doctor", "--json"])).json();
    assert_eq!(doctor["healthy"], true, "{doctor}");
}

/// The same import run twice at once where no workspace exists yet: one creates it, the other
/// imports into it (its records already there), and both succeed.
#[test]
fn two_imports_at_once_into_no_workspace_both_succeed() {
    let home = Home::empty();
    let file = fixture("fleet-own-issues.jsonl");
    let imports = (0..2).map(|_| home.command(&["import", file.to_str().unwrap(), "--json"]));
    let reports: Vec<Value> = common::all_succeed(imports, "import")
        .iter()
        .map(|output| serde_json::from_slice(&output.stdout).unwrap())
        .collect();
    // One created the nine issues; the other found them there (or, had it run after, the
    // same).
    let mut created: Vec<_> = reports.iter().map(|r| r["created"].as_u64().unwrap()).collect();
    created.sort_unstable();
    assert_eq!(created, [0, 9], "{reports:?}");
    assert_eq!(
        home.run(&["list", "--all", "-n", "0", "--json"]).json().as_array().unwrap().len(),
        9
    );
    let comments = home.run(&["comments", "fleet-ca4", "--json"]).json();
    assert_eq!(comments.as_array().unwrap().len(), 2, "no comment twice: {comments}");
}

/// An import killed between making the workspace's store and writing the files beside it
/// left them out: the next import into that workspace writes them, and changes a
/// `.gitignore` that is there no further.
#[test]
fn an_import_writes_the_missing_files_of_a_half_made_workspace() {
    let home = Home::empty();
    let file = fixture("fleet-own-issues.jsonl");
    home.run(&["import", file.to_str().unwrap()]).ok();
    let beads = home.path().join(".beads");
    let gitignore = std::fs::read_to_string(beads.join(".gitignore")).unwrap();
    let metadata = std::fs::read_to_string(beads.join("metadata.json")).unwrap();
    std::fs::remove_file(beads.join(".gitignore")).unwrap();
    std::fs::remove_file(beads.join("metadata.json")).unwrap();
    home.run(&["import", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(beads.join(".gitignore")).unwrap(), gitignore);
    assert_eq!(std::fs::read_to_string(beads.join("metadata.json")).unwrap(), metadata);
    // A dry run writes nothing, and a .gitignore of the user's own stays as it is.
    std::fs::remove_file(beads.join("metadata.json")).unwrap();
    std::fs::write(beads.join(".gitignore"), "mine\n").unwrap();
    home.run(&["import", file.to_str().unwrap(), "--dry-run"]).ok();
    assert!(!beads.join("metadata.json").exists());
    home.run(&["import", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read_to_string(beads.join(".gitignore")).unwrap(), "mine\n");
    assert!(beads.join("metadata.json").is_file());
}

#[test]
fn stale_rows_are_skipped_and_labels_are_unioned() {
    let home = Home::initialised("t");
    let mut first = issue("t-1", "first title", "2026-02-01T00:00:00Z");
    first["labels"] = json!(["alpha"]);
    home.import(&home.write("a.jsonl", &[first]), &[]);

    let mut stale = issue("t-1", "stale title", "2026-01-15T00:00:00Z");
    stale["labels"] = json!(["stale-label"]);
    let report = home.import(&home.write("b.jsonl", &[stale]), &[]);
    assert_eq!(report["stale_skipped"], 1);
    assert_eq!(report["stale_skipped_ids"], json!(["t-1"]));
    assert_eq!(home.show("t-1")["title"], "first title");

    let mut newer = issue("t-1", "newer title", "2026-03-01T00:00:00Z");
    newer["labels"] = json!(["beta"]);
    let report = home.import(&home.write("c.jsonl", &[newer]), &[]);
    assert_eq!(report["updated"], 1);
    let shown = home.show("t-1");
    assert_eq!(shown["title"], "newer title");
    assert_eq!(shown["labels"], json!(["alpha", "beta"]));
}

#[test]
fn comments_are_deduplicated_by_author_time_and_text() {
    let home = Home::initialised("t");
    let comment = |id: Value, text: &str| json!({"id": id, "issue_id": "t-1", "author": "a", "text": text, "created_at": "2026-01-02T00:00:00-05:00"});
    let mut line = issue("t-1", "x", "2026-02-01T00:00:00Z");
    line["comments"] = json!([comment(json!(1), "one"), comment(json!("c-2"), "two")]);
    assert_eq!(home.import(&home.write("a.jsonl", &[line.clone()]), &[])["comments_added"], 2);
    // The same comments (even under other ids and another spelling of the time) plus one new.
    line["comments"] = json!([
        comment(json!(9), "one"),
        json!({"id": "x", "author": "a", "text": "two", "created_at": "2026-01-02T05:00:00Z"}),
        comment(json!(3), "three")
    ]);
    let report = home.import(&home.write("b.jsonl", &[line]), &[]);
    assert_eq!(report["comments_added"], 1);
    assert_eq!(report["comments_duplicate"], 2);
    let exported = &home.exported()["t-1"];
    assert_eq!(exported["comment_count"], 3);
    let ids: Vec<&Value> =
        exported["comments"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    // Same time, so by id; integer ids stay integers, string ids strings.
    assert_eq!(ids, [&json!(1), &json!(3), &json!("c-2")]);
}

#[test]
fn dependencies_to_missing_targets_and_cycles_are_reported_and_skipped() {
    let home = Home::initialised("t");
    let dep = |from: &str, to: &str, kind: &str| json!({"issue_id": from, "depends_on_id": to, "type": kind, "created_at": "2026-01-01T00:00:00Z"});
    let mut a = issue("t-a", "a", "2026-01-01T00:00:00Z");
    a["dependencies"] = json!([dep("t-a", "t-b", "blocks"), dep("t-a", "t-gone", "blocks")]);
    let mut b = issue("t-b", "b", "2026-01-01T00:00:00Z");
    b["dependencies"] = json!([
        dep("t-b", "t-c", "blocks"),
        dep("t-b", "other-x1", "related"),
        dep("t-b", "t-c", "related")
    ]);
    let mut c = issue("t-c", "c", "2026-01-01T00:00:00Z");
    c["dependencies"] = json!([
        dep("t-c", "t-a", "blocks"),
        dep("t-c", "t-a", "related"),
        dep("t-c", "external:proj:cap", "tracks")
    ]);
    let mut p = issue("t-p", "parent", "2026-01-01T00:00:00Z");
    p["dependencies"] = json!([dep("t-p", "t-p.1", "parent-child")]);
    let mut child = issue("t-p.1", "child", "2026-01-01T00:00:00Z");
    child["dependencies"] = json!([dep("t-p.1", "t-p", "parent-child")]);
    let report = home.import(&home.write("deps.jsonl", &[a, b, c, p, child]), &[]);
    let skips = skipped(&report);
    assert!(
        skips.contains(&("t-a".into(), "t-gone".into(), "target not found".into())),
        "{skips:?}"
    );
    assert!(
        skips.contains(&("t-c".into(), "t-a".into(), "would create a cycle".into())),
        "{skips:?}"
    );
    assert!(
        skips.contains(&(
            "t-b".into(),
            "t-c".into(),
            "t-b already depends on t-c as blocks".into()
        )),
        "{skips:?}"
    );
    assert!(
        skips.contains(&("t-p.1".into(), "t-p".into(), "would create a cycle".into())),
        "{skips:?}"
    );
    assert_eq!(skips.len(), 4, "{skips:?}");
    // a→b, b→c, b→other-x1 (another project's id), c→a (related: never cycle-checked),
    // c→external, p→p.1.
    assert_eq!(report["dependencies_added"], 6);
    let run = home.run(&["import", home.path().join("deps.jsonl").to_str().unwrap()]).ok();
    assert!(
        run.stderr.contains("Skipped dependency: t-a -> t-gone: target not found"),
        "{}",
        run.stderr
    );
    // Readiness saw the edges: t-b is blocked by t-c, t-a by t-b.
    let blocked: Vec<String> = home
        .run(&["blocked", "--json"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        blocked.contains(&"t-a".to_string()) && blocked.contains(&"t-b".to_string()),
        "{blocked:?}"
    );
    assert!(!blocked.contains(&"t-c".to_string()), "{blocked:?}");
    let exported = home.exported();
    assert_eq!(exported["t-p"]["dependencies"][0]["depends_on_id"], "t-p.1");
    assert_eq!(exported["t-p.1"]["dependent_count"], 1);
    assert_eq!(exported["t-c"]["dependencies"][0]["depends_on_id"], "external:proj:cap");
}

/// An edge listed again for the same issue — on the same line, or on a later line of the
/// same id — is one edge, the later copy's; a different type for the same pair is skipped.
#[test]
fn an_edge_repeated_in_the_batch_keeps_the_later_copy() {
    let home = Home::initialised("t");
    let dep = |to: &str, kind: &str, n: u32| {
        json!({"issue_id": "t-a", "depends_on_id": to,
        "type": kind, "created_at": "2026-01-01T00:00:00Z", "metadata": format!("{{\"n\":{n}}}")})
    };
    let mut first = issue("t-a", "a", "2026-01-01T00:00:00Z");
    first["dependencies"] = json!([dep("t-b", "blocks", 1), dep("t-c", "related", 1)]);
    let mut again = issue("t-a", "a again", "2026-01-02T00:00:00Z");
    again["dependencies"] =
        json!([dep("t-b", "blocks", 2), dep("t-c", "related", 2), dep("t-c", "related", 3)]);
    let mut third = issue("t-a", "a once more", "2026-01-03T00:00:00Z");
    third["dependencies"] = json!([dep("t-b", "tracks", 4)]);
    let b = issue("t-b", "b", "2026-01-01T00:00:00Z");
    let c = issue("t-c", "c", "2026-01-01T00:00:00Z");
    let report = home.import(&home.write("again.jsonl", &[first, b, again, c, third]), &[]);
    assert_eq!(
        skipped(&report),
        [("t-a".into(), "t-b".into(), "t-a already depends on t-b as blocks".into())]
    );
    assert_eq!(report["dependencies_added"], 2, "{report}");
    let exported = home.exported();
    let edges: Vec<(String, String, String)> = exported["t-a"]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let text = |k: &str| d[k].as_str().unwrap().to_string();
            (text("depends_on_id"), text("type"), text("metadata"))
        })
        .collect();
    assert_eq!(
        edges,
        [
            ("t-b".into(), "blocks".into(), r#"{"n":2}"#.into()),
            ("t-c".into(), "related".into(), r#"{"n":3}"#.into())
        ]
    );
    assert_eq!(exported["t-a"]["title"], "a once more");
    assert_eq!(exported["t-a"]["dependency_count"], 2);
}

/// The same for an issue with many edges, whose repeats are found another way.
#[test]
fn an_edge_repeated_among_many_keeps_the_later_copy() {
    let home = Home::initialised("t");
    let dep = |to: String, kind: &str, n: u32| {
        json!({"issue_id": "t-hub", "depends_on_id": to,
        "type": kind, "created_at": "2026-01-01T00:00:00Z", "metadata": format!("{{\"n\":{n}}}")})
    };
    let mut lines: Vec<Value> =
        (0..40).map(|n| issue(&format!("t-{n}"), "target", "2026-01-01T00:00:00Z")).collect();
    let mut deps: Vec<Value> = (0..40).map(|n| dep(format!("t-{n}"), "related", 1)).collect();
    deps.push(dep("t-5".into(), "related", 2));
    deps.push(dep("t-7".into(), "tracks", 3));
    let mut hub = issue("t-hub", "hub", "2026-01-01T00:00:00Z");
    hub["dependencies"] = Value::Array(deps);
    lines.push(hub);
    let report = home.import(&home.write("hub.jsonl", &lines), &[]);
    assert_eq!(
        skipped(&report),
        [("t-hub".into(), "t-7".into(), "t-hub already depends on t-7 as related".into())]
    );
    assert_eq!(report["dependencies_added"], 40, "{report}");
    let exported = home.exported();
    let to_5: Vec<&Value> = exported["t-hub"]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["depends_on_id"] == "t-5")
        .collect();
    assert_eq!(to_5.len(), 1);
    assert_eq!(to_5[0]["metadata"], r#"{"n":2}"#);
    assert_eq!(exported["t-hub"]["dependency_count"], 40);
}

#[test]
fn memories_and_schema_headers() {
    let home = Home::initialised("t");
    let lines = [
        json!({"_schema": "beads-jsonl/1", "_dolt_branch": "main"}),
        json!({"_type": "memory", "key": "zeta", "value": "last"}),
        issue("t-1", "x", "2026-01-01T00:00:00Z"),
        json!({"_type": "memory", "key": "alpha", "value": "first"}),
        json!({"_type": "memory", "key": "", "value": "ignored"}),
    ];
    let report = home.import(&home.write("m.jsonl", &lines), &[]);
    assert_eq!(report["created"], 1);
    assert_eq!(report["memories"], 2);
    let export = home.export_all();
    let tail: Vec<&str> = export.lines().skip(1).collect();
    assert_eq!(
        tail,
        [
            r#"{"_type":"memory","key":"alpha","value":"first"}"#,
            r#"{"_type":"memory","key":"zeta","value":"last"}"#
        ]
    );
    assert!(!home.run(&["export", "--no-memories"]).ok().stdout.contains("memory"));
}

#[test]
fn a_malformed_line_imports_nothing() {
    let home = Home::initialised("t");
    home.import(&home.write("a.jsonl", &[issue("t-0", "kept", "2026-01-01T00:00:00Z")]), &[]);
    let before = home.export_all();
    let path = home.path().join("bad.jsonl");
    let good = issue("t-1", "one", "2026-01-01T00:00:00Z").to_string();
    std::fs::write(&path, format!("{good}\n{{\"_type\":\"memory\",\"key\":\"k\",\"value\":\"v\"}}\n{{\"id\":\"t-2\",\"title\":\n")).unwrap();
    let run = home.run(&["import", path.to_str().unwrap()]).fails(1);
    assert!(run.stderr.contains("error: line 3: invalid JSON"), "{}", run.stderr);
    assert!(run.stderr.contains("--skip-bad-lines"), "{}", run.stderr);
    assert_eq!(home.export_all(), before, "the store is unchanged");

    let bad_priority = json!({"id": "t-3", "title": "x", "priority": 9});
    let path =
        home.write("bad2.jsonl", &[issue("t-1", "one", "2026-01-01T00:00:00Z"), bad_priority]);
    let run = home.run(&["import", path.to_str().unwrap()]).fails(1);
    assert!(
        run.stderr.contains("line 2: priority must be between 0 and 4 (got 9)"),
        "{}",
        run.stderr
    );
    assert_eq!(home.export_all(), before);

    // Into a workspace that does not exist yet: none is created.
    let fresh = Home::empty();
    fresh.run(&["import", path.to_str().unwrap()]).fails(1);
    assert!(!fresh.beads().exists());
}

#[test]
fn skip_bad_lines_imports_the_rest_and_reports_each() {
    let home = Home::initialised("t");
    let path = home.path().join("mixed.jsonl");
    let one = issue("t-1", "one", "2026-01-01T00:00:00Z");
    let two = issue("t-2", "two", "2026-01-01T00:00:00Z");
    std::fs::write(&path, format!("{one}\nnot json\n{two}\n{{\"title\":\"no id\"}}\n")).unwrap();
    let run = home.run(&["import", path.to_str().unwrap(), "--skip-bad-lines"]).ok();
    assert!(run.stderr.contains("Skipped line 2: invalid JSON"), "{}", run.stderr);
    assert!(run.stderr.contains("Skipped line 4: missing \"id\""), "{}", run.stderr);
    assert_eq!(home.issue_ids(), ["t-1", "t-2"]);
    let report = home.import(&path, &["--skip-bad-lines"]);
    assert_eq!(report["bad_lines"].as_array().unwrap().len(), 2);
    assert_eq!(report["bad_lines"][0]["line"], 2);
}

/// Ids an import must refuse: path-like, option-like, control characters, whitespace.
const BAD_IDS: &[&str] = &[
    "/abs/dir",
    "../x",
    "a/b",
    "..",
    ".",
    "-rf",
    "a b",
    "a\nb",
    "t-1\0",
    "t-\u{7}",
    "t-\u{1b}[2J",
    "a..b",
];

#[test]
fn an_id_outside_the_grammar_imports_nothing_and_names_the_line() {
    let home = Home::initialised("t");
    home.import(&home.write("a.jsonl", &[issue("t-0", "kept", "2026-01-01T00:00:00Z")]), &[]);
    let before = home.export_all();
    for id in BAD_IDS {
        let lines = [
            issue("t-1", "one", "2026-01-01T00:00:00Z"),
            issue("t-2", "two", "2026-01-01T00:00:00Z"),
            issue(id, "bad", "2026-01-01T00:00:00Z"),
        ];
        let path = home.write("bad-id.jsonl", &lines);
        let run = home.run(&["import", path.to_str().unwrap()]).fails(1);
        let expected = format!("error: line 3: invalid issue id {id:?}: ");
        assert!(run.stderr.contains(&expected), "{id:?}: {}", run.stderr);
        assert!(run.stderr.contains("ids may contain only letters"), "{}", run.stderr);
        assert!(run.stderr.contains("--skip-bad-lines"), "{}", run.stderr);
        let run = home.run(&["import", path.to_str().unwrap(), "--json"]).fails(1);
        let error: Value = serde_json::from_str(&run.stderr).unwrap();
        let message = error["error"].as_str().unwrap();
        assert!(message.starts_with(&format!("line 3: invalid issue id {id:?}: ")), "{message}");
        assert_eq!(home.export_all(), before, "{id:?}: the store is unchanged");
    }
    // Into a workspace that does not exist yet: none is created.
    let fresh = Home::empty();
    let path = home.write("bad-id.jsonl", &[issue("../x", "bad", "2026-01-01T00:00:00Z")]);
    fresh.run(&["import", path.to_str().unwrap()]).fails(1);
    assert!(!fresh.beads().exists());
    assert!(!fresh.path().join("tasks").exists());
}

#[test]
fn skip_bad_lines_skips_an_id_outside_the_grammar() {
    let home = Home::initialised("t");
    let lines = [
        issue("t-1", "one", "2026-01-01T00:00:00Z"),
        issue("../x", "bad", "2026-01-01T00:00:00Z"),
        issue("t-\u{0}", "bad", "2026-01-01T00:00:00Z"),
        issue("t-2", "two", "2026-01-01T00:00:00Z"),
    ];
    let path = home.write("mixed.jsonl", &lines);
    let run = home.run(&["import", path.to_str().unwrap(), "--skip-bad-lines"]).ok();
    assert!(run.stderr.contains("Skipped line 2: invalid issue id \"../x\": "), "{}", run.stderr);
    assert!(run.stderr.contains("Skipped line 3: invalid issue id \"t-\\0\": "), "{}", run.stderr);
    assert_eq!(home.issue_ids(), ["t-1", "t-2"]);
    let report = home.import(&path, &["--skip-bad-lines"]);
    assert_eq!(report["bad_lines"][0]["line"], 2);
    assert_eq!(report["bad_lines"][1]["line"], 3);
}

#[test]
fn a_legacy_database_with_an_id_outside_the_grammar_imports_nothing() {
    for id in ["../x", "/abs/dir", "lg-\n1", "-rf"] {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".beads")).unwrap();
        let db = project.path().join(".beads/beads.db");
        legacy_database(&db);
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute(
            "INSERT INTO issues (id, title, created_at, updated_at) VALUES (?1, 'Bad', '2025-11-04 10:00:00', '2025-11-04 10:00:00')",
            [id],
        )
        .unwrap();
        drop(conn);
        let home = Home::empty();
        let run = home.run(&["import", project.path().to_str().unwrap()]).fails(1);
        let expected = format!(": issue row: invalid issue id {id:?}: ");
        assert!(run.stderr.contains("error: line "), "{}", run.stderr);
        assert!(run.stderr.contains(&expected), "{id:?}: {}", run.stderr);
        assert!(!home.beads().exists(), "no workspace was created");
        // Skipping the row imports the others.
        let report = home.import(project.path(), &["--skip-bad-lines"]);
        assert_eq!(report["created"], 3);
        assert!(!home.issue_ids().iter().any(|i| i == id));
    }
}

#[test]
fn a_python_fleet_home_with_an_id_outside_the_grammar_imports_nothing() {
    let old = tempfile::tempdir().unwrap();
    std::fs::create_dir(old.path().join(".beads")).unwrap();
    let mut text = std::fs::read_to_string(fixture("fleet-own-issues.jsonl")).unwrap();
    let lines = text.lines().count();
    text.push_str(&format!("{}\n", issue("../../escape", "bad", "2026-01-01T00:00:00Z")));
    std::fs::write(old.path().join(".beads/issues.jsonl"), text).unwrap();
    let task = old.path().join("tasks/fleet-3cg");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("task.json"), r#"{"id":"fleet-3cg","cwd":"/home/user/demo"}"#)
        .unwrap();
    let home = Home::empty();
    let run = home.run(&["import", old.path().to_str().unwrap()]).fails(1);
    let expected = format!("error: line {}: invalid issue id \"../../escape\": ", lines + 1);
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    assert!(!home.beads().exists(), "no workspace was created");
    assert!(!home.path().join("tasks").exists());
    assert!(!old.path().join("escape").exists());
}

#[test]
fn dry_run_writes_nothing() {
    let fresh = Home::empty();
    let report = fresh.import(&fixture("beads-git-era-sample.jsonl"), &["--dry-run"]);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["created"], 30);
    assert_eq!(report["initialized_prefix"], "bd");
    assert!(!fresh.beads().exists(), "no workspace was created");

    let home = Home::initialised("bd");
    let run = home
        .run(&["import", fixture("beads-git-era-sample.jsonl").to_str().unwrap(), "--dry-run"])
        .ok();
    assert!(run.stderr.contains("Would import 30 issues"), "{}", run.stderr);
    assert!(run.stderr.contains("Dry run: nothing was written"), "{}", run.stderr);
    assert!(home.issue_ids().is_empty());
}

#[test]
fn stdin_is_read_with_a_dash() {
    let home = Home::initialised("t");
    let mut cmd = home.command(&["import", "-", "--json"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", issue("t-9", "from stdin", "2026-01-01T00:00:00Z")).unwrap();
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["source"], "stdin");
    assert_eq!(home.issue_ids(), ["t-9"]);
}

/// Builds a legacy SQLite beads.db the way beads ≤ 0.49 laid it out.
fn legacy_database(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        r#"
        CREATE TABLE issues (
            id TEXT PRIMARY KEY, content_hash TEXT, title TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
            design TEXT NOT NULL DEFAULT '', acceptance_criteria TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'open', priority INTEGER NOT NULL DEFAULT 2, issue_type TEXT NOT NULL DEFAULT 'task',
            assignee TEXT, estimated_minutes INTEGER, created_at DATETIME NOT NULL, updated_at DATETIME NOT NULL,
            closed_at DATETIME, external_ref TEXT, compaction_level INTEGER DEFAULT 0, source_repo TEXT DEFAULT '.',
            close_reason TEXT DEFAULT '', pinned INTEGER DEFAULT 0, ephemeral INTEGER DEFAULT 0, rig TEXT DEFAULT '');
        CREATE TABLE dependencies (issue_id TEXT NOT NULL, depends_on_id TEXT NOT NULL, type TEXT NOT NULL DEFAULT 'blocks',
            created_at DATETIME NOT NULL, created_by TEXT NOT NULL, PRIMARY KEY (issue_id, depends_on_id));
        CREATE TABLE labels (issue_id TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (issue_id, label));
        CREATE TABLE comments (id INTEGER PRIMARY KEY AUTOINCREMENT, issue_id TEXT NOT NULL, author TEXT NOT NULL,
            text TEXT NOT NULL, created_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE config (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO config VALUES ('issue_prefix', 'lg');
        INSERT INTO issues (id, content_hash, title, description, status, priority, issue_type, assignee, created_at, updated_at, closed_at, close_reason, pinned, rig)
            VALUES ('lg-a1', 'h1', 'Parent epic', 'desc', 'open', 1, 'epic', 'ann', '2025-11-02 21:58:07.295058-08:00', '2025-11-02 22:00:00-08:00', NULL, '', 1, 'west');
        INSERT INTO issues (id, content_hash, title, status, priority, issue_type, created_at, updated_at, closed_at, close_reason)
            VALUES ('lg-a1.1', 'h2', 'Child', 'closed', 0, 'task', '2025-11-03T01:00:00Z', '2025-11-03T02:00:00Z', '2025-11-03 02:00:00', 'done');
        INSERT INTO issues (id, title, status, priority, issue_type, created_at, updated_at)
            VALUES ('lg-b2', 'Blocked one', 'open', 2, 'task', '2025-11-04 10:00:00', '2025-11-04 10:00:00');
        INSERT INTO issues (id, title, status, priority, issue_type, created_at, updated_at)
            VALUES ('lg-dead', 'Gone', 'tombstone', 2, 'task', '2025-11-04 10:00:00', '2025-11-04 10:00:00');
        INSERT INTO dependencies VALUES ('lg-a1.1', 'lg-a1', 'parent-child', '2025-11-03 01:00:00', 'ann');
        INSERT INTO dependencies VALUES ('lg-b2', 'lg-a1.1', 'blocks', '2025-11-04 10:00:00', 'bob');
        INSERT INTO labels VALUES ('lg-a1', 'backend'), ('lg-a1', 'auth'), ('lg-b2', 'later');
        INSERT INTO comments (issue_id, author, text, created_at) VALUES ('lg-a1', 'ann', 'first', '2025-11-02 22:01:00');
        INSERT INTO comments (issue_id, author, text, created_at) VALUES ('lg-a1', 'bob', 'second', '2025-11-02 22:02:00');
        "#,
    )
    .unwrap();
}

#[test]
fn a_legacy_sqlite_database_is_read_directly() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".beads")).unwrap();
    legacy_database(&project.path().join(".beads/beads.db"));
    let home = Home::empty();
    let report = home.import(project.path(), &[]);
    let found = report["found"].as_str().unwrap();
    assert!(found.contains("legacy SQLite beads database"), "{found}");
    assert_eq!(report["kind"], "sqlite");
    assert_eq!(report["created"], 3);
    assert_eq!(report["tombstones_skipped"], 1);
    assert_eq!(report["initialized_prefix"], "lg", "the database's issue_prefix");
    assert_eq!(report["comments_added"], 2);
    assert_eq!(report["dependencies_added"], 2);
    let exported = home.exported();
    let epic = &exported["lg-a1"];
    assert_eq!(epic["labels"], json!(["auth", "backend"]));
    assert_eq!(epic["pinned"], true);
    assert_eq!(epic["assignee"], "ann");
    assert_eq!(epic["rig"], "west", "unmodelled columns are kept");
    assert_eq!(epic["created_at"], "2025-11-03T05:58:07.295058Z");
    assert_eq!(epic["comments"][0]["id"], 1);
    assert_eq!(epic["comments"][1]["text"], "second");
    assert!(epic.get("content_hash").is_none() && epic.get("source_repo").is_none());
    assert!(epic.get("compaction_level").is_none(), "zero values are omitted as bd does");
    let child = &exported["lg-a1.1"];
    assert_eq!(child["closed_at"], "2025-11-03T02:00:00Z");
    assert_eq!(child["priority"], 0);
    assert_eq!(child["parent"], "lg-a1");
    assert_eq!(exported["lg-b2"]["dependencies"][0]["created_by"], "bob");
    // The store file named beads.db is told apart from SQLite by its header.
    let again = home.run(&["import", home.beads().join("beads.db").to_str().unwrap()]).fails(1);
    assert!(again.stderr.contains("into itself"), "{}", again.stderr);
}

#[test]
fn a_dolt_workspace_gets_a_plain_explanation_and_the_fix() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".beads/dolt/beads")).unwrap();
    let home = Home::initialised("t");
    let mut cmd = home.command(&["import", project.path().to_str().unwrap()]);
    cmd.env("PATH", "/nonexistent");
    let run = home.run_with(cmd).fails(1);
    assert!(run.stderr.contains("Dolt-backed beads workspace"), "{}", run.stderr);
    assert!(run.stderr.contains("fleet cannot read Dolt's storage"), "{}", run.stderr);
    assert!(
        run.stderr.contains("bd export -o issues.jsonl && fleet import issues.jsonl"),
        "{}",
        run.stderr
    );

    // With a bd on PATH, --via-bd runs that export in the project and imports the result.
    let bin = tempfile::tempdir().unwrap();
    let bd = bin.path().join("bd");
    let line = issue("t-7", "from dolt", "2026-01-01T00:00:00Z").to_string().replace('"', "\\\"");
    std::fs::write(
        &bd,
        format!(
            "#!/bin/sh\n[ -d .beads/dolt ] || exit 3\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\nprintf '%s\\n' \"{line}\" > \"$out\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bd, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = home.command(&["import", project.path().to_str().unwrap()]);
    cmd.env("PATH", &path);
    let run = home.run_with(cmd).fails(1);
    assert!(run.stderr.contains("--via-bd"), "the hint names the flag: {}", run.stderr);
    let mut cmd = home.command(&["import", project.path().to_str().unwrap(), "--via-bd"]);
    cmd.env("PATH", &path);
    let run = home.run_with(cmd).ok();
    assert!(run.stderr.contains("Running `bd export"), "{}", run.stderr);
    assert_eq!(home.issue_ids(), ["t-7"]);
}

#[test]
fn a_python_fleet_home_brings_its_task_fields() {
    let old = tempfile::tempdir().unwrap();
    std::fs::create_dir(old.path().join(".beads")).unwrap();
    std::fs::copy(fixture("fleet-own-issues.jsonl"), old.path().join(".beads/issues.jsonl"))
        .unwrap();
    let task = old.path().join("tasks/fleet-3cg");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(
        task.join("task.json"),
        r#"{"id":"fleet-3cg","title":"t","status":"closed","cwd":"/home/user/demo","coder":"codex","model":"gpt-5"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(old.path().join("tasks/fleet-nope")).unwrap();
    std::fs::write(old.path().join("tasks/fleet-nope/task.json"), r#"{"cwd":"/x"}"#).unwrap();
    let home = Home::empty();
    let run = home.run(&["import", old.path().to_str().unwrap(), "--dry-run"]).ok();
    assert!(run.stderr.contains("Found a Python-fleet home"), "{}", run.stderr);
    let report = home.import(old.path(), &[]);
    assert_eq!(report["tasks_applied"], 1);
    assert_eq!(report["tasks_unmatched"], json!(["fleet-nope"]));
    let exported = &home.exported()["fleet-3cg"];
    assert_eq!(
        exported["metadata"]["fleet"],
        json!({"cwd": "/home/user/demo", "coder": "codex", "model": "gpt-5"})
    );
    // A beads file without fleet fields does not wipe them on re-import.
    home.import(&fixture("fleet-own-issues.jsonl"), &[]);
    assert_eq!(home.exported()["fleet-3cg"]["metadata"]["fleet"]["coder"], "codex");
}

#[test]
fn round_trips_are_byte_identical() {
    let first = Home::empty();
    for name in
        ["beads-git-era-sample.jsonl", "beads-dolt-era-sample.jsonl", "fleet-own-issues.jsonl"]
    {
        first.import(&fixture(name), &[]);
    }
    let mut fields = issue("bd-zz", "with <html> & fleet fields", "2026-01-01T00:00:00Z");
    fields["metadata"] = json!({"team": "core", "fleet": {"cwd": "/w", "coder": "claude"}});
    fields["future_key"] = json!({"nested": [1, 2]});
    first.import(
        &first.write("extra.jsonl", &[fields, json!({"_type":"memory","key":"k","value":"v"})]),
        &[],
    );
    let a = first.path().join("a.jsonl");
    first.run(&["export", "--all", "--include-paths", "-o", a.to_str().unwrap()]).ok();

    let second = Home::empty();
    second.import(&a, &[]);
    let b = second.path().join("b.jsonl");
    second.run(&["export", "--all", "--include-paths", "-o", b.to_str().unwrap()]).ok();
    let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(a == b, "export → import → export changed the bytes");
    let text = String::from_utf8(a).unwrap();
    assert!(text.contains(r#""title":"with \u003chtml\u003e \u0026 fleet fields""#));
    assert!(text.contains(r#""metadata":{"team":"core","fleet":{"cwd":"/w","coder":"claude"}}"#));
    assert!(text.contains(r#""future_key":{"nested":[1,2]},"dependency_count""#));
}

/// Rewrites every timestamp-looking string to UTC, recursively.
fn normalise(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Ok(at) = text.parse::<jiff::Timestamp>() {
                *text = at.to_string();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise),
        Value::Object(map) => map.values_mut().for_each(normalise),
        _ => {}
    }
}

#[test]
fn every_field_beads_wrote_survives_import_and_export() {
    for name in
        ["beads-git-era-sample.jsonl", "beads-dolt-era-sample.jsonl", "fleet-own-issues.jsonl"]
    {
        let home = Home::empty();
        let report = home.import(&fixture(name), &[]);
        let skips = skipped(&report);
        let exported = home.exported();
        let original = std::fs::read_to_string(fixture(name)).unwrap();
        let mut compared = 0;
        for line in original.lines() {
            let mut want: Value = serde_json::from_str(line).unwrap();
            if want["status"] == "tombstone" {
                continue;
            }
            let id = want["id"].as_str().unwrap().to_string();
            let mut got =
                exported.get(&id).unwrap_or_else(|| panic!("{name}: {id} missing")).clone();
            for key in ["_type", "dependency_count", "dependent_count", "comment_count", "parent"] {
                want.as_object_mut().unwrap().remove(key);
                got.as_object_mut().unwrap().remove(key);
            }
            // Dependencies the import reported as skipped are the only ones allowed to go.
            if let Some(deps) = want.get_mut("dependencies").and_then(Value::as_array_mut) {
                deps.retain(|d| {
                    !skips.iter().any(|(f, t, _)| {
                        d["issue_id"] == f.as_str() && d["depends_on_id"] == t.as_str()
                    })
                });
                if deps.is_empty() {
                    want.as_object_mut().unwrap().remove("dependencies");
                }
            }
            normalise(&mut want);
            normalise(&mut got);
            assert_eq!(got, want, "{name}: {id} lost or changed a field");
            compared += 1;
        }
        assert!(compared > 0);
    }
}

#[test]
fn export_to_a_file_is_atomic_and_deterministic() {
    let home = Home::empty();
    home.import(&fixture("beads-dolt-era-sample.jsonl"), &[]);
    let out = home.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let file = out.join("issues.jsonl");
    std::fs::write(&file, "old contents\n").unwrap();
    let run = home.run(&["export", "-o", file.to_str().unwrap()]).ok();
    assert!(run.stdout.is_empty());
    assert_eq!(run.stderr.trim(), format!("Exported 9 issues to {}", file.display()));
    let first = std::fs::read(&file).unwrap();
    home.run(&["export", "-o", file.to_str().unwrap()]).ok();
    assert_eq!(std::fs::read(&file).unwrap(), first);
    let names: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["issues.jsonl"], "no temporary file is left behind");
    // Sorted by id, `_type` first, UTC times.
    let ids: Vec<String> = String::from_utf8(first.clone())
        .unwrap()
        .lines()
        .map(|l| {
            assert!(l.starts_with(r#"{"_type":"issue","id":"#), "{l}");
            serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string()
        })
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    // A failed export leaves the old file alone.
    let missing = home.path().join("no-such-dir/x.jsonl");
    home.run(&["export", "-o", missing.to_str().unwrap()]).fails(1);
    assert_eq!(std::fs::read(&file).unwrap(), first);
}

#[test]
fn auto_export_follows_write_commands_when_enabled() {
    let home = Home::initialised("t");
    home.run(&["create", "before", "--silent"]).ok();
    assert!(!home.beads().join("issues.jsonl").exists(), "off by default");
    assert!(!home.beads().join("export-state.json").exists());
    {
        let store = fleet::store::Store::open(&home.beads()).unwrap();
        store
            .write("tester", fleet::time::Clock::System, |w| {
                w.set_config("export.auto", Some("true"))
            })
            .unwrap();
    }
    home.run(&["list"]).ok();
    assert!(!home.beads().join("issues.jsonl").exists(), "read commands do not export");
    let id = home.run(&["create", "after", "--silent"]).ok().stdout.trim().to_string();
    let exported = std::fs::read_to_string(home.beads().join("issues.jsonl")).unwrap();
    assert_eq!(exported.lines().count(), 2);
    assert!(exported.contains(&format!(r#""id":"{id}""#)));
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(home.beads().join("export-state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["issues"], 2);
    assert_eq!(state["path"], "issues.jsonl");
    home.run(&["close", &id]).ok();
    let after_close = std::fs::read_to_string(home.beads().join("issues.jsonl")).unwrap();
    assert!(after_close.contains(r#""status":"closed""#), "{after_close}");
}

#[test]
fn edges_that_break_the_epic_rule_are_kept_as_beads_keeps_them() {
    let t = Home::initialised("bd");
    let mut epic = issue("bd-ep1", "Old epic", "2026-01-02T00:00:00Z");
    epic["issue_type"] = json!("epic");
    let mut task = issue("bd-t1", "Task blocked by the epic", "2026-01-02T00:00:00Z");
    task["dependencies"] = json!([{"issue_id": "bd-t1", "depends_on_id": "bd-ep1",
        "type": "blocks", "created_at": "2026-01-01T00:00:00Z", "created_by": "ann"}]);
    let mut other = issue("bd-t2", "Task blocking an epic", "2026-01-02T00:00:00Z");
    other["issue_type"] = json!("task");
    let mut epic2 = issue("bd-ep2", "Epic blocked by a task", "2026-01-02T00:00:00Z");
    epic2["issue_type"] = json!("epic");
    epic2["dependencies"] = json!([{"issue_id": "bd-ep2", "depends_on_id": "bd-t2",
        "type": "blocks", "created_at": "2026-01-01T00:00:00Z", "created_by": "ann"}]);
    let path = t.write("old.jsonl", &[epic, task, other, epic2]);
    let report = t.import(&path, &[]);
    assert!(skipped(&report).is_empty(), "no edge is dropped: {report}");
    let blocked = t.run(&["blocked", "--json"]).ok().json();
    let ids: Vec<&str> =
        blocked.as_array().unwrap().iter().map(|b| b["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"bd-t1") && ids.contains(&"bd-ep2"), "both are blocked: {blocked}");
    let ready = t.run(&["ready", "--json"]).ok().json();
    let ready_ids: Vec<&str> =
        ready.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(!ready_ids.contains(&"bd-t1"), "an open epic blocks the task: {ready}");
    // A new request still obeys the rule.
    t.run(&["dep", "add", "bd-t2", "bd-ep1"]).fails(1);
}

#[test]
fn a_byte_order_mark_before_the_first_line_is_skipped() {
    let home = Home::initialised("t");
    let path = home.path().join("bom.jsonl");
    let lines = [
        issue("t-1", "one", "2026-01-01T00:00:00Z").to_string(),
        issue("t-2", "two", "2026-01-01T00:00:00Z").to_string(),
    ];
    std::fs::write(&path, format!("\u{feff}{}\n{}\n", lines[0], lines[1])).unwrap();
    let report = home.import(&path, &[]);
    assert_eq!(report["created"], 2, "{report}");
    assert_eq!(home.issue_ids(), ["t-1", "t-2"]);
    // From stdin, and with `bd import`, too.
    let fresh = Home::initialised("t");
    let mut cmd = fresh.command(&["bd", "import", "-"]);
    cmd.stdin(std::fs::File::open(&path).unwrap());
    fresh.run_with(cmd).ok();
    assert_eq!(fresh.issue_ids(), ["t-1", "t-2"]);
}

#[test]
fn duplicate_ids_in_one_import_are_reported_with_both_lines() {
    let home = Home::initialised("t");
    let path = home.write(
        "dups.jsonl",
        &[
            issue("t-1", "first", "2026-01-01T00:00:00Z"),
            issue("t-2", "other", "2026-01-01T00:00:00Z"),
            issue("t-1", "second", "2026-01-02T00:00:00Z"),
            issue("t-2", "older", "2025-01-01T00:00:00Z"),
        ],
    );
    let text = path.to_str().unwrap();
    let dry = home.run(&["import", text, "--dry-run"]).ok();
    assert!(
        dry.stderr.contains("duplicate id t-1 on lines 1 and 3: the later line wins"),
        "{}",
        dry.stderr
    );
    assert!(
        dry.stderr.contains("duplicate id t-2 on lines 2 and 4: the earlier line wins"),
        "{}",
        dry.stderr
    );
    let report = home.import(&path, &[]);
    assert_eq!(
        report["duplicate_ids"],
        json!([
            {"id": "t-1", "first_line": 1, "line": 3, "kept_line": 3},
            {"id": "t-2", "first_line": 2, "line": 4, "kept_line": 2},
        ]),
        "{report}"
    );
    // Last wins (unless older), as before.
    assert_eq!(home.show("t-1")["title"], "second");
    assert_eq!(home.show("t-2")["title"], "other");
    // A file without repeats has no such key.
    let clean = home.write("clean.jsonl", &[issue("t-3", "x", "2026-01-01T00:00:00Z")]);
    assert!(home.import(&clean, &[]).get("duplicate_ids").is_none());
}

/// Issue 11, items 7 and 8: a plain export (what lands in a git-tracked file) carries no
/// memories and no absolute working directory; a directory inside the project is written
/// relative to it and comes back absolute in the importing project.
#[test]
fn plain_exports_leave_out_memories_and_paths_outside_the_project() {
    let home = Home::initialised("t");
    let project = home.path().canonicalize().unwrap();
    std::fs::create_dir_all(project.join("app")).unwrap();
    let inside = home.run(&["create", "Inside", "--cwd", "app", "--silent"]).ok();
    let inside = inside.stdout.trim().to_string();
    let outside = home.run(&["create", "Outside", "--cwd", "/home/someone/secret", "--silent"]);
    let outside = outside.ok().stdout.trim().to_string();
    home.run(&["bd", "remember", "the deploy key is in the vault", "--key", "deploy"]).ok();

    let plain = home.run(&["export"]).ok().stdout;
    assert!(!plain.contains("memory"), "{plain}");
    assert!(!plain.contains("/home/someone"), "{plain}");
    assert!(!plain.contains(&project.display().to_string()), "{plain}");
    let lines: BTreeMap<String, Value> = plain
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["id"].as_str().unwrap().to_string(), v))
        .collect();
    assert_eq!(lines[&inside]["metadata"]["fleet"]["cwd"], "app");
    assert_eq!(lines[&outside].get("metadata"), None);

    let asked = home.run(&["export", "--include-memories", "--include-paths"]).ok().stdout;
    assert!(
        asked.contains(
            r#"{"_type":"memory","key":"deploy","value":"the deploy key is in the vault"}"#
        )
    );
    assert!(asked.contains("/home/someone/secret"));

    let other = Home::initialised("t");
    let file = other.path().join("in.jsonl");
    std::fs::write(&file, &plain).unwrap();
    other.import(&file, &[]);
    let shown = other.ws.json(&["show", &inside]);
    let root = other.path().canonicalize().unwrap();
    assert_eq!(shown[0]["fleet"]["cwd"], root.join("app").display().to_string());
    let as_bd = other.ws.json(&["bd", "show", &inside]);
    assert_eq!(as_bd[0].get("fleet"), None, "bd prints bd's shapes only: {as_bd}");
}

/// Issue 11, item 11: what older beads databases hold beyond the issues — integer timestamps,
/// settings, an events table, gate timeouts, the `work_type` column default — and a project
/// whose `.beads/beads.db` is beads' SQLite file, migrated in place by `bd import`.
#[test]
fn legacy_sqlite_details_and_migration_in_place() {
    let project = tempfile::tempdir().unwrap();
    let beads = project.path().join(".beads");
    std::fs::create_dir(&beads).unwrap();
    let db = beads.join("beads.db");
    legacy_database(&db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        r#"
        ALTER TABLE issues ADD COLUMN timeout_ns INTEGER;
        ALTER TABLE issues ADD COLUMN work_type TEXT DEFAULT 'mutex';
        INSERT INTO issues (id, title, status, priority, issue_type, created_at, updated_at, timeout_ns)
            VALUES ('lg-int', 'Integer times', 'open', 2, 'gate', 1762300800, 1762300800000, 60000000000);
        INSERT INTO config VALUES ('types.custom', 'research'), ('status.custom', 'review:wip'),
            ('kv.memory.deploy', 'use the staging port');
        CREATE TABLE events (id INTEGER PRIMARY KEY, issue_id TEXT, event_type TEXT, created_at DATETIME);
        INSERT INTO events (issue_id, event_type, created_at) VALUES ('lg-a1', 'created', '2025-11-02 21:58:07'),
            ('lg-b2', 'status_changed', '2025-11-04 10:00:00');
        "#,
    )
    .unwrap();
    drop(conn);

    // Opening the project as bd says what to do.
    let home = Home::empty();
    let link = home.path().join("bd");
    std::os::unix::fs::symlink(common::fleet_bin(), &link).unwrap();
    let in_project = |args: &[&str]| -> Run {
        let mut cmd = Command::new(&link);
        cmd.args(args)
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(project.path());
        cmd.output().expect("run bd").into()
    };
    let run = in_project(&["count"]).fails(1);
    assert!(run.stderr.contains("legacy SQLite database"), "{}", run.stderr);
    assert!(run.stderr.contains("bd import"), "{}", run.stderr);

    let report = in_project(&["import", ".beads/beads.db", "--json"]).ok().json();
    assert_eq!(report["created"], 4, "{report}");
    assert_eq!(report["events_skipped"], 2);
    assert_eq!(report["config_imported"], 2);
    assert_eq!(report["memories"], 1);
    assert_eq!(report["fidelity"]["source"], report["fidelity"]["store"].clone().tap_tombstones());
    assert!(beads.join("beads.sqlite.db").is_file(), "the SQLite file is kept beside");

    let export = in_project(&["export", "--include-memories"]).ok().stdout;
    let gate: Value = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == "lg-int")
        .expect("the gate is exported");
    assert_eq!(gate["created_at"], "2025-11-05T00:00:00Z");
    assert_eq!(gate["timeout"], 60_000_000_000_i64);
    assert_eq!(gate.get("timeout_ns"), None);
    assert!(!export.contains("\"work_type\""), "the column default is not exported");
    assert!(export.contains(r#"{"_type":"memory","key":"deploy","value":"use the staging port"}"#));
    // The custom type and status came along and are honoured.
    in_project(&["create", "Look into it", "-t", "research"]).ok();
    in_project(&["update", "lg-b2", "--status", "review"]).ok();
}

/// The store side counts tombstones as 0 (they are skipped with their reason).
trait TapTombstones {
    fn tap_tombstones(self) -> Value;
}

impl TapTombstones for Value {
    fn tap_tombstones(mut self) -> Value {
        self["tombstones"] = json!(1);
        self
    }
}

/// A bulk import keeps the order index, status counts and readiness exactly as op-by-op
/// writes would (`fleet doctor` rebuilds and compares them): into an empty workspace, and
/// again on top of it, where existence checks fall back to the stored issues.
#[test]
fn the_store_is_consistent_after_imports_into_empty_and_filled_workspaces() {
    let home = Home::empty();
    home.run(&["import", fixture("beads-git-era-sample.jsonl").to_str().unwrap()]).ok();
    assert_store_healthy(&home.run(&["doctor", "--json"]));
    let dep = |from: &str, to: &str, kind: &str| json!({"issue_id": from, "depends_on_id": to, "type": kind, "created_at": "2026-01-01T00:00:00Z"});
    let ids = home.issue_ids();
    let mut epic = issue("bd-zz1", "epic", "2026-02-01T00:00:00Z");
    epic["issue_type"] = json!("epic");
    epic["dependencies"] = json!([dep("bd-zz1", &ids[0], "blocks")]);
    let mut child = issue("bd-zz1.1", "child", "2026-02-01T00:00:00Z");
    child["dependencies"] = json!([dep("bd-zz1.1", "bd-zz1", "parent-child")]);
    let mut closed = issue(&ids[1], "closed now", "2027-01-01T00:00:00Z");
    closed["status"] = json!("closed");
    let mut blocked = issue(&ids[2], "blocked now", "2027-01-01T00:00:00Z");
    blocked["dependencies"] = json!([dep(&ids[2], "bd-zz1.1", "blocks")]);
    let report = home.import(&home.write("more.jsonl", &[epic, child, closed, blocked]), &[]);
    assert_eq!(report["created"], 2, "{report}");
    assert_eq!(report["updated"], 2, "{report}");
    let doctor = home.run(&["doctor", "--json"]);
    assert_store_healthy(&doctor);
    assert!(doctor.stdout.contains("order index"), "{}", doctor.stdout);
}

/// The store side of the fidelity table is the same whether the import makes up most of the
/// store (read table by table) or a small part of it (each imported issue looked up): a
/// repeated comment, an edge of another type than the stored one, a label and an edge to a
/// stored issue are each counted once, and the store's own issues do not inflate the counts.
#[test]
fn fidelity_counts_agree_for_small_and_large_imports() {
    let lines = [
        json!({"id": "fd-a", "title": "A", "status": "open", "priority": 1, "issue_type": "task",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "labels": ["x", "y", "x"],
            "dependencies": [
                {"issue_id": "fd-a", "depends_on_id": "fd-b", "type": "blocks"},
                {"issue_id": "fd-a", "depends_on_id": "fd-gone", "type": "blocks"}],
            "comments": [
                {"id": 1, "issue_id": "fd-a", "author": "ann", "text": "hi", "created_at": "2026-01-01T00:00:00Z"},
                {"id": 2, "issue_id": "fd-a", "author": "ann", "text": "hi", "created_at": "2026-01-01T00:00:00Z"}]}),
        json!({"id": "fd-b", "title": "B", "status": "open", "priority": 2, "issue_type": "task",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "dependencies": [{"issue_id": "fd-b", "depends_on_id": "fd-c", "type": "related"}]}),
        json!({"id": "fd-c", "title": "C", "status": "closed", "priority": 2, "issue_type": "task",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "closed_at": "2026-01-02T00:00:00Z"}),
    ];
    let alone = Home::initialised("fd");
    let file = alone.write("small.jsonl", &lines);
    let scanned = alone.import(&file, &[]);

    let crowded = Home::initialised("fd");
    for n in 0..20 {
        crowded.run(&["create", &format!("Already here {n}"), "--labels", "x"]).ok();
    }
    let looked_up = crowded.import(&file, &[]);

    let expected = json!({"issues": 3, "edges": {"blocks": 1, "related": 1}, "comments": 2,
        "labels": 2, "memories": 0, "tombstones": 0});
    assert_eq!(scanned["fidelity"]["store"], expected, "{scanned}");
    assert_eq!(looked_up["fidelity"]["store"], expected, "{looked_up}");
    assert_eq!(scanned["fidelity"]["source"]["edges"], json!({"blocks": 2, "related": 1}));
}

/// `fleet doctor --json` found the store healthy (the setup checks — a coder's CLI on this
/// machine — are not this file's business).
#[track_caller]
fn assert_store_healthy(doctor: &Run) {
    let report: Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(report["healthy"], true, "{:#}", report["checks"]);
}

/// Makes a special file at `path` with `mknod`; false when this user may not (not root).
fn mknod(path: &Path, mode: libc::mode_t, major: u32, minor: u32) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; mknod reads nothing else.
    unsafe { libc::mknod(name.as_ptr(), mode, libc::makedev(major, minor)) == 0 }
}

/// Issue 28: `export -o` writes where it is pointed. A device stays a device (the export goes
/// into it, or fails as the device does), a FIFO stays a FIFO and its reader gets the export, a
/// symbolic link stays a link and the file it names gets the export — also one it names that
/// does not exist yet. Before, each was replaced by a regular file.
#[test]
fn export_writes_into_devices_fifos_and_through_links() {
    use std::os::unix::fs::FileTypeExt;
    let home = Home::initialised("t");
    home.run(&["create", "exported", "--silent"]).ok();
    let expected = home.run(&["export"]).ok().stdout;
    let dir = home.path().join("targets");
    std::fs::create_dir(&dir).unwrap();
    let export = |path: &Path| home.run(&["export", "-o", path.to_str().unwrap()]);

    // A FIFO: its reader (opened read-write, so neither end waits for the other) gets the lines.
    let fifo = dir.join("fifo");
    let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let mut reader = std::fs::OpenOptions::new().read(true).write(true).open(&fifo).unwrap();
    export(&fifo).ok();
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
    let mut got = vec![0u8; expected.len()];
    std::io::Read::read_exact(&mut reader, &mut got).unwrap();
    assert_eq!(String::from_utf8(got).unwrap(), expected);

    // A link to a regular file, and a link to nothing yet: both links stay, their files fill.
    let file = dir.join("real.jsonl");
    std::fs::write(&file, "old\n").unwrap();
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink("real.jsonl", &link).unwrap();
    export(&link).ok();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "still a link");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    let dangling = dir.join("later.jsonl");
    std::os::unix::fs::symlink("made-by-export.jsonl", &dangling).unwrap();
    export(&dangling).ok();
    assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(dir.join("made-by-export.jsonl")).unwrap(), expected);

    // Devices, made here as copies of /dev/null (1,3) and /dev/full (1,7): written in place.
    let (null, full) = (dir.join("null"), dir.join("full"));
    if !mknod(&null, libc::S_IFCHR | 0o666, 1, 3) || !mknod(&full, libc::S_IFCHR | 0o666, 1, 7) {
        eprintln!("skipped the device targets: mknod is not permitted for this user");
        return;
    }
    export(&null).ok();
    let failed = export(&full).fails(1);
    assert!(failed.stderr.contains("No space left on device"), "{}", failed.stderr);
    for device in [&null, &full] {
        let kind = std::fs::symlink_metadata(device).unwrap().file_type();
        assert!(kind.is_char_device(), "{} is still a device", device.display());
    }
    // A directory is refused by name.
    let refused = export(&dir).fails(1);
    assert!(refused.stderr.contains("it is a directory"), "{}", refused.stderr);
}

/// Issue 31, item 3: the export written over the workspace's `issues.jsonl` (a file a team
/// tracks) keeps the records this store does not hold — a beads tombstone, an issue never
/// imported — writes a record the default export leaves out from the store, drops what was
/// deleted here, and leaves a file with merge conflict markers as it is.
#[test]
fn the_auto_export_never_drops_a_record_the_store_does_not_hold() {
    let home = Home::initialised("t");
    home.run(&["config", "set", "export.auto=true", "types.custom=agent"]).ok();
    let kept = home.run(&["create", "kept", "--silent"]).ok().stdout.trim().to_string();
    let doomed = home.run(&["create", "doomed", "--silent"]).ok().stdout.trim().to_string();
    let agent = home.run(&["create", "an agent", "-t", "agent", "--silent"]).ok();
    let agent = agent.stdout.trim().to_string();
    let file = home.beads().join("issues.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&agent), "the default export leaves agents out");
    let tombstone = issue("t-gone", "deleted in beads", "2026-01-01T00:00:00Z");
    let mut tombstone = tombstone.as_object().unwrap().clone();
    tombstone.insert("status".into(), "tombstone".into());
    let foreign = issue("t-zz9", "a teammate's", "2026-01-01T00:00:00Z");
    let agent_line = format!(r#"{{"id":"{agent}","title":"an agent","issue_type":"agent"}}"#);
    text.push_str(&format!("{}\n{foreign}\n{agent_line}\n", Value::Object(tombstone)));
    std::fs::write(&file, &text).unwrap();

    home.run(&["delete", &doomed, "--force"]).ok();
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.contains(r#""id":"t-gone""#), "{after}");
    assert!(after.contains("a teammate's"), "{after}");
    assert!(after.contains(&kept) && !after.contains("doomed"), "{after}");
    let agent_now = after.lines().find(|l| l.contains(&agent)).expect("the agent line stays");
    assert!(agent_now.contains("created_at"), "written from the store: {agent_now}");
    let ids: Vec<String> = after
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "records stay in id order");

    let conflicted = format!("<<<<<<< HEAD\n{after}=======\n>>>>>>> theirs\n");
    std::fs::write(&file, &conflicted).unwrap();
    let run = home.run(&["create", "after the conflict"]).ok();
    assert!(run.stderr.contains("line 1"), "the warning names the line: {}", run.stderr);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), conflicted, "left as it is");
}
