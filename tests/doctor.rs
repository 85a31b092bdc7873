//! `fleet doctor` as users meet it.
//!
//! A damaged store: a flipped byte inside one issue's row, a file cut short, 64 zeroed bytes at
//! offset 4096. The read commands show what they can and name the damage (or fail naming the
//! file and `fleet doctor`), nothing exits 101, `fleet doctor` names each damage, and
//! `fleet doctor --salvage` brings back every undamaged issue. (These run doctor in a healthy
//! setup — a fake `claude` signed in by key — so only the store decides.)
//!
//! A broken setup: a coder whose program is missing, a runtime.toml of the Python fleet with
//! unknown keys, a coder with no credentials — each named on its own line with its fix, exit 1;
//! and a healthy one, exit 0, with the version the CLI printed and no secret shown.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, Workspace, ids_of};
use serde_json::Value;

/// An API key shape the redactor knows, so a leak would be caught by value and by shape.
const KEY: &str = "sk-ant-api03-doctortestkey0123456789abcdefghij";

/// Writes an executable shell script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The directory of the fake CLIs of a workspace.
fn tools(ws: &Workspace) -> PathBuf {
    ws.home().join("tools")
}

/// `fleet ARGS` with only the fake CLIs and the system's programs on PATH, and no key set.
fn doctor_command(ws: &Workspace, args: &[&str]) -> Command {
    let mut command = ws.command(args);
    command.env("PATH", format!("{}:/usr/bin:/bin", tools(ws).display()));
    command
}

/// A setup in which every check passes: a fake `claude` that prints its version, signed in
/// by key.
fn healthy_setup(ws: &Workspace) {
    script(&tools(ws), "claude", "echo '9.9.9 (Claude Code)'");
}

/// `fleet doctor ARGS` in the healthy setup.
fn doctor(ws: &Workspace, args: &[&str]) -> Run {
    healthy_setup(ws);
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    doctor_command(ws, &all).env("ANTHROPIC_API_KEY", KEY).output().unwrap().into()
}

/// A workspace with `n` issues titled `Job <k> MARK<k>END`, a dependency between the first
/// two, a comment and a label on the first; returns the ids in creation order.
fn populated(n: usize) -> (Workspace, Vec<String>) {
    let ws = Workspace::new();
    let ids: Vec<String> =
        (1..=n).map(|k| ws.create(&format!("Job {k} MARK{k}END"), &[])).collect();
    ws.run(&["dep", "add", &ids[1], &ids[0]]).ok();
    ws.run(&["comment", &ids[0], "a note"]).ok();
    ws.run(&["label", "add", &ids[0], "keep"]).ok();
    (ws, ids)
}

fn store_file(ws: &Workspace) -> PathBuf {
    ws.beads_dir().join("beads.db")
}

/// Breaks the JSON of every copy of the row holding `marker` (the live issue row, and the
/// copies in the journal and in freed pages): the quote that closes the title becomes `X`.
fn break_row(path: &Path, marker: &str) {
    let mut bytes = std::fs::read(path).unwrap();
    let needle = format!("{marker}\"");
    let mut found = 0;
    let mut at = 0;
    while let Some(offset) = find(&bytes[at..], needle.as_bytes()) {
        let quote = at + offset + marker.len();
        bytes[quote] = b'X';
        found += 1;
        at = quote;
    }
    assert!(found > 0, "{marker} is in the store file");
    std::fs::write(path, bytes).unwrap();
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn truncate(path: &Path) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    let len = file.metadata().unwrap().len();
    file.set_len(len / 2).unwrap();
}

#[track_caller]
fn assert_no_panic(run: &Run, what: &str) {
    assert_ne!(run.code, 101, "{what} panicked:\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{what}:\n{}", run.stderr);
}

/// A command either succeeded, or failed naming the file and `fleet doctor`.
#[track_caller]
fn assert_ok_or_names_the_fix(ws: &Workspace, run: &Run, what: &str) {
    assert_no_panic(run, what);
    if run.code != 0 {
        assert_eq!(run.code, 1, "{what}:\n{}", run.stderr);
        let file = store_file(ws).display().to_string();
        assert!(run.stderr.contains(&file), "{what} names the file:\n{}", run.stderr);
        assert!(run.stderr.contains("fleet doctor"), "{what} names the fix:\n{}", run.stderr);
    }
}

#[test]
fn a_damaged_issue_row_is_named_and_the_rest_is_shown() {
    let (ws, ids) = populated(5);
    break_row(&store_file(&ws), "MARK3END");
    let damaged = &ids[2];

    for args in [&["list"][..], &["search", "Job"], &["ready"], &["stats"]] {
        let run = ws.run(args);
        assert_no_panic(&run, args[0]);
        assert_eq!(run.code, 1, "{args:?}: a damaged row is an error\n{}", run.stderr);
        assert!(run.stderr.contains(&format!("damaged: {damaged}")), "{args:?}:\n{}", run.stderr);
        assert!(run.stderr.contains("fleet doctor"), "{args:?}:\n{}", run.stderr);
    }
    let listed = ws.run(&["list", "--json"]).fails(1);
    let listed = ids_of(&listed.json());
    assert_eq!(listed.len(), 4, "every other issue is listed: {listed:?}");
    assert!(!listed.contains(damaged));
    let error: serde_json::Value =
        serde_json::from_str(&ws.run(&["list", "--json"]).stderr).unwrap();
    assert_eq!(error["errors"][0]["id"], damaged.as_str());

    let stats = ws.run(&["stats", "--json"]).fails(1).json();
    assert_eq!(stats["total_issues"], 4);
    assert_eq!(stats["damaged"], serde_json::json!([damaged]));

    let export = ws.run(&["export"]).fails(1);
    assert_eq!(export.stdout.lines().count(), 4, "{}", export.stdout);
    assert!(export.stderr.contains(&format!("damaged: {damaged}")), "{}", export.stderr);

    let show = ws.run(&["show", damaged]).fails(1);
    assert!(show.stderr.contains(&format!("issue {damaged}")), "{}", show.stderr);
    assert_ok_or_names_the_fix(&ws, &show, "show");

    let report = doctor(&ws, &[]).fails(1);
    assert!(
        report.stdout.contains(&format!("\n✗ store issues: issue {damaged}")),
        "{}",
        report.stdout
    );
    assert!(report.stdout.contains("\n  fix: run `fleet doctor --salvage`"), "{}", report.stdout);
}

