//! The rows of a bulk op's new issues and comments, serialised on the encoder thread.
//!
//! An import's bulk ops are written on one thread while a second encodes each op's journal
//! row ([`Writer::apply_bulk`]). The second thread also serialises the rows the op's new
//! issues, their first edges and its comments will be stored as, so the writing thread only
//! inserts them.
//!
//! A row is used only for the very value it was made from, found by its address in the op
//! (which lives, unchanged, until the op is applied). An issue the writer stores in another
//! form (labels put in order) has another address and is serialised where it is written, so a
//! row made ahead can never stand for a value it was not made from.
//!
//! [`Writer::apply_bulk`]: super::Writer::apply_bulk

use std::borrow::Cow;
use std::collections::VecDeque;

use super::readiness::{Facts, facts_in};
use crate::model::{Comment, Dependency, Issue};
use crate::op::OpKind;

/// An op's journal row and the rows of its new issues, as the encoder thread sends them.
pub(super) struct Encoded {
    pub journal: Vec<u8>,
    pub rows: RowsAhead,
}

/// The rows made ahead for one op's `Create` and `Comment` entries, in entry order.
#[derive(Default)]
pub(super) struct RowsAhead {
    issues: MadeFrom<NewIssueRows>,
    comments: MadeFrom<Vec<u8>>,
}

/// One new issue's rows: its issue row and one edge row per edge it is created with, and
/// the readiness facts read back from its row (with its id).
pub(super) struct NewIssueRows {
    pub issue: Vec<u8>,
    pub edges: Vec<Vec<u8>>,
    pub facts: Option<(String, Facts)>,
}

impl RowsAhead {
    /// Serialises the rows of a bulk op's comments and of its new issues whose labels are
    /// already in stored order, with each issue's facts when `with_facts` (see
    /// `Writer::created_facts`), and its edges' rows when `with_edges` (not when a thread of
    /// their own inserts the edges).
    pub fn of(op: &OpKind, with_facts: bool, with_edges: bool) -> RowsAhead {
        let mut ahead = RowsAhead::default();
        let OpKind::Bulk { ops } = op else {
            return ahead;
        };
        for entry in ops {
            match entry {
                OpKind::Create { issue, deps } if labels_in_stored_order(issue) => {
                    let edges = match with_edges {
                        true => edges_of(&issue.id, deps).iter().map(edge_row).collect(),
                        false => Vec::new(),
                    };
                    let row = issue_row(issue);
                    let facts = with_facts
                        .then(|| facts_in(&issue.id, &row).ok())
                        .flatten()
                        .map(|facts| (issue.id.clone(), facts));
                    let rows = NewIssueRows { issue: row, edges, facts };
                    ahead.issues.push(&**issue, rows);
                }
                OpKind::Comment { comment } => ahead.comments.push(comment, comment_row(comment)),
                _ => {}
            }
        }
        ahead
    }

    /// The rows made from `issue` (this very value), if any were.
    pub fn take_issue(&mut self, issue: &Issue) -> Option<NewIssueRows> {
        self.issues.take(issue)
    }

    /// The row made from `comment` (this very value), if one was.
    pub fn take_comment(&mut self, comment: &Comment) -> Option<Vec<u8>> {
        self.comments.take(comment)
    }
}

/// Rows, each with the address of the value it was made from (compared, never followed), in
/// the order the values come in their op.
struct MadeFrom<T> {
    rows: VecDeque<(usize, T)>,
}

impl<T> Default for MadeFrom<T> {
    fn default() -> Self {
        MadeFrom { rows: VecDeque::new() }
    }
}

impl<T> MadeFrom<T> {
    fn push<V>(&mut self, value: &V, row: T) {
        self.rows.push_back((address(value), row));
    }

    fn take<V>(&mut self, value: &V) -> Option<T> {
        let at = self.rows.iter().position(|(made_from, _)| *made_from == address(value))?;
        // Rows before it were not used: their values were refused or stored in another form.
        self.rows.drain(..at);
        self.rows.pop_front().map(|(_, row)| row)
    }
}

fn address<V>(value: &V) -> usize {
    std::ptr::from_ref(value) as usize
}

