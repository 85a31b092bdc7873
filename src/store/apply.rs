//! Applies ops inside a [`Writer`]: validate, mutate the tables, refresh readiness, append the
//! op to the journal. Nothing else writes the issue, edge, comment, label or journal tables.
//!
//! Every op is validated completely before its first write, so an op that fails leaves the
//! transaction as it was; a batch that keeps going after one refused op (a group of claims, a
//! replay) is therefore still consistent.
//!
//! # Making an op and applying it
//!
//! [`Writer::stamp`] makes an op: a new ULID, the writer's actor and replica, `at` = the
//! writer's clock now, and the next tick of the hybrid logical clock. [`Writer::apply_op`]
//! applies exactly the op it is given: `meta.at` is the time written into `updated_at`,
//! `closed_at`, `started_at`; a claim assigns `meta.actor`; the meta goes to the journal
//! unchanged. [`Writer::apply`] is the two in a row, for ops made here.
//!
//! # Ops from other machines ([`Origin::Remote`])
//!
//! - The clock *receives* the op's stamp ([`crate::op::Hlc::receive`]) before anything else,
//!   even if the op is then skipped or refused: later ops made here stamp after it.
//! - An op the rules refuse (its issue was deleted by an op earlier in the total order, a claim
//!   lost to an earlier claim, an edge would close a cycle…) is [`Outcome::Rejected`] with the
//!   reason: nothing changes and nothing is journaled, and the batch goes on. Only a failure of
//!   the store itself (I/O, database) is an `Err`.
//! - An op this store has seen before is skipped ([`Outcome::Duplicate`]): replaying a batch
//!   twice, or receiving one's own ops back, changes nothing. The `op_ids` table maps the id of
//!   every op applied here (local ones too) to its journal sequence, and the id of every remote
//!   op that was refused or changed nothing to 0: such an op had its one chance at its place in
//!   the total order, and trying it again later, at another place, could give another result.
//! - A newer op format than this build reads is refused, not guessed at.
//!
//! Applied in the total order ([`crate::op::OrderKey`]), the same set of ops gives the same
//! state on every store: nothing applied depends on the applying store's clock, actor or
//! replica.
//!
//! # Child ids
//!
//! Children are numbered under their parent: `p.1`, `p.2`… (beads, spec §5). The number is one
//! more than the highest of the parent's child counter and its existing children; the counter
//! is advanced by every create of a child id (`p.7` or `p.7_tag`) this store applies, its own or
//! a replayed one, so numbers only grow. Two machines apart could still both pick `p.3`, so the
//! *form* of the id depends on who numbers:
//!
//! - the replica that made the parent (its *home*, recorded from the parent's create op) numbers
//!   plainly: `p.3`. Only one replica is home to a parent, and its counter never repeats, so
//!   plain children never collide;
//! - any other replica appends its tag — the last six characters of its replica id, a ULID's
//!   random part (30 bits): `p.3_k7q2mx`. Its numbers never repeat either, so tagged children
//!   collide only if two replicas share a tag (about one pair in a billion), and never with plain
//!   ones.
//!
//! On a single machine every parent is home, so ids read as they always have. An issue written
//! by an import (`Put`) is home to the replica that imported it: two machines that import the
//! same file separately are both home to its issues — import on one machine and sync instead.
//! Should two children still collide, the create later in the total order is refused
//! (`AlreadyExists`) on every store alike and reported, never silently merged.

use std::collections::BTreeSet;

use jiff::Timestamp;
use redb::ReadableTable;

use super::ahead_rows::{
    Encoded, RowsAhead, comment_row, edge_row, edges_of, issue_row, labels_in_stored_order,
};
use super::tables::{View, ready_key};
use super::undo::Change;
use super::{StoreError, Writer, guard, meta};
use crate::id;
use crate::model::{Comment, Dependency, Issue, ModelError, Status, dep_type, validate_dep_type};
use crate::op::{IssuePatch, OP_FORMAT_VERSION, Op, OpKind, OpMeta, OrderKey};

/// Issues whose readiness an op may have changed; `None` when the op changed nothing.
type Seeds = Option<BTreeSet<String>>;

/// The journal sequence the op-id index records for a remote op that was seen but refused or
/// changed nothing (journal sequences start at 1).
pub(super) const NOT_JOURNALED: u64 = 0;

/// At most this many entries go into one bulk op ([`Writer::apply_bulk`]): a journal row of
/// about a megabyte for imported issues.
pub const BULK_ENTRIES: usize = 1000;

/// How many bulk ops' journal rows may wait, encoded, for the writer to reach them.
const ROWS_AHEAD: usize = 4;

/// Length of the replica tag in child ids made away from the parent's home replica.
const REPLICA_TAG_LEN: usize = 6;

/// Where an op given to [`Writer::apply_op`] was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Made here ([`Writer::stamp`]); a refusal is an error for the caller to report.
    Local,
    /// Made on another machine and replayed here: the clock receives its stamp, and a refusal
    /// is an [`Outcome::Rejected`], not an error.
    Remote,
}

/// What became of an op given to [`Writer::apply_op`].
#[derive(Debug)]
pub enum Outcome {
    /// Applied and journaled.
    Applied,
    /// Valid, but it changed nothing (re-claiming one's own issue, closing a closed one); not
    /// journaled.
    Unchanged,
    /// Already applied (its id is in the journal); skipped.
    Duplicate,
    /// Refused by the rules (remote ops only); nothing was written.
    Rejected(StoreError),
}

/// One op of a [`super::Store::replay`], in the order it was applied.
#[derive(Debug)]
pub struct Replayed {
    pub key: OrderKey,
    /// The op's name (`create`, `close`…).
    pub kind: &'static str,
    /// The issue the op is about.
    pub subject: String,
    pub outcome: Outcome,
}

/// A create whose id another issue already had, earlier in the total order: it was given
/// another id (see the module docs, "Ids made apart").
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Renamed {
    /// The create op.
    pub op: String,
    /// The replica that made it.
    pub replica: String,
    /// The id it asked for, and the one it got.
    pub asked: String,
    pub given: String,
}

/// An edge of a new issue left out because its target was gone (deleted concurrently, on
/// another machine): the issue is kept without it, as beads keeps orphans.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Orphaned {
    pub issue: String,
    /// The missing target, and the edge's type (`parent-child` for a parent).
    pub target: String,
    pub kind: String,
    /// The replica that made the issue.
    pub replica: String,
}

/// What adding an edge would do.
enum EdgePlan {
    Insert,
    /// The same edge already exists; only its metadata would change (or nothing).
    Replace {
        unchanged: bool,
    },
}

pub(super) fn millis(at: Timestamp) -> u64 {
    u64::try_from(at.as_millisecond()).unwrap_or(0)
}

