//! The `[merge]` table of `runtime.toml`: how finished work lands on its base branch
//! (`crate::land`).
//!
//! ```toml
//! isolation = "auto"            # top-level: a worktree per task in a git repository
//!
//! [merge]
//! checks = ["cargo test"]       # run on the merged tree; all must exit 0
//! check_timeout_secs = 1800     # a check running longer fails
//! strategy = "squash"           # one commit per task: its title and a Fleet-Task trailer;
//!                               # "rebase": the branch's commits replayed, each with the
//!                               # trailer; "merge": a merge commit of the branch
//! target = ""                   # the base branch ("": the branch checked out where the task's
//!                               # directory is)
//! review = false                # true: an entry waits for `fleet approve ID` before it lands
//! push = ""                     # a remote: the base branch is pushed there after each landing
//! batch = 1                     # up to this many ready entries are checked together (their
//!                               # stacked merge); a failure is bisected to the culprit
//! ```

use serde::{Deserialize, Serialize};

/// The field names of the `[merge]` table.
pub const MERGE_KEYS: [&str; 7] =
    ["checks", "check_timeout_secs", "strategy", "target", "review", "push", "batch"];

/// The strategies fleet lands work with.
pub const STRATEGIES: [&str; 3] = ["squash", "rebase", "merge"];

/// How a task's branch becomes commits on the base (`merge.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// One commit: the task's title, its close reason, a `Fleet-Task: <id>` trailer.
    #[default]
    Squash,
    /// The branch's commits replayed onto the base, each given the trailer.
    Rebase,
    /// A merge commit with the base and the branch tip as parents.
    Merge,
}

impl Strategy {
    pub fn parse(text: &str) -> Option<Strategy> {
        match text.trim() {
            "squash" => Some(Strategy::Squash),
            "rebase" => Some(Strategy::Rebase),
            "merge" => Some(Strategy::Merge),
            _ => None,
        }
    }
}

/// How finished work lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MergeConfig {
    /// Shell commands run in a scratch worktree of the merged tree; each must exit 0.
    pub checks: Vec<String>,
    /// A check running longer than this is killed and fails.
    pub check_timeout_secs: u64,
    /// How a task's branch becomes commits on the base: `squash` (one commit), `rebase`
    /// (its commits replayed), `merge` (a merge commit).
    pub strategy: String,
    /// The base branch; empty: the branch checked out in the task's repository.
    pub target: String,
    /// Whether a person approves each entry (`fleet approve ID`) before it lands.
    pub review: bool,
    /// The git remote the base branch is pushed to after each landing, with
    /// `--force-with-lease` (empty: none).
    pub push: String,
    /// Up to this many ready entries of a lane are stacked and checked once, on the top; a
    /// failure is bisected to its culprit and the good prefix lands (1: one at a time).
    pub batch: usize,
}

impl Default for MergeConfig {
    fn default() -> MergeConfig {
        MergeConfig {
            checks: Vec::new(),
            check_timeout_secs: 1800,
            strategy: "squash".to_owned(),
            target: String::new(),
            review: false,
            push: String::new(),
            batch: 1,
        }
    }
}

impl MergeConfig {
    /// What is wrong with the table, if anything.
    pub fn problem(&self) -> Option<String> {
        if Strategy::parse(&self.strategy).is_none() {
            return Some(format!(
                "merge.strategy = {:?}: fleet lands work with {}",
                self.strategy,
                STRATEGIES.join(", ")
            ));
        }
        if self.check_timeout_secs == 0 {
            return Some("merge.check_timeout_secs must be at least 1".to_owned());
        }
        if self.batch == 0 {
            return Some(
                "merge.batch must be at least 1 (1: entries land one at a time)".to_owned(),
            );
        }
        if self.checks.iter().any(|c| c.trim().is_empty()) {
            return Some("merge.checks holds an empty command".to_owned());
        }
        None
    }

    /// `strategy`, parsed ([`MergeConfig::problem`] refuses an unknown one at load).
    pub fn strategy(&self) -> Strategy {
        Strategy::parse(&self.strategy).unwrap_or_default()
    }

    pub fn check_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.check_timeout_secs)
    }
}

/// Where agents work (`isolation` in runtime.toml, or a task's `isolation` metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// A worktree of its own when the task's directory is in a git repository with a commit
    /// on a branch; the directory itself otherwise.
    Auto,
    /// Always a worktree of its own (a task outside a repository cannot run).
    Worktree,
    /// The task's directory itself, shared with whoever else works there.
    None,
}

impl Isolation {
    pub const NAMES: [&'static str; 3] = ["auto", "worktree", "none"];

    /// The name runtime.toml spells it with.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::Auto => "auto",
            Isolation::Worktree => "worktree",
            Isolation::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<Isolation> {
        match text.trim() {
            "auto" | "" => Some(Isolation::Auto),
            "worktree" => Some(Isolation::Worktree),
            "none" => Some(Isolation::None),
            _ => None,
        }
    }
}
