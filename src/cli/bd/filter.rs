//! The filters bd's `list`, `search` and `count` take beyond the store's own (status, type,
//! assignee, labels, limit): beads 1.0.5's flags, applied to each listed issue after the
//! store's listing.
//!
//! A few flags are accepted and change nothing, because what they act on does not exist in
//! fleet's store (no pager, no templates or gates hidden from lists, no separate table of
//! infrastructure beads); their help says so.

use jiff::Timestamp;

use crate::cli::CliError;
use crate::cli::issue::split_csv;
use crate::model::{Issue, dep_type, parse_priority};
use crate::store::{IssueSummary, MetadataTest, Reader};
use crate::time::parse_user_date;

/// bd's extra list filters.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct ExtraFilterArgs {
    /// Only issues with at least one of these labels.
    #[arg(long)]
    pub label_any: Vec<String>,
    /// Leave out issues with any of these labels.
    #[arg(long)]
    pub exclude_label: Vec<String>,
    /// Only issues with a label matching this glob (`tech-*`).
    #[arg(long, value_name = "GLOB")]
    pub label_pattern: Option<String>,
    /// Only issues with a label matching this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub label_regex: Option<String>,
    /// Only issues without labels.
    #[arg(long)]
    pub no_labels: bool,
    /// Lowest priority number to include (0 = critical).
    #[arg(long)]
    pub priority_min: Option<String>,
    /// Highest priority number to include.
    #[arg(long)]
    pub priority_max: Option<String>,
    /// Only titles containing this text (case-insensitive).
    #[arg(long, alias = "title")]
    pub title_contains: Option<String>,
    /// Only descriptions containing this text (case-insensitive).
    #[arg(long)]
    pub desc_contains: Option<String>,
    /// Only notes containing this text (case-insensitive).
    #[arg(long)]
    pub notes_contains: Option<String>,
    /// Only issues whose external reference contains this text (case-insensitive).
    #[arg(long)]
    pub external_contains: Option<String>,
    /// Only issues with an empty description.
    #[arg(long)]
    pub empty_description: bool,
    /// Only unassigned issues.
    #[arg(long)]
    pub no_assignee: bool,
    /// Only these issues (comma-separated ids).
    #[arg(long = "id", value_name = "IDS")]
    pub ids: Vec<String>,
    /// Only issues whose spec_id starts with this.
    #[arg(long)]
    pub spec: Option<String>,
    /// Leave out these types (comma-separated or repeated).
    #[arg(long)]
    pub exclude_type: Vec<String>,
    /// Only descendants of this issue.
    #[arg(long, alias = "filter-parent")]
    pub parent: Option<String>,
    /// Only issues without a parent.
    #[arg(long)]
    pub no_parent: bool,
    /// Only pinned issues.
    #[arg(long, conflicts_with = "no_pinned")]
    pub pinned: bool,
    /// Leave out pinned issues.
    #[arg(long)]
    pub no_pinned: bool,
    /// Only issues with this metadata field: KEY=VALUE (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub metadata_field: Vec<String>,
    /// Only issues whose metadata has this key.
    #[arg(long, value_name = "KEY")]
    pub has_metadata_key: Option<String>,
    /// Only molecules of this type (swarm, patrol, work): the `mol_type` an imported beads
    /// issue carries (fleet makes no molecules of its own).
    #[arg(long, value_name = "TYPE")]
    pub mol_type: Option<String>,
    /// Only wisps of this type (heartbeat, ping, patrol…): the `wisp_type` an imported beads
    /// issue carries.
    #[arg(long, value_name = "TYPE")]
    pub wisp_type: Option<String>,
    #[command(flatten)]
    pub dates: DateFilterArgs,
    /// Accepted: fleet lists agent, rig, role and message beads with the rest already.
    #[arg(long)]
    pub include_infra: bool,
    /// Accepted: fleet lists templates with the rest already.
    #[arg(long)]
    pub include_templates: bool,
    /// Accepted: fleet has no gate issues to hide.
    #[arg(long)]
    pub include_gates: bool,
    /// Accepted: fleet never pages its output.
    #[arg(long)]
    pub no_pager: bool,
}

/// The date ranges of [`ExtraFilterArgs`]: each bound is exclusive, and takes the forms
/// `--due` does (2025-01-15, RFC 3339, +6h, tomorrow…).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct DateFilterArgs {
    #[arg(long)]
    pub created_after: Option<String>,
    #[arg(long)]
    pub created_before: Option<String>,
    #[arg(long)]
    pub updated_after: Option<String>,
    #[arg(long)]
    pub updated_before: Option<String>,
    #[arg(long)]
    pub closed_after: Option<String>,
    #[arg(long)]
    pub closed_before: Option<String>,
    #[arg(long)]
    pub due_after: Option<String>,
    #[arg(long)]
    pub due_before: Option<String>,
    #[arg(long)]
    pub defer_after: Option<String>,
    #[arg(long)]
    pub defer_before: Option<String>,
}

