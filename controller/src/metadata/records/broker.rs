//! The broker records of the metadata log (Kafka 4.4's
//! `common/metadata/*.json`): RegisterBrokerRecord (0, v0-4),
//! UnregisterBrokerRecord (1, v0), FenceBrokerRecord (7, v0),
//! UnfenceBrokerRecord (8, v0) and BrokerRegistrationChangeRecord (17, v0-3).
//! All versions are flexible (compact strings and arrays, tagged fields).
//!
//! Which version is written follows Kafka 4.4's controller:
//! [`register_broker_record_version`] is `MetadataVersion.registerBrokerRecordVersion`;
//! Kafka's `ReplicationControlManager` writes BrokerRegistrationChangeRecord
//! v0 to fence or unfence, v1 for controlled shutdown, v2 for log dirs and v3
//! for cordoned log dirs; it never writes Fence/UnfenceBrokerRecord at a
//! `metadata.version` of 3.3-IV3 or later (they are decoded, for older logs).
//!
//! A field a version does not hold is left out when encoding at that version
//! (Kafka's serializer throws instead; the callers here never set one).
//! Owns the byte layout; it must not decide who is registered or fenced.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::{FRAME_VERSION, Reader, RecordsError, put_compact_string, put_uvarint};

/// `MetadataRecordType.REGISTER_BROKER_RECORD`.
pub const REGISTER_BROKER_RECORD_API_KEY: u32 = 0;
/// `MetadataRecordType.UNREGISTER_BROKER_RECORD`.
pub const UNREGISTER_BROKER_RECORD_API_KEY: u32 = 1;
/// `MetadataRecordType.FENCE_BROKER_RECORD`.
pub const FENCE_BROKER_RECORD_API_KEY: u32 = 7;
/// `MetadataRecordType.UNFENCE_BROKER_RECORD`.
pub const UNFENCE_BROKER_RECORD_API_KEY: u32 = 8;
/// `MetadataRecordType.BROKER_REGISTRATION_CHANGE_RECORD`.
pub const BROKER_REGISTRATION_CHANGE_RECORD_API_KEY: u32 = 17;
/// Highest RegisterBrokerRecord version of Kafka 4.4.
pub const REGISTER_BROKER_RECORD_MAX_VERSION: u32 = 4;
/// Highest BrokerRegistrationChangeRecord version of Kafka 4.4.
pub const BROKER_REGISTRATION_CHANGE_RECORD_MAX_VERSION: u32 = 3;

/// The RegisterBrokerRecord version Kafka 4.4 writes at `metadata.version`
/// feature level `level` (`MetadataVersion.registerBrokerRecordVersion`):
/// 1 below 3.4-IV0 (8), 2 below 3.7-IV2 (17, directory assignment), 3 below
/// 4.3-IV0 (30, cordoned log dirs), 4 from there.
pub fn register_broker_record_version(level: i16) -> u32 {
    match level {
        ..=7 => 1,
        8..=16 => 2,
        17..=29 => 3,
        _ => 4,
    }
}

/// Whether `metadata.version` level `level` has directory assignment
/// (3.7-IV2, 17; `MetadataVersion.isDirectoryAssignmentSupported`): brokers
/// must then register log directories.
pub fn directory_assignment_supported(level: i16) -> bool {
    level >= 17
}

/// One listener of a registered broker (`BrokerEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    /// Listener name, e.g. `PLAINTEXT`.
    pub name: String,
    /// Host name.
    pub host: String,
    /// Port (uint16).
    pub port: u16,
    /// Kafka's `SecurityProtocol` id.
    pub security_protocol: i16,
}

/// One supported feature range of a registered broker (`BrokerFeature`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerFeature {
    /// Feature name.
    pub name: String,
    /// Lowest supported level.
    pub min_supported_version: i16,
    /// Highest supported level.
    pub max_supported_version: i16,
}

