//! Leaders and ISRs on the speculative topics (the leadership half of
//! Kafka's `ReplicationControlManager`):
//!
//! - [`ReplicationControl::broker_changes`]: a broker fenced, in controlled
//!   shutdown or unregistered leaves every ISR it is in and loses its
//!   leaderships (`handleBrokerFenced`, `handleBrokerInControlledShutdown`,
//!   `handleBrokerUnregistered`); a broker unfenced leads the leaderless
//!   partitions whose ISR holds it (`handleBrokerUnfenced`). The records go
//!   in the same batch as the broker record that caused them.
//! - [`ReplicationControl::alter_partition`]: AlterPartition (56, v2-3).
//! - [`ReplicationControl::elect_leaders`]: ElectLeaders (43).
//! - [`ReplicationControl::balance_partition_leaders`]: the automatic
//!   preferred-leader election (`auto.leader.rebalance.enable`).
//!
//! Owns these decisions; it must not touch the log.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        AlterPartitionRequest, AlterPartitionResponse, BrokerId, ElectLeadersRequest,
        ElectLeadersResponse, alter_partition_response, elect_leaders_response,
    },
    protocol::StrBytes,
};
use uuid::Uuid;

use super::{
    cluster_control::Decision,
    partition_change::{Change, Election, build, has_online_dir},
    replication_control::{MAX_RECORDS_PER_USER_OP, ReplicationControl},
};
use crate::metadata::{
    brokers::BrokerRegistration,
    records::{NO_LEADER, NO_LEADER_CHANGE, partition_record_version},
    topics::PartitionRegistration,
};

/// Most preferred-leader elections in one balancing run (Kafka's
/// `maxElectionsPerImbalance`, 1000).
pub const MAX_ELECTIONS_PER_IMBALANCE: usize = 1_000;

/// What leadership depends on of each broker: its epoch and whether it is
/// active (unfenced, not in controlled shutdown), by id; taken before a
/// broker decision for [`ReplicationControl::broker_changes`].
pub fn broker_states(brokers: &BTreeMap<i32, BrokerRegistration>) -> BTreeMap<i32, (i64, bool)> {
    brokers
        .iter()
        .map(|(id, b)| (*id, (b.epoch, b.is_active())))
        .collect()
}

/// Whether `broker` may lead a partition: active (unfenced, not shutting
/// down) with the replica's directory online (Kafka's `LeaderAcceptor`).
fn acceptable(
    brokers: &BTreeMap<i32, BrokerRegistration>,
    partition: &PartitionRegistration,
    broker: i32,
) -> bool {
    let Some(b) = brokers.get(&broker).filter(|b| b.is_active()) else {
        return false;
    };
    let dir = partition
        .replicas
        .iter()
        .position(|r| *r == broker)
        .and_then(|i| partition.directories.get(i).copied())
        .unwrap_or(crate::metadata::topics::DIRECTORY_UNASSIGNED);
    has_online_dir(b, dir)
}

impl ReplicationControl {
    /// Whether `broker` leads any partition (Kafka's `brokersToIsrs
    /// .iterator(brokerId, true).hasNext()`): a broker in controlled
    /// shutdown is not told to shut down while this holds.
    pub fn is_leader_of_any(&self, broker: i32) -> bool {
        self.topics.partitions().any(|(_, _, p)| p.leader == broker)
    }

    /// Builds, applies and returns the change of each partition `select`
    /// picks, with the ISR `target` gives and `election`.
    #[allow(clippy::too_many_arguments)]
    fn change_partitions(
        &mut self,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
        election: Election,
        select: impl Fn(&str, &PartitionRegistration) -> bool,
        target: impl Fn(&PartitionRegistration) -> Vec<i32>,
        excluded: Option<i32>,
        unclean_shutdown: &[i32],
        limit: usize,
    ) -> Vec<Bytes> {
        let version = partition_record_version(metadata_level);
        let mut records = Vec::new();
        let selected: Vec<(Uuid, i32)> = self
            .topics
            .partitions()
            .filter(|(t, _, p)| select(&t.name, p))
            .map(|(t, id, _)| (t.id, id))
            .collect();
        for (topic_id, partition_id) in selected {
            if records.len() >= limit {
                break;
            }
            let Some((name, p)) = self.topics.get(&topic_id).and_then(|t| {
                t.partitions
                    .get(&partition_id)
                    .map(|p| (t.name.as_str(), p))
            }) else {
                continue;
            };
            let accept = |r: i32| Some(r) != excluded && acceptable(brokers, p, r);
            // Kafka's generateLeaderAndIsrUpdates: UNCLEAN where the
            // topic's unclean.leader.election.enable allows it.
            let election =
                if election == Election::Online && self.elections.unclean_election_enabled(name) {
                    Election::Unclean
                } else {
                    election
                };
            let record = build(&Change {
                partition: p,
                topic_id,
                partition_id,
                target_isr: target(p),
                target_recovery_state: None,
                election,
                acceptable: &accept,
                metadata_level,
                elr_enabled: self.elections.elr_enabled,
                min_isr: self.elections.min_isr(name, p.replicas.len()),
                unclean_shutdown_replicas: unclean_shutdown,
            });
            if let Some(r) = record {
                let bytes = r.encode_framed(version);
                self.apply(std::slice::from_ref(&bytes));
                records.push(bytes);
            }
        }
        records
    }

