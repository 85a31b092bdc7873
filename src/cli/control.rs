//! Stepping in: `fleet kill <id> [--requeue]`, `fleet pause [--coder C [--model M]] [--account
//! NAME]`, `fleet resume [--coder C [--model M]] [--account NAME]`.
//!
//! A kill is a change to the task through the tracker layer — blocked with a comment, or
//! released with `--requeue` — and the supervisor running it stops its agent because a running
//! task changed by someone else always is (see `supervisor::revocation`), within a poll.
//! A pause is a hold in `$FLEET_HOME/state/holds.json` (see `supervisor::hold`), which the
//! supervisor re-reads when it changes: no new agent starts, running agents go on. `resume`
//! lifts the quality canary's holds too (`supervisor::canary`), and the canary then judges the
//! coder·model or account afresh.

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use std::path::Path;

use crate::coders::account::qualified;
use crate::config::RuntimeConfig;
use crate::model::Status;
use crate::op::IssuePatch;
use crate::supervisor::hold::{Hold, Holds, model_scope};
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
    /// Only new agents on this account (`[[coders.NAME.accounts]]`); the coder goes on with
    /// its other accounts. Add --coder when two coders have an account of that name.
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,
    /// Only the coder's tasks that run this model (`default` or `""`: the model its CLI picks
    /// itself, as `fleet tasks` shows it); the coder goes on with its other models.
    #[arg(long, value_name = "MODEL", requires = "coder", conflicts_with = "account")]
    pub model: Option<String>,
    /// Why, shown by `fleet tasks`.
    #[arg(long, short)]
    pub reason: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Only this coder's pauses, its models' included (default: every pause).
    #[arg(long, value_name = "CODER")]
    pub coder: Option<String>,
    /// Only this account's pause (placed with `fleet pause --account`, or by the canary).
    #[arg(long, value_name = "NAME")]
    pub account: Option<String>,
    /// Only the pause of the coder's model (placed with `fleet pause --model`, or by the
    /// canary); `default` or `""`: the model its CLI picks itself.
    #[arg(long, value_name = "MODEL", requires = "coder", conflicts_with = "account")]
    pub model: Option<String>,
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
    // Pausing everything reads no configuration: a broken runtime.toml, often the very reason
    // to pause, does not stop it.
    let mut account = None;
    if args.coder.is_some() || args.account.is_some() {
        let config = load_config(&home)?;
        if let Some(coder) = &args.coder {
            check_coder(&config, coder)?;
        }
        if let Some(name) = &args.account {
            account = Some(find_account(&config, args.coder.as_deref(), name)?);
        }
    }
    let mut edit = Holds::edit(&home).map_err(editing_error)?;
    let hold = Hold {
        since: ctx.now(),
        by: ctx.actor().to_string(),
        reason: args.reason.clone().unwrap_or_default(),
        cause: None,
    };
    let model = args.model.as_deref().map(cli_default_model);
    let changed = match (&account, args.coder.as_deref(), model) {
        (Some((coder, name)), _, _) => edit.holds.place_account(coder, name, hold),
        (None, Some(coder), Some(model)) => edit.holds.place_model(coder, model, hold),
        (None, coder, _) => edit.holds.place(coder, hold),
    };
    let holds = edit.save().map_err(writing_error)?;
    let whom = match (&account, args.coder.as_deref(), model) {
        (Some((coder, name)), _, _) => format!("account {}", qualified(coder, Some(name))),
        (None, Some(coder), Some(model)) => format!("model {}", model_scope(coder, model)),
        (None, Some(coder), None) => format!("coder {coder}"),
        (None, None, _) => "every coder".to_owned(),
    };
    let shown = HoldsShown { changed, holds };
    ctx.out.emit(&shown, || {
        let already = if changed { "" } else { " (already paused)" };
        format!("⏸ new agents paused for {whom}{already}; running agents go on (`fleet resume` lifts it)")
    });
    Ok(())
}

/// The model a `--model` names: `default` is the model the CLI picks itself (stored as
/// `""`), as `fleet tasks` and the canary show it (`coder·default`).
fn cli_default_model(model: &str) -> &str {
    if model == "default" { "" } else { model }
}

