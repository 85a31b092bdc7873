//! Accounts: a coder's attempts rotate over its `[[coders.NAME.accounts]]`, each agent gets
//! its account's variables, a rate limit or a refused login pauses only that account while
//! the coder goes on with the others, the coder stops when every account is paused, and an
//! account's key never reaches a file, a comment or an output. The fake agent tells the
//! accounts apart by the variable `FAKE_ACCOUNT` each one sets.

use serde_json::Value;

use crate::harness::{Fleet, counter};

/// An account's key: no token shape gives it away, only the name of its variable.
const KEY_ONE: &str = "acct-one-3f9a7c21e8b4";
const KEY_TWO: &str = "acct-two-77d0b5e2a91c";

/// Two accounts of the fake coder.
fn accounts() -> String {
    format!(
        "\n[[coders.fake.accounts]]\nname = \"one\"\nenv = {{ FAKE_ACCOUNT = \"one\", FAKE_API_KEY = \"{KEY_ONE}\" }}\n\
         \n[[coders.fake.accounts]]\nname = \"two\"\nenv = {{ FAKE_ACCOUNT = \"two\", FAKE_API_KEY = \"{KEY_TWO}\" }}\n"
    )
}

fn fleet_with_accounts(settings: &[(&str, &str)]) -> Fleet {
    let fleet = Fleet::new(settings);
    fleet.configure_with(settings, &accounts());
    fleet
}

/// The attempts of a task's ledger.
fn ledger(fleet: &Fleet, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fleet.task_file(id, "ledger.json")).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["attempts"].as_array().unwrap().clone()
}

/// `fleet stats --agents --by account --json`, as `account → group`.
fn stats_by_account(fleet: &Fleet) -> Value {
    let stats = fleet.ws.json(&["stats", "--agents", "--by", "account"]);
    let mut by_key = serde_json::Map::new();
    for group in stats["groups"].as_array().unwrap() {
        by_key.insert(group["key"].as_str().unwrap().to_owned(), group.clone());
    }
    Value::Object(by_key)
}

#[test]
fn spawns_spread_over_the_accounts_and_each_agent_gets_its_accounts_variables() {
    let fleet = fleet_with_accounts(&[]);
    let env_log = fleet.home().join("env.log");
    let record = format!("envfile {} FAKE_ACCOUNT FAKE_API_KEY", env_log.display());
    let ids: Vec<String> = (1..=4)
        .map(|n| fleet.task(&format!("Job {n}"), &[&record, "spend 1000 10 0.01", "close"]))
        .collect();
    let run = fleet.run_until_idle(&[]).ok();

    // Both accounts ran agents (the first two agents run at once, one on each), and every
    // agent had the variables of one account, key included.
    let lines: Vec<String> =
        std::fs::read_to_string(&env_log).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 4, "{lines:?}\n{}", run.stdout());
    let mut used = std::collections::BTreeMap::new();
    for account in ["one", "two"] {
        let key = if account == "one" { KEY_ONE } else { KEY_TWO };
        let line = format!("FAKE_ACCOUNT={account} FAKE_API_KEY={key}");
        used.insert(account, lines.iter().filter(|l| l.ends_with(&line)).count() as u64);
    }
    assert!(used.values().all(|n| *n >= 1), "{lines:?}");
    assert_eq!(used.values().sum::<u64>(), 4, "{lines:?}");
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "closed", "{}", run.stdout());
        // The ledger, `fleet tasks` and `fleet show` name the account the agent really had.
        let attempts = ledger(&fleet, id);
        let account = attempts[0]["account"].as_str().unwrap().to_owned();
        let line = lines.iter().find(|l| l.starts_with(&format!("{id} "))).unwrap();
        assert!(line.contains(&format!("FAKE_ACCOUNT={account} ")), "{line} vs {account}");
        let shown = fleet.ws.run(&["show", id]).ok().stdout;
        assert!(shown.contains(&format!("Account: {account}")), "{shown}");
    }
    assert!(run.stdout().contains("(fake@one)") && run.stdout().contains("(fake@two)"));

    let view = fleet.ws.json(&["tasks", "--all"]);
    let rows = view["tasks"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["account"] == "one" || r["account"] == "two"), "{view:#}");
    let human = fleet.ws.run(&["tasks", "--all"]).ok().stdout;
    assert!(human.contains("fake@one·") && human.contains("fake@two·"), "{human}");
    let rows = human.lines().filter(|l| ids.iter().any(|id| l.starts_with(id.as_str())));
    assert!(
        rows.clone().count() == 4 && rows.into_iter().all(|l| l.chars().count() <= 80),
        "{human}"
    );

    let by_account = stats_by_account(&fleet);
    for (account, runs) in used {
        let group = &by_account[account];
        assert_eq!(group["attempts"].as_u64(), Some(runs), "{by_account:#}");
        assert_eq!(group["closed_tasks"].as_u64(), Some(runs), "{by_account:#}");
        assert_eq!(group["tokens_in"].as_u64(), Some(1000 * runs), "{by_account:#}");
        let cost = group["cost_usd"].as_f64().unwrap();
        assert!((cost - 0.01 * runs as f64).abs() < 1e-9, "{by_account:#}");
    }
}

