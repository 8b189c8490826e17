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

/// Kafka 4.1's `MetadataRecordType` names for the api keys (as `kafka-dump-log
/// --cluster-metadata-decoder` prints them); `None` for keys unknown here
/// (6, 13 and 16 are retired ids Kafka 4.1 no longer defines).
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

/// Api key of RegisterControllerRecord
/// (`MetadataRecordType.REGISTER_CONTROLLER_RECORD`, KIP-919; 27 in Kafka
/// 4.1's `RegisterControllerRecord.json`).
pub const REGISTER_CONTROLLER_RECORD_API_KEY: u32 = 27;

/// One listener of a registered controller (`ControllerEndpoint` of
/// RegisterControllerRecord).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerEndpoint {
    /// Listener name, e.g. `CONTROLLER`.
    pub name: String,
    /// Host name.
    pub host: String,
    /// Port (uint16).
    pub port: u16,
    /// Kafka's `SecurityProtocol` id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT,
    /// 3 SASL_SSL).
    pub security_protocol: i16,
}

/// One supported feature range of a registered controller
/// (`ControllerFeature` of RegisterControllerRecord).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerFeature {
    /// Feature name, e.g. `kraft.version`.
    pub name: String,
    /// Lowest supported level.
    pub min_supported_version: i16,
    /// Highest supported level.
    pub max_supported_version: i16,
}

/// RegisterControllerRecord (api key 27, version 0, flexible; KIP-919): a
/// controller's registration. Fields in order: `ControllerId` int32,
/// `IncarnationId` uuid (16 bytes), `ZkMigrationReady` bool, `EndPoints`
/// compact array of [`ControllerEndpoint`] (`Name` compact string, `Host`
/// compact string, `Port` uint16, `SecurityProtocol` int16, tagged fields),
/// `Features` compact array of [`ControllerFeature`] (`Name` compact string,
/// `MinSupportedVersion` int16, `MaxSupportedVersion` int16, tagged fields),
/// then tagged fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterControllerRecord {
    /// The controller's node id.
    pub controller_id: i32,
    /// Random id of this run of the controller process.
    pub incarnation_id: uuid::Uuid,
    /// Always false here (no ZooKeeper migration).
    pub zk_migration_ready: bool,
    /// Listeners.
    pub endpoints: Vec<ControllerEndpoint>,
    /// Supported feature ranges.
    pub features: Vec<ControllerFeature>,
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
}

impl RegisterControllerRecord {
    /// The record value as stored in a batch: frame version 1, api key 27,
    /// version 0, then the message (layout in the type's doc).
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, REGISTER_CONTROLLER_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        buf.put_i32(self.controller_id);
        buf.put_slice(self.incarnation_id.as_bytes());
        buf.put_u8(u8::from(self.zk_migration_ready));
        put_uvarint(&mut buf, self.endpoints.len() as u32 + 1);
        for e in &self.endpoints {
            put_compact_string(&mut buf, &e.name);
            put_compact_string(&mut buf, &e.host);
            buf.put_u16(e.port);
            buf.put_i16(e.security_protocol);
            put_uvarint(&mut buf, 0);
        }
        put_uvarint(&mut buf, self.features.len() as u32 + 1);
        for f in &self.features {
            put_compact_string(&mut buf, &f.name);
            buf.put_i16(f.min_supported_version);
            buf.put_i16(f.max_supported_version);
            put_uvarint(&mut buf, 0);
        }
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part (after the frame) at version 0; tagged
    /// fields are skipped.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = Reader {
            bytes: message,
            position: 0,
        };
        let controller_id = r.i32()?;
        let mut id = [0u8; 16];
        id.copy_from_slice(r.take(16)?);
        let zk_migration_ready = r.take(1)?[0] != 0;
        let endpoint_count = r.uvarint()?.saturating_sub(1);
        let mut endpoints = Vec::new();
        for _ in 0..endpoint_count {
            let name = r.compact_string()?;
            let host = r.compact_string()?;
            let port = r.i16()? as u16;
            let security_protocol = r.i16()?;
            r.skip_tagged_fields()?;
            endpoints.push(ControllerEndpoint {
                name,
                host,
                port,
                security_protocol,
            });
        }
        let feature_count = r.uvarint()?.saturating_sub(1);
        let mut features = Vec::new();
        for _ in 0..feature_count {
            let name = r.compact_string()?;
            let min_supported_version = r.i16()?;
            let max_supported_version = r.i16()?;
            r.skip_tagged_fields()?;
            features.push(ControllerFeature {
                name,
                min_supported_version,
                max_supported_version,
            });
        }
        r.skip_tagged_fields()?;
        Ok(Self {
            controller_id,
            incarnation_id: uuid::Uuid::from_bytes(id),
            zk_migration_ready,
            endpoints,
            features,
        })
    }
}

