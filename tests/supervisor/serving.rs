//! `fleet run` serves its workspace's socket while it runs: agents' `bd` writes reach the
//! store through it, and the socket is gone once the supervisor stops.

use crate::harness::{Fleet, Supervisor};

#[test]
fn the_supervisor_serves_its_agents_writes_and_removes_its_socket() {
    let fleet = Fleet::new(&[]);
    let id = fleet.task("Close through the socket", &["close done through the socket"]);
    let socket = fleet.ws.beads_dir().join("fleet.sock");
    let mut command = fleet.ws.command(&["run", "--until-idle"]);
    command.env("FLEET_LOG", "fleet::server=debug");
    let run = Supervisor::spawn(command).wait();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("serving the workspace"), "{}", run.stderr);
    assert!(
        run.stderr.lines().any(|l| l.contains("group committed")),
        "the agent's close did not go through the socket:\n{}",
        run.stderr
    );
    assert!(!socket.exists(), "the socket outlived the supervisor");
    let shown = fleet.ws.json(&["show", &id]);
    assert_eq!(shown[0]["status"], "closed");
    assert_eq!(shown[0]["close_reason"], "done through the socket");
}
