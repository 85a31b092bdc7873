//! `fleet import` and `fleet export`: issues in and out of beads' own formats, plus the
//! auto-export hook that runs after write commands.
//!
//! Import narrates on stderr what it found at the path, reads it (with a progress bar on a
//! terminal for large inputs), creates the workspace if there is none (with the prefix of the
//! imported ids), and applies everything in one transaction. The summary goes to stderr, or
//! to stdout as JSON with `--json`.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::output::{Mode, write_stderr};
use crate::beads::{
    self, Batch, BeadsError, Detected, ExportOptions, ImportOptions, ImportReport, Progress, Source,
};
use crate::config::{self, Migration};
use crate::store::{Store, StoreError};
use crate::workspace::STORE_FILE;

/// Inputs at least this large get a progress bar on a terminal.
const PROGRESS_BYTES: usize = 2 << 20;
/// At most this many skipped dependencies are listed in the human summary.
const LISTED_SKIPS: usize = 50;

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// What to import: a beads JSONL file (`-` for stdin), a `.beads/` directory, a project
    /// that holds one, a legacy SQLite `beads.db`, a Python-fleet home (its runtime.toml is
    /// translated into $FLEET_HOME/runtime.toml too), or a Python fleet's runtime.toml alone
    /// (default: the workspace's `.beads/issues.jsonl`).
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,
    /// The same as PATH (bd's older spelling).
    #[arg(short = 'i', long = "input", value_name = "PATH", conflicts_with = "path", hide = true)]
    pub input: Option<PathBuf>,
    /// Report what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip lines that cannot be read, reporting each, instead of importing nothing.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// For a Dolt-backed beads workspace: run `bd export` there and import what it writes.
    #[arg(long)]
    pub via_bd: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Write to FILE (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Include everything: infra types (agent, rig, role, message), templates, ephemeral
    /// issues and memories.
    #[arg(long)]
    pub all: bool,
    /// Include the infra types, templates and ephemeral issues (not memories).
    #[arg(long)]
    pub include_infra: bool,
    /// Mask secrets in every record: token shapes, and the values of the secret-looking
    /// variables of this environment and of runtime.toml's coders and accounts (to purge a
    /// queue that holds some; `fleet doctor` finds them).
    #[arg(long)]
    pub redact: bool,
    /// Write fleet's working directories as stored (absolute paths). By default one inside
    /// the project is written relative to it and any other is left out.
    #[arg(long)]
    pub include_paths: bool,
    /// Also write `bd remember` memories (left out by default: they may hold private notes).
    #[arg(long)]
    pub include_memories: bool,
    /// Leave out memories (the default; kept for older scripts).
    #[arg(long, hide = true, conflicts_with = "include_memories")]
    pub no_memories: bool,
}

/// Turns a library error into one for the user, with the fix where there is one.
fn cli_error(error: BeadsError) -> CliError {
    match error {
        BeadsError::Store(store) => store.into(),
        BeadsError::Line { .. } => CliError::new(error.to_string()).with_hint(
            "nothing was imported; fix the line, or pass --skip-bad-lines to import the others",
        ),
        BeadsError::Dolt { ref beads_dir, ref project_dir } => {
            dolt_error(&error, beads_dir, project_dir, Importer::Fleet)
        }
        BeadsError::NothingFound(_) | BeadsError::Missing(_) => CliError::new(error.to_string())
            .with_hint("pass a beads JSONL file, a .beads directory, or a project that holds one"),
        other => CliError::new(other.to_string()),
    }
}

/// Which command the hints of an import name: bd's imports into the project's own store,
/// fleet's into the workspace it was pointed at (the central queue by default).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Importer {
    Bd,
    Fleet,
    /// `fleet import` of a project's workspace into another one (the central queue).
    FleetElsewhere,
}

/// The importer of this command, importing the workspace `source` into `target_dir`.
fn importer(ctx: &Context, target_dir: &Path, source: &Path) -> Importer {
    match ctx.personality() {
        super::context::Personality::Bd => Importer::Bd,
        _ if same_dir(target_dir, source) => Importer::Fleet,
        _ => Importer::FleetElsewhere,
    }
}

