//! Scratch space for benchmark runs: a directory under the system temp dir that removes itself,
//! and fleet stores filled from a plan in one write transaction.
//!
//! A plan lists the issues to create by index, with the edges each one starts with pointing at
//! lower indices; the same plan fills the SQLite baseline, so both engines hold the same queue.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

use super::{BenchError, io_error};
use crate::model::{Dependency, Issue, Status};
use crate::store::{Store, StoreError, Writer};
use crate::time::Clock;

/// The id prefix of benchmark stores.
pub const PREFIX: &str = "bench";
/// The actor that fills benchmark stores.
const FILLER: &str = "bench";

/// A directory under the system temp dir, removed with everything in it when dropped.
pub struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Creates `fleet-bench-<label>-<pid>-<nanos>` under the system temp dir.
    pub fn create(label: &str) -> Result<ScratchDir, BenchError> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let name = format!("fleet-bench-{label}-{}-{nanos}", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).map_err(io_error(format!("creating {}", path.display())))?;
        Ok(ScratchDir { path })
    }

    /// A new, empty directory `name` inside the scratch directory.
    pub fn subdir(&self, name: &str) -> Result<PathBuf, BenchError> {
        let path = self.path.join(name);
        std::fs::create_dir_all(&path).map_err(io_error(format!("creating {}", path.display())))?;
        Ok(path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // Best effort: a leftover directory in the temp dir is harmless.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The `.beads` directory of the fleet store inside a benchmark workspace directory.
pub fn fleet_store_dir(workspace: &Path) -> PathBuf {
    workspace.join(crate::workspace::DIR_NAME)
}

/// One issue of a plan.
#[derive(Debug, Clone)]
pub struct PlannedIssue {
    pub priority: u8,
    pub created_at: Timestamp,
    pub closed: bool,
    /// Edges to earlier issues of the plan: (index, dependency type).
    pub deps: Vec<(usize, &'static str)>,
}

impl PlannedIssue {
    pub fn title(index: usize) -> String {
        format!("Benchmark issue {index}")
    }
}

/// Creates a fleet store in `workspace` and fills it with `plan` in one transaction. Returns
/// the ids given to the planned issues, by index.
///
/// The transaction runs in the store's bulk mode (readiness refreshed once at the end, no
/// cycle walk per edge): a plan's edges all point to earlier issues, so it has no cycle to
/// find, and that is checked here first.
pub fn fill_fleet(workspace: &Path, plan: &[PlannedIssue]) -> Result<Vec<String>, BenchError> {
    check_edges_point_back(plan)?;
    let store = Store::init(&fleet_store_dir(workspace), PREFIX)?;
    let (ids, _) = store.write(FILLER, Clock::System, |writer| {
        writer.begin_bulk()?;
        let mut ids: Vec<String> = Vec::with_capacity(plan.len());
        for (index, planned) in plan.iter().enumerate() {
            let issue = planned_issue(writer, index, planned)?;
            let deps = planned
                .deps
                .iter()
                .map(|&(target, kind)| dependency(&issue, &ids[target], kind))
                .collect();
            ids.push(issue.id.clone());
            crate::tracker::import_new(writer, issue, deps)?;
        }
        Ok(ids)
    })?;
    Ok(ids)
}

fn check_edges_point_back(plan: &[PlannedIssue]) -> Result<(), BenchError> {
    for (index, planned) in plan.iter().enumerate() {
        if let Some(&(target, _)) = planned.deps.iter().find(|&&(target, _)| target >= index) {
            return Err(BenchError::Failed(format!(
                "benchmark plan: issue {index} has an edge to issue {target}, which is not earlier"
            )));
        }
    }
    Ok(())
}

/// Builds an issue the way `fleet create` does, with the plan's fields.
fn planned_issue(
    writer: &mut Writer<'_>,
    index: usize,
    planned: &PlannedIssue,
) -> Result<Issue, StoreError> {
    let title = PlannedIssue::title(index);
    let id = writer.new_issue_id(&title, "", None)?;
    let mut issue = Issue::new(id, title, planned.created_at);
    issue.priority = planned.priority;
    issue.created_by = FILLER.to_string();
    if planned.closed {
        issue.status = Status::Closed;
        issue.closed_at = Some(planned.created_at);
        issue.close_reason = "Closed".to_string();
    }
    Ok(issue)
}

fn dependency(issue: &Issue, target: &str, kind: &str) -> Dependency {
    Dependency {
        issue_id: issue.id.clone(),
        depends_on_id: target.to_string(),
        kind: kind.to_string(),
        created_at: issue.created_at,
        created_by: FILLER.to_string(),
        metadata: String::new(),
        thread_id: String::new(),
    }
}

/// The issues of a fleet store in `status`, with their assignees.
pub fn fleet_with_status(
    workspace: &Path,
    status: Status,
) -> Result<Vec<(String, String)>, BenchError> {
    let store = Store::open(&fleet_store_dir(workspace))?;
    let mut found = Vec::new();
    store.read()?.for_each_issue(&mut |issue| {
        if issue.status == status {
            found.push((issue.id, issue.assignee));
        }
        Ok(true)
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_dir_removes_itself() {
        let scratch = ScratchDir::create("test").unwrap();
        let inner = scratch.subdir("a").unwrap();
        std::fs::write(inner.join("f"), b"x").unwrap();
        let root = inner.parent().unwrap().to_path_buf();
        drop(scratch);
        assert!(!root.exists());
    }

    #[test]
    fn refuses_a_plan_with_an_edge_forward() {
        let scratch = ScratchDir::create("test").unwrap();
        let dir = scratch.subdir("ws").unwrap();
        let at: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let plan = vec![PlannedIssue {
            priority: 1,
            created_at: at,
            closed: false,
            deps: vec![(0, "blocks")],
        }];
        assert!(fill_fleet(&dir, &plan).is_err());
    }

    #[test]
    fn fills_a_store_with_edges_to_earlier_issues() {
        let scratch = ScratchDir::create("test").unwrap();
        let dir = scratch.subdir("ws").unwrap();
        let at: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let plan = vec![
            PlannedIssue { priority: 1, created_at: at, closed: false, deps: vec![] },
            PlannedIssue { priority: 2, created_at: at, closed: false, deps: vec![(0, "blocks")] },
        ];
        let ids = fill_fleet(&dir, &plan).unwrap();
        let store = Store::open(&fleet_store_dir(&dir)).unwrap();
        let reader = store.read().unwrap();
        assert!(reader.is_blocked(&ids[1]).unwrap());
        assert!(!reader.is_blocked(&ids[0]).unwrap());
    }
}
