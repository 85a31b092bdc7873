//! Running the project's checks (`merge.checks`) on a merged tree: each command through
//! `sh -c` in the scratch worktree, in a process group of its own, killed with its group at
//! the timeout (`crate::process::output_owned_within`); the end of what it printed goes in the
//! receipt.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::model::CheckRun;

/// How much of a check's output the receipt keeps (its end).
pub const TAIL_BYTES: usize = 4000;

/// Runs `commands` in order in `dir`, stopping at the first that fails; each one's result.
pub fn run_all(commands: &[String], dir: &Path, timeout: Duration) -> Vec<CheckRun> {
    let mut runs = Vec::with_capacity(commands.len());
    for command in commands {
        let run = run_one(command, dir, timeout);
        let passed = run.passed();
        runs.push(run);
        if !passed {
            break;
        }
    }
    runs
}

/// Runs one check.
pub fn run_one(command: &str, dir: &Path, timeout: Duration) -> CheckRun {
    let started = Instant::now();
    let mut sh = Command::new("sh");
    sh.args(["-c", &format!("exec 2>&1; {command}")]).current_dir(dir).stdin(Stdio::null());
    let (exit_code, tail, timed_out) = match crate::process::output_owned_within(&mut sh, timeout) {
        Ok(Some(output)) => (output.status.code(), tail_of(&output.stdout), false),
        Ok(None) => {
            (None, format!("killed after {}s (merge.check_timeout_secs)", timeout.as_secs()), true)
        }
        Err(error) => (None, format!("cannot start sh in {}: {error}", dir.display()), false),
    };
    CheckRun {
        command: command.to_owned(),
        exit_code,
        millis: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        tail,
        timed_out,
    }
}

/// The last [`TAIL_BYTES`] of `output`, from a line start.
fn tail_of(output: &[u8]) -> String {
    let from = output.len().saturating_sub(TAIL_BYTES);
    let text = String::from_utf8_lossy(&output[from..]).into_owned();
    match (from > 0, text.find('\n')) {
        (true, Some(at)) => text[at + 1..].to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_check_stops_the_rest_and_keeps_its_output() {
        let dir = tempfile::tempdir().unwrap();
        let commands = vec!["echo one; echo two >&2; exit 3".to_owned(), "true".to_owned()];
        let runs = run_all(&commands, dir.path(), Duration::from_secs(10));
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].exit_code, Some(3));
        assert_eq!(runs[0].tail, "one\ntwo\n");
    }

    #[test]
    fn a_check_past_its_timeout_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_one("sleep 30", dir.path(), Duration::from_millis(100));
        assert!(run.timed_out && !run.passed());
    }
}
