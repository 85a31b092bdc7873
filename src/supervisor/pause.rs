//! Paused coders and accounts: while a coder (or one of its accounts) cannot do useful work,
//! no task is started with it.
//!
//! A coder is paused when its CLI hit a rate limit (until the window resets), when the CLI
//! went near its window (`rate_limit_threshold_pct`), or for a fault of the fleet rather than
//! of the task: the program is missing, it is not logged in, or the provider is down. A fault
//! pause backs off (30 s, doubling up to 10 min) while the coder keeps failing and is
//! forgotten after an attempt that ran without one. Tasks of other coders keep running.
//!
//! A coder with accounts (`[[coders.NAME.accounts]]`) has its rate limits and refused logins
//! paused per account ([`Scope::of_attempt`]): the coder goes on with its other accounts, and
//! stops only when every one is paused (see `supervisor::accounts`).
//!
//! The pauses in force are kept in `$FLEET_HOME/state/pauses.json`, so a restarted supervisor
//! does not walk straight back into a rate limit; every pause is also appended to
//! `state/pause-history.jsonl` ([`history`]) when it starts or grows, stamped with the time the
//! caller gives, for `fleet stats --agents`; past 1 MiB the history is cut to its newest half.
//! One rate limit is one pause: the supervisor pauses when the runner reports it, and the
//! attempt's outcome then names that pause rather than pausing again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

/// The first wait after a fault of the fleet.
pub const FAULT_BACKOFF_START: Duration = Duration::from_secs(30);
/// The longest wait after repeated faults.
pub const FAULT_BACKOFF_MAX: Duration = Duration::from_secs(600);

/// Why a coder is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseCause {
    /// The provider refused requests until a window resets (or a window is nearly used up).
    RateLimit,
    /// The CLI could not be started (missing, not executable).
    Spawn,
    /// The CLI is not logged in, or its key was refused.
    Auth,
    /// The provider failed (5xx, overloaded, connection refused) after the CLI's own retries.
    Outage,
    /// The quality canary saw a coder·model or an account fail, requeue or cost well above its
    /// baseline (`supervisor::canary`): held until a person resumes it.
    Canary,
}

impl PauseCause {
    /// Whether this is a fault of the fleet (backed off while it repeats).
    pub fn is_fault(self) -> bool {
        !matches!(self, PauseCause::RateLimit | PauseCause::Canary)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PauseCause::RateLimit => "rate limit",
            PauseCause::Spawn => "cannot start",
            PauseCause::Auth => "not logged in",
            PauseCause::Outage => "provider outage",
            PauseCause::Canary => "canary",
        }
    }
}

/// What a pause holds back: every new agent of a coder, or only those on one of its accounts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope {
    pub coder: String,
    /// `None`: the whole coder.
    pub account: Option<String>,
}

impl Scope {
    /// The whole of `coder`.
    pub fn coder(coder: &str) -> Scope {
        Scope { coder: coder.to_owned(), account: None }
    }

    /// `coder`'s account `account`.
    pub fn account(coder: &str, account: &str) -> Scope {
        Scope { coder: coder.to_owned(), account: Some(account.to_owned()) }
    }

    /// What a pause for `cause` after an attempt of `coder` on `account` (empty: none) holds
    /// back: a rate limit or a refused login belongs to the account the attempt ran on, since
    /// the other accounts have windows and logins of their own; a CLI that cannot start or a
    /// provider that is down stops the coder whatever the account.
    pub fn of_attempt(coder: &str, account: &str, cause: PauseCause) -> Scope {
        let per_account = matches!(cause, PauseCause::RateLimit | PauseCause::Auth);
        if per_account && !account.is_empty() {
            Scope::account(coder, account)
        } else {
            Scope::coder(coder)
        }
    }

    /// The key in `pauses.json`: `coder`, or `coder/account` (neither name holds a `/`).
    fn key(&self) -> String {
        match &self.account {
            Some(account) => format!("{}/{account}", self.coder),
            None => self.coder.clone(),
        }
    }

    fn from_key(key: &str) -> Scope {
        match key.split_once('/') {
            Some((coder, account)) => Scope::account(coder, account),
            None => Scope::coder(key),
        }
    }
}

impl std::fmt::Display for Scope {
    /// `claude`, or `claude@work` for an account.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&crate::coders::account::qualified(&self.coder, self.account.as_deref()))
    }
}

/// One pause of a coder or an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pause {
    pub cause: PauseCause,
    pub until: Timestamp,
    /// What happened, in words (the CLI's own message where there is one).
    pub detail: String,
    /// Faults in a row so far (0 for rate limits): sets the next backoff.
    #[serde(default)]
    pub faults_in_row: u32,
}

