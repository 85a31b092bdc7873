//! `fleet demo`: the whole supervisor on an embedded task graph, with no API key.

use std::process::Command;

use crate::common::{Run, Workspace, fleet_bin};

#[test]
fn demo_runs_to_completion_and_prints_the_summary_table() {
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(fleet_bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", tmp.path())
        .args(["demo", "--keep"])
        .output()
        .expect("run fleet demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "fleet demo failed\nstdout:\n{stdout}\nstderr:\n{stderr}");

    assert!(stdout.starts_with("fleet demo: 8 tasks in a dependency graph"), "{stdout}");
    let header = stdout.lines().find(|l| l.contains("task") && l.contains("status")).unwrap();
    for column in ["task", "title", "status", "attempts", "close reason"] {
        assert!(header.contains(column), "{header}");
    }
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("│ demo-")).collect();
    assert_eq!(rows.len(), 8, "{stdout}");
    for row in &rows {
        assert!(row.contains("┆ closed ┆"), "every task ends closed: {row}");
    }
    assert!(
        rows.iter().any(|r| r.contains("Integration tests") && r.contains("┆ 2 ")),
        "the flaky task needed a retry:\n{stdout}"
    );
    assert!(rows.iter().any(|r| r.contains("report written")), "closed itself with bd:\n{stdout}");
    let summary = stdout.lines().find(|l| l.starts_with("fleet run: ")).unwrap();
    assert!(
        summary.starts_with("fleet run: 9 attempts — closed 8, failure-retry 1 in "),
        "{summary}"
    );
    assert!(stdout.contains(&format!("{summary}\n\nNext: fleet on a real project")), "{stdout}");

    // --keep leaves the demo's home for inspection: its queue agrees with the table.
    let kept = stderr
        .lines()
        .find_map(|l| l.strip_prefix("demo home kept at "))
        .unwrap_or_else(|| panic!("no kept home in stderr:\n{stderr}"));
    let listed = Command::new(fleet_bin())
        .env_clear()
        .args(["--db", &format!("{kept}/.beads"), "list", "--all", "--json"])
        .output()
        .unwrap();
    let issues: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let issues = issues.as_array().unwrap();
    assert_eq!(issues.len(), 8);
    assert!(issues.iter().all(|i| i["status"] == "closed"), "{issues:#?}");
}

/// Splits a command line the way a shell would for these simple lines: words, and words in
/// double quotes.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('"') {
            Some(quoted) => quoted.split_once('"').expect("a closing quote"),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        words.push(word.to_owned());
        rest = after.trim_start();
    }
    words
}

/// The demo ends with the commands of a real run; each one exists as spelled (its `--help`
/// parses with the arguments shown), and all but `fleet run` do their job in a fresh home.
#[test]
fn demo_ends_with_the_commands_of_a_real_run_and_each_of_them_works() {
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(fleet_bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", tmp.path())
        .arg("demo")
        .output()
        .expect("run fleet demo");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    let next = stdout.split_once("\nNext: ").map(|(_, next)| next).expect("a Next: section");
    assert!(next.starts_with("fleet on a real project, with Claude Code or Codex"), "{next}");
    let commands: Vec<Vec<String>> = next
        .lines()
        .skip(1)
        .map(|line| words(line.split_once(" # ").map_or(line, |(command, _)| command)))
        .collect();
    let names: Vec<String> = commands.iter().map(|c| c[..2].join(" ")).collect();
    assert_eq!(names, ["fleet init", "fleet config", "fleet create", "fleet run"], "{next}");

    let ws = Workspace::empty();
    let project = tempfile::tempdir().unwrap();
    for command in &commands {
        let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
        let mut with_help = args.clone();
        with_help.push("--help");
        let help: Run = ws.command(&with_help).output().unwrap().into();
        assert_eq!(help.code, 0, "{command:?} --help:\n{}", help.stderr);
        if args[0] != "run" {
            let done: Run = ws.command(&args).current_dir(project.path()).output().unwrap().into();
            done.ok();
        }
    }
    let tasks = ws.json(&["list"]);
    assert_eq!(tasks[0]["title"], "Add a --verbose flag");
    let cwd = project.path().canonicalize().unwrap();
    assert_eq!(tasks[0]["fleet"]["cwd"], cwd.display().to_string(), "--cwd . is the project");
    let config = ws.json(&["config", "show"]);
    assert_eq!(config["config"]["coder"], "claude");
}

#[test]
fn demo_json_prints_only_the_run_events() {
    let tmp = tempfile::tempdir().unwrap();
    let output = Command::new(fleet_bin())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TMPDIR", tmp.path())
        .args(["demo", "--json"])
        .output()
        .expect("run fleet demo --json");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(events.first().unwrap()["type"], "started");
    assert_eq!(events.last().unwrap()["type"], "stopped");
    let closed = events.iter().filter(|e| e["type"] == "finished" && e["verdict"] == "closed");
    assert_eq!(closed.count(), 8);
}
