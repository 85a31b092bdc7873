//! The write path through a serving fleet process (`fleet serve`, and `fleet run` serving its
//! own workspace), tried as users meet it:
//!
//! - commands' writes go through the socket and print exactly what direct mode prints;
//! - a stale socket, a server that does not answer (stopped with SIGSTOP), and a server that
//!   speaks another protocol all leave the command to write directly, within the deadline —
//!   and a request the hung server later reads is not applied a second time;
//! - 64 claiming processes race while the server is killed with SIGKILL and restarted: every
//!   issue is claimed exactly once and every claim a command reported is in the store;
//! - a second server on the same workspace is refused; the socket is owner-only;
//! - a server out of file descriptors takes the connections waiting once some are freed.
//!
//! The whole CLI suite also runs with a server (`FLEET_TEST_SERVER=1`, see tests/common).

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Run, Workspace};
use serde_json::Value;

/// A served workspace (whatever `FLEET_TEST_SERVER` says).
fn served() -> Workspace {
    let mut ws = Workspace::empty();
    ws.run(&["init", "--prefix", "t"]).ok();
    ws.serve();
    ws
}

/// A workspace with no server.
fn unserved() -> Workspace {
    let ws = Workspace::empty();
    ws.run(&["init", "--prefix", "t"]).ok();
    ws
}

/// How many requests the server's log says it committed.
fn served_requests(ws: &Workspace) -> usize {
    ws.serve_log()
        .lines()
        .filter(|line| line.contains("group committed"))
        .filter_map(|line| {
            line.split("requests=").nth(1)?.split_whitespace().next()?.parse::<usize>().ok()
        })
        .sum()
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: signalling a child process this test started.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal {signal} to {pid}");
}

/// The same session of writes, run with a pinned clock; its output with issue ids replaced by
/// their order of appearance, so two workspaces compare.
fn session(ws: &Workspace) -> Vec<String> {
    let run = |args: &[&str]| -> Run {
        ws.command(args).env("FLEET_TEST_NOW", "2026-01-02T03:04:05Z").output().unwrap().into()
    };
    let a = run(&["create", "first", "-p", "1", "--silent"]).ok().stdout.trim().to_string();
    let b = run(&["create", "second", "--deps", &a, "--silent"]).ok().stdout.trim().to_string();
    let steps: Vec<Vec<&str>> = vec![
        vec!["create", "third", "--labels", "x,y"],
        vec!["create", "fourth", "--json"],
        vec!["update", &a, "--priority", "0", "--json"],
        vec!["close", &b],
        vec!["claim"],
        vec!["claim", "--json"],
        vec!["claim", &b],
        vec!["comment", &a, "a note"],
        vec!["release", &a],
        vec!["close", &a, "--reason", "done", "--json"],
        vec!["close", &b, "--reason", "done"],
        vec!["reopen", &a, "--reason", "again"],
        vec!["close", "nope"],
        vec!["bd", "update", &b, "--claim"],
        vec!["bd", "close", &b, "--reason", "finished"],
        vec!["bd", "create", "fifth", "--json"],
    ];
    let mut lines = Vec::new();
    for step in steps {
        let out = run(&step);
        lines.push(format!(
            "$ {}\n{}\n{}exit {}",
            step.join(" "),
            out.stdout,
            out.stderr,
            out.code
        ));
    }
    let mut text = lines.join("\n").replace(ws.home().to_str().unwrap(), "<home>");
    let ids: Vec<String> = ws
        .json(&["list", "--all", "--limit", "0"])
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    for id in ids.iter().chain([&a, &b]) {
        let n = text.find(id.as_str()).unwrap_or(usize::MAX);
        text = text.replace(id.as_str(), &format!("<id@{n}>"));
    }
    // Timestamps of comments and claims come from the pinned clock; ULIDs of comments differ.
    text.lines().map(str::to_string).collect()
}

#[test]
fn writes_through_the_server_print_what_direct_mode_prints() {
    let direct = unserved();
    let served = served();
    let expected = session(&direct);
    let got = session(&served);
    assert_eq!(got, expected);
    assert!(
        served_requests(&served) >= 15,
        "the server committed too few requests:\n{}",
        served.serve_log()
    );
}

