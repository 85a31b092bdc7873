//! The run log: `fleet run` appends its events to `$FLEET_HOME/logs/fleet-run.log`, one
//! timestamped line each, redacted, while its stderr stays quiet at the default filter.

use std::os::unix::fs::PermissionsExt;

use crate::harness::Fleet;

fn run_log(fleet: &Fleet) -> String {
    let path = fleet.home().join("logs/fleet-run.log");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The line of `log` containing `needle`; asserts it starts with an RFC 3339 time and INFO.
#[track_caller]
fn info_line<'a>(log: &'a str, needle: &str) -> &'a str {
    let line = log
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{log}"));
    let (time, rest) = line.split_once(' ').unwrap();
    time.parse::<jiff::Timestamp>().unwrap_or_else(|e| panic!("{time:?} in {line:?}: {e}"));
    assert!(rest.trim_start().starts_with("INFO "), "{line}");
    line
}

#[test]
fn fleet_run_logs_claims_and_outcomes_with_timestamps() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Tidy up", &["close tidied"]);

    let run = fleet.run_until_idle(&["--as", "sup"]).ok();
    assert_eq!(run.stderr, "", "nothing on stderr at the default filter");

    let log = run_log(&fleet);
    let claimed = info_line(&log, &format!("▶ {id} attempt 1 (fake): Tidy up"));
    assert!(claimed.contains("event=\"claimed\""), "{claimed}");
    let finished = info_line(&log, &format!("✓ {id} closed: [fleet] attempt 1: closed (tidied)"));
    assert!(finished.contains("event=\"finished\""), "{finished}");
    info_line(&log, "fleet run: supervising as sup");
    let started = info_line(&log, &format!("  {id}: agent started (pid "));
    assert!(started.contains("event=\"agent_started\""), "{started}");
    assert!(!log.contains("{\"type\""), "every event is a readable line:\n{log}");
    let dir = std::fs::metadata(fleet.home().join("logs")).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);

    // A second run appends.
    fleet.run_until_idle(&["--as", "sup"]).ok();
    let again = run_log(&fleet);
    assert!(again.starts_with(&log), "the log is appended to");
    assert_eq!(again.matches("fleet run: supervising as sup").count(), 2, "{again}");
}

#[test]
fn the_run_log_masks_secrets() {
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let fleet = Fleet::new(&[]);
    fleet.task(&format!("Rotate {token}"), &["close done"]);
    fleet.run_until_idle(&[]).ok();
    let log = run_log(&fleet);
    assert!(!log.contains(token), "{log}");
    assert!(log.contains("Rotate ghp_<redacted>"), "{log}");
}
