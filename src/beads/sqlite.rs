//! Reads a legacy SQLite `beads.db` (beads ≤ v0.49) directly: issues, dependencies, labels,
//! comments, the `issue_prefix` and the other settings of its config table (custom types and
//! statuses among them; `kv.memory.*` entries become memories), and the number of rows of its
//! events table — an audit trail fleet does not import (its own op journal records history),
//! which the import reports as skipped.
//!
//! Where the SQLite schema differs from the JSONL beads exported, the row is written as the
//! export would have been: the gate timeout column `timeout_ns` becomes `timeout`, a
//! `work_type` holding the column default `mutex` is left out, and timestamps stored as
//! integers (Unix seconds, milliseconds, microseconds or nanoseconds) become RFC 3339.
//!
//! The schema changed many times across those releases, so nothing is assumed beyond the
//! table names: each table's columns are listed with `PRAGMA table_info` and only those that
//! exist are read. A row becomes the JSON object `bd export` would have written for it (empty
//! strings, zero counts and false flags omitted; booleans stored as integers turned back into
//! booleans; timestamps normalised) and then goes through the same reader as a JSONL line.

use std::collections::HashMap;
use std::path::Path;

use jiff::Timestamp;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value};

use super::BeadsError;
use super::batch::{Batch, MEMORY_PREFIX};
use super::jsonl::{BadLine, Line, parse_object, parse_time};

/// Columns that hold booleans as integers.
const FLAG_COLUMNS: [&str; 5] = ["ephemeral", "pinned", "is_template", "no_history", "wisp"];
/// Columns that hold timestamps as text.
const TIME_COLUMNS: [&str; 9] = [
    "created_at",
    "updated_at",
    "closed_at",
    "started_at",
    "due_at",
    "defer_until",
    "compacted_at",
    "deleted_at",
    "last_activity",
];
/// Columns that hold JSON documents as text.
const JSON_COLUMNS: [&str; 3] = ["metadata", "bonded_from", "waiters"];
/// Internal columns beads never exported.
const INTERNAL_COLUMNS: [&str; 2] = ["content_hash", "source_repo"];

/// Reads every issue of the database at `path`. `now` fills missing creation times.
pub fn read_sqlite(path: &Path, now: Timestamp) -> Result<Batch, BeadsError> {
    let fail = |source| BeadsError::Sqlite { path: path.to_path_buf(), source };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(fail)?;
    read(&conn, now).map_err(fail)
}

fn read(conn: &Connection, now: Timestamp) -> Result<Batch, rusqlite::Error> {
    let mut batch = Batch { prefix_hint: config_prefix(conn)?, ..Batch::default() };
    for (key, value) in config(conn)? {
        match key.strip_prefix(MEMORY_PREFIX) {
            Some(name) => batch.memories.push((name.to_string(), value)),
            None => batch.config.push((key, value)),
        }
    }
    batch.events_skipped = count(conn, "events")?;
    let mut labels: HashMap<String, Vec<Value>> = HashMap::new();
    for (issue, mut row) in rows(conn, "labels", "issue_id, label")? {
        if let Some(label) = row.remove("label") {
            labels.entry(issue).or_default().push(label);
        }
    }
    let mut deps: HashMap<String, Vec<Value>> = HashMap::new();
    for (issue, row) in rows(conn, "dependencies", "issue_id, depends_on_id")? {
        deps.entry(issue).or_default().push(Value::Object(row));
    }
    let mut comments: HashMap<String, Vec<Value>> = HashMap::new();
    for (issue, row) in rows(conn, "comments", "issue_id, created_at, id")? {
        comments.entry(issue).or_default().push(Value::Object(row));
    }
    let issues = rows(conn, "issues", "id")?;
    batch.lines = issues.len();
    for (number, (id, mut row)) in issues.into_iter().enumerate() {
        if let Some(labels) = labels.remove(&id) {
            row.insert("labels".into(), Value::Array(labels));
        }
        if let Some(deps) = deps.remove(&id) {
            row.insert("dependencies".into(), Value::Array(deps));
        }
        if let Some(comments) = comments.remove(&id) {
            row.insert("comments".into(), Value::Array(comments));
        }
        match parse_object(row, now) {
            Ok(Line::Issue(record)) => batch.records.push((number + 1, record)),
            Ok(Line::Tombstone { .. }) => batch.tombstones += 1,
            Ok(_) => {}
            Err(error) => {
                batch
                    .bad_lines
                    .push(BadLine { line: number + 1, error: format!("issue row: {error}") });
            }
        }
    }
    Ok(batch)
}

/// Settings of the config table that describe the workspace (everything but the prefix, which
/// is the store's own, and beads' internal bookkeeping).
fn config(conn: &Connection) -> Result<Vec<(String, String)>, rusqlite::Error> {
    if columns(conn, "config")?.is_empty() {
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare("SELECT key, value FROM config ORDER BY key")?;
    let rows = statement.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?.unwrap_or_default()))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (key, value) = row?;
        if !INTERNAL_CONFIG.contains(&key.as_str()) && !value.is_empty() {
            out.push((key, value));
        }
    }
    Ok(out)
}

