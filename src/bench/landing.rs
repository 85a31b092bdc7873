//! `fleet bench landing`: what landing work costs through one merge lane — merges per minute
//! with a check of a given length, the time from an agent's close to the base ref moved (with
//! the lane idle), the time to make a task's worktree, and the disk a worktree takes — in a
//! generated repository of many files.
//!
//! The lane runs as the supervisor runs it (`crate::land::lane::land`: leftovers, merge-tree,
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
    /// Tasks landed through the lane.
    pub entries: usize,
    /// How long the check takes (`sleep N`).
    pub check_secs: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LandingReport {
    pub files: usize,
    pub entries: usize,
    pub check_secs: u64,
    pub worktree_ms: Vec<f64>,
    pub worktree_bytes: u64,
    /// One landing each, the lane idle: close → base moved.
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
    let base = Git::at(&repo).run(&["rev-parse", "main"]).map_err(git_err)?;
    let mut entries = Vec::new();
    let mut worktree_ms = Vec::new();
    progress(&format!("making {} worktrees and their work", config.entries));
    for n in 0..config.entries {
        let id = format!("b-{n}");
        let landing = Landing {
            repo: repo.display().to_string(),
            base: "main".into(),
            base_commit: base.clone(),
            worktree: worktree::path_of(&home, &id)
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
        let file = dir.join(format!("work-{n}.txt"));
        std::fs::write(&file, format!("{n}\n"))
            .map_err(io_error(format!("writing {}", file.display())))?;
        entries.push(Entry {
            id: id.clone(),
            title: format!("work {n}"),
            priority: 2,
            landing,
            queued_at: Timestamp::now(),
            reason: String::new(),
            no_changes: false,
        });
    }
    let worktree_bytes =
        entries.first().map_or(0, |e| worktree::disk_usage(Path::new(&e.landing.worktree)));
    let settings = LaneSettings {
        home: home.clone(),
        checks: vec![format!("sleep {}", config.check_secs)],
        timeout: Duration::from_secs(config.check_secs + 600),
        strategy: crate::config::Strategy::Squash,
        push: String::new(),
    };
    progress(&format!(
        "landing {} entries through one lane with a {} s check",
        config.entries, config.check_secs
    ));
    let mut land_ms = Vec::new();
    let all = Instant::now();
    for entry in &entries {
        let started = Instant::now();
        let landed = lane::land(&settings, entry, &mut |_, _, _| Ok(()))
            .map_err(|e| BenchError::Failed(e.to_string()))?;
        if !matches!(landed, Landed::Landed(_)) {
            return Err(BenchError::Failed(format!("{} did not land: {landed:?}", entry.id)));
        }
        land_ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let minutes = all.elapsed().as_secs_f64() / 60.0;
    let merges_per_minute = if minutes > 0.0 { entries.len() as f64 / minutes } else { 0.0 };
    Ok(LandingReport {
        files: config.files,
        entries: config.entries,
        check_secs: config.check_secs,
        worktree_ms,
        worktree_bytes,
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
        t.add_row(vec![
            "close → base moved (lane idle)".to_owned(),
            ms(mean(&self.land_ms)),
            ms(max(&self.land_ms)),
            format!("leftovers, merge-tree, commit-tree, {} s check, update-ref", self.check_secs),
        ]);
        t.add_row(vec![
            "merges per minute, one lane".to_owned(),
            format!("{:.1}", self.merges_per_minute),
            "-".to_owned(),
            format!("{} entries in a row, no batching", self.entries),
        ]);
        format!(
            "a repository of {} files; {} tasks, each one new file, landed through one lane with a check of `sleep {}`\n{t}",
            thousands(self.files as f64),
            self.entries,
            self.check_secs
        )
    }
}
