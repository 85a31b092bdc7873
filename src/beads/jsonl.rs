//! One beads record ⇄ one JSONL line (spec/beads.md §1).
//!
//! Reading is lenient where beads' eras differ and strict where a wrong value would be
//! imported silently: any JSON spacing, timestamps with any offset or precision (and the
//! space-separated forms SQLite kept), comment ids as numbers or strings, the legacy `wisp`
//! alias, `_schema` header lines, `_type` memory lines, tombstones. Keys fleet does not model
//! are kept in [`Issue::extra`] in the order they came. A value of the wrong type for a known
//! key is an error that names the key.
//!
//! Writing produces what `bd export` writes: `_type` first, then beads' struct order (§1.2),
//! then keys fleet does not know, then the computed counts and `parent`; UTC `Z` timestamps;
//! compact JSON with Go's escaping of `<`, `>` and `&`. Fleet's own task fields travel under
//! `metadata.fleet`. Writing the same state twice gives the same bytes.

use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{Comment, Dependency, FleetFields, Issue, Status};

mod fast;

/// An issue with the edges and comments that travel embedded in its line.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Boxed: an issue is a kilobyte, and a large import moves each record several times.
    pub issue: Box<Issue>,
    /// Edges where this issue is the dependent (`issue_id`).
    pub deps: Vec<Dependency>,
    pub comments: Vec<Comment>,
}

/// What one line of a beads JSONL file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Issue(Record),
    /// A `bd remember` memory.
    Memory {
        key: String,
        value: String,
    },
    /// A legacy soft-deleted issue: never imported.
    Tombstone {
        id: String,
    },
    /// An `_schema` header line.
    Header,
    Blank,
}

/// A line that could not be read, as the import reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadLine {
    pub line: usize,
    pub error: String,
}

/// Keys that beads computes on export and importers ignore.
const COMPUTED_KEYS: [&str; 4] = ["dependency_count", "dependent_count", "comment_count", "parent"];

/// Beads' key order for an issue line (the struct order of spec §1.2), after `_type`. Keys
/// fleet keeps in `extra` but beads knows are written in their place here, too.
const BEADS_ORDER: [&str; 52] = [
    "id",
    "title",
    "description",
    "design",
    "acceptance_criteria",
    "notes",
    "spec_id",
    "status",
    "priority",
    "issue_type",
    "assignee",
    "owner",
    "estimated_minutes",
    "created_at",
    "created_by",
    "updated_at",
    "started_at",
    "closed_at",
    "close_reason",
    "closed_by_session",
    "due_at",
    "defer_until",
    "external_ref",
    "source_system",
    "metadata",
    "compaction_level",
    "compacted_at",
    "compacted_at_commit",
    "original_size",
    "labels",
    "dependencies",
    "comments",
    "sender",
    "ephemeral",
    "no_history",
    "wisp_type",
    "pinned",
    "is_template",
    "bonded_from",
    "await_type",
    "await_id",
    "timeout",
    "waiters",
    "source_formula",
    "source_location",
    "mol_type",
    "work_type",
    "event_kind",
    "actor",
    "target",
    "payload",
    // Not in beads' struct: fleet's own row key, never written at top level (it travels in
    // metadata), listed so it is not mistaken for an unknown key.
    "fleet",
];

/// The kind of value a modelled key must hold.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Integer,
    Flag,
    Time,
    Texts,
    Json,
}

/// The kind of value a key [`Issue`] models must hold; `None` for keys it does not model.
fn modelled_kind(key: &str) -> Option<Kind> {
    Some(match key {
        "id"
        | "title"
        | "description"
        | "design"
        | "acceptance_criteria"
        | "notes"
        | "spec_id"
        | "status"
        | "issue_type"
        | "assignee"
        | "owner"
        | "created_by"
        | "close_reason"
        | "closed_by_session"
        | "external_ref"
        | "source_system" => Kind::Text,
        "priority" | "estimated_minutes" => Kind::Integer,
        "created_at" | "updated_at" | "started_at" | "closed_at" | "due_at" | "defer_until" => {
            Kind::Time
        }
        "metadata" => Kind::Json,
        "labels" => Kind::Texts,
        "ephemeral" | "pinned" | "is_template" => Kind::Flag,
        _ => return None,
    })
}

