//! Coders: how fleet starts a coding-agent CLI for a task and reads what it prints.
//!
//! A [`Coder`] knows three things about one CLI: the command line and environment that run a
//! task unattended ([`Coder::spawn_spec`]), how to turn its stdout into normalized
//! [`AgentEvent`]s ([`Coder::parser`]), and how large a context window each model has
//! ([`Coder::context_limit`]). The supervisor spawns the [`SpawnSpec`] (adding `FLEET_HOME`,
//! `BEADS_DIR` and `PATH` to the environment), feeds every stdout line to the parser, and acts
//! on the events. Coders never spawn, print, or read the environment themselves.
//!
//! The built-ins — [`claude`], [`codex`], [`gemini`] (Gemini CLI), [`agy`] (Antigravity),
//! [`opencode`] and [`exec`] — and any coder
//! described in `runtime.toml` (`[coders.NAME]` with an `argv` template, see [`custom`]) are
//! looked up by name in a [`Registry`]. The same `[coders.NAME]` table can adjust a built-in:
//! the program path, the permission flags, extra environment, the default model and the context
//! limits ([`CoderConfig`]), and the [`account`]s its attempts rotate over.
//!
//! The event formats follow the real CLIs as captured in `tests/fixtures/claude-stream/` and
//! `tests/fixtures/codex-stream/`, which correct several assumptions of the Python fleet:
//! claude's tool calls arrive as content blocks inside assistant and user messages, its usage
//! repeats on every content-block line of a message, its API failures end in a `result` with
//! `is_error` (and the API error as its text, not on stderr), and codex reports only a session
//! total of its usage, which is never a context size. Failures that are the fleet's rather
//! than the task's (no login, provider down) are recognised in one place, [`diagnose`].

pub mod account;
pub mod agy;
pub mod claude;
pub mod codex;
pub mod custom;
pub mod diagnose;
mod event;
pub mod exec;
pub mod gemini;
pub mod models;
pub mod opencode;
mod registry;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use account::Account;
pub use event::{
    AgentEvent, EventFields, EventKind, EventLine, Fault, RateLimit, RateLimitStatus, RawJson,
    Usage,
};
pub(crate) use registry::closest_word;
pub use registry::{
    BUILTIN_CODERS, CoderConfig, CoderConfigError, CoderInfo, EventFormat, Registry, UnknownCoder,
    is_builtin,
};

/// Turns a coder's stdout, one line at a time, into normalized events.
///
/// A parser lives for one attempt and may keep state: claude repeats a message's usage on each
/// of its content-block lines (counted once), and tool results name their tool only by the id
/// of the call. A line yields zero events (noise such as partial-message deltas), one, or
/// several (one per content block). Parsing never fails: a line that is not what the format
/// expects becomes an [`EventKind::Output`] event or is dropped.
pub trait EventParser: Send {
    /// Parses one stdout line (without its newline).
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent>;
}

/// What a coder needs to know about the task it runs. All paths are absolute.
#[derive(Debug, Clone, Copy)]
pub struct TaskSpec<'a> {
    /// The issue id (`fl-3k2`).
    pub id: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    /// The directory the agent works in (the task's cwd, else `FLEET_HOME`).
    pub cwd: &'a Path,
    /// `$FLEET_HOME/tasks/<id>`.
    pub task_dir: &'a Path,
    /// `$FLEET_HOME/tasks/<id>/artifacts`.
    pub artifact_dir: &'a Path,
    /// The model to run, already resolved (task override, config, coder default). Empty means
    /// "let the CLI choose": no model flag is passed.
    pub model: &'a str,
    /// The full prompt (task header plus the agent protocol), passed as one argument.
    pub prompt: &'a str,
}

/// A process to start: the program, its arguments, the environment added on top of the
/// supervisor's own, and the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    pub program: String,
    pub args: Vec<String>,
    /// Variables to set (each name once). The supervisor adds `FLEET_HOME`, `BEADS_DIR` and
    /// `PATH`.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl SpawnSpec {
    /// The value this spec sets for `name`, if any.
    pub fn env_var(&self, name: &str) -> Option<&str> {
        self.env.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// Sets `vars` over the environment this spec already sets (an account's variables over
    /// the coder's own), each name still once.
    pub fn set_env<'a>(&mut self, vars: impl IntoIterator<Item = (&'a String, &'a String)>) {
        for (name, value) in vars {
            match self.env.iter_mut().find(|(key, _)| key == name) {
                Some(entry) => entry.1.clone_from(value),
                None => self.env.push((name.clone(), value.clone())),
            }
        }
    }
}

/// One coding-agent CLI.
pub trait Coder: Send + Sync {
    /// The name tasks and `runtime.toml` use (`claude`, `codex`, `mybot`, …).
    fn name(&self) -> &str;

    /// The model used when neither the task nor the config names one. May be empty: the CLI
    /// picks its own default and no model flag is passed.
    fn default_model(&self) -> &str;

