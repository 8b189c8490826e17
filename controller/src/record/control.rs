//! KRaft control records: the record key (version, type) and the values, whose
//! schemas are the `kafka-protocol` crate's generated messages.
//!
//! Key layout (Kafka's `ControlRecordType`): int16 version (0), int16 type.
//! Value: the message encoded at its current version (0 for all five), with
//! no version prefix, as Kafka's `ControlRecordUtils` reads them.

use bytes::{Bytes, BytesMut};
pub use kafka_protocol::messages::{
    KRaftVersionRecord, LeaderChangeMessage, SnapshotFooterRecord, SnapshotHeaderRecord,
    VotersRecord,
};
use kafka_protocol::protocol::{Decodable, Encodable};

use super::{RecordError, Result};

/// Control record types used by KRaft (Kafka's `ControlRecordType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum ControlRecordType {
    /// A new leader's first record of its epoch.
    LeaderChange = 2,
    /// First record of a snapshot.
    SnapshotHeader = 3,
    /// Last record of a snapshot.
    SnapshotFooter = 4,
    /// The finalized `kraft.version` (KIP-853).
    KRaftVersion = 5,
    /// The voter set (KIP-853; Kafka's `KRAFT_VOTERS`).
    KRaftVoters = 6,
}

impl ControlRecordType {
    /// Maps a type id to the enum; `None` for ids KRaft does not use here.
    pub fn from_id(id: i16) -> Option<Self> {
        Some(match id {
            2 => Self::LeaderChange,
            3 => Self::SnapshotHeader,
            4 => Self::SnapshotFooter,
            5 => Self::KRaftVersion,
            6 => Self::KRaftVoters,
            _ => return None,
        })
    }

    /// Kafka's name of the type, as `kafka-dump-log` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Self::LeaderChange => "LEADER_CHANGE",
            Self::SnapshotHeader => "SNAPSHOT_HEADER",
            Self::SnapshotFooter => "SNAPSHOT_FOOTER",
            Self::KRaftVersion => "KRAFT_VERSION",
            Self::KRaftVoters => "KRAFT_VOTERS",
        }
    }
}

/// A decoded control record.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlRecord {
    /// LeaderChangeMessage (type 2).
    LeaderChange(LeaderChangeMessage),
    /// SnapshotHeaderRecord (type 3).
    SnapshotHeader(SnapshotHeaderRecord),
    /// SnapshotFooterRecord (type 4).
    SnapshotFooter(SnapshotFooterRecord),
    /// KRaftVersionRecord (type 5).
    KRaftVersion(KRaftVersionRecord),
    /// VotersRecord (type 6).
    Voters(VotersRecord),
}

const CONTROL_KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

fn codec_err(action: &'static str) -> impl FnOnce(anyhow::Error) -> RecordError {
    move |source| RecordError::Codec { action, source }
}

impl ControlRecord {
    /// The record's type.
    pub fn record_type(&self) -> ControlRecordType {
        match self {
            Self::LeaderChange(_) => ControlRecordType::LeaderChange,
            Self::SnapshotHeader(_) => ControlRecordType::SnapshotHeader,
            Self::SnapshotFooter(_) => ControlRecordType::SnapshotFooter,
            Self::KRaftVersion(_) => ControlRecordType::KRaftVersion,
            Self::Voters(_) => ControlRecordType::KRaftVoters,
        }
    }

    /// The 4-byte key: version 0, then the type id.
    pub fn encode_key(&self) -> Bytes {
        let mut key = BytesMut::with_capacity(4);
        key.extend_from_slice(&CONTROL_KEY_VERSION.to_be_bytes());
        key.extend_from_slice(&(self.record_type() as i16).to_be_bytes());
        key.freeze()
    }

