//! `bd label add|remove|list|list-all|propagate`.

use serde::Serialize;

use super::context::BdContext;
use super::output::BdError;
use crate::cli::label::apply_label_change;
use crate::model::dep_type;

#[derive(Debug, clap::Subcommand)]
pub enum LabelCommand {
    /// Add a label to issues: `label add ID... LABEL`.
    Add {
        #[arg(required = true, num_args = 2..)]
        ids_then_label: Vec<String>,
    },
    /// Remove a label from issues: `label remove ID... LABEL`.
    #[command(visible_alias = "rm")]
    Remove {
        #[arg(required = true, num_args = 2..)]
        ids_then_label: Vec<String>,
    },
    /// List the labels of an issue.
    List { id: String },
    /// List every label in use, with how many issues carry it.
    ListAll,
    /// Copy a label of a parent onto all of its children: `label propagate PARENT LABEL`.
    Propagate { parent: String, label: String },
}

impl LabelCommand {
    pub fn writes(&self) -> bool {
        matches!(self, Self::Add { .. } | Self::Remove { .. } | Self::Propagate { .. })
    }
}

#[derive(Serialize)]
struct LabelCount {
    label: String,
    count: u64,
}

pub fn cmd_label(ctx: &BdContext, command: LabelCommand) -> Result<(), BdError> {
    match command {
        LabelCommand::Add { mut ids_then_label } => {
            let label = ids_then_label.pop().unwrap_or_default();
            change(ctx, &ids_then_label, &label, true)
        }
        LabelCommand::Remove { mut ids_then_label } => {
            let label = ids_then_label.pop().unwrap_or_default();
            change(ctx, &ids_then_label, &label, false)
        }
        LabelCommand::List { id } => list(ctx, &id),
        LabelCommand::ListAll => list_all(ctx),
        LabelCommand::Propagate { parent, label } => {
            let store = ctx.open_store()?;
            let reader = store.read()?;
            let parent = reader.resolve(&parent)?;
            let children: Vec<String> = reader
                .dependents(&parent)?
                .into_iter()
                .filter(|(_, kind)| kind == dep_type::PARENT_CHILD)
                .map(|(child, _)| child)
                .collect();
            drop(reader);
            if children.is_empty() {
                ctx.out.emit(&Vec::<String>::new(), || format!("{parent} has no children"));
                return Ok(());
            }
            change(ctx, &children, &label, true)
        }
    }
}

fn change(ctx: &BdContext, ids: &[String], label: &str, add: bool) -> Result<(), BdError> {
    let changes = apply_label_change(ctx.fleet()?, ids, label, add)?;
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

fn list(ctx: &BdContext, id: &str) -> Result<(), BdError> {
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

fn list_all(ctx: &BdContext) -> Result<(), BdError> {
    let store = ctx.open_store()?;
    let counts: Vec<LabelCount> = store
        .read()?
        .label_counts()?
        .into_iter()
        .map(|(label, count)| LabelCount { label, count })
        .collect();
    ctx.out.emit(&counts, || {
        if counts.is_empty() {
            return "No labels found in database".to_string();
        }
        let width = counts.iter().map(|c| c.label.len()).max().unwrap_or(0);
        let mut lines = vec![format!("🏷 All labels ({} unique):", counts.len())];
        lines.extend(counts.iter().map(|c| format!("  {:width$}  ({} issues)", c.label, c.count)));
        lines.join("\n")
    });
    Ok(())
}