impl ExtraFilterArgs {
    /// Whether no extra filter is given (the store's filters say it all). The accepted-only
    /// flags do not count.
    pub fn is_empty(&self) -> bool {
        let accepted_only = ExtraFilterArgs {
            include_infra: self.include_infra,
            include_templates: self.include_templates,
            include_gates: self.include_gates,
            no_pager: self.no_pager,
            ..ExtraFilterArgs::default()
        };
        *self == accepted_only
    }

    pub fn compile(&self, reader: &Reader, now: Timestamp) -> Result<Extra, CliError> {
        let family = match &self.parent {
            Some(parent) => {
                let parent = reader.resolve(parent)?;
                let family = descendants(reader, &parent)?;
                Some((parent, family))
            }
            None => None,
        };
        let ids = split_csv(&self.ids)
            .iter()
            .map(|id| reader.resolve(id).map_err(CliError::from))
            .collect::<Result<Vec<_>, _>>()?;
        let lower = |t: &Option<String>| t.as_ref().map(|t| t.to_lowercase());
        Ok(Extra {
            label_any: split_csv(&self.label_any),
            exclude_label: split_csv(&self.exclude_label),
            label_match: label_matcher(self)?,
            no_labels: self.no_labels,
            priority_range: (
                self.priority_min.as_deref().map(parse_priority).transpose()?.unwrap_or(0),
                self.priority_max.as_deref().map(parse_priority).transpose()?.unwrap_or(4),
            ),
            title: lower(&self.title_contains),
            desc: lower(&self.desc_contains),
            notes: lower(&self.notes_contains),
            external: lower(&self.external_contains),
            empty_description: self.empty_description,
            no_assignee: self.no_assignee,
            ids,
            spec: self.spec.clone(),
            exclude_types: split_csv(&self.exclude_type),
            family,
            no_parent: self.no_parent,
            pinned: if self.pinned { Some(true) } else { self.no_pinned.then_some(false) },
            metadata: metadata_test(self.has_metadata_key.as_deref(), &self.metadata_field)?,
            dates: self.dates.compile(now)?,
            beads_fields: [("mol_type", &self.mol_type), ("wisp_type", &self.wisp_type)]
                .into_iter()
                .filter_map(|(key, want)| want.as_ref().map(|w| (key, w.to_lowercase())))
                .collect(),
        })
    }
}

/// `--label-pattern` (a glob) and `--label-regex` as one regular expression.
fn label_matcher(args: &ExtraFilterArgs) -> Result<Option<regex::Regex>, CliError> {
    let source = match (&args.label_pattern, &args.label_regex) {
        (Some(_), Some(_)) => {
            return Err(CliError::new("give --label-pattern or --label-regex, not both"));
        }
        (Some(glob), None) => format!("^{}$", glob_to_regex(glob)),
        (None, Some(regex)) => regex.clone(),
        (None, None) => return Ok(None),
    };
    regex::Regex::new(&source)
        .map(Some)
        .map_err(|e| CliError::new(format!("invalid label pattern {source:?}: {e}")))
}

/// A glob (`*`, `?`) as the text of an anchored-free regular expression.
fn glob_to_regex(glob: &str) -> String {
    let mut out = String::new();
    for c in glob.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out
}

