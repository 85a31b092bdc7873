//! Issue 32: `fleet mcp`, the queue as an MCP server, driven by a JSON-RPC client over the
//! real process's stdin and stdout — the handshake, the tool list, each tool changing the
//! queue as `fleet show --json` then sees it, an agent's off-task claim refused inside a run,
//! `ask_human` leaving a question `fleet questions` lists, and bad calls named.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{Value, json};

use crate::common::Workspace;

/// A `fleet mcp` process and a client speaking JSON-RPC to it, one message a line.
struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    /// `fleet mcp` on `ws`, with the environment adjusted (an agent's variables) by `env`.
    fn start(ws: &Workspace, env: &[(&str, &str)]) -> Client {
        let mut command = ws.command(&["mcp"]);
        command.envs(env.iter().copied()).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command.spawn().expect("start fleet mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut client = Client { child, stdin, stdout, next_id: 0 };
        let init = client.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": { "name": "test", "version": "1" } }),
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        client.send_line(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        client
    }

    fn send_line(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush()).expect("write");
    }

    /// Sends `text` as it is and reads the answer line.
    fn raw(&mut self, text: &str) -> Value {
        writeln!(self.stdin, "{text}").and_then(|()| self.stdin.flush()).expect("write");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// A request and its answer, whose id must be the request's (notifications get none).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let answer = self.raw(
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string(),
        );
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// A tool call's result: its text, and whether it is an error.
    fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let answer = self.request("tools/call", json!({ "name": tool, "arguments": arguments }));
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}"));
        (text.to_string(), result["isError"] == true)
    }

    /// A tool call that must succeed, its JSON text parsed.
    fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let (text, failed) = self.call(tool, arguments);
        assert!(!failed, "{tool} failed: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// A tool call that must fail; its text.
    fn refused(&mut self, tool: &str, arguments: Value) -> String {
        let (text, failed) = self.call(tool, arguments);
        assert!(failed, "{tool} succeeded: {text}");
        text
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // End of input ends the server.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_queue_changes_through_the_mcp_tools() {
    let ws = Workspace::new();
    let mut mcp = Client::start(&ws, &[]);
    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "ready",
            "show",
            "create",
            "update",
            "comment",
            "close",
            "dep_add",
            "mail_send",
            "mail_inbox",
            "mail_ack",
            "reserve",
            "release_files",
            "ask_human"
        ]
    );
    assert_eq!(mcp.request("ping", json!({}))["result"], json!({}));

    let base = mcp.ok("create", json!({ "title": "schema", "priority": 1 }))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let top = mcp.ok("create", json!({ "title": "-api on top", "deps": [base], "labels": ["x"] }));
    let top = top["id"].as_str().unwrap().to_string();
    assert_eq!(ws.json(&["show", &top])[0]["title"], "-api on top");
    let ready: Vec<String> = mcp
        .ok("ready", json!({}))
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ready, [base.as_str()]);

    mcp.ok("update", json!({ "id": base, "claim": true, "notes": "on it" }));
    mcp.ok("comment", json!({ "id": base, "text": "half done" }));
    let shown = &ws.json(&["show", &base])[0];
    assert_eq!(
        (shown["status"].as_str(), shown["assignee"].as_str()),
        (Some("in_progress"), Some("tester"))
    );
    assert_eq!(shown["comments"][0]["text"], "half done");

    mcp.ok("close", json!({ "id": base, "reason": "done" }));
    assert_eq!(ws.json(&["show", &base])[0]["status"], "closed");
    assert_eq!(ws.ready_ids(), [top.as_str()]);
    let other = ws.create("other", &[]);
    mcp.ok("dep_add", json!({ "issue": top, "depends_on": other }));
    assert!(ws.ready_ids().iter().all(|id| *id != top), "{:?}", ws.ready_ids());
}

#[test]
fn an_agent_mails_reserves_asks_and_stays_on_its_task() {
    let ws = Workspace::new();
    let (mine, theirs) = (ws.create("mine", &[]), ws.create("theirs", &[]));
    let artifacts = ws.home().join("artifacts-of-mine");
    let agent = [
        ("FLEET_TASK_ID", mine.as_str()),
        ("FLEET_ATTEMPT", "01ATTEMPT"),
        ("FLEET_ARTIFACT_DIR", artifacts.to_str().unwrap()),
        // The supervisor's agent actor, over the person's FLEET_ACTOR the agent inherited.
        ("BD_ACTOR", "fleet@h/agent"),
    ];
    let mut mcp = Client::start(&ws, &agent);

    // Another task is not the agent's to claim, exactly as `bd update --claim` says.
    let off_task = mcp.refused("update", json!({ "id": theirs, "claim": true }));
    assert!(off_task.contains(&format!("this agent runs {mine} in a fleet run")), "{off_task}");
    assert_eq!(ws.json(&["show", &theirs])[0]["status"], "open");

    let sent = mcp.ok("mail_send", json!({ "to": theirs, "body": "-v moved the schema" }));
    assert_eq!(
        (sent["from_task"].as_str(), sent["body"].as_str()),
        (Some(mine.as_str()), Some("-v moved the schema"))
    );
    assert_eq!(sent["from"], "fleet@h/agent", "{sent}");
    let mut their_agent = Client::start(&ws, &[("FLEET_TASK_ID", theirs.as_str())]);
    let inbox = their_agent.ok("mail_inbox", json!({}));
    assert_eq!(inbox[0]["id"], sent["id"], "{inbox}");
    their_agent.ok("mail_ack", json!({ "ids": [sent["id"]] }));
    assert_eq!(their_agent.ok("mail_inbox", json!({})), json!([]));

    let reserved =
        mcp.ok("reserve", json!({ "globs": ["src/**"], "reason": "moving", "exclusive": true }));
    assert_eq!(reserved["reservation"]["task"], mine.as_str(), "{reserved}");
    let released = mcp.ok("release_files", json!({}));
    assert_eq!(released["released"].as_array().map(Vec::len), Some(1), "{released}");

    let asked =
        mcp.ok("ask_human", json!({ "question": "which schema?", "details": "Tried: both." }));
    assert!(asked["next"].as_str().unwrap().contains("Exit 0"), "{asked}");
    let qa = std::fs::read_to_string(artifacts.join("Q&A.md")).expect("Q&A.md");
    assert!(qa.contains("## Q: which schema?") && qa.contains("Tried: both."), "{qa}");
    let questions = ws.json(&["questions"]);
    assert_eq!(
        (questions[0]["id"].as_str(), questions[0]["question"].as_str()),
        (Some(mine.as_str()), Some("which schema?"))
    );
    assert_eq!(ws.json(&["show", &mine])[0]["status"], "blocked");
}

