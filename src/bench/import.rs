//! Import: the whole-process wall time and peak memory of `fleet import` of a generated
//! beads JSONL file into a fresh workspace, against a spawned SQLite baseline importing the
//! same file (`fleet bench worker --engine sqlite --import FILE`).
//!
//! The file is shaped like the samples in tests/fixtures/: epics with dotted children, blocks
//! edges between issues (epics included, so epic↔task blocks edges are there), parent-child
//! and related edges, cross-project and dangling ones, labels, comments with string and
//! integer ids, both timestamp eras — about two edges per issue. It is generated
//! deterministically, so every run imports the same file.
//!
//! Each import is a child process; its peak resident memory comes from the kernel's
//! accounting of that child (`wait4`). The baseline reads each line as JSON and inserts the
//! issues, edges, labels and comments into SQLite (WAL, synchronous=FULL) in one transaction,
//! then fills the blocked set, as a conventional SQLite tracker's import does.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use rusqlite::params;
use serde::Serialize;

use super::{BenchError, Machine, Progress, io_error, mark, table, thousands};

/// The goal for fleet's best whole-process import of 100k issues.
const GOAL_SECS: f64 = 2.0;

/// What to run.
#[derive(Debug, Clone)]
pub struct ImportConfig {
    /// The `fleet` binary to spawn.
    pub binary: PathBuf,
    pub issues: usize,
    /// Timed imports of each engine (the best counts).
    pub runs: usize,
}

impl ImportConfig {
    pub const DEFAULT_ISSUES: usize = 100_000;
    pub const DEFAULT_RUNS: usize = 3;

    pub fn new(binary: PathBuf) -> ImportConfig {
        ImportConfig { binary, issues: Self::DEFAULT_ISSUES, runs: Self::DEFAULT_RUNS }
    }
}

/// One measured process.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Measured {
    pub secs: f64,
    pub peak_rss_mib: f64,
}

/// The result of `fleet bench import`.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub issues: usize,
    pub edges: usize,
    pub comments: usize,
    pub file_mb: f64,
    pub fleet: Vec<Measured>,
    pub sqlite: Vec<Measured>,
    /// Issues and edges the fleet store holds after the import.
    pub fleet_issues: usize,
    pub goal_met: bool,
    pub machine: Machine,
}

impl ImportReport {
    fn best(runs: &[Measured]) -> Measured {
        let mut best = Measured { secs: f64::INFINITY, peak_rss_mib: 0.0 };
        for run in runs {
            if run.secs < best.secs {
                best = *run;
            }
        }
        best
    }

    /// The comparison table.
    pub fn render(&self) -> String {
        let (fleet, sqlite) = (Self::best(&self.fleet), Self::best(&self.sqlite));
        let mut out = format!(
            "import: {} issues, {} edges, {} comments, {:.1} MB of JSONL; best of {} runs, {} cores\n",
            thousands(self.issues as f64),
            thousands(self.edges as f64),
            thousands(self.comments as f64),
            self.file_mb,
            self.fleet.len(),
            self.machine.cores
        );
        let mut t = table(vec!["engine", "wall s", "issues/s", "peak RSS MiB", "time", "goal"]);
        let rate = |m: Measured| thousands(self.issues as f64 / m.secs.max(1e-9));
        let memory = fleet.peak_rss_mib / sqlite.peak_rss_mib.max(1e-9);
        t.add_row(vec![
            "fleet".to_string(),
            format!("{:.2}", fleet.secs),
            rate(fleet),
            format!("{:.0} ({memory:.1}× SQLite's)", fleet.peak_rss_mib),
            speed(fleet.secs, sqlite.secs),
            format!("≤ {GOAL_SECS} s per 100k {}", mark(self.goal_met)),
        ]);
        t.add_row(vec![
            "SQLite (WAL, FULL)".to_string(),
            format!("{:.2}", sqlite.secs),
            rate(sqlite),
            format!("{:.0}", sqlite.peak_rss_mib),
            "baseline".to_string(),
            String::new(),
        ]);
        let _ = write!(out, "{t}");
        let _ = write!(
            out,
            "\nfleet runs: {}\nSQLite runs: {}",
            runs_line(&self.fleet),
            runs_line(&self.sqlite)
        );
        out
    }
}

/// `2.10× faster than SQLite` or `1.50× slower than SQLite`: fleet's time against the
/// baseline's.
fn speed(fleet_secs: f64, sqlite_secs: f64) -> String {
    let ratio = sqlite_secs / fleet_secs.max(1e-9);
    if ratio >= 1.0 {
        format!("{ratio:.2}× faster than SQLite")
    } else {
        format!("{:.2}× slower than SQLite", 1.0 / ratio)
    }
}

