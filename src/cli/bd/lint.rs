//! `bd lint`: checks that issues carry the sections their type requires (spec/beads.md §2; the
//! rule is the tracker's, `crate::tracker::missing_sections`). Any finding makes the command
//! exit 1, naming each issue.

use serde::Serialize;

use super::context::BdContext;
use crate::cli::CliError;
use crate::cli::output::printable;
use crate::model::Status;
use crate::store::ListFilter;
pub use crate::tracker::missing_sections;

#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// Issues to check (default: every open issue).
    pub ids: Vec<String>,
    /// Only issues of this type.
    #[arg(short = 't', long = "type")]
    pub issue_type: Option<String>,
    /// Only this status (default: open; "all" for every status).
    #[arg(short, long)]
    pub status: Option<String>,
}

#[derive(Serialize)]
struct LintResult {
    id: String,
    title: String,
    #[serde(rename = "type")]
    issue_type: String,
    missing: Vec<String>,
    warnings: usize,
}

#[derive(Serialize)]
struct LintReport {
    total: usize,
    issues: usize,
    results: Vec<LintResult>,
}

pub fn cmd_lint(ctx: &BdContext, args: LintArgs) -> Result<(), CliError> {
    let store = ctx.open_store()?;
    let reader = store.read()?;
    let mut issues = Vec::new();
    if args.ids.is_empty() {
        let statuses = match args.status.as_deref() {
            None | Some("open") => vec![Status::Open],
            Some("all") => Vec::new(),
            Some(other) => vec![Status::parse_user(other)?],
        };
        let filter = ListFilter {
            all: statuses.is_empty(),
            statuses,
            types: args.issue_type.iter().cloned().collect(),
            ..ListFilter::default()
        };
        issues.extend(reader.list(&filter)?.0.into_iter().map(|s| s.issue));
        issues.sort_by(|a, b| a.id.cmp(&b.id));
    } else {
        for input in &args.ids {
            match reader.resolve(input).and_then(|id| reader.issue(&id)) {
                Ok(Some(issue)) => issues.push(issue),
                Ok(None) | Err(_) => ctx.out.warn(&format!("Issue not found: {input}")),
            }
        }
    }
    let results: Vec<LintResult> = issues
        .iter()
        .filter_map(|issue| {
            let missing = missing_sections(issue);
            (!missing.is_empty()).then(|| LintResult {
                id: issue.id.clone(),
                title: issue.title.clone(),
                issue_type: issue.issue_type.clone(),
                warnings: missing.len(),
                missing: missing.iter().map(|m| format!("## {m}")).collect(),
            })
        })
        .collect();
    let report = LintReport {
        total: results.iter().map(|r| r.warnings).sum(),
        issues: results.len(),
        results,
    };
    ctx.out.emit(&report, || {
        if report.results.is_empty() {
            return format!("✓ No template warnings found ({} issues checked)", issues.len());
        }
        let mut lines = vec![
            format!("Template warnings ({} issues, {} warnings):", report.issues, report.total),
            String::new(),
        ];
        for result in &report.results {
            let (kind, title) = (printable(&result.issue_type), printable(&result.title));
            lines.push(format!("{} [{kind}]: {title}", result.id));
            lines.extend(result.missing.iter().map(|m| format!("  ⚠ Missing: {m}")));
            lines.push(String::new());
        }
        lines.join("\n")
    });
    if report.results.is_empty() { Ok(()) } else { Err(CliError::silent()) }
}
