//! How an op is kept in the journal table: its JSON record, compressed when it is large.
//!
//! Almost every op is a few hundred bytes of JSON and is stored as it is. A bulk op (an
//! import's records, [`crate::op::OpKind::Bulk`]) carries up to a thousand issues, so its JSON
//! runs to a megabyte; an import of 100k issues would otherwise write its whole source a second
//! time into the store file (its journal table held 104 of the file's 285 MB). Such rows are deflated, on the core that encodes them while the other
//! writes the tables, and inflated again by every reader through [`json`], so nothing outside
//! the store sees the difference: the JSON a reader gets, and the `ops.jsonl` line git
//! carries, are byte for byte the op's record.
//!
//! A row is one of:
//! - the JSON record, which starts with `{`;
//! - [`DEFLATED`], the record's length as 8 bytes little-endian, then its zlib stream.

use std::borrow::Cow;

/// The first byte of a compressed row (a JSON record never starts with it).
const DEFLATED: u8 = 0x01;
/// Records at least this long are compressed.
const COMPRESS_FROM: usize = 16 * 1024;
/// zlib's fastest level: the bulk ops of the 100k-issue benchmark shrink fivefold (104 → 21 MB).
const LEVEL: i32 = 1;
const HEADER: usize = 9;

/// The row that keeps the JSON record `json`.
pub(crate) fn pack(json: Vec<u8>) -> Vec<u8> {
    super::checked::seal(deflate(json))
}

/// `json`, deflated when it is large.
fn deflate(json: Vec<u8>) -> Vec<u8> {
    if json.len() < COMPRESS_FROM {
        return json;
    }
    let mut row = vec![0u8; HEADER + zlib_rs::compress_bound(json.len())];
    let (compressed, code) =
        zlib_rs::compress_slice(&mut row[HEADER..], &json, zlib_rs::DeflateConfig::new(LEVEL));
    if code != zlib_rs::ReturnCode::Ok {
        return json;
    }
    let compressed = compressed.len();
    row[0] = DEFLATED;
    row[1..HEADER].copy_from_slice(&(json.len() as u64).to_le_bytes());
    row.truncate(HEADER + compressed);
    row
}

/// The JSON record a row keeps; an error says what is wrong with a row that is neither.
pub(crate) fn json(row: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    let row = super::checked::open(row).map_err(|damage| damage.to_string())?;
    if row.first() != Some(&DEFLATED) {
        return Ok(Cow::Borrowed(row));
    }
    let length = row
        .get(1..HEADER)
        .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
        .map(u64::from_le_bytes)
        .and_then(|length| usize::try_from(length).ok())
        .ok_or("a compressed journal row without its length")?;
    // Deflate shrinks nothing more than about a thousandfold: a larger length is damage, and
    // is not allocated.
    if length > (row.len() - HEADER).saturating_mul(1100) {
        return Err(format!("a compressed journal row claims {length} bytes"));
    }
    let mut json = vec![0u8; length];
    let (inflated, code) =
        zlib_rs::decompress_slice(&mut json, &row[HEADER..], zlib_rs::InflateConfig::default());
    if code != zlib_rs::ReturnCode::Ok || inflated.len() != length {
        return Err(format!("a compressed journal row does not inflate ({code:?})"));
    }
    Ok(Cow::Owned(json))
}

/// Rows of at least this many bytes in all are decoded on every core (an import's bulk ops).
const PARALLEL_FROM: usize = 1024 * 1024;

/// Decodes journal rows `(seq, row)` with `decode`, in order. A large journal (an import's
/// bulk ops) is inflated and decoded on every core, in contiguous runs of about equal size;
/// the first row that fails, in journal order, is the error, with its sequence.
pub(crate) fn decode_rows<T: Send>(
    rows: Vec<(u64, Vec<u8>)>,
    decode: &(dyn Fn(&[u8]) -> Result<T, serde_json::Error> + Sync),
) -> Result<Vec<(u64, T)>, (u64, String)> {
    let bytes: usize = rows.iter().map(|(_, row)| row.len()).sum();
    if bytes < PARALLEL_FROM || rows.len() < 2 {
        return decode_run(&rows, decode);
    }
    let cores = crate::parallel::cores();
    let runs = runs_of_equal_size(&rows, bytes.div_ceil(cores));
    let decoded = crate::parallel::on_threads(runs, |run| decode_run(run, decode));
    let mut out = Vec::with_capacity(rows.len());
    for run in decoded {
        out.extend(run?);
    }
    Ok(out)
}

fn decode_run<T>(
    rows: &[(u64, Vec<u8>)],
    decode: &(dyn Fn(&[u8]) -> Result<T, serde_json::Error> + Sync),
) -> Result<Vec<(u64, T)>, (u64, String)> {
    rows.iter().map(|(seq, row)| Ok((*seq, decode_row(*seq, row, decode)?))).collect()
}

/// Decodes journal row `seq` with `decode`; an error carries the sequence.
pub(crate) fn decode_row<T>(
    seq: u64,
    row: &[u8],
    decode: &dyn Fn(&[u8]) -> Result<T, serde_json::Error>,
) -> Result<T, (u64, String)> {
    let json = json(row).map_err(|e| (seq, e))?;
    decode(&json).map_err(|e| (seq, e.to_string()))
}