#[test]
fn a_rate_limit_pauses_only_its_account_and_the_tasks_close_on_the_other() {
    let fleet = fleet_with_accounts(&[]);
    let ids: Vec<String> = (1..=3)
        .map(|n| fleet.task(&format!("Job {n}"), &["when FAKE_ACCOUNT=one 429", "close"]))
        .collect();
    let run = fleet.run_until_idle(&[]).ok();

    // Account one hit the limit once and was paused; every task closed on account two.
    let paused = run.starting("⏸ fake@one paused until ");
    assert_eq!(paused.len(), 1, "{}", run.stdout());
    assert!(run.starting("⏸ fake paused").is_empty(), "the coder goes on:\n{}", run.stdout());
    let mut limited = 0;
    for id in &ids {
        let issue = fleet.show(id);
        assert_eq!(issue["status"], "closed", "{}", run.stdout());
        assert_eq!(counter(&issue, "attempts"), 1, "the 429 is not counted: {issue:#}");
        assert_eq!(counter(&issue, "failures"), 0);
        let attempts = ledger(&fleet, id);
        let last = attempts.last().unwrap();
        assert_eq!(
            (last["account"].as_str(), last["outcome"].as_str()),
            (Some("two"), Some("closed"))
        );
        if attempts.len() == 2 {
            limited += 1;
            assert_eq!(attempts[0]["account"], "one");
            assert_eq!(attempts[0]["outcome"], "rate-limited");
            let comments = fleet.comments(id).join("\n");
            assert!(
                comments.contains("on fake@one: rate limited; released, not charged"),
                "{comments}"
            );
        }
    }
    assert_eq!(limited, 1, "one task met the limit: {}", run.stdout());

    // The pause is visible to the operator, with its end.
    let view = fleet.ws.json(&["tasks"]);
    let pauses = view["pauses"].as_array().unwrap();
    assert_eq!(pauses.len(), 1, "{view:#}");
    assert_eq!(
        (pauses[0]["coder"].as_str(), pauses[0]["account"].as_str()),
        (Some("fake"), Some("one"))
    );
    assert_eq!(pauses[0]["cause"], "rate limit");
    assert!(pauses[0]["until"].is_string());
    let human = fleet.ws.run(&["tasks"]).ok().stdout;
    assert!(human.contains("⏸ fake@one paused until "), "{human}");

    // The stats split by account, and count the pause.
    let by_account = stats_by_account(&fleet);
    assert_eq!(by_account["one"]["attempts"], 1);
    assert_eq!(by_account["one"]["closed_tasks"], 0);
    assert_eq!(by_account["two"]["attempts"], 3);
    assert_eq!(by_account["two"]["closed_tasks"], 3);
    let stats = fleet.ws.json(&["stats", "--agents"]);
    let pause = &stats["pauses"][0];
    assert_eq!(
        (pause["account"].as_str(), pause["cause"].as_str()),
        (Some("one"), Some("rate_limit"))
    );
    assert_eq!(pause["pauses"], 1);
    // Recorded once, when the runner saw it; the attempt's outcome is the same rate limit.
    let history = std::fs::read_to_string(fleet.home().join("state/pause-history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 1, "{history}");
    let text = fleet.ws.run(&["stats", "--agents", "--by", "account"]).ok().stdout;
    for cell in ["ACCOUNT", "one", "two", "total", "fake@one", "rate limit"] {
        assert!(text.contains(cell), "{cell} in\n{text}");
    }

    // A new run keeps off the paused account: the pause outlives the supervisor.
    let next = fleet.task("Later", &["when FAKE_ACCOUNT=one exit 3", "close"]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(fleet.show(&next)["status"], "closed");
    assert_eq!(ledger(&fleet, &next)[0]["account"], "two");
}

#[test]
fn when_every_account_is_paused_the_coder_is_paused_and_nothing_is_charged() {
    // Account one's login is refused, account two is rate limited.
    let fleet = fleet_with_accounts(&[("max_concurrent", "1")]);
    let id = fleet.task("Stuck", &["when FAKE_ACCOUNT=one authfail", "when FAKE_ACCOUNT=two 429"]);
    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} open (rate-limited)")]);

    assert_eq!(run.starting("▶ ").len(), 2, "one try per account:\n{}", run.stdout());
    assert!(run.stdout().contains("⏸ fake@one paused until"), "{}", run.stdout());
    assert!(run.stdout().contains("(not logged in): Not logged in"), "{}", run.stdout());
    assert!(run.stdout().contains("⏸ fake paused until"), "{}", run.stdout());
    assert!(run.stdout().contains("every account of fake is paused"), "{}", run.stdout());
    assert!(run.stdout().contains("nothing more can run without help"), "{}", run.stdout());
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "open");
    assert_eq!(counter(&issue, "attempts"), 0, "neither try is counted: {issue:#}");
    let comments = fleet.comments(&id).join("\n");
    assert!(comments.contains("could not work on account one (not logged in)"), "{comments}");
    assert!(comments.contains("fake@one is paused"), "{comments}");

    let view = fleet.ws.json(&["tasks"]);
    let pauses: Vec<(String, String)> = view["pauses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let who = match p["account"].as_str() {
                Some(account) => format!("fake@{account}"),
                None => p["coder"].as_str().unwrap().to_owned(),
            };
            (who, p["cause"].as_str().unwrap().to_owned())
        })
        .collect();
    for expected in
        [("fake@one", "not logged in"), ("fake@two", "rate limit"), ("fake", "rate limit")]
    {
        assert!(
            pauses.iter().any(|(who, cause)| (who.as_str(), cause.as_str()) == expected),
            "{expected:?} in {pauses:?}"
        );
    }
}

