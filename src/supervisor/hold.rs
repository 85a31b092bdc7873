//! Holds: a person's pause of spawning (`fleet pause [--coder C]`, `fleet resume`), kept in
//! `$FLEET_HOME/state/holds.json`.
//!
//! A hold stops new agents from starting — every coder's, one coder's, one model's of a coder,
//! or those on one account of a coder — until it is lifted;
//! running agents go on. It is apart from the supervisor's own [`pauses`](super::pause) (rate
//! limits, faults), which end by themselves: a hold ends only when a person lifts it. People
//! write this file, and so does the quality canary (`supervisor::canary`) acting for them: a
//! coder·model or an account whose attempts went bad is held with cause
//! [`PauseCause::Canary`] until someone looks and runs `fleet resume`. A running supervisor
//! re-reads the file whenever it changes ([`HoldWatch`]), so a hold takes effect within a
//! poll.
//!
//! Every change is a read-modify-write under an exclusive lock on `state/holds.lock`
//! ([`Holds::edit`]), and the write replaces the file whole: two `fleet pause` at once both
//! land, and a reader sees the file before or after a change, never a part.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::pause::PauseCause;
use crate::config::{FileStamp, file_stamp};

/// One hold: who placed it, when, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub since: Timestamp,
    #[serde(default)]
    pub by: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Why fleet placed it by itself ([`PauseCause::Canary`]); absent for a person's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<PauseCause>,
}

impl Hold {
    /// Whether the quality canary placed it.
    pub fn is_canary(&self) -> bool {
        self.cause == Some(PauseCause::Canary)
    }
}

/// Every hold in force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Holds {
    /// Holds every coder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<Hold>,
    /// Holds of single coders.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub coders: BTreeMap<String, Hold>,
    /// Holds of single accounts, by coder, then account name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accounts: BTreeMap<String, BTreeMap<String, Hold>>,
    /// Holds of single models of a coder, by coder, then model (`""`: the model the coder's
    /// CLI picks itself).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, BTreeMap<String, Hold>>,
}

/// The file under `home`.
pub fn holds_path(home: &Path) -> PathBuf {
    home.join("state").join("holds.json")
}

/// The file whose lock one edit of the holds under `home` holds at a time.
fn lock_path(home: &Path) -> PathBuf {
    home.join("state").join("holds.lock")
}

/// How long an edit waits for another one (each takes milliseconds; only a process stopped
/// in the middle holds the lock longer).
const EDIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The holds read for a change, with the lock that keeps every other edit out until
/// [`HoldsEdit::save`] has written them (or the value is dropped).
#[derive(Debug)]
pub struct HoldsEdit {
    pub holds: Holds,
    home: PathBuf,
    _lock: std::fs::File,
}

impl HoldsEdit {
    /// Writes the holds atomically (removing the file when there are none), then lets the
    /// next edit in. Returns what was written.
    pub fn save(self) -> std::io::Result<Holds> {
        let path = holds_path(&self.home);
        if self.holds.is_empty() {
            match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
                _ => return Ok(self.holds),
            }
        }
        let text = serde_json::to_string_pretty(&self.holds).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&path, format!("{text}\n").as_bytes())?;
        Ok(self.holds)
    }
}

