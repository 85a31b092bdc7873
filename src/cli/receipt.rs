//! The landing of a task, for people: its worktree, where its work is on the way to the base
//! branch, and the receipt of the last landing attempt. Shared by `fleet show` and `fleet task
//! ID receipt`.

use crate::land::short;
use crate::model::{LandState, Landing, Receipt};

/// The lines `fleet show` adds for a task with a worktree of its own.
pub fn landing_lines(landing: &Landing) -> Vec<String> {
    let mut lines = vec![
        format!(
            "Worktree: {} (branch {} from {} at {})",
            landing.worktree,
            landing.branch,
            landing.base,
            short(&landing.base_commit)
        ),
        format!("Landing: {}", state_line(landing)),
    ];
    if let Some(receipt) = &landing.receipt {
        lines.push(format!("Receipt: {}", receipt_head(receipt)));
    }
    lines
}

/// The landing state in words.
pub fn state_line(landing: &Landing) -> String {
    match &landing.state {
        LandState::Working => "working (not submitted)".to_owned(),
        LandState::Queued { at, no_changes: true, .. } => {
            format!("queued since {at}, closed with no changes")
        }
        LandState::Queued { at, .. } => format!("queued since {at}"),
        LandState::Conflict { child, .. } => {
            format!("conflict with {}: waiting for {child}", landing.base)
        }
        LandState::Checked { merged, .. } => {
            format!("checked: {} moves to {}", landing.base, short(merged))
        }
        LandState::Landed { merged, at } if merged.is_empty() => {
            format!("closed with no changes at {at}")
        }
        LandState::Landed { merged, at } => {
            format!("landed on {} as {} at {at}", landing.base, short(merged))
        }
        LandState::Archived { merged, .. } => {
            format!("landed as {}; worktree removed (tip under refs/fleet/archive/)", short(merged))
        }
        LandState::Dropped { tip, reason, at } => format!(
            "dropped at {at} ({}); tip {} kept under refs/fleet/archive/",
            if reason.is_empty() { "no reason given" } else { reason },
            short(tip)
        ),
    }
}

/// One line: the verdict, the commits, the checks.
fn receipt_head(receipt: &Receipt) -> String {
    let passed = receipt.checks.iter().filter(|c| c.passed()).count();
    let merged = if receipt.merged.is_empty() {
        String::new()
    } else {
        format!(" → {}", short(&receipt.merged))
    };
    format!(
        "{} (base {}{merged}; checks {passed}/{} passed) at {}",
        receipt.verdict,
        short(&receipt.base),
        receipt.checks.len(),
        receipt.at
    )
}

/// The whole receipt (`fleet task ID receipt`).
pub fn render(id: &str, landing: &Landing) -> String {
    let Some(receipt) = &landing.receipt else {
        return format!("{id}: no landing attempt yet ({})", state_line(landing));
    };
    let mut lines = vec![
        format!("{id}: {}", receipt_head(receipt)),
        format!("  branch {} onto {}", landing.branch, landing.base),
    ];
    if !receipt.leftovers.is_empty() {
        lines.push("  fleet committed what the agent left uncommitted:".to_owned());
        lines.extend(receipt.leftovers.lines().map(|l| format!("    {l}")));
    }
    if !receipt.diffstat.is_empty() {
        lines.push("  change:".to_owned());
        lines.extend(receipt.diffstat.lines().map(|l| format!("    {l}")));
    }
    for check in &receipt.checks {
        let how = match (check.timed_out, check.exit_code) {
            (true, _) => "timed out".to_owned(),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "killed".to_owned(),
        };
        lines.push(format!(
            "  check `{}`: {how} in {:.1} s",
            check.command,
            check.millis as f64 / 1000.0
        ));
        lines.extend(
            check
                .tail
                .lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .map(|l| format!("    | {l}")),
        );
    }
    lines.extend(receipt.notes.iter().map(|n| format!("  note: {n}")));
    lines.join("\n")
}
