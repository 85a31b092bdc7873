//! Output for both personalities: data on stdout, narration and warnings on stderr, through
//! one writer; and the small formatting pieces (priority badges, issue lines, control-character
//! escaping) that several commands share.
//!
//! [`Output`] knows the [`Mode`], `--json` and `--quiet`. The two modes differ only in how a
//! `--json` value is shaped:
//!
//! - fleet: the value as it serialises, fields in declaration order.
//! - bd (spec/beads.md §7): an **object** gets an extra `"schema_version": 1` and comes out
//!   with its keys sorted (bd re-marshals it through a map); an **array** is written bare, its
//!   elements in field order. With `BD_JSON_ENVELOPE=1` every payload is wrapped instead:
//!   `{"data": …, "schema_version": 1}`.
//!
//! The layout is the same in both modes: pretty (a two-space indent, as beads prints) on a
//! terminal, with `--pretty` or with `FLEET_JSON_PRETTY=1`; compact (one line, no spaces)
//! otherwise — the reader of a pipe is mostly an agent, which pays for every indent in tokens
//! (`bd ready --json` of 20 issues: 3,439 tokens indented, 2,519 compact; README.md). Field
//! names, types and order are the same either way: whitespace is not part of the contract.
//! JSON Lines streams (`fleet run --json`, `fleet log --json`) are one compact object a line
//! regardless.
//!
//! A closed stdout (`fleet list | head`) is not an error: output stops quietly; nor is a closed
//! stderr ([`write_stderr`]). Nothing here panics on a failed write. Human text is
//! escaped on the way out (see [`printable_block`]).

use std::io::Write;

use serde::Serialize;
use serde_json::{Map, Value};

pub use super::printable::{printable, printable_block};
use super::style::Styled;
use crate::model::{Issue, Status};

/// The version of bd's `--json` shapes that fleet writes.
pub const SCHEMA_VERSION: u64 = 1;

/// Whose conventions the output and the errors follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `fleet …`: fleet's JSON shapes and `error:`/`hint:` lines.
    Fleet,
    /// `bd …` and `fleet bd …`: beads' JSON shapes and `Error:` lines.
    Bd,
}

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub mode: Mode,
    pub json: bool,
    pub quiet: bool,
    /// Human text on stdout is coloured (`--color`, see [`super::style`]); never for bd.
    pub color: bool,
    /// bd's `BD_JSON_ENVELOPE`: wrap every `--json` payload in `{"data": …}`.
    envelope: bool,
    /// `--json` is indented (see the module documentation); else one compact line.
    pub pretty: bool,
    /// `--terse`: the views agents read most (`ready`, `list`, `show`) in their short text form.
    pub terse: bool,
}

impl Output {
    pub fn new(mode: Mode, json: bool, quiet: bool) -> Output {
        let envelope = mode == Mode::Bd
            && std::env::var("BD_JSON_ENVELOPE")
                .is_ok_and(|v| crate::settings::parse_bool(&v) == Some(true));
        Output { mode, json, quiet, color: false, envelope, pretty: true, terse: false }
    }

    /// The same output with `--json` indented or compact, and human text terse or not.
    pub fn with_layout(self, pretty: bool, terse: bool) -> Output {
        Output { pretty, terse, ..self }
    }

    /// The same output, coloured or not.
    pub fn with_color(self, color: bool) -> Output {
        Output { color, ..self }
    }

    /// The same output with `--json` switched on as well (bd's `--format json`).
    pub fn with_json(self, json: bool) -> Output {
        Output { json: self.json || json, ..self }
    }

