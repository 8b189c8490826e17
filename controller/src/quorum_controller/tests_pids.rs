//! Unit tests of the quorum controller's producer-id and config requests
//! over the [`Node`](super::Node) harness of `tests.rs`: blocks answered
//! once committed, configs following topics created and deleted, and a
//! `min.insync.replicas` change clearing the ELRs.

use super::*;

fn allocate(id: i32, epoch: i64) -> RequestKind {
    RequestKind::AllocateProducerIds(
        kafka_protocol::messages::AllocateProducerIdsRequest::default()
            .with_broker_id(id.into())
            .with_broker_epoch(epoch),
    )
}

/// IncrementalAlterConfigs SET `key`=`value` on topic `t`.
fn set_topic_config(key: &'static str, value: &'static str) -> RequestKind {
    use kafka_protocol::messages::{
        IncrementalAlterConfigsRequest,
        incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig},
    };
    RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default().with_resources(
        vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_configs(vec![
                    AlterableConfig::default()
                        .with_name(StrBytes::from_static_str(key))
                        .with_config_operation(0)
                        .with_value(Some(StrBytes::from_static_str(value))),
                ]),
        ],
    ))
}

/// The one AllocateProducerIds answer to `handle`: (error code, start, len).
fn producer_ids_answer(node: &Node, handle: ReplyHandle) -> (i16, i64, i32) {
    match node.answers(handle).as_slice() {
        [ResponseKind::AllocateProducerIds(r)] => {
            (r.error_code, r.producer_id_start.0, r.producer_id_len)
        }
        other => panic!("expected one AllocateProducerIds answer, got {other:?}"),
    }
}

// Kafka's ProducerIdControlManager: the next block after the last handed
// out, committed or not; answered once its record commits.
#[test]
fn two_producer_id_requests_before_a_commit_get_different_blocks_answered_once_committed() {
    let mut node = Node::active(0);
    let epoch = node.end_offset();
    let h = node.request(broker(11));
    node.commit_all();
    assert_eq!(node.registration_answer(h), (0, epoch));
    let a = node.request(allocate(11, epoch));
    let b = node.request(allocate(11, epoch));
    assert!(node.answers(a).is_empty() && node.answers(b).is_empty());
    assert_eq!(node.qc.pending_answers(), 2);
    let stale = node.request(allocate(11, epoch + 1));
    assert_eq!(
        producer_ids_answer(&node, stale),
        (ResponseError::StaleBrokerEpoch.code(), 0, 0),
        "refused at once, nothing appended"
    );
    node.commit_all();
    assert_eq!(producer_ids_answer(&node, a), (0, 0, 1000));
    assert_eq!(producer_ids_answer(&node, b), (0, 1000, 1000));
    assert_eq!(node.image.next_producer_id(), Some(2000));
    // A controller activated over the committed image continues after it.
    let mut fresh = QuorumController::new(QuorumControllerConfig {
        cluster_id: CLUSTER.into(),
        session_timeout_ms: SESSION_MS,
        replication: Default::default(),
        leader_imbalance_check_interval_ms: None,
    });
    std::mem::swap(&mut node.qc, &mut fresh);
    let c = node.request(allocate(11, epoch));
    node.commit_all();
    assert_eq!(producer_ids_answer(&node, c), (0, 2000, 1000));
}

// Kafka replays every record into every manager: a topic's creation
// configs reach the config state, and its deletion drops them (review B5).
#[test]
fn configs_follow_topics_created_and_deleted_through_the_controller() {
    use kafka_protocol::messages::{
        CreateTopicsRequest, DeleteTopicsRequest, IncrementalAlterConfigsRequest, TopicName,
        create_topics_request::{CreatableTopic, CreatableTopicConfig},
        incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig},
    };
    let (mut node, _) = unfenced_broker();
    let create = RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_num_partitions(1)
                .with_replication_factor(1)
                .with_configs(vec![
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("5"))),
                ]),
        ]));
    let h = node.request(create);
    // Not committed yet: deleting the creation config already writes a record.
    let before = node.end_offset();
    let delete_key = RequestKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_configs(vec![
                    AlterableConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_config_operation(1),
                ]),
        ]),
    );
    let a = node.request(delete_key);
    assert_eq!(node.end_offset(), before + 1, "the DELETE wrote its record");
    node.commit_all();
    assert!(
        matches!(node.answers(h).as_slice(), [ResponseKind::CreateTopics(r)] if r.topics[0].error_code == 0)
    );
    assert!(
        matches!(node.answers(a).as_slice(), [ResponseKind::IncrementalAlterConfigs(r)] if r.responses[0].error_code == 0)
    );
    assert!(node.image.configs().of(2, "t").is_empty());
    // A key set again, then the topic deleted: its configs go with it.
    let set_key = set_topic_config("segment.ms", "10");
    node.request(set_key);
    node.commit_all();
    assert_eq!(node.image.configs().of(2, "t").len(), 1);
    let d = node.request(RequestKind::DeleteTopics(
        DeleteTopicsRequest::default()
            .with_topic_names(vec![TopicName(StrBytes::from_static_str("t"))]),
    ));
    node.commit_all();
    assert!(
        matches!(node.answers(d).as_slice(), [ResponseKind::DeleteTopics(r)] if r.responses[0].error_code == 0)
    );
    assert!(
        node.image.configs().of(2, "t").is_empty(),
        "the image dropped them"
    );
}