/// Whether `issue`'s labels are as the store keeps them: sorted, without repeats.
pub(super) fn labels_in_stored_order(issue: &Issue) -> bool {
    issue.labels.windows(2).all(|pair| pair[0] < pair[1])
}

/// An issue's row in the issue table.
pub(super) fn issue_row(issue: &Issue) -> Vec<u8> {
    super::checked::seal(serde_json::to_vec(issue).expect("an issue serialises"))
}

/// A comment's row in the comment table.
pub(super) fn comment_row(comment: &Comment) -> Vec<u8> {
    super::checked::seal(serde_json::to_vec(comment).expect("a comment serialises"))
}

/// An edge's row in the edge table.
pub(super) fn edge_row(dep: &Dependency) -> Vec<u8> {
    super::checked::seal(serde_json::to_vec(dep).expect("a dependency serialises"))
}

/// The edges a new issue is created with, as stored: they belong to the issue, whatever their
/// `issue_id` said (borrowed when they all say so already, as an import's do).
pub(super) fn edges_of<'d>(issue_id: &str, deps: &'d [Dependency]) -> Cow<'d, [Dependency]> {
    if deps.iter().all(|dep| dep.issue_id == issue_id) {
        return Cow::Borrowed(deps);
    }
    let owned = deps.iter().map(|dep| Dependency { issue_id: issue_id.to_string(), ..dep.clone() });
    Cow::Owned(owned.collect())
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::*;

    fn new_issue(id: &str, labels: &[&str], deps: Vec<Dependency>) -> OpKind {
        let mut issue = Issue::new(id.into(), format!("issue {id}"), Timestamp::UNIX_EPOCH);
        issue.labels = labels.iter().map(|label| label.to_string()).collect();
        OpKind::Create { issue: Box::new(issue), deps }
    }

    fn issue_in(op: &OpKind, at: usize) -> &Issue {
        match op {
            OpKind::Bulk { ops } => match &ops[at] {
                OpKind::Create { issue, .. } => issue,
                _ => unreachable!(),
            },
            _ => unreachable!(),
        }
    }

    #[test]
    fn rows_are_made_as_stored_and_taken_only_for_their_own_value() {
        let dep: Dependency = serde_json::from_str(
            r#"{"issue_id":"t-other","depends_on_id":"t-1","type":"blocks","created_at":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let comment: Comment = serde_json::from_str(
            r#"{"id":1,"issue_id":"t-3","author":"a","text":"hi","created_at":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let bulk = OpKind::Bulk {
            ops: vec![
                new_issue("t-1", &["b", "a"], Vec::new()),
                new_issue("t-2", &["a", "b"], vec![dep.clone()]),
                new_issue("t-3", &[], Vec::new()),
                OpKind::Comment { comment: comment.clone() },
            ],
        };
        let mut ahead = RowsAhead::of(&bulk, true, true);
        // Unsorted labels are stored in another form: no row is made for t-1.
        assert!(ahead.take_issue(issue_in(&bulk, 0)).is_none());
        // An equal issue elsewhere is not the one the rows were made from.
        assert!(ahead.take_issue(&issue_in(&bulk, 1).clone()).is_none());
        let rows = ahead.take_issue(issue_in(&bulk, 1)).expect("rows of t-2");
        assert_eq!(rows.issue, issue_row(issue_in(&bulk, 1)));
        let stored_edge: Dependency =
            serde_json::from_slice(super::super::checked::open(&rows.edges[0]).unwrap()).unwrap();
        assert_eq!(stored_edge, Dependency { issue_id: "t-2".into(), ..dep });
        assert!(ahead.take_issue(issue_in(&bulk, 1)).is_none(), "rows are taken once");
        assert!(ahead.take_issue(issue_in(&bulk, 2)).is_some());
        let OpKind::Bulk { ops } = &bulk else { unreachable!() };
        let OpKind::Comment { comment: in_op } = &ops[3] else { unreachable!() };
        assert!(ahead.take_comment(&comment).is_none(), "an equal comment elsewhere");
        assert_eq!(ahead.take_comment(in_op), Some(comment_row(&comment)));
        assert!(
            RowsAhead::of(&new_issue("t-4", &[], Vec::new()), true, true)
                .take_issue(issue_in(&bulk, 2))
                .is_none()
        );
    }
}
