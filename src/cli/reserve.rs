//! `reserve` and `release-files`: advisory file reservations of a task's attempt — `bd
//! reserve` for agents, `fleet reserve` for a person; one command group, shared by both
//! personalities.
//!
//! A reservation names globs relative to the repository's top, a reason, and optionally a time
//! to live and `--exclusive`. Inside a `fleet run` attempt it belongs to the agent's task and
//! attempt, and ends with that attempt (the settlement releases it); elsewhere `--task` names
//! the task. Reservations are advisory: `reserve` says which live reservations of other tasks
//! overlap, `fleet tasks` and `fleet task ID` list them, and the pre-commit guard that
//! `bd hooks install` adds refuses a commit touching another live task's exclusive
//! reservation (`bd hooks run pre-commit`, see `bd::hooks`).

use std::time::Duration;

use super::context::Context;
use super::error::CliError;
use crate::coord::Reservation;
use crate::tracker::{Request, ReserveRequest};

#[derive(Debug, clap::Args)]
pub struct ReserveArgs {
    /// Globs of the files, relative to the repository's top (`src/store/**`, `*.md`).
    #[arg(required = true)]
    pub globs: Vec<String>,
    /// Others must not commit to these files (the pre-commit guard refuses it).
    #[arg(long)]
    pub exclusive: bool,
    /// How long it holds at most (`30m`, `1h`, `2h 30m`); it ends with the attempt anyway.
    #[arg(long, value_parser = parse_ttl)]
    pub ttl: Option<Duration>,
    /// Why: other agents and people read it.
    #[arg(long, required = true)]
    pub reason: String,
    /// The task the files are for (inside a run: your own).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ReleaseFilesArgs {
    /// Reservation ids (default: every reservation of the task).
    pub ids: Vec<String>,
    /// The task whose reservations end (inside a run: your own).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
}

/// `30m`, `1h`, `2h 30m`, `90s` (jiff's friendly durations), or plain seconds.
fn parse_ttl(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let span: jiff::SignedDuration =
        text.parse().map_err(|e| format!("{text:?} is no duration (try 30m, 1h, 2h30m): {e}"))?;
    Duration::try_from(span).map_err(|_| format!("{text:?} is negative"))
}

/// The task a reservation command is about: `--task`, else the attempt's.
fn task_of(ctx: &Context, task: Option<String>) -> Result<String, CliError> {
    task.or_else(|| ctx.attempt_task().map(str::to_string)).ok_or_else(|| {
        CliError::new("which task are the files for?")
            .with_hint("name it with --task ID (inside a fleet run it is the agent's own task)")
    })
}

pub fn cmd_reserve(ctx: &Context, args: ReserveArgs) -> Result<(), CliError> {
    let request = ReserveRequest {
        task: task_of(ctx, args.task)?,
        attempt: if ctx.attempt_task().is_some() {
            crate::env::attempt_id().unwrap_or_default()
        } else {
            String::new()
        },
        globs: args.globs,
        exclusive: args.exclusive,
        reason: args.reason,
        ttl_secs: args.ttl.map(|ttl| ttl.as_secs().max(1)),
    };
    let reserved = ctx.submit(Request::Reserve(Box::new(request)))?.into_reserved()?;
    for conflict in &reserved.conflicts {
        ctx.out.warn(&format!(
            "warning: {} overlaps {}'s {}reservation {} ({}): coordinate with `bd mail send {} …`",
            conflict.glob,
            conflict.task,
            if conflict.exclusive { "exclusive " } else { "" },
            conflict.reservation,
            conflict.theirs,
            conflict.task
        ));
    }
    ctx.out.emit(&reserved, || {
        format!("✓ Reserved {}: {}", reserved.reservation.id, describe(&reserved.reservation))
    });
    Ok(())
}

pub fn cmd_release_files(ctx: &Context, args: ReleaseFilesArgs) -> Result<(), CliError> {
    let task = task_of(ctx, args.task)?;
    let released =
        ctx.submit(Request::ReleaseFiles { task: task.clone(), ids: args.ids })?.into_ids()?;
    let output = serde_json::json!({ "task": task, "released": released });
    ctx.out.emit(&output, || {
        if released.is_empty() {
            format!("○ {task} held no reservations")
        } else {
            format!("✓ Released {}", released.join(", "))
        }
    });
    Ok(())
}

/// `src/** (exclusive, until 10:30): why`.
pub fn describe(reservation: &Reservation) -> String {
    let mut how = Vec::new();
    if reservation.exclusive {
        how.push("exclusive".to_string());
    }
    if let Some(until) = reservation.expires_at {
        how.push(format!("until {}", until.strftime("%Y-%m-%d %H:%M UTC")));
    }
    let how = if how.is_empty() { String::new() } else { format!(" ({})", how.join(", ")) };
    format!("{}{how} for {}: {}", reservation.globs.join(" "), reservation.task, reservation.reason)
}