fn dolt_error(
    error: &BeadsError,
    beads_dir: &Path,
    project_dir: &Path,
    importer: Importer,
) -> CliError {
    let command = if importer == Importer::Bd { "bd import" } else { "fleet import" };
    let mut cli = CliError::new(error.to_string()).with_hint(format!(
        "export it with beads' bd, then import the file: cd {} && bd export -o issues.jsonl && {command} issues.jsonl",
        project_dir.display()
    ));
    if beads_bd().is_some() {
        cli = cli.with_hint(format!(
            "or let fleet run that export: {command} {} --via-bd",
            beads_dir.display()
        ));
    }
    if importer == Importer::FleetElsewhere {
        cli = cli.with_hint(format!(
            "`fleet import` fills the workspace it runs in (fleet's central queue here); to give \
             the project its own store, run `fleet import .beads --via-bd --db .beads` in {}",
            project_dir.display()
        ));
    }
    let stale = [crate::workspace::EXPORT_FILE, "beads.jsonl"]
        .iter()
        .map(|n| beads_dir.join(n))
        .find(|p| p.is_file());
    if let Some(stale) = stale {
        cli = cli.with_hint(format!(
            "{} is an earlier export and may be out of date; import it only if you know it is current",
            stale.display()
        ));
    }
    cli
}

/// A progress bar on stderr, or nothing.
struct Bar(Option<ProgressBar>);

impl Bar {
    fn new(show: bool) -> Bar {
        Bar(show.then(|| {
            let bar = ProgressBar::new(0);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            bar
        }))
    }

    /// Prints a note on a line of its own, not over the bar.
    fn note(&self, out: &super::output::Output, text: &str) {
        match &self.0 {
            Some(bar) => bar.suspend(|| out.note(text)),
            None => out.note(text),
        }
    }
}

