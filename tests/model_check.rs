//! Property test of the incremental readiness index.
//!
//! Random sequences of ops (creates, status changes, claims, closes, deferrals, edges of every
//! blocking kind, deletes) are applied to a real store. After each sequence the blocked set and
//! the ready order the store maintains op by op must equal a recomputation from scratch over
//! the same issues and edges, written here independently from the rules of spec §3.2–3.3.

use std::collections::{BTreeMap, BTreeSet};

use fleet::model::{Dependency, Issue, Status};
use fleet::op::{IssuePatch, OpKind};
use fleet::store::{ReadyFilter, Store, StoreError};
use fleet::time::Clock;
use fleet::tracker::ImportBatch;
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

const NOW: &str = "2026-06-01T12:00:00Z";
const KINDS: [&str; 6] =
    ["blocks", "conditional-blocks", "parent-child", "waits-for", "waits-for", "related"];
const TYPES: [&str; 4] = ["task", "bug", "epic", "gate"];

/// One random step; issue references are indices into the issues created so far.
#[derive(Debug, Clone)]
enum Step {
    Create {
        priority: u8,
        type_index: usize,
        age_minutes: i64,
    },
    SetStatus {
        issue: usize,
        status: usize,
    },
    /// A new priority moves an issue's ready entry to another key.
    SetPriority {
        issue: usize,
        priority: u8,
    },
    Claim {
        issue: usize,
    },
    Release {
        issue: usize,
    },
    Close {
        issue: usize,
    },
    Reopen {
        issue: usize,
    },
    Defer {
        issue: usize,
        future: Option<bool>,
    },
    Pin {
        issue: usize,
        pinned: bool,
    },
    AddDep {
        from: usize,
        to: usize,
        kind: usize,
        any_children: bool,
    },
    RemoveDep {
        from: usize,
        to: usize,
    },
    Delete {
        issue: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let issue = 0usize..40;
    prop_oneof![
        4 => (0u8..5, 0usize..TYPES.len(), 0i64..5000)
            .prop_map(|(priority, type_index, age_minutes)| Step::Create { priority, type_index, age_minutes }),
        2 => (issue.clone(), 0usize..5).prop_map(|(issue, status)| Step::SetStatus { issue, status }),
        1 => (issue.clone(), 0u8..5).prop_map(|(issue, priority)| Step::SetPriority { issue, priority }),
        1 => issue.clone().prop_map(|issue| Step::Claim { issue }),
        1 => issue.clone().prop_map(|issue| Step::Release { issue }),
        2 => issue.clone().prop_map(|issue| Step::Close { issue }),
        1 => issue.clone().prop_map(|issue| Step::Reopen { issue }),
        1 => (issue.clone(), proptest::option::of(any::<bool>()))
            .prop_map(|(issue, future)| Step::Defer { issue, future }),
        1 => (issue.clone(), any::<bool>()).prop_map(|(issue, pinned)| Step::Pin { issue, pinned }),
        5 => (issue.clone(), issue.clone(), 0usize..KINDS.len(), any::<bool>())
            .prop_map(|(from, to, kind, any_children)| Step::AddDep { from, to, kind, any_children }),
        1 => (issue.clone(), issue.clone()).prop_map(|(from, to)| Step::RemoveDep { from, to }),
        1 => issue.prop_map(|issue| Step::Delete { issue }),
    ]
}

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// Turns a step into an op against the issues that exist; `None` if it names none.
fn to_op(step: &Step, ids: &[String], serial: usize) -> Option<OpKind> {
    let pick = |n: usize| (!ids.is_empty()).then(|| ids[n % ids.len()].clone());
    let patch = |patch: IssuePatch, id: String| OpKind::Update { id, patch: Box::new(patch) };
    Some(match step {
        Step::Create { priority, type_index, age_minutes } => {
            let created = now() - SignedDuration::from_mins(*age_minutes);
            let mut issue =
                Issue::new(format!("t-{serial:04}"), format!("issue {serial}"), created);
            issue.priority = *priority;
            issue.issue_type = TYPES[*type_index].to_string();
            OpKind::Create { issue: Box::new(issue), deps: Vec::new() }
        }
        Step::SetStatus { issue, status } => {
            let status = [
                Status::Open,
                Status::InProgress,
                Status::Blocked,
                Status::Deferred,
                Status::Pinned,
            ][*status]
                .clone();
            patch(IssuePatch { status: Some(status), ..IssuePatch::default() }, pick(*issue)?)
        }
        Step::SetPriority { issue, priority } => {
            patch(IssuePatch { priority: Some(*priority), ..IssuePatch::default() }, pick(*issue)?)
        }
        Step::Claim { issue } => OpKind::Claim { id: pick(*issue)? },
        Step::Release { issue } => OpKind::Release { id: pick(*issue)?, claim: None },
        Step::Close { issue } => {
            OpKind::Close { id: pick(*issue)?, reason: String::new(), session: String::new() }
        }
        Step::Reopen { issue } => OpKind::Reopen { id: pick(*issue)?, reason: String::new() },
        Step::Defer { issue, future } => {
            let at = future.map(|f| {
                if f {
                    now() + SignedDuration::from_hours(1)
                } else {
                    now() - SignedDuration::from_hours(1)
                }
            });
            patch(IssuePatch { defer_until: Some(at), ..IssuePatch::default() }, pick(*issue)?)
        }
        Step::Pin { issue, pinned } => {
            patch(IssuePatch { pinned: Some(*pinned), ..IssuePatch::default() }, pick(*issue)?)
        }
        Step::AddDep { from, to, kind, any_children } => OpKind::DepAdd {
            dep: Dependency {
                issue_id: pick(*from)?,
                depends_on_id: pick(*to)?,
                kind: KINDS[*kind].to_string(),
                created_at: now(),
                created_by: String::new(),
                metadata: if *any_children {
                    r#"{"gate":"any-children"}"#.to_string()
                } else {
                    String::new()
                },
                thread_id: String::new(),
            },
        },
        Step::RemoveDep { from, to } => {
            OpKind::DepRemove { issue_id: pick(*from)?, depends_on_id: pick(*to)? }
        }
        Step::Delete { issue } => OpKind::Delete { id: pick(*issue)? },
    })
}

/// The from-scratch computation of spec §3.2 over plain maps.
struct Snapshot {
    issues: BTreeMap<String, Issue>,
    deps: BTreeMap<String, Vec<Dependency>>,
}

impl Snapshot {
    fn read(store: &Store) -> Snapshot {
        let reader = store.read().unwrap();
        let mut issues = BTreeMap::new();
        reader
            .for_each_issue(&mut |issue| {
                issues.insert(issue.id.clone(), issue);
                Ok(true)
            })
            .unwrap();
        let deps = issues.keys().map(|id| (id.clone(), reader.dependencies(id).unwrap())).collect();
        Snapshot { issues, deps }
    }

