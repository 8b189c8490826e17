//! The active controller's topic decisions (Kafka's
//! `ReplicationControlManager`, with the request-level checks of
//! `ControllerApis`) over the speculative topics: the committed topics plus
//! every topic record this controller appended since it became active.
//!
//! - CreateTopics (19): Kafka's checks in Kafka's order (see
//!   [`ReplicationControl::create_topics`]), placement by
//!   [`placement`](super::placement), TopicRecord, the topic's ConfigRecords
//!   (resource type 2), then one PartitionRecord per partition, in one batch.
//! - DeleteTopics (20): [`delete_topics`](super::delete_topics).
//! - CreatePartitions (37): PartitionRecords for the new partitions.
//! - Leadership and ISRs: [`leadership`](super::leadership).
//!
//! As in `cluster_control`, each decision returns records and the answer,
//! and the records are applied to the speculative topics at once. Owns
//! these checks; it must not touch the log.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use bytes::Bytes;
use kafka_protocol::{
    error::ResponseError,
    messages::{
        CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
        CreateTopicsResponse, TopicName,
        create_partitions_response::CreatePartitionsTopicResult,
        create_topics_response::{CreatableTopicConfigs, CreatableTopicResult},
    },
    protocol::StrBytes,
};
use rand::{SeedableRng, rngs::StdRng};
use uuid::Uuid;

use super::{
    cluster_control::{Decision, Refusal},
    election_configs::ElectionConfigs,
    placement::{UsableBroker, place},
    topic_names::{
        CLUSTER_METADATA_TOPIC_NAME, has_collision_chars, unify_collision_chars,
        validate_topic_configs, validate_topic_name,
    },
};
use crate::metadata::{
    brokers::BrokerRegistration,
    configs::ConfigsImage,
    image::MetadataImage,
    records::{ConfigRecord, FramedRecord, TopicRecord, partition_record_version},
    topics::{DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED, PartitionRegistration, TopicsImage},
};

pub use crate::metadata::configs::CONFIG_RESOURCE_TYPE_TOPIC;
/// Kafka's `ConfigSource.TOPIC_CONFIG` id in a CreateTopics answer
/// (`DescribeConfigsResponse.ConfigSource.TOPIC_CONFIG`).
const CONFIG_SOURCE_TOPIC: i8 = 1;
/// The id of the metadata topic (`Topic.CLUSTER_METADATA_TOPIC_ID`,
/// `Uuid.METADATA_TOPIC_ID` = 0...01): never given to a topic.
pub const METADATA_TOPIC_ID: Uuid = Uuid::from_u128(1);

/// Most records one user request may write (Kafka's
/// `QuorumController.MAX_RECORDS_PER_USER_OP`); past it the whole request
/// fails with POLICY_VIOLATION [`TOO_LARGE_MESSAGE`] and nothing changes.
pub const MAX_RECORDS_PER_USER_OP: usize = 10_000;
/// Kafka's message for a request past [`MAX_RECORDS_PER_USER_OP`]
/// (`EventHandlerExceptionInfo` for `BoundedListTooLongException`).
pub const TOO_LARGE_MESSAGE: &str = "Unable to perform excessively large batch operation.";

pub(super) fn too_large() -> Refusal {
    (ResponseError::PolicyViolation, TOO_LARGE_MESSAGE.to_owned())
}

/// The replication settings (Kafka's controller config keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `num.partitions` (1): partitions of a topic created with -1.
    pub default_num_partitions: i32,
    /// `default.replication.factor` (1): replicas of a topic created with -1.
    pub default_replication_factor: i16,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            default_num_partitions: 1,
            default_replication_factor: 1,
        }
    }
}

/// The speculative topics of an active controller (see the module doc).
#[derive(Debug)]
pub struct ReplicationControl {
    pub(super) topics: TopicsImage,
    pub(super) config: ReplicationConfig,
    pub(super) elections: ElectionConfigs,
    rng: StdRng,
}

