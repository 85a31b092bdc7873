//! A fleet process serving a benchmark workspace's socket while fleet's claimers run: `fleet
//! serve`, or `fleet run` with no agent slots — the supervisor running as it does while agents
//! work, watching the queue and serving their writes. Started before the measurement, stopped
//! (SIGTERM, then SIGKILL) after it.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::workspace::fleet_store_dir;
use super::{BenchError, io_error};

/// Which process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// `fleet serve`.
    Serve,
    /// `fleet run` with `max_concurrent = 0`.
    Supervisor,
}

/// A running serving process; dropping it stops it.
pub struct ServingProcess {
    child: Child,
}

/// How long the server may take to open its socket.
const START_DEADLINE: Duration = Duration::from_secs(20);

impl ServingProcess {
    /// Starts `kind` on the benchmark workspace `workspace` and waits for its socket.
    pub fn start(binary: &Path, workspace: &Path, kind: ServerKind) -> Result<Self, BenchError> {
        let mut command = Command::new(binary);
        command.env_remove("BEADS_DIR").env("FLEET_HOME", workspace);
        match kind {
            ServerKind::Serve => command.arg("--db").arg(fleet_store_dir(workspace)).arg("serve"),
            ServerKind::Supervisor => {
                let config = workspace.join("runtime.toml");
                std::fs::write(&config, "max_concurrent = 0\n")
                    .map_err(io_error(format!("writing {}", config.display())))?;
                command.arg("run")
            }
        };
        let log = workspace.join("server.log");
        let log_file =
            std::fs::File::create(&log).map_err(io_error(format!("creating {}", log.display())))?;
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log_file);
        let child = command.spawn().map_err(io_error("starting the fleet server".into()))?;
        let mut serving = ServingProcess { child };
        serving.wait_for_socket(
            &fleet_store_dir(workspace).join(crate::workspace::SOCKET_FILE),
            &log,
        )?;
        Ok(serving)
    }

    fn wait_for_socket(&mut self, socket: &Path, log: &Path) -> Result<(), BenchError> {
        let started = Instant::now();
        while UnixStream::connect(socket).is_err() {
            let exited =
                self.child.try_wait().map_err(io_error("waiting for the server".into()))?;
            if exited.is_some() || started.elapsed() > START_DEADLINE {
                let said = std::fs::read_to_string(log).unwrap_or_default();
                return Err(BenchError::Failed(format!(
                    "the fleet server did not start serving {}: {}",
                    socket.display(),
                    said.trim()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

impl Drop for ServingProcess {
    fn drop(&mut self) {
        let pid = i32::try_from(self.child.id()).unwrap_or(0);
        // SAFETY: signalling the child this guard started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_)) | Err(_)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
