//! `bd query`'s little language: comparisons (`status=open`, `priority<2`, `updated>7d`)
//! joined by `AND`, `OR`, `NOT` and parentheses, as beads 1.0.5 defines it.
//!
//! [`parse`] turns the text into an [`Expr`]; [`Expr::matches`] tests one issue. Fields and
//! their meaning follow beads: text fields (`title`, `description`, `notes`) match by
//! case-insensitive substring, `assignee`/`label`/`description` take `none` for empty, `id`
//! and `spec` take `*` wildcards, dates take `7d`/`24h`/`2w` (that long ago) or any date
//! `--due` takes. Unlike beads' lexer, a bare value may hold `:` (`label=gt:agent`).

use jiff::{SignedDuration, Timestamp};

use crate::cli::CliError;
use crate::model::{Issue, parse_priority};
use crate::store::{IssueSummary, MetadataTest};
use crate::time::parse_user_date;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Compare { field: String, op: Op, value: String },
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Op(Op),
    Open,
    Close,
}

fn lex(text: &str) -> Result<Vec<Token>, CliError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' => {
                chars.next();
                tokens.push(if c == '(' { Token::Open } else { Token::Close });
            }
            '"' | '\'' => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(ch) => value.push(ch),
                        None => return Err(query_error(format!("unterminated quote {c}"))),
                    }
                }
                tokens.push(Token::Quoted(value));
            }
            '=' | '!' | '<' | '>' => {
                chars.next();
                let eq = chars.next_if_eq(&'=').is_some();
                let op = match (c, eq) {
                    ('=', _) => Op::Eq,
                    ('!', true) => Op::Ne,
                    ('<', false) => Op::Lt,
                    ('<', true) => Op::Le,
                    ('>', false) => Op::Gt,
                    ('>', true) => Op::Ge,
                    _ => return Err(query_error("'!' must be followed by '='".into())),
                };
                tokens.push(Token::Op(op));
            }
            _ => {
                let mut word = String::new();
                while let Some(&ch) = chars.peek() {
                    if ch.is_whitespace() || "()=!<>\"'".contains(ch) {
                        break;
                    }
                    word.push(ch);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    Ok(tokens)
}

fn query_error(message: String) -> CliError {
    CliError::new(format!("parsing query: {message}"))
        .with_hint("bd query \"status=open AND priority<2\"")
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn keyword(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word(w)) if w.eq_ignore_ascii_case(word))
    }

    fn or(&mut self) -> Result<Expr, CliError> {
        let mut left = self.and()?;
        while self.keyword("OR") {
            self.at += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, CliError> {
        let mut left = self.unary()?;
        while self.keyword("AND") {
            self.at += 1;
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, CliError> {
        if self.keyword("NOT") {
            self.at += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.tokens.get(self.at) == Some(&Token::Open) {
            self.at += 1;
            let inner = self.or()?;
            if self.tokens.get(self.at) != Some(&Token::Close) {
                return Err(query_error("missing ')'".into()));
            }
            self.at += 1;
            return Ok(inner);
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, CliError> {
        let field = match self.tokens.get(self.at) {
            Some(Token::Word(w)) => w.to_ascii_lowercase(),
            other => return Err(query_error(format!("expected a field name, found {other:?}"))),
        };
        let Some(Token::Op(op)) = self.tokens.get(self.at + 1).cloned() else {
            return Err(query_error(format!("expected an operator after {field}")));
        };
        let value = match self.tokens.get(self.at + 2) {
            Some(Token::Word(v) | Token::Quoted(v)) => v.clone(),
            _ => return Err(query_error(format!("expected a value after {field}"))),
        };
        self.at += 3;
        Ok(Expr::Compare { field, op, value })
    }
}

/// Parses a query; every field name is checked here, so a typo fails before any issue is read.
pub fn parse(text: &str) -> Result<Expr, CliError> {
    let mut parser = Parser { tokens: lex(text)?, at: 0 };
    if parser.tokens.is_empty() {
        return Err(query_error("the query is empty".into()));
    }
    let expr = parser.or()?;
    if let Some(rest) = parser.tokens.get(parser.at) {
        return Err(query_error(format!("unexpected {rest:?}")));
    }
    expr.check_fields()?;
    Ok(expr)
}

const FIELDS: &[&str] = &[
    "status",
    "priority",
    "type",
    "assignee",
    "owner",
    "label",
    "labels",
    "title",
    "description",
    "desc",
    "notes",
    "created",
    "created_at",
    "updated",
    "updated_at",
    "closed",
    "closed_at",
    "started",
    "started_at",
    "id",
    "spec",
    "spec_id",
    "pinned",
    "ephemeral",
    "template",
    "parent",
    "mol_type",
    "has_metadata_key",
];

impl Expr {
    fn check_fields(&self) -> Result<(), CliError> {
        match self {
            Expr::Compare { field, .. } => {
                if FIELDS.contains(&field.as_str()) || field.starts_with("metadata.") {
                    Ok(())
                } else {
                    Err(query_error(format!("unknown field {field:?}")))
                }
            }
            Expr::Not(inner) => inner.check_fields(),
            Expr::And(a, b) | Expr::Or(a, b) => a.check_fields().and(b.check_fields()),
        }
    }

    /// Whether the query names `status` anywhere (then closed issues are not left out).
    pub fn mentions_status(&self) -> bool {
        match self {
            Expr::Compare { field, .. } => field == "status",
            Expr::Not(inner) => inner.mentions_status(),
            Expr::And(a, b) | Expr::Or(a, b) => a.mentions_status() || b.mentions_status(),
        }
    }

    pub fn matches(&self, summary: &IssueSummary, now: Timestamp) -> Result<bool, CliError> {
        Ok(match self {
            Expr::Compare { field, op, value } => compare(summary, field, *op, value, now)?,
            Expr::Not(inner) => !inner.matches(summary, now)?,
            Expr::And(a, b) => a.matches(summary, now)? && b.matches(summary, now)?,
            Expr::Or(a, b) => a.matches(summary, now)? || b.matches(summary, now)?,
        })
    }
}

fn is_none(value: &str) -> bool {
    value.is_empty() || value.eq_ignore_ascii_case("none") || value.eq_ignore_ascii_case("null")
}

/// `=` as equality (or presence), `!=` as its opposite; any other operator is refused.
fn equality(field: &str, op: Op, hit: bool) -> Result<bool, CliError> {
    match op {
        Op::Eq => Ok(hit),
        Op::Ne => Ok(!hit),
        _ => Err(query_error(format!("{field} takes only = and !="))),
    }
}

fn ordered<T: Ord>(op: Op, have: T, want: T) -> bool {
    match op {
        Op::Eq => have == want,
        Op::Ne => have != want,
        Op::Gt => have > want,
        Op::Ge => have >= want,
        Op::Lt => have < want,
        Op::Le => have <= want,
    }
}

fn contains(have: &str, want: &str) -> bool {
    have.to_lowercase().contains(&want.to_lowercase())
}

/// `*` matches any run of characters; everything else itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(text) = text.strip_prefix(head) else { return false };
            (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .any(|i| wildcard(rest, &text[i..]))
        }
    }
}

/// A date value: `7d`, `24h`, `2w`, `30m` ago, or what `--due` takes.
fn date(field: &str, value: &str, now: Timestamp) -> Result<Timestamp, CliError> {
    let relative = value.len() > 1 && value[..value.len() - 1].bytes().all(|b| b.is_ascii_digit());
    if relative && let Ok(n) = value[..value.len() - 1].parse::<i64>() {
        let unit = match value.as_bytes()[value.len() - 1] {
            b'm' => Some(60),
            b'h' => Some(3600),
            b'd' => Some(86_400),
            b'w' => Some(7 * 86_400),
            _ => None,
        };
        if let Some(seconds) = unit {
            return now
                .checked_sub(SignedDuration::from_secs(n.saturating_mul(seconds)))
                .map_err(|_| query_error(format!("{field}: {value} is too far back")));
        }
    }
    parse_user_date("query", value, now)?
        .ok_or_else(|| query_error(format!("{field} needs a date, not {value:?}")))
}

fn boolean(field: &str, value: &str) -> Result<bool, CliError> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(query_error(format!("{field} is true or false, not {value:?}"))),
    }
}

fn compare(
    summary: &IssueSummary,
    field: &str,
    op: Op,
    value: &str,
    now: Timestamp,
) -> Result<bool, CliError> {
    let issue: &Issue = &summary.issue;
    let text_or_none = |have: &str| if is_none(value) { have.is_empty() } else { have == value };
    match field {
        "status" => equality(field, op, issue.status.to_string().eq_ignore_ascii_case(value)),
        "priority" => Ok(ordered(op, issue.priority, parse_priority(value)?)),
        "type" => equality(field, op, issue.issue_type.eq_ignore_ascii_case(value)),
        "assignee" => equality(field, op, text_or_none(&issue.assignee)),
        "owner" => equality(field, op, text_or_none(&issue.owner)),
        "label" | "labels" => {
            let hit = if is_none(value) {
                issue.labels.is_empty()
            } else {
                issue.labels.iter().any(|l| l == value)
            };
            equality(field, op, hit)
        }
        "title" => equality(field, op, contains(&issue.title, value)),
        "notes" => equality(field, op, contains(&issue.notes, value)),
        "description" | "desc" => {
            let hit = if is_none(value) {
                issue.description.trim().is_empty()
            } else {
                contains(&issue.description, value)
            };
            equality(field, op, hit)
        }
        "created" | "created_at" => Ok(ordered(op, issue.created_at, date(field, value, now)?)),
        "updated" | "updated_at" => Ok(ordered(op, issue.updated_at, date(field, value, now)?)),
        "closed" | "closed_at" => {
            let want = date(field, value, now)?;
            Ok(issue.closed_at.is_some_and(|t| ordered(op, t, want)))
        }
        "started" | "started_at" => {
            let want = date(field, value, now)?;
            Ok(issue.started_at.is_some_and(|t| ordered(op, t, want)))
        }
        "id" => equality(field, op, wildcard(value, &issue.id)),
        "spec" | "spec_id" => equality(field, op, wildcard(value, &issue.spec_id)),
        "parent" => equality(field, op, summary.parent.as_deref() == Some(value)),
        "pinned" => equality(field, op, issue.pinned == boolean(field, value)?),
        "ephemeral" => equality(field, op, issue.ephemeral == boolean(field, value)?),
        "template" => equality(field, op, issue.is_template == boolean(field, value)?),
        "mol_type" => {
            let have = issue.extra.get("mol_type").and_then(|v| v.as_str()).unwrap_or_default();
            equality(field, op, have.eq_ignore_ascii_case(value))
        }
        "has_metadata_key" => {
            equality(field, op, issue.metadata.as_ref().is_some_and(|m| m.get(value).is_some()))
        }
        _ => {
            let key = field.strip_prefix("metadata.").unwrap_or(field).to_string();
            let test = MetadataTest { keys: Vec::new(), fields: vec![(key, value.to_string())] };
            equality(field, op, test.matches(issue))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_is_not_then_and_then_or() {
        let expr = parse("NOT status=closed AND priority<2 OR label=gt:agent").unwrap();
        let Expr::Or(left, right) = expr else { panic!("OR binds loosest") };
        assert!(matches!(*left, Expr::And(..)));
        assert_eq!(
            *right,
            Expr::Compare { field: "label".into(), op: Op::Eq, value: "gt:agent".into() }
        );
    }

    #[test]
    fn bad_queries_name_the_problem() {
        assert!(parse("bogus=1").unwrap_err().message.contains("unknown field \"bogus\""));
        assert!(parse("(status=open").unwrap_err().message.contains("missing ')'"));
        assert!(parse("status").unwrap_err().message.contains("expected an operator"));
        assert!(parse("").is_err());
    }

    #[test]
    fn wildcards_match_runs() {
        assert!(wildcard("bd-*", "bd-12"));
        assert!(wildcard("*-1*", "bd-12"));
        assert!(!wildcard("bd-*", "gt-12"));
    }
}
