//! What the hidden `fleet bench worker` processes do: claim once, claim until nothing is left,
//! or list ready work, against either engine. The benchmarks spawn them and read back the ids
//! they report, one per line.

use std::path::Path;

use super::workspace::fleet_store_dir;
use super::{BenchError, sqlite};
use crate::server::client;
use crate::store::{ReadyFilter, Store};
use crate::time::Clock;
use crate::tracker::Request;

/// The engine a benchmark runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Fleet,
    Sqlite,
}

/// What a worker process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerMode<'a> {
    /// Claim the first ready issue, then exit.
    Once,
    /// Claim issue after issue until none is left.
    Loop,
    /// Run a read query, as the `fleet` command it stands for does.
    Read(ReadQuery),
    /// The ids of ready work, one a line (the baseline's `bd ready --json`).
    ReadyIds,
    /// Claim this issue (the baseline's `bd update ID --claim`); prints it if won.
    Claim(&'a str),
    /// Close this issue (`bd close ID`).
    Close(&'a str),
}

/// The store in `slot`, opened from `dir` on first use (a claimer whose requests the server
/// applies never opens it).
fn opened<'s>(slot: &'s mut Option<Store>, dir: &Path) -> Result<&'s Store, BenchError> {
    if slot.is_none() {
        *slot = Some(Store::open(dir)?);
    }
    Ok(slot.as_ref().expect("opened above"))
}

/// The read commands `fleet bench ready` times, which the baseline worker answers with the
/// equivalent SQLite queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadQuery {
    /// `fleet ready`: the first 100 ready issues, as text.
    Ready,
    /// `fleet ready --json`: the same, as JSON with the edge counts.
    ReadyJson,
    /// `fleet list --json -n 50`: the first 50 issues that are not closed, and their number.
    List,
    /// `fleet blocked --json`: the first page of blocked issues with their blockers.
    Blocked,
    /// `fleet search "issue 4242" --json`: the first page of open issues with that text in
    /// their id or title, and their number.
    Search,
    /// `bd count`: how many issues there are.
    Count,
}

/// Runs a worker as `actor` on the benchmark workspace directory `workspace`. Returns the lines
/// it reports: the ids it claimed, or the ready list.
pub fn run_worker(
    engine: Engine,
    workspace: &Path,
    actor: &str,
    mode: WorkerMode<'_>,
) -> Result<Vec<String>, BenchError> {
    match (engine, mode) {
        (Engine::Fleet, WorkerMode::Read(_)) => fleet_ready(workspace),
        (Engine::Fleet, WorkerMode::Once | WorkerMode::Loop) => {
            let dir = fleet_store_dir(workspace);
            let mut store = None;
            let mut session = client::Session::new(&dir);
            claim_until(mode, || {
                let request = Request::ClaimNext { filter: Box::default() };
                let reply =
                    session.submit(actor, Clock::System, request, || opened(&mut store, &dir))?;
                Ok(reply.into_claimed()?.map(|summary| summary.issue.id))
            })
        }
        (Engine::Fleet, WorkerMode::Close(id)) => {
            let dir = fleet_store_dir(workspace);
            let close = crate::tracker::CloseRequest { id: id.to_string(), ..Default::default() };
            let reply =
                client::submit(&dir, actor, Clock::System, Request::Close(vec![close]), || {
                    Store::open(&dir)
                })?;
            Ok(reply.into_closed()?.closed.into_iter().map(|s| s.issue.id).collect())
        }
        (Engine::Sqlite, WorkerMode::Read(query)) => sqlite_read(workspace, query),
        (Engine::Sqlite, WorkerMode::ReadyIds) => {
            let rows = sqlite::ready(&sqlite::open(workspace)?, sqlite::READY_LIMIT)?;
            Ok(rows.into_iter().map(|row| row.id).collect())
        }
        (Engine::Sqlite, WorkerMode::Claim(id)) => {
            Ok(sqlite::claim(&sqlite::open(workspace)?, id, actor)?
                .then(|| id.to_string())
                .into_iter()
                .collect())
        }
        (Engine::Sqlite, WorkerMode::Close(id)) => {
            sqlite::close(&sqlite::open(workspace)?, id)?;
            Ok(vec![id.to_string()])
        }
        (Engine::Fleet, WorkerMode::ReadyIds | WorkerMode::Claim(_)) => {
            Err(BenchError::Failed("fleet's side of the cycle runs the real `bd` commands".into()))
        }
        (Engine::Sqlite, WorkerMode::Once | WorkerMode::Loop) => {
            let mut conn = sqlite::open(workspace)?;
            claim_until(mode, || Ok(sqlite::claim_next(&mut conn, actor)?))
        }
    }
}

/// Claims once, or in a loop until `claim_one` finds nothing; returns the claimed ids.
fn claim_until(
    mode: WorkerMode<'_>,
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
        ReadQuery::Search => {
            pretty(&sqlite::search(&conn, sqlite::SEARCH_TEXT, sqlite::PAGE_LIMIT)?.0)
        }
        ReadQuery::Count => vec![sqlite::issue_count(&conn)?.to_string()],
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