impl Writer<'_> {
    /// Applies one op made here as the current actor ([`Writer::stamp`], then
    /// [`Writer::apply_op`] as [`Origin::Local`]). Returns whether it changed anything (a no-op,
    /// such as re-claiming one's own issue, is not journaled).
    pub fn apply(&mut self, mut kind: OpKind) -> Result<bool, StoreError> {
        self.note_prior_status(&mut kind)?;
        let op = self.stamp(kind)?;
        Ok(matches!(self.apply_owned(op, Origin::Local)?, Outcome::Applied))
    }

    /// Records in a local change of status (to anything but closed) the status the issue has
    /// now ([`IssuePatch::prior_status`]), which the close-wins rule reads.
    fn note_prior_status(&self, kind: &mut OpKind) -> Result<(), StoreError> {
        let OpKind::Update { id, patch } = kind else { return Ok(()) };
        if patch.prior_status.is_some() || matches!(patch.status, None | Some(Status::Closed)) {
            return Ok(());
        }
        if let Some(issue) = self.tables.issue(id)? {
            patch.prior_status = Some(issue.status);
        }
        Ok(())
    }

    /// Makes an op of `kind`: a new id, this writer's actor and replica, `at` = the clock's now,
    /// the next stamp of the hybrid logical clock, and the births of the issues it names.
    /// Nothing is applied.
    pub fn stamp(&mut self, kind: OpKind) -> Result<Op, StoreError> {
        let births = self.births_named(&kind)?;
        let at = self.clock.now();
        self.hlc = self.hlc.tick(millis(at));
        let named = matches!(kind, OpKind::Claim { .. }).then(|| self.next_claim_id.take());
        Ok(Op {
            v: kind.format_version(),
            meta: OpMeta {
                id: named.flatten().unwrap_or_else(ulid::Ulid::generate),
                actor: self.actor.clone(),
                replica: self.replica.clone(),
                stamp: self.hlc,
                at,
                births,
            },
            kind,
        })
    }

    /// Moves the clock past `stamp`, seen elsewhere (a claims remote's state): every op this
    /// writer stamps from now on is ordered after it.
    pub fn receive_clock(&mut self, stamp: crate::op::Hlc) {
        self.hlc = self.hlc.receive(stamp, millis(self.clock.now()));
        self.clock_received = true;
    }

    /// Gives the next claim op this writer stamps the id `id` (what a claims remote's entry
    /// names, see `crate::tracker::claims`).
    pub fn name_next_claim(&mut self, id: ulid::Ulid) {
        self.next_claim_id = Some(id);
    }

    /// The births of the issues `kind` names that a create op made ([`OpMeta::births`]).
    fn births_named(
        &self,
        kind: &OpKind,
    ) -> Result<std::collections::BTreeMap<String, ulid::Ulid>, StoreError> {
        let mut births = std::collections::BTreeMap::new();
        for name in kind.named_issues() {
            if let Some(birth) = self.birth_of(name)? {
                births.insert(name.to_string(), ulid::Ulid(birth));
            }
        }
        Ok(births)
    }

    /// The birth of issue `id`: the create op that made it, if one did.
    pub(super) fn birth_of(&self, id: &str) -> Result<Option<u128>, StoreError> {
        Ok(self.births.get(id)?.map(|birth| birth.value()))
    }

    /// The claim op whose hold issue `id` is in, if any ([`super::tables::HOLDS`]).
    pub fn hold_of(&self, id: &str) -> Result<Option<ulid::Ulid>, StoreError> {
        Ok(self.holds.get(id)?.map(|claim| ulid::Ulid(claim.value())))
    }

    /// Applies `op` exactly as given (see the module docs). A local op the rules refuse is an
    /// `Err`; a remote one is [`Outcome::Rejected`], so a batch can go on past it.
    pub fn apply_op(&mut self, op: &Op, origin: Origin) -> Result<Outcome, StoreError> {
        self.apply_owned(op.clone(), origin)
    }

    fn apply_owned(&mut self, op: Op, origin: Origin) -> Result<Outcome, StoreError> {
        if origin == Origin::Remote {
            self.hlc = self.hlc.receive(op.meta.stamp, millis(self.clock.now()));
            self.clock_received = true;
        }
        if self.op_ids.get(op.meta.id.0)?.is_some() {
            return Ok(Outcome::Duplicate);
        }
        let key = op.order_key();
        if self.order_high.as_ref().is_some_and(|high| &key < high) {
            // Applied before ops that sort after it (a replay out of order): the undo log no
            // longer tells the order in which the state was made.
            self.forget_undo()?;
        }
        self.note_order(&op);
        self.strict = origin == Origin::Local;
        let bulk = matches!(op.kind, OpKind::Bulk { .. });
        if !bulk {
            self.start_recording();
        }
        let seeds = match self.mutate(&op) {
            Ok(seeds) => seeds,
            Err(error) if origin == Origin::Remote && error.is_refusal() => {
                self.discard_recording();
                self.write_entry(&key, op.meta.id, bulk)?;
                self.sideline(&op)?;
                return Ok(Outcome::Rejected(error));
            }
            Err(error) => {
                self.discard_recording();
                return Err(error);
            }
        };
        let Some(seeds) = seeds else {
            if origin == Origin::Remote {
                self.write_entry(&key, op.meta.id, bulk)?;
                self.sideline(&op)?;
            } else {
                self.discard_recording();
            }
            return Ok(Outcome::Unchanged);
        };
        match &mut self.deferred_seeds {
            Some(pending) => pending.extend(seeds),
            None => self.refresh(seeds)?,
        }
        self.write_entry(&key, op.meta.id, bulk)?;
        self.journal(op)?;
        Ok(Outcome::Applied)
    }

    /// Records a remote op seen but not in effect: in the op-id index (so it is not tried
    /// again) and, whole, among the sidelined ops (so a merge can re-apply it in its place).
    pub(super) fn sideline(&mut self, op: &Op) -> Result<(), StoreError> {
        self.op_ids.insert(op.meta.id.0, NOT_JOURNALED)?;
        self.sidelined.insert(op.meta.id.0, encode_op(op).as_slice())?;
        Ok(())
    }

    /// Moves the greatest order key seen to `op`'s if it is greater.
    pub(super) fn note_order(&mut self, op: &Op) {
        let meta = &op.meta;
        let greater = self.order_high.as_ref().is_none_or(|high| {
            (meta.stamp, meta.replica.as_str(), meta.id)
                > (high.stamp, high.replica.as_str(), high.id)
        });
        if greater {
            self.order_high = Some(op.order_key());
            self.order_high_moved = true;
        }
    }

    /// Validates and applies the change of `op`; nothing is written if it fails.
    pub(super) fn mutate(&mut self, op: &Op) -> Result<Seeds, StoreError> {
        if op.v > OP_FORMAT_VERSION {
            return Err(StoreError::OpVersion {
                id: op.meta.id.to_string(),
                version: op.v,
                supported: OP_FORMAT_VERSION,
            });
        }
        let retargeted = self.retarget(op)?;
        let seeds = match retargeted.as_ref().unwrap_or(&op.kind) {
            OpKind::Bulk { ops } => self.mutate_bulk(ops, &op.meta),
            single => self.mutate_one(single, &op.meta, Some(op.meta.id.0)),
        };
        // Issues whose rows or counts changed are refreshed with the rest, so their ready
        // entries carry the new ones (see `readiness`).
        let touched = std::mem::take(&mut self.touched);
        Ok(seeds?.map(|mut seeds| {
            seeds.extend(touched);
            seeds
        }))
    }

    /// The entries of a bulk op, in order, each by its own rules. A refused entry is skipped
    /// (as the op it would be on its own), unless the op was made here ([`Writer::strict`]):
    /// then it is the error of the whole op, and the caller abandons the transaction.
    fn mutate_bulk(&mut self, entries: &[OpKind], meta: &OpMeta) -> Result<Seeds, StoreError> {
        let mut seeds: Seeds = None;
        for entry in entries {
            match self.mutate_one(entry, meta, None) {
                Ok(Some(more)) => seeds.get_or_insert_with(BTreeSet::new).extend(more),
                Ok(None) => {}
                Err(error) if error.is_refusal() && !self.strict => {
                    tracing::debug!(%error, op = %meta.id, "a bulk op entry is refused");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(seeds)
    }

    /// Validates and applies one change (not a bulk op) under `meta`. `birth` is the id of the
    /// op when it is this change alone (not an entry of a bulk op): a create records it as the
    /// new issue's birth, a claim as the claim holding the issue.
    fn mutate_one(
        &mut self,
        kind: &OpKind,
        meta: &OpMeta,
        birth: Option<u128>,
    ) -> Result<Seeds, StoreError> {
        // Only these read no reverse edges while every issue is new (see `Writer::all_new`).
        if !matches!(kind, OpKind::Create { .. } | OpKind::DepAdd { .. } | OpKind::Comment { .. }) {
            self.release_held_edges()?;
        }
        let at = meta.at;
        let replica = meta.replica.as_str();
        Ok(match kind {
            OpKind::Bulk { .. } => {
                return Err(StoreError::NestedBulk);
            }
            OpKind::Create { issue, deps } => self.create(issue, deps, replica, birth)?,
            OpKind::Put { issue } => self.put(issue, replica)?,
            OpKind::Update { id, patch } => self.update(id, patch, at)?,
            OpKind::Claim { id } => self.claim(id, &meta.actor, at, birth)?,
            OpKind::Release { id, claim } => self.release(id, *claim, at)?,
            OpKind::Close { id, reason, session } => self.close(id, reason, session, at)?,
            OpKind::Reopen { id, .. } => self.reopen(id, at)?,
            OpKind::Delete { id } => self.delete(id)?,
            OpKind::DepAdd { dep } => self.dep_add(dep)?,
            OpKind::DepRemove { issue_id, depends_on_id } => {
                self.dep_remove(issue_id, depends_on_id)?
            }
            OpKind::Comment { comment } => self.comment(comment)?,
            OpKind::LabelAdd { id, label } => self.relabel(id, at, |i| i.add_label(label))?,
            OpKind::LabelRemove { id, label } => self.relabel(id, at, |i| i.remove_label(label))?,
            OpKind::Mail { message } => self.mail(message, meta)?,
            OpKind::MailAck { message } => self.mail_ack(message, &meta.actor, at)?,
            OpKind::Reserve { reservation } => self.reserve(reservation, meta)?,
            OpKind::ReleaseFiles { task, ids } => self.release_files(task, ids)?,
        })
    }

    pub(super) fn journal(&mut self, op: Op) -> Result<(), StoreError> {
        let row = encode_op(&op);
        self.journal_row(op, &row)
    }

    /// Journals `op`, whose journal row ([`encode_op`]) is `row`.
    fn journal_row(&mut self, op: Op, row: &[u8]) -> Result<(), StoreError> {
        self.journal_entry(&op, row)?;
        self.applied.push(op);
        Ok(())
    }

    /// Writes `op`'s journal row and its op-id index entry (not yet counted as applied).
    fn journal_entry(&mut self, op: &Op, row: &[u8]) -> Result<(), StoreError> {
        self.journal_seq += 1;
        self.journal.insert(self.journal_seq, row)?;
        self.op_ids.insert(op.meta.id.0, self.journal_seq)?;
        Ok(())
    }

    /// Applies `entries`, made here, as bulk ops ([`OpKind::Bulk`]) of at most
    /// [`BULK_ENTRIES`] entries each: the records of an import. The ops' journal rows are
    /// encoded on another core while this one writes the tables, a few rows ahead of it (so
    /// the rows of a large import are never all in memory at once). An entry the rules refuse
    /// is an error, after which the transaction is abandoned: it no longer commits. Returns
    /// how many ops were journaled.
    pub fn apply_bulk(&mut self, entries: Vec<OpKind>) -> Result<usize, StoreError> {
        let mut ops = Vec::with_capacity(entries.len().div_ceil(BULK_ENTRIES));
        let mut entries = entries.into_iter().peekable();
        while entries.peek().is_some() {
            let mut chunk: Vec<OpKind> = entries.by_ref().take(BULK_ENTRIES).collect();
            for entry in &mut chunk {
                self.note_prior_status(entry)?;
            }
            ops.push(self.stamp(OpKind::Bulk { ops: chunk })?);
        }
        let with_facts = self.created_facts.is_some();
        let mut lent_deps =
            if self.edges_can_go_ahead(&ops) { self.tables.deps.take() } else { None };
        let abandon = std::sync::atomic::AtomicBool::new(false);
        let (changed, edges_written) = std::thread::scope(|scope| {
            let (rows, received) = std::sync::mpsc::sync_channel(ROWS_AHEAD);
            let made = &ops;
            let with_edges = lent_deps.is_none();
            let carried = guard::carry();
            scope.spawn(move || carried.run(|| encode_ahead(made, with_facts, with_edges, &rows)));
            let (abandon, deps) = (&abandon, lent_deps.as_mut());
            let edges = deps.map(|deps| {
                scope.spawn(move || carried.run(|| insert_created_edges(deps, made, abandon)))
            });
            let changed = self.mutate_made_here(made, &received);
            abandon.store(changed.is_err(), std::sync::atomic::Ordering::Relaxed);
            // The encoder may be waiting to hand over a row the writer, failed, will not take.
            drop(received);
            let edges_written = edges.map_or(Ok(()), |edges| {
                edges.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            });
            (changed, edges_written)
        });
        if let Some(deps) = lent_deps {
            self.tables.deps = Some(deps);
        }
        // Some of the ops (and, gone ahead, edges of ops never reached) are written.
        self.abandoned_bulk |= changed.is_err() || edges_written.is_err();
        edges_written?;
        let changed = changed?;
        let mut journaled = 0;
        for (op, changed) in ops.into_iter().zip(changed) {
            if changed {
                // No rewind goes past an import (`super::undo`).
                self.write_entry(&op.order_key(), op.meta.id, true)?;
                self.applied.push(op);
                journaled += 1;
            }
        }
        Ok(journaled)
    }

    /// Whether a thread of its own may insert the edges of `ops` while the writer does the
    /// rest: on a store that started empty, ops of creates and comments only read no edge (a
    /// create's checks look at the ids written, not at the edge table; cycles were refused
    /// over the whole batch), so the edge table can be written on another core, in the order
    /// the writer would write it.
    pub(super) fn edges_can_go_ahead(&self, ops: &[Op]) -> bool {
        let creates_and_comments = |op: &Op| match &op.kind {
            OpKind::Bulk { ops } => ops
                .iter()
                .all(|entry| matches!(entry, OpKind::Create { .. } | OpKind::Comment { .. })),
            _ => false,
        };
        self.all_new() && self.bulk_acyclic && ops.iter().all(creates_and_comments)
    }

    /// Applies ops made here (stamped, not yet journaled), journaling each that changed
    /// anything with its journal row from `encoded` (one per op, in order, with the rows of
    /// its new issues), and says which did.
    fn mutate_made_here(
        &mut self,
        ops: &[Op],
        encoded: &std::sync::mpsc::Receiver<Encoded>,
    ) -> Result<Vec<bool>, StoreError> {
        self.strict = true;
        let all_new = self.all_new();
        let mut changed = Vec::with_capacity(ops.len());
        for op in ops {
            self.note_order(op);
            let Encoded { journal: row, rows } =
                encoded.recv().expect("the encoder sends one row per op");
            self.rows_ahead = rows;
            let seeds = self.mutate(op);
            self.rows_ahead = RowsAhead::default();
            let seeds = seeds?;
            changed.push(seeds.is_some());
            match (seeds, &mut self.deferred_seeds) {
                // Every issue is refreshed at the end (see `Writer::finish`).
                (Some(_), Some(_)) if all_new => {}
                (Some(seeds), Some(pending)) => pending.extend(seeds),
                (Some(seeds), None) => self.refresh(seeds)?,
                (None, _) => continue,
            }
            self.journal_entry(op, &row)?;
        }
        Ok(changed)
    }

    /// Picks the id of a new issue: `<parent>.<n>` under a parent, else a fresh hash id.
    pub fn new_issue_id(
        &mut self,
        title: &str,
        description: &str,
        parent: Option<&str>,
    ) -> Result<String, StoreError> {
        if let Some(parent) = parent {
            return self.next_child_id(parent);
        }
        let seed = id::IdSeed {
            prefix: &self.prefix,
            title,
            description,
            actor: &self.actor,
            created_at_nanos: self.clock.now().as_nanosecond(),
        };
        let existing = self.counter(meta::TOP_LEVEL_COUNT)?;
        let issues = &self.tables;
        id::generate(&seed, existing, |candidate| issues.contains(candidate).unwrap_or(true))
            .ok_or(StoreError::IdSpaceExhausted)
    }

    /// The next child id of `parent`: `<parent>.<n>` on the parent's home replica,
    /// `<parent>.<n>_<tag>` elsewhere (module docs, "Child ids").
    fn next_child_id(&self, parent: &str) -> Result<String, StoreError> {
        if !self.has_issue(parent)? {
            return Err(StoreError::NotFound(parent.to_string()));
        }
        let candidate_depth = id::child_depth(parent) + 1;
        let counter_key = format!("{}{parent}", meta::CHILD_COUNTER);
        let mut highest = self.counter(&counter_key)?;
        for child in self.tables.dependents_by(parent, dep_type::PARENT_CHILD)? {
            highest = highest.max(id::child_number(parent, &child).unwrap_or(0));
        }
        let number = highest.saturating_add(1);
        let home = self.tables.meta_bytes(&format!("{}{parent}", meta::ORIGIN))?;
        let child = match home {
            Some(home) if home != self.replica.as_bytes() => {
                format!("{parent}.{number}_{}", replica_tag(&self.replica))
            }
            _ => format!("{parent}.{number}"),
        };
        if candidate_depth > id::MAX_CHILD_DEPTH {
            return Err(StoreError::TooDeep(child));
        }
        Ok(child)
    }

    /// A new issue. Made here, its id must be free and its edges' targets must exist. Made
    /// elsewhere (a create in the total order of several machines), an id another issue
    /// already has gets another id (module docs, "Ids made apart"), and an edge whose target
    /// is gone is left out and reported ([`Orphaned`]): the issue is kept.
    fn create(
        &mut self,
        issue: &Issue,
        deps: &[Dependency],
        replica: &str,
        birth: Option<u128>,
    ) -> Result<Seeds, StoreError> {
        id::check_id(&issue.id)?;
        let given;
        let issue = match self.id_for_create(&issue.id, replica, birth)? {
            Some(other) => {
                given = Issue { id: other, ..issue.clone() };
                &given
            }
            None => issue,
        };
        validate_fields(issue)?;
        let deps = self.edges_kept(issue, deps, replica)?;
        for dep in deps.iter() {
            self.check_new_edge(dep)?;
        }
        let sorted;
        let (issue, ahead) = if labels_in_stored_order(issue) {
            (issue, self.rows_ahead.take_issue(issue))
        } else {
            // Stored in another form than the op holds it: no row was made ahead for it.
            let mut copy = issue.clone();
            copy.labels.sort();
            copy.labels.dedup();
            sorted = copy;
            (&sorted, None)
        };
        let (issue_row, edge_rows, facts) = match ahead {
            Some(rows) => (rows.issue, rows.edges, rows.facts),
            None => (issue_row(issue), Vec::new(), None),
        };
        self.put_issue_row(None, issue, &issue_row)?;
        self.keep_created_facts(facts);
        self.insert_new_edges(&deps, &edge_rows)?;
        self.count_new_id(&issue.id, replica)?;
        if let Some(birth) = birth {
            let before = self.births.insert(issue.id.as_str(), birth)?.map(|v| v.value());
            self.record(|| Change::Birth { id: issue.id.clone(), old: before });
        }
        if self.all_new() {
            return Ok(Some(BTreeSet::new()));
        }
        let parents = deps.iter().filter(|d| d.kind == dep_type::PARENT_CHILD);
        Ok(Some(
            self.status_seeds_with_parents(&issue.id, parents.map(|d| d.depends_on_id.as_str()))?,
        ))
    }

    /// The edges of a new issue `issue`: `deps`, with their source the issue's id (which may be
    /// another than the op asked for), less those whose target is gone, each reported: a target
    /// its op's author knew that was deleted since ([`Writer::left_out`]), or, for an op made
    /// elsewhere ([`Writer::strict`]), any target that does not exist here.
    fn edges_kept<'d>(
        &mut self,
        issue: &Issue,
        deps: &'d [Dependency],
        replica: &str,
    ) -> Result<std::borrow::Cow<'d, [Dependency]>, StoreError> {
        let left_out = std::mem::take(&mut self.left_out);
        let mut gone = Vec::new();
        for dep in deps {
            let target = dep.depends_on_id.as_str();
            gone.push(
                left_out.iter().any(|t| t == target)
                    || (!self.strict
                        && !self.has_issue(target)?
                        && !crate::model::is_foreign_ref(target, &self.prefix)),
            );
        }
        if !gone.contains(&true) {
            return Ok(edges_of(&issue.id, deps));
        }
        let mut kept = Vec::with_capacity(deps.len());
        for (dep, gone) in deps.iter().zip(gone) {
            if gone {
                let key = (issue.id.as_str(), dep.depends_on_id.as_str());
                let mut orphans = self.txn.open_table(super::tables::ORPHANS)?;
                let before = orphans.insert(key, dep.kind.as_str())?.map(|v| v.value().to_string());
                drop(orphans);
                self.record(|| Change::Orphan {
                    issue: issue.id.clone(),
                    target: dep.depends_on_id.clone(),
                    old: before,
                });
                self.orphans.push(Orphaned {
                    issue: issue.id.clone(),
                    target: dep.depends_on_id.clone(),
                    kind: dep.kind.clone(),
                    replica: replica.to_string(),
                });
            } else {
                kept.push(Dependency { issue_id: issue.id.clone(), ..dep.clone() });
            }
        }
        Ok(std::borrow::Cow::Owned(kept))
    }

    /// Book-keeping of a new issue made on `replica`: its home (if not this replica), and the
    /// child counter of its parent or the count of top-level ids.
    fn count_new_id(&mut self, new_id: &str, replica: &str) -> Result<(), StoreError> {
        if replica != self.replica {
            let key = format!("{}{new_id}", meta::ORIGIN);
            let before = self
                .tables
                .meta
                .insert(key.as_str(), replica.as_bytes())?
                .map(|v| v.value().to_vec());
            self.record(|| Change::Meta { key, old: before });
        }
        let parent_and_number = new_id
            .rsplit_once('.')
            .and_then(|(parent, n)| Some((parent.to_string(), id::child_segment_number(n)?)));
        match parent_and_number {
            Some((parent, number)) => {
                let key = format!("{}{parent}", meta::CHILD_COUNTER);
                let highest = self.counter(&key)?.max(number);
                self.put_op_counter(&key, highest)
            }
            None => {
                let count = self.counter(meta::TOP_LEVEL_COUNT)? + 1;
                self.put_op_counter(meta::TOP_LEVEL_COUNT, count)
            }
        }
    }

    /// Writes an issue as given. A new row's id must satisfy the id grammar; a stored row
    /// (which may predate the grammar) can still be rewritten under its own id.
    fn put(&mut self, issue: &Issue, replica: &str) -> Result<Seeds, StoreError> {
        validate_fields(issue)?;
        let old = self.tables.issue(&issue.id)?;
        if old.is_none() {
            id::check_id(&issue.id)?;
        }
        let mut issue = issue.clone();
        issue.labels.sort();
        issue.labels.dedup();
        self.put_issue(old.as_ref(), &issue)?;
        let mut seeds = self.status_seeds(&issue.id)?;
        match old {
            None => self.count_new_id(&issue.id, replica)?,
            Some(old) if old.defer_until != issue.defer_until => {
                seeds.extend(self.tables.dependents_by(&issue.id, dep_type::PARENT_CHILD)?);
            }
            Some(_) => {}
        }
        Ok(Some(seeds))
    }

    fn existing(&self, id: &str) -> Result<Issue, StoreError> {
        self.tables.issue(id)?.ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    fn update(&mut self, id: &str, patch: &IssuePatch, at: Timestamp) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        let kept;
        let patch = if close_wins(&old, patch) {
            self.closes_kept.push(id.to_string());
            kept = IssuePatch { status: None, prior_status: None, ..patch.clone() };
            if kept.is_empty() {
                return Ok(None);
            }
            &kept
        } else {
            patch
        };
        let mut issue = old.clone();
        patch_issue(&mut issue, patch, at);
        validate_fields(&issue)?;
        self.put_issue(Some(&old), &issue)?;
        let mut seeds = self.status_change_seeds(&old, &issue)?;
        if issue.defer_until != old.defer_until {
            seeds.extend(self.tables.dependents_by(id, dep_type::PARENT_CHILD)?);
        }
        Ok(Some(seeds))
    }

    /// A claim: the compare-and-set. Made as an op of its own (`claim_op`), it is recorded as
    /// the claim holding the issue ([`super::tables::HOLDS`]).
    fn claim(
        &mut self,
        id: &str,
        actor: &str,
        at: Timestamp,
        claim_op: Option<u128>,
    ) -> Result<Seeds, StoreError> {
        self.claimed = None;
        let old = self.existing(id)?;
        let mine = old.assignee.is_empty() || old.assignee == actor;
        match old.status {
            Status::Open if mine => {}
            Status::InProgress if old.assignee == actor => return Ok(None),
            _ if !old.assignee.is_empty() && old.assignee != actor => {
                return Err(StoreError::AlreadyClaimed {
                    id: id.to_string(),
                    by: old.assignee.clone(),
                });
            }
            _ => {
                return Err(StoreError::NotClaimable {
                    id: id.to_string(),
                    status: old.status.to_string(),
                });
            }
        }
        let mut issue = old.clone();
        issue.status = Status::InProgress;
        actor.clone_into(&mut issue.assignee);
        issue.started_at.get_or_insert(at);
        issue.updated_at = at;
        self.put_issue(Some(&old), &issue)?;
        if let Some(claim_op) = claim_op {
            let before = self.holds.insert(id, claim_op)?.map(|v| v.value());
            self.record(|| Change::Hold { id: id.to_string(), old: before });
        }
        let seeds = self.status_change_seeds(&old, &issue)?;
        self.claimed = Some(issue);
        Ok(Some(seeds))
    }

    /// A release. One that names the claim it ends changes nothing unless that claim still
    /// holds the issue: it was made before its author saw whatever ended that hold (another
    /// release, a close, an earlier claim of another machine that the total order put first).
    fn release(
        &mut self,
        id: &str,
        ends: Option<ulid::Ulid>,
        at: Timestamp,
    ) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        if let Some(claim) = ends
            && self.hold_of(id)? != Some(claim)
        {
            return Ok(None);
        }
        if !matches!(old.status, Status::InProgress | Status::Open) {
            return Err(StoreError::NotReleasable {
                id: id.to_string(),
                status: old.status.to_string(),
            });
        }
        if old.status == Status::Open && old.assignee.is_empty() {
            return Ok(None);
        }
        let mut issue = old.clone();
        issue.status = Status::Open;
        issue.assignee.clear();
        issue.fleet.lease = None;
        issue.updated_at = at;
        self.put_issue(Some(&old), &issue)?;
        Ok(Some(self.status_change_seeds(&old, &issue)?))
    }

    fn close(
        &mut self,
        id: &str,
        reason: &str,
        session: &str,
        at: Timestamp,
    ) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        if old.status == Status::Closed {
            return Ok(None);
        }
        let mut issue = old.clone();
        issue.status = Status::Closed;
        issue.closed_at = Some(at);
        issue.close_reason =
            if reason.is_empty() { "Closed".to_string() } else { reason.to_string() };
        session.clone_into(&mut issue.closed_by_session);
        issue.fleet.lease = None;
        issue.updated_at = at;
        self.put_issue(Some(&old), &issue)?;
        Ok(Some(self.status_seeds(id)?))
    }

    fn reopen(&mut self, id: &str, at: Timestamp) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        if old.status != Status::Closed {
            return Ok(None);
        }
        let mut issue = old.clone();
        set_status(&mut issue, Status::Open, at);
        issue.updated_at = at;
        self.put_issue(Some(&old), &issue)?;
        Ok(Some(self.status_seeds(id)?))
    }

    fn delete(&mut self, id: &str) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        let mut seeds = self.status_seeds(id)?;
        for dep in self.tables.deps_of(id)? {
            self.remove_edge(id, &dep.depends_on_id)?;
        }
        for (dependent, _) in self.tables.dependents_of(id)? {
            self.remove_edge(&dependent, id)?;
            seeds.insert(dependent);
        }
        let comment_keys: Vec<u64> = {
            use redb::ReadableTable;
            let mut keys = Vec::new();
            for entry in self.tables.comments.range((id, 0)..=(id, u64::MAX))? {
                keys.push(entry?.0.value().1);
            }
            keys
        };
        for seq in comment_keys {
            let before = self.tables.comments.remove((id, seq))?.map(|v| v.value().to_vec());
            self.record(|| Change::Comment { issue: id.to_string(), seq, old: before });
        }
        self.drop_issue_row(&old)?;
        let held = self.holds.remove(id)?.map(|v| v.value());
        self.record(|| Change::Hold { id: id.to_string(), old: held });
        let birth = self.births.remove(id)?.map(|v| v.value());
        self.record(|| Change::Birth { id: id.to_string(), old: birth });
        let origin = format!("{}{id}", meta::ORIGIN);
        let before = self.tables.meta.remove(origin.as_str())?.map(|v| v.value().to_vec());
        self.record(|| Change::Meta { key: origin, old: before });
        self.mark_deleted(id, true)?;
        Ok(Some(seeds))
    }

    /// Records that issue `id` was deleted (`deleted`), or that it exists again: a full id
    /// names a deleted issue by that name (`meta::DELETED`) until an issue of that id is made.
    fn mark_deleted(&mut self, id: &str, deleted: bool) -> Result<(), StoreError> {
        let key = format!("{}{id}", meta::DELETED);
        if self.tables.meta.get(key.as_str())?.is_some() == deleted {
            return Ok(());
        }
        let before = if deleted {
            self.tables.meta.insert(key.as_str(), [].as_slice())?
        } else {
            self.tables.meta.remove(key.as_str())?
        };
        let before = before.map(|v| v.value().to_vec());
        self.record(|| Change::Meta { key, old: before });
        Ok(())
    }

    /// Removes the row of `old` with its labels and its entries in the order and ready
    /// indexes (a delete, or a rewind taking back a create). Edges and comments are the
    /// caller's.
    pub(super) fn drop_issue_row(&mut self, old: &Issue) -> Result<(), StoreError> {
        let id = old.id.as_str();
        for label in &old.labels {
            self.tables.labels.remove((label.as_str(), id))?;
        }
        self.index_order(Some(old), None)?;
        self.remove_ready_entry(ready_key(old))?;
        self.keep_created_facts(None);
        let before = self.tables.issues.remove(id)?.map(|v| v.value().to_vec());
        self.record(|| Change::Issue { id: id.to_string(), old: before });
        self.touch(id);
        if let Some(bulk) = &mut self.bulk_ids {
            bulk.ids.remove(id);
        }
        Ok(())
    }

    fn dep_add(&mut self, dep: &Dependency) -> Result<Seeds, StoreError> {
        if !self.has_issue(&dep.issue_id)? {
            return Err(StoreError::NotFound(dep.issue_id.clone()));
        }
        match self.check_edge(dep)? {
            EdgePlan::Replace { unchanged: true } => return Ok(None),
            EdgePlan::Replace { unchanged: false } | EdgePlan::Insert => {}
        }
        self.insert_edge(dep)?;
        Ok(Some(self.edge_seeds(dep)?))
    }

    fn dep_remove(&mut self, issue_id: &str, target: &str) -> Result<Seeds, StoreError> {
        let Some(dep) = self.tables.dep(issue_id, target)? else {
            return Err(StoreError::NoSuchEdge {
                issue: issue_id.to_string(),
                target: target.to_string(),
            });
        };
        self.remove_edge(issue_id, target)?;
        Ok(Some(self.edge_seeds(&dep)?))
    }

    /// Readiness seeds of adding or removing `dep`: its source, and for a parent-child edge
    /// whatever waits for the parent's children.
    pub(super) fn edge_seeds(&self, dep: &Dependency) -> Result<BTreeSet<String>, StoreError> {
        let mut seeds = BTreeSet::from([dep.issue_id.clone()]);
        if dep.kind == dep_type::PARENT_CHILD && !self.all_new() {
            seeds.extend(self.tables.dependents_by(&dep.depends_on_id, dep_type::WAITS_FOR)?);
        }
        Ok(seeds)
    }

    fn comment(&mut self, comment: &Comment) -> Result<Seeds, StoreError> {
        if !self.has_issue(&comment.issue_id)? {
            return Err(StoreError::NotFound(comment.issue_id.clone()));
        }
        let seq = self.counter(meta::COMMENT_SEQ)? + 1;
        self.put_op_counter(meta::COMMENT_SEQ, seq)?;
        let row = self.rows_ahead.take_comment(comment).unwrap_or_else(|| comment_row(comment));
        let key = (comment.issue_id.as_str(), seq);
        let before = self.tables.comments.insert(key, row.as_slice())?.map(|v| v.value().to_vec());
        self.record(|| Change::Comment { issue: comment.issue_id.clone(), seq, old: before });
        self.touch(&comment.issue_id);
        Ok(Some(BTreeSet::new()))
    }

    fn relabel(
        &mut self,
        id: &str,
        at: Timestamp,
        change: impl FnOnce(&mut Issue) -> bool,
    ) -> Result<Seeds, StoreError> {
        let old = self.existing(id)?;
        let mut issue = old.clone();
        if !change(&mut issue) {
            return Ok(None);
        }
        issue.updated_at = at;
        self.put_issue(Some(&old), &issue)?;
        Ok(Some(BTreeSet::new()))
    }

    /// Validates a new edge against the store's invariants (request rules such as beads' epic
    /// rule live in the tracker) and says whether it is new or replaces the same edge.
    fn check_edge(&self, dep: &Dependency) -> Result<EdgePlan, StoreError> {
        self.check_ends(dep)?;
        let (from, to) = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
        if let Some(existing) = self.tables.dep(from, to)? {
            if existing.kind == dep.kind {
                return Ok(EdgePlan::Replace { unchanged: existing.metadata == dep.metadata });
            }
            if existing.kind == dep_type::PARENT_CHILD && dep_type::blocks_directly(&dep.kind) {
                return Err(StoreError::ChildOfParent { child: from.into(), parent: to.into() });
            }
            return Err(StoreError::EdgeExists {
                from: from.into(),
                to: to.into(),
                existing: existing.kind,
                wanted: dep.kind.clone(),
            });
        }
        self.check_acyclic(dep)?;
        Ok(EdgePlan::Insert)
    }

    /// What an edge of an issue that is being created needs: [`Writer::check_ends`] and no
    /// cycle. A new issue has no edges to replace. Edges can already point at it (an id that
    /// was another project's reference until it was created here), so a cycle is possible.
    fn check_new_edge(&self, dep: &Dependency) -> Result<(), StoreError> {
        self.check_ends(dep)?;
        self.check_acyclic(dep)
    }

    /// A known edge type, another issue as the target, and a target that exists (or is
    /// another project's).
    fn check_ends(&self, dep: &Dependency) -> Result<(), StoreError> {
        validate_dep_type(&dep.kind)?;
        let (from, to) = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
        if from == to {
            return Err(StoreError::SelfDependency(from.to_string()));
        }
        if !self.has_issue(to)? && !crate::model::is_foreign_ref(to, &self.prefix) {
            return Err(StoreError::NotFound(to.to_string()));
        }
        Ok(())
    }

    /// Refuses an edge of a kind kept acyclic that would close a cycle (unless a bulk caller
    /// has checked the whole batch itself).
    fn check_acyclic(&self, dep: &Dependency) -> Result<(), StoreError> {
        let (from, to) = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
        if dep_type::is_cycle_checked(&dep.kind)
            && !self.bulk_acyclic
            && super::graph::reaches(&self.tables, to, from, &dep.kind)?
        {
            return Err(StoreError::Cycle {
                from: from.into(),
                to: to.into(),
                kind: dep.kind.clone(),
            });
        }
        Ok(())
    }

    /// Inserts a new issue's edges `deps`, each with its row made ahead where `rows` has one;
    /// while a thread of their own writes the edge table ([`Writer::apply_bulk`]), only what
    /// goes with each.
    fn insert_new_edges(
        &mut self,
        deps: &[Dependency],
        rows: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        let written_ahead = self.tables.deps.is_none();
        for (at, dep) in deps.iter().enumerate() {
            match rows.get(at) {
                _ if written_ahead => self.note_inserted_edge(dep)?,
                Some(row) => self.insert_edge_row(dep, row)?,
                None => self.insert_edge(dep)?,
            }
        }
        Ok(())
    }

    fn insert_edge(&mut self, dep: &Dependency) -> Result<(), StoreError> {
        self.insert_edge_row(dep, &edge_row(dep))
    }

    /// Inserts `dep`, whose edge row ([`edge_row`]) is `row`.
    pub(super) fn insert_edge_row(
        &mut self,
        dep: &Dependency,
        row: &[u8],
    ) -> Result<(), StoreError> {
        let key = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
        let before = self.tables.deps_mut().insert(key, row)?.map(|v| v.value().to_vec());
        self.record(|| Change::Edge {
            from: dep.issue_id.clone(),
            to: dep.depends_on_id.clone(),
            old: before,
        });
        self.note_inserted_edge(dep)
    }

    /// What goes with an edge row inserted: its reverse edge, its note for the refresh, the
    /// counts of its ends.
    fn note_inserted_edge(&mut self, dep: &Dependency) -> Result<(), StoreError> {
        if let Some(created) = &mut self.created_edges {
            created.note(dep);
        }
        match &mut self.held_edges {
            Some(held) => {
                held.insert((dep.depends_on_id.clone(), dep.issue_id.clone()), dep.kind.clone())
            }
            None => {
                self.tables.rdeps.insert(
                    (dep.depends_on_id.as_str(), dep.issue_id.as_str()),
                    dep.kind.as_str(),
                )?;
            }
        }
        self.touch_ends(&dep.issue_id, &dep.depends_on_id);
        Ok(())
    }

    pub(super) fn remove_edge(&mut self, from: &str, to: &str) -> Result<(), StoreError> {
        let before = self.tables.deps_mut().remove((from, to))?.map(|v| v.value().to_vec());
        self.record(|| Change::Edge { from: from.to_string(), to: to.to_string(), old: before });
        self.created_edges = None;
        match &mut self.held_edges {
            Some(held) => held.remove((to.to_string(), from.to_string())),
            None => {
                self.tables.rdeps.remove((to, from))?;
            }
        }
        self.touch_ends(from, to);
        Ok(())
    }

    /// Notes that the counts of both ends of an edge changed.
    fn touch_ends(&mut self, from: &str, to: &str) {
        self.touch(from);
        self.touch(to);
    }

    /// Notes that `id`'s ready entry may be stale (its row or counts changed). Not needed while
    /// every issue is new: the refresh at the end takes them all.
    fn touch(&mut self, id: &str) {
        if !self.all_new() {
            self.touched.insert(id.to_string());
        }
    }

    /// Writes an issue row and keeps the label and order indexes in step with it.
    fn put_issue(&mut self, old: Option<&Issue>, issue: &Issue) -> Result<(), StoreError> {
        self.keep_created_facts(None);
        self.put_issue_row(old, issue, &issue_row(issue))
    }

    /// Keeps the facts of the issue just written by a create (`None`: an issue row written
    /// without them, after which the kept facts no longer describe the issue table).
    fn keep_created_facts(&mut self, facts: Option<(String, super::readiness::Facts)>) {
        match (&mut self.created_facts, facts) {
            (Some(kept), Some(facts)) => kept.push(facts),
            (Some(_), None) => self.created_facts = None,
            (None, _) => {}
        }
    }

    /// Writes `issue`, whose issue row ([`issue_row`]) is `row`, in place of `old`.
    pub(super) fn put_issue_row(
        &mut self,
        old: Option<&Issue>,
        issue: &Issue,
        row: &[u8],
    ) -> Result<(), StoreError> {
        self.index_order(old, Some(issue))?;
        // A ready entry lives under its row's key: a new key leaves the old one behind.
        if let Some(old) = old {
            let old_key = ready_key(old);
            if old_key != ready_key(issue) {
                self.remove_ready_entry(old_key)?;
            }
        }
        let old_labels = old.map(|o| o.labels.as_slice()).unwrap_or_default();
        for label in old_labels.iter().filter(|l| !issue.labels.contains(l)) {
            self.tables.labels.remove((label.as_str(), issue.id.as_str()))?;
        }
        for label in issue.labels.iter().filter(|l| !old_labels.contains(l)) {
            self.tables.labels.insert((label.as_str(), issue.id.as_str()), ())?;
        }
        let before = self.tables.issues.insert(issue.id.as_str(), row)?.map(|v| v.value().to_vec());
        self.record(|| Change::Issue { id: issue.id.clone(), old: before });
        if old.is_none() && !self.undoing {
            self.mark_deleted(&issue.id, false)?;
        }
        if let Some(old) = old
            && old.status == Status::InProgress
            && (issue.status != Status::InProgress || issue.assignee != old.assignee)
            && !self.undoing
        {
            // Whatever took the issue out of its holder's hands ended the claim's hold.
            let held = self.holds.remove(issue.id.as_str())?.map(|v| v.value());
            if held.is_some() {
                self.record(|| Change::Hold { id: issue.id.clone(), old: held });
            }
        }
        self.touch(&issue.id);
        if let Some(bulk) = &mut self.bulk_ids
            && old.is_none()
        {
            bulk.ids.insert(issue.id.clone());
        }
        Ok(())
    }
}

