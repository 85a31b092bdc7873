//! The `exec` coder: runs the task's description as a shell command.
//!
//! `sh -c <description>` in the task's cwd (the title when the description is empty), each
//! stdout line an [`EventKind::Output`](super::EventKind::Output) event, no model and no
//! context limit. It turns the queue into a generic job graph — build steps, scripts, the demo
//! — with the same claiming, dependencies, retries and outcomes as agent tasks, except that a
//! command has no way to know about `bd close`: exit 0 means done
//! ([`Coder::closes_on_exit_zero`]).
//!
//! `[coders.exec] program` picks another shell (`bash`); `env` adds variables.

use super::{BuiltinSettings, Coder, EventParser, LinesParser, SpawnSpec, TaskSpec, merge_env};

/// Shell commands (`exec`).
#[derive(Debug, Clone, Default)]
pub struct ExecCoder {
    settings: BuiltinSettings,
}

impl ExecCoder {
    pub fn new(settings: BuiltinSettings) -> ExecCoder {
        ExecCoder { settings }
    }
}

impl Coder for ExecCoder {
    fn name(&self) -> &str {
        "exec"
    }

    fn default_model(&self) -> &str {
        self.settings.default_model_or("")
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        self.settings.limits.resolve(model, None)
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let command =
            if task.description.trim().is_empty() { task.title } else { task.description };
        let args = vec!["-c".to_owned(), command.to_owned()];
        SpawnSpec {
            program: self.settings.program_or("sh"),
            args,
            env: merge_env(&[], &self.settings.env, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        Box::new(LinesParser)
    }

    fn closes_on_exit_zero(&self) -> bool {
        true
    }

    fn reports_provider_faults(&self) -> bool {
        false
    }
}
