//! The import batch: records written as their source has them.
//!
//! An import (beads JSONL, a legacy `beads.db`, a Python-fleet home, a benchmark's generated
//! queue) carries issues, edges and comments that already exist somewhere, with their own ids,
//! authors and timestamps. They are written as given: beads keeps edges from before its
//! request rules (an epic blocking a task), and so does fleet. What the store itself
//! guarantees still holds — ids in the grammar, no dangling own-project edge, no cycle.
//!
//! A large import is gathered in an [`ImportBatch`] and written as a few bulk ops
//! ([`OpKind::Bulk`]), each carrying many records, instead of one op per record, by
//! [`write_import`]: one transaction, planned on the queue as that transaction sees it.

use super::Refusal;
use crate::journal::{self, WritingAhead};
use crate::model::{Comment, Dependency, Issue};
use crate::op::{Op, OpKind};
use crate::store::{Store, StoreError, View, Writer};
use crate::time::Clock;

/// What [`write_import`] did: what its plan said, the journal's trees written ahead (if asked
/// for and the journal could be read), and the ops it applied.
pub struct ImportWritten<R> {
    pub planned: R,
    pub ahead: Option<WritingAhead>,
    pub applied: Vec<Op>,
}

/// Writes an import as `actor`, all or nothing: `plan` reads the queue as the import's
/// transaction sees it and returns the batch to write and what to report; `applied` is told
/// when the records are written and the store's own upkeep (readiness) begins. With
/// `write_ahead`, the journal commit's trees are written while the transaction finishes
/// ([`journal::write_trees_ahead`]).
pub(crate) fn write_import<R>(
    store: &Store,
    (actor, clock): (&str, Clock),
    plan: impl FnOnce(&dyn View) -> Result<(ImportBatch, R), StoreError>,
    applied: &dyn Fn(),
    write_ahead: bool,
) -> Result<ImportWritten<R>, StoreError> {
    let ((planned, ahead), ops) = store.write(actor, clock, |writer| {
        writer.begin_bulk()?;
        let (batch, planned) = plan(writer.view())?;
        batch.apply(writer)?;
        applied();
        let ahead = if write_ahead { trees_ahead(store, writer) } else { None };
        Ok((planned, ahead))
    })?;
    Ok(ImportWritten { planned, ahead, applied: ops })
}

/// Starts writing the journal commit's trees while the store finishes the import; `None`
/// (the commit then writes them itself) if the journal cannot be read.
fn trees_ahead(store: &Store, writer: &Writer<'_>) -> Option<WritingAhead> {
    journal::write_trees_ahead(store.dir(), writer)
        .inspect_err(|error| tracing::debug!(%error, "the journal's trees are not written ahead"))
        .ok()
}

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
    /// Workspace settings the source carries, written after the records.
    settings: Vec<(String, String)>,
}

impl ImportBatch {
    pub fn with_capacity(records: usize) -> ImportBatch {
        ImportBatch { entries: Vec::with_capacity(records), settings: Vec::new() }
    }

    /// A workspace setting as the source has it.
    pub fn setting(&mut self, key: String, value: String) {
        self.settings.push((key, value));
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
        let journaled = writer.apply_bulk(self.entries)?;
        for (key, value) in &self.settings {
            writer.set_config(key, Some(value))?;
        }
        Ok(journaled)
    }
}