/// `--has-metadata-key` and `--metadata-field KEY=VALUE` as the store's metadata test.
pub fn metadata_test(key: Option<&str>, pairs: &[String]) -> Result<MetadataTest, CliError> {
    let fields = pairs
        .iter()
        .map(|pair| {
            pair.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).ok_or_else(|| {
                CliError::new(format!("--metadata-field {pair:?}: expected KEY=VALUE"))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(MetadataTest { keys: key.into_iter().map(str::to_string).collect(), fields })
}

/// An exclusive range of instants; either end may be open.
type Range = (Option<Timestamp>, Option<Timestamp>);

fn within(t: Option<Timestamp>, (after, before): Range) -> bool {
    if after.is_none() && before.is_none() {
        return true;
    }
    t.is_some_and(|t| after.is_none_or(|a| t > a) && before.is_none_or(|b| t < b))
}

/// Compiled [`DateFilterArgs`]: created, updated, closed, due, defer ranges.
#[derive(Debug)]
pub struct Dates([Range; 5]);

impl DateFilterArgs {
    fn compile(&self, now: Timestamp) -> Result<Dates, CliError> {
        let date = |flag: &'static str, v: &Option<String>| -> Result<_, CliError> {
            Ok(v.as_deref().map(|v| parse_user_date(flag, v, now)).transpose()?.flatten())
        };
        Ok(Dates([
            (
                date("created-after", &self.created_after)?,
                date("created-before", &self.created_before)?,
            ),
            (
                date("updated-after", &self.updated_after)?,
                date("updated-before", &self.updated_before)?,
            ),
            (
                date("closed-after", &self.closed_after)?,
                date("closed-before", &self.closed_before)?,
            ),
            (date("due-after", &self.due_after)?, date("due-before", &self.due_before)?),
            (date("defer-after", &self.defer_after)?, date("defer-before", &self.defer_before)?),
        ]))
    }
}

impl Dates {
    fn matches(&self, issue: &Issue) -> bool {
        let [created, updated, closed, due, defer] = self.0;
        within(Some(issue.created_at), created)
            && within(Some(issue.updated_at), updated)
            && within(issue.closed_at, closed)
            && within(issue.due_at, due)
            && within(issue.defer_until, defer)
    }
}

/// Compiled [`ExtraFilterArgs`].
#[derive(Debug)]
pub struct Extra {
    label_any: Vec<String>,
    exclude_label: Vec<String>,
    label_match: Option<regex::Regex>,
    no_labels: bool,
    priority_range: (u8, u8),
    title: Option<String>,
    desc: Option<String>,
    notes: Option<String>,
    external: Option<String>,
    empty_description: bool,
    no_assignee: bool,
    ids: Vec<String>,
    spec: Option<String>,
    exclude_types: Vec<String>,
    family: Option<(String, Vec<String>)>,
    no_parent: bool,
    pinned: Option<bool>,
    metadata: MetadataTest,
    dates: Dates,
    /// Fields of beads' own an issue keeps from an import (`mol_type`, `wisp_type`) and the
    /// value each must have.
    beads_fields: Vec<(&'static str, String)>,
}

fn contains(haystack: &str, lowered: Option<&String>) -> bool {
    lowered.is_none_or(|needle| haystack.to_lowercase().contains(needle.as_str()))
}

impl Extra {
    pub fn matches(&self, summary: &IssueSummary) -> bool {
        let issue = &summary.issue;
        self.labels_match(issue)
            && (self.priority_range.0..=self.priority_range.1).contains(&issue.priority)
            && contains(&issue.title, self.title.as_ref())
            && contains(&issue.description, self.desc.as_ref())
            && contains(&issue.notes, self.notes.as_ref())
            && contains(&issue.external_ref, self.external.as_ref())
            && (!self.empty_description || issue.description.trim().is_empty())
            && (!self.no_assignee || issue.assignee.is_empty())
            && (self.ids.is_empty() || self.ids.contains(&issue.id))
            && self.spec.as_ref().is_none_or(|s| issue.spec_id.starts_with(s.as_str()))
            && !self.exclude_types.contains(&issue.issue_type)
            && self.family.as_ref().is_none_or(|(parent, family)| {
                family.contains(&issue.id)
                    || issue.id.strip_prefix(parent.as_str()).is_some_and(|r| r.starts_with('.'))
            })
            && (!self.no_parent || summary.parent.is_none())
            && self.pinned.is_none_or(|pinned| issue.pinned == pinned)
            && self.metadata.matches(issue)
            && self.dates.matches(issue)
            && self.beads_fields.iter().all(|(key, want)| {
                issue
                    .extra
                    .get(*key)
                    .and_then(|v| v.as_str())
                    .is_some_and(|v| v.to_lowercase() == *want)
            })
    }

    fn labels_match(&self, issue: &Issue) -> bool {
        (self.label_any.is_empty() || self.label_any.iter().any(|l| issue.labels.contains(l)))
            && !self.exclude_label.iter().any(|l| issue.labels.contains(l))
            && self
                .label_match
                .as_ref()
                .is_none_or(|re| issue.labels.iter().any(|l| re.is_match(l)))
            && (!self.no_labels || issue.labels.is_empty())
    }
}

/// Every descendant of `parent` through parent-child edges.
pub fn descendants(reader: &Reader, parent: &str) -> Result<Vec<String>, CliError> {
    let mut found = Vec::new();
    let mut stack = vec![parent.to_string()];
    while let Some(node) = stack.pop() {
        for (child, kind) in reader.dependents(&node)? {
            if kind == dep_type::PARENT_CHILD && !found.contains(&child) {
                found.push(child.clone());
                stack.push(child);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_anchored_patterns() {
        let re = regex::Regex::new(&format!("^{}$", glob_to_regex("tech-*"))).unwrap();
        assert!(re.is_match("tech-debt"));
        assert!(!re.is_match("a-tech-debt"));
        assert!(regex::Regex::new(&glob_to_regex("a.b?")).unwrap().is_match("a.bc"));
    }

    #[test]
    fn accepted_only_flags_leave_the_filter_empty() {
        let args = ExtraFilterArgs { include_infra: true, no_pager: true, ..Default::default() };
        assert!(args.is_empty());
        assert!(!ExtraFilterArgs { no_assignee: true, ..Default::default() }.is_empty());
    }
}
