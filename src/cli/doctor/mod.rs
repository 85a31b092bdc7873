//! `fleet doctor`: checks everything a fleet needs, one line per check — the store file for
//! damage, `runtime.toml`, each coder's CLI (found on the agents' PATH, its version, signed
//! in) and the `bd` agents run — and names the fix of each problem; exits 1 when anything
//! fails. `fleet doctor --salvage` copies everything readable of a damaged store into a new
//! store and swaps it in.
//!
//! Also [`report_damaged`], with which the read commands (`list`, `search`, `ready`,
//! `blocked`, `stats`, `export`) report issue rows they had to leave out of a damaged store:
//! they print the rest, then name the damaged ids on stderr with this command as the fix, and
//! exit 1.
//!
//! The checks of the setup live in `setup` (runtime.toml, bd) and `coders`; this file runs
//! them with the store's and renders the report: `✓` ok, `!` a warning (nothing fails because
//! of it), `✗` a problem, each not-ok line followed by its fix.

mod coders;
mod instructions;
mod secrets;
mod setup;
mod setup_check;

use std::path::Path;

use serde::Serialize;

use super::context::{Context, fleet_home, journal_present};
use super::error::{CliError, ItemError};
use super::style::{Styled, Tone};
use crate::store::StoreError;
use crate::store::check::{self, Check, Report, Salvaged};
use setup_check::{SetupCheck, Status};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Copy every readable issue, edge, comment, label and configuration value into a new
    /// store and swap it in, keeping the damaged file as `beads.db.damaged-<time>`; reports
    /// what was saved and what was lost.
    #[arg(long)]
    pub salvage: bool,
    /// With `--salvage`: copy the store into a new one even when its checks find it healthy.
    #[arg(long, requires = "salvage")]
    pub force: bool,
    /// Only the store's checks (`bd doctor`: beads' doctor is about the database).
    #[arg(skip)]
    pub store_only: bool,
}

/// `fleet doctor --json` (schema/doctor.schema.json): the store's report and its fix, then the
/// checks of the setup.
#[derive(Serialize)]
struct DoctorOutput<'r> {
    #[serde(flatten)]
    report: &'r Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    setup: &'r [SetupCheck],
    /// No check found a problem (warnings allowed).
    ok: bool,
}

pub fn cmd_doctor(ctx: &Context, args: DoctorArgs) -> Result<(), CliError> {
    let dir = ctx.workspace_dir()?;
    if args.salvage {
        return salvage(ctx, dir, args.force);
    }
    let report = match check::check(dir) {
        Ok(report) => report,
        Err(StoreError::NotInitialized(_)) => no_store(dir),
        Err(error) => return Err(error.into()),
    };
    let fix = (!report.healthy).then(|| fix_for(dir, &report));
    let store = if report.healthy { ctx.open_store().ok() } else { None };
    let mut setup = if args.store_only {
        Vec::new()
    } else {
        setup::setup_checks(&fleet_home()?, store.as_ref())
    };
    setup.extend(journal_check(dir));
    setup.extend(store.as_ref().map(|store| unheld_check(store, ctx.now())));
    let failed: Vec<&SetupCheck> = setup.iter().filter(|c| c.status == Status::Problem).collect();
    let output = DoctorOutput {
        report: &report,
        fix: fix.clone(),
        setup: &setup,
        ok: report.healthy && failed.is_empty(),
    };
    ctx.out.emit_styled(&output, || render(&report, fix.as_deref(), &setup));
    if output.ok {
        return Ok(());
    }
    let mut failures = Vec::new();
    if !report.healthy {
        let problems = report.checks.iter().filter(|c| !c.ok).count();
        failures.push(format!(
            "{} is damaged: {problems} of {} checks found problems",
            report.path.display(),
            report.checks.len()
        ));
    }
    if !failed.is_empty() {
        let mut what: Vec<(String, usize)> = Vec::new();
        for check in &failed {
            let label = format!("{} {}", check.subject, check.check);
            match what.iter_mut().find(|(known, _)| *known == label) {
                Some((_, count)) => *count += 1,
                None => what.push((label, 1)),
            }
        }
        let what: Vec<String> = what
            .into_iter()
            .map(|(label, count)| if count > 1 { format!("{label} (×{count})") } else { label })
            .collect();
        let checks = if failed.len() == 1 { "check" } else { "checks" };
        failures.push(format!("{} setup {checks} failed: {}", failed.len(), what.join(", ")));
    }
    let mut error = CliError::new(failures.join("; "));
    if let Some(fix) = fix {
        error = error.with_hint(fix);
    }
    if !failed.is_empty() {
        error = error.with_hint("the fix of each failed check is printed under it");
    }
    Err(error)
}

