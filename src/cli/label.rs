//! `fleet label`: add, remove and list labels.

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use crate::op::OpKind;

#[derive(Debug, clap::Subcommand)]
pub enum LabelCommand {
    /// Add LABEL to each issue: `label add ID… LABEL`.
    Add {
        #[arg(required = true, num_args = 2..)]
        ids_then_label: Vec<String>,
    },
    /// Remove LABEL from each issue: `label remove ID… LABEL`.
    Remove {
        #[arg(required = true, num_args = 2..)]
        ids_then_label: Vec<String>,
    },
    /// List the labels of an issue.
    List { id: String },
    /// List every label in use, with how many issues carry it.
    ListAll,
}

#[derive(Serialize)]
pub(super) struct LabelChange {
    pub id: String,
    pub label: String,
    pub changed: bool,
}

#[derive(Serialize)]
struct LabelCount {
    label: String,
    count: u64,
}

pub fn cmd_label(ctx: &Context, command: LabelCommand) -> Result<(), CliError> {
    match command {
        LabelCommand::Add { ids_then_label } => change_labels(ctx, ids_then_label, true),
        LabelCommand::Remove { ids_then_label } => change_labels(ctx, ids_then_label, false),
        LabelCommand::List { id } => list_labels(ctx, &id),
        LabelCommand::ListAll => list_all(ctx),
    }
}

fn change_labels(ctx: &Context, mut args: Vec<String>, add: bool) -> Result<(), CliError> {
    let label = args.pop().unwrap_or_default();
    let changes = apply_label_change(ctx, &args, &label, add)?;
    ctx.out.emit(&changes, || {
        changes
            .iter()
            .map(|c| match (add, c.changed) {
                (true, true) => format!("✓ Added label '{}' to {}", c.label, c.id),
                (true, false) => format!("{} already has label '{}'", c.id, c.label),
                (false, true) => format!("✓ Removed label '{}' from {}", c.label, c.id),
                (false, false) => format!("{} does not have label '{}'", c.id, c.label),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

/// The store side of `label add`/`label remove`, shared by both personalities: adds (or
/// removes) `label` on every issue of `ids` in one transaction.
pub(super) fn apply_label_change(
    ctx: &Context,
    ids: &[String],
    label: &str,
    add: bool,
) -> Result<Vec<LabelChange>, CliError> {
    let label = label.to_string();
    if label.trim().is_empty() {
        return Err(CliError::new("label is empty"));
    }
    let store = ctx.open_store()?;
    let (changes, _) = store.write(&ctx.actor, ctx.clock, |writer| {
        let mut changes = Vec::new();
        for input in ids {
            let id = writer.resolve(input)?;
            let kind = if add {
                OpKind::LabelAdd { id: id.clone(), label: label.clone() }
            } else {
                OpKind::LabelRemove { id: id.clone(), label: label.clone() }
            };
            let changed = writer.apply(kind)?;
            changes.push(LabelChange { id, label: label.clone(), changed });
        }
        Ok(changes)
    })?;
    Ok(changes)
}

fn list_labels(ctx: &Context, id: &str) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let id = reader.resolve(id)?;
    let labels = reader.issue(&id)?.map(|i| i.labels).unwrap_or_default();
    ctx.out.emit(&labels, || {
        if labels.is_empty() {
            return format!("{id} has no labels");
        }
        let mut lines = vec![format!("🏷 Labels for {id}:")];
        lines.extend(labels.iter().map(|l| format!("  - {l}")));
        lines.join("\n")
    });
    Ok(())
}

fn list_all(ctx: &Context) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let counts: Vec<LabelCount> = store
        .read()?
        .label_counts()?
        .into_iter()
        .map(|(label, count)| LabelCount { label, count })
        .collect();
    ctx.out.emit(&counts, || {
        if counts.is_empty() {
            return "No labels in use".to_string();
        }
        let width = counts.iter().map(|c| c.label.len()).max().unwrap_or(0);
        let mut lines = vec![format!("🏷 All labels ({} unique):", counts.len())];
        lines.extend(counts.iter().map(|c| format!("  {:width$}  ({} issues)", c.label, c.count)));
        lines.join("\n")
    });
    Ok(())
}
