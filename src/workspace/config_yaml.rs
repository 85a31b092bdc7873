//! Reading `.beads/config.yaml`, where beads keeps the settings it reads before (or instead of)
//! its database: `issue-prefix`, `types.custom`, `status.custom`, `export.auto`, …
//!
//! Fleet keeps its settings in the store; a beads project's `config.yaml` is honoured as the
//! fallback beads itself uses, so a checkout that declares `types.custom: convoy,agent` works
//! before anyone copies the setting over. Only the shapes beads writes are read: a dotted key
//! at the top level (`types.custom: a,b`), or the key nested one level (`types:` then
//! `  custom: a,b`), with a scalar, an inline list (`[a, b]`) or a block list (`- a`). Nothing
//! here writes the file.

use std::path::Path;

/// The file's name in the workspace.
pub const FILE: &str = "config.yaml";

/// The value of `key` (`section.name` or a plain name) in `dir/config.yaml`, as text: a list
/// is joined with commas. `None` when the file or the key is missing or empty.
pub fn value(dir: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
    value_in(&text, key)
}

/// [`value`] over the file's text.
pub fn value_in(text: &str, key: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let nested = key.split_once('.');
    let mut section: Option<&str> = None;
    for (n, line) in lines.iter().enumerate() {
        let indented = line.starts_with([' ', '\t']);
        let Some((name, rest)) = key_of(line) else { continue };
        if !indented {
            section = Some(name);
            if name == key {
                return scalar_or_list(rest, &lines[n + 1..]);
            }
        } else if let Some((outer, inner)) = nested
            && section == Some(outer)
            && name == inner
        {
            return scalar_or_list(rest, &lines[n + 1..]);
        }
    }
    None
}

/// `key: rest` of a mapping line (not a comment, not a list item).
fn key_of(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') || trimmed.starts_with('-') {
        return None;
    }
    let (key, rest) = trimmed.split_once(':')?;
    let key = key.trim().trim_matches(['"', '\'']);
    (!key.is_empty() && !key.contains(' ')).then_some((key, rest))
}

/// The value after `key:`: a scalar, an inline list, or (when empty) the block list below.
fn scalar_or_list(rest: &str, below: &[&str]) -> Option<String> {
    let rest = strip_comment(rest).trim();
    let joined = if let Some(inner) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        join(inner.split(','))
    } else if rest.is_empty() {
        let items = below
            .iter()
            .map(|l| l.trim())
            .take_while(|l| l.starts_with('-') || l.is_empty() || l.starts_with('#'))
            .filter_map(|l| l.strip_prefix('-'));
        join(items)
    } else {
        unquote(rest).to_string()
    };
    (!joined.is_empty()).then_some(joined)
}

fn join<'a>(items: impl Iterator<Item = &'a str>) -> String {
    items
        .map(|item| unquote(strip_comment(item).trim()))
        .filter(|item| !item.is_empty())
        .collect::<Vec<_>>()
        .join(",")
}

fn strip_comment(text: &str) -> &str {
    text.split(" #").next().unwrap_or(text)
}

fn unquote(text: &str) -> &str {
    text.trim().trim_matches(['"', '\'']).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_beads_writes_is_read() {
        let text = "\
# beads configuration
issue-prefix: \"gt\"
types.custom: convoy,agent  # gastown
status:
  custom: [resolved, \"wontfix\"]
export:
  auto: true
validation:
  fields:
    - a
types:
  infra:
    - agent
    - rig
";
        assert_eq!(value_in(text, "issue-prefix").as_deref(), Some("gt"));
        assert_eq!(value_in(text, "types.custom").as_deref(), Some("convoy,agent"));
        assert_eq!(value_in(text, "status.custom").as_deref(), Some("resolved,wontfix"));
        assert_eq!(value_in(text, "export.auto").as_deref(), Some("true"));
        assert_eq!(value_in(text, "types.infra").as_deref(), Some("agent,rig"));
        assert_eq!(value_in(text, "import.auto"), None);
        assert_eq!(value_in(text, "custom"), None, "a nested key is not a top-level one");
    }
}
