//! `fleet doctor`'s checks of the setup around the store: `runtime.toml` (every problem, with
//! its line), the coders ([`super::coders`]), the `bd` agents will run, and secrets already in
//! the queue ([`super::secrets`]).
//!
//! Each check is `ok`, a `warning` (worth a look; nothing fails because of it) or a `problem`
//! (agents will not run as configured), and every check that is not `ok` names its fix.

use std::path::{Path, PathBuf};

use super::coders::coder_checks;
use super::setup_check::SetupCheck;
use crate::config::{self, ConfigErrorKind, Legacy, RuntimeConfig};
use crate::model::Status as IssueStatus;
use crate::store::{ListFilter, Store};
use crate::supervisor::{agent_path, bin_dir};

/// Every setup check of the fleet at `home`, whose queue is `store` (when it opens).
pub fn setup_checks(home: &Path, store: Option<&Store>) -> Vec<SetupCheck> {
    let path = home.join(config::FILE_NAME);
    let mut checks = config_checks(&path);
    // The coders as the file will be once its unknown keys are gone (a file that does not
    // load at all: as the defaults).
    let config = RuntimeConfig::load_known(&path).unwrap_or_default();
    checks.extend(private_file_check(&path, &config));
    let task_coders = store.map(coders_of_open_tasks).unwrap_or_default();
    checks.extend(coder_checks(&config, home, &task_coders));
    checks.push(bd_check(home));
    if let Some(store) = store {
        checks.push(super::secrets::secrets_check(store, &config.redactor()));
    }
    let user_home = std::env::home_dir();
    let now = jiff::Timestamp::now();
    checks.extend(super::instructions::instruction_checks(home, user_home.as_deref(), now));
    checks
}

/// A `runtime.toml` that holds secrets (a coder's or an account's variable with a secret name)
/// but others may read: a warning naming the variables, never their values. `fleet config
/// set` writes such a file 0600, but one written by hand keeps its mode.
fn private_file_check(path: &Path, config: &RuntimeConfig) -> Option<SetupCheck> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return None;
    }
    let mut names: Vec<&str> = config
        .configured_env()
        .filter(|(name, _)| crate::redact::is_secret_name(name))
        .map(|(name, _)| name)
        .collect();
    names.dedup();
    if names.is_empty() {
        return None;
    }
    Some(SetupCheck::warning(
        "runtime.toml",
        "file",
        format!(
            "{} holds secrets ({}) and others may read it (mode {mode:04o})",
            path.display(),
            names.join(", ")
        ),
        format!("chmod 600 {}", crate::cli::output::shell_word(&path.display().to_string())),
    ))
}

/// `runtime.toml`: fine, or each of its problems with the fix.
fn config_checks(path: &Path) -> Vec<SetupCheck> {
    const SUBJECT: &str = "runtime.toml";
    if !path.exists() {
        return vec![SetupCheck::ok(
            SUBJECT,
            "file",
            format!("{} does not exist: the defaults apply", path.display()),
        )];
    }
    let problems = RuntimeConfig::problems_in(path);
    if problems.is_empty() {
        return vec![SetupCheck::ok(SUBJECT, "file", format!("{} is valid", path.display()))];
    }
    problems
        .into_iter()
        .map(|problem| {
            let legacy = problem.key.as_deref().and_then(Legacy::of).is_some();
            let mut fix = problem.hint.clone().unwrap_or_else(|| {
                format!("edit {} (`fleet config show` checks it)", path.display())
            });
            if legacy {
                fix.push_str(&format!(
                    "; `fleet import {}` translates every key of the Python fleet",
                    path.display()
                ));
            }
            let check = if problem.kind == ConfigErrorKind::UnknownKey { "key" } else { "file" };
            SetupCheck {
                line: problem.line,
                ..SetupCheck::problem(SUBJECT, check, problem.to_string(), fix)
            }
        })
        .collect()
}

