//! Shared test harness: a throwaway workspace and a way to run the real `fleet` binary in it
//! with a cleared, pinned environment.

#![allow(dead_code)]

pub mod daemon;
pub mod full_disk;
pub mod procs;
pub mod pty;
pub mod remote;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs the `git` program with `args` (a pinned identity, no system config) and returns its
/// stdout without the trailing newline; panics with its stderr on failure.
#[track_caller]
pub fn git(args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim_end().to_string()
}

/// Starts every command at once (output captured) and waits for all of them; panics with the
/// stderr of one that failed, naming `what`. Returns their outputs, in order.
#[track_caller]
pub fn all_succeed(commands: impl IntoIterator<Item = Command>, what: &str) -> Vec<Output> {
    let children: Vec<std::process::Child> = commands
        .into_iter()
        .map(|mut command| {
            command
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start the command")
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|child| child.wait_with_output().expect("wait for the command"))
        .collect();
    for output in &outputs {
        assert!(output.status.success(), "{what}: {}", String::from_utf8_lossy(&output.stderr));
    }
    outputs
}

/// Path of the binary under test.
pub fn fleet_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fleet"))
}

/// A temporary FLEET_HOME with an initialised workspace.
///
/// With `FLEET_TEST_SERVER=1` in the test's environment, every workspace made by
/// [`Workspace::new`] is served by a `fleet serve` process for its lifetime, so the same tests
/// run with commands' writes going through the socket (`.ci/run` runs the CLI suite both ways).
pub struct Workspace {
    pub home: tempfile::TempDir,
    server: Option<std::process::Child>,
}

/// Whether this test run serves every workspace (see [`Workspace`]).
pub fn server_mode() -> bool {
    std::env::var("FLEET_TEST_SERVER").is_ok_and(|v| !v.is_empty() && v != "0")
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            // SAFETY: signalling a child this workspace started.
            unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
            let _ = server.wait();
        }
    }
}

/// The result of one run of the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Parses stdout as JSON; panics with the output if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr)
        })
    }

    /// Asserts success and returns self.
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts failure with `code` and returns self.
    #[track_caller]
    pub fn fails(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Workspace {
    /// A new workspace with prefix `t`.
    pub fn new() -> Workspace {
        Workspace::with_prefix("t")
    }

    pub fn with_prefix(prefix: &str) -> Workspace {
        let mut ws = Workspace::empty();
        ws.run(&["init", "--prefix", prefix]).ok();
        if server_mode() {
            ws.serve();
        }
        ws
    }

    /// A new workspace with prefix `t` whose FLEET_HOME is made inside `parent` (a file system
    /// of the test's choosing), unserved.
    pub fn init_in(parent: &Path) -> Workspace {
        let home = tempfile::tempdir_in(parent).expect("temp dir");
        let ws = Workspace { home, server: None };
        ws.run(&["init", "--prefix", "t"]).ok();
        ws
    }

    /// A FLEET_HOME with no workspace in it yet.
    pub fn empty() -> Workspace {
        Workspace { home: tempfile::tempdir().expect("temp dir"), server: None }
    }

    /// Starts `fleet serve` on this workspace (its log in `serve.log` of the home) and waits
    /// for its socket.
    pub fn serve(&mut self) {
        self.serve_with(|_| {});
    }

    /// [`Workspace::serve`], with the command adjusted by `adjust` first.
    pub fn serve_with(&mut self, adjust: impl FnOnce(&mut Command)) {
        let child = self.spawn_serve("serve.log", adjust);
        self.server = Some(child);
        let socket = self.beads_dir().join("fleet.sock");
        poll_until_showing(
            "fleet serve to take connections",
            std::time::Duration::from_secs(10),
            || std::os::unix::net::UnixStream::connect(&socket).ok(),
            || self.serve_log(),
        );
    }

    /// Starts a `fleet serve` on this workspace that the caller owns, its debug log in `log`
    /// (a file of the home), with the command adjusted by `adjust` first; does not wait for it.
    pub fn spawn_serve(&self, log: &str, adjust: impl FnOnce(&mut Command)) -> std::process::Child {
        let log = std::fs::File::create(self.home().join(log)).expect("serve log");
        let mut command = self.command(&["serve"]);
        adjust(&mut command);
        command
            .env("FLEET_LOG", "debug")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start fleet serve")
    }

    /// The process id of the `fleet serve` started by [`Workspace::serve`].
    pub fn server_pid(&self) -> Option<i32> {
        self.server.as_ref().map(|child| child.id() as i32)
    }

    /// Kills the server with SIGKILL and waits for it (its socket file stays behind).
    pub fn kill_server(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill().expect("kill fleet serve");
            let _ = server.wait();
        }
    }

    /// Waits up to `within` for the server to exit on its own; its exit code, or `None` if it
    /// is still running.
    pub fn wait_server(&mut self, within: std::time::Duration) -> Option<i32> {
        let server = self.server.as_mut()?;
        let status = poll_within(within, || server.try_wait().ok().flatten())?;
        self.server = None;
        Some(status.code().unwrap_or(-1))
    }

    /// The log of the `fleet serve` started by [`Workspace::serve`].
    pub fn serve_log(&self) -> String {
        std::fs::read_to_string(self.home().join("serve.log")).unwrap_or_default()
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The `.beads` directory.
    pub fn beads_dir(&self) -> PathBuf {
        self.home().join(".beads")
    }

    /// A command for the binary with a cleared environment pointing at this workspace.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(fleet_bin());
        cmd.env_clear()
            .env("FLEET_HOME", self.home())
            .env("FLEET_ACTOR", "tester")
            // Journal commits happen when a test asks for them; the committer that writes
            // start in the background has tests of its own, which set this.
            .env("FLEET_JOURNAL_COMMIT_SECS", "0")
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(self.home())
            .args(args);
        if self.server.is_some() {
            // A write that silently fell back to direct mode would pass without proving
            // anything about the server.
            cmd.env("FLEET_REQUIRE_SERVER", "1");
        }
        cmd
    }

    /// Runs the binary and captures its output.
    pub fn run(&self, args: &[&str]) -> Run {
        self.command(args).output().expect("run fleet").into()
    }

    /// Runs with `--json`, asserts success, and parses stdout.
    #[track_caller]
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        self.run(&all).ok().json()
    }

    /// Creates an issue and returns its id.
    #[track_caller]
    pub fn create(&self, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["create", title, "--silent"];
        args.extend_from_slice(extra);
        self.run(&args).ok().stdout.trim().to_string()
    }

    /// Ids of `fleet ready --limit 0`, in order.
    pub fn ready_ids(&self) -> Vec<String> {
        ids_of(&self.json(&["ready", "--limit", "0"]))
    }

    /// Ids of `fleet blocked`, in order.
    pub fn blocked_ids(&self) -> Vec<String> {
        ids_of(&self.json(&["blocked"]))
    }
}

