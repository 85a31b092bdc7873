//! Integration tests of the `fleet` command line: each test runs the real binary in a
//! throwaway workspace and asserts what a user sees — stdout, stderr, the exit code — and the
//! state left behind. One module per command group, compiled into one test binary.
//!
//! Rules the tests follow: exact lines where the output is meant to be stable (the `bd`
//! compatible success lines, `show`'s legacy block, the ready header); substrings for error
//! messages, which carry hints after them; JSON (`--json`) for checking state after the fact.
//! The clock is pinned with `FLEET_TEST_NOW` wherever a time shows in the output or decides
//! the result (deferral, sort orders).

#[path = "../common/mod.rs"]
#[allow(clippy::new_without_default)]
mod common;

mod agent_habits;
mod bad_input;
mod bd_contracts;
mod beads_compat2;
mod claims;
mod color;
mod coordination;
mod deps;
mod errors;
mod hooks;
mod lifecycle;
mod logging;
mod mcp;
mod other;
mod output;
mod readiness;
mod tracker;

use std::path::Path;

use fleet::store::Store;
use serde_json::Value;

pub use common::{Run, Workspace, ids_of};

/// The instant most tests pin the clock to.
pub const NOW: &str = "2026-03-02T12:00:00Z";

/// Helpers on top of the shared harness.
pub trait WorkspaceExt {
    /// Runs the binary with the clock pinned to `now` (RFC 3339).
    fn run_at(&self, now: &str, args: &[&str]) -> Run;
    /// Runs the binary from `dir` instead of the workspace home.
    fn run_in(&self, dir: &Path, args: &[&str]) -> Run;
    /// Creates an issue at a pinned instant and returns its id.
    fn create_at(&self, now: &str, title: &str, extra: &[&str]) -> String;
    /// `show --json` of one issue: the object.
    fn show(&self, id: &str) -> Value;
    /// Opens the workspace's store through the library, for what the CLI cannot drive.
    fn store(&self) -> Store;
}

impl WorkspaceExt for Workspace {
    fn run_at(&self, now: &str, args: &[&str]) -> Run {
        self.command(args).env("FLEET_TEST_NOW", now).output().expect("run fleet").into()
    }

    fn run_in(&self, dir: &Path, args: &[&str]) -> Run {
        self.command(args).current_dir(dir).output().expect("run fleet").into()
    }

    #[track_caller]
    fn create_at(&self, now: &str, title: &str, extra: &[&str]) -> String {
        let mut args = vec!["create", title, "--silent"];
        args.extend_from_slice(extra);
        self.run_at(now, &args).ok().stdout.trim().to_string()
    }

    #[track_caller]
    fn show(&self, id: &str) -> Value {
        let shown = self.json(&["show", id]);
        assert_eq!(shown.as_array().map(Vec::len), Some(1), "show {id}: {shown}");
        shown[0].clone()
    }

    fn store(&self) -> Store {
        Store::open(&self.beads_dir()).expect("open the store")
    }
}

/// The lines of an output, without the trailing newline.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// The string items of a JSON array (labels, blocked_by, …).
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().expect("a string").to_string())
        .collect()
}
