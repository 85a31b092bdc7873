//! Races real `fleet` processes against one store, to back the concurrency claims of
//! DESIGN.md with evidence rather than argument:
//!
//! - a claim is a compare-and-set: however many processes claim at once, every issue is claimed
//!   exactly once, and the claimer the command reported is the assignee the store keeps;
//! - commits are durable and a crash never damages the store: processes killed with SIGKILL at
//!   any moment (including while they hold redb's writer lock, in the middle of a transaction or
//!   its commit) lose no acknowledged claim or create, and the store reopens for reads and writes;
//! - readers never fail or see a torn state while others write.
//!
//! Every worker is a thread of this test that runs the real binary in a loop, one process at a
//! time, so N workers keep N processes of `fleet` racing. The tests take a lock so that they run
//! one after another: on a two-core machine, two races at once only make both slower.
//!
//! The killer picks its victims at random moments; half of its kills go to whichever process
//! holds redb's writer byte at that moment (found in `/proc/<pid>/fdinfo`), so the crash lands
//! inside a write transaction rather than in process start-up. The random seed is printed and
//! can be pinned with `FLEET_RACE_SEED`.

#[path = "common/mod.rs"]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Workspace, ids_of};
use fleet::model::Issue;
use fleet::op::OpKind;
use fleet::server::{InProcess, Outcome};
use fleet::store::Store;
use fleet::time::Clock;
use fleet::tracker::Request;
use serde_json::Value;

