//! Issue 11: the command lines beads' own docs (`bd prime`, `bd onboard`, AGENTS.md files of
//! several versions, the hooks `bd setup` installs) tell agents to run, each run against fleet
//! as `bd` in a git repository with its exit code and the shape of its output asserted. The
//! rows run in order on one workspace; `{name}` in a line is an id captured by an earlier row.
//! Run with `--nocapture` to see the table.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::fleet_bin;

/// What a command's stdout must look like.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Human text containing this.
    Text(&'static str),
    /// Only an issue id (captured under the row's name).
    Id,
    /// A JSON array (bd prints arrays bare).
    JsonArray,
    /// A JSON object holding this key.
    JsonObject(&'static str),
    /// The SessionStart hook envelope, one line.
    HookJson,
    /// Anything (the exit code is what matters), stdout or stderr containing this.
    Says(&'static str),
}

impl Shape {
    fn describe(self) -> String {
        match self {
            Shape::Text(t) => format!("text ∋ {t:?}"),
            Shape::Id => "id only".into(),
            Shape::JsonArray => "JSON array".into(),
            Shape::JsonObject(k) => format!("JSON object ∋ {k:?}"),
            Shape::HookJson => "SessionStart hook JSON".into(),
            Shape::Says(t) => format!("says {t:?}"),
        }
    }

    /// Checks `stdout`; returns the id it holds for [`Shape::Id`] and objects with an `id`.
    fn check(self, line: &str, stdout: &str, stderr: &str) -> Option<String> {
        let json = || -> Value {
            serde_json::from_str(stdout)
                .unwrap_or_else(|e| panic!("bd {line}: stdout is not JSON ({e}):\n{stdout}"))
        };
        match self {
            Shape::Text(text) => {
                assert!(stdout.contains(text), "bd {line}: {text:?} in:\n{stdout}")
            }
            Shape::Says(text) => assert!(
                stdout.contains(text) || stderr.contains(text),
                "bd {line}: {text:?} in:\n{stdout}\n{stderr}"
            ),
            Shape::Id => {
                let id = stdout.trim();
                assert!(
                    !id.is_empty() && !id.contains(char::is_whitespace),
                    "bd {line}: only an id:\n{stdout}"
                );
                return Some(id.to_string());
            }
            Shape::JsonArray => assert!(json().is_array(), "bd {line}: an array:\n{stdout}"),
            Shape::JsonObject(key) => {
                let value = json();
                assert!(value.get(key).is_some(), "bd {line}: {key:?} in:\n{stdout}");
                return value["id"].as_str().map(str::to_string);
            }
            Shape::HookJson => {
                assert_eq!(stdout.lines().count(), 1, "bd {line}: one line:\n{stdout}");
                let value = json();
                assert_eq!(value["hookSpecificOutput"]["hookEventName"], "SessionStart");
                assert!(value["hookSpecificOutput"]["additionalContext"].is_string());
            }
        }
        None
    }
}

/// (command line, exit code, shape, name to capture an id under).
type Row = (&'static str, i32, Shape, Option<&'static str>);

const TABLE: &[Row] = &[
    // Session start: the hooks `bd setup` writes, and what beads' docs say to run first.
    ("prime", 0, Shape::Text("bd ready"), None),
    ("prime --hook-json", 0, Shape::HookJson, None),
    ("prime --stealth --hook-json", 0, Shape::HookJson, None),
    ("prime --stealth", 0, Shape::Text("No git operations"), None),
    ("prime --full", 0, Shape::Text("conventions"), None),
    ("prime --mcp", 0, Shape::Text("ready"), None),
    ("onboard", 0, Shape::Text("AGENTS.md"), None),
    ("setup claude", 0, Shape::Text("SessionStart hook"), None),
    ("setup claude --check", 0, Shape::Text("installed"), None),
    ("setup gemini --stealth", 0, Shape::Text("bd prime --stealth --hook-json"), None),
    ("setup codex", 0, Shape::Text("AGENTS.md"), None),
    ("info", 0, Shape::Text("Database"), None),
    ("where", 0, Shape::Text(".beads"), None),
    ("doctor", 0, Shape::Says("✓ store file: opens"), None),
    // Everyday work.
    ("q \"Quick capture\"", 0, Shape::Id, Some("q")),
    ("create \"Write the parser\" -t task -p 1 --json", 0, Shape::JsonObject("id"), Some("task")),
    (
        "create \"Found a bug\" -t bug -p 1 --deps discovered-from:{task} --json",
        0,
        Shape::JsonObject("id"),
        Some("bug"),
    ),
    ("ready --json", 0, Shape::JsonArray, None),
    ("ready", 0, Shape::Text("Ready work"), None),
    ("ready --explain", 0, Shape::Text("Summary:"), None),
    ("ready --explain --json", 0, Shape::JsonObject("summary"), None),
    ("update {task} --claim", 0, Shape::Text("Updated issue"), None),
    ("update {task} --claim --json", 0, Shape::JsonArray, None),
    ("show {task} --json", 0, Shape::JsonArray, None),
    ("show {task} --include-comments --include-dependents --json=true", 0, Shape::JsonArray, None),
    ("show {task}", 0, Shape::Text("Status: in_progress"), None),
    ("list --status open", 0, Shape::Text("Quick capture"), None),
    ("list --status=in_progress --json", 0, Shape::JsonArray, None),
    ("list --format '{{.ID}} {{.Title}}'", 0, Shape::Text("Quick capture"), None),
    ("list --tree", 0, Shape::Text("Found a bug"), None),
    ("dep add {q} {task}", 0, Shape::Text("Added dependency"), None),
    ("blocked", 0, Shape::Text("Blocked"), None),
    ("comments add {task} \"halfway there\"", 0, Shape::Text("Comment added"), None),
    ("comments {task}", 0, Shape::Text("halfway there"), None),
    (
        "remember \"always run the tests before closing\" --key tests",
        0,
        Shape::Text("Remembered [tests]"),
        None,
    ),
    (
        "remember \"the staging port is 8443\"",
        0,
        Shape::Text("Remembered [the-staging-port-is-8443]"),
        None,
    ),
    ("memories", 0, Shape::Text("tests"), None),
    ("memories staging --json", 0, Shape::JsonObject("the-staging-port-is-8443"), None),
    ("recall tests", 0, Shape::Text("always run the tests"), None),
    ("prime", 0, Shape::Text("always run the tests before closing"), None),
    ("forget the-staging-port-is-8443", 0, Shape::Text("Forgot"), None),
    ("forget nothing-here", 1, Shape::Says("no memory with key"), None),
    ("human {bug}", 0, Shape::Text("Flagged"), None),
    ("human list", 0, Shape::Text("Found a bug"), None),
    ("q \"Old approach\"", 0, Shape::Id, Some("old")),
    ("supersede {old} --with {q}", 0, Shape::Text("superseded by"), None),
    ("orphans", 0, Shape::Text("No orphaned issues"), None),
    ("preflight", 0, Shape::Text("PR Readiness Checklist"), None),
    ("edit {task}", 1, Shape::Says("no editor"), None),
    // End of session.
    ("close {task} --reason \"Parser written\"", 0, Shape::Text("Closed"), None),
    ("close {bug} --reason Fixed --json", 0, Shape::JsonArray, None),
    ("sync", 0, Shape::Text("Nothing to sync"), None),
    ("sync --flush-only", 0, Shape::Text("pending"), None),
    ("sync --status", 0, Shape::Text("no remote configured"), None),
    ("dolt push", 0, Shape::Text("Nothing to sync"), None),
    ("dolt pull", 0, Shape::Text("Nothing to sync"), None),
    ("hooks install", 0, Shape::Says("pre-commit"), None),
    ("hooks list", 0, Shape::Says("pre-commit"), None),
    ("hooks run pre-commit", 0, Shape::Says(""), None),
    ("hook pre-commit", 0, Shape::Says(""), None),
    ("rename-prefix app --dry-run", 0, Shape::Text("DRY RUN"), None),
];

/// Runs `bd` (a link to fleet) with `line` split as a shell would, in `dir`.
pub(super) fn run(bin: &Path, dir: &Path, line: &str) -> (i32, String, String) {
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("bd {line}"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("USER", "agent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run bd");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

fn fill(line: &str, ids: &HashMap<&str, String>) -> String {
    let mut out = line.to_string();
    for (name, id) in ids {
        out = out.replace(&format!("{{{name}}}"), id);
    }
    out
}

#[test]
fn the_command_lines_agents_are_told_to_run_work() {
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    let repo = root.path().join("repo");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::os::unix::fs::symlink(fleet_bin(), bin.join("bd")).unwrap();
    let git = Command::new("git").args(["init", "-q"]).current_dir(&repo).status().unwrap();
    assert!(git.success());
    let (code, _, stderr) = run(&bin, &repo, "init -q --prefix ah");
    assert_eq!(code, 0, "{stderr}");

    let mut ids: HashMap<&str, String> = HashMap::new();
    let mut table = vec![format!("{:<70} {:>4}  {}", "command", "exit", "shape")];
    for (line, exit, shape, capture) in TABLE {
        let filled = fill(line, &ids);
        let (code, stdout, stderr) = run(&bin, &repo, &filled);
        assert_eq!(code, *exit, "bd {filled}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        let id = shape.check(&filled, &stdout, &stderr);
        if let (Some(name), Some(id)) = (capture, id) {
            ids.insert(name, id);
        }
        table.push(format!("bd {line:<67} {code:>4}  {}", shape.describe()));
    }
    println!("{}", table.join("\n"));
}
