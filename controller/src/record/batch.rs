//! RecordBatch v2 (magic 2) headers, iteration, CRC checks and building.
//!
//! Byte layout (Kafka's `DefaultRecordBatch`), big-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | baseOffset |
//! | 8 | 4 | batchLength (bytes after this field) |
//! | 12 | 4 | partitionLeaderEpoch |
//! | 16 | 1 | magic (2) |
//! | 17 | 4 | crc (CRC32C of bytes 21..end) |
//! | 21 | 2 | attributes (bit 5: control) |
//! | 23 | 4 | lastOffsetDelta |
//! | 27 | 8 | baseTimestamp (ms) |
//! | 35 | 8 | maxTimestamp (ms) |
//! | 43 | 8 | producerId |
//! | 51 | 2 | producerEpoch |
//! | 53 | 4 | baseSequence |
//! | 57 | 4 | recordsCount |
//! | 61 | … | records |
//!
//! The base offset and the partition leader epoch lie outside the CRC, which is
//! why a leader can stamp them on a batch without recomputing it.

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::compression::{self, Decompressor};
use kafka_protocol::protocol::buf::ByteBuf;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::{ControlRecord, RecordError, Result};

/// Bytes of a RecordBatch v2 header, before the first record (Kafka's
/// `DefaultRecordBatch.RECORD_BATCH_OVERHEAD`).
pub const BATCH_OVERHEAD_BYTES: usize = 61;
/// The magic byte of RecordBatch v2.
pub const RECORD_BATCH_MAGIC: i8 = 2;
/// Bytes of the baseOffset and batchLength fields, which batchLength excludes.
const LOG_OVERHEAD: usize = 12;
const CRC_START: usize = 21;
const ATTR_CONTROL: i16 = 1 << 5;
const ATTR_COMPRESSION_MASK: i16 = 0x07;
/// The fewest bytes one record v2 takes: a 1-byte length varint, then
/// attributes, timestampDelta, offsetDelta, keyLength, valueLength and
/// headers count of at least 1 byte each (Kafka's `DefaultRecord`).
const MIN_RECORD_BYTES: usize = 7;

/// The fixed header of one RecordBatch v2, read without decoding its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after the batchLength field; the whole batch is `batch_length + 12`.
    pub batch_length: i32,
    /// Epoch of the leader that appended the batch.
    pub partition_leader_epoch: i32,
    /// Always 2 for batches this module accepts.
    pub magic: i8,
    /// CRC32C stored in the header.
    pub crc: u32,
    /// Attributes bit field (compression, timestamp type, transactional, control).
    pub attributes: i16,
    /// `last offset - base offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record (ms since the epoch).
    pub base_timestamp: i64,
    /// Largest record timestamp (ms since the epoch).
    pub max_timestamp: i64,
    /// Producer id (-1: none, as all KRaft batches).
    pub producer_id: i64,
    /// Producer epoch (-1: none).
    pub producer_epoch: i16,
    /// Base sequence (-1: none).
    pub base_sequence: i32,
    /// Number of records in the batch.
    pub records_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

