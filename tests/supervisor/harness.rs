//! Helpers for driving the real `fleet run` with the scriptable fake agent.
//!
//! A [`Fleet`] is a throwaway `FLEET_HOME` whose `runtime.toml` defines a `fake` coder that runs
//! `<fleet binary> fake-agent {prompt}` and reads its stdout as Claude stream-json. A task's
//! description is its script: one `fake: …` directive per line (see `src/cli/fake_agent.rs`).
//! A [`Supervisor`] is a running `fleet run` child whose stdout lines are collected as they
//! arrive, so tests wait for what a user would see instead of sleeping.
//!
//! Every wait polls with a generous deadline ([`DEADLINE`]): the suite runs on a loaded 2-core
//! machine, and a deadline only bounds how long a broken build takes to fail.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Workspace, fleet_bin, poll_until_showing, poll_within, procs};

/// The longest any wait in this suite may take before the test fails.
pub const DEADLINE: Duration = crate::common::WAIT;

/// Settings shared by every test: the fake coder, no backoff, short grace, long pauses.
/// Tests append their own keys (later keys must not repeat these).
const BASE: &[(&str, &str)] = &[
    ("max_concurrent", "2"),
    ("coder", "\"fake\""),
    ("retry_backoff_secs", "0"),
    ("retry_backoff_max_secs", "600"),
    ("stall_timeout_secs", "60"),
    ("attempt_timeout_secs", "600"),
    ("shutdown_grace_secs", "1"),
    ("rate_limit_default_pause_secs", "3600"),
];

/// A counter of `fleet.*` on an issue as `fleet show --json` prints it (absent means 0).
pub fn counter(issue: &Value, name: &str) -> u64 {
    issue["fleet"][name].as_u64().unwrap_or(0)
}

/// A throwaway fleet home with the fake coder configured.
pub struct Fleet {
    pub ws: Workspace,
}

impl Fleet {
    /// A new home; `settings` are extra `key = value` lines for runtime.toml.
    pub fn new(settings: &[(&str, &str)]) -> Fleet {
        let fleet = Fleet { ws: Workspace::new() };
        fleet.configure(settings);
        fleet
    }

    /// A home on the workspace `ws` (made where the test needs it), configured as
    /// [`Fleet::new`] configures one.
    pub fn on(ws: Workspace, settings: &[(&str, &str)]) -> Fleet {
        let fleet = Fleet { ws };
        fleet.configure(settings);
        fleet
    }

    pub fn home(&self) -> &Path {
        self.ws.home()
    }

