//! `fleet stats --overhead [--since DURATION|DATE]`: the fixed context agents carry — per coder,
//! account and working directory, the prompt of each attempt's first model request — ranked by
//! what it costs a day (see `supervisor::overhead`). `--json` is the [`Overhead`] document
//! (`schema/stats-overhead.schema.json`). Reads only `FLEET_HOME` (ledgers and runtime.toml).

use super::agent_stats::{new_table, since_arg};
use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use super::tasks::{cost, tokens};
use crate::config::{RuntimeConfig, price_of};
use crate::supervisor::overhead::{Overhead, context_overhead};

pub fn cmd_overhead(ctx: &Context, since: Option<&str>) -> Result<(), CliError> {
    let home = fleet_home()?;
    let now = ctx.now();
    let since = since_arg(since, now)?;
    // A broken runtime.toml leaves only the built-in prices: the figures are still worth seeing.
    let prices = RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map(|config| config.prices)
        .unwrap_or_default();
    let overhead = context_overhead(&home, since, now, |model| price_of(&prices, model));
    ctx.out.emit(&overhead, || render(&overhead));
    Ok(())
}

fn render(overhead: &Overhead) -> String {
    if overhead.groups.is_empty() {
        return "📏 Fixed context: no attempt's first request recorded yet (claude and opencode \
                report it; codex and gemini only report a turn's totals)"
            .to_owned();
    }
    let head =
        ["CODER", "ACCOUNT", "CWD", "ATTEMPTS", "MEDIAN", "MAX", "$/ATTEMPT", "24H", "$/DAY"];
    let mut table = new_table(&head, 3);
    for group in &overhead.groups {
        table.add_row(vec![
            printable(&group.coder).into_owned(),
            printable(or_dash(&group.account)).into_owned(),
            printable(or_dash(&group.cwd)).into_owned(),
            group.attempts.to_string(),
            tokens(group.median_tokens),
            tokens(group.max_tokens),
            cost(group.usd_per_attempt),
            group.attempts_last_day.to_string(),
            cost(group.usd_per_day),
        ]);
    }
    format!(
        "📏 Fixed context: the prompt of each attempt's first request, before any task work \
         (uncached input price, an upper bound)\n{table}"
    )
}

fn or_dash(text: &str) -> &str {
    if text.is_empty() { "-" } else { text }
}
