//! Messages and file reservations as requests: the rules of `bd mail send|ack`,
//! `bd reserve` and `bd release-files` (and of `fleet mail`, and the MCP tools to come),
//! turned into ops (`OpKind::Mail`, `MailAck`, `Reserve`, `ReleaseFiles`).
//!
//! - A message goes to a task (its agent, now or at its next attempt) when its recipient names
//!   one, else to a person or actor by name. Its thread is the task it is about: `about`, else
//!   the recipient task, else the sender's task. An empty body is refused.
//! - A reservation belongs to a task (and to the attempt that made it, when an agent did):
//!   its globs are checked, its time to live becomes an instant, and the reply names the live
//!   reservations of other tasks it overlaps (reservations are advisory: it is granted anyway).
//! - The end of an attempt (`super::settle`) releases the task's reservations.

use serde::{Deserialize, Serialize};

use super::Refusal;
use crate::coord::{Message, Reservation, glob, short_id};
use crate::op::OpKind;
use crate::store::{StoreError, Writer};

/// `bd mail send`: a message from the actor (an agent of `from_task`, or a person).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MailRequest {
    /// A task id (or the unique part of one), or a person's or actor's name.
    pub to: String,
    pub body: String,
    /// The task whose agent sends it (`FLEET_TASK_ID` inside a run).
    pub from_task: Option<String>,
    /// The task the message is about, when not the recipient's or the sender's.
    pub about: Option<String>,
}

/// `bd reserve`: files reserved for a task's attempt.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReserveRequest {
    pub task: String,
    /// The attempt reserving them (`FLEET_ATTEMPT` inside a run), if any.
    pub attempt: String,
    pub globs: Vec<String>,
    pub exclusive: bool,
    pub reason: String,
    /// Seconds until it lapses by itself.
    pub ttl_secs: Option<u64>,
}

/// A reservation made, and the live reservations of other tasks it overlaps: (reservation id,
/// task, our glob, their glob, whether theirs is exclusive).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reserved {
    pub reservation: Reservation,
    pub conflicts: Vec<Conflict>,
}

/// Another task's live reservation that names files a new one names too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    pub reservation: String,
    pub task: String,
    pub glob: String,
    pub theirs: String,
    pub exclusive: bool,
}

/// Sends a message; returns it as stored.
pub fn send_mail(writer: &mut Writer<'_>, request: &MailRequest) -> Result<Message, Refusal> {
    if request.body.trim().is_empty() {
        return Err(Refusal::Invalid("the message is empty: say something".into()));
    }
    let to = request.to.trim();
    if to.is_empty() || to.chars().any(char::is_whitespace) {
        return Err(Refusal::Invalid(format!(
            "{:?} is no recipient: name a task id or a person (one word)",
            request.to
        )));
    }
    let (to, to_task) = match writer.resolve(to) {
        Ok(id) => (id, true),
        Err(StoreError::NotFound(_)) => (to.to_string(), false),
        Err(error) => return Err(error.into()),
    };
    let from_task = request.from_task.as_deref().map(|t| writer.resolve(t)).transpose()?;
    let about = request.about.as_deref().map(|t| writer.resolve(t)).transpose()?;
    let thread = about.or_else(|| to_task.then(|| to.clone())).or_else(|| from_task.clone());
    let message = Message {
        id: short_id("m"),
        to,
        to_task,
        thread,
        from_task,
        body: request.body.trim_end().to_string(),
        from: String::new(),
        at: None,
        stamp: None,
        acked_by: None,
        acked_at: None,
    };
    let id = message.id.clone();
    writer.apply(OpKind::Mail { message: Box::new(message) })?;
    stored_message(writer, &id)
}

/// Acknowledges each message (its whole id, or the unique end of one); returns their ids.
pub fn ack_mail(writer: &mut Writer<'_>, inputs: &[String]) -> Result<Vec<String>, Refusal> {
    let messages = writer.read_messages()?;
    let mut acked = Vec::with_capacity(inputs.len());
    for input in inputs {
        let id = resolve_message(&messages, input)?;
        writer.apply(OpKind::MailAck { message: id.clone() })?;
        acked.push(id);
    }
    Ok(acked)
}

