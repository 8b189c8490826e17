//! RegisterControllerRecord (api key 27, KIP-919): a controller's
//! registration, with its endpoints and supported features; and
//! UnregisterControllerRecord (api key 29, KIP-1312, Kafka 4.4), which
//! removes it.
//!
//! Owns its byte layout; it must not decide who registers (that is
//! `metadata::registration`).

use bytes::{BufMut, Bytes, BytesMut};

use super::{FRAME_VERSION, Reader, RecordsError, put_compact_string, put_uvarint};

/// Api key of RegisterControllerRecord
/// (`MetadataRecordType.REGISTER_CONTROLLER_RECORD`, KIP-919; 27 in Kafka
/// 4.1's `RegisterControllerRecord.json`).
pub const REGISTER_CONTROLLER_RECORD_API_KEY: u32 = 27;

/// Api key of UnregisterControllerRecord
/// (`MetadataRecordType.UNREGISTER_CONTROLLER_RECORD`, KIP-1312; 29 in Kafka
/// 4.4.0's `UnregisterControllerRecord.json`).
pub const UNREGISTER_CONTROLLER_RECORD_API_KEY: u32 = 29;

/// UnregisterControllerRecord (api key 29, version 0, flexible; KIP-1312,
/// Kafka 4.4): the registration of `controller_id` is gone. Fields:
/// `ControllerId` int32, then tagged fields. Kafka's
/// `ClusterControlManager.unregisterController` writes it only at
/// `metadata.version` 4.4-IV2 (level 33) or later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnregisterControllerRecord {
    /// The id of the controller whose registration is removed.
    pub controller_id: i32,
}

impl UnregisterControllerRecord {
    /// The record value as stored in a batch: frame version 1, api key 29,
    /// version 0, `ControllerId`, no tagged fields (8 bytes).
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = BytesMut::new();
        put_uvarint(&mut buf, FRAME_VERSION);
        put_uvarint(&mut buf, UNREGISTER_CONTROLLER_RECORD_API_KEY);
        put_uvarint(&mut buf, 0);
        buf.put_i32(self.controller_id);
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
        let controller_id = r.i32()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self { controller_id })
    }
}

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
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
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
        r.finish()?;
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
mod unregister_controller_tests {
    use super::*;
    use crate::metadata::records::*;

    /// Golden bytes from Kafka 4.4.0's `MetadataRecordSerde.write` of
    /// `new UnregisterControllerRecord().setControllerId(3000)` at version 0
    /// (`controller/tests/golden/unregister-controller-golden.jsh`, line
    /// `RECORD_29_V0 011d0000000bb800`).
    #[test]
    fn an_unregister_controller_record_is_framed_as_kafka_4_4_frames_it() {
        let expected = [
            0x01, // frame version 1
            0x1d, // api key 29: UNREGISTER_CONTROLLER_RECORD
            0x00, // version 0
            0x00, 0x00, 0x0b, 0xb8, // ControllerId int32 = 3000
            0x00, // no tagged fields
        ];
        let record = UnregisterControllerRecord {
            controller_id: 3000,
        };
        let bytes = record.encode_framed();
        assert_eq!(&bytes[..], &expected[..]);
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert_eq!((framed.api_key, framed.version), (29, 0));
        assert_eq!(
            UnregisterControllerRecord::decode_message(&framed.message),
            Ok(record)
        );
        assert_eq!(
            metadata_record_type_name(framed.api_key),
            Some("UNREGISTER_CONTROLLER_RECORD")
        );
    }

    #[test]
    fn a_truncated_unregister_controller_record_is_an_error_naming_the_position() {
        assert_eq!(
            UnregisterControllerRecord::decode_message(&[0x00, 0x00, 0x0b]),
            Err(RecordsError::Truncated { position: 0 })
        );
        assert_eq!(
            UnregisterControllerRecord::decode_message(&[0x00, 0x00, 0x0b, 0xb8]),
            Err(RecordsError::Truncated { position: 4 })
        );
    }

    /// Kafka's `AbstractApiMessageSerde.read` refuses a record with bytes
    /// after its last field ("Found 1 byte(s) of garbage after ...").
    #[test]
    fn an_unregister_controller_record_with_bytes_after_its_tagged_fields_is_refused() {
        assert_eq!(
            UnregisterControllerRecord::decode_message(&[0x00, 0x00, 0x0b, 0xb8, 0x00, 0x07]),
            Err(RecordsError::Garbage(1))
        );
    }

    /// Kafka's `ByteUtils.readUnsignedVarint` stops at 5 bytes: a fifth byte
    /// with its continuation bit is "Varint is too long".
    #[test]
    fn a_tagged_field_count_longer_than_five_bytes_is_refused() {
        assert_eq!(
            UnregisterControllerRecord::decode_message(&[
                0x00, 0x00, 0x0b, 0xb8, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00
            ]),
            Err(RecordsError::VarintTooLong { position: 4 })
        );
        assert_eq!(
            FramedRecord::decode(&[0x81, 0x80, 0x80, 0x80, 0x80, 0x00]),
            Err(RecordsError::VarintTooLong { position: 0 })
        );
    }
}

#[cfg(test)]
mod register_controller_tests {
    use super::*;
    use crate::metadata::records::*;

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

    /// Controller 1's framed registration without endpoints or features.
    fn bare_record() -> Bytes {
        RegisterControllerRecord {
            controller_id: 1,
            incarnation_id: uuid::Uuid::nil(),
            zk_migration_ready: false,
            endpoints: vec![],
            features: vec![],
        }
        .encode_framed()
    }

    #[test]
    fn a_truncated_register_controller_record_is_an_error_naming_the_position() {
        let bytes = bare_record();
        let framed = FramedRecord::decode(&bytes).expect("frame");
        assert!(matches!(
            RegisterControllerRecord::decode_message(&framed.message[..10]),
            Err(RecordsError::Truncated { position: 4 })
        ));
    }

    #[test]
    fn a_register_controller_record_with_bytes_after_its_tagged_fields_is_refused() {
        let bytes = bare_record();
        let mut message = FramedRecord::decode(&bytes)
            .expect("frame")
            .message
            .to_vec();
        message.extend_from_slice(&[0x00, 0x00]);
        assert_eq!(
            RegisterControllerRecord::decode_message(&message),
            Err(RecordsError::Garbage(2))
        );
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

#[cfg(test)]
mod kafka_4_1_schema_tests {
    use kafka_protocol::protocol::Encodable;

    use super::*;
    use crate::metadata::records::*;

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
}