/// RegisterBrokerRecord (api key 0). Fields in order: `BrokerId` int32,
/// `IsMigratingZkBroker` bool (v2+), `IncarnationId` uuid, `BrokerEpoch`
/// int64, `EndPoints` compact array (`Name`, `Host`, `Port` uint16,
/// `SecurityProtocol` int16, tagged fields), `Features` compact array
/// (`Name`, `MinSupportedVersion` int16, `MaxSupportedVersion` int16, tagged
/// fields), `Rack` nullable compact string, `Fenced` bool,
/// `InControlledShutdown` bool (v1+), tagged fields: 0 `LogDirs` uuid array
/// (v3+), 1 `CordonedLogDirs` nullable uuid array (v4+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBrokerRecord {
    /// The broker's id.
    pub broker_id: i32,
    /// Always false here (no ZooKeeper migration).
    pub is_migrating_zk_broker: bool,
    /// Random id of the broker process run.
    pub incarnation_id: Uuid,
    /// The broker epoch: the offset of the record that established it.
    pub broker_epoch: i64,
    /// Listeners.
    pub endpoints: Vec<BrokerEndpoint>,
    /// Supported feature ranges.
    pub features: Vec<BrokerFeature>,
    /// Rack, if any.
    pub rack: Option<String>,
    /// Whether the broker is fenced.
    pub fenced: bool,
    /// Whether it is in controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// Online log directories (v3+).
    pub log_dirs: Vec<Uuid>,
    /// Cordoned log directories, `None` when not sent yet (v4+).
    pub cordoned_log_dirs: Option<Vec<Uuid>>,
}

pub(super) fn put_uuids(buf: &mut BytesMut, ids: &[Uuid]) {
    put_uvarint(buf, ids.len() as u32 + 1);
    for id in ids {
        buf.put_slice(id.as_bytes());
    }
}

/// Appends one tagged field: tag, size, bytes.
pub(super) fn put_tagged(buf: &mut BytesMut, tag: u32, value: &[u8]) {
    put_uvarint(buf, tag);
    put_uvarint(buf, value.len() as u32);
    buf.put_slice(value);
}

pub(super) fn framed(api_key: u32, version: u32) -> BytesMut {
    let mut buf = BytesMut::new();
    put_uvarint(&mut buf, FRAME_VERSION);
    put_uvarint(&mut buf, api_key);
    put_uvarint(&mut buf, version);
    buf
}

impl Reader<'_> {
    pub(super) fn i64(&mut self) -> Result<i64, RecordsError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    pub(super) fn uuid(&mut self) -> Result<Uuid, RecordsError> {
        let mut id = [0u8; 16];
        id.copy_from_slice(self.take(16)?);
        Ok(Uuid::from_bytes(id))
    }
    fn bool(&mut self) -> Result<bool, RecordsError> {
        Ok(self.take(1)?[0] != 0)
    }
    /// A nullable compact uuid array: length 0 is null.
    pub(super) fn nullable_uuids(&mut self) -> Result<Option<Vec<Uuid>>, RecordsError> {
        let n = self.uvarint()?;
        if n == 0 {
            return Ok(None);
        }
        let mut out = Vec::new();
        for _ in 0..n - 1 {
            out.push(self.uuid()?);
        }
        Ok(Some(out))
    }
    /// The tagged fields section as `(tag, bytes)` pairs.
    pub(super) fn tagged_fields(&mut self) -> Result<Vec<(u32, &[u8])>, RecordsError> {
        let count = self.uvarint()?;
        let mut out = Vec::new();
        for _ in 0..count {
            let tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            out.push((tag, self.take(size)?));
        }
        Ok(out)
    }
}

pub(super) fn reader(message: &[u8]) -> Reader<'_> {
    Reader {
        bytes: message,
        position: 0,
    }
}

fn uuids_in(bytes: &[u8]) -> Result<Option<Vec<Uuid>>, RecordsError> {
    reader(bytes).nullable_uuids()
}

