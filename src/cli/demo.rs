//! `fleet demo`: the main job on an embedded example, with no API key.
//!
//! It makes a throwaway fleet home, fills its queue with a small build pipeline whose tasks
//! depend on each other, and runs the real supervisor over it with the `exec` coder (each
//! task's description is a shell command) and three agents at once. One task fails once and is
//! retried with backoff; one closes itself through `bd close`, as an agent would. A live view
//! prints each step; a table sums up at the end, followed by the commands for a real run
//! ([`NEXT_STEPS`]). With `--json`, stdout is the run's events only (JSON Lines, as
//! `fleet run --json`). Like `fleet run --until-idle`, it exits 4 if a task did not close.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use super::context::Context;
use super::error::CliError;
use super::output::write_stderr;
use super::output::write_stdout;
use super::run::{check_all_closed, event_line, summary_line, supervise};
use crate::model::dep_type;
use crate::store::{ListFilter, Store, StoreError};
use crate::supervisor::outcome::Verdict;
use crate::supervisor::{Event, Options};
use crate::time::Clock;
use crate::tracker::{CreateRequest, DepSpec, Request};

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Keep the demo's fleet home afterwards (its path is printed) instead of deleting it.
    #[arg(long)]
    pub keep: bool,
}

/// The demo pipeline: (key, title, shell command, keys it depends on).
const PIPELINE: &[(&str, &str, &str, &[&str])] = &[
    ("fetch", "Fetch sources", "sleep 0.5 && echo 'fetched 12 sources'", &[]),
    ("docs", "Generate docs", "sleep 0.7 && echo 'docs: 48 pages'", &["fetch"]),
    ("core", "Compile core", "sleep 0.9 && echo 'core: 0 warnings'", &["fetch"]),
    ("plugins", "Compile plugins", "sleep 0.6 && echo 'plugins: 5 built'", &["fetch"]),
    (
        "flaky",
        "Integration tests (fail once, then pass)",
        "if [ -e \"$FLEET_HOME/.flaky-ran\" ]; then echo 'integration: 31 passed'; \
         else touch \"$FLEET_HOME/.flaky-ran\"; echo 'connection reset by peer' >&2; exit 1; fi",
        &["core"],
    ),
    ("unit", "Unit tests", "sleep 0.8 && echo 'unit: 212 passed'", &["core", "plugins"]),
    (
        "package",
        "Package release",
        "sleep 0.4 && echo 'fleet-demo-1.0.tar.gz'",
        &["unit", "flaky", "docs"],
    ),
    (
        "report",
        "Write the release report (closes itself with bd)",
        "echo '# Release report' > \"$FLEET_ARTIFACT_DIR/REPORT.md\" && \
         bd close \"$FLEET_TASK_ID\" --reason 'report written'",
        &["package"],
    ),
];

pub fn cmd_demo(ctx: &Context, args: DemoArgs) -> Result<(), CliError> {
    let home = std::env::temp_dir().join(format!("fleet-demo-{}", ulid::Ulid::generate()));
    let result = run_demo(ctx, &home);
    if args.keep {
        write_stderr(&format!("demo home kept at {}", home.display()));
    } else {
        let _ = std::fs::remove_dir_all(&home);
    }
    result
}

