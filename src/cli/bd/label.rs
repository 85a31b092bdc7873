//! `bd label add|remove|list|list-all|propagate`.

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::label::{
    LabelTargets, apply_label_change, issue_labels, label_counts, render_changes,
    render_label_counts, render_labels,
};
use crate::model::dep_type;

#[derive(Debug, clap::Subcommand)]
pub enum LabelCommand {
    /// Add a label to issues: `label add ID... LABEL`.
    Add(LabelTargets),
    /// Remove a label from issues: `label remove ID... LABEL`.
    #[command(visible_alias = "rm")]
    Remove(LabelTargets),
    /// List the labels of an issue.
    List { id: String },
    /// List every label in use, with how many issues carry it.
    ListAll,
    /// Copy a label of a parent onto all of its children: `label propagate PARENT LABEL`.
    Propagate { parent: String, label: String },
}

impl LabelCommand {
    pub fn writes(&self) -> bool {
        matches!(self, Self::Add(_) | Self::Remove(_) | Self::Propagate { .. })
    }
}

pub fn cmd_label(ctx: &BdContext, command: LabelCommand) -> Result<(), CliError> {
    match command {
        LabelCommand::Add(targets) => {
            let (ids, label) = targets.split();
            change(ctx, ids, label, true)
        }
        LabelCommand::Remove(targets) => {
            let (ids, label) = targets.split();
            change(ctx, ids, label, false)
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

fn change(ctx: &BdContext, ids: &[String], label: &str, add: bool) -> Result<(), CliError> {
    let changes = apply_label_change(ctx.require_store()?, ids, label, add)
        .map_err(CliError::message_only)?;
    ctx.out.emit(&changes, || render_changes(&changes, add));
    Ok(())
}

fn list(ctx: &BdContext, id: &str) -> Result<(), CliError> {
    let (id, labels) = issue_labels(&ctx.open_store()?, id)?;
    ctx.out.emit(&labels, || render_labels(&id, &labels));
    Ok(())
}

fn list_all(ctx: &BdContext) -> Result<(), CliError> {
    let counts = label_counts(&ctx.open_store()?)?;
    ctx.out.emit(&counts, || render_label_counts(&counts, "No labels found in database"));
    Ok(())
}
