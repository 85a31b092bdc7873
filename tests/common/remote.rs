//! Machines (workspaces) sharing one bare git remote, as `fleet sync` tests and the recovery
//! tests of `fleet doctor` use them.

use std::path::PathBuf;

use serde_json::Value;

use super::{Workspace, git};

/// A bare remote and machines that know it as `origin`.
pub struct Fleet {
    pub remote_dir: tempfile::TempDir,
    pub machines: Vec<Workspace>,
}

impl Fleet {
    pub fn new(machines: usize) -> Fleet {
        let remote_dir = tempfile::tempdir().unwrap();
        let fleet =
            Fleet { remote_dir, machines: (0..machines).map(|_| Workspace::new()).collect() };
        git(&["init", "-q", "--bare", fleet.remote().to_str().unwrap()]);
        for ws in &fleet.machines {
            ws.run(&["remote", "add", "origin", fleet.remote().to_str().unwrap()]).ok();
        }
        fleet
    }

    pub fn remote(&self) -> PathBuf {
        self.remote_dir.path().join("remote.git")
    }

    /// `fleet sync --json` on machine `n`, which must succeed.
    #[track_caller]
    pub fn sync(&self, n: usize) -> Value {
        self.machines[n].json(&["sync"])
    }

    pub fn exports(&self) -> Vec<String> {
        self.machines.iter().map(export_all).collect()
    }
}

/// Everything a machine's queue holds, as the JSONL other machines compare it with.
pub fn export_all(ws: &Workspace) -> String {
    ws.run(&["export", "--all", "--include-paths"]).ok().stdout
}

/// A port on 127.0.0.1 that nothing listens on (bound once by the system's choice, then let go).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    listener.local_addr().expect("its address").port()
}

/// A `git daemon` serving the bare repositories under a directory over `git://`, read and
/// write, on a port of 127.0.0.1; stopped when dropped.
pub struct GitDaemon {
    child: std::process::Child,
    pub port: u16,
}

impl GitDaemon {
    /// Starts one for the repositories under `base` and waits until it takes connections.
    pub fn start(base: &std::path::Path) -> GitDaemon {
        let port = closed_port();
        let child = std::process::Command::new("git")
            .arg("daemon")
            .arg(format!("--base-path={}", base.display()))
            .args(["--export-all", "--reuseaddr", "--enable=receive-pack", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(base)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start git daemon");
        let daemon = GitDaemon { child, port };
        super::poll_until(
            "git daemon to take connections",
            std::time::Duration::from_secs(20),
            || std::net::TcpStream::connect(("127.0.0.1", port)).ok(),
        );
        daemon
    }

    /// The `git://` URL of the repository `name` under the daemon's directory.
    pub fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}", self.port)
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
