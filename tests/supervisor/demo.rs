//! `fleet demo`: the whole supervisor on an embedded task graph, with no API key.

use std::process::Command;

use crate::common::fleet_bin;

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
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("fleet run: 9 attempts — closed 8, failure-retry 1 in "), "{last}");

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