    /// Prints `value` as the mode's JSON with `--json`, else the text `human` builds.
    pub fn emit<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> String) {
        if !self.json {
            write_block(&human());
        } else if self.mode == Mode::Bd {
            write_json(&self.bd_json(value));
        } else {
            write_json(&json_bytes(value, self.pretty));
        }
    }

    /// [`Output::emit`] for human text with colour: painted when [`Output::color`] is on.
    pub fn emit_styled<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> Styled) {
        if self.json {
            self.emit(value, String::new);
        } else {
            self.text_styled(&human());
        }
    }

    /// Prints styled human text (nothing with `--json`).
    pub fn text_styled(&self, text: &Styled) {
        if !self.json {
            let text = text.render(self.color);
            if !text.is_empty() {
                // Already escaped piece by piece (see `Styled`).
                write_raw(text.trim_end_matches('\n'));
            }
        }
    }

    /// Prints `value` as it serialises with `--json` in either mode (reports bd prints in
    /// fleet's shape: import and export), else the text `human` builds.
    pub fn emit_plain<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json { write_json(&json_bytes(value, self.pretty)) } else { write_block(&human()) }
    }

    /// Prints human text (nothing with `--json`).
    pub fn text(&self, text: &str) {
        if !self.json {
            write_block(text);
        }
    }

    /// A progress or status note for people: stderr, and only without `--json` or `--quiet`.
    pub fn note(&self, text: &str) {
        if !self.json && !self.quiet {
            write_stderr(text);
        }
    }

    /// A warning or per-item error on stderr, shown even with `--json` (stdout stays clean).
    pub fn warn(&self, text: &str) {
        write_stderr(text);
    }

    /// `value` shaped and laid out the way bd prints it: bd's shapes only, so fleet's task
    /// fields (the `fleet` object of an issue) are left out.
    pub fn json_text(&self, value: Value) -> String {
        String::from_utf8(self.bd_json(&value)).expect("JSON is UTF-8")
    }

    /// `value` as bd prints it: in bd's shape (see [`Output::shaped`]) and without fleet's
    /// task fields, which are outside bd's output contract.
    fn bd_json<T: Serialize + ?Sized>(&self, value: &T) -> Vec<u8> {
        let mut value = serde_json::to_value(value).expect("output values serialise");
        without_fleet_fields(&mut value);
        json_bytes(&self.shaped(value), self.pretty)
    }

    /// `value` in bd's shape: enveloped, or an object with its schema version and sorted keys.
    fn shaped(&self, value: Value) -> Value {
        if self.envelope {
            let mut map = Map::new();
            map.insert("data".into(), value);
            map.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
            Value::Object(map)
        } else {
            match value {
                Value::Object(mut map) => {
                    map.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
                    sorted(Value::Object(map))
                }
                other => other,
            }
        }
    }
}

/// Removes the `fleet` object from every issue (an object with an `id` and a `title`) in
/// `value`, at any depth.
fn without_fleet_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("id") && map.contains_key("title") {
                map.shift_remove("fleet");
            }
            map.values_mut().for_each(without_fleet_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(without_fleet_fields),
        _ => {}
    }
}

/// `value` as it serialises (fleet's shape), indented or compact, terminal-safe (see
/// [`SafeFormatter`]).
fn json_bytes<T: Serialize + ?Sized>(value: &T, pretty: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    let formatter = if pretty { SafeFormatter::pretty() } else { SafeFormatter::compact() };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer).expect("output values serialise");
    out
}

/// Writes JSON text and a newline to stdout, as it is: JSON escapes its own control characters
/// ([`SafeFormatter`]), so it needs no pass of [`printable_block`].
fn write_json(json: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    // A reader that went away (a pipe into `head`) is fine; nothing else can fail here that a
    // user could act on.
    let _ =
        stdout.write_all(json).and_then(|()| stdout.write_all(b"\n")).and_then(|()| stdout.flush());
}

/// serde_json's pretty or compact formatter, which also escapes DEL and the C1 control
/// characters (as `\u007f`, `\u009b`…): JSON may carry them raw, but a terminal acts on them,
/// and text printed to one is escaped (see [`printable`]).
struct SafeFormatter(Layout);

/// The whitespace of the JSON: serde_json's two formatters.
enum Layout {
    Pretty(serde_json::ser::PrettyFormatter<'static>),
    Compact(serde_json::ser::CompactFormatter),
}

impl SafeFormatter {
    fn pretty() -> SafeFormatter {
        SafeFormatter(Layout::Pretty(serde_json::ser::PrettyFormatter::new()))
    }

