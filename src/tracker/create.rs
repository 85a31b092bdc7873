//! Creating an issue: its id (generated, or given and checked), the parent edge and inherited
//! labels, and the `--deps` edges, under the same rules as `dep add`.

use jiff::Timestamp;

use super::Refusal;
use super::deps::{check_epic_rule, new_edge, resolve_target};
use crate::model::{FleetFields, Issue, dep_type, is_foreign_ref};
use crate::op::OpKind;
use crate::store::Writer;

/// A dependency as typed with `--deps`: `id`, or `type:id`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DepSpec {
    pub kind: String,
    pub target: String,
    /// The edge runs the other way: the target depends on the new issue (`blocks:X`, "the new
    /// issue blocks X", as beads reads it since 1.0.0).
    #[serde(default)]
    pub reverse: bool,
}

impl DepSpec {
    /// Parses `--deps` as beads 1.0 does: `id`, `blocked-by:id` and `depends-on:id` make the
    /// new issue wait for `id`; `blocks:id` makes `id` wait for the new issue; any other
    /// `type:id` is an edge of that type from the new issue. `external:…` is a target, not a
    /// type. Spaces around the parts are ignored.
    pub fn parse(spec: &str) -> DepSpec {
        let spec = spec.trim();
        let (kind, target, reverse) = match spec.split_once(':') {
            Some((kind, target)) if kind.trim() != "external" => {
                let kind = kind.trim();
                match kind {
                    "blocked-by" | "depends-on" => (dep_type::BLOCKS, target, false),
                    dep_type::BLOCKS => (dep_type::BLOCKS, target, true),
                    other => (other, target, false),
                }
            }
            _ => (dep_type::BLOCKS, spec, false),
        };
        DepSpec { kind: kind.to_string(), target: target.trim().to_string(), reverse }
    }
}

/// A new issue.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct CreateRequest {
    /// An id of the caller's choosing (checked against the id grammar by the store); `None`
    /// generates one.
    pub id: Option<String>,
    pub title: String,
    pub description: String,
    pub design: String,
    pub acceptance_criteria: String,
    pub notes: String,
    pub priority: u8,
    pub issue_type: String,
    pub assignee: String,
    pub labels: Vec<String>,
    /// The parent, as typed: the new issue gets a child id and a parent-child edge.
    pub parent: Option<String>,
    /// Copy the parent's labels onto the new issue.
    pub inherit_labels: bool,
    pub deps: Vec<DepSpec>,
    pub estimated_minutes: Option<i64>,
    pub due_at: Option<Timestamp>,
    pub defer_until: Option<Timestamp>,
    pub external_ref: String,
    pub fleet: FleetFields,
    /// bd's `--metadata`: the issue's free-form metadata document.
    pub metadata: Option<serde_json::Value>,
    /// bd's `--spec-id`: the specification the issue implements.
    #[serde(default)]
    pub spec_id: String,
    /// bd's `--ephemeral`: a wisp, left out of exports.
    pub ephemeral: bool,
    /// bd's `--waits-for-gate any-children`: the gate of the new issue's `waits-for` edges, in
    /// the same op as the issue (`all-children`, the default, records nothing).
    #[serde(default)]
    pub wait_gate: Option<String>,
    /// bd's `--validate`: hold the issue to its type's sections as `validation.on-create =
    /// error` would, whatever the workspace says.
    #[serde(default)]
    pub validate: bool,
}

/// A created issue's id, and what `validation.on-create = warn` says of it.
pub struct Created {
    pub id: String,
    pub warning: Option<String>,
}

