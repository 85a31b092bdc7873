//! Writes held back until a bulk transaction finishes, then made in key order.
//!
//! An import writes tables keyed by something other than the issue it is writing — the order
//! index by status and priority or update time, the ready index in `bd ready` order, the
//! reverse edges by target — so their entries arrive in no useful order, and each insert
//! lands somewhere else in a large b-tree. In bulk mode ([`super::Writer::begin_bulk`]) these
//! writes are collected here instead while nothing reads the table back, and [`Held::write`]
//! makes them sorted by key, so the tree fills leaf after leaf.
//!
//! A key written more than once keeps its last write, as the same writes made one by one
//! would leave it.

use redb::Table;

use super::StoreError;

/// Pending inserts (`Some(value)`) and removals (`None`) of one table, in the order made, with
/// owned keys and values of type `K` and `V`.
pub(super) struct Held<K, V> {
    writes: Vec<(K, Option<V>)>,
}

impl<K, V> Default for Held<K, V> {
    fn default() -> Self {
        Held { writes: Vec::new() }
    }
}

/// Held writes of a table keyed and valued by bytes (the order and ready indexes).
pub(super) type HeldBytes = Held<Vec<u8>, Vec<u8>>;

/// Held writes of the reverse edges: (target, issue) → edge type.
pub(super) type HeldEdges = Held<(String, String), String>;

/// An owned key or value of a held write, lent to redb as its table's type `T`.
pub(super) trait Lend<T: redb::Value + 'static> {
    fn lend(&self) -> T::SelfType<'_>;
}

impl Lend<&'static [u8]> for Vec<u8> {
    fn lend(&self) -> &[u8] {
        self
    }
}

impl Lend<&'static str> for String {
    fn lend(&self) -> &str {
        self
    }
}

impl Lend<(&'static str, &'static str)> for (String, String) {
    fn lend(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl<K: Ord, V> Held<K, V> {
    pub fn insert(&mut self, key: K, value: V) {
        self.writes.push((key, Some(value)));
    }

    pub fn remove(&mut self, key: K) {
        self.writes.push((key, None));
    }

    /// Hands the held writes to `make` in key order (`None`: a removal); of several writes
    /// of one key, only the last made.
    fn sorted(
        mut self,
        mut make: impl FnMut(&K, Option<&V>) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        // A stable sort keeps the writes of one key in the order they were made.
        self.writes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut writes = self.writes.iter().peekable();
        while let Some((key, value)) = writes.next() {
            if writes.peek().is_some_and(|(next, _)| next == key) {
                continue;
            }
            make(key, value.as_ref())?;
        }
        Ok(())
    }

    /// Makes the held writes in `table`, in key order.
    pub fn write<TK: redb::Key + 'static, TV: redb::Value + 'static>(
        self,
        table: &mut Table<'_, TK, TV>,
    ) -> Result<(), StoreError>
    where
        K: Lend<TK>,
        V: Lend<TV>,
    {
        self.sorted(|key, value| {
            match value {
                Some(value) => table.insert(key.lend(), value.lend())?,
                None => table.remove(key.lend())?,
            };
            Ok(())
        })
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
            let mut held = HeldBytes::default();
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