#[test]
fn salvage_restores_every_undamaged_issue_and_the_store_is_clean_after() {
    let (ws, ids) = populated(6);
    break_row(&store_file(&ws), "MARK4END");
    let damaged = &ids[3];

    let salvage = ws.run(&["doctor", "--salvage", "--json"]).ok().json();
    assert_eq!(salvage["issues_saved"], 5);
    assert_eq!(salvage["issues_lost"], serde_json::json!([damaged]));
    assert_eq!(salvage["edges_saved"], 1);
    assert_eq!(salvage["comments_saved"], 1);
    assert_eq!(salvage["labels_saved"], 1);
    let kept = PathBuf::from(salvage["damaged_file"].as_str().unwrap());
    assert!(kept.is_file(), "the damaged file is kept");
    assert!(kept.file_name().unwrap().to_string_lossy().starts_with("beads.db.damaged-"));

    doctor(&ws, &[]).ok();
    let listed = ids_of(&ws.json(&["list", "--limit", "0"]));
    assert_eq!(listed.len(), 5);
    let expected: Vec<&String> = ids.iter().filter(|id| *id != damaged).collect();
    for id in expected {
        assert!(listed.contains(id), "{id} is back: {listed:?}");
    }
    assert_eq!(ws.blocked_ids(), [ids[1].clone()], "the edge still blocks");
    let first = &ws.json(&["show", &ids[0]])[0];
    assert_eq!(first["labels"], serde_json::json!(["keep"]));
    assert_eq!(first["comments"][0]["text"], "a note");
    ws.create("after the salvage", &[]);
}

/// The users' report: a store of a few created issues, 64 zeroed bytes at offset 4096, and
/// every write panicked inside redb. (Where those bytes land depends on the file's layout;
/// in a store of creates only they hit a page that writes need and reads do not.)
#[test]
fn zeroed_bytes_at_4096_fail_writes_cleanly_and_salvage_repairs_them() {
    let ws = Workspace::new();
    for k in 1..=4 {
        ws.create(&format!("Job {k}"), &[]);
    }
    // The page at 4096 was such a page until new tables moved the layout; the first page
    // from there on whose zeroing fails writes while reads still work is taken.
    let path = store_file(&ws);
    let pristine = std::fs::read(&path).unwrap();
    let found = (4096..pristine.len()).step_by(4096).find(|&offset| {
        let mut bytes = pristine.clone();
        bytes[offset..offset + 64].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let fails = ws.run(&["create", "probe"]).code != 0 && ws.run(&["list"]).code == 0;
        std::fs::write(&path, &bytes).unwrap();
        fails
    });
    assert!(found.is_some(), "some page of the store is one writes need and reads do not");

    for args in [&["create", "x"][..], &["list"], &["export"], &["stats"], &["search", "Job"]] {
        let run = ws.run(args);
        assert_ok_or_names_the_fix(&ws, &run, args[0]);
    }
    let create = ws.run(&["create", "x"]);
    assert_eq!(create.code, 1, "a write to the damaged file fails:\n{}", create.stderr);

    // Doctor names the damage: a page writes need (the write check) or of a table only
    // writes read (the journal, the op index), which every table's walk reads.
    let report = doctor(&ws, &[]).fails(1);
    let named = ["\n✗ store write:", "\n✗ store tables:"];
    assert!(named.iter().any(|line| report.stdout.contains(line)), "{}", report.stdout);

    let salvage = ws.run(&["doctor", "--salvage", "--json"]).ok().json();
    assert_eq!(salvage["issues_saved"], 4);
    doctor(&ws, &[]).ok();
    ws.create("writes work again", &[]);
    assert_eq!(ids_of(&ws.json(&["list"])).len(), 5);
}

/// Where the zeroed page is one reads need too, nothing can be read: every command says so,
/// naming the file and `fleet doctor`, and neither doctor nor salvage panics. (The page at
/// 4096 was such a page until the order index moved the layout; the first page from there on
/// whose zeroing makes `list` fail is taken.)
#[test]
fn zeroed_bytes_at_4096_of_a_busier_store_fail_cleanly_everywhere() {
    let (ws, _) = populated(4);
    let path = store_file(&ws);
    let pristine = std::fs::read(&path).unwrap();
    let needed = (4096..pristine.len()).step_by(4096).find(|&offset| {
        let mut bytes = pristine.clone();
        bytes[offset..offset + 64].fill(0);
        std::fs::write(&path, bytes).unwrap();
        ws.run(&["list"]).code != 0
    });
    assert!(needed.is_some(), "some page of the store is one reads need");
    for args in [&["create", "x"][..], &["list"], &["export"], &["stats"], &["search", "Job"]] {
        let run = ws.run(args);
        assert_ok_or_names_the_fix(&ws, &run, args[0]);
    }
    assert_no_panic(&ws.run(&["doctor"]).fails(1), "doctor");
    assert_no_panic(&ws.run(&["doctor", "--salvage"]), "salvage");
}

#[test]
fn a_truncated_file_fails_naming_the_file_and_doctor() {
    let (ws, _) = populated(4);
    truncate(&store_file(&ws));

    for args in [&["create", "x"][..], &["list"], &["export"], &["stats"], &["search", "Job"]] {
        let run = ws.run(args);
        assert_ok_or_names_the_fix(&ws, &run, args[0]);
    }
    let report = doctor(&ws, &[]).fails(1);
    assert!(report.stdout.contains("\n✗ store file:"), "{}", report.stdout);
    let salvage = ws.run(&["doctor", "--salvage"]);
    assert_no_panic(&salvage, "salvage");
}

/// Issue 28: a file cut short by whole pages fails naming the cause — cut short — with the
/// file and `fleet doctor`, not a bare "failed to fill whole buffer".
#[test]
fn a_file_cut_short_says_so() {
    let (ws, _) = populated(4);
    let path = store_file(&ws);
    let whole = std::fs::read(&path).unwrap();
    let mut said = Vec::new();
    for pages in 1..whole.len() / 4096 {
        std::fs::write(&path, &whole[..whole.len() - pages * 4096]).unwrap();
        let run = ws.run(&["list"]);
        assert_ok_or_names_the_fix(&ws, &run, "list");
        assert!(
            !run.stderr.contains("failed to fill whole buffer") || run.stderr.contains("cut short"),
            "{}",
            run.stderr
        );
        said.push(run.stderr);
    }
    assert!(said.iter().any(|s| s.contains("the file is cut short")), "{said:#?}");
}

