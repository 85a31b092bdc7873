//! The sections an issue's type requires in its text (spec/beads.md §2), and the workspace
//! policy `validation.on-create` that holds new issues to them: `error` refuses an issue that
//! lacks one, `warn` creates it and says what is missing, anything else checks nothing. The
//! rule is here once for `fleet create`, `bd create` (whose `--validate` asks for `error`),
//! `bd q`, bd's markdown files, the server and `bd lint`.
//!
//! Required sections: bug — Steps to Reproduce, Acceptance Criteria; task, feature, story —
//! Acceptance Criteria; epic — Success Criteria (Acceptance Criteria also counts); decision —
//! Decision, Rationale, Alternatives Considered; spike — Goal, Findings; chore and the rest —
//! none. A section counts when its heading text appears anywhere in the description
//! (case-insensitive); a non-empty acceptance-criteria field satisfies Acceptance (or Success)
//! Criteria.

use super::Refusal;
use crate::model::Issue;

/// The sections an issue type requires.
pub fn required_sections(issue_type: &str) -> &'static [&'static str] {
    match issue_type {
        "bug" => &["Steps to Reproduce", "Acceptance Criteria"],
        "task" | "feature" | "story" => &["Acceptance Criteria"],
        "epic" => &["Success Criteria"],
        "decision" => &["Decision", "Rationale", "Alternatives Considered"],
        "spike" => &["Goal", "Findings"],
        _ => &[],
    }
}

/// The required sections `issue` lacks.
pub fn missing_sections(issue: &Issue) -> Vec<&'static str> {
    let mut text = issue.description.to_lowercase();
    if !issue.acceptance_criteria.is_empty() {
        text.push('\n');
        text.push_str(&issue.acceptance_criteria.to_lowercase());
    }
    required_sections(&issue.issue_type)
        .iter()
        .copied()
        .filter(|section| {
            let heading = section.to_lowercase();
            let criteria = heading == "acceptance criteria" || heading == "success criteria";
            let present = text.contains(&heading)
                || (heading == "success criteria" && text.contains("acceptance criteria"))
                || (criteria && !issue.acceptance_criteria.trim().is_empty());
            !present
        })
        .collect()
}

/// What the `validation.on-create` policy `mode` (or `validate`, which asks for `error`) says
/// of the new `issue`: refused, a warning to show, or nothing.
pub fn create_policy(
    mode: Option<&str>,
    validate: bool,
    issue: &Issue,
) -> Result<Option<String>, Refusal> {
    let mode = if validate {
        "error".to_string()
    } else {
        mode.unwrap_or_default().trim().to_ascii_lowercase()
    };
    if mode != "error" && mode != "warn" {
        return Ok(None);
    }
    let missing = missing_sections(issue);
    if missing.is_empty() {
        return Ok(None);
    }
    let headings: Vec<String> = missing.iter().map(|m| format!("## {m}")).collect();
    let message =
        format!("missing required sections for {}: {}", issue.issue_type, headings.join(", "));
    if mode == "error" {
        return Err(Refusal::Invalid(message));
    }
    Ok(Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(issue_type: &str, description: &str) -> Issue {
        let mut issue = Issue::new("t-1".into(), "t".into(), jiff::Timestamp::UNIX_EPOCH);
        issue.issue_type = issue_type.into();
        issue.description = description.into();
        issue
    }

    #[test]
    fn each_type_requires_its_sections() {
        assert_eq!(
            missing_sections(&issue("bug", "")),
            ["Steps to Reproduce", "Acceptance Criteria"]
        );
        assert!(
            missing_sections(&issue("bug", "## Steps to reproduce\n## acceptance criteria"))
                .is_empty()
        );
        assert_eq!(missing_sections(&issue("task", "just text")), ["Acceptance Criteria"]);
        assert!(missing_sections(&issue("epic", "## Acceptance Criteria")).is_empty());
        assert!(missing_sections(&issue("chore", "")).is_empty());
        assert_eq!(missing_sections(&issue("spike", "## Goal")), ["Findings"]);
    }

    #[test]
    fn the_acceptance_field_counts() {
        let mut task = issue("task", "");
        task.acceptance_criteria = "it works".into();
        assert!(missing_sections(&task).is_empty());
    }
}
