//! The topic records of the metadata log (Kafka 4.4's
//! `common/metadata/*.json`): TopicRecord (2, v0), PartitionRecord (3,
//! v0-2), PartitionChangeRecord (5, v0-2), RemoveTopicRecord (9, v0) and
//! ClearElrRecord (28, v0). All versions are flexible.
//!
//! Which version is written follows Kafka 4.4's
//! `MetadataVersion.partitionRecordVersion` / `partitionChangeRecordVersion`
//! ([`partition_record_version`]): 2 from 4.0-IV1 (level 23, ELR fields), 1
//! from 3.7-IV2 (17, directories), 0 below. The ELR fields are tagged and
//! written only when set (Kafka's `PartitionRegistration.toRecord` leaves an
//! empty ELR out), so a v2 record of a cluster without ELR carries none.
//!
//! Owns the byte layout; it must not decide leaders or ISRs.

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::{
    RecordsError,
    broker::{framed, put_tagged, put_uuids, reader},
    put_compact_string, put_uvarint,
};

/// `MetadataRecordType.TOPIC_RECORD`.
pub const TOPIC_RECORD_API_KEY: u32 = 2;
/// `MetadataRecordType.PARTITION_RECORD`.
pub const PARTITION_RECORD_API_KEY: u32 = 3;
/// `MetadataRecordType.PARTITION_CHANGE_RECORD`.
pub const PARTITION_CHANGE_RECORD_API_KEY: u32 = 5;
/// `MetadataRecordType.REMOVE_TOPIC_RECORD`.
pub const REMOVE_TOPIC_RECORD_API_KEY: u32 = 9;
/// `MetadataRecordType.CLEAR_ELR_RECORD`.
pub const CLEAR_ELR_RECORD_API_KEY: u32 = 28;
/// Highest PartitionRecord / PartitionChangeRecord version of Kafka 4.4.
pub const PARTITION_RECORD_MAX_VERSION: u32 = 2;
/// `PartitionChangeRecord.Leader` meaning "no change".
pub const NO_LEADER_CHANGE: i32 = -2;
/// A leader id meaning "no leader" (offline partition).
pub const NO_LEADER: i32 = -1;

/// The PartitionRecord and PartitionChangeRecord version Kafka 4.4 writes at
/// `metadata.version` level `level`: 2 from 4.0-IV1 (23), 1 from 3.7-IV2
/// (17), else 0.
pub fn partition_record_version(level: i16) -> u32 {
    match level {
        ..=16 => 0,
        17..=22 => 1,
        _ => 2,
    }
}

fn put_i32s(buf: &mut BytesMut, values: &[i32]) {
    put_uvarint(buf, values.len() as u32 + 1);
    for v in values {
        buf.put_i32(*v);
    }
}

fn put_nullable_i32s(buf: &mut BytesMut, values: Option<&[i32]>) {
    match values {
        None => put_uvarint(buf, 0),
        Some(v) => put_i32s(buf, v),
    }
}

fn tagged_i32s(values: Option<&[i32]>) -> BytesMut {
    let mut v = BytesMut::new();
    put_nullable_i32s(&mut v, values);
    v
}

fn put_tags(buf: &mut BytesMut, tagged: &[(u32, BytesMut)]) {
    put_uvarint(buf, tagged.len() as u32);
    for (tag, v) in tagged {
        put_tagged(buf, *tag, v);
    }
}

impl super::Reader<'_> {
    fn nullable_i32s(&mut self) -> Result<Option<Vec<i32>>, RecordsError> {
        let n = self.uvarint()?;
        if n == 0 {
            return Ok(None);
        }
        let mut out = Vec::with_capacity((n as usize - 1).min(4096));
        for _ in 0..n - 1 {
            out.push(self.i32()?);
        }
        Ok(Some(out))
    }
    fn i32s(&mut self) -> Result<Vec<i32>, RecordsError> {
        Ok(self.nullable_i32s()?.unwrap_or_default())
    }
}

fn i32s_in(bytes: &[u8]) -> Result<Option<Vec<i32>>, RecordsError> {
    reader(bytes).nullable_i32s()
}

fn i8_in(bytes: &[u8]) -> Result<i8, RecordsError> {
    bytes
        .first()
        .map(|b| *b as i8)
        .ok_or(RecordsError::Truncated { position: 0 })
}

/// TopicRecord (api key 2, v0): `Name` compact string, `TopicId` uuid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub topic_id: Uuid,
}

impl TopicRecord {
    /// The framed record value (version 0).
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = framed(TOPIC_RECORD_API_KEY, 0);
        put_compact_string(&mut buf, &self.name);
        buf.put_slice(self.topic_id.as_bytes());
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let name = r.compact_string()?;
        let topic_id = r.uuid()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self { name, topic_id })
    }
}

/// RemoveTopicRecord (api key 9, v0): `TopicId` uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoveTopicRecord {
    /// The topic removed, with all its partitions.
    pub topic_id: Uuid,
}

