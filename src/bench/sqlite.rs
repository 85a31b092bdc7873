//! The SQLite baseline: the claim and the ready query a conventional SQLite tracker runs, on a
//! table shaped like beads' `issues`, with the durability fleet gives (WAL, synchronous=FULL,
//! so every commit is on disk before it returns).
//!
//! Each benchmark gets the index its query wants: claims an index over open, unassigned issues
//! in ready order; ready an index over open issues in ready order, plus a materialised blocked
//! set (beads' blocked cache), which is the SQLite counterpart of fleet's blocked flag.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::workspace::PlannedIssue;

/// The baseline's database file inside a benchmark workspace directory.
pub const DB_FILE: &str = "baseline.sqlite";
/// How many issues `fleet ready` lists by default; the baseline lists as many.
pub const READY_LIMIT: usize = 100;
/// How many issues `fleet list` and `fleet blocked` print by default; the baseline as many.
pub const PAGE_LIMIT: usize = 50;
/// Long enough that no claimer gives up while 63 others queue for the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);

const SCHEMA: &str = "
CREATE TABLE issues (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    assignee TEXT NOT NULL DEFAULT '',
    priority INTEGER NOT NULL,
    issue_type TEXT NOT NULL DEFAULT 'task',
    created_at INTEGER NOT NULL
);
CREATE TABLE deps (
    issue_id TEXT NOT NULL,
    depends_on_id TEXT NOT NULL,
    type TEXT NOT NULL,
    PRIMARY KEY (issue_id, depends_on_id)
) WITHOUT ROWID;
CREATE INDEX deps_by_target ON deps (depends_on_id);
CREATE TABLE blocked (id TEXT PRIMARY KEY) WITHOUT ROWID;
";

const CLAIM_INDEX: &str = "CREATE INDEX issues_claimable ON issues (priority, created_at DESC, id)
    WHERE status = 'open' AND assignee = ''";
const READY_INDEX: &str = "CREATE INDEX issues_open ON issues (priority, created_at DESC, id)
    WHERE status = 'open';
CREATE INDEX issues_by_priority ON issues (priority, created_at DESC, id);";

/// Issues with an open blocker, then everything below a blocked issue through parent-child:
/// the rule fleet's readiness module maintains, computed once as beads rebuilds its cache.
pub(super) const FILL_BLOCKED: &str = "
INSERT INTO blocked (id)
WITH RECURSIVE blocked_ids (id) AS (
    SELECT d.issue_id FROM deps d
    JOIN issues s ON s.id = d.issue_id
    JOIN issues t ON t.id = d.depends_on_id
    WHERE d.type IN ('blocks', 'conditional-blocks')
      AND s.status NOT IN ('closed', 'pinned') AND t.status NOT IN ('closed', 'pinned')
    UNION
    SELECT d.issue_id FROM deps d
    JOIN blocked_ids b ON d.depends_on_id = b.id
    JOIN issues s ON s.id = d.issue_id
    WHERE d.type = 'parent-child' AND s.status NOT IN ('closed', 'pinned')
)
SELECT id FROM blocked_ids";

const CLAIM_PICK: &str = "SELECT id FROM issues WHERE status = 'open' AND assignee = ''
    ORDER BY priority, created_at DESC, id LIMIT 1";
const CLAIM_SET: &str = "UPDATE issues SET status = 'in_progress', assignee = ?1
    WHERE id = ?2 AND status = 'open' AND assignee = ''";

const READY_QUERY: &str = "
SELECT i.id, i.title, i.priority, i.issue_type, i.assignee,
    (SELECT count(*) FROM deps d WHERE d.issue_id = i.id),
    (SELECT count(*) FROM deps d WHERE d.depends_on_id = i.id)
FROM issues i
WHERE i.status = 'open' AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.id = i.id)
ORDER BY i.priority, i.created_at DESC, i.id
LIMIT ?1";

