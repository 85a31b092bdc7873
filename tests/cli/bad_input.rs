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