/// A prefix rename the server applies, and then settings, reach the server's own later
/// writes: new issues take the new prefix, and a setting it stored is in force for the next
/// request (a long-lived store reads them at every write, not once when it opened).
#[test]
fn a_renamed_prefix_and_a_setting_reach_the_servers_next_writes() {
    let ws = served();
    let required = |args: &[&str]| ws.command(args).env("FLEET_REQUIRE_SERVER", "1").output();
    ws.create("before", &[]);
    let renamed = required(&["bd", "rename-prefix", "next"]).unwrap();
    assert!(renamed.status.success(), "{}", String::from_utf8_lossy(&renamed.stderr));
    let after = required(&["create", "after", "--silent"]).unwrap();
    let id = String::from_utf8_lossy(&after.stdout).trim().to_string();
    assert!(id.starts_with("next-"), "a served create after the rename made {id:?}");

    let set = required(&["bd", "config", "set", "validation.on-create", "error"]).unwrap();
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let refused = required(&["create", "no sections"]).unwrap();
    assert_eq!(refused.status.code(), Some(1), "the served setting holds");
    assert!(served_requests(&ws) >= 4, "{}", ws.serve_log());
}

#[test]
fn a_stale_socket_is_ignored() {
    let ws = unserved();
    let socket = ws.beads_dir().join("fleet.sock");
    drop(UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let started = Instant::now();
    let id = ws.create("written directly", &[]);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(ws.json(&["show", &id])[0]["title"], "written directly");
}

/// A server stopped with SIGSTOP holds the request it was sent; the command falls back after
/// the deadline and claims directly; when the server wakes up and reads the request, it finds
/// it already applied and does not claim a second issue.
#[test]
fn a_hung_server_is_left_behind_and_applies_nothing_twice() {
    let ws = served();
    ws.create("one", &[]);
    ws.create("two", &[]);
    let pid = ws.server_pid().unwrap();
    signal(pid, libc::SIGSTOP);
    let started = Instant::now();
    let claimed = ws
        .command(&["claim", "--json"])
        .env_remove("FLEET_REQUIRE_SERVER")
        .env("FLEET_SERVER_DEADLINE_MS", "300")
        .output()
        .unwrap();
    let waited = started.elapsed();
    signal(pid, libc::SIGCONT);
    let claimed: Run = claimed.into();
    let claimed = claimed.ok().json();
    assert!(waited >= Duration::from_millis(300), "fell back before the deadline: {waited:?}");
    assert!(waited < Duration::from_secs(10), "took {waited:?}");
    // Give the woken server time to read and answer the abandoned request.
    common::poll_within(Duration::from_secs(10), || (served_requests(&ws) >= 3).then_some(()));
    assert_eq!(served_requests(&ws), 3, "{}", ws.serve_log());
    let in_progress = ws.json(&["list", "--status", "in_progress"]);
    assert_eq!(in_progress.as_array().unwrap().len(), 1, "{in_progress}");
    assert_eq!(in_progress[0]["id"], claimed["id"]);
}

/// Issue 28: a `fleet.sock` that is a symbolic link to another workspace's socket does not
/// send this workspace's writes there. The command writes its own store directly (or, with
/// `FLEET_REQUIRE_SERVER`, fails naming the link), and the other workspace gets nothing.
#[test]
fn a_symlinked_socket_to_another_workspace_is_refused() {
    let other = served();
    let ws = unserved();
    let socket = ws.beads_dir().join("fleet.sock");
    std::os::unix::fs::symlink(other.beads_dir().join("fleet.sock"), &socket).unwrap();
    let id = ws.create("mine", &[]);
    assert_eq!(ws.json(&["show", &id])[0]["title"], "mine");
    assert!(other.json(&["list", "--all"]).as_array().unwrap().is_empty(), "written elsewhere");
    let required = ws.command(&["create", "required"]).env("FLEET_REQUIRE_SERVER", "1").output();
    let required: Run = required.unwrap().into();
    let required = required.fails(1);
    assert!(required.stderr.contains("is a symbolic link"), "{}", required.stderr);
    assert!(other.json(&["list", "--all"]).as_array().unwrap().is_empty(), "written elsewhere");
    assert_eq!(served_requests(&other), 0, "{}", other.serve_log());
}

/// Issue 28: under `FLEET_REQUIRE_SERVER`, a command whose server did not answer in time says
/// exactly what became of its request. It failed, so the request is never applied: the server,
/// woken up, finds it given up and refuses it (before, it applied it after the command had
/// reported a failure, and a retry made it twice). A `Direct` answer is a failure too.
#[test]
fn a_required_server_that_did_not_answer_applies_nothing_later() {
    let ws = served();
    let pid = ws.server_pid().unwrap();
    signal(pid, libc::SIGSTOP);
    let given_up: Run = ws
        .command(&["create", "given up"])
        .env("FLEET_REQUIRE_SERVER", "1")
        .env("FLEET_SERVER_DEADLINE_MS", "300")
        .output()
        .unwrap()
        .into();
    signal(pid, libc::SIGCONT);
    let given_up = given_up.fails(1);
    // The woken server reads the request it held, then this one on a new connection.
    ws.run(&["create", "after", "--silent"]).ok();
    let titles: Vec<String> = ws
        .json(&["list", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(titles, ["after"], "{}", ws.serve_log());
    assert!(given_up.stderr.contains("will not apply it"), "{}", given_up.stderr);
}

/// A listener that answers every frame with an answer of another protocol version.
#[test]
fn a_server_of_another_protocol_is_left_behind() {
    let ws = unserved();
    let listener = UnixListener::bind(ws.beads_dir().join("fleet.sock")).unwrap();
    let answered = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&answered);
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut len = [0u8; 4];
            stream.read_exact(&mut len).unwrap();
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            stream.read_exact(&mut body).unwrap();
            let reply = br#"{"version":99,"something":"else"}"#;
            stream.write_all(&(reply.len() as u32).to_be_bytes()).unwrap();
            stream.write_all(reply).unwrap();
            flag.store(true, Ordering::SeqCst);
        }
    });
    let id = ws.create("written directly", &[]);
    assert!(answered.load(Ordering::SeqCst), "the command never asked the listener");
    assert_eq!(ws.json(&["list"]).as_array().unwrap().len(), 1);
    assert_eq!(ws.json(&["show", &id])[0]["title"], "written directly");
}

