//! AssignReplicasToDirs (73) as Kafka's
//! `ReplicationControlManager.handleAssignReplicasToDirs`: a broker tells
//! the active controller which of its log directories holds each of its
//! replicas, and the controller records it in the partition
//! (PartitionChangeRecord `directories`).
//!
//! Checks in Kafka's order: UNSUPPORTED_VERSION (`Directory assignment is
//! not supported yet.`) below `metadata.version` 3.7-IV2; STALE_BROKER_EPOCH
//! (`checkBrokerEpoch`); then per partition UNKNOWN_TOPIC_ID for a topic id
//! not in the state, UNKNOWN_TOPIC_OR_PARTITION for a partition the topic
//! lacks, NOT_LEADER_OR_FOLLOWER when the broker is not one of its
//! replicas; otherwise the partition's change record, if the assignment
//! changes anything. A directory the broker did not register is offline
//! (Kafka's `hasOnlineDir`; brokers here have no offline dirs recorded), and
//! Kafka then moves the partition's leadership off the broker: that is the
//! partitions' owner's to do ([`PartitionDirectories::assign`] is told).
//!
//! Owns the checks and the answer's shape; the partitions are read and the
//! records built through [`PartitionDirectories`]
//! ([`ReplicationDirectories`] over the speculative topics).

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        AssignReplicasToDirsRequest, AssignReplicasToDirsResponse, assign_replicas_to_dirs_response,
    },
};
use uuid::Uuid;

use super::{
    cluster_control::{ClusterControl, Decision, Refusal},
    replication_control::ReplicationControl,
};
use crate::metadata::{
    records::{PartitionChangeRecord, directory_assignment_supported, partition_record_version},
    topics::DIRECTORY_UNASSIGNED,
};

/// The partitions as the directory assignment needs them (Kafka's
/// `TopicControlInfo`/`PartitionRegistration`, speculative).
pub trait PartitionDirectories {
    /// Whether topic `topic_id` exists.
    fn topic_exists(&self, topic_id: Uuid) -> bool;
    /// The replicas of partition `partition` of `topic_id`, `None` when the
    /// topic has no such partition.
    fn replicas(&self, topic_id: Uuid, partition: i32) -> Option<Vec<i32>>;
    /// Records `broker`'s replica of the partition in directory `dir`
    /// (`offline`: a directory the broker did not register): the
    /// PartitionChangeRecord to append (Kafka's `PartitionChangeBuilder
    /// .setDirectory`), `None` when nothing changes. Applied to the
    /// speculative partitions at once.
    fn assign(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        broker: i32,
        dir: Uuid,
        offline: bool,
    ) -> Option<Bytes>;
}

/// The partitions of a state with no topics: every topic id is unknown.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTopics;

impl PartitionDirectories for NoTopics {
    fn topic_exists(&self, _topic_id: Uuid) -> bool {
        false
    }
    fn replicas(&self, _topic_id: Uuid, _partition: i32) -> Option<Vec<i32>> {
        None
    }
    fn assign(&mut self, _: Uuid, _: i32, _: i32, _: Uuid, _: bool) -> Option<Bytes> {
        None
    }
}

/// The speculative partitions of the active controller's replication
/// state at `metadata.version` level `metadata_level`: `assign` writes a
/// PartitionChangeRecord (the record version of the level) with the
/// partition's directories, this broker's entry replaced, and applies it.
/// A replica moved to an offline directory keeps its leadership here
/// (Kafka moves it off the broker; brokers with one directory always name
/// their registered one): logged.
#[derive(Debug)]
pub struct ReplicationDirectories<'a> {
    /// The speculative replication state.
    pub replication: &'a mut ReplicationControl,
    /// `metadata.version` level.
    pub metadata_level: i16,
}