#[cfg(test)]
mod register_controller_tests {
    use super::*;

    /// Golden bytes of a framed RegisterControllerRecord, field by field:
    /// the bytes Kafka 4.1.2's `MetadataRecordSerde.write` gives for the same
    /// record (checked with Kafka's jars, see docs/metadata.md).
    #[test]
    fn a_register_controller_record_is_framed_as_kafka_frames_it() {
        let record = RegisterControllerRecord {
            controller_id: 3000,
            incarnation_id: uuid::Uuid::from_bytes([
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
            ]),
            zk_migration_ready: false,
            endpoints: vec![ControllerEndpoint {
                name: "CONTROLLER".into(),
                host: "c-0".into(),
                port: 9093,
                security_protocol: 0,
            }],
            features: vec![ControllerFeature {
                name: "kraft.version".into(),
                min_supported_version: 0,
                max_supported_version: 1,
            }],
        };
        let mut expected = vec![
            0x01, // frame version 1
            0x1b, // api key 27: REGISTER_CONTROLLER_RECORD
            0x00, // version 0
            0x00, 0x00, 0x0b, 0xb8, // ControllerId int32 = 3000
        ];
        expected.extend(0u8..16); // IncarnationId uuid
        expected.push(0x00); // ZkMigrationReady false
        expected.push(0x02); // EndPoints: compact array of 1
        expected.push(0x0b); // Name: compact string, 10 + 1
        expected.extend_from_slice(b"CONTROLLER");
        expected.push(0x04); // Host: compact string, 3 + 1
        expected.extend_from_slice(b"c-0");
        expected.extend_from_slice(&[0x23, 0x85]); // Port uint16 = 9093
        expected.extend_from_slice(&[0x00, 0x00]); // SecurityProtocol PLAINTEXT
        expected.push(0x00); // endpoint: no tagged fields
        expected.push(0x02); // Features: compact array of 1
        expected.push(0x0e); // Name: compact string, 13 + 1
        expected.extend_from_slice(b"kraft.version");
        expected.extend_from_slice(&[0x00, 0x00]); // MinSupportedVersion 0
        expected.extend_from_slice(&[0x00, 0x01]); // MaxSupportedVersion 1
        expected.push(0x00); // feature: no tagged fields
        expected.push(0x00); // record: no tagged fields
        let bytes = record.encode_framed();
        assert_eq!(&bytes[..], &expected[..]);
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert_eq!((framed.api_key, framed.version), (27, 0));
        assert_eq!(
            RegisterControllerRecord::decode_message(&framed.message).expect("message"),
            record
        );
    }

    #[test]
    fn a_truncated_register_controller_record_is_an_error_naming_the_position() {
        let bytes = RegisterControllerRecord {
            controller_id: 1,
            incarnation_id: uuid::Uuid::nil(),
            zk_migration_ready: false,
            endpoints: vec![],
            features: vec![],
        }
        .encode_framed();
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert!(matches!(
            RegisterControllerRecord::decode_message(&framed.message[..10]),
            Err(RecordsError::Truncated { position: 4 })
        ));
    }
}

