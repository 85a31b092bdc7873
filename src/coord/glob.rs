//! Deciding, conservatively, whether two globs could name the same file, and whether a path
//! matches a glob.
//!
//! Globs are paths relative to a repository's top: `*` stands for any run of characters but
//! `/`, `**` for any run of characters (directories too), `?` for one character but `/`,
//! `[…]` for one character of a set (`[!…]` / `[^…]` for one outside it). A glob with no
//! wildcard names that file *and everything under it* (`src/store` covers
//! `src/store/apply.rs`), and a trailing `/` means the same (`src/store/`).
//!
//! Two globs overlap when some path matches both. The check walks both patterns at once (the
//! product of their automata), so `*.rs` and `*.md` are apart and `src/**` and `**/mod.rs`
//! overlap. Where a set of characters is too involved to compare exactly (two bracket sets,
//! negated sets), it assumes they share a character: a false overlap only makes a task wait,
//! a missed one lets two agents edit the same file.

use std::collections::HashSet;

/// One element of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Char(char),
    /// `?`: one character but `/`.
    One,
    /// `[…]`: one character of the set (or outside it when negated), never `/`.
    Set {
        chars: Vec<char>,
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    /// `*`: any run of characters but `/`.
    Star,
    /// `**`: any run of characters.
    Any,
    /// `**/`: no directory, or any run of characters ending in `/` (expanded by [`expand`]).
    Dirs,
}

/// What one step of a pattern may consume.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Char(char),
    NotSlash,
    Anything,
    Set(&'a Token),
}

/// Whether `a` and `b` could both match one path.
pub fn overlap(a: &str, b: &str) -> bool {
    let (a, b) = (forms(a), forms(b));
    a.iter().any(|a| b.iter().any(|b| product_accepts(a, b)))
}

/// The first glob of `ours` that overlaps one of `theirs`, with that one.
pub fn first_overlap<'a>(ours: &'a [String], theirs: &[String]) -> Option<(&'a str, String)> {
    ours.iter().find_map(|a| theirs.iter().find(|b| overlap(a, b)).map(|b| (a.as_str(), b.clone())))
}

/// Whether the file `path` (relative to the repository's top) is named by `glob`.
pub fn matches(glob: &str, path: &str) -> bool {
    let path: Vec<Token> = normalize(path).chars().map(Token::Char).collect();
    forms(glob).iter().any(|form| product_accepts(form, &path))
}

/// Whether `glob` is well formed: not empty, not absolute, no `..`, brackets closed.
pub fn check(glob: &str) -> Result<(), String> {
    let trimmed = glob.trim();
    if trimmed.is_empty() {
        return Err("a glob is empty".into());
    }
    if trimmed.starts_with('/') {
        return Err(format!(
            "glob {glob:?} is absolute: name files relative to the repository's top"
        ));
    }
    if trimmed.split('/').any(|part| part == "..") {
        return Err(format!("glob {glob:?} climbs out of the repository (`..`)"));
    }
    let mut open = false;
    for c in trimmed.chars() {
        match c {
            '[' if !open => open = true,
            ']' if open => open = false,
            _ => {}
        }
    }
    if open {
        return Err(format!("glob {glob:?} has a `[` without its `]`"));
    }
    Ok(())
}

/// `./x` → `x`, `x/` → `x` (a directory stands for itself and what it holds).
fn normalize(glob: &str) -> &str {
    let mut glob = glob.trim();
    while let Some(rest) = glob.strip_prefix("./") {
        glob = rest;
    }
    glob.trim_end_matches('/')
}

/// The patterns a glob stands for: itself, and what is under it when it names a file or a
/// directory without wildcards.
fn forms(glob: &str) -> Vec<Vec<Token>> {
    let trailing_slash = glob.trim().ends_with('/');
    let tokens = tokens(normalize(glob));
    let literal = tokens.iter().all(|t| matches!(t, Token::Char(_)));
    let mut forms = Vec::with_capacity(2);
    if literal || trailing_slash {
        let mut under = tokens.clone();
        if !under.is_empty() {
            under.push(Token::Char('/'));
        }
        under.push(Token::Any);
        forms.extend(expand(under));
    }
    if !trailing_slash {
        forms.extend(expand(tokens));
    }
    forms
}

/// The patterns without [`Token::Dirs`]: each one either dropped or `**` then `/`. Past a few,
/// the rest become `**` (which names more paths: conservative).
fn expand(tokens: Vec<Token>) -> Vec<Vec<Token>> {
    const MOST: usize = 4;
    let mut out: Vec<Vec<Token>> = vec![Vec::new()];
    let mut seen = 0;
    for token in tokens {
        if token != Token::Dirs {
            out.iter_mut().for_each(|form| form.push(token.clone()));
            continue;
        }
        seen += 1;
        if seen > MOST {
            out.iter_mut().for_each(|form| form.push(Token::Any));
            continue;
        }
        let mut with: Vec<Vec<Token>> = out.clone();
        with.iter_mut().for_each(|form| form.extend([Token::Any, Token::Char('/')]));
        out.extend(with);
    }
    out
}

fn tokens(glob: &str) -> Vec<Token> {
    let chars: Vec<char> = glob.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                // `**/` also stands for no directory at all (`**/x` names `x`).
                if chars.get(i) == Some(&'/') {
                    i += 1;
                    out.push(Token::Dirs);
                } else {
                    out.push(Token::Any);
                }
                continue;
            }
            '*' => out.push(Token::Star),
            '?' => out.push(Token::One),
            '[' => {
                if let Some((set, next)) = bracket(&chars, i) {
                    out.push(set);
                    i = next;
                    continue;
                }
                out.push(Token::Char('['));
            }
            '\\' if i + 1 < chars.len() => {
                out.push(Token::Char(chars[i + 1]));
                i += 2;
                continue;
            }
            c => out.push(Token::Char(c)),
        }
        i += 1;
    }
    out.dedup_by(|a, b| *a == Token::Any && *b == Token::Any);
    out
}