impl Holds {
    /// The holds under `home`: none when there is no file; an error names a file that cannot
    /// be read or parsed, which an edit must not overwrite with its one change.
    pub fn read(home: &Path) -> std::io::Result<Holds> {
        let path = holds_path(home);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Holds::default());
            }
            Err(error) => return Err(error),
        };
        serde_json::from_slice(&bytes).map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{} is not a holds file ({error}); fix it or remove it", path.display()),
            )
        })
    }

    /// The holds under `home`, read under the edit lock (waiting a little for an edit under
    /// way): the only way to change them, so that no two edits read the same file and one
    /// overwrites the other's change.
    pub fn edit(home: &Path) -> std::io::Result<HoldsEdit> {
        let lock = lock_path(home);
        if let Some(dir) = lock.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let Some(file) = crate::fsutil::lock_exclusive_within(&lock, EDIT_WAIT)? else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!(
                    "another process has held {} for {} s (a `fleet pause` or `fleet resume` stopped half-way?); `fuser -v {}` names it",
                    lock.display(),
                    EDIT_WAIT.as_secs(),
                    lock.display()
                ),
            ));
        };
        Ok(HoldsEdit { holds: Holds::read(home)?, home: home.to_path_buf(), _lock: file })
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_none()
            && self.coders.is_empty()
            && self.accounts.is_empty()
            && self.models.is_empty()
    }

    /// Whether new agents of `coder` are held.
    pub fn holds(&self, coder: &str) -> bool {
        self.all.is_some() || self.coders.contains_key(coder)
    }

    /// Whether new agents on `coder`'s account `account` are held (by a hold of the account,
    /// of the coder, or of everything).
    pub fn holds_account(&self, coder: &str, account: &str) -> bool {
        self.holds(coder) || self.accounts.get(coder).is_some_and(|held| held.contains_key(account))
    }

    /// Whether new agents of `coder` with `model` are held (by a hold of the model, of the
    /// coder, or of everything).
    pub fn holds_model(&self, coder: &str, model: &str) -> bool {
        self.holds(coder) || self.models.get(coder).is_some_and(|held| held.contains_key(model))
    }

    /// Every held coder·model, as `coder·model`.
    pub fn held_models(&self) -> impl Iterator<Item = (String, &Hold)> {
        self.models.iter().flat_map(|(coder, models)| {
            models.iter().map(move |(model, hold)| (model_scope(coder, model), hold))
        })
    }

    /// Places a hold on `coder`'s model `model`. Returns false when one was already in place,
    /// which stays: a person's pause does not replace the canary's (whose cause and reason
    /// would be lost, and its window restarted while still held), nor the other way round.
    pub fn place_model(&mut self, coder: &str, model: &str, hold: Hold) -> bool {
        place_new(self.models.entry(coder.to_owned()).or_default(), model, hold)
    }

    /// Lifts the hold on `coder`'s model `model`. Returns whether there was one.
    pub fn lift_model(&mut self, coder: &str, model: &str) -> bool {
        let Some(held) = self.models.get_mut(coder) else { return false };
        let lifted = held.remove(model).is_some();
        if held.is_empty() {
            self.models.remove(coder);
        }
        lifted
    }

    /// Every held account, as `coder@account`.
    pub fn held_accounts(&self) -> impl Iterator<Item = (String, &Hold)> {
        self.accounts.iter().flat_map(|(coder, accounts)| {
            accounts.iter().map(move |(account, hold)| {
                (crate::coders::account::qualified(coder, Some(account)), hold)
            })
        })
    }

    /// Places a hold on `coder`'s account `account`. Returns false when one was already in
    /// place, which stays (as [`Holds::place_model`]).
    pub fn place_account(&mut self, coder: &str, account: &str, hold: Hold) -> bool {
        place_new(self.accounts.entry(coder.to_owned()).or_default(), account, hold)
    }

    /// Lifts the hold on `coder`'s account `account`. Returns whether there was one.
    pub fn lift_account(&mut self, coder: &str, account: &str) -> bool {
        let Some(held) = self.accounts.get_mut(coder) else { return false };
        let lifted = held.remove(account).is_some();
        if held.is_empty() {
            self.accounts.remove(coder);
        }
        lifted
    }

    /// Places a hold on `coder`, or on every coder (`None`). Returns false when it was
    /// already in place.
    pub fn place(&mut self, coder: Option<&str>, hold: Hold) -> bool {
        match coder {
            None if self.all.is_some() => false,
            None => {
                self.all = Some(hold);
                true
            }
            Some(coder) => self.coders.insert(coder.to_owned(), hold).is_none(),
        }
    }

    /// Lifts the hold on `coder` and those on its models, or every hold (`None`). Returns
    /// whether there was any.
    pub fn lift(&mut self, coder: Option<&str>) -> bool {
        match coder {
            None => {
                let had = !self.is_empty();
                *self = Holds::default();
                had
            }
            Some(coder) => {
                let models = self.models.remove(coder).is_some();
                self.coders.remove(coder).is_some() || models
            }
        }
    }
}

/// A coder·model as people read it: `claude·opus`, or `claude·default` for the model its CLI
/// picks itself.
pub fn model_scope(coder: &str, model: &str) -> String {
    let model = if model.is_empty() { "default" } else { model };
    format!("{coder}·{model}")
}

/// The holds file as a running supervisor sees it: re-read when it changes.
#[derive(Debug)]
pub struct HoldWatch {
    home: PathBuf,
    stamp: Option<FileStamp>,
    holds: Holds,
}

impl HoldWatch {
    /// Starts watching the holds under `home`; an error names a holds file that cannot be
    /// read or parsed, which a supervisor must not take for "nothing is paused".
    pub fn new(home: &Path) -> std::io::Result<HoldWatch> {
        Ok(HoldWatch {
            home: home.to_path_buf(),
            stamp: file_stamp(&holds_path(home)),
            holds: Holds::read(home)?,
        })
    }

