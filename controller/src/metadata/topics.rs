//! The topic half of the metadata image: topics by id and name and their
//! partitions, as the committed topic records say (Kafka's `TopicsImage`,
//! `TopicsDelta` and `PartitionRegistration`).
//!
//! | record | effect |
//! |---|---|
//! | TopicRecord (2) | a new topic without partitions |
//! | PartitionRecord (3, v0-2) | replaces a partition of a known topic |
//! | PartitionChangeRecord (5, v0-2) | merges into a known partition (`PartitionRegistration.merge`): a new leader bumps the leader epoch, every change bumps the partition epoch |
//! | RemoveTopicRecord (9) | removes the topic and its partitions |
//! | ClearElrRecord (28) | empties ELR and last known ELR of one topic (or all, for `""`); a partition that had any gets the next partition epoch |
//!
//! A record naming a topic or partition that does not exist, or a topic name
//! or id already taken, is an error, as Kafka's replay throws. Owns these
//! rules; it must not decide leaders nor write records.

use std::collections::BTreeMap;

use bytes::Bytes;
use uuid::Uuid;

use super::records::{
    CLEAR_ELR_RECORD_API_KEY, ClearElrRecord, FramedRecord, NO_LEADER, NO_LEADER_CHANGE,
    PARTITION_CHANGE_RECORD_API_KEY, PARTITION_RECORD_API_KEY, PARTITION_RECORD_MAX_VERSION,
    PartitionChangeRecord, PartitionRecord, REMOVE_TOPIC_RECORD_API_KEY, RecordsError,
    RemoveTopicRecord, TOPIC_RECORD_API_KEY, TopicRecord,
};

/// Kafka's `DirectoryId.MIGRATING`: the directory of a replica whose record
/// predates directory assignment.
pub const DIRECTORY_MIGRATING: Uuid = Uuid::from_u128(2);
/// Kafka's `DirectoryId.UNASSIGNED`.
pub const DIRECTORY_UNASSIGNED: Uuid = Uuid::from_u128(0);

/// One partition, as its records say (Kafka's `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionRegistration {
    /// Replicas in preferred order.
    pub replicas: Vec<i32>,
    /// The log directory of each replica, in replica order.
    pub directories: Vec<Uuid>,
    /// In-sync replicas.
    pub isr: Vec<i32>,
    /// Replicas being removed.
    pub removing_replicas: Vec<i32>,
    /// Replicas being added.
    pub adding_replicas: Vec<i32>,
    /// KIP-966 eligible leader replicas.
    pub elr: Vec<i32>,
    /// KIP-966 last known ELR.
    pub last_known_elr: Vec<i32>,
    /// Leader, or -1.
    pub leader: i32,
    /// 0 recovered, 1 recovering from an unclean election.
    pub leader_recovery_state: i8,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch.
    pub partition_epoch: i32,
}

impl PartitionRegistration {
    /// The registration a PartitionRecord sets (directories default to
    /// MIGRATING, as Kafka's `defaultToMigrating`).
    pub fn from_record(r: PartitionRecord) -> Self {
        let directories = if r.directories.is_empty() {
            vec![DIRECTORY_MIGRATING; r.replicas.len()]
        } else {
            r.directories
        };
        Self {
            replicas: r.replicas,
            directories,
            isr: r.isr,
            removing_replicas: r.removing_replicas,
            adding_replicas: r.adding_replicas,
            elr: r.eligible_leader_replicas,
            last_known_elr: r.last_known_elr,
            leader: r.leader,
            leader_recovery_state: r.leader_recovery_state,
            leader_epoch: r.leader_epoch,
            partition_epoch: r.partition_epoch,
        }
    }

    /// The PartitionRecord that re-creates this partition (Kafka's
    /// `PartitionRegistration.toRecord`).
    pub fn to_record(&self, topic_id: Uuid, partition_id: i32) -> PartitionRecord {
        PartitionRecord {
            partition_id,
            topic_id,
            replicas: self.replicas.clone(),
            isr: self.isr.clone(),
            removing_replicas: self.removing_replicas.clone(),
            adding_replicas: self.adding_replicas.clone(),
            leader: self.leader,
            leader_recovery_state: self.leader_recovery_state,
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            directories: self.directories.clone(),
            eligible_leader_replicas: self.elr.clone(),
            last_known_elr: self.last_known_elr.clone(),
        }
    }

