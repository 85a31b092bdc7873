//! The beads data model: issues, statuses, types, priorities, dependency edges and comments,
//! plus the per-task fields fleet adds (working directory, coder, model).
//!
//! Field names, types and omit rules follow the beads JSONL record (spec/beads.md §1–2), so a
//! record serialises the way beads writes it. Keys fleet does not model are kept in
//! [`Issue::extra`] and written back unchanged. Nothing here touches storage or the terminal.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Largest title beads accepts, in bytes.
pub const MAX_TITLE_BYTES: usize = 500;

/// The status of an issue. Custom statuses (config `status.custom`) are carried by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    #[default]
    Open,
    InProgress,
    Blocked,
    Deferred,
    Closed,
    Pinned,
    Hooked,
    Custom(String),
}

impl Status {
    /// The built-in statuses, in the order `bd` documents them.
    pub const BUILT_IN: [Status; 7] = [
        Status::Open,
        Status::InProgress,
        Status::Blocked,
        Status::Deferred,
        Status::Closed,
        Status::Pinned,
        Status::Hooked,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            Status::Open => "open",
            Status::InProgress => "in_progress",
            Status::Blocked => "blocked",
            Status::Deferred => "deferred",
            Status::Closed => "closed",
            Status::Pinned => "pinned",
            Status::Hooked => "hooked",
            Status::Custom(name) => name,
        }
    }

    /// Closed and pinned issues never block anything and are never blocked (spec §3.2).
    pub fn is_settled(&self) -> bool {
        matches!(self, Status::Closed | Status::Pinned)
    }

    /// Parses a status typed by a user: built-ins only, with `-` accepted for `_`.
    pub fn parse_user(text: &str) -> Result<Status, ModelError> {
        Status::parse_user_with(text, &[])
    }

    /// Parses a status typed by a user: a built-in (with `-` accepted for `_`), or one of the
    /// workspace's `custom` statuses (config `status.custom`, see [`custom_names`]).
    pub fn parse_user_with(text: &str, custom: &[String]) -> Result<Status, ModelError> {
        let normalized = text.trim().to_ascii_lowercase().replace('-', "_");
        match Status::from_name(&normalized) {
            Status::Custom(_) => {
                let name = text.trim().to_ascii_lowercase();
                if custom.contains(&name) {
                    Ok(Status::Custom(name))
                } else {
                    Err(ModelError::InvalidStatus(text.to_string()))
                }
            }
            status => Ok(status),
        }
    }

    /// Maps a stored name to a status; unknown names become [`Status::Custom`].
    pub fn from_name(name: &str) -> Status {
        match name {
            "open" => Status::Open,
            "in_progress" => Status::InProgress,
            "blocked" => Status::Blocked,
            "deferred" => Status::Deferred,
            "closed" => Status::Closed,
            "pinned" => Status::Pinned,
            "hooked" => Status::Hooked,
            other => Status::Custom(other.to_string()),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(if name.is_empty() { Status::Open } else { Status::from_name(&name) })
    }
}

/// The built-in issue types (spec §2).
pub const ISSUE_TYPES: [&str; 13] = [
    "bug",
    "feature",
    "task",
    "epic",
    "chore",
    "decision",
    "message",
    "molecule",
    "gate",
    "spike",
    "story",
    "milestone",
    "event",
];

/// Types that `ready` leaves out unless `--type` asks for them (spec §3.3).
pub const READY_EXCLUDED_TYPES: [&str; 7] =
    ["merge-request", "gate", "molecule", "message", "agent", "role", "rig"];