#[test]
fn bad_calls_are_named() {
    let ws = Workspace::new();
    let mut mcp = Client::start(&ws, &[]);
    // The newest version this server speaks answers one it does not.
    let old = mcp.request("initialize", json!({ "protocolVersion": "1999-01-01" }));
    assert_eq!(old["result"]["protocolVersion"], "2025-06-18");

    let unknown_tool = mcp.request("tools/call", json!({ "name": "drop_table", "arguments": {} }));
    assert_eq!(unknown_tool["error"]["code"], -32602, "{unknown_tool}");
    assert_eq!(unknown_tool["error"]["message"], "unknown tool: drop_table");
    let unknown_method = mcp.request("resources/list", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    let garbage = mcp.raw("{not json");
    assert_eq!(
        (garbage["id"].clone(), garbage["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );

    let batch = mcp.raw(r#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#);
    assert_eq!(batch["error"]["code"], -32600, "{batch}");
    assert_eq!(mcp.refused("create", json!({})), "create: title is required");
    assert_eq!(
        mcp.refused("close", json!({ "id": "t-1", "why": "x" })),
        "close: unknown argument \"why\" (known: id, reason)"
    );
    assert_eq!(
        mcp.refused("update", json!({ "id": "t-1", "priority": "high" })),
        "update: priority must be an integer, not \"high\""
    );
    let missing = mcp.refused("show", json!({ "id": "t-nothere" }));
    assert!(missing.starts_with("no issue found matching \"t-nothere\""), "{missing}");
    let outside = mcp.refused("ask_human", json!({ "question": "?" }));
    assert!(outside.contains("pass its id"), "{outside}");
}

#[test]
fn setup_registers_the_server_with_each_agent_once_keeping_the_rest() {
    let ws = Workspace::new();
    let project = tempfile::tempdir().expect("project dir");
    let codex_home = ws.home().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(project.path().join(".mcp.json"), r#"{"mcpServers":{"other":{"command":"x"}}}"#)
        .unwrap();
    std::fs::write(codex_home.join("config.toml"), "# mine\nmodel = \"o3\"\n").unwrap();
    let setup = |args: &[&str]| {
        let mut command = ws.command(args);
        command.current_dir(project.path()).env("CODEX_HOME", &codex_home).env("HOME", ws.home());
        crate::common::Run::from(command.output().expect("run setup")).ok()
    };

    let first = setup(&["setup", "claude", "--mcp"]).stdout;
    assert!(first.starts_with("✓ claude: MCP server `fleet` in "), "{first}");
    let again = setup(&["setup", "claude", "--mcp"]).stdout;
    assert!(again.contains("already there"), "{again}");
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".mcp.json")).unwrap())
            .unwrap();
    assert_eq!(claude["mcpServers"]["other"]["command"], "x");
    assert_eq!(claude["mcpServers"]["fleet"]["args"], json!(["mcp"]));
    let exe = claude["mcpServers"]["fleet"]["command"].as_str().unwrap();
    assert!(std::path::Path::new(exe).is_absolute(), "{exe}");

    setup(&["setup", "codex", "--mcp"]);
    let toml = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(
        toml.starts_with("# mine\nmodel = \"o3\"\n") && toml.contains("[mcp_servers.fleet]"),
        "{toml}"
    );
    assert!(toml.contains("args = [\"mcp\"]"), "{toml}");

    // bd's `setup` does the same for gemini and opencode. Gemini CLI needs more, and is told.
    let trust = setup(&["bd", "setup", "gemini", "--mcp"]).stderr;
    assert!(
        trust.contains("note: Gemini CLI starts the server only in folders you trust"),
        "{trust}"
    );
    assert!(!trust.contains("~/.gemini/settings.json"), "{trust}");
    let gemini = std::fs::read_to_string(project.path().join(".gemini/settings.json")).unwrap();
    assert!(gemini.contains("\"mcpServers\""), "{gemini}");
    let global = setup(&["setup", "gemini", "--mcp", "--global", "--json"]);
    assert_eq!(global.json()["notes"].as_array().map(Vec::len), Some(2), "{}", global.stdout);
    assert!(global.stdout.contains("do not read ~/.gemini/settings.json"), "{}", global.stdout);
    setup(&["setup", "opencode", "--mcp", "--json"]);
    let opencode: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("opencode.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(opencode["mcp"]["fleet"]["type"], "local");
    assert_eq!(opencode["mcp"]["fleet"]["command"][1], "mcp");

    let mut unknown = ws.command(&["setup", "cursor", "--mcp"]);
    unknown.current_dir(project.path());
    let unknown = crate::common::Run::from(unknown.output().unwrap()).fails(2);
    assert!(unknown.stderr.contains("no MCP setup for \"cursor\""), "{}", unknown.stderr);
}
