//! `fleet label`: add, remove and list labels. The store side and the text of add, remove,
//! list and list-all are shared with `bd label`.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::output::printable;
use crate::store::{Store, StoreError};
use crate::tracker::{LabelChange, Request};

#[derive(Debug, clap::Subcommand)]
pub enum LabelCommand {
    /// Add LABEL to each issue: `label add ID… LABEL`.
    Add(LabelTargets),
    /// Remove LABEL from each issue: `label remove ID… LABEL`.
    Remove(LabelTargets),
    /// List the labels of an issue.
    List { id: String },
    /// List every label in use, with how many issues carry it.
    ListAll,
}

/// The arguments of `label add` and `label remove`, the same in both personalities.
#[derive(Debug, clap::Args)]
pub struct LabelTargets {
    #[arg(required = true, num_args = 2..)]
    pub ids_then_label: Vec<String>,
}

impl LabelTargets {
    /// The issue ids and the label (the last argument).
    pub fn split(&self) -> (&[String], &str) {
        match self.ids_then_label.split_last() {
            Some((label, ids)) => (ids, label),
            None => (&[], ""),
        }
    }
}

#[derive(Serialize)]
pub(super) struct LabelCount {
    label: String,
    count: u64,
}

pub fn cmd_label(ctx: &Context, command: LabelCommand) -> Result<(), CliError> {
    match command {
        LabelCommand::Add(targets) => change_labels(ctx, &targets, true),
        LabelCommand::Remove(targets) => change_labels(ctx, &targets, false),
        LabelCommand::List { id } => list_labels(ctx, &id),
        LabelCommand::ListAll => list_all(ctx),
    }
}

fn change_labels(ctx: &Context, targets: &LabelTargets, add: bool) -> Result<(), CliError> {
    let (ids, label) = targets.split();
    let changes = apply_label_change(ctx, ids, label, add)?;
    ctx.out.emit(&changes, || render_changes(&changes, add));
    Ok(())
}

/// One line per label change, as both personalities print them.
pub(super) fn render_changes(changes: &[LabelChange], add: bool) -> String {
    changes
        .iter()
        .map(|c| (c, printable(&c.label)))
        .map(|(c, label)| match (add, c.changed) {
            (true, true) => format!("✓ Added label '{label}' to {}", c.id),
            (true, false) => format!("{} already has label '{label}'", c.id),
            (false, true) => format!("✓ Removed label '{label}' from {}", c.id),
            (false, false) => format!("{} does not have label '{label}'", c.id),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The store side of `label add`/`label remove`, shared by both personalities: adds (or
/// removes) `label` on every issue of `ids` in one transaction.
pub(super) fn apply_label_change(
    ctx: &Context,
    ids: &[String],
    label: &str,
    add: bool,
) -> Result<Vec<LabelChange>, CliError> {
    let request = Request::Label { ids: ids.to_vec(), label: label.to_string(), add };
    Ok(ctx.submit(request)?.into_labels()?)
}

fn list_labels(ctx: &Context, id: &str) -> Result<(), CliError> {
    let (id, labels) = issue_labels(&ctx.open_store()?, id)?;
    ctx.out.emit(&labels, || render_labels(&id, &labels));
    Ok(())
}

/// The resolved id of `id` and its labels, for `label list` in both personalities.
pub(super) fn issue_labels(store: &Store, id: &str) -> Result<(String, Vec<String>), StoreError> {
    let reader = store.read()?;
    let id = reader.resolve(id)?;
    let labels = reader.issue(&id)?.map(|i| i.labels).unwrap_or_default();
    Ok((id, labels))
}

/// `label list` as text, the same in both personalities.
pub(super) fn render_labels(id: &str, labels: &[String]) -> String {
    if labels.is_empty() {
        return format!("{id} has no labels");
    }
    let mut lines = vec![format!("🏷 Labels for {id}:")];
    lines.extend(labels.iter().map(|l| format!("  - {}", printable(l))));
    lines.join("\n")
}

fn list_all(ctx: &Context) -> Result<(), CliError> {
    let counts = label_counts(&ctx.open_store()?)?;
    ctx.out.emit(&counts, || render_label_counts(&counts, "No labels in use"));
    Ok(())
}

/// Every label in use with how many issues carry it, for `label list-all` in both
/// personalities.
pub(super) fn label_counts(store: &Store) -> Result<Vec<LabelCount>, StoreError> {
    Ok(store
        .read()?
        .label_counts()?
        .into_iter()
        .map(|(label, count)| LabelCount { label, count })
        .collect())
}

/// `label list-all` as text; `none` is the personality's line for a store without labels.
pub(super) fn render_label_counts(counts: &[LabelCount], none: &str) -> String {
    if counts.is_empty() {
        return none.to_string();
    }
    let width = counts.iter().map(|c| c.label.len()).max().unwrap_or(0);
    let mut lines = vec![format!("🏷 All labels ({} unique):", counts.len())];
    lines.extend(
        counts.iter().map(|c| format!("  {:width$}  ({} issues)", printable(&c.label), c.count)),
    );
    lines.join("\n")
}