impl Pause {
    /// Whether it takes a person to end it (a CLI that cannot start, a login refused), as
    /// opposed to one that ends by itself (a rate-limit window, a provider outage).
    pub fn needs_a_human(&self) -> bool {
        matches!(self.cause, PauseCause::Spawn | PauseCause::Auth | PauseCause::Canary)
    }
}

/// The file under `FLEET_HOME` holding the pauses in force.
const PAUSES_FILE: &str = "pauses.json";
/// The file under `FLEET_HOME/state` where every pause is appended as it starts or grows:
/// `fleet stats --agents` counts the pauses and their length from it.
pub const HISTORY_FILE: &str = "pause-history.jsonl";

/// One line of the pause history: `scope` paused from `at` until `until` for `cause`. A pause
/// extended later (a longer window) appears again with the same or a later `at`; overlapping
/// lines of one scope are one pause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PauseRecord {
    pub at: Timestamp,
    pub coder: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub cause: PauseCause,
    pub until: Timestamp,
}

impl PauseRecord {
    pub fn scope(&self) -> Scope {
        Scope { coder: self.coder.clone(), account: self.account.clone() }
    }
}

/// Once the pause history grows past this, it is cut to its newest lines filling half of it
/// (some thousands of pauses are kept).
const HISTORY_MAX_BYTES: u64 = 1 << 20;

/// Appends `line` to the history file at `path`, trimming the file when it grew too long.
fn append_history(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes())?;
    if file.metadata()?.len() > HISTORY_MAX_BYTES {
        let text = std::fs::read_to_string(path)?;
        crate::fsutil::write_atomic(path, newest_lines(&text, HISTORY_MAX_BYTES / 2).as_bytes())?;
    }
    Ok(())
}

/// The last whole lines of `text` that fit in `budget` bytes, each ending in a newline.
fn newest_lines(text: &str, budget: u64) -> String {
    let mut kept = Vec::new();
    let mut size = 0;
    for line in text.lines().rev() {
        size += line.len() as u64 + 1;
        if size > budget {
            break;
        }
        kept.push(line);
    }
    kept.iter().rev().map(|line| format!("{line}\n")).collect()
}

/// Every line of the pause history under `home` (lines that do not parse are skipped).
pub fn history(home: &Path) -> Vec<PauseRecord> {
    let Ok(text) = std::fs::read_to_string(home.join("state").join(HISTORY_FILE)) else {
        return Vec::new();
    };
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// The pauses of coders and accounts, backed by a file.
#[derive(Debug, Default)]
pub struct Pauses {
    /// `state/pauses.json` (`None`: kept in memory only).
    path: Option<PathBuf>,
    by_scope: BTreeMap<Scope, Pause>,
}

/// What [`Pauses::pause`] did, for the live view.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    pub scope: Scope,
    pub pause: Pause,
    /// A new cause (print the cause and the fix), as opposed to the same fault again or a
    /// longer wait for the same limit.
    pub news: bool,
}

impl Pauses {
    /// The pauses stored under `home` (none if the file is missing or unreadable: a stale
    /// pause is not worth refusing to start over).
    pub fn load(home: &Path) -> Pauses {
        let path = home.join("state").join(PAUSES_FILE);
        let by_key: BTreeMap<String, Pause> = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let by_scope =
            by_key.into_iter().map(|(key, pause)| (Scope::from_key(&key), pause)).collect();
        Pauses { path: Some(path), by_scope }
    }

    /// The pause in force for `scope` at `now`.
    pub fn active(&self, scope: &Scope, now: Timestamp) -> Option<&Pause> {
        self.by_scope.get(scope).filter(|p| p.until > now)
    }

    /// Every pause still in force.
    pub fn all_active(&self, now: Timestamp) -> impl Iterator<Item = (&Scope, &Pause)> {
        self.by_scope.iter().filter(move |(_, p)| p.until > now)
    }

    /// When the next pause in force ends.
    pub fn next_end(&self, now: Timestamp) -> Option<Timestamp> {
        self.all_active(now).map(|(_, p)| p.until).min()
    }

    /// Pauses `scope` for a rate limit until `until`, as of `now`. A pause is never shortened.
    /// `None` when nothing changed worth telling (the same limit, extended by under a second:
    /// two agents reporting one limit moments apart).
    pub fn rate_limit(
        &mut self,
        scope: &Scope,
        until: Timestamp,
        detail: &str,
        now: Timestamp,
    ) -> Option<Paused> {
        let current = self.by_scope.get(scope);
        if current.is_some_and(|p| p.until >= until) {
            return None;
        }
        let news = current.is_none_or(|p| {
            p.cause != PauseCause::RateLimit
                || until.duration_since(p.until) >= SignedDuration::from_secs(1)
        });
        let faults_in_row = current.map_or(0, |p| p.faults_in_row);
        let pause =
            Pause { cause: PauseCause::RateLimit, until, detail: detail.into(), faults_in_row };
        self.set(scope, pause.clone(), now);
        news.then(|| Paused { scope: scope.clone(), pause, news })
    }

