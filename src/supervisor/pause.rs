//! Paused coders: while a coder cannot do useful work, no task is started with it.
//!
//! A coder is paused when its CLI hit a rate limit (until the window resets), when the CLI
//! went near its window (`rate_limit_threshold_pct`), or for a fault of the fleet rather than
//! of the task: the program is missing, it is not logged in, or the provider is down. A fault
//! pause backs off (30 s, doubling up to 10 min) while the coder keeps failing and is
//! forgotten after an attempt that ran without one. Tasks of other coders keep running.
//!
//! The pauses are kept in `$FLEET_HOME/state/pauses.json`, so a restarted supervisor does
//! not walk straight back into a rate limit.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

impl PauseCause {
    /// Whether this is a fault of the fleet (backed off while it repeats).
    pub fn is_fault(self) -> bool {
        !matches!(self, PauseCause::RateLimit)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PauseCause::RateLimit => "rate limit",
            PauseCause::Spawn => "cannot start",
            PauseCause::Auth => "not logged in",
            PauseCause::Outage => "provider outage",
        }
    }
}

/// One coder's pause.
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

/// The coders' pauses, backed by a file.
#[derive(Debug, Default)]
pub struct Pauses {
    path: Option<PathBuf>,
    by_coder: BTreeMap<String, Pause>,
}

/// What [`Pauses::pause`] did, for the live view.
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    pub coder: String,
    pub pause: Pause,
    /// A new cause (print the cause and the fix), as opposed to the same fault again or a
    /// longer wait for the same limit.
    pub news: bool,
}

impl Pauses {
    /// The pauses stored under `home` (none if the file is missing or unreadable: a stale
    /// pause is not worth refusing to start over).
    pub fn load(home: &Path) -> Pauses {
        let path = home.join("state").join("pauses.json");
        let by_coder = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Pauses { path: Some(path), by_coder }
    }

    /// The pause in force for `coder` at `now`.
    pub fn active(&self, coder: &str, now: Timestamp) -> Option<&Pause> {
        self.by_coder.get(coder).filter(|p| p.until > now)
    }

    /// Every pause still in force, by coder.
    pub fn all_active(&self, now: Timestamp) -> impl Iterator<Item = (&str, &Pause)> {
        self.by_coder.iter().filter(move |(_, p)| p.until > now).map(|(c, p)| (c.as_str(), p))
    }

    /// When the next pause in force ends.
    pub fn next_end(&self, now: Timestamp) -> Option<Timestamp> {
        self.all_active(now).map(|(_, p)| p.until).min()
    }

    /// Pauses `coder` for a rate limit until `until`. A pause is never shortened. `None` when
    /// nothing changed worth telling (the same limit, extended by under a second: the
    /// runner's signal and then the recorded outcome of one rate limit).
    pub fn rate_limit(&mut self, coder: &str, until: Timestamp, detail: &str) -> Option<Paused> {
        let current = self.by_coder.get(coder);
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
        self.set(coder, pause.clone());
        news.then(|| Paused { coder: coder.to_string(), pause, news })
    }

    /// Pauses `coder` for a fault of the fleet, backing off while the faults repeat. Faults of
    /// attempts that were already running when the coder was paused belong to the same
    /// episode: they neither lengthen the backoff nor make news (`None`).
    pub fn fault(
        &mut self,
        coder: &str,
        cause: PauseCause,
        detail: &str,
        now: Timestamp,
    ) -> Option<Paused> {
        let previous = self.by_coder.get(coder);
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
        self.set(coder, pause.clone());
        Some(Paused { coder: coder.to_string(), pause, news })
    }

    /// An attempt of `coder` ran without a fault: forget its fault history (a rate-limit
    /// pause still in force stays).
    pub fn succeeded(&mut self, coder: &str, now: Timestamp) {
        let Some(pause) = self.by_coder.get(coder) else { return };
        if pause.cause == PauseCause::RateLimit && pause.until > now {
            if pause.faults_in_row > 0 {
                let mut kept = pause.clone();
                kept.faults_in_row = 0;
                self.by_coder.insert(coder.to_string(), kept);
                self.save();
            }
            return;
        }
        self.by_coder.remove(coder);
        self.save();
    }

    fn set(&mut self, coder: &str, pause: Pause) {
        self.by_coder.insert(coder.to_string(), pause);
        self.save();
    }

    /// Writes the file (best effort: a pause that cannot be saved still holds in this run).
    fn save(&self) {
        let Some(path) = &self.path else { return };
        let Ok(text) = serde_json::to_string_pretty(&self.by_coder) else { return };
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

    #[test]
    fn fault_backoff_doubles_up_to_ten_minutes() {
        let secs: Vec<u64> = (1..=7).map(|n| fault_backoff(n).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600]);
    }

    #[test]
    fn pauses_survive_a_reload_and_success_clears_faults() {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::now();
        let mut pauses = Pauses::load(dir.path());
        let first = pauses.fault("claude", PauseCause::Auth, "Not logged in", now).unwrap();
        assert!(first.news);
        // Another attempt failing the same way while paused: the same episode.
        assert!(pauses.fault("claude", PauseCause::Auth, "Not logged in", now).is_none());
        // After the pause, the retry fails again: a longer wait, not news.
        let later = first.pause.until + SignedDuration::from_secs(1);
        let again = pauses.fault("claude", PauseCause::Auth, "Not logged in", later).unwrap();
        assert!(!again.news);
        assert_eq!(again.pause.faults_in_row, 2);
        assert_eq!(again.pause.until, later + SignedDuration::from_secs(60));
        let reloaded = Pauses::load(dir.path());
        assert_eq!(reloaded.active("claude", now).map(|p| p.cause), Some(PauseCause::Auth));
        assert!(reloaded.active("codex", now).is_none());
        pauses.succeeded("claude", now);
        assert!(Pauses::load(dir.path()).active("claude", now).is_none());
    }

    #[test]
    fn a_rate_limit_pause_is_never_shortened() {
        let now = Timestamp::now();
        let later = now + SignedDuration::from_secs(600);
        let mut pauses = Pauses::default();
        assert!(pauses.rate_limit("codex", later, "429").unwrap().news);
        assert!(pauses.rate_limit("codex", now + SignedDuration::from_secs(60), "429").is_none());
        assert_eq!(pauses.active("codex", now).unwrap().until, later);
    }
}
