//! Kafka's CreateTopics / DeleteTopics / CreatePartitions checks, each able
//! to fail: the refusals, their order and messages, placement over
//! unfenced brokers, `validateOnly`, and the records written.

use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, TopicName,
    create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsTopic},
    create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig},
    delete_topics_request::DeleteTopicState,
};

use super::*;
use crate::metadata::records::{
    CONFIG_RECORD_API_KEY, PARTITION_RECORD_API_KEY, PartitionRecord, TOPIC_RECORD_API_KEY,
};

pub(crate) fn broker(id: i32, rack: Option<&str>, fenced: bool) -> BrokerRegistration {
    BrokerRegistration {
        incarnation_id: Uuid::from_u128(id as u128),
        epoch: 10 + i64::from(id),
        endpoints: vec![],
        supported_features: vec![],
        rack: rack.map(str::to_owned),
        fenced,
        in_controlled_shutdown: false,
        is_migrating_zk_broker: false,
        log_dirs: vec![Uuid::from_u128(1000 + id as u128)],
        cordoned_log_dirs: None,
        record_offset: 0,
    }
}

pub(crate) fn three_brokers() -> BTreeMap<i32, BrokerRegistration> {
    (1..=3).map(|id| (id, broker(id, None, false))).collect()
}

fn name(n: &str) -> TopicName {
    TopicName(StrBytes::from_string(n.to_owned()))
}

fn topic(n: &str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(name(n))
        .with_num_partitions(partitions)
        .with_replication_factor(rf)
}

pub(crate) fn control() -> ReplicationControl {
    ReplicationControl::activate_seeded(&MetadataImage::default(), ReplicationConfig::default(), 5)
}

fn create(
    rc: &mut ReplicationControl,
    brokers: &BTreeMap<i32, BrokerRegistration>,
    topics: Vec<CreatableTopic>,
) -> Decision<CreateTopicsResponse> {
    rc.create_topics(
        &CreateTopicsRequest::default().with_topics(topics),
        brokers,
        27,
    )
}

fn keys(records: &[Bytes]) -> Vec<u32> {
    records
        .iter()
        .map(|r| FramedRecord::decode(r).expect("frame").api_key)
        .collect()
}

#[test]
fn a_topic_is_placed_over_the_brokers_with_leaders_spread() {
    let mut rc = control();
    let d = create(&mut rc, &three_brokers(), vec![topic("foo", 6, 3)]);
    let t = &d.answer.topics[0];
    assert_eq!(
        (t.error_code, t.num_partitions, t.replication_factor),
        (0, 6, 3)
    );
    assert!(!t.topic_id.is_nil() && t.topic_id != METADATA_TOPIC_ID);
    assert_eq!(
        keys(&d.records),
        [
            vec![TOPIC_RECORD_API_KEY],
            vec![PARTITION_RECORD_API_KEY; 6]
        ]
        .concat()
    );
    let mut leaders = BTreeMap::<i32, usize>::new();
    for r in &d.records[1..] {
        let f = FramedRecord::decode(r).expect("frame");
        assert_eq!(f.version, 2);
        let p = PartitionRecord::decode_message(&f.message, 2).expect("partition");
        assert_eq!(p.isr.len(), 3);
        assert_eq!(p.leader, p.replicas[0]);
        assert_eq!(
            p.directories,
            p.replicas
                .iter()
                .map(|r| Uuid::from_u128(1000 + *r as u128))
                .collect::<Vec<_>>()
        );
        *leaders.entry(p.leader).or_default() += 1;
    }
    assert_eq!(leaders.values().copied().collect::<Vec<_>>(), vec![2, 2, 2]);
    assert_eq!(
        rc.topics()
            .by_name("foo")
            .expect("speculative")
            .partitions
            .len(),
        6
    );
}

#[test]
fn refusals_follow_kafkas_order_and_messages() {
    let mut rc = control();
    let brokers = three_brokers();
    create(&mut rc, &brokers, vec![topic("a.b", 1, 1)]);
    let d = create(
        &mut rc,
        &brokers,
        vec![
            topic("bad name", 1, 1),
            topic("a.b", 1, 1),
            topic("a_b", 1, 1),
            topic("dup", 1, 1),
            topic("dup", 1, 1),
            topic("big", 1, 4),
            topic("zero", 1, 0),
            topic("nopart", 0, 1),
            topic("__cluster_metadata", 1, 1),
        ],
    );
    let got: Vec<(String, i16, String)> = d
        .answer
        .topics
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                t.error_code,
                t.error_message
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
            )
        })
        .collect();
    use ResponseError::*;
    let want = [
        (
            "bad name",
            InvalidTopicException,
            "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
        ),
        ("a.b", TopicAlreadyExists, "Topic 'a.b' already exists."),
        (
            "a_b",
            InvalidTopicException,
            "Topic 'a_b' collides with existing topic: a.b",
        ),
        (
            "big",
            InvalidReplicationFactor,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered or some brokers have all their log directories cordoned.",
        ),
        (
            "zero",
            InvalidReplicationFactor,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            "nopart",
            InvalidPartitions,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        ("dup", InvalidRequest, "Duplicate topic name."),
        (
            "__cluster_metadata",
            InvalidRequest,
            "Creation of internal topic __cluster_metadata is prohibited.",
        ),
    ];
    let want: Vec<(String, i16, String)> = want
        .iter()
        .map(|(n, e, m)| ((*n).to_owned(), e.code(), (*m).to_owned()))
        .collect();
    assert_eq!(got, want);
    assert!(d.records.is_empty());
    assert_eq!(rc.topics().len(), 1);
}

