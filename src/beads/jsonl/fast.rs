//! The fast reader of an ordinary issue line.
//!
//! Nearly every line of a beads export is a plain issue: known keys holding values of the
//! right type, embedded edges and comments, a few keys fleet does not model. This reader
//! deserializes such a line straight into the model. It builds no `Value` tree for the line,
//! hashes no keys, and makes no second pass over them.
//!
//! It declines (returns `None`) every line it does not fully understand:
//! - invalid JSON, or JSON that is not an object;
//! - a value of another type than the key's, or out of its range;
//! - a key given twice;
//! - header, memory and tombstone lines, the legacy `wisp` alias, a top-level `fleet` key;
//! - embedded edges or comments of unusual form, or with keys beyond the known ones;
//! - an id or title the import refuses, broken fleet fields in the metadata.
//!
//! The general reader ([`super::parse_general`]) then reads the line. So rare forms and every
//! error message keep one implementation. For every line this reader accepts, both readers give
//! the same record; the tests below hold them to that.

use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer as _, MapAccess, Visitor};
use serde_json::Value;

use super::{
    COMPUTED_KEYS, Record, fill_times, normalise_extra_time, parse_time, split_fleet_fields,
};
use crate::model::{Comment, CommentId, Dependency, Issue, Status, default_dep_type};

/// Reads `text` (one trimmed, non-blank line) if it is an ordinary issue line.
pub(super) fn parse_issue_line(text: &str, now: Timestamp) -> Option<Record> {
    let mut reader = serde_json::Deserializer::from_str(text);
    let draft = reader.deserialize_map(LineVisitor).ok()?;
    reader.end().ok()?;
    draft.finish(now)
}

/// An issue as read from its line, before the checks that need the whole line.
struct Draft {
    issue: Box<Issue>,
    deps: Vec<DepLine>,
    comments: Vec<CommentLine>,
    /// One bit per key read (see [`Draft::read`]), to decline a key given twice.
    seen: u64,
}

/// An issue with every field at the default its deserializer gives a missing key, so a key
/// absent from a line means here what it means to the general reader.
fn blank_issue() -> Box<Issue> {
    static BLANK: OnceLock<Issue> = OnceLock::new();
    BLANK
        .get_or_init(|| {
            serde_json::from_str(r#"{"id":"","title":""}"#).expect("an issue with id and title")
        })
        .clone()
        .into()
}

/// The error that makes the reader decline; its text is never shown.
fn decline<E: de::Error>() -> E {
    E::custom("not an ordinary issue line")
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Draft;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an issue object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Draft, A::Error> {
        let mut draft =
            Draft { issue: blank_issue(), deps: Vec::new(), comments: Vec::new(), seen: 0 };
        while let Some(key) = map.next_key::<KeyText<'de>>()? {
            draft.read(key.as_str(), &mut map)?;
        }
        Ok(draft)
    }
}

/// A key as it appears in the line: borrowed unless it had escapes.
enum KeyText<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl KeyText<'_> {
    fn as_str(&self) -> &str {
        match self {
            KeyText::Borrowed(text) => text,
            KeyText::Owned(text) => text,
        }
    }
}