impl Progress for Bar {
    fn start(&self, phase: &'static str, total: u64) {
        let Some(bar) = &self.0 else { return };
        bar.reset();
        if total == 0 {
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
        } else {
            bar.set_style(
                ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec})")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            bar.set_length(total);
        }
        bar.set_message(phase);
    }

    fn advance(&self, steps: u64) {
        if let Some(bar) = &self.0 {
            bar.inc(steps);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

pub fn cmd_import(ctx: &Context, args: ImportArgs) -> Result<(), CliError> {
    let target_dir = ctx.workspace_dir()?;
    let path = match args.path.clone().or(args.input.clone()) {
        Some(path) => path,
        None => target_dir.join(crate::workspace::EXPORT_FILE),
    };
    if is_config_file(&path) {
        ctx.out.note(&format!("Found a runtime configuration {}", path.display()));
        let migration = translate_config(&path, args.dry_run)?;
        ctx.out.emit_plain(&migration, String::new);
        render_migration(ctx, &migration);
        return Ok(());
    }
    let detected = beads::detect(&path).map_err(cli_error)?;
    ctx.out.note(&format!("Found {}", detected.description));
    let mut temp_export = None;
    let source = match &detected.source {
        Source::Dolt { beads_dir, project_dir, .. } => {
            if !args.via_bd {
                let error = BeadsError::Dolt {
                    beads_dir: beads_dir.clone(),
                    project_dir: project_dir.clone(),
                };
                return Err(dolt_error(
                    &error,
                    beads_dir,
                    project_dir,
                    importer(ctx, target_dir, beads_dir),
                ));
            }
            let file = export_with_bd(ctx, project_dir)?;
            temp_export = Some(file.clone());
            Source::Jsonl(Some(file))
        }
        other => other.clone(),
    };
    let source = match source {
        Source::Sqlite(path) if !args.dry_run && same_file(&path, &target_dir.join(STORE_FILE)) => {
            Source::Sqlite(move_legacy_aside(ctx, &path)?)
        }
        other => other,
    };
    let result = import_source(ctx, &args, &detected, &source, target_dir);
    if let Some(file) = temp_export {
        let _ = std::fs::remove_file(file);
    }
    let report = result?;
    let home_config = detected.fleet_home.as_ref().map(|home| home.join(config::FILE_NAME));
    let migration = match home_config.filter(|file| file.is_file()) {
        Some(file) => Some(translate_config(&file, args.dry_run)?),
        None => None,
    };
    render_import(ctx, &report, migration.as_ref());
    Ok(())
}

/// A path `fleet import` reads as a runtime configuration: a `.toml` file.
fn is_config_file(path: &Path) -> bool {
    path.is_file() && path.extension().is_some_and(|ext| ext == "toml")
}

/// Translates the Python fleet's config at `source` into `$FLEET_HOME/runtime.toml`.
fn translate_config(source: &Path, dry_run: bool) -> Result<Migration, CliError> {
    let target = super::context::fleet_home()?.join(config::FILE_NAME);
    config::migrate(source, &target, dry_run).map_err(|error| {
        let cli = CliError::new(error.message);
        match error.hint {
            Some(hint) => cli.with_hint(hint),
            None => cli,
        }
    })
}

/// What a translation of a config did, on stderr (the way an import narrates).
fn render_migration(ctx: &Context, migration: &Migration) {
    if ctx.out.json || ctx.out.quiet {
        return;
    }
    for line in migration_lines(migration) {
        write_stderr(&line);
    }
}

/// The lines of [`render_migration`]: where from and to, each key taken over (renamed ones as
/// `old → new`), each one left out and why, each one the target kept.
fn migration_lines(m: &Migration) -> Vec<String> {
    let verb = if m.dry_run { "Would translate" } else { "Translated" };
    let whither = if m.in_place {
        format!("{verb} {} in place", m.source.display())
    } else {
        format!("{verb} {} into {}", m.source.display(), m.target.display())
    };
    let mut lines = Vec::new();
    if m.translated.is_empty() && m.dropped.is_empty() && m.kept.is_empty() {
        lines.push(format!("{whither}: nothing to translate"));
        return lines;
    }
    lines.push(format!("{whither}:"));
    for key in &m.translated {
        let name = if key.from == key.to {
            key.to.clone()
        } else {
            format!("{} → {}", key.from, key.to)
        };
        lines.push(format!("  {name} = {}", key.value));
    }
    for key in &m.dropped {
        let line = key.line.map(|l| format!(" (line {l})")).unwrap_or_default();
        lines.push(format!("  dropped {}{line}: {}", key.key, key.why));
    }
    for key in &m.kept {
        lines.push(format!(
            "  kept {} = {} (already set here; the source has {})",
            key.key, key.value, key.source_value
        ));
    }
    if m.translated.is_empty() && !m.in_place {
        lines.push(format!("  {} is unchanged", m.target.display()));
    }
    lines
}

/// What a legacy SQLite `beads.db` is renamed to when it is migrated in place.
const LEGACY_SQLITE_KEPT: &str = "beads.sqlite.db";

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Moves beads' SQLite `beads.db` out of the way of fleet's store (same file name), keeping
/// it beside as `beads.sqlite.db`; returns where it now is.
fn move_legacy_aside(ctx: &Context, path: &Path) -> Result<PathBuf, CliError> {
    let kept = path.with_file_name(LEGACY_SQLITE_KEPT);
    if kept.exists() {
        return Err(CliError::new(format!(
            "{} already exists; cannot keep {} there",
            kept.display(),
            path.display()
        ))
        .with_hint(format!("move {} away, then import again", kept.display())));
    }
    std::fs::rename(path, &kept).map_err(|e| {
        CliError::new(format!("renaming {} to {}: {e}", path.display(), kept.display()))
    })?;
    ctx.out.note(&format!(
        "Kept beads' SQLite database as {}; fleet's store takes its place",
        kept.display()
    ));
    Ok(kept)
}

/// Store cache per imported record for the import's one transaction (see
/// [`crate::store::size_cache_for_bulk`]): 100k issues import in ~0.4 s less with 400 MiB than
/// with the default 32 MiB, for ~150 MiB more peak memory.
const CACHE_PER_RECORD: usize = 4096;

fn import_source(
    ctx: &Context,
    args: &ImportArgs,
    detected: &Detected,
    source: &Source,
    target_dir: &Path,
) -> Result<ImportReport, CliError> {
    let show_bar = std::io::stderr().is_terminal() && !ctx.out.json && !ctx.out.quiet;
    let started = std::time::Instant::now();
    let (mut batch, bar) = read_source(ctx, source, target_dir, show_bar)?;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "import: source read");
    if !args.skip_bad_lines
        && let Some(error) = batch.first_error()
    {
        bar.finish();
        return Err(cli_error(error));
    }
    let mut tasks = None;
    if let Some(home) = &detected.fleet_home {
        let found = beads::detect::read_tasks(home).map_err(cli_error)?;
        tasks = Some(batch.apply_tasks(&found));
    }
    if let Some(root) = target_dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        batch.resolve_relative_cwds(&std::fs::canonicalize(root).unwrap_or_else(|_| root.into()));
    }
    if batch.lines == 0 {
        ctx.out.note(&format!("Empty file: {}", source.display()));
    }
    let commit_journal = |committed| {
        // Its note is a line of its own, not one drawn over the bar.
        bar.finish();
        super::journal::report_commit_after(ctx, committed);
    };
    let options = ImportOptions { dry_run: args.dry_run, commit_journal: Some(&commit_journal) };
    // A store holds about 1.7 KB per imported issue; the transaction dirties more than that.
    crate::store::size_cache_for_bulk(batch.records.len().saturating_mul(CACHE_PER_RECORD));
    let mut report = match Store::open(target_dir) {
        Ok(store) => {
            if !args.dry_run {
                // An import killed between making the store and these files left them out.
                warn_unless_written(ctx, super::init::write_missing_files(target_dir));
            }
            beads::import::run(&store, ctx.actor(), ctx.clock, batch, &options, &bar)
                .map_err(cli_error)?
        }
        Err(StoreError::NotInitialized(_)) => import_fresh(ctx, target_dir, batch, &options, &bar)?,
        Err(error) => return Err(error.into()),
    };
    bar.finish();
    report.source = source.display();
    report.kind = source.kind().to_string();
    report.found.clone_from(&detected.description);
    if let Some((applied, unmatched)) = tasks {
        report.tasks_applied = Some(applied);
        report.tasks_unmatched = unmatched;
    }
    Ok(report)
}

