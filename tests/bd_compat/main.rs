//! bd compatibility scripts: each `tests/bd_compat/*.sh` drives the fleet binary **as `bd`**
//! (a `bd` symlink to it, first on PATH) in a fresh temporary directory and checks stdout,
//! stderr, exit codes and files against the beads CLI contract (spec/beads.md §7–8).
//!
//! The scripts use the helpers of `lib.sh` (`run`, `expect_*`, `finish`); each check that fails
//! is printed with the command and both streams. The environment is cleared and pinned: HOME
//! and FLEET_HOME point into the temporary directory, no BEADS_DIR or actor variables leak in,
//! and git reads no user or system configuration. Every `bd` call is timed; each script
//! reports its slowest call, and a call slower than the generous sanity bound in `lib.sh`
//! fails (the timing goals themselves live in benchmarks).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The scripts, one test each. `every_script_is_listed` keeps this in step with the directory.
const SCRIPTS: &[&str] = &[
    "init", "create", "show", "update", "close", "ready", "deps", "annotate", "views", "delete",
    "config", "lint", "guides", "errors", "json", "actor", "export", "fleet_bd", "help", "migrate",
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("bd_compat")
}

struct Outcome {
    checks: u64,
    slowest_us: u64,
    slowest_cmd: String,
}

fn run_script(name: &str) -> Outcome {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let root = tmp.path();
    let bin = root.join("bin");
    let home = root.join("home");
    let work = root.join("work");
    let scratch = root.join("scratch");
    for d in [&bin, &home, &work, &scratch] {
        std::fs::create_dir_all(d).expect("creating the test directories");
    }
    let fleet = PathBuf::from(env!("CARGO_BIN_EXE_fleet"));
    std::os::unix::fs::symlink(&fleet, bin.join("bd")).expect("linking bd");
    std::os::unix::fs::symlink(&fleet, bin.join("fleet")).expect("linking fleet");
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let script = dir().join(format!("{name}.sh"));
    let output = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$BD_COMPAT_LIB"; source "$BD_COMPAT_SCRIPT"; finish"#)
        .current_dir(&work)
        .env_clear()
        .env("PATH", format!("{}:{system_path}", bin.display()))
        .env("HOME", &home)
        .env("FLEET_HOME", home.join(".fleet"))
        .env("USER", "tester")
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", &scratch)
        .env("SCRATCH", &scratch)
        .env("BIN", &bin)
        .env("FIXTURES", Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("BD_COMPAT_LIB", dir().join("lib.sh"))
        .env("BD_COMPAT_SCRIPT", &script)
        .output()
        .expect("running bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tally = stdout.lines().rev().find_map(|l| l.strip_prefix("CHECKS ")).unwrap_or("");
    assert!(
        output.status.success() && !tally.is_empty(),
        "bd compatibility script {name}.sh failed\n{stderr}\n--- stdout ---\n{stdout}"
    );
    let fields: Vec<&str> = tally.splitn(6, ' ').collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0);
    let outcome = Outcome {
        checks: number(0),
        slowest_us: number(4),
        slowest_cmd: fields
            .get(5)
            .map(|s| s.trim_start_matches("SLOWEST_CMD ").to_string())
            .unwrap_or_default(),
    };
    assert!(outcome.checks > 0, "{name}.sh made no checks");
    eprintln!(
        "bd_compat {name}: {} checks passed; slowest call {:.1} ms: {}",
        outcome.checks,
        outcome.slowest_us as f64 / 1000.0,
        outcome.slowest_cmd
    );
    outcome
}

macro_rules! scripts {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            run_script(stringify!($name));
        }
    )*};
}

scripts!(
    init, create, show, update, close, ready, deps, annotate, views, delete, config, lint, guides,
    errors, json, actor, export, fleet_bd, help, migrate,
);

#[test]
fn every_script_is_listed() {
    let mut found: Vec<String> = std::fs::read_dir(dir())
        .expect("reading tests/bd_compat")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".sh").map(str::to_string))
        .filter(|n| n != "lib")
        .collect();
    found.sort();
    let mut listed: Vec<String> = SCRIPTS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "tests/bd_compat/*.sh and SCRIPTS differ");
}

/// The harness itself must be able to fail: a script with a wrong expectation fails.
#[test]
fn a_wrong_expectation_fails_the_script() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let script = tmp.path().join("wrong.sh");
    std::fs::write(&script, "run true\nexpect_rc 3\n").expect("writing the script");
    let output = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$BD_COMPAT_LIB"; source "$BD_COMPAT_SCRIPT"; finish"#)
        .env("SCRATCH", tmp.path())
        .env("BD_COMPAT_LIB", dir().join("lib.sh"))
        .env("BD_COMPAT_SCRIPT", &script)
        .output()
        .expect("running bash");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("FAIL [wrong.sh:2] expected: exit code 3"), "{stderr}");
}
