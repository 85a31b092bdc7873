//! The world one end-to-end scenario runs in: a temporary root holding `FLEET_HOME` (an
//! initialised queue), the agent's `HOME`, a project directory for the task, and a
//! `fleet run` child process whose `--json` events are collected as they arrive.
//!
//! Everything a scenario starts carries `FLEET_HOME=<this root>` in its environment (the
//! supervisor passes it to agents, and their tool shells inherit it), which is how
//! [`Sandbox::leftover_processes`] finds processes left behind, and how a failed test cleans
//! up after itself without touching anything else on the machine.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use crate::common::{fleet_bin, poll_within, procs};

/// A TOML basic string holding `text` (JSON string escapes are valid TOML ones).
pub fn toml_str(text: &str) -> String {
    serde_json::to_string(text).expect("strings serialize")
}

/// Writes to the real stderr, past the test harness's output capture, so a skip is seen
/// even when the test passes.
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

pub struct Sandbox {
    root: tempfile::TempDir,
    /// `FLEET_HOME`.
    pub home: PathBuf,
    /// The agent's (and supervisor's) `HOME`.
    pub user_home: PathBuf,
    /// The task's working directory.
    pub work: PathBuf,
}

impl Sandbox {
    /// A fresh root with an initialised queue (prefix `e2e`).
    /// With `FLEET_E2E_KEEP=1` the root is kept (and named on stderr) for a look afterwards.
    pub fn new() -> Sandbox {
        let mut root = tempfile::Builder::new().prefix("fleet-e2e-").tempdir().expect("temp dir");
        if std::env::var_os("FLEET_E2E_KEEP").is_some_and(|v| v != "0") {
            root.disable_cleanup(true);
            say(&format!("keeping {}", root.path().display()));
        }
        let home = root.path().join("fleet");
        let user_home = root.path().join("home");
        let work = root.path().join("work");
        for dir in [&home, &user_home, &work] {
            std::fs::create_dir_all(dir).expect("create sandbox dirs");
        }
        let sandbox = Sandbox { root, home, user_home, work };
        sandbox.fleet(&["init", "--prefix", "e2e"]);
        sandbox
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A `fleet` command with a cleared environment pointing at this queue.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(fleet_bin());
        cmd.env_clear()
            .env("FLEET_HOME", &self.home)
            .env("HOME", &self.user_home)
            .env("FLEET_ACTOR", "e2e-tester")
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .args(args);
        cmd
    }

    /// Runs `fleet ARGS`, asserts success, returns stdout.
    #[track_caller]
    pub fn fleet(&self, args: &[&str]) -> String {
        self.fleet_in(&self.home, &[], args)
    }

    /// [`Sandbox::fleet`] in the directory `dir`, with `env` added to the environment.
    #[track_caller]
    pub fn fleet_in(&self, dir: &Path, env: &[(&str, &Path)], args: &[&str]) -> String {
        let mut command = self.command(args);
        command.current_dir(dir).envs(env.iter().copied());
        let output = command.output().expect("run fleet");
        assert!(
            output.status.success(),
            "fleet {args:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Creates a task working in [`Sandbox::work`]; returns its id.
    pub fn create_task(&self, title: &str) -> String {
        let work = self.work.display().to_string();
        self.fleet(&["create", title, "--silent", "--cwd", &work]).trim().to_owned()
    }

    /// `fleet show ID --json`, the issue object.
    pub fn show(&self, id: &str) -> Value {
        let text = self.fleet(&["show", id, "--json"]);
        let value: Value = serde_json::from_str(&text).expect("show --json is JSON");
        value.as_array().and_then(|a| a.first()).cloned().unwrap_or(value)
    }

    /// The comment texts of a task, oldest first.
    pub fn comments(&self, id: &str) -> Vec<String> {
        let text = self.fleet(&["comments", id, "--json"]);
        let value: Value = serde_json::from_str(&text).expect("comments --json is JSON");
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// Writes `$FLEET_HOME/runtime.toml`.
    pub fn write_runtime(&self, text: &str) {
        std::fs::write(self.home.join("runtime.toml"), text).expect("write runtime.toml");
    }

    pub fn task_dir(&self, id: &str) -> PathBuf {
        self.home.join("tasks").join(id)
    }

    /// The lines of a JSON Lines file in the task directory (`events.jsonl`, `log.jsonl`).
    pub fn task_jsonl(&self, id: &str, name: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.task_dir(id).join(name)).unwrap_or_default();
        text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
    }

    /// The normalized agent events of a task (`events.jsonl`).
    pub fn events(&self, id: &str) -> Vec<Value> {
        self.task_jsonl(id, "events.jsonl")
    }

    /// Everything worth reading when a scenario fails.
    pub fn diagnose(&self, id: &str) -> String {
        let read =
            |name: &str| std::fs::read_to_string(self.task_dir(id).join(name)).unwrap_or_default();
        let show = self.command(&["show", id]).output().map(|o| {
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
        });
        format!(
            "--- fleet show {id}\n{}\n--- log.jsonl\n{}\n--- events.jsonl\n{}\n--- log.stderr\n{}",
            show.unwrap_or_default(),
            read("log.jsonl"),
            read("events.jsonl"),
            read("log.stderr"),
        )
    }

    /// Starts `fleet run --json --as e2e-supervisor [--until-idle]` with a cleared environment
    /// plus `env`.
    pub fn start_supervisor(&self, until_idle: bool, env: &[(&str, &str)]) -> Supervisor {
        let mut args = vec!["run", "--json", "--as", "e2e-supervisor"];
        if until_idle {
            args.push("--until-idle");
        }
        let stderr_path = self.root().join("supervisor.stderr");
        let stderr = File::create(&stderr_path).expect("create supervisor.stderr");
        let mut cmd = self.command(&args);
        cmd.envs(env.iter().copied()).stdout(Stdio::piped()).stderr(stderr);
        let mut child = cmd.spawn().expect("spawn fleet run");
        let stdout = child.stdout.take().expect("piped stdout");
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| serde_json::json!({"type": "unparsed", "line": line}));
                sink.lock().unwrap().push(value);
            }
        });
        Supervisor { child, events, reader, stderr_path, home: self.home.clone() }
    }

    /// Live processes started on behalf of this sandbox (their environment names its
    /// `FLEET_HOME`, or their command line its path), except `except` and its guard:
    /// `(pid, command line)`.
    pub fn leftover_processes(&self, except: Option<u32>) -> Vec<(i32, String)> {
        processes_with_home(&self.home, except)
    }

    /// Waits up to `deadline` for every process of this sandbox but `except` to be gone;
    /// returns the ones still there.
    pub fn wait_no_processes(&self, except: Option<u32>, deadline: Duration) -> Vec<(i32, String)> {
        poll_within(deadline, || Some(self.leftover_processes(except)).filter(Vec::is_empty))
            .unwrap_or_else(|| self.leftover_processes(except))
    }
}