/// Issue 28: a table's entry in the store's table tree damaged (one byte of the name of the
/// issue table) is named as a damaged table definition, and a write refuses the store
/// instead of making an empty issue table in its place and going on.
#[test]
fn a_damaged_table_definition_is_named_and_never_written_over() {
    let (ws, ids) = populated(3);
    let path = store_file(&ws);
    let pristine = std::fs::read(&path).unwrap();
    // The names are in every copy of the table tree's page the file holds (its pages are
    // written anew, not over); the live one is the copy whose damage `list` meets.
    let needle = b"holdsissuesjournal";
    let mut bytes = pristine.clone();
    let at = (0..pristine.len() - needle.len())
        .filter(|&at| &pristine[at..at + needle.len()] == needle)
        .map(|at| at + 5)
        .find(|&at| {
            bytes = pristine.clone();
            bytes[at] = b'j';
            std::fs::write(&path, &bytes).unwrap();
            ws.run(&["list"]).code != 0
        })
        .expect("the live copy of the table tree's names");
    for args in [&["create", "x"][..], &["close", &ids[0]], &["list"], &["show", &ids[0]]] {
        let run = ws.run(args);
        assert_ok_or_names_the_fix(&ws, &run, args[0]);
        assert_eq!(run.code, 1, "{args:?} went on over a damaged table definition");
        assert!(run.stderr.contains("definition is damaged"), "{args:?}: {}", run.stderr);
    }
    // Put back, the store is as it was: nothing was written meanwhile.
    bytes[at] = b'i';
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(ids_of(&ws.json(&["list", "--all"])).len(), 3);
}

/// An empty store file (left by `touch`, or a copy cut short) holds nothing: doctor says so
/// and that removing it loses nothing, instead of asking for a backup; after following the fix
/// an import makes the workspace.
#[test]
fn an_empty_store_file_is_named_empty_with_the_fix() {
    let ws = Workspace::empty();
    std::fs::create_dir_all(ws.beads_dir()).unwrap();
    std::fs::write(store_file(&ws), b"").unwrap();
    let list = ws.run(&["list"]);
    assert_ok_or_names_the_fix(&ws, &list, "list");
    assert_eq!(list.code, 1, "{}", list.stderr);

    let report = doctor(&ws, &[]).fails(1);
    let failed = "\n✗ store file:";
    assert!(report.stdout.contains(failed), "{}", report.stdout);
    let fix = fix_after(&report.stdout, failed.trim_start());
    let file = store_file(&ws).display().to_string();
    assert!(fix.contains(&format!("{file} is empty")), "{fix}");
    assert!(fix.contains(&format!("`rm {file}`")), "{fix}");
    assert!(!fix.contains("backup"), "{fix}");

    std::fs::remove_file(store_file(&ws)).unwrap();
    let source = ws.home().join("one.jsonl");
    std::fs::write(&source, "{\"id\":\"em-1\",\"title\":\"kept\"}\n").unwrap();
    ws.run(&["import", source.to_str().unwrap()]).ok();
    assert!(ws.run(&["show", "em-1"]).ok().stdout.contains("kept"));
}

#[test]
fn a_healthy_store_passes_every_check() {
    let (ws, _) = populated(3);
    let report = doctor(&ws, &["--json"]).ok().json();
    assert_eq!(report["healthy"], true);
    assert_eq!(report["ok"], true);
    let checks: Vec<&str> =
        report["checks"].as_array().unwrap().iter().map(|c| c["check"].as_str().unwrap()).collect();
    assert_eq!(
        checks,
        [
            "file",
            "pages",
            "write",
            "tables",
            "issues",
            "edges",
            "labels",
            "comments",
            "meta",
            "order index",
            "readiness"
        ]
    );
    let human = doctor(&ws, &[]).ok();
    assert_eq!(
        human.stdout.lines().filter(|l| l.starts_with("✓ store ")).count(),
        11,
        "{}",
        human.stdout
    );
}

// --- the setup ------------------------------------------------------------------------------

/// The setup entries of `fleet doctor --json` for `subject` and `check`.
fn setup_entries<'a>(report: &'a Value, subject: &str, check: &str) -> Vec<&'a Value> {
    report["setup"]
        .as_array()
        .expect("setup checks")
        .iter()
        .filter(|c| c["subject"] == subject && c["check"] == check)
        .collect()
}

/// The line after the one starting with `line`: its fix.
#[track_caller]
fn fix_after<'a>(stdout: &'a str, line: &str) -> &'a str {
    let mut lines = stdout.lines();
    lines.find(|l| l.starts_with(line)).unwrap_or_else(|| panic!("no line {line:?} in\n{stdout}"));
    let fix = lines.next().unwrap_or_default();
    assert!(fix.starts_with("  fix: "), "a fix under {line:?}:\n{stdout}");
    fix
}

#[test]
fn a_broken_setup_names_each_problem_and_its_fix() {
    let ws = Workspace::new();
    // A Python fleet's runtime.toml with two keys this fleet does not have, and a coder table
    // for codex, whose CLI is not installed. The default coder, claude, is installed but signed
    // in nowhere (no key, no credentials file in its config directory).
    let config = ws.home().join("runtime.toml");
    std::fs::write(
        &config,
        "max_concurrent = 2\nretry_limit = 2\ntelegram_chat_id = \"-100\"\n\n[coders.codex]\ndefault_model = \"gpt-5.5\"\n",
    )
    .unwrap();
    script(&tools(&ws), "claude", "echo '2.1.0 (Claude Code)'");
    let claude_dir = ws.home().join("claude-config");
    std::fs::create_dir_all(&claude_dir).unwrap();

    let run: Run = doctor_command(&ws, &["doctor"])
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .output()
        .unwrap()
        .into();
    let run = run.fails(1);
    let out = &run.stdout;
    let file = config.display();

    let retry = format!(
        "✗ runtime.toml key: {file}:2: unknown key \"retry_limit\": the Python fleet's name for max_failures"
    );
    assert!(out.contains(&retry), "{out}");
    assert!(fix_after(out, &retry).contains("rename it to max_failures"), "{out}");
    assert!(fix_after(out, &retry).contains(&format!("fleet import {file}")), "{out}");
    let telegram = format!("✗ runtime.toml key: {file}:3: unknown key \"telegram_chat_id\"");
    assert!(out.contains(&telegram), "{out}");
    assert!(fix_after(out, &telegram).contains("fleet config unset telegram_chat_id"), "{out}");

    let codex = "✗ coder codex program: codex is not on the agents' PATH";
    assert!(out.contains(codex), "{out}");
    assert!(fix_after(out, codex).contains("fleet config set coders.codex.program=/path/to/codex"));

    assert!(out.contains("✓ coder claude (default) version: 2.1.0 (Claude Code)"), "{out}");
    let unsigned = "✗ coder claude (default) sign-in: not signed in: none of ANTHROPIC_API_KEY";
    assert!(out.contains(unsigned), "{out}");
    assert!(
        out.contains(&format!("no {}", claude_dir.join(".credentials.json").display())),
        "{out}"
    );
    assert!(fix_after(out, unsigned).contains("ANTHROPIC_API_KEY"), "{out}");

    // The store is fine, and the bd link is only a warning: `fleet run` makes it.
    assert!(out.contains("✓ store readiness:"), "{out}");
    let bd =
        format!("! agents' bd link: {} does not exist yet", ws.home().join("bin/bd").display());
    assert!(out.contains(&bd), "{out}");
    assert!(fix_after(out, &bd).contains("fleet link-bd"), "{out}");

    assert!(
        run.stderr.starts_with("error: 4 setup checks failed: runtime.toml key (×2), coder claude (default) sign-in, coder codex program"),
        "{}",
        run.stderr
    );

    let report = doctor_command(&ws, &["doctor", "--json"])
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["healthy"], true);
    let keys = setup_entries(&report, "runtime.toml", "key");
    assert_eq!(keys.len(), 2, "{report:#}");
    assert_eq!((keys[0]["line"].as_u64(), keys[1]["line"].as_u64()), (Some(2), Some(3)));
    assert!(keys.iter().all(|k| k["status"] == "problem" && k["fix"].is_string()));
    assert_eq!(setup_entries(&report, "coder codex", "program")[0]["status"], "problem");
    assert_eq!(setup_entries(&report, "coder claude (default)", "sign-in")[0]["status"], "problem");
    assert_eq!(setup_entries(&report, "agents' bd", "link")[0]["status"], "warning");
}

