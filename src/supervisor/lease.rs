//! Ownership of running work: who a supervisor is, the lease it puts on every task it runs,
//! the registry of supervisors with their heartbeats, and the rule by which anyone else may
//! decide that an owner is gone.
//!
//! Every `fleet run` is a new [`Identity`]: its name (the tasks' assignee, `fleet@host` by
//! default, so two runs may share it), a fresh instance id, and the host, boot, pid and start
//! time of its process. The claim transaction stores a [`Lease`] naming that identity on the
//! task. A lease is released by someone else only when its owner is provably gone
//! ([`owner_state`]):
//!
//! - same host and boot: the owner's pid is dead, or is now another process (its start time
//!   differs);
//! - same host, another boot: gone (the machine restarted);
//! - another host: its registration's heartbeat is older than [`LEASE_TTL`] (or it has none).
//!
//! The registry lives in the store's meta table (`supervisor/<instance>`), refreshed every
//! [`HEARTBEAT`]; it is runtime state, not ops, so heartbeats never wake other supervisors.

use std::path::Path;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::model::{Issue, Lease, Status};
use crate::process;
use crate::store::{Store, StoreError};
use crate::tracker::Request;

/// How often a running supervisor refreshes its registration.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// How old another host's heartbeat may be before its leases count as abandoned.
pub const LEASE_TTL: Duration = Duration::from_secs(60);

/// The environment variable that tags every process a supervisor starts (and everything those
/// start) with its instance, so survivors can be found after the supervisor died.
pub const INSTANCE_VAR: &str = "FLEET_INSTANCE";
/// The variable that tags an attempt's processes with the attempt id.
pub const ATTEMPT_VAR: &str = "FLEET_ATTEMPT";

/// One running supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The name tasks are assigned to.
    pub name: String,
    /// New for every run (a ULID).
    pub instance: String,
    pub host: String,
    pub boot_id: String,
    pub pid: u32,
    pub start_ticks: u64,
}

/// A supervisor's entry in the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    #[serde(flatten)]
    pub identity: Identity,
    pub started_at: Timestamp,
    pub heartbeat: Timestamp,
    pub max_concurrent: usize,
}

/// Whether a lease's owner still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerState {
    Alive,
    /// Provably gone, and why (for the comment on the released task).
    Gone(String),
}

impl Identity {
    /// The identity of this process, running as `name`.
    pub fn current(name: &str) -> Identity {
        Identity {
            name: name.to_string(),
            instance: ulid::Ulid::generate().to_string(),
            host: process::hostname(),
            boot_id: process::boot_id(),
            pid: std::process::id(),
            start_ticks: process::own_start_ticks(),
        }
    }

    /// The lease this supervisor puts on a task for one attempt (on no account: the caller
    /// names the account, when the coder has some).
    pub fn lease(&self, attempt: &str, coder: &str, model: &str, now: Timestamp) -> Lease {
        Lease {
            owner: self.name.clone(),
            instance: self.instance.clone(),
            host: self.host.clone(),
            boot_id: self.boot_id.clone(),
            pid: self.pid,
            start_ticks: self.start_ticks,
            attempt: attempt.to_string(),
            coder: coder.to_string(),
            model: model.to_string(),
            account: String::new(),
            since: now,
        }
    }

    /// Whether `issue` is in progress under this very instance (not just this name).
    pub fn holds(&self, issue: &Issue) -> bool {
        issue.status == Status::InProgress
            && issue.assignee == self.name
            && issue.fleet.lease.as_ref().is_some_and(|l| l.instance == self.instance)
    }

    /// `FLEET_INSTANCE=<instance>`: the tag of this supervisor's processes.
    pub fn tag(&self) -> String {
        format!("{INSTANCE_VAR}={}", self.instance)
    }

    fn same_machine(&self, host: &str, boot_id: &str) -> Option<bool> {
        if host != self.host {
            return None;
        }
        Some(boot_id.is_empty() || self.boot_id.is_empty() || boot_id == self.boot_id)
    }
}

/// Judges whether the owner of `lease` is still running, as seen by `me`.
pub fn owner_state(
    lease: &Lease,
    me: &Identity,
    registry: &[Registration],
    now: Timestamp,
) -> OwnerState {
    if lease.instance == me.instance {
        return OwnerState::Alive;
    }
    match me.same_machine(&lease.host, &lease.boot_id) {
        Some(true) if process::is_alive(lease.pid, lease.start_ticks) => OwnerState::Alive,
        Some(true) => OwnerState::Gone(format!(
            "its supervisor {} (pid {} on {}) is no longer running",
            lease.owner, lease.pid, lease.host
        )),
        Some(false) => OwnerState::Gone(format!(
            "its supervisor {} ran on {} before the machine restarted",
            lease.owner, lease.host
        )),
        None => remote_owner_state(lease, registry, now),
    }
}

