//! A write transaction of the store: the [`Writer`] every change goes through, with what it
//! keeps while it applies ops (the journal, the clock, the undo log, the readiness seeds) and,
//! in bulk mode, what an import holds back to write once in key order.

use redb::{Table, WriteTransaction};

use super::tables::{
    BIRTHS, HOLDS, JOURNAL, OP_IDS, RENAMED, RETIRED_READY_KEYS, SIDELINED, UNDO, View,
};
use super::{
    JournalRows, LAYOUT_VERSION, Orphaned, Renamed, Store, StoreError, WriteSet, ahead_rows,
    check_layout, checked, copy_journal_rows, guard, held, index_journal, merge, meta,
    open_write_tables, readiness, stored_or, tables, undo,
};
use crate::op::{Hlc, Op};
use crate::time::Clock;

/// A write transaction in progress: reads see its own changes; [`Writer::apply`] (ops made
/// here) and [`Writer::apply_op`] (ops as given, from here or elsewhere) change state.
pub struct Writer<'t> {
    pub(super) txn: &'t WriteTransaction,
    pub(super) tables: WriteSet<'t>,
    /// Recorded replies of requests ([`tables::REPLIES`]), opened on first use.
    pub(super) replies: Option<Table<'t, u128, &'static [u8]>>,
    pub(super) journal: Table<'t, u64, &'static [u8]>,
    /// Op id → journal sequence ([`tables::OP_IDS`]).
    pub(super) op_ids: Table<'t, u128, u64>,
    pub(super) actor: String,
    pub(super) replica: String,
    pub(super) prefix: String,
    pub(super) clock: Clock,
    pub(super) hlc: Hlc,
    pub(super) journal_seq: u64,
    pub(super) applied: Vec<Op>,
    /// Workspace settings written in this transaction (they are not ops).
    pub(super) settings_written: usize,
    /// A remote stamp moved the clock, so it is saved even if no op was applied.
    pub(super) clock_received: bool,
    /// In bulk mode, the readiness seeds gathered so far; refreshed once at the end.
    pub(super) deferred_seeds: Option<std::collections::BTreeSet<String>>,
    /// In bulk mode, the caller has already refused edges that would close a cycle.
    pub(super) bulk_acyclic: bool,
    /// In bulk mode, the ids of the issues written so far ([`Writer::has_issue`]).
    pub(super) bulk_ids: Option<BulkIds>,
    /// Whether the op being applied was made here, so its rules are checked strictly: a refused
    /// entry of a bulk op fails the op, and a create's edge to a missing issue is an error.
    /// Replayed from elsewhere, the entry is skipped and the edge left out (the issue is kept,
    /// as beads keeps orphans). Set before each op is applied. An op made here was only ever
    /// journaled if it passed the strict rules, which then give what the lenient ones give.
    pub(super) strict: bool,
    /// Op id → op JSON of ops seen but not in effect ([`tables::SIDELINED`]).
    pub(super) sidelined: Table<'t, u128, &'static [u8]>,
    /// Issue id → the claim op holding it ([`tables::HOLDS`]).
    pub(super) holds: Table<'t, &'static str, u128>,
    /// Issue id → the create op that made it ([`tables::BIRTHS`]).
    pub(super) births: Table<'t, &'static str, u128>,
    /// (birth, asked id) → given id, of creates renamed ([`tables::RENAMED`]).
    pub(super) renamed: Table<'t, (u128, &'static str), &'static str>,
    /// Creates this writer gave another id than they asked for, and edges of creates it left
    /// out because their target was gone: what a merge reports.
    pub(super) renames: Vec<Renamed>,
    pub(super) orphans: Vec<Orphaned>,
    /// The undo log ([`tables::UNDO`]), the changes of the op being applied while they are
    /// recorded, whether an entry was written, and whether a rewind is undoing changes.
    pub(super) undo: Table<'t, &'static [u8], &'static [u8]>,
    pub(super) recording: Option<Vec<undo::Change>>,
    pub(super) undo_written: bool,
    pub(super) undoing: bool,
    /// For the op being applied: the issues it names that were renamed since its author saw
    /// them, with their ids now, and the edge targets of its create that are gone
    /// ([`Writer::retarget`]).
    pub(super) moved: std::collections::BTreeMap<String, String>,
    pub(super) left_out: Vec<String>,
    /// The id the next claim op stamped takes ([`Writer::name_next_claim`]).
    pub(super) next_claim_id: Option<ulid::Ulid>,
    /// The greatest order key seen ([`meta::ORDER_HIGH`]), and whether it moved.
    pub(super) order_high: Option<crate::op::OrderKey>,
    pub(super) order_high_moved: bool,
    /// Issues whose close kept a concurrent status change from reopening them.
    pub(super) closes_kept: Vec<String>,
    /// Issues whose ready entry the op being applied may have made stale (it wrote their row,
    /// or added or removed an edge of theirs or a comment on them): seeds of its readiness
    /// refresh, which writes their entries again.
    pub(super) touched: std::collections::BTreeSet<String>,
    /// The issue as the last claim this writer applied left it ([`Writer::take_claimed`]), so
    /// the claimer's answer needs no second decode of the row just written.
    pub(super) claimed: Option<crate::model::Issue>,
    /// In bulk mode, the writes of the order index and of the ready index, made in key order
    /// when the transaction finishes ([`held`]).
    pub(super) held_order: Option<held::HeldBytes>,
    pub(super) held_ready: Option<held::HeldBytes>,
    /// In bulk mode on a store that started empty, the writes of the reverse edges, made in
    /// key order before anything reads them ([`Writer::release_held_edges`]).
    pub(super) held_edges: Option<held::HeldEdges>,
    /// In bulk mode, the counters of the meta table written so far (ids made, comments,
    /// issues per status), which every op of an import would otherwise read and write back.
    pub(super) held_counters: Option<foldhash::HashMap<String, u64>>,
    /// The rows of the bulk op being applied, made ahead on the encoder thread
    /// ([`ahead_rows`]).
    pub(super) rows_ahead: ahead_rows::RowsAhead,
    /// In bulk mode on a store that started empty, each created issue's id and readiness
    /// facts, read from its row on the encoder thread, so the refresh at the end scans no
    /// issue row. Dropped by any other write of an issue row ([`Writer::keep_created_facts`]).
    pub(super) created_facts: Option<Vec<(String, readiness::Facts)>>,
    /// In bulk mode on a store that started empty, the edges inserted, so the refresh at the
    /// end reads no edge row. Dropped when an edge is removed.
    pub(super) created_edges: Option<readiness::CreatedEdges>,
    /// A bulk apply failed part-way: the tables hold some of its ops (and, when its edges
    /// went ahead, edges of ops never applied), so this transaction must not commit.
    pub(super) abandoned_bulk: bool,
}

