//! The git hooks beads installs call back into `bd` and pass its exit code on to git: with
//! fleet answering as `bd`, `git commit` goes through; the pre-commit hook exports only as
//! beads 1.0's does (`export.auto` on and `.beads/` paths staged) and never drops a record of
//! the tracked file; post-merge imports what teammates pushed; a team's own hook chained as
//! `<hook>.old` runs first and can stop the commit.

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

/// Writes an executable script.
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `run_in`, asserting success.
fn ok(dir: &Path, bin: &Path, program: &str, args: &[&str]) -> String {
    let (code, text) = run_in(dir, bin, program, args);
    assert_eq!(code, 0, "{program} {args:?}: {text}");
    text
}

fn committed_export(repo: &Path, bin: &Path) -> String {
    ok(repo, bin, "git", &["show", "HEAD:.beads/issues.jsonl"])
}

/// What beads' own files carry and fleet's default export leaves out.
const TOMBSTONE: &str = r#"{"id":"hk-gone","title":"deleted in beads","status":"tombstone","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-02T00:00:00Z"}"#;
const AGENT: &str = r#"{"id":"hk-agent1","title":"an agent bead","status":"open","priority":2,"issue_type":"agent","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"}"#;

/// Issue 31, item 3: a commit that stages nothing under `.beads/` leaves the tracked export as
/// it is; with `export.auto` on and a `.beads/` path staged, the hook writes the store's issues
/// and keeps beads' tombstones and infra records; `export.git-add` stages the result.
#[test]
fn the_pre_commit_hook_exports_only_as_beads_does_and_keeps_every_record() {
    let (root, bin) = repo();
    let repo = root.path().join("repo");
    ok(&repo, &bin, "bd", &["hooks", "install"]);
    ok(&repo, &bin, "bd", &["create", "Tracked before"]);
    ok(&repo, &bin, "bd", &["export", "-o", ".beads/issues.jsonl"]);
    let export = repo.join(".beads/issues.jsonl");
    let mut text = std::fs::read_to_string(&export).unwrap();
    text.push_str(&format!("{AGENT}\n{TOMBSTONE}\n"));
    std::fs::write(&export, &text).unwrap();
    ok(&repo, &bin, "git", &["add", ".beads/issues.jsonl"]);
    ok(&repo, &bin, "git", &["commit", "-q", "-m", "track the export"]);
    assert_eq!(committed_export(&repo, &bin), text, "export.auto is off: written as staged");

    // An unrelated commit changes nothing in the tracked file, even with export.auto on.
    ok(&repo, &bin, "bd", &["config", "set", "export.auto", "true"]);
    ok(&repo, &bin, "bd", &["create", "Made after"]);
    std::fs::write(repo.join("g"), "y").unwrap();
    ok(&repo, &bin, "git", &["add", "g"]);
    ok(&repo, &bin, "git", &["commit", "-q", "-m", "unrelated"]);
    assert_eq!(committed_export(&repo, &bin), text, "nothing under .beads/ was staged");

    // The working file (auto-exported) kept beads' records; so does the hook's export.
    let worked = std::fs::read_to_string(&export).unwrap();
    for line in [AGENT, TOMBSTONE] {
        assert!(worked.contains(line), "auto-export kept {line}: {worked}");
    }
    ok(&repo, &bin, "git", &["checkout", "--", ".beads/issues.jsonl"]);
    ok(&repo, &bin, "bd", &["config", "set", "export.git-add", "true"]);
    std::fs::write(repo.join(".beads/notes.md"), "staged under .beads").unwrap();
    ok(&repo, &bin, "git", &["add", ".beads/notes.md"]);
    ok(&repo, &bin, "git", &["commit", "-q", "-m", "with a .beads path"]);
    let committed = committed_export(&repo, &bin);
    assert!(committed.contains("Made after"), "{committed}");
    assert!(committed.contains("Tracked before"), "{committed}");
    assert!(committed.contains(AGENT) && committed.contains(TOMBSTONE), "{committed}");
    let (_, status) = run_in(&repo, &bin, "git", &["status", "--porcelain"]);
    assert!(!status.contains("issues.jsonl"), "the export was staged: {status}");
}

