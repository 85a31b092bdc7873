//! The git hooks beads installs call back into `bd` and pass its exit code on to git: with
//! fleet answering as `bd`, `git commit` goes through, and a tracked JSONL export is refreshed
//! and staged by the pre-commit hook.

use std::path::Path;
use std::process::Command;

use crate::common::fleet_bin;

/// Runs `program args` in `dir` with `bd` (a link to fleet) first on PATH; returns (exit
/// code, stdout + stderr).
fn run_in(dir: &Path, bin: &Path, program: &str, args: &[&str]) -> (i32, String) {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env_remove("BEADS_DIR")
        .env_remove("FLEET_HOME")
        .output()
        .expect("run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

/// A git repository with a beads workspace and `bd` on a private PATH.
fn repo() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(fleet_bin(), bin.join("bd")).unwrap();
    let repo = root.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    assert_eq!(run_in(&repo, &bin, "git", &["init", "-q"]).0, 0);
    let (code, text) = run_in(&repo, &bin, "bd", &["init", "-q", "--prefix", "hk"]);
    assert_eq!(code, 0, "{text}");
    (root, bin)
}

#[test]
fn a_beads_pre_commit_hook_lets_git_commit_through() {
    let (root, bin) = repo();
    let repo = root.path().join("repo");
    for (name, line) in [
        ("pre-commit", "exec bd hooks run pre-commit \"$@\""),
        ("post-merge", "exec bd hook post-merge \"$@\""),
    ] {
        let hook = repo.join(".git/hooks").join(name);
        std::fs::write(&hook, format!("#!/bin/sh\n{line}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(repo.join("f"), "x").unwrap();
    assert_eq!(run_in(&repo, &bin, "git", &["add", "f"]).0, 0);
    let (code, text) = run_in(&repo, &bin, "git", &["commit", "-q", "-m", "x"]);
    assert_eq!(code, 0, "git commit went through: {text}");
}

#[test]
fn the_pre_commit_hook_refreshes_and_stages_a_tracked_export() {
    let (root, bin) = repo();
    let repo = root.path().join("repo");
    let (code, text) = run_in(&repo, &bin, "bd", &["hooks", "install"]);
    assert_eq!(code, 0, "{text}");
    assert!(repo.join(".git/hooks/pre-commit").is_file());
    // Track the export, then change the queue: the commit must carry the new issue.
    run_in(&repo, &bin, "bd", &["export", "-o", ".beads/issues.jsonl"]);
    run_in(&repo, &bin, "git", &["add", ".beads/issues.jsonl"]);
    run_in(&repo, &bin, "git", &["commit", "-q", "-m", "track the export"]);
    let (code, text) = run_in(&repo, &bin, "bd", &["create", "Shipped with the commit"]);
    assert_eq!(code, 0, "{text}");
    std::fs::write(repo.join("g"), "y").unwrap();
    run_in(&repo, &bin, "git", &["add", "g"]);
    let (code, text) = run_in(&repo, &bin, "git", &["commit", "-q", "-m", "work"]);
    assert_eq!(code, 0, "{text}");
    let (_, committed) = run_in(&repo, &bin, "git", &["show", "HEAD:.beads/issues.jsonl"]);
    assert!(committed.contains("Shipped with the commit"), "{committed}");
    let (code, listed) = run_in(&repo, &bin, "bd", &["hooks", "list"]);
    assert_eq!(code, 0);
    assert!(listed.contains("pre-commit") && listed.contains("installed"), "{listed}");
}
