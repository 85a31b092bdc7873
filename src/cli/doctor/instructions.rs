//! `fleet doctor`'s check of the instruction files agents load with every attempt — CLAUDE.md
//! (and CLAUDE.local.md, .claude/CLAUDE.md), AGENTS.md, GEMINI.md in the working directory and
//! each directory above it, the user's own (~/.claude/CLAUDE.md, ~/.codex/AGENTS.md,
//! ~/.gemini/GEMINI.md, ~/.config/opencode/AGENTS.md), and Claude Code's skills
//! (`.claude/skills/*/SKILL.md`, project and user) — in the directories agents worked in over
//! the last week (from the task ledgers).
//!
//! It warns about content loaded twice (one file reached by two paths, such as a symlink, or
//! two copies of the same text, either way paid for twice per attempt) and about files over
//! [`LARGE_FILE`], each with what it costs in tokens an attempt and a day at the rate of the
//! last 24 hours (tokens estimated as bytes / 4).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};

use super::setup_check::SetupCheck;
use crate::supervisor::ledger::all_attempts;

/// An instruction file larger than this is worth a look: about 4,000 tokens on every attempt.
const LARGE_FILE: u64 = 16 * 1024;

/// Files each directory from the working directory up may hold.
const PER_DIRECTORY: [&str; 5] =
    ["CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", "AGENTS.md", "GEMINI.md"];

/// The user's own instruction files, under the home directory.
const PER_USER: [&str; 4] =
    [".claude/CLAUDE.md", ".codex/AGENTS.md", ".gemini/GEMINI.md", ".config/opencode/AGENTS.md"];

/// One file an agent in some directory loads.
#[derive(Debug, Clone)]
struct Loaded {
    path: PathBuf,
    bytes: u64,
    /// Its content's hash: two paths with one content are one text paid twice.
    content: u64,
    /// Its real path (symlinks resolved).
    real: PathBuf,
}

/// The check of the instruction files of every directory agents worked in this past week.
pub fn instruction_checks(
    home: &Path,
    user_home: Option<&Path>,
    now: Timestamp,
) -> Vec<SetupCheck> {
    let week_ago = now - SignedDuration::from_hours(24 * 7);
    let day_ago = now - SignedDuration::from_hours(24);
    let mut per_day: BTreeMap<String, u64> = BTreeMap::new();
    for attempt in all_attempts(home) {
        if attempt.started_at < week_ago || attempt.cwd.is_empty() {
            continue;
        }
        *per_day.entry(attempt.cwd.clone()).or_default() +=
            u64::from(attempt.started_at >= day_ago);
    }
    let mut checks = Vec::new();
    let mut files_seen = 0;
    for (cwd, attempts_a_day) in &per_day {
        let loaded = loaded_files(Path::new(cwd), user_home);
        files_seen += loaded.len();
        checks.extend(twice_loaded(cwd, &loaded, *attempts_a_day));
        checks.extend(large_files(cwd, &loaded, *attempts_a_day));
    }
    if checks.is_empty() {
        checks.push(SetupCheck::ok(
            "instruction files",
            "size",
            format!(
                "{files_seen} loaded in {} working directories of the last week: none twice, none over {} KiB",
                per_day.len(),
                LARGE_FILE / 1024
            ),
        ));
    }
    checks
}

/// The instruction files and skills an agent working in `cwd` loads.
fn loaded_files(cwd: &Path, user_home: Option<&Path>) -> Vec<Loaded> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in cwd.ancestors() {
        candidates.extend(PER_DIRECTORY.iter().map(|name| dir.join(name)));
        candidates.extend(skills(&dir.join(".claude/skills")));
    }
    if let Some(user) = user_home {
        candidates.extend(PER_USER.iter().map(|name| user.join(name)));
        candidates.extend(skills(&user.join(".claude/skills")));
    }
    candidates.sort();
    candidates.dedup();
    candidates.into_iter().filter_map(read_loaded).collect()
}