#[test]
fn a_healthy_setup_passes_shows_versions_and_never_a_secret() {
    let ws = Workspace::new();
    // The fake CLIs print the key they were given, as a careless CLI might.
    script(&tools(&ws), "claude", "echo \"9.9.9 (Claude Code) key=$ANTHROPIC_API_KEY\"");
    script(
        &tools(&ws),
        "codex",
        "case \"$1 $2\" in\n  'login status') echo \"Logged in using an API key - $SECRET_FOR_CODEX\";;\n  *) echo 'codex-cli 0.169.0';;\nesac",
    );
    std::fs::write(
        ws.home().join("runtime.toml"),
        "[coders.codex]\nenv = { SECRET_FOR_CODEX = \"codex-secret-value-1234567890\" }\n",
    )
    .unwrap();
    // A file holding a key is private in a healthy setup (else doctor warns).
    std::fs::set_permissions(
        ws.home().join("runtime.toml"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    // bd for agents: as `fleet run` leaves it.
    let bin = ws.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::fleet_bin().canonicalize().unwrap(), bin.join("bd"))
        .unwrap();

    let run: Run =
        doctor_command(&ws, &["doctor"]).env("ANTHROPIC_API_KEY", KEY).output().unwrap().into();
    let run = run.ok();
    let out = &run.stdout;
    for line in [
        "✓ runtime.toml file: ",
        &format!("✓ coder claude (default) program: {}", tools(&ws).join("claude").display()),
        "✓ coder claude (default) version: 9.9.9 (Claude Code) key=<redacted",
        "✓ coder claude (default) sign-in: ANTHROPIC_API_KEY is set",
        "✓ coder codex version: codex-cli 0.169.0",
        "✓ coder codex sign-in: `codex login status`: Logged in using an API key - <redacted",
        &format!("✓ agents' bd link: {} runs this fleet", bin.join("bd").display()),
    ] {
        assert!(out.contains(line), "{line:?} in\n{out}");
    }
    assert!(!out.contains("✗") && !out.contains("\n!"), "{out}");
    assert!(!out.contains(KEY) && !out.contains("codex-secret-value"), "no secret shown:\n{out}");
    assert_eq!(run.stderr, "");

    // A sign-in kept in a file counts as well as a key.
    let claude_dir = ws.home().join("claude-config");
    std::fs::create_dir_all(&claude_dir).unwrap();
    std::fs::write(claude_dir.join(".credentials.json"), "{}").unwrap();
    let run: Run = doctor_command(&ws, &["doctor", "--json"])
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .output()
        .unwrap()
        .into();
    let report = run.ok().json();
    let sign_in = setup_entries(&report, "coder claude (default)", "sign-in")[0];
    assert_eq!(sign_in["status"], "ok");
    assert_eq!(
        sign_in["detail"],
        format!("credentials in {}", claude_dir.join(".credentials.json").display())
    );
}

#[test]
fn doctor_without_a_workspace_says_how_to_make_one_and_still_checks_the_setup() {
    let ws = Workspace::empty();
    healthy_setup(&ws);
    let run: Run =
        doctor_command(&ws, &["doctor"]).env("ANTHROPIC_API_KEY", KEY).output().unwrap().into();
    let run = run.fails(1);
    let missing = format!("✗ store file: there is no store in {}", ws.beads_dir().display());
    assert!(run.stdout.contains(&missing), "{}", run.stdout);
    assert!(fix_after(&run.stdout, &missing).contains("fleet init"), "{}", run.stdout);
    assert!(run.stdout.contains("✓ coder claude (default) sign-in"), "{}", run.stdout);
}

/// A coder with accounts gets a sign-in check per account, with the account's variables set as
/// the supervisor sets them: one signed in by key, one by a config directory holding a login,
/// one pointing at an empty directory — which is named, with the fix.
#[test]
fn each_account_of_a_coder_is_checked_for_its_own_sign_in() {
    let ws = Workspace::new();
    healthy_setup(&ws);
    let signed_in = ws.home().join("claude-work");
    std::fs::create_dir_all(&signed_in).unwrap();
    std::fs::write(signed_in.join(".credentials.json"), "{}").unwrap();
    let empty = ws.home().join("claude-spare");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(
        ws.home().join("runtime.toml"),
        format!(
            "[[coders.claude.accounts]]\nname = \"keyed\"\nenv = {{ ANTHROPIC_API_KEY = \"{KEY}\" }}\n\n\
             [[coders.claude.accounts]]\nname = \"work\"\nenv = {{ CLAUDE_CONFIG_DIR = \"{}\" }}\n\n\
             [[coders.claude.accounts]]\nname = \"spare\"\nenv = {{ CLAUDE_CONFIG_DIR = \"{}\" }}\n",
            signed_in.display(),
            empty.display()
        ),
    )
    .unwrap();
    let run: Run = doctor_command(&ws, &["doctor"]).output().unwrap().into();
    let out = run.stdout.clone();
    let run = run.fails(1);
    assert!(
        out.contains("✓ coder claude (default) account keyed sign-in: ANTHROPIC_API_KEY is set"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "✓ coder claude (default) account work sign-in: credentials in {}",
            signed_in.join(".credentials.json").display()
        )),
        "{out}"
    );
    let missing = "✗ coder claude (default) account spare sign-in: not signed in";
    assert!(out.contains(missing), "{out}");
    assert!(!fix_after(&out, missing).is_empty(), "a fix follows:\n{out}");
    assert!(
        !out.contains("✗ coder claude (default) sign-in"),
        "no check without an account:\n{out}"
    );
    assert!(!out.contains(KEY), "no secret shown:\n{out}");
    assert!(run.stderr.contains("account spare sign-in"), "{}", run.stderr);
}