/// The store file replaced under a running server (a salvage, a restore): the server must not
/// go on writing into the old file. The next request is left to the command, which writes the
/// new file; the server removes its socket and exits 1.
#[test]
fn a_server_whose_store_file_was_replaced_stops() {
    let mut ws = served();
    let db = ws.beads_dir().join("beads.db");
    let copy = db.with_extension("new");
    std::fs::copy(&db, &copy).unwrap();
    std::fs::rename(&copy, &db).unwrap();
    // The server leaves the request to the command, which is not served then.
    let mut created = ws.command(&["create", "after the swap", "--silent"]);
    let created: Run = created.env_remove("FLEET_REQUIRE_SERVER").output().unwrap().into();
    let id = created.ok().stdout.trim().to_string();
    assert_eq!(ws.json(&["show", &id])[0]["title"], "after the swap");
    assert_eq!(ws.wait_server(Duration::from_secs(10)), Some(1), "{}", ws.serve_log());
    assert!(!ws.beads_dir().join("fleet.sock").exists());
    assert!(ws.serve_log().contains("replaced"), "{}", ws.serve_log());
}

/// Waits up to `within` for `path` to exist.
fn appears(path: &std::path::Path, within: Duration) -> bool {
    common::poll_within(within, || path.exists().then_some(())).is_some()
}

/// The socket removed under a running server (a user tidying `.beads/`, `git clean -X`): the
/// server makes it again within a few seconds, owner-only, and serves on it, instead of
/// running on while every command writes directly.
#[test]
fn a_removed_socket_is_made_again() {
    let ws = served();
    let socket = ws.beads_dir().join("fleet.sock");
    std::fs::remove_file(&socket).unwrap();
    assert!(appears(&socket, Duration::from_secs(10)), "{}", ws.serve_log());
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let before = served_requests(&ws);
    // Commands of a served workspace require the server (FLEET_REQUIRE_SERVER).
    let id = ws.create("served again", &[]);
    assert_eq!(ws.json(&["show", &id])[0]["title"], "served again");
    assert_eq!(served_requests(&ws), before + 1, "{}", ws.serve_log());
}