pub(super) fn err_message(
    error: ResponseError,
    message: Option<String>,
) -> (i16, Option<StrBytes>) {
    (
        error.code(),
        Some(StrBytes::from_string(
            message.unwrap_or_else(|| error.to_string()),
        )),
    )
}

/// Kafka's `PartitionRegistration` of a new partition: ISR the active
/// replicas, leader the first of them, epochs 0, each replica's directory
/// the broker's only one (Kafka's `ClusterControlManager.defaultDir`).
fn new_partition(
    replicas: Vec<i32>,
    isr: Vec<i32>,
    brokers: &BTreeMap<i32, BrokerRegistration>,
) -> PartitionRegistration {
    let directories = replicas
        .iter()
        .map(|r| match brokers.get(r).map(|b| b.log_dirs.as_slice()) {
            Some([]) => DIRECTORY_MIGRATING,
            Some([only]) => *only,
            _ => DIRECTORY_UNASSIGNED,
        })
        .collect();
    PartitionRegistration {
        leader: isr[0],
        replicas,
        directories,
        isr,
        ..PartitionRegistration::default()
    }
}

fn is_active(brokers: &BTreeMap<i32, BrokerRegistration>, id: i32) -> bool {
    brokers.get(&id).is_some_and(BrokerRegistration::is_active)
}

/// Kafka's `ClusterControlManager.usableBrokers`: every broker not in
/// controlled shutdown.
fn usable(brokers: &BTreeMap<i32, BrokerRegistration>) -> Vec<UsableBroker> {
    brokers
        .iter()
        .filter(|(_, b)| !b.in_controlled_shutdown)
        .map(|(id, b)| UsableBroker {
            id: *id,
            rack: b.rack.clone(),
            fenced: b.fenced,
        })
        .collect()
}

/// Kafka's `validateManualPartitionAssignment` (INVALID_REPLICA_ASSIGNMENT).
fn check_manual(
    replicas: &[i32],
    replication_factor: Option<usize>,
    brokers: &BTreeMap<i32, BrokerRegistration>,
) -> Result<(), Refusal> {
    let invalid = |m: String| Err((ResponseError::InvalidReplicaAssignment, m));
    if replicas.is_empty() {
        return invalid("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    let mut previous = None;
    for id in sorted {
        if !brokers.contains_key(&id) {
            return invalid(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            ));
        }
        if previous == Some(id) {
            return invalid(format!(
                "The manual partition assignment includes the broker {id} more than once."
            ));
        }
        previous = Some(id);
    }
    if let Some(rf) = replication_factor
        && replicas.len() != rf
    {
        return invalid(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {rf} replica(s).",
            replicas.len()
        ));
    }
    Ok(())
}

impl ReplicationControl {
    /// The state of a controller becoming active over the committed `image`.
    pub fn activate(image: &MetadataImage, config: ReplicationConfig) -> Self {
        Self {
            topics: image.topics().clone(),
            config,
            elections: ElectionConfigs::new(
                image
                    .feature_level(crate::metadata::bootstrap::ELR_FEATURE)
                    .is_some_and(|l| l >= 1),
                image.configs(),
            ),
            rng: StdRng::from_os_rng(),
        }
    }

    /// The speculative configs changed in a way that may touch
    /// `min.insync.replicas` or `unclean.leader.election.enable` (a
    /// ConfigRecord or a topic removed): take their values again from
    /// `configs`.
    pub fn configs_changed(&mut self, configs: &ConfigsImage) {
        self.elections = ElectionConfigs::new(self.elections.elr_enabled, configs);
    }

