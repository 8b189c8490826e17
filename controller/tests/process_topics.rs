//! Process test of the quorum controller's replication half on 3 real
//! `kraft-controller` processes, driven over the wire with kafka-protocol
//! requests as Kafka brokers and admin clients send them: 3 brokers
//! register and are unfenced; CreateTopics (v7) places 6 partitions × 3
//! replicas with a leader and an ISR of 3 each, visible in every node's
//! image; bad requests get Kafka's errors; every node restarts from its
//! snapshot with the topic kept; DeleteTopics removes it.

mod support;

use std::time::Duration;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateTopicsRequest,
        CreateTopicsResponse, DeleteTopicsRequest, RequestKind, ResponseKind, TopicName,
        broker_registration_request::{Feature, Listener},
        create_topics_request::CreatableTopic,
    },
    protocol::StrBytes,
};
use kraft_controller::wire::client::{ClientConfig, Connection};
use serde_json::Value;
use support::{CLUSTER_ID, Mode, Quorum, QuorumBuilder, wait_for};

const TIMEOUT: Duration = Duration::from_secs(40);
const BROKERS: [i32; 3] = [100, 101, 102];

fn call(quorum: &Quorum, id: i32, version: i16, request: RequestKind) -> Option<ResponseKind> {
    let address = quorum.node(id).address();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime
        .block_on(async move {
            let connection = Connection::connect(&address, ClientConfig::default()).await?;
            connection.call(version, request).await
        })
        .map_err(|e| eprintln!("call to {id}: {e}"))
        .ok()
}

fn registration(broker: i32) -> BrokerRegistrationRequest {
    let feature = |name: &'static str, max: i16| {
        Feature::default()
            .with_name(StrBytes::from_static_str(name))
            .with_max_supported_version(max)
    };
    BrokerRegistrationRequest::default()
        .with_broker_id(broker.into())
        .with_cluster_id(StrBytes::from_static_str(CLUSTER_ID))
        .with_incarnation_id(uuid::Uuid::from_u128(broker as u128))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(9000 + broker as u16),
        ])
        .with_features(vec![
            feature("metadata.version", 27).with_min_supported_version(7),
            feature("kraft.version", 1),
            feature("group.version", 1),
            feature("transaction.version", 2),
            feature("eligible.leader.replicas.version", 1),
        ])
        .with_log_dirs(vec![uuid::Uuid::from_u128(0xd1d1_0000 + broker as u128)])
        .with_previous_broker_epoch(-1)
}

/// Registers and unfences `broker` at the active controller; its epoch.
fn register_and_unfence(quorum: &Quorum, ids: &[i32], broker: i32) -> i64 {
    wait_for(TIMEOUT, "a broker registered and unfenced", || {
        ids.iter().find_map(|&id| {
            let Some(ResponseKind::BrokerRegistration(r)) = call(
                quorum,
                id,
                4,
                RequestKind::BrokerRegistration(registration(broker)),
            ) else {
                return None;
            };
            if r.error_code != 0 {
                return None;
            }
            let beat = BrokerHeartbeatRequest::default()
                .with_broker_id(broker.into())
                .with_broker_epoch(r.broker_epoch)
                .with_current_metadata_offset(i64::MAX / 2);
            match call(quorum, id, 1, RequestKind::BrokerHeartbeat(beat)) {
                Some(ResponseKind::BrokerHeartbeat(h)) if h.error_code == 0 && !h.is_fenced => {
                    Some(r.broker_epoch)
                }
                _ => None,
            }
        })
    })
}

fn create(quorum: &Quorum, ids: &[i32], topic: CreatableTopic) -> CreateTopicsResponse {
    let request = CreateTopicsRequest::default().with_topics(vec![topic]);
    wait_for(TIMEOUT, "a CreateTopics answer", || {
        ids.iter().find_map(|&id| {
            match call(quorum, id, 7, RequestKind::CreateTopics(request.clone())) {
                Some(ResponseKind::CreateTopics(r))
                    if r.topics[0].error_code != ResponseError::NotController.code() =>
                {
                    Some(r)
                }
                other => {
                    eprintln!("CreateTopics at {id}: {other:?}");
                    None
                }
            }
        })
    })
}

fn topic(name: &'static str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_static_str(name)))
        .with_num_partitions(partitions)
        .with_replication_factor(rf)
}

