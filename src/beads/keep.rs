//! Exporting over a JSONL file people track (`.beads/issues.jsonl`) without losing what it
//! holds.
//!
//! A beads checkout's file carries records fleet's default export would leave out: beads'
//! tombstones (`status: tombstone`), the infra types (agent, rig, role, message), templates and
//! wisps, memories, and issues a teammate added that this store never imported. Rewriting the
//! file from the store alone would silently delete them from the shared history. So the new
//! export is merged with the old file, by id:
//!
//! - an issue this store exports is written as the store has it;
//! - an old record this store holds but the default export leaves out is written from the
//!   store in full (as `export --all` would);
//! - an old record this store knows as deleted here is dropped (that delete is the change);
//! - any other old record (a tombstone, an issue never imported) is kept as it is;
//! - lines without an id (headers, memories) are kept where they were: before the records or
//!   after them.
//!
//! When nothing is kept the bytes are exactly those of the plain export. A file that is not
//! JSONL (a merge left conflict markers in it) is not written at all: the error names the line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::export::{
    EXPORT_STATE_FILE, ExportOptions, ExportState, ExportSummary, write_atomic, write_export,
    write_export_to,
};
use super::{BeadsError, io_error};
use crate::store::{Reader, Store, StoreError, meta};
use crate::workspace::EXPORT_FILE;

/// What a keeping export wrote.
#[derive(Debug, Clone, Default)]
pub struct KeptExport {
    pub summary: ExportSummary,
    /// Old records kept as they were (not in this store).
    pub kept: usize,
    /// Old records the default export leaves out, written from the store.
    pub refreshed: usize,
}

/// One line of the old file.
struct OldLine<'a> {
    id: Option<String>,
    bytes: &'a [u8],
}

#[derive(Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "_type")]
    kind: Option<String>,
}

/// Writes `reader`'s export to `target` (see the module docs), keeping the records of the file
/// already there.
pub fn export_keeping(
    reader: &Reader,
    options: &ExportOptions,
    target: &Path,
) -> Result<KeptExport, BeadsError> {
    let mut fresh = Vec::new();
    let mut summary = write_export(reader, options, &mut fresh)?;
    summary.path = Some(target.display().to_string());
    let old = match std::fs::read(target) {
        Ok(old) => old,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(io_error(format!("reading {}", target.display()))(error)),
    };
    let old_lines = parse_old(&old, target)?;
    let mut merged = Merged::default();
    for line in fresh.split_inclusive(|b| *b == b'\n') {
        let id = line_id(line).map_err(unreadable_export)?;
        merged.records.insert(id.unwrap_or_default(), line.to_vec());
    }
    let mut wanted_from_store = Vec::new();
    let mut seen_record = false;
    for line in &old_lines {
        let Some(id) = &line.id else {
            let place = if seen_record { &mut merged.tail } else { &mut merged.head };
            place.push(with_newline(line.bytes));
            continue;
        };
        seen_record = true;
        if merged.records.contains_key(id) {
            continue;
        }
        match reader.resolve(id) {
            Ok(found) if &found == id => wanted_from_store.push(id.clone()),
            Err(StoreError::Deleted(_)) => {}
            _ => {
                merged.records.insert(id.clone(), with_newline(line.bytes));
                merged.kept += 1;
            }
        }
    }
    if !wanted_from_store.is_empty() {
        merged.refresh_from_store(reader, options, &wanted_from_store)?;
    }
    let untouched = merged.kept == 0 && merged.refreshed == 0;
    let bytes = if untouched && merged.head.is_empty() && merged.tail.is_empty() {
        fresh
    } else {
        merged.bytes()
    };
    write_export_to(target, |out| {
        out.write_all(&bytes).map_err(io_error(format!("writing {}", target.display())))
    })?;
    Ok(KeptExport { summary, kept: merged.kept, refreshed: merged.refreshed })
}

/// The merged file: lines before the records, the records by id, lines after them.
#[derive(Default)]
struct Merged {
    head: Vec<Vec<u8>>,
    records: BTreeMap<String, Vec<u8>>,
    tail: Vec<Vec<u8>>,
    kept: usize,
    refreshed: usize,
}