/// The columns `list` and `blocked` print, with the edge counts; `?1` is the limit.
const LISTED: &str = "SELECT i.id, i.title, i.status, i.priority, i.issue_type, i.assignee,
    i.created_at,
    (SELECT count(*) FROM deps d WHERE d.issue_id = i.id),
    (SELECT count(*) FROM deps d WHERE d.depends_on_id = i.id)
FROM issues i";
const LIST_WHERE: &str = "WHERE i.status != 'closed'";
const BLOCKED_WHERE: &str = "WHERE EXISTS (SELECT 1 FROM blocked b WHERE b.id = i.id)";
/// `search`'s filter, with the pattern as SQL parameter `parameter` (`?1`, `?2`…).
fn search_where(parameter: &str) -> String {
    format!(
        "WHERE i.status != 'closed' AND (lower(i.id) LIKE {parameter} OR lower(i.title) LIKE {parameter})"
    )
}
const LISTED_ORDER: &str = "ORDER BY i.priority, i.created_at DESC, i.id LIMIT ?1";
const BLOCKED_BY: &str =
    "SELECT d.depends_on_id FROM deps d JOIN issues t ON t.id = d.depends_on_id
    WHERE d.issue_id = ?1 AND d.type IN ('blocks', 'conditional-blocks')
      AND t.status NOT IN ('closed', 'pinned')";

/// One row of the baseline's `list` or `blocked`, printed as JSON.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ListedRow {
    pub id: String,
    pub title: String,
    pub status: String,
    pub priority: u8,
    pub issue_type: String,
    pub assignee: String,
    pub created_at: i64,
    pub dependency_count: usize,
    pub dependent_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<Vec<String>>,
}

/// The first `limit` issues that are not closed, in `list`'s default order, and how many
/// there are in all (`fleet list` reports it).
pub fn list(conn: &Connection, limit: usize) -> rusqlite::Result<(Vec<ListedRow>, usize)> {
    let rows = listed(conn, LIST_WHERE, limit)?;
    let total =
        conn.query_row("SELECT count(*) FROM issues WHERE status != 'closed'", [], |row| {
            row.get(0).map(count)
        })?;
    Ok((rows, total))
}

/// The first `limit` blocked issues in `blocked`'s order with their open blockers, and how
/// many are blocked in all.
pub fn blocked(conn: &Connection, limit: usize) -> rusqlite::Result<(Vec<ListedRow>, usize)> {
    let mut rows = listed(conn, BLOCKED_WHERE, limit)?;
    let mut blockers = conn.prepare_cached(BLOCKED_BY)?;
    for row in &mut rows {
        let ids = blockers.query_map([&row.id], |r| r.get(0))?;
        row.blocked_by = Some(ids.collect::<rusqlite::Result<_>>()?);
    }
    let total = conn.query_row("SELECT count(*) FROM blocked", [], |row| row.get(0).map(count))?;
    Ok((rows, total))
}

/// The text `search` looks for: in the titles of about ten of 100k issues.
pub const SEARCH_TEXT: &str = "issue 4242";

/// The first `limit` issues that are not closed and have `text` in their id or title
/// (case-insensitive), in `list`'s order, and how many there are in all.
pub fn search(
    conn: &Connection,
    text: &str,
    limit: usize,
) -> rusqlite::Result<(Vec<ListedRow>, usize)> {
    let pattern = format!("%{}%", text.to_lowercase());
    // `listed` binds the limit as ?1.
    let rows = listed_with(conn, &search_where("?2"), limit, Some(&pattern))?;
    let counted = format!("SELECT count(*) FROM issues i {}", search_where("?1"));
    let total = conn.query_row(&counted, [&pattern], |row| row.get(0).map(count))?;
    Ok((rows, total))
}

/// How many issues there are.
pub fn issue_count(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row("SELECT count(*) FROM issues", [], |row| row.get(0).map(count))
}

fn listed(conn: &Connection, filter: &str, limit: usize) -> rusqlite::Result<Vec<ListedRow>> {
    listed_with(conn, filter, limit, None)
}