/// The ways a machine's store file is lost.
#[derive(Debug, Clone, Copy)]
enum Loss {
    /// Cut to half its length.
    Truncated,
    /// Every 4 KiB page holding one issue's title zeroed.
    Zeroed,
    /// Every byte of its header's first 16 inverted.
    HeaderFlipped,
    /// Deleted (a tidy-up such as `git clean -fdX`).
    Deleted,
}

impl Loss {
    fn inflict(self, path: &Path) {
        match self {
            Loss::Truncated => truncate(path),
            Loss::Zeroed => {
                let mut bytes = std::fs::read(path).unwrap();
                let mut at = 0;
                while let Some(found) = find(&bytes[at..], b"Job 7 with") {
                    let page = (at + found) / 4096 * 4096;
                    bytes[page..page + 4096].fill(0);
                    at = page + 4096;
                }
                assert!(at > 0, "the title is in the file");
                std::fs::write(path, bytes).unwrap();
            }
            Loss::HeaderFlipped => {
                let mut bytes = std::fs::read(path).unwrap();
                bytes[..16].iter_mut().for_each(|b| *b = !*b);
                std::fs::write(path, bytes).unwrap();
            }
            Loss::Deleted => std::fs::remove_file(path).unwrap(),
        }
    }
}

/// The command of the first `fix:` line of doctor's report, as the words between its first
/// pair of backticks, without the leading `fleet`.
fn fix_command(report: &str) -> Vec<String> {
    let line = report.lines().find(|l| l.trim_start().starts_with("fix:")).unwrap_or_else(|| {
        panic!("doctor names a fix:\n{report}");
    });
    let command = line.split('`').nth(1).unwrap_or_else(|| panic!("a command in: {line}"));
    let mut words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    assert_eq!(words.first().map(String::as_str), Some("fleet"), "{line}");
    words.remove(0);
    words
}

/// On a machine of a team syncing through a bare remote, each way of losing the store file —
/// cut short, zeroed, its header flipped, deleted — is named by `fleet doctor` with a fix, and
/// running exactly that fix brings back the queue the other machine has, with the machine's
/// configuration and replica, so it carries on syncing.
#[test]
fn doctors_fix_for_each_lost_store_restores_the_teams_queue() {
    for loss in [Loss::Truncated, Loss::Zeroed, Loss::HeaderFlipped, Loss::Deleted] {
        let fleet = common::remote::Fleet::new(2);
        let (a, b) = (&fleet.machines[0], &fleet.machines[1]);
        for k in 1..=12 {
            a.create(&format!("Job {k} with a title long enough to fill pages {k:>40}"), &[]);
        }
        let epic = a.create("the epic", &["-t", "epic"]);
        let child = a.create("its part", &["--parent", &epic]);
        a.run(&["comment", &child, "a note"]).ok();
        a.run(&["bd", "config", "set", "team.note", "kept"]).ok();
        fleet.sync(0);
        let replica = a.json(&["journal", "log", "-n", "1"])[0]["replica"].clone();
        b.create("made on b", &[]);
        fleet.sync(1);
        fleet.sync(0);
        let team = common::remote::export_all(b);

        loss.inflict(&store_file(a));
        if matches!(loss, Loss::HeaderFlipped | Loss::Deleted) {
            // Nothing to salvage: salvage points at the rebuild, not back at doctor.
            let salvage = a.run(&["doctor", "--salvage"]).fails(1);
            assert!(salvage.stderr.contains("hint: run `fleet rebuild`"), "{}", salvage.stderr);
        }
        let report = doctor(a, &[]);
        assert_no_panic(&report, "doctor");
        assert_eq!(report.code, 1, "{loss:?}: {}", report.stdout);
        let fix = fix_command(&report.stdout);
        let fixed = a.run(&fix.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(fixed.code, 0, "{loss:?}: `fleet {}`:\n{}", fix.join(" "), fixed.stderr);
        assert_eq!(common::remote::export_all(a), team, "{loss:?}: the team's queue is back");
        let note = a.run(&["bd", "config", "get", "team.note"]).ok().stdout;
        assert!(note.contains("kept"), "{loss:?}: configuration is back: {note}");
        doctor(a, &[]).ok();

        let after = a.create("after the repair", &[]);
        fleet.sync(0);
        let newest = a.json(&["journal", "log", "-n", "1"]);
        assert_eq!(newest[0]["replica"], replica, "{loss:?}: a carries on as itself");
        fleet.sync(1);
        assert!(common::remote::export_all(b).contains(&after), "{loss:?}");
    }
}

/// A store file deleted beside an intact journal is a store to rebuild, not a workspace to
/// create: commands and doctor say `fleet rebuild`.
#[test]
fn a_deleted_store_beside_its_journal_says_rebuild() {
    let ws = Workspace::new();
    let id = ws.create("kept in the journal", &[]);
    ws.run(&["journal", "commit"]).ok();
    std::fs::remove_file(store_file(&ws)).unwrap();
    for args in [&["list"][..], &["show", &id], &["create", "another"]] {
        let run = ws.run(args).fails(1);
        assert!(run.stderr.contains("fleet rebuild"), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("fleet init"), "{args:?}: {}", run.stderr);
    }
    let bd = ws.run(&["bd", "list"]);
    assert!(bd.stderr.contains("fleet rebuild"), "{}", bd.stderr);
    let report = doctor(&ws, &[]).fails(1);
    assert_eq!(fix_command(&report.stdout), ["rebuild"]);
    ws.run(&["rebuild"]).ok();
    assert_eq!(ws.json(&["show", &id])[0]["title"], "kept in the journal");
}

/// A GitHub token shape (fake).
const GITHUB: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

#[test]
fn secrets_already_in_the_queue_are_found_with_the_way_to_purge_them() {
    let ws = Workspace::new();
    // An import keeps its source's words: a queue written before writes were masked.
    let probe = ws.create("Probe", &[]);
    let prefix = probe.split_once('-').unwrap().0.to_owned();
    let file = ws.home().join("old.jsonl");
    let line = serde_json::json!({
        "id": format!("{prefix}-old1"), "title": "Deploy", "status": "open", "priority": 2,
        "issue_type": "task", "notes": format!("the deploy key is {KEY}"),
        "created_at": "2025-11-02T21:58:07Z", "updated_at": "2025-11-02T21:58:07Z",
        "comments": [{"id": 1, "issue_id": format!("{prefix}-old1"), "author": "agent",
                      "text": format!("pushed with {GITHUB}"), "created_at": "2025-11-02T21:58:07Z"}]
    });
    std::fs::write(&file, format!("{line}\n")).unwrap();
    ws.run(&["import", file.to_str().unwrap()]).ok();

    let run = doctor(&ws, &[]).fails(1);
    let found =
        run.stdout.lines().find(|l| l.starts_with("✗ queue secrets: ")).unwrap_or_else(|| {
            panic!("no secrets line:\n{}", run.stdout);
        });
    assert!(found.contains(&format!("1 issue ({prefix}-old1) and 1 op of the journal")), "{found}");
    // The key is known by its shape and as the value of the variable that holds it.
    assert!(found.contains("ghp_<redacted>"), "{found}");
    assert!(found.contains("<redacted:ANTHROPIC_API_KEY>"), "{found}");
    let fix = fix_after(&run.stdout, "✗ queue secrets: ");
    assert!(fix.contains("rotate each key"), "{fix}");
    assert!(fix.contains("fleet export --all --redact -o clean.jsonl"), "{fix}");
    assert!(fix.contains("git push REMOTE --delete refs/fleet/journal/"), "{fix}");
    for output in [&run.stdout, &run.stderr] {
        assert!(!output.contains(GITHUB) && !output.contains(KEY), "a secret shown:\n{output}");
    }

    // The purge's first step: an export with every text masked.
    let plain = ws.run(&["export", "--all"]).ok().stdout;
    assert!(plain.contains(GITHUB), "the store holds it: {plain}");
    let redacted = ws.run(&["export", "--all", "--redact"]).ok().stdout;
    assert!(!redacted.contains(GITHUB) && !redacted.contains(KEY), "{redacted}");
    let old: Value = redacted
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|record| record["title"] == "Deploy")
        .unwrap();
    assert_eq!(old["comments"][0]["text"], "pushed with ghp_<redacted>", "{old}");
}

