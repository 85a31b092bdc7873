//! Ids made apart: every op reaches the issue its author meant.
//!
//! Two machines working apart can mint the same top-level id (hash ids are short: three
//! characters for a small queue). The total order decides, the same way on every store:
//!
//! - the create earlier in the total order keeps the id;
//! - the later one is given another ([`crate::id::another_top_level_id`]: the same prefix and
//!   a hash of the create op's id, one character longer), recorded as renamed
//!   ([`super::tables::RENAMED`]) and reported ([`super::Renamed`]); a child made under a
//!   renamed parent follows it (`p-abc.1` → `p-abcd.1`), and a child id taken already gets the
//!   next number under its parent, tagged with its replica;
//! - every issue a create op made has that op's id as its *birth* ([`super::tables::BIRTHS`]),
//!   and every op names the births of the issues it means ([`crate::op::OpMeta::births`],
//!   filled in by `Writer::stamp`). Applying an op first *retargets* it ([`Writer::retarget`]):
//!   a name whose issue has another birth now is sent to where that birth went, and an op for
//!   an issue that is gone (deleted, even if an issue of the same id exists again) is refused
//!   ([`StoreError::Gone`]) — never applied to an issue its author did not mean.
//!
//! A create's edge to an issue that is gone is left out and the issue kept ([`super::Orphaned`],
//! `Writer::edges_kept`). On one machine nothing of this shows: ids are free when minted, and
//! every op's births match.
//!
//! Ops of older fleets carry no births and are applied by id alone, as before. Issues written by
//! an import (`Put`, and the entries of bulk ops) have no birth: machines that import the same
//! file are meant to merge its issues by id.

use std::collections::BTreeMap;

use redb::ReadableTable;

use super::tables::View;
use super::{Renamed, StoreError, Writer, meta};
use crate::id;
use crate::op::{Op, OpKind};

impl Writer<'_> {
    /// `op`'s change with the issues it names sent to the issues its author meant (by the
    /// births it carries); `None` when every name already is that issue. A create's edge
    /// target that is gone is noted in [`Writer::left_out`] for the create to leave out; for
    /// any other op, a gone issue is a refusal.
    pub(super) fn retarget(&mut self, op: &Op) -> Result<Option<OpKind>, StoreError> {
        self.left_out.clear();
        self.moved.clear();
        let mut moved = BTreeMap::new();
        for (name, birth) in &op.meta.births {
            if self.birth_of(name)? == Some(birth.0) {
                continue;
            }
            match self.current_id(name, birth.0)? {
                Some(current) => {
                    moved.insert(name.clone(), current);
                }
                None if matches!(op.kind, OpKind::Create { .. }) => {
                    self.left_out.push(name.clone())
                }
                None => return Err(StoreError::Gone(name.clone())),
            }
        }
        if moved.is_empty() {
            return Ok(None);
        }
        let kind = op.kind.renamed(&|name| moved.get(name).cloned());
        self.moved = moved;
        Ok(Some(kind))
    }

    /// Where the issue of `birth`, asked for as `asked`, is now: its renamed id if it still
    /// has that birth (it may have been deleted since).
    fn current_id(&self, asked: &str, birth: u128) -> Result<Option<String>, StoreError> {
        let given = self.renamed.get((birth, asked))?.map(|given| given.value().to_string());
        match given {
            Some(given) if self.birth_of(&given)? == Some(birth) => Ok(Some(given)),
            _ => Ok(None),
        }
    }

    /// The id a new issue gets in place of `asked`, or `None` to keep it: a child of a parent
    /// this op was retargeted to follows it; an id another issue already has is refused when
    /// the op was made here ([`Writer::strict`]) or is an entry of a bulk op (no `birth`), and
    /// otherwise replaced by another (module docs).
    pub(super) fn id_for_create(
        &mut self,
        asked: &str,
        replica: &str,
        birth: Option<u128>,
    ) -> Result<Option<String>, StoreError> {
        let following = id::split_child(asked)
            .and_then(|(parent, segment)| Some(format!("{}.{segment}", self.moved.get(parent)?)));
        let wanted = following.as_deref().unwrap_or(asked);
        let taken = self.has_issue(wanted)?;
        let given = match birth {
            _ if !taken => following.clone(),
            Some(birth) if !self.strict => Some(self.another_id(wanted, replica, birth)?),
            _ => return Err(StoreError::AlreadyExists(wanted.to_string())),
        };
        if let (Some(given), Some(birth)) = (&given, birth) {
            let before =
                self.renamed.insert((birth, asked), given.as_str())?.map(|v| v.value().to_string());
            self.record(|| super::undo::Change::Renamed {
                birth,
                asked: asked.to_string(),
                old: before,
            });
            self.renames.push(Renamed {
                op: ulid::Ulid(birth).to_string(),
                replica: replica.to_string(),
                asked: asked.to_string(),
                given: given.clone(),
            });
        }
        Ok(given)
    }

    /// A free id for an issue whose id `taken_id` another issue has: for a child, the next
    /// number under its parent, tagged with `replica` (`p.4_k3m9qx`); for a top-level issue,
    /// [`id::another_top_level_id`] of the create op's id. Depends on the op and on the state
    /// at its place in the total order only, so every store gives the same.
    fn another_id(&self, taken_id: &str, replica: &str, birth: u128) -> Result<String, StoreError> {
        if let Some((parent, _)) = id::split_child(taken_id) {
            let counter_key = format!("{}{parent}", meta::CHILD_COUNTER);
            let mut number = self.counter(&counter_key)?;
            for child in self.tables.dependents_by(parent, crate::model::dep_type::PARENT_CHILD)? {
                number = number.max(id::child_number(parent, &child).unwrap_or(0));
            }
            let tag = super::apply::replica_tag(replica);
            loop {
                number = number.saturating_add(1);
                let candidate = format!("{parent}.{number}_{tag}");
                if !self.has_issue(&candidate)? {
                    return Ok(candidate);
                }
            }
        }
        let birth_text = ulid::Ulid(birth).to_string();
        id::another_top_level_id(taken_id, &birth_text, |candidate| {
            self.has_issue(candidate).unwrap_or(true)
        })
        .ok_or(StoreError::IdSpaceExhausted)
    }
}
