//! Claiming: work created by another process is noticed without a fixed poll interval, and
//! leases left by a supervisor that died are released when it starts again.

use std::time::{Duration, Instant};

use crate::harness::{Fleet, counter};

#[test]
fn task_created_by_another_process_is_picked_up_quickly() {
    let fleet = Fleet::new(&[]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the start line", |l| l.starts_with("fleet run: supervising as "));
    // Let the supervisor settle into waiting on an empty queue.
    std::thread::sleep(Duration::from_millis(300));

    let id = fleet.task("Created while running", &["close picked up"]);
    let created = Instant::now();
    supervisor.wait_started(&id, 1);
    let waited = created.elapsed();
    // A generous bound for a loaded machine; the latency goal itself lives in the benchmarks.
    assert!(waited < Duration::from_secs(2), "the new task started after {waited:?}");

    supervisor.wait_for("the close", |l| l.starts_with(&format!("✓ {id} closed: ")));
    let run = supervisor.stop().ok();
    assert_eq!(run.lines.last().unwrap(), "fleet run: 1 attempts — closed 1");
    assert_eq!(fleet.show(&id)["close_reason"], "picked up");
}

#[test]
fn stale_lease_of_this_supervisor_is_released_at_start() {
    let fleet = Fleet::new(&[]);
    let stale = fleet.task("Held by a dead run", &["close finished after all"]);
    let foreign = fleet.task("Held by another supervisor", &["close"]);
    fleet.ws.run(&["claim", &stale, "--actor", "sup-a"]).ok();
    fleet.ws.run(&["claim", &foreign, "--actor", "sup-b"]).ok();
    assert_eq!(fleet.show(&stale)["status"], "in_progress");

    let run = fleet.run_until_idle(&["--as", "sup-a"]).ok();

    assert_eq!(
        run.starting("↩ "),
        [format!(
            "↩ {stale} released: it was held by sup-a from a run that stopped without releasing it"
        )],
        "{}",
        run.stdout()
    );
    let issue = fleet.show(&stale);
    assert_eq!(issue["status"], "closed", "released, then claimed and run");
    assert_eq!(issue["close_reason"], "finished after all");
    assert_eq!(counter(&issue, "failures"), 0);
    let comments = fleet.comments(&stale);
    assert_eq!(
        comments[0],
        "[fleet] released: it was held by sup-a from a run that stopped without releasing it"
    );
    // Another supervisor's lease is not ours to break.
    let other = fleet.show(&foreign);
    assert_eq!(other["status"], "in_progress");
    assert_eq!(other["assignee"], "sup-b");
    assert_eq!(counter(&other, "attempts"), 0);
}