/// Issue 27: codex signed in the way its configured provider signs in (a custom
/// `model_provider` whose key is set is signed in, though `codex login status` says "Not
/// logged in"); a program path that does not exist is named as such, not as "not on PATH".
#[test]
fn codex_with_a_custom_provider_is_signed_in_by_its_key() {
    let ws = Workspace::new();
    let codex_home = ws.home().join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        "model_provider = \"local\"\n\n[model_providers.local]\nname = \"Local\"\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"LOCAL_API_KEY\"\n",
    )
    .unwrap();
    std::fs::write(
        ws.home().join("runtime.toml"),
        format!(
            "coder = \"codex\"\n\n[coders.codex]\nenv = {{ CODEX_HOME = {:?} }}\n\n[coders.ghost]\nargv = [\"/nonexistent/ghost-cli\", \"{{prompt}}\"]\n",
            codex_home.display().to_string()
        ),
    )
    .unwrap();
    script(
        &tools(&ws),
        "codex",
        "case \"$1\" in --version) echo 'codex-cli 0.169.0';; *) echo 'Not logged in'; exit 1;; esac",
    );
    let run: Run = doctor_command(&ws, &["doctor"])
        .env("LOCAL_API_KEY", "local-key-123456789")
        .output()
        .unwrap()
        .into();
    let out = &run.stdout;
    assert!(
        out.contains("✓ coder codex (default) sign-in: provider local: LOCAL_API_KEY is set"),
        "{out}"
    );
    assert!(out.contains("✗ coder ghost program: /nonexistent/ghost-cli does not exist"), "{out}");
    assert!(!out.contains("local-key-123456789"), "{out}");

    let unset: Run = doctor_command(&ws, &["doctor"]).output().unwrap().into();
    let line = "✗ coder codex (default) sign-in: not signed in: provider local takes its key from LOCAL_API_KEY";
    assert!(unset.stdout.contains(line), "{}", unset.stdout);
    assert!(fix_after(&unset.stdout, line).contains("set LOCAL_API_KEY"), "{}", unset.stdout);
}

/// Issue 27: a hand-written runtime.toml that holds keys and others may read is flagged, with
/// the variables named and never their values.
#[test]
fn a_world_readable_runtime_toml_holding_keys_is_flagged() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    let config = ws.home().join("runtime.toml");
    std::fs::write(
        &config,
        "[coders.claude.env]\nANTHROPIC_API_KEY = \"handwritten-key-0123456789\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let run = doctor(&ws, &[]);
    let line = format!(
        "! runtime.toml file: {} holds secrets (ANTHROPIC_API_KEY) and others may read it (mode 0644)",
        config.display()
    );
    assert!(run.stdout.contains(&line), "{}", run.stdout);
    assert!(fix_after(&run.stdout, &line).contains("chmod 600"), "{}", run.stdout);
    assert!(!run.stdout.contains("handwritten-key-0123456789"), "{}", run.stdout);
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!doctor(&ws, &[]).stdout.contains("others may read it"));
}

/// Issue 28: a salvage of a healthy store is refused (it exited 0 and swapped a copy in),
/// naming `--force`; nothing is swapped.
#[test]
fn salvage_of_a_healthy_store_says_there_is_nothing_to_salvage() {
    let ws = Workspace::new();
    let id = ws.create("healthy", &[]);
    let refused = ws.run(&["doctor", "--salvage"]).fails(1);
    assert!(
        refused.stderr.contains("is healthy: there is nothing to salvage"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--salvage --force"), "{}", refused.stderr);
    let kept = std::fs::read_dir(ws.beads_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("beads.db.damaged-"))
        .count();
    assert_eq!(kept, 0, "nothing was swapped");
    assert_eq!(ids_of(&ws.json(&["list"])), [id]);
}

/// Issue 28: a salvage while four processes write loses none of their acknowledged writes
/// (on main 67 of 505 were lost: they were committed to the old file after its copy was
/// read). The salvage holds the store's write lock from the copy to the swap; the writers
/// wait for it, then write the new file.
#[test]
fn salvage_under_four_writers_loses_no_acknowledged_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let ws = Workspace::new();
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let writers: Vec<_> = (0..4)
        .map(|n| {
            let (stop, acknowledged) = (Arc::clone(&stop), Arc::clone(&acknowledged));
            let mut command = ws.command(&["create", &format!("writer {n}"), "--silent"]);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let run: Run = command.output().unwrap().into();
                    assert_ne!(run.code, 101, "{}", run.stderr);
                    if run.code == 0 {
                        acknowledged.lock().unwrap().push(run.stdout.trim().to_string());
                    }
                }
            })
        })
        .collect();
    let count = || acknowledged.lock().unwrap().len();
    common::poll_until("writes before the salvage", common::WAIT, || (count() >= 12).then_some(()));
    let salvage = ws.run(&["doctor", "--salvage", "--force", "--json"]).ok().json();
    let before = count();
    common::poll_until("writes after the salvage", common::WAIT, || {
        (count() >= before + 12).then_some(())
    });
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }

    let stored: std::collections::BTreeSet<String> =
        ids_of(&ws.json(&["list", "--all", "--limit", "0"])).into_iter().collect();
    let acknowledged = acknowledged.lock().unwrap();
    let lost: Vec<&String> = acknowledged.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}\nsalvage: {salvage}");
    assert_eq!(stored.len(), acknowledged.len(), "nothing unacknowledged was added");
}