/// [`listed`] with a second parameter (`?2`) for the filter.
fn listed_with(
    conn: &Connection,
    filter: &str,
    limit: usize,
    parameter: Option<&str>,
) -> rusqlite::Result<Vec<ListedRow>> {
    let mut query = conn.prepare_cached(&format!("{LISTED} {filter} {LISTED_ORDER}"))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let parameters: Vec<&dyn rusqlite::ToSql> = match &parameter {
        Some(parameter) => vec![&limit, parameter],
        None => vec![&limit],
    };
    let rows = query.query_map(parameters.as_slice(), |row| {
        Ok(ListedRow {
            id: row.get(0)?,
            title: row.get(1)?,
            status: row.get(2)?,
            priority: row.get(3)?,
            issue_type: row.get(4)?,
            assignee: row.get(5)?,
            created_at: row.get(6)?,
            dependency_count: count(row.get(7)?),
            dependent_count: count(row.get(8)?),
            blocked_by: None,
        })
    })?;
    rows.collect()
}

/// Which query the baseline is built to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Claim,
    Ready,
}

/// Opens the baseline in `workspace` for one claimer or reader: full durability, and a busy
/// timeout instead of failing when another writer holds the lock.
pub fn open(workspace: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(workspace.join(DB_FILE))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("PRAGMA synchronous = FULL;")?;
    Ok(conn)
}

/// Creates the baseline in `workspace` and fills it with `plan` (ids by index) in one
/// transaction.
pub fn fill(
    workspace: &Path,
    ids: &[String],
    plan: &[PlannedIssue],
    purpose: Purpose,
) -> rusqlite::Result<()> {
    let mut conn = open(workspace)?;
    conn.execute_batch("PRAGMA journal_mode = WAL;")?;
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(match purpose {
        Purpose::Claim => CLAIM_INDEX,
        Purpose::Ready => READY_INDEX,
    })?;
    let tx = conn.transaction()?;
    {
        let mut issue = tx.prepare(
            "INSERT INTO issues (id, title, status, priority, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let mut dep =
            tx.prepare("INSERT INTO deps (issue_id, depends_on_id, type) VALUES (?1, ?2, ?3)")?;
        for (index, (id, planned)) in ids.iter().zip(plan).enumerate() {
            let status = if planned.closed { "closed" } else { "open" };
            let created = crate::time::nanos(planned.created_at);
            issue.execute(params![
                id,
                PlannedIssue::title(index),
                status,
                planned.priority,
                created
            ])?;
            for &(target, kind) in &planned.deps {
                dep.execute(params![id, ids[target], kind])?;
            }
        }
    }
    if purpose == Purpose::Ready {
        tx.execute(FILL_BLOCKED, [])?;
    }
    tx.commit()?;
    conn.execute_batch("ANALYZE;")
}

/// Claims the first open, unassigned issue in ready order for `actor` in one durable
/// transaction. Returns its id, or `None` when nothing is left.
pub fn claim_next(conn: &mut Connection, actor: &str) -> rusqlite::Result<Option<String>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let picked: Option<String> =
        tx.prepare_cached(CLAIM_PICK)?.query_row([], |row| row.get(0)).optional()?;
    let claimed = match picked {
        Some(id) => {
            let changed = tx.prepare_cached(CLAIM_SET)?.execute(params![actor, id])?;
            (changed == 1).then_some(id)
        }
        None => None,
    };
    tx.commit()?;
    Ok(claimed)
}

/// Claims issue `id` for `actor` if it is still open and unassigned, in one durable
/// transaction (the baseline's `bd update ID --claim`). Returns whether it was won.
pub fn claim(conn: &Connection, id: &str, actor: &str) -> rusqlite::Result<bool> {
    let changed = conn.prepare_cached(CLAIM_SET)?.execute(params![actor, id])?;
    Ok(changed == 1)
}

/// Closes issue `id` in one durable transaction (the baseline's `bd close ID`).
pub fn close(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.execute("UPDATE issues SET status = 'closed' WHERE id = ?1", params![id])?;
    Ok(())
}

