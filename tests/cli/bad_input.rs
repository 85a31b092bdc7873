//! Bad input never panics or half-applies, and exit codes mean one thing: out-of-range dates,
//! byte order marks, racing `init`s, control characters in titles, read-only stores, and
//! multi-id commands where some ids fail.

use crate::{Run, Workspace, WorkspaceExt};

/// Asserts exit 1 (not a panic's 101) with `message` in an `error:`/`Error:` line.
#[track_caller]
fn assert_fails_with(run: Run, message: &str) -> Run {
    let run = run.fails(1);
    assert!(!run.stderr.contains("panicked"), "a panic:\n{}", run.stderr);
    assert!(run.stderr.contains(message), "expected {message:?} in stderr:\n{}", run.stderr);
    run
}

#[test]
fn out_of_range_date_offsets_are_errors_naming_the_flag_not_panics() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    let cases: &[(&str, &str)] = &[
        ("due", "+99999999d"),
        ("defer", "+99999999d"),
        ("due", "+99999999w"),
        ("defer", "+999999999999h"),
        ("due", "+99999999999999999999999m"),
    ];
    for (flag, value) in cases {
        let flag_arg = format!("--{flag}");
        let expected = format!("--{flag} \"{value}\": the date is out of range");
        for args in [
            vec!["create", "x", flag_arg.as_str(), value],
            vec!["update", id.as_str(), flag_arg.as_str(), value],
        ] {
            let run = assert_fails_with(ws.run(&args), &expected);
            assert!(run.stderr.starts_with("error: "), "{args:?}: {}", run.stderr);
            assert!(
                run.stderr.contains("hint: ") && run.stderr.contains("+6h, +1d"),
                "{}",
                run.stderr
            );
            let mut bd = vec!["bd"];
            bd.extend(&args);
            let run = assert_fails_with(ws.run(&bd), &expected);
            assert!(run.stderr.starts_with("Error: "), "bd {args:?}: {}", run.stderr);
        }
    }
    // Nothing was created or changed along the way.
    assert_eq!(ws.json(&["list"]).as_array().map(Vec::len), Some(1));
    assert!(ws.show(&id).get("due_at").is_none());
    // Other huge durations a user types are clamped, not a panic.
    ws.run(&["bd", "stale", "--days", "9223372036854775807"]).ok();
}

#[test]
fn a_byte_order_mark_on_runtime_toml_is_skipped() {
    let ws = Workspace::new();
    std::fs::write(ws.home().join("runtime.toml"), "\u{feff}# mine\nmax_concurrent = 7\n").unwrap();
    let run = ws.run(&["config", "show"]).ok();
    assert!(run.stdout.contains("max_concurrent = 7"), "{}", run.stdout);
}

// Exit codes, one test per row of README.md's table.

#[test]
fn exit_code_0_when_every_item_succeeds() {
    let ws = Workspace::new();
    let a = ws.create("A", &[]);
    let b = ws.create("B", &[]);
    let run = ws.run(&["close", &a, &b]).ok();
    assert_eq!(run.stderr, "");
    ws.run(&["reopen", &a, &b]).ok();
    ws.run(&["label", "add", &a, &b, "x"]).ok();
    ws.run(&["show", &a, &b]).ok();
}

#[test]
fn exit_code_1_when_any_item_fails_and_each_failure_is_reported() {
    let ws = Workspace::new();
    let good = ws.create("Good", &[]);
    // close: the good id closes, `nosuch` fails, and says so, in text and in JSON.
    let run = ws.run(&["close", &good, "nosuch"]).fails(1);
    assert!(run.stdout.contains(&format!("✓ Closed {good}")), "{}", run.stdout);
    assert!(run.stderr.contains("error: no issue found matching \"nosuch\""), "{}", run.stderr);
    assert_eq!(ws.show(&good)["status"], "closed");
    ws.run(&["reopen", &good]).ok();
    let run = ws.run(&["close", &good, "nosuch", "--json"]).fails(1);
    let closed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(closed[0]["id"], good.as_str(), "{}", run.stdout);
    let error: serde_json::Value = serde_json::from_str(&run.stderr)
        .unwrap_or_else(|e| panic!("stderr is not one JSON error ({e}): {}", run.stderr));
    assert_eq!(
        error["errors"],
        serde_json::json!([{"id": "nosuch", "error": "no issue found matching \"nosuch\""}])
    );
    ws.run(&["reopen", &good]).ok();
    // The other multi-id commands: one transaction, so nothing changes, and exit 1.
    let commands: &[&[&str]] = &[
        &["update", &good, "nosuch", "-p", "0"],
        &["reopen", &good, "nosuch"],
        &["delete", &good, "nosuch", "--force"],
        &["show", &good, "nosuch"],
        &["label", "add", &good, "nosuch", "x"],
        &["label", "remove", &good, "nosuch", "x"],
    ];
    for args in commands {
        let run = ws.run(args).fails(1);
        assert!(
            run.stderr.contains("error: no issue found matching \"nosuch\""),
            "{args:?}: {}",
            run.stderr
        );
        let mut json = args.to_vec();
        json.push("--json");
        let run = ws.run(&json).fails(1);
        let error: serde_json::Value = serde_json::from_str(&run.stderr).unwrap();
        assert!(error["error"].as_str().unwrap().contains("nosuch"), "{args:?}: {error}");
    }
    let issue = ws.show(&good);
    assert_eq!((issue["status"].as_str(), issue["priority"].as_i64()), (Some("open"), Some(2)));
    assert!(issue.get("labels").is_none(), "{issue}");
}