#[test]
fn fleet_pause_account_holds_only_that_account() {
    let fleet = fleet_with_accounts(&[]);
    let held = fleet.ws.run(&["pause", "--account", "one", "-r", "quota for today"]).ok().stdout;
    assert!(held.contains("account fake@one"), "{held}");
    let view = fleet.ws.json(&["tasks"]);
    assert_eq!(view["pauses"][0]["account"], "one");
    assert_eq!(view["pauses"][0]["cause"], "fleet pause");

    let ids: Vec<String> = (1..=2).map(|n| fleet.task(&format!("Job {n}"), &["close"])).collect();
    fleet.run_until_idle(&[]).ok();
    for id in &ids {
        assert_eq!(fleet.show(id)["status"], "closed");
        assert_eq!(ledger(&fleet, id)[0]["account"], "two");
    }

    let unknown = fleet.ws.run(&["pause", "--account", "three"]).fails(1);
    assert!(unknown.stderr.contains("defines no account \"three\""), "{}", unknown.stderr);
    let resumed = fleet.ws.run(&["resume", "--account", "one"]).ok().stdout;
    assert!(resumed.contains("▶ account fake@one resumed"), "{resumed}");
    assert!(fleet.ws.json(&["tasks"])["pauses"].as_array().unwrap().is_empty());
}

