//! `fleet bench merge`: what merging a few ops that arrive out of order costs a store of many
//! records — by rewinding the undo log (`store::undo`), against the baseline of making the
//! state again from every op, both on copies of the same store in the same run.
//!
//! The store holds `records` issues made one op each (as a queue filled over months is), then
//! `behind` later edits made here. Another replica's `batch` edits were made before those
//! edits (their stamps sort between the issues and the edits), so the merge must place them
//! `behind` ops back in the total order. Each round merges the same batch into a fresh copy of
//! the store twice: once as fleet does, once with the undo log forgotten. Both stores have
//! made a write transaction before the timing starts ([`opened_for_writing`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::workspace::ScratchDir;
use super::{BenchError, Progress, io_error, mark, table, thousands};
use crate::model::Issue;
use crate::op::{IssuePatch, Op};
use crate::store::Store;
use crate::time::Clock;
use crate::tracker;

/// The goal for merging a small batch out of order into a store of 100k records.
const GOAL: Duration = Duration::from_millis(50);

pub struct MergeConfig {
    pub records: usize,
    pub behind: usize,
    pub batch: usize,
    pub rounds: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    pub records: usize,
    pub behind: usize,
    pub batch: usize,
    /// Milliseconds of each round's merge by rewinding, and by making the state again.
    pub rewind_ms: Vec<f64>,
    pub full_ms: Vec<f64>,
    /// Ops the rewinding merges took back.
    pub rewound: usize,
    pub goal_ms: f64,
    pub profile: &'static str,
}

impl MergeReport {
    pub fn render(&self) -> String {
        let (rewind, full) = (median(&self.rewind_ms), median(&self.full_ms));
        let mut t = table(vec!["merge", "median", "min", "max", "vs baseline", "goal", ""]);
        let row = |name: String, ms: &[f64], ratio: String, goal: String, met: &str| {
            let (min, max) = min_max(ms);
            vec![name, millis(median(ms)), millis(min), millis(max), ratio, goal, met.to_string()]
        };
        t.add_row(row(
            format!("rewind {} op(s), apply {}", self.rewound, self.rewound + self.batch),
            &self.rewind_ms,
            format!("{:.1}× faster", full / rewind.max(f64::EPSILON)),
            format!("≤ {}", millis(self.goal_ms)),
            mark(rewind <= self.goal_ms),
        ));
        t.add_row(row(
            format!("baseline: every op again ({} records)", thousands(self.records as f64)),
            &self.full_ms,
            "1.0×".into(),
            "-".into(),
            "",
        ));
        format!(
            "{} issues made one op each, {} edits after them; {} op(s) of another replica made before those edits; {} rounds, each on fresh copies of the store, open and written to once before the timing\n{t}\n{} build",
            thousands(self.records as f64),
            self.behind,
            self.batch,
            self.rewind_ms.len(),
            self.profile
        )
    }
}

fn millis(ms: f64) -> String {
    format!("{ms:.1} ms")
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

fn min_max(values: &[f64]) -> (f64, f64) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(0.0, f64::max);
    (if min.is_finite() { min } else { 0.0 }, max)
}

/// Runs the benchmark in a temporary directory.
pub fn run(config: &MergeConfig, progress: Progress<'_>) -> Result<MergeReport, BenchError> {
    let dir = ScratchDir::create("merge")?;
    let start = Timestamp::now() - SignedDuration::from_hours(1);
    let at = |seconds: i64| Clock::Fixed(start + SignedDuration::from_secs(seconds));
    let here = dir.subdir("here")?.join(".beads");
    let store = Store::init(&here, "m")?;
    progress(&format!("making {} issues, one op each", thousands(config.records as f64)));
    store.write("bench", at(0), |w| {
        for n in 0..config.records {
            let issue = Issue::new(format!("m-{n}"), format!("issue {n}"), start);
            tracker::import_new(w, issue, Vec::new())?;
        }
        Ok(())
    })?;
    progress("copying the store as another replica and making its edits");
    let batch = edits_elsewhere(&dir, &store, config, at(1))?;
    edit(&store, "bench", at(2), config.behind, "edited here")?;
    drop(store);
    let prepared = here.join(crate::workspace::STORE_FILE);
    let mut report = MergeReport {
        records: config.records,
        behind: config.behind,
        batch: config.batch,
        rewind_ms: Vec::new(),
        full_ms: Vec::new(),
        rewound: 0,
        goal_ms: GOAL.as_secs_f64() * 1000.0,
        profile: if cfg!(debug_assertions) { "debug" } else { "release" },
    };
    for round in 1..=config.rounds {
        progress(&format!("round {round}: merging by rewinding"));
        let copy = copy_store(&dir, &prepared, &format!("rewind-{round}"))?;
        let rewinding = Store::open(&copy)?;
        opened_for_writing(&rewinding)?;
        let (elapsed, merged) = timed_merge(&rewinding, &batch)?;
        report.rewound = merged.rewound.ok_or_else(|| {
            BenchError::Failed("the merge made the state again instead of rewinding".into())
        })?;
        report.rewind_ms.push(elapsed.as_secs_f64() * 1000.0);
        progress(&format!("round {round}: merging by making the state again"));
        let baseline = copy_store(&dir, &prepared, &format!("full-{round}"))?;
        let baseline_store = Store::open(&baseline)?;
        baseline_store.forget_undo_log()?;
        opened_for_writing(&baseline_store)?;
        let (elapsed, merged) = timed_merge(&baseline_store, &batch)?;
        if merged.rewound.is_some() {
            return Err(BenchError::Failed("the baseline rewound".into()));
        }
        report.full_ms.push(elapsed.as_secs_f64() * 1000.0);
        if round == 1 {
            same_queue(&Store::open(&copy)?, &baseline_store)?;
        }
    }
    Ok(report)
}

