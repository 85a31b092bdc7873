//! Rendering: JSON or human text on stdout, narration on stderr, and the small formatting
//! pieces (priority badges, issue lines) that several commands share.
//!
//! A closed stdout (`fleet list | head`) is not an error: output stops quietly.

use std::borrow::Cow;
use std::io::Write;

use serde::Serialize;

use crate::model::{Issue, Status};

#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
    pub quiet: bool,
}

impl Output {
    pub fn new(json: bool, quiet: bool) -> Output {
        Output { json, quiet }
    }

    /// Prints `value` as pretty JSON with `--json`, else the text `human` builds.
    pub fn emit<T: Serialize + ?Sized>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            let text = serde_json::to_string_pretty(value).expect("output values serialise");
            write_stdout(&text);
        } else {
            let text = human();
            if !text.is_empty() {
                write_stdout(text.trim_end_matches('\n'));
            }
        }
    }

    /// A progress or status note for people: stderr, and only without `--json` or `--quiet`.
    pub fn note(&self, text: &str) {
        if !self.json && !self.quiet {
            eprintln!("{text}");
        }
    }
}

/// Writes `text` and a newline to stdout. Control characters other than newlines and tabs are
/// escaped on the way (see [`printable_block`]): a no-op for JSON, which escapes them itself.
pub(super) fn write_stdout(text: &str) {
    let text = printable_block(text);
    let mut stdout = std::io::stdout().lock();
    // A reader that went away (a pipe into `head`) is fine; nothing else can fail here that a
    // user could act on.
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}

/// `[● P1]`: the priority as bd shows it.
pub fn priority_badge(priority: u8) -> String {
    format!("[● P{priority}]")
}

/// A single-line field (a title, an assignee, a label…) made safe to print in a line of human
/// output: every control character is escaped — `\n` as `\\n`, `\r` as `\\r`, `\t` as `\\t`,
/// ESC as `\\e`, any other C0 or C1 control (and DEL) as `\\xNN` — so a stored value can neither
/// break a table into fake lines nor send escape sequences to the terminal.
///
/// Every human renderer, of `fleet` and of `bd`, prints stored text through this function (or
/// [`printable_block`] for multi-line text). It escapes always, not only when stdout is a
/// terminal: output piped to a file or a pager reaches a terminal in the end, and tests see
/// what users see. `--json` output is never passed through it; JSON escapes controls itself.
pub fn printable(text: &str) -> Cow<'_, str> {
    escape_controls(text, |_| false)
}

/// Multi-line text (a description, a comment, a whole rendered output) made safe to print:
/// like [`printable`], but newlines and tabs stay as they are.
pub fn printable_block(text: &str) -> Cow<'_, str> {
    escape_controls(text, |c| c == '\n' || c == '\t')
}

/// Escapes the control characters of `text` that `keep` does not keep; borrows when there
/// are none.
fn escape_controls(text: &str, keep: fn(char) -> bool) -> Cow<'_, str> {
    let needs = |c: char| c.is_control() && !keep(c);
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            other => out.push_str(&format!("\\x{:02x}", u32::from(other))),
        }
    }
    Cow::Owned(out)
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
    if !issue.assignee.is_empty() {
        line.push_str(&format!(" @{}", printable(&issue.assignee)));
    }
    line
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