/// The edge table as a write transaction holds it.
type EdgeTable<'t> = redb::Table<'t, (&'static str, &'static str), &'static [u8]>;

/// The encoder thread of [`Writer::apply_bulk`]: each op's journal row and the rows of its new
/// issues and comments (with their edges' rows when `with_edges`), sent in op order. Stops
/// early when the writer stops taking rows.
fn encode_ahead(
    ops: &[Op],
    with_facts: bool,
    with_edges: bool,
    rows: &std::sync::mpsc::SyncSender<Encoded>,
) {
    for op in ops {
        let encoded = Encoded {
            journal: encode_op(op),
            rows: RowsAhead::of(&op.kind, with_facts, with_edges),
        };
        if rows.send(encoded).is_err() {
            return;
        }
    }
}

/// The edge thread of [`Writer::apply_bulk`], when the edge table is lent to it (see
/// [`Writer::edges_can_go_ahead`]): inserts the edges of the creates of `ops` into `deps`, in
/// op and entry order, as the writer would. Stops early once the writer has failed
/// (`abandon`), since the transaction is then abandoned.
fn insert_created_edges(
    deps: &mut EdgeTable<'_>,
    ops: &[Op],
    abandon: &std::sync::atomic::AtomicBool,
) -> Result<(), StoreError> {
    for op in ops {
        if abandon.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let OpKind::Bulk { ops: entries } = &op.kind else { continue };
        for entry in entries {
            if let OpKind::Create { issue, deps: edges } = entry {
                for dep in edges_of(&issue.id, edges).iter() {
                    let key = (dep.issue_id.as_str(), dep.depends_on_id.as_str());
                    deps.insert(key, edge_row(dep).as_slice())?;
                }
            }
        }
    }
    Ok(())
}