/// Issue 31, item 5: `bd hooks install --chain` keeps the team's hook as `<hook>.old`; it runs
/// first, with git's arguments, and its failure stops the commit.
#[test]
fn a_chained_team_hook_runs_first_and_its_failure_stops_the_commit() {
    let (root, bin) = repo();
    let repo = root.path().join("repo");
    let team = "#!/bin/sh\necho \"team check $*\" >> .git/team.log\n[ ! -e BLOCK ]\n";
    script(&repo.join(".git/hooks/pre-commit"), team);
    let text = ok(&repo, &bin, "bd", &["hooks", "install", "--chain"]);
    assert!(text.contains("Chained") && text.contains("pre-commit"), "{text}");
    assert_eq!(std::fs::read_to_string(repo.join(".git/hooks/pre-commit.old")).unwrap(), team);
    // Installing again never chains fleet's own hook onto itself.
    ok(&repo, &bin, "bd", &["hooks", "install", "--chain"]);
    assert_eq!(std::fs::read_to_string(repo.join(".git/hooks/pre-commit.old")).unwrap(), team);

    std::fs::write(repo.join("f"), "x").unwrap();
    ok(&repo, &bin, "git", &["add", "f"]);
    ok(&repo, &bin, "git", &["commit", "-q", "-m", "checked"]);
    let log = std::fs::read_to_string(repo.join(".git/team.log")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");

    std::fs::write(repo.join("BLOCK"), "").unwrap();
    ok(&repo, &bin, "git", &["add", "BLOCK"]);
    let (code, text) = run_in(&repo, &bin, "git", &["commit", "-q", "-m", "refused"]);
    assert_ne!(code, 0, "the team's check refused the commit: {text}");
    let (_, subject) = run_in(&repo, &bin, "git", &["log", "-1", "--format=%s"]);
    assert_eq!(subject.trim(), "checked");
    // Run by hand, the hook passes the chained failure on too.
    let (code, _) = run_in(&repo, &bin, "bd", &["hooks", "run", "pre-commit"]);
    assert_ne!(code, 0, "bd hooks run passes the chained hook's failure on");
}

/// A team's shared bare remote, and a `bin` directory where `bd` is fleet.
struct Team {
    root: tempfile::TempDir,
    bin: std::path::PathBuf,
}

impl Team {
    fn new() -> Team {
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(fleet_bin(), bin.join("bd")).unwrap();
        ok(root.path(), &bin, "git", &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        Team { root, bin }
    }

    /// A clone of the remote named `name` (no fleet store yet).
    fn clone(&self, name: &str) -> Member {
        let remote = self.root.path().join("remote.git").display().to_string();
        ok(self.root.path(), &self.bin, "git", &["clone", "-q", &remote, name]);
        Member { dir: self.root.path().join(name), bin: self.bin.clone() }
    }

    /// A member who starts the queue: a clone on `main` with a store of `prefix`, the hooks
    /// installed and auto-export on.
    fn founder(&self, name: &str, prefix: &str) -> Member {
        let member = self.clone(name);
        member.run("git", &["checkout", "-q", "-b", "main"]);
        member.run("bd", &["init", "-q", "--prefix", prefix]);
        member.run("bd", &["hooks", "install"]);
        member.run("bd", &["config", "set", "export.auto", "true"]);
        member
    }
}

/// One member of a team: a clone of the shared remote with its own fleet store.
struct Member {
    dir: std::path::PathBuf,
    bin: std::path::PathBuf,
}

impl Member {
    fn run(&self, program: &str, args: &[&str]) -> String {
        ok(&self.dir, &self.bin, program, args)
    }

    /// The titles in this member's store.
    fn titles(&self) -> Vec<String> {
        let listed = self.run("bd", &["list", "--all", "--json", "-q"]);
        let start = listed.find('[').unwrap();
        let value: serde_json::Value = serde_json::Deserializer::from_str(&listed[start..])
            .into_iter()
            .next()
            .unwrap()
            .unwrap();
        let mut titles: Vec<String> = value
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["title"].as_str().unwrap().to_string())
            .collect();
        titles.sort();
        titles
    }

    fn commit_queue(&self, message: &str) {
        self.run("git", &["add", ".beads/issues.jsonl"]);
        self.run("git", &["commit", "-q", "-m", message]);
        self.run("git", &["push", "-q", "origin", "main"]);
    }
}

/// Issue 31, item 4 (and 6): two members share the committed JSONL through a bare remote.
/// Bob's clone names its import at `bd init`; after each pull, post-merge imports what the
/// other pushed, so no commit loses a teammate's issue.
#[test]
fn a_team_sharing_the_committed_jsonl_keeps_every_members_issues() {
    let team = Team::new();
    let alice = team.founder("alice", "tm");
    alice.run("bd", &["create", "From Alice"]);
    alice.run("git", &["add", ".beads"]);
    alice.commit_queue("alice's first issue");

    let bob = team.clone("bob");
    let init = bob.run("bd", &["init"]);
    assert!(init.contains("tm-<hash>"), "the prefix is the file's: {init}");
    assert!(init.contains("bd import"), "bd init names the import: {init}");
    bob.run("bd", &["import"]);
    bob.run("bd", &["hooks", "install"]);
    bob.run("bd", &["config", "set", "export.auto", "true"]);
    bob.run("bd", &["create", "From Bob"]);
    bob.commit_queue("bob's issue");

    let pulled = alice.run("git", &["pull", "-q", "--ff-only", "origin", "main"]);
    assert!(pulled.contains("imported 1 new"), "{pulled}");
    assert_eq!(alice.titles(), ["From Alice", "From Bob"]);
    alice.run("bd", &["create", "Alice again"]);
    alice.commit_queue("alice's second issue");

    bob.run("git", &["pull", "-q", "--ff-only", "origin", "main"]);
    let all = ["Alice again", "From Alice", "From Bob"];
    assert_eq!(bob.titles(), all);
    let committed = committed_export(&bob.dir, &team.bin);
    for title in all {
        assert!(committed.contains(title), "{title} is in the shared file: {committed}");
    }
}

/// Issue 31: one member on fleet, the other still on beads' JSONL habits (editing and committing
/// `.beads/issues.jsonl` the way beads' export writes it, tombstones included). The fleet
/// member's pull imports the new issue, and the file fleet commits next keeps the tombstone.
#[test]
fn a_fleet_member_and_a_beads_member_share_the_jsonl() {
    let team = Team::new();
    let fleet_member = team.founder("fleet", "bx");
    fleet_member.run("bd", &["create", "On fleet"]);
    fleet_member.run("git", &["add", ".beads"]);
    fleet_member.commit_queue("fleet's issue");

    // The beads member: a plain clone, no fleet, writing beads' records into the file.
    let beads_dir = team.clone("beads").dir;
    let bin = &team.bin;
    let file = beads_dir.join(".beads/issues.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    let added = r#"{"id":"bx-b1","title":"On beads","status":"open","priority":1,"issue_type":"bug","created_at":"2026-02-01T00:00:00Z","updated_at":"2026-02-01T00:00:00Z","labels":["from-beads"]}"#;
    let tombstone = r#"{"id":"bx-t0","title":"removed in beads","status":"tombstone","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-02-01T00:00:00Z"}"#;
    text.push_str(&format!("{added}\n{tombstone}\n"));
    std::fs::write(&file, &text).unwrap();
    ok(&beads_dir, bin, "git", &["commit", "-q", "-am", "beads member's issue"]);
    ok(&beads_dir, bin, "git", &["push", "-q", "origin", "HEAD:main"]);

    let pulled = fleet_member.run("git", &["pull", "-q", "--ff-only", "origin", "main"]);
    assert!(pulled.contains("imported 1 new"), "{pulled}");
    assert_eq!(fleet_member.titles(), ["On beads", "On fleet"]);
    let shown = fleet_member.run("bd", &["show", "bx-b1", "--json"]);
    assert!(shown.contains("from-beads"), "labels came along: {shown}");
    fleet_member.run("bd", &["create", "Fleet again"]);
    fleet_member.commit_queue("fleet's second");
    let committed = committed_export(&fleet_member.dir, bin);
    assert!(committed.contains(tombstone), "beads' tombstone is kept: {committed}");
    assert!(committed.contains("On beads") && committed.contains("Fleet again"), "{committed}");
}

/// Issue 31, item 4: checking out a branch (git's flag 1) imports the branch's JSONL; checking
/// out a file (flag 0) does not.
#[test]
fn a_branch_checkout_imports_the_branchs_jsonl() {
    let (root, bin) = repo();
    let repo = root.path().join("repo");
    ok(&repo, &bin, "bd", &["hooks", "install"]);
    ok(&repo, &bin, "bd", &["create", "On main"]);
    ok(&repo, &bin, "bd", &["export", "-o", ".beads/issues.jsonl"]);
    ok(&repo, &bin, "git", &["add", ".beads/issues.jsonl"]);
    ok(&repo, &bin, "git", &["commit", "-q", "-m", "main's queue"]);
    ok(&repo, &bin, "git", &["branch", "-M", "main"]);
    ok(&repo, &bin, "git", &["checkout", "-q", "-b", "other"]);
    let file = repo.join(".beads/issues.jsonl");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"id":"hk-br1","title":"Only on the branch","status":"open","priority":2,"issue_type":"task","created_at":"2026-02-01T00:00:00Z","updated_at":"2026-02-01T00:00:00Z"}"#);
    text.push('\n');
    std::fs::write(&file, &text).unwrap();
    ok(&repo, &bin, "git", &["commit", "-q", "-am", "branch issue"]);
    ok(&repo, &bin, "git", &["checkout", "-q", "main"]);
    // A file checkout (flag 0) of the branch's file imports nothing.
    ok(&repo, &bin, "git", &["checkout", "other", "--", ".beads/issues.jsonl"]);
    let (_, listed) = run_in(&repo, &bin, "bd", &["list", "--json"]);
    assert!(!listed.contains("Only on the branch"), "{listed}");
    ok(&repo, &bin, "git", &["reset", "-q", "--hard"]);
    let switched = ok(&repo, &bin, "git", &["checkout", "other"]);
    assert!(switched.contains("post-checkout: imported 1 new"), "{switched}");
    let (_, listed) = run_in(&repo, &bin, "bd", &["list", "--json"]);
    assert!(listed.contains("Only on the branch"), "{listed}");
}

/// Issue 31: `bd migrate hooks` reinstalls fleet's hooks and keeps a team's own hook, chained
/// as `<hook>.old`; run again it changes nothing.
#[test]
fn migrate_hooks_keeps_the_teams_own_hook_chained() {
    let team = Team::new();
    let member = team.founder("solo", "mh");
    let hooks = member.dir.join(".git/hooks");
    std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\necho team-check\n").unwrap();
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    member.run("bd", &["migrate", "hooks"]);
    let old = std::fs::read_to_string(hooks.join("pre-commit.old")).unwrap();
    assert!(old.contains("team-check"), "{old}");
    member.run("bd", &["migrate", "hooks"]);
    assert_eq!(std::fs::read_to_string(hooks.join("pre-commit.old")).unwrap(), old);
    member.run("bd", &["create", "Checked"]);
    member.run("git", &["add", ".beads"]);
    let committed = member.run("git", &["commit", "-q", "-m", "with the team's check"]);
    assert!(committed.contains("team-check"), "the team's hook ran: {committed}");
}
