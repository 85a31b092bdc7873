//! Issue ids as beads makes them (spec/beads.md §5): `<prefix>-<hash>` with a length that grows
//! with the number of issues, and `<parent>.<n>` for children; and the one grammar every id
//! must satisfy before it is stored as an issue ([`check_id`]).

use sha2::{Digest, Sha256};

/// Longest issue id accepted, in bytes. Generated ids are far shorter (`<prefix>-<8 chars>`
/// plus at most three `.n` suffixes); this only keeps absurd input out.
pub const MAX_ID_LEN: usize = 128;

/// The shape an id must have, quoted by every [`IdError`] as the fix.
const ID_RULE: &str = "ids may contain only letters, digits, '-', '_' and '.' \
     (like \"web-3kf\" or \"web-3kf.1\")";

/// Why a string cannot be the id of an issue. Each message names the id (escaped, so control
/// characters show as `\n`, `\0`…), says what is wrong and shows the shape ids have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("invalid issue id \"\": an id cannot be empty; {ID_RULE}")]
    Empty,
    #[error("invalid issue id {shown:?}: an id may be at most {MAX_ID_LEN} bytes long (this one has {len}); {ID_RULE}", shown = shorten(id))]
    TooLong { id: String, len: usize },
    #[error("invalid issue id {id:?}: {found:?} is not allowed; {ID_RULE}")]
    BadCharacter { id: String, found: char },
    #[error("invalid issue id {id:?}: an id cannot start with {first:?}; {ID_RULE}")]
    BadStart { id: String, first: char },
    #[error(
        "invalid issue id {id:?}: '.' only separates child numbers, so it cannot end an id or follow another '.'; {ID_RULE}"
    )]
    EmptySegment { id: String },
}

/// Checks that `id` may be the id of a stored issue. Ids name directories
/// (`$FLEET_HOME/tasks/<id>/`), so the grammar is beads' id alphabet kept to one safe path
/// component: ASCII letters, digits, `-`, `_` and `.`; not starting with `-` (an option) or
/// `.` (`.`, `..`, hidden files); no empty `.`-separated part (so no `..` anywhere); at most
/// [`MAX_ID_LEN`] bytes. That admits every id beads makes — `bd-a1f`, `my-proj-x9.1.2`,
/// `bd-wisp-0a7v6`, counter ids `bd-12` — and explicit ids of other shapes (`bd create --id …
/// --force`). References that are not stored issues (`external:proj:cap` dependency targets)
/// are not ids and are not checked here.
pub fn check_id(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    if id.len() > MAX_ID_LEN {
        return Err(IdError::TooLong { id: id.to_string(), len: id.len() });
    }
    if let Some(found) = id.chars().find(|&c| !is_id_char(c)) {
        return Err(IdError::BadCharacter { id: id.to_string(), found });
    }
    if let Some(first) = id.chars().next().filter(|&c| c == '-' || c == '.') {
        return Err(IdError::BadStart { id: id.to_string(), first });
    }
    if id.split('.').any(str::is_empty) {
        return Err(IdError::EmptySegment { id: id.to_string() });
    }
    Ok(())
}

/// The characters ids are made of.
fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The beginning of an over-long id, for an error message that stays readable.
fn shorten(id: &str) -> String {
    const SHOWN: usize = 40;
    match id.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &id[..at]),
        None => id.to_string(),
    }
}

/// Shortest and longest hash suffix.
pub const MIN_HASH_LEN: usize = 3;
pub const MAX_HASH_LEN: usize = 8;
/// Deepest child id: `p-abc.1.2.3`.
pub const MAX_CHILD_DEPTH: usize = 3;
const MAX_COLLISION_PROBABILITY: f64 = 0.25;
const NONCES_PER_LENGTH: u32 = 10;

/// The smallest suffix length whose birthday-collision probability with `existing` top-level
/// ids stays at or below 25 %.
pub fn adaptive_length(existing: u64) -> usize {
    let n = existing as f64;
    (MIN_HASH_LEN..=MAX_HASH_LEN)
        .find(|&len| {
            let space = 36f64.powi(len as i32);
            1.0 - (-(n * n) / (2.0 * space)).exp() <= MAX_COLLISION_PROBABILITY
        })
        .unwrap_or(MAX_HASH_LEN)
}

/// What a new id is hashed from.
pub struct IdSeed<'a> {
    pub prefix: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub actor: &'a str,
    pub created_at_nanos: i128,
}

/// Picks a free hash id: tries ten nonces at the adaptive length, then longer suffixes.
/// `taken` says whether an id is already used. Returns `None` only if every candidate is taken.
pub fn generate(seed: &IdSeed<'_>, existing: u64, taken: impl Fn(&str) -> bool) -> Option<String> {
    generate_from(seed, adaptive_length(existing), taken)
}