impl<'de> Deserialize<'de> for KeyText<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyText<'de>;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(KeyText::Borrowed(text))
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(KeyText::Owned(text.to_owned()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

impl Draft {
    /// Reads the value of `key` into the draft.
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let issue = &mut self.issue;
        let bit = match key {
            "id" => text(map, &mut issue.id, 0)?,
            "title" => text(map, &mut issue.title, 1)?,
            "description" => text(map, &mut issue.description, 2)?,
            "design" => text(map, &mut issue.design, 3)?,
            "acceptance_criteria" => text(map, &mut issue.acceptance_criteria, 4)?,
            "notes" => text(map, &mut issue.notes, 5)?,
            "spec_id" => text(map, &mut issue.spec_id, 6)?,
            "assignee" => text(map, &mut issue.assignee, 7)?,
            "owner" => text(map, &mut issue.owner, 8)?,
            "created_by" => text(map, &mut issue.created_by, 9)?,
            "close_reason" => text(map, &mut issue.close_reason, 10)?,
            "closed_by_session" => text(map, &mut issue.closed_by_session, 11)?,
            "external_ref" => text(map, &mut issue.external_ref, 12)?,
            "source_system" => text(map, &mut issue.source_system, 13)?,
            "status" => {
                match map.next_value::<Option<String>>()?.as_deref() {
                    // An empty status reads as the default, as in the general reader.
                    None | Some("") => {}
                    Some("tombstone") => return Err(decline()),
                    Some(name) => issue.status = Status::from_name(name),
                }
                14
            }
            "issue_type" => {
                if let Some(name) = map.next_value::<Option<String>>()?
                    && !name.is_empty()
                {
                    issue.issue_type = name;
                }
                15
            }
            "priority" => {
                if let Some(priority) = map.next_value::<Option<i64>>()? {
                    issue.priority =
                        u8::try_from(priority).ok().filter(|p| *p <= 4).ok_or_else(decline)?;
                }
                16
            }
            "estimated_minutes" => {
                if let Some(minutes) = map.next_value::<Option<i64>>()? {
                    issue.estimated_minutes = Some(minutes);
                }
                17
            }
            "created_at" => time(map, &mut issue.created_at, 18)?,
            "updated_at" => time(map, &mut issue.updated_at, 19)?,
            "started_at" => optional_time(map, &mut issue.started_at, 20)?,
            "closed_at" => optional_time(map, &mut issue.closed_at, 21)?,
            "due_at" => optional_time(map, &mut issue.due_at, 22)?,
            "defer_until" => optional_time(map, &mut issue.defer_until, 23)?,
            "metadata" => {
                if let Some(metadata) = map.next_value::<Option<Value>>()? {
                    issue.metadata = Some(metadata);
                }
                24
            }
            "labels" => {
                if let Some(labels) = map.next_value::<Option<Vec<String>>>()? {
                    issue.labels = labels;
                }
                25
            }
            "ephemeral" => flag(map, &mut issue.ephemeral, 26)?,
            "pinned" => flag(map, &mut issue.pinned, 27)?,
            "is_template" => flag(map, &mut issue.is_template, 28)?,
            "dependencies" => {
                let deps = map.next_value::<Option<Vec<ObjectOnly<DepLine>>>>()?;
                self.deps = deps.unwrap_or_default().into_iter().map(|dep| dep.0).collect();
                29
            }
            "comments" => {
                let comments = map.next_value::<Option<Vec<ObjectOnly<CommentLine>>>>()?;
                self.comments = comments.unwrap_or_default().into_iter().map(|c| c.0).collect();
                30
            }
            "_type" => {
                if map.next_value::<Value>()? == "memory" {
                    return Err(decline());
                }
                31
            }
            "_schema" | "wisp" | "fleet" => return Err(decline()),
            computed if COMPUTED_KEYS.contains(&computed) => {
                // Read, not skipped: skipping checks less than the general reader's parse
                // (number range, escapes, depth), and a line it refuses must be declined.
                map.next_value::<Value>()?;
                return Ok(());
            }
            other => {
                let mut value = map.next_value::<Value>()?;
                normalise_extra_time(other, &mut value);
                if issue.extra.insert(other.to_owned(), value).is_some() {
                    return Err(decline());
                }
                return Ok(());
            }
        };
        if self.seen & (1 << bit) != 0 {
            return Err(decline());
        }
        self.seen |= 1 << bit;
        Ok(())
    }

    /// The record, once the checks that need the whole line pass.
    fn finish(self, now: Timestamp) -> Option<Record> {
        let Draft { mut issue, deps, comments, .. } = self;
        // An empty or blank id is one `check_id` refuses too.
        crate::id::check_id(&issue.id).ok()?;
        crate::model::validate_title(&issue.title).ok()?;
        issue.fleet = split_fleet_fields(&mut issue.metadata).ok()?;
        fill_times(&mut issue, now);
        let deps =
            deps.into_iter().map(|dep| dep.into_dependency(&issue)).collect::<Option<_>>()?;
        let comments =
            comments.into_iter().map(|c| c.into_comment(&issue)).collect::<Option<_>>()?;
        Some(Record { issue, deps, comments })
    }
}

/// Reads a text field; `null` leaves it at its default. Returns the key's bit.
fn text<'de, A: MapAccess<'de>>(map: &mut A, field: &mut String, bit: u8) -> Result<u8, A::Error> {
    if let Some(value) = map.next_value::<Option<String>>()? {
        *field = value;
    }
    Ok(bit)
}

fn flag<'de, A: MapAccess<'de>>(map: &mut A, field: &mut bool, bit: u8) -> Result<u8, A::Error> {
    if let Some(value) = map.next_value::<Option<bool>>()? {
        *field = value;
    }
    Ok(bit)
}

fn time<'de, A: MapAccess<'de>>(
    map: &mut A,
    field: &mut Timestamp,
    bit: u8,
) -> Result<u8, A::Error> {
    if let Some(at) = read_time(map)? {
        *field = at;
    }
    Ok(bit)
}

fn optional_time<'de, A: MapAccess<'de>>(
    map: &mut A,
    field: &mut Option<Timestamp>,
    bit: u8,
) -> Result<u8, A::Error> {
    if let Some(at) = read_time(map)? {
        *field = Some(at);
    }
    Ok(bit)
}

/// A timestamp in any form beads wrote; `None` for `null`.
fn read_time<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Timestamp>, A::Error> {
    match map.next_value::<Option<&'de str>>() {
        Ok(None) => Ok(None),
        Ok(Some(text)) => parse_time(text).map(Some).ok_or_else(decline),
        // A string with escapes cannot be borrowed; it is no timestamp anyway.
        Err(_) => Err(decline()),
    }
}

