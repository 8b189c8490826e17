//! The few Kafka metadata records this project writes or names, in Kafka's
//! `ApiMessageAndVersion` framing as the metadata log stores them (Kafka's
//! `MetadataRecordSerde` / `AbstractApiMessageSerde`):
//!
//! | field | encoding |
//! |---|---|
//! | frame version | unsigned varint, 1 |
//! | api key | unsigned varint (`MetadataRecordType`) |
//! | version | unsigned varint, the record's schema version |
//! | message | the record's fields |
//!
//! Schemas checked against the JSON files of Apache Kafka 4.1.2
//! (`common/metadata/*.json` inside `kafka-metadata-4.1.2.jar`): all records
//! here are at version 0, flexible (compact strings and arrays, tagged
//! fields). The `kafka-protocol` crate (0.18) has no metadata records, only
//! the Raft control records (LeaderChange, SnapshotHeader/Footer,
//! KRaftVersion, Voters, which `record` uses), so these few are encoded here;
//! RegisterControllerRecord v0 has the same body layout as
//! ControllerRegistrationRequest v0, which a test uses to check this encoder
//! against `kafka-protocol`'s generated one.
//!
//! Owns the byte layout of these records; it must not interpret them (that is
//! the metadata image's job). This file holds the framing, the record type
//! names and the no-op record; one file per record family:
//! [`feature`] (FeatureLevelRecord), [`registration`]
//! (RegisterControllerRecord, KIP-919; UnregisterControllerRecord, KIP-1312), [`config`] (ConfigRecord and the
//! KIP-868 transaction markers), [`producer_ids`] (ProducerIdsRecord).

pub mod acl;
pub mod broker;
pub mod config;
pub mod feature;
pub mod producer_ids;
pub mod registration;
pub mod topic;

use bytes::{BufMut, Bytes, BytesMut};

pub use self::{
    acl::*, broker::*, config::*, feature::*, producer_ids::*, registration::*, topic::*,
};

/// Frame version of `ApiMessageAndVersion` in the metadata log.
pub const FRAME_VERSION: u32 = 1;
/// Api key of FeatureLevelRecord (`MetadataRecordType.FEATURE_LEVEL_RECORD`).
pub const FEATURE_LEVEL_RECORD_API_KEY: u32 = 12;
/// Name of the metadata.version feature (`MetadataVersion.FEATURE_NAME`).
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";

/// Errors decoding a framed metadata record.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordsError {
    /// Fewer bytes than a field needs.
    #[error("metadata record ends early at byte {position}")]
    Truncated {
        /// Byte position where more was needed.
        position: usize,
    },
    /// A frame version other than 1.
    #[error("metadata record frame version {0}, expected 1")]
    FrameVersion(u32),
    /// A string that is not UTF-8.
    #[error("metadata record string is not utf-8")]
    Utf8,
    /// Bytes left after the record's last field (Kafka's
    /// `AbstractApiMessageSerde.read` refuses them: "Found N byte(s) of
    /// garbage after ...").
    #[error("metadata record has {0} byte(s) of garbage after its last field")]
    Garbage(usize),
    /// An unsigned varint whose fifth byte still has its continuation bit
    /// (Kafka's `ByteUtils.readUnsignedVarint`: "Varint is too long").
    #[error("metadata record varint at byte {position} is longer than 5 bytes")]
    VarintTooLong {
        /// Byte position where the varint starts.
        position: usize,
    },
}

/// Kafka 4.4's `MetadataRecordType` names for the api keys (as `kafka-dump-log
/// --cluster-metadata-decoder` prints them); `None` for keys unknown here
/// (6, 13 and 16 are retired ids Kafka no longer defines; 29,
/// UNREGISTER_CONTROLLER_RECORD, is new in 4.4, KIP-1312).
pub fn metadata_record_type_name(api_key: u32) -> Option<&'static str> {
    Some(match api_key {
        0 => "REGISTER_BROKER_RECORD",
        1 => "UNREGISTER_BROKER_RECORD",
        2 => "TOPIC_RECORD",
        3 => "PARTITION_RECORD",
        4 => "CONFIG_RECORD",
        5 => "PARTITION_CHANGE_RECORD",
        7 => "FENCE_BROKER_RECORD",
        8 => "UNFENCE_BROKER_RECORD",
        9 => "REMOVE_TOPIC_RECORD",
        10 => "DELEGATION_TOKEN_RECORD",
        11 => "USER_SCRAM_CREDENTIAL_RECORD",
        12 => "FEATURE_LEVEL_RECORD",
        14 => "CLIENT_QUOTA_RECORD",
        15 => "PRODUCER_IDS_RECORD",
        17 => "BROKER_REGISTRATION_CHANGE_RECORD",
        18 => "ACCESS_CONTROL_ENTRY_RECORD",
        19 => "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        20 => "NO_OP_RECORD",
        21 => "ZK_MIGRATION_STATE_RECORD",
        22 => "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        23 => "BEGIN_TRANSACTION_RECORD",
        24 => "END_TRANSACTION_RECORD",
        25 => "ABORT_TRANSACTION_RECORD",
        26 => "REMOVE_DELEGATION_TOKEN_RECORD",
        27 => "REGISTER_CONTROLLER_RECORD",
        28 => "CLEAR_ELR_RECORD",
        29 => "UNREGISTER_CONTROLLER_RECORD",
        _ => return None,
    })
}

fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

/// Reads an unsigned varint of at most 5 bytes, as Kafka's
/// `ByteUtils.readUnsignedVarint` does (bits past the 32nd are dropped, as
/// there).
fn get_uvarint(bytes: &[u8], position: &mut usize) -> Result<u32, RecordsError> {
    let start = *position;
    let mut value = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(*position).ok_or(RecordsError::Truncated {
            position: *position,
        })?;
        *position += 1;
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(RecordsError::VarintTooLong { position: start })
}

/// A framed metadata record: its api key, version and the message bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramedRecord {
    /// `MetadataRecordType` id.
    pub api_key: u32,
    /// Schema version of the message.
    pub version: u32,
    /// The message's bytes, after the frame.
    pub message: Bytes,
}

impl FramedRecord {
    /// Splits a record value into its frame and message.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::FrameVersion`].
    pub fn decode(value: &[u8]) -> Result<Self, RecordsError> {
        let mut position = 0;
        let frame = get_uvarint(value, &mut position)?;
        if frame != FRAME_VERSION {
            return Err(RecordsError::FrameVersion(frame));
        }
        let api_key = get_uvarint(value, &mut position)?;
        let version = get_uvarint(value, &mut position)?;
        Ok(Self {
            api_key,
            version,
            message: Bytes::copy_from_slice(&value[position..]),
        })
    }
}

impl FramedRecord {
    /// The record value as stored in a batch: frame version 1, api key and
    /// version as unsigned varints, then the message bytes.
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, self.api_key);
        put_uvarint(&mut buf, self.version);
        buf.put_slice(&self.message);
        buf.freeze()
    }
}

/// Kafka's `NoOpRecord` api key.
pub const NO_OP_RECORD_API_KEY: u32 = 20;

/// A framed `NoOpRecord` v0 (Kafka's `QuorumController` appends one every
/// `metadata.max.idle.interval.ms` when idle). Bytes: `01` frame version,
/// `14` api key 20, `00` version 0, `00` no tagged fields.
pub fn no_op_record() -> Bytes {
    FramedRecord {
        api_key: NO_OP_RECORD_API_KEY,
        version: 0,
        message: Bytes::from_static(&[0]),
    }
    .encode()
}

#[cfg(test)]
mod no_op_tests {
    use super::*;

    #[test]
    fn a_no_op_record_is_four_framed_bytes() {
        // frame version 1, api key 20 (NO_OP_RECORD), version 0, no tagged fields
        assert_eq!(&no_op_record()[..], &[0x01, 0x14, 0x00, 0x00]);
        let framed = FramedRecord::decode(&no_op_record()).expect("decodes");
        assert_eq!(
            metadata_record_type_name(framed.api_key),
            Some("NO_OP_RECORD")
        );
    }
}

fn put_compact_string(buf: &mut BytesMut, s: &str) {
    put_uvarint(buf, s.len() as u32 + 1);
    buf.put_slice(s.as_bytes());
}

/// A cursor over a record message, for the decoders here.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordsError> {
        let out =
            self.bytes
                .get(self.position..self.position + n)
                .ok_or(RecordsError::Truncated {
                    position: self.position,
                })?;
        self.position += n;
        Ok(out)
    }
    fn uvarint(&mut self) -> Result<u32, RecordsError> {
        get_uvarint(self.bytes, &mut self.position)
    }
    fn i16(&mut self) -> Result<i16, RecordsError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, RecordsError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn compact_string(&mut self) -> Result<String, RecordsError> {
        let len = self.uvarint()?.saturating_sub(1) as usize;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| RecordsError::Utf8)
    }
    /// A nullable compact string: length 0 is null.
    fn nullable_compact_string(&mut self) -> Result<Option<String>, RecordsError> {
        match self.uvarint()? {
            0 => Ok(None),
            n => {
                let bytes = self.take(n as usize - 1)?;
                std::str::from_utf8(bytes)
                    .map(|s| Some(s.to_owned()))
                    .map_err(|_| RecordsError::Utf8)
            }
        }
    }
    /// Skips a tagged-fields section (their values are not needed here).
    fn skip_tagged_fields(&mut self) -> Result<(), RecordsError> {
        let count = self.uvarint()?;
        for _ in 0..count {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
    /// Ends a decode: every byte of the message must have been read.
    ///
    /// Errors: [`RecordsError::Garbage`] with the count left over.
    fn finish(&self) -> Result<(), RecordsError> {
        match self.bytes.len().saturating_sub(self.position) {
            0 => Ok(()),
            left => Err(RecordsError::Garbage(left)),
        }
    }
}

#[cfg(test)]
mod kafka_4_1_schema_tests {
    use super::*;

    #[test]
    fn the_record_type_names_are_kafka_4_1s() {
        assert_eq!(
            metadata_record_type_name(REGISTER_CONTROLLER_RECORD_API_KEY),
            Some("REGISTER_CONTROLLER_RECORD")
        );
        assert_eq!(
            metadata_record_type_name(22),
            Some("REMOVE_USER_SCRAM_CREDENTIAL_RECORD")
        );
        assert_eq!(metadata_record_type_name(28), Some("CLEAR_ELR_RECORD"));
        for retired in [6, 13, 16, 30] {
            assert_eq!(metadata_record_type_name(retired), None, "{retired}");
        }
    }
}
