//! The dispatcher's half of the supervisor: filling free slots with ready tasks. A claim
//! skips tasks this supervisor still runs, tasks of paused coders or held back for a retry,
//! tasks whose `touches` overlap a running task's (they wait: `crate::coord::touch_wait`),
//! and tasks another machine holds; the claim service (`crate::tracker::claims`) takes the
//! task, and in the same transaction the attempt is counted, this supervisor's lease put on
//! it and, for a task that lands, its worktree and branch planned.

use std::collections::HashMap;
use std::path::PathBuf;

use jiff::Timestamp;
use tokio::sync::mpsc;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::Event;
use super::REMOTE_RETRY;
use super::SharedPlaces;
use super::Stop;
use super::Supervisor;
use super::accounts;
use super::budget;
use super::lease::Identity;
use super::outcome::Outcome;
use super::resolve_here;
use super::runnable_here;
use super::runner::Signal;
use super::settling::Finished;
use crate::config::RuntimeConfig;
use crate::land::worktree;
use crate::model::FleetFields;
use crate::model::Issue;
use crate::op::IssuePatch;
use crate::store::ReadyFilter;
use crate::store::Store;
use crate::store::StoreError;
use crate::time::Clock;
use crate::tracker::claims as claim;

/// The remote of remote claims failed: claiming waits [`REMOTE_RETRY`] before trying again.
struct RemoteDown;

/// Why the claim transaction of [`Supervisor::claim_next`] failed.
struct ClaimFailure {
    task: Option<String>,
    error: String,
    /// The claims remote failed (or could not be set up), not the store.
    remote: bool,
    /// The store file is damaged: no claim succeeds until a person repairs it.
    damaged: bool,
}

impl ClaimFailure {
    /// A failure of the store (reading or claiming `task`).
    fn of_store(task: Option<String>, error: &StoreError) -> ClaimFailure {
        ClaimFailure { task, error: error.to_string(), remote: false, damaged: error.is_damage() }
    }
}

/// The ready task `accept` takes that the supervisor runs next: of the most urgent priority
/// among them, the oldest (first in, first out: `bd ready` lists the newest first, which would
/// let old tasks starve behind a stream of new ones). The ready order groups tasks by priority,
/// so the scan stops at the first task of a less urgent one.
fn next_in_line(
    reader: &crate::store::Reader,
    me: &Identity,
    now: Timestamp,
    accept: &dyn Fn(&Issue) -> bool,
) -> Result<Option<String>, StoreError> {
    let band = std::cell::Cell::new(None::<u8>);
    let oldest = std::cell::RefCell::new(None::<(Timestamp, String)>);
    let look = |issue: &Issue| {
        if !accept(issue) {
            return false;
        }
        match band.get() {
            // A less urgent task: the band is over (taking it ends the scan).
            Some(top) if issue.priority > top => return true,
            Some(_) => {}
            None => band.set(Some(issue.priority)),
        }
        let mut oldest = oldest.borrow_mut();
        if oldest.as_ref().is_none_or(|(at, id)| (issue.created_at, &issue.id) < (*at, id)) {
            *oldest = Some((issue.created_at, issue.id.clone()));
        }
        false
    };
    reader.first_claimable_where(&me.name, &ReadyFilter::default(), now, &look)?;
    Ok(oldest.into_inner().map(|(_, id)| id))
}

/// Claims the ready task `accept` takes that runs next ([`next_in_line`]) through the claim
/// service (confirmed on the remote first in remote claim mode), counting the attempt and
/// putting `me`'s lease on it in the claim's transaction. A read comes first so an idle queue
/// costs no write.
fn claim_with_lease(
    store: &Store,
    me: &Identity,
    (choice, places): (&Choice, &SharedPlaces),
    now: Timestamp,
    accept: &dyn Fn(&Issue) -> bool,
) -> Result<Option<Claimed>, ClaimFailure> {
    let filter = ReadyFilter::default();
    let claims = claim::Claims::of(store).map_err(|e| ClaimFailure {
        task: None,
        error: e.to_string(),
        remote: true,
        damaged: false,
    })?;
    // Tasks another machine holds (remote claim mode) are not candidates.
    let elsewhere = claims.held_elsewhere();
    let free = |issue: &Issue| accept(issue) && !elsewhere.contains(&issue.id);
    let look = store
        .read()
        .and_then(|reader| next_in_line(&reader, me, now, &free))
        .map_err(|error| ClaimFailure::of_store(None, &error))?;
    let Some(candidate) = look else { return Ok(None) };
    let (landing, no_worktree) = match plan_landing(store, &candidate, choice, places) {
        Ok(landing) => (landing, None),
        Err(reason) => (None, Some(reason)),
    };
    let chosen = |issue: &Issue| issue.id == candidate && accept(issue);
    let lease = |issue: &Issue, now: Timestamp| {
        let mut fleet = leased_fields(issue, me, choice, now);
        if fleet.land.is_none() && issue.id == candidate {
            fleet.land.clone_from(&landing);
        }
        Some(IssuePatch { fleet: Some(fleet), ..IssuePatch::default() })
    };
    let claimed =
        claims.claim_next(&me.name, Clock::System, &filter, &chosen, &lease).map_err(|error| {
            match &error {
                claim::ClaimError::Store(store) => ClaimFailure::of_store(Some(candidate), store),
                _ => ClaimFailure {
                    task: Some(candidate),
                    error: error.to_string(),
                    remote: error.remote_failed(),
                    damaged: false,
                },
            }
        })?;
    Ok(claimed.map(|issue| Claimed { issue, no_worktree, budget: budget::Cap::default() }))
}