impl RemoveTopicRecord {
    /// The framed record value (version 0).
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = framed(REMOVE_TOPIC_RECORD_API_KEY, 0);
        buf.put_slice(self.topic_id.as_bytes());
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part.
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let topic_id = r.uuid()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self { topic_id })
    }
}

/// ClearElrRecord (api key 28, v0): `TopicName` compact string, empty for
/// every topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClearElrRecord {
    /// The topic whose ELRs are cleared, or `""` for all.
    pub topic_name: String,
}

impl ClearElrRecord {
    /// The framed record value (version 0).
    pub fn encode_framed(&self) -> Bytes {
        let mut buf = framed(CLEAR_ELR_RECORD_API_KEY, 0);
        put_compact_string(&mut buf, &self.topic_name);
        put_uvarint(&mut buf, 0);
        buf.freeze()
    }

    /// Decodes the message part.
    ///
    /// Errors: [`RecordsError::Truncated`], [`RecordsError::Utf8`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8]) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let topic_name = r.compact_string()?;
        r.skip_tagged_fields()?;
        r.finish()?;
        Ok(Self { topic_name })
    }
}

/// PartitionRecord (api key 3, v0-2). Fields in order: `PartitionId` int32,
/// `TopicId` uuid, `Replicas`, `Isr`, `RemovingReplicas`, `AddingReplicas`
/// (compact int32 arrays), `Leader` int32, `LeaderEpoch` int32,
/// `PartitionEpoch` int32, `Directories` uuid array (v1+), tagged fields: 0
/// `LeaderRecoveryState` int8 (default 0), 1 `EligibleLeaderReplicas` and 2
/// `LastKnownElr` (v2+, nullable int32 arrays, written when non-empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRecord {
    /// The partition id.
    pub partition_id: i32,
    /// The topic id.
    pub topic_id: Uuid,
    /// Replicas in preferred order.
    pub replicas: Vec<i32>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// Replicas being removed by a reassignment.
    pub removing_replicas: Vec<i32>,
    /// Replicas being added by a reassignment.
    pub adding_replicas: Vec<i32>,
    /// Leader, or -1.
    pub leader: i32,
    /// 1 while recovering from an unclean election, else 0.
    pub leader_recovery_state: i8,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch (bumped on every change).
    pub partition_epoch: i32,
    /// The log directory of each replica (v1+), in replica order.
    pub directories: Vec<Uuid>,
    /// KIP-966 eligible leader replicas (v2+).
    pub eligible_leader_replicas: Vec<i32>,
    /// KIP-966 last known ELR (v2+).
    pub last_known_elr: Vec<i32>,
}

impl PartitionRecord {
    /// The record value at `version` (0-2; above 2 is written as 2).
    pub fn encode_framed(&self, version: u32) -> Bytes {
        let version = version.min(PARTITION_RECORD_MAX_VERSION);
        let mut buf = framed(PARTITION_RECORD_API_KEY, version);
        buf.put_i32(self.partition_id);
        buf.put_slice(self.topic_id.as_bytes());
        put_i32s(&mut buf, &self.replicas);
        put_i32s(&mut buf, &self.isr);
        put_i32s(&mut buf, &self.removing_replicas);
        put_i32s(&mut buf, &self.adding_replicas);
        buf.put_i32(self.leader);
        buf.put_i32(self.leader_epoch);
        buf.put_i32(self.partition_epoch);
        if version >= 1 {
            put_uuids(&mut buf, &self.directories);
        }
        let mut tagged = Vec::new();
        if self.leader_recovery_state != 0 {
            tagged.push((0, BytesMut::from(&[self.leader_recovery_state as u8][..])));
        }
        if version >= 2 {
            if !self.eligible_leader_replicas.is_empty() {
                tagged.push((1, tagged_i32s(Some(&self.eligible_leader_replicas))));
            }
            if !self.last_known_elr.is_empty() {
                tagged.push((2, tagged_i32s(Some(&self.last_known_elr))));
            }
        }
        put_tags(&mut buf, &tagged);
        buf.freeze()
    }

    /// Decodes the message part at `version` (0-2).
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8], version: u32) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let mut out = Self {
            partition_id: r.i32()?,
            topic_id: r.uuid()?,
            replicas: r.i32s()?,
            isr: r.i32s()?,
            removing_replicas: r.i32s()?,
            adding_replicas: r.i32s()?,
            leader: r.i32()?,
            leader_epoch: r.i32()?,
            partition_epoch: r.i32()?,
            ..Self::default()
        };
        if version >= 1 {
            out.directories = r.nullable_uuids()?.unwrap_or_default();
        }
        for (tag, bytes) in r.tagged_fields()? {
            match tag {
                0 => out.leader_recovery_state = i8_in(bytes)?,
                1 if version >= 2 => {
                    out.eligible_leader_replicas = i32s_in(bytes)?.unwrap_or_default()
                }
                2 if version >= 2 => out.last_known_elr = i32s_in(bytes)?.unwrap_or_default(),
                _ => {}
            }
        }
        r.finish()?;
        Ok(out)
    }
}

