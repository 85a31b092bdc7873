//! Workspace settings: the keys kept in a workspace's store (not in `runtime.toml`), each
//! declared once with its type ([`SETTINGS`]), and the one parser of their yes/no values
//! ([`parse_bool`]).
//!
//! `runtime.toml` holds how this machine runs agents (`crate::config`); the store holds how the
//! workspace behaves wherever it is used: how claims are decided, what is exported after a
//! write or a sync, which close reasons and custom types are accepted. `fleet config` reads and
//! writes both (each key says where it lives); `bd config` sets any key, as beads does, and
//! checks the ones it knows. A setting is not an op: it stays with the store, and
//! `fleet rebuild` keeps it (`crate::journal`).

use crate::store::{Reader, StoreError};

/// The type of a setting's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Yes or no ([`parse_bool`]).
    Bool,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// Any text.
    Text,
    /// Comma-separated names.
    Names,
}

/// One workspace setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    pub kind: Kind,
    /// The value in force when the key is not set.
    pub default: &'static str,
    /// One line for users.
    pub doc: &'static str,
}

/// `claim_mode`: how claims are decided (see `crate::tracker::claims`).
pub const CLAIM_MODE: &str = crate::journal::claims::MODE_KEY;
/// `export.auto`: write `.beads/issues.jsonl` after every write command.
pub const EXPORT_AUTO: &str = "export.auto";
/// `export.git-add`: the pre-commit hook stages the export it wrote.
pub const EXPORT_GIT_ADD: &str = "export.git-add";
/// `import.auto`: the post-merge and post-checkout hooks import `.beads/issues.jsonl`.
pub const IMPORT_AUTO: &str = "import.auto";
/// `sync.export_jsonl`: write `.beads/issues.jsonl` after every sync.
pub const SYNC_EXPORT: &str = "sync.export_jsonl";
/// `validation.on-close`: what a terse close reason gets.
pub const ON_CLOSE: &str = "validation.on-close";
/// `validation.on-create`: what a new issue without a description gets.
pub const ON_CREATE: &str = "validation.on-create";

/// Every workspace setting fleet knows.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: CLAIM_MODE,
        kind: Kind::OneOf(&["local", "remote"]),
        default: "local",
        doc: "how claims are decided: in this store alone, or confirmed on a git remote",
    },
    Setting {
        name: crate::journal::claims::REMOTE_KEY,
        kind: Kind::Text,
        default: "",
        doc: "the git remote of remote claims (\"\": origin, or the only remote)",
    },
    Setting {
        name: EXPORT_AUTO,
        kind: Kind::Bool,
        default: "false",
        doc: "write .beads/issues.jsonl after every write command",
    },
    Setting {
        name: EXPORT_GIT_ADD,
        kind: Kind::Bool,
        default: "false",
        doc: "the pre-commit hook stages the .beads/issues.jsonl it wrote",
    },
    Setting {
        name: IMPORT_AUTO,
        kind: Kind::Bool,
        default: "true",
        doc: "the post-merge and post-checkout hooks import .beads/issues.jsonl (a merge)",
    },
    Setting {
        name: SYNC_EXPORT,
        kind: Kind::Bool,
        default: "false",
        doc: "write .beads/issues.jsonl after every sync (fleet sync, and fleet run's)",
    },
    Setting {
        name: ON_CLOSE,
        kind: Kind::OneOf(&["none", "warn", "error"]),
        default: "none",
        doc: "a close with no real reason: accepted, warned about, or refused",
    },
    Setting {
        name: ON_CREATE,
        kind: Kind::OneOf(&["none", "warn", "error"]),
        default: "none",
        doc: "a new issue without a description: accepted, warned about, or refused",
    },
    Setting {
        name: "types.custom",
        kind: Kind::Names,
        default: "",
        doc: "issue types accepted beside the built-in ones (comma-separated)",
    },
    Setting {
        name: "status.custom",
        kind: Kind::Names,
        default: "",
        doc: "statuses accepted beside the built-in ones (comma-separated)",
    },
];

/// A yes/no value as people write it: `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`, in any
/// case and with blanks around; `None` for anything else. The one parser of every yes/no
/// setting (and environment switch) of fleet.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

impl Setting {
    /// The setting named `name`.
    pub fn find(name: &str) -> Option<&'static Setting> {
        SETTINGS.iter().find(|setting| setting.name == name)
    }

    /// `value` checked against the setting's kind, as it is stored (yes/no values as `true` or
    /// `false`, words in lowercase); an error says what the setting takes.
    pub fn checked(&self, value: &str) -> Result<String, String> {
        let value = value.trim();
        match self.kind {
            Kind::Bool => parse_bool(value).map(|on| on.to_string()).ok_or_else(|| {
                format!("{} takes true or false (yes/no, on/off, 1/0), not {value:?}", self.name)
            }),
            Kind::OneOf(words) => {
                let lower = value.to_ascii_lowercase();
                match words.iter().find(|word| **word == lower) {
                    Some(word) => Ok((*word).to_string()),
                    None => Err(format!(
                        "{} takes one of {}, not {value:?}",
                        self.name,
                        words.join(", ")
                    )),
                }
            }
            Kind::Text | Kind::Names => Ok(value.to_string()),
        }
    }
}

/// Whether the yes/no setting `key` is on in the store `reader` reads (its default when unset
/// or not a yes/no value).
pub fn is_on(reader: &Reader, key: &str) -> Result<bool, StoreError> {
    let default = Setting::find(key).and_then(|s| parse_bool(s.default)).unwrap_or(false);
    Ok(reader.config(key)?.as_deref().and_then(parse_bool).unwrap_or(default))
}

/// Whether the yes/no setting `key` is on for the workspace `dir` whose store `reader` reads:
/// the store's value, else `.beads/config.yaml`'s (where beads keeps `export.auto`,
/// `import.auto`, …), else the default.
pub fn is_on_for(reader: &Reader, dir: &std::path::Path, key: &str) -> Result<bool, StoreError> {
    if let Some(on) = reader.config(key)?.as_deref().and_then(parse_bool) {
        return Ok(on);
    }
    match crate::workspace::config_yaml::value(dir, key).as_deref().and_then(parse_bool) {
        Some(on) => Ok(on),
        None => is_on(reader, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_people_write_yes_and_no_is_read_alike() {
        for yes in ["true", "TRUE", " True ", "yes", "YES", "on", "On", "1"] {
            assert_eq!(parse_bool(yes), Some(true), "{yes:?}");
        }
        for no in ["false", "FALSE", "no", "off", "OFF", "0", " 0 "] {
            assert_eq!(parse_bool(no), Some(false), "{no:?}");
        }
        for neither in ["", "maybe", "2", "truee"] {
            assert_eq!(parse_bool(neither), None, "{neither:?}");
        }
    }

    #[test]
    fn values_are_checked_by_kind_and_stored_in_one_form() {
        let export = Setting::find(SYNC_EXPORT).unwrap();
        assert_eq!(export.checked("TRUE").unwrap(), "true");
        assert_eq!(export.checked("off").unwrap(), "false");
        assert!(export.checked("sometimes").unwrap_err().contains("true or false"));
        let mode = Setting::find(CLAIM_MODE).unwrap();
        assert_eq!(mode.checked("Remote").unwrap(), "remote");
        assert!(mode.checked("cloud").unwrap_err().contains("one of local, remote"));
    }
}