    /// The context window of `model` in tokens, or `None` when the coder has no context to
    /// run out of (`exec`, plain-text coders). Config overrides come first, then what the
    /// coder knows about the model, then its default.
    fn context_limit(&self, model: &str) -> Option<u64>;

    /// The command that runs `task` unattended.
    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec;

    /// A fresh parser for one attempt's stdout.
    fn parser(&self) -> Box<dyn EventParser>;

    /// Whether exit code 0 by itself means the task is done, so the supervisor closes it. False
    /// for agents, which close their task with `bd close` and whose exit 0 without a close is
    /// "stopped early"; true for plain commands (`exec`, or `close_on_exit_zero = true` on a
    /// config-defined coder).
    fn closes_on_exit_zero(&self) -> bool {
        false
    }

    /// Whether a failure's wording (an error line, stderr) may be read as a fault of the fleet
    /// — not logged in, provider down — rather than of the task. True for agent CLIs; false for
    /// plain commands (`exec`, `events = "lines"`), whose "connection refused" is the task's
    /// own failure. Structured faults the parser reports always count.
    fn reports_provider_faults(&self) -> bool {
        true
    }

    /// The event a line of the CLI's stderr means, when it reports provider trouble the CLI is
    /// retrying by itself (see [`diagnose::retry_line_event`]): the supervisor acts on it at
    /// once. Asked only of coders that [report provider faults](Coder::reports_provider_faults).
    fn stderr_event(&self, line: &str) -> Option<AgentEvent> {
        diagnose::retry_line_event(line)
    }

    /// Gets an attempt ready before its spawn. The built-ins write nothing into the user's
    /// project (the Python fleet's hooks and settings merges were never cleaned up); what a CLI
    /// needs of its own (gemini's agent-private settings) goes into the task directory. The
    /// default does nothing.
    fn prepare(&self, task: &TaskSpec) -> std::io::Result<()> {
        let _ = task;
        Ok(())
    }

    /// How `fleet doctor` checks this CLI without running a task: its version flag and where
    /// its sign-in is kept. `None` (the default): only that the program is there.
    fn probe(&self) -> Option<&'static Probe> {
        None
    }

    /// What a non-zero exit code of this CLI means by itself, when its output said nothing
    /// clearer (gemini exits 173 for a 429 and 41 without usable credentials). `None` by
    /// default: an exit code is the task's failure.
    fn exit_meaning(&self, code: i32) -> Option<ExitMeaning> {
        let _ = code;
        None
    }
}

/// What `fleet doctor` may ask of a CLI without calling a model ([`Coder::probe`]). Data only:
/// the command line does the looking, in the environment agents get.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// The arguments that print the version (`--version`).
    pub version_args: &'static [&'static str],
    pub sign_in: SignIn,
}

/// Where a CLI finds its credentials, as it reads them (found by reading the CLIs).
#[derive(Debug, Clone, Copy)]
pub struct SignIn {
    /// Variables any one of which, set and not empty, is a key or a token the CLI uses.
    pub env: &'static [&'static str],
    /// Files a sign-in leaves behind.
    pub files: &'static [CredentialFile],
    /// A status command (the arguments after the program) that is cheap and offline and exits
    /// 0 when signed in.
    pub status_args: Option<&'static [&'static str]>,
    /// How to sign in.
    pub fix: &'static str,
    /// The CLI may need no credentials (a local model), so none found is only a warning.
    pub optional: bool,
}

/// A credential file: `$VAR/<under_var>/<file>` when the variable is set, else
/// `~/<under_home>/<file>`.
#[derive(Debug, Clone, Copy)]
pub struct CredentialFile {
    /// The variable that moves the CLI's directory (`CLAUDE_CONFIG_DIR`).
    pub var: &'static str,
    pub under_var: &'static str,
    /// `None`: looked for only where the variable points.
    pub under_home: Option<&'static str>,
    pub file: &'static str,
}

/// What a CLI's exit code says about why it stopped ([`Coder::exit_meaning`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitMeaning {
    /// The provider refused requests for a rate or quota limit.
    RateLimit,
    /// A fault of the fleet: not signed in, provider down.
    Fault(Fault),
}

/// Context-window overrides from `[coders.NAME]`: one limit for every model, and limits per
/// model. A limit of 0 means "no limit" (never context pressure).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextLimits {
    pub all_models: Option<u64>,
    pub per_model: BTreeMap<String, u64>,
}

impl ContextLimits {
    /// The configured limit of `model`, else `known` (what the coder knows of the model).
    pub fn resolve(&self, model: &str, known: Option<u64>) -> Option<u64> {
        let configured = self.per_model.get(model).copied().or(self.all_models);
        match configured {
            Some(0) => None,
            Some(limit) => Some(limit),
            None => known,
        }
    }
}

