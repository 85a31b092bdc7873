//! A store file deleted or replaced under a running supervisor: it would go on writing into
//! the old file, which no one reads. It stops instead, within a heartbeat, saying why.

use std::time::{Duration, Instant};

use crate::harness::Fleet;

/// Starts a supervisor with one agent running, lets `damage` act on the store file, and
/// checks that the supervisor exits non-zero within about ten seconds, naming the file.
fn stops_when(damage: impl FnOnce(&Fleet, &std::path::Path)) {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Long job", &["sleep 60"]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&id, 1);
    let path = fleet.ws.beads_dir().join("beads.db");

    damage(&fleet, &path);
    let changed = Instant::now();
    let run = supervisor.wait();
    assert!(
        changed.elapsed() < Duration::from_secs(15),
        "stopped {:?} after the change",
        changed.elapsed()
    );
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert_ne!(run.code, 101, "{}", run.stderr);
    assert!(run.stderr.contains(&path.display().to_string()), "{}", run.stderr);
    assert!(run.stderr.contains(&id), "names the task it could not release:\n{}", run.stderr);
    assert!(run.stderr.contains("lease"), "{}", run.stderr);
    fleet.assert_no_processes_left(None);
}

#[test]
fn a_store_replaced_under_the_supervisor_stops_it() {
    stops_when(|_, path| {
        let other_store = crate::common::Workspace::with_prefix("o");
        let copy = path.with_extension("incoming");
        std::fs::copy(other_store.beads_dir().join("beads.db"), &copy).unwrap();
        std::fs::rename(&copy, path).unwrap();
    });
}

#[test]
fn a_store_deleted_under_the_supervisor_stops_it() {
    stops_when(|_, path| std::fs::remove_file(path).unwrap());
}
