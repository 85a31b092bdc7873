//! `bd sql`: a SELECT over a read-only copy of the queue laid out in beads' tables.
//!
//! beads passes the query to its Dolt database. fleet's store is not SQL, so each call copies
//! the queue into an in-memory SQLite database with beads' table and column names — `issues`,
//! `labels`, `dependencies`, `comments`, and for ephemeral issues (beads' wisps) `wisps`,
//! `wisp_labels`, `wisp_dependencies`, `wisp_comments` — and runs the query there with
//! `query_only` on. Times are written as Dolt prints DATETIME (`2025-01-15 10:00:00`, UTC).
//! Writes are refused: every change goes through the tracker's requests (`bd update`, …).

use rusqlite::types::ValueRef;
use rusqlite::{Connection, params};
use serde_json::{Map, Value};

use super::context::BdContext;
use crate::cli::CliError;
use crate::model::{Comment, Dependency, Issue};
use crate::store::Reader;

#[derive(Debug, clap::Args)]
pub struct SqlArgs {
    /// The query (SELECT, WITH, EXPLAIN or PRAGMA), e.g. 'SELECT id, title FROM issues'.
    pub query: String,
    /// Rows as CSV with a header line.
    #[arg(long)]
    pub csv: bool,
}

/// The columns of `issues` and `wisps` fleet fills (beads' names; its other columns would
/// always be empty here and are left out).
const ISSUE_COLUMNS: &str = "id TEXT PRIMARY KEY, title TEXT NOT NULL, description TEXT NOT NULL, \
design TEXT NOT NULL, acceptance_criteria TEXT NOT NULL, notes TEXT NOT NULL, status TEXT NOT NULL, \
priority INTEGER NOT NULL, issue_type TEXT NOT NULL, assignee TEXT, estimated_minutes INTEGER, \
created_at TEXT NOT NULL, created_by TEXT, owner TEXT, updated_at TEXT NOT NULL, closed_at TEXT, \
closed_by_session TEXT, external_ref TEXT, spec_id TEXT, ephemeral INTEGER, pinned INTEGER, \
is_template INTEGER, mol_type TEXT, source_system TEXT, metadata TEXT, close_reason TEXT, \
due_at TEXT, defer_until TEXT";

fn schema() -> String {
    let mut sql = String::new();
    for (issues, labels, deps, comments) in [
        ("issues", "labels", "dependencies", "comments"),
        ("wisps", "wisp_labels", "wisp_dependencies", "wisp_comments"),
    ] {
        sql.push_str(&format!(
            "CREATE TABLE {issues} ({ISSUE_COLUMNS});
             CREATE TABLE {labels} (issue_id TEXT NOT NULL, label TEXT NOT NULL,
                 PRIMARY KEY (issue_id, label));
             CREATE TABLE {deps} (issue_id TEXT NOT NULL, depends_on_id TEXT NOT NULL,
                 type TEXT NOT NULL, created_at TEXT NOT NULL, created_by TEXT NOT NULL,
                 metadata TEXT, thread_id TEXT, PRIMARY KEY (issue_id, depends_on_id));
             CREATE TABLE {comments} (id TEXT PRIMARY KEY, issue_id TEXT NOT NULL,
                 author TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL);"
        ));
    }
    sql
}

