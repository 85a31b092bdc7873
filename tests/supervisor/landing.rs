//! Issue 30: landing work. Tasks in a git repository run in worktrees of their own, their
//! agents' closes queue the work, and the merge lane lands it on the base branch only after
//! the checks passed on the merged tree. The agents are `exec` scripts that edit and commit
//! (exit 0 closes the task); the repositories are small and the checks are `test`s, so each
//! test is a few seconds of real git and real processes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::git;
use crate::harness::Fleet;

/// A repository with one commit on `main` (README), with an identity for the agents' commits.
struct Repo {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Repo {
    fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("repo");
        std::fs::create_dir(&path).expect("repo dir");
        let repo = Repo { _dir: dir, path };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "agent"]);
        repo.git(&["config", "user.email", "agent@example.com"]);
        std::fs::write(repo.path.join("README"), "base\n").expect("README");
        repo.git(&["add", "README"]);
        repo.git(&["commit", "-qm", "init"]);
        repo
    }

    fn git(&self, args: &[&str]) -> String {
        let mut all = vec!["-C", self.path.to_str().expect("utf-8 path")];
        all.extend_from_slice(args);
        git(&all)
    }

    fn main(&self) -> String {
        self.git(&["rev-parse", "main"])
    }

    /// The commits of `main` after the first, oldest first.
    fn landed(&self) -> Vec<String> {
        let all = self.git(&["rev-list", "--reverse", "main"]);
        all.lines().skip(1).map(str::to_owned).collect()
    }

    fn dir(&self) -> &str {
        self.path.to_str().expect("utf-8 path")
    }
}

/// A fleet whose tasks are shell commands, with `checks` as merge.checks.
fn fleet(checks: &[&str], settings: &[(&str, &str)]) -> Fleet {
    let fleet = Fleet::new(&[]);
    let mut all = vec![("coder", "\"exec\"")];
    all.extend_from_slice(settings);
    let checks: Vec<String> = checks.iter().map(|c| format!("{c:?}")).collect();
    fleet.configure_with(&all, &format!("\n[merge]\nchecks = [{}]\n", checks.join(", ")));
    fleet
}

/// An exec task running `script` in `repo`.
fn task(fleet: &Fleet, repo: &Repo, title: &str, script: &str, extra: &[&str]) -> String {
    let mut args = vec!["--cwd", repo.dir(), "-d", script];
    args.extend_from_slice(extra);
    fleet.ws.create(title, &args)
}

fn worktree(fleet: &Fleet, id: &str) -> PathBuf {
    fleet.home().join("worktrees").join(id)
}

/// Issue 30's scale test: 20 tasks editing different files, 4 at a time: 20 worktrees, every
/// change landed as one commit with its trailer, the checks passed on the base after each
/// landing, and after `fleet gc` no worktree and no `fleet/*` branch is left, every tip kept
/// under refs/fleet/archive.
#[test]
fn parallel_tasks_land_from_their_own_worktrees() {
    const TASKS: usize = 20;
    let repo = Repo::new();
    let fleet = fleet(&["test -f README"], &[("max_concurrent", "4")]);
    let ids: Vec<String> = (0..TASKS)
        .map(|n| {
            let script = format!("echo {n} > f{n}.txt && git add f{n}.txt && git commit -qm f{n}");
            task(&fleet, &repo, &format!("file {n}"), &script, &[])
        })
        .collect();
    // 20 landings in one lane take longer than one wait on a loaded 2-core machine.
    let run = fleet.start(&["--until-idle"]).wait_within(std::time::Duration::from_secs(240)).ok();
    assert_eq!(run.starting("⇡ ").len(), TASKS, "{}", run.stdout());
    let landed = repo.landed();
    assert_eq!(landed.len(), TASKS, "one commit per task");
    for commit in &landed {
        // The check held on every commit the base moved to.
        repo.git(&["cat-file", "-e", &format!("{commit}:README")]);
        let message = repo.git(&["log", "-1", "--format=%B", commit]);
        assert!(message.contains("Fleet-Task: t-"), "{message}");
    }
    for (n, id) in ids.iter().enumerate() {
        // Its checks ran on the very commit the base moved to, and passed.
        let receipt = fleet.ws.json(&["task", id, "receipt"])["receipt"].clone();
        assert_eq!(receipt["checks"][0]["exit_code"], 0, "{receipt}");
        assert!(landed.contains(&receipt["merged"].as_str().unwrap().to_owned()), "{receipt}");
        assert_eq!(fleet.show(id)["status"], "closed");
        assert!(worktree(&fleet, id).join(format!("f{n}.txt")).is_file());
        repo.git(&["cat-file", "-e", &format!("main:f{n}.txt")]);
    }
    // The person's clean checkout was brought up to date.
    assert!(repo.path.join(format!("f{}.txt", TASKS - 1)).is_file());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let gc = fleet.ws.run(&["gc"]).ok();
    assert!(gc.stdout.contains("freed"), "{}", gc.stdout);
    assert_eq!(repo.git(&["branch", "--list", "fleet/*"]), "");
    assert_eq!(
        repo.git(&["worktree", "list"]).lines().filter(|l| l.contains("/worktrees/t-")).count(),
        0
    );
    for id in &ids {
        assert!(!worktree(&fleet, id).exists());
        repo.git(&["cat-file", "-e", &format!("refs/fleet/archive/{id}")]);
    }
}