impl Merged {
    /// Adds the records of `ids` as a full export (`--all`) writes them.
    fn refresh_from_store(
        &mut self,
        reader: &Reader,
        options: &ExportOptions,
        ids: &[String],
    ) -> Result<(), BeadsError> {
        let all = ExportOptions { all: true, memories: false, ..options.clone() };
        let mut full = Vec::new();
        write_export(reader, &all, &mut full)?;
        for line in full.split_inclusive(|b| *b == b'\n') {
            let id = line_id(line).map_err(unreadable_export)?;
            if let Some(id) = id.filter(|id| ids.contains(id)) {
                self.records.insert(id, line.to_vec());
                self.refreshed += 1;
            }
        }
        Ok(())
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for line in self.head.iter().chain(self.records.values()).chain(&self.tail) {
            out.extend_from_slice(line);
        }
        out
    }
}

/// The lines of the old file with their ids; an unreadable line is an error naming it.
fn parse_old<'a>(old: &'a [u8], target: &Path) -> Result<Vec<OldLine<'a>>, BeadsError> {
    let text = super::import::without_bom(old);
    let mut lines = Vec::new();
    for (n, bytes) in text.split(|b| *b == b'\n').enumerate() {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let id = line_id(bytes).map_err(|message| BeadsError::Line {
            line: n + 1,
            message: format!(
                "{} is not beads JSONL here ({message}); it is left as it is: resolve the \
                 line (a merge conflict?), then run `bd import {}`",
                target.display(),
                target.display()
            ),
        })?;
        lines.push(OldLine { id, bytes });
    }
    Ok(lines)
}

/// The id of a record line (`None` for memories and other lines without one).
fn line_id(line: &[u8]) -> Result<Option<String>, String> {
    let parsed: IdOnly = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    Ok(parsed.id.filter(|_| parsed.kind.as_deref() != Some("memory")))
}

/// A line of fleet's own export that does not read back: a bug, named as such.
fn unreadable_export(message: String) -> BeadsError {
    BeadsError::Io {
        context: "reading back the export before merging it with the file".into(),
        source: std::io::Error::other(message),
    }
}

fn with_newline(bytes: &[u8]) -> Vec<u8> {
    let mut line = bytes.to_vec();
    if line.last() != Some(&b'\n') {
        line.push(b'\n');
    }
    line
}

/// After a write command: when `export.auto` is on and the store changed since the last
/// auto-export, writes `.beads/issues.jsonl` (keeping the records of the file this store does
/// not hold) and `.beads/export-state.json`. When it is off
/// this is one configuration read. Returns what was exported, if anything.
pub fn auto_export_if_enabled(store: &Store) -> Result<Option<ExportSummary>, BeadsError> {
    let reader = store.read()?;
    if !crate::settings::is_on(&reader, crate::settings::EXPORT_AUTO)? {
        return Ok(None);
    }
    let changes = reader.view().meta_u64(meta::CHANGES)?;
    let dir = store.dir();
    let target = dir.join(EXPORT_FILE);
    let state_path = dir.join(EXPORT_STATE_FILE);
    let previous = std::fs::read(&state_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<ExportState>(&bytes).ok());
    if target.is_file() && previous.is_some_and(|p| p.changes == changes) {
        return Ok(None);
    }
    // The file is the one a project tracks: what it holds that this store does not is kept.
    let summary = export_keeping(&reader, &ExportOptions::for_workspace(dir), &target)?.summary;
    let state = ExportState {
        changes,
        exported_at: jiff::Timestamp::now(),
        path: EXPORT_FILE.to_string(),
        issues: summary.issues,
        memories: summary.memories,
    };
    write_atomic(&state_path, |out| {
        let mut text = serde_json::to_vec_pretty(&state).expect("export state serialises");
        text.push(b'\n');
        out.write_all(&text).map_err(io_error(format!("writing {}", state_path.display())))
    })?;
    Ok(Some(summary))
}