fn run_demo(ctx: &Context, home: &std::path::Path) -> Result<(), CliError> {
    let store = Store::init(&home.join(crate::workspace::DIR_NAME), "demo")?;
    let config = home.join(crate::config::FILE_NAME);
    let settings =
        ["max_concurrent=3", "coder=exec", "retry_backoff_secs=1", "stall_timeout_secs=60"]
            .map(String::from);
    crate::config::set_values(&config, &settings)
        .map_err(|e| CliError::new(format!("writing the demo config: {}", e.message)))?;
    let ids = fill_queue(&store, home)?;
    let json = ctx.out.json;
    if !json {
        write_stdout(&format!(
            "fleet demo: {} tasks in a dependency graph, run by the exec coder, 3 at a time (home: {})\n",
            ids.len(),
            home.display()
        ));
    }
    let started = Instant::now();
    let total = ids.len();
    let done = Arc::new(Mutex::new(0usize));
    let done_in_view = Arc::clone(&done);
    let options = Options {
        home: home.to_path_buf(),
        actor: "fleet-demo".into(),
        exe: std::env::current_exe()?,
        user_home: std::env::home_dir(),
        until_idle: true,
    };
    let store = Arc::new(store);
    let summary = supervise(Arc::clone(&store), options, move |event| {
        live_view(&event, started, total, &done_in_view, json);
    })?;
    if !json {
        write_stdout(&format!("\n{}", final_table(&store)?));
        write_stdout(&format!(
            "{} in {:.1}s",
            summary_line(&summary),
            started.elapsed().as_secs_f64()
        ));
        write_stdout(&format!("\n{NEXT_STEPS}"));
    }
    check_all_closed(&store, &summary)
}

/// How to go from the demo to a real run, printed after it (`tests/supervisor/demo.rs` runs
/// each command).
pub const NEXT_STEPS: &str = "\
Next: fleet on a real project, with Claude Code or Codex (installed and logged in) as the agent:
  fleet init                                     # the queue, in $FLEET_HOME (~/.fleet)
  fleet config set coder=claude                  # or coder=codex
  fleet create \"Add a --verbose flag\" --cwd .    # from your project: the agent works there
  fleet run                                      # Ctrl-C stops; --detach runs it in the background";

/// Creates the pipeline, one create request per task (through the one write route, as any
/// front end writes); returns the ids in pipeline order.
fn fill_queue(store: &Store, home: &std::path::Path) -> Result<Vec<String>, CliError> {
    let mut ids: Vec<(&str, String)> = Vec::new();
    for (key, title, command, needs) in PIPELINE {
        let deps = needs
            .iter()
            .filter_map(|need| ids.iter().find(|(k, _)| k == need))
            .map(|(_, target)| DepSpec {
                kind: dep_type::BLOCKS.into(),
                target: target.clone(),
                reverse: false,
            })
            .collect();
        let mut create = CreateRequest {
            title: (*title).to_string(),
            description: (*command).to_string(),
            priority: 2,
            issue_type: "task".into(),
            deps,
            ..CreateRequest::default()
        };
        create.fleet.cwd = home.display().to_string();
        let request = Request::Create(Box::new(create));
        let submitted = crate::server::client::submit(
            store.dir(),
            "fleet-demo",
            Clock::System,
            request,
            || Ok::<_, StoreError>(store),
        );
        ids.push((key, submitted?.into_summary()?.issue.id));
    }
    Ok(ids.into_iter().map(|(_, id)| id).collect())
}

fn live_view(event: &Event, started: Instant, total: usize, done: &Mutex<usize>, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            write_stdout(&line);
        }
        return;
    }
    let Some(line) = event_line(event) else { return };
    write_stdout(&format!("[{:>5.1}s] {line}", started.elapsed().as_secs_f64()));
    if let Event::Finished { verdict, .. } = event
        && *verdict == Verdict::Closed
    {
        let mut done = done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *done += 1;
        write_stdout(&format!("         progress: {}/{total} done", *done));
    }
}

fn final_table(store: &Store) -> Result<String, CliError> {
    let filter = ListFilter { all: true, limit: 0, ..ListFilter::default() };
    let (issues, _) = store.read()?.list(&filter)?;
    let mut issues: Vec<_> = issues.into_iter().map(|s| s.issue).collect();
    issues.sort_by_key(|i| i.created_at);
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(["task", "title", "status", "attempts", "close reason"]);
    for issue in issues {
        table.add_row([
            issue.id,
            issue.title,
            issue.status.to_string(),
            issue.fleet.attempts.to_string(),
            issue.close_reason,
        ]);
    }
    Ok(table.to_string())
}