/// Two tasks change the same line: the first lands, the second gets a resolution task
/// (a child) and stays in progress; main never holds a conflicted tree.
#[test]
fn a_conflict_yields_a_resolution_task_and_never_reaches_the_base() {
    let repo = Repo::new();
    let fleet =
        fleet(&["! grep -q '<<<<<<<' README"], &[("max_concurrent", "2"), ("max_failures", "1")]);
    let one = task(&fleet, &repo, "say one", "echo one > README && git commit -qam one", &[]);
    let two = task(&fleet, &repo, "say two", "echo two > README && git commit -qam two", &[]);
    let run = fleet.run_until_idle(&[]);
    assert_eq!(run.starting("⇡ ").len(), 1, "{}", run.stdout());
    assert_eq!(run.starting("⚡ ").len(), 1, "{}", run.stdout());
    assert_eq!(repo.landed().len(), 1);
    let readme = repo.git(&["show", "main:README"]);
    assert!(readme == "one" || readme == "two", "{readme}");
    let (winner, loser) = if readme == "one" { (&one, &two) } else { (&two, &one) };
    assert_eq!(fleet.show(winner)["status"], "closed");
    let entry = fleet.show(loser);
    assert_eq!(entry["status"], "in_progress");
    assert_eq!(entry["fleet"]["land"]["state"]["state"], "conflict");
    let child = format!("{loser}.1");
    let resolution = fleet.show(&child);
    assert!(resolution["title"].as_str().unwrap().starts_with("Resolve merge conflict: say"));
    assert!(resolution["description"].as_str().unwrap().contains("- README"));
    // The resolution starts in the task's worktree with the base merged in up to the conflict.
    let told = resolution["description"].as_str().unwrap();
    assert!(told.contains("fleet has started `git merge main` there"), "{told}");
    let worktree = PathBuf::from(entry["fleet"]["land"]["worktree"].as_str().unwrap());
    let marked = std::fs::read_to_string(worktree.join("README")).unwrap();
    assert!(marked.contains("<<<<<<<") && marked.contains(">>>>>>>"), "{marked}");
    let merge_head = Command::new("git")
        .arg("-C")
        .arg(&worktree)
        .args(["rev-parse", "-q", "--verify", "MERGE_HEAD"])
        .output()
        .unwrap();
    assert!(merge_head.status.success(), "the merge of the base is under way in {worktree:?}");
    let merges = fleet.ws.run(&["merges"]).ok();
    assert!(merges.stdout.contains(&format!("waits for {child}")), "{}", merges.stdout);
}

/// A task whose checks fail on the merged tree is reopened (here blocked: max_failures = 1)
/// with the failure in its comments and receipt; the base does not move.
#[test]
fn failing_checks_send_the_work_back_and_leave_the_base() {
    let repo = Repo::new();
    let before = repo.main();
    let fleet = fleet(&["test ! -f bad.txt"], &[("max_failures", "1")]);
    let id = task(&fleet, &repo, "break it", "echo oops > bad.txt", &[]);
    let run = fleet.run_until_idle(&[]);
    assert_eq!(run.code, 4, "{}", run.stdout());
    assert_eq!(repo.main(), before);
    let shown = fleet.show(&id);
    assert_eq!(shown["status"], "blocked");
    let comments = fleet.comments(&id).join("\n");
    assert!(comments.contains("the check `test ! -f bad.txt` exited 1"), "{comments}");
    let receipt = fleet.ws.json(&["task", &id, "receipt"]);
    assert_eq!(receipt["receipt"]["verdict"], "checks failed");
    assert_eq!(receipt["receipt"]["checks"][0]["exit_code"], 1);
    // What the agent left uncommitted was committed by fleet, saying so.
    assert!(receipt["receipt"]["leftovers"].as_str().unwrap().contains("bad.txt"));
    let human = fleet.ws.run(&["task", &id, "receipt"]).ok();
    assert!(human.stdout.contains("check `test ! -f bad.txt`: exit 1"), "{}", human.stdout);
}

/// B depends on A: B starts only once A's work is on main, from a base that holds it.
#[test]
fn a_dependent_starts_from_a_base_holding_its_blockers_work() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    let a =
        task(&fleet, &repo, "make a", "echo a > a.txt && git add a.txt && git commit -qm a", &[]);
    let script = "test -f a.txt && echo b > b.txt && git add b.txt && git commit -qm b";
    let b = task(&fleet, &repo, "make b on a", script, &["--deps", &a]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&b)["status"], "closed");
    assert!(worktree(&fleet, &b).join("a.txt").is_file());
    repo.git(&["cat-file", "-e", "main:b.txt"]);
    assert_eq!(repo.landed().len(), 2);
}