    fn compact() -> SafeFormatter {
        SafeFormatter(Layout::Compact(serde_json::ser::CompactFormatter))
    }
}

/// Calls the formatter method `$method` of whichever layout `$layout` holds.
macro_rules! laid_out {
    ($layout:expr, $method:ident($($arg:expr),*)) => {
        match $layout {
            Layout::Pretty(f) => f.$method($($arg),*),
            Layout::Compact(f) => f.$method($($arg),*),
        }
    };
}

/// The C1 control character (U+0080–U+009F, encoded as 0xC2 and one more byte) or DEL at
/// byte `at` of UTF-8 text, and its length in bytes; `None` when the character there is not
/// one (a 0xC2 that begins U+00A0–U+00BF).
fn control_at(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    match bytes[at] {
        0x7f => Some((0x7f, 1)),
        // The second byte of U+0080–U+009F is its code point.
        0xc2 => match bytes.get(at + 1) {
            Some(&next @ 0x80..=0x9f) => Some((u32::from(next), 2)),
            _ => None,
        },
        _ => None,
    }
}

impl serde_json::ser::Formatter for SafeFormatter {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        // serde_json escapes the C0 controls itself and never passes them here, so only DEL
        // and C1 are left; most text has neither byte that begins them, and is written as it
        // is after one vectorised scan.
        let bytes = fragment.as_bytes();
        let mut written = 0;
        let mut from = 0;
        while let Some(found) = memchr::memchr2(0x7f, 0xc2, &bytes[from..]) {
            let at = from + found;
            from = at + 1;
            let Some((control, len)) = control_at(bytes, at) else { continue };
            writer.write_all(&bytes[written..at])?;
            write!(writer, "\\u{control:04x}")?;
            written = at + len;
            from = written;
        }
        writer.write_all(&bytes[written..])
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, begin_array(writer))
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, end_array(writer))
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        laid_out!(&mut self.0, begin_array_value(writer, first))
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, end_array_value(writer))
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, begin_object(writer))
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, end_object(writer))
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        laid_out!(&mut self.0, begin_object_key(writer, first))
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, begin_object_value(writer))
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        laid_out!(&mut self.0, end_object_value(writer))
    }
}

/// Sorts the keys of every object in `value`, as a Go map round trip does.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A block of output: nothing when empty, else without its trailing newlines.
fn write_block(text: &str) {
    if !text.is_empty() {
        write_stdout(text.trim_end_matches('\n'));
    }
}

/// Writes `text`, already safe to print, and a newline to stdout.
fn write_raw(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A reader that went away (a pipe into `head`) is fine; nothing else can fail here that a
    // user could act on.
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}

/// Writes `text` and a newline to stdout. Control characters other than newlines and tabs are
/// escaped on the way (see [`printable_block`]): a no-op for JSON, which escapes them itself.
pub(in crate::cli) fn write_stdout(text: &str) {
    write_raw(&printable_block(text));
}

/// Writes `text` and a newline to stderr. A closed or full stderr (`bd … 2>&1 | head -0`) is
/// not worth a panic: the message is dropped, and the exit code still tells what happened.
/// Every line the CLI writes to stderr goes through here (clippy's `print_stderr` is denied).
pub(crate) fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{text}").and_then(|()| stderr.flush());
}

/// [`write_stdout`] for styled text: painted when `color`.
pub(in crate::cli) fn write_styled(text: &Styled, color: bool) {
    write_raw(&text.render(color));
}

/// `[● P1]`: the priority as bd shows it.
pub fn priority_badge(priority: u8) -> String {
    format!("[● P{priority}]")
}

/// `id — title`, the feedback form of bd.
pub fn id_title(issue: &Issue) -> String {
    format!("{} — {}", issue.id, printable(&issue.title))
}

/// One line of a list: `id [● P2] [task] open - Title @assignee`.
pub fn list_line(issue: &Issue) -> String {
    let mut line = format!(
        "{} {} [{}] {} - {}",
        issue.id,
        priority_badge(issue.priority),
        printable(&issue.issue_type),
        printable(&issue.status.to_string()),
        printable(&issue.title)
    );
    line.push_str(&assignee_suffix(issue));
    line
}

/// ` @assignee` for a line about `issue`; empty when nobody is assigned.
pub fn assignee_suffix(issue: &Issue) -> String {
    if issue.assignee.is_empty() {
        String::new()
    } else {
        format!(" @{}", printable(&issue.assignee))
    }
}

/// A status with a marker: `○ open`, `◐ in_progress`, `✓ closed`, …
pub fn status_marker(status: &Status) -> &'static str {
    match status {
        Status::Open => "○",
        Status::InProgress => "◐",
        Status::Closed => "✓",
        Status::Blocked => "●",
        Status::Deferred => "❄",
        Status::Pinned => "📌",
        Status::Hooked => "⚓",
        Status::Custom(_) => "·",
    }
}