impl RegisterBrokerRecord {
    /// The record value at `version` (0-4; above 4 is written as 4): frame,
    /// then the fields the version holds (see the type's doc).
    pub fn encode_framed(&self, version: u32) -> Bytes {
        let version = version.min(REGISTER_BROKER_RECORD_MAX_VERSION);
        let mut buf = framed(REGISTER_BROKER_RECORD_API_KEY, version);
        buf.put_i32(self.broker_id);
        if version >= 2 {
            buf.put_u8(u8::from(self.is_migrating_zk_broker));
        }
        buf.put_slice(self.incarnation_id.as_bytes());
        buf.put_i64(self.broker_epoch);
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
        match &self.rack {
            None => put_uvarint(&mut buf, 0),
            Some(r) => put_compact_string(&mut buf, r),
        }
        buf.put_u8(u8::from(self.fenced));
        if version >= 1 {
            buf.put_u8(u8::from(self.in_controlled_shutdown));
        }
        let mut tagged: Vec<(u32, BytesMut)> = Vec::new();
        if version >= 3 && !self.log_dirs.is_empty() {
            let mut v = BytesMut::new();
            put_uuids(&mut v, &self.log_dirs);
            tagged.push((0, v));
        }
        if version >= 4
            && let Some(c) = &self.cordoned_log_dirs
        {
            let mut v = BytesMut::new();
            put_uuids(&mut v, c);
            tagged.push((1, v));
        }
        put_uvarint(&mut buf, tagged.len() as u32);
        for (tag, v) in &tagged {
            put_tagged(&mut buf, *tag, v);
        }
        buf.freeze()
    }

    /// Decodes the message part at `version` (0-4).
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8], version: u32) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let broker_id = r.i32()?;
        let is_migrating_zk_broker = if version >= 2 { r.bool()? } else { false };
        let incarnation_id = r.uuid()?;
        let broker_epoch = r.i64()?;
        let mut endpoints = Vec::new();
        for _ in 0..r.uvarint()?.saturating_sub(1) {
            let name = r.compact_string()?;
            let host = r.compact_string()?;
            let port = r.i16()? as u16;
            let security_protocol = r.i16()?;
            r.skip_tagged_fields()?;
            endpoints.push(BrokerEndpoint {
                name,
                host,
                port,
                security_protocol,
            });
        }
        let mut features = Vec::new();
        for _ in 0..r.uvarint()?.saturating_sub(1) {
            let name = r.compact_string()?;
            let min_supported_version = r.i16()?;
            let max_supported_version = r.i16()?;
            r.skip_tagged_fields()?;
            features.push(BrokerFeature {
                name,
                min_supported_version,
                max_supported_version,
            });
        }
        let rack = r.nullable_compact_string()?;
        let fenced = r.bool()?;
        let in_controlled_shutdown = if version >= 1 { r.bool()? } else { false };
        let mut log_dirs = Vec::new();
        let mut cordoned_log_dirs = None;
        for (tag, bytes) in r.tagged_fields()? {
            match tag {
                0 if version >= 3 => log_dirs = uuids_in(bytes)?.unwrap_or_default(),
                1 if version >= 4 => cordoned_log_dirs = uuids_in(bytes)?,
                _ => {}
            }
        }
        r.finish()?;
        Ok(Self {
            broker_id,
            is_migrating_zk_broker,
            incarnation_id,
            broker_epoch,
            endpoints,
            features,
            rack,
            fenced,
            in_controlled_shutdown,
            log_dirs,
            cordoned_log_dirs,
        })
    }
}

/// A record naming a broker and its epoch: UnregisterBrokerRecord (1,
/// `BrokerId`, `BrokerEpoch`), FenceBrokerRecord (7, `Id`, `Epoch`) and
/// UnfenceBrokerRecord (8, `Id`, `Epoch`), all v0: int32, int64, tagged
/// fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerEpochRecord {
    /// The broker's id.
    pub broker_id: i32,
    /// The broker epoch the record applies to.
    pub broker_epoch: i64,
}