/// PartitionChangeRecord (api key 5, v0-2): `PartitionId` int32, `TopicId`
/// uuid, then tagged fields only, each written when it changes: 0 `Isr`, 1
/// `Leader` (default -2: no change), 2 `Replicas`, 3 `RemovingReplicas`, 4
/// `AddingReplicas`, 5 `LeaderRecoveryState` (default -1), 8 `Directories`
/// (v1+), 6 `EligibleLeaderReplicas` and 7 `LastKnownElr` (v2+). Tagged
/// fields are written in tag order, as Kafka's generated code does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChangeRecord {
    /// The partition id.
    pub partition_id: i32,
    /// The topic id.
    pub topic_id: Uuid,
    /// The new ISR, `None` for no change.
    pub isr: Option<Vec<i32>>,
    /// The new leader: -1 none, -2 no change ([`NO_LEADER_CHANGE`]).
    pub leader: i32,
    /// The new replicas, `None` for no change.
    pub replicas: Option<Vec<i32>>,
    /// The new removing replicas, `None` for no change.
    pub removing_replicas: Option<Vec<i32>>,
    /// The new adding replicas, `None` for no change.
    pub adding_replicas: Option<Vec<i32>>,
    /// -1 no change, 0 recovered / clean, 1 recovering.
    pub leader_recovery_state: i8,
    /// The new directories (v1+), `None` for no change.
    pub directories: Option<Vec<Uuid>>,
    /// The new ELR (v2+), `None` for no change.
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// The new last known ELR (v2+), `None` for no change.
    pub last_known_elr: Option<Vec<i32>>,
}

impl PartitionChangeRecord {
    /// A change of `topic_id`/`partition_id` that changes nothing yet.
    pub fn new(topic_id: Uuid, partition_id: i32) -> Self {
        Self {
            partition_id,
            topic_id,
            isr: None,
            leader: NO_LEADER_CHANGE,
            replicas: None,
            removing_replicas: None,
            adding_replicas: None,
            leader_recovery_state: -1,
            directories: None,
            eligible_leader_replicas: None,
            last_known_elr: None,
        }
    }

    /// The record value at `version` (0-2; above 2 is written as 2).
    pub fn encode_framed(&self, version: u32) -> Bytes {
        let version = version.min(PARTITION_RECORD_MAX_VERSION);
        let mut buf = framed(PARTITION_CHANGE_RECORD_API_KEY, version);
        buf.put_i32(self.partition_id);
        buf.put_slice(self.topic_id.as_bytes());
        let mut tagged = Vec::new();
        if let Some(isr) = &self.isr {
            tagged.push((0, tagged_i32s(Some(isr))));
        }
        if self.leader != NO_LEADER_CHANGE {
            tagged.push((1, BytesMut::from(&self.leader.to_be_bytes()[..])));
        }
        for (tag, field) in [
            (2, &self.replicas),
            (3, &self.removing_replicas),
            (4, &self.adding_replicas),
        ] {
            if let Some(v) = field {
                tagged.push((tag, tagged_i32s(Some(v))));
            }
        }
        if self.leader_recovery_state != -1 {
            tagged.push((5, BytesMut::from(&[self.leader_recovery_state as u8][..])));
        }
        if version >= 2 {
            if let Some(v) = &self.eligible_leader_replicas {
                tagged.push((6, tagged_i32s(Some(v))));
            }
            if let Some(v) = &self.last_known_elr {
                tagged.push((7, tagged_i32s(Some(v))));
            }
        }
        if version >= 1
            && let Some(d) = &self.directories
        {
            let mut v = BytesMut::new();
            put_uuids(&mut v, d);
            tagged.push((8, v));
        }
        put_tags(&mut buf, &tagged);
        buf.freeze()
    }

    /// Decodes the message part at `version` (0-2).
    ///
    /// Errors: [`RecordsError::Truncated`],
    /// [`RecordsError::Garbage`], [`RecordsError::VarintTooLong`].
    pub fn decode_message(message: &[u8], version: u32) -> Result<Self, RecordsError> {
        let mut r = reader(message);
        let partition_id = r.i32()?;
        let topic_id = r.uuid()?;
        let mut out = Self::new(topic_id, partition_id);
        for (tag, bytes) in r.tagged_fields()? {
            match tag {
                0 => out.isr = i32s_in(bytes)?,
                1 => out.leader = reader(bytes).i32()?,
                2 => out.replicas = i32s_in(bytes)?,
                3 => out.removing_replicas = i32s_in(bytes)?,
                4 => out.adding_replicas = i32s_in(bytes)?,
                5 => out.leader_recovery_state = i8_in(bytes)?,
                6 if version >= 2 => out.eligible_leader_replicas = i32s_in(bytes)?,
                7 if version >= 2 => out.last_known_elr = i32s_in(bytes)?,
                8 if version >= 1 => out.directories = reader(bytes).nullable_uuids()?,
                _ => {}
            }
        }
        r.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
#[path = "topic_tests.rs"]
mod tests;
