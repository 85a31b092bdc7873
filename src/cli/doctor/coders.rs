//! `fleet doctor`'s checks of the coders: for the default coder, every `[coders.*]` table and
//! every coder an open task names — the program is found on the PATH agents get, it answers
//! `--version`, and it has credentials. No model is called: a sign-in is read from the
//! environment, from a cheap offline status command (`codex login status`), or from the file a
//! sign-in leaves behind ([`crate::coders::SignIn`]).
//!
//! Everything is looked up in the environment an agent gets: this process's own (as if it were
//! the supervisor), overlaid with the coder's spawn environment (`[coders.NAME] env`, and what
//! the coder sets itself, such as gemini's private home) and the supervisor's PATH
//! ([`agent_path`]). Whatever a program prints is redacted before it is shown.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::setup_check::SetupCheck;
use crate::coders::account::Account;
use crate::coders::{Coder, CredentialFile, Probe, SpawnSpec, TaskSpec};
use crate::config::RuntimeConfig;
use crate::fsutil::{find_executable, is_executable};
use crate::redact::Redactor;
use crate::supervisor::agent_path;

/// How long `--version` or a status command may take (node CLIs start slowly on a busy
/// machine).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// The checks of every coder worth checking: the default one first, then those with a
/// `[coders.*]` table, then those only tasks name (`task_coders`, with the ids naming each).
pub fn coder_checks(
    config: &RuntimeConfig,
    home: &Path,
    task_coders: &[(String, Vec<String>)],
) -> Vec<SetupCheck> {
    let registry = match config.registry() {
        Ok(registry) => registry,
        // runtime.toml's own check reports the table that does not build.
        Err(_) => return Vec::new(),
    };
    let mut names: Vec<String> = vec![config.coder.clone()];
    names.extend(config.coders.keys().cloned());
    names.extend(task_coders.iter().map(|(name, _)| name.clone()));
    let mut seen = BTreeSet::new();
    names.retain(|name| seen.insert(name.clone()));
    let mut checks = Vec::new();
    for name in names {
        let subject = subject(&name, config, task_coders);
        match registry.get(&name) {
            Ok(coder) => checks.extend(check_coder(
                coder.as_ref(),
                &subject,
                home,
                config.accounts(&name),
            )),
            Err(unknown) => checks.push(SetupCheck::problem(
                subject,
                "name",
                unknown.to_string(),
                format!(
                    "define it in a [coders.{name}] table with argv, or give those tasks another coder: fleet update ID --coder NAME"
                ),
            )),
        }
    }
    checks
}

/// `coder claude (default)`, `coder codex`, `coder mybot (tasks t-1, t-2)`.
fn subject(name: &str, config: &RuntimeConfig, task_coders: &[(String, Vec<String>)]) -> String {
    let mut subject = format!("coder {name}");
    if name == config.coder {
        subject.push_str(" (default)");
    } else if !config.coders.contains_key(name)
        && let Some((_, ids)) = task_coders.iter().find(|(coder, _)| coder == name)
    {
        let shown: Vec<&str> = ids.iter().take(3).map(String::as_str).collect();
        let more = if ids.len() > 3 { ", …" } else { "" };
        subject.push_str(&format!(" (tasks {}{more})", shown.join(", ")));
    }
    subject
}

/// The environment an agent of `coder` gets, as far as lookups need it.
struct AgentEnv {
    spec: SpawnSpec,
    path: String,
    /// The made-up task directory the spawn spec was built for: variables pointing into it
    /// are left out of the commands run here, so they never create it.
    task_dir: PathBuf,
}

impl AgentEnv {
    fn of(coder: &dyn Coder, home: &Path) -> AgentEnv {
        let task_dir = home.join("tasks").join("fleet-doctor");
        let task = TaskSpec {
            id: "fleet-doctor",
            title: "fleet doctor",
            description: "",
            cwd: home,
            task_dir: &task_dir,
            artifact_dir: &task_dir,
            model: "",
            prompt: "",
        };
        let spec = coder.spawn_spec(&task);
        let inherited = std::env::var("PATH").unwrap_or_default();
        AgentEnv { spec, path: agent_path(home, &inherited), task_dir }
    }

    /// The value of `name` an agent sees (unset when empty).
    fn var(&self, name: &str) -> Option<String> {
        if name == "PATH" {
            return Some(self.path.clone());
        }
        self.spec
            .env_var(name)
            .map(str::to_owned)
            .or_else(|| std::env::var(name).ok())
            .filter(|value| !value.is_empty())
    }

    /// The variables to set for a command run here: the coder's own, without those that point
    /// into the made-up task directory, and the agents' PATH.
    fn command_env(&self) -> Vec<(String, String)> {
        let task_dir = self.task_dir.display().to_string();
        let mut env: Vec<(String, String)> =
            self.spec.env.iter().filter(|(_, value)| !value.contains(&task_dir)).cloned().collect();
        env.push(("PATH".to_owned(), self.path.clone()));
        env
    }