    /// This partition after `change` (Kafka's `PartitionRegistration.merge`).
    pub fn merge(&self, change: &PartitionChangeRecord) -> Self {
        let mut out = self.clone();
        if let Some(r) = &change.replicas {
            out.replicas = r.clone();
        }
        if let Some(d) = &change.directories {
            out.directories = d.clone();
        } else if change.replicas.is_some() && out.directories.len() != out.replicas.len() {
            out.directories = vec![DIRECTORY_MIGRATING; out.replicas.len()];
        }
        if let Some(isr) = &change.isr {
            out.isr = isr.clone();
        }
        if let Some(r) = &change.removing_replicas {
            out.removing_replicas = r.clone();
        }
        if let Some(r) = &change.adding_replicas {
            out.adding_replicas = r.clone();
        }
        if change.leader != NO_LEADER_CHANGE {
            out.leader = change.leader;
            out.leader_epoch = self.leader_epoch.saturating_add(1);
        }
        if change.leader_recovery_state != -1 {
            out.leader_recovery_state = change.leader_recovery_state;
        }
        if let Some(e) = &change.eligible_leader_replicas {
            out.elr = e.clone();
        }
        if let Some(e) = &change.last_known_elr {
            out.last_known_elr = e.clone();
        }
        out.partition_epoch = self.partition_epoch.saturating_add(1);
        out
    }

    /// Whether the partition has a leader.
    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    /// The preferred leader (first replica), if any.
    pub fn preferred_leader(&self) -> Option<i32> {
        self.replicas.first().copied()
    }
}

/// A topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub id: Uuid,
    /// Partitions by id.
    pub partitions: BTreeMap<i32, PartitionRegistration>,
}

/// Why a topic record could not be applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopicRecordError {
    /// The record does not decode.
    #[error("{0}")]
    Decode(#[from] RecordsError),
    /// It names a topic id that does not exist.
    #[error("no topic with id {0}")]
    UnknownTopicId(Uuid),
    /// It names a topic name that does not exist.
    #[error("no topic named {0}")]
    UnknownTopicName(String),
    /// A PartitionChangeRecord for a partition that does not exist.
    #[error("topic {topic_id} has no partition {partition_id}")]
    UnknownPartition {
        /// The topic.
        topic_id: Uuid,
        /// The partition.
        partition_id: i32,
    },
    /// A TopicRecord whose name or id is taken.
    #[error("topic {name} ({id}) collides with an existing topic")]
    Duplicate {
        /// The name.
        name: String,
        /// The id.
        id: Uuid,
    },
}

/// Topics by id and by name (Kafka's `TopicsImage`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsImage {
    by_id: BTreeMap<Uuid, TopicImage>,
    by_name: BTreeMap<String, Uuid>,
}

/// Whether [`TopicsImage::apply`] interprets records of `api_key` at `version`.
pub fn is_topic_record(api_key: u32, version: u32) -> bool {
    match api_key {
        TOPIC_RECORD_API_KEY | REMOVE_TOPIC_RECORD_API_KEY | CLEAR_ELR_RECORD_API_KEY => {
            version == 0
        }
        PARTITION_RECORD_API_KEY | PARTITION_CHANGE_RECORD_API_KEY => {
            version <= PARTITION_RECORD_MAX_VERSION
        }
        _ => false,
    }
}

impl TopicsImage {
    /// Topics by id.
    pub fn by_id(&self) -> &BTreeMap<Uuid, TopicImage> {
        &self.by_id
    }

    /// The topic named `name`.
    pub fn by_name(&self, name: &str) -> Option<&TopicImage> {
        self.by_name.get(name).and_then(|id| self.by_id.get(id))
    }

    /// The topic with id `id`.
    pub fn get(&self, id: &Uuid) -> Option<&TopicImage> {
        self.by_id.get(id)
    }

    /// Number of topics.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are no topics.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Every partition, as `(topic, partition id, registration)`.
    pub fn partitions(&self) -> impl Iterator<Item = (&TopicImage, i32, &PartitionRegistration)> {
        self.by_id
            .values()
            .flat_map(|t| t.partitions.iter().map(move |(p, r)| (t, *p, r)))
    }

    /// Kafka's `GlobalPartitionCount`.
    pub fn partition_count(&self) -> usize {
        self.by_id.values().map(|t| t.partitions.len()).sum()
    }

