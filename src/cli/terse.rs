//! The terse text form (`--terse`, `FLEET_TERSE=1`) of the views agents read most: `ready`,
//! `list` and `show`, in both personalities.
//!
//! Why a flag and not the default into a pipe: beads' own scripts and its users' scripts match
//! bd's text (`Status: open`, `Dependencies (1):`, the `📋 Ready work` list; spec/beads.md §8),
//! and they run with stdout not a terminal, so the usual text cannot change there. The terse
//! form is for readers that pay per token: an agent that is told of it (`bd prime`), or one the
//! user starts with `FLEET_TERSE=1` in its environment.
//!
//! The shape: an issue is one line, `ID P<n> TYPE STATUS TITLE [@ASSIGNEE]`, with nothing
//! decorative (no badges, markers or numbering); `show` follows that line with `key: value`
//! lines for the fields that are set, the dependencies as `ID:TYPE:STATUS`, then the long text
//! fields and the comments unindented. It carries what an agent acts on and leaves out what it
//! does not (timestamps other than due and defer dates, counts it can see). `bd ready` of 20
//! issues: 357 tokens terse, 510 as text, 2,519 as compact JSON (README.md).

use super::output::{printable, printable_block};
use crate::model::Issue;
use crate::store::{IssueDetail, LinkedIssue};

/// One issue: `ID P<n> TYPE STATUS TITLE [@ASSIGNEE]`.
pub fn issue_line(issue: &Issue) -> String {
    let mut line = format!(
        "{} P{} {} {} {}",
        issue.id,
        issue.priority,
        printable(&issue.issue_type),
        printable(&issue.status.to_string()),
        printable(&issue.title)
    );
    line.push_str(&super::output::assignee_suffix(issue));
    line
}

/// Issues, a line each; `none` when there are none.
pub fn issue_lines<'a>(issues: impl IntoIterator<Item = &'a Issue>) -> String {
    let lines: Vec<String> = issues.into_iter().map(issue_line).collect();
    if lines.is_empty() { "none".to_owned() } else { lines.join("\n") }
}

/// One issue in full, as [`issue_line`] and the fields that are set.
pub fn detail(detail: &IssueDetail) -> String {
    let issue = &detail.summary.issue;
    let mut lines = vec![issue_line(issue)];
    let mut field = |name: &str, value: &str| {
        if !value.is_empty() {
            lines.push(format!("{name}: {}", printable(value)));
        }
    };
    field("parent", detail.summary.parent.as_deref().unwrap_or_default());
    field("labels", &issue.labels.join(","));
    field("deps", &linked(&detail.dependencies));
    field("dependents", &linked(&detail.dependents));
    field("blocked", if detail.blocked { "yes" } else { "" });
    field("due", &issue.due_at.map(|t| t.to_string()).unwrap_or_default());
    field("deferred until", &issue.defer_until.map(|t| t.to_string()).unwrap_or_default());
    field("close reason", &issue.close_reason);
    field("external ref", &issue.external_ref);
    for (name, text) in [
        ("description", &issue.description),
        ("design", &issue.design),
        ("acceptance", &issue.acceptance_criteria),
        ("notes", &issue.notes),
    ] {
        if !text.trim().is_empty() {
            lines.push(format!("{name}:\n{}", printable_block(text.trim_end())));
        }
    }
    for comment in &detail.comments {
        lines.push(format!(
            "comment {}: {}",
            printable(&comment.author),
            printable_block(comment.text.trim_end())
        ));
    }
    lines.join("\n")
}

/// Linked issues as `ID:TYPE:STATUS`, space-separated.
fn linked(items: &[LinkedIssue]) -> String {
    let item = |l: &LinkedIssue| {
        let status = if l.missing { "missing".to_owned() } else { l.status.to_string() };
        format!("{}:{}:{status}", l.id, l.dependency_type)
    };
    items.iter().map(item).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_is_one_undecorated_line() {
        let mut issue = Issue::new("t-1".into(), "Fix\nlogin".into(), jiff::Timestamp::UNIX_EPOCH);
        assert_eq!(issue_line(&issue), "t-1 P2 task open Fix\\nlogin");
        issue.assignee = "ann".into();
        assert_eq!(issue_line(&issue), "t-1 P2 task open Fix\\nlogin @ann");
        assert_eq!(issue_lines([]), "none");
    }
}