    /// Re-reads the file if it changed; returns whether the holds changed. A file that cannot
    /// be read or parsed (a hand edit gone wrong) changes nothing: the holds in force stay, and
    /// are not lifted by a broken file.
    pub fn poll(&mut self) -> bool {
        let stamp = file_stamp(&holds_path(&self.home));
        if stamp == self.stamp {
            return false;
        }
        self.stamp = stamp;
        let holds = match Holds::read(&self.home) {
            Ok(holds) => holds,
            Err(error) => {
                tracing::warn!(%error, "the pauses in force stay as they were");
                return false;
            }
        };
        let changed = holds != self.holds;
        self.holds = holds;
        changed
    }

    pub fn holds(&self) -> &Holds {
        &self.holds
    }
}

/// Puts `hold` under `name` in `held` unless one is there already; whether it did.
fn place_new(held: &mut BTreeMap<String, Hold>, name: &str, hold: Hold) -> bool {
    match held.entry(name.to_owned()) {
        std::collections::btree_map::Entry::Vacant(slot) => {
            slot.insert(hold);
            true
        }
        std::collections::btree_map::Entry::Occupied(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold() -> Hold {
        Hold { since: Timestamp::UNIX_EPOCH, by: "me".into(), reason: String::new(), cause: None }
    }

    #[test]
    fn a_hold_in_place_is_not_replaced() {
        let mut holds = Holds::default();
        let canary =
            Hold { cause: Some(PauseCause::Canary), reason: "failure rate".into(), ..hold() };
        assert!(holds.place_model("claude", "opus", canary));
        assert!(!holds.place_model("claude", "opus", hold()), "already in place");
        assert_eq!(holds.models["claude"]["opus"].cause, Some(PauseCause::Canary));
        assert!(holds.place_account("claude", "work", hold()));
        let again = Hold { reason: "second".into(), ..hold() };
        assert!(!holds.place_account("claude", "work", again));
        assert_eq!(holds.accounts["claude"]["work"].reason, "");
    }

    #[test]
    fn an_edit_keeps_other_edits_out_until_it_is_saved() {
        let home = tempfile::tempdir().unwrap();
        let mut edit = Holds::edit(home.path()).unwrap();
        let lock = lock_path(home.path());
        assert!(crate::fsutil::try_lock_exclusive(&lock).unwrap().is_none());
        edit.holds.place(None, hold());
        edit.save().unwrap();
        assert!(crate::fsutil::try_lock_exclusive(&lock).unwrap().is_some());
        assert!(Holds::read(home.path()).unwrap().all.is_some());
    }

    #[test]
    fn a_broken_holds_file_lifts_no_hold_a_watch_has() {
        let home = tempfile::tempdir().unwrap();
        let mut edit = Holds::edit(home.path()).unwrap();
        edit.holds.place(None, hold());
        edit.save().unwrap();
        let mut watch = HoldWatch::new(home.path()).unwrap();
        assert!(watch.holds().holds("claude"));
        std::fs::write(holds_path(home.path()), b"{ half an edit").unwrap();
        assert!(!watch.poll());
        assert!(watch.holds().holds("claude"), "the pause stays in force");
    }

    #[test]
    fn holds_round_trip_and_a_watch_sees_changes() {
        let home = tempfile::tempdir().unwrap();
        let mut watch = HoldWatch::new(home.path()).unwrap();
        assert!(!watch.holds().holds("claude"));
        let mut edit = Holds::edit(home.path()).unwrap();
        assert!(edit.holds.place(Some("claude"), hold()));
        assert!(!edit.holds.place(Some("claude"), hold()));
        edit.save().unwrap();
        assert!(watch.poll());
        assert!(watch.holds().holds("claude") && !watch.holds().holds("codex"));
        let mut edit = Holds::edit(home.path()).unwrap();
        let holds = &mut edit.holds;
        assert!(holds.place_account("codex", "work", hold()));
        assert!(!holds.place_account("codex", "work", hold()));
        assert!(holds.holds_account("codex", "work") && !holds.holds_account("codex", "home"));
        assert!(!holds.holds("codex"), "a held account leaves the coder's other accounts");
        assert!(holds.lift_account("codex", "work") && holds.accounts.is_empty());
        assert!(holds.place_model("codex", "o3", hold()));
        assert!(holds.holds_model("codex", "o3") && !holds.holds_model("codex", "o4"));
        assert!(!holds.holds("codex"), "a held model leaves the coder's other models");
        assert!(
            holds.lift(Some("codex")) && holds.models.is_empty(),
            "lifting a coder lifts its models"
        );
        assert!(holds.place(None, hold()));
        assert!(holds.holds("codex") && holds.holds_account("codex", "home"));
        assert!(holds.lift(None));
        edit.save().unwrap();
        assert!(!holds_path(home.path()).exists());
        assert!(watch.poll());
        assert!(watch.holds().is_empty());
    }
}
