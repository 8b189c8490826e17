//! Byte comparison of checkpoint files (`bootstrap.checkpoint`, the 0-0
//! checkpoint) written by two formatters at different times: the
//! clock-derived fields are zeroed and the CRCs covering them recomputed, so
//! that everything else must be equal byte for byte; a difference is named
//! by file, byte offset, batch and field.
//!
//! The clock-derived fields (Kafka's `RecordsSnapshotWriter` and
//! `BatchFileWriter` read the clock once per batch, and once more for
//! SnapshotHeader): each RecordBatch v2's `baseTimestamp` and
//! `maxTimestamp`, SnapshotHeader's `lastContainedLogTimestamp`, and the
//! batch CRC32C over them. Record timestamp deltas are not touched.
//!
//! Owns the RecordBatch v2 header layout as offsets; it must not decide
//! which files a test compares.

#![allow(dead_code)]

/// Byte ranges of the RecordBatch v2 header fields (Kafka's
/// `DefaultRecordBatch`), relative to the batch start.
const HEADER_FIELDS: &[(usize, usize, &str)] = &[
    (0, 8, "baseOffset"),
    (8, 12, "batchLength"),
    (12, 16, "partitionLeaderEpoch"),
    (16, 17, "magic"),
    (17, 21, "crc"),
    (21, 23, "attributes"),
    (23, 27, "lastOffsetDelta"),
    (27, 35, "baseTimestamp"),
    (35, 43, "maxTimestamp"),
    (43, 51, "producerId"),
    (51, 53, "producerEpoch"),
    (53, 57, "baseSequence"),
    (57, 61, "recordsCount"),
];
/// Size of the RecordBatch v2 header (bytes).
const HEADER_SIZE: usize = 61;
/// The control bit of the batch attributes.
const CONTROL_BIT: u16 = 0x20;
/// Control record type of SnapshotHeader (KIP-630).
const SNAPSHOT_HEADER_TYPE: i16 = 3;

/// One batch: its start, size and base offset.
#[derive(Debug, Clone, Copy)]
struct Batch {
    start: usize,
    size: usize,
    base_offset: i64,
}

fn batches(bytes: &[u8]) -> Result<Vec<Batch>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        if bytes.len() - pos < HEADER_SIZE {
            return Err(format!(
                "{} bytes after the last whole batch at byte {pos}",
                bytes.len() - pos
            ));
        }
        let length = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().expect("4 bytes"));
        let size = usize::try_from(length)
            .ok()
            .map(|l| l + 12)
            .filter(|s| *s >= HEADER_SIZE && pos + s <= bytes.len())
            .ok_or_else(|| format!("batch at byte {pos}: bad batchLength {length}"))?;
        let base_offset = i64::from_be_bytes(bytes[pos..pos + 8].try_into().expect("8 bytes"));
        out.push(Batch {
            start: pos,
            size,
            base_offset,
        });
        pos += size;
    }
    Ok(out)
}

/// Reads a zigzag varint (Kafka's `ByteUtils.readVarlong`) at `*pos`.
fn varint(bytes: &[u8], pos: &mut usize) -> Result<i64, String> {
    let mut raw: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *bytes
            .get(*pos)
            .ok_or_else(|| format!("varint runs past the end at byte {pos}"))?;
        *pos += 1;
        raw |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    Err(format!("varint too long at byte {pos}"))
}

