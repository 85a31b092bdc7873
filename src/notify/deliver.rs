//! Sending: the notices of one window become one [`Message`], which goes to `notify.command`
//! and `notify.webhook` at once, each in a blocking thread of its own with a time limit, so a
//! receiver that hangs delays only the next message, never the supervisor.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::{Message, Notice, Settings};
use crate::config::NotifyConfig;

/// The first pause before a POST is tried again; each later one is twice the one before.
const FIRST_PAUSE: Duration = Duration::from_secs(1);

/// Gathers, sends, and gathers again until the queue closes.
pub(super) async fn run(
    mut queue: mpsc::Receiver<Notice>,
    settings: watch::Receiver<Settings>,
    source: String,
    dropped: Arc<AtomicU64>,
) {
    while let Some(first) = queue.recv().await {
        let window = Duration::from_secs(settings.borrow().0.window_secs);
        let notices = gather(first, &mut queue, window).await;
        let (config, redactor) = settings.borrow().clone();
        let message = Message::of(&source, notices, dropped.swap(0, Ordering::Relaxed), &redactor);
        for problem in send(&config, &message).await {
            tracing::warn!(%problem, "a notification was not delivered");
        }
    }
}

/// `first` and whatever else comes within `window` of it (or until the queue closes).
async fn gather(
    first: Notice,
    queue: &mut mpsc::Receiver<Notice>,
    window: Duration,
) -> Vec<Notice> {
    let mut notices = vec![first];
    let until = tokio::time::Instant::now() + window;
    loop {
        tokio::select! {
            next = queue.recv() => match next {
                Some(notice) => notices.push(notice),
                None => break,
            },
            () = tokio::time::sleep_until(until) => break,
        }
    }
    notices
}

/// The most one message may take to send: every try of the POST at its time limit and the
/// pauses between them (the command runs meanwhile).
pub fn longest_delivery(config: &NotifyConfig) -> Duration {
    let limit = Duration::from_secs(config.timeout_secs);
    let tries = config.retries.saturating_add(1);
    let pauses = (0..config.retries).map(pause_before_retry).sum::<Duration>();
    limit.saturating_mul(tries).saturating_add(pauses)
}

/// The pause before retry `n` (from 0): 1 s, 2 s, 4 s … at most a minute.
fn pause_before_retry(n: u32) -> Duration {
    FIRST_PAUSE.saturating_mul(2u32.saturating_pow(n)).min(Duration::from_secs(60))
}

/// Sends `message` to the command and the webhook of `config` at once; what went wrong with
/// each, in words (empty: delivered everywhere).
pub async fn send(config: &NotifyConfig, message: &Message) -> Vec<String> {
    let body = match serde_json::to_vec(message) {
        Ok(body) => body,
        Err(error) => return vec![format!("the message could not be written as JSON: {error}")],
    };
    let limit = Duration::from_secs(config.timeout_secs);
    let command = config.command.trim().to_owned();
    let by_command = (!command.is_empty()).then(|| {
        let body = body.clone();
        tokio::task::spawn_blocking(move || run_command(&command, body, limit))
    });
    let webhook = config.webhook.trim().to_owned();
    let retries = config.retries;
    let by_webhook = (!webhook.is_empty()).then(|| {
        tokio::spawn(async move { post_with_retries(webhook, body, limit, retries).await })
    });
    let mut problems = Vec::new();
    if let Some(task) = by_command {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => problems.push(format!("notify.command: {problem}")),
            Err(error) => problems.push(format!("notify.command: {error}")),
        }
    }
    if let Some(task) = by_webhook {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(problem)) => problems.push(format!("notify.webhook: {problem}")),
            Err(error) => problems.push(format!("notify.webhook: {error}")),
        }
    }
    problems
}