/// The tasks running now (anywhere) that declare `touches`: what a task with overlapping
/// ones waits for. A failed read counts as none running (the claim's own read reports it).
fn running_with_touches(store: &Store) -> Vec<Issue> {
    let filter = crate::store::ListFilter {
        statuses: vec![crate::model::Status::InProgress],
        ..crate::store::ListFilter::default()
    };
    match store.read().and_then(|reader| reader.list(&filter)) {
        Ok((in_progress, _)) => in_progress
            .into_iter()
            .map(|summary| summary.issue)
            .filter(|issue| !issue.fleet.touches.is_empty() && crate::coord::is_running(issue))
            .collect(),
        Err(error) => {
            tracing::warn!(%error, "reading the running tasks' touches failed");
            Vec::new()
        }
    }
}

/// A task just claimed, and how its attempt ends when it cannot have the worktree its
/// isolation asks for (uncharged, before any agent starts).
pub(super) struct Claimed {
    pub(super) issue: Issue,
    pub(super) no_worktree: Option<Outcome>,
    /// What the attempt may spend (`[budget]`).
    pub(super) budget: budget::Cap,
}

/// The worktree a task about to start its first attempt gets (`crate::land::worktree::plan`):
/// `None` when it has one already or works in its directory itself; the attempt's outcome
/// when it must have one and cannot — [`Supervisor::start`] then ends the attempt uncharged
/// with it, and the agent never works in the shared checkout instead.
fn plan_landing(
    store: &Store,
    id: &str,
    choice: &Choice,
    places: &SharedPlaces,
) -> Result<Option<crate::model::Landing>, Outcome> {
    let refused = |detail: String| Outcome::NoWorktree { detail };
    let issue = store
        .read()
        .and_then(|reader| reader.issue(id))
        .map_err(|e| refused(format!("reading {id} to plan its worktree failed: {e}")))?
        .ok_or_else(|| refused(format!("{id} is gone")))?;
    if issue.fleet.land.is_some() {
        return Ok(None);
    }
    let cwd = resolve_here(places, &issue).map_err(|e| refused(e.to_string()))?;
    let cwd = if cwd.as_os_str().is_empty() { choice.home.clone() } else { cwd };
    let isolation = worktree::isolation_of(&issue, choice.config.isolation());
    let target = &choice.config.merge.target;
    worktree::plan(&choice.home, id, &cwd, isolation, target).map_err(|error| {
        tracing::warn!(%error, task = %id, "planning the task's worktree failed");
        super::launch::worktree_failed(&error)
    })
}

/// What a claim needs to lease a task: the config, the coders, and the account each coder with
/// accounts would run its next attempt on.
struct Choice {
    /// `$FLEET_HOME` (where worktrees go).
    home: PathBuf,
    config: RuntimeConfig,
    registry: crate::coders::Registry,
    /// Coder → account, for the coders with accounts that can start an agent.
    accounts: HashMap<String, String>,
    /// The holds in force (a held coder·model is skipped).
    holds: super::hold::Holds,
}

impl Choice {
    /// Whether `issue`'s next attempt would run a coder·model that is held (`fleet pause
    /// --model`, or the quality canary).
    fn model_held(&self, issue: &Issue) -> bool {
        if self.holds.models.is_empty() {
            return false;
        }
        let coder = coder_of(issue, &self.config.coder);
        self.holds.holds_model(&coder, &model_of(issue, &coder, &self.config, &self.registry))
    }
}

/// The coder a task runs with: its own, else the configured default.
pub(super) fn coder_of(issue: &Issue, default_coder: &str) -> String {
    if issue.fleet.coder.is_empty() { default_coder.to_string() } else { issue.fleet.coder.clone() }
}