/// The names of a `types.custom` or `status.custom` setting: comma-separated, each
/// optionally followed by `:category` (`review:wip, qa`), lowercased.
pub fn custom_names(setting: Option<&str>) -> Vec<String> {
    setting
        .unwrap_or_default()
        .split(',')
        .map(|item| item.split(':').next().unwrap_or_default().trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect()
}

/// Resolves a type typed by a user, applying the beads aliases; refuses unknown types.
pub fn parse_issue_type(text: &str) -> Result<String, ModelError> {
    parse_issue_type_with(text, &[])
}

/// [`parse_issue_type`], also accepting the workspace's `custom` types (config
/// `types.custom`, see [`custom_names`]).
pub fn parse_issue_type_with(text: &str, custom: &[String]) -> Result<String, ModelError> {
    let lower = text.trim().to_ascii_lowercase();
    let canonical = match lower.as_str() {
        "enhancement" | "feat" => "feature",
        "dec" | "adr" => "decision",
        "investigation" | "timebox" => "spike",
        "user-story" | "user_story" => "story",
        "ms" => "milestone",
        "mr" => "merge-request",
        "mol" => "molecule",
        other => other,
    };
    if ISSUE_TYPES.contains(&canonical)
        || canonical == "merge-request"
        || custom.iter().any(|c| c == canonical)
    {
        Ok(canonical.to_string())
    } else {
        Err(ModelError::InvalidType(text.to_string()))
    }
}

/// Parses `0..4` or `P0..P4`.
pub fn parse_priority(text: &str) -> Result<u8, ModelError> {
    let trimmed = text.trim();
    let digits = trimmed.strip_prefix(['P', 'p']).unwrap_or(trimmed);
    match digits.parse::<u8>() {
        Ok(value) if value <= 4 => Ok(value),
        _ => Err(ModelError::InvalidPriority(text.to_string())),
    }
}

/// Errors in values a user typed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    #[error("invalid priority {0:?}: expected 0-4 or P0-P4")]
    InvalidPriority(String),
    #[error("invalid issue type: {0}")]
    InvalidType(String),
    #[error(
        "invalid status {0:?}: expected one of open, in_progress, blocked, deferred, closed, pinned, hooked"
    )]
    InvalidStatus(String),
    #[error("title is required")]
    TitleRequired,
    #[error("title is {0} bytes; the limit is {MAX_TITLE_BYTES}")]
    TitleTooLong(usize),
    #[error("invalid dependency type {0:?}: expected 1 to 50 characters")]
    InvalidDepType(String),
}

/// Validates a title for create and update.
pub fn validate_title(title: &str) -> Result<(), ModelError> {
    if title.trim().is_empty() {
        return Err(ModelError::TitleRequired);
    }
    if title.len() > MAX_TITLE_BYTES {
        return Err(ModelError::TitleTooLong(title.len()));
    }
    Ok(())
}

/// The kinds of dependency edge that beads knows about (spec §3.1).
pub mod dep_type {
    pub const BLOCKS: &str = "blocks";
    pub const PARENT_CHILD: &str = "parent-child";
    pub const CONDITIONAL_BLOCKS: &str = "conditional-blocks";
    pub const WAITS_FOR: &str = "waits-for";
    pub const RELATED: &str = "related";
    /// The edge `dep relate` puts each way between two issues.
    pub const RELATES_TO: &str = "relates-to";
    pub const DISCOVERED_FROM: &str = "discovered-from";
    pub const SUPERSEDES: &str = "supersedes";

    /// Every well-known type; any other 1–50 character string is accepted too.
    pub const WELL_KNOWN: [&str; 19] = [
        BLOCKS,
        PARENT_CHILD,
        CONDITIONAL_BLOCKS,
        WAITS_FOR,
        RELATED,
        DISCOVERED_FROM,
        "replies-to",
        RELATES_TO,
        "duplicates",
        SUPERSEDES,
        "authored-by",
        "assigned-to",
        "approved-by",
        "attests",
        "tracks",
        "until",
        "caused-by",
        "validates",
        "delegated-from",
    ];

    /// Edges whose open target blocks the source directly.
    pub fn blocks_directly(kind: &str) -> bool {
        kind == BLOCKS || kind == CONDITIONAL_BLOCKS
    }

    /// Edges that may make their source blocked, and so are refused if they close a cycle.
    pub fn is_cycle_checked(kind: &str) -> bool {
        blocks_directly(kind) || kind == PARENT_CHILD
    }
}

