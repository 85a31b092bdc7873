//! No secret enters the queue: every text a request carries into an issue — titles,
//! descriptions, design, acceptance criteria, notes, close and reopen reasons, comments, and
//! the strings of bd's metadata — passes through this process's inbound [`Redactor`] before an
//! op is made of it. So the store, `fleet show`, `fleet export` and the git journal (which
//! `fleet sync` pushes to every remote) never hold a key an agent pasted into a comment.
//!
//! The inbound redactor masks the known token shapes and the values of the secret-looking
//! variables this process knows of: its own environment and, when `$FLEET_HOME` is set (as it
//! is for every agent), the `[coders.*]` and account variables of that home's `runtime.toml`.
//! A process that serves a workspace (`fleet run`, `fleet serve`) sets it to the redactor of the
//! config it loaded ([`set_inbound_redactor`]), and again on each reload. A command sending
//! its request to that server first masks what its own environment knows ([`Request::redact`]),
//! so an agent's variables are masked even when the server never saw them.
//!
//! Imports are left as their source has them (a person's file, copied whole); `fleet doctor`
//! reports secrets already stored.

use std::sync::{PoisonError, RwLock};

use super::{CloseRequest, CreateRequest, Request, Settlement, UpdateRequest};
use crate::op::IssuePatch;
use crate::redact::Redactor;

/// The redactor requests pass through in this process; `None` until first needed or set.
static INBOUND: RwLock<Option<Redactor>> = RwLock::new(None);

/// The redactor every request's text passes through in this process (built on first use; see
/// the module documentation).
pub fn inbound_redactor() -> Redactor {
    if let Some(redactor) = INBOUND.read().unwrap_or_else(PoisonError::into_inner).as_ref() {
        return redactor.clone();
    }
    let built = default_inbound();
    let mut slot = INBOUND.write().unwrap_or_else(PoisonError::into_inner);
    slot.get_or_insert(built).clone()
}

/// Makes `redactor` the one requests pass through in this process from now on (a server's
/// config, loaded or reloaded).
pub fn set_inbound_redactor(redactor: Redactor) {
    *INBOUND.write().unwrap_or_else(PoisonError::into_inner) = Some(redactor);
}

/// This process's environment and, when `$FLEET_HOME` names a home with a readable
/// `runtime.toml`, its coders' and accounts' variables.
fn default_inbound() -> Redactor {
    let home = crate::env::fleet_home();
    let config = home.and_then(|home| {
        crate::config::RuntimeConfig::load(&std::path::Path::new(&home).join("runtime.toml")).ok()
    });
    match config {
        Some(config) => config.redactor(),
        None => environment_redactor(),
    }
}