    /// The value: the message at version 0.
    pub fn encode_value(&self) -> Result<Bytes> {
        let mut buf = BytesMut::new();
        let encoded = match self {
            Self::LeaderChange(m) => m.encode(&mut buf, VALUE_VERSION),
            Self::SnapshotHeader(m) => m.encode(&mut buf, VALUE_VERSION),
            Self::SnapshotFooter(m) => m.encode(&mut buf, VALUE_VERSION),
            Self::KRaftVersion(m) => m.encode(&mut buf, VALUE_VERSION),
            Self::Voters(m) => m.encode(&mut buf, VALUE_VERSION),
        };
        encoded.map_err(codec_err("encoding control record"))?;
        Ok(buf.freeze())
    }

    /// Reads the type from a control record key.
    ///
    /// Errors: [`RecordError::Invalid`] for a missing or short key, an unknown
    /// key version or type (`offset` names the record).
    pub fn decode_type(key: Option<&[u8]>, offset: i64) -> Result<ControlRecordType> {
        let invalid = |reason: String| RecordError::Invalid {
            base_offset: offset,
            reason,
        };
        let key = key.ok_or_else(|| invalid("control record without a key".into()))?;
        if key.len() < 4 {
            return Err(invalid(format!(
                "control record key of {} bytes",
                key.len()
            )));
        }
        let version = i16::from_be_bytes([key[0], key[1]]);
        if version != CONTROL_KEY_VERSION {
            return Err(invalid(format!("control record key version {version}")));
        }
        let id = i16::from_be_bytes([key[2], key[3]]);
        ControlRecordType::from_id(id)
            .ok_or_else(|| invalid(format!("unknown control record type {id}")))
    }