#[test]
fn defaults_validate_only_and_configs() {
    let mut rc = control();
    let brokers = three_brokers();
    let d = rc.create_topics(
        &CreateTopicsRequest::default()
            .with_topics(vec![topic("v", -1, -1)])
            .with_validate_only(true),
        &brokers,
        27,
    );
    assert_eq!(
        (
            d.answer.topics[0].num_partitions,
            d.answer.topics[0].replication_factor
        ),
        (1, 1)
    );
    assert!(d.records.is_empty());
    assert!(rc.topics().is_empty());
    let with_config = topic("c", -1, -1).with_configs(vec![
        CreatableTopicConfig::default()
            .with_name(StrBytes::from_static_str("cleanup.policy"))
            .with_value(Some(StrBytes::from_static_str("compact"))),
    ]);
    let d = create(&mut rc, &brokers, vec![with_config]);
    assert_eq!(
        keys(&d.records),
        vec![
            TOPIC_RECORD_API_KEY,
            CONFIG_RECORD_API_KEY,
            PARTITION_RECORD_API_KEY
        ]
    );
    let configs = d.answer.topics[0].configs.as_ref().expect("configs");
    assert_eq!(configs[0].name.as_str(), "cleanup.policy");
}

#[test]
fn fenced_brokers_are_not_in_new_isrs_and_all_fenced_is_refused() {
    let mut rc = control();
    let mut brokers = three_brokers();
    brokers.insert(2, broker(2, None, true));
    let d = create(&mut rc, &brokers, vec![topic("f", 3, 3)]);
    for r in &d.records[1..] {
        let f = FramedRecord::decode(r).expect("frame");
        let p = PartitionRecord::decode_message(&f.message, 2).expect("partition");
        assert!(!p.isr.contains(&2) && p.leader != 2, "{p:?}");
    }
    let fenced: BTreeMap<i32, BrokerRegistration> =
        (1..=3).map(|id| (id, broker(id, None, true))).collect();
    let d = create(&mut rc, &fenced, vec![topic("g", 1, 1)]);
    assert_eq!(
        d.answer.topics[0].error_message.as_deref(),
        Some("Unable to replicate the partition 1 time(s): All brokers are currently fenced.")
    );
}

#[test]
fn manual_assignments_are_checked_as_kafka_does() {
    let mut rc = control();
    let brokers = three_brokers();
    let assign = |p: i32, ids: &[i32]| {
        CreatableReplicaAssignment::default()
            .with_partition_index(p)
            .with_broker_ids(ids.iter().map(|b| BrokerId(*b)).collect())
    };
    let cases = [
        (
            vec![assign(0, &[1, 2])],
            2,
            -1,
            ResponseError::InvalidRequest,
        ),
        (
            vec![assign(0, &[1, 9])],
            -1,
            -1,
            ResponseError::InvalidReplicaAssignment,
        ),
        (
            vec![assign(0, &[1, 1])],
            -1,
            -1,
            ResponseError::InvalidReplicaAssignment,
        ),
        (
            vec![assign(0, &[1, 2]), assign(1, &[3])],
            -1,
            -1,
            ResponseError::InvalidReplicaAssignment,
        ),
        (
            vec![assign(1, &[1])],
            -1,
            -1,
            ResponseError::InvalidReplicaAssignment,
        ),
    ];
    for (assignments, rf, parts, error) in cases {
        let t = topic("m", parts, rf).with_assignments(assignments.clone());
        let d = create(&mut rc, &brokers, vec![t]);
        assert_eq!(
            d.answer.topics[0].error_code,
            error.code(),
            "{assignments:?}"
        );
    }
    let t = topic("m", -1, -1).with_assignments(vec![assign(0, &[3, 1]), assign(1, &[2, 3])]);
    let d = create(&mut rc, &brokers, vec![t]);
    assert_eq!(d.answer.topics[0].error_code, 0);
    let p = &rc.topics().by_name("m").expect("m").partitions;
    assert_eq!((p[&0].replicas.clone(), p[&0].leader), (vec![3, 1], 3));
}