#[test]
fn exit_code_2_for_every_usage_error_however_it_is_checked() {
    let ws = Workspace::new();
    let id = ws.create("Real", &[]);
    let commands: &[&[&str]] = &[
        &["close"],
        &["show"],
        &["create"],
        &["delete"],
        &["update", &id],
        &["search"],
        &["comments", "add", &id],
        &["close", &id, "-r", "a", "-r", "b", "-r", "c"],
    ];
    for args in commands {
        let run = ws.run(args).fails(2);
        assert!(run.stderr.starts_with("error: "), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
    assert_eq!(ws.show(&id)["status"], "open");
}

#[test]
fn control_characters_in_stored_text_are_escaped_in_human_output_only() {
    let ws = Workspace::new();
    let nasty = "Fix\nfake-1 [● P0] [task] open - Injected\u{1b}[31m red\u{7}";
    let escaped = "Fix\\nfake-1 [● P0] [task] open - Injected\\e[31m red\\x07";
    let id = ws.create(nasty, &["--assignee", "eve\r\nmallory", "-l", "a\u{1b}b"]);
    let blocker = ws.create("Blocker", &[]);
    let blocked = ws.create(nasty, &["--deps", &blocker]);
    let views: Vec<Vec<&str>> = vec![
        vec!["list"],
        vec!["ready"],
        vec!["show", &id],
        vec!["blocked"],
        vec!["search", "Fix"],
        vec!["dep", "tree", &blocked],
        vec!["label", "list", &id],
        vec!["bd", "list"],
        vec!["bd", "ready"],
        vec!["bd", "show", &id],
        vec!["bd", "blocked"],
        vec!["bd", "search", "Fix"],
    ];
    for args in &views {
        let run = ws.run(args).ok();
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\r'),
            "{args:?}: {out:?}"
        );
        assert!(!out.lines().any(|l| l.starts_with("fake-1")), "{args:?}: a fake line:\n{out}");
        if !args.contains(&"label") {
            assert!(out.contains(escaped), "{args:?}: expected {escaped:?} in:\n{out}");
        }
    }
    let shown = ws.run(&["show", &id]).ok().stdout;
    assert!(shown.contains("Assignee: eve\\r\\nmallory"), "{shown}");
    let labels = ws.run(&["label", "list", &id]).ok().stdout;
    assert!(labels.contains("a\\eb"), "{labels}");
    // JSON is unchanged: the stored text, escaped the JSON way.
    assert_eq!(ws.show(&id)["title"], nasty);
    assert_eq!(ws.show(&id)["assignee"], "eve\r\nmallory");
}

/// Races `processes` inits of one fresh workspace, each with its own prefix, `rounds` times;
/// asserts exactly one winner per round, a clear error for every loser, and the winner's
/// prefix in the store.
fn race_inits(bd: bool, processes: usize, rounds: usize) {
    for round in 0..rounds {
        let ws = Workspace::empty();
        let children: Vec<_> = (0..processes)
            .map(|n| {
                let prefix = format!("p{round}x{n}");
                let mut args = vec!["init", "--prefix", prefix.as_str()];
                if bd {
                    args.insert(0, "bd");
                }
                let mut cmd = ws.command(&args);
                cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
                (prefix, cmd.spawn().expect("spawn fleet init"))
            })
            .collect();
        let runs: Vec<(String, Run)> = children
            .into_iter()
            .map(|(prefix, child)| (prefix, child.wait_with_output().expect("wait").into()))
            .collect();
        let winners: Vec<&String> =
            runs.iter().filter(|(_, run)| run.code == 0).map(|(prefix, _)| prefix).collect();
        assert_eq!(winners.len(), 1, "round {round}: winners {winners:?}");
        let dir = ws.beads_dir().display().to_string();
        for (prefix, run) in runs.iter().filter(|(_, run)| run.code != 0) {
            assert_eq!(run.code, 1, "{prefix}: {}", run.stderr);
            assert!(
                run.stderr.contains(&format!("workspace at {dir} already exists")),
                "{prefix}: {}",
                run.stderr
            );
        }
        assert_eq!(ws.store().prefix(), winners[0].as_str(), "round {round}");
        let id = ws.create("After the race", &[]);
        assert!(id.starts_with(&format!("{}-", winners[0])), "{id}");
        let leftovers: Vec<_> = std::fs::read_dir(ws.beads_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.contains("init-"))
            .collect();
        assert!(leftovers.is_empty(), "scratch files left: {leftovers:?}");
    }
}

#[test]
fn racing_inits_have_exactly_one_winner() {
    race_inits(false, 8, 6);
}

#[test]
fn racing_bd_inits_have_exactly_one_winner() {
    race_inits(true, 8, 3);
}

/// Runs the binary in `ws` as a user who may read the store but not write it: as root (which
/// permission bits do not stop), as `nobody` through `setpriv`; as anyone else, as is. `None`
/// (with the reason printed) where neither is possible.
fn run_as_reader(ws: &Workspace, args: &[&str]) -> Option<Run> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
        else {
            eprintln!("skipped: running as root and no setpriv to drop to an unprivileged user");
            return None;
        };
        let mut cmd = std::process::Command::new(setpriv);
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(crate::common::fleet_bin());
        cmd
    } else {
        std::process::Command::new(crate::common::fleet_bin())
    };
    cmd.env_clear()
        .env("FLEET_HOME", ws.home())
        .env("FLEET_ACTOR", "reader")
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(ws.home())
        .args(args);
    let run: Run = cmd.output().expect("run fleet").into();
    if root && run.code != 0 && run.stderr.contains("setpriv") {
        eprintln!("skipped: setpriv cannot drop privileges here: {}", run.stderr);
        return None;
    }
    Some(run)
}

