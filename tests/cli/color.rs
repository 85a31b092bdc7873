//! `--color auto|always|never` and `NO_COLOR`: one decision for every coloured output —
//! `fleet ready`'s priority badges, `fleet tasks`, `fleet doctor`'s marks, `fleet run`'s lines
//! and clap's help. Through a pipe there is no escape sequence unless `--color always`; on a
//! terminal `auto` colours unless NO_COLOR is set or TERM is dumb.

use std::time::Duration;

use crate::common::pty::Pty;
use crate::{Run, Workspace};

const ESC: char = '\u{1b}';

/// A workspace with one ready P0 issue (its badge is red).
fn workspace() -> Workspace {
    let ws = Workspace::new();
    ws.create("Urgent", &["-p", "0"]);
    ws
}

/// Runs `fleet ARGS` (through pipes) with `env` set as well, as a terminal user's shell would.
fn run(ws: &Workspace, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = ws.command(args);
    command.env("TERM", "xterm-256color");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("run fleet").into()
}

#[test]
fn piped_output_has_no_colour_unless_forced() {
    let ws = workspace();
    for args in [&["ready"][..], &["tasks"], &["--help"], &["ready", "--color", "auto"]] {
        let out = run(&ws, &[], args).ok().stdout;
        assert!(!out.contains(ESC), "{args:?} through a pipe: {out:?}");
    }
    let forced = run(&ws, &[], &["ready", "--color", "always"]).ok().stdout;
    assert!(forced.contains("1. \u{1b}[31m[● P0]\u{1b}[0m [task] "), "{forced:?}");
    let tasks = run(&ws, &[], &["--color=always", "tasks"]).ok().stdout;
    assert!(tasks.starts_with("\u{1b}[1mfleet: 0/0 running"), "{tasks:?}");
    let help = run(&ws, &[], &["--color", "always", "--help"]).ok().stdout;
    assert!(help.contains(ESC), "clap's help follows --color: {help:?}");
    let usage = run(&ws, &[], &["--color", "always", "nosuch"]).fails(2).stderr;
    assert!(usage.contains(ESC), "and so do its usage errors: {usage:?}");
    let plain_usage = run(&ws, &[], &["nosuch"]).fails(2).stderr;
    assert!(!plain_usage.contains(ESC), "{plain_usage:?}");

    // NO_COLOR turns auto off; an explicit --color always still wins; never is never.
    let none = run(&ws, &[("NO_COLOR", "1")], &["ready", "--color", "auto"]).ok().stdout;
    assert!(!none.contains(ESC), "{none:?}");
    let flag_wins = run(&ws, &[("NO_COLOR", "1")], &["ready", "--color", "always"]).ok().stdout;
    assert!(flag_wins.contains(ESC), "{flag_wins:?}");
    let never = run(&ws, &[], &["ready", "--color", "never"]).ok().stdout;
    assert!(!never.contains(ESC), "{never:?}");
    // The uncoloured text is the coloured text without its codes.
    assert_eq!(crate::common::pty::strip_escapes(&forced), never);

    let bad = run(&ws, &[], &["ready", "--color", "sometimes"]).fails(2).stderr;
    assert!(
        bad.contains("invalid value 'sometimes'") && bad.contains("auto, always, never"),
        "{bad}"
    );
}

#[test]
fn stored_text_never_brings_its_own_colour() {
    let ws = Workspace::new();
    ws.create("evil \u{1b}[31mred\u{1b}[0m title", &["-p", "0"]);
    let out = run(&ws, &[], &["ready", "--color", "always"]).ok().stdout;
    assert!(out.contains("evil \\e[31mred\\e[0m title"), "escaped even when painting: {out:?}");
}

#[test]
fn doctor_and_run_lines_are_coloured_only_when_asked() {
    let ws = Workspace::new();
    let doctor = run(&ws, &[], &["doctor", "--color", "always"]);
    assert!(doctor.stdout.contains("\u{1b}[32m✓\u{1b}[0m store file: opens"), "{}", doctor.stdout);
    let plain = run(&ws, &[], &["doctor"]);
    assert!(plain.stdout.contains("\n✓ store file: opens") && !plain.stdout.contains(ESC));

    // A task of the exec coder: `fleet run` prints its start and its close.
    let id = ws.create("true", &["--coder", "exec"]);
    let ran = run(&ws, &[], &["run", "--until-idle", "--color", "always"]).ok().stdout;
    assert!(ran.contains(&format!("\u{1b}[36m▶\u{1b}[0m {id} attempt 1 (exec)")), "{ran}");
    assert!(ran.contains(&format!("\u{1b}[32m✓\u{1b}[0m {id} closed")), "{ran}");
}

#[test]
fn on_a_terminal_auto_colours_unless_no_color_or_a_dumb_terminal() {
    let ws = workspace();
    let on_terminal = |env: &[(&str, &str)]| {
        let mut command = ws.command(&["ready"]);
        command.env("TERM", "xterm-256color");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut pty = Pty::spawn(command, 80, 24);
        let status = pty.wait(Duration::from_secs(30)).expect("fleet ready exits");
        assert!(status.success(), "{}", pty.text());
        pty.text()
    };
    let auto = on_terminal(&[]);
    assert!(auto.contains("\u{1b}[31m[● P0]\u{1b}[0m"), "{auto:?}");
    for env in
        [&[("NO_COLOR", "1")][..], &[("TERM", "dumb")], &[("NO_COLOR", "yes"), ("TERM", "xterm")]]
    {
        let plain = on_terminal(env);
        assert!(plain.contains("[● P0]") && !plain.contains(ESC), "{env:?}: {plain:?}");
    }
    let empty_no_color = on_terminal(&[("NO_COLOR", "")]);
    assert!(empty_no_color.contains(ESC), "an empty NO_COLOR is unset: {empty_no_color:?}");
}
