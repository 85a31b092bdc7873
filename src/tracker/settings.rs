//! Workspace settings as a change to the queue: a key fleet knows ([`crate::settings`]) is
//! checked by its type and stored in one form (`TRUE` → `true`) whichever front end sets it;
//! other keys (beads' own, `memory.*`) are stored as given.

use super::Refusal;
use crate::settings::Setting;
use crate::store::Writer;

/// Sets workspace setting `key` to `value`, or removes it with `None`.
pub fn set_config(writer: &mut Writer<'_>, key: &str, value: Option<&str>) -> Result<(), Refusal> {
    if key.trim().is_empty() {
        return Err(Refusal::Invalid("config key is empty".into()));
    }
    let checked = match (Setting::find(key), value) {
        (Some(setting), Some(value)) => Some(setting.checked(value).map_err(Refusal::Invalid)?),
        (_, value) => value.map(str::to_string),
    };
    writer.set_config(key, checked.as_deref())?;
    Ok(())
}