/// Imports into a workspace that does not exist yet, creating it with the batch's prefix.
fn import_fresh(
    ctx: &Context,
    dir: &Path,
    batch: Batch,
    options: &ImportOptions,
    bar: &Bar,
) -> Result<ImportReport, CliError> {
    if batch.records.is_empty() && batch.memories.is_empty() {
        return Ok(ImportReport { dry_run: options.dry_run, ..ImportReport::default() });
    }
    let prefix = batch.detect_prefix().ok_or_else(|| {
        CliError::new(format!(
            "no workspace at {} and no id prefix to create it with",
            dir.display()
        ))
        .with_hint("create it first: fleet init --prefix <prefix>")
    })?;
    if options.dry_run {
        let mut report = beads::import::dry_run_fresh(&prefix, batch, bar).map_err(cli_error)?;
        report.initialized_prefix = Some(prefix);
        return Ok(report);
    }
    let (store, created) = match Store::init(dir, &prefix) {
        Ok(store) => (store, Some(prefix)),
        // Another import (or an init) made it since this one looked: import into that one.
        Err(StoreError::AlreadyInitialized(_)) => (Store::open(dir)?, None),
        Err(error) => return Err(error.into()),
    };
    // The store is made and fine: a file beside it that cannot be written is a warning.
    warn_unless_written(ctx, super::init::lay_out_workspace(dir));
    if let Some(prefix) = &created {
        bar.note(&ctx.out, &format!("Created workspace {} with prefix {prefix}", dir.display()));
    }
    let mut report = beads::import::run(&store, ctx.actor(), ctx.clock, batch, options, bar)
        .map_err(cli_error)?;
    report.initialized_prefix = created;
    Ok(report)
}

/// Tells the user about a workspace file that could not be written, without failing the
/// import.
fn warn_unless_written(ctx: &Context, written: Result<(), CliError>) {
    if let Err(error) = written {
        ctx.out.warn(&format!("warning: {}", error.message));
    }
}

