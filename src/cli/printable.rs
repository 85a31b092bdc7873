//! Stored text made safe for a terminal: what every human renderer prints a title, a
//! description or a comment through, so no stored value can fake lines or send escape
//! sequences.

use std::borrow::Cow;

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