/// An op's journal (or sidelined) row: its JSON record (`schema/op.schema.json`), which
/// `ops.jsonl` in git carries line for line, deflated when it is large ([`journal_row`]) —
/// whichever path journals it: an import made here or the same bulk op arriving by sync.
///
/// [`journal_row`]: super::journal_row
pub(super) fn encode_op(op: &Op) -> Vec<u8> {
    super::journal_row::pack(serde_json::to_vec(op).expect("an op serialises"))
}

/// The tag a replica puts on child ids it makes away from the parent's home: the end of its
/// replica id (a ULID's random part), kept to id characters.
pub(super) fn replica_tag(replica: &str) -> String {
    let chars: Vec<char> = replica
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let tag: String = chars[chars.len().saturating_sub(REPLICA_TAG_LEN)..].iter().collect();
    if tag.is_empty() { "r".to_string() } else { tag }
}

/// Close wins over a concurrent status change: a change of status to anything but closed,
/// made while the issue was not closed where it was made ([`IssuePatch::prior_status`]),
/// finds it closed here — so a close it had not seen came first in the total order. The
/// status change is dropped (the rest of the patch applies); a change made after seeing the
/// close (prior status closed), or by an older fleet (no prior status), applies as given.
fn close_wins(old: &Issue, patch: &IssuePatch) -> bool {
    old.status == Status::Closed
        && patch.status.as_ref().is_some_and(|s| *s != Status::Closed)
        && patch.prior_status.as_ref().is_some_and(|s| *s != Status::Closed)
}

