//! Hundreds of agents on a stock machine (issue 27): `fleet run` raises its soft limit of open
//! files to the hard one and holds few descriptors per agent, so 256 agents run at once under
//! a shell's `ulimit -Sn 1024`; and when a limit is reached anyway, the task is released
//! uncharged and spawning is held back with a message naming the limit — the task is never
//! blocked as if its coder settings were wrong.

use std::os::unix::process::CommandExt;
use std::path::Path;

use crate::harness::{Fleet, Supervisor, counter};

/// `fleet run --until-idle` with its open-file limit set to `soft` and `hard` (`None`: the
/// current hard limit); hundreds of agents on a loaded 2-core machine get five minutes.
fn run_with_file_limit(fleet: &Fleet, soft: u64, hard: Option<u64>) -> crate::harness::Finished {
    let mut command = fleet.ws.command(&["run", "--until-idle"]);
    // SAFETY: getrlimit/setrlimit between fork and exec touch only a struct on the stack.
    unsafe {
        command.pre_exec(move || {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit);
            limit.rlim_max = hard.unwrap_or(limit.rlim_max);
            limit.rlim_cur = soft;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Supervisor::spawn(command).wait_within(std::time::Duration::from_secs(300))
}

/// Imports `n` tasks for the `exec` coder, each running `script` (with `{n}` replaced).
fn exec_tasks(fleet: &Fleet, n: usize, script: &str) -> Vec<String> {
    let probe = fleet.ws.create("Probe", &["--coder", "exec", "-d", "true"]);
    let prefix = probe.split_once('-').expect("an id with a prefix").0.to_owned();
    let mut lines = String::new();
    let ids: Vec<String> = (1..=n).map(|k| format!("{prefix}-many{k}")).collect();
    for id in &ids {
        let record = serde_json::json!({
            "id": id, "title": format!("Job {id}"), "status": "open", "priority": 2,
            "issue_type": "task", "description": script.replace("{n}", &n.to_string()),
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
            "metadata": {"fleet": {"coder": "exec"}}
        });
        lines.push_str(&format!("{record}\n"));
    }
    let file = fleet.home().join("many.jsonl");
    std::fs::write(&file, lines).expect("write the tasks");
    fleet.ws.run(&["import", file.to_str().expect("a UTF-8 path")]).ok();
    fleet.ws.run(&["close", &probe]).ok();
    ids
}

/// Files in `dir`.
fn count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| entries.count())
}

#[test]
fn two_hundred_fifty_six_agents_run_at_once_under_a_soft_limit_of_1024_files() {
    let fleet = Fleet::new(&[("max_concurrent", "256")]);
    let (started, met) = (fleet.home().join("started"), fleet.home().join("met"));
    std::fs::create_dir_all(&started).unwrap();
    std::fs::create_dir_all(&met).unwrap();
    // A barrier: each agent waits (up to two minutes) until all of them run at once.
    let script = format!(
        "touch {s}/$FLEET_TASK_ID; i=0; \
         while set -- {s}/*; [ $# -lt {{n}} ] && [ $i -lt 120 ]; do sleep 1; i=$((i+1)); done; \
         [ $# -ge {{n}} ] && touch {m}/$FLEET_TASK_ID",
        s = started.display(),
        m = met.display()
    );
    let ids = exec_tasks(&fleet, 256, &script);
    let run = run_with_file_limit(&fleet, 1024, None).ok();
    assert_eq!(count(&met), 256, "every agent saw all 256 running\n{}", run.stdout());
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "closed", "{id}: {issue}");
        assert_eq!(counter(&issue, "attempts"), 1, "{id}: {issue}");
    }
    assert!(!run.stdout().contains("spawning held"), "{}", run.stdout());
}

#[test]
fn running_out_of_descriptors_releases_uncharged_and_holds_spawning_back() {
    let fleet = Fleet::new(&[("max_concurrent", "40")]);
    let ids = exec_tasks(&fleet, 40, "sleep 2");
    // A hard limit the supervisor cannot raise, too low for 40 agents at once.
    let run = run_with_file_limit(&fleet, 64, Some(64)).ok();
    let held: Vec<&str> = run.starting("⏸ spawning held at ");
    assert_eq!(held.len(), 1, "{}", run.stdout());
    assert!(held[0].contains("open files (RLIMIT_NOFILE): soft 64, hard 64"), "{}", held[0]);
    let fix = run.lines.iter().skip_while(|l| !l.starts_with("⏸ spawning held")).nth(1);
    assert!(fix.is_some_and(|l| l.contains("ulimit -n")), "{}", run.stdout());
    let requeued = run.starting("• ").into_iter().filter(|l| l.contains(" resource-requeued: "));
    let requeued: Vec<&str> = requeued.collect();
    assert!(!requeued.is_empty(), "{}", run.stdout());
    assert!(requeued.iter().all(|l| l.contains("released, not charged")), "{requeued:?}");
    assert!(!run.stdout().contains("Fix the coder settings"), "{}", run.stdout());
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "closed", "{id}: {issue}\n{}", run.stdout());
        assert_eq!(counter(&issue, "failures"), 0, "{id}: {issue}");
    }
}
