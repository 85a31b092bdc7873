//! A person is told when the fleet needs them (`[notify]`): the notices of a run reach the
//! command and the webhook as one JSON message with every secret masked, a receiver answering
//! 500 gets the message again, and a receiver that does not answer holds up nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};

use serde_json::Value;

use crate::harness::{DEADLINE, Fleet};

/// The value of a secret-looking variable the coder is given.
const SECRET: &str = "hunter2-very-private-value";

/// A local HTTP receiver: each request's body is sent on `bodies`; the answer to each is the
/// next status the test sends on the channel returned with it.
struct HttpReceiver {
    url: String,
    bodies: Receiver<String>,
}

fn receiver() -> (HttpReceiver, Sender<u16>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
    let url = format!("http://{}/hook/T0/secret-path", listener.local_addr().unwrap());
    let (body_tx, bodies) = channel();
    let (status_tx, statuses) = channel::<u16>();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let body = read_request(&stream);
            if body_tx.send(body).is_err() {
                return;
            }
            let Ok(status) = statuses.recv() else { return };
            answer(stream, status);
        }
    });
    (HttpReceiver { url, bodies }, status_tx)
}

fn read_request(stream: &TcpStream) -> String {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("read the body");
    String::from_utf8(body).expect("a UTF-8 body")
}

fn answer(mut stream: TcpStream, status: u16) {
    let reply = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = stream.write_all(reply.as_bytes());
}

impl HttpReceiver {
    fn next_body(&self) -> Value {
        let body = self.bodies.recv_timeout(DEADLINE).expect("a POST reaches the receiver");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}

fn notify_table(url: &str, extra: &str) -> String {
    format!(
        "\n[coders.fake.env]\nDEPLOY_TOKEN = {SECRET:?}\n\n[notify]\nwebhook = {url:?}\n{extra}"
    )
}

fn kinds(message: &Value) -> Vec<(String, String)> {
    let notices = message["notices"].as_array().expect("notices");
    notices
        .iter()
        .map(|n| (n["kind"].as_str().unwrap().to_owned(), n["task"].as_str().unwrap_or("").into()))
        .collect()
}

#[test]
fn a_runs_notices_reach_the_command_and_the_webhook_as_one_masked_message() {
    let fleet = Fleet::new(&[]);
    let (receiver, statuses) = receiver();
    let out = fleet.home().join("notices.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", out.display(), out.display());
    // A long window: everything of the run goes out as one message when it stops.
    let extra = format!("command = {command:?}\nwindow_secs = 600\nretries = 2\n");
    fleet.configure_with(&[("max_failures", "1")], &notify_table(&receiver.url, &extra));
    let asking = fleet.task("Pick a database", &[&format!("block Which one? The key is {SECRET}")]);
    let failing = fleet.task("Deploy", &["exit 2"]);
    let done = fleet.task("Tidy", &["close tidied"]);

    let supervisor = fleet.start(&["--until-idle"]);
    // The receiver fails the first POST: the same message comes again.
    let first = receiver.next_body();
    statuses.send(500).unwrap();
    let second = receiver.next_body();
    statuses.send(200).unwrap();
    let mut unfinished = [
        format!("{asking} blocked (blocked-by-agent)"),
        format!("{failing} blocked (failure-blocked)"),
    ];
    unfinished.sort();
    supervisor.wait().unfinished(&[&unfinished[0], &unfinished[1]]);
    assert_eq!(first, second, "a retry sends the same message");

    let told = kinds(&second);
    assert!(told.contains(&("question".into(), asking.clone())), "{second:#}");
    assert!(told.contains(&("blocked".into(), failing.clone())), "{second:#}");
    assert!(!told.iter().any(|(_, task)| *task == done), "a close is not news: {second:#}");
    assert!(second["summary"].as_str().unwrap().contains("1 question"), "{second:#}");
    assert!(second["text"].as_str().unwrap().contains(&asking), "chat webhooks show `text`");

    let by_command = std::fs::read_to_string(&out).expect("the command wrote its stdin");
    let commanded: Value = serde_json::from_str(by_command.trim()).expect("one JSON message");
    assert_eq!(kinds(&commanded), told, "the command gets the same message");
    for text in [second.to_string(), by_command] {
        assert!(!text.contains(SECRET), "the secret leaked: {text}");
        assert!(!text.contains("secret-path"), "the webhook's address is not repeated: {text}");
    }
}

#[test]
fn a_receiver_that_does_not_answer_holds_up_no_task() {
    let fleet = Fleet::new(&[]);
    let (receiver, statuses) = receiver();
    // No window: the question goes out at once, and its POST hangs while the run goes on.
    let extra = "window_secs = 0\ntimeout_secs = 600\nretries = 0\n";
    fleet.configure_with(&[("max_concurrent", "1")], &notify_table(&receiver.url, extra));
    let asking = fleet.task_with("Ask first", &["block Which one?"], &["-p", "0"]);
    let later = fleet.task_with("Then tidy", &["close tidied"], &["-p", "2"]);

    let supervisor = fleet.start(&["--json"]);
    let question = receiver.next_body();
    assert_eq!(kinds(&question), [("question".to_owned(), asking.clone())]);
    // The POST has no answer yet; the next task runs and closes all the same.
    supervisor.wait_event("finished", |e| e["id"] == later.as_str() && e["verdict"] == "closed");
    statuses.send(200).unwrap();
    let drained = receiver.next_body();
    assert_eq!(kinds(&drained), [("drained".to_owned(), String::new())]);
    statuses.send(200).unwrap();
    supervisor.stop();
    assert_eq!(fleet.show(&later)["status"], "closed");
}

#[test]
fn notify_test_says_what_each_receiver_did() {
    let fleet = Fleet::new(&[]);
    let nowhere = fleet.ws.run(&["notify", "test"]).fails(1);
    assert!(nowhere.stderr.contains("sends notices nowhere"), "{}", nowhere.stderr);
    assert!(nowhere.stderr.contains("[notify]"), "the hint names the table: {}", nowhere.stderr);

    let out = fleet.home().join("test.json");
    let command = format!("cat > '{}'", out.display());
    fleet.configure_with(&[], &format!("\n[notify]\ncommand = {command:?}\n"));
    let sent = fleet.ws.run(&["notify", "test"]).ok();
    assert_eq!(sent.stdout.trim(), "✓ delivered to notify.command");
    let message: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(message["notices"][0]["kind"], "test");

    fleet.configure_with(&[], "\n[notify]\ncommand = \"echo 'no route' >&2; exit 3\"\n");
    let failed = fleet.ws.run(&["notify", "test"]).fails(1);
    assert!(
        failed.stdout.contains("notify.command: exited with status 3: no route"),
        "{}",
        failed.stdout
    );
}