/// Beads time fields fleet keeps in `extra`; normalised to UTC like the modelled ones.
const EXTRA_TIME_KEYS: [&str; 1] = ["compacted_at"];

/// Parses one line. `now` fills a missing creation time, as `bd import` does. The error
/// message does not carry the line number; the caller adds it.
pub fn parse_line(text: &str, now: Timestamp) -> Result<Line, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Line::Blank);
    }
    match fast::parse_issue_line(text, now) {
        Some(record) => Ok(Line::Issue(record)),
        None => parse_general(text, now),
    }
}

/// Parses a trimmed, non-blank line of any form through a JSON value: the reader of every line
/// the fast one declines, and the one that words the errors.
fn parse_general(text: &str, now: Timestamp) -> Result<Line, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    match value {
        Value::Object(map) => parse_object(map, now),
        other => Err(format!("expected a JSON object, found {}", kind_name(&other))),
    }
}

/// Turns a serde_json error into a message without its "at line 1" tail (every line is line
/// 1 to the parser).
fn json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let head = text.rfind(" at line ").map_or(text.as_str(), |at| &text[..at]);
    format!("invalid JSON: {head} (column {})", error.column())
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Builds a line from a decoded JSON object (a JSONL line, or a row of a legacy database).
pub fn parse_object(map: Map<String, Value>, now: Timestamp) -> Result<Line, String> {
    if map.contains_key("_schema") {
        return Ok(Line::Header);
    }
    if map.get("_type").and_then(Value::as_str) == Some("memory") {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        return Ok(Line::Memory { key: text(map.get("key")), value: text(map.get("value")) });
    }
    if map.get("status").and_then(Value::as_str) == Some("tombstone") {
        let id = map.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
        return Ok(Line::Tombstone { id });
    }
    // One pass over the keys, keeping their order: set aside the embedded arrays, drop what
    // beads computes, check what the model reads, keep everything else as it came.
    let mut fields = Map::with_capacity(map.len());
    let (mut deps, mut comments, mut wisp) = (None, None, false);
    for (key, mut value) in map {
        match key.as_str() {
            "_type" => continue,
            "dependencies" => deps = Some(value),
            "comments" => comments = Some(value),
            "wisp" => wisp = value.as_bool() == Some(true),
            name if COMPUTED_KEYS.contains(&name) => {}
            name => {
                if let Some(kind) = modelled_kind(name) {
                    if value.is_null() {
                        continue;
                    }
                    check_value(name, kind, &mut value)?;
                } else {
                    normalise_extra_time(name, &mut value);
                }
                fields.insert(key, value);
            }
        }
    }
    if wisp {
        fields.insert("ephemeral".into(), Value::Bool(true));
    }
    if let Some(priority) = fields.get("priority").and_then(Value::as_i64)
        && !(0..=4).contains(&priority)
    {
        return Err(format!("priority must be between 0 and 4 (got {priority})"));
    }
    for key in ["status", "issue_type"] {
        if fields.get(key).and_then(Value::as_str) == Some("") {
            fields.shift_remove(key);
        }
    }
    let mut map = fields;
    let id = match map.get("id") {
        Some(Value::String(id)) if !id.trim().is_empty() => id.clone(),
        _ => return Err("missing \"id\"".into()),
    };
    // The id becomes a key and a directory name; refuse it here so the line is reported as
    // bad (and can be skipped) instead of failing the whole import later.
    crate::id::check_id(&id).map_err(|e| e.to_string())?;
    match map.get("title") {
        Some(Value::String(title)) => {
            crate::model::validate_title(title).map_err(|e| format!("title: {e}"))?;
        }
        _ => return Err(format!("{id}: missing \"title\"")),
    }
    let mut metadata = map.shift_remove("metadata");
    let fleet =
        split_fleet_fields(&mut metadata).map_err(|e| format!("{id}: metadata.fleet: {e}"))?;
    let mut issue: Issue =
        serde_json::from_value(Value::Object(map)).map_err(|e| format!("{id}: {e}"))?;
    issue.metadata = metadata;
    issue.fleet = fleet;
    fill_times(&mut issue, now);
    let deps = parse_deps(deps, &issue).map_err(|e| format!("{id}: {e}"))?;
    let comments = parse_comments(comments, &issue).map_err(|e| format!("{id}: {e}"))?;
    Ok(Line::Issue(Record { issue: Box::new(issue), deps, comments }))
}

