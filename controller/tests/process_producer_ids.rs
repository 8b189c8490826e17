//! Process test of AllocateProducerIds (67) on three real `kraft-controller`
//! processes, driven over the wire as a Kafka broker's
//! `RPCProducerIdManager` sends it: a registered broker gets two blocks of
//! 1,000 ids one after the other; a wrong epoch is STALE_BROKER_EPOCH; a
//! follower answers NOT_CONTROLLER; after every controller is restarted
//! (from its snapshot) the next block starts after the last one handed out,
//! so no producer id is handed out twice. A second case sends the other
//! requests a broker sends its controller before topics exist:
//! AssignReplicasToDirs (UNKNOWN_TOPIC_ID per partition) and
//! IncrementalAlterConfigs for a topic (UNKNOWN_TOPIC_OR_PARTITION) and for
//! the cluster default (accepted, then listed by DescribeConfigs).

mod support;

use std::time::Duration;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        AllocateProducerIdsRequest, AllocateProducerIdsResponse, AssignReplicasToDirsRequest,
        DescribeConfigsRequest, IncrementalAlterConfigsRequest, RequestKind, ResponseKind,
        assign_replicas_to_dirs_request, describe_configs_request,
        incremental_alter_configs_request,
    },
    protocol::StrBytes,
};
use support::{
    CLUSTER_ID, Mode, Quorum, QuorumBuilder,
    kafka_broker::{LOG_DIR, call, registration},
    wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(30);
const BROKER: i32 = 100;

fn allocate_at(quorum: &Quorum, node: i32, epoch: i64) -> AllocateProducerIdsResponse {
    let request = AllocateProducerIdsRequest::default()
        .with_broker_id(BROKER.into())
        .with_broker_epoch(epoch);
    match call(quorum, node, 0, RequestKind::AllocateProducerIds(request)) {
        ResponseKind::AllocateProducerIds(r) => r,
        other => panic!("not an AllocateProducerIds answer: {other:?}"),
    }
}

/// The block the active controller (whichever node it is) hands out, once
/// one answers without error.
fn allocate(quorum: &Quorum, epoch: i64) -> (i64, i32) {
    wait_for(TIMEOUT, "a block of producer ids", || {
        quorum.ids().into_iter().find_map(|node| {
            let r = allocate_at(quorum, node, epoch);
            (r.error_code == 0).then_some((r.producer_id_start.0, r.producer_id_len))
        })
    })
}

#[test]
fn producer_id_blocks_follow_each_other_and_do_not_overlap_after_the_controllers_restart() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .property("metadata.log.max.record.bytes.between.snapshots", 1)
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, TIMEOUT);
    let epoch = register(&quorum, leader);

    assert_eq!(allocate(&quorum, epoch), (0, 1000));
    assert_eq!(allocate(&quorum, epoch), (1000, 1000));

    // Bad requests get Kafka's errors and hand out nothing.
    let r = allocate_at(&quorum, leader, epoch + 1);
    assert_eq!(r.error_code, ResponseError::StaleBrokerEpoch.code());
    let follower = ids
        .iter()
        .copied()
        .find(|&i| i != leader)
        .expect("a follower");
    let r = allocate_at(&quorum, follower, epoch);
    assert_eq!(r.error_code, ResponseError::NotController.code());

    // Every node has committed the second block before the restart.
    let committed = quorum
        .node(leader)
        .high_watermark()
        .expect("a high watermark");
    for &node in &ids {
        wait_for(TIMEOUT, "every node to apply the second block", || {
            quorum
                .node(node)
                .high_watermark()
                .filter(|&hwm| hwm >= committed)
        });
    }
    for &node in &ids {
        quorum.terminate(node);
    }
    for &node in &ids {
        quorum.wait_exit(node, TIMEOUT);
    }
    quorum.start_all();
    quorum.wait_for_leader(&ids, TIMEOUT);
    assert_eq!(
        allocate(&quorum, epoch),
        (2000, 1000),
        "the next block after the restart follows the last one handed out"
    );
    let loaded: usize = ids
        .iter()
        .map(|&n| {
            quorum
                .node(n)
                .output_lines("metadata image loaded from the latest snapshot")
                .len()
        })
        .sum();
    assert!(loaded > 0, "no node restarted from a snapshot");
}