    /// Rewrites runtime.toml: the base settings overridden by `settings`, then the fake coder
    /// and any `extra` text (more `[coders.*]` tables). Written with a rename, as an editor
    /// would, so a running supervisor never reads half a file.
    pub fn configure_with(&self, settings: &[(&str, &str)], extra: &str) {
        let mut text = String::new();
        for (key, value) in BASE {
            if !settings.iter().any(|(k, _)| k == key) {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        for (key, value) in settings {
            text.push_str(&format!("{key} = {value}\n"));
        }
        text.push_str(&format!(
            "\n[coders.fake]\nargv = [{:?}, \"fake-agent\", \"{{prompt}}\"]\nevents = \"claude\"\n",
            fleet_bin().display().to_string()
        ));
        text.push_str(extra);
        self.write_config(&text);
    }

    pub fn configure(&self, settings: &[(&str, &str)]) {
        self.configure_with(settings, "");
    }

    /// Replaces runtime.toml with `text` as it is (valid or not).
    pub fn write_config(&self, text: &str) {
        let temp = self.home().join("runtime.toml.new");
        std::fs::write(&temp, text).expect("write runtime.toml");
        std::fs::rename(&temp, self.home().join("runtime.toml")).expect("rename runtime.toml");
    }

    /// Creates a task whose script is `script` (directives without the `fake: ` prefix).
    #[track_caller]
    pub fn task(&self, title: &str, script: &[&str]) -> String {
        self.task_with(title, script, &[])
    }

    /// Like [`Fleet::task`], with extra `fleet create` arguments.
    #[track_caller]
    pub fn task_with(&self, title: &str, script: &[&str], extra: &[&str]) -> String {
        let description: Vec<String> = script.iter().map(|step| format!("fake: {step}")).collect();
        let description = description.join("\n");
        let mut args = vec!["-d", description.as_str()];
        args.extend_from_slice(extra);
        self.ws.create(title, &args)
    }

    /// `fleet show ID --json`, the one issue.
    #[track_caller]
    pub fn show(&self, id: &str) -> Value {
        let shown = self.ws.json(&["show", id]);
        shown[0].clone()
    }

    /// The texts of the issue's comments, oldest first.
    pub fn comments(&self, id: &str) -> Vec<String> {
        self.show(id)["comments"]
            .as_array()
            .expect("comments")
            .iter()
            .map(|c| c["text"].as_str().expect("comment text").to_string())
            .collect()
    }

    /// `$FLEET_HOME/tasks/<id>/<name>`.
    pub fn task_file(&self, id: &str, name: &str) -> PathBuf {
        self.home().join("tasks").join(id).join(name)
    }

    /// The JSON lines of `$FLEET_HOME/tasks/<id>/<name>`.
    pub fn json_lines(&self, id: &str, name: &str) -> Vec<Value> {
        let path = self.task_file(id, name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
            .collect()
    }

    /// The runner's lines (`log.jsonl`) named `event`.
    pub fn runner_lines(&self, id: &str, event: &str) -> Vec<Value> {
        self.json_lines(id, "log.jsonl").into_iter().filter(|l| l["event"] == event).collect()
    }

    /// Starts `fleet run ARGS` in the background.
    pub fn start(&self, args: &[&str]) -> Supervisor {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        Supervisor::spawn(self.ws.command(&all))
    }

    /// Runs `fleet run --until-idle ARGS` to its end and returns its exit code and stdout.
    #[track_caller]
    pub fn run_until_idle(&self, args: &[&str]) -> Finished {
        let mut all = vec!["--until-idle"];
        all.extend_from_slice(args);
        self.start(&all).wait()
    }

    /// Processes (not zombies) that belong to this home, as `PID: COMMAND LINE`: their
    /// environment names it as `FLEET_HOME` or their command line mentions it (see
    /// [`procs::of_home`]). Agents, and everything they start, inherit `FLEET_HOME` from the
    /// supervisor; `except` leaves out the supervisor itself and its guard process (which lives
    /// exactly as long as it does).
    pub fn processes(&self, except: Option<u32>) -> Vec<String> {
        procs::of_home(self.home(), except).iter().map(ToString::to_string).collect()
    }

    /// Waits until no process of this home is left (other than `except`), or panics listing
    /// the survivors.
    #[track_caller]
    pub fn assert_no_processes_left(&self, except: Option<u32>) {
        self.assert_no_processes_left_by(except, Instant::now() + Duration::from_secs(10));
    }

    /// Waits until no process of this home is left (other than `except`), or panics listing
    /// the survivors at `deadline`; returns when they were all gone.
    #[track_caller]
    pub fn assert_no_processes_left_by(&self, except: Option<u32>, deadline: Instant) -> Instant {
        poll_until_showing(
            "no process of the home to be left",
            deadline.saturating_duration_since(Instant::now()),
            || self.processes(except).is_empty().then(Instant::now),
            || format!("processes left behind:\n{}", self.processes(except).join("\n")),
        )
    }
}

/// How a `fleet run` ended.
#[derive(Debug)]
pub struct Finished {
    pub code: i32,
    pub lines: Vec<String>,
    pub stderr: String,
}

impl Finished {
    /// Asserts exit code 0.
    #[track_caller]
    pub fn ok(self) -> Finished {
        assert_eq!(
            self.code,
            0,
            "fleet run failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr
        );
        self
    }

    /// Asserts that an `--until-idle` run stopped with tasks it ran not closed (exit 4) and
    /// that its one-line account on stderr names exactly `tasks`, each as `ID STATUS
    /// (LAST VERDICT)`, in id order.
    #[track_caller]
    pub fn unfinished(self, tasks: &[&str]) -> Finished {
        assert_eq!(
            self.code,
            4,
            "expected exit 4 (tasks not closed)\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr
        );
        let line = self.stderr.lines().find(|l| l.starts_with("error: stopped with "));
        let line =
            line.unwrap_or_else(|| panic!("no account of the unfinished tasks:\n{}", self.stderr));
        let named = line.split_once(" not closed: ").map_or("", |(_, named)| named);
        let mut expected = tasks.to_vec();
        expected.sort_unstable();
        assert_eq!(named, expected.join(", "), "{line}");
        self
    }

    pub fn stdout(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines that start with `prefix`.
    pub fn starting(&self, prefix: &str) -> Vec<&str> {
        self.lines.iter().filter(|l| l.starts_with(prefix)).map(String::as_str).collect()
    }
}

/// A `fleet run` running in the background.
pub struct Supervisor {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl Supervisor {
    pub fn spawn(mut command: std::process::Command) -> Supervisor {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fleet run");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let stdout = child.stdout.take().expect("stdout piped");
        let mut err = child.stderr.take().expect("stderr piped");
        let out_lines = Arc::clone(&lines);
        let err_text = Arc::clone(&stderr);
        let readers = vec![
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    out_lines.lock().unwrap().push(line);
                }
            }),
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.read_to_string(&mut text);
                err_text.lock().unwrap().push_str(&text);
            }),
        ];
        Supervisor { child, lines, stderr, readers }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The stdout lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// How many stdout lines so far satisfy `matches`.
    pub fn count(&self, matches: impl Fn(&str) -> bool) -> usize {
        self.lines().iter().filter(|l| matches(l)).count()
    }

    /// The events of `fleet run --json` so far of type `kind` that satisfy `matches`.
    pub fn events(&self, kind: &str, matches: impl Fn(&Value) -> bool) -> Vec<Value> {
        let parse = |line: &String| serde_json::from_str::<Value>(line).ok();
        self.lines()
            .iter()
            .filter_map(parse)
            .filter(|event| event["type"] == kind && matches(event))
            .collect()
    }

    /// Waits for the first event of `fleet run --json` of type `kind` satisfying `matches`.
    #[track_caller]
    pub fn wait_event(&self, kind: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let what = format!("a {kind} event");
        self.wait_until(&what, || self.events(kind, &matches).into_iter().next())
    }

    /// Polls `check` until it returns `Some`; on timeout, fails showing the output so far.
    #[track_caller]
    pub fn wait_until<T>(&self, what: &str, check: impl FnMut() -> Option<T>) -> T {
        self.wait_until_within(DEADLINE, what, check)
    }

    /// [`Supervisor::wait_until`] with a deadline of its own, for the few waits on a long run
    /// of work (hundreds of attempts on a loaded 2-core machine).
    #[track_caller]
    pub fn wait_until_within<T>(
        &self,
        deadline: Duration,
        what: &str,
        check: impl FnMut() -> Option<T>,
    ) -> T {
        poll_until_showing(what, deadline, check, || {
            format!(
                "stdout so far:\n{}\nstderr:\n{}",
                self.lines().join("\n"),
                self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
            )
        })
    }

    /// Waits for a stdout line satisfying `matches` and returns it.
    #[track_caller]
    pub fn wait_for(&self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        self.wait_until(what, || self.lines().into_iter().find(|l| matches(l)))
    }

    /// Waits for the line `▶ <id> attempt <n> …` (the supervisor claimed the task).
    #[track_caller]
    pub fn wait_started(&self, id: &str, attempt: u32) -> String {
        let prefix = format!("▶ {id} attempt {attempt} ");
        self.wait_for(&format!("{id} attempt {attempt} to start"), |l| l.starts_with(&prefix))
    }

    /// Waits for the `nth` (1-based) line `✓|• <id> <verdict>: …` and returns it.
    #[track_caller]
    pub fn wait_finished(&self, id: &str, nth: usize) -> String {
        let done = format!("✓ {id} ");
        let other = format!("• {id} ");
        self.wait_until(&format!("finish #{nth} of {id}"), || {
            self.lines()
                .into_iter()
                .filter(|l| l.starts_with(&done) || l.starts_with(&other))
                .nth(nth - 1)
        })
    }

    /// Sends `signal` to the supervisor.
    pub fn signal(&self, signal: i32) {
        let pid = i32::try_from(self.pid()).expect("pid fits");
        // SAFETY: sends a signal to our own child, which has not been waited for yet.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
    }

    /// Waits for the supervisor to exit by itself (within [`DEADLINE`]).
    #[track_caller]
    pub fn wait(self) -> Finished {
        self.wait_within(DEADLINE)
    }

    /// [`Supervisor::wait`] with a deadline of its own, for a long run of work.
    #[track_caller]
    pub fn wait_within(mut self, deadline: Duration) -> Finished {
        let Some(status) = poll_within(deadline, || self.child.try_wait().expect("try_wait"))
        else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            panic!(
                "fleet run did not exit\nstdout:\n{}\nstderr:\n{}",
                self.lines().join("\n"),
                self.stderr.lock().unwrap()
            );
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        Finished {
            code: status.code().unwrap_or(-1),
            lines: self.lines(),
            stderr: self.stderr.lock().unwrap().clone(),
        }
    }

    /// SIGTERM, then waits for the exit.
    #[track_caller]
    pub fn stop(self) -> Finished {
        self.signal(libc::SIGTERM);
        self.wait()
    }
}

impl Drop for Supervisor {
    /// A failed test must not leave a supervisor behind: SIGTERM lets it stop its agents.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = i32::try_from(self.child.id()).map(|pid| {
                // SAFETY: signals our own child, not yet waited for.
                unsafe { libc::kill(pid, libc::SIGTERM) }
            });
            poll_within(DEADLINE, || (!matches!(self.child.try_wait(), Ok(None))).then_some(()));
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
