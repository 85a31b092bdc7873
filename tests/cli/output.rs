//! Output that costs agents less (issue 33): `--json` is one compact line into a pipe and
//! indented with `--pretty` (or `FLEET_JSON_PRETTY=1`), in both personalities, with the same
//! value either way; `--terse` (or `FLEET_TERSE=1`) gives `ready`, `list` and `show` one
//! undecorated line per issue, while the usual text, which beads' scripts parse, stays.

use serde_json::Value;

use crate::{NOW, Workspace, WorkspaceExt};

/// The command lines of both personalities that print an issue view: fleet's, and bd's
/// through `fleet bd`.
fn both(args: &[&str]) -> [Vec<String>; 2] {
    let own: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let mut bd = vec!["bd".to_owned()];
    bd.extend(own.iter().cloned());
    [own, bd]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn json_is_compact_into_a_pipe_and_indented_on_request_in_both_personalities() {
    let ws = Workspace::new();
    let id = ws.create_at(NOW, "Compact me", &["-d", "two words", "-l", "a,b"]);
    for view in [vec!["ready"], vec!["list"], vec!["show", id.as_str()]] {
        for mut args in both(&view) {
            args.push("--json".into());
            let compact = ws.run(&strs(&args)).ok().stdout;
            assert_eq!(compact.lines().count(), 1, "{args:?}: one line\n{compact}");
            assert!(!compact.contains("\": "), "{args:?}: no space after a key\n{compact}");
            assert!(!compact.contains("\n  "), "{args:?}: no indentation\n{compact}");
            let value: Value = serde_json::from_str(&compact).expect("compact JSON parses");

            args.push("--pretty".into());
            let pretty = ws.run(&strs(&args)).ok().stdout;
            assert!(pretty.contains("\n  "), "{args:?}: indented\n{pretty}");
            assert_eq!(serde_json::from_str::<Value>(&pretty).unwrap(), value, "{args:?}");
            args.pop();
            let by_env = ws.command(&strs(&args)).env("FLEET_JSON_PRETTY", "1").output().unwrap();
            assert_eq!(String::from_utf8_lossy(&by_env.stdout), pretty, "{args:?}");
        }
    }
    // A JSON error into a pipe is one line too.
    for args in both(&["close", "nosuch", "--json"]) {
        let failed = ws.run(&strs(&args));
        assert_ne!(failed.code, 0, "{args:?}");
        let error = if failed.stderr.trim().is_empty() { failed.stdout } else { failed.stderr };
        assert_eq!(error.trim_end().lines().count(), 1, "{args:?}: {error}");
        let value: Value = serde_json::from_str(&error).expect("a JSON error");
        assert!(value["error"].as_str().is_some_and(|e| e.contains("nosuch")), "{value}");
    }
}

#[test]
fn terse_forms_carry_what_an_agent_acts_on_in_one_line_per_issue() {
    let ws = Workspace::new();
    let blocker = ws.create_at(NOW, "Fix the parser", &["-p", "1", "-t", "bug", "-a", "ann"]);
    let blocked = ws.create_at(NOW, "Ship it", &["-d", "Release notes\nand tag", "-l", "rel,v2"]);
    ws.run(&["dep", "add", &blocked, &blocker]).ok();
    ws.run(&["comment", &blocked, "waiting on the parser"]).ok();

    for ready in both(&["ready", "--terse"]) {
        let out = ws.run(&strs(&ready)).ok().stdout;
        assert_eq!(out, format!("{blocker} P1 bug open Fix the parser @ann\n"), "{ready:?}");
    }
    for list in both(&["list", "--terse"]) {
        let out = ws.run(&strs(&list)).ok().stdout;
        assert_eq!(out.lines().count(), 2, "{list:?}: {out}");
        assert!(out.contains(&format!("{blocked} P2 task open Ship it\n")), "{out}");
    }
    for show in both(&["show", &blocked, "--terse"]) {
        let out = ws.run(&strs(&show)).ok().stdout;
        let expected = format!(
            "{blocked} P2 task open Ship it\nlabels: rel,v2\ndeps: {blocker}:blocks:open\n\
             blocked: yes\ndescription:\nRelease notes\nand tag\n\
             comment tester: waiting on the parser\n"
        );
        assert_eq!(out, expected, "{show:?}");
    }
    // The environment asks for the same; without either, the text beads' scripts read stays.
    let by_env = ws.command(&["bd", "ready"]).env("FLEET_TERSE", "1").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&by_env.stdout),
        format!("{blocker} P1 bug open Fix the parser @ann\n")
    );
    let usual = ws.run(&["bd", "ready"]).ok().stdout;
    assert!(usual.contains("📋 Ready work (1 issues with no active blockers):"), "{usual}");
    let shown = ws.run(&["bd", "show", &blocked]).ok().stdout;
    assert!(shown.contains("Status: open") && shown.contains("Dependencies (1):"), "{shown}");
}
