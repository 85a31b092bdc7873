//! The `[notify]` table of `runtime.toml`: how a person is told that the fleet needs them
//! (`crate::notify`).
//!
//! ```toml
//! [notify]
//! command = "notify-send fleet \"$(jq -r .summary)\""  # run by `sh -c`, the JSON on stdin
//! webhook = "https://hooks.example.com/T000/B000"      # a JSON POST to this address
//! window_secs = 10     # events this close together go out as one message
//! timeout_secs = 10    # a command or a POST taking longer is given up (and killed)
//! retries = 3          # a failed POST (no answer, 5xx, 429) is tried again this often
//! events = []          # the kinds sent (empty: all): question, blocked, coder_paused,
//!                      # budget, canary, drained, merge_conflict
//! ```

use serde::{Deserialize, Serialize};

/// The field names of the `[notify]` table.
pub const NOTIFY_KEYS: [&str; 6] =
    ["command", "webhook", "window_secs", "timeout_secs", "retries", "events"];

/// The kinds of notice fleet sends (`notify.events`).
pub const NOTICE_KINDS: [&str; 7] =
    ["question", "blocked", "coder_paused", "budget", "canary", "drained", "merge_conflict"];

/// Where and how notices go; with neither `command` nor `webhook`, nowhere.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// A shell command (`sh -c`) given each message as JSON on its stdin.
    pub command: String,
    /// An `http://` or `https://` address each message is POSTed to as JSON.
    pub webhook: String,
    /// Notices this many seconds apart or closer are sent together.
    pub window_secs: u64,
    /// The most a command or one POST may take.
    pub timeout_secs: u64,
    /// How often a failed POST is tried again (with a doubling pause from 1 s).
    pub retries: u32,
    /// The kinds sent; empty: every kind.
    pub events: Vec<String>,
}

impl Default for NotifyConfig {
    fn default() -> NotifyConfig {
        NotifyConfig {
            command: String::new(),
            webhook: String::new(),
            window_secs: 10,
            timeout_secs: 10,
            retries: 3,
            events: Vec::new(),
        }
    }
}

impl NotifyConfig {
    /// Whether notices go anywhere.
    pub fn is_enabled(&self) -> bool {
        !self.command.trim().is_empty() || !self.webhook.trim().is_empty()
    }

    /// Whether notices of `kind` are sent.
    pub fn sends(&self, kind: &str) -> bool {
        self.events.is_empty() || self.events.iter().any(|wanted| wanted == kind)
    }

    /// What is wrong with the table, in words naming the key and the fix.
    pub fn problem(&self) -> Option<String> {
        let webhook = self.webhook.trim();
        if !webhook.is_empty()
            && !webhook.starts_with("http://")
            && !webhook.starts_with("https://")
        {
            return Some(
                "notify.webhook must be an http:// or https:// address (empty: no webhook)"
                    .to_owned(),
            );
        }
        if self.timeout_secs == 0 {
            return Some("notify.timeout_secs must be at least 1".to_owned());
        }
        if let Some(kind) = self.events.iter().find(|kind| !NOTICE_KINDS.contains(&kind.as_str())) {
            return Some(format!(
                "notify.events holds {kind:?}: the kinds are {}",
                NOTICE_KINDS.join(", ")
            ));
        }
        None
    }
}

/// `address` as `fleet config show` prints it: the scheme and host, the rest masked.
pub fn shown_address(address: &str) -> String {
    let Some((scheme, rest)) = address.split_once("://") else { return address.to_owned() };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    if host.len() == rest.len() {
        return format!("{scheme}://{host}");
    }
    format!("{scheme}://{host}/{}", crate::redact::REDACTED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_is_shown_by_its_host() {
        let shown = shown_address("https://hooks.slack.com/services/T0/B0/XXXX");
        assert_eq!(shown, "https://hooks.slack.com/<redacted>");
        assert_eq!(
            shown_address("https://user:pw@example.com/x"),
            "https://example.com/<redacted>"
        );
        assert_eq!(shown_address("http://localhost:8080"), "http://localhost:8080");
        assert_eq!(shown_address(""), "");
    }

    #[test]
    fn a_bad_table_is_named_with_its_fix() {
        let with = |edit: fn(&mut NotifyConfig)| {
            let mut config = NotifyConfig::default();
            edit(&mut config);
            config.problem()
        };
        assert_eq!(with(|_| {}), None);
        assert!(with(|c| c.webhook = "hooks.example.com".into()).unwrap().contains("https://"));
        assert!(with(|c| c.timeout_secs = 0).unwrap().contains("at least 1"));
        assert!(
            with(|c| c.events = vec!["blocked".into(), "nope".into()]).unwrap().contains("nope")
        );
        assert!(!NotifyConfig::default().is_enabled());
        assert!(with(|c| c.events = vec!["drained".into()]).is_none());
    }
}