/// The person's checkout of main: dirty (staged, unstaged, untracked) → not touched, and
/// `fleet merges` says so; clean → brought up to date.
#[test]
fn a_dirty_checkout_is_left_alone_and_reported() {
    let repo = Repo::new();
    std::fs::write(repo.path.join("staged.txt"), "mine\n").unwrap();
    repo.git(&["add", "staged.txt"]);
    std::fs::write(repo.path.join("README"), "my edit\n").unwrap();
    std::fs::write(repo.path.join("untracked.txt"), "mine too\n").unwrap();
    let fleet = fleet(&["true"], &[]);
    task(&fleet, &repo, "add x", "echo x > x.txt && git add x.txt && git commit -qm x", &[]);
    fleet.run_until_idle(&[]).ok();
    repo.git(&["cat-file", "-e", "main:x.txt"]);
    assert!(!repo.path.join("x.txt").exists(), "the dirty checkout was touched");
    assert_eq!(std::fs::read_to_string(repo.path.join("README")).unwrap(), "my edit\n");
    assert_eq!(std::fs::read_to_string(repo.path.join("untracked.txt")).unwrap(), "mine too\n");
    assert!(repo.git(&["diff", "--cached", "--name-only"]).contains("staged.txt"));
    let merges = fleet.ws.run(&["merges"]).ok();
    assert!(merges.stdout.contains("has local changes: not touched"), "{}", merges.stdout);
}

/// An agent killed with SIGKILL halfway through its edit: the retry runs in the same worktree
/// and finds the files it left.
#[test]
fn an_agent_killed_mid_edit_leaves_its_files_to_the_retry() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    let script =
        "if [ -f half.txt ]; then echo done > done.txt; else echo half > half.txt; kill -9 $$; fi";
    let id = task(&fleet, &repo, "two halves", script, &[]);
    let run = fleet.run_until_idle(&[]).ok();
    assert!(run.stdout().contains(&format!("▶ {id} attempt 2 ")), "{}", run.stdout());
    for file in ["half.txt", "done.txt"] {
        repo.git(&["cat-file", "-e", &format!("main:{file}")]);
    }
}

/// `fleet gc` leaves a landed task's worktree with uncommitted changes alone, naming it, and
/// removes it once it is clean; its tip stays reachable.
#[test]
fn gc_refuses_a_dirty_worktree_by_name() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    let id =
        task(&fleet, &repo, "add y", "echo y > y.txt && git add y.txt && git commit -qm y", &[]);
    fleet.run_until_idle(&[]).ok();
    let tree = worktree(&fleet, &id);
    std::fs::write(tree.join("scratch.txt"), "later\n").unwrap();
    let refused = fleet.ws.run(&["gc"]).fails(1);
    assert!(refused.stdout.contains(&format!("refused {id}")), "{}", refused.stdout);
    assert!(refused.stderr.contains(&id), "{}", refused.stderr);
    assert!(tree.join("scratch.txt").is_file());
    std::fs::remove_file(tree.join("scratch.txt")).unwrap();
    fleet.ws.run(&["gc"]).ok();
    assert!(!tree.exists());
    let tip = repo.git(&["rev-parse", &format!("refs/fleet/archive/{id}")]);
    repo.git(&["cat-file", "-e", &format!("{tip}:y.txt")]);
}

/// kill -9 of the supervisor while the checks run on a merged tree: the base does not move;
/// the next run lands the work exactly once.
#[test]
fn a_supervisor_killed_mid_merge_lands_the_work_once_after_restart() {
    let repo = Repo::new();
    let before = repo.main();
    let marker = repo.path.parent().unwrap().join("checking");
    let check = format!("touch {} && sleep 60", marker.display());
    let fleet = fleet(&[&check], &[]);
    let id =
        task(&fleet, &repo, "add z", "echo z > z.txt && git add z.txt && git commit -qm z", &[]);
    let doomed = fleet.start(&[]);
    doomed.wait_until("the checks to start", || marker.exists().then_some(()));
    doomed.signal(libc::SIGKILL);
    let _ = doomed.wait();
    assert_eq!(repo.main(), before, "the base moved to an unchecked tree");
    assert_eq!(fleet.show(&id)["status"], "in_progress");
    fleet.configure_with(&[("coder", "\"exec\"")], "\n[merge]\nchecks = [\"test -f z.txt\"]\n");
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&id)["status"], "closed");
    let landed = repo.landed();
    assert_eq!(landed.len(), 1, "landed exactly once");
    repo.git(&["cat-file", "-e", "main:z.txt"]);
}

/// A task outside any repository keeps working in its own directory (isolation "auto").
#[test]
fn a_task_outside_a_repository_runs_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = fleet(&[], &[]);
    let cwd = dir.path().to_str().unwrap();
    let id = fleet.ws.create("touch here", &["--cwd", cwd, "-d", "touch here.txt"]);
    fleet.run_until_idle(&[]).ok();
    assert!(Path::new(cwd).join("here.txt").is_file());
    assert!(fleet.show(&id)["fleet"]["land"].is_null());
}