    /// A redactor for what programs print: the values of secret-looking variables here.
    fn redactor(&self) -> Redactor {
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        env.extend(self.spec.env.iter().cloned());
        Redactor::from_env(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// The program, version and sign-in checks of one coder; with accounts, a sign-in check for
/// each, with the account's variables set over the coder's as the supervisor sets them.
fn check_coder(
    coder: &dyn Coder,
    subject: &str,
    home: &Path,
    accounts: &[Account],
) -> Vec<SetupCheck> {
    let env = AgentEnv::of(coder, home);
    let program = &env.spec.program;
    let Some(found) = find_program(program, &env.path, home) else {
        let fix = if crate::coders::is_builtin(coder.name()) {
            format!(
                "install {program} where `fleet run` finds it (its PATH), or point fleet at it: fleet config set coders.{}.program=/path/to/{program}",
                coder.name()
            )
        } else {
            format!("install {program}, or fix argv in [coders.{}]", coder.name())
        };
        let detail = if program.contains('/') {
            let path = home.join(program);
            if path.exists() {
                format!("{} is not executable", path.display())
            } else {
                format!("{} does not exist", path.display())
            }
        } else {
            format!("{program} is not on the agents' PATH ({})", env.path)
        };
        return vec![SetupCheck::problem(subject, "program", detail, fix)];
    };
    let mut checks = vec![SetupCheck::ok(subject, "program", found.display().to_string())];
    if let Some(probe) = coder.probe() {
        checks.push(version_check(probe, &found, &env, subject));
        if accounts.is_empty() {
            checks.push(sign_in_check(coder.name(), probe, &found, &env, subject));
        }
        for account in accounts {
            let mut on_account = AgentEnv::of(coder, home);
            on_account.spec.set_env(&account.env);
            let subject = format!("{subject} account {}", account.name);
            checks.push(sign_in_check(coder.name(), probe, &found, &on_account, &subject));
        }
    }
    checks
}

/// `program` as the supervisor finds it: a path as it is (relative to the task's directory),
/// a name on the agents' PATH.
fn find_program(program: &str, path: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let candidate = cwd.join(program);
        return is_executable(&candidate).then_some(candidate);
    }
    find_executable(program, path.as_ref())
}

fn version_check(probe: &Probe, program: &Path, env: &AgentEnv, subject: &str) -> SetupCheck {
    let shown = format!("{} {}", program.display(), probe.version_args.join(" "));
    match run_briefly(program, probe.version_args, env) {
        Ok(ran) if ran.success => {
            let version = first_line(&ran.stdout).or_else(|| first_line(&ran.stderr));
            SetupCheck::ok(
                subject,
                "version",
                version.unwrap_or_else(|| "(printed nothing)".into()),
            )
        }
        Ok(ran) => SetupCheck::warning(
            subject,
            "version",
            format!(
                "`{shown}` failed ({}): {}",
                ran.exit,
                first_line(&ran.stderr).or_else(|| first_line(&ran.stdout)).unwrap_or_default()
            ),
            format!("run `{shown}` yourself and repair the installation"),
        ),
        Err(why) => SetupCheck::warning(
            subject,
            "version",
            format!("`{shown}` {why}"),
            format!("run `{shown}` yourself and repair the installation"),
        ),
    }
}

/// The sign-in: the configured provider's own (codex with another `model_provider`), else a
/// variable set, else the status command's word, else a credential file.
fn sign_in_check(
    coder: &str,
    probe: &Probe,
    program: &Path,
    env: &AgentEnv,
    subject: &str,
) -> SetupCheck {
    if let Some(check) = (coder == "codex").then(|| codex_provider_sign_in(env, subject)).flatten()
    {
        return check;
    }
    let sign_in = &probe.sign_in;
    if let Some(var) = sign_in.env.iter().find(|var| env.var(var).is_some()) {
        return SetupCheck::ok(subject, "sign-in", format!("{var} is set"));
    }
    let files: Vec<PathBuf> =
        sign_in.files.iter().filter_map(|file| file_path(file, env)).collect();
    if let Some(args) = sign_in.status_args {
        let shown = format!(
            "{} {}",
            program.file_name().unwrap_or_default().to_string_lossy(),
            args.join(" ")
        );
        if let Ok(ran) = run_briefly(program, args, env) {
            let said =
                first_line(&ran.stdout).or_else(|| first_line(&ran.stderr)).unwrap_or_default();
            if ran.success {
                return SetupCheck::ok(subject, "sign-in", format!("`{shown}`: {said}"));
            }
            return not_signed_in(
                sign_in.fix,
                sign_in.optional,
                subject,
                format!("`{shown}`: {said}"),
            );
        }
    }
    if let Some(file) = files.iter().find(|file| file.is_file()) {
        return SetupCheck::ok(subject, "sign-in", format!("credentials in {}", file.display()));
    }
    let mut looked = vec![match sign_in.env {
        [one] => format!("{one} is not set"),
        many => format!("none of {} is set", many.join(", ")),
    }];
    // A file in the made-up task directory is in a home fleet makes for each agent: nothing
    // could have signed in there.
    let real = files.iter().filter(|file| !file.starts_with(&env.task_dir));
    looked.extend(real.map(|file| format!("no {}", file.display())));
    not_signed_in(sign_in.fix, sign_in.optional, subject, looked.join("; "))
}

/// codex signed in the way its configured provider signs in: a `model_provider` other than
/// OpenAI in `$CODEX_HOME/config.toml` (default `~/.codex`) takes the key its `env_key`
/// names, or none at all (a local server) — `codex login status` knows only OpenAI's sign-in
/// and says "Not logged in" for a working custom-provider setup. `None` for OpenAI itself
/// (or no readable config): the ordinary checks apply.
fn codex_provider_sign_in(env: &AgentEnv, subject: &str) -> Option<SetupCheck> {
    let dir = env
        .var("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|home| Path::new(&home).join(".codex")))?;
    let text = std::fs::read_to_string(dir.join("config.toml")).ok()?;
    let config: toml::Table = text.parse().ok()?;
    let provider = config.get("model_provider")?.as_str()?;
    if provider == "openai" {
        return None;
    }
    let table = config.get("model_providers")?.get(provider)?;
    match table.get("env_key").and_then(toml::Value::as_str) {
        Some(key) if env.var(key).is_some() => {
            Some(SetupCheck::ok(subject, "sign-in", format!("provider {provider}: {key} is set")))
        }
        Some(key) => Some(SetupCheck::problem(
            subject,
            "sign-in",
            format!(
                "not signed in: provider {provider} takes its key from {key}, which is not set"
            ),
            format!(
                "set {key} in the environment `fleet run` starts from, or in [coders.codex] env of runtime.toml"
            ),
        )),
        None => Some(SetupCheck::ok(
            subject,
            "sign-in",
            format!(
                "provider {provider} needs no key (no env_key in {})",
                dir.join("config.toml").display()
            ),
        )),
    }
}

fn not_signed_in(fix: &str, optional: bool, subject: &str, detail: String) -> SetupCheck {
    let detail = format!("not signed in: {detail}");
    if optional {
        SetupCheck::warning(subject, "sign-in", detail, fix)
    } else {
        SetupCheck::problem(subject, "sign-in", detail, fix)
    }
}

/// Where `file` is for this agent: under its variable when set, else under the home.
fn file_path(file: &CredentialFile, env: &AgentEnv) -> Option<PathBuf> {
    if let Some(dir) = env.var(file.var) {
        return Some(Path::new(&dir).join(file.under_var).join(file.file));
    }
    let home = env.var("HOME")?;
    file.under_home.map(|under| Path::new(&home).join(under).join(file.file))
}

/// What a command run here did.
struct Ran {
    success: bool,
    /// `exit 1`, `killed by signal 9`.
    exit: String,
    stdout: String,
    stderr: String,
}

/// Runs `program args` as an agent would be run (its environment, stdin closed, a process
/// group of its own), for at most [`PROBE_TIMEOUT`]; its output redacted.
fn run_briefly(program: &Path, args: &[&str], env: &AgentEnv) -> Result<Ran, String> {
    let mut command = Command::new(program);
    command.args(args).envs(env.command_env()).stdin(Stdio::null());
    let output = crate::process::output_owned_within(&mut command, PROBE_TIMEOUT)
        .map_err(|error| format!("could not start: {error}"))?
        .ok_or_else(|| format!("gave no answer within {} s", PROBE_TIMEOUT.as_secs()))?;
    let redactor = env.redactor();
    let text = |bytes: &[u8]| redactor.redact_text(&String::from_utf8_lossy(bytes)).into_owned();
    Ok(Ran {
        success: output.status.success(),
        exit: match output.status.code() {
            Some(code) => format!("exit {code}"),
            None => "killed by a signal".to_owned(),
        },
        stdout: text(&output.stdout),
        stderr: text(&output.stderr),
    })
}

/// The first line of `text` that says something (not a warning of the CLI about itself),
/// cut to a readable length.
fn first_line(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("WARNING:"))
        .or_else(|| text.lines().map(str::trim).find(|line| !line.is_empty()))?;
    let mut line: String = line.chars().take(120).collect();
    if line.chars().count() == 120 {
        line.push('…');
    }
    Some(line)
}
