//! The per-task directory `$FLEET_HOME/tasks/<id>/`: what a run leaves behind for people and
//! for the next run.
//!
//! - `task.json`: the task as the supervisor ran it (id, title, cwd, coder, model, counters);
//! - `log.jsonl`: the runner's own lines (`attempt_started`, `attempt_finished`, …);
//! - `log.stderr`: the agent's stderr, appended across attempts — redacted when written line
//!   by line through [`StderrLog`], raw when the agent writes into [`TaskDir::stderr_file`];
//! - `events.jsonl`: the agent's normalised events, redacted;
//! - `ledger.json`: tokens and cost of every attempt (see [`super::ledger`]);
//! - `prompts/<attempt>.md`: the prompt each attempt was given, redacted;
//! - `artifacts/PLAN_AND_STATUS.md` and `artifacts/KNOWLEDGE.md`: stubs written once and never
//!   overwritten — the agent's memory between fresh runs.
//!
//! Everything written here except the artifact stubs goes through a [`Redactor`]: `task.json`'s
//! strings, every line of `events.jsonl` and `log.jsonl`, and every line of `log.stderr` written
//! through [`TaskDir::stderr_writer`].

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::coders::{AgentEvent, RawJson};
use crate::model::Issue;
use crate::redact::{PlainJson, Redactor};

/// Paths of one task's directory.
#[derive(Debug, Clone)]
pub struct TaskDir {
    pub root: PathBuf,
}

/// `task.json`.
#[derive(Debug, Serialize)]
pub struct TaskRecord<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub status: &'a str,
    pub priority: u8,
    pub cwd: &'a str,
    pub coder: &'a str,
    pub model: &'a str,
    pub attempts: u32,
    pub failures: u32,
    pub noclose: u32,
    pub stalls: u32,
    pub context_resets: u32,
    pub updated_at: Timestamp,
}

/// The ids of every task directory under `home`.
pub fn task_ids(home: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(home.join("tasks")) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .collect()
}

impl TaskDir {
    /// The directory of task `id` under `home`. The id must be one safe path component: not
    /// empty, `.` or `..`, without `/` or NUL, and not starting with `-`; anything else is
    /// refused (`InvalidInput`) rather than letting an id point outside `tasks/`.
    pub fn new(home: &Path, id: &str) -> io::Result<TaskDir> {
        check_task_id(id)?;
        Ok(TaskDir { root: home.join("tasks").join(id) })
    }

    pub fn artifacts(&self) -> PathBuf {
        self.root.join("artifacts")
    }

    /// Creates the directory and the artifact stubs (never overwriting them).
    pub fn prepare(&self, issue: &Issue) -> io::Result<()> {
        std::fs::create_dir_all(self.artifacts())?;
        write_new(&self.artifacts().join("PLAN_AND_STATUS.md"), &plan_stub(issue))?;
        write_new(&self.artifacts().join("KNOWLEDGE.md"), &knowledge_stub(issue))?;
        Ok(())
    }

    /// Writes `task.json` atomically, its strings redacted (a title or description may quote a
    /// secret), creating the directory if needed; the runner adds the artifact stubs when it
    /// prepares the attempt.
    pub fn write_record(&self, record: &TaskRecord<'_>, redactor: &Redactor) -> io::Result<()> {
        std::fs::create_dir_all(&self.root)?;
        let mut value = serde_json::to_value(record).map_err(io::Error::other)?;
        redactor.redact_json(&mut value);
        let text = serde_json::to_string_pretty(&value).map_err(io::Error::other)?;
        crate::fsutil::write_atomic(&self.root.join("task.json"), format!("{text}\n").as_bytes())
    }

    /// Opens `log.stderr` for appending, unredacted (the agent's stderr goes straight into it).
    /// Prefer [`TaskDir::stderr_writer`], which redacts each line.
    pub fn stderr_file(&self) -> io::Result<File> {
        append(&self.root.join("log.stderr"))
    }

