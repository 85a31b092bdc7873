//! `runtime.toml`: loading (defaults, strict keys, typed values with line numbers), the hot
//! reload helper, and `fleet config show|set|unset` run as a user runs them — the real binary
//! in a throwaway `FLEET_HOME` with a cleared environment.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Run;
use fleet::config::{ConfigErrorKind, ConfigWatcher, Reload, RuntimeConfig, file_stamp};
use serde_json::Value;

/// A temporary FLEET_HOME.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home { dir: tempfile::tempdir().unwrap() }
    }

    fn file(&self) -> PathBuf {
        self.dir.path().join("runtime.toml")
    }

    fn write(&self, text: &str) {
        std::fs::write(self.file(), text).unwrap();
    }

    fn read(&self) -> String {
        std::fs::read_to_string(self.file()).unwrap()
    }

    /// Runs `fleet ARGS` with only FLEET_HOME, HOME and PATH set.
    fn fleet(&self, args: &[&str]) -> Run {
        Command::new(common::fleet_bin())
            .args(args)
            .env_clear()
            .env("FLEET_HOME", self.dir.path())
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap()
            .into()
    }

    /// Names of the files in FLEET_HOME (to catch leftover temporary files).
    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

// --- loading ----------------------------------------------------------------------------------

#[test]
fn a_missing_file_means_the_defaults() {
    let home = Home::new();
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert_eq!(config, RuntimeConfig::default());
    assert_eq!(config.max_concurrent, 3);
    assert_eq!(config.coder, "claude");
    assert_eq!(config.model, "", "no model for every coder: each uses its own default");
    assert_eq!(config.context_pressure_threshold_pct, 90);
    assert_eq!((config.max_failures, config.max_noclose), (3, 3));
    assert_eq!((config.retry_backoff_secs, config.retry_backoff_max_secs), (30, 600));
    assert_eq!((config.stall_timeout_secs, config.attempt_timeout_secs), (600, 7200));
    assert_eq!((config.shutdown_grace_secs, config.rate_limit_default_pause_secs), (30, 300));
    assert!(!home.file().exists(), "loading never writes");

    let run = home.fleet(&["config", "show"]).ok();
    assert!(
        run.stdout.starts_with(&format!(
            "# {} does not exist: these are the defaults\n",
            home.file().display()
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("\nmax_concurrent = 3\n"));
    assert!(run.stdout.contains("\ncoder = \"claude\"\n"));
    assert!(!home.file().exists(), "show never writes");
}

#[test]
fn a_partial_file_overlays_the_defaults() {
    let home = Home::new();
    home.write("# mine\nmax_concurrent = 8\nmodel = \"opus\"\n");
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert_eq!(config.max_concurrent, 8);
    assert_eq!(config.model, "opus");
    assert_eq!(config.max_failures, 3);
}

#[test]
fn an_unknown_key_is_an_error_naming_it_and_the_fix() {
    let home = Home::new();
    home.write("coder = \"claude\"\nmax_concurent = 4\n");
    let error = RuntimeConfig::load(&home.file()).unwrap_err();
    assert_eq!(error.kind, ConfigErrorKind::UnknownKey);
    assert_eq!(error.line, Some(2));
    assert_eq!(error.key.as_deref(), Some("max_concurent"));

    let run = home.fleet(&["config", "show"]).fails(1);
    assert_eq!(
        run.stderr,
        format!(
            "error: {}:2: unknown key \"max_concurent\" (did you mean \"max_concurrent\"?)\n\
             hint: remove it or fix its spelling; `fleet config show` lists every key\n",
            home.file().display()
        )
    );
    assert!(run.stdout.is_empty());

    // Inside a coder table too, and keys of the Python fleet get their own advice.
    home.write("[coders.claude]\npermision_args = [\"--allowedTools\", \"Bash\"]\n");
    let error = RuntimeConfig::load(&home.file()).unwrap_err();
    assert_eq!(error.key.as_deref(), Some("coders.claude.permision_args"));
    assert!(error.message.contains("did you mean \"permission_args\""), "{}", error.message);
    home.write("telegram_chat_id = \"123\"\n");
    let error = RuntimeConfig::load(&home.file()).unwrap_err();
    assert_eq!(
        error.message,
        "unknown key \"telegram_chat_id\": the Python fleet's, not used here (Telegram messages go through a [notify] command (README))"
    );
    assert_eq!(error.hint.as_deref(), Some("remove it with `fleet config unset telegram_chat_id`"));
}

#[test]
fn a_wrong_type_or_range_names_the_line() {
    let home = Home::new();
    home.write("# limits\nmax_failures = 2\nmax_concurrent = \"4\"\n");
    let run = home.fleet(&["config", "show"]).fails(1);
    assert!(
        run.stderr.starts_with(&format!(
            "error: {}:3: max_concurrent must be an integer from 0 to 1024, found string \"4\"",
            home.file().display()
        )),
        "{}",
        run.stderr
    );

    let cases = [
        (
            "context_pressure_threshold_pct = 150\n",
            1,
            "context_pressure_threshold_pct must be from 1 to 100, found 150",
        ),
        ("\n\nmax_noclose = -1\n", 3, "max_noclose must be from 0 to 1000, found -1"),
        ("coder = 5\n", 1, "coder must be a string, found integer 5"),
        (
            "[coders.claude]\ncontext_limit = \"big\"\n",
            2,
            "coders.claude.context_limit must be a number of tokens (0: no limit), found string \"big\"",
        ),
        (
            "[coders.x]\nargv = [\"x\"]\nevents = \"json\"\n",
            3,
            "coders.x.events must be one of \"claude\", \"codex\", \"gemini\", \"opencode\", \"agy\", \"lines\", found \"json\"",
        ),
        ("max_concurrent = 3\nmax_concurrent = 4\n", 2, "duplicate key"),
        ("max_concurrent = \n", 1, ""),
    ];
    for (text, line, message) in cases {
        home.write(text);
        let error = RuntimeConfig::load(&home.file()).unwrap_err();
        assert_eq!(error.line, Some(line), "{text:?}: {error}");
        assert!(error.message.contains(message), "{text:?}: {}", error.message);
    }
}

#[test]
fn coders_are_validated_when_the_config_loads() {
    let home = Home::new();
    home.write("max_concurrent = 2\ncoder = \"cladue\"\n");
    let run = home.fleet(&["config", "show"]).fails(1);
    assert!(
        run.stderr.contains(
            "runtime.toml:2: coder = \"cladue\": unknown coder \"cladue\" (did you mean \"claude\"?)"
        ),
        "{}",
        run.stderr
    );

    home.write("coder = \"mybot\"\n\n[coders.mybot]\nargv = [\"mybot\", \"{promt}\"]\n");
    let error = RuntimeConfig::load(&home.file()).unwrap_err();
    assert_eq!(error.key.as_deref(), Some("coders.mybot.argv"));
    assert_eq!(error.line, Some(4));
    assert!(error.message.contains("unknown placeholder {promt}"), "{}", error.message);

    home.write("coder = \"mybot\"\n\n[coders.mybot]\nargv = [\"mybot\", \"{prompt}\"]\nevents = \"claude\"\n");
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert!(config.registry().unwrap().contains("mybot"));
}

// --- hot reload ---------------------------------------------------------------------------------

/// Polls `watcher` until a change has settled and been read (the watcher waits for a changed
/// file to stay unchanged for a moment, see `SETTLE`).
fn settled(watcher: &mut ConfigWatcher) -> Reload {
    let read = common::poll_within(std::time::Duration::from_secs(10), || match watcher.poll() {
        Reload::Unchanged => None,
        other => Some(other),
    });
    read.unwrap_or(Reload::Unchanged)
}

#[test]
fn the_watcher_reloads_changes_and_keeps_the_last_good_config() {
    let home = Home::new();
    home.write("max_concurrent = 2\n");
    let mut watcher = ConfigWatcher::new(&home.file()).unwrap();
    assert_eq!(watcher.config().max_concurrent, 2);
    assert!(matches!(watcher.poll(), Reload::Unchanged));

    // A valid change (same size: the inode of the atomic replace tells it apart).
    let before = file_stamp(&home.file()).unwrap();
    home.fleet(&["config", "set", "max_concurrent=5"]).ok();
    assert_ne!(file_stamp(&home.file()), Some(before));
    assert!(matches!(settled(&mut watcher), Reload::Reloaded));
    assert_eq!(watcher.config().max_concurrent, 5);

    // An invalid edit is reported once, and the previous config stays.
    std::fs::write(home.file(), "max_concurrent = 5\nmax_concurrent_typo = 1\n").unwrap();
    match settled(&mut watcher) {
        Reload::Invalid(error) => assert_eq!(error.line, Some(2)),
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert_eq!(watcher.config().max_concurrent, 5);
    assert!(matches!(watcher.poll(), Reload::Unchanged));

    // A custom coder appears in the registry on reload; removing the file means defaults.
    std::fs::write(home.file(), "[coders.job]\nargv = [\"make\"]\n").unwrap();
    assert!(matches!(settled(&mut watcher), Reload::Reloaded));
    assert!(watcher.registry().contains("job"));
    std::fs::remove_file(home.file()).unwrap();
    assert!(matches!(settled(&mut watcher), Reload::Reloaded));
    assert_eq!(watcher.config(), &RuntimeConfig::default());
    assert!(file_stamp(&home.file()).is_none());

    // A file emptied in place and written again a moment later is read whole (issue 27).
    home.write("max_concurrent = 2\n");
    assert!(matches!(settled(&mut watcher), Reload::Reloaded));
    std::fs::write(home.file(), "").unwrap();
    assert!(matches!(watcher.poll(), Reload::Unchanged), "an empty file is not read at once");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(matches!(watcher.poll(), Reload::Unchanged));
    std::fs::write(home.file(), "max_concurrent = 7\n").unwrap();
    assert!(matches!(settled(&mut watcher), Reload::Reloaded));
    assert_eq!(watcher.config().max_concurrent, 7);
}

// --- fleet config set / unset / show --------------------------------------------------------

const COMMENTED: &str = "\
# Team settings — keep this comment.
max_concurrent = 2   # low on purpose

# Claude runs from a pinned build.
[coders.claude]
program = \"/opt/claude/bin/claude\"  # pinned
";

#[test]
fn set_keeps_comments_and_layout() {
    let home = Home::new();
    home.write(COMMENTED);
    let run = home
        .fleet(&[
            "config",
            "set",
            "max_concurrent=5",
            "coder=codex",
            "coders.claude.env.IS_SANDBOX=0",
        ])
        .ok();
    assert_eq!(
        run.stdout,
        format!(
            "Updated {}: max_concurrent = 5, coder = \"codex\", coders.claude.env.IS_SANDBOX = \"0\"\n",
            home.file().display()
        )
    );
    assert_eq!(
        home.read(),
        "\
# Team settings — keep this comment.
max_concurrent = 5   # low on purpose
coder = \"codex\"

# Claude runs from a pinned build.
[coders.claude]
program = \"/opt/claude/bin/claude\"  # pinned
env = { IS_SANDBOX = \"0\" }
"
    );
    assert_eq!(home.entries(), ["runtime.toml"], "no temporary file left behind");
}

/// Issue 13: `config set coder=gemini` and `create --coder gemini` disagreed. One check now
/// decides for both (and for `update --coder`): a built-in, or a coder the config defines.
#[test]
fn coder_names_are_checked_the_same_way_by_config_and_create() {
    let home = Home::new();
    home.fleet(&["init", "--prefix", "t"]).ok();
    home.fleet(&["config", "set", "coder=gemini"]).ok();
    let id = home.fleet(&["create", "One", "--silent", "--coder", "gemini"]).ok().stdout;
    let run = home.fleet(&["create", "Two", "--coder", "nope"]).fails(1);
    assert!(run.stderr.contains("unknown coder \"nope\""), "{}", run.stderr);
    assert!(run.stderr.contains("hint: use a built-in coder"), "{}", run.stderr);
    let run = home.fleet(&["config", "set", "coder=nope"]).fails(1);
    assert!(run.stderr.contains("unknown coder \"nope\""), "{}", run.stderr);
    let run = home.fleet(&["update", id.trim(), "--coder", "mybot"]).fails(1);
    assert!(run.stderr.contains("unknown coder \"mybot\""), "{}", run.stderr);
    home.fleet(&["config", "set", "coders.mybot.argv=[\"mybot\", \"{prompt}\"]"]).ok();
    home.fleet(&["update", id.trim(), "--coder", "mybot"]).ok();
    home.fleet(&["create", "Three", "--coder", "mybot"]).ok();
}

#[test]
fn an_invalid_set_writes_nothing() {
    let home = Home::new();
    home.write(COMMENTED);
    let stamp = file_stamp(&home.file());
    for (args, message) in [
        (
            vec!["max_concurrent=abc"],
            "not saved: max_concurrent must be an integer from 0 to 1024, found string \"abc\"",
        ),
        (
            vec!["max_concurrent=7", "coder=nope"],
            "not saved: coder = \"nope\": unknown coder \"nope\"",
        ),
        (
            vec!["max_concurent=7"],
            "unknown key \"max_concurent\" (did you mean \"max_concurrent\", in runtime.toml?)",
        ),
        (
            vec!["coders.claude.argv=[\"x\"]"],
            "not saved: coders.claude.argv: argv is for coders fleet does not know",
        ),
        (vec!["max_concurrent"], "\"max_concurrent\" is not key=value"),
        (
            vec!["retry_backoff_max_secs=5"],
            "not saved: retry_backoff_max_secs (5) is less than retry_backoff_secs (30)",
        ),
    ] {
        let mut full = vec!["config", "set"];
        full.extend(&args);
        let run = home.fleet(&full).fails(1);
        assert!(run.stderr.starts_with(&format!("error: {message}")), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
        assert_eq!(home.read(), COMMENTED, "{args:?}: the file is unchanged");
        assert_eq!(file_stamp(&home.file()), stamp, "{args:?}: not even rewritten");
    }
    let run = home.fleet(&["config", "set", "coder=nope"]).fails(1);
    assert!(
        run.stderr.contains(&format!("{} is unchanged", home.file().display())),
        "{}",
        run.stderr
    );
    assert_eq!(home.entries(), ["runtime.toml"]);
}

#[test]
fn set_creates_the_file_with_an_explaining_header() {
    let home = Home::new();
    let run = home.fleet(&["--json", "config", "set", "max_concurrent=6", "model=gpt-5.5"]).ok();
    assert_eq!(
        run.json(),
        serde_json::json!({
            "path": home.file().display().to_string(),
            "created": true,
            "set": {"max_concurrent": 6, "model": "gpt-5.5"},
            "unset": [],
        })
    );
    let text = home.read();
    assert!(text.starts_with("# fleet runtime configuration"));
    assert!(text.contains("re-reads this file when it changes"), "the header explains hot reload");
    assert!(text.contains("#   max_noclose = 3"), "the header lists every key with its default");
    assert!(text.ends_with("\nmax_concurrent = 6\nmodel = \"gpt-5.5\"\n"), "{text}");
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert_eq!((config.max_concurrent, config.model.as_str()), (6, "gpt-5.5"));
}

#[test]
fn set_defines_a_coder_and_unset_removes_it() {
    let home = Home::new();
    home.fleet(&[
        "config",
        "set",
        "coders.mybot.argv=[\"mybot\", \"--json\", \"{prompt}\"]",
        "coders.mybot.events=claude",
        "coders.mybot.model_context_limits.big-1.5=500000",
        "coder=mybot",
    ])
    .ok();
    let config = RuntimeConfig::load(&home.file()).unwrap();
    let bot = config.registry().unwrap().get("mybot").unwrap();
    assert_eq!(bot.context_limit("big-1.5"), Some(500_000));
    assert_eq!(bot.context_limit("other"), Some(200_000), "claude-format default");

    // Removing the coder while it is the default coder would break the config: refused.
    let run = home.fleet(&["config", "unset", "coders.mybot"]).fails(1);
    assert!(run.stderr.contains("unknown coder \"mybot\""), "{}", run.stderr);
    let run = home.fleet(&["config", "unset", "coder", "coders.mybot", "max_stalls"]).ok();
    assert!(run.stdout.contains("coder removed, coders.mybot removed"), "{}", run.stdout);
    assert_eq!(RuntimeConfig::load(&home.file()).unwrap(), RuntimeConfig::default());
}

#[test]
fn show_json_is_the_effective_config_and_the_coders() {
    let home = Home::new();
    home.write("max_concurrent = 4\n\n[coders.job]\nargv = [\"make\", \"{description}\"]\n");
    let json = home.fleet(&["--json", "config", "show"]).ok().json();
    assert_eq!(json["path"], home.file().display().to_string());
    assert_eq!(json["exists"], true);
    assert_eq!(json["config"]["max_concurrent"], 4);
    assert_eq!(json["config"]["coder"], "claude");
    assert_eq!(json["config"]["retry_backoff_max_secs"], 600);
    assert_eq!(
        json["config"]["coders"]["job"]["argv"],
        serde_json::json!(["make", "{description}"])
    );
    let coders = json["coders"].as_array().unwrap();
    let names: Vec<&str> = coders.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["agy", "claude", "codex", "exec", "gemini", "job", "opencode"]);
    assert_eq!(
        coders[1],
        serde_json::json!({"name": "claude", "builtin": true, "default_model": "sonnet", "context_limit": 200000})
    );
    assert_eq!(coders[5]["builtin"], false);
    assert_eq!(coders[5]["context_limit"], Value::Null);

    let defaults = Home::new().fleet(&["--json", "config", "show"]).ok().json();
    assert_eq!(defaults["exists"], false);
    assert_eq!(defaults["config"]["max_concurrent"], 3);
}

// --- secrets in coder env tables -----------------------------------------------------------

const ENV_SECRET: &str = "sk-live-do-not-print-0123456789";

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn show_masks_secret_env_values_by_name_and_shows_the_others() {
    let home = Home::new();
    home.write(&format!(
        "[coders.claude]\nenv = {{ MY_API_KEY = \"{ENV_SECRET}\", MODE = \"fast-and-loose\", \
         ANTHROPIC_BASE_URL = \"http://127.0.0.1:8080\" }}\n\n\
         [coders.job]\nargv = [\"make\"]\n\n[coders.job.env]\nJOB_TOKEN = \"{ENV_SECRET}\"\n"
    ));

    let human = home.fleet(&["config", "show"]).ok();
    assert!(!human.stdout.contains(ENV_SECRET), "show prints the secret:\n{}", human.stdout);
    for line in [
        "MY_API_KEY = \"<redacted>\"",
        "MODE = \"fast-and-loose\"",
        "ANTHROPIC_BASE_URL = \"http://127.0.0.1:8080\"",
        "JOB_TOKEN = \"<redacted>\"",
    ] {
        assert!(human.stdout.contains(line), "show lacks {line}:\n{}", human.stdout);
    }

    let json = home.fleet(&["--json", "config", "show"]).ok();
    assert!(!json.stdout.contains(ENV_SECRET), "{}", json.stdout);
    let json = json.json();
    assert_eq!(
        json["config"]["coders"]["claude"]["env"],
        serde_json::json!({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "MODE": "fast-and-loose", "MY_API_KEY": "<redacted>"})
    );
    assert_eq!(
        json["config"]["coders"]["job"]["env"],
        serde_json::json!({"JOB_TOKEN": "<redacted>"})
    );
    assert!(home.read().contains(ENV_SECRET), "showing never rewrites the file");
}

#[test]
fn a_file_holding_env_values_is_written_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    // Written by hand, world-readable, with an env table: the next `set` makes it private.
    let home = Home::new();
    home.write(&format!("[coders.claude.env]\nMY_API_KEY = \"{ENV_SECRET}\"\n"));
    std::fs::set_permissions(home.file(), std::fs::Permissions::from_mode(0o644)).unwrap();
    home.fleet(&["config", "set", "max_concurrent=2"]).ok();
    assert_eq!(mode_of(&home.file()), 0o600);
    assert!(home.read().contains(ENV_SECRET));

    // Created by `set` with an env value: private from the start, and the value is not echoed.
    let fresh = Home::new();
    let assignment = format!("coders.claude.env.MY_API_KEY={ENV_SECRET}");
    let run = fresh.fleet(&["config", "set", &assignment]).ok();
    assert!(!run.stdout.contains(ENV_SECRET), "{}", run.stdout);
    assert!(run.stdout.contains("coders.claude.env.MY_API_KEY = \"<redacted>\""), "{}", run.stdout);
    assert_eq!(mode_of(&fresh.file()), 0o600);

    let table = format!("coders.codex.env={{ OPENAI_API_KEY = \"{ENV_SECRET}\" }}");
    let run = fresh.fleet(&["--json", "config", "set", &table]).ok();
    assert!(!run.stdout.contains(ENV_SECRET), "{}", run.stdout);
    assert_eq!(
        run.json()["set"],
        serde_json::json!({"coders.codex.env": {"OPENAI_API_KEY": "<redacted>"}})
    );
    assert_eq!(mode_of(&fresh.file()), 0o600);

    // Removing the env tables does not loosen a file that is private already.
    fresh.fleet(&["config", "unset", "coders.claude.env", "coders.codex.env"]).ok();
    assert!(!fresh.read().contains(ENV_SECRET));
    assert_eq!(mode_of(&fresh.file()), 0o600);
    assert_eq!(fresh.entries(), ["runtime.toml"], "no temporary file left behind");
}

#[test]
fn the_file_path_follows_fleet_home() {
    let home = Home::new();
    let nested = home.dir.path().join("deeper/home");
    let output = Command::new(common::fleet_bin())
        .args(["config", "set", "max_concurrent=1"])
        .env_clear()
        .env("FLEET_HOME", &nested)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(Path::new(&nested).join("runtime.toml").exists(), "FLEET_HOME is created if missing");
}

// --- accounts -----------------------------------------------------------------------------------

#[test]
fn bad_account_tables_are_refused_naming_the_line_and_the_fix() {
    let home = Home::new();
    let account =
        |body: &str| format!("coder = \"claude\"\n\n[[coders.claude.accounts]]\n{body}\n");
    let cases: [(String, &str, Option<&str>); 9] = [
        (
            account(
                "name = \"work\"\nenv = { A = \"1\" }\n\n[[coders.claude.accounts]]\nname = \"work\"\nenv = { A = \"2\" }",
            ),
            "runtime.toml:7: coders.claude.accounts[1]: the account name \"work\" is used twice",
            Some("give each account of a coder a name of its own"),
        ),
        (
            account("name = \"work\"\nenv = {}"),
            "runtime.toml:5: coders.claude.accounts[0] (\"work\"): env is empty",
            Some("an account is name = \"…\" and env = { VAR = \"…\" }"),
        ),
        (
            account("name = \"work\""),
            "runtime.toml:3: coders.claude.accounts[0] (\"work\") has no env",
            None,
        ),
        (
            account("env = { A = \"1\" }"),
            "runtime.toml:3: coders.claude.accounts[0] has no name",
            None,
        ),
        (
            account("name = \"work\"\nenvv = { A = \"1\" }"),
            "runtime.toml:5: unknown key \"coders.claude.accounts[0].envv\" (did you mean \"env\"?)",
            Some("an account is name"),
        ),
        (
            account("name = \"my work\"\nenv = { A = \"1\" }"),
            "runtime.toml:4: coders.claude.accounts[0].name \"my work\" may hold only letters",
            None,
        ),
        (
            account("name = \"work\"\nenv = { FLEET_HOME = \"/x\" }"),
            "runtime.toml:5: coders.claude.accounts[0] (\"work\"): FLEET_HOME is set by fleet for every agent",
            Some("remove it; an account may not set PATH, BEADS_DIR, BD_ACTOR, FLEET_*"),
        ),
        (
            account(
                "name = \"a\"\nenv = { CLAUDE_CONFIG_DIR = \"/h/w/\" }\n\n[[coders.claude.accounts]]\nname = \"b\"\nenv = { CLAUDE_CONFIG_DIR = \"/h/w\" }",
            ),
            "coders.claude.accounts[1]: accounts \"a\" and \"b\" resolve to the same login (the same CLAUDE_CONFIG_DIR): they would share one quota",
            Some("give each account a login or key of its own"),
        ),
        (
            "[coders.claude]\naccounts = { name = \"work\" }\n".to_owned(),
            "runtime.toml:2: coders.claude.accounts must be an array of tables",
            None,
        ),
    ];
    for (text, message, hint) in cases {
        home.write(&text);
        let run = home.fleet(&["config", "show"]).fails(1);
        assert!(run.stderr.contains(message), "{text}\n---\n{}", run.stderr);
        if let Some(hint) = hint {
            assert!(run.stderr.contains(&format!("hint: {hint}")), "{text}\n---\n{}", run.stderr);
        }
        assert!(run.stdout.is_empty(), "{}", run.stdout);
    }
    // A valid table, inline or as an array of tables, loads.
    home.write(
        "[coders.codex]\naccounts = [{ name = \"a\", env = { CODEX_HOME = \"/h/a\" } }]\n\n\
         [[coders.claude.accounts]]\nname = \"me@work.io\"\nenv = { CLAUDE_CONFIG_DIR = \"/h/w\" }\n",
    );
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert_eq!(config.accounts("claude")[0].name, "me@work.io");
    assert_eq!(config.accounts("codex")[0].env["CODEX_HOME"], "/h/a");
    assert!(config.accounts("gemini").is_empty());
}

#[test]
fn account_env_values_are_masked_and_make_the_file_private() {
    let home = Home::new();
    let table = format!(
        "coders.claude.accounts=[{{ name = \"work\", env = {{ ANTHROPIC_API_KEY = \"{ENV_SECRET}\" }} }}]"
    );
    let set = home.fleet(&["--json", "config", "set", &table]).ok();
    assert!(!set.stdout.contains(ENV_SECRET), "{}", set.stdout);
    assert_eq!(
        set.json()["set"]["coders.claude.accounts"],
        serde_json::json!([{"name": "work", "env": {"ANTHROPIC_API_KEY": "<redacted>"}}])
    );
    assert_eq!(mode_of(&home.file()), 0o600);
    assert!(home.read().contains(ENV_SECRET));

    let human = home.fleet(&["config", "show"]).ok().stdout;
    assert!(!human.contains(ENV_SECRET), "{human}");
    assert!(
        human.contains("name = \"work\"") && human.contains("ANTHROPIC_API_KEY = \"<redacted>\"")
    );
    let json = home.fleet(&["--json", "config", "show"]).ok();
    assert!(!json.stdout.contains(ENV_SECRET), "{}", json.stdout);
    assert_eq!(
        json.json()["config"]["coders"]["claude"]["accounts"][0]["env"]["ANTHROPIC_API_KEY"],
        "<redacted>"
    );
    // The shown config is TOML that loads (with the masked value).
    let shown = human.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    RuntimeConfig::parse(&shown, &home.file()).unwrap();
}

// --- migration from the Python fleet ------------------------------------------------------------

/// A runtime.toml as the Python fleet wrote it (its header, every key it had at its last
/// release), plus keys of its early versions a long-lived home may still carry.
const PYTHON_CONFIG: &str = "\
# Fleet runtime configuration.
# The supervisor re-reads this file; in-flight subprocesses are never killed by a change.
# telegram_chat_id: the chat fleet notifies.
max_concurrent = 4
model = \"opus\"
coder = \"claude\"
context_pressure_threshold_pct = 85
telegram_chat_id = \"-1001234\"
telegram_allowed_ids = \"11,22\"
telegram_default_cwd = \"\"

# from the first versions
retry_limit = \"2\"
shutdown_grace_sec = 20
claim_poll_interval_sec = 5
";

#[test]
fn show_names_every_unknown_key_of_a_python_fleet_file_at_once() {
    let home = Home::new();
    home.write(PYTHON_CONFIG);
    let run = home.fleet(&["config", "show"]).fails(1);
    let file = home.file().display().to_string();
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(
        errors,
        [
            format!(
                "error: {file}:8: unknown key \"telegram_chat_id\": the Python fleet's, not used here (Telegram messages go through a [notify] command (README)); fix: remove it with `fleet config unset telegram_chat_id`"
            ),
            format!(
                "error: {file}:9: unknown key \"telegram_allowed_ids\": the Python fleet's, not used here (Telegram messages go through a [notify] command (README)); fix: remove it with `fleet config unset telegram_allowed_ids`"
            ),
            format!(
                "error: {file}:10: unknown key \"telegram_default_cwd\": the Python fleet's, not used here (Telegram messages go through a [notify] command (README)); fix: remove it with `fleet config unset telegram_default_cwd`"
            ),
            format!(
                "error: {file}:13: unknown key \"retry_limit\": the Python fleet's name for max_failures; fix: rename it to max_failures"
            ),
            format!(
                "error: {file}:14: unknown key \"shutdown_grace_sec\": the Python fleet's name for shutdown_grace_secs; fix: rename it to shutdown_grace_secs"
            ),
            format!(
                "error: {file}:15: unknown key \"claim_poll_interval_sec\": the Python fleet's, not used here (fleet claims as soon as a task is ready, without polling); fix: remove it with `fleet config unset claim_poll_interval_sec`"
            ),
        ],
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&format!("\nhint: translate the Python fleet's keys (the renamed ones are renamed, the others removed): fleet import {file}\n")), "{}", run.stderr);
    assert!(run.stderr.contains("\nhint: or remove the unknown keys: fleet config unset telegram_chat_id telegram_allowed_ids telegram_default_cwd retry_limit shutdown_grace_sec claim_poll_interval_sec\n"), "{}", run.stderr);
    assert!(run.stdout.is_empty());

    let json = home.fleet(&["--json", "config", "show"]).fails(1);
    let error: Value = serde_json::from_str(&json.stderr).unwrap();
    let ids: Vec<&str> =
        error["errors"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 6, "{error:#}");
    assert_eq!(ids[3], "retry_limit");

    // A typo and an unknown coder key are listed together with the first other problem.
    home.write("max_concurent = 4\n[coders.claude]\npermision_args = []\n[coders.x]\nevents = \"claude\"\n");
    let run = home.fleet(&["config", "show"]).fails(1);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 3, "{}", run.stderr);
    assert!(
        errors[0].contains(":1: unknown key \"max_concurent\" (did you mean \"max_concurrent\"?)")
    );
    assert!(errors[1].contains(
        ":3: unknown key \"coders.claude.permision_args\" (did you mean \"permission_args\"?)"
    ));
    assert!(
        errors[2].contains(":4: coders.x.argv: fleet has no built-in coder \"x\""),
        "{}",
        errors[2]
    );
}

#[test]
fn unset_removes_any_key_written_in_the_file_even_an_unknown_one() {
    let home = Home::new();
    home.write("# mine\nmax_concurrent = 4\ntelegram_chat_id = \"-100\" # the chat\nretry_limit = 2\n\n[coders.claude]\npermision_args = []\n");
    let run =
        home.fleet(&["config", "unset", "telegram_chat_id", "coders.claude.permision_args"]).ok();
    assert_eq!(
        run.stdout,
        format!(
            "Updated {}: telegram_chat_id removed, coders.claude.permision_args removed\n",
            home.file().display()
        )
    );
    // What is still wrong is said, with the way out.
    assert_eq!(
        run.stderr,
        format!(
            "warning: {}:3: unknown key \"retry_limit\": the Python fleet's name for max_failures\n\
             hint: fleet config unset retry_limit\n",
            home.file().display()
        )
    );
    assert_eq!(home.read(), "# mine\nmax_concurrent = 4\nretry_limit = 2\n\n[coders.claude]\n");

    let run = home.fleet(&["config", "unset", "retry_limit"]).ok();
    assert_eq!(run.stderr, "");
    assert!(home.fleet(&["config", "show"]).ok().stdout.contains("\nmax_concurrent = 4\n"));

    // A key that is neither known nor in the file is still an error.
    let run = home.fleet(&["config", "unset", "telegram_chat_id"]).fails(1);
    assert!(run.stderr.starts_with("error: unknown key \"telegram_chat_id\""), "{}", run.stderr);
}

#[test]
fn unset_never_makes_a_file_worse() {
    let home = Home::new();
    let text = "coder = \"mybot\"\nlog_root = \"logs\"\n\n[coders.mybot]\nargv = [\"mybot\", \"{prompt}\"]\n";
    home.write(text);
    // Removing the default coder's table would add a problem: nothing is written.
    let run = home.fleet(&["config", "unset", "coders.mybot"]).fails(1);
    assert!(
        run.stderr.contains("not saved: coder = \"mybot\": unknown coder \"mybot\""),
        "{}",
        run.stderr
    );
    assert_eq!(home.read(), text);
    // The problem the file had may stay while another goes.
    home.fleet(&["config", "unset", "log_root"]).ok();
    assert_eq!(
        home.read(),
        "coder = \"mybot\"\n\n[coders.mybot]\nargv = [\"mybot\", \"{prompt}\"]\n"
    );
}

/// A Python fleet's runtime.toml in a directory of its own (the old home).
fn python_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("runtime.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn import_translates_a_python_fleet_runtime_toml_into_this_fleets() {
    let home = Home::new();
    let old = tempfile::tempdir().unwrap();
    let source = python_file(old.path(), PYTHON_CONFIG);
    let source_arg = source.to_str().unwrap();

    let dry = home.fleet(&["import", source_arg, "--dry-run"]).ok();
    assert!(!home.file().exists(), "a dry run writes nothing");
    assert!(dry.stderr.contains("Would translate "), "{}", dry.stderr);

    let run = home.fleet(&["import", source_arg]).ok();
    let target = home.file();
    let expected = format!(
        "Found a runtime configuration {source}\n\
         Translated {source} into {target}:\n\
         \x20 max_concurrent = 4\n\
         \x20 model = \"opus\"\n\
         \x20 coder = \"claude\"\n\
         \x20 context_pressure_threshold_pct = 85\n\
         \x20 retry_limit → max_failures = 2\n\
         \x20 shutdown_grace_sec → shutdown_grace_secs = 20\n\
         \x20 dropped telegram_chat_id (line 8): Telegram messages go through a [notify] command (README)\n\
         \x20 dropped telegram_allowed_ids (line 9): Telegram messages go through a [notify] command (README)\n\
         \x20 dropped telegram_default_cwd (line 10): Telegram messages go through a [notify] command (README)\n\
         \x20 dropped claim_poll_interval_sec (line 15): fleet claims as soon as a task is ready, without polling\n",
        source = source.display(),
        target = target.display()
    );
    assert_eq!(run.stderr, expected);
    let written = home.read();
    assert!(written.starts_with("# fleet runtime configuration"), "a new file has the header");
    assert!(
        written.ends_with("\nmax_concurrent = 4\nmodel = \"opus\"\ncoder = \"claude\"\ncontext_pressure_threshold_pct = 85\nmax_failures = 2\nshutdown_grace_secs = 20\n"),
        "{written}"
    );
    let shown = home.fleet(&["--json", "config", "show"]).ok().json();
    assert_eq!(shown["config"]["max_failures"], 2, "\"2\" is read as the Python fleet read it");
    assert_eq!(shown["config"]["shutdown_grace_secs"], 20);
    assert_eq!(std::fs::read_to_string(&source).unwrap(), PYTHON_CONFIG, "the source is untouched");

    // Into a file with settings of its own: those stay, and the model meant for the Python
    // fleet's coder does not become the model of another coder.
    let other = Home::new();
    other.write("coder = \"codex\"\nmax_concurrent = 9\n");
    let json = other.fleet(&["--json", "import", source_arg]).ok().json();
    assert_eq!(json["in_place"], false);
    let kept: Vec<&str> =
        json["kept"].as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(kept, ["max_concurrent", "coder"]);
    let model = json["dropped"].as_array().unwrap().iter().find(|d| d["key"] == "model").unwrap();
    assert!(
        model["why"]
            .as_str()
            .unwrap()
            .contains("fleet config set coders.claude.default_model=opus"),
        "{model}"
    );
    assert_eq!(
        other.read(),
        "coder = \"codex\"\nmax_concurrent = 9\ncontext_pressure_threshold_pct = 85\nmax_failures = 2\nshutdown_grace_secs = 20\n"
    );
}

#[test]
fn import_translates_the_file_in_place_keeping_comments_and_order() {
    // The Python fleet and this one share ~/.fleet/runtime.toml.
    let home = Home::new();
    home.write(&format!("{PYTHON_CONFIG}max_concurent = 1\nmax_noclose = \"x\"\n"));
    let file = home.file();
    let run = home.fleet(&["import", file.to_str().unwrap()]).ok();
    assert!(
        run.stderr.contains(&format!("Translated {} in place:\n", file.display())),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("  dropped max_concurent (line 16): neither fleet has this key (did you mean \"max_concurrent\"?)\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("  dropped max_noclose (line 17): \"x\" is not a whole number\n"),
        "{}",
        run.stderr
    );
    assert_eq!(
        home.read(),
        "\
# Fleet runtime configuration.
# The supervisor re-reads this file; in-flight subprocesses are never killed by a change.
# telegram_chat_id: the chat fleet notifies.
max_concurrent = 4
model = \"opus\"
coder = \"claude\"
context_pressure_threshold_pct = 85

# from the first versions
max_failures = 2
shutdown_grace_secs = 20
"
    );
    home.fleet(&["config", "show"]).ok();
    // Once more: nothing left to change, nothing written.
    let again = home.fleet(&["--json", "import", file.to_str().unwrap()]).ok().json();
    assert_eq!(again["written"], false);
    assert!(again["dropped"].as_array().unwrap().is_empty());

    // A comment above a key that goes stays, above the line that follows.
    home.write("# notify this chat\ntelegram_chat_id = \"1\" # ops\nmax_concurrent = 2\n# bye\nlog_root = \"x\"\n");
    home.fleet(&["import", file.to_str().unwrap()]).ok();
    assert_eq!(home.read(), "# notify this chat\nmax_concurrent = 2\n# bye\n");
}

#[test]
fn importing_a_python_fleet_home_translates_its_runtime_toml_too() {
    let home = Home::new();
    let old = tempfile::tempdir().unwrap();
    let beads = old.path().join(".beads");
    std::fs::create_dir_all(&beads).unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fleet-own-issues.jsonl");
    std::fs::copy(fixture, beads.join("issues.jsonl")).unwrap();
    std::fs::create_dir_all(old.path().join("tasks")).unwrap();
    python_file(old.path(), "max_concurrent = 6\ncoder = \"codex\"\ntelegram_chat_id = \"1\"\n");

    let run = home.fleet(&["import", old.path().to_str().unwrap()]).ok();
    assert!(run.stderr.contains("a Python-fleet home at"), "{}", run.stderr);
    assert!(run.stderr.contains("Imported 9 issues"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "  max_concurrent = 6\n  coder = \"codex\"\n  dropped telegram_chat_id (line 3)"
        ),
        "{}",
        run.stderr
    );
    assert!(home.read().ends_with("\nmax_concurrent = 6\ncoder = \"codex\"\n"), "{}", home.read());

    let again = Home::new();
    let json =
        again.fleet(&["--json", "import", old.path().to_str().unwrap(), "--dry-run"]).ok().json();
    assert_eq!(json["created"], 9, "{json:#}");
    assert_eq!(json["runtime_config"]["dry_run"], true);
    assert_eq!(json["runtime_config"]["translated"][0]["to"], "max_concurrent");
    assert!(!again.file().exists());
}

/// Keys of the Python fleet's later releases: `config show` names each with what it became,
/// and `fleet import` translates them — minutes into seconds where the unit changed — and
/// drops the rest with the reason.
#[test]
fn later_python_keys_are_named_and_translated_with_their_units() {
    let home = Home::new();
    home.write(
        "max_concurrent = 4\nmax_attempt_minutes = 90\ncontext_kill_pct = 85\nserve_port = 8080\nisolation = \"worktree\"\n",
    );
    let shown = home.fleet(&["config", "show"]).fails(1);
    for message in [
        "runtime.toml:2: unknown key \"max_attempt_minutes\": the Python fleet's attempt_timeout_secs in minutes",
        "runtime.toml:3: unknown key \"context_kill_pct\": the Python fleet's name for context_pressure_threshold_pct",
        "runtime.toml:4: unknown key \"serve_port\": the Python fleet's, not used here (fleet serves no web API",
    ] {
        assert!(shown.stderr.contains(message), "{message:?} in\n{}", shown.stderr);
    }
    let file = home.file().display().to_string();
    let imported = home.fleet(&["--json", "import", &file]).ok().json();
    let translated = &imported["translated"];
    assert!(
        translated.as_array().unwrap().iter().any(|t| t["from"] == "max_attempt_minutes"
            && t["to"] == "attempt_timeout_secs"
            && t["value"] == 5400),
        "{imported:#}"
    );
    let text = home.read();
    assert!(text.contains("attempt_timeout_secs = 5400"), "{text}");
    assert!(text.contains("context_pressure_threshold_pct = 85"), "{text}");
    assert!(!text.contains("serve_port"), "{text}");
    // Issue 30: the Python fleet's isolation is this fleet's too, with the same meaning.
    assert!(!shown.stderr.contains("\"isolation\""), "{}", shown.stderr);
    assert!(text.contains("isolation = \"worktree\""), "{text}");
    home.fleet(&["config", "show"]).ok();
}

/// Issue 29: workspace settings (kept in the store) are `fleet config`'s too: set with their
/// type checked, read back with `get`, listed by `show`, and a misspelt one is named with its
/// closest key of either kind.
#[test]
fn workspace_settings_are_set_and_shown_by_fleet_config() {
    let ws = common::Workspace::new();
    let set = ws.run(&["config", "set", "claim_mode=Remote", "max_concurrent=4"]).ok();
    assert!(set.stdout.contains("claim_mode = remote"), "{}", set.stdout);
    assert_eq!(ws.run(&["bd", "config", "get", "claim_mode"]).ok().stdout.trim(), "remote");
    assert_eq!(ws.json(&["config", "get", "claim_mode"])["value"], "remote");
    assert_eq!(ws.json(&["config", "get", "max_concurrent"])["value"], "4");
    let shown = ws.json(&["config", "show"]);
    let mode = shown["workspace"].as_array().unwrap().iter().find(|s| s["key"] == "claim_mode");
    assert_eq!(mode.unwrap()["value"], "remote", "{shown}");
    let human = ws.run(&["config", "show"]).ok().stdout;
    assert!(human.contains("# workspace settings"), "{human}");
    assert!(human.contains("sync.export_jsonl = false  (default)"), "{human}");

    let bad = ws.run(&["config", "set", "claim_mode=cloud"]).fails(1);
    assert!(bad.stderr.contains("one of local, remote"), "{}", bad.stderr);
    let typo = ws.run(&["config", "set", "claim_mod=remote"]).fails(1);
    assert!(
        typo.stderr.contains("did you mean \"claim_mode\", a workspace setting?"),
        "{}",
        typo.stderr
    );
    let unset = ws.run(&["config", "unset", "claim_mode"]).ok();
    assert!(unset.stdout.contains("claim_mode removed"), "{}", unset.stdout);
    assert_eq!(ws.json(&["config", "get", "claim_mode"])["value"], "local");
}

/// Issue 29: every yes/no setting reads `TRUE`, `yes`, `on` and `1` alike, however it was set;
/// `sync.export_jsonl=TRUE` exports after a sync as `export.auto=TRUE` does after a write.
#[test]
fn yes_no_settings_are_read_alike() {
    let ws = common::Workspace::new();
    let remote = ws.home().join("remote.git");
    common::git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
    ws.run(&["remote", "add", "origin", remote.to_str().unwrap()]).ok();
    ws.run(&["bd", "config", "set", "sync.export_jsonl", "TRUE"]).ok();
    assert_eq!(ws.run(&["bd", "config", "get", "sync.export_jsonl"]).ok().stdout.trim(), "true");
    let id = ws.create("exported after a sync", &[]);
    ws.run(&["sync"]).ok();
    let exported = std::fs::read_to_string(ws.beads_dir().join("issues.jsonl")).unwrap();
    assert!(exported.contains(&id), "{exported}");
    ws.run(&["bd", "config", "set", "export.auto", "On"]).ok();
    let second = ws.create("exported after a write", &[]);
    let exported = std::fs::read_to_string(ws.beads_dir().join("issues.jsonl")).unwrap();
    assert!(exported.contains(&second), "{exported}");
    let refused = ws.run(&["bd", "config", "set", "export.auto", "sometimes"]).fails(1);
    assert!(refused.stderr.contains("true or false"), "{}", refused.stderr);
}

#[test]
fn a_bad_canary_value_is_refused_naming_the_key_and_the_line() {
    let home = Home::new();
    home.write("max_concurrent = 2\n\n[canary]\nwindow = 4\nmin_attempts = 9\n");
    let run = home.fleet(&["config", "show"]).fails(1);
    let file = home.file().display().to_string();
    assert!(
        run.stderr.starts_with(&format!(
            "error: {file}:3: canary.min_attempts must be 1 to canary.window (4) attempts"
        )),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("a [canary] table takes: enabled, window"), "{}", run.stderr);
    for (text, message) in [
        ("[canary]\nrate_margin = 2.0\n", "canary.rate_margin must be a fraction from 0 to 1"),
        ("[canary]\ncost_factor = 0.5\n", "canary.cost_factor must be 1 or more"),
        ("[canary]\nwindow = \"big\"\n", "canary: invalid type"),
        ("[canary]\nwindoww = 4\n", "unknown field `windoww`"),
    ] {
        home.write(text);
        let error = RuntimeConfig::load(&home.file()).unwrap_err();
        assert_eq!(error.line, Some(1), "{text:?}: {error}");
        assert!(error.message.contains(message), "{text:?}: {}", error.message);
    }
    home.write("[canary]\nwindow = 6\nmin_attempts = 3\nrate_factor = 1.5\n");
    let config = RuntimeConfig::load(&home.file()).unwrap();
    assert_eq!((config.canary.window, config.canary.min_attempts), (6, 3));
    assert!(config.canary.enabled, "the canary is on by default");
    let shown = home.fleet(&["--json", "config", "show"]).ok().json();
    assert_eq!(shown["config"]["canary"]["rate_factor"], 1.5, "{shown:#}");
}