/// Many `fleet pause --account` (then `fleet resume --account`) at once: every one lands —
/// none reads the holds while another is between its read and its write.
#[test]
fn concurrent_account_pauses_and_resumes_all_land() {
    const ACCOUNTS: usize = 16;
    let fleet = Fleet::new(&[]);
    let tables: String = (0..ACCOUNTS)
        .map(|n| format!("\n[[coders.fake.accounts]]\nname = \"name{n}\"\nenv = {{ FAKE_ACCOUNT = \"name{n}\" }}\n"))
        .collect();
    fleet.configure_with(&[], &tables);
    let at_once = |verb: &str, accounts: &[usize]| {
        let commands =
            accounts.iter().map(|n| fleet.ws.command(&[verb, "--account", &format!("name{n}")]));
        crate::common::all_succeed(commands, verb);
    };
    let paused = |fleet: &Fleet| -> Vec<String> {
        let view = fleet.ws.json(&["tasks"]);
        let mut accounts: Vec<String> = view["pauses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|pause| pause["cause"] == "fleet pause")
            .map(|pause| {
                format!(
                    "{}@{}",
                    pause["coder"].as_str().unwrap(),
                    pause["account"].as_str().unwrap_or_default()
                )
            })
            .collect();
        accounts.sort();
        accounts
    };
    fn names(accounts: impl Iterator<Item = usize>) -> Vec<String> {
        let mut names: Vec<String> = accounts.map(|n| format!("fake@name{n}")).collect();
        names.sort();
        names
    }

    let all: Vec<usize> = (0..ACCOUNTS).collect();
    at_once("pause", &all);
    assert_eq!(paused(&fleet), names(all.iter().copied()));
    let even: Vec<usize> = all.iter().copied().filter(|n| n % 2 == 0).collect();
    at_once("resume", &even);
    assert_eq!(paused(&fleet), names(all.iter().copied().filter(|n| n % 2 == 1)));
}

#[test]
fn an_accounts_key_never_leaves_runtime_toml() {
    let fleet = fleet_with_accounts(&[("max_failures", "1")]);
    let id = fleet.task("Leaky", &["leak FAKE_API_KEY", "exit 2"]);
    let run = fleet.run_until_idle(&[]).unfinished(&[&format!("{id} blocked (failure-blocked)")]);
    let issue = fleet.show(&id);
    assert_eq!(issue["status"], "blocked", "{}", run.stdout());
    let comments = fleet.comments(&id).join("\n");
    assert!(comments.contains("FAKE_API_KEY=<redacted:FAKE_API_KEY>"), "{comments}");

    let mut everything = vec![
        comments,
        run.stdout(),
        run.stderr.clone(),
        fleet.ws.run(&["config", "show"]).ok().stdout,
        fleet.ws.run(&["--json", "config", "show"]).ok().stdout,
        fleet.ws.run(&["--json", "tasks", "--all"]).ok().stdout,
        fleet.ws.run(&["tasks", "--all"]).ok().stdout,
        fleet.ws.run(&["--json", "show", &id]).ok().stdout,
        fleet.ws.run(&["--json", "stats", "--agents", "--by", "account"]).ok().stdout,
        fleet.ws.run(&["export", "--all"]).ok().stdout,
        std::fs::read_to_string(fleet.home().join("logs/fleet-run.log")).unwrap(),
    ];
    for name in ["ledger.json", "log.jsonl", "events.jsonl", "log.stderr", "task.json"] {
        everything.push(std::fs::read_to_string(fleet.task_file(&id, name)).unwrap());
    }
    let everything = everything.join("\n");
    assert!(
        everything.contains("\"account\": \"one\"") || everything.contains("\"account\":\"one\"")
    );
    for key in [KEY_ONE, KEY_TWO] {
        assert!(!everything.contains(key), "{key} leaked:\n{everything}");
    }
    let config = fleet.ws.json(&["config", "show"]);
    assert_eq!(
        config["config"]["coders"]["fake"]["accounts"][0]["env"]["FAKE_API_KEY"],
        "<redacted>"
    );
}

/// Issue 33: the account whose rate-limit window resets soonest is spent first, and
/// `fleet accounts` shows what each account's CLI reported. Three accounts: `one`'s window
/// resets in 5 h and `three`'s in 3 h (as a run before reported them), `two` reported nothing.
#[test]
fn the_account_whose_window_resets_soonest_is_used_first() {
    let settings = [("max_concurrent", "1")];
    let fleet = Fleet::new(&settings);
    let three =
        "\n[[coders.fake.accounts]]\nname = \"three\"\nenv = { FAKE_ACCOUNT = \"three\" }\n";
    fleet.configure_with(&settings, &format!("{}{three}", accounts()));
    let in_hours =
        |h: i64| (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(h)).to_string();
    let windows = serde_json::json!({
        "fake@one": {"five_hour": {"resets_at": in_hours(5), "utilization_pct": 10.0}},
        "fake@three": {"five_hour": {"resets_at": in_hours(3), "utilization_pct": 20.0}},
    });
    std::fs::create_dir_all(fleet.home().join("state")).unwrap();
    std::fs::write(fleet.home().join("state/windows.json"), windows.to_string()).unwrap();
    // The first attempt's CLI reports its window 40 % used, resetting in an hour.
    let first = fleet.task("First", &["nearlimit 40", "close done"]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(ledger(&fleet, &first)[0]["account"], "three");
    let view = fleet.ws.json(&["accounts"]);
    let rows = view["accounts"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["account"].as_str().unwrap()).collect();
    assert_eq!(names, ["one", "two", "three"], "{view:#}");
    let window = &rows[2]["windows"][0];
    assert_eq!(
        (&window["window"], &window["utilization_pct"]),
        (&"five_hour".into(), &40.0.into())
    );
    assert!(window["resets_at"].as_str().unwrap() < in_hours(2).as_str(), "{view:#}");
    assert_eq!(rows[1]["windows"], serde_json::json!([]));
    // Still the soonest reset with headroom: the next task goes there too, not to `two`.
    let second = fleet.task("Second", &["close done"]);
    fleet.run_until_idle(&[]).ok();
    assert_eq!(ledger(&fleet, &second)[0]["account"], "three");
}