/// `rows` cut into contiguous runs of about `size` bytes each (at least one row per run).
fn runs_of_equal_size(rows: &[(u64, Vec<u8>)], size: usize) -> Vec<&[(u64, Vec<u8>)]> {
    let mut runs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, (_, row)) in rows.iter().enumerate() {
        bytes += row.len();
        if bytes >= size {
            runs.push(&rows[start..=at]);
            (start, bytes) = (at + 1, 0);
        }
    }
    if start < rows.len() {
        runs.push(&rows[start..]);
    }
    runs
}

/// Decodes the record a row keeps as `T`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(row: &[u8]) -> Result<T, String> {
    serde_json::from_slice(&json(row)?).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_records_are_kept_as_they_are_and_large_ones_come_back_whole() {
        let small = br#"{"v":1}"#.to_vec();
        assert_eq!(pack(small.clone()), super::super::checked::seal(small.clone()));
        assert_eq!(json(&small).unwrap().as_ref(), small.as_slice());

        let large = format!(r#"{{"ops":[{}]}}"#, vec![r#"{"id":"t-1"}"#; 5000].join(","));
        let row = pack(large.clone().into_bytes());
        assert_eq!(super::super::checked::open(&row).unwrap()[0], DEFLATED);
        assert!(row.len() < large.len() / 4, "{} of {}", row.len(), large.len());
        assert_eq!(json(&row).unwrap().as_ref(), large.as_bytes());
    }

    #[test]
    fn a_damaged_compressed_row_is_an_error_not_a_panic() {
        let large = vec![b'x'; 50_000];
        let mut row = pack(large);
        row.truncate(row.len() / 2);
        assert!(json(&row).is_err());
        assert!(json(&[DEFLATED, 1, 2]).is_err());
        let mut lying = pack(vec![b'y'; 50_000]);
        lying[1..HEADER].copy_from_slice(&(10u64).to_le_bytes());
        assert!(json(&lying).is_err());
    }

    /// Rows `1..=n` of about 40 KB of JSON each, compressed (to a few hundred bytes: the
    /// journal they make is small, and decoded on one core), numbering their records.
    fn numbered_rows(n: u64) -> Vec<(u64, Vec<u8>)> {
        (1..=n)
            .map(|seq| {
                let padding = "x".repeat(40_000 + seq as usize);
                (seq, pack(format!(r#"{{"n":{seq},"pad":"{padding}"}}"#).into_bytes()))
            })
            .collect()
    }

    #[derive(serde::Deserialize)]
    struct Numbered {
        n: u64,
    }

    #[test]
    fn a_large_journal_decodes_in_order_on_every_core() {
        let rows = numbered_rows(60);
        assert!(rows.iter().map(|(_, row)| row.len()).sum::<usize>() < PARALLEL_FROM);
        let padded: Vec<(u64, Vec<u8>)> = (1..=60)
            .map(|seq| (seq, format!(r#"{{"n":{seq},"pad":"{}"}}"#, "y".repeat(40_000)).into()))
            .collect();
        for rows in [rows, padded] {
            let decoded =
                decode_rows(rows, &|row| serde_json::from_slice::<Numbered>(row)).unwrap();
            let order: Vec<(u64, u64)> = decoded.iter().map(|(seq, row)| (*seq, row.n)).collect();
            assert_eq!(order, (1..=60).map(|n| (n, n)).collect::<Vec<_>>());
        }
    }

    /// The runs cover the rows in order, each row once, and are never more than the cores
    /// (whatever cores the machine running the tests has): whole rows fill each run up to its
    /// share, so 8 cores get 5 runs of 2 rows.
    #[test]
    fn rows_are_cut_into_contiguous_runs_of_about_equal_size() {
        let rows: Vec<(u64, Vec<u8>)> = (1..=10).map(|seq| (seq, vec![0u8; 100])).collect();
        for (cores, runs) in [(1, 1), (2, 2), (3, 3), (8, 5)] {
            let cut = runs_of_equal_size(&rows, 1000usize.div_ceil(cores));
            assert_eq!(cut.len(), runs, "{cores} cores");
            let seqs: Vec<u64> =
                cut.iter().flat_map(|run| run.iter().map(|(seq, _)| *seq)).collect();
            assert_eq!(seqs, (1..=10).collect::<Vec<_>>(), "{cores} cores");
        }
    }

    #[test]
    fn the_first_bad_row_of_a_large_journal_is_the_error() {
        let mut rows: Vec<(u64, Vec<u8>)> = (1..=60)
            .map(|seq| (seq, format!(r#"{{"n":{seq},"pad":"{}"}}"#, "y".repeat(40_000)).into()))
            .collect();
        // One bad row in each half (each run, on two cores or more).
        rows[14].1 = b"{not json".to_vec();
        rows[50].1 = vec![DEFLATED, 1];
        let (seq, _) = decode_rows(rows.clone(), &|row| serde_json::from_slice::<Numbered>(row))
            .err()
            .expect("a bad row fails the decode");
        assert_eq!(seq, 15);
        rows[14].1 = br#"{"n":15}"#.to_vec();
        let (seq, _) = decode_rows(rows, &|row| serde_json::from_slice::<Numbered>(row))
            .err()
            .expect("a bad row fails the decode");
        assert_eq!(seq, 51);
    }
}