/// `fleet run` with `PATH` holding no `git`: a directory of its own with `sh` and `true` only.
fn start_without_git(fleet: &Fleet) -> crate::harness::Supervisor {
    let bin = fleet.home().join("bin-without-git");
    if !bin.is_dir() {
        std::fs::create_dir(&bin).unwrap();
        for tool in ["sh", "true"] {
            std::os::unix::fs::symlink(Path::new("/bin").join(tool), bin.join(tool)).unwrap();
        }
    }
    let mut command = fleet.ws.command(&["run"]);
    command.env("PATH", &bin);
    crate::harness::Supervisor::spawn(command)
}

/// Waits for the attempt of `id` that ended `worktree-failed` (the `nth`), and returns its line.
fn wait_worktree_failed(run: &crate::harness::Supervisor, id: &str, nth: usize) -> String {
    run.wait_until(&format!("{id} to fail for want of its worktree"), || {
        let failed = |l: &&String| l.contains(id) && l.contains("worktree-failed");
        run.lines().iter().filter(failed).nth(nth - 1).cloned()
    })
}

/// Issue 30: with no `git` for the supervisor, a task in a repository never runs in the
/// shared checkout — with isolation "auto" as with "worktree", its attempt fails uncharged and
/// the reason says git is missing (not that the directory is no repository).
#[test]
fn without_git_a_task_never_runs_in_the_shared_checkout() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    for isolation in ["auto", "worktree"] {
        let isolation_line = format!("{isolation:?}");
        let settings =
            [("coder", "\"exec\""), ("retry_backoff_secs", "600"), ("isolation", &isolation_line)];
        fleet.configure_with(&settings, "");
        // The task of the round before waits out its backoff.
        let id = task(&fleet, &repo, isolation, "echo shared > shared.txt", &[]);
        let run = start_without_git(&fleet);
        wait_worktree_failed(&run, &id, 1);
        run.stop();
        assert!(!repo.path.join("shared.txt").exists(), "the agent ran in the shared checkout");
        let shown = fleet.show(&id);
        assert_eq!(shown["status"], "open", "released ({isolation})");
        assert_eq!(crate::harness::counter(&shown, "attempts"), 0, "charged ({isolation})");
        assert!(shown["fleet"]["land"].is_null());
        let said = fleet.comments(&id).join("\n");
        assert!(said.contains("git is not installed or not on PATH"), "{said}");
        assert!(said.contains("not charged"), "{said}");
        assert!(!said.contains("not in a git repository"), "{said}");
        assert!(said.contains(&format!("isolation = \"{isolation}\"")), "{said}");
    }
}

/// Issue 30: a task's worktree gone (removed) or broken (not on its branch) before a retry:
/// the retry fails uncharged, saying which and how to restore it; nothing runs in the shared
/// checkout.
#[test]
fn a_missing_or_broken_worktree_fails_the_retry_uncharged() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[("max_failures", "1")]);
    let script = "echo again > again.txt && exit 1";
    let gone = task(&fleet, &repo, "gone", script, &[]);
    let broken = task(&fleet, &repo, "broken", script, &[]);
    fleet.run_until_idle(&[]);
    std::fs::remove_dir_all(worktree(&fleet, &gone)).unwrap();
    git(&["-C", worktree(&fleet, &broken).to_str().unwrap(), "checkout", "-q", "--detach"]);
    for id in [&gone, &broken] {
        assert_eq!(fleet.show(id)["status"], "blocked");
        fleet.ws.run(&["update", id, "--status", "open"]).ok();
    }
    fleet.configure_with(&[("coder", "\"exec\""), ("retry_backoff_secs", "600")], "");
    let run = fleet.start(&[]);
    for id in [&gone, &broken] {
        wait_worktree_failed(&run, id, 1);
    }
    run.stop();
    assert!(!repo.path.join("again.txt").exists(), "an agent ran in the shared checkout");
    for (id, says) in [
        (&gone, format!("is missing (its branch fleet/{gone} keeps what was committed)")),
        (&broken, format!("is broken: it is not on fleet/{broken}")),
    ] {
        let shown = fleet.show(id);
        assert_eq!(shown["status"], "open");
        assert_eq!(crate::harness::counter(&shown, "attempts"), 1, "the retry was charged");
        let said = fleet.comments(id).join("\n");
        assert!(said.contains(&says), "{said}");
        assert!(said.contains("not charged"), "{said}");
    }
}

/// `fleet merges --json`: the lanes.
fn lanes(fleet: &Fleet) -> serde_json::Value {
    fleet.ws.json(&["merges"])
}

/// The waiting entries of the one lane, in landing order: (id, state).
fn waiting(fleet: &Fleet) -> Vec<(String, String)> {
    let lanes = lanes(fleet);
    let Some(entries) = lanes[0]["waiting"].as_array() else { return Vec::new() };
    entries
        .iter()
        .map(|e| (e["id"].as_str().unwrap().to_owned(), e["state"].as_str().unwrap().to_owned()))
        .collect()
}

