//! AccessControlEntryRecord (api key 18) and RemoveAccessControlEntryRecord
//! (api key 19), Kafka's stored ACLs (`AclControlManager`), both version 0,
//! flexible.
//!
//! Owns their byte layout; what an ACL means is `crate::acl`'s.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::{FramedRecord, Reader, RecordsError, put_compact_string, put_uvarint};

/// Api key of AccessControlEntryRecord
/// (`MetadataRecordType.ACCESS_CONTROL_ENTRY_RECORD`).
pub const ACCESS_CONTROL_ENTRY_RECORD_API_KEY: u32 = 18;
/// Api key of RemoveAccessControlEntryRecord.
pub const REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY: u32 = 19;

/// AccessControlEntryRecord v0: `Id` uuid, `ResourceType` int8,
/// `ResourceName` compact string, `PatternType` int8, `Principal` compact
/// string, `Host` compact string, `Operation` int8, `PermissionType` int8,
/// tagged fields. Codes are Kafka's (`crate::acl`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControlEntryRecord {
    /// The ACL's id.
    pub id: Uuid,
    /// `ResourceType` code (4: CLUSTER).
    pub resource_type: i8,
    /// Resource name (`kafka-cluster` for the cluster).
    pub resource_name: String,
    /// `PatternType` code (3: LITERAL, 4: PREFIXED).
    pub pattern_type: i8,
    /// `Type:name`, e.g. `User:alice`, or `User:*`.
    pub principal: String,
    /// Host, or `*`.
    pub host: String,
    /// `AclOperation` code (9: CLUSTER_ACTION).
    pub operation: i8,
    /// `AclPermissionType` code (2: DENY, 3: ALLOW).
    pub permission_type: i8,
}

impl AccessControlEntryRecord {
    /// The record value as stored in a batch.
    pub fn encode_framed(&self) -> Bytes {
        let mut m = BytesMut::new();
        m.put_slice(self.id.as_bytes());
        m.put_i8(self.resource_type);
        put_compact_string(&mut m, &self.resource_name);
        m.put_i8(self.pattern_type);
        put_compact_string(&mut m, &self.principal);
        put_compact_string(&mut m, &self.host);
        m.put_i8(self.operation);
        m.put_i8(self.permission_type);
        put_uvarint(&mut m, 0); // no tagged fields
        FramedRecord {
            api_key: ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
            version: 0,
            message: m.freeze(),
        }
        .encode()
    }

    /// Decodes the message (after the frame) of a v0 record.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = Reader {
            bytes: message,
            position: 0,
        };
        let id = r.uuid()?;
        let i8_ = |r: &mut Reader<'_>| r.take(1).map(|b| b[0] as i8);
        let resource_type = i8_(&mut r)?;
        let resource_name = r.compact_string()?;
        let pattern_type = i8_(&mut r)?;
        let principal = r.compact_string()?;
        let host = r.compact_string()?;
        let operation = i8_(&mut r)?;
        let permission_type = i8_(&mut r)?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            id,
            resource_type,
            resource_name,
            pattern_type,
            principal,
            host,
            operation,
            permission_type,
        })
    }
}

/// A framed RemoveAccessControlEntryRecord v0 of ACL `id`.
pub fn remove_access_control_entry_record(id: Uuid) -> Bytes {
    let mut m = BytesMut::new();
    m.put_slice(id.as_bytes());
    put_uvarint(&mut m, 0);
    FramedRecord {
        api_key: REMOVE_ACCESS_CONTROL_ENTRY_RECORD_API_KEY,
        version: 0,
        message: m.freeze(),
    }
    .encode()
}

/// The id a RemoveAccessControlEntryRecord v0 message removes.
///
/// Errors: [`RecordsError::Truncated`].
pub fn decode_remove_access_control_entry(message: &[u8]) -> Result<Uuid, RecordsError> {
    let mut r = Reader {
        bytes: message,
        position: 0,
    };
    let id = r.uuid()?;
    r.skip_tagged_fields()?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    const ID: Uuid = Uuid::from_bytes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);

    // Golden bytes from Kafka 4.4.0's MetadataRecordSerde (jshell).
    #[test]
    fn an_access_control_entry_record_is_kafkas_bytes() {
        let golden = hex(concat!(
            "01",                               // frame version 1
            "12",                               // api key 18
            "00",                               // version 0
            "0102030405060708090a0b0c0d0e0f10", // Id
            "04",                               // ResourceType CLUSTER
            "0e",                               // ResourceName: length 13 + 1
            "6b61666b612d636c7573746572",       // "kafka-cluster"
            "03",                               // PatternType LITERAL
            "0f",                               // Principal: length 14 + 1
            "557365723a434e3d62726f6b6572",     // "User:CN=broker"
            "02",                               // Host: length 1 + 1
            "2a",                               // "*"
            "09",                               // Operation CLUSTER_ACTION
            "03",                               // PermissionType ALLOW
            "00",                               // no tagged fields
        ));
        let record = AccessControlEntryRecord {
            id: ID,
            resource_type: 4,
            resource_name: "kafka-cluster".into(),
            pattern_type: 3,
            principal: "User:CN=broker".into(),
            host: "*".into(),
            operation: 9,
            permission_type: 3,
        };
        assert_eq!(record.encode_framed().to_vec(), golden);
        let framed = FramedRecord::decode(&golden).expect("frame");
        assert_eq!(
            AccessControlEntryRecord::decode_message(&framed.message).expect("decodes"),
            record
        );
    }

    #[test]
    fn a_remove_access_control_entry_record_is_kafkas_bytes() {
        let golden = hex(concat!(
            "01",                               // frame version 1
            "13",                               // api key 19
            "00",                               // version 0
            "0102030405060708090a0b0c0d0e0f10", // Id
            "00",                               // no tagged fields
        ));
        assert_eq!(remove_access_control_entry_record(ID).to_vec(), golden);
        let framed = FramedRecord::decode(&golden).expect("frame");
        assert_eq!(
            decode_remove_access_control_entry(&framed.message).expect("decodes"),
            ID
        );
        assert!(decode_remove_access_control_entry(&framed.message[..5]).is_err());
    }
}
