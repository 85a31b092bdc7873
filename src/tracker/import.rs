//! The import batch: records written as their source has them.
//!
//! An import (beads JSONL, a legacy `beads.db`, a Python-fleet home, a benchmark's generated
//! queue) carries issues, edges and comments that already exist somewhere, with their own ids,
//! authors and timestamps. They are written as given: beads keeps edges from before its
//! request rules (an epic blocking a task), and so does fleet. What the store itself
//! guarantees still holds — ids in the grammar, no dangling own-project edge, no cycle.

use super::Refusal;
use crate::model::{Comment, Dependency, Issue};
use crate::op::OpKind;
use crate::store::Writer;

/// A new issue with the edges it starts with.
pub fn import_new(
    writer: &mut Writer<'_>,
    issue: Issue,
    deps: Vec<Dependency>,
) -> Result<(), Refusal> {
    writer.apply(OpKind::Create { issue: Box::new(issue), deps })?;
    Ok(())
}

/// An edge as the source has it.
pub fn import_edge(writer: &mut Writer<'_>, dep: Dependency) -> Result<(), Refusal> {
    writer.apply(OpKind::DepAdd { dep })?;
    Ok(())
}

/// A comment as the source has it (its id, author and time).
pub fn import_comment(writer: &mut Writer<'_>, comment: Comment) -> Result<(), Refusal> {
    writer.apply(OpKind::Comment { comment })?;
    Ok(())
}
