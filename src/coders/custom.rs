//! Coders described entirely in `runtime.toml`, with no recompiling:
//!
//! ```toml
//! [coders.mybot]
//! argv = ["mybot", "--json", "--model", "{model}", "{prompt}"]
//! events = "claude"          # which parser reads its stdout: claude, codex, opencode, agy, lines
//! context_limit = 128000     # optional; default: what the event format's CLI usually has
//! default_model = "big-1"    # optional
//! env = { MYBOT_MODE = "unattended", MYBOT_LOG = "{task_dir}/mybot.log" }
//! close_on_exit_zero = false # optional; true when exit 0 by itself means "done"
//! ```
//!
//! Placeholders, usable in `argv` and `env` values: `{prompt}` `{model}` `{cwd}` `{task_id}`
//! `{task_dir}` `{artifact_dir}` `{title}` `{description}`; `{{` and `}}` stand for literal
//! braces. Each argv element becomes exactly one argument (no shell word splitting), so a
//! prompt with spaces or quotes needs no escaping. Templates are checked when the config is
//! loaded: an unknown placeholder is a config error, not a broken spawn.

use super::{Coder, ContextLimits, EventFormat, EventParser, SpawnSpec, TaskSpec, merge_env};

/// The names usable as `{placeholder}` in argv and env templates.
pub const PLACEHOLDERS: [&str; 8] =
    ["prompt", "model", "cwd", "task_id", "task_dir", "artifact_dir", "title", "description"];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// An index into [`PLACEHOLDERS`].
    Var(usize),
}

/// A string with `{placeholder}`s, checked once and rendered per task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`; the error says what is wrong (`unknown placeholder {modle}`, …).
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let mut name = String::new();
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some(c) => name.push(c),
                            None => {
                                return Err(format!(
                                    "unclosed {{ in {text:?} (write {{{{ for a literal brace)"
                                ));
                            }
                        }
                    }
                    let index = PLACEHOLDERS.iter().position(|p| *p == name).ok_or_else(|| {
                        format!(
                            "unknown placeholder {{{name}}} in {text:?}; known: {}",
                            PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
                        )
                    })?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Var(index));
                }
                '}' => {
                    return Err(format!("stray }} in {text:?} (write }}}} for a literal brace)"));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// The text with every placeholder replaced by the task's value.
    pub fn render(&self, task: &TaskSpec) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Var(index) => match PLACEHOLDERS[*index] {
                    "prompt" => out.push_str(task.prompt),
                    "model" => out.push_str(task.model),
                    "cwd" => out.push_str(&task.cwd.display().to_string()),
                    "task_id" => out.push_str(task.id),
                    "task_dir" => out.push_str(&task.task_dir.display().to_string()),
                    "artifact_dir" => out.push_str(&task.artifact_dir.display().to_string()),
                    "title" => out.push_str(task.title),
                    "description" => out.push_str(task.description),
                    other => unreachable!("placeholder {other} is listed but not rendered"),
                },
            }
        }
        out
    }
}

/// A coder defined by a `[coders.NAME]` table with an `argv`.
#[derive(Debug, Clone)]
pub struct ConfiguredCoder {
    pub(crate) name: String,
    pub(crate) argv: Vec<Template>,
    pub(crate) env: Vec<(String, Template)>,
    pub(crate) events: EventFormat,
    pub(crate) default_model: String,
    pub(crate) limits: ContextLimits,
    pub(crate) closes_on_exit_zero: bool,
}

impl ConfiguredCoder {
    /// The event format its stdout is parsed with.
    pub fn events(&self) -> EventFormat {
        self.events
    }
}

impl Coder for ConfiguredCoder {
    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> &str {
        &self.default_model
    }

    fn context_limit(&self, model: &str) -> Option<u64> {
        self.limits.resolve(model, self.events.known_context_limit(model))
    }

    fn spawn_spec(&self, task: &TaskSpec) -> SpawnSpec {
        let mut argv = self.argv.iter().map(|part| part.render(task));
        let program = argv.next().unwrap_or_default();
        let configured =
            self.env.iter().map(|(name, value)| (name.clone(), value.render(task))).collect();
        SpawnSpec {
            program,
            args: argv.collect(),
            env: merge_env(&[], &configured, task),
            cwd: task.cwd.to_path_buf(),
        }
    }

    fn parser(&self) -> Box<dyn EventParser> {
        self.events.parser()
    }

    fn closes_on_exit_zero(&self) -> bool {
        self.closes_on_exit_zero
    }

    fn reports_provider_faults(&self) -> bool {
        self.events != EventFormat::Lines && !self.closes_on_exit_zero
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn templates_render_and_escape() {
        let dir = Path::new("/w");
        let task = TaskSpec {
            id: "fl-1",
            title: "T",
            description: "D",
            cwd: dir,
            task_dir: Path::new("/h/tasks/fl-1"),
            artifact_dir: Path::new("/h/tasks/fl-1/artifacts"),
            model: "m",
            prompt: "do it",
        };
        let template = Template::parse("{{literal}} {task_id}:{model}@{cwd} {prompt}").unwrap();
        assert_eq!(template.render(&task), "{literal} fl-1:m@/w do it");
    }

    #[test]
    fn template_errors_name_the_problem() {
        assert!(Template::parse("{modle}").unwrap_err().contains("unknown placeholder {modle}"));
        assert!(Template::parse("{prompt").unwrap_err().contains("unclosed {"));
        assert!(Template::parse("a}b").unwrap_err().contains("stray }"));
    }
}
