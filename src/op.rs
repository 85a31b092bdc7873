//! Ops: the one vocabulary of state change.
//!
//! Every change to the queue — from the CLI, the supervisor, an import or a sync — is an
//! [`Op`]: a versioned serde record with [`OpMeta`] (a ULID, the actor, the replica that made
//! it and a hybrid-logical-clock stamp) and an [`OpKind`] saying what changes. `store::apply`
//! is the only code that turns ops into state, and it appends each applied op to the journal in
//! the same transaction. The JSON Schema of the record is `schema/op.schema.json`.
//!
//! # Stamps and the total order
//!
//! An op is *stamped* once, by the store that makes it (`Writer::stamp`), and keeps its meta
//! forever: every store that applies it — the one that made it, or another machine replaying
//! it — writes the same id, actor, replica and stamp to its journal and the same `meta.at` into
//! the issue's timestamps.
//!
//! Stamps come from a hybrid logical clock ([`Hlc`]): wall-clock milliseconds plus a counter.
//! Making an op *ticks* the clock ([`Hlc::tick`]); applying an op made elsewhere *receives* its
//! stamp ([`Hlc::receive`]), so every op a store makes afterwards stamps after every op it has
//! seen, whatever the machines' wall clocks say. Stamps compare wall time first, then the
//! counter.
//!
//! Ops are totally ordered by [`OrderKey`] — `(stamp, replica, op id)`: the stamp orders ops
//! causally (an op made after seeing another stamps after it); two ops with the same stamp can
//! only come from different replicas (one replica never repeats a stamp), and the replica id
//! breaks the tie; the op id makes the order total even for ops that claim the same replica
//! and stamp (a copied store). Replaying the same set of ops in this order gives the same
//! state on every store.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::coord::{Message, Reservation};
use crate::model::{Comment, Dependency, FleetFields, Issue, Status};

/// Version of the op record format this build reads. Bumped when a variant changes shape or
/// a variant is added. An op is written with the lowest version that has its variant
/// ([`OpKind::format_version`]), so a fleet of an older version still reads every op it can
/// apply, and refuses (sidelines) only the ones it cannot.
pub const OP_FORMAT_VERSION: u32 = 3;

/// The format version that introduced [`OpKind::Bulk`].
pub const BULK_FORMAT_VERSION: u32 = 2;

/// The format version that introduced messages and file reservations ([`OpKind::Mail`],
/// [`OpKind::MailAck`], [`OpKind::Reserve`], [`OpKind::ReleaseFiles`]): an older fleet
/// sidelines them and applies the rest.
pub const COORD_FORMAT_VERSION: u32 = 3;

/// A hybrid logical clock stamp: wall-clock milliseconds, plus a counter that orders ops made
/// within the same millisecond (or while the wall clock stands behind an earlier stamp).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Hlc {
    pub wall_ms: u64,
    pub logical: u32,
}

impl Hlc {
    pub const ZERO: Hlc = Hlc { wall_ms: 0, logical: 0 };

    /// The next stamp after `self`, given the current wall clock: never goes backwards.
    pub fn tick(self, now_ms: u64) -> Hlc {
        if now_ms > self.wall_ms {
            Hlc { wall_ms: now_ms, logical: 0 }
        } else {
            Hlc { wall_ms: self.wall_ms, logical: self.logical.saturating_add(1) }
        }
    }

    /// The clock after receiving `remote`, a stamp made on another machine, at wall-clock time
    /// `now_ms` (the receive rule of hybrid logical clocks, Kulkarni et al. 2014):
    ///
    /// - wall = max(local wall, remote wall, now);
    /// - logical = max(local, remote) + 1 if wall equals both walls; local + 1 if it equals
    ///   only the local wall; remote + 1 if it equals only the remote wall; 0 if `now` is ahead
    ///   of both.
    ///
    /// The result is greater than both `self` and `remote`, so the next [`tick`](Hlc::tick)
    /// stamps after every op seen. (The counter saturates at `u32::MAX` rather than overflow; a
    /// stamp from a clock far in the future drags this clock along, as in every HLC.)
    pub fn receive(self, remote: Hlc, now_ms: u64) -> Hlc {
        let wall_ms = self.wall_ms.max(remote.wall_ms).max(now_ms);
        let logical = match (wall_ms == self.wall_ms, wall_ms == remote.wall_ms) {
            (true, true) => self.logical.max(remote.logical).saturating_add(1),
            (true, false) => self.logical.saturating_add(1),
            (false, true) => remote.logical.saturating_add(1),
            (false, false) => 0,
        };
        Hlc { wall_ms, logical }
    }
}

/// The position of an op in the total order of all ops: stamp (wall time, then counter), then
/// replica id, then op id, compared in that order (the derived `Ord` follows field order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OrderKey {
    pub stamp: Hlc,
    pub replica: String,
    pub id: ulid::Ulid,
}

