//! Telling a person that the fleet needs them: a question waiting, a task blocked for good, a
//! coder paused for a fault of the fleet, the queue drained, a merge conflict. The supervisor
//! hands each [`Notice`] to a [`Notifier`], which never blocks it: notices close together are
//! gathered into one [`Message`] (`notify.window_secs`), redacted, and sent by a task of its
//! own to `notify.command` (the message as JSON on its stdin) and `notify.webhook` (a JSON
//! POST, retried with a doubling pause) — see [`deliver`]. Which supervisor events become
//! notices is the supervisor's to say (`crate::supervisor::notices`).

pub mod deliver;

use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::config::NotifyConfig;
use crate::redact::Redactor;

/// Notices waiting to be sent beyond this many are dropped (and counted in the next message):
/// a receiver that hangs must not make the supervisor hold an unbounded queue.
const QUEUE: usize = 1024;

/// One thing a person should know.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    /// One of [`crate::config::notify::NOTICE_KINDS`].
    pub kind: &'static str,
    /// The task it is about, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// One line: what happened and what the person can do.
    pub text: String,
    pub at: Timestamp,
}

/// What one delivery sends: the notices of one window, redacted.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    /// Who sends it: `fleet@host` and the supervisor's instance.
    pub source: String,
    /// One line counting the notices by kind (`2 blocked, 1 question`).
    pub summary: String,
    /// The summary and one line per notice, for chat webhooks that show `text`.
    pub text: String,
    pub notices: Vec<Notice>,
    /// Notices dropped because the queue was full (a receiver too slow for too long).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl Message {
    /// The message of `notices`, every text masked by `redactor`.
    pub fn of(source: &str, notices: Vec<Notice>, dropped: u64, redactor: &Redactor) -> Message {
        let notices: Vec<Notice> = notices
            .into_iter()
            .map(|notice| Notice {
                text: redactor.mask_secrets(&notice.text).into_owned(),
                ..notice
            })
            .collect();
        let summary = summary(&notices);
        let mut text = format!("fleet ({source}): {summary}");
        for notice in &notices {
            let task = notice.task.as_deref().map(|id| format!("{id}: ")).unwrap_or_default();
            text.push_str(&format!("\n- {}: {task}{}", notice.kind, notice.text));
        }
        Message { source: source.to_owned(), summary, text, notices, dropped }
    }
}

/// `2 blocked, 1 question`: each kind with its count, in the order first seen.
fn summary(notices: &[Notice]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for notice in notices {
        match counts.iter_mut().find(|(kind, _)| *kind == notice.kind) {
            Some((_, count)) => *count += 1,
            None => counts.push((notice.kind, 1)),
        }
    }
    counts.iter().map(|(kind, count)| format!("{count} {kind}")).collect::<Vec<_>>().join(", ")
}

/// The settings a message is sent with: the `[notify]` table, and the redactor of the same
/// config (an account's key may be new).
pub type Settings = (NotifyConfig, Redactor);

/// The supervisor's end of the notices: [`Notifier::offer`] never waits.
pub struct Notifier {
    notices: mpsc::Sender<Notice>,
    settings: watch::Sender<Settings>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicU64>,
    sender: tokio::task::JoinHandle<()>,
}

impl Notifier {
    /// Starts the sending task on the current runtime.
    pub fn start(config: NotifyConfig, redactor: Redactor, source: String) -> Notifier {
        let (notices, queue) = mpsc::channel(QUEUE);
        let (settings, watched) = watch::channel((config, redactor));
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = std::sync::Arc::clone(&dropped);
        let sender = tokio::spawn(deliver::run(queue, watched, source, counted));
        Notifier { notices, settings, dropped, sender }
    }

    /// Queues `notice` if its kind is sent; drops it (counted) when the queue is full.
    pub fn offer(&self, notice: Notice) {
        let wanted = {
            let (config, _) = &*self.settings.borrow();
            config.is_enabled() && config.sends(notice.kind)
        };
        if wanted && self.notices.try_send(notice).is_err() {
            self.dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The config reloaded: its `[notify]` table and redactor apply from the next message on.
    pub fn reconfigure(&self, config: &NotifyConfig, redactor: &Redactor) {
        self.settings.send_replace((config.clone(), redactor.clone()));
    }

    /// Sends what is queued at once and waits for it, at most as long as one message may take
    /// (`timeout_secs` for each of its tries and the pauses between them).
    pub async fn finish(self) {
        let most = deliver::longest_delivery(&self.settings.borrow().0);
        drop(self.notices);
        let _ = tokio::time::timeout(most + Duration::from_secs(1), self.sender).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(kind: &'static str, task: &str, text: &str) -> Notice {
        Notice {
            kind,
            task: Some(task.to_owned()),
            text: text.to_owned(),
            at: Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_message_counts_its_notices_and_masks_their_texts() {
        let redactor = Redactor::new(["hunter2-hunter2".to_owned()]);
        let message = Message::of(
            "fleet@box",
            vec![
                notice("blocked", "web-1", "needs the key hunter2-hunter2"),
                notice("question", "web-2", "which database?"),
                notice("blocked", "web-3", "tests fail"),
            ],
            0,
            &redactor,
        );
        assert_eq!(message.summary, "2 blocked, 1 question");
        assert!(!message.text.contains("hunter2"), "{}", message.text);
        assert!(message.text.contains("- question: web-2: which database?"), "{}", message.text);
        assert!(message.notices[0].text.contains("<redacted>"));
    }
}