    /// The same with a seeded random source (tests: placements repeat).
    pub fn activate_seeded(image: &MetadataImage, config: ReplicationConfig, seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            ..Self::activate(image, config)
        }
    }

    /// The speculative topics.
    pub fn topics(&self) -> &TopicsImage {
        &self.topics
    }

    /// Applies records this controller built to the speculative topics
    /// (other record types are skipped). A record that does not apply (a
    /// bug) is logged.
    pub(super) fn apply(&mut self, records: &[Bytes]) {
        for value in records {
            let applied = FramedRecord::decode(value)
                .map_err(|e| e.to_string())
                .and_then(|f| {
                    if crate::metadata::topics::is_topic_record(f.api_key, f.version) {
                        self.topics.apply(&f).map_err(|e| e.to_string())
                    } else {
                        Ok(())
                    }
                });
            if let Err(e) = applied {
                tracing::error!(error = %e, "a topic record this controller built does not apply");
            }
        }
    }

    /// A random topic id: never zero nor the metadata topic's, nor taken.
    fn new_topic_id(&mut self) -> Uuid {
        loop {
            let mut bytes = [0u8; 16];
            rand::RngCore::fill_bytes(&mut self.rng, &mut bytes);
            let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
            if id != Uuid::nil() && id != METADATA_TOPIC_ID && self.topics.get(&id).is_none() {
                return id;
            }
        }
    }

    /// CreateTopics (19), as Kafka's `ControllerApis.createTopics` and
    /// `ReplicationControlManager.createTopics`: a name given twice gets
    /// INVALID_REQUEST `Duplicate topic name.` and `__cluster_metadata`
    /// INVALID_REQUEST (both answered last); then per topic, in order:
    /// INVALID_TOPIC_EXCEPTION (`Topic.validate`, then a `.`/`_` collision
    /// with an existing topic), TOPIC_ALREADY_EXISTS, INVALID_CONFIG,
    /// manual assignments (INVALID_REQUEST with a replication factor or
    /// partition count other than -1, INVALID_REPLICA_ASSIGNMENT), else
    /// INVALID_REPLICATION_FACTOR / INVALID_PARTITIONS for 0 or below -1,
    /// -1 for the defaults, and placement errors as
    /// INVALID_REPLICATION_FACTOR `Unable to replicate the partition N
    /// time(s): ...`. A created topic's answer has its id, partitions,
    /// replication factor and the configs given (source TOPIC_CONFIG).
    /// `validate_only` answers the same and writes nothing.
    pub fn create_topics(
        &mut self,
        request: &CreateTopicsRequest,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Decision<CreateTopicsResponse> {
        let mut seen = HashSet::new();
        let mut duplicates = BTreeSet::new();
        for t in &request.topics {
            if !seen.insert(t.name.as_str()) {
                duplicates.insert(t.name.to_string());
            }
        }
        // Kafka reports the smallest colliding name (a TreeSet's first).
        let mut collisions: BTreeMap<String, String> = BTreeMap::new();
        for t in self
            .topics
            .by_id()
            .values()
            .filter(|t| has_collision_chars(&t.name))
        {
            let e = collisions
                .entry(unify_collision_chars(&t.name))
                .or_insert_with(|| t.name.clone());
            if t.name < *e {
                *e = t.name.clone();
            }
        }
        let mut records = Vec::new();
        let mut answers = Vec::new();
        let mut last = Vec::new();
        for topic in &request.topics {
            let name = topic.name.as_str();
            if duplicates.contains(name) {
                continue;
            }
            if name == CLUSTER_METADATA_TOPIC_NAME {
                last.push(refused_topic(
                    &topic.name,
                    ResponseError::InvalidRequest,
                    format!(
                        "Creation of internal topic {CLUSTER_METADATA_TOPIC_NAME} is prohibited."
                    ),
                ));
                continue;
            }
            let budget = MAX_RECORDS_PER_USER_OP.saturating_sub(records.len());
            match self.create_topic(topic, brokers, metadata_level, &collisions, budget) {
                Ok((mut topic_records, answer)) => {
                    records.append(&mut topic_records);
                    answers.push(answer);
                }
                Err((ResponseError::PolicyViolation, message)) => {
                    // Past the record limit: stop before placing more.
                    answers.push(refused_topic(
                        &topic.name,
                        ResponseError::PolicyViolation,
                        message,
                    ));
                    break;
                }
                Err((error, message)) => answers.push(refused_topic(&topic.name, error, message)),
            }
        }
        for name in duplicates {
            answers.push(refused_topic(
                &TopicName(StrBytes::from_string(name)),
                ResponseError::InvalidRequest,
                "Duplicate topic name.".into(),
            ));
        }
        answers.append(&mut last);
        let too_big = records.len() > MAX_RECORDS_PER_USER_OP
            || answers
                .iter()
                .any(|a| a.error_code == ResponseError::PolicyViolation.code());
        if too_big {
            records.clear();
            answers = request
                .topics
                .iter()
                .map(|t| {
                    let (e, m) = too_large();
                    refused_topic(&t.name, e, m)
                })
                .collect();
        }
        if request.validate_only {
            records.clear();
        }
        self.apply(&records);
        Decision {
            records,
            answer: CreateTopicsResponse::default().with_topics(answers),
        }
    }

    fn create_topic(
        &mut self,
        topic: &kafka_protocol::messages::create_topics_request::CreatableTopic,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
        collisions: &BTreeMap<String, String>,
        budget: usize,
    ) -> Result<(Vec<Bytes>, CreatableTopicResult), Refusal> {
        use ResponseError::*;
        let name = topic.name.as_str();
        let mut error = validate_topic_name(name)
            .err()
            .map(|m| (InvalidTopicException, m));
        if has_collision_chars(name)
            && let Some(existing) = collisions.get(&unify_collision_chars(name))
        {
            error = Some((
                InvalidTopicException,
                format!("Topic '{name}' collides with existing topic: {existing}"),
            ));
        }
        if self.topics.by_name(name).is_some() {
            error = Some((
                TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        if let Some(e) = error {
            return Err(e);
        }
        let configs: Vec<(String, Option<String>)> = topic
            .configs
            .iter()
            .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
            .collect();
        validate_topic_configs(&configs)?;
        let mut partitions: BTreeMap<i32, PartitionRegistration> = BTreeMap::new();
        let count = if topic.assignments.is_empty() {
            match topic.num_partitions {
                -1 => usize::try_from(self.config.default_num_partitions).unwrap_or(0),
                n => usize::try_from(n).unwrap_or(0),
            }
        } else {
            topic.assignments.len()
        };
        if count.saturating_add(1 + configs.len()) > budget {
            return Err(too_large());
        }
        if !topic.assignments.is_empty() {
            if topic.replication_factor != -1 {
                return Err((
                    InvalidRequest,
                    "A manual partition assignment was specified, but replication factor was not set to -1.".into(),
                ));
            }
            if topic.num_partitions != -1 {
                return Err((
                    InvalidRequest,
                    "A manual partition assignment was specified, but numPartitions was not set to -1.".into(),
                ));
            }
            let mut rf = None;
            for a in &topic.assignments {
                if partitions.contains_key(&a.partition_index) {
                    return Err((
                        InvalidReplicaAssignment,
                        format!(
                            "Found multiple manual partition assignments for partition {}",
                            a.partition_index
                        ),
                    ));
                }
                let replicas: Vec<i32> = a.broker_ids.iter().map(|b| b.0).collect();
                check_manual(&replicas, rf, brokers)?;
                rf = Some(replicas.len());
                let isr: Vec<i32> = replicas
                    .iter()
                    .copied()
                    .filter(|r| is_active(brokers, *r))
                    .collect();
                if isr.is_empty() {
                    return Err((
                        InvalidReplicaAssignment,
                        format!(
                            "All brokers specified in the manual partition assignment for partition {} are fenced or in controlled shutdown.",
                            a.partition_index
                        ),
                    ));
                }
                partitions.insert(a.partition_index, new_partition(replicas, isr, brokers));
            }
            if (0..partitions.len() as i32).any(|i| !partitions.contains_key(&i)) {
                return Err((
                    InvalidReplicaAssignment,
                    "partitions should be a consecutive 0-based integer sequence".into(),
                ));
            }
        } else if topic.replication_factor < -1 || topic.replication_factor == 0 {
            return Err((
                InvalidReplicationFactor,
                "Replication factor must be larger than 0, or -1 to use the default value.".into(),
            ));
        } else if topic.num_partitions < -1 || topic.num_partitions == 0 {
            return Err((
                InvalidPartitions,
                "Number of partitions was set to an invalid non-positive value.".into(),
            ));
        } else {
            let count = match topic.num_partitions {
                -1 => self.config.default_num_partitions,
                n => n,
            };
            let rf = match topic.replication_factor {
                -1 => self.config.default_replication_factor,
                n => n,
            };
            let unable = |m: &str| {
                (
                    InvalidReplicationFactor,
                    format!("Unable to replicate the partition {rf} time(s): {m}"),
                )
            };
            let placed = place(&mut self.rng, &usable(brokers), count, i32::from(rf))
                .map_err(|m| unable(&m))?;
            for (id, replicas) in placed.into_iter().enumerate() {
                let isr: Vec<i32> = replicas
                    .iter()
                    .copied()
                    .filter(|r| is_active(brokers, *r))
                    .collect();
                if isr.is_empty() {
                    return Err(unable(
                        "All brokers are currently fenced or in controlled shutdown.",
                    ));
                }
                partitions.insert(id as i32, new_partition(replicas, isr, brokers));
            }
        }
        let topic_id = self.new_topic_id();
        let mut records = vec![
            TopicRecord {
                name: name.to_owned(),
                topic_id,
            }
            .encode_framed(),
        ];
        for (key, value) in &configs {
            records.push(
                ConfigRecord {
                    resource_type: CONFIG_RESOURCE_TYPE_TOPIC,
                    resource_name: name.to_owned(),
                    name: key.clone(),
                    value: value.clone(),
                }
                .encode_framed(),
            );
        }
        let version = partition_record_version(metadata_level);
        for (id, p) in &partitions {
            records.push(p.to_record(topic_id, *id).encode_framed(version));
        }
        let mut sorted = configs.clone();
        sorted.sort();
        let answer = CreatableTopicResult::default()
            .with_name(topic.name.clone())
            .with_topic_id(topic_id)
            .with_error_message(None)
            .with_num_partitions(partitions.len() as i32)
            .with_replication_factor(
                partitions
                    .values()
                    .next()
                    .map_or(0, |p| p.replicas.len() as i16),
            )
            .with_configs(Some(
                sorted
                    .into_iter()
                    .map(|(k, v)| {
                        CreatableTopicConfigs::default()
                            .with_name(StrBytes::from_string(k))
                            .with_value(v.map(StrBytes::from_string))
                            .with_config_source(CONFIG_SOURCE_TOPIC)
                    })
                    .collect(),
            ));
        Ok((records, answer))
    }

    /// CreatePartitions (37), as Kafka's `ControllerApis.createPartitions`
    /// and `ReplicationControlManager.createPartitions`: INVALID_REQUEST for
    /// a name given twice, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS
    /// when the count does not increase, INVALID_REPLICA_ASSIGNMENT for
    /// assignments that do not fit, INVALID_REPLICATION_FACTOR from
    /// placement; new partitions keep the topic's replication factor.
    /// `validate_only` answers the same and writes nothing.
    pub fn create_partitions(
        &mut self,
        request: &CreatePartitionsRequest,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Decision<CreatePartitionsResponse> {
        let mut seen = HashSet::new();
        let mut duplicates = BTreeSet::new();
        for t in &request.topics {
            if !seen.insert(t.name.as_str()) {
                duplicates.insert(t.name.to_string());
            }
        }
        let mut results = Vec::new();
        for name in &duplicates {
            results.push(
                CreatePartitionsTopicResult::default()
                    .with_name(TopicName(StrBytes::from_string(name.clone())))
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_error_message(Some(StrBytes::from_static_str("Duplicate topic name."))),
            );
        }
        let mut records = Vec::new();
        for t in request
            .topics
            .iter()
            .filter(|t| !duplicates.contains(t.name.as_str()))
        {
            let mut result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
            match self.new_partitions(t, brokers, metadata_level) {
                Ok(mut r) => {
                    if !request.validate_only {
                        records.append(&mut r);
                    }
                }
                Err((error, message)) => {
                    let (code, message) = err_message(error, message);
                    result = result.with_error_code(code).with_error_message(message);
                }
            }
            results.push(result);
        }
        if records.len() > MAX_RECORDS_PER_USER_OP
            || results
                .iter()
                .any(|r| r.error_code == ResponseError::PolicyViolation.code())
        {
            let (e, m) = too_large();
            for r in &mut results {
                r.error_code = e.code();
                r.error_message = Some(StrBytes::from_string(m.clone()));
            }
            records.clear();
        }
        self.apply(&records);
        Decision {
            records,
            answer: CreatePartitionsResponse::default().with_results(results),
        }
    }

    fn new_partitions(
        &mut self,
        t: &kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic,
        brokers: &BTreeMap<i32, BrokerRegistration>,
        metadata_level: i16,
    ) -> Result<Vec<Bytes>, (ResponseError, Option<String>)> {
        use ResponseError::*;
        let topic = self
            .topics
            .by_name(t.name.as_str())
            .ok_or((UnknownTopicOrPartition, None))?;
        let (topic_id, existing) = (topic.id, topic.partitions.len() as i32);
        if t.count == existing {
            return Err((
                InvalidPartitions,
                Some(format!("Topic already has {existing} partition(s).")),
            ));
        }
        if t.count < existing {
            return Err((
                InvalidPartitions,
                Some(format!(
                    "The topic {} currently has {existing} partition(s); {} would not be an increase.",
                    t.name.as_str(),
                    t.count
                )),
            ));
        }
        let additional = t.count - existing;
        if usize::try_from(additional).is_ok_and(|n| n > MAX_RECORDS_PER_USER_OP) {
            let (e, m) = too_large();
            return Err((e, Some(m)));
        }
        if let Some(a) = &t.assignments
            && a.len() as i32 != additional
        {
            return Err((
                InvalidReplicaAssignment,
                Some(format!(
                    "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                    a.len()
                )),
            ));
        }
        let rf = topic
            .partitions
            .values()
            .next()
            .map(|p| p.replicas.len())
            .ok_or_else(|| {
                (
                    UnknownServerError,
                    Some(format!(
                        "Invalid state: topic {} appears to have no partitions.",
                        t.name.as_str()
                    )),
                )
            })?;
        let placed: Vec<Vec<i32>> = match &t.assignments {
            Some(assignments) => {
                let mut out = Vec::new();
                for (i, a) in assignments.iter().enumerate() {
                    let replicas: Vec<i32> = a.broker_ids.iter().map(|b| b.0).collect();
                    check_manual(&replicas, Some(rf), brokers).map_err(|(e, m)| (e, Some(m)))?;
                    if !replicas.iter().any(|r| is_active(brokers, *r)) {
                        return Err((
                            InvalidReplicaAssignment,
                            Some(format!(
                                "All brokers specified in the manual partition assignment for partition {} are fenced or in controlled shutdown.",
                                existing + i as i32
                            )),
                        ));
                    }
                    out.push(replicas);
                }
                out
            }
            None => place(&mut self.rng, &usable(brokers), additional, rf as i32)
                .map_err(|m| (InvalidReplicationFactor, Some(m)))?,
        };
        let version = partition_record_version(metadata_level);
        let mut records = Vec::new();
        for (i, replicas) in placed.into_iter().enumerate() {
            let isr: Vec<i32> = replicas
                .iter()
                .copied()
                .filter(|r| is_active(brokers, *r))
                .collect();
            if isr.is_empty() {
                return Err((
                    InvalidReplicationFactor,
                    Some(format!(
                        "Unable to replicate the partition {rf} time(s): All brokers are currently fenced or in controlled shutdown."
                    )),
                ));
            }
            let p = new_partition(replicas, isr, brokers);
            records.push(
                p.to_record(topic_id, existing + i as i32)
                    .encode_framed(version),
            );
        }
        Ok(records)
    }
}

fn refused_topic(name: &TopicName, error: ResponseError, message: String) -> CreatableTopicResult {
    CreatableTopicResult::default()
        .with_name(name.clone())
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(message)))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
}

#[cfg(test)]
#[path = "replication_control_tests.rs"]
pub(crate) mod tests;
