//! `bd remember`, `bd memories`, `bd recall`, `bd forget`: persistent notes for agents, kept
//! as beads keeps them — configuration values `kv.memory.<key>` in the store — shown by
//! `bd prime` and left out of exports unless asked (`bd export --include-memories`).
//!
//! Keys are slugs of the text (its first eight words, lowercase, hyphen-joined, at most 60
//! characters) unless `--key` names one; remembering under a key that exists updates it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::context::BdContext;
use crate::beads::batch::MEMORY_PREFIX;
use crate::cli::CliError;
use crate::cli::output::printable;
use crate::tracker::Request;

#[derive(Debug, clap::Args)]
pub struct RememberArgs {
    /// What to remember.
    pub insight: String,
    /// The key to store it under (default: a slug of the text). An existing memory with this
    /// key is updated in place.
    #[arg(long)]
    pub key: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct MemoriesArgs {
    /// Only memories whose key or text contains this (case-insensitive).
    pub search: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    /// The memory's key (see `bd memories`).
    pub key: String,
}

/// The memories of the workspace, by key.
pub fn memories(ctx: &BdContext) -> Result<BTreeMap<String, String>, CliError> {
    let all = ctx.store()?.read()?.config_all()?;
    Ok(all
        .into_iter()
        .filter_map(|(key, value)| Some((key.strip_prefix(MEMORY_PREFIX)?.to_string(), value)))
        .collect())
}

/// `bd remember "text" [--key k]`.
pub fn cmd_remember(ctx: &BdContext, args: RememberArgs) -> Result<(), CliError> {
    if args.insight.trim().is_empty() {
        return Err(CliError::new("memory content cannot be empty"));
    }
    let key = args.key.clone().unwrap_or_else(|| slugify(&args.insight));
    if key.is_empty() {
        return Err(CliError::new("could not generate a key from the content")
            .with_hint("name one with --key"));
    }
    let existed = memories(ctx)?.contains_key(&key);
    set(ctx, &key, Some(&args.insight))?;
    let verb = if existed { "Updated" } else { "Remembered" };
    #[derive(Serialize)]
    struct Stored<'a> {
        key: &'a str,
        value: &'a str,
        action: String,
    }
    let stored = Stored { key: &key, value: &args.insight, action: verb.to_lowercase() };
    ctx.out.emit(&stored, || {
        format!("{verb} [{}]: {}", printable(&key), printable(&truncate(&args.insight, 80)))
    });
    Ok(())
}

/// `bd memories [search]`.
pub fn cmd_memories(ctx: &BdContext, args: MemoriesArgs) -> Result<(), CliError> {
    let search = args.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let found: BTreeMap<String, String> = memories(ctx)?
        .into_iter()
        .filter(|(key, value)| {
            search
                .as_ref()
                .is_none_or(|s| key.to_lowercase().contains(s) || value.to_lowercase().contains(s))
        })
        .collect();
    ctx.out.emit(&found, || {
        if found.is_empty() {
            return match &search {
                Some(s) => format!("No memories matching {s:?}"),
                None => "No memories stored. Use 'bd remember \"insight\"' to add one.".into(),
            };
        }
        let mut lines = vec![match &search {
            Some(s) => format!("Memories matching {s:?}:\n"),
            None => format!("Memories ({}):\n", found.len()),
        }];
        for (key, value) in &found {
            lines.push(format!("  {}\n    {}\n", printable(key), printable(&truncate(value, 120))));
        }
        lines.join("\n")
    });
    Ok(())
}

/// `bd recall <key>`: the whole text of one memory.
pub fn cmd_recall(ctx: &BdContext, args: KeyArgs) -> Result<(), CliError> {
    let value = memories(ctx)?.remove(&args.key).ok_or_else(|| no_memory(&args.key))?;
    let found = serde_json::json!({ "key": args.key, "value": value, "found": true });
    ctx.out.emit(&found, || value.clone());
    Ok(())
}

/// `bd forget <key>`.
pub fn cmd_forget(ctx: &BdContext, args: KeyArgs) -> Result<(), CliError> {
    let value = memories(ctx)?.remove(&args.key).ok_or_else(|| no_memory(&args.key))?;
    set(ctx, &args.key, None)?;
    let deleted = serde_json::json!({ "key": args.key, "deleted": "true" });
    ctx.out.emit(&deleted, || {
        format!("Forgot [{}]: {}", printable(&args.key), printable(&truncate(&value, 80)))
    });
    Ok(())
}

fn no_memory(key: &str) -> CliError {
    CliError::new(format!("no memory with key {key:?}"))
        .with_hint("run 'bd memories' to see the keys")
}

fn set(ctx: &BdContext, key: &str, value: Option<&str>) -> Result<(), CliError> {
    let full = format!("{MEMORY_PREFIX}{key}");
    let request = Request::SetConfig(vec![(full, value.map(str::to_string))]);
    ctx.require_store()?.submit(request)?.into_done()?;
    crate::cli::journal::commit_soon(ctx, true);
    Ok(())
}

/// A key from the text: its first eight words, lowercase, joined by hyphens, at most 60
/// characters.
fn slugify(text: &str) -> String {
    let lower = text.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let mut slug = words.iter().take(8).copied().collect::<Vec<_>>().join("-");
    if slug.len() > 60 {
        slug.truncate(60);
        while slug.ends_with('-') {
            slug.pop();
        }
    }
    slug
}

/// One line of at most `max` characters (newlines as spaces).
fn truncate(text: &str, max: usize) -> String {
    let flat = text.replace('\n', " ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut short: String = flat.chars().take(max - 3).collect();
    short.push_str("...");
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_slugs_of_the_first_words() {
        assert_eq!(slugify("Always run tests with -race flag!"), "always-run-tests-with-race-flag");
        assert_eq!(slugify("a b c d e f g h i j"), "a-b-c-d-e-f-g-h");
        assert_eq!(slugify("!!!"), "");
        assert_eq!(slugify(&"x".repeat(80)).len(), 60);
    }
}