/// Where SnapshotHeader's `lastContainedLogTimestamp` (8 bytes) is in the
/// control batch starting at `start`, if its first record is a SnapshotHeader.
fn last_contained_log_timestamp_at(bytes: &[u8], batch: Batch) -> Result<Option<usize>, String> {
    let attributes = u16::from_be_bytes([bytes[batch.start + 21], bytes[batch.start + 22]]);
    if attributes & CONTROL_BIT == 0 {
        return Ok(None);
    }
    let mut pos = batch.start + HEADER_SIZE;
    let _length = varint(bytes, &mut pos)?;
    pos += 1; // attributes
    let _timestamp_delta = varint(bytes, &mut pos)?;
    let _offset_delta = varint(bytes, &mut pos)?;
    let key_length = varint(bytes, &mut pos)?;
    if key_length != 4 {
        return Ok(None);
    }
    let kind = i16::from_be_bytes([bytes[pos + 2], bytes[pos + 3]]);
    pos += 4;
    if kind != SNAPSHOT_HEADER_TYPE {
        return Ok(None);
    }
    let _value_length = varint(bytes, &mut pos)?;
    // SnapshotHeaderRecord v0: version (int16), lastContainedLogTimestamp (int64).
    Ok(Some(pos + 2))
}

/// `bytes` with every batch's timestamps and SnapshotHeader's
/// `lastContainedLogTimestamp` set to 0 and the CRC32C recomputed.
///
/// Errors: a description of the first malformed batch.
pub fn normalise(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = bytes.to_vec();
    for batch in batches(bytes)? {
        let s = batch.start;
        out[s + 27..s + 43].fill(0);
        if let Some(at) = last_contained_log_timestamp_at(bytes, batch)? {
            out[at..at + 8].fill(0);
        }
        let crc = crc32c::crc32c(&out[s + 21..s + batch.size]);
        out[s + 17..s + 21].copy_from_slice(&crc.to_be_bytes());
    }
    Ok(out)
}

/// `None` when `ours` and `theirs` are equal after [`normalise`]; otherwise
/// one paragraph naming `file`, the first differing byte offset, the batch
/// (index, base offset) and the header field or record byte it falls in,
/// with both sides' bytes around it.
pub fn difference(file: &str, ours: &[u8], theirs: &[u8]) -> Option<String> {
    let (a, b) = match (normalise(ours), normalise(theirs)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            return Some(format!(
                "{file}: not whole record batches: ours {:?}, Kafka's {:?}",
                a.err(),
                b.err()
            ));
        }
    };
    if a == b {
        return None;
    }
    // The recomputed CRCs differ whenever anything after them does: name
    // the byte that differs, not its batch's CRC (unless only a CRC does).
    let crcs: Vec<usize> = batches(&b)
        .unwrap_or_default()
        .iter()
        .map(|x| x.start + 17)
        .collect();
    let in_crc = |i: usize| crcs.iter().any(|c| (*c..*c + 4).contains(&i));
    let differs = |i: &usize| a.get(*i) != b.get(*i);
    let end = a.len().max(b.len());
    let at = (0..end)
        .filter(differs)
        .find(|i| !in_crc(*i))
        .or_else(|| (0..end).find(differs))
        .unwrap_or(end);
    let located = batches(&b)
        .ok()
        .and_then(|list| {
            list.into_iter()
                .enumerate()
                .find(|(_, x)| at < x.start + x.size)
        })
        .map_or_else(
            || "past Kafka's last batch".to_owned(),
            |(i, batch)| {
                let rel = at - batch.start;
                let field = HEADER_FIELDS
                    .iter()
                    .find(|(from, to, _)| (*from..*to).contains(&rel))
                    .map_or_else(
                        || format!("records, byte {} of the records", rel - HEADER_SIZE),
                        |(_, _, name)| (*name).to_owned(),
                    );
                format!(
                    "batch {i} (baseOffset {}, at byte {}), field {field}",
                    batch.base_offset, batch.start
                )
            },
        );
    let window = |v: &[u8]| {
        let from = at.saturating_sub(8);
        let to = (at + 24).min(v.len());
        v.get(from..to)
            .unwrap_or(&[])
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "{file}: first difference at byte {at} (sizes: ours {}, Kafka's {}), in {located}\n  ours    [{}..]: {}\n  Kafka's [{}..]: {}",
        a.len(),
        b.len(),
        at.saturating_sub(8),
        window(&a),
        at.saturating_sub(8),
        window(&b)
    ))
}