/// The `SKILL.md` of each skill directory under `root`.
fn skills(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    entries.flatten().map(|entry| entry.path().join("SKILL.md")).collect()
}

fn read_loaded(path: PathBuf) -> Option<Loaded> {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let text = std::fs::read(&path).ok()?;
    let real = std::fs::canonicalize(&path).ok()?;
    let hasher = BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
    Some(Loaded { bytes: text.len() as u64, content: hasher.hash_one(&text), real, path })
}

/// One warning for each text loaded by more than one path (a symlink or a copy).
fn twice_loaded(cwd: &str, loaded: &[Loaded], attempts_a_day: u64) -> Vec<SetupCheck> {
    let mut by_content: BTreeMap<(u64, u64), Vec<&Loaded>> = BTreeMap::new();
    for file in loaded.iter().filter(|file| file.bytes > 0) {
        by_content.entry((file.content, file.bytes)).or_default().push(file);
    }
    by_content
        .into_values()
        .filter(|paths| paths.len() > 1)
        .map(|paths| {
            let how = if paths.iter().all(|p| p.real == paths[0].real) { "one file" } else { "copies" };
            let names: Vec<String> = paths.iter().map(|p| p.path.display().to_string()).collect();
            let extra = tokens(paths[0].bytes) * (paths.len() as u64 - 1);
            SetupCheck::warning(
                "instruction files",
                "loaded twice",
                format!(
                    "agents in {cwd} load the same text {} times ({how}): {}; {}",
                    paths.len(),
                    names.join(", "),
                    cost_words(extra, attempts_a_day)
                ),
                "keep one of them (a symlinked or copied CLAUDE.md/AGENTS.md above the working directory is read again)",
            )
        })
        .collect()
}

/// One warning for each file over [`LARGE_FILE`].
fn large_files(cwd: &str, loaded: &[Loaded], attempts_a_day: u64) -> Vec<SetupCheck> {
    loaded
        .iter()
        .filter(|file| file.bytes > LARGE_FILE)
        .map(|file| {
            SetupCheck::warning(
                "instruction files",
                "size",
                format!(
                    "{} ({} KiB) is loaded by agents in {cwd}; {}",
                    file.path.display(),
                    file.bytes / 1024,
                    cost_words(tokens(file.bytes), attempts_a_day)
                ),
                "move what agents rarely need into files they read on demand, and link to them",
            )
        })
        .collect()
}

/// About how many tokens a text of `bytes` costs.
fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

fn cost_words(tokens: u64, attempts_a_day: u64) -> String {
    format!(
        "about {tokens} tokens every attempt, {} a day at the last 24 hours' {attempts_a_day} attempts",
        tokens * attempts_a_day
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_and_a_copied_file_are_each_loaded_twice() {
        let root = std::env::temp_dir().join(format!("fleet-instr-{}", std::process::id()));
        let repo = root.join("repo");
        let sub = repo.join("app");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "Use cargo.\n".repeat(10)).unwrap();
        std::os::unix::fs::symlink(repo.join("CLAUDE.md"), sub.join("CLAUDE.md")).unwrap();
        std::fs::write(sub.join("AGENTS.md"), "x".repeat(20_000)).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "x".repeat(20_000)).unwrap();
        let loaded = loaded_files(&sub, None);
        let twice = twice_loaded("app", &loaded, 10);
        assert_eq!(twice.len(), 2, "{twice:?}");
        assert!(twice.iter().any(|c| c.detail.contains("(one file)")), "{twice:?}");
        assert!(twice.iter().any(|c| c.detail.contains("(copies)")), "{twice:?}");
        let large = large_files("app", &loaded, 10);
        assert_eq!(large.len(), 2);
        assert!(
            large[0].detail.contains("about 5000 tokens every attempt, 50000 a day"),
            "{large:?}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
