//! Account rotation: which of a coder's accounts an attempt runs on, and whether a coder can
//! start an agent at all.
//!
//! A coder with accounts (`[[coders.NAME.accounts]]`) runs each attempt on one of them: the
//! usable ones are those neither paused ([`Pauses`], per account for rate limits and refused
//! logins) nor held by a person (`fleet pause --account`). Among those, [`Rotation::pick`]
//! takes the account with the fewest agents running now, then the one started least recently,
//! then the first in the file. Tokens are what runs out, and every account has a window of its
//! own: spreading the agents that run at once evenly keeps the accounts' burn rates equal, so
//! none hits its limit long before the others; the least-recently-used tie-break makes a fleet
//! that runs one agent at a time take turns too, instead of draining the first account.
//!
//! Accounts whose CLIs reported their rate-limit windows ([`Windows`]) come first, the one
//! whose window resets soonest first: its unused quota is lost at the reset, while an account
//! that resets late keeps its quota for later. An account with no headroom is paused already
//! (`rate_limit_threshold_pct`), so every usable account has some.
//!
//! A coder stops starting agents ([`blocked`]) when it is paused or held itself, or when it has
//! accounts and none is usable; it is then paused as a whole until the account pause that ends
//! first does ([`coder_paused_by_accounts`], what the live view and `fleet tasks` show). A coder
//! without accounts behaves as it always has. [`availability`] answers both questions of a
//! claim at once: which accounts a coder may use, or what stops it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::hold::Holds;
use super::pause::{Pause, Pauses, Scope};
use crate::coders::Account;
use crate::coders::account::qualified;
use crate::config::RuntimeConfig;

/// One rate-limit window of an account, as its CLI last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<f64>,
}

/// The file under `FLEET_HOME/state` holding [`Windows`], for `fleet accounts` and restarts.
const WINDOWS_FILE: &str = "windows.json";

/// What the accounts' CLIs last said about their windows: `coder@account` → window name
/// (`five_hour`, `seven_day`; empty when unnamed) → the window. Kept in `state/windows.json`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Windows {
    seen: BTreeMap<String, BTreeMap<String, Window>>,
}

impl Windows {
    /// The windows recorded under `home` (none when missing or unreadable).
    pub fn load(home: &Path) -> Windows {
        let path = home.join("state").join(WINDOWS_FILE);
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Writes the windows under `home`.
    pub fn save(&self, home: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(home.join("state"))?;
        let text = serde_json::to_string(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&home.join("state").join(WINDOWS_FILE), text.as_bytes())
    }

    /// Records a report about `window` of `coder`'s `account`; whether it changed anything.
    pub fn observe(
        &mut self,
        (coder, account): (&str, &str),
        window: Option<&str>,
        seen: Window,
    ) -> bool {
        let windows = self.seen.entry(qualified(coder, Some(account))).or_default();
        windows.insert(window.unwrap_or_default().to_owned(), seen) != Some(seen)
    }

    /// The windows known of `coder`'s `account`, by name.
    pub fn of(&self, coder: &str, account: &str) -> Option<&BTreeMap<String, Window>> {
        self.seen.get(&qualified(coder, Some(account)))
    }

    /// When the first of the account's known windows resets, if one resets after `now`.
    pub fn next_reset(&self, coder: &str, account: &str, now: Timestamp) -> Option<Timestamp> {
        let windows = self.of(coder, account)?;
        windows.values().filter_map(|w| w.resets_at).filter(|at| *at > now).min()
    }
}

/// When each account last started an agent in this run.
#[derive(Debug, Default)]
pub struct Rotation {
    /// `(coder, account)` → the number of the start (later starts have larger numbers).
    last_started: HashMap<(String, String), u64>,
    starts: u64,
}

impl Rotation {
    /// The account of `coder` the next attempt should run on, among `usable`: the one whose
    /// known window resets soonest (`next_reset(name)`; accounts with none known after), then
    /// the one with the fewest agents (`running(name)`), then the one started least recently.
    pub fn pick<'a>(
        &self,
        coder: &str,
        usable: &[&'a Account],
        running: impl Fn(&str) -> usize,
        next_reset: impl Fn(&str) -> Option<Timestamp>,
    ) -> Option<&'a Account> {
        usable
            .iter()
            .enumerate()
            .min_by_key(|(order, account)| {
                let last = self.last_started.get(&(coder.to_owned(), account.name.clone()));
                let reset = next_reset(&account.name);
                (reset.is_none(), reset, running(&account.name), last.copied().unwrap_or(0), *order)
            })
            .map(|(_, account)| *account)
    }