/// Reserves files for a task.
pub fn reserve(writer: &mut Writer<'_>, request: &ReserveRequest) -> Result<Reserved, Refusal> {
    let task = writer.resolve(&request.task)?;
    if request.globs.is_empty() {
        return Err(Refusal::Invalid(
            "name the files to reserve (globs such as src/store/**)".into(),
        ));
    }
    for pattern in &request.globs {
        glob::check(pattern).map_err(Refusal::Invalid)?;
    }
    if request.reason.trim().is_empty() {
        return Err(Refusal::Invalid("say why with --reason: others read it".into()));
    }
    let now = writer.now();
    let expires_at = match request.ttl_secs {
        Some(0) => return Err(Refusal::Invalid("--ttl must be longer than nothing".into())),
        Some(secs) => {
            Some(now + jiff::SignedDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX / 2)))
        }
        None => None,
    };
    let reservation = Reservation {
        id: short_id("r"),
        task: task.clone(),
        attempt: request.attempt.clone(),
        globs: request.globs.iter().map(|g| g.trim().to_string()).collect(),
        exclusive: request.exclusive,
        reason: request.reason.trim().to_string(),
        expires_at,
        holder: String::new(),
        at: None,
    };
    let conflicts = conflicts_with(writer, &reservation, now)?;
    let id = reservation.id.clone();
    writer.apply(OpKind::Reserve { reservation: Box::new(reservation) })?;
    let reservation = writer
        .reservations_in_txn()?
        .into_iter()
        .find(|r| r.id == id)
        .ok_or_else(|| StoreError::NotFound(id.clone()))?;
    Ok(Reserved { reservation, conflicts })
}

/// Releases the reservations of `task` (those of `ids`, or all); returns the ids released.
pub fn release_files(
    writer: &mut Writer<'_>,
    task: &str,
    ids: &[String],
) -> Result<Vec<String>, Refusal> {
    let task = writer.resolve(task)?;
    let held: Vec<String> = writer
        .reservations_in_txn()?
        .into_iter()
        .filter(|r| r.task == task)
        .map(|r| r.id)
        .collect();
    if let Some(unknown) = ids.iter().find(|id| !held.contains(id)) {
        return Err(Refusal::Invalid(format!(
            "{task} holds no reservation {unknown}: `fleet task {task}` lists its reservations"
        )));
    }
    let released: Vec<String> =
        held.into_iter().filter(|id| ids.is_empty() || ids.contains(id)).collect();
    // The op names what its author saw: a reservation made meanwhile on another machine is
    // not ended by a release that never knew it.
    if !released.is_empty() {
        writer.apply(OpKind::ReleaseFiles { task, ids: released.clone() })?;
    }
    Ok(released)
}

/// Live reservations of other tasks that `reservation` overlaps.
fn conflicts_with(
    writer: &Writer<'_>,
    reservation: &Reservation,
    now: jiff::Timestamp,
) -> Result<Vec<Conflict>, Refusal> {
    let mut conflicts = Vec::new();
    for other in writer.reservations_in_txn()? {
        if other.task == reservation.task || !(other.exclusive || reservation.exclusive) {
            continue;
        }
        if !other.is_live(writer.issue(&other.task)?.as_ref(), now) {
            continue;
        }
        if let Some((glob, theirs)) = reservation.overlap(&other.globs) {
            conflicts.push(Conflict {
                reservation: other.id.clone(),
                task: other.task.clone(),
                glob: glob.to_string(),
                theirs,
                exclusive: other.exclusive,
            });
        }
    }
    Ok(conflicts)
}

/// The message `input` names: its whole id, or the unique end of one.
fn resolve_message(messages: &[Message], input: &str) -> Result<String, Refusal> {
    let input = input.trim();
    if let Some(exact) = messages.iter().find(|m| m.id == input) {
        return Ok(exact.id.clone());
    }
    let found: Vec<&Message> =
        messages.iter().filter(|m| !input.is_empty() && m.id.ends_with(input)).collect();
    match found.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => Err(Refusal::Invalid(format!(
            "no message {input}: `bd mail inbox --all` lists messages with their ids"
        ))),
        many => Err(Refusal::Invalid(format!(
            "{input} names {} messages ({}): give more of the id",
            many.len(),
            many.iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn stored_message(writer: &Writer<'_>, id: &str) -> Result<Message, Refusal> {
    let messages = writer.read_messages()?;
    let found = messages.into_iter().find(|m| m.id == id);
    Ok(found.ok_or_else(|| StoreError::NotFound(id.to_string()))?)
}