/// Another host's supervisor: alive while its heartbeat is fresh.
fn remote_owner_state(lease: &Lease, registry: &[Registration], now: Timestamp) -> OwnerState {
    let ttl = SignedDuration::try_from(LEASE_TTL).unwrap_or(SignedDuration::MAX);
    let heartbeat =
        registry.iter().find(|r| r.identity.instance == lease.instance).map(|r| r.heartbeat);
    match heartbeat {
        Some(beat) if now.duration_since(beat) <= ttl => OwnerState::Alive,
        Some(beat) => OwnerState::Gone(format!(
            "its supervisor {} on {} last signalled at {beat}, over {}s ago",
            lease.owner,
            lease.host,
            LEASE_TTL.as_secs()
        )),
        None => OwnerState::Gone(format!(
            "its supervisor {} on {} is not registered as running",
            lease.owner, lease.host
        )),
    }
}

/// Whether the registration of a supervisor is that of a live one, by the same rules.
pub fn registration_alive(reg: &Registration, me: &Identity, now: Timestamp) -> bool {
    let id = &reg.identity;
    let probe = me.lease("", "", "", now);
    let lease = Lease {
        owner: id.name.clone(),
        instance: id.instance.clone(),
        host: id.host.clone(),
        boot_id: id.boot_id.clone(),
        pid: id.pid,
        start_ticks: id.start_ticks,
        ..probe
    };
    owner_state(&lease, me, std::slice::from_ref(reg), now) == OwnerState::Alive
}

/// The registrations in `store` of the supervisors that still run, as seen from this process
/// (`fleet tasks`, `fleet run status`).
pub fn live_supervisors(store: &Store, now: Timestamp) -> Result<Vec<Registration>, StoreError> {
    let me = Identity::current("observer");
    Ok(registry(store)?.into_iter().filter(|r| registration_alive(r, &me, now)).collect())
}

/// The registry as stored (entries that do not parse are skipped: a newer fleet's format).
pub fn registry(store: &Store) -> Result<Vec<Registration>, StoreError> {
    Ok(store
        .read()?
        .supervisors()?
        .into_iter()
        .filter_map(|(_, bytes)| serde_json::from_slice(&bytes).ok())
        .collect())
}

/// The request that registers (or refreshes) `registration`.
pub fn register(registration: &Registration) -> Result<Request, StoreError> {
    let json = serde_json::to_string(registration)
        .map_err(|e| StoreError::Corrupt(format!("encoding a supervisor registration: {e}")))?;
    let instance = registration.identity.instance.clone();
    Ok(Request::Register { instance, registration: Some(json) })
}

/// The request that removes the registration of `instance`.
pub fn deregister(instance: &str) -> Request {
    Request::Register { instance: instance.to_string(), registration: None }
}

/// The processes of one attempt, written to `tasks/<id>/attempt.json` when the agent starts,
/// so a later run can kill survivors of a supervisor that died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    pub instance: String,
    pub attempt: String,
    /// The agent's pid, which is also its process group.
    pub pgid: i32,
    /// The agent's start time (clock ticks since boot), so a reused pid is not mistaken for it.
    pub leader_start_ticks: u64,
    pub boot_id: String,
    pub started_at: Timestamp,
}

const ATTEMPT_FILE: &str = "attempt.json";

impl AttemptRecord {
    /// The record of an agent just spawned with `pid` (its own group leader).
    pub fn of_child(instance: &str, attempt: &str, pid: u32) -> AttemptRecord {
        let pgid = i32::try_from(pid).unwrap_or(0);
        AttemptRecord {
            instance: instance.to_string(),
            attempt: attempt.to_string(),
            pgid,
            leader_start_ticks: process::process(pgid).map_or(0, |p| p.start_ticks),
            boot_id: process::boot_id(),
            started_at: Timestamp::now(),
        }
    }

    /// Writes the record into the task directory `task_root`.
    pub fn save(&self, task_root: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        crate::fsutil::write_atomic(&task_root.join(ATTEMPT_FILE), format!("{text}\n").as_bytes())
    }