/// What a user reads of a store, each a command whose output a flip must not change silently:
/// the export (every issue with its edges, comments and labels), and the answers served by
/// the tables that carry no checksum of their own: the order index (`list`), the label index
/// (`list --label`), the ready index (`ready`) and the blocked flags (`blocked`).
const READS: [&[&str]; 5] = [
    &["export"],
    &["list", "--all", "--json"],
    &["list", "--all", "--label", "keep", "--json"],
    &["ready", "--json"],
    &["blocked", "--json"],
];

/// How many flips [`one_byte_flips_never_change_data_silently`] makes: `FLEET_FLIPS`, else a
/// number small enough for a test run on two cores.
fn flips() -> usize {
    std::env::var("FLEET_FLIPS").ok().and_then(|n| n.parse().ok()).unwrap_or(100)
}

/// Issue 28: one-byte flips never change data silently. A store with open, closed and blocked
/// issues, close reasons, descriptions, comments, edges and labels gets single-byte flips
/// (`FLEET_FLIPS`, 100 by default), each on a fresh copy, over the bytes of its file that hold
/// something (free pages are zeros), in the pages of every table. After each, every command of
/// [`READS`] either prints exactly what it printed before or fails naming `fleet doctor`;
/// where one exits 0 with a changed answer (a flip in an index, whose entries carry no
/// checksum), `fleet doctor` must name the damage — a flip is *silent* only when an answer
/// changed and doctor calls the store healthy. Nothing panics. The counts are printed. (On
/// main 19 of 200 flips were silent for the export alone.)
#[test]
fn one_byte_flips_never_change_data_silently() {
    let (ws, ids) = populated(6);
    healthy_setup(&ws);
    ws.run(&["update", &ids[2], "-d", "a description worth keeping"]).ok();
    ws.run(&["close", &ids[3], "--reason", "done for good"]).ok();
    ws.run(&["dep", "add", &ids[4], &ids[2], "--type", "related"]).ok();
    ws.run(&["comment", &ids[4], "second note"]).ok();
    ws.run(&["label", "add", &ids[4], "keep"]).ok();
    let path = store_file(&ws);
    let pristine = std::fs::read(&path).unwrap();
    let answers: Vec<String> = READS.iter().map(|args| ws.run(args).ok().stdout).collect();
    let held: Vec<usize> = (0..pristine.len()).filter(|&at| pristine[at] != 0).collect();
    let (mut identical, mut named, mut found_by_doctor, mut silent) = (0, 0, 0, Vec::new());
    let mut seed: u64 = 0x2828_2828;
    let count = flips();
    for _ in 0..count {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let at = held[(seed >> 33) as usize % held.len()];
        let mut bytes = pristine.clone();
        bytes[at] ^= 1 << ((seed >> 20) % 8);
        std::fs::write(&path, &bytes).unwrap();
        let mut changed = Vec::new();
        let mut refused = false;
        for (args, before) in READS.iter().zip(&answers) {
            let run = ws.run(args);
            assert_no_panic(&run, &format!("{args:?} after a flip at {at}"));
            match run.code {
                0 if run.stdout == *before => {}
                0 => changed.push(args[..2.min(args.len())].join(" ")),
                _ if run.stderr.contains("fleet doctor") => refused = true,
                code => panic!(
                    "flip at {at}: {args:?} exit {code} without naming doctor:\n{}",
                    run.stderr
                ),
            }
        }
        if changed.is_empty() {
            if refused {
                named += 1
            } else {
                identical += 1
            }
            continue;
        }
        let report = doctor(&ws, &["--json"]);
        assert_no_panic(&report, &format!("doctor after a flip at {at}"));
        if report.code != 0 && report.json()["healthy"] == false {
            found_by_doctor += 1;
        } else {
            silent.push((at, changed));
        }
    }
    std::fs::write(&path, &pristine).unwrap();
    eprintln!(
        "{count} one-byte flips: {identical} identical, {named} named as damage by the command, \
         {found_by_doctor} changed an answer and named by doctor, {} silent",
        silent.len()
    );
    assert!(silent.is_empty(), "flips at {silent:?} changed answers silently");
}

/// Issue 28: a flip in the label index, whose entries carry no checksum of their own, moves an
/// issue out of `list --label` with exit 0. `fleet doctor` names it — the page no longer matches
/// its checksum, and the label index disagrees with the issue rows — and running its fix
/// brings the answer back.
#[test]
fn a_flip_in_the_label_index_is_named_by_doctor_and_its_fix_repairs_it() {
    let (ws, ids) = populated(3);
    let path = store_file(&ws);
    let mut bytes = std::fs::read(&path).unwrap();
    // The index's key holds the label bare; the rows and the journal hold it quoted.
    let at = (1..bytes.len() - 4)
        .find(|&at| &bytes[at..at + 4] == b"keep" && bytes[at - 1] != b'"')
        .expect("the label index is in the file");
    bytes[at] = b'j';
    std::fs::write(&path, bytes).unwrap();
    let missed = ids_of(&ws.json(&["list", "--label", "keep"]));
    assert!(missed.is_empty(), "the flip hides {} from list --label: {missed:?}", ids[0]);

    let report = doctor(&ws, &[]);
    assert_no_panic(&report, "doctor");
    assert_eq!(report.code, 1, "{}", report.stdout);
    assert!(
        report.stdout.contains("\n✗ store pages: a page does not match its checksum"),
        "{}",
        report.stdout
    );
    assert!(
        report.stdout.contains(&format!("{} carries \"keep\", the label index not", ids[0])),
        "{}",
        report.stdout
    );
    let fix = fix_command(&report.stdout);
    ws.run(&fix.iter().map(String::as_str).collect::<Vec<_>>()).ok();
    assert_eq!(ids_of(&ws.json(&["list", "--label", "keep"])), [ids[0].clone()]);
    assert_eq!(doctor(&ws, &["--json"]).ok().json()["healthy"], true);
}

/// Runs `command`, failing the test (naming `what`) if it has not ended within
/// [`common::WAIT`]: a command that hangs on a damaged store is a finding like a panic.
fn finish(mut command: Command, what: &str) -> Run {
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || sent.send(child.wait_with_output().unwrap()));
    match received.recv_timeout(common::WAIT) {
        Ok(output) => output.into(),
        Err(_) => {
            // SAFETY: kill only signals the child this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} did not end");
        }
    }
}