impl BatchHeader {
    /// Reads the header at the start of `buf`.
    ///
    /// Errors: [`RecordError::Truncated`] when `buf` is shorter than the
    /// header; [`RecordError::Invalid`] for a magic other than 2, a length
    /// below the header size, a negative base offset, offset delta or record
    /// count, or a last offset past `i64::MAX - 1`. It does
    /// not check that the whole batch is present, nor its CRC.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        if buf.len() < BATCH_OVERHEAD_BYTES {
            return Err(RecordError::Truncated {
                needed: BATCH_OVERHEAD_BYTES,
                available: buf.len(),
            });
        }
        let header = BatchHeader {
            base_offset: be_i64(buf, 0),
            batch_length: be_i32(buf, 8),
            partition_leader_epoch: be_i32(buf, 12),
            magic: buf[16] as i8,
            crc: be_i32(buf, 17) as u32,
            attributes: be_i16(buf, 21),
            last_offset_delta: be_i32(buf, 23),
            base_timestamp: be_i64(buf, 27),
            max_timestamp: be_i64(buf, 35),
            producer_id: be_i64(buf, 43),
            producer_epoch: be_i16(buf, 51),
            base_sequence: be_i32(buf, 53),
            records_count: be_i32(buf, 57),
        };
        let invalid = |reason: String| RecordError::Invalid {
            base_offset: header.base_offset,
            reason,
        };
        if header.magic != RECORD_BATCH_MAGIC {
            return Err(invalid(format!("magic {} is not 2", header.magic)));
        }
        if (header.batch_length as i64) < (BATCH_OVERHEAD_BYTES - LOG_OVERHEAD) as i64 {
            return Err(invalid(format!(
                "batch length {} is below the header size",
                header.batch_length
            )));
        }
        if header.base_offset < 0 {
            return Err(invalid(format!(
                "base offset {} is negative",
                header.base_offset
            )));
        }
        if header.last_offset_delta < 0 || header.records_count < 0 {
            return Err(invalid(format!(
                "last offset delta {} or record count {} is negative",
                header.last_offset_delta, header.records_count
            )));
        }
        // `next_offset` (last offset + 1) must be representable: a base offset
        // near i64::MAX from a peer or a disk would otherwise overflow.
        if header
            .base_offset
            .checked_add(i64::from(header.last_offset_delta) + 1)
            .is_none()
        {
            return Err(invalid(format!(
                "last offset delta {} overflows the offsets",
                header.last_offset_delta
            )));
        }
        Ok(header)
    }

    /// Size of the whole batch in bytes, header included.
    pub fn size_in_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }

    /// Offset of the last record in the batch.
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Whether the batch holds control records (attributes bit 5).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression(&self) -> i16 {
        self.attributes & ATTR_COMPRESSION_MASK
    }

    /// Checks the CRC32C of `batch`, the whole batch this header was read from.
    ///
    /// Errors: [`RecordError::Truncated`] if `batch` is shorter than
    /// [`Self::size_in_bytes`], [`RecordError::CrcMismatch`] if the CRC differs.
    pub fn verify_crc(&self, batch: &[u8]) -> Result<()> {
        let size = self.size_in_bytes();
        if batch.len() < size {
            return Err(RecordError::Truncated {
                needed: size,
                available: batch.len(),
            });
        }
        let computed = crc32c::crc32c(&batch[CRC_START..size]);
        if computed != self.crc {
            return Err(RecordError::CrcMismatch {
                base_offset: self.base_offset,
                stored: self.crc,
                computed,
            });
        }
        Ok(())
    }
}

/// Rewrites the base offset of the batch at the start of `batch` (outside the CRC).
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Rewrites the partition leader epoch of the batch at the start of `batch`
/// (outside the CRC).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[12..16].copy_from_slice(&epoch.to_be_bytes());
}

/// Iterator over the whole batches of a buffer: yields each batch's header and
/// bytes. A trailing partial batch, a bad header or (when asked) a CRC failure
/// yields one error and ends the iteration.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    buf: &'a [u8],
    position: usize,
    verify_crc: bool,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    /// Byte position of the next batch in the buffer.
    pub fn position(&self) -> usize {
        self.position
    }
}

/// Iterates the batches in `buf`; with `verify_crc` each batch's CRC is checked.
pub fn iter_batches(buf: &[u8], verify_crc: bool) -> BatchIter<'_> {
    BatchIter {
        buf,
        position: 0,
        verify_crc,
        failed: false,
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(BatchHeader, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.position..];
        let result = BatchHeader::parse(rest).and_then(|header| {
            let size = header.size_in_bytes();
            if rest.len() < size {
                return Err(RecordError::Truncated {
                    needed: size,
                    available: rest.len(),
                });
            }
            if self.verify_crc {
                header.verify_crc(rest)?;
            }
            Ok((header, &rest[..size]))
        });
        match &result {
            Ok((header, _)) => self.position += header.size_in_bytes(),
            Err(_) => self.failed = true,
        }
        Some(result)
    }
}