    /// `log.stderr` for appending redacted lines: the supervisor pipes the agent's stderr and
    /// feeds it here line by line (see [`StderrLog`]).
    /// The file exists from the start, empty when the agent writes nothing.
    pub fn stderr_writer(&self, redactor: Redactor) -> StderrLog {
        let _ = append(&self.stderr_path());
        StderrLog { file: Appender::new(self.stderr_path()), redactor }
    }

    /// Where the prompt of attempt `attempt` is kept: `prompts/<attempt>.md`.
    pub fn prompt_path(&self, attempt: u32) -> PathBuf {
        self.root.join("prompts").join(format!("{attempt}.md"))
    }

    /// Saves the prompt of attempt `attempt`, redacted (a description may quote a secret).
    pub fn save_prompt(&self, attempt: u32, prompt: &str, redactor: &Redactor) -> io::Result<()> {
        let path = self.prompt_path(attempt);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        crate::fsutil::write_atomic(&path, redactor.redact_text(prompt).as_bytes())
    }

    pub fn stderr_path(&self) -> PathBuf {
        self.root.join("log.stderr")
    }

    /// The event and runner logs of one attempt; every line is redacted by `redactor`.
    pub fn logs(&self, redactor: Redactor) -> TaskLogs {
        TaskLogs {
            events: Appender::new(self.root.join("events.jsonl")),
            runner: self.root.join("log.jsonl"),
            redactor,
            last_raw: None,
        }
    }

    /// The last `max` bytes of `log.stderr` written since `offset` (this attempt's part).
    pub fn stderr_tail(&self, offset: u64, max: usize) -> String {
        let Ok(bytes) = std::fs::read(self.stderr_path()) else {
            return String::new();
        };
        let from = usize::try_from(offset).unwrap_or(0).min(bytes.len());
        let part = &bytes[from..];
        let start = part.len().saturating_sub(max);
        String::from_utf8_lossy(&part[start..]).into_owned()
    }
}

/// Refuses a task id that is not one safe path component.
fn check_task_id(id: &str) -> io::Result<()> {
    let unsafe_reason = if id.is_empty() {
        Some("it is empty")
    } else if id == "." || id == ".." {
        Some("it names a directory itself")
    } else if id.contains('/') || id.contains('\0') {
        Some("it contains '/' or a NUL byte")
    } else if id.starts_with('-') {
        Some("it starts with '-'")
    } else {
        None
    };
    match unsafe_reason {
        None => Ok(()),
        Some(reason) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("task id {id:?} cannot name a task directory: {reason}"),
        )),
    }
}

/// A log file appended to in batches: lines collect in memory and are written with one
/// `write` — when [`FLUSH_BYTES`] have collected, when the owner's timer
/// ([`Appender::flush_due`]) fires, and when it is dropped. The file is opened at the first
/// write and kept open (append mode) for the attempt: opening and closing it for each batch
/// cost hundreds of agents' supervisor several percent of a core. A chatty agent costs a
/// system call per batch, not per line. Each batch ends with a whole line: with `O_APPEND`,
/// readers never see half of one.
pub struct Appender {
    path: PathBuf,
    file: Option<File>,
    pending: Vec<u8>,
    /// When the oldest pending line arrived.
    since: Option<std::time::Instant>,
}

/// How many bytes may wait before an [`Appender`] writes at once (a second of a chatty agent's
/// lines is a few KiB).
pub const FLUSH_BYTES: usize = 32 * 1024;
/// How long a line may wait in an [`Appender`] before it is written: what `fleet tasks` and
/// `fleet task ID events --follow` lag behind at most. Not longer: each agent's pending lines
/// are held in memory until then (two seconds of a chatty agent's lines made the supervisor of
/// 256 agents 4–5 MiB larger).
pub const FLUSH_AFTER: std::time::Duration = std::time::Duration::from_millis(1000);

