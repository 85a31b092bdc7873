//! The shape of `bd show --json`, as beads 1.0.5 writes it.
//!
//! Each shown issue carries its own fields, the counts of its edges and comments, and its
//! dependencies as whole issues (every field of the issue plus `dependency_type`). Its
//! dependents and comments are listed only when asked (`--include-dependents`,
//! `--include-comments`): beads prints the counts alone by default, and tools that read
//! `dependents[].issue_type` (gastown) pass the flag. An epic shown with its dependents also
//! gets beads' progress fields (`epic_total_children`, `epic_closed_children`,
//! `epic_closeable`).

use serde::Serialize;
use serde_json::Value;

use crate::model::{Comment, Status, dep_type};
use crate::store::{IssueDetail, IssueSummary, LinkedIssue, Reader, StoreError};

/// What `--json` adds beyond the counts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Include {
    pub dependents: bool,
    pub comments: bool,
}

/// One issue of `bd show --json`.
#[derive(Serialize)]
pub(super) struct ShownIssue {
    #[serde(flatten)]
    summary: IssueSummary,
    /// Blocked by its dependencies (fleet's addition; beads has no such field).
    blocked: bool,
    dependencies: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependents: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comments: Option<Vec<Comment>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    epic_total_children: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    epic_closed_children: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    epic_closeable: Option<bool>,
}

/// `detail` in beads' shape, the linked issues read whole from `reader`.
pub(super) fn shown(
    reader: &Reader,
    detail: IssueDetail,
    include: Include,
) -> Result<ShownIssue, StoreError> {
    let dependencies = whole(reader, &detail.dependencies)?;
    let dependents =
        if include.dependents { Some(whole(reader, &detail.dependents)?) } else { None };
    let children: Vec<&LinkedIssue> =
        detail.dependents.iter().filter(|l| l.dependency_type == dep_type::PARENT_CHILD).collect();
    let epic =
        include.dependents && detail.summary.issue.issue_type == "epic" && !children.is_empty();
    let closed = children.iter().filter(|l| l.status == Status::Closed).count();
    Ok(ShownIssue {
        blocked: detail.blocked,
        dependencies,
        dependents,
        comments: include.comments.then_some(detail.comments),
        epic_total_children: epic.then_some(children.len()),
        epic_closed_children: epic.then_some(closed),
        epic_closeable: epic.then_some(closed == children.len()),
        summary: detail.summary,
    })
}

/// Each linked issue with every field of its own and the edge's `dependency_type`; one this
/// store does not hold (an external reference) keeps the short form, marked `missing`.
fn whole(reader: &Reader, linked: &[LinkedIssue]) -> Result<Vec<Value>, StoreError> {
    let mut items = Vec::with_capacity(linked.len());
    for link in linked {
        let mut item = match reader.issue(&link.id)? {
            Some(issue) => serde_json::to_value(issue),
            None => serde_json::to_value(link),
        }
        .expect("issues serialise");
        if let Value::Object(map) = &mut item {
            map.insert("dependency_type".into(), Value::from(link.dependency_type.clone()));
        }
        items.push(item);
    }
    Ok(items)
}
