//! The merge lanes, driven by the supervisor: every task whose agent closed it (its work in
//! the merge queue) is landed by code, one entry at a time per lane (a repository and its base
//! branch), and each step is recorded through the tracker ([`LandStep`]).
//!
//! The supervisor calls [`scan`] whenever the queue changed while entries wait (and after each
//! landing): it puts entries whose resolution task closed back in the queue, and returns the
//! next entry of each lane that is not busy. Each entry is landed on a blocking thread by
//! [`land_one`] (`crate::land::land`), which records the result: landed (the task
//! closes), refused (the task reopens with the evidence, counted as a failure, or is blocked at
//! the limit), a conflict (a resolution task blocks the entry; after
//! [`MAX_CONFLICT_ROUNDS`] the task is blocked for a human), or back in the queue. The lanes
//! cost no tokens: no agent is involved.
//!
//! Crash safety comes from the order of the steps: the entry is recorded as checked (with its
//! merged commit) before the base ref moves, and the move is a compare-and-swap, so a restart
//! finds either the old base (the move is redone, once) or the merged one (only the close is
//! due) — see `crate::land::lane`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use jiff::Timestamp;
use serde::Serialize;

use super::outcome;
use crate::config::RuntimeConfig;
use crate::land::lane::{self, Entry, Landed, LaneKey, LaneSettings};
use crate::model::{FleetFields, Issue, LandState, Receipt, Status};
use crate::redact::Redactor;
use crate::store::{Store, StoreError};
use crate::time::Clock;
use crate::tracker::{self, CreateRequest, LandStep, Request};

/// Merge rounds ending in a conflict before the task is blocked for a human.
pub const MAX_CONFLICT_ROUNDS: u32 = 3;

/// What the queue holds now: the next entry of each free lane, and how many entries wait.
#[derive(Debug, Default)]
pub struct Waiting {
    /// The next entries of each lane that is not busy (up to `merge.batch`), in their order.
    pub next: Vec<Vec<Entry>>,
    /// Entries that can be worked on (not waiting for a resolution task), in every lane.
    pub ready: usize,
    /// Entries waiting for their resolution task, or for a person's review.
    pub blocked: usize,
}

/// How landing one entry ended, for the live view and `fleet run --json`.
#[derive(Debug, Clone, Serialize)]
pub struct LandReport {
    pub id: String,
    pub lane: String,
    /// `landed`, `no changes`, `checks failed`, `no commits`, `conflict`, `base moved`, or
    /// `error`.
    pub verdict: String,
    /// The merged commit now at the base (landed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub merged: String,
    /// One line: what happened and what follows.
    pub detail: String,
    pub millis: u64,
}

impl LandReport {
    /// The report of `entry` before anything happened to it.
    fn of(entry: &Entry) -> LandReport {
        LandReport {
            id: entry.id.clone(),
            lane: format!("{} {}", entry.landing.repo, entry.landing.base),
            verdict: String::new(),
            merged: String::new(),
            detail: String::new(),
            millis: 0,
        }
    }
}

/// The lane's settings under `config`; `push` is left out of a batch, which never pushes.
fn lane_settings(home: PathBuf, config: &RuntimeConfig, push: bool) -> LaneSettings {
    LaneSettings {
        home,
        checks: config.merge.checks.clone(),
        timeout: config.merge.check_timeout(),
        strategy: config.merge.strategy(),
        push: if push { config.merge.push.clone() } else { String::new() },
    }
}

/// Records that `entry`'s merged commit `merged` on `base` passed its checks.
fn record_checked(
    (store, actor, redactor): (&Store, &str, &Redactor),
    entry: &Entry,
    (base, merged): (&str, &str),
    receipt: &Receipt,
) -> Result<(), String> {
    let step = LandStep::Checked {
        id: entry.id.clone(),
        base: base.to_owned(),
        merged: merged.to_owned(),
        receipt: receipt.clone(),
    };
    record(store, actor, step, Some(redactor)).map(|_| ()).map_err(|e| e.to_string())
}

