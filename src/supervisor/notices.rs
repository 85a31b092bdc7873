//! Which of the supervisor's [`Event`]s a person is told of (`crate::notify`), and in what
//! words: a blocked agent's question, a task blocked for good, a coder paused for a fault of
//! the fleet (no login, an outage, a CLI that cannot start), new attempts held by a `[budget]`
//! cap, a coder·model or account held by the quality canary, a merge conflict, and the queue
//! drained — told once until an agent starts again.

use std::sync::atomic::{AtomicBool, Ordering};

use jiff::Timestamp;

use super::Event;
use super::outcome::Verdict;
use crate::notify::Notice;

/// The longest line of an agent's or a step's words a notice carries.
const MOST_CHARS: usize = 240;

/// Turns events into notices, remembering what must not be told twice.
#[derive(Debug, Default)]
pub struct Noticer {
    /// The queue was said to be drained, and no agent started since.
    drained_told: AtomicBool,
}

impl Noticer {
    /// The notice `event` gives a person, if any.
    pub fn notice(&self, event: &Event) -> Option<Notice> {
        let task = |id: &str| Some(id.to_owned());
        let (kind, task, text) = match event {
            Event::Claimed { .. } => {
                self.drained_told.store(false, Ordering::Relaxed);
                return None;
            }
            Event::Finished { id, verdict: Verdict::BlockedByAgent, comment } => (
                "question",
                task(id),
                format!(
                    "waits for a person: {} (`fleet questions`, then `fleet answer {id}`)",
                    first_line(comment)
                ),
            ),
            Event::Finished { id, verdict, comment } if is_blocked_for_good(*verdict) => (
                "blocked",
                task(id),
                format!(
                    "blocked ({}): {} (`fleet show {id}`)",
                    verdict.as_str(),
                    first_line(comment)
                ),
            ),
            Event::Paused { coder, account, cause, detail, fix, news: true, .. }
                if cause.is_fault() =>
            {
                let scope = account.as_ref().map_or(coder.clone(), |a| format!("{coder}@{a}"));
                let text =
                    format!("{scope} paused ({}): {} — {fix}", cause.as_str(), first_line(detail));
                ("coder_paused", None, text)
            }
            Event::Canary { subject, detail, fix, .. } => {
                ("canary", None, format!("{subject} paused by the canary: {detail} — {fix}"))
            }
            Event::Budget { scope, detail, until } if !detail.is_empty() => {
                let until = until.map(|u| format!(" until {u}")).unwrap_or_default();
                ("budget", None, format!("{scope} budget holds new attempts{until}: {detail}"))
            }
            Event::Land(report) if report.verdict == "conflict" => (
                "merge_conflict",
                task(&report.id),
                format!("merge conflict on {}: {}", report.lane, first_line(&report.detail)),
            ),
            Event::Waiting { running: 0, .. } => {
                if self.drained_told.swap(true, Ordering::Relaxed) {
                    return None;
                }
                let text = "the queue is drained: no agent runs and nothing ready can start \
                            (`fleet tasks`, `fleet ready`)";
                ("drained", None, text.to_owned())
            }
            _ => return None,
        };
        Some(Notice { kind, task, text, at: Timestamp::now() })
    }
}

/// Whether the task waits for a person after this verdict without having asked one.
fn is_blocked_for_good(verdict: Verdict) -> bool {
    matches!(
        verdict,
        Verdict::NocloseBlocked
            | Verdict::StallBlocked
            | Verdict::ContextBlocked
            | Verdict::FailureBlocked
            | Verdict::SpawnFailed
    )
}

/// The first non-empty line of `text`, cut at [`MOST_CHARS`].
fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    match line.char_indices().nth(MOST_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(verdict: Verdict, comment: &str) -> Event {
        Event::Finished { id: "web-1".into(), verdict, comment: comment.into() }
    }

    #[test]
    fn questions_and_tasks_blocked_for_good_are_told_and_closes_are_not() {
        let noticer = Noticer::default();
        let question =
            noticer.notice(&finished(Verdict::BlockedByAgent, "\nWhich DB?\nmore")).unwrap();
        assert_eq!((question.kind, question.task.as_deref()), ("question", Some("web-1")));
        assert!(question.text.contains("Which DB?") && !question.text.contains("more"));
        let stalled = noticer.notice(&finished(Verdict::StallBlocked, "silent")).unwrap();
        assert_eq!(stalled.kind, "blocked");
        assert!(noticer.notice(&finished(Verdict::Closed, "done")).is_none());
        assert!(noticer.notice(&finished(Verdict::StallRequeued, "again")).is_none());
    }

    #[test]
    fn the_queue_drained_is_told_once_until_an_agent_starts() {
        let noticer = Noticer::default();
        let drained = Event::Waiting { running: 0, slots: 4, changes: 7 };
        assert_eq!(noticer.notice(&drained).unwrap().kind, "drained");
        assert!(noticer.notice(&drained).is_none());
        assert!(noticer.notice(&Event::Waiting { running: 2, slots: 4, changes: 8 }).is_none());
        let claimed = Event::Claimed {
            id: "web-2".into(),
            title: "t".into(),
            coder: "exec".into(),
            model: String::new(),
            account: None,
            attempt: 1,
        };
        assert!(noticer.notice(&claimed).is_none());
        assert!(noticer.notice(&drained).is_some());
    }

    #[test]
    fn long_words_are_cut() {
        let long = "x".repeat(1000);
        assert_eq!(first_line(&long).chars().count(), MOST_CHARS + 1);
    }
}