fn runs_line(runs: &[Measured]) -> String {
    let parts: Vec<String> =
        runs.iter().map(|m| format!("{:.2} s / {:.0} MiB", m.secs, m.peak_rss_mib)).collect();
    parts.join(", ")
}

/// Runs the import benchmark.
pub fn run(config: &ImportConfig, progress: Progress<'_>) -> Result<ImportReport, BenchError> {
    let scratch = super::workspace::ScratchDir::create("import")?;
    let generated = generate(config.issues);
    let file = scratch.subdir("source")?.join("issues.jsonl");
    std::fs::write(&file, &generated.text)
        .map_err(io_error(format!("writing {}", file.display())))?;
    progress(&format!(
        "generated {} issues, {} edges, {} comments ({:.1} MB)",
        generated.issues,
        generated.edges,
        generated.comments,
        generated.text.len() as f64 / 1e6
    ));
    let file_arg = file.display().to_string();
    let (mut fleet, mut sqlite) = (Vec::new(), Vec::new());
    let mut fleet_issues = 0;
    for round in 1..=config.runs {
        let home = scratch.subdir(&format!("fleet-{round}"))?;
        let mut cmd = Command::new(&config.binary);
        cmd.args(["import", &file_arg, "--quiet"]).env("FLEET_HOME", &home);
        fleet.push(measure(cmd, &scratch.subdir(&format!("log-fleet-{round}"))?)?);
        fleet_issues = count_issues(&home)?;
        let dir = scratch.subdir(&format!("sqlite-{round}"))?;
        let mut cmd = Command::new(&config.binary);
        cmd.args(["bench", "worker", "--engine", "sqlite", "--import", &file_arg])
            .env("FLEET_HOME", &dir);
        sqlite.push(measure(cmd, &scratch.subdir(&format!("log-sqlite-{round}"))?)?);
        progress(&format!(
            "run {round}: fleet {:.2} s, SQLite {:.2} s",
            fleet[round - 1].secs,
            sqlite[round - 1].secs
        ));
    }
    let best = ImportReport::best(&fleet).secs;
    let goal_secs = GOAL_SECS * (config.issues as f64 / ImportConfig::DEFAULT_ISSUES as f64);
    Ok(ImportReport {
        issues: generated.issues,
        edges: generated.edges,
        comments: generated.comments,
        file_mb: generated.text.len() as f64 / 1e6,
        fleet,
        sqlite,
        fleet_issues,
        goal_met: best <= goal_secs,
        machine: Machine::this(),
    })
}

/// How many issues the fleet workspace at `home` holds.
fn count_issues(home: &Path) -> Result<usize, BenchError> {
    let store = crate::store::Store::open(&super::workspace::fleet_store_dir(home))?;
    Ok(usize::try_from(store.read()?.view().issue_count()?).unwrap_or(usize::MAX))
}

/// Runs `cmd` to completion (stdout discarded, stderr kept in `logs`), timing it and reading
/// its peak resident memory from the kernel's accounting of the child. A failure is an error
/// carrying its stderr.
fn measure(mut cmd: Command, logs: &Path) -> Result<Measured, BenchError> {
    let stderr_path = logs.join("stderr");
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(io_error(format!("creating {}", stderr_path.display())))?;
    cmd.env("FLEET_ACTOR", "bench").stdin(Stdio::null()).stdout(Stdio::null()).stderr(stderr);
    let started = Instant::now();
    let child = cmd.spawn().map_err(io_error(format!("spawning {cmd:?}")))?;
    let (status, peak_kib) =
        wait_with_rusage(child.id()).map_err(io_error(format!("waiting for {cmd:?}")))?;
    let secs = started.elapsed().as_secs_f64();
    if !status {
        let text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        return Err(BenchError::Failed(format!("{cmd:?} failed:\n{text}")));
    }
    Ok(Measured { secs, peak_rss_mib: peak_kib as f64 / 1024.0 })
}

/// Waits for the child `pid` and returns whether it exited successfully and its peak resident
/// set size in KiB (`ru_maxrss` of `wait4`, which covers that child alone).
fn wait_with_rusage(pid: u32) -> std::io::Result<(bool, i64)> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for the kernel to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid for writes; `pid` is our own child, which
        // nothing else waits for (the `Child` handle is dropped without waiting).
        let rc = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
        if rc == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    Ok((ok, usage.ru_maxrss))
}

