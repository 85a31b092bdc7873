//! A read transaction of the store: the [`Reader`] every query runs in, on one snapshot.

use std::path::PathBuf;

use super::tables::View;
use super::{ReadSet, StoreError, guard, meta};

/// A read snapshot. Queries live in `query`.
pub struct Reader {
    pub(super) tables: ReadSet,
    /// The coordination table (messages, reservations); `None` before its first record.
    pub(super) coord: Option<redb::ReadOnlyTable<&'static str, &'static [u8]>>,
    pub(super) prefix: String,
    /// The store file, named in errors.
    pub(super) path: PathBuf,
}

impl Reader {
    pub(crate) fn view(&self) -> &dyn View {
        &self.tables
    }

    /// From now on, queries skip issue rows that do not decode instead of failing, and
    /// [`Reader::damaged`] lists their ids: `list`, `stats`, `export` show the rest of a
    /// damaged store and name what they left out. Reads that name one issue (`show`) still
    /// fail on its damaged row, with its id.
    pub fn skip_damaged(mut self) -> Reader {
        self.tables.damaged = Some(Default::default());
        self
    }

    /// The ids of the damaged issue rows skipped so far (see [`Reader::skip_damaged`]).
    pub fn damaged(&self) -> Vec<String> {
        self.tables.damaged_ids()
    }

    /// Runs a query over this snapshot: a panic of the database engine becomes an error, and
    /// damage is reported naming the store file and the fix.
    pub(crate) fn guarded<R>(
        &self,
        query: impl FnOnce(&dyn View) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        guard::guarded(&self.path, || query(self.view())).map_err(|e| e.at(&self.path))
    }

    /// A configuration value set with [`Writer::set_config`].
    pub fn config(&self, key: &str) -> Result<Option<String>, StoreError> {
        let value = self.tables.meta_bytes(&format!("{}{key}", meta::CONFIG))?;
        Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
    }

    /// Every configuration value, sorted by key.
    pub fn config_all(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for entry in self.tables.meta.range(meta::CONFIG..)? {
            let (key, value) = entry?;
            let Some(name) = key.value().strip_prefix(meta::CONFIG) else { break };
            out.push((name.to_string(), String::from_utf8_lossy(value.value()).into_owned()));
        }
        Ok(out)
    }

    /// Every entry of the supervisor registry: (instance, registration bytes).
    pub fn supervisors(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut out = Vec::new();
        for entry in self.tables.meta.range(meta::SUPERVISOR..)? {
            let (key, value) = entry?;
            let Some(instance) = key.value().strip_prefix(meta::SUPERVISOR) else { break };
            out.push((instance.to_string(), value.value().to_vec()));
        }
        Ok(out)
    }
}