/// Validates a dependency type name.
pub fn validate_dep_type(kind: &str) -> Result<(), ModelError> {
    if kind.is_empty() || kind.chars().count() > 50 {
        return Err(ModelError::InvalidDepType(kind.to_string()));
    }
    Ok(())
}

/// A dependency edge: `issue_id` depends on `depends_on_id` (which blocks it, for blocking
/// types). The record lives on the dependent issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    #[serde(default)]
    pub issue_id: String,
    pub depends_on_id: String,
    #[serde(rename = "type", default = "default_dep_type")]
    pub kind: String,
    #[serde(default = "epoch")]
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_by: String,
    /// A JSON document kept as a string, as beads stores it (`{"gate":"any-children"}`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub metadata: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thread_id: String,
}

/// The type of an edge that names none.
pub(crate) fn default_dep_type() -> String {
    dep_type::BLOCKS.to_string()
}

impl Dependency {
    /// Whether this waits-for edge is satisfied by any one closed child rather than all.
    pub fn gate_is_any_children(&self) -> bool {
        gate_is_any_children(&self.metadata)
    }
}

/// Whether a waits-for edge's metadata (a JSON document kept as a string) sets its gate to
/// `any-children`.
pub fn gate_is_any_children(metadata: &str) -> bool {
    if metadata.is_empty() {
        return false;
    }
    serde_json::from_str::<Value>(metadata)
        .ok()
        .and_then(|doc| doc.get("gate").and_then(Value::as_str).map(|g| g == "any-children"))
        .unwrap_or(false)
}

/// A comment id: beads writes strings (UUIDv7); legacy files wrote integers. Both are kept as
/// they came so a round trip does not change the type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommentId {
    Number(i64),
    Text(String),
}

impl fmt::Display for CommentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommentId::Number(n) => write!(f, "{n}"),
            CommentId::Text(s) => f.write_str(s),
        }
    }
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: CommentId,
    #[serde(default)]
    pub issue_id: String,
    #[serde(default)]
    pub author: String,
    pub text: String,
    #[serde(default = "epoch")]
    pub created_at: Timestamp,
}

/// Whether `id` names an issue of another project, which may legitimately be missing from this
/// store: `external:<project>:<capability>`, or an id with another prefix (`other-3kf`). A
/// word without a prefix is not foreign: it is a mistyped id of this project. The one
/// definition for `dep add`, `--deps`, imports and the store.
pub fn is_foreign_ref(id: &str, prefix: &str) -> bool {
    id.starts_with("external:") || (id.contains('-') && !id.starts_with(&format!("{prefix}-")))
}

/// Fleet's own per-task fields. They travel through beads JSONL under `metadata.fleet`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetFields {
    /// The directory the agent runs in, on the machine that recorded it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// The same directory as a place in a git repository (its `origin`, and the path inside
    /// the checkout), which every machine resolves in its own checkout (`crate::place`). Absent
    /// for a directory in no repository with an origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<crate::place::RepoPlace>,
    /// The coder (agent CLI) that should run this task; empty means the configured default.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub coder: String,
    /// The model the coder should use; empty means the coder's default.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Agent runs started so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
    /// Failed runs since the task was last blocked for failing (charged against the limit).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
    /// Runs that exited 0 without closing the task, since it was last blocked for that.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub noclose: u32,
    /// Runs killed for silence, since the task was last blocked for that.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stalls: u32,
    /// Runs stopped for context pressure, since the task was last blocked for that.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_resets: u32,
    /// Not before then will a supervisor start the task again: the backoff after a failure or
    /// an early exit. Apart from `defer_until`, which is a person's: `ready` still lists the
    /// task, and `fleet run --until-idle` waits for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Timestamp>,
    /// The supervisor running the task right now, while it is in progress under a supervisor.
    /// Cleared whenever the task leaves `in_progress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// Where the task's work lives and how far it is on its way to the base branch: its own
    /// git worktree and branch, the landing state and the receipt (`crate::land`). Absent for
    /// a task that runs in a shared directory (`isolation = "none"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub land: Option<Landing>,
    /// Globs of the files the task's work will change (`--touches`, relative to the
    /// repository's top): a supervisor never runs two tasks whose `touches` overlap at once
    /// (`crate::coord::glob`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub touches: Vec<String>,
}