/// The `id` fields of a JSON array of issues.
pub fn ids_of(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|v| v["id"].as_str().expect("an id").to_string())
        .collect()
}

/// The longest a wait of the test suites may take before the test fails (a loaded 2-core
/// machine; a deadline only bounds how long a broken build takes to fail).
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(40);

/// How often the suites' waits look again.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// Polls `check` every [`POLL`] until it returns `Some` — the one way the suites wait for an
/// event — or `within` passes: `None` then, for a caller that still has things to collect
/// (stop a supervisor, gather its output) before it fails.
pub fn poll_within<T>(
    within: std::time::Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let start = std::time::Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if start.elapsed() >= within {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// [`poll_within`] that fails after `within`, naming `what`, with `context()` (output so
/// far).
#[track_caller]
pub fn poll_until_showing<T>(
    what: &str,
    within: std::time::Duration,
    check: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    match poll_within(within, check) {
        Some(value) => value,
        None => panic!("timed out after {within:?} waiting for {what}\n{}", context()),
    }
}

/// [`poll_until_showing`] with nothing more to show.
#[track_caller]
pub fn poll_until<T>(
    what: &str,
    within: std::time::Duration,
    check: impl FnMut() -> Option<T>,
) -> T {
    poll_until_showing(what, within, check, String::new)
}

/// [`poll_until`] within [`WAIT`]: polls `check` until it returns `Some`, failing naming
/// `what`.
#[track_caller]
pub fn wait_for<T>(what: &str, check: impl FnMut() -> Option<T>) -> T {
    poll_until(what, WAIT, check)
}

/// Waits (up to [`WAIT`]) for a line of the file `path` that satisfies `matches` and returns
/// it; fails naming `what` and showing the file as it was.
#[track_caller]
pub fn wait_for_line(path: &Path, what: &str, matches: impl Fn(&str) -> bool) -> String {
    let read = || std::fs::read_to_string(path).unwrap_or_default();
    poll_until_showing(
        what,
        WAIT,
        || read().lines().find(|l| matches(l)).map(str::to_owned),
        || format!("{}:\n{}", path.display(), read()),
    )
}