/// Checks the type of a modelled key's value, and rewrites a timestamp in UTC so the model
/// reads one form.
fn check_value(key: &str, kind: Kind, value: &mut Value) -> Result<(), String> {
    let ok = match (kind, &*value) {
        (Kind::Text, Value::String(_)) | (Kind::Flag, Value::Bool(_)) | (Kind::Json, _) => true,
        (Kind::Integer, Value::Number(n)) => n.is_i64(),
        (Kind::Texts, Value::Array(items)) => items.iter().all(Value::is_string),
        (Kind::Time, Value::String(text)) => {
            let at =
                parse_time(text).ok_or_else(|| format!("{key}: invalid timestamp {text:?}"))?;
            *value = Value::String(at.to_string());
            true
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let wanted = match kind {
        Kind::Text | Kind::Time => "a string",
        Kind::Integer => "an integer",
        Kind::Flag => "true or false",
        Kind::Texts => "an array of strings",
        Kind::Json => "JSON",
    };
    Err(format!("{key}: expected {wanted}, found {}", kind_name(value)))
}

/// Rewrites a beads time field fleet keeps in `extra` in UTC, when it is one that parses.
fn normalise_extra_time(key: &str, value: &mut Value) {
    if EXTRA_TIME_KEYS.contains(&key)
        && let Value::String(text) = &*value
        && let Some(at) = parse_time(text)
    {
        *value = Value::String(at.to_string());
    }
}

/// Moves `metadata.fleet` into fleet's task fields; drops the metadata if nothing else was in
/// it.
fn split_fleet_fields(metadata: &mut Option<Value>) -> Result<FleetFields, String> {
    let Some(Value::Object(map)) = metadata else {
        return Ok(FleetFields::default());
    };
    let Some(fleet) = map.get("fleet") else {
        return Ok(FleetFields::default());
    };
    if !fleet.is_object() {
        return Ok(FleetFields::default());
    }
    let fields: FleetFields = serde_json::from_value(fleet.clone()).map_err(|e| e.to_string())?;
    map.shift_remove("fleet");
    if map.is_empty() {
        *metadata = None;
    }
    Ok(fields)
}

/// Go's zero time, which beads wrote for "never".
fn is_zero_time(at: Timestamp) -> bool {
    at.as_second() <= -62_135_596_800
}

/// The creation time `bd import` fills when it is missing, the update time defaulting to it,
/// and the closed_at a closed issue must have (max(created, updated) + 1 s).
fn fill_times(issue: &mut Issue, now: Timestamp) {
    if issue.created_at == Timestamp::UNIX_EPOCH || is_zero_time(issue.created_at) {
        issue.created_at = now;
    }
    if issue.updated_at == Timestamp::UNIX_EPOCH || is_zero_time(issue.updated_at) {
        issue.updated_at = issue.created_at;
    }
    if issue.status == Status::Closed && issue.closed_at.is_none() {
        let latest = issue.created_at.max(issue.updated_at);
        issue.closed_at = Some(latest + SignedDuration::from_secs(1));
    }
}

fn parse_deps(value: Option<Value>, issue: &Issue) -> Result<Vec<Dependency>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!("dependencies: expected an array, found {}", kind_name(&other)));
        }
    };
    let mut deps = Vec::with_capacity(items.len());
    for (at, item) in items.into_iter().enumerate() {
        let Value::Object(mut map) = item else {
            return Err(format!("dependencies[{at}]: expected an object"));
        };
        map.retain(|_, v| !v.is_null());
        match map.get("depends_on_id") {
            Some(Value::String(target)) if !target.is_empty() => {}
            _ => return Err(format!("dependencies[{at}]: missing \"depends_on_id\"")),
        }
        normalise_nested_time(&mut map, "created_at", issue.created_at)
            .map_err(|e| format!("dependencies[{at}]: {e}"))?;
        // beads keeps the edge metadata as a JSON string; accept a JSON object too.
        if let Some(meta) = map.get_mut("metadata")
            && !meta.is_string()
        {
            *meta = Value::String(meta.to_string());
        }
        let mut dep: Dependency = serde_json::from_value(Value::Object(map))
            .map_err(|e| format!("dependencies[{at}]: {e}"))?;
        dep.issue_id.clone_from(&issue.id);
        deps.push(dep);
    }
    Ok(deps)
}

