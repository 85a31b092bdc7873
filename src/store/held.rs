//! Writes held back until a bulk transaction finishes, then made in key order.
//!
//! An import writes its indexes keyed by something other than the issue id — the order
//! index by status and priority or update time, the ready index in `bd ready` order — so
//! its entries arrive in no useful order, and each insert lands somewhere else in a large
//! b-tree. In bulk mode ([`super::Writer::begin_bulk`]) these blind writes (nothing in the
//! transaction reads those two tables back before it finishes) are collected here instead,
//! and [`Held::write`] makes them sorted by key, so the tree fills leaf after leaf.
//!
//! A key written more than once keeps its last write, as the same writes made one by one
//! would leave it.

use redb::Table;

use super::StoreError;

/// Pending inserts (`Some(value)`) and removals (`None`) of one table, in the order made.
#[derive(Default)]
pub(super) struct Held {
    writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Held {
    pub fn insert(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.writes.push((key, Some(value)));
    }

    pub fn remove(&mut self, key: Vec<u8>) {
        self.writes.push((key, None));
    }

    /// Makes the held writes in `table`, in key order; of several writes of one key, the
    /// last made wins.
    pub fn write(
        mut self,
        table: &mut Table<'_, &'static [u8], &'static [u8]>,
    ) -> Result<(), StoreError> {
        // A stable sort keeps the writes of one key in the order they were made.
        self.writes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut writes = self.writes.into_iter().peekable();
        while let Some((key, value)) = writes.next() {
            if writes.peek().is_some_and(|(next, _)| *next == key) {
                continue;
            }
            match value {
                Some(value) => table.insert(key.as_slice(), value.as_slice())?,
                None => table.remove(key.as_slice())?,
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};

    use super::*;

    const T: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");

    /// Writes land sorted, the last write of a key wins, and a removal removes a stored key.
    #[test]
    fn the_last_write_of_each_key_is_made() {
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("db")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(T).unwrap();
            table.insert(b"stored".as_slice(), b"old".as_slice()).unwrap();
            let mut held = Held::default();
            held.insert(b"b".to_vec(), b"1".to_vec());
            held.insert(b"a".to_vec(), b"1".to_vec());
            held.remove(b"b".to_vec());
            held.remove(b"a".to_vec());
            held.insert(b"a".to_vec(), b"2".to_vec());
            held.remove(b"stored".to_vec());
            held.write(&mut table).unwrap();
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let table = read.open_table(T).unwrap();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = table
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .collect();
        assert_eq!(entries, vec![(b"a".to_vec(), b"2".to_vec())]);
    }
}
