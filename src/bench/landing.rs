//! `fleet bench landing`: what landing work costs through one merge lane — merges per minute
//! with a check of a given length, the time from an agent's close to the base ref moved (with
//! the lane idle), the time to make a task's worktree, and the disk a worktree takes — in a
//! generated repository of many files.
//!
//! The lane runs as the supervisor runs it (`crate::land::land`: leftovers, merge-tree,
//! squash commit, the checks in the scratch worktree, compare-and-swap of the base), without
//! the store: what the store adds is one write per step, measured by the other benchmarks.

use std::path::Path;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde::Serialize;

use super::workspace::ScratchDir;
use super::{BenchError, Progress, io_error, table, thousands};
use crate::land::git::Git;
use crate::land::lane::{self, Entry, Landed, LaneSettings};
use crate::land::worktree;
use crate::model::{LandState, Landing};

pub struct LandingConfig {
    /// Files in the generated repository.
    pub files: usize,
    /// The lane runs: each a check length, a `merge.batch`, and the tasks landed.
    pub runs: Vec<LaneRunConfig>,
}

#[derive(Debug, Clone, Copy)]
pub struct LaneRunConfig {
    /// How long the check takes (`sleep N`).
    pub check_secs: u64,
    /// `merge.batch`: entries checked together.
    pub batch: usize,
    /// Tasks landed through the lane.
    pub entries: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct LandingReport {
    pub files: usize,
    pub worktree_ms: Vec<f64>,
    pub worktree_bytes: u64,
    pub runs: Vec<LaneRun>,
}

/// One run of the lane: `entries` closed at once, landed `batch` at a time.
#[derive(Debug, Clone, Serialize)]
pub struct LaneRun {
    pub check_secs: u64,
    pub batch: usize,
    pub entries: usize,
    /// Per landing round: close → base moved (every entry of the round closed at its start).
    pub land_ms: Vec<f64>,
    pub merges_per_minute: f64,
}

fn git_err(e: crate::land::git::GitError) -> BenchError {
    BenchError::Failed(e.to_string())
}

/// Runs the benchmark.
pub fn run(config: &LandingConfig, progress: Progress<'_>) -> Result<LandingReport, BenchError> {
    let scratch = ScratchDir::create("landing")?;
    let repo = scratch.subdir("repo")?;
    let home = scratch.subdir("home")?;
    progress(&format!("making a repository of {} files", thousands(config.files as f64)));
    make_repo(&repo, config.files)?;
    let mut worktree_ms = Vec::new();
    let mut worktree_bytes = 0;
    let mut runs = Vec::new();
    for (round, run) in config.runs.iter().enumerate() {
        progress(&format!("making {} worktrees and their work", run.entries));
        let entries = make_entries(&repo, &home, round, run.entries, &mut worktree_ms)?;
        if worktree_bytes == 0 {
            worktree_bytes =
                entries.first().map_or(0, |e| worktree::disk_usage(Path::new(&e.landing.worktree)));
        }
        progress(&format!(
            "landing {} entries through one lane with a {} s check, merge.batch = {}",
            run.entries, run.check_secs, run.batch
        ));
        runs.push(land_all(&home, run, &entries)?);
    }
    Ok(LandingReport { files: config.files, worktree_ms, worktree_bytes, runs })
}

/// `count` tasks, each with a worktree from main (timed into `worktree_ms`) holding one new
/// file.
fn make_entries(
    repo: &Path,
    home: &Path,
    round: usize,
    count: usize,
    worktree_ms: &mut Vec<f64>,
) -> Result<Vec<Entry>, BenchError> {
    let base = Git::at(repo).run(&["rev-parse", "main"]).map_err(git_err)?;
    let mut entries = Vec::new();
    for n in 0..count {
        let id = format!("b-{round}x{n}");
        let landing = Landing {
            repo: repo.display().to_string(),
            base: "main".into(),
            base_commit: base.clone(),
            worktree: worktree::path_of(home, &id)
                .map_err(|e| BenchError::Failed(e.to_string()))?
                .display()
                .to_string(),
            branch: worktree::branch_of(&id),
            subdir: ".".into(),
            state: LandState::Working,
            ..Landing::default()
        };
        let started = Instant::now();
        let dir = worktree::ensure(&id, &landing).map_err(|e| BenchError::Failed(e.to_string()))?;
        worktree_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let file = dir.join(format!("work-{round}-{n}.txt"));
        std::fs::write(&file, format!("{n}\n"))
            .map_err(io_error(format!("writing {}", file.display())))?;
        entries.push(Entry {
            id: id.clone(),
            title: format!("work {round}.{n}"),
            priority: 2,
            landing,
            queued_at: Timestamp::now(),
            reason: String::new(),
            no_changes: false,
        });
    }
    Ok(entries)
}

/// Lands `entries` through the lane as the supervisor does: one at a time
/// (`crate::land::land`), or `run.batch` at a time (`lane::land_batch`).
fn land_all(home: &Path, run: &LaneRunConfig, entries: &[Entry]) -> Result<LaneRun, BenchError> {
    let settings = LaneSettings {
        home: home.to_path_buf(),
        checks: vec![format!("sleep {}", run.check_secs)],
        timeout: Duration::from_secs(run.check_secs + 600),
        strategy: crate::config::Strategy::Squash,
        push: String::new(),
    };
    let failed = |e: lane::LaneError| BenchError::Failed(e.to_string());
    let mut land_ms = Vec::new();
    let all = Instant::now();
    for chunk in entries.chunks(run.batch.max(1)) {
        let started = Instant::now();
        let landed: Vec<Landed> = if run.batch <= 1 {
            chunk
                .iter()
                .map(|entry| crate::land::land(&settings, entry, &mut |_, _, _| Ok(())))
                .collect::<Result<_, _>>()
                .map_err(failed)?
        } else {
            lane::land_batch(&settings, chunk, &mut |_, _, _, _| Ok(()))
                .map_err(failed)?
                .into_iter()
                .map(|(_, landed)| landed)
                .collect()
        };
        if landed.len() != chunk.len() || !landed.iter().all(|l| matches!(l, Landed::Landed(_))) {
            return Err(BenchError::Failed(format!("a round did not land all: {landed:?}")));
        }
        land_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let minutes = all.elapsed().as_secs_f64() / 60.0;
    let merges_per_minute = if minutes > 0.0 { entries.len() as f64 / minutes } else { 0.0 };
    Ok(LaneRun {
        check_secs: run.check_secs,
        batch: run.batch,
        entries: entries.len(),
        land_ms,
        merges_per_minute,
    })
}

/// A repository of `files` small files in 100 directories, one commit on `main`.
fn make_repo(repo: &Path, files: usize) -> Result<(), BenchError> {
    let git = Git::at(repo);
    git.run(&["init", "-q", "-b", "main"]).map_err(git_err)?;
    for n in 0..files {
        let dir = repo.join(format!("d{:02}", n % 100));
        std::fs::create_dir_all(&dir).map_err(io_error(format!("creating {}", dir.display())))?;
        let file = dir.join(format!("f{n}.txt"));
        std::fs::write(&file, format!("file {n}\n"))
            .map_err(io_error(format!("writing {}", file.display())))?;
    }
    git.run(&["add", "--all"]).map_err(git_err)?;
    git.run(&["commit", "-qm", "generated"]).map_err(git_err)?;
    Ok(())
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 }
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(0.0, f64::max)
}

impl LandingReport {
    pub fn render(&self) -> String {
        let mut t = table(vec!["measure", "mean", "max", "note"]);
        let ms = |v: f64| format!("{v:.0} ms");
        t.add_row(vec![
            "worktree creation".to_owned(),
            ms(mean(&self.worktree_ms)),
            ms(max(&self.worktree_ms)),
            format!("git worktree add, {} worktrees", self.worktree_ms.len()),
        ]);
        t.add_row(vec![
            "disk per worktree".to_owned(),
            format!("{:.1} MB", self.worktree_bytes as f64 / 1_048_576.0),
            "-".to_owned(),
            "checked-out files (the objects are shared)".to_owned(),
        ]);
        let mut lanes = table(vec!["check", "batch", "merges", "merges/min", "close → base moved"]);
        for run in &self.runs {
            lanes.add_row(vec![
                format!("{} s", run.check_secs),
                run.batch.to_string(),
                run.entries.to_string(),
                format!("{:.1}", run.merges_per_minute),
                format!("{} (max {})", ms(mean(&run.land_ms)), ms(max(&run.land_ms))),
            ]);
        }
        format!(
            "a repository of {} files; each task one new file, landed through one lane with a check of `sleep N` (batch: entries checked together; close → base moved: per round, its entries closed at its start)\n{t}\n{lanes}",
            thousands(self.files as f64),
        )
    }
}