/// [`generate`], trying suffixes of `shortest` characters first.
fn generate_from(
    seed: &IdSeed<'_>,
    shortest: usize,
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    for len in shortest.clamp(MIN_HASH_LEN, MAX_HASH_LEN)..=MAX_HASH_LEN {
        for nonce in 0..NONCES_PER_LENGTH {
            let candidate = format!("{}-{}", seed.prefix, hash_suffix(seed, nonce, len));
            if !taken(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

fn hash_suffix(seed: &IdSeed<'_>, nonce: u32, len: usize) -> String {
    let content = format!(
        "{}|{}|{}|{}|{}",
        seed.title, seed.description, seed.actor, seed.created_at_nanos, nonce
    );
    let digest = Sha256::digest(content.as_bytes());
    let bytes = match len {
        3 => 2,
        4 => 3,
        5 | 6 => 4,
        _ => 5,
    };
    let mut value: u64 = 0;
    for byte in &digest[..bytes] {
        value = (value << 8) | u64::from(*byte);
    }
    let digits = base36(value);
    if digits.len() >= len {
        digits[digits.len() - len..].to_string()
    } else {
        format!("{}{digits}", "0".repeat(len - digits.len()))
    }
}

fn base36(mut value: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if value == 0 {
        return "0".to_string();
    }
    let mut out = Vec::new();
    while value > 0 {
        out.push(DIGITS[(value % 36) as usize]);
        value /= 36;
    }
    out.reverse();
    String::from_utf8(out).expect("base36 digits are ASCII")
}

/// Another id for a top-level issue whose id `asked` another issue already has (two machines
/// minted it apart): the same prefix and a hash of `birth` (the id of the create op, which
/// differs between the two) one character longer than `asked`'s, so the two stay told apart
/// by eye. The same inputs and the same `taken` give the same id on every machine.
pub fn another_top_level_id(
    asked: &str,
    birth: &str,
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    let (prefix, hash) = asked.rsplit_once('-').unwrap_or((asked, ""));
    let seed = IdSeed { prefix, title: birth, description: asked, actor: "", created_at_nanos: 0 };
    generate_from(&seed, hash.len() + 1, taken)
}

/// The parent of a child id and its last segment: `p-abc.1.2` → (`p-abc.1`, `2`); `None` for
/// a top-level id.
pub fn split_child(id: &str) -> Option<(&str, &str)> {
    let (parent, segment) = id.rsplit_once('.')?;
    child_segment_number(segment).map(|_| (parent, segment))
}

/// How deep a child id is: `p-abc` is 0, `p-abc.1.2` is 2.
pub fn child_depth(id: &str) -> usize {
    id.rsplit_once('-').map_or(0, |(_, suffix)| suffix.matches('.').count())
}

/// The number of a direct child id of `parent` (`p-abc.7` → 7, `p-abc.7_k3m9qx` → 7).
pub fn child_number(parent: &str, child: &str) -> Option<u64> {
    child_segment_number(child.strip_prefix(parent)?.strip_prefix('.')?)
}

/// The number in the last segment of a child id: `7`, or `7_<tag>` for a child made away from
/// its parent's home replica (see `store::apply`, "Child ids").
pub fn child_segment_number(segment: &str) -> Option<u64> {
    if segment.contains('.') {
        return None;
    }
    let digits = segment.split_once('_').map_or(segment, |(digits, _)| digits);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The prefix of issue id `id`, when it has a valid one: `app` of `app-3kf` and of
/// `app-3kf.2`.
pub fn prefix_of(id: &str) -> Option<&str> {
    let top = id.split('.').next()?;
    let (prefix, _) = top.rsplit_once('-')?;
    validate_prefix(prefix).ok().map(|()| prefix)
}

/// Checks a prefix given to `init`: lowercase letters, digits and hyphens, starting with a
/// letter, at most 20 characters.
pub fn validate_prefix(prefix: &str) -> Result<(), String> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 20
        && prefix.starts_with(|c: char| c.is_ascii_lowercase())
        && prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !prefix.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid prefix {prefix:?}: use 1-20 lowercase letters, digits or hyphens, starting with a letter"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_grows_with_the_issue_count() {
        assert_eq!(adaptive_length(0), 3);
        assert_eq!(adaptive_length(150), 3);
        assert_eq!(adaptive_length(500), 4);
        assert_eq!(adaptive_length(3000), 5);
        assert_eq!(adaptive_length(20_000), 6);
        assert_eq!(adaptive_length(10_000_000), 8);
    }

    #[test]
    fn ids_have_the_prefix_and_skip_taken_ones() {
        let seed = IdSeed {
            prefix: "fleet",
            title: "t",
            description: "",
            actor: "a",
            created_at_nanos: 1,
        };
        let first = generate(&seed, 0, |_| false).unwrap();
        assert!(first.starts_with("fleet-") && first.len() == "fleet-".len() + 3);
        let second = generate(&seed, 0, |id| id == first).unwrap();
        assert_ne!(first, second);
    }

    #[test]
    fn child_ids() {
        assert_eq!(child_depth("fleet-abc"), 0);
        assert_eq!(child_depth("my-proj-abc.1.2"), 2);
        assert_eq!(child_number("p-abc", "p-abc.12"), Some(12));
        assert_eq!(child_number("p-abc", "p-abc.1.2"), None);
        assert_eq!(child_number("p-abc", "p-abc.7_k3m9qx"), Some(7));
        assert_eq!(child_number("p-abc", "p-abc.7_k3.2"), None);
        assert_eq!(child_number("p-abc", "p-abc._x"), None);
        assert_eq!(child_number("p-abc", "p-abc.+3"), None);
        assert_eq!(child_depth("p-abc.7_k3m9qx.2"), 2);
    }

    #[test]
    fn ids_beads_makes_are_accepted() {
        for id in [
            "bd-a1f",
            "bd-a1f.1",
            "my-proj-x9.1.2.3",
            "bd-wisp-0a7v6",
            "bd-12",
            "Web_2-ABC",
            "_scratch-1",
            "x",
            &format!("p-{}", "a".repeat(MAX_ID_LEN - 2)),
        ] {
            assert_eq!(check_id(id), Ok(()), "{id}");
        }
    }

    #[test]
    fn ids_that_are_not_one_safe_path_component_are_refused() {
        let refused = [
            "",
            "/abs/dir",
            "../x",
            "a/b",
            "a\\b",
            ".",
            "..",
            ".hidden",
            "-rf",
            "a..b",
            "p-abc.",
            "a b",
            "a\nb",
            " t-1",
            "t-1\0",
            "t-\u{7f}",
            "C:x",
            "external:proj:cap",
            "t-é",
        ];
        for id in refused {
            assert!(check_id(id).is_err(), "{id:?} is refused");
        }
        assert!(check_id(&"a".repeat(MAX_ID_LEN + 1)).is_err());
    }

    #[test]
    fn errors_name_the_id_the_problem_and_the_fix() {
        let rule = "ids may contain only letters, digits, '-', '_' and '.' (like \"web-3kf\" or \"web-3kf.1\")";
        let message = |id: &str| check_id(id).unwrap_err().to_string();
        assert_eq!(
            message("../x"),
            format!("invalid issue id \"../x\": '/' is not allowed; {rule}")
        );
        assert_eq!(
            message("-rf"),
            format!("invalid issue id \"-rf\": an id cannot start with '-'; {rule}")
        );
        assert_eq!(
            message(".."),
            format!("invalid issue id \"..\": an id cannot start with '.'; {rule}")
        );
        assert_eq!(
            message("t-1\0"),
            format!("invalid issue id \"t-1\\0\": '\\0' is not allowed; {rule}")
        );
        assert_eq!(
            message("a\nb"),
            format!("invalid issue id \"a\\nb\": '\\n' is not allowed; {rule}")
        );
        assert_eq!(message(""), format!("invalid issue id \"\": an id cannot be empty; {rule}"));
        assert!(message("a..b").starts_with("invalid issue id \"a..b\": '.' only separates"));
        let long = message(&"a".repeat(1000));
        assert!(long.contains("at most 128 bytes long (this one has 1000)"), "{long}");
        assert!(long.len() < 300, "a long id is shortened: {long}");
    }

    /// Every id in the real data of tests/fixtures (copies of /work/shared/fixtures): the
    /// records' ids, their parents, and both ends of their dependencies and comments.
    #[test]
    fn every_id_in_the_fixtures_is_accepted() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut checked = 0;
        for name in
            ["beads-git-era-sample.jsonl", "beads-dolt-era-sample.jsonl", "fleet-own-issues.jsonl"]
        {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let record: serde_json::Value = serde_json::from_str(line).unwrap();
                for id in fixture_ids(&record) {
                    assert_eq!(check_id(id), Ok(()), "{name}: {id}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 100, "only {checked} ids found");
    }

    fn fixture_ids(record: &serde_json::Value) -> Vec<&str> {
        let mut ids: Vec<&str> =
            ["id", "parent"].iter().filter_map(|k| record[*k].as_str()).collect();
        for key in ["dependencies", "comments"] {
            for item in record[key].as_array().into_iter().flatten() {
                ids.extend(item["issue_id"].as_str());
                ids.extend(item["depends_on_id"].as_str().filter(|t| !t.starts_with("external:")));
            }
        }
        ids
    }
}