/// The task a landed commit carries in its `Fleet-Task` trailer.
fn task_of(repo: &Repo, commit: &str) -> String {
    let message = repo.git(&["log", "-1", "--format=%B", commit]);
    let trailer = message.lines().find_map(|l| l.strip_prefix("Fleet-Task: "));
    trailer.unwrap_or_else(|| panic!("no trailer in {message}")).to_owned()
}

/// Issue 30: `merge.review = true` holds every entry ("waiting for review") until
/// `fleet approve`; `fleet reject --reason` reopens the task with the reason as a comment, and
/// its next submission waits for a new approval.
#[test]
fn review_holds_entries_until_approved_and_reject_reopens() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    fleet.configure_with(&[("coder", "\"exec\"")], "\n[merge]\nreview = true\n");
    let script = |f: &str| format!("echo {f} >> {f}.txt && git add {f}.txt && git commit -qm {f}");
    let a = task(&fleet, &repo, "make a", &script("a"), &[]);
    let b = task(&fleet, &repo, "make b", &script("b"), &[]);
    let run = fleet.start(&[]);
    let in_review = |n: usize| {
        run.wait_until("both entries to wait for review", || {
            let all = waiting(&fleet);
            (all.len() == n && all.iter().all(|(_, s)| s == "waiting for review")).then_some(())
        })
    };
    in_review(2);
    let shown = fleet.ws.run(&["merges"]).ok().stdout;
    assert!(shown.contains(&format!("{a} [P2] waiting for review")), "{shown}");
    assert!(repo.landed().is_empty(), "landed without a review");
    let approved = fleet.ws.run(&["approve", &a]).ok().stdout;
    assert!(approved.contains(&format!("✓ {a} approved")), "{approved}");
    run.wait_for("a to land", |l| l.starts_with(&format!("⇡ {a} landed")));
    let rejected = fleet.ws.run(&["reject", &b, "--reason", "name the file b.md"]).ok();
    assert!(rejected.stdout.contains("reopened"), "{}", rejected.stdout);
    let said = fleet.comments(&b).join("\n");
    assert!(said.contains("rejected by tester: name the file b.md"), "{said}");
    // The reopened task runs again and its new work waits for a new approval.
    run.wait_started(&b, 2);
    in_review(1);
    fleet.ws.run(&["approve", &b]).ok();
    run.wait_for("b to land", |l| l.starts_with(&format!("⇡ {b} landed")));
    run.stop();
    let landed: Vec<String> = repo.landed().iter().map(|c| task_of(&repo, c)).collect();
    assert_eq!(landed, [a.clone(), b.clone()]);
    assert_eq!(repo.git(&["show", "main:b.txt"]), "b\nb");
    // Neither can be approved or rejected again: nothing of theirs waits.
    let again = fleet.ws.run(&["approve", &a]).fails(1);
    assert!(again.stderr.contains("has no work waiting in the merge queue"), "{}", again.stderr);
}

/// Issue 30: while a lane checks one entry, `fleet merges` shows it "checking" with its age;
/// `fleet merge ID --now` moves a later entry to the head, `--drop` takes one out (its tip
/// archived, the task closed, its worktree kept until `fleet gc`).
#[test]
fn merge_now_reorders_the_lane_and_drop_takes_an_entry_out() {
    let repo = Repo::new();
    let gate = repo.path.parent().unwrap().join("gate");
    let check = format!("while [ ! -f {} ]; do sleep 0.05; done", gate.display());
    let fleet = fleet(&[&check], &[("max_concurrent", "4")]);
    for n in 0..4 {
        let script = format!("echo {n} > f{n}.txt && git add f{n}.txt && git commit -qm f{n}");
        task(&fleet, &repo, &format!("file {n}"), &script, &[]);
    }
    let run = fleet.start(&[]);
    let order = run.wait_until("one entry checking, three queued", || {
        let all = waiting(&fleet);
        let states: Vec<&str> = all.iter().map(|(_, s)| s.as_str()).collect();
        (states.len() == 4 && states.iter().filter(|s| **s == "checking").count() == 1)
            .then_some(all)
    });
    let checking = order.iter().find(|(_, s)| s == "checking").unwrap().0.clone();
    let queued: Vec<String> =
        order.iter().filter(|(_, s)| s == "queued").map(|(id, _)| id.clone()).collect();
    let shown = fleet.ws.run(&["merges"]).ok().stdout;
    assert!(shown.contains(&format!("{checking} [P2] checking for ")), "{shown}");
    let (first, dropped, last) = (&queued[0], &queued[1], &queued[2]);
    let now = fleet.ws.run(&["merge", last, "--now"]).ok().stdout;
    assert!(now.contains("moves to the head of its merge lane"), "{now}");
    let after: Vec<String> = waiting(&fleet).into_iter().map(|(id, _)| id).collect();
    assert_eq!(after[1], *last, "{after:?}");
    let drop = fleet.ws.run(&["merge", dropped, "--drop", "--reason", "not needed"]).ok().stdout;
    assert!(drop.contains(&format!("kept as refs/fleet/archive/{dropped}")), "{drop}");
    assert_eq!(fleet.show(dropped)["status"], "closed");
    std::fs::write(&gate, "").unwrap();
    for id in [&checking, last, first] {
        run.wait_for("the landings", |l| l.starts_with(&format!("⇡ {id} landed")));
    }
    run.stop();
    let landed: Vec<String> = repo.landed().iter().map(|c| task_of(&repo, c)).collect();
    assert_eq!(landed, [checking.clone(), last.clone(), first.clone()]);
    let tip = repo.git(&["rev-parse", &format!("refs/fleet/archive/{dropped}")]);
    assert!(!repo.git(&["branch", "--contains", &tip, "main"]).contains("main"));
    assert!(worktree(&fleet, dropped).is_dir(), "the dropped work's worktree went before gc");
    let said = fleet.comments(dropped).join("\n");
    assert!(said.contains("dropped from the merge queue by tester: not needed"), "{said}");
    let merges = fleet.ws.run(&["merges"]).ok().stdout;
    assert!(merges.contains("3 landed, 1 dropped"), "{merges}");
    fleet.ws.run(&["gc"]).ok();
    assert!(!worktree(&fleet, dropped).exists());
    repo.git(&["cat-file", "-e", &format!("refs/fleet/archive/{dropped}")]);
}