    fn settled(&self, id: &str) -> bool {
        self.issues.get(id).is_some_and(|i| matches!(i.status, Status::Closed | Status::Pinned))
    }

    fn children(&self, parent: &str) -> Vec<&Issue> {
        self.deps
            .iter()
            .filter(|(_, deps)| {
                deps.iter().any(|d| d.kind == "parent-child" && d.depends_on_id == parent)
            })
            .filter_map(|(id, _)| self.issues.get(id))
            .collect()
    }

    fn blocked(&self, id: &str, visiting: &mut BTreeSet<String>) -> bool {
        let issue = &self.issues[id];
        if matches!(issue.status, Status::Closed | Status::Pinned)
            || !visiting.insert(id.to_string())
        {
            return false;
        }
        let result = self.deps[id].iter().any(|dep| match dep.kind.as_str() {
            "blocks" | "conditional-blocks" => {
                self.issues.contains_key(&dep.depends_on_id) && !self.settled(&dep.depends_on_id)
            }
            "parent-child" => {
                self.issues.contains_key(&dep.depends_on_id)
                    && self.blocked(&dep.depends_on_id, visiting)
            }
            "waits-for" => {
                let children = self.children(&dep.depends_on_id);
                let unsettled =
                    children.iter().any(|c| !matches!(c.status, Status::Closed | Status::Pinned));
                let any_closed = children.iter().any(|c| c.status == Status::Closed);
                unsettled && !(dep.metadata.contains("any-children") && any_closed)
            }
            _ => false,
        });
        visiting.remove(id);
        result
    }

    fn blocked_set(&self) -> BTreeSet<String> {
        self.issues.keys().filter(|id| self.blocked(id, &mut BTreeSet::new())).cloned().collect()
    }