/// The journal repository's check (see [`crate::journal::check_repository`]), with its fix in
/// words; none while there is no repository yet.
fn journal_check(dir: &Path) -> Option<SetupCheck> {
    use crate::journal::Health;
    const SUBJECT: &str = "journal repository";
    match crate::journal::check_repository(dir) {
        Health::Absent => None,
        Health::Readable { replicas, ops } => Some(SetupCheck::ok(
            SUBJECT,
            "objects",
            format!("{replicas} replica refs resolve; their {ops} ops read"),
        )),
        Health::Broken { git_dir, problem, empty } => {
            let shown = super::output::shell_word(&git_dir.display().to_string());
            let fix = if empty {
                format!(
                    "it holds no commit (its making was cut short): remove it with `rm -r {shown}`; \
                     the next `fleet journal commit` or `fleet sync` makes it again"
                )
            } else {
                format!(
                    "check it with `git -C {shown} fsck`; restore it from a backup, or move it \
                     aside and run `fleet sync` to fetch every replica's journal again"
                )
            };
            Some(SetupCheck::problem(SUBJECT, "objects", problem, fix))
        }
    }
}

/// The tasks in progress that no live supervisor and no person holds
/// ([`crate::supervisor::lease::unheld_tasks`]): a problem, since nothing finishes or releases
/// them, named one per line with the release that puts them back.
fn unheld_check(store: &crate::store::Store, now: jiff::Timestamp) -> SetupCheck {
    const SUBJECT: &str = "tasks in progress";
    match crate::supervisor::lease::unheld_tasks(store, now) {
        Ok(unheld) if unheld.is_empty() => {
            SetupCheck::ok(SUBJECT, "holders", "each is held by a live supervisor or a person")
        }
        Ok(unheld) => {
            let named: Vec<String> =
                unheld.iter().map(|t| format!("{} ({}): {}", t.id, t.assignee, t.why)).collect();
            let ids: Vec<&str> = unheld.iter().map(|t| t.id.as_str()).collect();
            SetupCheck::problem(
                SUBJECT,
                "holders",
                format!("{} held by no one: {}", unheld.len(), named.join("; ")),
                format!(
                    "put them back in the queue with `fleet release {}` (or close them)",
                    ids.join(" ")
                ),
            )
        }
        Err(error) => SetupCheck::warning(
            SUBJECT,
            "holders",
            format!("reading them failed: {error}"),
            "run `fleet doctor` again",
        ),
    }
}

/// The report of a workspace that has no store yet.
fn no_store(dir: &Path) -> Report {
    Report {
        path: dir.join(crate::workspace::STORE_FILE),
        healthy: false,
        checks: vec![Check {
            check: "file",
            ok: false,
            detail: format!("there is no store in {}", dir.display()),
            ids: Vec::new(),
        }],
        damaged: Vec::new(),
    }
}