fn parse_comments(value: Option<Value>, issue: &Issue) -> Result<Vec<Comment>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!("comments: expected an array, found {}", kind_name(&other)));
        }
    };
    let mut comments = Vec::with_capacity(items.len());
    for (at, item) in items.into_iter().enumerate() {
        let Value::Object(mut map) = item else {
            return Err(format!("comments[{at}]: expected an object"));
        };
        map.retain(|_, v| !v.is_null());
        normalise_nested_time(&mut map, "created_at", issue.created_at)
            .map_err(|e| format!("comments[{at}]: {e}"))?;
        let mut comment: Comment = serde_json::from_value(Value::Object(map))
            .map_err(|e| format!("comments[{at}]: {e}"))?;
        comment.issue_id.clone_from(&issue.id);
        comments.push(comment);
    }
    Ok(comments)
}

/// Rewrites a timestamp of an embedded object in UTC, or fills `default` when it is missing.
fn normalise_nested_time(
    map: &mut Map<String, Value>,
    key: &str,
    default: Timestamp,
) -> Result<(), String> {
    let at = match map.get(key) {
        None => default,
        Some(Value::String(text)) => {
            parse_time(text).ok_or_else(|| format!("{key}: invalid timestamp {text:?}"))?
        }
        Some(other) => return Err(format!("{key}: expected a string, found {}", kind_name(other))),
    };
    map.insert(key.to_string(), Value::String(at.to_string()));
    Ok(())
}

/// Parses the timestamp forms beads has written: RFC 3339 with any offset and precision, the
/// same with a space for `T`, Go's `time.String()` form (`… -0800 PST`), and SQLite's
/// `YYYY-MM-DD HH:MM:SS` without an offset (UTC).
pub fn parse_time(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if let Ok(at) = text.parse::<Timestamp>() {
        return Some(at);
    }
    let with_t = text.replacen(' ', "T", 1);
    if let Ok(at) = with_t.parse::<Timestamp>() {
        return Some(at);
    }
    // Go's time.String(): "2025-11-02 21:58:07.295058 -0800 PST" (the zone name is noise).
    let mut words: Vec<&str> = text.split(' ').collect();
    if words.len() == 4 {
        words.pop();
    }
    if words.len() == 3 {
        let joined = format!("{}T{}{}", words[0], words[1], words[2]);
        if let Ok(at) = joined.parse::<Timestamp>() {
            return Some(at);
        }
        let zoned = jiff::fmt::strtime::parse("%Y-%m-%d %H:%M:%S%.f %z", words.join(" "))
            .and_then(|t| t.to_timestamp());
        if let Ok(at) = zoned {
            return Some(at);
        }
    }
    // No offset at all: SQLite's CURRENT_TIMESTAMP, which is UTC.
    with_t
        .parse::<jiff::civil::DateTime>()
        .ok()
        .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp())
}

/// The counts and parent `bd export` adds to every line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub dependency_count: usize,
    pub dependent_count: usize,
    pub comment_count: usize,
    pub parent: Option<String>,
}

