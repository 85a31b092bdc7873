//! The import batch: records written as their source has them.
//!
//! An import (beads JSONL, a legacy `beads.db`, a Python-fleet home, a benchmark's generated
//! queue) carries issues, edges and comments that already exist somewhere, with their own ids,
//! authors and timestamps. They are written as given: beads keeps edges from before its
//! request rules (an epic blocking a task), and so does fleet. What the store itself
//! guarantees still holds — ids in the grammar, no dangling own-project edge, no cycle.
//!
//! A large import is gathered in an [`ImportBatch`] and written as a few bulk ops
//! ([`OpKind::Bulk`]), each carrying many records, instead of one op per record.

use super::Refusal;
use crate::model::{Comment, Dependency, Issue};
use crate::op::OpKind;
use crate::store::Writer;

/// A new issue with the edges it starts with, as an op of its own.
pub fn import_new(
    writer: &mut Writer<'_>,
    issue: Issue,
    deps: Vec<Dependency>,
) -> Result<(), Refusal> {
    writer.apply(OpKind::Create { issue: Box::new(issue), deps })?;
    Ok(())
}

/// The records of an import, in the order they are to be written.
#[derive(Debug, Default)]
pub struct ImportBatch {
    entries: Vec<OpKind>,
}

impl ImportBatch {
    pub fn with_capacity(records: usize) -> ImportBatch {
        ImportBatch { entries: Vec::with_capacity(records) }
    }

    /// A new issue with the edges it starts with (their targets must be written before it).
    pub fn new_issue(&mut self, issue: Box<Issue>, deps: Vec<Dependency>) {
        self.entries.push(OpKind::Create { issue, deps });
    }

    /// An issue record as given, creating it or replacing the stored one.
    pub fn record(&mut self, issue: Box<Issue>) {
        self.entries.push(OpKind::Put { issue });
    }

    /// An edge as the source has it.
    pub fn edge(&mut self, dep: Dependency) {
        self.entries.push(OpKind::DepAdd { dep });
    }

    /// A comment as the source has it (its id, author and time).
    pub fn comment(&mut self, comment: Comment) {
        self.entries.push(OpKind::Comment { comment });
    }

    /// Writes the records as bulk ops; a record the store refuses fails the whole batch, and
    /// the transaction must then be abandoned. Returns how many ops were journaled.
    pub fn apply(self, writer: &mut Writer<'_>) -> Result<usize, Refusal> {
        Ok(writer.apply_bulk(self.entries)?)
    }
}