/// The baseline's schema: beads' tables, reduced to what an import writes.
const SQLITE_SCHEMA: &str = "
CREATE TABLE issues (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    issue_type TEXT NOT NULL DEFAULT 'task',
    assignee TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    closed_at TEXT,
    record TEXT NOT NULL
);
CREATE TABLE deps (
    issue_id TEXT NOT NULL,
    depends_on_id TEXT NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (issue_id, depends_on_id)
) WITHOUT ROWID;
CREATE INDEX deps_by_target ON deps (depends_on_id);
CREATE TABLE labels (issue_id TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (issue_id, label)) WITHOUT ROWID;
CREATE TABLE comments (issue_id TEXT NOT NULL, author TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX comments_by_issue ON comments (issue_id);
CREATE TABLE blocked (id TEXT PRIMARY KEY) WITHOUT ROWID;
";

/// The SQLite baseline's import of the beads JSONL `file` into a new database in `dir`: one
/// transaction, then the blocked set. Returns the number of issues imported.
pub fn sqlite_import(dir: &Path, file: &Path) -> Result<usize, BenchError> {
    let text = std::fs::read(file).map_err(io_error(format!("reading {}", file.display())))?;
    std::fs::create_dir_all(dir).map_err(io_error(format!("creating {}", dir.display())))?;
    let mut conn = super::sqlite::open(dir)?;
    conn.execute_batch("PRAGMA journal_mode = WAL;")?;
    conn.execute_batch(SQLITE_SCHEMA)?;
    let tx = conn.transaction()?;
    let mut issues = 0;
    {
        let mut issue = tx.prepare(
            "INSERT OR REPLACE INTO issues (id, title, description, status, priority, issue_type, assignee, created_at, updated_at, closed_at, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        let mut dep = tx.prepare(
            "INSERT OR REPLACE INTO deps (issue_id, depends_on_id, type) VALUES (?1, ?2, ?3)",
        )?;
        let mut label =
            tx.prepare("INSERT OR IGNORE INTO labels (issue_id, label) VALUES (?1, ?2)")?;
        let mut comment = tx.prepare(
            "INSERT INTO comments (issue_id, author, text, created_at) VALUES (?1, ?2, ?3, ?4)",
        )?;
        for (number, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: serde_json::Value = serde_json::from_slice(line)
                .map_err(|e| BenchError::Failed(format!("line {}: {e}", number + 1)))?;
            let s = |v: &serde_json::Value, key: &str| {
                v.get(key).and_then(serde_json::Value::as_str).unwrap_or_default().to_string()
            };
            let id = s(&value, "id");
            issue.execute(params![
                id,
                s(&value, "title"),
                s(&value, "description"),
                s(&value, "status"),
                value.get("priority").and_then(serde_json::Value::as_i64).unwrap_or(2),
                s(&value, "issue_type"),
                s(&value, "assignee"),
                s(&value, "created_at"),
                s(&value, "updated_at"),
                value.get("closed_at").and_then(serde_json::Value::as_str),
                std::str::from_utf8(line).unwrap_or_default(),
            ])?;
            let items = |key: &str| {
                value.get(key).and_then(serde_json::Value::as_array).cloned().unwrap_or_default()
            };
            for d in items("dependencies") {
                dep.execute(params![id, s(&d, "depends_on_id"), s(&d, "type")])?;
            }
            for l in items("labels") {
                label.execute(params![id, l.as_str().unwrap_or_default()])?;
            }
            for c in items("comments") {
                comment.execute(params![
                    id,
                    s(&c, "author"),
                    s(&c, "text"),
                    s(&c, "created_at")
                ])?;
            }
            issues += 1;
        }
    }
    tx.execute(super::sqlite::FILL_BLOCKED, [])?;
    tx.commit()?;
    Ok(issues)
}

/// A small deterministic generator (xorshift), so every run imports the same file.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn base36(mut n: u64, width: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = DIGITS[(n % 36) as usize];
        n /= 36;
    }
    out.into_iter().map(char::from).collect()
}

const WORDS: [&str; 16] = [
    "daemon", "export", "import", "cycle", "ready", "claim", "sync", "merge", "label", "query",
    "schema", "index", "store", "agent", "queue", "parser",
];
const STATUSES: [&str; 6] = ["open", "open", "closed", "closed", "in_progress", "blocked"];

/// A generated beads JSONL file and what it holds.
pub struct Generated {
    pub text: String,
    pub issues: usize,
    pub edges: usize,
    pub comments: usize,
}

