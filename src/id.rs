//! Issue ids as beads makes them (spec/beads.md §5): `<prefix>-<hash>` with a length that grows
//! with the number of issues, and `<parent>.<n>` for children.

use sha2::{Digest, Sha256};

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
    for len in adaptive_length(existing)..=MAX_HASH_LEN {
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

/// How deep a child id is: `p-abc` is 0, `p-abc.1.2` is 2.
pub fn child_depth(id: &str) -> usize {
    id.rsplit_once('-').map_or(0, |(_, suffix)| suffix.matches('.').count())
}

/// The number of a direct child id of `parent` (`p-abc.7` → 7).
pub fn child_number(parent: &str, child: &str) -> Option<u64> {
    child.strip_prefix(parent)?.strip_prefix('.')?.parse().ok()
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
    }
}