/// `arg` as a shell word for a command line shown to people: quoted when it has spaces,
/// quotes or shell characters.
pub(crate) fn shell_word(arg: &str) -> String {
    if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
        format!("'{}'", arg.replace('\'', "'\\''"))
    } else {
        arg.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell reads a word back as the text it was made from (spaces, quotes, `$`, backticks,
    /// the empty text), and a plain word is shown as it is.
    #[test]
    fn a_shell_word_reads_back_as_its_text() {
        assert_eq!(shell_word("/tmp/w/.beads/beads.db"), "/tmp/w/.beads/beads.db");
        for text in ["/tmp/my work/beads.db", "it's", "$HOME `id` \\n", ""] {
            let line = format!("printf %s {}", shell_word(text));
            let out = std::process::Command::new("sh").arg("-c").arg(&line).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{line}");
        }
    }

    #[test]
    fn controls_are_escaped_in_single_line_fields() {
        assert_eq!(printable("plain — ünïcode"), "plain — ünïcode");
        assert_eq!(printable("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(printable("\u{1b}[31mred\u{7}\u{7f}\u{9b}"), "\\e[31mred\\x07\\x7f\\x9b");
    }

    #[test]
    fn blocks_keep_newlines_and_tabs() {
        assert_eq!(printable_block("a\n\tb\u{1b}c\r"), "a\n\tb\\ec\\r");
    }

    #[test]
    fn objects_get_a_schema_version_and_sorted_keys_arrays_stay_bare() {
        let out = Output::new(Mode::Bd, true, false);
        let object = out.json_text(serde_json::json!({ "title": "t", "id": "x-1" }));
        assert_eq!(
            object,
            "{\n  \"id\": \"x-1\",\n  \"schema_version\": 1,\n  \"title\": \"t\"\n}"
        );
        let array = out.json_text(serde_json::json!([{ "title": "t", "id": "x-1" }]));
        assert!(array.starts_with("[\n  {\n    \"title\""), "{array}");
    }

    /// DEL and the C1 controls, which JSON may carry raw but terminals act on, come out
    /// escaped, and the text still parses to the same string.
    #[test]
    fn json_escapes_every_control_character() {
        let title = "a\u{1b}[31m\u{7f}\u{9b}b — ü";
        let text =
            String::from_utf8(json_bytes(&serde_json::json!({ "title": title }), true)).unwrap();
        assert_eq!(text, "{\n  \"title\": \"a\\u001b[31m\\u007f\\u009bb — ü\"\n}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["title"], title);
        let every: String = (0u32..0x300).filter_map(char::from_u32).collect();
        let text = String::from_utf8(json_bytes(&every, false)).unwrap();
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), every);
    }

    /// The byte scan escapes exactly the characters `char::is_control` names among those
    /// serde_json passes on (all but the C0 controls, which it escapes itself), around every
    /// boundary of their UTF-8 encodings (0xC2 also begins U+00A0–U+00BF, which stay raw).
    #[test]
    fn fragments_escape_exactly_the_control_characters() {
        use serde_json::ser::Formatter;
        let by_character = |text: &str| -> String {
            text.chars()
                .map(|c| if c.is_control() { format!("\\u{:04x}", u32::from(c)) } else { c.into() })
                .collect()
        };
        let mut samples: Vec<String> =
            (0x20u32..0x300).filter_map(char::from_u32).map(String::from).collect();
        samples.extend(
            ["", "plain", "a\u{7f}b\u{9f}\u{a0}\u{bf}\u{80}ü—🙂", "\u{c2}\u{85}x\u{9b}"]
                .map(String::from),
        );
        samples.push(samples.concat());
        for text in samples {
            let mut out = Vec::new();
            SafeFormatter::compact().write_string_fragment(&mut out, &text).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), by_character(&text), "{text:?}");
        }
    }

    #[test]
    fn issues_lose_their_fleet_fields_as_bd() {
        let out = Output::new(Mode::Bd, true, false);
        let issue =
            serde_json::json!({ "id": "x-1", "title": "t", "fleet": { "cwd": "/home/me" } });
        let text = out.json_text(serde_json::json!([{ "issue": issue.clone() }, issue]));
        assert!(!text.contains("/home/me"), "{text}");
    }

    /// Compact JSON is one line with no whitespace between tokens, and reads back as the same
    /// value as the indented form.
    #[test]
    fn compact_json_is_one_line_of_the_same_value() {
        let value = serde_json::json!([{ "title": "a b", "id": "x-1", "labels": ["l"] }]);
        let pretty = Output::new(Mode::Bd, true, false).with_layout(true, false);
        let compact = pretty.with_layout(false, false);
        let (pretty, compact) = (pretty.json_text(value.clone()), compact.json_text(value));
        assert_eq!(compact, r#"[{"title":"a b","id":"x-1","labels":["l"]}]"#);
        assert!(pretty.contains("\n  {"), "{pretty}");
        assert_eq!(
            serde_json::from_str::<Value>(&pretty).unwrap(),
            serde_json::from_str::<Value>(&compact).unwrap()
        );
    }

    #[test]
    fn the_envelope_wraps_any_payload() {
        let out = Output { envelope: true, ..Output::new(Mode::Bd, true, false) };
        let text = out.json_text(serde_json::json!([1]));
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value, serde_json::json!({ "data": [1], "schema_version": 1 }));
    }
}