/// Generates `count` issue lines (about two edges each).
pub fn generate(count: usize) -> Generated {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut text = String::with_capacity(count * 900);
    let mut ids: Vec<String> = Vec::with_capacity(count);
    let mut epic = String::new();
    let mut child = 0;
    let (mut edges, mut comments) = (0, 0);
    for i in 0..count {
        let is_epic = i % 20 == 0;
        let id = if is_epic || epic.is_empty() || child >= 8 {
            let id = format!("bn-{}", base36(i as u64 * 7919 + 13, 6));
            if is_epic {
                epic.clone_from(&id);
                child = 0;
            }
            id
        } else {
            child += 1;
            format!("{epic}.{child}")
        };
        let status = STATUSES[rng.below(STATUSES.len() as u64) as usize];
        let (created, updated) = if rng.chance(50) {
            let day = 1 + rng.below(28);
            (
                format!("2025-11-{day:02}T10:{:02}:07.295058-08:00", rng.below(60)),
                format!("2025-12-{day:02}T11:{:02}:22.700641-08:00", rng.below(60)),
            )
        } else {
            let day = 1 + rng.below(28);
            (format!("2026-02-{day:02}T03:42:10Z"), format!("2026-02-{day:02}T04:10:00Z"))
        };
        let title = format!(
            "{} {} {} #{i}",
            WORDS[rng.below(16) as usize],
            WORDS[rng.below(16) as usize],
            WORDS[rng.below(16) as usize]
        );
        let mut description = String::new();
        for _ in 0..(20 + rng.below(60)) {
            description.push_str(WORDS[rng.below(16) as usize]);
            description.push(' ');
        }
        let issue_type = if is_epic {
            "epic"
        } else if rng.chance(20) {
            "bug"
        } else {
            "task"
        };
        let _ = write!(
            text,
            "{{\"_type\":\"issue\",\"id\":\"{id}\",\"title\":\"{title}\",\"description\":\"## Acceptance Criteria\\n{description}\",\"status\":\"{status}\",\"priority\":{},\"issue_type\":\"{issue_type}\"",
            rng.below(5)
        );
        if rng.chance(40) {
            let _ = write!(text, ",\"assignee\":\"agent-{}\"", rng.below(30));
        }
        let _ = write!(
            text,
            ",\"created_at\":\"{created}\",\"created_by\":\"mayor\",\"updated_at\":\"{updated}\""
        );
        if status == "closed" {
            let _ = write!(text, ",\"closed_at\":\"{updated}\",\"close_reason\":\"Closed\"");
        }
        if rng.chance(30) {
            let _ = write!(
                text,
                ",\"labels\":[\"area:{}\",\"p{}\"]",
                WORDS[rng.below(16) as usize],
                rng.below(3)
            );
        }
        let mut deps = Vec::new();
        if !is_epic && id.contains('.') {
            deps.push((epic.clone(), "parent-child"));
        }
        // Blocks edges point at earlier issues, so they never form a cycle; epics get them
        // too (an epic blocked by tasks, as real exports have), and children may block on
        // their own epic's siblings.
        if !ids.is_empty() {
            for _ in 0..rng.below(4) {
                let target = &ids[rng.below(ids.len() as u64) as usize];
                deps.push((target.clone(), "blocks"));
            }
        }
        if !ids.is_empty() && rng.chance(10) {
            deps.push((ids[rng.below(ids.len() as u64) as usize].clone(), "related"));
        }
        if rng.chance(1) {
            deps.push(("bn-gone".to_string(), "blocks"));
        }
        if rng.chance(1) {
            deps.push(("external:gastown:gt-5kjn".to_string(), "tracks"));
        }
        deps.sort();
        deps.dedup_by(|a, b| a.0 == b.0);
        deps.retain(|(target, _)| *target != id);
        if !deps.is_empty() {
            text.push_str(",\"dependencies\":[");
            for (at, (target, kind)) in deps.iter().enumerate() {
                if at > 0 {
                    text.push(',');
                }
                let _ = write!(
                    text,
                    "{{\"issue_id\":\"{id}\",\"depends_on_id\":\"{target}\",\"type\":\"{kind}\",\"created_at\":\"{created}\",\"created_by\":\"mayor\",\"metadata\":\"{{}}\"}}"
                );
            }
            text.push(']');
            edges += deps.len();
        }
        if rng.chance(30) {
            text.push_str(",\"comments\":[");
            let n = 1 + rng.below(3);
            for c in 0..n {
                if c > 0 {
                    text.push(',');
                }
                let comment_id = if rng.chance(50) {
                    format!("\"019e5425-{:04x}-7d84-95db-{:012x}\"", c, rng.below(1 << 40))
                } else {
                    format!("{}", i as u64 * 4 + c)
                };
                let _ = write!(
                    text,
                    "{{\"id\":{comment_id},\"issue_id\":\"{id}\",\"author\":\"agent-{}\",\"text\":\"agent exited rc=0 without close; re-queueing {c}\",\"created_at\":\"{updated}\"}}",
                    rng.below(30)
                );
            }
            text.push(']');
            comments += n as usize;
        }
        let _ = writeln!(
            text,
            ",\"dependency_count\":{},\"dependent_count\":0,\"comment_count\":0}}",
            deps.len()
        );
        ids.push(id);
    }
    Generated { text, issues: count, edges, comments }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_file_has_about_two_edges_per_issue() {
        let generated = generate(2000);
        assert_eq!(generated.text.lines().count(), 2000);
        let ratio = generated.edges as f64 / generated.issues as f64;
        assert!((1.8..=2.4).contains(&ratio), "{ratio}");
        assert_eq!(generate(2000).text, generated.text, "deterministic");
    }
}
