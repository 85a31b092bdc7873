//! Rendering: JSON or human text on stdout, narration on stderr, and the small formatting
//! pieces (priority badges, issue lines) that several commands share.
//!
//! A closed stdout (`fleet list | head`) is not an error: output stops quietly.

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

pub(super) fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    // A reader that went away (a pipe into `head`) is fine; nothing else can fail here that a
    // user could act on.
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}

/// `[● P1]`: the priority as bd shows it.
pub fn priority_badge(priority: u8) -> String {
    format!("[● P{priority}]")
}

/// `id — title`, the feedback form of bd.
pub fn id_title(issue: &Issue) -> String {
    format!("{} — {}", issue.id, issue.title)
}

/// One line of a list: `id [● P2] [task] open - Title @assignee`.
pub fn list_line(issue: &Issue) -> String {
    let mut line = format!(
        "{} {} [{}] {} - {}",
        issue.id,
        priority_badge(issue.priority),
        issue.issue_type,
        issue.status,
        issue.title
    );
    if !issue.assignee.is_empty() {
        line.push_str(&format!(" @{}", issue.assignee));
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
