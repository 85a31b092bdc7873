//! `fleet doctor`'s search for secrets already in the queue: keys written before writes were
//! redacted on their way in (or imported as they were). It looks at what the store holds now
//! (every issue's fields and comments) and at the journal of ops (what the git journal holds
//! and `fleet sync` pushes), with the redactor of the home's config: the token shapes, and the
//! values of the secret-looking variables of this environment, the coders and their accounts.
//!
//! What it prints names where secrets are and their kinds (`sk-ant-<redacted>`), never a
//! secret; the fix says how to rotate the keys and purge the queue.

use super::setup_check::SetupCheck;
use crate::redact::Redactor;
use crate::store::{Store, StoreError};

/// Where secrets were found.
#[derive(Debug, Default)]
struct Found {
    /// Issues whose fields or comments hold one now.
    issues: Vec<String>,
    /// Ops of the journal that hold one.
    ops: usize,
    /// The kinds of secret seen, as markers.
    kinds: Vec<String>,
}

impl Found {
    fn note(&mut self, kinds: Vec<String>) {
        for kind in kinds {
            if !self.kinds.contains(&kind) {
                self.kinds.push(kind);
            }
        }
    }
}

/// The check: no secret in the store or its journal, or where they are and how to purge them.
pub fn secrets_check(store: &Store, redactor: &Redactor) -> SetupCheck {
    const SUBJECT: &str = "queue";
    let found = match find(store, redactor) {
        Ok(found) => found,
        Err(error) => {
            return SetupCheck::warning(
                SUBJECT,
                "secrets",
                format!("could not look for secrets: {error}"),
                "run `fleet doctor` again once the store reads",
            );
        }
    };
    if found.issues.is_empty() && found.ops == 0 {
        return SetupCheck::ok(SUBJECT, "secrets", "no secret in the store or its journal");
    }
    let mut shown: Vec<&str> = found.issues.iter().map(String::as_str).take(10).collect();
    if found.issues.len() > 10 {
        shown.push("…");
    }
    let issues = match found.issues.len() {
        0 => "no issue now".to_string(),
        1 => format!("1 issue ({})", shown.join(", ")),
        n => format!("{n} issues ({})", shown.join(", ")),
    };
    let ops = if found.ops == 1 { "1 op".to_string() } else { format!("{} ops", found.ops) };
    let detail = format!(
        "{issues} and {ops} of the journal hold secrets in clear: {}",
        found.kinds.join(", ")
    );
    SetupCheck::problem(SUBJECT, "secrets", detail, purge_fix(&store.replica()))
}

/// How to rotate and purge: the journal is history (and may be on remotes), so the queue is
/// started over from a redacted export.
fn purge_fix(replica: &str) -> String {
    format!(
        "rotate each key now: it was stored in clear, and `fleet sync` pushes the journal to every remote. \
         To purge them: `fleet export --all --redact -o clean.jsonl` (every text masked), move the `.beads` \
         directory aside, `fleet init` and `fleet import clean.jsonl`; then drop the old journal: \
         `git update-ref -d refs/fleet/journal/{replica}` and `git gc --prune=now` in the journal's repository, \
         and `git push REMOTE --delete refs/fleet/journal/{replica}` for each remote it was pushed to"
    )
}

fn find(store: &Store, redactor: &Redactor) -> Result<Found, StoreError> {
    let mut found = Found::default();
    let reader = store.read()?;
    let view = reader.view();
    view.scan_issues(&mut |issue| {
        let mut kinds = redactor.secrets_in(&serde_json::to_string(&issue).unwrap_or_default());
        for comment in view.comments_of(&issue.id)? {
            kinds.extend(redactor.secrets_in(&comment.text));
        }
        if !kinds.is_empty() {
            found.issues.push(issue.id.clone());
            found.note(kinds);
        }
        Ok(true)
    })?;
    let rows = store.journal_decoded(0, |row| Ok(String::from_utf8_lossy(row).into_owned()))?;
    for (_, row) in rows {
        let kinds = redactor.secrets_in(&row);
        if !kinds.is_empty() {
            found.ops += 1;
            found.note(kinds);
        }
    }
    Ok(found)
}