/// A task's own git worktree and the way of its work to the base branch (`crate::land`).
///
/// Recorded in the claim's transaction at the task's first attempt; every later attempt works
/// in the same worktree. The task stays `in_progress` while its work waits to land (beads sees
/// an issue in progress), so its dependents stay blocked until the base holds its change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Landing {
    /// The top of the repository's main checkout (where `git worktree add` was run).
    pub repo: String,
    /// The branch the work lands on (`main`), without `refs/heads/`.
    pub base: String,
    /// The base branch's commit the worktree was made from.
    pub base_commit: String,
    /// The worktree: `$FLEET_HOME/worktrees/<id>`.
    pub worktree: String,
    /// The task's branch (`fleet/<id>`).
    pub branch: String,
    /// The task's directory inside the repository (`.` for its top), which maps to the same
    /// directory of the worktree.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subdir: String,
    #[serde(default)]
    pub state: LandState,
    /// Merge rounds that ended in a conflict.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub conflicts: u32,
    /// The evidence of the last landing attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Receipt>,
    /// When `fleet merge ID --now` moved the entry to the head of its lane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front_since: Option<Timestamp>,
    /// When a person approved the entry (`fleet approve`; needed with `merge.review = true`).
    /// A new submission of the work needs a new approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<Timestamp>,
    /// When the merge lane started landing the entry (merging, checks); cleared by the step
    /// that ends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checking_since: Option<Timestamp>,
}

/// How far a task's work is on its way to the base branch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LandState {
    /// Agents work on it (or it waits for its next attempt).
    #[default]
    Working,
    /// The agent closed the task: its work waits in the merge queue. `no_changes`: the close
    /// said there is nothing to land.
    Queued {
        reason: String,
        at: Timestamp,
        #[serde(default, skip_serializing_if = "is_false")]
        no_changes: bool,
    },
    /// Merging met a conflict: the resolution task `child` must close before the entry goes
    /// back to the queue.
    Conflict { child: String, reason: String, at: Timestamp },
    /// The checks passed on `merged`, a commit on top of `base`; next the base ref moves from
    /// `base` to `merged` (compare-and-swap). A restart finds this and finishes the move.
    Checked { reason: String, at: Timestamp, base: String, merged: String },
    /// The work is on the base branch (`merged`; empty when it closed with no changes).
    Landed { merged: String, at: Timestamp },
    /// The worktree was removed (its tip saved under `refs/fleet/archive/<id>`).
    Archived { merged: String, at: Timestamp },
    /// A person dropped the work from the merge queue (`fleet merge ID --drop`): it never
    /// lands; its tip is saved under `refs/fleet/archive/<id>` and `fleet gc` removes the
    /// worktree.
    Dropped { tip: String, reason: String, at: Timestamp },
}

impl LandState {
    /// Whether the task's work is in the merge queue (closed by its agent, not yet landed).
    pub fn in_queue(&self) -> bool {
        matches!(
            self,
            LandState::Queued { .. } | LandState::Conflict { .. } | LandState::Checked { .. }
        )
    }

    /// The state's name, as `fleet merges` and `fleet show` print it.
    pub fn name(&self) -> &'static str {
        match self {
            LandState::Working => "working",
            LandState::Queued { .. } => "queued",
            LandState::Conflict { .. } => "conflict",
            LandState::Checked { .. } => "checked",
            LandState::Landed { .. } => "landed",
            LandState::Archived { .. } => "archived",
            LandState::Dropped { .. } => "dropped",
        }
    }
}