impl Appender {
    pub fn new(path: PathBuf) -> Appender {
        Appender { path, file: None, pending: Vec::new(), since: None }
    }

    /// Queues `line` (a newline is added), writing the batch once it is large enough.
    pub fn line(&mut self, line: &[u8]) -> io::Result<()> {
        self.pending.extend_from_slice(line);
        self.pending.push(b'\n');
        self.since.get_or_insert_with(std::time::Instant::now);
        if self.pending.len() >= FLUSH_BYTES { self.flush() } else { Ok(()) }
    }

    /// When the pending lines are due to be written (`None`: nothing pending).
    pub fn flush_due(&self) -> Option<std::time::Instant> {
        self.since.map(|since| since + FLUSH_AFTER)
    }

    /// Writes what is pending. On failure the lines are dropped (a log must not grow in memory
    /// without bound while its disk is full or descriptors are short).
    pub fn flush(&mut self) -> io::Result<()> {
        self.since = None;
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = match self.file.take() {
            Some(file) => Ok(file),
            None => append(&self.path),
        };
        let written = file.and_then(|mut file| {
            file.write_all(&self.pending)?;
            // Kept only while it works: after a failure the next batch opens the file anew.
            self.file = Some(file);
            Ok(())
        });
        // The buffer goes with its lines: hundreds of agents each keeping one between their
        // batches made a supervisor several MiB larger, and a new one is cheap next time.
        self.pending = Vec::new();
        written
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The logs of one attempt: `events.jsonl` batched ([`Appender`]), `log.jsonl` (a few lines
/// per attempt) appended as each line comes.
pub struct TaskLogs {
    events: Appender,
    runner: PathBuf,
    redactor: Redactor,
    /// The raw line last judged, and its plain text (strings decoded) when it was clean: the
    /// events of one line share it, and it is judged once.
    last_raw: Option<(RawJson, Option<PlainJson<'static>>)>,
}

impl TaskLogs {
    /// Queues an agent event, stamped and redacted. The event's fields are serialised and the
    /// line the agent printed is added as it is (`raw`); when neither holds anything to mask
    /// that is the line, else it is decoded and redacted field by field. The raw line is
    /// judged once for all its events ([`Redactor::is_clean_json_text`]); of the fields only
    /// the strings taken from the agent's output are ([`AgentEvent::texts`]), as
    /// [`Redactor::redact_json`] would redact them: the rest are fleet's own keys and names.
    pub fn event(&mut self, event: &AgentEvent, at: Timestamp) -> io::Result<()> {
        use std::fmt::Write as _;
        let fields = serde_json::to_string(&event.fields()).map_err(io::Error::other)?;
        let raw = event.raw.text();
        let mut line = String::with_capacity(fields.len() + raw.len() + 48);
        line.push_str(fields.strip_suffix('}').unwrap_or(&fields));
        if fields.len() > 2 {
            line.push(',');
        }
        line.push_str("\"raw\":");
        line.push_str(raw);
        if self.raw_is_clean(&event.raw) && event.texts().all(|t| self.text_is_clean(t)) {
            let _ = write!(line, ",\"ts\":\"{at}\"}}");
            return self.events.line(line.as_bytes());
        }
        line.push('}');
        let mut value: Value = serde_json::from_str(&line).map_err(io::Error::other)?;
        if let Value::Object(map) = &mut value {
            map.insert("ts".into(), Value::String(at.to_string()));
        }
        self.redactor.redact_json(&mut value);
        self.events.line(value.to_string().as_bytes())
    }

    /// Whether `raw` needs no masking, judged once per line.
    fn raw_is_clean(&mut self, raw: &RawJson) -> bool {
        if let Some((seen, plain)) = &self.last_raw
            && seen.same_line(raw)
        {
            return plain.is_some();
        }
        let plain = self.redactor.clean_json(raw.text()).map(PlainJson::into_owned);
        let clean = plain.is_some();
        self.last_raw = Some((raw.clone(), plain));
        clean
    }

    /// Whether an event's text needs no masking, once its line was judged clean: a text that
    /// is one whole string of that line was judged with it — preceded and followed by its
    /// quotes, a token shape or configured value in it would have been found there, and an
    /// escape sequence makes no line clean — so only other texts are scanned.
    fn text_is_clean(&self, text: &str) -> bool {
        let string_of_line = self
            .last_raw
            .as_ref()
            .and_then(|(_, plain)| plain.as_ref())
            .is_some_and(|json| json.holds_string(text));
        string_of_line || self.redactor.is_clean_text(text)
    }

    /// Appends a runner line: `{"ts", "event", …fields}`.
    pub fn runner(&mut self, event: &str, fields: Value, at: Timestamp) -> io::Result<()> {
        let mut line = serde_json::json!({ "ts": at.to_string(), "event": event });
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        self.redactor.redact_json(&mut line);
        append(&self.runner)?.write_all(format!("{line}\n").as_bytes())
    }

    /// When the queued events are due to be written.
    pub fn flush_due(&self) -> Option<std::time::Instant> {
        self.events.flush_due()
    }

    /// Writes the queued events.
    pub fn flush(&mut self) -> io::Result<()> {
        self.events.flush()
    }
}

/// `log.stderr` for redacted lines, batched (see [`TaskDir::stderr_writer`]).
pub struct StderrLog {
    file: Appender,
    redactor: Redactor,
}

impl StderrLog {
    /// Queues one line of the agent's stderr, redacted. A trailing newline in `line` is
    /// optional; exactly one is written.
    pub fn write_line(&mut self, line: &str) -> io::Result<()> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        self.file.line(self.redactor.redact_text(line).as_bytes())
    }

    /// When the queued lines are due to be written.
    pub fn flush_due(&self) -> Option<std::time::Instant> {
        self.file.flush_due()
    }

    /// Writes the queued lines.
    pub fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn write_new(path: &Path, text: &str) -> io::Result<()> {
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

fn plan_stub(issue: &Issue) -> String {
    format!(
        "# {id} — plan and status\n\n\
         _Written once by fleet; from here on the agent owns this file. Overwrite the Status \
         section as you go; keep earlier sections._\n\n\
         ## Restatement\n\n{title}\n\n## Plan\n\n1. …\n\n## Status\n\nin_progress\n\n\
         - Done:\n- In progress:\n- Blocked:\n",
        id = issue.id,
        title = issue.title
    )
}

fn knowledge_stub(issue: &Issue) -> String {
    format!(
        "# {id} — knowledge\n\n\
         _Append-only notes that the next run needs: where things are, what must stay true, \
         what surprised you._\n\n## Surface area\n\n## Invariants\n\n## Gotchas\n",
        id = issue.id
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coders::EventKind;

    const GITHUB: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const SLACK: &str = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp";
    const ENV_SECRET: &str = "correct-horse-battery-staple";

    fn redactor() -> Redactor {
        Redactor::from_env([("DEPLOY_TOKEN", ENV_SECRET), ("HOME", "/home/someone")])
    }

    /// A line quoting every kind of secret the tests look for.
    fn leaky() -> String {
        format!("push with {GITHUB} as {AWS}, tell {SLACK}, deploy {ENV_SECRET}")
    }

    fn assert_masked(file: &str, text: &str) {
        for secret in [GITHUB, AWS, SLACK, ENV_SECRET] {
            assert!(!text.contains(secret), "{file} leaks {secret}:\n{text}");
        }
        for marker in
            ["ghp_<redacted>", "AKIA<redacted>", "xoxb-<redacted>", "<redacted:DEPLOY_TOKEN>"]
        {
            assert!(text.contains(marker), "{file} lacks {marker}:\n{text}");
        }
    }

    fn record<'a>(title: &'a str, description: &'a str) -> TaskRecord<'a> {
        TaskRecord {
            id: "fl-1",
            title,
            description,
            status: "open",
            priority: 2,
            cwd: "/home/someone/project",
            coder: "claude",
            model: "",
            attempts: 1,
            failures: 0,
            noclose: 0,
            stalls: 0,
            context_resets: 0,
            updated_at: Timestamp::UNIX_EPOCH,
        }
    }

    /// A clean line's own strings are not scanned again, but a text an event makes of several
    /// of them is: two halves of a token, each clean alone, come out masked once joined.
    #[test]
    fn a_text_joined_from_a_clean_lines_strings_is_still_masked() {
        use crate::coders::EventKind;
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-1").unwrap();
        std::fs::create_dir_all(&dir.root).unwrap();
        let mut logs = dir.logs(redactor());
        let (head, tail) = GITHUB.split_at(4);
        let raw = serde_json::json!({ "content": [{ "text": head }, { "text": tail }] });
        let joined = AgentEvent::new(EventKind::Output, raw.clone())
            .with_text(Some(format!("{head}{tail}")));
        let whole = AgentEvent::new(EventKind::Output, raw).with_text(Some(head.to_owned()));
        logs.event(&whole, Timestamp::UNIX_EPOCH).unwrap();
        logs.event(&joined, Timestamp::UNIX_EPOCH).unwrap();
        logs.flush().unwrap();
        let text = std::fs::read_to_string(dir.root.join("events.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains(&format!("\"text\":\"{head}\"")), "{}", lines[0]);
        assert!(!lines[1].contains(GITHUB) && lines[1].contains("ghp_<redacted>"), "{}", lines[1]);
    }

    #[test]
    fn every_task_file_comes_out_masked() {
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-1").unwrap();
        let leaky = leaky();

        dir.write_record(&record("Rotate keys", &leaky), &redactor()).unwrap();
        let mut logs = dir.logs(redactor());
        let event = AgentEvent::output(&leaky);
        logs.event(&event, Timestamp::UNIX_EPOCH).unwrap();
        logs.flush().unwrap();
        logs.runner(
            "attempt_started",
            serde_json::json!({ "args": [leaky] }),
            Timestamp::UNIX_EPOCH,
        )
        .unwrap();
        let mut stderr = dir.stderr_writer(redactor());
        stderr.write_line(&format!("{leaky}\n")).unwrap();
        stderr.write_line("plain line").unwrap();
        stderr.flush().unwrap();

        for file in ["task.json", "events.jsonl", "log.jsonl", "log.stderr"] {
            let text = std::fs::read_to_string(dir.root.join(file)).unwrap();
            assert_masked(file, &text);
        }
        let record: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.root.join("task.json")).unwrap())
                .unwrap();
        assert_eq!(record["title"], "Rotate keys");
        assert_eq!(record["cwd"], "/home/someone/project", "non-secret values stay");
        let stderr = std::fs::read_to_string(dir.stderr_path()).unwrap();
        assert!(stderr.ends_with("deploy <redacted:DEPLOY_TOKEN>\nplain line\n"), "{stderr}");
    }

    #[test]
    fn secrets_after_an_escape_or_under_an_escaped_key_are_masked_in_events() {
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-3").unwrap();
        std::fs::create_dir_all(&dir.root).unwrap();
        let mut logs = dir.logs(redactor());
        let texts = [
            format!("cat .env\n{GITHUB}"),
            format!("\t{AWS}"),
            format!("\u{1b}[1m{SLACK}\u{1b}[0m"),
            format!("quoted \"{ENV_SECRET}\""),
        ];
        for text in &texts {
            let event = AgentEvent::new(EventKind::ToolResult, serde_json::json!({}))
                .with_text(Some(text.clone()));
            logs.event(&event, Timestamp::UNIX_EPOCH).unwrap();
        }
        let keyed = serde_json::json!({ "api_key\"x": "plain-looking-value" });
        logs.event(&AgentEvent::new(EventKind::Output, keyed), Timestamp::UNIX_EPOCH).unwrap();
        logs.flush().unwrap();
        let text = std::fs::read_to_string(dir.root.join("events.jsonl")).unwrap();
        assert_masked("events.jsonl", &text);
        assert!(!text.contains("plain-looking-value"), "{text}");
    }

    #[test]
    fn secrets_only_in_the_raw_line_are_masked_in_every_event_of_it() {
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-4").unwrap();
        std::fs::create_dir_all(&dir.root).unwrap();
        let mut logs = dir.logs(redactor());
        // As the agent printed it: escapes, a token as a key, a secret-named key.
        let raw = format!(
            r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"ok\n{GITHUB}"}}]}},"{AWS}":1,"x":{{"{SLACK}":"{ENV_SECRET}"}},"token":"plain-looking-value"}}"#
        );
        let shared = RawJson::from_line(&raw);
        for n in 0..2 {
            let mut event = AgentEvent::output(&format!("clean text {n}"));
            event.raw = shared.clone();
            logs.event(&event, Timestamp::UNIX_EPOCH).unwrap();
        }
        logs.flush().unwrap();
        let text = std::fs::read_to_string(dir.root.join("events.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 2);
        for line in text.lines() {
            assert_masked("events.jsonl", line);
            assert!(!line.contains("plain-looking-value"), "{line}");
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(value["ts"], "1970-01-01T00:00:00Z");
        }
    }

    #[test]
    fn a_clean_event_keeps_the_agent_line_as_printed() {
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-5").unwrap();
        std::fs::create_dir_all(&dir.root).unwrap();
        let mut logs = dir.logs(redactor());
        let raw = r#"{"type": "assistant",  "n": 1.50}"#;
        let mut event = AgentEvent::output("hi");
        event.raw = RawJson::from_line(raw);
        logs.event(&event, Timestamp::UNIX_EPOCH).unwrap();
        logs.flush().unwrap();
        let text = std::fs::read_to_string(dir.root.join("events.jsonl")).unwrap();
        assert_eq!(
            text,
            format!(
                "{{\"kind\":\"output\",\"text\":\"hi\",\"is_error\":false,\"raw\":{raw},\"ts\":\"1970-01-01T00:00:00Z\"}}\n"
            )
        );
    }

    #[test]
    fn the_stderr_tail_reads_what_the_redacting_writer_wrote() {
        let home = tempfile::tempdir().unwrap();
        let dir = TaskDir::new(home.path(), "fl-2").unwrap();
        std::fs::create_dir_all(&dir.root).unwrap();
        let mut stderr = dir.stderr_writer(redactor());
        stderr.write_line("attempt 1").unwrap();
        stderr.flush().unwrap();
        let offset = std::fs::metadata(dir.stderr_path()).unwrap().len();
        stderr.write_line(&format!("error: bad token {GITHUB}")).unwrap();
        stderr.flush().unwrap();
        assert_eq!(dir.stderr_tail(offset, 1000), "error: bad token ghp_<redacted>\n");
        assert_eq!(dir.stderr_tail(offset, 6), "cted>\n");
    }

    #[test]
    fn ids_that_are_not_one_safe_path_component_are_refused() {
        let home = Path::new("/fleet-home");
        for id in ["", ".", "..", "a/b", "../etc", "a\0b", "-rf"] {
            let error = TaskDir::new(home, id).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{id:?}");
            assert!(error.to_string().contains(&format!("{id:?}")), "{error}");
        }
        for id in ["fl-1", "bd-a3f8.1", "fl-3k2.2.1", "x..y"] {
            let dir = TaskDir::new(home, id).unwrap();
            assert_eq!(dir.root, home.join("tasks").join(id));
        }
    }
}