/// Builds the JSON object of an issue line in beads' key order.
pub fn record_value(record: &Record, counts: &Counts) -> Map<String, Value> {
    let Value::Object(mut fields) =
        serde_json::to_value(&record.issue).expect("an issue serialises to an object")
    else {
        unreachable!("an issue serialises to an object");
    };
    fields.shift_remove("fleet");
    let mut out = Map::with_capacity(fields.len() + 8);
    out.insert("_type".into(), Value::from("issue"));
    for key in BEADS_ORDER {
        match key {
            "metadata" => {
                if let Some(metadata) = export_metadata(&record.issue) {
                    out.insert(key.into(), metadata);
                }
                fields.shift_remove(key);
            }
            "dependencies" if !record.deps.is_empty() => {
                let deps = serde_json::to_value(&record.deps).expect("dependencies serialise");
                out.insert(key.into(), deps);
            }
            "comments" if !record.comments.is_empty() => {
                let comments = serde_json::to_value(&record.comments).expect("comments serialise");
                out.insert(key.into(), comments);
            }
            _ => {
                if let Some(value) = fields.shift_remove(key) {
                    out.insert(key.into(), value);
                }
            }
        }
    }
    for (key, value) in fields {
        if !COMPUTED_KEYS.contains(&key.as_str()) && key != "_type" {
            out.insert(key, value);
        }
    }
    out.insert("dependency_count".into(), Value::from(counts.dependency_count));
    out.insert("dependent_count".into(), Value::from(counts.dependent_count));
    out.insert("comment_count".into(), Value::from(counts.comment_count));
    if let Some(parent) = &counts.parent {
        out.insert("parent".into(), Value::from(parent.as_str()));
    }
    out
}

/// The issue's metadata with fleet's task fields under `fleet`, or `None` when both are empty.
fn export_metadata(issue: &Issue) -> Option<Value> {
    if issue.fleet.is_empty() {
        return issue.metadata.clone();
    }
    let fleet = serde_json::to_value(&issue.fleet).expect("fleet fields serialise");
    match &issue.metadata {
        None => Some(Value::Object(Map::from_iter([("fleet".to_string(), fleet)]))),
        Some(Value::Object(metadata)) => {
            let mut metadata = metadata.clone();
            metadata.insert("fleet".into(), fleet);
            Some(Value::Object(metadata))
        }
        // Metadata that is not an object has no place for the fleet fields; beads data wins.
        Some(other) => Some(other.clone()),
    }
}

/// Appends `value` to `out` as one compact line the way Go's encoding/json writes it.
pub fn write_line(out: &mut Vec<u8>, value: &Value) {
    let mut serializer = serde_json::Serializer::with_formatter(&mut *out, GoFormatter);
    value.serialize(&mut serializer).expect("writing JSON to memory cannot fail");
    out.push(b'\n');
}

/// A memory line: `{"_type":"memory","key":…,"value":…}`.
pub fn memory_value(key: &str, value: &str) -> Value {
    let mut map = Map::new();
    map.insert("_type".into(), Value::from("memory"));
    map.insert("key".into(), Value::from(key));
    map.insert("value".into(), Value::from(value));
    Value::Object(map)
}