/// The evidence of a landing attempt: what was merged onto what, and every check's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// The base branch's commit the work was merged onto.
    pub base: String,
    /// The merged commit the checks ran on (empty: none was made).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub merged: String,
    /// `git diff --stat` of the change against the base.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub diffstat: String,
    /// What fleet committed itself: the leftovers the agent did not commit.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub leftovers: String,
    pub checks: Vec<CheckRun>,
    /// How it ended: `landed`, `checks failed`, `conflict`, `no changes`…
    pub verdict: String,
    /// What a person should know beyond the checks (a dirty checkout left alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With `merge.push`: how pushing the base branch went, in one line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub push: String,
    pub at: Timestamp,
}

/// One check command run on a merged tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRun {
    pub command: String,
    /// Its exit code (`None`: killed, e.g. at the timeout).
    pub exit_code: Option<i32>,
    pub millis: u64,
    /// The end of its output (stdout and stderr together).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tail: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub timed_out: bool,
}

impl CheckRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Who runs a task: the supervisor instance that claimed it, and the attempt.
///
/// Another process may release the task only when this owner is provably gone: on the same
/// host (and boot) its pid is dead or belongs to a process with another start time; on
/// another host its heartbeat (in the store's supervisor registry) is older than the lease
/// TTL. See `supervisor::lease`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The supervisor's name (`fleet@host`, or `fleet run --as NAME`): the task's assignee.
    pub owner: String,
    /// The supervisor instance (a ULID, new for every `fleet run`).
    pub instance: String,
    pub host: String,
    /// The kernel boot the owner runs in (`/proc/sys/kernel/random/boot_id`), so a pid from
    /// before a reboot is never taken for a live one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
    pub pid: u32,
    /// The owner process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
    #[serde(default)]
    pub start_ticks: u64,
    /// This attempt's id (a ULID), which the agent's processes carry in `FLEET_ATTEMPT`.
    pub attempt: String,
    /// The coder and model this attempt runs with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub coder: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// The coder's account this attempt runs on (`[[coders.NAME.accounts]]`); empty when the
    /// coder has none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    pub since: Timestamp,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl FleetFields {
    pub fn is_empty(&self) -> bool {
        *self == FleetFields::default()
    }
}

pub(crate) fn epoch() -> Timestamp {
    Timestamp::UNIX_EPOCH
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One issue as beads records it, without its dependency edges and comments (which the store
/// keeps in their own tables and joins in for output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    pub id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub design: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub acceptance_criteria: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub spec_id: String,
    #[serde(default)]
    pub status: Status,
    #[serde(default)]
    pub priority: u8,
    #[serde(default = "default_issue_type", skip_serializing_if = "String::is_empty")]
    pub issue_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub assignee: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub owner: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_minutes: Option<i64>,
    #[serde(default = "epoch")]
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub created_by: String,
    #[serde(default = "epoch")]
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub close_reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub closed_by_session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_until: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub external_ref: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_system: String,
    /// Arbitrary JSON preserved verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub ephemeral: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub pinned: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_template: bool,
    /// Fleet's per-task fields (stored here; exported under `metadata.fleet`).
    #[serde(default, skip_serializing_if = "FleetFields::is_empty")]
    pub fleet: FleetFields,
    /// Every other key of the record (gate, molecule, compaction and legacy fields), in the
    /// order it arrived, written back as is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_issue_type() -> String {
    "task".to_string()
}

impl Issue {
    /// The lease of this task while it still says who works on it: the task is assigned to
    /// the lease's owner. A task handed to someone else (`update --assignee`) keeps its old
    /// lease record, which names no one's work any more: it is not running, and no
    /// supervisor's death releases it.
    pub fn live_lease(&self) -> Option<&Lease> {
        self.fleet.lease.as_ref().filter(|lease| lease.owner == self.assignee)
    }

    /// A new open issue with the `bd create` defaults (priority 2, type task).
    pub fn new(id: String, title: String, now: Timestamp) -> Issue {
        Issue {
            id,
            title,
            description: String::new(),
            design: String::new(),
            acceptance_criteria: String::new(),
            notes: String::new(),
            spec_id: String::new(),
            status: Status::Open,
            priority: 2,
            issue_type: default_issue_type(),
            assignee: String::new(),
            owner: String::new(),
            estimated_minutes: None,
            created_at: now,
            created_by: String::new(),
            updated_at: now,
            started_at: None,
            closed_at: None,
            close_reason: String::new(),
            closed_by_session: String::new(),
            due_at: None,
            defer_until: None,
            external_ref: String::new(),
            source_system: String::new(),
            metadata: None,
            labels: Vec::new(),
            ephemeral: false,
            pinned: false,
            is_template: false,
            fleet: FleetFields::default(),
            extra: Map::new(),
        }
    }

    /// Whether `ready` hides this issue because of its type, unless the user asks for it.
    pub fn is_excluded_from_ready(&self) -> bool {
        READY_EXCLUDED_TYPES.contains(&self.issue_type.as_str())
    }

    /// Adds a label, keeping the list sorted and free of duplicates. Returns whether it changed.
    pub fn add_label(&mut self, label: &str) -> bool {
        match self.labels.binary_search_by(|l| l.as_str().cmp(label)) {
            Ok(_) => false,
            Err(at) => {
                self.labels.insert(at, label.to_string());
                true
            }
        }
    }

    /// Removes a label. Returns whether it was there.
    pub fn remove_label(&mut self, label: &str) -> bool {
        let before = self.labels.len();
        self.labels.retain(|l| l != label);
        before != self.labels.len()
    }
}

/// Sort orders of `ready` and `list` (spec §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// priority ascending, then newest first, then id.
    #[default]
    Priority,
    /// created_at ascending, then id.
    Oldest,
    /// issues created in the last 48 hours first (by priority, then oldest), then the rest by age.
    Hybrid,
}

