//! `fleet accounts`: every coder's accounts (`[[coders.NAME.accounts]]`) with what their CLIs
//! last said about their rate-limit windows (utilisation, reset time; `state/windows.json`,
//! written by `fleet run`), and whether each is paused (until when, why) or held by a person.
//! The order in which `fleet run` uses them is `crate::supervisor::accounts`'.

use clap::Args;
use jiff::Timestamp;
use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use crate::config::RuntimeConfig;
use crate::supervisor::accounts::Windows;
use crate::supervisor::hold::Holds;
use crate::supervisor::pause::{Pauses, Scope};

#[derive(Debug, Args)]
pub struct AccountsArgs {}

/// What `fleet accounts --json` prints.
#[derive(Debug, Serialize)]
struct AccountsView {
    accounts: Vec<AccountRow>,
}

/// One account of one coder.
#[derive(Debug, Serialize)]
struct AccountRow {
    coder: String,
    account: String,
    /// The windows its CLI reported, by name (`five_hour`, `seven_day`).
    windows: Vec<WindowRow>,
    /// Paused by the supervisor (a rate limit, a refused login) until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    paused_until: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    paused_for: Option<String>,
    /// Held by a person (`fleet pause --account`).
    held: bool,
}

#[derive(Debug, Serialize)]
struct WindowRow {
    window: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    utilization_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resets_at: Option<Timestamp>,
}

pub fn cmd_accounts(ctx: &Context, _args: AccountsArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let config = RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map_err(|error| CliError::new(error.to_string()))?;
    let now = Timestamp::now();
    let (windows, pauses) = (Windows::load(&home), Pauses::load(&home));
    let holds = Holds::read(&home).unwrap_or_default();
    let mut accounts = Vec::new();
    for (coder, table) in &config.coders {
        for account in &table.accounts {
            let known = windows.of(coder, &account.name).cloned().unwrap_or_default();
            let pause = pauses.active(&Scope::account(coder, &account.name), now);
            accounts.push(AccountRow {
                coder: coder.clone(),
                account: account.name.clone(),
                windows: known
                    .into_iter()
                    .map(|(window, w)| WindowRow {
                        window,
                        utilization_pct: w.utilization_pct,
                        resets_at: w.resets_at,
                    })
                    .collect(),
                paused_until: pause.map(|p| p.until),
                paused_for: pause.map(|p| p.cause.as_str().to_owned()),
                held: holds.holds_account(coder, &account.name),
            });
        }
    }
    let view = AccountsView { accounts };
    ctx.out.emit(&view, || render(&view));
    Ok(())
}

fn render(view: &AccountsView) -> String {
    if view.accounts.is_empty() {
        return "no accounts: add [[coders.NAME.accounts]] tables to runtime.toml (README)"
            .to_owned();
    }
    let mut lines = Vec::new();
    for row in &view.accounts {
        let mut line = format!("{}@{}", row.coder, row.account);
        if let (Some(until), Some(why)) = (row.paused_until, &row.paused_for) {
            line.push_str(&format!("  paused until {until} ({why})"));
        }
        if row.held {
            line.push_str("  held (fleet pause)");
        }
        if row.windows.is_empty() {
            line.push_str("  no window reported yet");
        }
        lines.push(line);
        for window in &row.windows {
            let used = window.utilization_pct.map_or("?".to_owned(), |pct| format!("{pct:.0}%"));
            let resets = window.resets_at.map_or("?".to_owned(), |at| at.to_string());
            let name = if window.window.is_empty() { "window" } else { &window.window };
            lines.push(format!("  {name:<10} {used:>5} used, resets {resets}"));
        }
    }
    lines.join("\n")
}
