//! `rename-prefix`: every issue of the workspace's prefix moves to a new id with the new
//! prefix (`old-a1f.2` → `new-a1f.2`), and every textual reference to an old id in the fields
//! of any issue follows, as do edges and comments. Done as ops in one transaction — each
//! issue recreated under its new id with its edges, comments copied, the old one deleted — so
//! the journal carries the rename to other replicas; then the store's prefix changes.

use std::collections::BTreeMap;

use super::Refusal;
use crate::model::{Dependency, Issue};
use crate::op::OpKind;
use crate::store::Writer;

/// Old id → new id, for every issue whose id starts with `old-`.
pub fn rename_plan(ids: &[String], old: &str, new: &str) -> BTreeMap<String, String> {
    let from = format!("{old}-");
    ids.iter()
        .filter_map(|id| Some((id.clone(), format!("{new}-{}", id.strip_prefix(&from)?))))
        .collect()
}

/// Renames the ids of `plan` inside `writer`'s transaction and sets the prefix to `new`.
pub fn rename_prefix(
    writer: &mut Writer<'_>,
    plan: &BTreeMap<String, String>,
    new: &str,
) -> Result<(), Refusal> {
    crate::id::validate_prefix(new).map_err(Refusal::Invalid)?;
    let rename = |id: &str| plan.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut all = Vec::new();
    writer.view().scan_issues(&mut |issue| {
        all.push(issue);
        Ok(true)
    })?;
    let mut edges: Vec<Dependency> = Vec::new();
    for issue in &all {
        for mut dep in writer.view().deps_of(&issue.id)? {
            if plan.contains_key(&dep.issue_id) || plan.contains_key(&dep.depends_on_id) {
                dep.issue_id = rename(&dep.issue_id);
                dep.depends_on_id = rename(&dep.depends_on_id);
                edges.push(dep);
            }
        }
    }
    for issue in all {
        let mut renamed = issue.clone();
        rewrite_text(&mut renamed, plan);
        let Some(new_id) = plan.get(&issue.id) else {
            if renamed != issue {
                writer.apply(OpKind::Put { issue: Box::new(renamed) })?;
            }
            continue;
        };
        let comments = writer.view().comments_of(&issue.id)?;
        renamed.id.clone_from(new_id);
        writer.apply(OpKind::Delete { id: issue.id.clone() })?;
        writer.apply(OpKind::Create { issue: Box::new(renamed), deps: Vec::new() })?;
        for mut comment in comments {
            comment.issue_id.clone_from(new_id);
            comment.text = rewrite_str(&comment.text, plan);
            writer.apply(OpKind::Comment { comment })?;
        }
    }
    for dep in edges {
        writer.apply(OpKind::DepAdd { dep })?;
    }
    writer.set_prefix(new)?;
    Ok(())
}

/// Replaces every old id of `plan` in the issue's text fields, longest ids first (so `a-1`
/// does not eat the start of `a-12`), and only where the id stands as a whole word.
fn rewrite_text(issue: &mut Issue, plan: &BTreeMap<String, String>) {
    for field in [
        &mut issue.title,
        &mut issue.description,
        &mut issue.design,
        &mut issue.acceptance_criteria,
        &mut issue.notes,
    ] {
        *field = rewrite_str(field, plan);
    }
}

/// `text` with every old id of `plan` replaced, longest first.
fn rewrite_str(text: &str, plan: &BTreeMap<String, String>) -> String {
    let mut ids: Vec<(&String, &String)> = plan.iter().collect();
    ids.sort_by_key(|(old, _)| std::cmp::Reverse(old.len()));
    let mut out = text.to_string();
    for (old, new) in ids {
        if out.contains(old.as_str()) {
            out = replace_word(&out, old, new);
        }
    }
    out
}

fn replace_word(text: &str, old: &str, new: &str) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(old) {
        let before = if at > 0 { rest[..at].chars().next_back() } else { out.chars().next_back() };
        let after = rest[at + old.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(word) || after.is_some_and(word) {
            out.push_str(old);
        } else {
            out.push_str(new);
        }
        rest = &rest[at + old.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_old_prefix_moves_and_text_follows_whole_words() {
        let ids = ["a-1".to_string(), "a-12.1".to_string(), "b-3".to_string()];
        let plan = rename_plan(&ids, "a", "zed");
        assert_eq!(plan.len(), 2);
        assert_eq!(plan["a-12.1"], "zed-12.1");
        assert_eq!(
            replace_word("see a-1, not xa-1 or a-12", "a-1", "zed-1"),
            "see zed-1, not xa-1 or a-12"
        );
    }
}