/// The model the next attempt of `issue` with `coder` runs: the task's own, else before its
/// first attempt that ran the configured one.
pub(super) fn model_of(
    issue: &Issue,
    coder: &str,
    config: &RuntimeConfig,
    registry: &crate::coders::Registry,
) -> String {
    // The model is resolved only before the first attempt that ran: an empty one ("let the
    // CLI choose", the default of several coders) stays empty rather than picking up a
    // `model` set in runtime.toml later.
    if !issue.fleet.model.is_empty() {
        issue.fleet.model.clone()
    } else if issue.fleet.attempts == 0 {
        registry.get(coder).map(|c| config.effective_model(c.as_ref(), None)).unwrap_or_default()
    } else {
        String::new()
    }
}

/// Whether `[budget]` lets the next attempt of `issue` start: its [`budget::Cap`], or why not.
fn budget_of(
    issue: &Issue,
    spending: &budget::Spending,
    choice: &Choice,
) -> Result<budget::Cap, budget::Refusal> {
    let coder = coder_of(issue, &choice.config.coder);
    let account = choice.accounts.get(&coder).map_or("", String::as_str);
    let model = model_of(issue, &coder, &choice.config, &choice.registry);
    let ledger = super::taskdir::TaskDir::new(&choice.home, &issue.id)
        .map(|dir| super::ledger::Ledger::load(&dir.root))
        .unwrap_or_default();
    budget::admit(&choice.config.budget, spending, &ledger, (&coder, account, &model))
}

/// The `[budget]` check of one claim: what was spent (read once), the cap of each task
/// admitted, and the first refusal.
struct Gate {
    /// `None`: no cap is set, everything is admitted.
    spending: Option<budget::Spending>,
    caps: std::cell::RefCell<HashMap<String, budget::Cap>>,
    refused: std::cell::RefCell<Option<budget::Refusal>>,
}

impl Gate {
    fn new(choice: &Choice, now: Timestamp) -> Gate {
        let set = choice.config.budget.is_set();
        Gate {
            spending: set.then(|| budget::Spending::scan(&choice.home, now)),
            caps: std::cell::RefCell::default(),
            refused: std::cell::RefCell::default(),
        }
    }

    /// Whether the budget lets `issue`'s next attempt start (its cap kept for
    /// [`Gate::with_cap`]).
    fn admits(&self, issue: &Issue, choice: &Choice) -> bool {
        let Some(spending) = &self.spending else { return true };
        match budget_of(issue, spending, choice) {
            Ok(cap) => {
                self.caps.borrow_mut().insert(issue.id.clone(), cap);
                true
            }
            Err(refusal) => {
                self.refused.borrow_mut().get_or_insert(refusal);
                false
            }
        }
    }

    /// `claimed` with the cap it was admitted with.
    fn with_cap(&self, mut claimed: Claimed) -> Claimed {
        if let Some(cap) = self.caps.borrow().get(&claimed.issue.id) {
            claimed.budget = *cap;
        }
        claimed
    }
}

/// The fleet fields of a task just claimed: one more attempt, and this supervisor's lease
/// naming the coder and model the attempt runs with. The coder and model are not frozen on the
/// task here: that happens when the attempt ran (see [`freeze_coder`]), so a task whose spawn
/// failed picks up a corrected config.
fn leased_fields(issue: &Issue, me: &Identity, choice: &Choice, now: Timestamp) -> FleetFields {
    let mut fleet = issue.fleet.clone();
    let coder = coder_of(issue, &choice.config.coder);
    let model = model_of(issue, &coder, &choice.config, &choice.registry);
    fleet.attempts += 1;
    fleet.retry_after = None;
    let attempt = ulid::Ulid::generate().to_string();
    let mut lease = me.lease(&attempt, &coder, &model, now);
    lease.account = choice.accounts.get(&coder).cloned().unwrap_or_default();
    fleet.lease = Some(lease);
    fleet
}

impl Supervisor {
    /// Claims and starts tasks while slots are free. Returns how many were started.
    pub(super) async fn fill_slots(
        &mut self,
        runners: &mut JoinSet<Finished>,
        stop: &watch::Receiver<Stop>,
        signals: &mpsc::UnboundedSender<Signal>,
    ) -> usize {
        let mut started = 0;
        if self.remote_retry_at.is_some_and(|at| tokio::time::Instant::now() < at) {
            return 0;
        }
        while self.running.len() < self.slots() {
            let claimed = match self.claim_next().await {
                Ok(Some(claimed)) => claimed,
                Ok(None) => break,
                Err(RemoteDown) => {
                    self.remote_retry_at = Some(tokio::time::Instant::now() + REMOTE_RETRY);
                    break;
                }
            };
            started += 1;
            self.start(claimed, runners, stop, signals);
        }
        started
    }

