//! `fleet doctor`: checks the store file for damage, one line per check, and names the fix;
//! `fleet doctor --salvage` copies everything readable into a new store and swaps it in.
//!
//! Also [`report_damaged`], with which the read commands (`list`, `search`, `ready`,
//! `blocked`, `stats`, `export`) report issue rows they had to leave out of a damaged store:
//! they print the rest, then name the damaged ids on stderr with this command as the fix, and
//! exit 1.

use std::path::Path;

use serde::Serialize;

use super::context::Context;
use super::error::{CliError, ItemError};
use crate::store::StoreError;
use crate::store::check::{self, Report, Salvaged};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Copy every readable issue, edge, comment, label and configuration value into a new
    /// store and swap it in, keeping the damaged file as `beads.db.damaged-<time>`; reports
    /// what was saved and what was lost.
    #[arg(long)]
    pub salvage: bool,
}

/// `fleet doctor --json`: the report and, when something is wrong, the fix.
#[derive(Serialize)]
struct DoctorOutput<'r> {
    #[serde(flatten)]
    report: &'r Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

pub fn cmd_doctor(ctx: &Context, args: DoctorArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    if args.salvage {
        return salvage(ctx, dir);
    }
    let report = check::check(dir)?;
    let fix = (!report.healthy).then(|| fix_for(dir, &report));
    ctx.out.emit(&DoctorOutput { report: &report, fix: fix.clone() }, || {
        render(&report, fix.as_deref())
    });
    match fix {
        None => Ok(()),
        Some(fix) => {
            let problems = report.checks.iter().filter(|c| !c.ok).count();
            Err(CliError::new(format!(
                "{} is damaged: {problems} of {} checks found problems",
                report.path.display(),
                report.checks.len()
            ))
            .with_hint(fix))
        }
    }
}

/// One line per check: `ok      <check>: <detail>` or `problem <check>: <detail>`, with the
/// ids and the fix under each problem.
fn render(report: &Report, fix: Option<&str>) -> String {
    let mut lines = vec![format!("fleet doctor: {}", report.path.display())];
    for check in &report.checks {
        let mark = if check.ok { "ok     " } else { "problem" };
        lines.push(format!("{mark} {}: {}", check.check, check.detail));
        if !check.ok {
            if !check.ids.is_empty() {
                lines.push(format!("        ids: {}", check.ids.join(", ")));
            }
            if let Some(fix) = fix {
                lines.push(format!("        fix: {fix}"));
            }
        }
    }
    lines.join("\n")
}

/// The repair for a damaged store: a rebuild from the git journal when there is one, else a
/// salvage — unless nothing in the file can be read, when only a backup or an export helps.
fn fix_for(dir: &Path, report: &Report) -> String {
    if journal_present(dir) {
        return "run `fleet rebuild` to rebuild the store from the git journal".to_string();
    }
    let unreadable = report.checks.first().is_some_and(|c| !c.ok);
    if !unreadable {
        return "run `fleet doctor --salvage` to copy everything readable into a new store (the damaged file is kept)".to_string();
    }
    let export = dir.join("issues.jsonl");
    let mut fix = format!(
        "nothing in the file can be read: restore {} from a backup",
        dir.join(crate::store::STORE_FILE).display()
    );
    if export.is_file() {
        fix.push_str(&format!(
            ", or move it aside and import the last export: `fleet import {}`",
            export.display()
        ));
    }
    fix
}

fn salvage(ctx: &Context, dir: &Path) -> Result<(), CliError> {
    let report = check::salvage(dir, ctx.clock).map_err(|error| match error {
        StoreError::Damaged { path, detail } => {
            let mut fix = "restore it from a backup".to_string();
            if journal_present(dir) {
                fix = "rebuild it from the git journal: `fleet rebuild`".to_string();
            }
            CliError::new(format!("{} cannot be salvaged: {detail}", path.display())).with_hint(fix)
        }
        other => other.into(),
    })?;
    ctx.out.emit(&report, || render_salvage(&report));
    Ok(())
}

fn render_salvage(s: &Salvaged) -> String {
    let mut lines = vec![
        format!(
            "salvaged {} issues, {} edges, {} comments, {} labels and {} configuration values into a new store",
            s.issues_saved, s.edges_saved, s.comments_saved, s.labels_saved, s.config_saved
        ),
        format!("kept the damaged file as {}", s.damaged_file.display()),
    ];
    let lost =
        [("issues", &s.issues_lost), ("edges", &s.edges_lost), ("comments", &s.comments_lost)];
    for (what, ids) in lost {
        if !ids.is_empty() {
            lines.push(format!("lost {} {what}: {}", ids.len(), ids.join(", ")));
        }
    }
    for part in &s.unreadable {
        lines.push(format!("could not read: {part}"));
    }
    if s.issues_lost.is_empty() && s.unreadable.is_empty() {
        lines.push("nothing was lost".to_string());
    }
    lines.push("a running `fleet run` stops when it sees the file replaced; start it again".into());
    lines.join("\n")
}

/// After a read command printed what it could: the issue rows it left out because they do not
/// decode, as an error naming them and the fix (exit 1). With `--json` each id is an entry of
/// the error's `errors`.
pub(super) fn report_damaged(ctx: &Context, ids: Vec<String>) -> Result<(), CliError> {
    if ids.is_empty() {
        return Ok(());
    }
    let message = format!("damaged: {}", ids.join(", "));
    let hint = "run `fleet doctor` to see what is damaged and how to repair it; the other issues are shown";
    let error = if ctx.out.json {
        let items = ids
            .into_iter()
            .map(|id| ItemError {
                error: format!("issue {id} is damaged: its row does not decode"),
                id,
            })
            .collect();
        CliError::for_items(message, items)
    } else {
        CliError::new(message)
    };
    Err(error.with_hint(hint))
}

/// Whether this workspace has a git journal with ops in it, for `fleet rebuild` to rebuild
/// the store from (found as `fleet journal` finds it).
fn journal_present(dir: &Path) -> bool {
    crate::journal::JournalRepo::find(dir)
        .ok()
        .flatten()
        .and_then(|repo| repo.replicas().ok())
        .is_some_and(|replicas| !replicas.is_empty())
}