/// Who made an op, where and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpMeta {
    /// Unique id of the op.
    pub id: ulid::Ulid,
    /// The user or agent on whose behalf the change was made.
    pub actor: String,
    /// The store (machine) that made the op.
    pub replica: String,
    /// Orders ops across replicas; assigned when the op is made ([`Hlc`]).
    pub stamp: Hlc,
    /// Wall-clock time of the change; the timestamps the op writes (updated_at, closed_at…).
    pub at: Timestamp,
    /// The issues the op names, as its author knew them: for each named issue that a create
    /// op made, that op's id (the issue's *birth*). Ids minted apart on two machines can be
    /// equal; the store renames the later issue (`store::apply`, "Ids made apart") and uses
    /// these to send every op to the issue its author meant, or to refuse it when that issue
    /// is gone. Absent in ops of older fleets, which are applied by id alone.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub births: std::collections::BTreeMap<String, ulid::Ulid>,
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Op {
    /// Format version: the lowest that has the op's variant ([`OpKind::format_version`]).
    pub v: u32,
    pub meta: OpMeta,
    #[serde(flatten)]
    pub kind: OpKind,
}

impl Op {
    /// The op's place in the total order of ops ([`OrderKey`]).
    pub fn order_key(&self) -> OrderKey {
        OrderKey { stamp: self.meta.stamp, replica: self.meta.replica.clone(), id: self.meta.id }
    }
}

/// What an op changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum OpKind {
    /// A new issue, with the dependency edges it starts with.
    Create {
        issue: Box<Issue>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        deps: Vec<Dependency>,
    },
    /// Writes an issue record as given, creating it or replacing the stored one (the upsert
    /// of an import). Edges and comments travel as their own ops.
    Put {
        issue: Box<Issue>,
    },
    /// Field edits to an existing issue.
    Update {
        id: String,
        patch: Box<IssuePatch>,
    },
    /// Compare-and-set: open and unassigned (or already this actor's) → in_progress + assignee.
    Claim {
        id: String,
    },
    /// Puts a claimed issue back: open and unassigned. `claim` names the claim op whose hold
    /// it ends (absent when the issue was held by no claim op, and in ops of older fleets): it
    /// then applies only while that claim holds, so a release never ends a claim its author
    /// had not seen (another machine's, earlier or later in the total order).
    Release {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        claim: Option<ulid::Ulid>,
    },
    Close {
        id: String,
        reason: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        session: String,
    },
    Reopen {
        id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// Hard delete: the issue, its comments and every edge touching it.
    Delete {
        id: String,
    },
    DepAdd {
        dep: Dependency,
    },
    DepRemove {
        issue_id: String,
        depends_on_id: String,
    },
    Comment {
        comment: Comment,
    },
    LabelAdd {
        id: String,
        label: String,
    },
    LabelRemove {
        id: String,
        label: String,
    },
    /// Many records in one op: what an import writes instead of one op per issue, edge and
    /// comment (format version [`BULK_FORMAT_VERSION`]). Its entries are applied in order,
    /// each by the rules of the op it holds, under this op's meta. Made here, an entry the
    /// rules refuse is an error of the whole op; replayed from another machine, a refused
    /// entry is skipped, exactly as that entry would be as an op of its own, and the op is in
    /// effect when any entry changed something. Entries are never bulk ops themselves.
    Bulk {
        ops: Vec<OpKind>,
    },
    /// A message to a task's agent or a person (`bd mail send`); the store records the op's
    /// actor, time and stamp with it.
    Mail {
        message: Box<Message>,
    },
    /// The op's actor has read the message `message` (`bd mail ack`): it leaves inboxes.
    MailAck {
        message: String,
    },
    /// Files reserved for a task's attempt (`bd reserve`).
    Reserve {
        reservation: Box<Reservation>,
    },
    /// Ends reservations of `task`: those of `ids`, or all of them when `ids` is empty
    /// (`bd release-files`, and the end of an attempt).
    ReleaseFiles {
        task: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ids: Vec<String>,
    },
}

impl OpKind {
    /// How many records the op carries: its entries for a bulk op, else one.
    pub fn records(&self) -> usize {
        match self {
            OpKind::Bulk { ops } => ops.len(),
            _ => 1,
        }
    }