fn read_source(
    ctx: &Context,
    source: &Source,
    target_dir: &Path,
    show_bar: bool,
) -> Result<(Batch, Bar), CliError> {
    let now = ctx.now();
    match source {
        Source::Jsonl(path) => {
            let bytes = match path {
                Some(path) => std::fs::read(path)
                    .map_err(|e| CliError::new(format!("reading {}: {e}", path.display())))?,
                None => {
                    let mut bytes = Vec::new();
                    std::io::stdin()
                        .read_to_end(&mut bytes)
                        .map_err(|e| CliError::new(format!("reading stdin: {e}")))?;
                    bytes
                }
            };
            let bar = Bar::new(show_bar && bytes.len() >= PROGRESS_BYTES);
            let batch = beads::import::read_jsonl(&bytes, now, &bar);
            Ok((batch, bar))
        }
        Source::Sqlite(path) => {
            let batch = beads::sqlite::read_sqlite(path, now).map_err(cli_error)?;
            let bar = Bar::new(show_bar && batch.lines >= 10_000);
            Ok((batch, bar))
        }
        Source::FleetStore(dir) => {
            if same_dir(dir, target_dir) {
                return Err(cli_error(BeadsError::SelfImport(dir.clone())));
            }
            let other = Store::open(dir)?;
            let reader = other.read()?;
            let mut bytes = Vec::new();
            let options = ExportOptions {
                all: true,
                memories: true,
                absolute_paths: true,
                ..ExportOptions::default()
            };
            beads::export::write_export(&reader, &options, &mut bytes).map_err(cli_error)?;
            let bar = Bar::new(show_bar && bytes.len() >= PROGRESS_BYTES);
            let batch = beads::import::read_jsonl(&bytes, now, &bar);
            Ok((batch, bar))
        }
        Source::Dolt { beads_dir, project_dir, .. } => Err(cli_error(BeadsError::Dolt {
            beads_dir: beads_dir.clone(),
            project_dir: project_dir.clone(),
        })),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// beads' own `bd` on PATH: the first one that is not this program (fleet linked as `bd`,
/// which cannot read Dolt).
fn beads_bd() -> Option<PathBuf> {
    let me = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("bd")).find(|candidate| {
        crate::fsutil::is_executable(candidate)
            && std::fs::canonicalize(candidate).ok().is_none_or(|real| Some(real) != me)
    })
}

/// Runs `bd export` in a Dolt-backed project and returns the file it wrote. Asks for
/// everything (`--all`) first, and falls back to the plain form for a bd without that flag.
fn export_with_bd(ctx: &Context, project_dir: &Path) -> Result<PathBuf, CliError> {
    let bd = beads_bd().ok_or_else(|| {
        CliError::new("--via-bd needs beads' own bd program, and there is none on PATH (a bd that is fleet itself cannot read Dolt)")
            .with_hint(format!(
                "install bd, or run `bd export -o issues.jsonl` in {} elsewhere and import that file",
                project_dir.display()
            ))
    })?;
    let file = std::env::temp_dir().join(format!(
        "fleet-import-{}-{}.jsonl",
        std::process::id(),
        ulid::Ulid::generate()
    ));
    let file_arg = file.display().to_string();
    let mut last_error = String::new();
    for args in [vec!["export", "--all", "-o", &file_arg], vec!["export", "-o", &file_arg]] {
        ctx.out.note(&format!("Running `bd {}` in {}", args.join(" "), project_dir.display()));
        let output = std::process::Command::new(&bd)
            .args(&args)
            .current_dir(project_dir)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| CliError::new(format!("running {}: {e}", bd.display())))?;
        if output.status.success() && file.is_file() {
            return Ok(file);
        }
        last_error = String::from_utf8_lossy(&output.stderr).trim().to_string();
    }
    let _ = std::fs::remove_file(&file);
    Err(CliError::new(format!("bd export failed in {}: {last_error}", project_dir.display())))
}

/// `fleet import --json`: the report of the issues, and of the runtime configuration of a
/// Python-fleet home when it had one.
#[derive(Serialize)]
struct Imported<'a> {
    #[serde(flatten)]
    report: &'a ImportReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime_config: Option<&'a Migration>,
}

fn render_import(ctx: &Context, report: &ImportReport, migration: Option<&Migration>) {
    if ctx.out.json && ctx.out.mode == Mode::Bd {
        ctx.out.emit(&bd_import_json(report), String::new);
        return;
    }
    if ctx.out.json {
        ctx.out.emit_plain(&Imported { report, runtime_config: migration }, String::new);
        return;
    }
    if ctx.out.quiet {
        return;
    }
    render_issues_import(report);
    if let Some(migration) = migration {
        render_migration(ctx, migration);
    }
}