fn validate_fields(issue: &Issue) -> Result<(), ModelError> {
    crate::model::validate_title(&issue.title)?;
    if issue.priority > 4 {
        return Err(ModelError::InvalidPriority(issue.priority.to_string()));
    }
    Ok(())
}

/// Applies the field edits of a patch, with the status side effects beads has: closed_at set
/// iff closed, started_at on the first move to in_progress, and clearing a deferral reopens a
/// deferred issue.
fn patch_issue(issue: &mut Issue, patch: &IssuePatch, at: Timestamp) {
    let set = |field: &mut String, value: &Option<String>| {
        if let Some(value) = value {
            value.clone_into(field);
        }
    };
    set(&mut issue.title, &patch.title);
    set(&mut issue.description, &patch.description);
    set(&mut issue.design, &patch.design);
    set(&mut issue.acceptance_criteria, &patch.acceptance_criteria);
    set(&mut issue.notes, &patch.notes);
    set(&mut issue.issue_type, &patch.issue_type);
    set(&mut issue.assignee, &patch.assignee);
    set(&mut issue.owner, &patch.owner);
    set(&mut issue.external_ref, &patch.external_ref);
    if let Some(extra) = &patch.append_notes {
        if !issue.notes.is_empty() {
            issue.notes.push('\n');
        }
        issue.notes.push_str(extra);
    }
    if let Some(priority) = patch.priority {
        issue.priority = priority;
    }
    if let Some(minutes) = patch.estimated_minutes {
        issue.estimated_minutes = minutes;
    }
    if let Some(due) = patch.due_at {
        issue.due_at = due;
    }
    if let Some(pinned) = patch.pinned {
        issue.pinned = pinned;
    }
    set(&mut issue.spec_id, &patch.spec_id);
    if let Some(ephemeral) = patch.ephemeral {
        issue.ephemeral = ephemeral;
    }
    if let Some(fleet) = &patch.fleet {
        issue.fleet = fleet.clone();
    }
    for label in &patch.add_labels {
        issue.add_label(label);
    }
    for label in &patch.remove_labels {
        issue.remove_label(label);
    }
    if let Some(defer) = patch.defer_until {
        issue.defer_until = defer;
        if defer.is_none() && issue.status == Status::Deferred && patch.status.is_none() {
            issue.status = Status::Open;
        }
    }
    if let Some(status) = &patch.status {
        set_status(issue, status.clone(), at);
    }
    issue.updated_at = at;
}