/// The issues a bulk-mode [`Writer`] has written: every id written and not deleted since bulk
/// mode began, plus, when `complete` (the store was empty then), the knowledge that no other
/// issue exists.
pub(super) struct BulkIds {
    pub(super) ids: foldhash::HashSet<String>,
    pub(super) complete: bool,
}

/// Seals every row of a store of layout 2 or older that is not sealed yet ([`checked`]), and
/// has the ready entries, which carry copies of the issue rows, covered anew by this writer.
pub(super) fn seal_rows(
    txn: &WriteTransaction,
    tables: &mut WriteSet<'_>,
) -> Result<(), StoreError> {
    macro_rules! seal_table {
        ($table:expr, |$read:ident| $owned:expr, |$kept:ident| $lent:expr) => {{
            let table = $table;
            let mut unsealed = Vec::new();
            for entry in redb::ReadableTable::iter(&*table)? {
                let (key, row) = entry?;
                if !checked::is_sealed(row.value()) {
                    let $read = key.value();
                    unsealed.push(($owned, row.value().to_vec()));
                }
            }
            for ($kept, row) in &unsealed {
                table.insert($lent, checked::seal(row.clone()).as_slice())?;
            }
        }};
    }
    seal_table!(&mut tables.issues, |id| id.to_string(), |id| id.as_str());
    seal_table!(tables.deps_mut(), |k| (k.0.to_string(), k.1.to_string()), |k| (
        k.0.as_str(),
        k.1.as_str()
    ));
    seal_table!(&mut tables.comments, |k| (k.0.to_string(), k.1), |k| (k.0.as_str(), k.1));
    let mut journal = txn.open_table(JOURNAL)?;
    seal_table!(&mut journal, |seq| seq, |seq| *seq);
    let mut sidelined = txn.open_table(SIDELINED)?;
    seal_table!(&mut sidelined, |id| id, |id| *id);
    tables.meta.remove(meta::READY_COVERING)?;
    Ok(())
}