/// `bd import --json` as beads 1.0.5 writes it: `created` counts every issue written,
/// `skipped` the ones left out (stale or tombstones), `ids` names the written ones and
/// `skipped_dependencies` is a list of `"issue -> target: reason"` lines. Every other counter
/// of fleet's report follows under its own name, and fleet's count of issues new to the store
/// (its `created`) as `new`.
fn bd_import_json(report: &ImportReport) -> serde_json::Value {
    let mut json = serde_json::to_value(report).unwrap_or_default();
    let skipped_dependencies: Vec<String> = report
        .skipped_dependencies
        .iter()
        .map(|d| format!("{} -> {}: {}", d.issue_id, d.depends_on_id, d.reason))
        .collect();
    if let Some(map) = json.as_object_mut() {
        map.insert("new".into(), report.created.into());
        let written = report.created + report.updated + report.unchanged;
        map.insert("created".into(), written.into());
        map.insert("skipped".into(), (report.stale_skipped + report.tombstones_skipped).into());
        map.insert("skipped_dependencies".into(), skipped_dependencies.into());
        if !report.ids.is_empty() {
            map.insert("ids".into(), report.ids.clone().into());
        }
    }
    json
}

fn render_issues_import(report: &ImportReport) {
    for bad in &report.bad_lines {
        write_stderr(&format!("Skipped line {}: {}", bad.line, bad.error));
    }
    let issues = report.created + report.updated + report.unchanged;
    let verb = if report.dry_run { "Would import" } else { "Imported" };
    let memories = if report.memories > 0 {
        format!(" and {} memories", report.memories)
    } else {
        String::new()
    };
    write_stderr(&format!("{verb} {issues} issues{memories} from {}", report.source));
    write_stderr(&format!(
        "  created: {}, updated: {}, unchanged: {}, stale skipped: {}, tombstones skipped: {}",
        report.created,
        report.updated,
        report.unchanged,
        report.stale_skipped,
        report.tombstones_skipped
    ));
    write_stderr(&format!(
        "  dependencies: {} added, {} skipped; comments: {} added, {} already present; labels added: {}",
        report.dependencies_added,
        report.skipped_dependencies.len(),
        report.comments_added,
        report.comments_duplicate,
        report.labels_added
    ));
    for line in fidelity_lines(report) {
        write_stderr(&format!("  {line}"));
    }
    if report.config_imported > 0 {
        write_stderr(&format!("  settings copied: {}", report.config_imported));
    }
    if report.events_skipped > 0 {
        write_stderr(&format!(
            "  events skipped: {} (beads' audit trail; fleet's op journal keeps its own history)",
            report.events_skipped
        ));
    }
    if !report.stale_skipped_ids.is_empty() {
        write_stderr(&format!(
            "  stale (stored copy is newer): {}",
            report.stale_skipped_ids.join(", ")
        ));
    }
    for duplicate in report.duplicate_ids.iter().take(LISTED_SKIPS) {
        write_stderr(&format!("  {}", duplicate.describe()));
    }
    if report.duplicate_ids.len() > LISTED_SKIPS {
        write_stderr(&format!(
            "  … and {} more duplicate ids (--json lists them all)",
            report.duplicate_ids.len() - LISTED_SKIPS
        ));
    }
    if let Some(applied) = report.tasks_applied {
        write_stderr(&format!("  task.json fields applied to {applied} issues"));
        if !report.tasks_unmatched.is_empty() {
            write_stderr(&format!(
                "  task.json without an issue: {}",
                report.tasks_unmatched.join(", ")
            ));
        }
    }
    for skip in report.skipped_dependencies.iter().take(LISTED_SKIPS) {
        write_stderr(&format!(
            "Skipped dependency: {} -> {}: {}",
            skip.issue_id, skip.depends_on_id, skip.reason
        ));
    }
    if report.skipped_dependencies.len() > LISTED_SKIPS {
        write_stderr(&format!(
            "… and {} more skipped dependencies (--json lists them all)",
            report.skipped_dependencies.len() - LISTED_SKIPS
        ));
    }
    if report.dry_run {
        write_stderr("Dry run: nothing was written");
    }
}