// KIP-966, Kafka 4.4's createClearElrRecordsAsNeeded: the ELRs were chosen
// under the old min.insync.replicas, so changing it clears them, in the
// committed image and in the speculative state later decisions start from.
#[test]
fn a_min_isr_change_clears_the_elrs_committed_and_speculative() {
    use kafka_protocol::messages::{
        CreateTopicsRequest, TopicName, create_topics_request::CreatableTopic,
    };
    let mut node = Node::new(0);
    node.elect();
    node.commit_all();
    let level = |name: &str, feature_level| {
        FeatureLevelRecord {
            name: name.into(),
            feature_level,
        }
        .encode_framed()
    };
    let cluster_min_isr = crate::metadata::records::ConfigRecord {
        resource_type: 4,
        resource_name: String::new(),
        name: "min.insync.replicas".into(),
        value: Some("2".into()),
    }
    .encode_framed();
    let bootstrap = [
        level(METADATA_VERSION_FEATURE, 27),
        level("eligible.leader.replicas.version", 1),
        cluster_min_isr,
    ];
    node.with_client(|_, client, _| client.propose(&bootstrap).expect("proposes"))
        .expect("leader");
    node.commit_all();
    assert!(node.qc.active_epoch().is_some(), "active");
    let mut epochs = Vec::new();
    for id in [11, 12, 13] {
        epochs.push((id, node.end_offset()));
        let h = node.request(registration(
            id,
            vec![
                feature(METADATA_VERSION_FEATURE, 7, 27),
                feature("kraft.version", 0, 1),
                feature("eligible.leader.replicas.version", 0, 1),
            ],
        ));
        node.commit_all();
        assert_eq!(node.registration_answer(h).0, 0, "broker {id} registered");
    }
    for &(id, epoch) in &epochs {
        let h = node.request(heartbeat(id, epoch, node.end_offset()));
        node.commit_all();
        assert_eq!(node.heartbeat_answer(h), (0, false), "broker {id} unfenced");
    }
    node.request(RequestKind::CreateTopics(
        CreateTopicsRequest::default().with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_num_partitions(1)
                .with_replication_factor(3),
        ]),
    ));
    node.commit_all();
    // Brokers 12 and 13 miss their sessions: the ISR falls below 2 and the
    // replicas that left it are eligible.
    node.mono += SESSION_MS + 1;
    let h = node.request(heartbeat(11, epochs[0].1, node.end_offset()));
    node.with_client(|qc, client, _| qc.on_wakeup(client).expect("no log failure"));
    node.commit_all();
    assert_eq!(node.heartbeat_answer(h), (0, false));
    let committed =
        |node: &Node| node.image.topics().by_name("t").expect("t").partitions[&0].clone();
    let speculative = |node: &Node| {
        node.qc
            .replication()
            .expect("active")
            .topics()
            .by_name("t")
            .expect("t")
            .partitions[&0]
            .clone()
    };
    let p = committed(&node);
    assert_eq!((p.leader, p.isr.clone()), (11, vec![11]), "{p:?}");
    assert!(!p.elr.is_empty(), "the fenced replicas are eligible: {p:?}");
    assert_eq!(speculative(&node).elr, p.elr);
    let epoch = p.partition_epoch;

    let before = node.end_offset();
    let a = node.request(set_topic_config("min.insync.replicas", "1"));
    assert_eq!(
        node.end_offset(),
        before + 2,
        "ConfigRecord + ClearElrRecord"
    );
    let p = speculative(&node);
    assert!(p.elr.is_empty() && p.last_known_elr.is_empty(), "{p:?}");
    node.commit_all();
    assert!(
        matches!(node.answers(a).as_slice(), [ResponseKind::IncrementalAlterConfigs(r)] if r.responses[0].error_code == 0)
    );
    let p = committed(&node);
    assert!(p.elr.is_empty() && p.last_known_elr.is_empty(), "{p:?}");
    // As Kafka's removeTopicElrs: the partition epoch brokers' AlterPartition
    // will carry, the same in the speculative state.
    assert_eq!(p.partition_epoch, epoch + 1);
    assert_eq!(speculative(&node).partition_epoch, epoch + 1);
}