/// One record of a decoded batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataRecord {
    /// Absolute offset.
    pub offset: i64,
    /// Timestamp (ms since the epoch).
    pub timestamp: i64,
    /// Record key (control records: version and type).
    pub key: Option<Bytes>,
    /// Record value.
    pub value: Option<Bytes>,
}

/// A batch decoded record by record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    /// The batch header.
    pub header: BatchHeader,
    /// The records, in offset order.
    pub records: Vec<DataRecord>,
}

impl DecodedBatch {
    /// Decodes one whole batch (header, CRC and records).
    ///
    /// Errors: any [`BatchHeader::parse`] or CRC error; [`RecordError::Invalid`]
    /// (uncompressed) or [`RecordError::Codec`] (compressed) when
    /// `recordsCount` is more than the records' bytes can hold (7 bytes each at
    /// least); a record the `kafka-protocol` decoder rejects.
    pub fn decode(batch: &[u8]) -> Result<Self> {
        let header = BatchHeader::parse(batch)?;
        header.verify_crc(batch)?;
        let records_count = header.records_count;
        let invalid = |reason: String| RecordError::Invalid {
            base_offset: header.base_offset,
            reason,
        };
        // The decoder reserves room for `recordsCount` records before it
        // reads one: a count the bytes cannot hold is refused here, so that a
        // corrupt header costs an error, not an allocation of its claim.
        let fits = |records_bytes: usize| {
            usize::try_from(records_count)
                .is_ok_and(|count| count <= records_bytes / MIN_RECORD_BYTES)
        };
        if header.compression() == 0 && !fits(header.size_in_bytes() - BATCH_OVERHEAD_BYTES) {
            return Err(invalid(format!(
                "recordsCount {records_count} does not fit in {} bytes of records",
                header.size_in_bytes() - BATCH_OVERHEAD_BYTES
            )));
        }
        let mut bytes = Bytes::copy_from_slice(&batch[..header.size_in_bytes()]);
        let decompress = |buf: &mut Bytes, compression: Compression| -> anyhow::Result<Bytes> {
            let whole = |b: &mut Bytes| Ok(b.split_to(b.len()));
            let records = match compression {
                Compression::None => whole(buf)?,
                Compression::Gzip => compression::Gzip::decompress(buf, whole)?,
                Compression::Snappy => compression::Snappy::decompress(buf, whole)?,
                Compression::Lz4 => compression::Lz4::decompress(buf, whole)?,
                Compression::Zstd => compression::Zstd::decompress(buf, whole)?,
            };
            if !fits(records.len()) {
                anyhow::bail!(
                    "recordsCount {records_count} does not fit in {} decompressed bytes",
                    records.len()
                );
            }
            check_header_counts(records.clone(), records_count)?;
            Ok(records)
        };
        let set = RecordBatchDecoder::decode_with_custom_compression(&mut bytes, Some(decompress))
            .map_err(|source| RecordError::Codec {
                action: "decoding record batch",
                source,
            })?;
        let records = set
            .records
            .into_iter()
            .map(|r| DataRecord {
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
            })
            .collect();
        Ok(DecodedBatch { header, records })
    }

    /// Decodes the control records of a control batch, in order.
    ///
    /// Errors: [`RecordError::Invalid`] if the batch is not a control batch or
    /// a record's key or value is not a known control record.
    pub fn control_records(&self) -> Result<Vec<ControlRecord>> {
        if !self.header.is_control() {
            return Err(RecordError::Invalid {
                base_offset: self.header.base_offset,
                reason: "not a control batch".into(),
            });
        }
        self.records
            .iter()
            .map(|r| ControlRecord::decode(r.key.as_deref(), r.value.as_deref(), r.offset))
            .collect()
    }
}