/// Runs `sh -c COMMAND` with `body` on its stdin, killed (with everything it started) at
/// `limit`.
fn run_command(command: &str, body: Vec<u8>, limit: Duration) -> Result<(), String> {
    let mut shell = std::process::Command::new("sh");
    shell.args(["-c", command]);
    match crate::process::output_of_input_within(&mut shell, Some(body), limit) {
        Ok(Some(output)) if output.status.success() => Ok(()),
        Ok(Some(output)) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("");
            Err(format!("exited with {}{}", exit_words(output.status), said(last)))
        }
        Ok(None) => Err(format!("killed after {} s (notify.timeout_secs)", limit.as_secs())),
        Err(error) => Err(format!("could not start sh: {error}")),
    }
}

fn exit_words(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "an unknown status".to_owned(),
    }
}

fn said(line: &str) -> String {
    if line.is_empty() { String::new() } else { format!(": {}", line.trim()) }
}

/// How one POST ended.
enum Posted {
    Delivered,
    /// Worth another try: no answer, a time-out, 429 or 5xx.
    TryAgain(String),
    /// Not worth another: the receiver refused the message (another 4xx).
    Refused(String),
}

/// POSTs `body` until it is delivered, refused, or `retries` more tries failed.
async fn post_with_retries(
    url: String,
    body: Vec<u8>,
    limit: Duration,
    retries: u32,
) -> Result<(), String> {
    let url = Arc::new(url);
    let body = Arc::new(body);
    let mut tries = 0;
    loop {
        let (url, body) = (Arc::clone(&url), Arc::clone(&body));
        let posted = tokio::task::spawn_blocking(move || post_once(&url, &body, limit))
            .await
            .unwrap_or_else(|error| Posted::TryAgain(error.to_string()));
        match posted {
            Posted::Delivered => return Ok(()),
            Posted::Refused(why) => return Err(why),
            Posted::TryAgain(why) if tries >= retries => {
                let tries = match tries + 1 {
                    1 => "1 try".to_owned(),
                    n => format!("{n} tries"),
                };
                return Err(format!("{why} (gave up after {tries})"));
            }
            Posted::TryAgain(why) => {
                tracing::debug!(%why, tries, "the webhook will be tried again");
                tokio::time::sleep(pause_before_retry(tries)).await;
                tries += 1;
            }
        }
    }
}

/// One POST of `body` as JSON to `url`, given up at `limit`. The address is not repeated in
/// what is said about it: a webhook's path is often its secret.
fn post_once(url: &str, body: &[u8], limit: Duration) -> Posted {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(limit))
        .http_status_as_error(false)
        .build()
        .into();
    let sent = agent.post(url).header("Content-Type", "application/json").send(body);
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            match status {
                200..=299 => Posted::Delivered,
                429 | 500..=599 => Posted::TryAgain(format!("the receiver answered HTTP {status}")),
                _ => Posted::Refused(format!("the receiver refused the message: HTTP {status}")),
            }
        }
        Err(ureq::Error::Timeout(_)) => Posted::TryAgain(format!(
            "no answer within {} s (notify.timeout_secs)",
            limit.as_secs()
        )),
        Err(error) => Posted::TryAgain(error_words(&error).replace(url, "<notify.webhook>")),
    }
}

/// A transport error in words, without the address.
fn error_words(error: &ureq::Error) -> String {
    match error {
        ureq::Error::Io(io) => format!("could not reach the receiver: {io}"),
        ureq::Error::HostNotFound => "the receiver's host name is not known".to_owned(),
        ureq::Error::ConnectionFailed => "could not connect to the receiver".to_owned(),
        other => {
            format!("the POST failed: {}", other.to_string().replace(|c: char| c.is_control(), " "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_takes_at_most_every_try_and_pause() {
        let config = NotifyConfig { timeout_secs: 10, retries: 3, ..NotifyConfig::default() };
        // 4 tries of 10 s and pauses of 1 + 2 + 4 s.
        assert_eq!(longest_delivery(&config), Duration::from_secs(47));
        assert_eq!(pause_before_retry(10), Duration::from_secs(60));
    }
}