/// A value that must be a JSON object; an array is declined rather than read by position.
struct ObjectOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;
            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor(PhantomData)).map(ObjectOnly)
    }
}

/// An embedded edge as the line has it. A key beyond these (which the general reader checks
/// as JSON and ignores) or a key given twice is an error, which declines the line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DepLine {
    /// Only its type is checked: the edge belongs to the line's issue.
    #[allow(dead_code)]
    issue_id: Option<String>,
    depends_on_id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    created_at: Option<String>,
    created_by: Option<String>,
    /// A JSON document kept as a string; an object (which the general reader accepts) declines.
    metadata: Option<String>,
    thread_id: Option<String>,
}

impl DepLine {
    fn into_dependency(self, issue: &Issue) -> Option<Dependency> {
        Some(Dependency {
            issue_id: issue.id.clone(),
            depends_on_id: self.depends_on_id.filter(|target| !target.is_empty())?,
            kind: self.kind.unwrap_or_else(default_dep_type),
            created_at: nested_time(self.created_at, issue)?,
            created_by: self.created_by.unwrap_or_default(),
            metadata: self.metadata.unwrap_or_default(),
            thread_id: self.thread_id.unwrap_or_default(),
        })
    }
}

/// An embedded comment as the line has it; other keys decline the line, as for edges.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommentLine {
    id: Option<Value>,
    /// Only its type is checked: the comment belongs to the line's issue.
    #[allow(dead_code)]
    issue_id: Option<String>,
    author: Option<String>,
    text: Option<String>,
    created_at: Option<String>,
}

impl CommentLine {
    fn into_comment(self, issue: &Issue) -> Option<Comment> {
        let id = match self.id? {
            Value::String(text) => CommentId::Text(text),
            Value::Number(number) => CommentId::Number(number.as_i64()?),
            _ => return None,
        };
        Some(Comment {
            id,
            issue_id: issue.id.clone(),
            author: self.author.unwrap_or_default(),
            text: self.text?,
            created_at: nested_time(self.created_at, issue)?,
        })
    }
}