impl PartitionDirectories for ReplicationDirectories<'_> {
    fn topic_exists(&self, topic_id: Uuid) -> bool {
        self.replication.topics().get(&topic_id).is_some()
    }
    fn replicas(&self, topic_id: Uuid, partition: i32) -> Option<Vec<i32>> {
        self.replication
            .topics()
            .get(&topic_id)?
            .partitions
            .get(&partition)
            .map(|p| p.replicas.clone())
    }
    fn assign(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        broker: i32,
        dir: Uuid,
        offline: bool,
    ) -> Option<Bytes> {
        let p = self
            .replication
            .topics()
            .get(&topic_id)?
            .partitions
            .get(&partition)?;
        let index = p.replicas.iter().position(|r| *r == broker)?;
        let mut directories = p.directories.clone();
        directories.resize(p.replicas.len(), DIRECTORY_UNASSIGNED);
        if directories[index] == dir {
            return None;
        }
        if offline {
            tracing::warn!(broker, %topic_id, partition, %dir,
                "replica assigned to a directory the broker did not register (offline): leadership not moved");
        }
        directories[index] = dir;
        let mut record = PartitionChangeRecord::new(topic_id, partition);
        record.directories = Some(directories);
        let bytes = record.encode_framed(partition_record_version(self.metadata_level));
        self.replication.apply(std::slice::from_ref(&bytes));
        Some(bytes)
    }
}

