//! The tracker layer: every request that changes the queue, with every rule of that request
//! inside, turned into ops on a [`Writer`].
//!
//! Front ends — the fleet CLI, the `bd` personality, the supervisor, the importer, and next
//! sync and the socket server — parse and render; they never build an [`OpKind`] themselves.
//! They hand this layer a plain request (a struct or a few arguments) and get back the result
//! or a typed [`Refusal`]. So a rule is written once and holds on every path: setting a status
//! to closed by any route is a close, with the close guards; the edge rules of `dep add` hold
//! for `fleet dep add`, `bd dep add` and `--deps` alike; "is this id foreign?" has one answer.
//!
//! Dependencies point one way: model ← op ← store ← tracker ← {cli, supervisor, import}.
//! The store applies ops and keeps its own invariants (an edge never closes a cycle, a claim is
//! a compare-and-set); the rules that depend on what a person or an agent asked for live here.
//!
//! [`OpKind`]: crate::op::OpKind

mod attempt;
pub mod claims;
mod close;
mod coordination;
mod create;
mod deps;
mod import;
mod issue;
mod land;
mod reclaim;
mod redaction;
mod rename;
mod request;
mod sections;
mod settings;
mod settle;

pub use attempt::stay_on_task;
pub use close::{CloseRequest, close, close_guard};
pub use coordination::{
    Conflict, MailRequest, ReserveRequest, Reserved, ack_mail, release_files, reserve, send_mail,
};
pub use create::{CreateRequest, Created, DepSpec, create};
pub use deps::{add_dependency, edge_at, relate, remove_dependency, resolve_target, set_parent};
pub(crate) use import::write_import;
pub use import::{ImportBatch, ImportWritten, import_new};
pub use issue::{
    MetadataEdit, UpdateRequest, claim, claim_next, comment, delete, label_add, label_remove,
    put_record, release, reopen, update,
};
pub use land::{LandStep, awaits_landing};
pub use reclaim::{Abandoned, ReclaimRequest, reclaim};
pub use redaction::{environment_redactor, inbound_redactor, set_inbound_redactor};
pub use rename::{rename_plan, rename_prefix};

pub use request::{
    CloseOutcome, CloseRefused, Deleted, LabelChange, NewEdge, Reply, Request, Summary,
    WireRefusal, execute, execute_in,
};
pub use sections::{create_policy, missing_sections, required_sections};
pub use settings::set_config;
pub use settle::{Settlement, is_stale, register, settle};

use crate::store::StoreError;

/// Why the tracker refused a request. Each names the issue and reads as the error a person
/// sees; [`Refusal::is_close_guard`] tells the refusals that `--force` overrides.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("cannot close {0}: issue is pinned")]
    Pinned(String),
    #[error("cannot close {id}: epic has {} open children [{}]", children.len(), children.join(", "))]
    OpenChildren { id: String, children: Vec<String> },
    #[error("cannot close {id}: blocked by open issues [{}]", blockers.join(", "))]
    Blocked { id: String, blockers: Vec<String> },
    #[error("{0}")]
    Invalid(String),
    /// An agent of a running attempt tried to take another task (`super::stay_on_task`).
    #[error(
        "refused: this agent runs {task} in a fleet run and works on {task} only; {wanted} is \
         left for the supervisor to hand out (file new work with \
         `bd create \"…\" --deps discovered-from:{task}`, or say what you need with \
         `bd mail send` or `bd comment {task} …`)"
    )]
    OffTask { task: String, wanted: String },
    /// A settlement whose task changed after it was decided (`settle`): decide again.
    #[error("{0} changed while the outcome of its attempt was being recorded")]
    Stale(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Refusal {
    /// A close guard: `--force` closes anyway.
    pub fn is_close_guard(&self) -> bool {
        matches!(self, Refusal::Pinned(_) | Refusal::OpenChildren { .. } | Refusal::Blocked { .. })
    }

    /// The id could not be resolved (unknown or ambiguous).
    pub fn is_unresolved(&self) -> bool {
        matches!(
            self,
            Refusal::Store(
                StoreError::NotFound(_) | StoreError::Deleted(_) | StoreError::Ambiguous { .. }
            )
        )
    }

    /// A refusal that must abort the whole transaction (the store failed), as opposed to a
    /// refusal of one item that a batch may report and go on from.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Refusal::Store(error) if !error.is_refusal())
    }
}

impl From<Refusal> for StoreError {
    /// Lets a transaction body use `?` on a request: a store error stays itself, any other
    /// refusal becomes [`StoreError::Refused`], carrying the refusal itself.
    fn from(refusal: Refusal) -> StoreError {
        match refusal {
            Refusal::Store(error) => error,
            other => StoreError::Refused(Box::new(other)),
        }
    }
}
