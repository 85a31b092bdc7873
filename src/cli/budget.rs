//! `fleet budget`: what the `[budget]` caps of runtime.toml allow — per scope, the cap, what
//! was spent today (from every task's ledger), what is left and when it resets — and
//! `fleet budget raise SCOPE AMOUNT`, which raises a cap in runtime.toml keeping its comments.
//! The rules (the day, the estimate, what stops an attempt) are `crate::supervisor::budget`'s.

use clap::{Args, Subcommand};
use jiff::Timestamp;
use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::config::{BudgetConfig, RuntimeConfig};
use crate::supervisor::budget::{Held, Spending, day_of};

#[derive(Debug, Args)]
pub struct BudgetArgs {
    #[command(subcommand)]
    pub command: Option<BudgetCommand>,
}

#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Raise a cap in runtime.toml by AMOUNT (dollars, or tokens for `tokens`).
    Raise {
        /// `task` (usd_per_task), `tokens` (tokens_per_task), `day` (usd_per_day),
        /// `coder:NAME` or `account:CODER@ACCOUNT` (their usd_per_day).
        scope: String,
        amount: f64,
    },
}

/// What `fleet budget --json` prints.
#[derive(Debug, Serialize)]
struct Budget {
    /// The start of today (local time) and of tomorrow, when day caps reset.
    day_start: Timestamp,
    resets_at: Timestamp,
    /// Spent today by the whole fleet, capped or not.
    spent_today_usd: f64,
    /// One row per day cap.
    days: Vec<DayRow>,
    /// The caps of one task over all its attempts (`None`: no cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    usd_per_task: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens_per_task: Option<u64>,
    /// The day cap holding new attempts back now, as the supervisor recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    held: Option<Held>,
}

/// One day cap.
#[derive(Debug, Serialize)]
struct DayRow {
    /// `fleet`, `coder NAME` or `account CODER@ACCOUNT`.
    scope: String,
    cap_usd: f64,
    spent_usd: f64,
    left_usd: f64,
}

pub fn cmd_budget(ctx: &Context, args: BudgetArgs) -> Result<(), CliError> {
    let path = fleet_home()?.join(crate::config::FILE_NAME);
    match args.command {
        None => show(ctx),
        Some(BudgetCommand::Raise { scope, amount }) => {
            let change = crate::config::raise_budget(&path, &scope, amount)
                .map_err(super::config::set_error)?;
            let (key, value) = change.set.first().cloned().unwrap_or_default();
            ctx.out.emit(&change, || format!("✓ {key} = {value} in {}", path.display()));
            Ok(())
        }
    }
}

fn show(ctx: &Context) -> Result<(), CliError> {
    let home = fleet_home()?;
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map_err(|error| CliError::new(error.to_string()))?;
    let now = Timestamp::now();
    let spending = Spending::scan(&home, now);
    let (day_start, resets_at) = day_of(now);
    let budget = Budget {
        day_start,
        resets_at,
        spent_today_usd: spending.fleet,
        days: day_rows(&config.budget, &spending),
        usd_per_task: config.budget.usd_per_task,
        tokens_per_task: config.budget.tokens_per_task,
        held: Held::load(&home, now),
    };
    ctx.out.emit(&budget, || render(&budget, config.budget.is_set()));
    Ok(())
}

fn day_rows(config: &BudgetConfig, spending: &Spending) -> Vec<DayRow> {
    let row = |scope: String, cap: f64, spent: f64| DayRow {
        scope,
        cap_usd: cap,
        spent_usd: spent,
        left_usd: (cap - spent).max(0.0),
    };
    let fleet = config.usd_per_day.map(|cap| row("fleet".into(), cap, spending.fleet));
    let coders = config.coders.iter().filter_map(|(name, cap)| {
        let spent = spending.coders.get(name).copied().unwrap_or(0.0);
        cap.usd_per_day.map(|cap| row(format!("coder {name}"), cap, spent))
    });
    let accounts = config.accounts.iter().filter_map(|(name, cap)| {
        let spent = spending.accounts.get(name).copied().unwrap_or(0.0);
        cap.usd_per_day.map(|cap| row(format!("account {name}"), cap, spent))
    });
    fleet.into_iter().chain(coders).chain(accounts).collect()
}

fn render(budget: &Budget, set: bool) -> String {
    let mut lines = vec![format!(
        "spent today ${:.2}; day caps reset at {}",
        budget.spent_today_usd,
        budget
            .resets_at
            .to_zoned(jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC))
            .strftime("%Y-%m-%d %H:%M %Z")
    )];
    if !set {
        lines.push("no [budget] caps in runtime.toml (README: Budgets)".to_owned());
    }
    for day in &budget.days {
        lines.push(format!(
            "  {:<24} ${:>8.2} of ${:>8.2} spent, ${:>8.2} left",
            day.scope, day.spent_usd, day.cap_usd, day.left_usd
        ));
    }
    if let Some(usd) = budget.usd_per_task {
        lines.push(format!("  {:<24} ${usd:.2} per task", "task"));
    }
    if let Some(tokens) = budget.tokens_per_task {
        lines.push(format!("  {:<24} {tokens} tokens per task", "task tokens"));
    }
    if let Some(held) = &budget.held {
        lines.push(format!(
            "⏸ new attempts held by the {} cap until {}: {}",
            held.scope, held.until, held.detail
        ));
    }
    lines.join("\n")
}
