//! Kafka RecordBatch v2 and the KRaft control records.
//!
//! Owns the byte layout of record batches as the metadata log stores them and
//! as Fetch carries them: reading a batch header without decoding its records,
//! checking its CRC32C, building data and control batches, and decoding
//! control records (LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion,
//! Voters). The encoding itself is the `kafka-protocol` crate's; this module
//! only adds what the crate lacks (header-only views, control record keys).
//!
//! It must not do I/O or make consensus decisions: it is bytes in, values out.
//!
//! Reference: Kafka's `DefaultRecordBatch`, `ControlRecordType` and
//! `ControlRecordUtils` (clients module).

mod batch;
mod control;

pub use batch::{
    BATCH_OVERHEAD_BYTES, BatchHeader, BatchIter, DataRecord, DecodedBatch, RECORD_BATCH_MAGIC,
    batch_set_offset_and_epoch, encode_control_batch, encode_data_batch, iter_batches,
};
pub use control::{
    ControlRecord, ControlRecordType, KRaftVersionRecord, LeaderChangeMessage,
    SnapshotFooterRecord, SnapshotHeaderRecord, VotersRecord,
};

/// Errors reading or building record batches.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Fewer bytes than the batch header or the batch length needs.
    #[error("truncated record batch: need {needed} bytes, have {available}")]
    Truncated {
        /// Bytes the header or batch length calls for.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A header field outside what RecordBatch v2 allows.
    #[error("invalid record batch at offset {base_offset}: {reason}")]
    Invalid {
        /// The batch's base offset as read.
        base_offset: i64,
        /// What is wrong.
        reason: String,
    },
    /// The stored CRC32C does not match the batch contents.
    #[error(
        "corrupt record batch at offset {base_offset}: crc {stored:#010x}, computed {computed:#010x}"
    )]
    CrcMismatch {
        /// The batch's base offset.
        base_offset: i64,
        /// CRC stored in the header.
        stored: u32,
        /// CRC computed over attributes..end.
        computed: u32,
    },
    /// The `kafka-protocol` crate failed to encode or decode.
    #[error("{action}: {source}")]
    Codec {
        /// What was being encoded or decoded.
        action: &'static str,
        /// The crate's error.
        source: anyhow::Error,
    },
}

/// Result alias of this module.
pub type Result<T, E = RecordError> = std::result::Result<T, E>;

/// An offset in the log and the leader epoch of the record at it; also a
/// snapshot id (end offset, epoch). Kafka's `org.apache.kafka.raft.OffsetAndEpoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct OffsetAndEpoch {
    /// Log offset.
    pub offset: i64,
    /// Leader epoch.
    pub epoch: i32,
}

impl OffsetAndEpoch {
    /// Builds an (offset, epoch) pair.
    pub const fn new(offset: i64, epoch: i32) -> Self {
        Self { offset, epoch }
    }
}

impl std::fmt::Display for OffsetAndEpoch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(offset {}, epoch {})", self.offset, self.epoch)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::{LeaderChangeMessage, leader_change_message::Voter};

    use super::*;

    #[test]
    fn a_control_batch_round_trips_with_its_offsets_epoch_and_crc() {
        let leader_change = ControlRecord::LeaderChange(
            LeaderChangeMessage::default()
                .with_leader_id(kafka_protocol::messages::BrokerId(1))
                .with_voters(vec![Voter::default().with_voter_id(1)]),
        );
        let batch = encode_control_batch(
            42,
            7,
            1_700_000_000_000,
            std::slice::from_ref(&leader_change),
        )
        .expect("encodes");
        let header = BatchHeader::parse(&batch).expect("header");
        assert_eq!(header.base_offset, 42);
        assert_eq!(header.partition_leader_epoch, 7);
        assert!(header.is_control());
        assert_eq!(header.records_count, 1);
        assert_eq!(header.base_sequence, -1);
        assert_eq!(header.producer_id, -1);
        assert_eq!(header.size_in_bytes(), batch.len());
        let decoded = DecodedBatch::decode(&batch).expect("decodes");
        assert_eq!(
            decoded.control_records().expect("control"),
            vec![leader_change]
        );
    }

    #[test]
    fn a_data_batch_holds_all_values_in_one_batch() {
        let values: Vec<Bytes> = (0..5u8).map(|i| Bytes::from(vec![i; 3])).collect();
        let batch = encode_data_batch(10, 2, 5, &values).expect("encodes");
        let batches: Vec<_> = iter_batches(&batch, true)
            .collect::<Result<_>>()
            .expect("valid");
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].0.last_offset(), 14);
        let decoded = DecodedBatch::decode(&batch).expect("decodes");
        let got: Vec<_> = decoded
            .records
            .iter()
            .map(|r| (r.offset, r.value.clone()))
            .collect();
        let want: Vec<_> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (10 + i as i64, Some(v.clone())))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_flipped_byte_fails_the_crc_check() {
        let batch = encode_data_batch(0, 1, 5, &[Bytes::from_static(b"hello")]).expect("encodes");
        let mut damaged = batch.to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0x01;
        let err = iter_batches(&damaged, true)
            .next()
            .expect("one item")
            .expect_err("crc must fail");
        assert!(
            matches!(err, RecordError::CrcMismatch { base_offset: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn restamping_offset_and_epoch_keeps_the_crc_valid() {
        let batch = encode_data_batch(0, 1, 5, &[Bytes::from_static(b"x")]).expect("encodes");
        let mut stamped = batch.to_vec();
        batch_set_offset_and_epoch(&mut stamped, 99, 4);
        let (header, _) = iter_batches(&stamped, true)
            .next()
            .expect("one")
            .expect("valid");
        assert_eq!((header.base_offset, header.partition_leader_epoch), (99, 4));
    }

    #[test]
    fn a_base_offset_whose_last_offset_overflows_is_refused() {
        // `next_offset` used to overflow here: a panic in debug builds (the
        // fuzz build), a negative offset in release ones.
        let batch = encode_data_batch(
            0,
            1,
            5,
            &[Bytes::from_static(b"a"), Bytes::from_static(b"b")],
        )
        .expect("encodes");
        let mut stamped = batch.to_vec();
        batch_set_offset_and_epoch(&mut stamped, i64::MAX - 1, 4);
        let err = BatchHeader::parse(&stamped).expect_err("last offset + 1 overflows");
        assert!(matches!(err, RecordError::Invalid { .. }), "{err}");
        batch_set_offset_and_epoch(&mut stamped, i64::MAX - 2, 4);
        let header = BatchHeader::parse(&stamped).expect("the largest valid base offset");
        assert_eq!(header.next_offset(), i64::MAX);
    }
}
