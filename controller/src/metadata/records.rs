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
//! The `kafka-protocol` crate has no metadata records, so FeatureLevelRecord
//! is encoded here (api key 12, version 0, flexible: `Name` compact string,
//! `FeatureLevel` int16, empty tagged fields).
//!
//! Owns the byte layout of these records; it must not interpret them (that is
//! the metadata image's job).

use bytes::{BufMut, Bytes, BytesMut};

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
}

/// Kafka's `MetadataRecordType` names for the api keys (as `kafka-dump-log
/// --cluster-metadata-decoder` prints them); `None` for keys unknown here.
pub fn metadata_record_type_name(api_key: u32) -> Option<&'static str> {
    Some(match api_key {
        0 => "REGISTER_BROKER_RECORD",
        1 => "UNREGISTER_BROKER_RECORD",
        2 => "TOPIC_RECORD",
        3 => "PARTITION_RECORD",
        4 => "CONFIG_RECORD",
        5 => "PARTITION_CHANGE_RECORD",
        6 => "ACCESS_CONTROL_ENTRY_RECORD",
        7 => "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        8 => "FENCE_BROKER_RECORD",
        9 => "UNFENCE_BROKER_RECORD",
        10 => "REMOVE_TOPIC_RECORD",
        11 => "DELEGATION_TOKEN_RECORD",
        12 => "FEATURE_LEVEL_RECORD",
        13 => "CLIENT_QUOTA_RECORD",
        14 => "PRODUCER_IDS_RECORD",
        15 => "BROKER_REGISTRATION_CHANGE_RECORD",
        16 => "REMOVE_FEATURE_LEVEL_RECORD",
        17 => "REMOVE_DELEGATION_TOKEN_RECORD",
        18 => "USER_SCRAM_CREDENTIAL_RECORD",
        19 => "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        20 => "NO_OP_RECORD",
        21 => "ZK_MIGRATION_STATE_RECORD",
        22 => "REGISTER_CONTROLLER_RECORD",
        23 => "BEGIN_TRANSACTION_RECORD",
        24 => "END_TRANSACTION_RECORD",
        25 => "ABORT_TRANSACTION_RECORD",
        _ => return None,
    })
}

/// FeatureLevelRecord (api key 12, version 0): a finalized feature level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureLevelRecord {
    /// Feature name, e.g. `metadata.version`.
    pub name: String,
    /// Finalized level.
    pub feature_level: i16,
}

fn put_uvarint(buf: &mut BytesMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

fn get_uvarint(bytes: &[u8], position: &mut usize) -> Result<u32, RecordsError> {
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
    Ok(value)
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

impl FeatureLevelRecord {
    /// The record value as stored in a batch: frame version 1, api key 12,
    /// version 0, then the message.
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, FEATURE_LEVEL_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        // Compact string: length + 1 as unsigned varint, then UTF-8 bytes.
        put_uvarint(&mut buf, self.name.len() as u32 + 1);
        buf.put_slice(self.name.as_bytes());
        buf.put_i16(self.feature_level);
        // Tagged fields: none.
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part (after the frame) at version 0.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut position = 0;
        let len = get_uvarint(message, &mut position)?.saturating_sub(1) as usize;
        let name_bytes = message
            .get(position..position + len)
            .ok_or(RecordsError::Truncated { position })?;
        let name = std::str::from_utf8(name_bytes)
            .map_err(|_| RecordsError::Utf8)?
            .to_string();
        position += len;
        let level = message
            .get(position..position + 2)
            .ok_or(RecordsError::Truncated { position })?;
        Ok(Self {
            name,
            feature_level: i16::from_be_bytes([level[0], level[1]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden bytes of a framed FeatureLevelRecord, field by field.
    #[test]
    fn a_feature_level_record_is_framed_as_kafka_frames_it() {
        let record = FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 27,
        };
        let mut expected = vec![
            0x01, // frame version 1 (uvarint)
            0x0c, // api key 12: FEATURE_LEVEL_RECORD (uvarint)
            0x00, // record version 0 (uvarint)
            0x11, // Name: compact string, length 16 + 1 (uvarint)
        ];
        expected.extend_from_slice(b"metadata.version"); // Name bytes
        expected.extend_from_slice(&[0x00, 0x1b]); // FeatureLevel int16 = 27 (4.1-IV1)
        expected.push(0x00); // no tagged fields
        let bytes = record.encode_framed();
        assert_eq!(&bytes[..], &expected[..]);
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert_eq!((framed.api_key, framed.version), (12, 0));
        assert_eq!(
            FeatureLevelRecord::decode_message(&framed.message).expect("message"),
            record
        );
    }
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