fn processes_with_home(home: &Path, except: Option<u32>) -> Vec<(i32, String)> {
    procs::of_home(home, except)
        .into_iter()
        .map(|p| (p.pid, p.cmdline.chars().take(200).collect()))
        .collect()
}

/// A running `fleet run`. Dropping it kills the supervisor and anything of its sandbox still
/// alive (a failed test must not leave agents behind).
pub struct Supervisor {
    child: Child,
    events: Arc<Mutex<Vec<Value>>>,
    /// The thread that collects the events; it ends at the end of the supervisor's stdout.
    reader: JoinHandle<()>,
    stderr_path: PathBuf,
    home: PathBuf,
}

impl Supervisor {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The `--json` events printed so far.
    pub fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// The events of one `type`.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["type"] == kind).collect()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Waits for an event matching `pred`; `None` after `deadline` or if the supervisor exited
    /// without printing one.
    pub fn wait_event(
        &mut self,
        deadline: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let found = |this: &Self| this.events().into_iter().find(|e| pred(e));
        poll_within(deadline, || match found(self) {
            Some(event) => Some(Some(event)),
            None if self.exited() => Some(found(self)),
            None => None,
        })
        .flatten()
    }

    /// Whether the supervisor has exited and every line it printed has been collected.
    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_))) && self.drained()
    }

    /// Waits (a few seconds at most) for the reader to reach the end of the stdout of a
    /// supervisor that has exited; whether it did.
    fn drained(&self) -> bool {
        poll_within(Duration::from_secs(5), || self.reader.is_finished().then_some(())).is_some()
    }

    /// Waits for the `finished` event of `id` whose verdict is `verdict`.
    pub fn wait_finished(&mut self, id: &str, verdict: &str, deadline: Duration) -> Option<Value> {
        self.wait_event(deadline, |e| {
            e["type"] == "finished" && e["id"] == id && e["verdict"] == verdict
        })
    }

    /// Whether a `finished` event of `id` with `verdict` was printed.
    pub fn finished(&self, id: &str, verdict: &str) -> bool {
        self.events_of("finished").iter().any(|e| e["id"] == id && e["verdict"] == verdict)
    }

    /// Waits up to `deadline` for the supervisor to exit by itself (and for its last events to
    /// be collected).
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let status = poll_within(deadline, || self.child.try_wait().ok().flatten())?;
        self.drained();
        Some(status)
    }

    /// Sends SIGTERM and waits up to `deadline` for the supervisor to exit.
    pub fn terminate(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let pid = i32::try_from(self.child.id()).expect("pid fits i32");
        // SAFETY: signals one specific process, our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        self.wait_exit(deadline)
    }

    /// The events and stderr, for failure messages.
    pub fn diagnose(&self) -> String {
        let events: Vec<String> = self.events().iter().map(Value::to_string).collect();
        format!(
            "--- fleet run events\n{}\n--- fleet run stderr\n{}",
            events.join("\n"),
            self.stderr()
        )
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for (pid, _) in processes_with_home(&self.home, None) {
            // SAFETY: SIGKILL to one pid that this test started (it carries our FLEET_HOME).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}