impl RegisterControllerRecord {
    /// The record the active controller writes for a ControllerRegistration
    /// request (Kafka's `ClusterControlManager.registerController`): the
    /// request's id, incarnation, listeners and features;
    /// `ZkMigrationReady` is always written false, as Kafka 4.1 does.
    pub fn from_request(request: &kafka_protocol::messages::ControllerRegistrationRequest) -> Self {
        Self {
            controller_id: request.controller_id,
            incarnation_id: request.incarnation_id,
            zk_migration_ready: false,
            endpoints: request
                .listeners
                .iter()
                .map(|l| ControllerEndpoint {
                    name: l.name.to_string(),
                    host: l.host.to_string(),
                    port: l.port,
                    security_protocol: l.security_protocol,
                })
                .collect(),
            features: request
                .features
                .iter()
                .map(|f| ControllerFeature {
                    name: f.name.to_string(),
                    min_supported_version: f.min_supported_version,
                    max_supported_version: f.max_supported_version,
                })
                .collect(),
        }
    }

    /// The ControllerRegistration (API 70) request that registers this
    /// record's controller: same fields, same order.
    pub fn to_request(&self) -> kafka_protocol::messages::ControllerRegistrationRequest {
        use kafka_protocol::{
            messages::controller_registration_request::{Feature, Listener},
            protocol::StrBytes,
        };
        kafka_protocol::messages::ControllerRegistrationRequest::default()
            .with_controller_id(self.controller_id)
            .with_incarnation_id(self.incarnation_id)
            .with_zk_migration_ready(self.zk_migration_ready)
            .with_listeners(
                self.endpoints
                    .iter()
                    .map(|e| {
                        Listener::default()
                            .with_name(StrBytes::from_string(e.name.clone()))
                            .with_host(StrBytes::from_string(e.host.clone()))
                            .with_port(e.port)
                            .with_security_protocol(e.security_protocol)
                    })
                    .collect(),
            )
            .with_features(
                self.features
                    .iter()
                    .map(|f| {
                        Feature::default()
                            .with_name(StrBytes::from_string(f.name.clone()))
                            .with_min_supported_version(f.min_supported_version)
                            .with_max_supported_version(f.max_supported_version)
                    })
                    .collect(),
            )
    }
}

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
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`].
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
    use kafka_protocol::protocol::Encodable;

    use super::*;

    #[test]
    fn register_controller_record_bodies_equal_kafka_protocols_controller_registration_request_v0()
    {
        // Same fields, types and order in Kafka 4.1's RegisterControllerRecord
        // v0 and ControllerRegistrationRequest v0: the generated encoder of
        // the request checks ours byte for byte.
        let record = RegisterControllerRecord {
            controller_id: 2,
            incarnation_id: uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677),
            zk_migration_ready: false,
            endpoints: vec![
                ControllerEndpoint {
                    name: "CONTROLLER".into(),
                    host: "kq-2.kq.default.svc".into(),
                    port: 65_000,
                    security_protocol: 0,
                },
                ControllerEndpoint {
                    name: "SSL".into(),
                    host: "10.0.0.2".into(),
                    port: 9094,
                    security_protocol: 1,
                },
            ],
            features: vec![
                ControllerFeature {
                    name: "metadata.version".into(),
                    min_supported_version: 7,
                    max_supported_version: 27,
                },
                ControllerFeature {
                    name: "kraft.version".into(),
                    min_supported_version: 0,
                    max_supported_version: 1,
                },
            ],
        };
        let mut by_kafka_protocol = BytesMut::new();
        record
            .to_request()
            .encode(&mut by_kafka_protocol, 0)
            .expect("encodes at v0");
        let framed = FramedRecord::decode(&record.encode_framed()).expect("frame");
        assert_eq!(&framed.message[..], &by_kafka_protocol[..]);
        assert_eq!(
            RegisterControllerRecord::from_request(&record.to_request()),
            record
        );
        assert_eq!(
            RegisterControllerRecord::decode_message(&by_kafka_protocol).expect("decodes"),
            record
        );
    }

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
        for retired in [6, 13, 16, 29] {
            assert_eq!(metadata_record_type_name(retired), None, "{retired}");
        }
    }

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
