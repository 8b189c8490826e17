//! ConfigRecord (api key 4) and the KIP-868 transaction markers
//! (BeginTransactionRecord 23, EndTransactionRecord 24,
//! AbortTransactionRecord 25), as Kafka's first active controller writes
//! them around the bootstrap records.
//!
//! Owns their byte layout; it must not interpret the configs.

use bytes::{BufMut, Bytes, BytesMut};

use super::{FRAME_VERSION, FramedRecord, Reader, RecordsError, put_compact_string, put_uvarint};

/// Api key of ConfigRecord (`MetadataRecordType.CONFIG_RECORD`).
pub const CONFIG_RECORD_API_KEY: u32 = 4;
/// Api key of BeginTransactionRecord (KIP-868 metadata transactions).
pub const BEGIN_TRANSACTION_RECORD_API_KEY: u32 = 23;
/// Api key of EndTransactionRecord.
pub const END_TRANSACTION_RECORD_API_KEY: u32 = 24;
/// Api key of AbortTransactionRecord.
pub const ABORT_TRANSACTION_RECORD_API_KEY: u32 = 25;
/// Kafka's `ConfigResource.Type.BROKER` id, the resource type of cluster-wide
/// broker defaults (resource name `""`).
pub const CONFIG_RESOURCE_TYPE_BROKER: i8 = 4;

/// A framed BeginTransactionRecord v0 (api key 23): `Name` is a nullable
/// compact string in tagged field 0, written only when set (Kafka's default
/// is null). Kafka's first active controller names its bootstrap transaction
/// `Bootstrap records`.
pub fn begin_transaction_record(name: Option<&str>) -> Bytes {
    let mut message = BytesMut::new();
    match name {
        None => put_uvarint(&mut message, 0),
        Some(name) => {
            let mut field = BytesMut::new();
            put_compact_string(&mut field, name);
            put_uvarint(&mut message, 1); // one tagged field
            put_uvarint(&mut message, 0); // tag 0: Name
            put_uvarint(&mut message, field.len() as u32);
            message.put_slice(&field);
        }
    }
    FramedRecord {
        api_key: BEGIN_TRANSACTION_RECORD_API_KEY,
        version: 0,
        message: message.freeze(),
    }
    .encode()
}

/// A framed EndTransactionRecord v0 (api key 24, no fields): `01 18 00 00`.
pub fn end_transaction_record() -> Bytes {
    FramedRecord {
        api_key: END_TRANSACTION_RECORD_API_KEY,
        version: 0,
        message: Bytes::from_static(&[0]),
    }
    .encode()
}

/// ConfigRecord (api key 4, version 0): one configuration key of a resource.
/// Fields in order: `ResourceType` int8, `ResourceName` compact string,
/// `Name` compact string, `Value` nullable compact string, tagged fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRecord {
    /// Kafka's `ConfigResource.Type` id (4: broker).
    pub resource_type: i8,
    /// Resource name; `""` for the cluster-wide default.
    pub resource_name: String,
    /// Configuration key, e.g. `min.insync.replicas`.
    pub name: String,
    /// Value, or `None` to delete the key.
    pub value: Option<String>,
}

impl ConfigRecord {
    /// The record value as stored in a batch: frame version 1, api key 4,
    /// version 0, then the message.
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, CONFIG_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        buf.put_i8(self.resource_type);
        put_compact_string(&mut buf, &self.resource_name);
        put_compact_string(&mut buf, &self.name);
        match &self.value {
            Some(v) => put_compact_string(&mut buf, v),
            None => put_uvarint(&mut buf, 0),
        }
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }
}

impl ConfigRecord {
    /// Decodes the message part (after the frame) at version 0; tagged
    /// fields are skipped.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = Reader {
            bytes: message,
            position: 0,
        };
        let resource_type = r.take(1)?[0] as i8;
        let resource_name = r.compact_string()?;
        let name = r.compact_string()?;
        let value = r.nullable_compact_string()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            resource_type,
            resource_name,
            name,
            value,
        })
    }
}

