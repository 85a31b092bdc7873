//! Issue 11 ("Beads compatibility, round two"): what a team meets pointing an existing beads
//! project at fleet — session hooks outside any project, PRIME.md, bd's JSON shapes without
//! fleet's fields, a Dolt-era `.beads/`, `config.yaml`'s prefix, `BEADS_DB`, custom types and
//! statuses, and `rename-prefix`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::agent_habits::run;
use crate::common::fleet_bin;

/// A scratch directory with `bd` on a private PATH: (guard, bin, work dir).
pub(super) fn scratch() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    let work = root.path().join("work");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(fleet_bin(), bin.join("bd")).unwrap();
    (root, bin, work)
}

#[track_caller]
fn ok(bin: &Path, dir: &Path, line: &str) -> String {
    let (code, stdout, stderr) = run(bin, dir, line);
    assert_eq!(code, 0, "bd {line}\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn prime_is_silent_outside_a_project_and_honours_prime_md() {
    let (_root, bin, work) = scratch();
    let (code, stdout, stderr) = run(&bin, &work, "prime");
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "", ""));
    let envelope: Value = serde_json::from_str(&ok(&bin, &work, "prime --hook-json")).unwrap();
    assert_eq!(envelope["hookSpecificOutput"]["additionalContext"], "");

    ok(&bin, &work, "init -q --prefix pm");
    std::fs::write(work.join(".beads/PRIME.md"), "Our own rules.\n").unwrap();
    assert_eq!(ok(&bin, &work, "prime"), "Our own rules.\n");
    assert!(ok(&bin, &work, "prime --export").contains("bd ready"));
    let envelope: Value = serde_json::from_str(&ok(&bin, &work, "prime --hook-json")).unwrap();
    assert_eq!(envelope["hookSpecificOutput"]["additionalContext"], "Our own rules.\n");
}

#[test]
fn bd_json_rows_carry_no_fleet_fields() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix js");
    let id = ok(&bin, &work, "q 'Has a working directory'");
    let home = work.canonicalize().unwrap().display().to_string();
    for line in ["ready --json", "list --json", &format!("show {} --json", id.trim())] {
        let out = ok(&bin, &work, line);
        assert!(!out.contains("\"fleet\""), "bd {line}: {out}");
        assert!(!out.contains(&home), "bd {line} leaks the working directory: {out}");
    }
}

#[test]
fn init_in_a_dolt_era_workspace_keeps_beads_metadata_and_its_prefix() {
    let (_root, bin, work) = scratch();
    let beads = work.join(".beads");
    std::fs::create_dir_all(beads.join("dolt")).unwrap();
    let metadata = "{\"database\":\"dolt\",\"backend\":\"dolt\"}\n";
    std::fs::write(beads.join("metadata.json"), metadata).unwrap();
    std::fs::write(beads.join("config.yaml"), "# beads\nissue-prefix: \"api\"\n").unwrap();
    let (code, stdout, stderr) = run(&bin, &work, "init");
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Issue prefix: api"), "{stdout}");
    assert!(stderr.contains("Kept beads' metadata.json (backend dolt)"), "{stderr}");
    assert!(stderr.contains("--via-bd"), "{stderr}");
    assert_eq!(std::fs::read_to_string(beads.join("metadata.json")).unwrap(), metadata);
    assert!(ok(&bin, &work, "q one").starts_with("api-"));
}

#[test]
fn beads_db_and_bd_db_name_the_workspace() {
    let (_root, bin, work) = scratch();
    let project = work.join("project");
    std::fs::create_dir_all(&project).unwrap();
    ok(&bin, &project, "init -q --prefix env");
    ok(&bin, &project, "q one");
    let db = project.join(".beads/beads.db");
    for var in ["BEADS_DB", "BD_DB"] {
        let (code, stdout, stderr) = run(&bin, &work, "count --json");
        assert_ne!(code, 0, "no workspace without the variable: {stdout}{stderr}");
        let output = std::process::Command::new(bin.join("bd"))
            .arg("count")
            .current_dir(&work)
            .env_clear()
            .env("HOME", &work)
            .env(var, &db)
            .output()
            .unwrap();
        assert!(output.status.success(), "{var}: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "1", "{var}");
    }
}

#[test]
fn custom_types_and_statuses_are_honoured() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix ct");
    let (code, _, stderr) = run(&bin, &work, "create x -t research");
    assert_eq!(code, 1);
    assert!(stderr.contains("invalid issue type: research"), "{stderr}");
    ok(&bin, &work, "config set types.custom research,ops");
    ok(&bin, &work, "config set status.custom review:wip");
    let id = ok(&bin, &work, "create x -t research --silent");
    ok(&bin, &work, &format!("update {} --status review", id.trim()));
    let shown: Value =
        serde_json::from_str(&ok(&bin, &work, &format!("show {} --json", id.trim()))).unwrap();
    assert_eq!(
        (shown[0]["issue_type"].as_str(), shown[0]["status"].as_str()),
        (Some("research"), Some("review"))
    );
}

#[test]
fn rename_prefix_moves_ids_edges_comments_and_references() {
    let (_root, bin, work) = scratch();
    ok(&bin, &work, "init -q --prefix old");
    let a = ok(&bin, &work, "q first").trim().to_string();
    let b = ok(&bin, &work, &format!("create 'after {a}' --deps {a} --silent")).trim().to_string();
    ok(&bin, &work, &format!("comments add {a} 'see {b}'"));
    let (code, _, stderr) = run(&bin, &work, "config set issue_prefix new");
    assert_eq!(code, 1);
    assert!(stderr.contains("rename-prefix"), "{stderr}");
    assert!(ok(&bin, &work, "rename-prefix new --dry-run").contains(&format!("{a} -> new-")));
    ok(&bin, &work, "rename-prefix new");
    let (new_a, new_b) = (a.replacen("old-", "new-", 1), b.replacen("old-", "new-", 1));
    let shown: Value =
        serde_json::from_str(&ok(&bin, &work, &format!("show {new_b} --json"))).unwrap();
    assert_eq!(shown[0]["title"], format!("after {new_a}"));
    assert_eq!(shown[0]["dependencies"][0]["id"], new_a.as_str());
    assert!(ok(&bin, &work, &format!("comments {new_a}")).contains(&format!("see {new_b}")));
    assert!(ok(&bin, &work, "q next").starts_with("new-"));
    assert!(!ok(&bin, &work, "list --all").contains("old-"));
}
