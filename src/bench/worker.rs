//! What the hidden `fleet bench worker` processes do: claim once, claim until nothing is left,
//! or list ready work, against either engine. The benchmarks spawn them and read back the ids
//! they report, one per line.

use std::path::Path;

use super::workspace::fleet_store_dir;
use super::{BenchError, sqlite};
use crate::claim;
use crate::store::{ReadyFilter, Store};
use crate::time::Clock;

/// The engine a benchmark runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    Fleet,
    Sqlite,
}

/// What a worker process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerMode {
    /// Claim the first ready issue, then exit.
    Once,
    /// Claim issue after issue until none is left.
    Loop,
    /// List ready work, as `fleet ready` does.
    Ready,
}

/// Runs a worker as `actor` on the benchmark workspace directory `workspace`. Returns the lines
/// it reports: the ids it claimed, or the ready list.
pub fn run_worker(
    engine: Engine,
    workspace: &Path,
    actor: &str,
    mode: WorkerMode,
) -> Result<Vec<String>, BenchError> {
    match (engine, mode) {
        (Engine::Fleet, WorkerMode::Ready) => fleet_ready(workspace),
        (Engine::Fleet, _) => {
            let store = Store::open(&fleet_store_dir(workspace))?;
            claim_until(mode, || {
                let claimed =
                    claim::claim_next_local(&store, actor, Clock::System, &ReadyFilter::default())?;
                Ok(claimed.map(|issue| issue.id))
            })
        }
        (Engine::Sqlite, WorkerMode::Ready) => sqlite_ready(workspace),
        (Engine::Sqlite, _) => {
            let mut conn = sqlite::open(workspace)?;
            claim_until(mode, || Ok(sqlite::claim_next(&mut conn, actor)?))
        }
    }
}

/// Claims once, or in a loop until `claim_one` finds nothing; returns the claimed ids.
fn claim_until(
    mode: WorkerMode,
    mut claim_one: impl FnMut() -> Result<Option<String>, BenchError>,
) -> Result<Vec<String>, BenchError> {
    let mut claimed = Vec::new();
    while let Some(id) = claim_one()? {
        claimed.push(id);
        if mode == WorkerMode::Once {
            break;
        }
    }
    Ok(claimed)
}

fn fleet_ready(workspace: &Path) -> Result<Vec<String>, BenchError> {
    let store = Store::open(&fleet_store_dir(workspace))?;
    let filter = ReadyFilter { limit: sqlite::READY_LIMIT, ..ReadyFilter::default() };
    let page = store.read()?.ready(&filter, Clock::System.now())?;
    Ok(page.issues.into_iter().map(|issue| issue.id).collect())
}

/// The baseline's ready list, printed as `fleet ready` prints its own.
fn sqlite_ready(workspace: &Path) -> Result<Vec<String>, BenchError> {
    let conn = sqlite::open(workspace)?;
    let rows = sqlite::ready(&conn, sqlite::READY_LIMIT)?;
    let mut lines = vec![format!("📋 Ready work ({} issues with no active blockers):", rows.len())];
    for (n, row) in rows.iter().enumerate() {
        lines.push(format!(
            "{}. [● P{}] [{}] {}: {} ({} deps, {} dependents)",
            n + 1,
            row.priority,
            row.issue_type,
            row.id,
            row.title,
            row.dependency_count,
            row.dependent_count
        ));
        if !row.assignee.is_empty() {
            lines.push(format!("   Assignee: {}", row.assignee));
        }
    }
    Ok(lines)
}
