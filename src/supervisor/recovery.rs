//! Taking back tasks whose supervisor is gone.
//!
//! A task in progress under a lease whose owner is provably gone ([`lease::owner_state`]) is
//! released with a comment saying why — but only after whatever its agent left on this machine
//! has been killed, so the task can never run twice at once. Tasks in progress under this
//! supervisor's name with no lease at all (written by an older fleet) count as abandoned when
//! no live supervisor of that name is registered.
//!
//! Processes are taken back too: every process on this machine tagged with an instance of
//! this workspace (`FLEET_INSTANCE`, `BEADS_DIR`) whose supervisor is gone is killed, with its
//! descendants — also those of attempts whose tasks were closed meanwhile, which no lease
//! names any more ([`kill_strays_of_gone_instances`]).

use std::path::Path;

use jiff::Timestamp;

use super::lease::{self, AttemptRecord, Identity, OwnerState, Registration};
use super::taskdir::TaskDir;
use crate::model::{Issue, Status};
use crate::store::{Store, StoreError};
use crate::time::Clock;
use crate::tracker::{self, Abandoned, ReclaimRequest, Request};

/// When to look at every task for abandoned leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    Always,
    IfSomeoneDied,
}

/// A task taken back from a gone supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reclaimed {
    pub id: String,
    /// Why its owner counts as gone.
    pub why: String,
    /// Processes of its last attempt that were still alive and were killed.
    pub survivors_killed: usize,
    /// The lease that was judged abandoned (`None`: a task held by name, without a lease).
    pub lease: Option<crate::model::Lease>,
}

/// What [`reclaim_abandoned`] took back.
#[derive(Debug, Default)]
pub struct Reclaim {
    /// The tasks released.
    pub tasks: Vec<Reclaimed>,
    /// Processes of gone supervisors killed beyond those of the released tasks' attempts.
    pub strays_killed: usize,
}

/// Finds every task whose owner is gone, kills its survivors, and releases it; kills the
/// other processes gone supervisors of this workspace left. Removes the registrations of gone
/// supervisors. Returns what was taken back.
///
/// Looking at every task costs a scan of the queue, so a running supervisor asks with
/// `Scan::IfSomeoneDied`: the queue is scanned only when a registered supervisor is gone. At
/// start (`Scan::Always`) it is scanned whatever the registry says.
pub fn reclaim_abandoned(
    store: &Store,
    me: &Identity,
    home: &Path,
    scan: Scan,
) -> Result<Reclaim, StoreError> {
    let now = Timestamp::now();
    let registry = lease::registry(store)?;
    let gone: Vec<&Registration> = registry
        .iter()
        .filter(|r| r.identity.instance != me.instance && !lease::registration_alive(r, me, now))
        .collect();
    if scan == Scan::IfSomeoneDied && gone.is_empty() {
        return Ok(Reclaim::default());
    }
    let abandoned = abandoned_tasks(store, me, &registry, now)?;
    let strays_killed = |reclaimed| {
        let strays = kill_strays_of_gone_instances(store, me)?;
        Ok(Reclaim { tasks: reclaimed, strays_killed: strays })
    };
    if abandoned.is_empty() && gone.is_empty() {
        return strays_killed(Vec::new());
    }
    let reclaimed: Vec<Reclaimed> = abandoned
        .into_iter()
        .map(|(issue, why)| {
            let survivors_killed = kill_survivors_of(&issue, me, home);
            Reclaimed { id: issue.id, why, survivors_killed, lease: issue.fleet.lease }
        })
        .collect();
    let tasks = reclaimed
        .iter()
        .map(|task| Abandoned {
            id: task.id.clone(),
            lease: task.lease.clone(),
            author: me.name.clone(),
            comment: format!("[fleet] released: {}", task.why),
        })
        .collect();
    let gone = gone.iter().map(|registration| registration.identity.instance.clone()).collect();
    let request = Request::Reclaim(Box::new(ReclaimRequest { tasks, gone }));
    tracker::execute_in(store, &me.name, Clock::System, &request)?;
    strays_killed(reclaimed)
}

/// Kills every process on this machine that a supervisor of the workspace at `store_dir`
/// started (its `BEADS_DIR` and `FLEET_INSTANCE` say so) when that supervisor is neither `me`
/// nor a live registered one, with its descendants. Returns how many were killed.
///
/// The processes are looked at before the registry is read: every supervisor registers before
/// it starts an agent, so an instance seen running an agent is in the registry read after,
/// unless it stopped meanwhile (and then what it left is fair game).
pub fn kill_strays_of_gone_instances(store: &Store, me: &Identity) -> Result<usize, StoreError> {
    let dir = store.dir().display().to_string();
    let me_pid = std::process::id() as i32;
    let mut instances = std::collections::BTreeSet::new();
    for process in crate::process::processes() {
        if process.zombie || process.pid == me_pid {
            continue;
        }
        let [instance, beads] =
            crate::process::env_values(process.pid, [lease::INSTANCE_VAR, "BEADS_DIR"]);
        if let (Some(instance), Some(beads)) = (instance, beads)
            && beads == dir
            && instance != me.instance
        {
            instances.insert(instance);
        }
    }
    if instances.is_empty() {
        return Ok(0);
    }
    let now = Timestamp::now();
    let registry = lease::registry(store)?;
    let live = |instance: &String| {
        registry
            .iter()
            .any(|r| &r.identity.instance == instance && lease::registration_alive(r, me, now))
    };
    Ok(instances
        .iter()
        .filter(|instance| !live(instance))
        .map(|instance| crate::process::kill_tagged(&format!("{}={instance}", lease::INSTANCE_VAR)))
        .sum())
}

/// In-progress tasks whose owner is gone, with the reason.
fn abandoned_tasks(
    store: &Store,
    me: &Identity,
    registry: &[Registration],
    now: Timestamp,
) -> Result<Vec<(Issue, String)>, StoreError> {
    let name_is_live = registry.iter().any(|r| {
        r.identity.name == me.name
            && r.identity.instance != me.instance
            && lease::registration_alive(r, me, now)
    });
    let mut found = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        // A task whose work waits in the merge queue belongs to the queue, not to a supervisor.
        if issue.status != Status::InProgress || super::outcome::queued(&issue) {
            return Ok(true);
        }
        let why = match &issue.fleet.lease {
            Some(_) if let Some(lease) = issue.live_lease() => {
                match lease::owner_state(lease, me, registry, now) {
                    OwnerState::Alive => None,
                    OwnerState::Gone(why) => Some(why),
                }
            }
            // A task handed to someone else by hand keeps its stale lease record; not ours.
            Some(_) => None,
            None if issue.assignee == me.name && !name_is_live => Some(format!(
                "it was held by {} from a run that stopped without releasing it",
                me.name
            )),
            None => None,
        };
        if let Some(why) = why {
            found.push((issue, why));
        }
        Ok(true)
    })?;
    Ok(found)
}

/// Kills what is left on this machine of the task's last attempt. Leases from other hosts
/// cannot be acted on here (their processes are there, and die with their supervisor).
fn kill_survivors_of(issue: &Issue, me: &Identity, home: &Path) -> usize {
    let Some(lease) = &issue.fleet.lease else { return 0 };
    if lease.host != me.host {
        return 0;
    }
    let record = TaskDir::new(home, &issue.id).ok().and_then(|dir| AttemptRecord::load(&dir.root));
    lease::kill_survivors(&lease.attempt, record.as_ref())
}