/// Issue 30: `merge.strategy = "rebase"` replays each task's commits onto the base (authors
/// and messages kept, each with a `Fleet-Task` trailer; linear history), `"merge"` makes one
/// merge commit per task whose second parent is the branch tip. No checkout is touched but
/// the person's clean one, brought up to date.
#[test]
fn rebase_and_merge_strategies_land_the_branch_as_they_say() {
    for strategy in ["rebase", "merge"] {
        let repo = Repo::new();
        let fleet = fleet(&[], &[]);
        let extra = format!("\n[merge]\nchecks = [\"test -f README\"]\nstrategy = {strategy:?}\n");
        fleet.configure_with(&[("coder", "\"exec\"")], &extra);
        let ids: Vec<String> = ["x", "y"]
            .iter()
            .map(|f| {
                let script = format!(
                    "echo 1 > {f}1 && git add {f}1 && git commit -qm '{f} one' && echo 2 > {f}2 && git add {f}2 && git commit -qm '{f} two'"
                );
                task(&fleet, &repo, &format!("make {f}"), &script, &[])
            })
            .collect();
        fleet.run_until_idle(&[]).ok();
        let landed = repo.landed();
        let merges = repo.git(&["rev-list", "--merges", "main"]);
        if strategy == "rebase" {
            assert_eq!(landed.len(), 4, "every commit replayed");
            assert_eq!(merges, "", "a rebase makes no merge commit");
            for commit in &landed {
                let author = repo.git(&["log", "-1", "--format=%an", commit]);
                assert_eq!(author, "agent");
                let subject = repo.git(&["log", "-1", "--format=%s", commit]);
                let id = task_of(&repo, commit);
                let file = if ids[0] == id { "x" } else { "y" };
                assert!(subject.starts_with(file), "{subject} of {id}");
            }
        } else {
            assert_eq!(merges.lines().count(), 2, "one merge commit per task");
            for merge in merges.lines() {
                let id = task_of(&repo, merge);
                let subject = repo.git(&["log", "-1", "--format=%s", merge]);
                assert!(subject.starts_with(&format!("Merge fleet/{id}: make ")), "{subject}");
                let branch = repo.git(&["rev-parse", &format!("fleet/{id}")]);
                assert_eq!(repo.git(&["rev-parse", &format!("{merge}^2")]), branch);
            }
        }
        for file in ["x1", "x2", "y1", "y2"] {
            repo.git(&["cat-file", "-e", &format!("main:{file}")]);
            assert!(repo.path.join(file).is_file(), "the clean checkout was not updated");
        }
        for id in &ids {
            assert_eq!(fleet.show(id)["status"], "closed");
        }
    }
}