    /// Claims the next ready task that this supervisor does not already run and whose coder
    /// is not paused; the same transaction counts the attempt and puts the lease on it. A read
    /// comes first so an idle queue costs no write. In remote claim mode the remote confirms
    /// the claim before it is made (`crate::tracker::claims`): a task another machine holds is skipped,
    /// charged nothing; a remote that fails is [`RemoteDown`].
    async fn claim_next(&mut self) -> Result<Option<Claimed>, RemoteDown> {
        let me = self.me.clone();
        let now = Timestamp::now();
        if self.holds.holds().all.is_some() {
            return Ok(None);
        }
        let (paused, choice) = self.choose_accounts(now);
        let running: Vec<String> = self.running.keys().cloned().collect();
        let places = self.places();
        let (result, refusal) = self
            .blocking(move |store| {
                let gate = Gate::new(&choice, now);
                let busy = std::cell::OnceCell::new();
                let overlaps = |issue: &Issue| {
                    if issue.fleet.touches.is_empty() {
                        return false;
                    }
                    let busy = busy.get_or_init(|| running_with_touches(store));
                    crate::coord::touch_wait(issue, busy).is_some()
                };
                let accept = |issue: &Issue| {
                    !running.contains(&issue.id)
                        && issue.fleet.retry_after.is_none_or(|at| at <= now)
                        && !paused.contains(&coder_of(issue, &choice.config.coder))
                        && !choice.model_held(issue)
                        && runnable_here(&places, issue)
                        && !overlaps(issue)
                        && gate.admits(issue, &choice)
                };
                let claimed = claim_with_lease(store, &me, (&choice, &places), now, &accept)
                    .map(|claimed| claimed.map(|c| gate.with_cap(c)));
                (claimed, gate.refused.into_inner())
            })
            .await;
        self.note_budget(matches!(result, Ok(Some(_))), refusal);
        match result {
            Ok(issue) => {
                self.damaged = None;
                Ok(issue)
            }
            Err(ClaimFailure { task, error, remote, damaged }) => {
                match &task {
                    Some(task) => tracing::error!(%error, %task, "claiming the task failed"),
                    None => tracing::error!(%error, "looking for a ready task to claim failed"),
                }
                if damaged {
                    self.damaged = Some(error);
                } else {
                    self.damaged = None;
                }
                if remote { Err(RemoteDown) } else { Ok(None) }
            }
        }
    }

    /// Remembers what `[budget]` refused in a claim pass that started nothing (`claimed`
    /// false), and tells when a day cap starts or stops holding new attempts back (an event,
    /// a notice, `state/budget-held.json` for `fleet tasks`).
    fn note_budget(&mut self, claimed: bool, refusal: Option<budget::Refusal>) {
        let refusal = refusal.filter(|_| !claimed);
        let held = refusal.as_ref().filter(|r| r.daily).map(|r| budget::Held {
            scope: r.scope.clone(),
            detail: r.detail.clone(),
            until: budget::day_of(Timestamp::now()).1,
        });
        self.budget_refused = refusal;
        let before = self.budget_held.as_ref().map(|h| h.scope.clone());
        if before == held.as_ref().map(|h| h.scope.clone()) {
            return;
        }
        if let Err(error) = budget::Held::save(&self.options.home, held.as_ref()) {
            tracing::warn!(%error, "cannot record the budget's hold in state/budget-held.json");
        }
        let event = match &held {
            Some(h) => Event::Budget {
                scope: h.scope.clone(),
                detail: h.detail.clone(),
                until: Some(h.until),
            },
            None => Event::Budget {
                scope: before.unwrap_or_default(),
                detail: String::new(),
                until: None,
            },
        };
        self.budget_held = held;
        self.emit(event);
    }

    /// Where `issue` runs on this machine (`crate::place`), if it can.
    pub(super) fn place_of(&self, issue: &Issue) -> Option<PathBuf> {
        resolve_here(&self.places(), issue).ok()
    }

    /// The coders that cannot start an agent now (paused, held, or every account unusable),
    /// and for the others with accounts, the account their next attempt would run on.
    fn choose_accounts(&self, now: Timestamp) -> (Vec<String>, Choice) {
        let config = self.cfg().clone();
        let registry = self.config.registry().clone();
        let holds = self.holds.holds();
        let mut paused = Vec::new();
        let mut chosen = HashMap::new();
        for coder in registry.names() {
            let Ok(usable) = accounts::availability(&config, coder, &self.pauses, holds, now)
            else {
                paused.push(coder.to_owned());
                continue;
            };
            let running_on = |name: &str| {
                self.running.values().filter(|r| r.coder == coder && r.account == name).count()
            };
            let next_reset = |name: &str| self.windows.next_reset(coder, name, now);
            if let Some(account) = self.rotation.pick(coder, &usable, running_on, next_reset) {
                chosen.insert(coder.to_owned(), account.name.clone());
            }
        }
        let home = self.options.home.clone();
        let holds = holds.clone();
        (paused, Choice { home, config, registry, accounts: chosen, holds })
    }
}
