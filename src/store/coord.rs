//! The coordination table: messages and file reservations ([`crate::coord`]), one row each
//! under `mail/<id>` and `reserve/<id>`, written only by their ops (`OpKind::Mail`,
//! `MailAck`, `Reserve`, `ReleaseFiles`) and read by [`Reader::messages`] and
//! [`Reader::reservations`].
//!
//! Each write records the row's before-image in the undo log (`undo::Change::Coord`), so a
//! merge out of order rewinds and re-applies these ops as it does issue ops, and a re-application
//! from scratch (`merge`) drops the table with the rest of the derived state. The rules:
//!
//! - a message id already present is refused (ids are random; two equal ones are a fault);
//! - an ack of an unknown message is refused (replayed, it is sidelined, and tried again at its
//!   place by a merge that brings the message); an ack of an acked message changes nothing;
//! - a release of reservations that are gone changes nothing.

use std::collections::BTreeSet;

use jiff::Timestamp;
use redb::{ReadableTable, TableDefinition};

use super::undo::Change;
use super::{Reader, StoreError, Writer};
use crate::coord::{Message, Reservation};
use crate::op::OpMeta;

/// Key (`mail/<id>`, `reserve/<id>`) → the record as JSON.
pub(crate) const COORD: TableDefinition<&str, &[u8]> = TableDefinition::new("coordination");

const MAIL: &str = "mail/";
const RESERVE: &str = "reserve/";

/// Issues whose readiness an op changed: none, but it changed something.
type Seeds = Option<BTreeSet<String>>;

fn changed() -> Seeds {
    Some(BTreeSet::new())
}

fn corrupt(key: &str, error: &serde_json::Error) -> StoreError {
    StoreError::Corrupt(format!("coordination record {key} does not decode: {error}"))
}

impl Writer<'_> {
    /// The row under `key`, as bytes.
    fn coord_row(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let table = self.txn.open_table(COORD)?;
        Ok(table.get(key)?.map(|row| row.value().to_vec()))
    }

    /// Writes (or with `None` removes) the row under `key`, recording its before-image.
    fn put_coord_row(&mut self, key: &str, row: Option<&[u8]>) -> Result<(), StoreError> {
        let mut table = self.txn.open_table(COORD)?;
        let old = match row {
            Some(row) => table.insert(key, row)?,
            None => table.remove(key)?,
        }
        .map(|old| old.value().to_vec());
        drop(table);
        self.record(|| Change::Coord { key: key.to_string(), old });
        Ok(())
    }

    /// Restores the row under `key` as the undo log recorded it (no new record).
    pub(super) fn restore_coord_row(
        &mut self,
        key: &str,
        old: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let mut table = self.txn.open_table(COORD)?;
        match old {
            Some(row) => table.insert(key, row)?,
            None => table.remove(key)?,
        };
        Ok(())
    }

    /// `OpKind::Mail`: the message, with the op's actor, time and stamp.
    pub(super) fn mail(&mut self, message: &Message, meta: &OpMeta) -> Result<Seeds, StoreError> {
        let key = format!("{MAIL}{}", message.id);
        if self.coord_row(&key)?.is_some() {
            return Err(StoreError::AlreadyExists(message.id.clone()));
        }
        let mut row = message.clone();
        row.from.clone_from(&meta.actor);
        row.at = Some(meta.at);
        row.stamp = Some(meta.stamp);
        row.acked_by = None;
        row.acked_at = None;
        self.put_coord_row(&key, Some(&encode(&row)))?;
        Ok(changed())
    }

    /// `OpKind::MailAck`: the first acknowledgement of `id` is kept.
    pub(super) fn mail_ack(
        &mut self,
        id: &str,
        by: &str,
        at: Timestamp,
    ) -> Result<Seeds, StoreError> {
        let key = format!("{MAIL}{id}");
        let Some(row) = self.coord_row(&key)? else {
            return Err(StoreError::NotFound(id.to_string()));
        };
        let mut message: Message = serde_json::from_slice(&row).map_err(|e| corrupt(&key, &e))?;
        if message.acked_by.is_some() {
            return Ok(None);
        }
        message.acked_by = Some(by.to_string());
        message.acked_at = Some(at);
        self.put_coord_row(&key, Some(&encode(&message)))?;
        Ok(changed())
    }

    /// `OpKind::Reserve`: the reservation, with the op's actor and time.
    pub(super) fn reserve(
        &mut self,
        reservation: &Reservation,
        meta: &OpMeta,
    ) -> Result<Seeds, StoreError> {
        let key = format!("{RESERVE}{}", reservation.id);
        if self.coord_row(&key)?.is_some() {
            return Err(StoreError::AlreadyExists(reservation.id.clone()));
        }
        let mut row = reservation.clone();
        row.holder.clone_from(&meta.actor);
        row.at = Some(meta.at);
        self.put_coord_row(&key, Some(&encode(&row)))?;
        Ok(changed())
    }

    /// `OpKind::ReleaseFiles`: removes `task`'s reservations of `ids` (all when empty).
    pub(super) fn release_files(
        &mut self,
        task: &str,
        ids: &[String],
    ) -> Result<Seeds, StoreError> {
        let gone: Vec<String> = self
            .reservations_in_txn()?
            .into_iter()
            .filter(|r| r.task == task && (ids.is_empty() || ids.contains(&r.id)))
            .map(|r| format!("{RESERVE}{}", r.id))
            .collect();
        if gone.is_empty() {
            return Ok(None);
        }
        for key in gone {
            self.put_coord_row(&key, None)?;
        }
        Ok(changed())
    }

    /// Every message, as this transaction sees them (unordered).
    pub fn read_messages(&self) -> Result<Vec<Message>, StoreError> {
        decode_range(&self.txn.open_table(COORD)?, MAIL)
    }

    /// Every reservation, as this transaction sees them.
    pub fn reservations_in_txn(&self) -> Result<Vec<Reservation>, StoreError> {
        decode_range(&self.txn.open_table(COORD)?, RESERVE)
    }
}

impl Reader {
    /// Every message, oldest first (by stamp: each sender's order).
    pub fn messages(&self) -> Result<Vec<Message>, StoreError> {
        let Some(table) = &self.coord else { return Ok(Vec::new()) };
        let mut messages: Vec<Message> = decode_range(table, MAIL)?;
        messages.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        Ok(messages)
    }

    /// Every reservation not released (expired ones too: [`Reservation::is_live`] tells).
    pub fn reservations(&self) -> Result<Vec<Reservation>, StoreError> {
        let Some(table) = &self.coord else { return Ok(Vec::new()) };
        decode_range(table, RESERVE)
    }
}

/// The records under `prefix`, decoded.
fn decode_range<T: serde::de::DeserializeOwned>(
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    prefix: &str,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    for entry in table.range(prefix..)? {
        let (key, value) = entry?;
        let key = key.value();
        if !key.starts_with(prefix) {
            break;
        }
        out.push(serde_json::from_slice(value.value()).map_err(|e| corrupt(key, &e))?);
    }
    Ok(out)
}

fn encode<T: serde::Serialize>(record: &T) -> Vec<u8> {
    serde_json::to_vec(record).expect("coordination records serialize")
}