    /// The issue the op is about.
    pub fn subject(&self) -> &str {
        match self {
            OpKind::Create { issue, .. } | OpKind::Put { issue } => &issue.id,
            OpKind::Update { id, .. }
            | OpKind::Claim { id }
            | OpKind::Release { id, .. }
            | OpKind::Close { id, .. }
            | OpKind::Reopen { id, .. }
            | OpKind::Delete { id }
            | OpKind::LabelAdd { id, .. }
            | OpKind::LabelRemove { id, .. } => id,
            OpKind::DepAdd { dep } => &dep.issue_id,
            OpKind::DepRemove { issue_id, .. } => issue_id,
            OpKind::Comment { comment } => &comment.issue_id,
            OpKind::Bulk { ops } => ops.first().map_or("", OpKind::subject),
            OpKind::Mail { message } => message.thread.as_deref().unwrap_or(&message.to),
            OpKind::MailAck { message } => message,
            OpKind::Reserve { reservation } => &reservation.task,
            OpKind::ReleaseFiles { task, .. } => task,
        }
    }

    /// Whether the op is about messages or reservations, not about an issue's state.
    pub fn is_coordination(&self) -> bool {
        matches!(
            self,
            OpKind::Mail { .. }
                | OpKind::MailAck { .. }
                | OpKind::Reserve { .. }
                | OpKind::ReleaseFiles { .. }
        )
    }

    /// The single changes the op makes: its entries for a bulk op, else itself.
    pub fn entries(&self) -> &[OpKind] {
        match self {
            OpKind::Bulk { ops } => ops,
            single => std::slice::from_ref(single),
        }
    }

    /// The existing issues the op names: its subject (but for a create, whose subject is
    /// new), the targets of its edges. What [`OpMeta::births`] records the births of. A bulk
    /// op names none (imports are applied by id).
    pub fn named_issues(&self) -> Vec<&str> {
        match self {
            OpKind::Create { deps, .. } => deps.iter().map(|d| d.depends_on_id.as_str()).collect(),
            OpKind::DepAdd { dep } => vec![&dep.issue_id, &dep.depends_on_id],
            OpKind::DepRemove { issue_id, depends_on_id } => vec![issue_id, depends_on_id],
            OpKind::Bulk { .. } | OpKind::Mail { .. } | OpKind::MailAck { .. } => Vec::new(),
            OpKind::Reserve { .. } | OpKind::ReleaseFiles { .. } => Vec::new(),
            single => vec![single.subject()],
        }
    }

    /// The op with every issue it names ([`OpKind::named_issues`]) given by `rename` (the
    /// name itself where `rename` gives `None`); a create's own id follows only in its edges'
    /// sources, which are the create itself.
    pub fn renamed(&self, rename: &dyn Fn(&str) -> Option<String>) -> OpKind {
        let to = |id: &String| rename(id).unwrap_or_else(|| id.clone());
        let mut kind = self.clone();
        match &mut kind {
            OpKind::Create { deps, .. } => {
                for dep in deps {
                    dep.depends_on_id = to(&dep.depends_on_id);
                }
            }
            OpKind::Put { issue } => issue.id = to(&issue.id),
            OpKind::Update { id, .. }
            | OpKind::Claim { id }
            | OpKind::Release { id, .. }
            | OpKind::Close { id, .. }
            | OpKind::Reopen { id, .. }
            | OpKind::Delete { id }
            | OpKind::LabelAdd { id, .. }
            | OpKind::LabelRemove { id, .. } => *id = to(id),
            OpKind::DepAdd { dep } => {
                dep.issue_id = to(&dep.issue_id);
                dep.depends_on_id = to(&dep.depends_on_id);
            }
            OpKind::DepRemove { issue_id, depends_on_id } => {
                *issue_id = to(issue_id);
                *depends_on_id = to(depends_on_id);
            }
            OpKind::Comment { comment } => comment.issue_id = to(&comment.issue_id),
            OpKind::Bulk { .. }
            | OpKind::Mail { .. }
            | OpKind::MailAck { .. }
            | OpKind::Reserve { .. }
            | OpKind::ReleaseFiles { .. } => {}
        }
        kind
    }

    /// The lowest op format version that has this variant: what the op is written with.
    pub fn format_version(&self) -> u32 {
        match self {
            OpKind::Bulk { .. } => BULK_FORMAT_VERSION,
            OpKind::Mail { .. }
            | OpKind::MailAck { .. }
            | OpKind::Reserve { .. }
            | OpKind::ReleaseFiles { .. } => COORD_FORMAT_VERSION,
            _ => 1,
        }
    }

    /// The op's name as written in the journal.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Create { .. } => "create",
            OpKind::Put { .. } => "put",
            OpKind::Update { .. } => "update",
            OpKind::Claim { .. } => "claim",
            OpKind::Release { .. } => "release",
            OpKind::Close { .. } => "close",
            OpKind::Reopen { .. } => "reopen",
            OpKind::Delete { .. } => "delete",
            OpKind::DepAdd { .. } => "dep_add",
            OpKind::DepRemove { .. } => "dep_remove",
            OpKind::Comment { .. } => "comment",
            OpKind::LabelAdd { .. } => "label_add",
            OpKind::LabelRemove { .. } => "label_remove",
            OpKind::Bulk { .. } => "bulk",
            OpKind::Mail { .. } => "mail",
            OpKind::MailAck { .. } => "mail_ack",
            OpKind::Reserve { .. } => "reserve",
            OpKind::ReleaseFiles { .. } => "release_files",
        }
    }
}

