//! `fleet stats --canaries`: the quality canary's view (see `supervisor::canary`) — per
//! coder·model and per account, the attempts in the window, the failure rate, requeue rate and
//! cost per closed task of the window next to their baselines, and whether it is learning, ok,
//! over its limit, or tripped (held until `fleet resume`). `--json` is the
//! [`CanaryReport`] document (`schema/stats-canaries.schema.json`). Reads only `FLEET_HOME`
//! (the ledgers, `state/canaries.json`, the holds and runtime.toml), as a supervisor starting
//! now would seed its canary.

use super::agent_stats::new_table;
use super::context::{Context, fleet_home};
use super::error::CliError;
use super::output::printable;
use super::tasks::cost;
use crate::config::RuntimeConfig;
use crate::supervisor::canary::{Canaries, CanaryReport, Measures};
use crate::supervisor::hold::Holds;

pub fn cmd_canaries(ctx: &Context) -> Result<(), CliError> {
    let home = fleet_home()?;
    // A broken runtime.toml leaves the default thresholds: the figures are still worth seeing.
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map(|config| config.canary)
        .unwrap_or_default();
    let holds = Holds::read(&home)
        .map_err(|error| CliError::new(format!("reading the pauses: {error}")))?;
    let report = Canaries::in_memory(&home, &config, &holds).report(&config, &holds);
    ctx.out.emit(&report, || render(&report));
    Ok(())
}

fn render(report: &CanaryReport) -> String {
    let state = if report.enabled { "" } else { " — disabled ([canary] enabled = false)" };
    let head = format!(
        "🐤 Canaries: the last {} judged attempts against the ones before (judged from {}){state}",
        report.window, report.min_attempts
    );
    if report.canaries.is_empty() {
        return format!("{head}\nno judged attempt recorded yet");
    }
    let columns = ["SUBJECT", "STATUS", "ATTEMPTS", "FAILED", "REQUEUED", "$/CLOSED"];
    let mut table = new_table(&columns, 2);
    let mut details = Vec::new();
    for row in &report.canaries {
        table.add_row(vec![
            printable(&row.subject).into_owned(),
            row.status.as_str().to_owned(),
            format!("{} ({})", row.window.attempts, row.baseline.attempts),
            paired(&row.window, &row.baseline, |m| percent(m.failure_rate)),
            paired(&row.window, &row.baseline, |m| percent(m.requeue_rate)),
            paired(&row.window, &row.baseline, |m| cost(m.usd_per_closed_task)),
        ]);
        if let Some(detail) = &row.detail {
            details.push(format!("  {}: {}", printable(&row.subject), printable(detail)));
        }
    }
    let mut text = format!("{head}\n{table}\n(in brackets: the baseline)");
    for detail in details {
        text.push_str(&format!("\n{detail}"));
    }
    text
}

/// `now (baseline)` of one measure.
fn paired(window: &Measures, baseline: &Measures, show: impl Fn(&Measures) -> String) -> String {
    format!("{} ({})", show(window), show(baseline))
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |rate| format!("{:.0}%", rate * 100.0))
}
