//! Import benchmark: a generated 100k-issue beads JSONL file, shaped like the samples in
//! fixtures/ (epics with dotted children, blocks and parent-child edges, related and
//! cross-project edges, a few dangling ones, labels, comments with string and integer ids,
//! both timestamp eras), imported by the release `fleet` binary into a fresh workspace.
//! The figure is whole-process wall time: start, read, plan, one transaction, readiness,
//! commit, exit. Then the same store exported again, for comparison.
//!
//! Run with `cargo bench --bench import` (`FLEET_BENCH_ISSUES=N` to change the size,
//! `FLEET_BENCH_WRITE=FILE` to only write the generated file, for profiling by hand).
//! Goal: 100k issues in at most 2 s.

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

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
    String::from_utf8(out).expect("ascii")
}

const WORDS: [&str; 16] = [
    "daemon", "export", "import", "cycle", "ready", "claim", "sync", "merge", "label", "query",
    "schema", "index", "store", "agent", "queue", "parser",
];
const STATUSES: [&str; 6] = ["open", "open", "closed", "closed", "in_progress", "blocked"];

struct Generated {
    text: String,
    issues: usize,
    edges: usize,
    comments: usize,
}

/// Writes `count` issue lines.
fn generate(count: usize) -> Generated {
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

fn run(fleet: &str, home: &std::path::Path, args: &[&str]) -> Duration {
    let started = Instant::now();
    let output = Command::new(fleet)
        .args(args)
        .env("FLEET_HOME", home)
        .env("FLEET_ACTOR", "bench")
        .output()
        .expect("run fleet");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "fleet {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    elapsed
}

fn main() {
    let count: usize =
        std::env::var("FLEET_BENCH_ISSUES").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let fleet = env!("CARGO_BIN_EXE_fleet");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("issues.jsonl");
    let generated = generate(count);
    if let Ok(path) = std::env::var("FLEET_BENCH_WRITE") {
        // Only write the file (for profiling an import by hand).
        std::fs::write(&path, &generated.text).expect("write the generated file");
        return;
    }
    std::fs::write(&file, &generated.text).expect("write the generated file");
    let file_arg = file.display().to_string();
    let mut rows = Vec::new();
    for round in 1..=3 {
        let home = dir.path().join(format!("home-{round}"));
        let elapsed = run(fleet, &home, &["import", &file_arg, "--quiet"]);
        rows.push(("import (fresh workspace)", elapsed));
        if round == 1 {
            let out = dir.path().join("export.jsonl").display().to_string();
            rows.push(("export --all", run(fleet, &home, &["export", "--all", "-o", &out, "-q"])));
            rows.push(("re-import (all unchanged)", run(fleet, &home, &["import", &out, "-q"])));
        }
    }
    println!(
        "import benchmark: {} issues, {} edges, {} comments, {:.1} MB of JSONL",
        generated.issues,
        generated.edges,
        generated.comments,
        generated.text.len() as f64 / 1e6
    );
    println!("{:<28} {:>8} {:>8} {:>10} {:>12}", "run", "issues", "edges", "seconds", "issues/s");
    for (name, elapsed) in &rows {
        let seconds = elapsed.as_secs_f64();
        println!(
            "{name:<28} {:>8} {:>8} {seconds:>10.3} {:>12.0}",
            generated.issues,
            generated.edges,
            generated.issues as f64 / seconds
        );
    }
    let best = rows
        .iter()
        .filter(|(name, _)| name.starts_with("import"))
        .map(|(_, d)| d.as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    println!("best fresh import: {best:.3} s (goal: 2 s for 100k issues)");
}