/// The settings a `[coders.NAME]` table gives a built-in coder, each falling back to the
/// built-in's own default when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltinSettings {
    /// The CLI binary (a name on `PATH` or a path).
    pub program: Option<String>,
    /// The flags that let it run tools unattended.
    pub permission_args: Option<Vec<String>>,
    /// Extra environment, set over the built-in's own (`IS_SANDBOX` for claude).
    pub env: BTreeMap<String, String>,
    pub default_model: Option<String>,
    pub limits: ContextLimits,
}

impl BuiltinSettings {
    /// The configured program, else the built-in's.
    pub fn program_or(&self, builtin: &str) -> String {
        self.program.clone().unwrap_or_else(|| builtin.to_owned())
    }

    /// The configured default model, else the built-in's.
    pub fn default_model_or<'a>(&'a self, builtin: &'a str) -> &'a str {
        self.default_model.as_deref().unwrap_or(builtin)
    }

    /// The configured permission flags, else the built-in's.
    pub fn permission_args_or(&self, builtin: &[&str]) -> Vec<String> {
        match &self.permission_args {
            Some(custom) => custom.clone(),
            None => builtin.iter().map(|a| (*a).to_owned()).collect(),
        }
    }
}

/// The environment every coder sets for its agent: the task id and directories. These come
/// last and cannot be overridden.
pub fn task_env(task: &TaskSpec) -> Vec<(String, String)> {
    vec![
        ("FLEET_TASK_ID".to_owned(), task.id.to_owned()),
        ("FLEET_TASK_DIR".to_owned(), task.task_dir.display().to_string()),
        ("FLEET_ARTIFACT_DIR".to_owned(), task.artifact_dir.display().to_string()),
    ]
}

/// Builds a spawn environment: `defaults`, then `configured` (overriding by name), then the
/// task variables of [`task_env`]. Each name appears once, in first-seen order.
pub fn merge_env(
    defaults: &[(&str, &str)],
    configured: &BTreeMap<String, String>,
    task: &TaskSpec,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: &str| match env.iter_mut().find(|(key, _)| key == name) {
        Some(entry) => entry.1 = value.to_owned(),
        None => env.push((name.to_owned(), value.to_owned())),
    };
    for (name, value) in defaults {
        set(name, value);
    }
    for (name, value) in configured {
        set(name, value);
    }
    for (name, value) in task_env(task) {
        set(&name, &value);
    }
    env
}

/// Plain-text output: each non-blank stdout line becomes an [`EventKind::Output`] event. Used
/// by `exec` and by config-defined coders with `events = "lines"`.
#[derive(Debug, Default)]
pub struct LinesParser;

impl EventParser for LinesParser {
    fn parse_line(&mut self, line: &str) -> Vec<AgentEvent> {
        if line.trim().is_empty() { Vec::new() } else { vec![AgentEvent::output(line)] }
    }
}

/// A short text for a tool call's input: the command, path, pattern, URL or query it names.
pub(crate) fn tool_input_summary(input: &serde_json::Value) -> Option<String> {
    const KEYS: [&str; 8] =
        ["command", "cmd", "file_path", "path", "pattern", "url", "query", "description"];
    KEYS.iter().find_map(|key| event::json::string_at(input, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task<'a>(dir: &'a Path) -> TaskSpec<'a> {
        TaskSpec {
            id: "fl-1",
            title: "t",
            description: "d",
            cwd: dir,
            task_dir: dir,
            artifact_dir: dir,
            model: "",
            prompt: "p",
        }
    }

    #[test]
    fn configured_env_overrides_defaults_but_not_task_variables() {
        let dir = Path::new("/w");
        let configured = BTreeMap::from([
            ("IS_SANDBOX".to_owned(), "0".to_owned()),
            ("FLEET_TASK_ID".to_owned(), "nope".to_owned()),
        ]);
        let env = merge_env(&[("IS_SANDBOX", "1"), ("A", "b")], &configured, &task(dir));
        let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        assert_eq!(get("IS_SANDBOX"), Some("0"));
        assert_eq!(get("A"), Some("b"));
        assert_eq!(get("FLEET_TASK_ID"), Some("fl-1"));
        assert_eq!(env.iter().filter(|(k, _)| k == "FLEET_TASK_ID").count(), 1);
    }

    #[test]
    fn context_limits_prefer_the_model_then_the_coder_then_the_builtin() {
        let limits = ContextLimits {
            all_models: Some(150_000),
            per_model: BTreeMap::from([("big".to_owned(), 1_000_000), ("none".to_owned(), 0)]),
        };
        assert_eq!(limits.resolve("big", Some(200_000)), Some(1_000_000));
        assert_eq!(limits.resolve("other", Some(200_000)), Some(150_000));
        assert_eq!(limits.resolve("none", Some(200_000)), None);
        assert_eq!(ContextLimits::default().resolve("x", Some(5)), Some(5));
    }
}
