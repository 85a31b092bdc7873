//! `fleet gc`: removes the worktrees of tasks whose work landed, after saving each branch tip
//! under `refs/fleet/archive/<id>`; refuses dirty worktrees by name; reports the disk freed.
//! The removal is recorded on each task through the tracker (`LandStep::Archived`).

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use crate::land::gc::{self, Collected};
use crate::tracker::{LandStep, Request};

#[derive(Debug, clap::Args)]
pub struct GcArgs {}

#[derive(Debug, Serialize)]
struct GcReport {
    removed: Vec<Collected>,
    refused: Vec<Collected>,
    freed_bytes: u64,
}

pub fn cmd_gc(ctx: &Context, _args: GcArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let mut landed = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        if gc::collectable(&issue) {
            landed.push(issue);
        }
        Ok(true)
    })?;
    drop(store);
    let (mut removed, mut refused) = (Vec::new(), Vec::new());
    for issue in &landed {
        let collected = gc::collect(issue);
        if collected.refused.is_some() {
            refused.push(collected);
            continue;
        }
        ctx.submit(Request::Land(Box::new(LandStep::Archived { id: issue.id.clone() })))?;
        removed.push(collected);
    }
    let freed_bytes = removed.iter().map(|c| c.freed_bytes).sum();
    let report = GcReport { removed, refused, freed_bytes };
    ctx.out.emit(&report, || render(&report));
    if report.refused.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = report.refused.iter().map(|c| c.id.as_str()).collect();
    Err(CliError::new(format!("left {} worktree(s) alone: {}", names.len(), names.join(", ")))
        .with_hint("commit or discard the changes in each (the lines above name them), then run `fleet gc` again"))
}

fn render(report: &GcReport) -> String {
    let mut lines: Vec<String> = report
        .removed
        .iter()
        .map(|c| {
            let tip = c.archived.as_deref().map(crate::land::short).unwrap_or("nothing");
            format!(
                "removed {} ({}); tip {tip} kept as refs/fleet/archive/{}",
                c.worktree, c.id, c.id
            )
        })
        .collect();
    lines.extend(
        report
            .refused
            .iter()
            .map(|c| format!("refused {}: {}", c.id, c.refused.as_deref().unwrap_or_default())),
    );
    lines.push(format!(
        "freed {:.1} MB in {} worktree(s)",
        report.freed_bytes as f64 / 1_048_576.0,
        report.removed.len()
    ));
    lines.join("\n")
}