/// Issue 30: `merge.push = "origin"` pushes the base after each landing (with a lease); when
/// someone else pushed meanwhile the push is rejected, and fleet fetches, re-bases the lane
/// onto the remote's tip (the checks run again) and pushes again — nobody's commit is lost,
/// and `fleet merges` shows the outcome.
#[test]
fn pushes_land_on_the_remote_and_a_rejected_push_rebases_the_lane() {
    let repo = Repo::new();
    let bare = repo.path.parent().unwrap().join("origin.git");
    git(&["init", "-q", "--bare", "-b", "main", bare.to_str().unwrap()]);
    repo.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    repo.git(&["push", "-q", "origin", "main"]);
    let fleet = fleet(&[], &[]);
    let extra = "\n[merge]\nchecks = [\"test -f README\"]\npush = \"origin\"\n";
    fleet.configure_with(&[("coder", "\"exec\"")], extra);
    let remote_main = || git(&["--git-dir", bare.to_str().unwrap(), "rev-parse", "main"]);
    let a = task(&fleet, &repo, "add a", "echo a > a && git add a && git commit -qm a", &[]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(remote_main(), repo.main(), "the landing was not pushed");
    let receipt = fleet.ws.json(&["task", &a, "receipt"]);
    assert!(receipt["receipt"]["push"].as_str().unwrap().starts_with("pushed main to origin"));
    // Someone else pushes to origin meanwhile.
    let other = repo.path.parent().unwrap().join("other");
    git(&["clone", "-q", bare.to_str().unwrap(), other.to_str().unwrap()]);
    let in_other = |args: &[&str]| {
        let mut all =
            vec!["-C", other.to_str().unwrap(), "-c", "user.name=o", "-c", "user.email=o@x"];
        all.extend_from_slice(args);
        git(&all)
    };
    std::fs::write(other.join("theirs"), "theirs\n").unwrap();
    in_other(&["add", "theirs"]);
    in_other(&["commit", "-qm", "theirs"]);
    in_other(&["push", "-q", "origin", "main"]);
    let theirs = in_other(&["rev-parse", "HEAD"]);
    let b = task(&fleet, &repo, "add b", "echo b > b && git add b && git commit -qm b", &[]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&b)["status"], "closed");
    assert_eq!(remote_main(), repo.main(), "local and remote main differ");
    repo.git(&["merge-base", "--is-ancestor", &theirs, "main"]);
    for file in ["a", "b", "theirs"] {
        repo.git(&["cat-file", "-e", &format!("main:{file}")]);
    }
    assert_eq!(repo.git(&["rev-list", "--merges", "main"]), "", "history stays linear");
    let receipt = fleet.ws.json(&["task", &b, "receipt"])["receipt"].clone();
    let push = receipt["push"].as_str().unwrap();
    assert!(push.contains("pushed main to origin") && push.contains("re-base"), "{push}");
    let merges = fleet.ws.run(&["merges"]).ok().stdout;
    assert!(merges.contains("last push: pushed main to origin"), "{merges}");
    // The person's clean checkout followed both moves.
    assert!(repo.path.join("theirs").is_file() && repo.path.join("b").is_file());
}

/// Issue 30: the agent is told it works on its own branch — in its prompt and in `bd prime`
/// run inside the attempt — and to commit there.
#[test]
fn the_agent_is_told_to_commit_on_its_own_branch() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    let primed = repo.path.parent().unwrap().join("primed.txt");
    let script =
        format!("bd prime > {} && echo x > x && git add x && git commit -qm x", primed.display());
    let id = task(&fleet, &repo, "prime", &script, &[]);
    fleet.run_until_idle(&[]).ok();
    let told = format!("on the branch `fleet/{id}`");
    let primer = std::fs::read_to_string(&primed).unwrap();
    assert!(primer.contains("## Your branch") && primer.contains(&told), "{primer}");
    assert!(primer.contains("Commit your changes on this branch"), "{primer}");
    let prompt = fleet.ws.run(&["task", &id, "prompt"]).ok().stdout;
    assert!(prompt.contains(&told) && prompt.contains("Commit your changes"), "{prompt}");
    // Outside a run, `bd prime` says nothing of a branch.
    let outside = fleet.ws.run(&["bd", "prime"]).ok().stdout;
    assert!(!outside.contains("## Your branch"), "{outside}");
}