/// Reads the queue: puts back entries whose resolution task closed, and returns the next
/// entries (up to `batch`) of each lane not in `busy`. With `review` (`merge.review = true`),
/// an entry no person approved waits (counted with the blocked ones).
pub fn scan(
    store: &Store,
    actor: &str,
    busy: &BTreeSet<LaneKey>,
    (review, batch): (bool, usize),
) -> Result<Waiting, StoreError> {
    let now = Timestamp::now();
    let mut entries: Vec<Entry> = Vec::new();
    let mut resolved: Vec<(String, String)> = Vec::new();
    let mut in_review = 0;
    let reader = store.read()?;
    reader.for_each_issue(&mut |issue| {
        if issue.status != Status::InProgress || issue.fleet.lease.is_some() {
            return Ok(true);
        }
        let Some(landing) = &issue.fleet.land else { return Ok(true) };
        match &landing.state {
            LandState::Queued { .. } if review && landing.approved_at.is_none() => in_review += 1,
            LandState::Queued { reason, at, no_changes } => {
                entries.push(entry_of(&issue, reason, *at, *no_changes));
            }
            LandState::Checked { reason, at, .. } => {
                entries.push(entry_of(&issue, reason, *at, false))
            }
            LandState::Conflict { child, .. } => resolved.push((issue.id.clone(), child.clone())),
            _ => {}
        }
        Ok(true)
    })?;
    let mut requeue = Vec::new();
    let mut resolved_count = 0;
    for (id, child) in resolved {
        let closed = reader.issue(&child)?.is_none_or(|c| c.status == Status::Closed);
        if !closed {
            resolved_count += 1;
        } else {
            requeue.push(LandStep::Requeue {
                id,
                note: format!("[fleet] {child} resolved the conflict; the work goes round again"),
            });
        }
    }
    drop(reader);
    let requeued = requeue.len();
    for step in requeue {
        record(store, actor, step, None)?;
    }
    let ready = entries.len();
    let blocked = resolved_count + in_review;
    let mut lanes: BTreeMap<LaneKey, Vec<Entry>> = BTreeMap::new();
    for entry in entries {
        let key = entry.lane();
        if !busy.contains(&key) {
            lanes.entry(key).or_default().push(entry);
        }
    }
    // An entry found checked (a restart after a kill mid-move) goes first: its move is
    // finished before anything else lands on the base.
    let order =
        |e: &Entry| (!matches!(e.landing.state, LandState::Checked { .. }), lane::rank(e, now));
    let next = lanes
        .into_values()
        .map(|mut lane| {
            lane.sort_by_cached_key(order);
            lane.truncate(batch.max(1));
            lane
        })
        .collect();
    Ok(Waiting { next, ready: ready + requeued, blocked })
}

fn entry_of(issue: &Issue, reason: &str, at: Timestamp, no_changes: bool) -> Entry {
    Entry {
        id: issue.id.clone(),
        title: issue.title.clone(),
        priority: issue.priority,
        landing: issue.fleet.land.clone().unwrap_or_default(),
        queued_at: at,
        reason: reason.to_owned(),
        no_changes,
    }
}

/// Records `step` through the tracker, its texts masked by `redactor`.
fn record(
    store: &Store,
    actor: &str,
    mut step: LandStep,
    redactor: Option<&Redactor>,
) -> Result<Vec<String>, StoreError> {
    if let Some(redactor) = redactor {
        step.redact(redactor);
    }
    let request = Request::Land(Box::new(step));
    tracker::execute_in(store, actor, Clock::System, &request)?.into_ids()
}

/// Lands `entry` and records how it ended.
pub fn land_one(
    store: &Store,
    actor: &str,
    home: PathBuf,
    entry: &Entry,
    (config, redactor): (&RuntimeConfig, &Redactor),
) -> LandReport {
    let started = std::time::Instant::now();
    let settings = lane_settings(home, config, true);
    let mut record_checked = |base: &str, merged: &str, receipt: &Receipt| {
        record_checked((store, actor, redactor), entry, (base, merged), receipt)
    };
    let begin = LandStep::Started { id: entry.id.clone() };
    let result = match record(store, actor, begin, None) {
        Ok(_) => crate::land::land(&settings, entry, &mut record_checked),
        // Dropped or rejected by a person since the scan: nothing to land.
        Err(error) => Err(lane::LaneError::Record(error.to_string())),
    };
    let mut report = LandReport::of(entry);
    let outcome = match result {
        Ok(landed) => apply(store, actor, entry, landed, (config, redactor), &mut report),
        Err(error) => {
            report.verdict = "error".into();
            report.detail = format!("{error}; the entry stays in the queue");
            Ok(())
        }
    };
    if let Err(error) = outcome {
        report.verdict = "error".into();
        report.detail = format!("recording the landing failed: {error}");
    }
    report.millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
}

