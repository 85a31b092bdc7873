//! Stepping in: `fleet kill <id> [--requeue]`, `fleet pause [--coder C]`, `fleet resume`.
//!
//! A kill is a change to the task through the tracker layer — blocked with a comment, or
//! released with `--requeue` — and the supervisor running it stops its agent because a running
//! task changed by someone else always is (see `supervisor::revocation`), within a poll.
//! A pause is a hold in `$FLEET_HOME/state/holds.json` (see `supervisor::hold`), which the
//! supervisor re-reads when it changes: no new agent starts, running agents go on.

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::config::RuntimeConfig;
use crate::model::Status;
use crate::op::IssuePatch;
use crate::supervisor::hold::{Hold, Holds};
use crate::tracker::{Request, UpdateRequest};

#[derive(Debug, clap::Args)]
pub struct KillArgs {
    /// The running task.
    pub id: String,
    /// Put the task back in the queue (open) instead of blocking it.
    #[arg(long)]
    pub requeue: bool,
    /// Why, recorded in the comment.
    #[arg(long, short)]
    pub reason: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct PauseArgs {
    /// Only this coder's tasks (default: every coder).
    #[arg(long, value_name = "CODER")]
    pub coder: Option<String>,
    /// Why, shown by `fleet tasks`.
    #[arg(long, short)]
    pub reason: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Only this coder's pause (default: every pause).
    #[arg(long, value_name = "CODER")]
    pub coder: Option<String>,
}

#[derive(Debug, Serialize)]
struct Killed {
    id: String,
    /// `blocked` or `requeued`.
    action: &'static str,
}

pub fn cmd_kill(ctx: &Context, args: KillArgs) -> Result<(), CliError> {
    let store = ctx.store()?;
    let reader = store.read()?;
    let id = reader.resolve(&args.id)?;
    let issue = reader.issue(&id)?.ok_or_else(|| CliError::new(format!("no issue {id}")))?;
    if issue.status != Status::InProgress {
        return Err(CliError::new(format!("{id} is not running (status {})", issue.status))
            .with_hint("`fleet tasks` lists the running tasks"));
    }
    let action = if args.requeue { "requeued" } else { "blocked" };
    let why = args.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    let text = format!("[fleet] killed by {}{why}; {action}", ctx.actor());
    ctx.submit(Request::Comment { id: id.clone(), author: None, text })?;
    let request = if args.requeue {
        Request::Release { ids: vec![id.clone()] }
    } else {
        let patch = IssuePatch { status: Some(Status::Blocked), ..IssuePatch::default() };
        Request::Update(vec![UpdateRequest::edit(&id, patch)])
    };
    ctx.submit(request)?;
    let killed = Killed { id, action };
    ctx.out.emit(&killed, || {
        let next = if args.requeue {
            "it goes back to the queue".to_owned()
        } else {
            format!("`fleet update {} -s open` requeues it", killed.id)
        };
        format!("■ {} killed: its agent is being stopped; {action} ({next})", killed.id)
    });
    Ok(())
}

#[derive(Debug, Serialize)]
struct HoldsShown {
    changed: bool,
    holds: Holds,
}

pub fn cmd_pause(ctx: &Context, args: PauseArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    if let Some(coder) = &args.coder {
        check_coder(&home, coder)?;
    }
    let mut holds = Holds::load(&home);
    let hold = Hold {
        since: ctx.now(),
        by: ctx.actor().to_string(),
        reason: args.reason.clone().unwrap_or_default(),
    };
    let changed = holds.place(args.coder.as_deref(), hold);
    holds.save(&home).map_err(|e| CliError::new(format!("writing the pause: {e}")))?;
    let whom = args.coder.as_deref().map_or("every coder".to_owned(), |c| format!("coder {c}"));
    let shown = HoldsShown { changed, holds };
    ctx.out.emit(&shown, || {
        let already = if changed { "" } else { " (already paused)" };
        format!("⏸ new agents paused for {whom}{already}; running agents go on (`fleet resume` lifts it)")
    });
    Ok(())
}

pub fn cmd_resume(ctx: &Context, args: ResumeArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let mut holds = Holds::load(&home);
    let changed = holds.lift(args.coder.as_deref());
    holds.save(&home).map_err(|e| CliError::new(format!("writing the pause: {e}")))?;
    let shown = HoldsShown { changed, holds };
    ctx.out.emit(&shown, || match (changed, &args.coder) {
        (false, Some(coder)) => format!("coder {coder} was not paused"),
        (false, None) => "nothing was paused".to_owned(),
        (true, Some(coder)) => format!("▶ coder {coder} resumed"),
        (true, None) => "▶ resumed: new agents start again".to_owned(),
    });
    Ok(())
}

/// Refuses a coder runtime.toml does not define.
fn check_coder(home: &std::path::Path, coder: &str) -> Result<(), CliError> {
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map_err(|e| CliError::new(e.to_string()))?;
    let registry = config.registry().map_err(|e| CliError::new(e.to_string()))?;
    registry.get(coder).map(|_| ()).map_err(|error| {
        CliError::new(error.to_string()).with_hint("`fleet config show` lists the coders")
    })
}