/// The serving lock and the socket removed under a running server, and a second server
/// started meanwhile: the first finds the lock taken and stops with exit 1, saying so, and
/// leaves the socket to the second, which serves the commands. Before, the first went on
/// holding a lock file nobody could see, and removed the second's socket when it stopped.
#[test]
fn a_server_whose_lock_was_taken_over_stops_and_leaves_the_socket_to_the_new_one() {
    let mut ws = served();
    let socket = ws.beads_dir().join("fleet.sock");
    std::fs::remove_file(ws.beads_dir().join("fleet.sock.lock")).unwrap();
    std::fs::remove_file(&socket).unwrap();
    let mut second = ws.spawn_serve("second.log", |_| {});
    assert!(appears(&socket, Duration::from_secs(10)));
    assert_eq!(ws.wait_server(Duration::from_secs(10)), Some(1), "{}", ws.serve_log());
    assert!(ws.serve_log().contains("another fleet process serves"), "{}", ws.serve_log());
    assert!(socket.exists(), "the first server removed the second's socket");
    let created = ws
        .command(&["create", "served by the second", "--silent"])
        .env("FLEET_REQUIRE_SERVER", "1")
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    signal(second.id() as i32, libc::SIGTERM);
    assert!(second.wait().unwrap().success());
    let second_log = std::fs::read_to_string(ws.home().join("second.log")).unwrap();
    assert!(second_log.contains("group committed"), "{second_log}");
    assert!(!socket.exists());
}