/// The set starting at `chars[open]` (`[`), and the index after its `]`.
fn bracket(chars: &[char], open: usize) -> Option<(Token, usize)> {
    let mut i = open + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let (mut set, mut ranges) = (Vec::new(), Vec::new());
    let start = i;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && i > start {
            return Some((Token::Set { chars: set, ranges, negated }, i + 1));
        }
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&end| end != ']') {
            ranges.push((c, chars[i + 2]));
            i += 3;
        } else {
            set.push(c);
            i += 1;
        }
    }
    None
}

/// The steps that leave position `i` of `pattern`: `(step, next position)`; a star loops.
fn steps(pattern: &[Token], i: usize) -> Vec<(Step<'_>, usize)> {
    match pattern.get(i) {
        None => Vec::new(),
        Some(Token::Char(c)) => vec![(Step::Char(*c), i + 1)],
        Some(Token::One) => vec![(Step::NotSlash, i + 1)],
        Some(set @ Token::Set { .. }) => vec![(Step::Set(set), i + 1)],
        Some(Token::Star) => vec![(Step::NotSlash, i)],
        Some(Token::Any) => vec![(Step::Anything, i)],
        // Expanded away before any walk.
        Some(Token::Dirs) => vec![(Step::Anything, i + 1)],
    }
}

/// Positions reachable from `i` without consuming a character (stars may match nothing).
fn closure(pattern: &[Token], i: usize) -> Vec<usize> {
    let mut out = vec![i];
    let mut at = i;
    while matches!(pattern.get(at), Some(Token::Star | Token::Any)) {
        at += 1;
        out.push(at);
    }
    out
}

/// Whether some string is accepted by both patterns: a search of the pairs of positions.
fn product_accepts(a: &[Token], b: &[Token]) -> bool {
    let mut seen = HashSet::new();
    let mut todo = vec![(0usize, 0usize)];
    while let Some((i, j)) = todo.pop() {
        for i in closure(a, i) {
            for j in closure(b, j) {
                if !seen.insert((i, j)) {
                    continue;
                }
                if i == a.len() && j == b.len() {
                    return true;
                }
                for (x, ni) in steps(a, i) {
                    for (y, nj) in steps(b, j) {
                        if can_share(x, y) {
                            todo.push((ni, nj));
                        }
                    }
                }
            }
        }
    }
    false
}

/// Whether one character could be consumed by both steps (conservative for two sets).
fn can_share(x: Step<'_>, y: Step<'_>) -> bool {
    match (x, y) {
        (Step::Char(a), Step::Char(b)) => a == b,
        (Step::Char(c), other) | (other, Step::Char(c)) => admits(other, c),
        (Step::Anything, _) | (_, Step::Anything) => true,
        // Two steps that never take `/`: any other character would do, unless a set is
        // too narrow to say — then assume they share one.
        _ => true,
    }
}

/// Whether `step` may consume `c`.
fn admits(step: Step<'_>, c: char) -> bool {
    match step {
        Step::Char(own) => own == c,
        Step::NotSlash => c != '/',
        Step::Anything => true,
        Step::Set(Token::Set { chars, ranges, negated }) => {
            let inside =
                chars.contains(&c) || ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
            c != '/' && inside != *negated
        }
        Step::Set(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_that_could_name_one_file_overlap() {
        for (a, b) in [
            ("src/**", "**/mod.rs"),
            ("src/store", "src/store/apply.rs"),
            ("src/store/", "src/**/*.rs"),
            ("*.rs", "lib.rs"),
            ("src/*.rs", "src/lib.?s"),
            ("src/[a-m]*.rs", "src/lib.rs"),
            ("**", "README.md"),
            ("a/**/b", "a/b"),
            ("docs/*", "docs/[!x]*"),
            ("Cargo.toml", "./Cargo.toml"),
        ] {
            assert!(overlap(a, b), "{a} and {b} should overlap");
            assert!(overlap(b, a), "{b} and {a} should overlap");
        }
    }

    #[test]
    fn globs_that_name_no_common_file_are_apart() {
        for (a, b) in [
            ("*.rs", "*.md"),
            ("src/store/**", "src/tracker/**"),
            ("src/*.rs", "src/store/apply.rs"),
            ("Cargo.toml", "Cargo.lock"),
            ("src/[a-c]*", "src/lib.rs"),
            ("docs", "docsx/a"),
        ] {
            assert!(!overlap(a, b), "{a} and {b} should be apart");
            assert!(!overlap(b, a), "{b} and {a} should be apart");
        }
    }

    #[test]
    fn paths_match_as_files_or_under_directories() {
        assert!(matches("src/**", "src/store/apply.rs"));
        assert!(matches("src/store", "src/store/apply.rs"));
        assert!(matches("*.md", "README.md"));
        assert!(!matches("*.md", "docs/README.md"));
        assert!(matches("**/*.md", "docs/README.md"));
        assert!(matches("**/*.md", "README.md"));
        assert!(!matches("src/store", "src/storex.rs"));
    }

    #[test]
    fn bad_globs_are_named() {
        assert!(check("/etc/passwd").is_err());
        assert!(check("../x").is_err());
        assert!(check("src/[ab").is_err());
        assert!(check("  ").is_err());
        assert!(check("src/**/*.rs").is_ok());
    }
}
