//! Issue 28: a full disk (ENOSPC) does not wedge `fleet run`. A write that fails on it broke
//! the store handle for good ("Previous I/O error"): the supervisor never claimed again,
//! though space came back, until it was restarted. Now it claims new work once space is free.

use crate::common::Workspace;
use crate::common::full_disk::SmallDisk;
use crate::harness::Fleet;

#[test]
fn the_supervisor_claims_again_once_a_full_disk_has_space() {
    let Some(disk) = SmallDisk::mount(16) else { return };
    let fleet = Fleet::on(Workspace::init_in(disk.path()), &[]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the start line", |l| l.starts_with("fleet run: supervising as "));

    disk.fill();
    // Through the supervisor's own server, whose commit meets the full disk.
    let full = fleet.ws.run(&["create", "while full", "-d", "fake: close"]);
    assert!(full.code != 0 && full.code != 101, "exit {}: {}", full.code, full.stderr);
    assert!(full.stderr.contains("No space left on device"), "{}", full.stderr);

    disk.free();
    let id = fleet.task("After the disk was freed", &["close space is back"]);
    supervisor.wait_for("the close", |l| l.starts_with(&format!("✓ {id} closed: ")));
    supervisor.stop().ok();
    assert_eq!(fleet.show(&id)["close_reason"], "space is back");
}
