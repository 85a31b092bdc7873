//! Hot reload: `fleet run` picks up runtime.toml changes as it runs, and keeps its previous
//! config (saying so) when the new file is invalid.

use std::time::Duration;

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

    let supervisor = fleet.start(&[]);
    supervisor.wait_started(&first, 1);

    fleet.write_config("max_concurrent = [\n");
    let warning = supervisor.wait_for("the warning", |l| l.starts_with("⚠ "));
    assert!(
        warning.starts_with("⚠ runtime.toml is invalid, keeping the previous config: ")
            && warning.contains("runtime.toml:1:"),
        "{warning}"
    );

    // Still working: a new task is claimed and closed.
    let quick = fleet.task("Quick fix", &["close quick"]);
    supervisor.wait_for("the quick task", |l| l.starts_with(&format!("✓ {quick} closed: ")));
    // Still with the old values: max_concurrent stays 2 (not the default 3), so of two more
    // long jobs only one starts next to the first.
    let second = fleet.task("Second long job", &["sleep 30"]);
    supervisor.wait_started(&second, 1);
    let third = fleet.task("Third long job", &["sleep 30"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(counter(&fleet.show(&third), "attempts"), 0, "{}", supervisor.lines().join("\n"));
    assert_eq!(in_progress(&fleet), 2);
    assert_eq!(supervisor.count(|l| l.starts_with("⚠ ")), 1, "the error is reported once");

    // Fixing the file applies it.
    fleet.configure(&[("max_concurrent", "3")]);
    supervisor.wait_for("the reload", |l| l == "⚙ runtime.toml reloaded (max_concurrent = 3)");
    supervisor.wait_started(&third, 1);
    let run = supervisor.stop().ok();
    assert_eq!(run.lines.last().unwrap(), "fleet run: 4 attempts — closed 1, shutdown 3");
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