/// The closed issues with their assignees.
pub fn closed(workspace: &Path) -> rusqlite::Result<Vec<(String, String)>> {
    let conn = open(workspace)?;
    let mut query = conn.prepare("SELECT id, assignee FROM issues WHERE status = 'closed'")?;
    let rows = query.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

/// One row of the baseline's ready list.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadyRow {
    pub id: String,
    pub title: String,
    pub priority: u8,
    pub issue_type: String,
    pub assignee: String,
    pub dependency_count: usize,
    pub dependent_count: usize,
}

/// The first `limit` ready issues in ready order, with the edge counts fleet shows.
pub fn ready(conn: &Connection, limit: usize) -> rusqlite::Result<Vec<ReadyRow>> {
    let mut query = conn.prepare_cached(READY_QUERY)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = query.query_map([limit], |row| {
        Ok(ReadyRow {
            id: row.get(0)?,
            title: row.get(1)?,
            priority: row.get(2)?,
            issue_type: row.get(3)?,
            assignee: row.get(4)?,
            dependency_count: count(row.get(5)?),
            dependent_count: count(row.get(6)?),
        })
    })?;
    rows.collect()
}

/// How many issues are ready in all.
pub fn ready_count(conn: &Connection) -> rusqlite::Result<usize> {
    conn.query_row(
        "SELECT count(*) FROM issues i WHERE i.status = 'open'
            AND NOT EXISTS (SELECT 1 FROM blocked b WHERE b.id = i.id)",
        [],
        |row| row.get(0).map(count),
    )
}

/// A `count(*)` as a size (never negative).
fn count(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// The in_progress issues with their assignees.
pub fn in_progress(workspace: &Path) -> rusqlite::Result<Vec<(String, String)>> {
    let conn = open(workspace)?;
    let mut query = conn.prepare("SELECT id, assignee FROM issues WHERE status = 'in_progress'")?;
    let rows = query.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workspace::ScratchDir;

    fn plan() -> Vec<PlannedIssue> {
        let at = |s: &str| s.parse().unwrap();
        vec![
            PlannedIssue {
                priority: 2,
                created_at: at("2024-01-01T00:00:00Z"),
                closed: false,
                deps: vec![],
            },
            PlannedIssue {
                priority: 2,
                created_at: at("2024-01-02T00:00:00Z"),
                closed: false,
                deps: vec![(0, "blocks")],
            },
            PlannedIssue {
                priority: 1,
                created_at: at("2024-01-03T00:00:00Z"),
                closed: false,
                deps: vec![(1, "parent-child")],
            },
            PlannedIssue {
                priority: 3,
                created_at: at("2024-01-04T00:00:00Z"),
                closed: false,
                deps: vec![],
            },
        ]
    }

    fn ids() -> Vec<String> {
        (0..4).map(|n| format!("b-{n}")).collect()
    }

    #[test]
    fn claims_in_ready_order_until_empty() {
        let scratch = ScratchDir::create("test").unwrap();
        let dir = scratch.subdir("sqlite").unwrap();
        fill(&dir, &ids(), &plan(), Purpose::Claim).unwrap();
        let mut conn = open(&dir).unwrap();
        let order: Vec<_> = std::iter::from_fn(|| claim_next(&mut conn, "me").unwrap()).collect();
        assert_eq!(order, ["b-2", "b-1", "b-0", "b-3"]);
        assert_eq!(in_progress(&dir).unwrap().len(), 4);
    }

    #[test]
    fn ready_leaves_out_blocked_issues_and_their_children() {
        let scratch = ScratchDir::create("test").unwrap();
        let dir = scratch.subdir("sqlite").unwrap();
        fill(&dir, &ids(), &plan(), Purpose::Ready).unwrap();
        let conn = open(&dir).unwrap();
        let ready: Vec<_> = ready(&conn, 10).unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ready, ["b-0", "b-3"]);
        assert_eq!(ready_count(&conn).unwrap(), 2);
    }
}