/// Compact JSON with Go's HTML-safe escaping (`<`, `>`, `&` as `\u003c`…) and of the line
/// and paragraph separators, so exports match what `bd export` writes byte for byte.
struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (at, ch) in fragment.char_indices() {
            let escape = match ch {
                '<' => "\\u003c",
                '>' => "\\u003e",
                '&' => "\\u0026",
                '\u{2028}' => "\\u2028",
                '\u{2029}' => "\\u2029",
                _ => continue,
            };
            writer.write_all(&fragment.as_bytes()[start..at])?;
            writer.write_all(escape.as_bytes())?;
            start = at + ch.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn issue_of(line: &str) -> Record {
        match parse_line(line, now()).unwrap() {
            Line::Issue(record) => record,
            other => panic!("not an issue: {other:?}"),
        }
    }

    #[test]
    fn times_of_every_era_parse_to_utc() {
        let utc = |s: &str| parse_time(s).unwrap().to_string();
        assert_eq!(utc("2025-11-02T21:58:07.295058-08:00"), "2025-11-03T05:58:07.295058Z");
        assert_eq!(utc("2025-11-02 21:58:07.295058-08:00"), "2025-11-03T05:58:07.295058Z");
        assert_eq!(utc("2025-11-02 21:58:07.295058 -0800 PST"), "2025-11-03T05:58:07.295058Z");
        assert_eq!(utc("2025-11-02 21:58:07"), "2025-11-02T21:58:07Z");
        assert!(parse_time("yesterday").is_none());
    }

    #[test]
    fn special_lines_are_recognised() {
        assert_eq!(parse_line("  ", now()).unwrap(), Line::Blank);
        assert_eq!(parse_line(r#"{"_schema":"beads-jsonl/1"}"#, now()).unwrap(), Line::Header);
        assert_eq!(
            parse_line(r#"{"_type":"memory","key":"k","value":"v"}"#, now()).unwrap(),
            Line::Memory { key: "k".into(), value: "v".into() }
        );
        assert_eq!(
            parse_line(r#"{"id":"bd-1","title":"x","status":"tombstone"}"#, now()).unwrap(),
            Line::Tombstone { id: "bd-1".into() }
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = |line: &str| parse_line(line, now()).unwrap_err();
        assert!(err("{\"id\":").starts_with("invalid JSON: EOF while parsing"));
        assert_eq!(err("[1]"), "expected a JSON object, found an array");
        assert_eq!(err(r#"{"title":"x"}"#), "missing \"id\"");
        assert_eq!(err(r#"{"id":"a-1"}"#), "a-1: missing \"title\"");
        assert!(
            err(r#"{"id":"../x","title":"x"}"#).starts_with(
                "invalid issue id \"../x\": '/' is not allowed; ids may contain only letters"
            ),
            "an id outside the grammar is a bad line"
        );
        assert_eq!(
            err(r#"{"id":"a-1","title":"x","priority":"high"}"#),
            "priority: expected an integer, found a string"
        );
        assert_eq!(
            err(r#"{"id":"a-1","title":"x","priority":9}"#),
            "priority must be between 0 and 4 (got 9)"
        );
        assert_eq!(
            err(r#"{"id":"a-1","title":"x","created_at":"soon"}"#),
            "created_at: invalid timestamp \"soon\""
        );
    }

    #[test]
    fn legacy_shapes_are_accepted() {
        let record = issue_of(
            r#"{"id":"bd-1","title":"t","status":"closed","wisp":true,"created_at":"2025-11-02T21:58:07-08:00","updated_at":"2025-11-02T22:00:00-08:00","comments":[{"id":7,"author":"a","text":"hi","created_at":"2025-11-02T21:59:00-08:00"}],"dependencies":[{"depends_on_id":"bd-2","type":"blocks","created_at":"2025-11-02T21:58:07-08:00"}],"rig":"x","dependency_count":1}"#,
        );
        assert!(record.issue.ephemeral);
        assert_eq!(record.issue.closed_at.unwrap().to_string(), "2025-11-03T06:00:01Z");
        assert_eq!(record.comments[0].id, crate::model::CommentId::Number(7));
        assert_eq!(record.comments[0].issue_id, "bd-1");
        assert_eq!(record.deps[0].issue_id, "bd-1");
        assert_eq!(record.issue.extra.keys().collect::<Vec<_>>(), ["rig"]);
    }

    #[test]
    fn fleet_fields_travel_in_metadata() {
        let record = issue_of(
            r#"{"id":"a-1","title":"t","metadata":{"fleet":{"cwd":"/w","coder":"codex"}}}"#,
        );
        assert_eq!(record.issue.fleet.cwd, "/w");
        assert_eq!(record.issue.metadata, None);
        let value = record_value(&record, &Counts::default());
        assert_eq!(value["metadata"], serde_json::json!({"fleet":{"cwd":"/w","coder":"codex"}}));
    }

    #[test]
    fn writing_uses_beads_order_and_go_escaping() {
        let record = issue_of(
            r#"{"rig":"r","title":"a<b & c>","id":"a-1","priority":2,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","pinned":true,"labels":["z","a"]}"#,
        );
        let mut out = Vec::new();
        write_line(&mut out, &Value::Object(record_value(&record, &Counts::default())));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"_type\":\"issue\",\"id\":\"a-1\",\"title\":\"a\\u003cb \\u0026 c\\u003e\",\"status\":\"open\",\"priority\":2,\"issue_type\":\"task\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\",\"labels\":[\"z\",\"a\"],\"pinned\":true,\"rig\":\"r\",\"dependency_count\":0,\"dependent_count\":0,\"comment_count\":0}\n"
        );
    }
}
