//! Pausing coders and accounts while the supervisor runs: rate limits, faults of the fleet,
//! holds a person set, and how each is announced (an event with the fix a person can make).

use jiff::SignedDuration;
use jiff::Timestamp;

use super::Event;
use super::Supervisor;
use super::accounts;
use super::canary;
use super::hold;
use super::pause;
use super::pause::PauseCause;
use super::pause::Scope;

pub(super) fn rate_limit_detail(window: Option<&str>, near: Option<f64>) -> String {
    let window = window.map(|w| format!(" ({w} window)")).unwrap_or_default();
    match near {
        Some(pct) => format!("a rate-limit window{window} is {pct:.0}% used"),
        None => format!("rate limited{window}"),
    }
}

impl Supervisor {
    pub(super) fn emit_holds(&self) {
        let holds = self.holds.holds();
        self.emit(Event::Held {
            all: holds.all.is_some(),
            coders: holds.coders.keys().cloned().collect(),
            accounts: holds.held_accounts().map(|(account, _)| account).collect(),
            models: holds.held_models().map(|(model, _)| model).collect(),
        });
    }

    /// Feeds a settled attempt to the quality canary; when its coder·model or account trips,
    /// holds it (`state/holds.json`, cause canary) and tells: an event, a notice, the log.
    pub(super) fn watch_quality(&mut self, settled: &canary::Settled) {
        let config = self.cfg().canary.clone();
        let Some((subject, trip)) = self.canaries.observe(settled, &config) else { return };
        let now = Timestamp::now();
        // Under the holds' edit lock, as `fleet pause` writes them (its wait is bounded).
        let placed = hold::Holds::edit(&self.options.home).and_then(|mut edit| {
            subject.place(&mut edit.holds, canary::Canaries::hold(&trip, now));
            edit.save()
        });
        if let Err(error) = placed {
            // Not recorded as tripped: the next settled attempt tries again.
            tracing::error!(%error, %subject, %trip, "the canary tripped but cannot hold it");
            return;
        }
        self.canaries.trip(&subject, now, config.window);
        if self.holds.poll() {
            self.holds_changed();
        }
        let (model, account) = match &subject {
            canary::Subject::Model { model, .. } => (Some(model.clone()), None),
            canary::Subject::Account { account, .. } => (None, Some(account.clone())),
        };
        self.emit(Event::Canary {
            subject: subject.to_string(),
            coder: subject.coder().to_owned(),
            model,
            account,
            metric: trip.metric,
            detail: trip.to_string(),
            fix: canary::fix(&subject.resume_command()),
        });
    }

    /// The holds file changed: tells the holds now in force, and restarts the canary's
    /// windows of the subjects a person resumed.
    pub(super) fn holds_changed(&mut self) {
        self.emit_holds();
        self.restart_resumed_canaries();
    }

    /// Subjects the canary held that a person resumed start a fresh window.
    fn restart_resumed_canaries(&mut self) {
        for subject in self.canaries.resumed(self.holds.holds(), Timestamp::now()) {
            tracing::info!(%subject, "resumed: the canary judges its attempts afresh");
        }
    }

    pub(super) fn pause_for_rate_limit(
        &mut self,
        scope: &Scope,
        resets_at: Option<Timestamp>,
        detail: &str,
    ) {
        let now = Timestamp::now();
        let default = self.cfg().rate_limit_default_pause();
        let until = resets_at.filter(|t| *t > now).unwrap_or_else(|| {
            // The default pause comes from runtime.toml: saturate rather than overflow.
            let pause = SignedDuration::try_from(default).unwrap_or(SignedDuration::MAX);
            now.checked_add(pause).unwrap_or(Timestamp::MAX)
        });
        if let Some(paused) = self.pauses.rate_limit(scope, until, detail, now) {
            self.report_pause(paused);
        }
    }

    /// Pauses saved by an earlier run that are still in force.
    pub(super) fn announce_carried_over_pauses(&self) {
        let now = Timestamp::now();
        let carried: Vec<pause::Paused> = self
            .pauses
            .all_active(now)
            .map(|(scope, pause)| pause::Paused {
                scope: scope.clone(),
                pause: pause.clone(),
                news: true,
            })
            .collect();
        let mut coders: Vec<String> = carried.iter().map(|p| p.scope.coder.clone()).collect();
        coders.dedup();
        for paused in carried {
            self.emit_pause(paused);
        }
        for coder in coders {
            self.emit_coder_paused_by_accounts(&coder);
        }
    }

    /// Reports a new pause; when it took the last usable account of its coder, also that the
    /// coder as a whole is paused now.
    pub(super) fn report_pause(&self, paused: pause::Paused) {
        let account_news = paused.news && paused.scope.account.is_some();
        let coder = paused.scope.coder.clone();
        self.emit_pause(paused);
        if account_news {
            self.emit_coder_paused_by_accounts(&coder);
        }
    }

    fn emit_pause(&self, paused: pause::Paused) {
        let scope = paused.scope;
        self.emit(Event::Paused {
            coder: scope.coder.clone(),
            account: scope.account.clone(),
            until: paused.pause.until,
            cause: paused.pause.cause,
            fix: Self::fix_for(&scope, paused.pause.cause),
            detail: paused.pause.detail,
            news: paused.news,
        });
    }

    /// Reports `coder` paused as a whole when every one of its accounts is paused.
    fn emit_coder_paused_by_accounts(&self, coder: &str) {
        let now = Timestamp::now();
        let holds = self.holds.holds();
        let Some(pause) =
            accounts::coder_paused_by_accounts(self.cfg(), coder, &self.pauses, holds, now)
        else {
            return;
        };
        self.emit(Event::Paused {
            coder: coder.to_owned(),
            account: None,
            until: pause.until,
            cause: pause.cause,
            detail: pause.detail,
            fix: format!(
                "nothing to do if a window resets by itself; add accounts to [coders.{coder}] in runtime.toml for more room"
            ),
            news: true,
        });
    }

    /// What a person can do about a paused coder or account.
    fn fix_for(scope: &Scope, cause: PauseCause) -> String {
        let coder = scope.coder.as_str();
        if let Some(account) = &scope.account {
            return match cause {
                PauseCause::RateLimit => format!(
                    "nothing to do: {coder}'s other accounts go on; {scope} resumes when its window resets"
                ),
                _ => format!(
                    "log in to the account (or fix its key) that [[coders.{coder}.accounts]] name = {account:?} selects in runtime.toml; {coder}'s other accounts go on"
                ),
            };
        }
        match cause {
            PauseCause::RateLimit => {
                "nothing to do: spawning resumes when the window resets".into()
            }
            PauseCause::Spawn => format!(
                "install the {coder} CLI where fleet run finds it (its PATH), or name the program in runtime.toml: [coders.{coder}] program = \"/path/to/cli\""
            ),
            PauseCause::Auth => format!(
                "log in to the {coder} CLI as the user fleet runs as, or give it an API key (in fleet's environment, or [coders.{coder}] env in runtime.toml)"
            ),
            PauseCause::Outage => {
                "nothing to do: the provider is failing; fleet retries the coder with a backoff"
                    .into()
            }
            PauseCause::Canary => canary::fix(&format!("fleet resume --coder {coder}")),
        }
    }
}