    /// Notes that an agent of `coder` started on `account`.
    pub fn started(&mut self, coder: &str, account: &str) {
        self.starts += 1;
        self.last_started.insert((coder.to_owned(), account.to_owned()), self.starts);
    }
}

/// The accounts of `coder` that may start an agent now, in the order of the file.
fn usable<'a>(
    config: &'a RuntimeConfig,
    coder: &str,
    pauses: &Pauses,
    holds: &Holds,
    now: Timestamp,
) -> Vec<&'a Account> {
    config
        .accounts(coder)
        .iter()
        .filter(|account| {
            !holds.holds_account(coder, &account.name)
                && pauses.active(&Scope::account(coder, &account.name), now).is_none()
        })
        .collect()
}

/// What keeps a coder from starting agents.
#[derive(Debug, Clone, PartialEq)]
pub enum Blocked<'a> {
    /// A person's `fleet pause` (of everything, the coder, or each of its accounts).
    Held,
    /// The pause after which the coder can start again soonest: its own, or — when every
    /// account is paused — the account pause that ends first, preferring one that ends by
    /// itself over one that needs a person.
    Paused(&'a Scope, &'a Pause),
}

/// The accounts `coder` may start its next agent on, in the order of the file (none for a
/// coder without accounts), or, when it cannot start one now, why.
pub fn availability<'c, 'p>(
    config: &'c RuntimeConfig,
    coder: &str,
    pauses: &'p Pauses,
    holds: &Holds,
    now: Timestamp,
) -> Result<Vec<&'c Account>, Blocked<'p>> {
    if holds.holds(coder) {
        return Err(Blocked::Held);
    }
    if let Some((scope, pause)) =
        pauses.all_active(now).find(|(scope, _)| scope.coder == coder && scope.account.is_none())
    {
        return Err(Blocked::Paused(scope, pause));
    }
    let accounts = config.accounts(coder);
    let usable = usable(config, coder, pauses, holds, now);
    if accounts.is_empty() || !usable.is_empty() {
        return Ok(usable);
    }
    let soonest = pauses
        .all_active(now)
        .filter(|(scope, _)| {
            scope.coder == coder
                && scope
                    .account
                    .as_ref()
                    .is_some_and(|name| accounts.iter().any(|a| &a.name == name))
        })
        .min_by_key(|(_, pause)| (pause.needs_a_human(), pause.until));
    Err(soonest.map_or(Blocked::Held, |(scope, pause)| Blocked::Paused(scope, pause)))
}

/// Why `coder` cannot start an agent now, if it cannot.
pub fn blocked<'a>(
    config: &RuntimeConfig,
    coder: &str,
    pauses: &'a Pauses,
    holds: &Holds,
    now: Timestamp,
) -> Option<Blocked<'a>> {
    availability(config, coder, pauses, holds, now).err()
}