/// The secrets of this process's environment (what a command sending its request to a server
/// knows and the server may not).
pub fn environment_redactor() -> Redactor {
    let vars = crate::env::all();
    Redactor::from_env(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// `text` with its secrets masked in place (nothing else changed).
fn mask(redactor: &Redactor, text: &mut String) {
    if let std::borrow::Cow::Owned(clean) = redactor.mask_secrets(text) {
        *text = clean;
    }
}

fn mask_opt(redactor: &Redactor, text: &mut Option<String>) {
    if let Some(text) = text {
        mask(redactor, text);
    }
}

impl IssuePatch {
    /// Masks the secrets in every text field the patch sets.
    pub fn redact(&mut self, redactor: &Redactor) {
        for field in [
            &mut self.title,
            &mut self.description,
            &mut self.design,
            &mut self.acceptance_criteria,
            &mut self.notes,
            &mut self.append_notes,
            &mut self.external_ref,
        ] {
            mask_opt(redactor, field);
        }
    }
}

impl CreateRequest {
    /// Masks the secrets in the new issue's texts and metadata.
    pub fn redact(&mut self, redactor: &Redactor) {
        for field in [
            &mut self.title,
            &mut self.description,
            &mut self.design,
            &mut self.acceptance_criteria,
            &mut self.notes,
            &mut self.external_ref,
        ] {
            mask(redactor, field);
        }
        if let Some(metadata) = &mut self.metadata {
            redactor.redact_json(metadata);
        }
    }
}

impl UpdateRequest {
    /// Masks the secrets in the texts and metadata the update sets.
    pub fn redact(&mut self, redactor: &Redactor) {
        self.patch.redact(redactor);
        if let Some(metadata) = &mut self.metadata.replace {
            redactor.redact_json(metadata);
        }
        for (_, value) in &mut self.metadata.set {
            redactor.redact_json(value);
        }
    }
}

impl CloseRequest {
    /// Masks the secrets in the close reason.
    pub fn redact(&mut self, redactor: &Redactor) {
        mask(redactor, &mut self.reason);
    }
}

impl Settlement {
    /// Masks the secrets in what the settlement writes (never in the task it was decided on,
    /// which it is compared with).
    pub fn redact(&mut self, redactor: &Redactor) {
        if let Some(close) = &mut self.close {
            close.redact(redactor);
        }
        if let Some(patch) = &mut self.patch {
            patch.redact(redactor);
        }
        mask_opt(redactor, &mut self.comment);
    }
}

impl Request {
    /// Masks the secrets in every text the request carries into the queue.
    pub fn redact(&mut self, redactor: &Redactor) {
        match self {
            Request::Create(create) => create.redact(redactor),
            Request::Update(updates) => updates.iter_mut().for_each(|u| u.redact(redactor)),
            Request::Close(closes) => closes.iter_mut().for_each(|c| c.redact(redactor)),
            Request::Reopen { reason, .. } => mask_opt(redactor, reason),
            Request::Comment { text, .. } => mask(redactor, text),
            Request::Claim { .. }
            | Request::ClaimNext { .. }
            | Request::Release { .. }
            | Request::DepAdd { .. }
            | Request::DepRemove { .. }
            | Request::Relate { .. }
            | Request::DepAddAll(_)
            | Request::Label { .. }
            | Request::Delete { .. }
            | Request::RenamePrefix { .. }
            | Request::SetConfig(_) => {}
            Request::Land(step) => step.redact(redactor),
            Request::Reclaim(reclaim) => {
                reclaim.tasks.iter_mut().for_each(|task| mask(redactor, &mut task.comment));
            }
            Request::Settle(settlement) => settlement.redact(redactor),
            Request::Register { .. } | Request::MailAck { .. } | Request::ReleaseFiles { .. } => {}
            Request::MailSend(mail) => mask(redactor, &mut mail.body),
            Request::Reserve(reserve) => mask(redactor, &mut reserve.reason),
        }
    }
}

/// `text` with the inbound redactor's secrets masked.
pub(super) fn redacted(text: &str) -> String {
    inbound_redactor().mask_secrets(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_of_a_request_is_masked() {
        let redactor = Redactor::new(["account-key-0123456789".to_string()]);
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789";
        let mut create = Request::Create(Box::new(CreateRequest {
            title: format!("uses {key}"),
            description: "account-key-0123456789".into(),
            metadata: Some(serde_json::json!({"note": key, "token": "x"})),
            ..CreateRequest::default()
        }));
        create.redact(&redactor);
        let text = serde_json::to_string(&create).unwrap();
        assert!(!text.contains(key) && !text.contains("account-key-0123456789"), "{text}");
        let mut close = Request::Close(vec![CloseRequest {
            reason: format!("done with {key}"),
            ..CloseRequest::default()
        }]);
        close.redact(&redactor);
        assert!(!serde_json::to_string(&close).unwrap().contains(key));
        let patch = IssuePatch { notes: Some(key.into()), ..IssuePatch::default() };
        let mut update = Request::Update(vec![UpdateRequest::edit("t-1", patch)]);
        update.redact(&redactor);
        assert!(!serde_json::to_string(&update).unwrap().contains(key));
        let mut comment = Request::Comment { id: "t-1".into(), author: None, text: key.into() };
        comment.redact(&redactor);
        assert!(!serde_json::to_string(&comment).unwrap().contains(key));
    }
}