/// `fleet serve` on a damaged store: it either refuses to start (exit 1, naming the damage) or
/// serves a write and stops on SIGTERM; never a panic.
fn serve_once(ws: &Workspace, what: &str) {
    let mut serve = ws.command(&["serve"]);
    serve.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    let mut child = serve.stderr(std::process::Stdio::piped()).spawn().unwrap();
    let socket = ws.beads_dir().join("fleet.sock");
    let serving = common::poll_until("fleet serve to serve or end", common::WAIT, || {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Some(true);
        }
        child.try_wait().unwrap().map(|_| false)
    });
    if serving {
        assert_no_panic(&finish(ws.command(&["create", "through the server"]), what), what);
        // SAFETY: SIGTERM only goes to the server this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    }
    let output = child.wait_with_output().unwrap();
    let run: Run = output.into();
    assert_no_panic(&run, &format!("serve ({what})"));
}

/// How many pages apart the pages [`every_command_survives_any_zeroed_page`] zeroes are:
/// `FLEET_PAGE_STRIDE`, else every third page that holds something.
fn page_stride() -> usize {
    std::env::var("FLEET_PAGE_STRIDE").ok().and_then(|n| n.parse().ok()).unwrap_or(3).max(1)
}

/// Issue 28: no panic from a damaged store on any path. A small store (tasks of the exec
/// coder, an edge, a comment, a label, a closed issue, a journal synced to a bare remote) has
/// each of its pages that hold something zeroed in turn (every `FLEET_PAGE_STRIDE`th; all with
/// 1), and on each copy every command family runs: the reads (list, show, ready, blocked,
/// stats, search, export), the writes (create, close, import, sync), `fleet serve` with a write
/// through it, `fleet run --until-idle`, doctor, and rebuild from the journal — none exits 101
/// or prints "panicked", none hangs, and the rebuild leaves a store that lists again.
#[test]
fn every_command_survives_any_zeroed_page() {
    let fleet = common::remote::Fleet::new(1);
    let ws = &fleet.machines[0];
    healthy_setup(ws);
    let ids: Vec<String> = (0..4).map(|_| ws.create("true", &["--coder", "exec"])).collect();
    ws.run(&["dep", "add", &ids[1], &ids[0]]).ok();
    ws.run(&["comment", &ids[0], "a note"]).ok();
    ws.run(&["label", "add", &ids[0], "keep"]).ok();
    ws.run(&["close", &ids[3], "--reason", "done"]).ok();
    fleet.sync(0);
    let export = ws.home().join("queue.jsonl");
    ws.run(&["export", "-o", export.to_str().unwrap()]).ok();
    let path = store_file(ws);
    let pristine = std::fs::read(&path).unwrap();
    let pages: Vec<usize> = (0..pristine.len() / 4096)
        .filter(|page| pristine[page * 4096..(page + 1) * 4096].iter().any(|b| *b != 0))
        .step_by(page_stride())
        .collect();
    let commands: [&[&str]; 14] = [
        &["list", "--all"],
        &["show", &ids[0]],
        &["ready"],
        &["blocked"],
        &["stats"],
        &["search", "true"],
        &["export"],
        &["create", "made on a damaged store"],
        &["close", &ids[2]],
        &["import", export.to_str().unwrap()],
        &["sync"],
        &["run", "--until-idle"],
        &["doctor"],
        &["rebuild", "--force"],
    ];
    for page in &pages {
        let mut bytes = pristine.clone();
        bytes[page * 4096..(page + 1) * 4096].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        for args in &commands[..commands.len() - 2] {
            let what = format!("{args:?} with page {page} zeroed");
            assert_no_panic(&finish(ws.command(args), &what), &what);
        }
        serve_once(ws, &format!("page {page} zeroed"));
        for args in &commands[commands.len() - 2..] {
            let what = format!("{args:?} with page {page} zeroed");
            assert_no_panic(&finish(ws.command(args), &what), &what);
        }
        ws.run(&["list", "--all"]).ok();
    }
    eprintln!(
        "{} pages zeroed in turn, {} commands on each: no panic",
        pages.len(),
        commands.len() + 1
    );
}

/// Issue 31: `bd repair` and `bd recover` (where beads' agent docs send agents) check the store,
/// leave a healthy one as it is (exit 0), and salvage a damaged one.
#[test]
fn bd_repair_and_recover_salvage_only_a_damaged_store() {
    let (ws, ids) = populated(6);
    let healthy = ws.run(&["bd", "repair"]).ok();
    assert!(healthy.stdout.contains("✓ store issues"), "{}", healthy.stdout);
    assert!(!store_file(&ws).with_extension("db.damaged").exists());

    break_row(&store_file(&ws), "MARK4END");
    let repaired = ws.run(&["bd", "recover"]).ok();
    assert!(
        repaired.stderr.contains("repairing it with fleet's doctor --salvage"),
        "{}",
        repaired.stderr
    );
    let listed = ids_of(&ws.json(&["list", "--limit", "0"]));
    assert_eq!(listed.len(), 5, "every undamaged issue is back: {listed:?}");
    assert!(!listed.contains(&ids[3]));
    doctor(&ws, &[]).ok();
}

#[test]
fn an_instruction_file_agents_load_twice_is_flagged_with_its_cost() {
    let ws = Workspace::new();
    // A repository whose CLAUDE.md is symlinked into the directory agents work in, and a task
    // ledger saying an agent worked there just now.
    let repo = ws.home().join("repo");
    let app = repo.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "Run cargo test before closing.\n".repeat(40)).unwrap();
    std::os::unix::fs::symlink(repo.join("CLAUDE.md"), app.join("CLAUDE.md")).unwrap();
    let task = ws.home().join("tasks").join("t-1");
    std::fs::create_dir_all(&task).unwrap();
    let ledger = serde_json::json!({"attempts": [{
        "attempt": 1, "attempt_id": "A1", "coder": "claude", "model": "sonnet",
        "cwd": app.display().to_string(), "started_at": jiff::Timestamp::now().to_string(),
    }]});
    std::fs::write(task.join("ledger.json"), ledger.to_string()).unwrap();

    let run = doctor(&ws, &["--json"]).ok();
    let report = run.json();
    let twice = setup_entries(&report, "instruction files", "loaded twice");
    assert_eq!(twice.len(), 1, "{report:#}");
    assert_eq!(twice[0]["status"], "warning");
    let detail = twice[0]["detail"].as_str().unwrap();
    // 1,240 bytes: about 310 tokens paid a second time, on the one attempt of the last day.
    assert!(
        detail.contains("2 times (one file)") && detail.contains("about 310 tokens"),
        "{detail}"
    );
    assert!(detail.contains(&app.join("CLAUDE.md").display().to_string()), "{detail}");

    std::fs::remove_file(app.join("CLAUDE.md")).unwrap();
    let report = doctor(&ws, &["--json"]).ok().json();
    let fine = setup_entries(&report, "instruction files", "size");
    assert_eq!(fine[0]["status"], "ok", "{report:#}");
}