/// The fidelity table of an import: per kind of item, what the source holds and what the
/// store holds of it afterwards, and what explains a difference.
fn fidelity_lines(report: &ImportReport) -> Vec<String> {
    let source = &report.fidelity.source;
    let store = report.fidelity.store.as_ref();
    let pair = |name: &str, from: usize, to: Option<usize>, why: &str| {
        let to = to.map_or_else(|| "-".to_string(), |n| n.to_string());
        let mut line = format!("  {name:<24} {from:>6} {to:>6}");
        if !why.is_empty() && to != from.to_string() {
            line.push_str(&format!("  {why}"));
        }
        line
    };
    let skipped_edges =
        |kind: &str| report.skipped_dependencies.iter().filter(|d| d.kind == kind).count();
    let mut lines = vec![format!("{:<26} {:>6} {:>6}", "fidelity:", "source", "store")];
    lines.push(pair(
        "issues",
        source.issues,
        store.map(|s| s.issues),
        &format!("{} stale skipped", report.stale_skipped),
    ));
    lines.push(pair(
        "edges",
        source.edge_total(),
        store.map(super::super::beads::fidelity::Counts::edge_total),
        &format!("{} skipped, listed below", report.skipped_dependencies.len()),
    ));
    for (kind, n) in &source.edges {
        let why = format!("{} skipped", skipped_edges(kind));
        lines.push(pair(
            &format!("  {kind}"),
            *n,
            store.map(|s| s.edges.get(kind).copied().unwrap_or(0)),
            &why,
        ));
    }
    lines.push(pair("comments", source.comments, store.map(|s| s.comments), ""));
    lines.push(pair("labels", source.labels, store.map(|s| s.labels), ""));
    lines.push(pair("memories", source.memories, store.map(|s| s.memories), ""));
    lines.push(pair(
        "tombstones",
        source.tombstones,
        store.map(|_| 0),
        "skipped: deleted in beads",
    ));
    lines
}

pub fn cmd_export(ctx: &Context, args: ExportArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let options = ExportOptions {
        all: args.all || args.include_infra,
        memories: args.all || args.include_memories,
        absolute_paths: args.include_paths,
        redactor: args.redact.then(export_redactor),
        ..ExportOptions::for_workspace(store.dir())
    };
    let Some(path) = &args.output else {
        // To stdout, a damaged issue row is left out and named after the rest (an export to a
        // file, or the auto-export, fails whole instead: it would replace a good file).
        let reader = store.read()?.skip_damaged();
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
        let written = beads::export::write_export(&reader, &options, &mut out);
        drop(out);
        return match written {
            Ok(_) => super::doctor::report_damaged(ctx, reader.damaged()),
            Err(BeadsError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                Ok(())
            }
            Err(error) => Err(cli_error(error)),
        };
    };
    let summary = beads::export_to_path(&store, &options, path).map_err(cli_error)?;
    if ctx.out.json {
        ctx.out.emit_plain(&summary, String::new);
    } else if !ctx.out.quiet {
        let memories = if summary.memories > 0 {
            format!(" and {} memories", summary.memories)
        } else {
            String::new()
        };
        write_stderr(&format!(
            "Exported {} issues{memories} to {}",
            summary.issues,
            path.display()
        ));
    }
    Ok(())
}

/// The redactor of `fleet export --redact`: this environment's secrets and the home's
/// configured ones.
fn export_redactor() -> crate::redact::Redactor {
    let config = super::context::fleet_home()
        .ok()
        .and_then(|home| crate::config::RuntimeConfig::load(&home.join("runtime.toml")).ok());
    config.map_or_else(crate::tracker::environment_redactor, |config| config.redactor())
}

/// After a successful write command: exports to `.beads/issues.jsonl` when `export.auto` is
/// on. The command already succeeded, so a failure here is a warning.
pub fn auto_export(ctx: &Context) {
    let Ok(store) = ctx.store() else { return };
    if let Err(error) = beads::auto_export_if_enabled(store) {
        write_stderr(&format!("warning: auto-export failed: {error}"));
    }
}