fn set_status(issue: &mut Issue, status: Status, at: Timestamp) {
    if status == issue.status {
        return;
    }
    if status == Status::Closed {
        issue.closed_at = Some(at);
        if issue.close_reason.is_empty() {
            issue.close_reason = "Closed".to_string();
        }
    } else if issue.status == Status::Closed {
        issue.closed_at = None;
        issue.close_reason.clear();
        issue.closed_by_session.clear();
    }
    if status == Status::InProgress {
        issue.started_at.get_or_insert(at);
    } else {
        issue.fleet.lease = None;
    }
    issue.status = status;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use crate::time::Clock;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join(".beads"), "t").unwrap();
        (dir, store)
    }

    fn create(id: &str) -> OpKind {
        let issue = Issue::new(id.into(), format!("issue {id}"), Timestamp::now());
        OpKind::Create { issue: Box::new(issue), deps: Vec::new() }
    }

    fn comment_on(id: &str) -> OpKind {
        let comment: Comment = serde_json::from_value(serde_json::json!({
            "id": 1, "issue_id": id, "author": "a", "text": "hi", "created_at": "2026-01-02T03:04:05Z"
        }))
        .unwrap();
        OpKind::Comment { comment }
    }

    /// Made here, a bulk op with an entry the rules refuse fails, and the transaction with it.
    #[test]
    fn a_local_bulk_op_with_a_refused_entry_writes_nothing() {
        let (_dir, store) = store();
        let failed = store.write("importer", Clock::System, |writer| {
            writer.apply_bulk(vec![create("t-1"), comment_on("t-missing")])
        });
        assert!(matches!(failed, Err(StoreError::NotFound(ref id)) if id == "t-missing"));
        assert!(store.read().unwrap().issue("t-1").unwrap().is_none());
        assert_eq!(store.journal_head().unwrap(), 0);
    }

    /// Replayed from another machine, a refused entry is skipped as its own op would be, and
    /// the other entries apply; entries are split into ops of at most `BULK_ENTRIES`. Here `t-2`
    /// was created first (earlier in the total order), so the bulk op's `t-2` is refused.
    #[test]
    fn a_remote_bulk_op_skips_only_its_refused_entries() {
        let (_dir, here) = store();
        let mine = Issue::new("t-2".into(), "made here first".into(), Timestamp::now());
        here.apply(
            "me",
            Clock::System,
            vec![OpKind::Create { issue: Box::new(mine), deps: vec![] }],
        )
        .unwrap();
        let (_dir, other) = store();
        let mut entries: Vec<OpKind> =
            (1..=BULK_ENTRIES + 1).map(|n| create(&format!("t-{n}"))).collect();
        entries.push(comment_on("t-1"));
        let ((), made) = other
            .write("importer", Clock::System, |writer| {
                writer.apply_bulk(entries).map(|ops| assert_eq!(ops, 2))
            })
            .unwrap();
        assert!(made.iter().all(|op| op.v == crate::op::BULK_FORMAT_VERSION));

        let replayed = here.replay(Clock::System, made).unwrap();
        assert!(replayed.iter().all(|r| matches!(r.outcome, Outcome::Applied)), "{replayed:?}");
        let reader = here.read().unwrap();
        assert_eq!(reader.issue("t-2").unwrap().unwrap().title, "made here first");
        assert!(reader.issue(&format!("t-{}", BULK_ENTRIES + 1)).unwrap().is_some());
        assert_eq!(reader.view().comments_of("t-1").unwrap().len(), 1);
    }
}
