//! Frames on the socket: a 4-byte big-endian length, then that many bytes of JSON. A client
//! sends [`Envelope`]s and reads one [`Answer`] for each, in order, on one connection.

use std::io::{Read, Write};

use jiff::Timestamp;
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::tracker::{Reply, Request, WireRefusal};

/// The version of the envelope and answer format. A server answers an envelope of another
/// version with [`Outcome::Direct`] without applying it.
/// - 2: an envelope names the workspace it is for ([`Envelope::workspace`]).
pub const PROTOCOL_VERSION: u32 = 2;
/// The largest frame either side accepts.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// One request as a client sends it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    pub version: u32,
    /// Unique per request; what makes a request applied at most once.
    pub id: ulid::Ulid,
    /// The workspace (`.beads` directory, its canonical path) the request is for: a server
    /// of another workspace, reached through a misplaced socket or link, leaves it to the
    /// client ([`Outcome::Direct`]) instead of writing it into the wrong store.
    pub workspace: std::path::PathBuf,
    /// Who acts.
    pub actor: String,
    /// The client's fixed clock, if it has one (tests); otherwise the server's clock.
    pub now: Option<Timestamp>,
    pub request: Request,
}

/// The answer to one envelope.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Answer {
    pub version: u32,
    pub id: ulid::Ulid,
    pub outcome: Outcome,
}

/// What became of a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Outcome {
    /// Applied (now or earlier: the recorded reply).
    Applied(Reply),
    /// Refused; nothing was changed.
    Refused(WireRefusal),
    /// Not applied here: the client must apply it itself (its own transaction, checking the
    /// request id first). Carries why, for the debug log.
    Direct(String),
}

/// Writes `value` as one frame.
pub fn write_frame(stream: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    stream.write_all(&encode_frame(value)?)?;
    stream.flush()
}

/// `value` as one frame: its length, then its JSON.
pub fn encode_frame(value: &impl Serialize) -> std::io::Result<Vec<u8>> {
    let mut frame = vec![0u8; 4];
    serde_json::to_writer(&mut frame, value).map_err(std::io::Error::other)?;
    let len = u32::try_from(frame.len() - 4)
        .ok()
        .filter(|&len| len as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("frame too large"))?;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    Ok(frame)
}

/// The bodies of the whole frames at the start of `buffer` (at most `most` of them), how many
/// bytes they take, and the error of a frame after them announcing more than [`MAX_FRAME`]
/// bytes: the stream cannot be trusted past it.
pub fn split_frames(buffer: &[u8], most: usize) -> (Vec<&[u8]>, usize, Option<std::io::Error>) {
    let mut frames = Vec::new();
    let mut used = 0;
    while frames.len() < most
        && let Some(header) = buffer.get(used..used + 4)
    {
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        if let Err(error) = check_length(len) {
            return (frames, used, Some(error));
        }
        let Some(body) = buffer.get(used + 4..used + 4 + len) else { break };
        frames.push(body);
        used += 4 + len;
    }
    (frames, used, None)
}

fn check_length(len: usize) -> std::io::Result<()> {
    if len > MAX_FRAME {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes is larger than {MAX_FRAME}"),
        ));
    }
    Ok(())
}

/// Reads one frame and decodes it; `Ok(None)` at a clean end of stream before a frame starts.
pub fn read_frame<T: DeserializeOwned>(stream: &mut impl Read) -> std::io::Result<Option<T>> {
    let Some(body) = read_frame_bytes(stream)? else { return Ok(None) };
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Reads the body of one frame; `Ok(None)` at a clean end of stream before a frame starts.
fn read_frame_bytes(stream: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    let len = u32::from_be_bytes(len) as usize;
    check_length(len)?;
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body)?;
    Ok(Some(body))
}