fn register(quorum: &Quorum, node: i32) -> i64 {
    wait_for(TIMEOUT, "the registration to be accepted", || {
        match call(
            quorum,
            node,
            4,
            RequestKind::BrokerRegistration(registration(CLUSTER_ID, BROKER)),
        ) {
            ResponseKind::BrokerRegistration(r) => (r.error_code == 0).then_some(r.broker_epoch),
            other => panic!("not a BrokerRegistration answer: {other:?}"),
        }
    })
}

fn alter(resource_type: i8, name: &str, key: &str, value: &str) -> RequestKind {
    RequestKind::IncrementalAlterConfigs(IncrementalAlterConfigsRequest::default().with_resources(
        vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(name.to_owned()))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(StrBytes::from_string(key.to_owned()))
                        .with_config_operation(0)
                        .with_value(Some(StrBytes::from_string(value.to_owned()))),
                ]),
        ],
    ))
}

#[test]
fn directory_assignments_and_configs_are_answered_over_the_wire_as_kafka_answers_them() {
    let mut quorum = QuorumBuilder::standalone().format();
    quorum.start_all();
    quorum.wait_for_leader(&[1], TIMEOUT);
    let epoch = register(&quorum, 1);

    let topic_id = uuid::Uuid::from_u128(0x70);
    let request = AssignReplicasToDirsRequest::default()
        .with_broker_id(BROKER.into())
        .with_broker_epoch(epoch)
        .with_directories(vec![
            assign_replicas_to_dirs_request::DirectoryData::default()
                .with_id(LOG_DIR)
                .with_topics(vec![
                    assign_replicas_to_dirs_request::TopicData::default()
                        .with_topic_id(topic_id)
                        .with_partitions(vec![
                            assign_replicas_to_dirs_request::PartitionData::default(),
                        ]),
                ]),
        ]);
    match call(
        &quorum,
        1,
        0,
        RequestKind::AssignReplicasToDirs(request.clone()),
    ) {
        ResponseKind::AssignReplicasToDirs(r) => {
            assert_eq!(r.error_code, 0);
            assert_eq!(
                r.directories[0].topics[0].partitions[0].error_code,
                ResponseError::UnknownTopicId.code()
            );
        }
        other => panic!("not an AssignReplicasToDirs answer: {other:?}"),
    }
    match call(
        &quorum,
        1,
        0,
        RequestKind::AssignReplicasToDirs(request.with_broker_epoch(epoch + 1)),
    ) {
        ResponseKind::AssignReplicasToDirs(r) => {
            assert_eq!(r.error_code, ResponseError::StaleBrokerEpoch.code());
        }
        other => panic!("not an AssignReplicasToDirs answer: {other:?}"),
    }

    match call(&quorum, 1, 1, alter(2, "nope", "retention.ms", "1")) {
        ResponseKind::IncrementalAlterConfigs(r) => assert_eq!(
            r.responses[0].error_code,
            ResponseError::UnknownTopicOrPartition.code()
        ),
        other => panic!("not an IncrementalAlterConfigs answer: {other:?}"),
    }
    match call(&quorum, 1, 1, alter(4, "", "log.cleaner.threads", "2")) {
        ResponseKind::IncrementalAlterConfigs(r) => assert_eq!(r.responses[0].error_code, 0),
        other => panic!("not an IncrementalAlterConfigs answer: {other:?}"),
    }
    let describe =
        RequestKind::DescribeConfigs(DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_configuration_keys(None),
        ]));
    match call(&quorum, 1, 4, describe) {
        ResponseKind::DescribeConfigs(r) => {
            let names: Vec<&str> = r.results[0]
                .configs
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            assert!(names.contains(&"log.cleaner.threads"), "{names:?}");
        }
        other => panic!("not a DescribeConfigs answer: {other:?}"),
    }
}