impl BrokerEpochRecord {
    /// The record value with api key `api_key` (1, 7 or 8), version 0.
    pub fn encode_framed(&self, api_key: u32) -> Bytes {
        let mut buf = framed(api_key, 0);
        buf.put_i32(self.broker_id);
        buf.put_i64(self.broker_epoch);
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part.
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let broker_id = r.i32()?;
        let broker_epoch = r.i64()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self {
            broker_id,
            broker_epoch,
        })
    }
}

/// `BrokerRegistrationFencingChange`: the `Fenced` field's values.
pub mod fencing_change {
    /// The broker was unfenced.
    pub const UNFENCE: i8 = -1;
    /// No change.
    pub const NONE: i8 = 0;
    /// The broker was fenced.
    pub const FENCE: i8 = 1;
}

/// BrokerRegistrationChangeRecord (api key 17, v0-3): `BrokerId` int32,
/// `BrokerEpoch` int64, then tagged fields only: 0 `Fenced` int8
/// ([`fencing_change`]), 1 `InControlledShutdown` int8 (v1+; 0 no change, 1
/// in controlled shutdown), 2 `LogDirs` uuid array (v2+), 3
/// `CordonedLogDirs` nullable uuid array (v3+). Defaults (0, 0, empty, null)
/// are not written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerRegistrationChangeRecord {
    /// The broker's id.
    pub broker_id: i32,
    /// The broker epoch the change applies to.
    pub broker_epoch: i64,
    /// -1 unfenced, 0 no change, 1 fenced.
    pub fenced: i8,
    /// 0 no change, 1 in controlled shutdown.
    pub in_controlled_shutdown: i8,
    /// New online log directories; empty for no change.
    pub log_dirs: Vec<Uuid>,
    /// New cordoned log directories; `None` for no change.
    pub cordoned_log_dirs: Option<Vec<Uuid>>,
}

impl BrokerRegistrationChangeRecord {
    /// The record value at `version` (0-3).
    pub fn encode_framed(&self, version: u32) -> Bytes {
        let version = version.min(BROKER_REGISTRATION_CHANGE_RECORD_MAX_VERSION);
        let mut buf = framed(BROKER_REGISTRATION_CHANGE_RECORD_API_KEY, version);
        buf.put_i32(self.broker_id);
        buf.put_i64(self.broker_epoch);
        let mut tagged: Vec<(u32, BytesMut)> = Vec::new();
        if self.fenced != 0 {
            tagged.push((0, BytesMut::from(&[self.fenced as u8][..])));
        }
        if version >= 1 && self.in_controlled_shutdown != 0 {
            tagged.push((1, BytesMut::from(&[self.in_controlled_shutdown as u8][..])));
        }
        if version >= 2 && !self.log_dirs.is_empty() {
            let mut v = BytesMut::new();
            put_uuids(&mut v, &self.log_dirs);
            tagged.push((2, v));
        }
        if version >= 3
            && let Some(c) = &self.cordoned_log_dirs
        {
            let mut v = BytesMut::new();
            put_uuids(&mut v, c);
            tagged.push((3, v));
        }
        put_uvarint(&mut buf, tagged.len() as u32);
        for (tag, v) in &tagged {
            put_tagged(&mut buf, *tag, v);
        }
        buf.freeze()
    }

    /// Decodes the message part at `version` (0-3).
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8], version: u32) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let mut out = Self {
            broker_id: r.i32()?,
            broker_epoch: r.i64()?,
            ..Self::default()
        };
        let byte = |bytes: &[u8]| {
            bytes
                .first()
                .map(|b| *b as i8)
                .ok_or(RecordsError::Truncated { position: 0 })
        };
        for (tag, bytes) in r.tagged_fields()? {
            match tag {
                0 => out.fenced = byte(bytes)?,
                1 if version >= 1 => out.in_controlled_shutdown = byte(bytes)?,
                2 if version >= 2 => out.log_dirs = uuids_in(bytes)?.unwrap_or_default(),
                3 if version >= 3 => out.cordoned_log_dirs = uuids_in(bytes)?,
                _ => {}
            }
        }
        r.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;
