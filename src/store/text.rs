//! Case-insensitive text search (`search`, `list --text`): which issues have a needle in their
//! id, title or description.
//!
//! The rule is Unicode's: the lowercase needle occurs in the lowercase text. Deciding it for
//! every issue of a large store by decoding each row and lowercasing its text is what made
//! `search` slow (a fifth of a second at 100k issues), so rows are first screened undecoded:
//! a row whose JSON, lowercased byte by byte, does not contain the needle cannot match. The
//! screen is exact only where lowercasing is: for an ASCII needle that JSON writes as is (no
//! quote, backslash or control character) and an ASCII row — lowercasing non-ASCII text can
//! yield ASCII (the Kelvin sign becomes `k`) — so any other needle or row is decided by the
//! rule itself. A row that passes the screen is decided by the rule too.

use memchr::memmem::Finder;

/// A search text, lowercased, with the screen for undecoded rows when one applies.
pub(crate) struct TextNeedle {
    lower: String,
    screen: Option<Finder<'static>>,
}

impl TextNeedle {
    pub fn new(text: &str) -> TextNeedle {
        let lower = text.to_lowercase();
        let screenable =
            lower.bytes().all(|b| b.is_ascii() && b != b'"' && b != b'\\' && b >= 0x20);
        let screen = screenable.then(|| Finder::new(lower.as_bytes()).into_owned());
        TextNeedle { lower, screen }
    }

    /// Whether the needle occurs in the id, the title or the description (the rule).
    pub fn matches(&self, id: &str, title: &str, description: &str) -> bool {
        [id, title, description].iter().any(|text| self.occurs_in(text))
    }

    /// Whether the needle occurs in `text`, case aside.
    pub fn occurs_in(&self, text: &str) -> bool {
        text.to_lowercase().contains(&self.lower)
    }

    /// Whether the issue stored as `row` (its JSON) may match: false only when it cannot.
    /// `scratch` is a buffer reused across rows.
    pub fn row_may_match(&self, row: &[u8], scratch: &mut Vec<u8>) -> bool {
        let Some(screen) = &self.screen else { return true };
        if !row.is_ascii() {
            return true;
        }
        scratch.clear();
        scratch.extend_from_slice(row);
        scratch.make_ascii_lowercase();
        screen.find(scratch).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may_match(needle: &str, row: &str) -> bool {
        TextNeedle::new(needle).row_may_match(row.as_bytes(), &mut Vec::new())
    }

    #[test]
    fn the_rule_ignores_case_in_id_title_and_description() {
        let needle = TextNeedle::new("Parser");
        assert!(needle.matches("bd-1", "fix the PARSER", ""));
        assert!(needle.matches("bd-1", "", "a parser bug"));
        assert!(TextNeedle::new("BD-1").matches("bd-1", "", ""));
        assert!(!needle.matches("bd-1", "fix the lexer", "nothing"));
    }

    #[test]
    fn an_ascii_row_without_the_needle_is_screened_out() {
        assert!(!may_match("parser", r#"{"title":"fix the lexer"}"#));
        assert!(may_match("parser", r#"{"title":"fix the PARSER"}"#));
    }

    #[test]
    fn rows_and_needles_the_screen_cannot_judge_pass_it() {
        // The Kelvin sign lowercases to an ASCII `k`: the row must reach the rule.
        assert!(may_match("kelvin", "{\"title\":\"\u{212A}elvin\"}"));
        assert!(TextNeedle::new("kelvin").matches("x", "\u{212A}elvin", ""));
        // JSON escapes quotes and backslashes, so a needle holding one is not screened.
        assert!(may_match("say \"hi\"", r#"{"title":"say \"hi\""}"#));
        assert!(may_match(r"C:\tmp", r#"{"title":"C:\\tmp"}"#));
        // Nor is a needle with a control character, which JSON writes escaped.
        assert!(may_match("a\tb", r#"{"title":"a\tb"}"#));
        // A non-ASCII needle is not screened either.
        assert!(TextNeedle::new("émile").screen.is_none());
        assert!(may_match("émile", r#"{"title":"ÉMILE"}"#));
        assert!(TextNeedle::new("émile").matches("x", "ÉMILE", ""));
    }
}
