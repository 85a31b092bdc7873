//! Hot reload: `fleet run` picks up runtime.toml changes as it runs, and keeps its previous
//! config (saying so) when the new file is invalid.

use std::time::Duration;

use serde_json::Value;

use crate::harness::{Fleet, counter};

fn in_progress(fleet: &Fleet) -> usize {
    fleet.ws.json(&["list", "--status", "in_progress"]).as_array().unwrap().len()
}

#[test]
fn raising_max_concurrent_while_running_starts_more_agents() {
    let fleet = Fleet::new(&[("max_concurrent", "1")]);
    let ids: Vec<String> =
        (1..=3).map(|n| fleet.task(&format!("Long job {n}"), &["sleep 30"])).collect();

    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the first claim", |l| l.starts_with("▶ "));
    assert_eq!(in_progress(&fleet), 1);

    fleet.configure(&[("max_concurrent", "3")]);
    supervisor.wait_for("the reload", |l| l == "⚙ runtime.toml reloaded (max_concurrent = 3)");
    supervisor.wait_until("three agents at once", || (in_progress(&fleet) == 3).then_some(()));
    for id in &ids {
        supervisor.wait_started(id, 1);
    }
    let run = supervisor.stop().ok();
    assert_eq!(run.lines.last().unwrap(), "fleet run: 3 attempts — shutdown 3");
}

#[test]
fn invalid_runtime_toml_is_reported_and_the_previous_config_kept() {
    let fleet = Fleet::new(&[("max_concurrent", "2")]);
    let first = fleet.task("Long job", &["sleep 30"]);

    let supervisor = fleet.start(&["--json"]);
    supervisor.wait_event("claimed", |e| e["id"] == first.as_str());

    fleet.write_config("max_concurrent = [\n");
    let rejected = supervisor.wait_event("config_rejected", |_| true);
    assert!(rejected["error"].as_str().unwrap().contains("runtime.toml:1:"), "{rejected}");

    // Still working: a new task is claimed and closed.
    let quick = fleet.task("Quick fix", &["close quick"]);
    let closed = supervisor.wait_event("finished", |e| e["id"] == quick.as_str());
    assert_eq!(closed["verdict"], "closed");
    // Still with the old values: max_concurrent stays 2 (not the default 3), so of two more
    // long jobs only one starts next to the first.
    let second = fleet.task("Second long job", &["sleep 30"]);
    supervisor.wait_event("claimed", |e| e["id"] == second.as_str());
    // With both slots busy the supervisor looked at the queue after the second's claim; the
    // next such look is the one after the third task appears (nothing else writes meanwhile).
    let full = |e: &Value| e["running"] == 2 && e["slots"] == 2;
    supervisor.wait_event("waiting", full);
    let looks = supervisor.events("waiting", full).len();
    let third = fleet.task("Third long job", &["sleep 30"]);
    supervisor.wait_until("a look at the third task", || {
        (supervisor.events("waiting", full).len() > looks).then_some(())
    });
    assert_eq!(counter(&fleet.show(&third), "attempts"), 0, "{}", supervisor.lines().join("\n"));
    assert_eq!(in_progress(&fleet), 2);
    assert_eq!(supervisor.events("config_rejected", |_| true).len(), 1, "reported once");

    // Fixing the file applies it.
    fleet.configure(&[("max_concurrent", "3")]);
    supervisor.wait_event("config_reloaded", |e| e["max_concurrent"] == 3);
    supervisor.wait_event("claimed", |e| e["id"] == third.as_str());
    supervisor.stop().ok();
}

/// Issue 27: a runtime.toml rewritten in place (empty for a moment, then written) is read
/// once it is whole; the empty moment is never applied as "all defaults".
#[test]
fn a_file_rewritten_in_place_is_never_read_half_written() {
    let fleet = Fleet::new(&[("max_concurrent", "1")]);
    let supervisor = fleet.start(&[]);
    supervisor.wait_for("the start", |l| l.starts_with("fleet run: supervising"));
    let path = fleet.home().join("runtime.toml");
    let whole =
        std::fs::read_to_string(&path).unwrap().replace("max_concurrent = 1", "max_concurrent = 5");
    for _ in 0..3 {
        // Truncated in place, as an editor or `>` does, and written a moment later.
        std::fs::write(&path, "").unwrap();
        std::thread::sleep(Duration::from_millis(150));
        std::fs::write(&path, &whole).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    supervisor.wait_for("the reload", |l| l == "⚙ runtime.toml reloaded (max_concurrent = 5)");
    // One more change, read after any the rewrites above could still cause: once it is
    // reloaded, every earlier reload has been printed.
    fleet.write_config(&whole.replace("max_concurrent = 5", "max_concurrent = 6"));
    supervisor.wait_for("the last reload", |l| l == "⚙ runtime.toml reloaded (max_concurrent = 6)");
    let run = supervisor.stop().ok();
    let reloads = run.starting("⚙ ");
    assert_eq!(
        reloads,
        [
            "⚙ runtime.toml reloaded (max_concurrent = 5)",
            "⚙ runtime.toml reloaded (max_concurrent = 6)"
        ],
        "{}",
        run.stdout()
    );
}
