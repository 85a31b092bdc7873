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
    /// Run a read query, as the `fleet` command it stands for does.
    Read(ReadQuery),
}

/// The read commands `fleet bench ready` times, which the baseline worker answers with the
/// equivalent SQLite queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReadQuery {
    /// `fleet ready`: the first 100 ready issues, as text.
    Ready,
    /// `fleet ready --json`: the same, as JSON with the edge counts.
    ReadyJson,
    /// `fleet list --json -n 50`: the first 50 issues that are not closed, and their number.
    List,
    /// `fleet blocked --json`: the first page of blocked issues with their blockers.
    Blocked,
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
        (Engine::Fleet, WorkerMode::Read(_)) => fleet_ready(workspace),
        (Engine::Fleet, _) => {
            let store = Store::open(&fleet_store_dir(workspace))?;
            claim_until(mode, || {
                let claimed =
                    claim::claim_next_local(&store, actor, Clock::System, &ReadyFilter::default())?;
                Ok(claimed.map(|issue| issue.id))
            })
        }
        (Engine::Sqlite, WorkerMode::Read(query)) => sqlite_read(workspace, query),
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

/// The baseline's answer to `query`, printed as the `fleet` command prints its own.
fn sqlite_read(workspace: &Path, query: ReadQuery) -> Result<Vec<String>, BenchError> {
    let conn = sqlite::open(workspace)?;
    Ok(match query {
        ReadQuery::Ready => sqlite_ready(&conn)?,
        ReadQuery::ReadyJson => pretty(&sqlite::ready(&conn, sqlite::READY_LIMIT)?),
        ReadQuery::List => pretty(&sqlite::list(&conn, sqlite::PAGE_LIMIT)?.0),
        ReadQuery::Blocked => pretty(&sqlite::blocked(&conn, sqlite::PAGE_LIMIT)?.0),
    })
}

/// A value as pretty JSON, the one line a JSON query reports.
fn pretty<T: serde::Serialize>(value: &T) -> Vec<String> {
    vec![serde_json::to_string_pretty(value).unwrap_or_default()]
}

/// The baseline's ready list, printed as `fleet ready` prints its own.
fn sqlite_ready(conn: &rusqlite::Connection) -> Result<Vec<String>, BenchError> {
    let rows = sqlite::ready(conn, sqlite::READY_LIMIT)?;
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