/// The coders open and running tasks name, each with the ids naming it.
fn coders_of_open_tasks(store: &Store) -> Vec<(String, Vec<String>)> {
    let filter = ListFilter {
        statuses: vec![IssueStatus::Open, IssueStatus::InProgress],
        ..ListFilter::default()
    };
    let Ok(reader) = store.read() else { return Vec::new() };
    let Ok((issues, _)) = reader.skip_damaged().list(&filter) else { return Vec::new() };
    let mut coders: Vec<(String, Vec<String>)> = Vec::new();
    for summary in issues {
        let coder = &summary.issue.fleet.coder;
        if coder.is_empty() {
            continue;
        }
        match coders.iter_mut().find(|(name, _)| name == coder) {
            Some((_, ids)) => ids.push(summary.issue.id.clone()),
            None => coders.push((coder.clone(), vec![summary.issue.id.clone()])),
        }
    }
    coders
}

/// The `bd` an agent runs: `fleet run` links `$FLEET_HOME/bin/bd` to itself when it starts
/// and puts that directory first on the agents' PATH. A link to another program, or no link
/// yet, is only a warning (the next `fleet run` makes it right); a home where the link cannot
/// be made is a problem (`fleet run` would not start).
fn bd_check(home: &Path) -> SetupCheck {
    const SUBJECT: &str = "agents' bd";
    let bin = bin_dir(home);
    let link = bin.join("bd");
    let this = std::env::current_exe().and_then(|exe| exe.canonicalize()).ok();
    let link_now = format!("fleet link-bd {}", bin.display());
    let relinked = "`fleet run` links it to itself when it starts";
    let target = link.canonicalize().ok();
    if link.symlink_metadata().is_ok() {
        return match (&target, &this) {
            (Some(target), Some(this)) if target == this => {
                SetupCheck::ok(SUBJECT, "link", format!("{} runs this fleet", link.display()))
            }
            _ if unwritable_dir(&bin).is_some() => cannot_link(&bin),
            (Some(target), _) => SetupCheck::warning(
                SUBJECT,
                "link",
                format!("{} runs {}, not this fleet", link.display(), target.display()),
                format!("{relinked}; to link it now: {link_now} --force"),
            ),
            (None, _) => SetupCheck::warning(
                SUBJECT,
                "link",
                format!("{} points at nothing", link.display()),
                format!("{relinked}; to link it now: {link_now} --force"),
            ),
        };
    }
    if unwritable_dir(&bin).is_some() {
        return cannot_link(&bin);
    }
    let inherited = std::env::var("PATH").unwrap_or_default();
    let first = crate::fsutil::find_executable("bd", agent_path(home, &inherited).as_ref());
    let detail = match first {
        Some(other) if other.canonicalize().ok() == this => {
            return SetupCheck::ok(
                SUBJECT,
                "link",
                format!(
                    "{} runs this fleet ({} is made when `fleet run` starts)",
                    other.display(),
                    link.display()
                ),
            );
        }
        Some(other) => format!(
            "{} does not exist yet, so agents would run {} until `fleet run` starts",
            link.display(),
            other.display()
        ),
        None => format!("{} does not exist yet (no bd on the agents' PATH)", link.display()),
    };
    SetupCheck::warning(SUBJECT, "link", detail, format!("{relinked}; to link it now: {link_now}"))
}

/// The problem of a `bin` directory `fleet run` cannot link `bd` into.
fn cannot_link(bin: &Path) -> SetupCheck {
    let blocking = unwritable_dir(bin).unwrap_or_else(|| bin.to_path_buf());
    SetupCheck::problem(
        "agents' bd",
        "link",
        format!(
            "{} cannot be written, so `fleet run` cannot link bd into {} and will not start",
            blocking.display(),
            bin.display()
        ),
        format!("make {} writable for this user", blocking.display()),
    )
}

/// The directory that stops `dir` from being made or written: `dir` itself when it exists
/// and is not writable, else its nearest existing ancestor when that is not writable.
fn unwritable_dir(dir: &Path) -> Option<PathBuf> {
    let existing = dir.ancestors().find(|d| d.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: access() reads a NUL-terminated path we own.
    let writable = unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0;
    (!writable).then(|| existing.to_path_buf())
}