/// The time of an embedded edge or comment: the issue's creation when it has none.
fn nested_time(text: Option<String>, issue: &Issue) -> Option<Timestamp> {
    match text {
        None => Some(issue.created_at),
        Some(text) => parse_time(&text),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::super::{Line, parse_general, parse_line};
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// What the general reader makes of `text`.
    fn general(text: &str) -> Result<Line, String> {
        parse_general(text.trim(), now())
    }

    /// Asserts that the fast reader takes `text` and agrees with the general one.
    fn assert_taken_alike(text: &str) {
        let fast = parse_issue_line(text.trim(), now())
            .unwrap_or_else(|| panic!("the fast reader declined {text}"));
        assert_eq!(Ok(Line::Issue(fast)), general(text), "{text}");
    }

    #[test]
    fn every_fixture_issue_is_read_fast_and_alike() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
        let mut taken = 0;
        for name in
            ["beads-dolt-era-sample.jsonl", "beads-git-era-sample.jsonl", "fleet-own-issues.jsonl"]
        {
            let text = std::fs::read_to_string(format!("{fixtures}/{name}")).unwrap();
            for line in text.lines().filter(|line| !line.trim().is_empty()) {
                match general(line) {
                    Ok(Line::Issue(_)) if !line.contains("\"wisp\"") => {
                        assert_taken_alike(line);
                        taken += 1;
                    }
                    _ => assert_eq!(parse_line(line, now()), general(line)),
                }
            }
        }
        assert!(taken >= 60, "only {taken} fixture issues read");
    }

    #[test]
    fn an_ordinary_line_with_every_field_is_read_alike() {
        let line = concat!(
            r#"{"_type":"issue","id":"bd-7.1","title":"Tidy \"quotes\" \u00e9","#,
            r#""description":"d","design":"g","acceptance_criteria":"a","notes":"n","#,
            r#""spec_id":"s","status":"in_progress","priority":0,"issue_type":"bug","#,
            r#""assignee":"me","owner":"o","estimated_minutes":30,"#,
            r#""created_at":"2025-11-02T21:58:07.295058-08:00","created_by":"c","#,
            r#""updated_at":"2025-11-02 22:00:00","started_at":"2025-11-03T00:00:00Z","#,
            r#""closed_at":null,"close_reason":"","closed_by_session":"x","#,
            r#""due_at":"2025-12-01T00:00:00+01:00","defer_until":"2025-11-20T00:00:00Z","#,
            r#""external_ref":"gh-1","source_system":"gh","#,
            r#""metadata":{"k":[1,2],"fleet":{"cwd":"/w","coder":"codex"}},"#,
            r#""labels":["b","a"],"ephemeral":true,"pinned":false,"is_template":true,"#,
            r#""compacted_at":"2025-11-02 21:58:07 -0800 PST","rig":{"deep":[null,1.5]},"#,
            r#""dependencies":[{"issue_id":"bd-7.1","depends_on_id":"bd-7","type":"parent-child","#,
            r#""created_at":"2025-11-02T21:58:07Z","created_by":"c","#,
            r#""metadata":"{\"gate\":\"any-children\"}","thread_id":"t"},"#,
            r#"{"depends_on_id":"other-1","created_by":null}],"#,
            r#""comments":[{"id":7,"author":"a","text":"hi","created_at":"2025-11-02T21:59:00-08:00"},"#,
            r#"{"id":"0190-uuid","text":"there"}],"#,
            r#""dependency_count":2,"dependent_count":0,"comment_count":2,"parent":"bd-7"}"#
        );
        assert_taken_alike(line);
    }

    /// Every key the general reader models is one this reader reads into its field (not into
    /// `extra`), so a field added to the model and to `modelled_kind` alone fails here.
    #[test]
    fn every_modelled_key_is_read_into_the_model() {
        use super::super::{BEADS_ORDER, Kind, modelled_kind};
        for key in BEADS_ORDER.iter().filter(|key| !matches!(**key, "id" | "title")) {
            let Some(kind) = modelled_kind(key) else { continue };
            let value = match kind {
                Kind::Text => json!("x"),
                Kind::Integer => json!(1),
                Kind::Flag => json!(true),
                Kind::Time => json!("2025-01-01T00:00:00Z"),
                Kind::Texts => json!(["a"]),
                Kind::Json => json!({"k": 1}),
            };
            let line = format!(r#"{{"id":"a-1","title":"t",{}:{value}}}"#, Value::from(*key));
            let record =
                parse_issue_line(&line, now()).unwrap_or_else(|| panic!("declined {line}"));
            assert!(record.issue.extra.is_empty(), "{key} went to extra");
            assert_taken_alike(&line);
        }
    }

    #[test]
    fn unusual_lines_are_left_to_the_general_reader() {
        for line in [
            r#"{"id":"a-1","title":"t","wisp":true}"#,
            r#"{"id":"a-1","title":"t","status":"tombstone"}"#,
            r#"{"_type":"memory","key":"k","value":"v"}"#,
            r#"{"_schema":"beads-jsonl/1"}"#,
            r#"{"id":"a-1","title":"t","fleet":{"cwd":"/w"}}"#,
            r#"{"id":"a-1","title":"t","title":"u"}"#,
            r#"{"id":"a-1","title":"t","rig":1,"rig":2}"#,
            r#"{"id":"a-1","title":"t","priority":7}"#,
            r#"{"id":"a-1","title":"t","priority":1.0}"#,
            r#"{"id":"a-1","title":"t","created_at":"soon"}"#,
            r#"{"id":"a-1","title":"t","labels":["x",null]}"#,
            r#"{"id":"a-1","title":"t","dependencies":[["a-2"]]}"#,
            r#"{"id":"a-1","title":"t","dependencies":[{"depends_on_id":"a-2","metadata":{"g":1}}]}"#,
            r#"{"id":"a-1","title":"t","comments":[{"id":1.5,"text":"x"}]}"#,
            r#"{"id":"a-1","title":"t","comments":[{"id":1}]}"#,
            r#"{"id":"a-1","title":"t","metadata":{"fleet":{"cwd":5}}}"#,
            r#"{"id":"../a","title":"t"}"#,
            r#"{"id":" ","title":"t"}"#,
            r#"{"id":"a-1","title":"  "}"#,
            r#"{"id":"a-1"}"#,
            r#"{"id":"a-1","title":"t"} x"#,
            r#"[1]"#,
            // Values the general reader's parse refuses, under keys it then ignores.
            r#"{"id":"a-1","title":"t","dependency_count":1e400}"#,
            r#"{"id":"a-1","title":"t","parent":"\udc00"}"#,
            r#"{"id":"a-1","title":"t","dependencies":[{"depends_on_id":"a-2","x":1e999}]}"#,
            r#"{"id":"a-1","title":"t","comments":[{"id":1,"text":"x","x":"\ud800"}]}"#,
        ] {
            assert_eq!(parse_issue_line(line, now()), None, "{line}");
            assert_eq!(parse_line(line, now()), general(line), "{line}");
        }
        let deep = format!(
            r#"{{"id":"a-1","title":"t","comment_count":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(parse_issue_line(&deep, now()), None);
        assert!(parse_line(&deep, now()).unwrap_err().contains("recursion limit"));
    }

    fn one_of(texts: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
        prop::sample::select(texts).prop_map(Value::from)
    }

    /// Times in every form beads wrote, and some that are none.
    fn any_time() -> impl Strategy<Value = Value> + Clone {
        one_of(&[
            "2025-11-02T21:58:07-08:00",
            "2025-11-02T21:58:07.295058Z",
            "2025-11-02 21:58:07",
            "2025-11-02 21:58:07.295058 -0800 PST",
            "1970-01-01T00:00:00Z",
            "0001-01-01T00:00:00Z",
            " 2025-11-02T21:58:07Z",
            "2025-11-02T21:58:07Z\n",
            "soon",
            "",
        ])
    }

    /// A value of any JSON type.
    fn any_value() -> impl Strategy<Value = Value> + Clone {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..9).prop_map(Value::from),
            Just(json!(1.5)),
            Just(json!(u64::MAX)),
            one_of(&["", "open", "a-2", "x\"y", "tombstone"]),
            any_time(),
        ];
        leaf.prop_recursive(2, 8, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::vec((one_of(&["a", "fleet", "cwd"]), inner), 0..3)
                    .prop_map(object),
            ]
        })
    }

    fn object(pairs: Vec<(Value, Value)>) -> Value {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.as_str().unwrap().to_owned(), v)).collect())
    }

    /// An object with the keys of `always` and some of `sometimes`, each with a value from
    /// `value`.
    fn object_of(
        always: &'static [&'static str],
        sometimes: &'static [&'static str],
        value: impl Fn(&'static str) -> BoxedStrategy<Value>,
    ) -> impl Strategy<Value = Value> {
        let pairs = |keys: &[&'static str]| -> Vec<_> {
            keys.iter().map(|key| (Just(Value::from(*key)), value(key))).collect()
        };
        let some = prop::sample::subsequence(pairs(sometimes), 0..=sometimes.len());
        (pairs(always), some.prop_flat_map(|pairs| pairs)).prop_map(|(mut always, sometimes)| {
            always.extend(sometimes);
            object(always)
        })
    }

    /// Mostly the kind of value `key` wants, sometimes anything.
    fn value_for(key: &'static str) -> BoxedStrategy<Value> {
        let fitting: BoxedStrategy<Value> = match key {
            "status" => one_of(&["open", "closed", "", "review", "closed", "tombstone"]).boxed(),
            "priority" | "estimated_minutes" => (-1i64..7).prop_map(Value::from).boxed(),
            "wisp" => any::<bool>().prop_map(Value::from).boxed(),
            "issue_type" => one_of(&["", "bug"]).boxed(),
            "title" | "assignee" | "created_by" | "depends_on_id" | "type" | "text" | "author"
            | "thread_id" | "issue_id" => one_of(&["", "a-2", "x\"y", "  "]).boxed(),
            "created_at" | "closed_at" | "compacted_at" => any_time().boxed(),
            "labels" => {
                prop::collection::vec(one_of(&["b", "a"]), 0..3).prop_map(Value::from).boxed()
            }
            "pinned" => any::<bool>().prop_map(Value::from).boxed(),
            "_type" => one_of(&["issue", "memory"]).boxed(),
            "metadata" => prop_oneof![
                Just(json!({})),
                Just(json!({"fleet": {"cwd": "/w"}})),
                Just(json!({"k": 1, "fleet": {"coder": "codex"}})),
                Just(json!({"fleet": 5})),
                Just(json!("{\"gate\":\"any-children\"}")),
            ]
            .boxed(),
            "id" => prop_oneof![(-2i64..3).prop_map(Value::from), one_of(&["c-1", ""])].boxed(),
            "dependencies" => prop::collection::vec(
                object_of(
                    &["depends_on_id"],
                    &["type", "created_at", "created_by", "metadata", "issue_id", "thread_id"],
                    value_for,
                ),
                0..3,
            )
            .prop_map(Value::from)
            .boxed(),
            "comments" => prop::collection::vec(
                object_of(&["id", "text"], &["author", "created_at", "issue_id"], value_for),
                0..3,
            )
            .prop_map(Value::from)
            .boxed(),
            _ => any_value().boxed(),
        };
        prop_oneof![12 => fitting, 1 => any_value()].boxed()
    }

    /// A line's keys: known ones, computed ones and strangers, in any order, sometimes twice.
    fn any_line() -> impl Strategy<Value = String> {
        let key = prop::sample::select(
            &[
                "title",
                "status",
                "priority",
                "issue_type",
                "assignee",
                "created_at",
                "closed_at",
                "estimated_minutes",
                "labels",
                "metadata",
                "pinned",
                "dependencies",
                "comments",
                "compacted_at",
                "comment_count",
                "_type",
                "wisp",
                "rig",
            ][..],
        );
        prop::collection::vec(key.prop_flat_map(|key| (Just(key), value_for(key))), 0..8).prop_map(
            |pairs| {
                let mut text = String::from(r#"{"id":"a-1","title":"t""#);
                for (key, value) in pairs {
                    text.push_str(&format!(",{}:{value}", Value::from(key)));
                }
                text.push('}');
                text
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn both_readers_agree_on_any_line(line in any_line()) {
            prop_assert_eq!(parse_line(&line, now()), general(&line));
        }
    }
}
