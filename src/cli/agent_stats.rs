//! `fleet stats --agents [--since DURATION|DATE] [--by coder|model|cwd|account]`: what the
//! agents consumed and got done, from the task ledgers and the pause history under
//! `FLEET_HOME` (see `supervisor::stats`). Human output is two tables — the groups with a total
//! row, then the pauses — and `--json` is the [`AgentStats`] document
//! (`schema/stats-agents.schema.json`). Works without a workspace: only `FLEET_HOME` is read.

use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use super::tasks::{cost, duration, short_time, tokens};
use crate::supervisor::stats::{AgentStats, GroupBy, Sums, agent_stats};

pub fn cmd_agent_stats(ctx: &Context, since: Option<&str>, by: GroupBy) -> Result<(), CliError> {
    let home = fleet_home()?;
    let now = ctx.now();
    let since = since_arg(since, now)?;
    let stats = agent_stats(&home, since, by, now);
    ctx.out.emit(&stats, || render(&stats, now));
    Ok(())
}

/// `--since DURATION|DATE` as the time it names (a usage error when it names none).
pub(super) fn since_arg(
    since: Option<&str>,
    now: jiff::Timestamp,
) -> Result<Option<jiff::Timestamp>, CliError> {
    since.map(|text| crate::time::parse_since(text, now)).transpose().map_err(CliError::usage)
}

fn render(stats: &AgentStats, now: jiff::Timestamp) -> String {
    let window = match stats.since {
        Some(since) => format!("since {}", short_time(since, now)),
        None => "all time".to_owned(),
    };
    if stats.groups.is_empty() {
        return format!("🤖 Agents ({window}): no attempts recorded");
    }
    let by = match stats.by {
        GroupBy::Coder => "CODER",
        GroupBy::Model => "MODEL",
        GroupBy::Cwd => "CWD",
        GroupBy::Account => "ACCOUNT",
    };
    let head = [by, "ATTEMPTS", "TOKENS IN", "TOKENS OUT", "COST", "CLOSED", "COST/CLOSED"];
    let mut table = new_table(&head, 1);
    for group in &stats.groups {
        table.add_row(row(&printable(&group.key), &group.sums));
    }
    if stats.groups.len() > 1 {
        table.add_row(row("total", &stats.total));
    }
    let mut text = format!("🤖 Agents ({window}), by {}\n{table}", by.to_lowercase());
    if !stats.pauses.is_empty() {
        let mut pauses = new_table(&["PAUSED", "CAUSE", "PAUSES", "TOTAL"], 2);
        for pause in &stats.pauses {
            let scope = crate::coders::account::qualified(&pause.coder, pause.account.as_deref());
            pauses.add_row(vec![
                printable(&scope).into_owned(),
                pause.cause.as_str().to_owned(),
                pause.pauses.to_string(),
                duration(pause.paused_secs),
            ]);
        }
        text.push_str(&format!("\n{pauses}"));
    }
    text
}

/// A table with `header`, its columns from `first_number` on aligned right.
pub(super) fn new_table(header: &[&str], first_number: usize) -> Table {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(header.to_vec());
    for index in first_number..header.len() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

fn row(key: &str, sums: &Sums) -> Vec<String> {
    vec![
        key.to_owned(),
        sums.attempts.to_string(),
        tokens(sums.tokens_in),
        tokens(sums.tokens_out),
        cost(sums.cost_usd),
        sums.closed_tasks.to_string(),
        cost(sums.cost_per_closed_task_usd),
    ]
}