/// Issue 30's crash safety: the supervisor (or `fleet gc`) killed with SIGKILL at each point of
/// a merge — after the checks passed, once "checked" is recorded, right after the base ref's
/// compare-and-swap (before the person's checkout is brought up to date and before the task's
/// close), after the landing before the close, and half-way through the cleanup (tip archived,
/// worktree removed). After each kill the base is at the old commit or at a checked one; after
/// a restart the task is closed, its work on the base exactly once (one `Fleet-Task:` trailer),
/// the person's clean checkout up to date, and no worktree or `fleet/*` branch left.
#[test]
fn a_kill_at_every_point_of_a_merge_lands_the_work_exactly_once() {
    // (fault point, killed in `fleet gc` rather than in `fleet run`)
    let points = [
        ("land-checks-passed", false),
        ("land-checked", false),
        ("land-ref-moved", false),
        ("land-landed", false),
        ("gc-archived", true),
        ("gc-worktree-removed", true),
    ];
    for (point, in_gc) in points {
        let repo = Repo::new();
        let before = repo.main();
        let fleet = fleet(&["test -f z.txt"], &[]);
        let script = "echo z > z.txt && git add z.txt && git commit -qm z";
        let id = task(&fleet, &repo, "add z", script, &[]);
        let doomed = if in_gc {
            fleet.run_until_idle(&[]).ok();
            fleet.ws.command(&["gc"]).env("FLEET_FAULT", point).output().expect("fleet gc")
        } else {
            let mut run = fleet.ws.command(&["run", "--until-idle"]);
            run.env("FLEET_FAULT", point);
            let finished = crate::harness::Supervisor::spawn(run).wait();
            assert_eq!(finished.code, -1, "{point}: not killed\n{}", finished.stdout());
            std::process::Command::new("true").output().expect("true")
        };
        if in_gc {
            assert!(doomed.status.code().is_none(), "{point}: fleet gc was not killed");
        }
        // The base is at the old commit, or at one whose checks passed.
        let now = repo.main();
        if now != before {
            assert_eq!(repo.git(&["rev-parse", "main^"]), before, "{point}");
            repo.git(&["cat-file", "-e", "main:z.txt"]);
        }
        let status = fleet.show(&id)["status"].clone();
        if !in_gc {
            assert_eq!(status, "in_progress", "{point}: closed before its work landed");
        }
        fleet.run_until_idle(&[]).ok();
        assert_eq!(fleet.show(&id)["status"], "closed", "{point}");
        let messages = repo.git(&["log", "--format=%B", "main"]);
        let trailer = format!("Fleet-Task: {id}");
        assert_eq!(messages.matches(&trailer).count(), 1, "{point}: landed once\n{messages}");
        assert_eq!(repo.landed().len(), 1, "{point}");
        // The person's checkout of main was clean: it is brought up to date, nothing staged.
        assert!(repo.path.join("z.txt").is_file(), "{point}: checkout not brought up to date");
        assert_eq!(repo.git(&["status", "--porcelain"]), "", "{point}");
        fleet.ws.run(&["gc"]).ok();
        assert_eq!(repo.git(&["branch", "--list", "fleet/*"]), "", "{point}");
        let trees = repo.git(&["worktree", "list"]);
        assert!(!trees.contains("/worktrees/t-"), "{point}: stray worktree\n{trees}");
        assert!(!worktree(&fleet, &id).exists(), "{point}");
        repo.git(&["cat-file", "-e", &format!("refs/fleet/archive/{id}")]);
    }
}

/// Issue 30's batching: four ready entries, `merge.batch = 4`, the second breaking the check.
/// The stack of four fails, the bisection finds the culprit (the checks on the first two, then
/// on the first), the first lands, the culprit goes back with the failure (blocked here:
/// max_failures = 1), and the two after it land together in the next round. main is never at
/// a tree that fails the check.
#[test]
fn a_batch_bisects_a_failure_to_its_culprit_and_lands_the_rest() {
    let repo = Repo::new();
    let fleet = fleet(&[], &[]);
    let settings = [("coder", "\"exec\""), ("max_concurrent", "4"), ("max_failures", "1")];
    let merge = "\n[merge]\nchecks = [\"test ! -f bad.txt\"]\nbatch = 4\n";
    fleet.configure_with(&settings, &format!("{merge}review = true\n"));
    let script = |f: &str| format!("echo {f} > {f}.txt && git add {f}.txt && git commit -qm {f}");
    let ids: Vec<String> = ["a", "bad", "c", "d"]
        .iter()
        .enumerate()
        .map(|(n, f)| {
            let priority = n.to_string();
            task(&fleet, &repo, &format!("make {f}"), &script(f), &["-p", &priority])
        })
        .collect();
    // All four wait for review, so that the lane finds them ready at once.
    let run = fleet.start(&[]);
    run.wait_until("four entries to wait for review", || {
        let all = waiting(&fleet);
        (all.len() == 4 && all.iter().all(|(_, s)| s == "waiting for review")).then_some(())
    });
    run.stop();
    for id in &ids {
        fleet.ws.run(&["approve", id]).ok();
    }
    fleet.configure_with(&settings, merge);
    let started = std::time::Instant::now();
    let done = fleet.run_until_idle(&[]);
    let landed: Vec<String> = repo.landed().iter().map(|c| task_of(&repo, c)).collect();
    assert_eq!(landed, [ids[0].clone(), ids[2].clone(), ids[3].clone()], "{}", done.stdout());
    for commit in repo.landed() {
        let listed = repo.git(&["ls-tree", "--name-only", &commit, "bad.txt"]);
        assert_eq!(listed, "", "main was at a failing tree");
    }
    for n in [0, 2, 3] {
        assert_eq!(fleet.show(&ids[n])["status"], "closed");
    }
    let culprit = &ids[1];
    assert_eq!(fleet.show(culprit)["status"], "blocked");
    let said = fleet.comments(culprit).join("\n");
    assert!(said.contains("the check `test ! -f bad.txt` exited 1"), "{said}");
    let receipt = fleet.ws.json(&["task", culprit, "receipt"])["receipt"].clone();
    let notes = receipt["notes"].to_string();
    assert!(notes.contains("batch of 4") && notes.contains("3 run(s) bisected"), "{notes}");
    // c and d went through together: one check run at d's commit.
    let receipt = fleet.ws.json(&["task", &ids[2], "receipt"])["receipt"].clone();
    assert!(receipt["notes"].to_string().contains("landed in a batch of 2"), "{receipt}");
    assert_eq!(receipt["merged"], repo.main());
    eprintln!("batch landing run: {:?}", started.elapsed());
}