#[test]
fn delete_by_name_and_id_with_kafkas_errors() {
    let mut rc = control();
    let brokers = three_brokers();
    create(&mut rc, &brokers, vec![topic("x", 1, 1), topic("y", 1, 1)]);
    let y = rc.topics().by_name("y").expect("y").id;
    let unknown = Uuid::from_u128(77);
    let d = rc.delete_topics(
        &DeleteTopicsRequest::default()
            .with_topic_names(vec![name("x"), name("nope")])
            .with_topics(vec![
                DeleteTopicState::default().with_topic_id(y),
                DeleteTopicState::default().with_topic_id(unknown),
            ]),
    );
    let by = |f: &dyn Fn(
        &kafka_protocol::messages::delete_topics_response::DeletableTopicResult,
    ) -> bool| {
        d.answer
            .responses
            .iter()
            .find(|r| f(r))
            .map(|r| r.error_code)
    };
    assert_eq!(
        by(&|r| r.topic_id == unknown),
        Some(ResponseError::UnknownTopicId.code())
    );
    assert_eq!(
        by(&|r| r.name.as_ref().is_some_and(|n| n.as_str() == "nope")),
        Some(ResponseError::UnknownTopicOrPartition.code())
    );
    assert_eq!(by(&|r| r.topic_id == y), Some(0));
    assert_eq!(
        by(&|r| r.name.as_ref().is_some_and(|n| n.as_str() == "x")),
        Some(0)
    );
    assert_eq!(d.records.len(), 2);
    assert!(rc.topics().is_empty());
}

#[test]
fn create_partitions_must_increase_and_keeps_the_replication_factor() {
    let mut rc = control();
    let brokers = three_brokers();
    create(&mut rc, &brokers, vec![topic("p", 2, 2)]);
    let req = |count: i32, validate_only: bool| {
        CreatePartitionsRequest::default()
            .with_topics(vec![
                CreatePartitionsTopic::default()
                    .with_name(name("p"))
                    .with_count(count)
                    .with_assignments(None),
            ])
            .with_validate_only(validate_only)
    };
    let d = rc.create_partitions(&req(2, false), &brokers, 27);
    assert_eq!(
        d.answer.results[0].error_code,
        ResponseError::InvalidPartitions.code()
    );
    assert_eq!(
        d.answer.results[0].error_message.as_deref(),
        Some("Topic already has 2 partition(s).")
    );
    let d = rc.create_partitions(&req(1, false), &brokers, 27);
    assert_eq!(
        d.answer.results[0].error_message.as_deref(),
        Some("The topic p currently has 2 partition(s); 1 would not be an increase.")
    );
    let d = rc.create_partitions(&req(4, true), &brokers, 27);
    assert_eq!(
        (
            d.records.len(),
            d.answer.results[0].error_code,
            d.answer.results[0].error_message.clone()
        ),
        (0, 0, None)
    );
    assert_eq!(rc.topics().by_name("p").expect("p").partitions.len(), 2);
    let d = rc.create_partitions(&req(4, false), &brokers, 27);
    assert_eq!(d.records.len(), 2);
    let p = &rc.topics().by_name("p").expect("p").partitions;
    assert_eq!(p.len(), 4);
    assert!(p.values().all(|p| p.replicas.len() == 2));
    let bad = CreatePartitionsRequest::default().with_topics(vec![
        CreatePartitionsTopic::default()
            .with_name(name("p"))
            .with_count(6)
            .with_assignments(Some(vec![
                CreatePartitionsAssignment::default()
                    .with_broker_ids(vec![BrokerId(1), BrokerId(2)]),
            ])),
    ]);
    let d = rc.create_partitions(&bad, &brokers, 27);
    assert_eq!(
        d.answer.results[0].error_code,
        ResponseError::InvalidReplicaAssignment.code()
    );
    let unknown = CreatePartitionsRequest::default().with_topics(vec![
        CreatePartitionsTopic::default()
            .with_name(name("q"))
            .with_count(3)
            .with_assignments(None),
    ]);
    let d = rc.create_partitions(&unknown, &brokers, 27);
    assert_eq!(
        d.answer.results[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
}

#[test]
fn a_request_past_the_record_limit_fails_whole_with_policy_violation() {
    let mut rc = control();
    let brokers = three_brokers();
    let d = create(
        &mut rc,
        &brokers,
        vec![topic("ok", 1, 1), topic("huge", i32::MAX, 1)],
    );
    assert!(d.records.is_empty());
    for t in &d.answer.topics {
        assert_eq!(t.error_code, ResponseError::PolicyViolation.code());
        assert_eq!(t.error_message.as_deref(), Some(TOO_LARGE_MESSAGE));
    }
    assert!(rc.topics().is_empty());
    create(&mut rc, &brokers, vec![topic("p", 1, 1)]);
    let d = rc.create_partitions(
        &CreatePartitionsRequest::default().with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(name("p"))
                .with_count(i32::MAX)
                .with_assignments(None),
        ]),
        &brokers,
        27,
    );
    assert_eq!(
        d.answer.results[0].error_code,
        ResponseError::PolicyViolation.code()
    );
    assert!(d.records.is_empty());
    assert_eq!(rc.topics().by_name("p").expect("p").partitions.len(), 1);
}
