//! Fitting messages to the api version they are encoded at.
//!
//! The engine builds version-agnostic messages (a Fetch names its topic both
//! by name and by id, a DescribeQuorum answer carries every field of v2). The
//! `kafka-protocol` encoder refuses a non-default value in a field that the
//! chosen version does not have, so before encoding, this module clears such
//! fields, keeping the one of each pair the version carries. The version
//! ranges are those of Kafka 4.1's message schemas.

use kafka_protocol::{
    messages::{
        BrokerId, DescribeQuorumResponse, FetchRequest, FetchResponse, RequestKind, ResponseKind,
        TopicName,
    },
    protocol::StrBytes,
};

/// Clears the fields of `request` that `version` cannot carry.
pub fn fit_request(request: &mut RequestKind, version: i16) {
    if let RequestKind::Fetch(r) = request {
        fit_fetch_request(r, version);
    }
}

/// Clears the fields of `response` that `version` cannot carry.
pub fn fit_response(response: &mut ResponseKind, version: i16) {
    match response {
        ResponseKind::Fetch(r) => fit_fetch_response(r, version),
        ResponseKind::DescribeQuorum(r) => fit_describe_quorum_response(r, version),
        _ => {}
    }
}

fn fit_fetch_request(r: &mut FetchRequest, version: i16) {
    if version >= 15 {
        // ReplicaId moved into ReplicaState (KIP-903).
        if r.replica_state.replica_id.0 < 0 {
            r.replica_state.replica_id = r.replica_id;
        }
        r.replica_id = BrokerId(-1);
    } else {
        if r.replica_id.0 < 0 {
            r.replica_id = r.replica_state.replica_id;
        }
        r.replica_state = Default::default();
    }
    if version < 12 {
        r.cluster_id = None;
    }
    for topic in &mut r.topics {
        if version >= 13 {
            topic.topic = TopicName(StrBytes::default());
        } else {
            topic.topic_id = uuid::Uuid::nil();
        }
        for p in &mut topic.partitions {
            if version < 17 {
                p.replica_directory_id = uuid::Uuid::nil();
            }
            if version < 18 {
                p.high_watermark = -1;
            }
            if version < 12 {
                p.last_fetched_epoch = -1;
            }
            if version < 9 {
                p.current_leader_epoch = -1;
            }
        }
    }
}

fn fit_fetch_response(r: &mut FetchResponse, version: i16) {
    if version < 16 {
        r.node_endpoints.clear();
    }
    for topic in &mut r.responses {
        if version >= 13 {
            topic.topic = TopicName(StrBytes::default());
        } else {
            topic.topic_id = uuid::Uuid::nil();
        }
        for p in &mut topic.partitions {
            if version < 12 {
                p.diverging_epoch = Default::default();
                p.current_leader = Default::default();
                p.snapshot_id = Default::default();
            }
        }
    }
}

fn fit_describe_quorum_response(r: &mut DescribeQuorumResponse, version: i16) {
    if version < 2 {
        r.error_message = None;
        r.nodes.clear();
    }
    for topic in &mut r.topics {
        for p in &mut topic.partitions {
            if version < 2 {
                p.error_message = None;
            }
            for replica in p.current_voters.iter_mut().chain(p.observers.iter_mut()) {
                if version < 2 {
                    replica.replica_directory_id = uuid::Uuid::nil();
                }
                if version < 1 {
                    replica.last_fetch_timestamp = -1;
                    replica.last_caught_up_timestamp = -1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::{
        messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState},
        protocol::Encodable,
    };

    use super::*;

    fn engine_style_fetch() -> FetchRequest {
        FetchRequest::default()
            .with_cluster_id(Some(StrBytes::from_static_str("c")))
            .with_replica_id(BrokerId(3))
            .with_replica_state(ReplicaState::default().with_replica_id(BrokerId(3)))
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_static_str("__cluster_metadata")))
                    .with_topic_id(uuid::Uuid::from_u128(1))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_replica_directory_id(uuid::Uuid::from_u128(77))
                            .with_high_watermark(5),
                    ]),
            ])
    }

    #[test]
    fn an_engine_fetch_encodes_at_every_version_once_fitted() {
        for version in 4..=18 {
            let mut request = RequestKind::Fetch(engine_style_fetch());
            fit_request(&mut request, version);
            let RequestKind::Fetch(fetch) = &request else {
                unreachable!("fit keeps the kind")
            };
            let mut buf = BytesMut::new();
            fetch
                .encode(&mut buf, version)
                .unwrap_or_else(|e| panic!("fetch v{version}: {e}"));
            let replica = if version >= 15 {
                fetch.replica_state.replica_id
            } else {
                fetch.replica_id
            };
            assert_eq!(replica, BrokerId(3), "v{version} keeps the replica id");
        }
    }
}
