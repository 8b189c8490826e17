//! ProducerIdsRecord (api key 15): the active controller hands a broker the
//! next block of producer ids (Kafka's `ProducerIdControlManager`).
//!
//! Owns its byte layout; it must not interpret the blocks.

use bytes::{BufMut, Bytes, BytesMut};

use super::{FRAME_VERSION, Reader, RecordsError, put_uvarint};

/// Api key of ProducerIdsRecord (`MetadataRecordType.PRODUCER_IDS_RECORD`).
pub const PRODUCER_IDS_RECORD_API_KEY: u32 = 15;

/// ProducerIdsRecord (api key 15, version 0, flexible). Fields in order:
/// `BrokerId` int32, `BrokerEpoch` int64, `NextProducerId` int64, tagged
/// fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdsRecord {
    /// The broker the block went to; -1 in a snapshot (Kafka's
    /// `ProducerIdsImage.write`).
    pub broker_id: i32,
    /// That broker's epoch; -1 in a snapshot.
    pub broker_epoch: i64,
    /// The first producer id of the next block to hand out.
    pub next_producer_id: i64,
}

impl ProducerIdsRecord {
    /// The record value as stored in a batch: frame version 1, api key 15,
    /// version 0, then the message.
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, PRODUCER_IDS_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        buf.put_i32(self.broker_id);
        buf.put_i64(self.broker_epoch);
        buf.put_i64(self.next_producer_id);
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part (after the frame) at version 0; tagged
    /// fields are skipped.
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = Reader {
            bytes: message,
            position: 0,
        };
        let broker_id = r.i32()?;
        let i64 = |r: &mut Reader<'_>| -> Result<i64, RecordsError> {
            let b = r.take(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Ok(i64::from_be_bytes(a))
        };
        let broker_epoch = i64(&mut r)?;
        let next_producer_id = i64(&mut r)?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            broker_id,
            broker_epoch,
            next_producer_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::{FramedRecord, metadata_record_type_name};

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Golden bytes from Kafka 4.4.0's `MetadataRecordSerde` (jshell, as in
    /// `broker_tests.rs`): `new ProducerIdsRecord().setBrokerId(1)
    /// .setBrokerEpoch(42).setNextProducerId(1000)` at version 0, and the
    /// snapshot form (-1, -1, Long.MAX_VALUE - 1000).
    #[test]
    fn producer_ids_records_are_kafkas_bytes() {
        let record = ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 42,
            next_producer_id: 1000,
        };
        let golden = concat!(
            "01",               // frame version 1
            "0f",               // api key 15: PRODUCER_IDS_RECORD
            "00",               // version 0
            "00000001",         // BrokerId int32 = 1
            "000000000000002a", // BrokerEpoch int64 = 42
            "00000000000003e8", // NextProducerId int64 = 1000
            "00",               // no tagged fields
        );
        assert_eq!(hex(&record.encode_framed()), golden);
        let framed = FramedRecord::decode(&record.encode_framed()).expect("frame");
        assert_eq!(
            metadata_record_type_name(framed.api_key),
            Some("PRODUCER_IDS_RECORD")
        );
        assert_eq!(
            ProducerIdsRecord::decode_message(&framed.message).expect("decodes"),
            record
        );
        let image = ProducerIdsRecord {
            broker_id: -1,
            broker_epoch: -1,
            next_producer_id: i64::MAX - 1000,
        };
        assert_eq!(
            hex(&image.encode_framed()),
            "010f00ffffffffffffffffffffffff7ffffffffffffc1700"
        );
        assert!(ProducerIdsRecord::decode_message(&framed.message[..10]).is_err());
    }
}