    /// Kafka's `OfflinePartitionsCount`: partitions without a leader.
    pub fn offline_partition_count(&self) -> usize {
        self.partitions()
            .filter(|(_, _, p)| !p.has_leader())
            .count()
    }

    /// Kafka's `PreferredReplicaImbalanceCount`: partitions whose leader is
    /// not their first replica.
    pub fn preferred_replica_imbalance_count(&self) -> usize {
        self.partitions()
            .filter(|(_, _, p)| p.preferred_leader() != Some(p.leader))
            .count()
    }

    /// Applies one topic record (for which [`is_topic_record`] holds). On
    /// error the image is unchanged.
    ///
    /// Errors: [`TopicRecordError`].
    pub fn apply(&mut self, framed: &FramedRecord) -> Result<(), TopicRecordError> {
        match framed.api_key {
            TOPIC_RECORD_API_KEY => {
                let r = TopicRecord::decode_message(&framed.message)?;
                if self.by_id.contains_key(&r.topic_id) || self.by_name.contains_key(&r.name) {
                    return Err(TopicRecordError::Duplicate {
                        name: r.name,
                        id: r.topic_id,
                    });
                }
                self.by_name.insert(r.name.clone(), r.topic_id);
                self.by_id.insert(
                    r.topic_id,
                    TopicImage {
                        name: r.name,
                        id: r.topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
            }
            PARTITION_RECORD_API_KEY => {
                let r = PartitionRecord::decode_message(&framed.message, framed.version)?;
                let topic = self
                    .by_id
                    .get_mut(&r.topic_id)
                    .ok_or(TopicRecordError::UnknownTopicId(r.topic_id))?;
                topic
                    .partitions
                    .insert(r.partition_id, PartitionRegistration::from_record(r));
            }
            PARTITION_CHANGE_RECORD_API_KEY => {
                let r = PartitionChangeRecord::decode_message(&framed.message, framed.version)?;
                let topic = self
                    .by_id
                    .get_mut(&r.topic_id)
                    .ok_or(TopicRecordError::UnknownTopicId(r.topic_id))?;
                let p = topic.partitions.get_mut(&r.partition_id).ok_or(
                    TopicRecordError::UnknownPartition {
                        topic_id: r.topic_id,
                        partition_id: r.partition_id,
                    },
                )?;
                *p = p.merge(&r);
            }
            REMOVE_TOPIC_RECORD_API_KEY => {
                let r = RemoveTopicRecord::decode_message(&framed.message)?;
                let topic = self
                    .by_id
                    .remove(&r.topic_id)
                    .ok_or(TopicRecordError::UnknownTopicId(r.topic_id))?;
                self.by_name.remove(&topic.name);
            }
            CLEAR_ELR_RECORD_API_KEY => {
                let r = ClearElrRecord::decode_message(&framed.message)?;
                // Kafka's removeTopicElrs / TopicDelta: a merge of an
                // empty-ELR change, so a partition that had any ELR gets a
                // new partition epoch (brokers' AlterPartition carry it);
                // the others are left as they are.
                let clear = |t: &mut TopicImage| {
                    for p in t.partitions.values_mut() {
                        if !p.elr.is_empty() || !p.last_known_elr.is_empty() {
                            p.elr.clear();
                            p.last_known_elr.clear();
                            p.partition_epoch = p.partition_epoch.saturating_add(1);
                        }
                    }
                };
                if r.topic_name.is_empty() {
                    self.by_id.values_mut().for_each(clear);
                } else {
                    let id = *self
                        .by_name
                        .get(&r.topic_name)
                        .ok_or_else(|| TopicRecordError::UnknownTopicName(r.topic_name.clone()))?;
                    if let Some(t) = self.by_id.get_mut(&id) {
                        clear(t);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The records that re-create these topics (Kafka's `TopicsImage.write`):
    /// per topic by id, its TopicRecord then its PartitionRecords at
    /// `partition_version`.
    pub fn records(&self, partition_version: u32) -> Vec<Bytes> {
        let mut out = Vec::new();
        for t in self.by_id.values() {
            out.push(
                TopicRecord {
                    name: t.name.clone(),
                    topic_id: t.id,
                }
                .encode_framed(),
            );
            for (id, p) in &t.partitions {
                out.push(p.to_record(t.id, *id).encode_framed(partition_version));
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "topics_tests.rs"]
mod tests;