/// Field edits of an [`OpKind::Update`]. `None` leaves a field alone; for clearable optional
/// fields `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IssuePatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance_criteria: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Text appended to the notes on a new line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub append_notes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// The status the issue had where and when a `status` change was made (filled in by
    /// `Writer::apply` for every local change to a status other than closed). It tells a
    /// change made concurrently with a close on another machine (the issue was not closed
    /// here yet) from one made after seeing the close: the first must not reopen the issue
    /// (close wins, see `store::apply`), the second does. Absent in ops of older fleets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_status: Option<Status>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", with = "double_option")]
    pub estimated_minutes: Option<Option<i64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", with = "double_option")]
    pub due_at: Option<Option<Timestamp>>,
    #[serde(skip_serializing_if = "Option::is_none", with = "double_option")]
    pub defer_until: Option<Option<Timestamp>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    /// The specification the issue implements (beads' `spec_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_id: Option<String>,
    /// Ephemeral (beads' wisp: left out of the JSONL export and of ready work) or persistent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add_labels: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remove_labels: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetFields>,
}

impl IssuePatch {
    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == IssuePatch::default()
    }
}

/// Serde for `Option<Option<T>>`: absent = leave alone, `null` = clear, value = set.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<Option<T>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_never_goes_backwards() {
        let stamp = Hlc { wall_ms: 100, logical: 4 };
        assert_eq!(stamp.tick(50), Hlc { wall_ms: 100, logical: 5 });
        assert_eq!(stamp.tick(100), Hlc { wall_ms: 100, logical: 5 });
        assert_eq!(stamp.tick(101), Hlc { wall_ms: 101, logical: 0 });
    }

    #[test]
    fn receive_moves_past_both_stamps() {
        let local = Hlc { wall_ms: 100, logical: 4 };
        // The remote clock is ahead: adopt its wall time, count past its counter.
        assert_eq!(
            local.receive(Hlc { wall_ms: 200, logical: 7 }, 150),
            Hlc { wall_ms: 200, logical: 8 }
        );
        // Same wall time on both: past the larger counter.
        assert_eq!(
            local.receive(Hlc { wall_ms: 100, logical: 9 }, 50),
            Hlc { wall_ms: 100, logical: 10 }
        );
        // The remote stamp is behind: the local clock still moves on.
        assert_eq!(
            local.receive(Hlc { wall_ms: 10, logical: 99 }, 50),
            Hlc { wall_ms: 100, logical: 5 }
        );
        // The wall clock is ahead of both: a fresh millisecond.
        assert_eq!(
            local.receive(Hlc { wall_ms: 120, logical: 3 }, 300),
            Hlc { wall_ms: 300, logical: 0 }
        );
        // Saturates instead of overflowing.
        let top = Hlc { wall_ms: u64::MAX, logical: u32::MAX };
        assert_eq!(local.receive(top, 0), top);
        // The next local stamp comes after the received one.
        let received = local.receive(Hlc { wall_ms: 200, logical: 7 }, 150);
        assert!(received.tick(150) > Hlc { wall_ms: 200, logical: 7 });
    }

    #[test]
    fn order_is_stamp_then_replica_then_id() {
        let key = |wall_ms, logical, replica: &str, id: u128| OrderKey {
            stamp: Hlc { wall_ms, logical },
            replica: replica.to_string(),
            id: ulid::Ulid(id),
        };
        let mut keys = vec![
            key(2, 0, "a", 1),
            key(1, 5, "z", 9),
            key(1, 5, "a", 9),
            key(1, 5, "a", 3),
            key(1, 10, "a", 0),
            key(1, 2, "z", 0),
        ];
        keys.sort();
        assert_eq!(
            keys,
            vec![
                key(1, 2, "z", 0),
                key(1, 5, "a", 3),
                key(1, 5, "a", 9),
                key(1, 5, "z", 9),
                key(1, 10, "a", 0),
                key(2, 0, "a", 1),
            ]
        );
    }

    #[test]
    fn patch_distinguishes_clear_from_absent() {
        let cleared: IssuePatch = serde_json::from_str(r#"{"defer_until":null}"#).unwrap();
        assert_eq!(cleared.defer_until, Some(None));
        let absent: IssuePatch = serde_json::from_str("{}").unwrap();
        assert_eq!(absent.defer_until, None);
        let round = serde_json::to_string(&cleared).unwrap();
        assert_eq!(round, r#"{"defer_until":null}"#);
    }
}