/// Topic `name` in node `id`'s `/metadata`, `None` while not there.
fn topic_in(quorum: &Quorum, id: i32, name: &str) -> Option<Value> {
    let (status, body) = quorum.node(id).http_get("/metadata")?;
    let image: Value = (status == 200).then(|| serde_json::from_str(&body).ok())??;
    image["topics"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
}

fn check_shape(t: &Value) {
    let partitions = t["partitions"].as_array().expect("partitions");
    assert_eq!(partitions.len(), 6, "{t}");
    let mut leaders = std::collections::BTreeMap::<i64, usize>::new();
    for p in partitions {
        assert_eq!(p["isr"].as_array().map(Vec::len), Some(3), "{p}");
        assert_eq!(p["leader"], p["replicas"][0], "{p}");
        *leaders
            .entry(p["leader"].as_i64().expect("leader"))
            .or_default() += 1;
    }
    assert_eq!(leaders.values().copied().collect::<Vec<_>>(), vec![2, 2, 2]);
}

#[test]
fn topics_are_created_on_registered_brokers_kept_across_restarts_and_deleted() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic)
        .property("broker.session.timeout.ms", 600_000)
        .property("metadata.log.max.record.bytes.between.snapshots", 1)
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    quorum.wait_for_leader(&ids, TIMEOUT);
    for b in BROKERS {
        register_and_unfence(&quorum, &ids, b);
    }

    let r = create(&quorum, &ids, topic("orders", 6, 3));
    let t = &r.topics[0];
    assert_eq!(
        (t.error_code, t.num_partitions, t.replication_factor),
        (0, 6, 3),
        "{r:?}"
    );
    assert!(!t.topic_id.is_nil());
    for &id in &ids {
        let t = wait_for(TIMEOUT, "the topic in every image", || {
            topic_in(&quorum, id, "orders")
        });
        check_shape(&t);
    }

    // Kafka's refusals.
    let r = create(&quorum, &ids, topic("orders", 1, 1));
    assert_eq!(
        r.topics[0].error_code,
        ResponseError::TopicAlreadyExists.code()
    );
    let r = create(&quorum, &ids, topic("big", 1, 4));
    assert_eq!(
        r.topics[0].error_message.as_deref(),
        Some(
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 \
             cannot be reached because only 3 broker(s) are registered or some brokers have all their log directories cordoned."
        )
    );
    let r = create(&quorum, &ids, topic("bad/name", 1, 1));
    assert_eq!(
        r.topics[0].error_code,
        ResponseError::InvalidTopicException.code()
    );
    let leader = quorum.wait_for_leader(&ids, TIMEOUT).0;
    assert_eq!(
        quorum
            .node(leader)
            .metric("kafka_controller_kafkacontroller_globalpartitioncount"),
        Some(6.0)
    );

    // Every node restarts from its snapshot with the topic kept.
    for &id in &ids {
        quorum.terminate(id);
        quorum.wait_exit(id, TIMEOUT);
    }
    let dump = quorum.dump_log(ids[0]);
    assert!(
        dump.contains("TOPIC_RECORD(2) version=0 name=orders"),
        "{dump}"
    );
    quorum.start_all();
    quorum.wait_for_leader(&ids, TIMEOUT);
    for &id in &ids {
        let t = wait_for(TIMEOUT, "the topic after the restart", || {
            topic_in(&quorum, id, "orders")
        });
        check_shape(&t);
        assert!(
            !quorum
                .node(id)
                .output_lines("metadata image loaded from the latest snapshot")
                .is_empty(),
            "{}",
            quorum.node(id).output_tail(40)
        );
    }

    // Deleted by name.
    let request = DeleteTopicsRequest::default()
        .with_topic_names(vec![TopicName(StrBytes::from_static_str("orders"))]);
    let r = wait_for(TIMEOUT, "a DeleteTopics answer", || {
        ids.iter().find_map(|&id| {
            match call(&quorum, id, 5, RequestKind::DeleteTopics(request.clone())) {
                Some(ResponseKind::DeleteTopics(r))
                    if r.responses[0].error_code != ResponseError::NotController.code() =>
                {
                    Some(r)
                }
                _ => None,
            }
        })
    });
    assert_eq!(r.responses[0].error_code, 0, "{r:?}");
    for &id in &ids {
        wait_for(TIMEOUT, "the topic gone", || {
            topic_in(&quorum, id, "orders").is_none().then_some(())
        });
    }
}