/// Lands the next entries of one lane: one at a time (`land_one`) when `merge.batch` is 1,
/// the head was found checked (a restart finishes its move first), or the base is pushed after
/// each landing; otherwise as one batch (`crate::land::lane::land_batch`: checked together,
/// a failure bisected to its culprit). One report per entry dealt with; the others stay queued.
pub fn land_lane(
    store: &Store,
    actor: &str,
    home: PathBuf,
    entries: &[Entry],
    (config, redactor): (&RuntimeConfig, &Redactor),
) -> Vec<LandReport> {
    let Some(first) = entries.first() else { return Vec::new() };
    let single = entries.len() == 1
        || matches!(first.landing.state, LandState::Checked { .. })
        || !config.merge.push.is_empty();
    if single {
        return vec![land_one(store, actor, home, first, (config, redactor))];
    }
    let started = std::time::Instant::now();
    let settings = lane_settings(home, config, false);
    // Dropped or rejected by a person since the scan: left out.
    let batch: Vec<Entry> = entries
        .iter()
        .filter(|e| record(store, actor, LandStep::Started { id: e.id.clone() }, None).is_ok())
        .cloned()
        .collect();
    let mut record_checked = |entry: &Entry, base: &str, merged: &str, receipt: &Receipt| {
        record_checked((store, actor, redactor), entry, (base, merged), receipt)
    };
    let mut reports = Vec::new();
    match lane::land_batch(&settings, &batch, &mut record_checked) {
        Ok(outcomes) => {
            for (index, landed) in outcomes {
                let Some(entry) = batch.get(index) else { continue };
                let mut report = LandReport::of(entry);
                if let Err(error) =
                    apply(store, actor, entry, landed, (config, redactor), &mut report)
                {
                    report.verdict = "error".into();
                    report.detail = format!("recording the landing failed: {error}");
                }
                reports.push(report);
            }
        }
        Err(error) => {
            let mut report = LandReport::of(first);
            report.verdict = "error".into();
            report.detail = format!("{error}; the entries stay in the queue");
            reports.push(report);
        }
    }
    let millis = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    for report in &mut reports {
        report.millis = millis;
    }
    reports
}

/// Records what landing `entry` came to.
fn apply(
    store: &Store,
    actor: &str,
    entry: &Entry,
    landed: Landed,
    (config, redactor): (&RuntimeConfig, &Redactor),
    report: &mut LandReport,
) -> Result<(), StoreError> {
    let id = entry.id.clone();
    let base = &entry.landing.base;
    let step = match landed {
        Landed::Landed(receipt) | Landed::NoChanges(receipt) => {
            report.verdict.clone_from(&receipt.verdict);
            report.merged.clone_from(&receipt.merged);
            let checks = receipt.checks.len();
            report.detail = match receipt.merged.as_str() {
                "" => "closed with no changes to land".to_owned(),
                merged => format!(
                    "landed on {base} as {} ({checks} check{} passed)",
                    lane::short(merged),
                    if checks == 1 { "" } else { "s" }
                ),
            };
            for note in receipt.notes.iter().filter(|n| n.contains("not touched")) {
                report.detail.push_str(&format!("; {note}"));
            }
            if !receipt.push.is_empty() {
                report.detail.push_str(&format!("; {}", receipt.push));
            }
            LandStep::Landed { id, receipt }
        }
        Landed::ChecksFailed(receipt) | Landed::Empty(receipt) => {
            report.verdict.clone_from(&receipt.verdict);
            refusal(store, entry, receipt, config, report)?
        }
        Landed::Conflict { receipt, files, base_change } => {
            report.verdict = "conflict".into();
            conflict(store, entry, receipt, &files, &base_change, report)?
        }
        Landed::BaseMoved(_) => {
            report.verdict = "base moved".into();
            report.detail = format!("{base} moved during the landing; merging again");
            LandStep::Requeue { id, note: String::new() }
        }
    };
    record(store, actor, step, Some(redactor)).map(|_| ())
}

/// The step for work the gate or the checks refused: counted as a failure.
fn refusal(
    store: &Store,
    entry: &Entry,
    receipt: Receipt,
    config: &RuntimeConfig,
    report: &mut LandReport,
) -> Result<LandStep, StoreError> {
    let issue =
        store.read()?.issue(&entry.id)?.ok_or_else(|| StoreError::NotFound(entry.id.clone()))?;
    let base = &entry.landing.base;
    let (what, evidence) = match receipt.checks.iter().find(|c| !c.passed()) {
        Some(check) => {
            let how = match (check.timed_out, check.exit_code) {
                (true, _) => format!(
                    "ran past merge.check_timeout_secs ({}s)",
                    config.merge.check_timeout_secs
                ),
                (false, Some(code)) => format!("exited {code}"),
                (false, None) => "was killed".to_owned(),
            };
            (
                format!(
                    "closed the task, but the check `{}` {how} on its work merged onto {base}",
                    check.command
                ),
                check.tail.clone(),
            )
        }
        None => (
            format!(
                "closed the task with no commits on {} (commit the work there, or close with --no-changes)",
                entry.landing.branch
            ),
            String::new(),
        ),
    };
    let (fleet, blocked, comment) =
        outcome::refused_work(&issue, &what, &evidence, config, Timestamp::now());
    report.detail = match &blocked {
        Some(reason) => format!("not landed: {what}; blocked ({reason})"),
        None => format!("not landed: {what}; reopened"),
    };
    Ok(LandStep::Rejected {
        id: entry.id.clone(),
        receipt,
        fleet: Box::new(fleet),
        blocked,
        comment,
    })
}