#[test]
fn one_server_per_workspace_and_an_owner_only_socket() {
    let ws = served();
    let second = ws.run(&["serve"]).fails(1);
    assert!(second.stderr.contains("already served"), "{}", second.stderr);
    let mode = std::fs::metadata(ws.beads_dir().join("fleet.sock")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// A server out of file descriptors takes the connections waiting for it as soon as some are
/// freed — on its own, since the waiting connections bring no new event — so a client queued
/// behind them is answered instead of being left to its deadline.
#[test]
fn a_server_out_of_descriptors_accepts_again_once_some_are_freed() {
    use std::os::unix::net::UnixStream;
    use std::os::unix::process::CommandExt;
    let mut ws = unserved();
    ws.serve_with(|command| {
        // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit { rlim_cur: 48, rlim_max: 48 };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    let socket = ws.beads_dir().join("fleet.sock");
    let held: Vec<UnixStream> = (0..64).map(|_| UnixStream::connect(&socket).unwrap()).collect();
    // Queued behind them (the connect returns once the connection is in the listener's queue):
    // a frame of another protocol, which a server answers without touching the store.
    let mut queued = UnixStream::connect(&socket).unwrap();
    let body = br#"{"version":99,"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}"#;
    queued.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    queued.write_all(body).unwrap();
    // The server has run out of descriptors (it says so once per streak).
    common::wait_for_line(
        &ws.home().join("serve.log"),
        "the server to run out of descriptors",
        |l| l.contains("accepting a connection; trying again shortly"),
    );
    drop(held);
    queued.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut length = [0u8; 4];
    queued.read_exact(&mut length).expect("an answer once descriptors are freed");
    let mut answer = vec![0u8; u32::from_be_bytes(length) as usize];
    queued.read_exact(&mut answer).unwrap();
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert!(answer["outcome"]["Direct"].as_str().unwrap().contains("protocol version"), "{answer}");
    assert!(ws.serve_log().contains("trying again shortly"), "{}", ws.serve_log());
}

/// 64 processes claim the next ready issue in loops while the server is killed (SIGKILL) and
/// restarted twice. Every issue ends claimed exactly once, and every claim a command reported
/// is in the store with that claimer as assignee.
#[test]
fn claims_race_through_a_server_killed_and_restarted() {
    const ISSUES: usize = 240;
    const CLAIMERS: usize = 64;
    let ws = served();
    let titles: Vec<String> = (0..ISSUES).map(|n| format!("task {n}")).collect();
    let lines: String = titles
        .iter()
        .enumerate()
        .map(|(n, t)| format!("{{\"id\":\"t-{n}\",\"title\":\"{t}\",\"status\":\"open\",\"priority\":2,\"issue_type\":\"task\",\"created_at\":\"2026-01-01T00:00:00Z\",\"updated_at\":\"2026-01-01T00:00:00Z\"}}\n"))
        .collect();
    let file = ws.home().join("issues.jsonl");
    std::fs::write(&file, lines).unwrap();
    ws.run(&["import", file.to_str().unwrap()]).ok();

    let reported: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let ws = Arc::new(Mutex::new(ws));
    let mut claimers = Vec::new();
    for n in 0..CLAIMERS {
        let reported = Arc::clone(&reported);
        let command = ws.lock().unwrap().command(&["claim", "--json"]);
        claimers.push(std::thread::spawn(move || {
            let actor = format!("claimer-{n}");
            let mut command = command;
            command
                .env_remove("FLEET_REQUIRE_SERVER")
                .env("FLEET_ACTOR", &actor)
                .env("FLEET_SERVER_DEADLINE_MS", "1000");
            loop {
                let out: Run = command.output().unwrap().into();
                assert_eq!(out.code, 0, "claim failed:\n{}\n{}", out.stdout, out.stderr);
                let value: Value = out.json();
                let Some(id) = value["id"].as_str() else { return };
                reported.lock().unwrap().push((id.to_string(), actor.clone()));
            }
        }));
    }
    let killer = {
        let ws = Arc::clone(&ws);
        let done = Arc::clone(&done);
        let reported = Arc::clone(&reported);
        std::thread::spawn(move || {
            for round in 1..=2 {
                // Until the claimers are done: no deadline of its own.
                let reached = common::poll_within(Duration::MAX, || {
                    if done.load(Ordering::SeqCst) {
                        Some(false)
                    } else {
                        (reported.lock().unwrap().len() >= round * ISSUES / 4).then_some(true)
                    }
                });
                if reached != Some(true) {
                    return;
                }
                ws.lock().unwrap().kill_server();
                std::thread::sleep(Duration::from_millis(200));
                ws.lock().unwrap().serve();
            }
        })
    };
    for claimer in claimers {
        claimer.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    killer.join().unwrap();

    let reported = reported.lock().unwrap().clone();
    let mut by_issue: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, actor) in &reported {
        by_issue.entry(id.clone()).or_default().push(actor.clone());
    }
    let doubles: Vec<_> = by_issue.iter().filter(|(_, who)| who.len() > 1).collect();
    assert!(doubles.is_empty(), "claimed twice: {doubles:?}");
    assert_eq!(by_issue.len(), ISSUES, "every issue is claimed");
    let ws = ws.lock().unwrap();
    let stored = ws.json(&["list", "--status", "in_progress", "--limit", "0"]);
    let assignees: BTreeMap<String, String> = stored
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (i["id"].as_str().unwrap().to_string(), i["assignee"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(assignees.len(), ISSUES);
    for (id, who) in &by_issue {
        assert_eq!(assignees.get(id), Some(&who[0]), "{id} is not with its reported claimer");
    }
    assert!(served_requests(&ws) > 0, "no claim went through a server");
}

/// The titles of every issue of `ws`, sorted.
fn titles(ws: &Workspace) -> Vec<String> {
    let all = ws.json(&["list", "--all", "--limit", "0"]);
    let mut titles: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|issue| issue["title"].as_str().unwrap().to_string())
        .collect();
    titles.sort();
    titles
}

/// Issue 28: one full disk no longer wedges the server. A write while the disk is full fails
/// saying so, with the fix; once space is freed, the next write is committed by the same
/// server, without a restart (on main it answered "Previous I/O error" until restarted).
#[test]
fn a_full_disk_is_reported_and_the_server_commits_again_once_space_is_back() {
    let Some(disk) = common::full_disk::SmallDisk::mount(8) else { return };
    let mut ws = Workspace::init_in(disk.path());
    ws.serve();
    let pid = ws.server_pid().unwrap();
    ws.create("before", &[]);

    disk.fill();
    // As a user runs it: the command may write directly when the server cannot.
    let full: Run = ws
        .command(&["create", "while full"])
        .env_remove("FLEET_REQUIRE_SERVER")
        .output()
        .unwrap()
        .into();
    assert!(full.code != 0 && full.code != 101, "exit {}: {}", full.code, full.stderr);
    assert!(full.stderr.contains("No space left on device"), "{}", full.stderr);
    assert!(full.stderr.contains("free space on the disk"), "{}", full.stderr);

    disk.free();
    ws.create("after", &[]);
    assert_eq!(titles(&ws), ["after", "before"]);
    assert!(common::daemon::alive(pid as u32), "the same server answered");
    assert!(served_requests(&ws) >= 2, "{}", ws.serve_log());
}

/// Whether process `pid` is stopped by a signal (state `T` in `/proc/PID/stat`).
fn is_stopped(pid: i32) -> bool {
    common::daemon::stat_fields(pid as u32).is_some_and(|fields| fields[0] == "T")
}

/// Whether process `pid` holds the store's write lock: redb's writer byte (`1 << 62`) locked
/// for writing on one of its descriptors, as `/proc/PID/fdinfo` lists it.
fn holds_write_lock(pid: i32) -> bool {
    let Ok(descriptors) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return false };
    descriptors.flatten().any(|fd| {
        std::fs::read_to_string(fd.path()).is_ok_and(|info| {
            info.lines().any(|l| {
                l.starts_with("lock:")
                    && l.contains("WRITE")
                    && l.ends_with(" 4611686018427387904 4611686018427387904")
            })
        })
    })
}

/// Issue 28: a server stopped (SIGSTOP, a Ctrl-Z) inside a group commit holds the store's
/// write lock. A writer no longer waits for it silently as long as it is stopped: within a
/// few seconds it names the stopped process and how to resume it. Nothing acknowledged is
/// lost, and once the server is resumed writes go through it again.
#[test]
fn a_server_stopped_inside_a_commit_is_named_and_bounds_the_wait() {
    let ws = served();
    let pid = ws.server_pid().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..2)
        .map(|n| {
            let (stop, acknowledged) = (Arc::clone(&stop), Arc::clone(&acknowledged));
            let mut command = ws.command(&["create", "load", "--silent"]);
            command.env_remove("FLEET_REQUIRE_SERVER").env("FLEET_ACTOR", format!("w{n}"));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let run: Run = command.output().unwrap().into();
                    if run.code == 0 {
                        acknowledged.lock().unwrap().push(run.stdout.trim().to_string());
                    }
                }
            })
        })
        .collect();

    common::poll_until("the server to be stopped inside a commit", common::WAIT, || {
        signal(pid, libc::SIGSTOP);
        // SIGSTOP is delivered asynchronously: the lock is looked at only once the process
        // has stopped, or it could let go of it between the look and the stop.
        common::poll_until("the server to stop", common::WAIT, || is_stopped(pid).then_some(()));
        if holds_write_lock(pid) {
            return Some(());
        }
        signal(pid, libc::SIGCONT);
        None
    });
    let started = Instant::now();
    let mut probe = ws
        .command(&["create", "probe"])
        .env_remove("FLEET_REQUIRE_SERVER")
        .env("FLEET_SERVER_DEADLINE_MS", "500")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A probe that waits for as long as the server is stopped fails the test, not hangs it.
    let finished = common::poll_within(common::WAIT, || probe.try_wait().unwrap());
    let waited = started.elapsed();
    signal(pid, libc::SIGCONT);
    assert!(finished.is_some(), "the probe waited for the stopped server for {waited:?}");
    let probe: Run = probe.wait_with_output().unwrap().into();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }

    assert_eq!(probe.code, 1, "{}", probe.stderr);
    assert!(waited < Duration::from_secs(15), "the probe waited {waited:?}");
    let named = format!("the fleet server, pid {pid}, is stopped");
    assert!(probe.stderr.contains(&named), "{}", probe.stderr);
    assert!(probe.stderr.contains(&format!("kill -CONT {pid}")), "{}", probe.stderr);
    assert!(
        probe.stderr.contains("may still apply") || probe.stderr.contains("applies it"),
        "{}",
        probe.stderr
    );

    ws.create("after the stop", &[]);
    let all = ws.json(&["list", "--all", "--limit", "0"]);
    let stored: std::collections::BTreeSet<String> = common::ids_of(&all).into_iter().collect();
    let acknowledged = acknowledged.lock().unwrap();
    assert!(!acknowledged.is_empty());
    let lost: Vec<&String> = acknowledged.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(lost.is_empty(), "acknowledged but not stored: {lost:?}");
}