    /// Decodes a control record from its key and value.
    ///
    /// Errors: as [`Self::decode_type`], or a value the schema rejects.
    pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>, offset: i64) -> Result<Self> {
        let record_type = Self::decode_type(key, offset)?;
        let mut value = Bytes::copy_from_slice(value.ok_or_else(|| RecordError::Invalid {
            base_offset: offset,
            reason: "control record without a value".into(),
        })?);
        let action = "decoding control record";
        // kafka-protocol reserves arrays by the count it reads: refuse counts
        // the bytes left cannot hold before it does (a 61 GB Voters record
        // aborted the process; wire/schema_guard.rs).
        let schema = match record_type {
            ControlRecordType::LeaderChange => "LeaderChangeMessage",
            ControlRecordType::SnapshotHeader => "SnapshotHeaderRecord",
            ControlRecordType::SnapshotFooter => "SnapshotFooterRecord",
            ControlRecordType::KRaftVersion => "KRaftVersionRecord",
            ControlRecordType::KRaftVoters => "VotersRecord",
        };
        crate::wire::schema_guard::check_message(schema, VALUE_VERSION, &value).map_err(
            |reason| RecordError::Invalid {
                base_offset: offset,
                reason: format!("{action}: {reason}"),
            },
        )?;
        // `kafka-protocol` decodes the nested voters of LeaderChange and
        // Voters at the version their `Version` field holds (the field
        // shadows the schema version in its generated code), where Kafka
        // reads them at version 0: such a record would be read with another
        // layout than the one checked above, and not encode again. Kafka
        // writes 0 there; anything else is refused.
        if matches!(
            record_type,
            ControlRecordType::LeaderChange | ControlRecordType::KRaftVoters
        ) {
            let field = value.get(..2).map(|v| i16::from_be_bytes([v[0], v[1]]));
            if field != Some(VALUE_VERSION) {
                return Err(RecordError::Invalid {
                    base_offset: offset,
                    reason: format!(
                        "{action}: {} record with version field {field:?} (Kafka writes {VALUE_VERSION})",
                        record_type.name()
                    ),
                });
            }
        }
        Ok(match record_type {
            ControlRecordType::LeaderChange => Self::LeaderChange(
                LeaderChangeMessage::decode(&mut value, VALUE_VERSION)
                    .map_err(codec_err(action))?,
            ),
            ControlRecordType::SnapshotHeader => Self::SnapshotHeader(
                SnapshotHeaderRecord::decode(&mut value, VALUE_VERSION)
                    .map_err(codec_err(action))?,
            ),
            ControlRecordType::SnapshotFooter => Self::SnapshotFooter(
                SnapshotFooterRecord::decode(&mut value, VALUE_VERSION)
                    .map_err(codec_err(action))?,
            ),
            ControlRecordType::KRaftVersion => Self::KRaftVersion(
                KRaftVersionRecord::decode(&mut value, VALUE_VERSION).map_err(codec_err(action))?,
            ),
            ControlRecordType::KRaftVoters => Self::Voters(
                VotersRecord::decode(&mut value, VALUE_VERSION).map_err(codec_err(action))?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// The `control_record` fuzz finding (docs/fuzzing.md): a Voters value
    /// whose first voter's endpoint array announces ~2^32 entries made
    /// `kafka-protocol` reserve 61 GB and abort the process. It is refused.
    #[test]
    fn a_voters_value_with_an_impossible_endpoint_count_is_refused_not_allocated() {
        let input = unhex(concat!(
            "0400000006000004000000",
            "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
            "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
            "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
            "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2",
            "b2b2b2b2b2b201000000000000040000000400000000001001020b0af4434f4e5410",
            "01020b0af46c6f63616c686f733d23870010000001000000",
        ));
        // The fuzz target's layout: key length, key, value.
        let (key, value) = input[1..].split_at(usize::from(input[0]));
        assert_eq!(
            ControlRecord::decode_type(Some(key), 0).expect("a Voters key"),
            ControlRecordType::KRaftVoters
        );
        let e = ControlRecord::decode(Some(key), Some(value), 0).expect_err("refused");
        assert!(e.to_string().contains("cannot fit"), "{e}");
    }

    /// A fuzz finding once the allocation was guarded: a tag that is
    /// negative as Kafka's int32 (0xffffffff) decoded, but `kafka-protocol`
    /// leaves such a field out when encoding while still counting it, so the
    /// record did not round-trip. Such tags are refused.
    #[test]
    fn a_tagged_field_with_a_negative_tag_is_refused() {
        let key = [0u8, 0, 0, 5];
        let value = unhex(concat!(
            "00000001080000ff04000000ffffffffff050000ffff02020202020202020202020202",
            "020200010800000000000000020202027e00",
        ));
        let e = ControlRecord::decode(Some(&key), Some(&value), 0).expect_err("refused");
        assert!(e.to_string().contains("tag"), "{e}");
    }

    /// A fuzz finding: a LeaderChange whose `Version` field is 1 was
    /// decoded with voter directory ids (kafka-protocol reads the voters at
    /// that version) and then did not encode. It is refused.
    #[test]
    fn a_leader_change_or_voters_record_with_a_version_field_other_than_0_is_refused() {
        let key = [0u8, 0, 0, 2];
        let value = unhex(concat!(
            "00010000000203000000010202020202020202020202020202010001000200000100",
            "000000000300000000000000000000000000000100",
        ));
        let e = ControlRecord::decode(Some(&key), Some(&value), 0).expect_err("refused");
        assert!(e.to_string().contains("version field"), "{e}");
        let voters = ControlRecord::Voters(VotersRecord::default().with_version(1));
        let value = voters.encode_value().expect("encodes");
        assert!(ControlRecord::decode(Some(&voters.encode_key()), Some(&value), 0).is_err());
    }

    #[test]
    fn every_control_record_still_decodes() {
        let records = [
            ControlRecord::LeaderChange(LeaderChangeMessage::default().with_leader_id(3.into())),
            ControlRecord::SnapshotHeader(SnapshotHeaderRecord::default()),
            ControlRecord::SnapshotFooter(SnapshotFooterRecord::default()),
            ControlRecord::KRaftVersion(KRaftVersionRecord::default().with_k_raft_version(1)),
            ControlRecord::Voters(VotersRecord::default()),
        ];
        for record in records {
            let value = record.encode_value().expect("encodes");
            let again = ControlRecord::decode(Some(&record.encode_key()), Some(&value), 0)
                .expect("decodes");
            assert_eq!(again, record);
        }
    }
}