/// Creates the issue in one op with its edges, under the workspace's `validation.on-create`.
pub fn create(writer: &mut Writer<'_>, request: &CreateRequest) -> Result<Created, Refusal> {
    let mut request = request.clone();
    request.redact(&super::inbound_redactor());
    let request = &request;
    let parent = request.parent.as_deref().map(|p| writer.resolve(p)).transpose()?;
    let id = match &request.id {
        Some(id) => id.clone(),
        None => writer.new_issue_id(&request.title, &request.description, parent.as_deref())?,
    };
    let mut issue = issue_of(request, &id, writer.now());
    issue.created_by = writer.actor().to_string();
    let policy = writer.config(crate::settings::ON_CREATE)?;
    let warning = super::create_policy(policy.as_deref(), request.validate, &issue)?;
    let mut deps = Vec::new();
    if let Some(parent) = &parent {
        if request.inherit_labels
            && let Some(parent_issue) = writer.issue(parent)?
        {
            issue.labels.extend(parent_issue.labels);
        }
        deps.push(new_edge(writer, &id, parent, dep_type::PARENT_CHILD));
    }
    for spec in request.deps.iter().filter(|spec| !spec.reverse) {
        let target = resolve_target(writer, &spec.target)?;
        let target_type = writer.issue(&target)?.map(|t| t.issue_type);
        check_epic_rule(&spec.kind, &issue.issue_type, target_type.as_deref())?;
        let mut edge = new_edge(writer, &id, &target, &spec.kind);
        if let Some(gate @ "any-children") = request.wait_gate.as_deref()
            && spec.kind == dep_type::WAITS_FOR
        {
            edge.metadata = super::deps::gate_metadata(gate);
        }
        deps.push(edge);
    }
    writer.apply(OpKind::Create { issue: Box::new(issue), deps })?;
    for spec in request.deps.iter().filter(|spec| spec.reverse) {
        add_reverse_edge(writer, &id, spec)?;
    }
    Ok(Created { id, warning })
}

/// `blocks:X`: X (an issue of this workspace) waits for the new issue `id`, in the same
/// transaction as the create.
fn add_reverse_edge(writer: &mut Writer<'_>, id: &str, spec: &DepSpec) -> Result<(), Refusal> {
    if writer.resolve(&spec.target).is_err() && is_foreign_ref(&spec.target, writer.prefix()) {
        return Err(Refusal::Invalid(format!(
            "--deps blocks:{}: an issue of another project cannot be made to wait for this \
             one; use blocked-by:{} for the other direction",
            spec.target, spec.target
        )));
    }
    super::deps::add_dependency(writer, &spec.target, id, &spec.kind)?;
    Ok(())
}

fn issue_of(request: &CreateRequest, id: &str, now: Timestamp) -> Issue {
    let mut issue = Issue::new(id.to_string(), request.title.clone(), now);
    issue.description.clone_from(&request.description);
    issue.design.clone_from(&request.design);
    issue.acceptance_criteria.clone_from(&request.acceptance_criteria);
    issue.notes.clone_from(&request.notes);
    issue.priority = request.priority;
    issue.issue_type.clone_from(&request.issue_type);
    issue.assignee.clone_from(&request.assignee);
    issue.estimated_minutes = request.estimated_minutes;
    issue.due_at = request.due_at;
    issue.defer_until = request.defer_until;
    issue.external_ref.clone_from(&request.external_ref);
    issue.fleet = request.fleet.clone();
    issue.labels.clone_from(&request.labels);
    if request.metadata.is_some() {
        issue.metadata.clone_from(&request.metadata);
    }
    issue.spec_id.clone_from(&request.spec_id);
    issue.ephemeral = request.ephemeral;
    issue
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: &str, target: &str, reverse: bool) -> DepSpec {
        DepSpec { kind: kind.into(), target: target.into(), reverse }
    }

    /// beads 1.0's reading of `--deps` (issue 31): only `blocks:` runs the other way.
    #[test]
    fn deps_are_read_as_beads_1_0_reads_them() {
        assert_eq!(DepSpec::parse("t-1"), spec("blocks", "t-1", false));
        assert_eq!(DepSpec::parse("blocked-by:t-1"), spec("blocks", "t-1", false));
        assert_eq!(DepSpec::parse("depends-on: t-1"), spec("blocks", "t-1", false));
        assert_eq!(DepSpec::parse(" blocks:t-1 "), spec("blocks", "t-1", true));
        assert_eq!(DepSpec::parse("related:t-2"), spec("related", "t-2", false));
        assert_eq!(DepSpec::parse("external:jira:X-1"), spec("blocks", "external:jira:X-1", false));
    }
}
