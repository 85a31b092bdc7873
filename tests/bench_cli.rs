//! `fleet bench claim` end to end, on a tiny queue: the table prints, every issue is claimed
//! exactly once by each engine in each shape, and no claim is doubled; `fleet bench import` on
//! a small file. No timings are checked: benchmarks are not tests.

use std::process::Command;

use serde_json::Value;

fn bench_claim(extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["bench", "claim", "--issues", "50", "--processes", "4"])
        .args(extra)
        .env_remove("FLEET_TEST_NOW")
        .output()
        .expect("run fleet bench claim")
}

#[test]
fn claim_benchmark_prints_its_table_without_double_claims() {
    let output = bench_claim(&[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("double claims (fleet / sqlite)"), "{stdout}");
    let rows = [
        ("spawn (served): 4 processes", "50 / 50"),
        ("spawn (direct): 4 processes", "50 / 50"),
        ("loop (served): 4 processes", "50 / 50"),
        ("loop (direct): 4 processes", "50 / 50"),
        ("threads (in-process): 4 threads", "50 / 50"),
        // A quarter of the issues, each listed, claimed and closed by an agent.
        ("cycle (served): 4 agents", "12 / 12"),
        ("cycle (direct): 4 agents", "12 / 12"),
    ];
    for (shape, claimed) in rows {
        let row = stdout.lines().find(|line| line.contains(shape));
        let row = row.unwrap_or_else(|| panic!("no row for {shape}:\n{stdout}"));
        let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
        // Cells: "", shape, claims, fleet/s, sqlite/s, ratio, goal, double claims, per commit.
        assert_eq!(cells[2], claimed, "every issue claimed: {row}");
        assert_eq!(cells[7], "0 / 0", "no double claims: {row}");
    }
    // The ceiling process start puts on the shapes that start processes per claim.
    assert!(stdout.contains("Process start alone (`fleet --version`, 4 at once): "), "{stdout}");
    for shape in ["spawn", "cycle"] {
        let line =
            stdout.lines().find(|l| l.trim_start().starts_with(&format!("{shape}: at most")));
        let line = line.unwrap_or_else(|| panic!("no ceiling for {shape}:\n{stdout}"));
        assert!(line.contains("2× sqlite needs"), "{line}");
    }
}

#[test]
fn claim_benchmark_reports_json_with_an_audited_final_state() {
    let output = bench_claim(&["--json", "--shapes", "spawn,threads"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    let shapes = report["shapes"].as_array().expect("shapes");
    let routes: Vec<_> = shapes.iter().map(|s| format!("{} {}", s["shape"], s["route"])).collect();
    assert_eq!(
        routes,
        [r#""spawn" "served""#, r#""spawn" "direct""#, r#""threads" "in-process""#],
        "spawn runs by both routes"
    );
    for shape in shapes {
        for engine in ["fleet", "sqlite"] {
            let run = &shape[engine];
            assert_eq!(run["claims"], 50, "{shape}");
            assert_eq!(run["in_progress"], 50, "{shape}");
            assert_eq!(run["double_claims"], 0, "{shape}");
            assert_eq!(run["failures"], 0, "{shape}");
        }
    }
    let start = &report["process_start"];
    assert_eq!(start["processes"], 50, "one `fleet --version` per spawned claim: {start}");
    assert!(start["processes_per_sec"].as_f64().is_some_and(|rate| rate > 0.0), "{start}");
}

/// `fleet bench import` on a small file: both engines import it, and the report names the
/// sizes, times and peak memory of each.
#[test]
fn import_benchmark_reports_time_and_memory_of_both_engines() {
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_fleet"))
        .args(["bench", "import", "--issues", "300", "--runs", "1", "--json"])
        .env("FLEET_HOME", home.path())
        .output()
        .expect("run fleet bench import");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["issues"], 300);
    assert_eq!(report["fleet_issues"], 300, "every generated issue is in the store");
    assert!(report["edges"].as_u64().unwrap() > 500, "{report}");
    for engine in ["fleet", "sqlite"] {
        let run = &report[engine][0];
        assert!(run["secs"].as_f64().unwrap() > 0.0, "{report}");
        assert!(run["peak_rss_mib"].as_f64().unwrap() > 1.0, "{report}");
    }
}