/// Walks the first `records_count` records of `records` (a batch's records,
/// decompressed) and refuses a record whose headers count is more than its
/// remaining bytes can hold (2 bytes per header at least: key and value
/// lengths): `kafka-protocol`'s record decoder sizes its header map by that
/// count before reading a header. A record this walk cannot read is left for
/// the decoder to refuse.
/// Reads one zigzag varint (Kafka's `ByteUtils.readVarint`/`readVarlong`)
/// from the front of `buf`, as an i64; `None` when `buf` ends first or the
/// varint runs past 10 bytes.
fn varint(buf: &mut Bytes) -> Option<i64> {
    let mut raw: u64 = 0;
    for i in 0..10 {
        let byte = *buf.first()?;
        buf.advance(1);
        raw |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((raw >> 1) as i64 ^ -((raw & 1) as i64));
        }
    }
    None
}

fn check_header_counts(mut records: Bytes, records_count: i32) -> anyhow::Result<()> {
    for _ in 0..records_count {
        let Some(size) = varint(&mut records) else {
            return Ok(());
        };
        let Some(mut record) = usize::try_from(size)
            .ok()
            .and_then(|size| records.try_get_bytes(size).ok())
        else {
            return Ok(());
        };
        let skip_field = |record: &mut Bytes| -> Option<()> {
            let len = varint(record)?;
            if len >= 0 {
                record.try_get_bytes(usize::try_from(len).ok()?).ok()?;
            }
            Some(())
        };
        let headers: Option<i64> = (|| {
            record.try_get_bytes(1).ok()?; // attributes
            varint(&mut record)?; // timestampDelta (a varlong: same walk)
            varint(&mut record)?; // offsetDelta
            skip_field(&mut record)?; // key
            skip_field(&mut record)?; // value
            varint(&mut record)
        })();
        let Some(headers) = headers else {
            return Ok(());
        };
        if usize::try_from(headers).is_ok_and(|n| n > record.len() / 2) {
            anyhow::bail!(
                "a record's headers count {headers} does not fit in its {} remaining bytes",
                record.len()
            );
        }
    }
    Ok(())
}

fn base_record(
    base_offset: i64,
    index: usize,
    epoch: i32,
    timestamp: i64,
    control: bool,
) -> Record {
    let offset = base_offset + index as i64;
    Record {
        transactional: false,
        control,
        delete_horizon: false,
        partition_leader_epoch: epoch,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset,
        // The encoder groups records into one batch while `offset - sequence`
        // stays constant; this keeps it so and yields base sequence -1.
        sequence: (index as i32).wrapping_sub(1),
        timestamp,
        key: None,
        value: None,
        headers: Default::default(),
    }
}

fn encode(records: &[Record]) -> Result<Bytes> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: RECORD_BATCH_MAGIC,
            compression: Compression::None,
        },
    )
    .map_err(|source| RecordError::Codec {
        action: "encoding record batch",
        source,
    })?;
    Ok(buf.freeze())
}

/// Builds one uncompressed data batch holding `values` (null keys) at offsets
/// `base_offset..base_offset + values.len()`, stamped with `leader_epoch` and
/// `timestamp_ms`, as Kafka's `BatchBuilder` writes KRaft data batches.
///
/// Errors: [`RecordError::Invalid`] for an empty `values`.
pub fn encode_data_batch(
    base_offset: i64,
    leader_epoch: i32,
    timestamp_ms: i64,
    values: &[Bytes],
) -> Result<Bytes> {
    if values.is_empty() {
        return Err(RecordError::Invalid {
            base_offset,
            reason: "a batch needs at least one record".into(),
        });
    }
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            value: Some(v.clone()),
            ..base_record(base_offset, i, leader_epoch, timestamp_ms, false)
        })
        .collect();
    encode(&records)
}