/// A size the environment may override, to run a bigger race than the default.
fn scale(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `ws.command(args)`, but running `$FLEET_RACE_BIN` instead when it is set, so the same race
/// can be run against a release build (`FLEET_RACE_BIN=target/release/fleet`).
fn fleet(ws: &Workspace, args: &[&str]) -> Command {
    let base = ws.command(args);
    let Some(bin) = std::env::var_os("FLEET_RACE_BIN") else {
        return base;
    };
    let mut cmd = Command::new(bin);
    cmd.env_clear().args(base.get_args());
    for (key, value) in base.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    if let Some(dir) = base.get_current_dir() {
        cmd.current_dir(dir);
    }
    cmd
}

/// Runs the races one at a time (see the module doc).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The offset of redb's writer byte (`WRITER_BYTE` in redb's `db.rs`): in `MultiWriter` mode a
/// process holds a write lock on it for the whole of a write transaction (commit included), and
/// while opening (recovery, allocator load) and closing (saving the allocator state) the file.
const REDB_WRITER_BYTE: u64 = 1 << 62;

// ---------------------------------------------------------------------------------------------
// Seeding

/// Creates `n` open, unassigned issues in one transaction through the library (thousands of
/// `fleet create` processes would take minutes), and returns their ids. The store is closed
/// again before this returns.
fn seed(ws: &Workspace, n: usize) -> BTreeSet<String> {
    let store = Store::open(&ws.beads_dir()).expect("open the store");
    let (ids, _) = store
        .write("seeder", Clock::System, |w| {
            let mut ids = BTreeSet::new();
            for i in 0..n {
                let title = format!("race task {i}");
                let id = w.new_issue_id(&title, "", None)?;
                let mut issue = Issue::new(id.clone(), title, w.now());
                issue.created_by = "seeder".to_string();
                w.apply(OpKind::Create { issue: Box::new(issue), deps: Vec::new() })?;
                ids.insert(id);
            }
            Ok(ids)
        })
        .expect("seed the issues");
    assert_eq!(ids.len(), n, "seeded ids are distinct");
    ids
}

// ---------------------------------------------------------------------------------------------
// Running processes that may be killed

/// The pid of the process a worker is running right now, if any. The worker clears it before it
/// reaps the child, so a pid found here is always that child's (alive, or a zombie that a
/// signal cannot hurt), never a recycled one.
#[derive(Default)]
struct Slot(Mutex<Option<u32>>);

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<u32>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One finished run of the binary.
struct Attempt {
    /// What the worker ran, for failure messages.
    what: String,
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Attempt {
    fn killed(&self) -> bool {
        self.signal == Some(libc::SIGKILL)
    }

    fn clean(&self) -> bool {
        self.code == Some(0) && self.stderr.is_empty()
    }

    /// The run, for a failure message.
    fn describe(&self) -> String {
        format!(
            "`{}` exited {:?} (signal {:?})\nstdout: {}\nstderr: {}",
            self.what, self.code, self.signal, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` to completion, publishing its pid in `slot` while it runs.
fn run_tracked(mut cmd: Command, what: String, slot: &Slot) -> Attempt {
    use std::io::Read;
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn fleet");
    *slot.lock() = Some(child.id());
    let mut stdout = String::new();
    let mut stderr = String::new();
    // The outputs are a few hundred bytes, far below a pipe's buffer, so reading one after the
    // other cannot deadlock.
    child.stdout.take().expect("piped").read_to_string(&mut stdout).expect("read stdout");
    child.stderr.take().expect("piped").read_to_string(&mut stderr).expect("read stderr");
    *slot.lock() = None;
    let status = child.wait().expect("wait for fleet");
    Attempt { what, code: status.code(), signal: status.signal(), stdout, stderr }
}

/// A small xorshift generator: the tests need random moments, not good randomness.
struct Rng(u64);

impl Rng {
    fn from_env_or_clock() -> Rng {
        let seed =
            std::env::var("FLEET_RACE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(
                || {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(1, |d| d.as_nanos() as u64)
                },
            ) | 1;
        eprintln!("race seed: FLEET_RACE_SEED={seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Whether `pid` holds a write lock on redb's writer byte: it is inside a write transaction, or
/// opening or closing the database.
fn holds_writer_lock(pid: u32) -> bool {
    let byte = REDB_WRITER_BYTE.to_string();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_to_string(fd.path()).is_ok_and(|info| {
            info.lines().any(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                line.starts_with("lock:")
                    && fields.contains(&"OFDLCK")
                    && fields.contains(&"WRITE")
                    && fields.ends_with(&[byte.as_str(), byte.as_str()])
            })
        })
    })
}

/// What the killer did.
#[derive(Debug, Default)]
struct Kills {
    /// SIGKILLs sent to the process holding the writer lock.
    holders: usize,
    /// SIGKILLs sent to a process chosen at random (mostly waiting for the lock, or starting).
    random: usize,
}

/// Sends SIGKILL to up to `max` of the workers' processes, one every few milliseconds, until
/// `done` is set. About half of the rounds target the writer-lock holder, and kill nobody if no
/// process holds the lock at that moment.
fn kill_randomly(slots: &[Slot], done: &AtomicBool, max: usize, rng: &mut Rng) -> Kills {
    let mut kills = Kills::default();
    while !done.load(Ordering::Relaxed) && kills.holders + kills.random < max {
        std::thread::sleep(Duration::from_millis(5 + rng.below(40)));
        let want_holder = rng.below(2) == 0;
        let start = rng.below(slots.len() as u64) as usize;
        for k in 0..slots.len() {
            let slot = slots[(start + k) % slots.len()].lock();
            let Some(pid) = *slot else { continue };
            let holder = holds_writer_lock(pid);
            if want_holder && !holder {
                continue;
            }
            // SAFETY: kill(2) has no memory effects; `pid` is our unreaped child (see `Slot`).
            let sent = unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0;
            if sent {
                if holder {
                    kills.holders += 1;
                } else {
                    kills.random += 1;
                }
            }
            break;
        }
    }
    kills
}

// ---------------------------------------------------------------------------------------------
// Claim workers

/// What one claiming worker saw.
struct ClaimLog {
    actor: String,
    attempts: Vec<Attempt>,
    /// Ids the worker's processes reported claiming (acknowledged claims).
    claimed: Vec<String>,
}

impl ClaimLog {
    fn killed(&self) -> usize {
        self.attempts.iter().filter(|a| a.killed()).count()
    }
}

/// Runs `fleet claim --actor <actor> --json` until it prints `null`. A run killed by the test
/// counts as acknowledged only if it printed a whole claim before dying. Stops early on any
/// other failure (the test then reports it) or after `max` runs.
fn claim_until_empty(ws: &Workspace, actor: &str, slot: &Slot, max: usize) -> ClaimLog {
    let mut log = ClaimLog { actor: actor.to_string(), attempts: Vec::new(), claimed: Vec::new() };
    for _ in 0..max {
        let cmd = fleet(ws, &["claim", "--actor", actor, "--json"]);
        let attempt = run_tracked(cmd, format!("fleet claim --actor {actor} --json"), slot);
        let printed = serde_json::from_str::<Value>(&attempt.stdout).ok();
        let id = printed.as_ref().and_then(|v| v["id"].as_str()).map(str::to_string);
        let finished = attempt.clean() && printed == Some(Value::Null);
        let failed = !attempt.killed() && (!attempt.clean() || printed.is_none());
        if let Some(id) = id {
            log.claimed.push(id);
        }
        log.attempts.push(attempt);
        if finished || failed {
            break;
        }
    }
    log
}

/// Asserts that every run that was not killed exited 0, printed nothing on stderr, and printed
/// what `expected_stdout` accepts.
fn assert_no_failures<'a>(
    attempts: impl IntoIterator<Item = &'a Attempt>,
    expected_stdout: impl Fn(&str) -> bool,
) {
    let failures: Vec<&Attempt> = attempts
        .into_iter()
        .filter(|a| !(a.killed() || a.clean() && expected_stdout(&a.stdout)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} runs failed under contention; the first ones:\n{}",
        failures.len(),
        failures.iter().take(5).map(|a| a.describe()).collect::<Vec<_>>().join("\n")
    );
}

fn is_json(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok()
}

/// Each id in `logs` mapped to the worker that reported claiming it; panics on a double claim.
fn acknowledged_claims(logs: &[ClaimLog]) -> BTreeMap<String, String> {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for log in logs {
        for id in &log.claimed {
            if let Some(first) = owner.insert(id.clone(), log.actor.clone()) {
                panic!("{id} was claimed twice: by {first} and by {}", log.actor);
            }
        }
    }
    owner
}

/// Assignee of every issue of `fleet list` with the given statuses.
fn assignees(ws: &Workspace, status: &str) -> BTreeMap<String, String> {
    let listed = ws.json(&["list", "--status", status, "--limit", "0"]);
    listed
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|issue| {
            let id = issue["id"].as_str().expect("an id").to_string();
            (id, issue["assignee"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// The journal agrees with the tables: one create per issue of `all`, and exactly one claim op
/// per in-progress issue, made by its assignee.
fn assert_journal_matches(
    ws: &Workspace,
    all: &BTreeSet<String>,
    in_progress: &BTreeMap<String, String>,
) {
    let store = Store::open(&ws.beads_dir()).expect("reopen the store");
    let mut created = BTreeSet::new();
    let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, op) in store.journal(0).expect("read the journal") {
        match &op.kind {
            OpKind::Create { issue, .. } => assert!(created.insert(issue.id.clone())),
            OpKind::Claim { id } => claims.entry(id.clone()).or_default().push(op.meta.actor),
            other => panic!("unexpected op in the journal: {other:?}"),
        }
    }
    assert_eq!(&created, all, "journaled creates differ from the issues");
    let expected: BTreeMap<String, Vec<String>> =
        in_progress.iter().map(|(id, who)| (id.clone(), vec![who.clone()])).collect();
    assert_eq!(claims, expected, "journaled claims differ from the in-progress issues");
}

/// After a race in which claimers were killed: every acknowledged claim is kept by its claimer,
/// every issue is accounted for, a claim nobody reported belongs to a worker whose process was
/// killed (at most one per kill), no ready work is left, and the journal agrees.
fn assert_claims_accounted_for(ws: &Workspace, all: &BTreeSet<String>, logs: &[ClaimLog]) {
    assert_no_failures(logs.iter().flat_map(|l| &l.attempts), is_json);
    let owner = acknowledged_claims(logs);
    let in_progress = assignees(ws, "in_progress");
    let open = assignees(ws, "open");
    for (id, who) in &owner {
        assert_eq!(in_progress.get(id), Some(who), "acknowledged claim of {id} by {who} lost");
    }
    let listed: BTreeSet<String> = in_progress.keys().chain(open.keys()).cloned().collect();
    assert_eq!(&listed, all, "issues are missing or extra after the kills");
    assert!(open.values().all(String::is_empty), "an open issue kept an assignee: {open:?}");

    let killed_by_worker: BTreeMap<&str, usize> =
        logs.iter().map(|l| (l.actor.as_str(), l.killed())).collect();
    let mut unacknowledged: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, who) in &in_progress {
        if !owner.contains_key(id) {
            *unacknowledged.entry(who.as_str()).or_default() += 1;
        }
    }
    for (who, count) in &unacknowledged {
        let died = killed_by_worker.get(who).copied().unwrap_or(0);
        assert!(
            *count <= died,
            "{who} holds {count} claims it never reported, but only {died} of its processes died"
        );
    }
    eprintln!("{} claims made by killed processes", unacknowledged.values().sum::<usize>());
    // Every claimer ran until it saw no ready work, so nothing can still be open.
    assert!(open.is_empty(), "ready work left after every claimer saw none: {open:?}");
    assert_journal_matches(ws, all, &in_progress);
}

/// The store opens and answers reads and a write after the race.
fn assert_store_usable(ws: &Workspace, total: usize) {
    let stats = ws.json(&["stats"]);
    assert_eq!(stats["total_issues"].as_u64(), Some(total as u64), "stats: {stats:#}");
    assert_eq!(
        stats["ready_issues"].as_u64(),
        Some(ws.ready_ids().len() as u64),
        "stats disagree with ready: {stats:#}"
    );
    let id = ws.create("after the race", &[]);
    let claimed = ws.json(&["claim", &id, "--actor", "survivor"]);
    assert_eq!(claimed["assignee"], "survivor");
}

// ---------------------------------------------------------------------------------------------
// The tests

/// 64 processes claim 600 issues (`FLEET_RACE_ISSUES` to change) at once: each is claimed
/// exactly once, by the worker that reported it, and nothing fails under contention.
#[test]
fn claim_race_claims_every_issue_exactly_once() {
    const WORKERS: usize = 64;
    let issues = scale("FLEET_RACE_ISSUES", 600);
    let _serial = serial();
    let ws = Workspace::new();
    let all = seed(&ws, issues);

    let started = Instant::now();
    let slots: Vec<Slot> = (0..WORKERS).map(|_| Slot::default()).collect();
    let logs: Vec<ClaimLog> = std::thread::scope(|s| {
        let workers: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(n, slot)| {
                let ws = &ws;
                s.spawn(move || claim_until_empty(ws, &format!("worker-{n}"), slot, issues + 1))
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("worker thread")).collect()
    });
    let runs: usize = logs.iter().map(|l| l.attempts.len()).sum();
    eprintln!("{runs} claim processes by {WORKERS} workers in {:?}", started.elapsed());

    assert_no_failures(logs.iter().flat_map(|l| &l.attempts), is_json);
    assert!(logs.iter().all(|l| l.killed() == 0), "nothing killed these processes");
    let owner = acknowledged_claims(&logs);
    let claimed: BTreeSet<String> = owner.keys().cloned().collect();
    assert_eq!(claimed, all, "the claimed ids are not the seeded ones");
    let busy = logs.iter().filter(|l| !l.claimed.is_empty()).count();
    assert!(busy > 1, "only {busy} worker won any claim: the processes did not race");

    let in_progress = assignees(&ws, "in_progress");
    assert_eq!(in_progress, owner, "the store's assignees differ from the reported claimers");
    assert!(ws.ready_ids().is_empty(), "ready work left after every claimer saw none");
    assert_journal_matches(&ws, &all, &in_progress);
}

/// Claimers are killed with SIGKILL at random moments, half of them inside a write
/// transaction. The store reopens; every acknowledged claim is kept; every issue is either
/// claimed by a worker that reported it, claimed by a worker whose process was killed, or still
/// open.
#[test]
fn claims_survive_kill_9() {
    const ISSUES: usize = 400;
    const WORKERS: usize = 32;
    let max_kills = scale("FLEET_RACE_KILLS", 40);
    let _serial = serial();
    let ws = Workspace::new();
    let all = seed(&ws, ISSUES);
    let mut rng = Rng::from_env_or_clock();

    let started = Instant::now();
    let slots: Vec<Slot> = (0..WORKERS).map(|_| Slot::default()).collect();
    let done = AtomicBool::new(false);
    let (logs, kills) = std::thread::scope(|s| {
        let workers: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(n, slot)| {
                let ws = &ws;
                s.spawn(move || claim_until_empty(ws, &format!("worker-{n}"), slot, ISSUES * 2))
            })
            .collect();
        let killer = s.spawn(|| kill_randomly(&slots, &done, max_kills, &mut rng));
        let logs: Vec<ClaimLog> =
            workers.into_iter().map(|w| w.join().expect("worker thread")).collect();
        done.store(true, Ordering::Relaxed);
        (logs, killer.join().expect("killer thread"))
    });
    let killed: usize = logs.iter().map(ClaimLog::killed).sum();
    eprintln!(
        "{} claim processes in {:?}; killed {killed} ({kills:?})",
        logs.iter().map(|l| l.attempts.len()).sum::<usize>(),
        started.elapsed()
    );
    assert!(killed > 0, "the killer hit no process");

    assert_claims_accounted_for(&ws, &all, &logs);
    assert_store_usable(&ws, ISSUES);
}

/// Writers running `fleet create` in loops are killed with SIGKILL; every create that printed
/// an id exists afterwards, and every other issue comes from a killed create.
#[test]
fn creates_survive_kill_9() {
    const WORKERS: usize = 16;
    const PER_WORKER: usize = 25;
    let max_kills = scale("FLEET_RACE_KILLS", 30);
    let _serial = serial();
    let ws = Workspace::new();
    let mut rng = Rng::from_env_or_clock();

    let started = Instant::now();
    let slots: Vec<Slot> = (0..WORKERS).map(|_| Slot::default()).collect();
    let done = AtomicBool::new(false);
    let (logs, kills) = std::thread::scope(|s| {
        let workers: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(n, slot)| {
                let ws = &ws;
                s.spawn(move || {
                    (0..PER_WORKER)
                        .map(|i| {
                            let title = format!("w{n}-{i}");
                            let cmd = fleet(ws, &["create", &title, "--silent"]);
                            (title.clone(), run_tracked(cmd, format!("fleet create {title}"), slot))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let killer = s.spawn(|| kill_randomly(&slots, &done, max_kills, &mut rng));
        let logs: Vec<(String, Attempt)> =
            workers.into_iter().flat_map(|w| w.join().expect("worker thread")).collect();
        done.store(true, Ordering::Relaxed);
        (logs, killer.join().expect("killer thread"))
    });
    let killed: Vec<&str> =
        logs.iter().filter(|(_, a)| a.killed()).map(|(t, _)| t.as_str()).collect();
    eprintln!(
        "{} create processes in {:?}; killed {} ({kills:?})",
        logs.len(),
        started.elapsed(),
        killed.len()
    );
    assert!(!killed.is_empty(), "the killer hit no process");
    assert_no_failures(logs.iter().map(|(_, a)| a), |out| out.trim().starts_with("t-"));

    // Acknowledged: the process printed an id (whether or not it was killed afterwards).
    let acknowledged: BTreeMap<String, String> = logs
        .iter()
        .filter(|(_, a)| a.stdout.ends_with('\n') && !a.stdout.trim().is_empty())
        .map(|(title, a)| (a.stdout.trim().to_string(), title.clone()))
        .collect();
    let stats = ws.json(&["stats"]);
    let listed = ws.json(&["list", "--limit", "0"]);
    let titles: BTreeMap<String, String> = listed
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|i| (i["id"].as_str().unwrap().to_string(), i["title"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(stats["total_issues"].as_u64(), Some(titles.len() as u64), "stats: {stats:#}");
    for (id, title) in &acknowledged {
        assert_eq!(titles.get(id), Some(title), "acknowledged create {id} ({title}) was lost");
    }
    let mut seen = BTreeSet::new();
    for (id, title) in &titles {
        assert!(seen.insert(title), "{title} was created twice");
        assert!(
            acknowledged.contains_key(id) || killed.contains(&title.as_str()),
            "{id} ({title}) exists but neither was acknowledged nor came from a killed create"
        );
    }
    eprintln!("{} creates by killed processes landed", titles.len() - acknowledged.len());
    assert_journal_matches(&ws, &titles.keys().cloned().collect(), &BTreeMap::new());
    assert_store_usable(&ws, titles.len());
}

/// Processes reading the queue while 16 others claim from it never fail, and every snapshot
/// they see is consistent: ready work only shrinks, and a shown issue is open and unassigned
/// or in progress with an assignee.
#[test]
fn readers_never_fail_during_claims() {
    const ISSUES: usize = 300;
    const WORKERS: usize = 16;
    let _serial = serial();
    let ws = Workspace::new();
    let all: Vec<String> = seed(&ws, ISSUES).into_iter().collect();

    let slots: Vec<Slot> = (0..WORKERS + 2).map(|_| Slot::default()).collect();
    let done = AtomicBool::new(false);
    let (logs, ready_runs, show_runs) = std::thread::scope(|s| {
        let workers: Vec<_> = slots[..WORKERS]
            .iter()
            .enumerate()
            .map(|(n, slot)| {
                let ws = &ws;
                s.spawn(move || claim_until_empty(ws, &format!("worker-{n}"), slot, ISSUES + 1))
            })
            .collect();
        let ready_reader = s.spawn(|| {
            let mut runs = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let cmd = fleet(&ws, &["ready", "--limit", "0", "--json"]);
                runs.push(run_tracked(cmd, "fleet ready".into(), &slots[WORKERS]));
            }
            runs
        });
        let show_reader = s.spawn(|| {
            let mut runs = Vec::new();
            let mut k = 0;
            while !done.load(Ordering::Relaxed) {
                let id = &all[k * 7919 % all.len()];
                k += 1;
                let cmd = fleet(&ws, &["show", id, "--json"]);
                runs.push(run_tracked(cmd, format!("fleet show {id}"), &slots[WORKERS + 1]));
            }
            runs
        });
        let logs: Vec<ClaimLog> =
            workers.into_iter().map(|w| w.join().expect("worker thread")).collect();
        done.store(true, Ordering::Relaxed);
        (logs, ready_reader.join().expect("reader"), show_reader.join().expect("reader"))
    });
    eprintln!("{} ready and {} show runs during the claims", ready_runs.len(), show_runs.len());
    assert!(ready_runs.len() >= 3 && show_runs.len() >= 3, "the readers barely ran");

    assert_no_failures(logs.iter().flat_map(|l| &l.attempts), is_json);
    assert_no_failures(&ready_runs, is_json);
    assert_no_failures(&show_runs, is_json);
    assert_eq!(acknowledged_claims(&logs).len(), ISSUES);

    let mut previous = usize::MAX;
    for run in &ready_runs {
        let ready = ids_of(&serde_json::from_str(&run.stdout).expect("ready JSON"));
        assert!(ready.len() <= previous, "ready work grew from {previous} to {}", ready.len());
        previous = ready.len();
    }
    for run in &show_runs {
        let shown: Value = serde_json::from_str(&run.stdout).expect("show JSON");
        let issue = &shown[0];
        let assignee = issue["assignee"].as_str().unwrap_or_default();
        match issue["status"].as_str() {
            Some("open") => assert!(assignee.is_empty(), "open yet assigned: {issue:#}"),
            Some("in_progress") => assert!(!assignee.is_empty(), "claimed by nobody: {issue:#}"),
            other => panic!("unexpected status {other:?}: {issue:#}"),
        }
    }
}

/// The next ready issue claimed as `actor` through `group`, if any.
fn claim_in_group(group: &InProcess, actor: &str) -> Option<Issue> {
    let request = Request::ClaimNext { filter: Box::default() };
    match group.submit(actor, request) {
        Outcome::Applied(reply) => reply.into_claimed().expect("a claim's reply").map(|s| s.issue),
        other => panic!("group claim: {other:?}"),
    }
}

/// A long-lived process claiming through the server's group commit ([`InProcess`]) races 16 CLI
/// claimers, some of which are killed: its open database handle must follow the other
/// processes' commits and survive their crashes, and every claim it reported is kept.
#[test]
fn group_commit_and_cli_claimers_share_the_queue() {
    const ISSUES: usize = 300;
    const WORKERS: usize = 16;
    const GROUP_THREADS: usize = 8;
    let _serial = serial();
    let ws = Workspace::new();
    let all = seed(&ws, ISSUES);

    let mut rng = Rng::from_env_or_clock();
    let max_kills = scale("FLEET_RACE_KILLS", 20);

    let store = Arc::new(Store::open(&ws.beads_dir()).expect("open the store"));
    let group = InProcess::start(Arc::clone(&store), Clock::System).expect("start the committer");
    let slots: Vec<Slot> = (0..WORKERS).map(|_| Slot::default()).collect();
    let done = AtomicBool::new(false);
    let (mut logs, group_logs, kills) = std::thread::scope(|s| {
        let workers: Vec<_> = slots
            .iter()
            .enumerate()
            .map(|(n, slot)| {
                let ws = &ws;
                s.spawn(move || claim_until_empty(ws, &format!("worker-{n}"), slot, ISSUES + 1))
            })
            .collect();
        let claimers: Vec<_> = (0..GROUP_THREADS)
            .map(|t| {
                let group = &group;
                s.spawn(move || {
                    let actor = format!("group-{t}");
                    let mut claimed = Vec::new();
                    while let Some(issue) = claim_in_group(group, &actor) {
                        assert_eq!(issue.assignee, actor);
                        claimed.push(issue.id);
                    }
                    ClaimLog { actor, attempts: Vec::new(), claimed }
                })
            })
            .collect();
        let killer = s.spawn(|| kill_randomly(&slots, &done, max_kills, &mut rng));
        let logs: Vec<ClaimLog> =
            workers.into_iter().map(|w| w.join().expect("worker thread")).collect();
        let group_logs: Vec<ClaimLog> =
            claimers.into_iter().map(|c| c.join().expect("claimer thread")).collect();
        done.store(true, Ordering::Relaxed);
        (logs, group_logs, killer.join().expect("killer thread"))
    });
    drop(group);
    drop(store);
    let by_group: usize = group_logs.iter().map(|l| l.claimed.len()).sum();
    eprintln!("{by_group} of {ISSUES} issues claimed through the group commit; {kills:?}");

    logs.extend(group_logs);
    assert_claims_accounted_for(&ws, &all, &logs);
    assert_store_usable(&ws, ISSUES);
}