/// Sets the permission bits of everything under `dir` (and `dir`) with `chmod`.
fn chmod_tree(dir: &std::path::Path, mode: &str) {
    let status = std::process::Command::new("chmod").args(["-R", mode]).arg(dir).status().unwrap();
    assert!(status.success(), "chmod -R {mode} {}", dir.display());
}

#[test]
fn reads_work_on_a_store_that_may_only_be_read_and_write_errors_name_the_file() {
    let ws = Workspace::new();
    let id = ws.create("Readable", &[]);
    // The last command wrote: the file is as a CLI write leaves it (not closed).
    ws.run(&["update", &id, "-p", "1"]).ok();
    let before = std::fs::read(ws.beads_dir().join("beads.db")).unwrap();
    chmod_tree(ws.home(), "a-w");
    chmod_tree(ws.home(), "a+rX");
    let reads: &[&[&str]] = &[
        &["list"],
        &["ready"],
        &["show", &id],
        &["export"],
        &["blocked"],
        &["stats"],
        &["bd", "list"],
        &["bd", "show", &id],
    ];
    let mut checked = true;
    for args in reads {
        let Some(run) = run_as_reader(&ws, args) else {
            checked = false;
            break;
        };
        let run = run.ok();
        if !matches!(args[0], "blocked" | "stats") {
            assert!(run.stdout.contains(&id), "{args:?}: {}", run.stdout);
        }
    }
    if checked {
        let run = run_as_reader(&ws, &["create", "Nope"]).unwrap().fails(1);
        let store = ws.beads_dir().join("beads.db").display().to_string();
        assert!(run.stderr.contains(&store), "the error names the file: {}", run.stderr);
        assert!(run.stderr.contains("Permission denied"), "{}", run.stderr);
        assert!(run.stderr.contains("hint: "), "{}", run.stderr);
    }
    chmod_tree(ws.home(), "u+w");
    assert_eq!(std::fs::read(ws.beads_dir().join("beads.db")).unwrap(), before, "reads wrote");
}