    /// Pauses `scope` for a fault of the fleet, backing off while the faults repeat. Faults of
    /// attempts that were already running when it was paused belong to the same episode: they
    /// neither lengthen the backoff nor make news (`None`).
    pub fn fault(
        &mut self,
        scope: &Scope,
        cause: PauseCause,
        detail: &str,
        now: Timestamp,
    ) -> Option<Paused> {
        let previous = self.by_scope.get(scope);
        if previous.is_some_and(|p| p.cause == cause && p.until > now) {
            return None;
        }
        let faults_in_row = previous.map_or(0, |p| p.faults_in_row) + 1;
        let news = previous.is_none_or(|p| p.cause != cause);
        let wait = fault_backoff(faults_in_row);
        let until = now
            .checked_add(SignedDuration::try_from(wait).unwrap_or(SignedDuration::MAX))
            .unwrap_or(now);
        let until = previous.map_or(until, |p| p.until.max(until));
        let pause = Pause { cause, until, detail: detail.into(), faults_in_row };
        self.set(scope, pause.clone(), now);
        Some(Paused { scope: scope.clone(), pause, news })
    }

    /// An attempt in `scope` ran without a fault: forget its fault history (a rate-limit
    /// pause still in force stays).
    pub fn succeeded(&mut self, scope: &Scope, now: Timestamp) {
        let Some(pause) = self.by_scope.get_mut(scope) else { return };
        if pause.cause == PauseCause::RateLimit && pause.until > now {
            if pause.faults_in_row > 0 {
                pause.faults_in_row = 0;
                self.save();
            }
            return;
        }
        self.by_scope.remove(scope);
        self.save();
    }

    fn set(&mut self, scope: &Scope, pause: Pause, now: Timestamp) {
        self.record(scope, &pause, now);
        self.by_scope.insert(scope.clone(), pause);
        self.save();
    }

    /// Appends the pause, starting or grown `at`, to the history (best effort, like the file
    /// of pauses in force).
    fn record(&self, scope: &Scope, pause: &Pause, at: Timestamp) {
        let Some(dir) = self.path.as_deref().and_then(Path::parent) else { return };
        let record = PauseRecord {
            at,
            coder: scope.coder.clone(),
            account: scope.account.clone(),
            cause: pause.cause,
            until: pause.until,
        };
        let Ok(line) = serde_json::to_string(&record) else { return };
        let appended = std::fs::create_dir_all(dir)
            .and_then(|()| append_history(&dir.join(HISTORY_FILE), &line));
        if let Err(error) = appended {
            tracing::warn!(%error, dir = %dir.display(), "cannot record the pause in its history");
        }
    }

    /// Writes the file (best effort: a pause that cannot be saved still holds in this run).
    fn save(&self) {
        let Some(path) = &self.path else { return };
        let by_key: BTreeMap<String, &Pause> =
            self.by_scope.iter().map(|(scope, pause)| (scope.key(), pause)).collect();
        let Ok(text) = serde_json::to_string_pretty(&by_key) else { return };
        if let Some(dir) = path.parent()
            && let Err(error) = std::fs::create_dir_all(dir)
        {
            tracing::warn!(%error, dir = %dir.display(), "cannot create the state directory");
            return;
        }
        if let Err(error) = crate::fsutil::write_atomic(path, format!("{text}\n").as_bytes()) {
            tracing::warn!(%error, path = %path.display(), "cannot save the coder pauses");
        }
    }
}