/// Builds one control batch holding `records` at offsets from `base_offset`,
/// as Kafka's `MemoryRecords.withLeaderChangeMessage` and friends do.
///
/// Errors: [`RecordError::Invalid`] for an empty `records`, or a codec error.
pub fn encode_control_batch(
    base_offset: i64,
    leader_epoch: i32,
    timestamp_ms: i64,
    records: &[ControlRecord],
) -> Result<Bytes> {
    if records.is_empty() {
        return Err(RecordError::Invalid {
            base_offset,
            reason: "a batch needs at least one record".into(),
        });
    }
    let records = records
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Ok(Record {
                key: Some(c.encode_key()),
                value: Some(c.encode_value()?),
                ..base_record(base_offset, i, leader_epoch, timestamp_ms, true)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    encode(&records)
}

/// Stamps a base offset and a partition leader epoch on the batch at the start
/// of `batch` (both outside the CRC, so the batch stays valid).
pub fn batch_set_offset_and_epoch(batch: &mut [u8], base_offset: i64, epoch: i32) {
    set_base_offset(batch, base_offset);
    set_partition_leader_epoch(batch, epoch);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headers_count_the_record_cannot_hold_is_refused_before_any_allocation() {
        // One record: attributes 0, timestampDelta 0, offsetDelta 0, null
        // key, a 1-byte value, then headers count varint 0xfeffffff0f
        // (zigzag: i32::MAX) where the decoder would reserve that many
        // header slots.
        let body = [0u8, 0, 0, 1, 2, b'v', 0xfe, 0xff, 0xff, 0xff, 0x0f];
        let mut batch = encode_data_batch(0, 1, 0, &[Bytes::from_static(b"v")])
            .expect("encodes")
            .to_vec();
        batch.truncate(BATCH_OVERHEAD_BYTES);
        batch.push((body.len() as u8) << 1);
        batch.extend_from_slice(&body);
        let length = (batch.len() - LOG_OVERHEAD) as i32;
        batch[8..12].copy_from_slice(&length.to_be_bytes());
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        let err = DecodedBatch::decode(&batch).expect_err("refused");
        assert!(
            format!("{err}").contains("headers count 2147483647"),
            "{err}"
        );
    }

    /// A one-record data batch compressed with `compression` whose
    /// recordsCount claims `count`, with its CRC recomputed so only the count
    /// is wrong.
    fn batch_claiming(compression: Compression, count: i32) -> Vec<u8> {
        let record = Record {
            value: Some(Bytes::from_static(b"value")),
            ..base_record(0, 0, 1, 0, false)
        };
        let mut batch = BytesMut::new();
        let options = RecordEncodeOptions {
            version: RECORD_BATCH_MAGIC,
            compression,
        };
        RecordBatchEncoder::encode(&mut batch, [record].iter(), &options).expect("encodes");
        let mut batch = batch.to_vec();
        batch[57..61].copy_from_slice(&count.to_be_bytes());
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        batch
    }

    #[test]
    fn a_records_count_the_bytes_cannot_hold_is_refused_before_any_allocation() {
        // The fuzzer's finding: recordsCount 0x7fffffff made the decoder
        // reserve ~127 GiB for a 83-byte batch.
        for compression in [Compression::None, Compression::Gzip, Compression::Zstd] {
            for count in [2, 1_000, i32::MAX] {
                let err =
                    DecodedBatch::decode(&batch_claiming(compression, count)).expect_err("refused");
                let message = format!("{err:#}");
                assert!(
                    message.contains(&format!("recordsCount {count}")),
                    "{message}"
                );
            }
            let ok = DecodedBatch::decode(&batch_claiming(compression, 1))
                .expect("the true count decodes");
            assert_eq!(ok.records.len(), 1, "{compression:?}");
        }
    }
}