/// A time as Dolt prints a DATETIME.
fn datetime(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

fn sql_error(error: &rusqlite::Error) -> CliError {
    CliError::new(format!("query error: {error}")).respecting_json()
}

/// Copies the queue into `conn`.
fn fill(conn: &mut Connection, reader: &Reader) -> Result<(), CliError> {
    let tx = conn.transaction().map_err(|e| sql_error(&e))?;
    let mut failure = None;
    reader.for_each_issue(&mut |issue| {
        let deps = reader.dependencies(&issue.id)?;
        let comments = reader.comments(&issue.id)?;
        if let Err(error) = insert(&tx, &issue, &deps, &comments) {
            failure = Some(error);
            return Ok(false);
        }
        Ok(true)
    })?;
    if let Some(error) = failure {
        return Err(sql_error(&error));
    }
    tx.commit().map_err(|e| sql_error(&e))
}

fn insert(
    tx: &rusqlite::Transaction<'_>,
    issue: &Issue,
    deps: &[Dependency],
    comments: &[Comment],
) -> Result<(), rusqlite::Error> {
    let (issues, labels, dep_table, comment_table) = if issue.ephemeral {
        ("wisps", "wisp_labels", "wisp_dependencies", "wisp_comments")
    } else {
        ("issues", "labels", "dependencies", "comments")
    };
    let opt = |t: Option<jiff::Timestamp>| t.map(datetime);
    let empty_null = |s: &str| (!s.is_empty()).then(|| s.to_string());
    tx.prepare_cached(&format!(
        "INSERT INTO {issues} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, \
         ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)"
    ))?
    .execute(params![
        issue.id,
        issue.title,
        issue.description,
        issue.design,
        issue.acceptance_criteria,
        issue.notes,
        issue.status.to_string(),
        issue.priority,
        issue.issue_type,
        empty_null(&issue.assignee),
        issue.estimated_minutes,
        datetime(issue.created_at),
        issue.created_by,
        issue.owner,
        datetime(issue.updated_at),
        opt(issue.closed_at),
        issue.closed_by_session,
        empty_null(&issue.external_ref),
        empty_null(&issue.spec_id),
        issue.ephemeral,
        issue.pinned,
        issue.is_template,
        issue.extra.get("mol_type").and_then(Value::as_str).unwrap_or_default(),
        issue.source_system,
        issue.metadata.as_ref().map_or_else(|| "{}".to_string(), Value::to_string),
        issue.close_reason,
        opt(issue.due_at),
        opt(issue.defer_until),
    ])?;
    let mut label =
        tx.prepare_cached(&format!("INSERT OR IGNORE INTO {labels} VALUES (?1, ?2)"))?;
    for name in &issue.labels {
        label.execute(params![issue.id, name])?;
    }
    let mut dep = tx.prepare_cached(&format!(
        "INSERT OR IGNORE INTO {dep_table} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))?;
    for d in deps {
        let metadata = if d.metadata.is_empty() { "{}" } else { d.metadata.as_str() };
        dep.execute(params![
            d.issue_id,
            d.depends_on_id,
            d.kind,
            datetime(d.created_at),
            d.created_by,
            metadata,
            d.thread_id
        ])?;
    }
    let mut comment = tx.prepare_cached(&format!(
        "INSERT OR IGNORE INTO {comment_table} VALUES (?1, ?2, ?3, ?4, ?5)"
    ))?;
    for c in comments {
        comment.execute(params![
            c.id.to_string(),
            issue.id,
            c.author,
            c.text,
            datetime(c.created_at)
        ])?;
    }
    Ok(())
}

/// The rows of `query` as (columns, rows of JSON values).
fn run_query(conn: &Connection, query: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), CliError> {
    let mut statement = conn.prepare(query).map_err(|e| refusal_or_error(&e))?;
    let columns: Vec<String> = statement.column_names().map(str::to_string).collect();
    let mut rows = statement.query([]).map_err(|e| refusal_or_error(&e))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| refusal_or_error(&e))? {
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            values.push(match row.get_ref(i).map_err(|e| sql_error(&e))? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::from(n),
                ValueRef::Real(x) => Value::from(x),
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Value::from(String::from_utf8_lossy(t).into_owned())
                }
            });
        }
        out.push(values);
    }
    Ok((columns, out))
}

/// A write refused by `query_only` says why; any other error is SQLite's.
fn refusal_or_error(error: &rusqlite::Error) -> CliError {
    if error.to_string().contains("readonly") {
        return CliError::new(
            "bd sql is read-only in fleet: the store is not SQL; change issues with bd's commands (update, close, dep, label…)",
        )
        .respecting_json();
    }
    sql_error(error)
}

pub fn cmd_sql(ctx: &BdContext, args: SqlArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut conn = Connection::open_in_memory().map_err(|e| sql_error(&e))?;
    conn.execute_batch(&schema()).map_err(|e| sql_error(&e))?;
    fill(&mut conn, &reader)?;
    conn.execute_batch("PRAGMA query_only = ON").map_err(|e| sql_error(&e))?;
    let (columns, rows) = run_query(&conn, &args.query)?;
    if ctx.out.json {
        let objects: Vec<Map<String, Value>> = rows
            .iter()
            .map(|row| columns.iter().cloned().zip(row.iter().cloned()).collect())
            .collect();
        ctx.out.emit(&objects, String::new);
    } else if args.csv {
        ctx.out.text(&csv(&columns, &rows));
    } else {
        ctx.out.text(&table(&columns, &rows));
    }
    Ok(())
}

fn cell(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

fn csv(columns: &[String], rows: &[Vec<Value>]) -> String {
    let field = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.into()
        }
    };
    let mut lines = vec![columns.iter().map(|c| field(c)).collect::<Vec<_>>().join(",")];
    for row in rows {
        lines.push(row.iter().map(|v| field(&cell(v))).collect::<Vec<_>>().join(","));
    }
    lines.join("\n")
}

/// beads' table: columns padded to their widest cell (at most 60), ` | ` between them.
fn table(columns: &[String], rows: &[Vec<Value>]) -> String {
    if rows.is_empty() {
        return "(0 rows)".to_string();
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| {
                    let s = cell(v);
                    if s.chars().count() > 60 {
                        format!("{}...", s.chars().take(57).collect::<String>())
                    } else {
                        s
                    }
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..columns.len())
        .map(|i| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .chain([columns[i].len()])
                .max()
                .unwrap_or(0)
                .min(60)
        })
        .collect();
    let line = |row: &[String]| {
        row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect::<Vec<_>>().join(" | ")
    };
    let mut lines = vec![line(columns)];
    lines.push(widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("-+-"));
    lines.extend(cells.iter().map(|r| line(r)));
    lines.push(format!("({} rows)", rows.len()));
    lines.join("\n")
}