/// The edits of another replica: a copy of `store` given another replica id makes `batch`
/// edits at `clock`. Returns its ops.
fn edits_elsewhere(
    dir: &ScratchDir,
    store: &Store,
    config: &MergeConfig,
    clock: Clock,
) -> Result<Vec<Op>, BenchError> {
    let path = store.dir().join(crate::workspace::STORE_FILE);
    let elsewhere_dir = copy_store(dir, &path, "elsewhere")?;
    let elsewhere = Store::open(&elsewhere_dir)?;
    let theirs: HashSet<u128> =
        elsewhere.journal(1)?.into_iter().map(|(_, op)| op.meta.id.0).collect();
    elsewhere.take_new_replica("bench-elsewhere", &theirs, None)?;
    let ops = edit(&elsewhere, "elsewhere", clock, config.batch, "edited elsewhere")?;
    Ok(ops)
}

/// Retitles the first `count` issues, one op each; returns the ops.
fn edit(
    store: &Store,
    actor: &str,
    clock: Clock,
    count: usize,
    title: &str,
) -> Result<Vec<Op>, BenchError> {
    let (_, ops) = store.write(actor, clock, |w| {
        for n in 0..count {
            let patch = IssuePatch { title: Some(format!("{title} {n}")), ..IssuePatch::default() };
            tracker::update(w, &tracker::UpdateRequest::edit(&format!("m-{n}"), patch))?;
        }
        Ok(())
    })?;
    Ok(ops)
}

/// Copies the store file `from` into a new workspace `name` of `dir`; returns its `.beads`.
fn copy_store(dir: &ScratchDir, from: &Path, name: &str) -> Result<PathBuf, BenchError> {
    let beads = dir.subdir(name)?.join(".beads");
    std::fs::create_dir_all(&beads).map_err(io_error(format!("creating {}", beads.display())))?;
    let to = beads.join(crate::workspace::STORE_FILE);
    std::fs::copy(from, &to).map_err(io_error(format!("copying {}", from.display())))?;
    Ok(beads)
}

/// Makes a first write transaction on `store`, outside the timing: the first after a store is
/// opened reads the engine's allocator state, which costs about 1 ms per 1,000 records once
/// per process (a sync run from the command line pays it, a supervisor's periodic sync not),
/// whatever the transaction does.
fn opened_for_writing(store: &Store) -> Result<(), BenchError> {
    store.write("bench", Clock::System, |w| w.set_config("bench.merge", Some("warm")))?;
    Ok(())
}

fn timed_merge(
    store: &Store,
    batch: &[Op],
) -> Result<(Duration, crate::store::Merged), BenchError> {
    let started = Instant::now();
    let merged = store.merge(Clock::System, batch.to_vec(), &[])?;
    Ok((started.elapsed(), merged))
}

/// Both merges must give the same queue, or the comparison means nothing.
fn same_queue(a: &Store, b: &Store) -> Result<(), BenchError> {
    let export = |store: &Store| -> Result<Vec<u8>, BenchError> {
        let mut out = Vec::new();
        let options = crate::beads::ExportOptions { all: true, ..Default::default() };
        crate::beads::export::write_export(&store.read()?, &options, &mut out)
            .map_err(|e| BenchError::Failed(e.to_string()))?;
        Ok(out)
    };
    if export(a)? != export(b)? {
        return Err(BenchError::Failed("the two merges gave different queues".into()));
    }
    Ok(())
}