pub fn cmd_resume(ctx: &Context, args: ResumeArgs) -> Result<(), CliError> {
    let home = fleet_home()?;
    let mut edit = Holds::edit(&home).map_err(editing_error)?;
    let model = args.model.as_deref().map(cli_default_model);
    let (changed, whom) = match (&args.account, args.coder.as_deref(), model) {
        (Some(name), _, _) => {
            let (coder, name) = held_account(&edit.holds, args.coder.as_deref(), name)?;
            (
                edit.holds.lift_account(&coder, &name),
                Some(format!("account {}", qualified(&coder, Some(&name)))),
            )
        }
        (None, Some(coder), Some(model)) => (
            edit.holds.lift_model(coder, model),
            Some(format!("model {}", model_scope(coder, model))),
        ),
        _ => (
            edit.holds.lift(args.coder.as_deref()),
            args.coder.as_ref().map(|c| format!("coder {c}")),
        ),
    };
    let holds = edit.save().map_err(writing_error)?;
    let shown = HoldsShown { changed, holds };
    ctx.out.emit(&shown, || match (changed, &whom) {
        (false, Some(whom)) => format!("{whom} was not paused"),
        (false, None) => "nothing was paused".to_owned(),
        (true, Some(whom)) => format!("▶ {whom} resumed"),
        (true, None) => "▶ resumed: new agents start again".to_owned(),
    });
    Ok(())
}

/// The error for holds that could not be read for a change (their lock, or the state
/// directory).
fn editing_error(error: std::io::Error) -> CliError {
    CliError::new(format!("reading the pauses for a change: {error}"))
}

fn writing_error(error: std::io::Error) -> CliError {
    CliError::new(format!("writing the pause: {error}"))
}

fn load_config(home: &Path) -> Result<RuntimeConfig, CliError> {
    RuntimeConfig::load(&home.join(crate::config::FILE_NAME))
        .map_err(|e| CliError::new(e.to_string()))
}

/// Refuses a coder runtime.toml does not define.
fn check_coder(config: &RuntimeConfig, coder: &str) -> Result<(), CliError> {
    let registry = config.registry().map_err(|e| CliError::new(e.to_string()))?;
    registry.get(coder).map(|_| ()).map_err(|error| {
        CliError::new(error.to_string()).with_hint("`fleet config show` lists the coders")
    })
}

/// The coder and name of the account `name` (of `coder`, when given), which runtime.toml
/// must define, once.
fn find_account(
    config: &RuntimeConfig,
    coder: Option<&str>,
    name: &str,
) -> Result<(String, String), CliError> {
    let known = config
        .coders
        .iter()
        .flat_map(|(c, table)| table.accounts.iter().map(move |a| (c.as_str(), a.name.as_str())));
    pick_one(known, coder, name, "runtime.toml defines no account")
        .map_err(|error| error.with_hint("accounts are [[coders.NAME.accounts]] tables in runtime.toml (`fleet config show` lists them)"))
}

/// The held account `name` (of `coder`, when given).
fn held_account(
    holds: &Holds,
    coder: Option<&str>,
    name: &str,
) -> Result<(String, String), CliError> {
    let held = holds
        .accounts
        .iter()
        .flat_map(|(c, accounts)| accounts.keys().map(move |a| (c.as_str(), a.as_str())));
    pick_one(held, coder, name, "no account is paused under the name")
        .map_err(|error| error.with_hint("`fleet tasks` lists the pauses"))
}

/// The one `(coder, account)` of `candidates` whose account is `name` (and whose coder is
/// `coder`, when given).
fn pick_one<'a>(
    candidates: impl Iterator<Item = (&'a str, &'a str)>,
    coder: Option<&str>,
    name: &str,
    none: &str,
) -> Result<(String, String), CliError> {
    let mut matching: Vec<(String, String)> = candidates
        .filter(|(c, account)| *account == name && coder.is_none_or(|wanted| wanted == *c))
        .map(|(c, account)| (c.to_owned(), account.to_owned()))
        .collect();
    match matching.len() {
        1 => Ok(matching.remove(0)),
        0 => {
            let of = coder.map(|c| format!(" of coder {c}")).unwrap_or_default();
            Err(CliError::new(format!("{none} {name:?}{of}")))
        }
        _ => {
            let all: Vec<String> = matching.iter().map(|(c, a)| qualified(c, Some(a))).collect();
            Err(CliError::new(format!(
                "several coders have an account {name:?}: {}; add --coder to say which",
                all.join(", ")
            )))
        }
    }
}