    fn ready_order(&self, blocked: &BTreeSet<String>) -> Vec<String> {
        let excluded = ["merge-request", "gate", "molecule", "message", "agent", "role", "rig"];
        let hidden = |issue: &Issue| {
            let parents = self.deps[&issue.id].iter().filter(|d| d.kind == "parent-child");
            let parent_defer =
                parents.filter_map(|d| self.issues.get(&d.depends_on_id)?.defer_until);
            issue.defer_until.into_iter().chain(parent_defer).any(|at| at > now())
        };
        let mut ready: Vec<&Issue> = self
            .issues
            .values()
            .filter(|i| {
                i.status == Status::Open
                    && !blocked.contains(&i.id)
                    && !i.pinned
                    && !i.ephemeral
                    && !excluded.contains(&i.issue_type.as_str())
                    && !hidden(i)
            })
            .collect();
        ready.sort_by(|a, b| {
            (a.priority, std::cmp::Reverse(a.created_at), &a.id).cmp(&(
                b.priority,
                std::cmp::Reverse(b.created_at),
                &b.id,
            ))
        });
        ready.into_iter().map(|i| i.id.clone()).collect()
    }
}

fn run_sequence(steps: &[Step]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
    let clock = Clock::Fixed(now());
    let mut ids: Vec<String> = Vec::new();
    for (serial, step) in steps.iter().enumerate() {
        let Some(op) = to_op(step, &ids, serial) else { continue };
        let created = matches!(&op, OpKind::Create { issue, .. } if !ids.contains(&issue.id))
            .then(|| op.subject().to_string());
        let deleted = matches!(&op, OpKind::Delete { .. }).then(|| op.subject().to_string());
        let actor = if serial % 3 == 0 { "alice" } else { "bob" };
        // Refused ops (cycles, claims of taken issues, …) must leave no trace; the comparison
        // below covers that too.
        if store.apply(actor, clock, vec![op]).is_ok() {
            ids.extend(created);
            if let Some(gone) = deleted {
                ids.retain(|id| *id != gone);
            }
        }
    }
    let snapshot = Snapshot::read(&store);
    assert_readiness_is(&store, &snapshot, "op by op")?;
    // The same issues and edges imported in one bulk transaction into an empty store, whose
    // readiness is computed once at the end, must come out the same.
    let imported = dir.path().join("imported");
    let bulk = Store::init(&imported.join(".beads"), "t").unwrap();
    bulk_import(&bulk, &snapshot);
    assert_readiness_is(&bulk, &snapshot, "bulk import")?;
    // And every index agrees with a recomputation (`fleet doctor`'s checks).
    drop(bulk);
    let report = fleet::store::check::check(&imported.join(".beads")).unwrap();
    let failed: Vec<_> = report.checks.iter().filter(|c| !c.ok).collect();
    prop_assert!(failed.is_empty(), "doctor after a bulk import: {:?}", failed);
    Ok(())
}

/// The blocked set and the ready order of `store` are the recomputation's over `snapshot`.
fn assert_readiness_is(store: &Store, snapshot: &Snapshot, how: &str) -> Result<(), TestCaseError> {
    let expected_blocked = snapshot.blocked_set();
    let reader = store.read().unwrap();
    let actual_blocked: BTreeSet<String> =
        reader.blocked(None, 0).unwrap().0.into_iter().map(|b| b.summary.issue.id).collect();
    prop_assert_eq!(&actual_blocked, &expected_blocked, "blocked sets differ ({})", how);
    let filter = ReadyFilter { limit: 0, ..ReadyFilter::default() };
    let actual_ready: Vec<String> =
        reader.ready(&filter, now()).unwrap().issues.into_iter().map(|i| i.id).collect();
    prop_assert_eq!(
        actual_ready,
        snapshot.ready_order(&expected_blocked),
        "ready order differs ({})",
        how
    );
    Ok(())
}

/// Writes `snapshot`'s issues and edges as an import does, in one bulk transaction: each issue
/// is created with its edges to issues created before it (in id order), the other edges are
/// added after every issue exists.
fn bulk_import(store: &Store, snapshot: &Snapshot) {
    let mut batch = ImportBatch::with_capacity(snapshot.issues.len());
    let mut later = Vec::new();
    for (id, issue) in &snapshot.issues {
        let deps = snapshot.deps.get(id).cloned().unwrap_or_default();
        let (now, after): (Vec<_>, Vec<_>) =
            deps.into_iter().partition(|dep| dep.depends_on_id < *id);
        batch.new_issue(Box::new(issue.clone()), now);
        later.extend(after);
    }
    for dep in later {
        batch.edge(dep);
    }
    store
        .write("importer", Clock::Fixed(now()), |writer| {
            writer.begin_bulk()?;
            batch.apply(writer).map_err(|refusal| StoreError::Refused(Box::new(refusal)))
        })
        .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn incremental_readiness_matches_recomputation(steps in proptest::collection::vec(step(), 1..120)) {
        run_sequence(&steps)?;
    }
}

/// A fixed sequence through every rule, so a regression shows up without shrinking.
#[test]
fn every_rule_in_one_sequence() {
    use Step::*;
    let create = |priority| Create { priority, type_index: 0, age_minutes: 10 };
    let steps = vec![
        create(1),
        create(2),
        create(3),
        create(0),
        AddDep { from: 1, to: 0, kind: 0, any_children: false },
        AddDep { from: 2, to: 1, kind: 2, any_children: false },
        AddDep { from: 3, to: 1, kind: 3, any_children: true },
        Close { issue: 2 },
        Close { issue: 0 },
        Defer { issue: 1, future: Some(true) },
        Reopen { issue: 0 },
        Delete { issue: 0 },
    ];
    run_sequence(&steps).unwrap();
}