/// Decides an AssignReplicasToDirs request (see the module doc) at
/// `metadata.version` level `metadata_version`.
pub fn assign_replicas_to_dirs(
    request: &AssignReplicasToDirsRequest,
    metadata_version: i16,
    cluster: &ClusterControl,
    partitions: &mut dyn PartitionDirectories,
) -> Result<Decision<AssignReplicasToDirsResponse>, Refusal> {
    if !directory_assignment_supported(metadata_version) {
        return Err((
            ResponseError::UnsupportedVersion,
            "Directory assignment is not supported yet.".to_owned(),
        ));
    }
    let broker_id = request.broker_id.0;
    let registration = cluster.check_broker_epoch(broker_id, request.broker_epoch)?;
    let mut records = Vec::new();
    let mut directories = Vec::new();
    for dir in &request.directories {
        let offline = !registration.log_dirs.contains(&dir.id);
        let mut topics = Vec::new();
        for topic in &dir.topics {
            let topic_known = partitions.topic_exists(topic.topic_id);
            if !topic_known {
                tracing::warn!(broker_id, topic_id = %topic.topic_id,
                    "AssignReplicasToDirsRequest references an unknown topic id");
            }
            let mut answers = Vec::new();
            for p in &topic.partitions {
                let index = p.partition_index;
                let error = if !topic_known {
                    ResponseError::UnknownTopicId.code()
                } else {
                    match partitions.replicas(topic.topic_id, index) {
                        None => ResponseError::UnknownTopicOrPartition.code(),
                        Some(replicas) if !replicas.contains(&broker_id) => {
                            ResponseError::NotLeaderOrFollower.code()
                        }
                        Some(_) => {
                            records.extend(partitions.assign(
                                topic.topic_id,
                                index,
                                broker_id,
                                dir.id,
                                offline,
                            ));
                            0
                        }
                    }
                };
                answers.push(
                    assign_replicas_to_dirs_response::PartitionData::default()
                        .with_partition_index(index)
                        .with_error_code(error),
                );
            }
            topics.push(
                assign_replicas_to_dirs_response::TopicData::default()
                    .with_topic_id(topic.topic_id)
                    .with_partitions(answers),
            );
        }
        directories.push(
            assign_replicas_to_dirs_response::DirectoryData::default()
                .with_id(dir.id)
                .with_topics(topics),
        );
    }
    Ok(Decision {
        records,
        answer: AssignReplicasToDirsResponse::default().with_directories(directories),
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kafka_protocol::messages::assign_replicas_to_dirs_request::{
        DirectoryData, PartitionData, TopicData,
    };

    use super::*;
    use crate::metadata::{
        image::MetadataImage,
        records::{BrokerEndpoint, FramedRecord, RegisterBrokerRecord},
    };

    const DIR: Uuid = Uuid::from_u128(0xd1);
    const TOPIC: Uuid = Uuid::from_u128(0x70);

    /// Partitions 0 (replicas 1, 2) and 1 (replicas 2, 3) of TOPIC; records
    /// the assignments it is told of.
    #[derive(Default)]
    struct OneTopic {
        assigned: BTreeMap<(i32, i32), (Uuid, bool)>,
    }

    impl PartitionDirectories for OneTopic {
        fn topic_exists(&self, topic_id: Uuid) -> bool {
            topic_id == TOPIC
        }
        fn replicas(&self, topic_id: Uuid, partition: i32) -> Option<Vec<i32>> {
            (topic_id == TOPIC).then_some(())?;
            match partition {
                0 => Some(vec![1, 2]),
                1 => Some(vec![2, 3]),
                _ => None,
            }
        }
        fn assign(&mut self, _: Uuid, p: i32, b: i32, dir: Uuid, offline: bool) -> Option<Bytes> {
            let before = self.assigned.insert((p, b), (dir, offline));
            (before != Some((dir, offline))).then(|| Bytes::from_static(b"change"))
        }
    }

    fn cluster() -> ClusterControl {
        let mut image = MetadataImage::default();
        let register = RegisterBrokerRecord {
            broker_id: 1,
            is_migrating_zk_broker: false,
            incarnation_id: Uuid::from_u128(1),
            broker_epoch: 7,
            endpoints: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: "b-1".into(),
                port: 9092,
                security_protocol: 0,
            }],
            features: vec![],
            rack: None,
            fenced: false,
            in_controlled_shutdown: false,
            log_dirs: vec![DIR],
            cordoned_log_dirs: None,
        };
        image
            .apply_record(7, &register.encode_framed(3))
            .expect("applies");
        ClusterControl::activate("c", &image, 9_000, 0)
    }

    fn request(
        epoch: i64,
        dir: Uuid,
        topic: Uuid,
        partitions: &[i32],
    ) -> AssignReplicasToDirsRequest {
        AssignReplicasToDirsRequest::default()
            .with_broker_id(1.into())
            .with_broker_epoch(epoch)
            .with_directories(vec![DirectoryData::default().with_id(dir).with_topics(
                vec![
                TopicData::default().with_topic_id(topic).with_partitions(
                    partitions
                        .iter()
                        .map(|p| PartitionData::default().with_partition_index(*p))
                        .collect(),
                ),
            ],
            )])
    }

    fn codes(d: &Decision<AssignReplicasToDirsResponse>) -> Vec<i16> {
        d.answer.directories[0].topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect()
    }

    #[test]
    fn a_replica_in_the_registered_directory_is_recorded_once_and_others_get_kafkas_errors() {
        let cluster = cluster();
        let mut parts = OneTopic::default();
        let d = assign_replicas_to_dirs(
            &request(7, DIR, TOPIC, &[0, 1, 5]),
            27,
            &cluster,
            &mut parts,
        )
        .expect("decided");
        assert_eq!(
            codes(&d),
            [
                0,
                ResponseError::NotLeaderOrFollower.code(),
                ResponseError::UnknownTopicOrPartition.code()
            ]
        );
        assert_eq!(d.records.len(), 1);
        assert_eq!(parts.assigned[&(0, 1)], (DIR, false));
        // Again: nothing changes, nothing is written.
        let d = assign_replicas_to_dirs(&request(7, DIR, TOPIC, &[0]), 27, &cluster, &mut parts)
            .expect("decided");
        assert!(d.records.is_empty());
        // A directory the broker did not register is offline.
        let other = Uuid::from_u128(0xd2);
        assign_replicas_to_dirs(&request(7, other, TOPIC, &[0]), 27, &cluster, &mut parts)
            .expect("decided");
        assert_eq!(parts.assigned[&(0, 1)], (other, true));
    }

    #[test]
    fn unknown_topics_stale_epochs_and_old_metadata_versions_are_refused_as_kafka_refuses_them() {
        let cluster = cluster();
        let d = assign_replicas_to_dirs(
            &request(7, DIR, TOPIC, &[0, 1]),
            27,
            &cluster,
            &mut NoTopics,
        )
        .expect("decided");
        assert_eq!(codes(&d), [ResponseError::UnknownTopicId.code(); 2]);
        assert!(d.records.is_empty());
        let (error, _) =
            assign_replicas_to_dirs(&request(6, DIR, TOPIC, &[0]), 27, &cluster, &mut NoTopics)
                .expect_err("stale");
        assert_eq!(error, ResponseError::StaleBrokerEpoch);
        let (error, message) =
            assign_replicas_to_dirs(&request(7, DIR, TOPIC, &[0]), 16, &cluster, &mut NoTopics)
                .expect_err("old metadata.version");
        assert_eq!(error, ResponseError::UnsupportedVersion);
        assert_eq!(message, "Directory assignment is not supported yet.");
    }

    /// Over the real speculative topics: broker 1's replica of a new
    /// topic's partition gets its directory in a PartitionChangeRecord
    /// (v1 at 3.7-IV2+), once.
    #[test]
    fn over_the_replication_state_a_replica_gets_its_directory_once() {
        use kafka_protocol::messages::{
            CreateTopicsRequest, TopicName, create_topics_request::CreatableTopic,
        };

        use crate::{
            metadata::records::PARTITION_CHANGE_RECORD_API_KEY,
            quorum_controller::replication_control::tests::{control, three_brokers},
        };
        let mut rc = control();
        let brokers = three_brokers();
        let created = rc.create_topics(
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(
                        kafka_protocol::protocol::StrBytes::from_static_str("t"),
                    ))
                    .with_num_partitions(1)
                    .with_replication_factor(3),
            ]),
            &brokers,
            27,
        );
        assert!(!created.records.is_empty());
        let topic_id = rc.topics().by_name("t").expect("created").id;
        let dir = brokers[&1].log_dirs[0];
        let mut cluster_image = MetadataImage::default();
        for (id, b) in &brokers {
            let mut r = b.to_record(*id);
            r.broker_epoch = b.epoch;
            cluster_image
                .apply_record(b.epoch, &r.encode_framed(3))
                .expect("applies");
        }
        let cluster = ClusterControl::activate("c", &cluster_image, 9_000, 0);
        let request = request(brokers[&1].epoch, dir, topic_id, &[0]);
        let mut dirs = ReplicationDirectories {
            replication: &mut rc,
            metadata_level: 27,
        };
        // CreateTopics already placed the replica in the broker's one
        // directory (Kafka's default dir): the assignment changes nothing.
        let d = assign_replicas_to_dirs(&request, 27, &cluster, &mut dirs).expect("decided");
        assert_eq!(codes(&d), [0]);
        assert!(d.records.is_empty());
        // Another directory (one it did not register: offline) is recorded.
        let other = Uuid::from_u128(0xd2);
        let moved = super::tests::request(brokers[&1].epoch, other, topic_id, &[0]);
        let d = assign_replicas_to_dirs(&moved, 27, &cluster, &mut dirs).expect("decided");
        assert_eq!(d.records.len(), 1);
        let framed = FramedRecord::decode(&d.records[0]).expect("frame");
        assert_eq!(framed.api_key, PARTITION_CHANGE_RECORD_API_KEY);
        let p = &rc.topics().by_name("t").expect("topic").partitions[&0];
        let index = p.replicas.iter().position(|r| *r == 1).expect("a replica");
        assert_eq!(p.directories[index], other);
        let mut dirs = ReplicationDirectories {
            replication: &mut rc,
            metadata_level: 27,
        };
        let again = assign_replicas_to_dirs(&moved, 27, &cluster, &mut dirs).expect("decided");
        assert!(again.records.is_empty(), "nothing changes the second time");
    }
}
