//! Logging on stderr: silent by default, `FLEET_LOG` (else `RUST_LOG`) opens it up, a bad
//! filter is a warning and the command still works, and `bd` keeps beads' quiet stderr.

use std::path::Path;
use std::process::Command;

use crate::{Run, Workspace};

fn with_env(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = ws.command(args);
    command.envs(env.iter().copied());
    command.output().expect("run fleet").into()
}

#[test]
fn commands_print_no_log_lines_by_default() {
    let ws = Workspace::new();
    ws.create("One", &[]);
    let run = ws.run(&["list"]).ok();
    assert_eq!(run.stderr, "");
}

#[test]
fn fleet_log_debug_prints_debug_lines_on_stderr() {
    let ws = Workspace::new();
    ws.create("One", &[]);
    let quiet = ws.run(&["list"]).ok();
    let run = with_env(&ws, &["list"], &[("FLEET_LOG", "debug")]).ok();
    assert_eq!(run.stdout, quiet.stdout, "logging never touches stdout");
    assert!(run.stderr.lines().any(|l| l.starts_with("DEBUG ")), "{}", run.stderr);
    assert!(run.stderr.contains("opening the store"), "{}", run.stderr);

    let run = with_env(&ws, &["list"], &[("RUST_LOG", "debug")]).ok();
    assert!(run.stderr.contains("DEBUG "), "RUST_LOG is the fallback: {}", run.stderr);
    let run = with_env(&ws, &["list"], &[("FLEET_LOG", "warn"), ("RUST_LOG", "debug")]).ok();
    assert_eq!(run.stderr, "", "FLEET_LOG wins over RUST_LOG");
}

#[test]
fn an_invalid_fleet_log_is_a_warning_and_the_command_still_works() {
    let ws = Workspace::new();
    ws.create("One", &[]);
    let quiet = ws.run(&["list"]).ok();
    let run = with_env(&ws, &["list"], &[("FLEET_LOG", "fleet=loud[")]).ok();
    assert_eq!(run.stdout, quiet.stdout);
    assert!(
        run.stderr.starts_with("warning: ignoring FLEET_LOG=\"fleet=loud[\": "),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

/// A `bd` symlink to the binary, as agents call it.
fn bd(ws: &Workspace, args: &[&str], env: &[(&str, &str)]) -> Run {
    let bin = ws.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("bd");
    if !Path::new(&link).exists() {
        std::os::unix::fs::symlink(crate::common::fleet_bin(), &link).unwrap();
    }
    let mut command = Command::new(&link);
    command
        .env_clear()
        .env("FLEET_HOME", ws.home())
        .env("FLEET_ACTOR", "tester")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(ws.home())
        .args(args)
        .envs(env.iter().copied());
    command.output().expect("run bd").into()
}

#[test]
fn bd_prints_nothing_extra_on_stderr() {
    let ws = Workspace::new();
    let id = ws.create("One", &[]);
    for env in [&[][..], &[("RUST_LOG", "debug")][..], &[("FLEET_LOG", "fleet=loud[")][..]] {
        for args in [&["ready"][..], &["list"][..], &["show", id.as_str()][..]] {
            let run = bd(&ws, args, env).ok();
            assert_eq!(run.stderr, "", "bd {args:?} with {env:?}");
        }
        let run = with_env(&ws, &["bd", "ready"], env).ok();
        assert_eq!(run.stderr, "", "fleet bd ready with {env:?}");
    }
    // Asked for explicitly, bd logs too.
    let run = bd(&ws, &["list"], &[("FLEET_LOG", "debug")]).ok();
    assert!(run.stderr.contains("DEBUG "), "{}", run.stderr);
}
