//! The process environment, read in one place: every variable the library consults is named
//! here, with its meaning and default, so the knobs a user (or a test) can turn are one list.
//! The CLI reads its own (`BEADS_DIR`, `FLEET_HOME`, `BD_ACTOR`…) where it parses the command
//! line; nothing else in the library calls `std::env` (tests/architecture.rs holds that).
//!
//! | variable | read by | meaning (default) |
//! |---|---|---|
//! | `FLEET_SERVER_DEADLINE_MS` | server client, store lock | how long a request waits for the server's answer, and a writer before it looks at the lock's holder (2 s) |
//! | `FLEET_DIRECT` | server client | write to the store directly, skipping a server (off) |
//! | `FLEET_REQUIRE_SERVER` | server client | fail instead of writing directly when no server answered (off) |
//! | `FLEET_LOCK_WAIT_SECS` | store lock | how long a writer waits for a running holder of the write lock (120 s) |
//! | `FLEET_GIT_TIMEOUT_SECS` | journal | how long one git command talking to a remote may take (120 s) |
//! | `FLEET_FAULT` | fault points | the fault point at which the process kills itself (tests only) |
//! | `FLEET_HOME` | tracker redaction | the home whose `runtime.toml` names accounts' secrets |
//! | `PATH` | supervisor | the agents' search path, with fleet's own directory first |
//! | `FLEET_JSON_PRETTY` | CLI output | indent `--json` even when stdout is not a terminal (off: compact into pipes) |
//! | `FLEET_TERSE` | CLI output | the short text form of `ready`, `list` and `show`, as `--terse` (off) |
//! | `FLEET_TASK_ID` | CLI (claims, mail, reservations), hooks | the task of the `fleet run` attempt this process belongs to: claims of other tasks are refused, mail is sent from it, reservations are made for it (none) |
//! | `FLEET_TASK_DIR` | CLI (`bd mail inbox --new`) | the attempt's task directory, where the messages already shown to the agent are remembered (none) |
//! | `FLEET_ARTIFACT_DIR` | CLI (`ask_human` of `fleet mcp`, the fake agent) | the attempt's artifact directory, where `Q&A.md` is (none) |
//! | `HOME`, `CODEX_HOME` | CLI (`fleet setup --mcp`) | where user-level agent configs are (`~/.codex` for Codex) |
//! | `FLEET_ATTEMPT` | CLI (reservations) | that attempt's id: a reservation lives while the task runs under it (none) |
//!
//! The whole environment ([`all`]) is what agents inherit and what redactors take secrets from.

use std::ffi::OsString;
use std::time::Duration;

/// The whole environment, as name–value pairs (variables that are not valid UTF-8 left out).
pub fn all() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Whether `name` is set at all (even empty).
pub fn is_set(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

/// `PATH`, or nothing.
pub fn path() -> String {
    std::env::var("PATH").unwrap_or_default()
}

/// The task of the `fleet run` attempt this process belongs to (`FLEET_TASK_ID`, which the
/// supervisor sets for its agents), unless unset or empty.
pub fn attempt_task() -> Option<String> {
    std::env::var("FLEET_TASK_ID").ok().map(|id| id.trim().to_string()).filter(|id| !id.is_empty())
}

/// The task directory of that attempt (`FLEET_TASK_DIR`), unless unset or empty.
pub fn attempt_task_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("FLEET_TASK_DIR").filter(|dir| !dir.is_empty()).map(Into::into)
}

/// The artifact directory of that attempt (`FLEET_ARTIFACT_DIR`: `Q&A.md` and the task's
/// other carried-over files), unless unset or empty.
pub fn artifact_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("FLEET_ARTIFACT_DIR").filter(|dir| !dir.is_empty()).map(Into::into)
}

/// The id of that attempt (`FLEET_ATTEMPT`), unless unset or empty.
pub fn attempt_id() -> Option<String> {
    std::env::var("FLEET_ATTEMPT").ok().filter(|id| !id.trim().is_empty())
}

/// `HOME`, unless it is unset or empty.
pub fn home_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").filter(|home| !home.is_empty()).map(Into::into)
}

/// Codex's configuration directory: `CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<std::path::PathBuf> {
    let named = std::env::var_os("CODEX_HOME").filter(|dir| !dir.is_empty()).map(Into::into);
    named.or_else(|| Some(home_dir()?.join(".codex")))
}

/// `FLEET_HOME`, unless it is unset or empty.
pub fn fleet_home() -> Option<OsString> {
    std::env::var_os("FLEET_HOME").filter(|home| !home.is_empty())
}

/// How long a command waits for the server's answer: `FLEET_SERVER_DEADLINE_MS`, else two
/// seconds.
pub fn server_deadline() -> Duration {
    number("FLEET_SERVER_DEADLINE_MS").map_or(Duration::from_secs(2), Duration::from_millis)
}

/// Whether `FLEET_DIRECT` asks commands to skip the server.
pub fn direct_only() -> bool {
    flag("FLEET_DIRECT")
}

/// Whether `FLEET_REQUIRE_SERVER` asks commands to fail rather than write directly when no
/// server applied their request.
pub fn server_required() -> bool {
    flag("FLEET_REQUIRE_SERVER")
}

/// How long a writer waits for a running holder of the store's write lock at most:
/// `FLEET_LOCK_WAIT_SECS`, else two minutes.
pub fn lock_patience() -> Duration {
    number("FLEET_LOCK_WAIT_SECS").map_or(Duration::from_secs(120), Duration::from_secs)
}

/// How long one git command that talks to a remote may take: `FLEET_GIT_TIMEOUT_SECS` (at
/// least one second), else two minutes.
pub fn git_time_limit() -> Duration {
    Duration::from_secs(number("FLEET_GIT_TIMEOUT_SECS").unwrap_or(120).max(1))
}

/// Whether `FLEET_JSON_PRETTY` asks for indented `--json` into pipes too (as `--pretty`).
pub fn json_pretty() -> bool {
    flag("FLEET_JSON_PRETTY")
}

/// Whether `FLEET_TERSE` asks for the short text form of `ready`, `list` and `show` (as
/// `--terse`).
pub fn terse() -> bool {
    flag("FLEET_TERSE")
}

/// Whether `FLEET_FAULT` names the fault point `name` (see `crate::fault`).
pub fn fault_at(name: &str) -> bool {
    std::env::var_os("FLEET_FAULT").is_some_and(|fault| fault == name)
}

/// A variable holding a whole number, unless it is unset or not one.
fn number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|value| value.trim().parse().ok())
}

/// A variable that is on when set to anything but empty or `0`.
fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| !value.is_empty() && value != "0")
}