    /// The record in `task_root`, if there is a readable one.
    pub fn load(task_root: &Path) -> Option<AttemptRecord> {
        let bytes = std::fs::read(task_root.join(ATTEMPT_FILE)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Kills the recorded process group if it still belongs to this attempt: its leader is the
    /// recorded process, or the leader is gone but members remain (they started after it).
    fn kill_group(&self) -> bool {
        if self.pgid <= 1 || (!self.boot_id.is_empty() && self.boot_id != process::boot_id()) {
            return false;
        }
        let leader = process::process(self.pgid);
        let ours = match leader {
            Some(leader) => leader.start_ticks == self.leader_start_ticks,
            None => true,
        };
        ours && process::signal_group(self.pgid, libc::SIGKILL).unwrap_or(false)
    }
}

/// Kills whatever is left on this machine of attempt `attempt` (of a supervisor that is gone):
/// every process tagged with the attempt id, and its recorded process group. Returns how many
/// processes were found alive.
pub fn kill_survivors(attempt: &str, record: Option<&AttemptRecord>) -> usize {
    let group_killed =
        record.filter(|r| r.attempt == attempt).is_some_and(AttemptRecord::kill_group);
    let tagged = if attempt.is_empty() {
        0
    } else {
        process::kill_tagged(&format!("{ATTEMPT_VAR}={attempt}"))
    };
    tagged + usize::from(group_killed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Identity {
        Identity::current("fleet@test")
    }

    #[test]
    fn a_live_process_on_this_machine_keeps_its_lease() {
        let me = me();
        let mut other = me.clone();
        other.instance = "OTHER".into();
        let lease = other.lease("a1", "claude", "", Timestamp::now());
        assert_eq!(owner_state(&lease, &me, &[], Timestamp::now()), OwnerState::Alive);
    }

    #[test]
    fn a_reused_pid_or_a_dead_one_is_gone() {
        let me = me();
        let mut reused = me.lease("a1", "", "", Timestamp::now());
        reused.instance = "OTHER".into();
        reused.start_ticks += 1;
        assert!(matches!(owner_state(&reused, &me, &[], Timestamp::now()), OwnerState::Gone(_)));
        let mut dead = reused.clone();
        dead.start_ticks = 0;
        dead.pid = u32::MAX - 7;
        assert!(matches!(owner_state(&dead, &me, &[], Timestamp::now()), OwnerState::Gone(_)));
    }

    #[test]
    fn another_boot_is_gone() {
        let me = me();
        let mut lease = me.lease("a1", "", "", Timestamp::now());
        lease.instance = "OTHER".into();
        lease.boot_id = "a-different-boot".into();
        if !me.boot_id.is_empty() {
            assert!(matches!(owner_state(&lease, &me, &[], Timestamp::now()), OwnerState::Gone(_)));
        }
    }

    #[test]
    fn another_host_lives_by_its_heartbeat() {
        let me = me();
        let now = Timestamp::now();
        let mut far = me.clone();
        far.instance = "FAR".into();
        far.host = "elsewhere".into();
        let lease = far.lease("a1", "", "", now);
        let fresh = Registration {
            identity: far.clone(),
            started_at: now,
            heartbeat: now - SignedDuration::from_secs(10),
            max_concurrent: 2,
        };
        assert_eq!(owner_state(&lease, &me, std::slice::from_ref(&fresh), now), OwnerState::Alive);
        let stale = Registration { heartbeat: now - SignedDuration::from_secs(600), ..fresh };
        assert!(matches!(owner_state(&lease, &me, &[stale], now), OwnerState::Gone(_)));
        assert!(matches!(owner_state(&lease, &me, &[], now), OwnerState::Gone(_)));
    }
}

/// An in-progress task held by no live supervisor and no person: nothing will ever finish or
/// release it by itself (`fleet tasks`, `fleet doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unheld {
    pub id: String,
    pub title: String,
    pub assignee: String,
    /// Why no one holds it, in words.
    pub why: String,
}

/// Whether `assignee` is an agent's actor (`<supervisor>/agent`, what `BD_ACTOR` says).
pub fn is_agent_actor(assignee: &str) -> bool {
    assignee.ends_with("/agent")
}

/// Every in-progress task held by no live supervisor and no person, as seen from this process:
/// a lease whose owner is provably gone ([`owner_state`]); a claim an agent made under its
/// own actor (no supervisor runs such a task); a task held by a supervisor's name with no live
/// supervisor of that name. Work waiting in a merge queue belongs to the queue, not here.
pub fn unheld_tasks(store: &Store, now: Timestamp) -> Result<Vec<Unheld>, StoreError> {
    let me = Identity::current("observer");
    let registry = registry(store)?;
    let live_names: Vec<&str> = registry
        .iter()
        .filter(|r| registration_alive(r, &me, now))
        .map(|r| r.identity.name.as_str())
        .collect();
    let known_names: Vec<&str> = registry.iter().map(|r| r.identity.name.as_str()).collect();
    let mut found = Vec::new();
    let filter = crate::store::ListFilter {
        statuses: vec![Status::InProgress],
        ..crate::store::ListFilter::default()
    };
    for issue in store.read()?.list(&filter)?.0.into_iter().map(|summary| summary.issue) {
        if crate::supervisor::outcome::queued(&issue) {
            continue;
        }
        let why = match issue.live_lease() {
            Some(lease) => match owner_state(lease, &me, &registry, now) {
                OwnerState::Alive => None,
                OwnerState::Gone(why) => Some(why),
            },
            None if is_agent_actor(&issue.assignee) => Some(format!(
                "an agent claimed it as {} outside any attempt: no supervisor runs it",
                issue.assignee
            )),
            None if is_supervisor_name(&issue.assignee, &known_names)
                && !live_names.contains(&issue.assignee.as_str()) =>
            {
                Some(format!("no supervisor named {} is running", issue.assignee))
            }
            None => None,
        };
        if let Some(why) = why {
            found.push(Unheld {
                id: issue.id.clone(),
                title: issue.title.clone(),
                assignee: issue.assignee.clone(),
                why,
            });
        }
    }
    Ok(found)
}

/// Whether `assignee` names a supervisor: a registered one's name, or fleet's default form
/// (`fleet@host`).
fn is_supervisor_name(assignee: &str, known: &[&str]) -> bool {
    known.contains(&assignee) || (assignee.starts_with("fleet@") && !assignee.contains('/'))
}
