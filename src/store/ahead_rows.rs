//! The rows of a bulk op's new issues, serialised on the encoder thread.
//!
//! An import's bulk ops are written on one thread while a second encodes each op's journal
//! row ([`Writer::apply_bulk`]). The second thread also serialises the rows the op's new
//! issues and their first edges will be stored as, so the writing thread only inserts them.
//!
//! A row is used only for the very issue it was made from, found by its address in the op
//! (which lives, unchanged, until the op is applied). An issue the writer stores in another
//! form (labels put in order) has another address and is serialised where it is written, so a
//! row made ahead can never stand for a value it was not made from.
//!
//! [`Writer::apply_bulk`]: super::Writer::apply_bulk

use std::collections::VecDeque;

use crate::model::{Dependency, Issue};
use crate::op::OpKind;

/// An op's journal row and the rows of its new issues, as the encoder thread sends them.
pub(super) struct Encoded {
    pub journal: Vec<u8>,
    pub rows: RowsAhead,
}

/// The rows made ahead for one op's `Create` entries, in entry order.
#[derive(Default)]
pub(super) struct RowsAhead {
    issues: VecDeque<NewIssueRows>,
}

/// One new issue's rows: its issue row and one edge row per edge it is created with.
pub(super) struct NewIssueRows {
    /// The address of the issue they were made from (compared, never followed).
    made_from: usize,
    pub issue: Vec<u8>,
    pub edges: Vec<Vec<u8>>,
}

impl RowsAhead {
    /// Serialises the rows of a bulk op's new issues whose labels are already in stored order.
    pub fn of(op: &OpKind) -> RowsAhead {
        let OpKind::Bulk { ops } = op else {
            return RowsAhead::default();
        };
        let issues = ops
            .iter()
            .filter_map(|entry| match entry {
                OpKind::Create { issue, deps } if labels_in_stored_order(issue) => {
                    Some(NewIssueRows {
                        made_from: address(issue),
                        issue: issue_row(issue),
                        edges: deps.iter().map(|dep| edge_row(&edge_of(&issue.id, dep))).collect(),
                    })
                }
                _ => None,
            })
            .collect();
        RowsAhead { issues }
    }

    /// The rows made from `issue` (this very value), if any were.
    pub fn take(&mut self, issue: &Issue) -> Option<NewIssueRows> {
        let at = self.issues.iter().position(|rows| rows.made_from == address(issue))?;
        // Entries before it were not written as created (refused, or stored in another form).
        self.issues.drain(..at);
        self.issues.pop_front()
    }
}

fn address(issue: &Issue) -> usize {
    std::ptr::from_ref(issue) as usize
}

/// Whether `issue`'s labels are as the store keeps them: sorted, without repeats.
pub(super) fn labels_in_stored_order(issue: &Issue) -> bool {
    issue.labels.windows(2).all(|pair| pair[0] < pair[1])
}

/// An issue's row in the issue table.
pub(super) fn issue_row(issue: &Issue) -> Vec<u8> {
    serde_json::to_vec(issue).expect("an issue serialises")
}

/// An edge's row in the edge table.
pub(super) fn edge_row(dep: &Dependency) -> Vec<u8> {
    serde_json::to_vec(dep).expect("a dependency serialises")
}

/// An edge a new issue is created with, as stored: it belongs to the issue, whatever its
/// `issue_id` said.
pub(super) fn edge_of(issue_id: &str, dep: &Dependency) -> Dependency {
    Dependency { issue_id: issue_id.to_string(), ..dep.clone() }
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
    fn rows_are_made_as_stored_and_taken_only_for_their_own_issue() {
        let dep: Dependency = serde_json::from_str(
            r#"{"issue_id":"t-other","depends_on_id":"t-1","type":"blocks","created_at":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let bulk = OpKind::Bulk {
            ops: vec![
                new_issue("t-1", &["b", "a"], Vec::new()),
                new_issue("t-2", &["a", "b"], vec![dep.clone()]),
                new_issue("t-3", &[], Vec::new()),
            ],
        };
        let mut ahead = RowsAhead::of(&bulk);
        // Unsorted labels are stored in another form: no row is made for t-1.
        assert!(ahead.take(issue_in(&bulk, 0)).is_none());
        // An equal issue elsewhere is not the one the rows were made from.
        assert!(ahead.take(&issue_in(&bulk, 1).clone()).is_none());
        let rows = ahead.take(issue_in(&bulk, 1)).expect("rows of t-2");
        assert_eq!(rows.issue, issue_row(issue_in(&bulk, 1)));
        let stored_edge: Dependency = serde_json::from_slice(&rows.edges[0]).unwrap();
        assert_eq!(stored_edge, Dependency { issue_id: "t-2".into(), ..dep });
        assert!(ahead.take(issue_in(&bulk, 1)).is_none(), "rows are taken once");
        assert!(ahead.take(issue_in(&bulk, 2)).is_some());
        assert!(
            RowsAhead::of(&new_issue("t-4", &[], Vec::new())).take(issue_in(&bulk, 2)).is_none()
        );
    }
}