/// The pause of `coder` as a whole while every one of its accounts is paused (and none of them
/// is only held by a person): until the account pause [`blocked`] picks, with a detail naming
/// it. `None` when the coder is not stopped by its accounts' pauses.
pub fn coder_paused_by_accounts(
    config: &RuntimeConfig,
    coder: &str,
    pauses: &Pauses,
    holds: &Holds,
    now: Timestamp,
) -> Option<Pause> {
    let Some(Blocked::Paused(soonest, pause)) = blocked(config, coder, pauses, holds, now) else {
        return None;
    };
    soonest.account.as_ref()?;
    Some(Pause {
        cause: pause.cause,
        until: pause.until,
        detail: format!("every account of {coder} is paused; {soonest} resumes first"),
        faults_in_row: 0,
    })
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::*;
    use crate::coders::CoderConfig;
    use crate::supervisor::hold::Hold;
    use crate::supervisor::pause::PauseCause;

    fn account(name: &str) -> Account {
        Account { name: name.to_owned(), env: BTreeMap::from([("K".into(), name.into())]) }
    }

    fn config(names: &[&str]) -> RuntimeConfig {
        let table = CoderConfig {
            accounts: names.iter().map(|n| account(n)).collect(),
            ..CoderConfig::default()
        };
        RuntimeConfig {
            coders: BTreeMap::from([("claude".to_owned(), table)]),
            ..RuntimeConfig::default()
        }
    }

    #[test]
    fn the_fewest_running_win_then_the_least_recently_started() {
        let (a, b, c) = (account("a"), account("b"), account("c"));
        let usable = [&a, &b, &c];
        let mut rotation = Rotation::default();
        let pick = |rotation: &Rotation, running: &[&str]| {
            let count = |name: &str| running.iter().filter(|r| **r == name).count();
            rotation.pick("claude", &usable, count, |_| None).map(|a| a.name.clone())
        };
        assert_eq!(pick(&rotation, &[]).as_deref(), Some("a"), "the file's order breaks ties");
        assert_eq!(pick(&rotation, &["a"]).as_deref(), Some("b"));
        assert_eq!(pick(&rotation, &["a", "b", "b", "c"]).as_deref(), Some("a"));
        // One at a time: each account takes its turn.
        let mut order = Vec::new();
        for _ in 0..4 {
            let next = pick(&rotation, &[]).unwrap();
            rotation.started("claude", &next);
            order.push(next);
        }
        assert_eq!(order, ["a", "b", "c", "a"]);
    }

    #[test]
    fn a_coder_is_blocked_only_when_every_account_is_paused_or_held() {
        let config = config(&["a", "b"]);
        let now = Timestamp::now();
        let mut pauses = Pauses::default();
        let holds = Holds::default();
        assert_eq!(blocked(&config, "claude", &pauses, &holds, now), None);
        let later = now + SignedDuration::from_secs(600);
        pauses.rate_limit(&Scope::account("claude", "a"), later, "429", now);
        let names: Vec<&str> = usable(&config, "claude", &pauses, &holds, now)
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["b"]);
        assert_eq!(blocked(&config, "claude", &pauses, &holds, now), None);
        pauses.fault(&Scope::account("claude", "b"), PauseCause::Auth, "Invalid API key", now);
        let Some(Blocked::Paused(scope, pause)) = blocked(&config, "claude", &pauses, &holds, now)
        else {
            panic!("every account is paused");
        };
        // The login pause of b ends first, but needs a person: a's window is what to wait for.
        assert_eq!((scope.to_string(), pause.until), ("claude@a".to_owned(), later));
        let whole = coder_paused_by_accounts(&config, "claude", &pauses, &holds, now).unwrap();
        assert_eq!((whole.cause, whole.until), (PauseCause::RateLimit, later));
        assert_eq!(whole.detail, "every account of claude is paused; claude@a resumes first");
        assert_eq!(blocked(&config, "codex", &pauses, &holds, now), None, "no accounts: as before");
        let mut held = Holds::default();
        let hold = Hold { since: now, by: "me".into(), reason: String::new(), cause: None };
        held.place_account("claude", "a", hold.clone());
        held.place_account("claude", "b", hold);
        assert_eq!(blocked(&config, "claude", &Pauses::default(), &held, now), Some(Blocked::Held));
    }

    #[test]
    fn the_account_whose_window_resets_soonest_goes_first() {
        let (a, b, c) = (account("a"), account("b"), account("c"));
        let usable = [&a, &b, &c];
        let now = Timestamp::now();
        let in_hours = |h: i64| now + SignedDuration::from_hours(h);
        let mut windows = Windows::default();
        let seen =
            |at: Timestamp, pct: f64| Window { resets_at: Some(at), utilization_pct: Some(pct) };
        // a resets in 4 h, c in 1 h (its weekly window much later), b said nothing.
        windows.observe(("claude", "a"), Some("five_hour"), seen(in_hours(4), 20.0));
        windows.observe(("claude", "c"), Some("five_hour"), seen(in_hours(1), 60.0));
        windows.observe(("claude", "c"), Some("seven_day"), seen(in_hours(100), 10.0));
        let rotation = Rotation::default();
        let pick = |running: &[&str], windows: &Windows| {
            let count = |name: &str| running.iter().filter(|r| **r == name).count();
            let reset = |name: &str| windows.next_reset("claude", name, now);
            rotation.pick("claude", &usable, count, reset).map(|a| a.name.clone())
        };
        // c resets first: its quota would be lost, so it is spent first, even while busy.
        assert_eq!(pick(&[], &windows).as_deref(), Some("c"));
        assert_eq!(pick(&["c", "c"], &windows).as_deref(), Some("c"));
        // c paused near its limit (not usable): a, which resets next, before b (unknown).
        let usable_ab = [&a, &b];
        let reset = |name: &str| windows.next_reset("claude", name, now);
        assert_eq!(
            rotation.pick("claude", &usable_ab, |_| 0, reset).map(|a| a.name.as_str()),
            Some("a")
        );
        // A window that reset is forgotten as a preference: b and a by the old rules.
        let later = in_hours(5);
        let reset_later = |name: &str| windows.next_reset("claude", name, later);
        assert_eq!(
            rotation.pick("claude", &usable_ab, |_| 0, reset_later).map(|a| a.name.as_str()),
            Some("a")
        );
    }
}