impl<'t> Writer<'t> {
    pub(super) fn begin(
        txn: &'t WriteTransaction,
        store: &Store,
        actor: &str,
        clock: Clock,
    ) -> Result<Writer<'t>, StoreError> {
        let mut tables = open_write_tables(txn)?;
        let layout = tables.meta_u64(meta::LAYOUT)?;
        // A long-lived process opened the store before a newer fleet laid it out anew.
        check_layout(layout)?;
        if layout < LAYOUT_VERSION {
            txn.delete_table(RETIRED_READY_KEYS)?;
            seal_rows(txn, &mut tables)?;
            tables.meta.insert(meta::LAYOUT, LAYOUT_VERSION.to_be_bytes().as_slice())?;
        }
        let journal = txn.open_table(JOURNAL)?;
        let mut op_ids = txn.open_table(OP_IDS)?;
        if tables.meta_bytes(meta::OP_IDS_COMPLETE)?.is_none() {
            index_journal(&journal, &mut op_ids)?;
            tables.meta.insert(meta::OP_IDS_COMPLETE, [1u8].as_slice())?;
        }
        let hlc = tables
            .meta_bytes(meta::CLOCK)?
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Hlc::ZERO);
        let journal_seq = tables.meta_u64(meta::JOURNAL_SEQ)?;
        let sidelined = txn.open_table(SIDELINED)?;
        // Read each time: a sync may have given the store a new replica id since it was opened.
        let replica = stored_or(tables.meta_bytes(meta::REPLICA)?, &store.replica);
        // Read at every write, like the replica id: another process's rename-prefix (or a
        // request this process served) changes it under a long-lived store.
        let tables_prefix = tables.meta_bytes(meta::PREFIX)?;
        let (order_high, order_high_moved) = match tables.meta_bytes(meta::ORDER_HIGH)? {
            Some(bytes) => (serde_json::from_slice(&bytes).ok(), false),
            None => (merge::highest_key(&journal, &sidelined)?, true),
        };
        let mut writer = Writer {
            txn,
            tables,
            replies: None,
            journal,
            op_ids,
            actor: actor.to_string(),
            replica,
            prefix: stored_or(tables_prefix, &store.prefix),
            clock,
            hlc,
            journal_seq,
            applied: Vec::new(),
            settings_written: 0,
            clock_received: false,
            deferred_seeds: None,
            bulk_acyclic: false,
            bulk_ids: None,
            strict: false,
            sidelined,
            holds: txn.open_table(HOLDS)?,
            births: txn.open_table(BIRTHS)?,
            renamed: txn.open_table(RENAMED)?,
            renames: Vec::new(),
            orphans: Vec::new(),
            undo: txn.open_table(UNDO)?,
            recording: None,
            undo_written: false,
            undoing: false,
            moved: std::collections::BTreeMap::new(),
            left_out: Vec::new(),
            next_claim_id: None,
            order_high,
            order_high_moved,
            closes_kept: Vec::new(),
            touched: std::collections::BTreeSet::new(),
            claimed: None,
            held_order: None,
            held_ready: None,
            held_edges: None,
            held_counters: None,
            rows_ahead: ahead_rows::RowsAhead::default(),
            created_facts: None,
            created_edges: None,
            abandoned_bulk: false,
        };
        if writer.tables.meta_bytes(meta::ORDER_INDEX)?.is_none() {
            writer.build_order_index()?;
        }
        if writer.tables.meta_bytes(meta::READY_COVERING)?.is_none() {
            writer.cover_ready_entries()?;
        }
        Ok(writer)
    }

    /// Read access to the state as this transaction sees it.
    pub(crate) fn view(&self) -> &dyn View {
        &self.tables
    }

    /// The actor ops are applied as.
    pub fn actor(&self) -> &str {
        &self.actor
    }

    /// Applies later ops as another actor (group commits of several claimers).
    pub fn set_actor(&mut self, actor: &str) {
        actor.clone_into(&mut self.actor);
    }

    /// The id prefix of new issues.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Applies later ops with another clock (group commits of several clients, each with its
    /// own notion of now).
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// How many changes this transaction has made so far, ops and workspace settings: a
    /// transaction with none has nothing to commit.
    pub fn change_count(&self) -> usize {
        self.applied.len() + self.settings_written
    }

    pub(super) fn replies(&mut self) -> Result<&mut Table<'t, u128, &'static [u8]>, StoreError> {
        if self.replies.is_none() {
            self.replies = Some(self.txn.open_table(tables::REPLIES)?);
        }
        Ok(self.replies.as_mut().expect("opened above"))
    }

    /// The recorded reply of request `id`, if it was applied (see [`tables::REPLIES`]).
    pub fn recorded_reply(&mut self, id: ulid::Ulid) -> Result<Option<Vec<u8>>, StoreError> {
        use redb::ReadableTable;
        Ok(self.replies()?.get(id.0)?.map(|reply| reply.value().to_vec()))
    }

    /// Records that request `id` was applied with `reply`, and prunes replies older than the
    /// retention (by the system clock, which request ids are made with).
    pub fn record_reply(&mut self, id: ulid::Ulid, reply: &[u8]) -> Result<(), StoreError> {
        let now_ms = u64::try_from(jiff::Timestamp::now().as_millisecond()).unwrap_or(0);
        let cutoff = now_ms.saturating_sub(tables::REPLY_RETENTION_MS);
        let replies = self.replies()?;
        replies.insert(id.0, reply)?;
        let oldest = ulid::Ulid::from_parts(cutoff, 0).0;
        replies.retain_in(..oldest, |_, _| false)?;
        Ok(())
    }

    /// The issue `id` as the claim just applied left it, if that claim changed it.
    pub fn take_claimed(&mut self, id: &str) -> Option<crate::model::Issue> {
        self.claimed.take().filter(|issue| issue.id == id)
    }

    /// The transaction's notion of now.
    pub fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// A configuration value of this store, as this transaction sees it.
    pub fn config(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = self.tables.meta_bytes(&format!("{}{key}", meta::CONFIG))?;
        Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Sets (or with `None` removes) a configuration value of this store.
    /// Changes the workspace's id prefix (a `rename-prefix`, after its ids moved). Not an op:
    /// the prefix is this store's setting; the renamed issues travel as ops.
    pub fn set_prefix(&mut self, prefix: &str) -> Result<(), StoreError> {
        self.tables.meta.insert(meta::PREFIX, prefix.as_bytes())?;
        self.settings_written += 1;
        self.prefix = prefix.to_string();
        Ok(())
    }

    pub fn set_config(&mut self, key: &str, value: Option<&str>) -> Result<(), StoreError> {
        self.settings_written += 1;
        let key = format!("{}{key}", meta::CONFIG);
        match value {
            Some(value) => self.tables.meta.insert(key.as_str(), value.as_bytes())?,
            None => self.tables.meta.remove(key.as_str())?,
        };
        Ok(())
    }

    /// Writes (or with `None` removes) the registration of supervisor `instance`. Not an op:
    /// heartbeats do not wake other supervisors or reach the journal.
    pub fn set_supervisor(
        &mut self,
        instance: &str,
        registration: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let key = format!("{}{instance}", meta::SUPERVISOR);
        match registration {
            Some(bytes) => self.tables.meta.insert(key.as_str(), bytes)?,
            None => self.tables.meta.remove(key.as_str())?,
        };
        Ok(())
    }

    /// The counter `key` of the meta table (0 when absent), as this transaction left it.
    pub(super) fn counter(&self, key: &str) -> Result<u64, StoreError> {
        match self.held_counters.as_ref().and_then(|held| held.get(key)) {
            Some(value) => Ok(*value),
            None => self.tables.meta_u64(key),
        }
    }

    /// [`Writer::put_meta_u64`] of a counter an op moves (ids made, comments), recorded in the
    /// undo log.
    pub(super) fn put_op_counter(&mut self, key: &str, value: u64) -> Result<(), StoreError> {
        if self.recording.is_some() {
            let before = self.tables.meta_bytes(key)?;
            self.record(|| undo::Change::Meta { key: key.to_string(), old: before });
        }
        self.put_meta_u64(key, value)
    }

    /// Sets the counter `key` (held in memory until the transaction finishes, in bulk mode).
    pub(super) fn put_meta_u64(&mut self, key: &str, value: u64) -> Result<(), StoreError> {
        match &mut self.held_counters {
            Some(held) => {
                held.insert(key.to_string(), value);
            }
            None => {
                self.tables.meta.insert(key, value.to_be_bytes().as_slice())?;
            }
        }
        Ok(())
    }

    /// Bulk mode for large batches (imports): readiness is refreshed once, when the
    /// transaction finishes, instead of after every op; and, because the caller promises to
    /// have refused cycle-closing edges itself (over the whole batch, with petgraph), edges are
    /// not walked one by one.
    ///
    /// The ids of issues written from here on are kept in memory, so the existence checks of
    /// the batch's edges and comments are a hash lookup instead of a walk down the issue table
    /// (and none at all for a store that started empty). Writes of the order and ready
    /// indexes are held back and made in key order at the end ([`held`]); on a store that
    /// started empty, so are those of the reverse edges, which only the readiness seeds of
    /// creates and edges would read (see [`Writer::all_new`]).
    pub fn begin_bulk(&mut self) -> Result<(), StoreError> {
        self.deferred_seeds.get_or_insert_with(Default::default);
        self.bulk_acyclic = true;
        let complete = self.tables.issue_count()? == 0;
        self.bulk_ids = Some(BulkIds { ids: foldhash::HashSet::default(), complete });
        self.held_order.get_or_insert_with(Default::default);
        self.held_ready.get_or_insert_with(Default::default);
        self.held_counters.get_or_insert_with(Default::default);
        if complete {
            self.held_edges.get_or_insert_with(Default::default);
            self.created_facts.get_or_insert_with(Vec::new);
            self.created_edges.get_or_insert_with(Default::default);
        }
        Ok(())
    }

    /// The journal's committed mark as this transaction sees it, with copies of the rows
    /// after it (undecoded): what a journal commit right after this transaction would carry.
    pub(crate) fn journal_past_mark(&self) -> Result<(u64, JournalRows), StoreError> {
        let committed = self.counter(meta::JOURNAL_COMMITTED)?;
        Ok((committed, copy_journal_rows(&self.journal, committed + 1)?))
    }

    /// The replica this store journals ops as.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Whether issue `id` exists, as this transaction sees it.
    pub(super) fn has_issue(&self, id: &str) -> Result<bool, StoreError> {
        match &self.bulk_ids {
            Some(bulk) if bulk.ids.contains(id) => Ok(true),
            Some(bulk) if bulk.complete => Ok(false),
            _ => self.tables.contains(id),
        }
    }

    /// Whether every issue of the store was created in this bulk transaction (it started
    /// empty). Then every issue seeds the readiness refresh at the end itself, and a create or
    /// an edge need not name the issues depending on it.
    pub(super) fn all_new(&self) -> bool {
        self.bulk_ids.as_ref().is_some_and(|bulk| bulk.complete)
    }

    /// Makes the held writes of the reverse edges, before anything reads them.
    pub(super) fn release_held_edges(&mut self) -> Result<(), StoreError> {
        if let Some(held) = self.held_edges.take() {
            held.write(&mut self.tables.rdeps)?;
        }
        Ok(())
    }

    /// Makes the held writes of the reverse edges, then refreshes the readiness of the
    /// deferred seeds (of every issue, while every issue was new: no op gathered seeds).
    pub(super) fn release_held_edges_and_refresh(
        &mut self,
        lap: &dyn Fn(&str),
    ) -> Result<(), StoreError> {
        self.release_held_edges()?;
        lap("finish: reverse edges written");
        if let Some(seeds) = self.deferred_seeds.take() {
            if self.all_new() { self.refresh_every_issue()? } else { self.refresh(seeds)? }
        }
        lap("finish: readiness refreshed");
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<Vec<Op>, StoreError> {
        if self.abandoned_bulk {
            return Err(StoreError::BulkAbandoned);
        }
        let started = std::time::Instant::now();
        let lap = |what: &str| tracing::trace!(ms = started.elapsed().as_millis() as u64, what);
        match self.held_order.take() {
            // In bulk mode the order index writes held so far are made on another core while
            // this one writes the reverse edges and refreshes readiness, which reads nothing of
            // that index (its own writes to it are held again, and made after).
            Some(held_order) => {
                self.held_order = Some(held::HeldBytes::default());
                let mut order =
                    self.tables.order.take().expect("write transactions open the order index");
                let carried = guard::carry();
                std::thread::scope(|scope| {
                    let order_written =
                        scope.spawn(|| carried.run(|| held_order.write(&mut order)));
                    let refreshed = self.release_held_edges_and_refresh(&lap);
                    let written =
                        order_written.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                    refreshed.and(written)
                })?;
                self.tables.order = Some(order);
            }
            None => self.release_held_edges_and_refresh(&lap)?,
        }
        if let Some(held) = self.held_order.take() {
            held.write(self.tables.order_mut())?;
        }
        if let Some(held) = self.held_ready.take() {
            held.write(&mut self.tables.ready)?;
        }
        lap("finish: order and ready written");
        for (key, value) in self.held_counters.take().unwrap_or_default() {
            self.put_meta_u64(&key, value)?;
        }
        if !self.applied.is_empty() {
            let changes = self.counter(meta::CHANGES)? + 1;
            self.put_meta_u64(meta::CHANGES, changes)?;
            self.put_meta_u64(meta::JOURNAL_SEQ, self.journal_seq)?;
        }
        if !self.applied.is_empty() || self.clock_received {
            let clock = serde_json::to_vec(&self.hlc).expect("a clock stamp serialises");
            self.tables.meta.insert(meta::CLOCK, clock.as_slice())?;
        }
        self.prune_undo()?;
        if self.order_high_moved
            && let Some(high) = &self.order_high
        {
            let bytes = serde_json::to_vec(high).expect("an order key serialises");
            self.tables.meta.insert(meta::ORDER_HIGH, bytes.as_slice())?;
        }
        Ok(self.applied)
    }
}