impl FromStr for SortOrder {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "priority" => Ok(SortOrder::Priority),
            "oldest" => Ok(SortOrder::Oldest),
            "hybrid" => Ok(SortOrder::Hybrid),
            other => {
                Err(format!("unknown sort order {other:?}: expected priority, oldest or hybrid"))
            }
        }
    }
}

/// Sorts comments the way beads lists and exports them: by time, then id.
pub fn sort_comments(comments: &mut [Comment]) {
    comments.sort_by(|a, b| {
        a.created_at.cmp(&b.created_at).then_with(|| match (&a.id, &b.id) {
            (CommentId::Number(x), CommentId::Number(y)) => x.cmp(y),
            (x, y) => x.to_string().cmp(&y.to_string()),
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_accept_digits_and_p_forms() {
        assert_eq!(parse_priority("0"), Ok(0));
        assert_eq!(parse_priority("P3"), Ok(3));
        assert_eq!(parse_priority("p4"), Ok(4));
        assert!(parse_priority("5").is_err());
        assert!(parse_priority("high").is_err());
    }

    #[test]
    fn type_aliases_resolve_and_unknown_types_are_refused() {
        assert_eq!(parse_issue_type("feat").unwrap(), "feature");
        assert_eq!(parse_issue_type("ADR").unwrap(), "decision");
        assert_eq!(parse_issue_type("mr").unwrap(), "merge-request");
        assert_eq!(parse_issue_type("nope"), Err(ModelError::InvalidType("nope".into())));
    }

    #[test]
    fn unknown_keys_survive_a_round_trip() {
        let line = r#"{"id":"bd-1","title":"t","status":"open","priority":1,"created_at":"2025-11-02T21:58:07.295058-08:00","updated_at":"2025-11-02T21:58:07Z","rig":"x","quality_score":3}"#;
        let issue: Issue = serde_json::from_str(line).unwrap();
        assert_eq!(issue.extra.get("rig"), Some(&Value::from("x")));
        let back = serde_json::to_value(&issue).unwrap();
        assert_eq!(back["quality_score"], 3);
        assert_eq!(back["created_at"], "2025-11-03T05:58:07.295058Z");
    }
}
