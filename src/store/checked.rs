//! Checked rows: every issue, edge, comment and journal row carries a checksum of its own,
//! verified on every read, so a damaged row is reported, never served changed.
//!
//! redb checks no page when it reads one: a flipped byte inside a row's JSON decoded as
//! another description, comment text or edge target (issue 28: 9% of one-byte flips changed
//! data silently). A row is now its payload followed by [`MARK`] and the CRC-32 of the
//! payload. [`open`] verifies it and hands back the payload; a mismatch is
//! [`Damage`], which the decoders turn into `StoreError::Corrupt` naming the row.
//!
//! Rows written before (layout 2) carry no mark and are read as they are; they are sealed as
//! they are written again. A flip inside the mark of a sealed row makes it read as an unmarked
//! one, whose payload is then followed by eight bytes that are not JSON: it fails to decode,
//! so it is reported too. What the decoders check beyond the payload (that the row is the
//! row of its key) lives with them (`tables`).

/// What follows a sealed row's payload, before its checksum: a zero byte (which JSON never
/// holds raw) and a version.
const MARK: [u8; 4] = *b"\0ck\x01";
/// The length of the seal: the mark and a big-endian CRC-32.
const SEAL: usize = MARK.len() + 4;

/// A row whose checksum does not match its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Damage;

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("its row does not match its checksum")
    }
}

/// `payload` sealed: followed by the mark and its checksum.
pub(crate) fn seal(mut payload: Vec<u8>) -> Vec<u8> {
    let sum = crc32fast::hash(&payload);
    payload.reserve(SEAL);
    payload.extend_from_slice(&MARK);
    payload.extend_from_slice(&sum.to_be_bytes());
    payload
}

/// Whether `row` carries a seal (checked or not).
pub(crate) fn is_sealed(row: &[u8]) -> bool {
    row.len() >= SEAL && row[row.len() - SEAL..row.len() - 4] == MARK
}

/// The payload of `row`: a sealed row's once its checksum matches, an unsealed (older) row
/// whole.
pub(crate) fn open(row: &[u8]) -> Result<&[u8], Damage> {
    let Some(at) = row.len().checked_sub(SEAL) else { return Ok(row) };
    let (payload, seal) = row.split_at(at);
    if seal[..MARK.len()] != MARK {
        return Ok(row);
    }
    let sum = u32::from_be_bytes([seal[4], seal[5], seal[6], seal[7]]);
    if crc32fast::hash(payload) == sum { Ok(payload) } else { Err(Damage) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_row_opens_to_its_payload_and_any_flip_is_caught_or_harmless() {
        let payload = br#"{"id":"t-1","title":"a"}"#.to_vec();
        let row = seal(payload.clone());
        assert_eq!(open(&row), Ok(payload.as_slice()));
        assert_eq!(open(&payload), Ok(payload.as_slice()), "an older row reads whole");
        for at in 0..row.len() {
            for bit in 0..8 {
                let mut flipped = row.clone();
                flipped[at] ^= 1 << bit;
                match open(&flipped) {
                    Err(Damage) => {}
                    // Only a flip in the mark reads as an older row, which is not JSON.
                    Ok(read) => {
                        assert_eq!(read, flipped.as_slice(), "flip at {at}");
                        assert!(serde_json::from_slice::<serde_json::Value>(read).is_err());
                    }
                }
            }
        }
    }
}