    /// Leaders for the leaderless partitions of topics whose
    /// `unclean.leader.election.enable` is on (any live replica, the risk
    /// the config accepts), after a config change turned it on: Kafka
    /// elects them in a periodic task; here they come in the batch of the
    /// change itself, at most [`MAX_ELECTIONS_PER_IMBALANCE`] (the rest at
    /// the next config or broker change). Applied to the speculative topics.
    pub fn elect_unclean_leaders(
        &mut self,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Vec<Bytes> {
        let elections = self.elections.clone();
        self.change_partitions(
            brokers,
            metadata_level,
            Election::Unclean,
            |topic, p| p.leader == NO_LEADER && elections.unclean_election_enabled(topic),
            |p| p.isr.clone(),
            None,
            &[],
            MAX_ELECTIONS_PER_IMBALANCE,
        )
    }

    /// The partition changes that follow broker changes from `before`
    /// ([`broker_states`]) to `after` (the speculative brokers around one
    /// decision): each broker
    /// no longer active (fenced, in controlled shutdown, unregistered, or
    /// replaced by a new incarnation) leaves the ISRs and leaderships it
    /// holds; each broker that became active leads the leaderless
    /// partitions whose ISR holds it (any of their replicas where
    /// `unclean.leader.election.enable` is on). Applied to the speculative
    /// topics.
    pub fn broker_changes(
        &mut self,
        before: &BTreeMap<i32, (i64, bool)>,
        after: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
        unclean_shutdown: Option<i32>,
    ) -> Vec<Bytes> {
        let ids: BTreeSet<i32> = before.keys().chain(after.keys()).copied().collect();
        let mut records = Vec::new();
        if let Some(id) = unclean_shutdown.filter(|_| self.elections.elr_enabled) {
            // Kafka's `handleBrokerUncleanShutdown`: a broker back from an
            // unclean shutdown may have lost unflushed records; it leaves
            // every ISR and ELR (and never rejoins an ELR by this change).
            tracing::info!(
                broker = id,
                "broker registered after an unclean shutdown: removed from ISRs and ELRs"
            );
            records.extend(self.change_partitions(
                after,
                metadata_level,
                Election::Online,
                |_, p| p.isr.contains(&id) || p.elr.contains(&id),
                |p| p.isr.iter().copied().filter(|r| *r != id).collect(),
                Some(id),
                &[id],
                usize::MAX,
            ));
        }
        for id in &ids {
            let was = before.get(id).copied();
            let now = after.get(id).map(|b| (b.epoch, b.is_active()));
            if was == now {
                continue;
            }
            let now_active = now.is_some_and(|(_, active)| active);
            let was_active = was.is_some_and(|(_, active)| active);
            let id = *id;
            if !now_active || (was_active && was.map(|w| w.0) != now.map(|n| n.0)) {
                tracing::info!(
                    broker = id,
                    "moving leaderships and ISR membership off broker"
                );
                records.extend(self.change_partitions(
                    after,
                    metadata_level,
                    Election::Online,
                    |_, p| p.isr.contains(&id),
                    |p| p.isr.iter().copied().filter(|r| *r != id).collect(),
                    Some(id),
                    &[],
                    usize::MAX,
                ));
            }
            if now_active && !was_active {
                records.extend(self.change_partitions(
                    after,
                    metadata_level,
                    Election::Online,
                    |_, p| p.leader == NO_LEADER,
                    |p| p.isr.clone(),
                    None,
                    &[],
                    usize::MAX,
                ));
            }
        }
        records
    }

    /// AlterPartition (56, v2-3), as Kafka's `alterPartition`: top-level
    /// STALE_BROKER_EPOCH for an unknown broker or another epoch; per
    /// topic UNKNOWN_TOPIC_ID; per partition, in Kafka's order
    /// (`validateAlterPartitionData`): UNKNOWN_TOPIC_OR_PARTITION,
    /// NOT_CONTROLLER for a leader or partition epoch above ours,
    /// FENCED_LEADER_EPOCH for a lower leader epoch, INVALID_REQUEST when
    /// the sender does not lead, INVALID_UPDATE_VERSION for a lower
    /// partition epoch, INVALID_REQUEST for an ISR outside the replicas or
    /// without the leader or a bad recovery state, INELIGIBLE_REPLICA for
    /// an ISR member unregistered, fenced, shutting down or (v3) of another
    /// epoch; otherwise the PartitionChangeRecord and the new state.
    pub fn alter_partition(
        &mut self,
        request: &AlterPartitionRequest,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Decision<AlterPartitionResponse> {
        use alter_partition_response::{PartitionData, TopicData};
        let sender = request.broker_id.0;
        match brokers.get(&sender) {
            Some(b) if b.epoch == request.broker_epoch => {}
            _ => {
                return Decision {
                    records: Vec::new(),
                    answer: AlterPartitionResponse::default()
                        .with_error_code(ResponseError::StaleBrokerEpoch.code()),
                };
            }
        }
        let partitions: usize = request.topics.iter().map(|t| t.partitions.len()).sum();
        if partitions > MAX_RECORDS_PER_USER_OP {
            return Decision {
                records: Vec::new(),
                answer: AlterPartitionResponse::default()
                    .with_error_code(ResponseError::PolicyViolation.code()),
            };
        }
        let record_version = partition_record_version(metadata_level);
        let mut records = Vec::new();
        let mut topics = Vec::new();
        for t in &request.topics {
            let mut out = TopicData::default().with_topic_id(t.topic_id);
            if t.topic_id.is_nil() || self.topics.get(&t.topic_id).is_none() {
                for p in &t.partitions {
                    out.partitions.push(
                        PartitionData::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(ResponseError::UnknownTopicId.code()),
                    );
                }
                topics.push(out);
                continue;
            }
            for p in &t.partitions {
                // v2 sends `NewIsr`, v3 `NewIsrWithEpochs` (the other is empty).
                let isr: Vec<(i32, i64)> = if p.new_isr_with_epochs.is_empty() {
                    p.new_isr.iter().map(|b| (b.0, -1)).collect()
                } else {
                    p.new_isr_with_epochs
                        .iter()
                        .map(|b| (b.broker_id.0, b.broker_epoch))
                        .collect()
                };
                let current = self
                    .topics
                    .get(&t.topic_id)
                    .and_then(|topic| topic.partitions.get(&p.partition_index));
                let result = PartitionData::default().with_partition_index(p.partition_index);
                let error = validate(sender, current, p, &isr, brokers);
                let (Some(current), None) = (current, error) else {
                    out.partitions.push(
                        result.with_error_code(
                            error
                                .unwrap_or(ResponseError::UnknownTopicOrPartition)
                                .code(),
                        ),
                    );
                    continue;
                };
                let target: Vec<i32> = isr.iter().map(|(id, _)| *id).collect();
                let accept = |r: i32| acceptable(brokers, current, r);
                let name = self.topics.get(&t.topic_id).map_or("", |t| t.name.as_str());
                let change = build(&Change {
                    partition: current,
                    topic_id: t.topic_id,
                    partition_id: p.partition_index,
                    target_isr: target,
                    target_recovery_state: Some(p.leader_recovery_state),
                    election: Election::Online,
                    acceptable: &accept,
                    metadata_level,
                    elr_enabled: self.elections.elr_enabled,
                    min_isr: self.elections.min_isr(name, current.replicas.len()),
                    unclean_shutdown_replicas: &[],
                });
                let mut merged = current.clone();
                if let Some(c) = change {
                    merged = current.merge(&c);
                    let bytes = c.encode_framed(record_version);
                    self.apply(std::slice::from_ref(&bytes));
                    records.push(bytes);
                    if c.leader != sender && c.leader != NO_LEADER_CHANGE {
                        out.partitions
                            .push(result.with_error_code(ResponseError::NewLeaderElected.code()));
                        continue;
                    }
                }
                out.partitions.push(
                    result
                        .with_leader_id(BrokerId(merged.leader))
                        .with_isr(merged.isr.iter().map(|b| BrokerId(*b)).collect())
                        .with_leader_recovery_state(merged.leader_recovery_state)
                        .with_leader_epoch(merged.leader_epoch)
                        .with_partition_epoch(merged.partition_epoch),
                );
            }
            topics.push(out);
        }
        Decision {
            records,
            answer: AlterPartitionResponse::default().with_topics(topics),
        }
    }

    /// ElectLeaders (43), as Kafka's `electLeaders`: election type 0
    /// PREFERRED, 1 UNCLEAN (else INVALID_REQUEST); per partition
    /// UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (preferred leader
    /// already leads / a leader exists), PREFERRED_LEADER_NOT_AVAILABLE or
    /// ELIGIBLE_LEADERS_NOT_AVAILABLE when no change can be made. No
    /// partitions named means all, leaving out those that need none.
    pub fn elect_leaders(
        &mut self,
        request: &ElectLeadersRequest,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Decision<ElectLeadersResponse> {
        use elect_leaders_response::{PartitionResult, ReplicaElectionResult};
        let election = match request.election_type {
            0 => Election::Preferred,
            1 => Election::Unclean,
            other => {
                tracing::info!(
                    election_type = other,
                    "ElectLeaders with an unknown election type"
                );
                return Decision {
                    records: Vec::new(),
                    answer: ElectLeadersResponse::default()
                        .with_error_code(ResponseError::InvalidRequest.code()),
                };
            }
        };
        let (all, wanted): (bool, Vec<(kafka_protocol::messages::TopicName, Vec<i32>)>) =
            match &request.topic_partitions {
                Some(tp) => (
                    false,
                    tp.iter()
                        .map(|t| (t.topic.clone(), t.partitions.clone()))
                        .collect(),
                ),
                None => (
                    true,
                    self.topics
                        .by_id()
                        .values()
                        .map(|t| {
                            (
                                kafka_protocol::messages::TopicName(StrBytes::from_string(
                                    t.name.clone(),
                                )),
                                t.partitions.keys().copied().collect(),
                            )
                        })
                        .collect(),
                ),
            };
        let version = partition_record_version(metadata_level);
        let mut records = Vec::new();
        let mut results = Vec::new();
        let saved = self.topics.clone();
        for (topic, partitions) in wanted {
            let mut result = ReplicaElectionResult::default().with_topic(topic.clone());
            for partition_id in partitions {
                let (error, message) = self.elect_one(
                    topic.as_str(),
                    partition_id,
                    election,
                    brokers,
                    metadata_level,
                    version,
                    &mut records,
                );
                if all && error == Some(ResponseError::ElectionNotNeeded) {
                    continue;
                }
                result.partition_result.push(
                    PartitionResult::default()
                        .with_partition_id(partition_id)
                        .with_error_code(error.map_or(0, |e| e.code()))
                        .with_error_message(error.map(|e| {
                            StrBytes::from_string(message.unwrap_or_else(|| e.to_string()))
                        })),
                );
            }
            results.push(result);
        }
        if records.len() > MAX_RECORDS_PER_USER_OP {
            // Kafka's BoundedList: the whole request fails, nothing changes.
            self.topics = saved;
            return Decision {
                records: Vec::new(),
                answer: ElectLeadersResponse::default()
                    .with_error_code(ResponseError::PolicyViolation.code()),
            };
        }
        Decision {
            records,
            answer: ElectLeadersResponse::default().with_replica_election_results(results),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn elect_one(
        &mut self,
        topic: &str,
        partition_id: i32,
        election: Election,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
        version: u32,
        records: &mut Vec<Bytes>,
    ) -> (Option<ResponseError>, Option<String>) {
        let Some(t) = self.topics.by_name(topic) else {
            return (
                Some(ResponseError::UnknownTopicOrPartition),
                Some(format!("No such topic as {topic}")),
            );
        };
        let Some(p) = t.partitions.get(&partition_id) else {
            return (
                Some(ResponseError::UnknownTopicOrPartition),
                Some(format!("No such partition as {topic}-{partition_id}")),
            );
        };
        let not_needed = match election {
            Election::Preferred => p.preferred_leader() == Some(p.leader),
            _ => p.has_leader(),
        };
        if not_needed {
            return (Some(ResponseError::ElectionNotNeeded), None);
        }
        let accept = |r: i32| acceptable(brokers, p, r);
        let change = build(&Change {
            partition: p,
            topic_id: t.id,
            partition_id,
            target_isr: p.isr.clone(),
            target_recovery_state: None,
            election,
            acceptable: &accept,
            metadata_level,
            elr_enabled: self.elections.elr_enabled,
            min_isr: self.elections.min_isr(topic, p.replicas.len()),
            unclean_shutdown_replicas: &[],
        });
        match change {
            None if election == Election::Preferred => {
                (Some(ResponseError::PreferredLeaderNotAvailable), None)
            }
            None => (Some(ResponseError::EligibleLeadersNotAvailable), None),
            Some(c) => {
                let bytes = c.encode_framed(version);
                self.apply(std::slice::from_ref(&bytes));
                records.push(bytes);
                (None, None)
            }
        }
    }

    /// The automatic preferred-leader election (Kafka's
    /// `maybeBalancePartitionLeaders`): up to
    /// [`MAX_ELECTIONS_PER_IMBALANCE`] partitions whose preferred replica
    /// is in the ISR and active but does not lead get it as leader; the
    /// flag says the limit was reached (run again at once, as Kafka does).
    pub fn balance_partition_leaders(
        &mut self,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> (Vec<Bytes>, bool) {
        let records = self.change_partitions(
            brokers,
            metadata_level,
            Election::Preferred,
            |_, p| {
                p.preferred_leader().is_some_and(|r| {
                    r != p.leader && p.isr.contains(&r) && acceptable(brokers, p, r)
                })
            },
            |p| p.isr.clone(),
            None,
            &[],
            MAX_ELECTIONS_PER_IMBALANCE,
        );
        let more = records.len() >= MAX_ELECTIONS_PER_IMBALANCE;
        (records, more)
    }
}

/// Kafka's `validateAlterPartitionData` and `ineligibleReplicasForIsr`:
/// the error of one partition of an AlterPartition, `None` when it may
/// change (`current` is `None`: UNKNOWN_TOPIC_OR_PARTITION).
fn validate(
    sender: i32,
    current: Option<&PartitionRegistration>,
    p: &kafka_protocol::messages::alter_partition_request::PartitionData,
    isr: &[(i32, i64)],
    brokers: &BTreeMap<i32, BrokerRegistration>,
) -> Option<ResponseError> {
    use ResponseError::*;
    let Some(c) = current else {
        return Some(UnknownTopicOrPartition);
    };
    if p.leader_epoch > c.leader_epoch || p.partition_epoch > c.partition_epoch {
        return Some(NotController);
    }
    if p.leader_epoch < c.leader_epoch {
        return Some(FencedLeaderEpoch);
    }
    if sender != c.leader {
        return Some(InvalidRequest);
    }
    if p.partition_epoch < c.partition_epoch {
        return Some(InvalidUpdateVersion);
    }
    let ids: Vec<i32> = isr.iter().map(|(id, _)| *id).collect();
    let distinct: BTreeSet<i32> = ids.iter().copied().collect();
    if distinct.len() != ids.len() || !ids.iter().all(|r| c.replicas.contains(r)) {
        return Some(InvalidRequest);
    }
    if !ids.contains(&c.leader) {
        return Some(InvalidRequest);
    }
    // Kafka's LeaderRecoveryState.of refuses any other value.
    if !(0..=1).contains(&p.leader_recovery_state) {
        return Some(InvalidRequest);
    }
    if p.leader_recovery_state == 1 && ids.len() > 1 {
        return Some(InvalidRequest);
    }
    if c.leader_recovery_state == 0 && p.leader_recovery_state == 1 {
        return Some(InvalidRequest);
    }
    let ineligible = isr.iter().any(|(id, epoch)| match brokers.get(id) {
        None => true,
        Some(b) => b.in_controlled_shutdown || b.fenced || (*epoch != -1 && b.epoch != *epoch),
    });
    if ineligible {
        return Some(IneligibleReplica);
    }
    None
}

#[cfg(test)]
#[path = "leadership_tests.rs"]
mod tests;