/// One line per check: `✓ store file: opens`, `✗ coder claude sign-in: …`, with the ids and
/// the fix under each problem.
fn render(report: &Report, fix: Option<&str>, setup: &[SetupCheck]) -> Styled {
    let mut text = Styled::new();
    text.tone(Tone::Strong, &format!("fleet doctor: {}", report.path.display()));
    for check in &report.checks {
        let status = if check.ok { Status::Ok } else { Status::Problem };
        line(&mut text, status, &format!("store {}", check.check), &check.detail);
        if !check.ok {
            if !check.ids.is_empty() {
                text.plain(&format!("\n  ids: {}", check.ids.join(", ")));
            }
            if let Some(fix) = fix {
                text.plain(&format!("\n  fix: {fix}"));
            }
        }
    }
    for check in setup {
        line(&mut text, check.status, &format!("{} {}", check.subject, check.check), &check.detail);
        if let Some(fix) = &check.fix {
            text.plain(&format!("\n  fix: {fix}"));
        }
    }
    text
}

/// `\n✓ what: detail`, the mark in its colour.
fn line(text: &mut Styled, status: Status, what: &str, detail: &str) {
    let (mark, tone) = match status {
        Status::Ok => ("✓", Tone::Good),
        Status::Warning => ("!", Tone::Warn),
        Status::Problem => ("✗", Tone::Bad),
    };
    text.newline().tone(tone, mark).plain(&format!(" {what}: {detail}"));
}

/// The fix `fleet doctor` names where the git journal can make the store again.
const REBUILD_FIX: &str = "run `fleet rebuild` to make the store again from the git journal (it \
    works whether or not the store opens; the old file is kept beside it)";

/// The repair for a damaged or missing store: a rebuild from the git journal when there is
/// one, else a salvage — unless nothing in the file can be read, when only a backup or an
/// export helps. For a workspace without a store, or with an empty file in its place:
/// creating it.
fn fix_for(dir: &Path, report: &Report) -> String {
    if journal_present(dir) {
        return REBUILD_FIX.to_string();
    }
    if !report.path.exists() {
        return format!(
            "create it with `fleet init`, or import a queue into it: fleet import PATH (a beads export, a .beads directory, a Python-fleet home); {} is where it goes",
            dir.display()
        );
    }
    if std::fs::metadata(&report.path).is_ok_and(|meta| meta.len() == 0) {
        let path = report.path.display().to_string();
        return format!(
            "{path} is empty: it holds nothing, so removing it loses nothing (`rm {}`); then \
             create the store with `fleet init`, or by importing a queue: `fleet import PATH`",
            crate::cli::output::shell_word(&path)
        );
    }
    let unreadable = report.checks.first().is_some_and(|c| !c.ok);
    if !unreadable {
        return "run `fleet doctor --salvage` to copy everything readable into a new store (the damaged file is kept)".to_string();
    }
    let export = dir.join(crate::workspace::EXPORT_FILE);
    let mut fix = format!(
        "nothing in the file can be read: restore {} from a backup",
        dir.join(crate::workspace::STORE_FILE).display()
    );
    if export.is_file() {
        fix.push_str(&format!(
            ", or move it aside and import the last export: `fleet import {}`",
            export.display()
        ));
    }
    fix
}

fn salvage(ctx: &Context, dir: &Path, force: bool) -> Result<(), CliError> {
    let report = check::salvage(dir, ctx.clock, force).map_err(|error| match error {
        error @ StoreError::NothingToSalvage(_) => CliError::new(error.to_string())
            .with_hint("`fleet doctor` shows its checks; `--salvage --force` copies it anyway"),
        StoreError::Damaged { path, detail } => {
            let mut fix = "restore it from a backup".to_string();
            if journal_present(dir) {
                fix = REBUILD_FIX.to_string();
            }
            CliError::new(format!("{} cannot be salvaged: {detail}", path.display())).with_hint(fix)
        }
        StoreError::NotInitialized(_) if journal_present(dir) => CliError::new(format!(
            "there is no store at {} to salvage",
            dir.join(crate::workspace::STORE_FILE).display()
        ))
        .with_hint(REBUILD_FIX),
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
