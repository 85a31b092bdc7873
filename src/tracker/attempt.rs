//! The rule that keeps an agent on its task: inside a `fleet run` attempt, the agent has
//! exactly one task, and a request that would take another task in progress is refused.
//!
//! A front end that acts for an agent of a running attempt (the CLI when `FLEET_TASK_ID` is
//! set, the MCP server for its agent) checks each request with [`stay_on_task`] before
//! submitting it, on a read of the queue (ids may be partial). Refused: claiming another task
//! (`bd update X --claim`, `bd claim X`, `fleet claim X`), claiming the next ready one
//! (`bd ready --claim`, `fleet claim` with no id), and setting another task `in_progress`.
//! Nothing is written, so nothing is left in progress without a supervisor behind it.

use super::{Refusal, Request};
use crate::model::Status;
use crate::store::Reader;

/// Refuses `request` if it takes a task other than `task` (the agent's own) in progress.
pub fn stay_on_task(reader: &Reader, request: &Request, task: &str) -> Result<(), Refusal> {
    let other = |input: &str| -> Result<Option<String>, Refusal> {
        let id = reader.resolve(input).unwrap_or_else(|_| input.to_string());
        Ok((id != task).then_some(id))
    };
    let wanted = match request {
        Request::Claim { id } => other(id)?,
        Request::ClaimNext { .. } => Some("the next ready task".to_string()),
        Request::Update(updates) => {
            let mut wanted = None;
            for update in updates {
                let takes = update.claim || update.patch.status == Some(Status::InProgress);
                if takes && let Some(id) = other(&update.id)? {
                    wanted = Some(id);
                    break;
                }
            }
            wanted
        }
        _ => None,
    };
    match wanted {
        Some(wanted) => Err(Refusal::OffTask { task: task.to_string(), wanted }),
        None => Ok(()),
    }
}