/// The `Name` of a BeginTransactionRecord v0 message (tagged field 0), `None`
/// when absent or null.
///
/// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`].
pub fn begin_transaction_name(message: &[u8]) -> Result<Option<String>, RecordsError> {
    let mut r = Reader {
        bytes: message,
        position: 0,
    };
    let mut name = None;
    for _ in 0..r.uvarint()? {
        let tag = r.uvarint()?;
        let size = r.uvarint()? as usize;
        let field = r.take(size)?;
        if tag == 0 {
            name = Reader {
                bytes: field,
                position: 0,
            }
            .nullable_compact_string()?;
        }
    }
    Ok(name)
}

#[cfg(test)]
mod kafka_4_1_schema_tests {
    use super::*;
    use crate::metadata::records::*;

    /// Golden bytes of the bootstrap transaction markers Kafka's
    /// `ActivationRecordsGenerator` writes, field by field (equal to Kafka
    /// 4.1.2's `MetadataRecordSerde` output).
    #[test]
    fn transaction_markers_are_framed_as_kafka_frames_them() {
        let mut expected = vec![
            0x01, // frame version 1
            0x17, // api key 23: BEGIN_TRANSACTION_RECORD
            0x00, // version 0
            0x01, // one tagged field
            0x00, // tag 0: Name
            0x12, // its size: 18 bytes
            0x12, // Name: compact string, 17 + 1
        ];
        expected.extend_from_slice(b"Bootstrap records");
        assert_eq!(
            &begin_transaction_record(Some("Bootstrap records"))[..],
            &expected[..]
        );
        assert_eq!(
            &begin_transaction_record(None)[..],
            &[0x01, 0x17, 0x00, 0x00]
        );
        // frame 1, api key 24: END_TRANSACTION_RECORD, version 0, no tagged fields
        assert_eq!(&end_transaction_record()[..], &[0x01, 0x18, 0x00, 0x00]);
        let framed = FramedRecord::decode(&begin_transaction_record(Some("Bootstrap records")))
            .expect("frame");
        assert_eq!(
            begin_transaction_name(&framed.message).expect("decodes"),
            Some("Bootstrap records".to_owned())
        );
        let unnamed = FramedRecord::decode(&begin_transaction_record(None)).expect("frame");
        assert_eq!(
            begin_transaction_name(&unnamed.message).expect("decodes"),
            None
        );
    }

    /// Golden bytes of the cluster-wide `min.insync.replicas` ConfigRecord
    /// (equal to Kafka 4.1.2's `MetadataRecordSerde` output).
    #[test]
    fn a_config_record_is_framed_as_kafka_frames_it() {
        let record = ConfigRecord {
            resource_type: CONFIG_RESOURCE_TYPE_BROKER,
            resource_name: String::new(),
            name: "min.insync.replicas".into(),
            value: Some("1".into()),
        };
        let mut expected = vec![
            0x01, // frame version 1
            0x04, // api key 4: CONFIG_RECORD
            0x00, // version 0
            0x04, // ResourceType int8 = 4 (BROKER)
            0x01, // ResourceName: compact string, 0 + 1 ("")
            0x14, // Name: compact string, 19 + 1
        ];
        expected.extend_from_slice(b"min.insync.replicas");
        expected.extend_from_slice(&[0x02, b'1']); // Value: compact string "1"
        expected.push(0x00); // no tagged fields
        assert_eq!(&record.encode_framed()[..], &expected[..]);
        let framed = FramedRecord::decode(&record.encode_framed()).expect("frame");
        assert_eq!(
            ConfigRecord::decode_message(&framed.message).expect("decodes"),
            record
        );
        let deleted = ConfigRecord {
            value: None,
            ..record
        };
        // A null Value is the compact length 0.
        assert_eq!(deleted.encode_framed()[expected.len() - 3], 0x00);
        let framed = FramedRecord::decode(&deleted.encode_framed()).expect("frame");
        assert_eq!(
            ConfigRecord::decode_message(&framed.message).expect("decodes"),
            deleted
        );
    }
}