/// Config keys that are beads' bookkeeping, not settings of the workspace.
const INTERNAL_CONFIG: [&str; 5] = [
    "issue_prefix",
    "schema_version",
    "last_import_time",
    "last_import_hash",
    "compact_tier1_days",
];

/// Rows of `table` (0 if there is no such table).
fn count(conn: &Connection, table: &str) -> Result<usize, rusqlite::Error> {
    if columns(conn, table)?.is_empty() {
        return Ok(0);
    }
    let n: i64 = conn.query_row(&format!("SELECT COUNT(*) FROM \"{table}\""), [], |r| r.get(0))?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The `issue_prefix` the database was initialised with, if its config table has one.
fn config_prefix(conn: &Connection) -> Result<Option<String>, rusqlite::Error> {
    if columns(conn, "config")?.is_empty() {
        return Ok(None);
    }
    let mut statement = conn.prepare("SELECT value FROM config WHERE key = 'issue_prefix'")?;
    let mut found = statement.query_map([], |row| row.get::<_, String>(0))?;
    Ok(found.next().transpose()?.filter(|p| !p.is_empty()))
}

/// The columns of `table` (empty if there is no such table).
fn columns(conn: &Connection, table: &str) -> Result<Vec<String>, rusqlite::Error> {
    let mut statement = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let names = statement.query_map([], |row| row.get::<_, String>(1))?;
    names.collect()
}

/// A row as a JSON object keyed by column, with the id of the issue it belongs to.
type OwnedRow = (String, Map<String, Value>);

/// Every row of `table` as a JSON object keyed by column, with the row's `issue_id` (or `id`
/// for issues). Rows without one are skipped.
fn rows(conn: &Connection, table: &str, order: &str) -> Result<Vec<OwnedRow>, rusqlite::Error> {
    let columns: Vec<String> = columns(conn, table)?
        .into_iter()
        .filter(|c| !INTERNAL_COLUMNS.contains(&c.as_str()))
        .collect();
    let owner = if table == "issues" { "id" } else { "issue_id" };
    if !columns.iter().any(|c| c == owner) {
        return Ok(Vec::new());
    }
    let order: Vec<&str> =
        order.split(", ").filter(|c| columns.iter().any(|have| have == c)).collect();
    let list = columns.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
    let sql = format!("SELECT {list} FROM \"{table}\" ORDER BY {}", order.join(", "));
    let mut statement = conn.prepare(&sql)?;
    let mut query = statement.query([])?;
    let mut out = Vec::new();
    while let Some(row) = query.next()? {
        let mut map = Map::new();
        for (at, column) in columns.iter().enumerate() {
            if let Some(value) = column_value(table, column, row.get_ref(at)?) {
                map.insert(column.clone(), value);
            }
        }
        if table == "issues" {
            rename_like_export(&mut map);
        }
        if let Some(Value::String(id)) = map.get(owner) {
            out.push((id.clone(), map));
        }
    }
    Ok(out)
}

/// Renames and drops the issue columns whose JSONL form differs (see the module docs).
fn rename_like_export(map: &mut Map<String, Value>) {
    if let Some(timeout) = map.remove("timeout_ns") {
        map.insert("timeout".into(), timeout);
    }
    if map.get("work_type").and_then(Value::as_str) == Some("mutex") {
        map.remove("work_type");
    }
}

/// A timestamp stored as an integer: Unix seconds, or milli-, micro- or nanoseconds told
/// apart by magnitude. Zero means "never" and is omitted.
fn integer_time(n: i64) -> Option<Value> {
    if n == 0 {
        return None;
    }
    let at = match n.unsigned_abs() {
        0..100_000_000_000 => Timestamp::from_second(n),
        100_000_000_000..100_000_000_000_000 => Timestamp::from_millisecond(n),
        100_000_000_000_000..100_000_000_000_000_000 => Timestamp::from_microsecond(n),
        _ => Timestamp::from_nanosecond(i128::from(n)),
    };
    at.ok().map(|at| Value::String(at.to_string()))
}

/// One cell as `bd export` would have written it, or `None` where it would be omitted.
fn column_value(table: &str, column: &str, cell: ValueRef<'_>) -> Option<Value> {
    let column = column.to_ascii_lowercase();
    let always = column == "priority" || table != "issues";
    match cell {
        ValueRef::Null | ValueRef::Blob(_) => None,
        ValueRef::Integer(n) if FLAG_COLUMNS.contains(&column.as_str()) => {
            (n != 0).then_some(Value::Bool(true))
        }
        ValueRef::Integer(n) if TIME_COLUMNS.contains(&column.as_str()) => integer_time(n),
        ValueRef::Integer(n) => (n != 0 || always).then(|| Value::from(n)),
        ValueRef::Real(x) => serde_json::Number::from_f64(x).map(Value::Number),
        ValueRef::Text(bytes) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            if text.is_empty() {
                return None;
            }
            if TIME_COLUMNS.contains(&column.as_str()) {
                return Some(Value::String(parse_time(&text).map_or(text, |at| at.to_string())));
            }
            if table == "issues" && JSON_COLUMNS.contains(&column.as_str()) {
                return Some(serde_json::from_str(&text).unwrap_or(Value::String(text)));
            }
            Some(Value::String(text))
        }
    }
}