/// The wait after the `n`th fault in a row: 30 s, 60 s, 120 s, … up to 10 min.
pub fn fault_backoff(n: u32) -> Duration {
    let doublings = n.saturating_sub(1).min(16);
    FAULT_BACKOFF_START.saturating_mul(1 << doublings).min(FAULT_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The history keeps its newest pauses once it grows past its bound, and reads on.
    #[test]
    fn a_long_pause_history_is_cut_to_its_newest_pauses() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        let old = PauseRecord {
            at: "2026-01-01T00:00:00Z".parse().unwrap(),
            coder: "codex".into(),
            account: None,
            cause: PauseCause::RateLimit,
            until: "2026-01-01T01:00:00Z".parse().unwrap(),
        };
        let line = serde_json::to_string(&old).unwrap();
        let lines = (HISTORY_MAX_BYTES as usize / (line.len() + 1)) + 10;
        std::fs::write(state.join(HISTORY_FILE), format!("{line}\n").repeat(lines)).unwrap();

        let mut pauses = Pauses::load(dir.path());
        pauses.fault(&Scope::coder("claude"), PauseCause::Auth, "Not logged in", Timestamp::now());

        let size = std::fs::metadata(state.join(HISTORY_FILE)).unwrap().len();
        assert!(size <= HISTORY_MAX_BYTES / 2, "{size} bytes left");
        let history = history(dir.path());
        assert!(history.len() > 1000, "thousands of pauses kept: {}", history.len());
        assert_eq!(history.last().map(|r| r.coder.as_str()), Some("claude"), "the newest kept");
        assert!(history[..history.len() - 1].iter().all(|r| *r == old));
    }

    #[test]
    fn newest_lines_keep_whole_lines_within_the_budget() {
        assert_eq!(newest_lines("aa\nbbb\ncc\n", 7), "bbb\ncc\n");
        assert_eq!(newest_lines("aa\nbbb\ncc\n", 6), "cc\n");
        assert_eq!(newest_lines("aa\nbbb\ncc\n", 2), "");
    }

    #[test]
    fn fault_backoff_doubles_up_to_ten_minutes() {
        let secs: Vec<u64> = (1..=7).map(|n| fault_backoff(n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600]);
    }

    #[test]
    fn pauses_survive_a_reload_and_success_clears_faults() {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::now();
        let (claude, codex) = (Scope::coder("claude"), Scope::coder("codex"));
        let mut pauses = Pauses::load(dir.path());
        let first = pauses.fault(&claude, PauseCause::Auth, "Not logged in", now).unwrap();
        assert!(first.news);
        // Another attempt failing the same way while paused: the same episode.
        assert!(pauses.fault(&claude, PauseCause::Auth, "Not logged in", now).is_none());
        // After the pause, the retry fails again: a longer wait, not news.
        let later = first.pause.until + SignedDuration::from_secs(1);
        let again = pauses.fault(&claude, PauseCause::Auth, "Not logged in", later).unwrap();
        assert!(!again.news);
        assert_eq!(again.pause.faults_in_row, 2);
        assert_eq!(again.pause.until, later + SignedDuration::from_secs(60));
        let reloaded = Pauses::load(dir.path());
        assert_eq!(reloaded.active(&claude, now).map(|p| p.cause), Some(PauseCause::Auth));
        assert!(reloaded.active(&codex, now).is_none());
        pauses.succeeded(&claude, now);
        assert!(Pauses::load(dir.path()).active(&claude, now).is_none());
        assert_eq!(history(dir.path()).len(), 2, "each pause that started or grew is recorded");
    }

    #[test]
    fn a_rate_limit_pause_is_never_shortened() {
        let now = Timestamp::now();
        let later = now + SignedDuration::from_secs(600);
        let codex = Scope::coder("codex");
        let mut pauses = Pauses::default();
        assert!(pauses.rate_limit(&codex, later, "429", now).unwrap().news);
        let sooner = now + SignedDuration::from_secs(60);
        assert!(pauses.rate_limit(&codex, sooner, "429", now).is_none());
        assert_eq!(pauses.active(&codex, now).unwrap().until, later);
    }

    #[test]
    fn account_pauses_are_kept_apart_from_their_coder_and_survive_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::now();
        let until = now + SignedDuration::from_secs(600);
        let work = Scope::account("claude", "work");
        let mut pauses = Pauses::load(dir.path());
        assert_eq!(
            pauses.rate_limit(&work, until, "429", now).unwrap().scope.to_string(),
            "claude@work"
        );
        let reloaded = Pauses::load(dir.path());
        assert_eq!(reloaded.active(&work, now).map(|p| p.until), Some(until));
        assert!(reloaded.active(&Scope::coder("claude"), now).is_none());
        assert!(reloaded.active(&Scope::account("claude", "home"), now).is_none());
        let recorded = history(dir.path());
        assert_eq!(recorded.len(), 1);
        assert_eq!((recorded[0].scope(), recorded[0].until), (work, until));
        assert_eq!(recorded[0].at, now, "stamped with the caller's time");
    }

    #[test]
    fn rate_limits_and_logins_pause_the_account_other_faults_the_coder() {
        let scope = |cause| Scope::of_attempt("claude", "work", cause).to_string();
        assert_eq!(scope(PauseCause::RateLimit), "claude@work");
        assert_eq!(scope(PauseCause::Auth), "claude@work");
        assert_eq!(scope(PauseCause::Outage), "claude");
        assert_eq!(scope(PauseCause::Spawn), "claude");
        assert_eq!(Scope::of_attempt("claude", "", PauseCause::RateLimit).to_string(), "claude");
    }
}
