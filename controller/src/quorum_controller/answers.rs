//! The topic requests of the quorum controller as `RequestKind` in and
//! `ResponseKind` out: dispatch to [`ReplicationControl`] and the error
//! answer of each request (Kafka's `AbstractRequest.getErrorResponse`: every
//! topic or partition named gets the error), used for NOT_CONTROLLER.
//!
//! Owns this mapping; the decisions are `replication_control`'s and
//! `leadership`'s.

use std::collections::BTreeMap;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        AlterPartitionResponse, ApiKey, CreatePartitionsResponse, CreateTopicsResponse,
        DeleteTopicsResponse, ElectLeadersResponse, RequestKind, ResponseKind,
        create_partitions_response::CreatePartitionsTopicResult,
        create_topics_response::CreatableTopicResult,
        delete_topics_response::DeletableTopicResult,
        elect_leaders_response::{PartitionResult, ReplicaElectionResult},
    },
    protocol::StrBytes,
};

use super::{cluster_control::Decision, replication_control::ReplicationControl};
use crate::metadata::brokers::BrokerRegistration;

/// The api key of a topic request this module serves, `None` for others.
pub fn topic_api(request: &RequestKind) -> Option<ApiKey> {
    Some(match request {
        RequestKind::CreateTopics(_) => ApiKey::CreateTopics,
        RequestKind::DeleteTopics(_) => ApiKey::DeleteTopics,
        RequestKind::CreatePartitions(_) => ApiKey::CreatePartitions,
        RequestKind::AlterPartition(_) => ApiKey::AlterPartition,
        RequestKind::ElectLeaders(_) => ApiKey::ElectLeaders,
        _ => return None,
    })
}

/// The decision of a topic request (for which [`topic_api`] is `Some`);
/// `None` for any other request.
pub fn decide(
    replication: &mut ReplicationControl,
    request: &RequestKind,
    brokers: &BTreeMap<i32, BrokerRegistration>,
    metadata_level: i16,
) -> Option<Decision<ResponseKind>> {
    fn map<T>(d: Decision<T>, f: impl FnOnce(T) -> ResponseKind) -> Decision<ResponseKind> {
        Decision {
            records: d.records,
            answer: f(d.answer),
        }
    }
    Some(match request {
        RequestKind::CreateTopics(r) => map(
            replication.create_topics(r, brokers, metadata_level),
            ResponseKind::CreateTopics,
        ),
        RequestKind::DeleteTopics(r) => {
            map(replication.delete_topics(r), ResponseKind::DeleteTopics)
        }
        RequestKind::CreatePartitions(r) => map(
            replication.create_partitions(r, brokers, metadata_level),
            ResponseKind::CreatePartitions,
        ),
        RequestKind::AlterPartition(r) => map(
            replication.alter_partition(r, brokers, metadata_level),
            ResponseKind::AlterPartition,
        ),
        RequestKind::ElectLeaders(r) => map(
            replication.elect_leaders(r, brokers, metadata_level),
            ResponseKind::ElectLeaders,
        ),
        _ => return None,
    })
}

/// The answer giving `error` to everything `request` names (Kafka's
/// `getErrorResponse`); `None` for a request this module does not serve.
pub fn error_answer(request: &RequestKind, error: ResponseError) -> Option<ResponseKind> {
    let code = error.code();
    let message = || Some(StrBytes::from_string(error.to_string()));
    Some(match request {
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(
            CreateTopicsResponse::default().with_topics(
                r.topics
                    .iter()
                    .map(|t| {
                        CreatableTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(code)
                            .with_error_message(message())
                    })
                    .collect(),
            ),
        ),
        RequestKind::DeleteTopics(r) => {
            let by_name = r.topic_names.iter().map(|n| {
                DeletableTopicResult::default()
                    .with_name(Some(n.clone()))
                    .with_error_code(code)
                    .with_error_message(message())
            });
            let by_state = r.topics.iter().map(|t| {
                DeletableTopicResult::default()
                    .with_name(t.name.clone())
                    .with_topic_id(t.topic_id)
                    .with_error_code(code)
                    .with_error_message(message())
            });
            ResponseKind::DeleteTopics(
                DeleteTopicsResponse::default().with_responses(by_name.chain(by_state).collect()),
            )
        }
        RequestKind::CreatePartitions(r) => ResponseKind::CreatePartitions(
            CreatePartitionsResponse::default().with_results(
                r.topics
                    .iter()
                    .map(|t| {
                        CreatePartitionsTopicResult::default()
                            .with_name(t.name.clone())
                            .with_error_code(code)
                            .with_error_message(message())
                    })
                    .collect(),
            ),
        ),
        RequestKind::AlterPartition(_) => {
            ResponseKind::AlterPartition(AlterPartitionResponse::default().with_error_code(code))
        }
        RequestKind::ElectLeaders(r) => ResponseKind::ElectLeaders(
            ElectLeadersResponse::default()
                .with_error_code(code)
                .with_replica_election_results(
                    r.topic_partitions
                        .iter()
                        .flatten()
                        .map(|t| {
                            ReplicaElectionResult::default()
                                .with_topic(t.topic.clone())
                                .with_partition_result(
                                    t.partitions
                                        .iter()
                                        .map(|p| {
                                            PartitionResult::default()
                                                .with_partition_id(*p)
                                                .with_error_code(code)
                                                .with_error_message(message())
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                ),
        ),
        // The config requests name their resources.
        other => return super::configs::refused_response(other, &(error, error.to_string())),
    })
}