/// The step for a conflict: a resolution task, or, after the rounds, a block.
fn conflict(
    store: &Store,
    entry: &Entry,
    receipt: Receipt,
    files: &[String],
    base_change: &str,
    report: &mut LandReport,
) -> Result<LandStep, StoreError> {
    let issue =
        store.read()?.issue(&entry.id)?.ok_or_else(|| StoreError::NotFound(entry.id.clone()))?;
    let landing = &entry.landing;
    let rounds = landing.conflicts + 1;
    if rounds >= MAX_CONFLICT_ROUNDS {
        let reason = format!(
            "merging onto {} met a conflict {rounds} times (files: {}); blocked for a human: resolve it in {} and set the task open",
            landing.base,
            files.join(", "),
            landing.worktree
        );
        report.detail = reason.clone();
        return Ok(LandStep::Conflict {
            id: entry.id.clone(),
            receipt,
            resolve: Box::default(),
            blocked: Some(reason),
        });
    }
    let merging = start_merge(&entry.landing);
    let resolve = resolution_task(&issue, files, base_change, merging);
    report.detail = format!(
        "conflicts with {} in {}; a resolution task blocks it",
        landing.base,
        files.join(", ")
    );
    Ok(LandStep::Conflict {
        id: entry.id.clone(),
        receipt,
        resolve: Box::new(resolve),
        blocked: None,
    })
}

/// Starts merging the base into the task's worktree, so the agent resolving the conflict
/// finds it in its files: `git merge` stops at the conflicts, with the markers written and
/// `MERGE_HEAD` set. Returns whether the worktree is now in that merge; a worktree that is
/// not clean, or a merge that does not stop there, is left for the agent to merge itself.
fn start_merge(landing: &crate::model::Landing) -> bool {
    let git = crate::land::git::Git::at(&landing.worktree);
    if git.is_dirty().unwrap_or(true) {
        return false;
    }
    // A merge that stops at conflicts exits 1: that is the state sought, so the exit status
    // says nothing here; MERGE_HEAD does. `--no-commit`: fleet never commits on the agent's
    // branch here, even if the merge would go through.
    let _ = git.output(&["merge", "--no-commit", "--no-ff", &landing.base]);
    let merging = git.test(&["rev-parse", "-q", "--verify", "MERGE_HEAD"]).unwrap_or(false);
    if !merging {
        // Not a merge stopped at conflicts (it failed, or went through): leave nothing half-done.
        let _ = git.output(&["merge", "--abort"]);
    }
    merging
}

/// The child task that resolves a conflict: same coder, in the task's worktree (shared with
/// it: `isolation = none`), with the conflicting files and the base's change; `merging` when
/// fleet has already started the merge of the base there ([`start_merge`]).
fn resolution_task(
    issue: &Issue,
    files: &[String],
    base_change: &str,
    merging: bool,
) -> CreateRequest {
    let landing = issue.fleet.land.clone().unwrap_or_default();
    let listed: Vec<String> = files.iter().map(|f| format!("- {f}")).collect();
    let todo = if merging {
        "fleet has started `git merge {base}` there and it stopped at the conflicts: their \
markers are in the files. Resolve them keeping the intent of both sides, `git add` them, \
`git commit` to finish the merge on {branch}"
    } else {
        "run `git merge {base}`, resolve the conflicts keeping the intent of both sides, commit \
the merge on {branch}"
    };
    let todo = todo.replace("{base}", &landing.base).replace("{branch}", &landing.branch);
    let description = format!(
        "The work of {id} (branch {branch}, worktree {worktree}) conflicts with {base}.\n\n\
Conflicting files:\n{files}\n\nWhat {base} did since the branch was made:\n{change}\n\n\
In {worktree}: {todo}, and close this task. fleet then lands {id} again.",
        id = issue.id,
        branch = landing.branch,
        worktree = landing.worktree,
        base = landing.base,
        files = listed.join("\n"),
        change =
            if base_change.trim().is_empty() { "(nothing listed)" } else { base_change.trim_end() },
    );
    let coder = issue.fleet.coder.clone();
    CreateRequest {
        title: format!("Resolve merge conflict: {}", issue.title),
        description,
        priority: issue.priority,
        issue_type: "task".to_owned(),
        parent: Some(issue.id.clone()),
        fleet: FleetFields {
            cwd: crate::land::worktree::agent_dir(&landing).display().to_string(),
            coder,
            model: issue.fleet.model.clone(),
            ..FleetFields::default()
        },
        metadata: Some(serde_json::json!({ "isolation": "none" })),
        ..CreateRequest::default()
    }
}
