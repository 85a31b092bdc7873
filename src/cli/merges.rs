//! `fleet merges`: the merge lanes — per repository and base branch, the entries waiting to
//! land with their age (the oldest first named), the one being checked, and what went wrong
//! lately (failed checks, conflicts, checkouts left alone because they had local changes).
//! With `merge.review = true`, entries no person approved show as "waiting for review"; the
//! entry a lane works on shows as "checking", with how long it has been.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

use super::context::Context;
use super::error::CliError;
use super::output::printable;
use crate::config::RuntimeConfig;
use crate::land::lane::{self, Entry, LaneKey};
use crate::model::{Issue, LandState, Status};

#[derive(Debug, clap::Args)]
pub struct MergesArgs {}

/// The waiting entries of each lane: the entry, its state's name, and the resolution task it
/// waits for.
type Waiting = BTreeMap<LaneKey, Vec<(Entry, &'static str, Option<String>)>>;

/// What `fleet merges` reads besides the store.
struct Reading {
    now: Timestamp,
    /// `merge.review` of runtime.toml.
    review: bool,
}

/// One lane.
#[derive(Debug, Default, Serialize)]
struct LaneView {
    repo: String,
    base: String,
    /// Waiting entries, in the order they land.
    waiting: Vec<EntryView>,
    /// The longest wait, in seconds.
    oldest_wait_secs: i64,
    /// Failures of the last landing attempts of tasks now back with their agents.
    failures: Vec<FailureView>,
    /// Checkouts of the base left alone at the last landing (they had local changes).
    untouched_checkouts: Vec<String>,
    landed: usize,
    /// Entries a person dropped (`fleet merge ID --drop`).
    dropped: usize,
    /// With `merge.push`: how pushing the base went after the last landing.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_push: Option<String>,
}

#[derive(Debug, Serialize)]
struct EntryView {
    id: String,
    title: String,
    priority: u8,
    /// `queued`, `waiting for review`, `checking`, `checked` or `conflict`.
    state: &'static str,
    wait_secs: i64,
    /// How long the lane has been landing it (state `checking`).
    #[serde(skip_serializing_if = "Option::is_none")]
    checking_secs: Option<i64>,
    /// A person moved it to the head of the lane (`fleet merge ID --now`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    front: bool,
    /// The resolution task the entry waits for (a conflict).
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting_for: Option<String>,
}

#[derive(Debug, Serialize)]
struct FailureView {
    id: String,
    verdict: String,
    at: Timestamp,
    status: String,
}

pub fn cmd_merges(ctx: &Context, _args: MergesArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let now = Timestamp::now();
    let review = super::context::fleet_home()
        .ok()
        .and_then(|home| RuntimeConfig::load(&home.join(crate::config::FILE_NAME)).ok())
        .is_some_and(|config| config.merge.review);
    let reading = Reading { now, review };
    let mut lanes: BTreeMap<LaneKey, LaneView> = BTreeMap::new();
    let mut entries: Waiting = BTreeMap::new();
    let mut latest: BTreeMap<LaneKey, Timestamp> = BTreeMap::new();
    store.read()?.for_each_issue(&mut |issue| {
        note(&issue, &reading, &mut lanes, &mut entries, &mut latest);
        Ok(true)
    })?;
    for (key, mut list) in entries {
        // The entry a lane works on first, then the others in the order they land.
        list.sort_by_key(|(entry, _, _)| {
            (entry.landing.checking_since.is_none(), lane::rank(entry, now))
        });
        let view = lanes.entry(key).or_default();
        for (entry, state, waiting_for) in list {
            let wait = now.duration_since(entry.queued_at).as_secs();
            view.oldest_wait_secs = view.oldest_wait_secs.max(wait);
            let checking_secs =
                entry.landing.checking_since.map(|at| now.duration_since(at).as_secs().max(0));
            view.waiting.push(EntryView {
                id: entry.id,
                title: entry.title,
                priority: entry.priority,
                state,
                wait_secs: wait,
                checking_secs,
                front: entry.landing.front_since.is_some(),
                waiting_for,
            });
        }
    }
    let lanes: Vec<LaneView> = lanes.into_values().collect();
    ctx.out.emit(&lanes, || render(&lanes));
    Ok(())
}

/// Adds what `issue` tells about its lane.
fn note(
    issue: &Issue,
    &Reading { now, review }: &Reading,
    lanes: &mut BTreeMap<LaneKey, LaneView>,
    entries: &mut Waiting,
    latest: &mut BTreeMap<LaneKey, Timestamp>,
) {
    let Some(landing) = &issue.fleet.land else { return };
    let key = LaneKey { repo: landing.repo.clone(), base: landing.base.clone() };
    let view = lanes.entry(key.clone()).or_insert_with(|| LaneView {
        repo: landing.repo.clone(),
        base: landing.base.clone(),
        ..LaneView::default()
    });
    let entry = |reason: &str, at: Timestamp| Entry {
        id: issue.id.clone(),
        title: issue.title.clone(),
        priority: issue.priority,
        landing: landing.clone(),
        queued_at: at,
        reason: reason.to_owned(),
        no_changes: false,
    };
    let queued = match landing.checking_since {
        Some(_) => "checking",
        None if review && landing.approved_at.is_none() => "waiting for review",
        None => "queued",
    };
    match &landing.state {
        LandState::Queued { reason, at, .. } => {
            entries.entry(key).or_default().push((entry(reason, *at), queued, None))
        }
        LandState::Checked { reason, at, .. } => {
            entries.entry(key).or_default().push((entry(reason, *at), "checked", None))
        }
        LandState::Conflict { child, reason, at } => {
            entries.entry(key).or_default().push((
                entry(reason, *at),
                "conflict",
                Some(child.clone()),
            ));
        }
        LandState::Landed { at, .. } | LandState::Archived { at, .. } => {
            view.landed += 1;
            if latest.get(&key).is_none_or(|seen| seen < at) {
                latest.insert(key, *at);
                view.untouched_checkouts = landing
                    .receipt
                    .iter()
                    .flat_map(|r| r.notes.iter())
                    .filter(|n| n.contains("not touched"))
                    .cloned()
                    .collect();
                view.last_push =
                    landing.receipt.as_ref().map(|r| r.push.clone()).filter(|p| !p.is_empty());
            }
        }
        LandState::Dropped { .. } => view.dropped += 1,
        LandState::Working => {
            if let Some(receipt) = &landing.receipt
                && issue.status != Status::Closed
                && now.duration_since(receipt.at).as_secs() < 7 * 86_400
            {
                view.failures.push(FailureView {
                    id: issue.id.clone(),
                    verdict: receipt.verdict.clone(),
                    at: receipt.at,
                    status: issue.status.to_string(),
                });
            }
        }
    }
}

fn render(lanes: &[LaneView]) -> String {
    if lanes.is_empty() {
        return "no merge lanes: no task has worked in a worktree of its own yet".to_owned();
    }
    let mut lines = Vec::new();
    for lane in lanes {
        let oldest = if lane.waiting.is_empty() {
            String::new()
        } else {
            format!(", oldest waiting {}", wait_text(lane.oldest_wait_secs))
        };
        let dropped =
            if lane.dropped == 0 { String::new() } else { format!(", {} dropped", lane.dropped) };
        lines.push(format!(
            "{} → {}: {} waiting, {} landed{dropped}{oldest}",
            lane.repo,
            lane.base,
            lane.waiting.len(),
            lane.landed
        ));
        for entry in &lane.waiting {
            lines.push(entry_line(entry));
        }
        for failure in &lane.failures {
            lines.push(format!(
                "  ✗ {} {} at {} (now {})",
                failure.id, failure.verdict, failure.at, failure.status
            ));
        }
        for note in &lane.untouched_checkouts {
            lines.push(format!("  ⚠ {}", printable(note)));
        }
        if let Some(push) = &lane.last_push {
            lines.push(format!("  last push: {}", printable(push)));
        }
    }
    lines.join("\n")
}

/// One waiting entry: `  t-1 [P2] checking for 12s (waiting 3m): title`.
fn entry_line(entry: &EntryView) -> String {
    let state = match entry.checking_secs {
        Some(secs) => format!(
            "{} for {} (waiting {})",
            entry.state,
            wait_text(secs),
            wait_text(entry.wait_secs)
        ),
        None => format!("{} {}", entry.state, wait_text(entry.wait_secs)),
    };
    let mut extra = String::new();
    if let Some(child) = &entry.waiting_for {
        extra.push_str(&format!(", waits for {child}"));
    }
    if entry.front {
        extra.push_str(", at the head of the lane");
    }
    format!("  {} [P{}] {state}{extra}: {}", entry.id, entry.priority, printable(&entry.title))
}

fn wait_text(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s => format!("{}h", s / 3600),
    }
}
