//! `fleet tasks [--all] [--json] [--watch]`: what every agent is doing and what it costs.
//!
//! The view is read from the store (tasks in progress and their leases, the supervisors'
//! registrations and heartbeats, the ready and blocked counts) and from the task files
//! (`ledger.json` for tokens, context and cost; `events.jsonl`'s time for idleness;
//! `state/pauses.json` and `state/holds.json` for pauses of coders and of their accounts), so
//! it works from any shell while `fleet run` works elsewhere. Nothing here writes. A task on
//! one of its coder's accounts shows as `claude@work·sonnet`; the table keeps to 80 columns
//! when it can, leaving out STARTED (ELAPSED says the same) when a row would not fit.
//!
//! `--watch` redraws the view in place every second on a terminal (the alternate screen,
//! restored on exit; keys: `q` or Ctrl-C quits, `j`/`k`, the arrows, space and PgUp/PgDn
//! scroll the rows under a header that stays); without a terminal it prints once. On a
//! terminal the view fits its width: the header wraps and the least needed columns go first.
//!
//! Layout: `view` gathers the view (the domain: what is running, ready, paused, not runnable
//! here, and what it cost), `render` turns it into text for people, `watch` redraws it on a
//! terminal.

mod render;
mod units;
mod view;
mod watch;

use std::io::IsTerminal;

use super::context::{Context, fleet_home};
use super::error::CliError;
use watch::{terminal_size, watch};

pub use render::{coder_model, render};
pub use units::{cost, duration, short_time, tokens};
pub use view::{RunInfo, TaskRow, TasksArgs, gather, task_root, task_view};

pub fn cmd_tasks(ctx: &Context, args: TasksArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    if args.watch && !ctx.out.json && std::io::stdout().is_terminal() {
        return watch(ctx, &home, args.all);
    }
    let mut view = gather(ctx, &home, args.all)?;
    for warning in std::mem::take(&mut view.warnings) {
        ctx.out.warn(&format!("warning: {warning}"));
    }
    let width = std::io::stdout().is_terminal().then(|| terminal_size().0);
    ctx.out.emit_styled(&view, || render(&view, ctx.now(), width).into_styled());
    Ok(())
}
