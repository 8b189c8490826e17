//! Process test of the quorum controller's broker half on a real
//! `kraft-controller` process, driven over the wire with kafka-protocol
//! BrokerRegistration (v4) and BrokerHeartbeat (v1) requests as a Kafka
//! broker's `BrokerLifecycleManager` sends them: registered (fenced) ->
//! heartbeat caught up -> unfenced -> no more heartbeats -> fenced after
//! `broker.session.timeout.ms`; bad requests get Kafka's errors; a restart
//! from the snapshot still has the broker registered with its epoch.

mod support;

use std::time::Duration;

use kafka_protocol::{
    error::ResponseError,
    messages::{
        BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
        BrokerRegistrationResponse, RequestKind, ResponseKind,
    },
};
use serde_json::Value;
use support::{
    CLUSTER_ID, Quorum, QuorumBuilder,
    kafka_broker::{call, registration},
    wait_for,
};

const TIMEOUT: Duration = Duration::from_secs(30);
const BROKER: i32 = 100;
const SESSION_TIMEOUT_MS: u64 = 2_000;

fn register_at(
    quorum: &Quorum,
    node: i32,
    request: BrokerRegistrationRequest,
) -> BrokerRegistrationResponse {
    match call(quorum, node, 4, RequestKind::BrokerRegistration(request)) {
        ResponseKind::BrokerRegistration(r) => r,
        other => panic!("not a BrokerRegistration answer: {other:?}"),
    }
}

fn heartbeat_at(quorum: &Quorum, node: i32, epoch: i64, offset: i64) -> BrokerHeartbeatResponse {
    let request = BrokerHeartbeatRequest::default()
        .with_broker_id(BROKER.into())
        .with_broker_epoch(epoch)
        .with_current_metadata_offset(offset)
        .with_want_fence(false);
    match call(quorum, node, 1, RequestKind::BrokerHeartbeat(request)) {
        ResponseKind::BrokerHeartbeat(r) => r,
        other => panic!("not a BrokerHeartbeat answer: {other:?}"),
    }
}

/// Broker [`BROKER`] in node `node`'s `/metadata`, `None` while not there.
fn broker_in(quorum: &Quorum, node: i32) -> Option<Value> {
    let (status, body) = quorum.node(node).http_get("/metadata")?;
    let image: Value = (status == 200).then(|| serde_json::from_str(&body).ok())??;
    image["brokers"]
        .as_array()?
        .iter()
        .find(|b| b["id"] == BROKER)
        .cloned()
}

#[test]
fn a_broker_registers_is_unfenced_by_heartbeats_fenced_without_them_and_survives_a_restart() {
    let mut quorum = QuorumBuilder::standalone()
        .property("broker.session.timeout.ms", SESSION_TIMEOUT_MS)
        .property("metadata.log.max.record.bytes.between.snapshots", 1)
        .format();
    quorum.start_all();
    quorum.wait_for_leader(&[1], TIMEOUT);

    // Accepted once the controller is active and the record committed.
    let epoch = wait_for(TIMEOUT, "the registration to be accepted", || {
        let r = register_at(&quorum, 1, registration(CLUSTER_ID, BROKER));
        (r.error_code == 0).then_some(r.broker_epoch)
    });
    assert!(epoch > 0, "the epoch is the offset of its record");
    let b = wait_for(TIMEOUT, "the broker in the image", || broker_in(&quorum, 1));
    assert_eq!(
        (b["epoch"].as_i64(), b["fenced"].as_bool()),
        (Some(epoch), Some(true))
    );

    // Bad input gets Kafka's errors and changes nothing.
    let code = |e: ResponseError| e.code();
    let r = register_at(&quorum, 1, registration("another-cluster-id", BROKER));
    assert_eq!(r.error_code, code(ResponseError::InconsistentClusterId));
    let r = register_at(&quorum, 1, registration(CLUSTER_ID, 1));
    assert_eq!(
        r.error_code,
        code(ResponseError::InvalidRegistration),
        "a controller's id"
    );
    let dirs: Vec<uuid::Uuid> = (0..10_000u128)
        .map(|i| uuid::Uuid::from_u128(1_000 + i))
        .collect();
    let r = register_at(
        &quorum,
        1,
        registration(CLUSTER_ID, 101).with_log_dirs(dirs),
    );
    assert_eq!(
        r.error_code,
        code(ResponseError::InvalidRegistration),
        "10,000 log dirs"
    );
    let r = heartbeat_at(&quorum, 1, epoch + 1, epoch);
    assert_eq!(r.error_code, code(ResponseError::StaleBrokerEpoch));
    // The same incarnation registering again keeps its epoch.
    let r = register_at(&quorum, 1, registration(CLUSTER_ID, BROKER));
    assert_eq!((r.error_code, r.broker_epoch), (0, epoch));

    // A heartbeat not caught up stays fenced; a caught-up one unfences.
    let r = heartbeat_at(&quorum, 1, epoch, epoch - 1);
    assert_eq!(
        (r.error_code, r.is_caught_up, r.is_fenced),
        (0, false, true)
    );
    // Caught up at the high watermark: past the amended registration's record.
    let hwm = quorum.node(1).high_watermark().expect("a high watermark");
    let r = heartbeat_at(&quorum, 1, epoch, hwm);
    assert_eq!(
        (r.error_code, r.is_caught_up, r.is_fenced),
        (0, true, false)
    );
    wait_for(TIMEOUT, "the broker unfenced in the image", || {
        broker_in(&quorum, 1)
            .filter(|b| b["fenced"] == false)
            .map(drop)
    });
    assert_eq!(
        quorum
            .node(1)
            .metric("kafka_controller_kafkacontroller_activebrokercount"),
        Some(1.0)
    );

    // No more heartbeats: fenced once the session expired.
    let stopped = std::time::Instant::now();
    wait_for(
        TIMEOUT,
        "the broker fenced after its session expired",
        || {
            broker_in(&quorum, 1)
                .filter(|b| b["fenced"] == true)
                .map(drop)
        },
    );
    let took = stopped.elapsed();
    assert!(
        took >= Duration::from_millis(SESSION_TIMEOUT_MS - 200)
            && took < Duration::from_millis(SESSION_TIMEOUT_MS + 3_000),
        "fenced after {took:?}"
    );
    assert_eq!(
        quorum
            .node(1)
            .metric("kafka_controller_kafkacontroller_fencedbrokercount"),
        Some(1.0)
    );

    // Restarted from its snapshot: still registered, same epoch, fenced.
    quorum.terminate(1);
    quorum.wait_exit(1, TIMEOUT);
    quorum.start(1);
    quorum.wait_for_leader(&[1], TIMEOUT);
    let b = wait_for(TIMEOUT, "the broker in the restarted image", || {
        broker_in(&quorum, 1)
    });
    assert_eq!(
        (b["epoch"].as_i64(), b["fenced"].as_bool()),
        (Some(epoch), Some(true))
    );
    assert!(
        !quorum
            .node(1)
            .output_lines("metadata image loaded from the latest snapshot")
            .is_empty(),
        "{}",
        quorum.node(1).output_tail(40)
    );
    // It heartbeats again with the same epoch and is unfenced.
    let r = wait_for(
        TIMEOUT,
        "a heartbeat answered by the restarted controller",
        || {
            let r = heartbeat_at(&quorum, 1, epoch, i64::MAX / 2);
            (r.error_code == 0).then_some(r)
        },
    );
    assert!(r.is_caught_up && !r.is_fenced, "{r:?}");
}

#[test]
fn followers_answer_not_controller_and_a_failover_fences_no_broker_that_keeps_heartbeating() {
    let mut quorum = QuorumBuilder::new(3, support::Mode::Dynamic)
        .property("broker.session.timeout.ms", SESSION_TIMEOUT_MS)
        .format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, TIMEOUT);
    let follower = ids
        .iter()
        .copied()
        .find(|&i| i != leader)
        .expect("a follower");
    let epoch = wait_for(TIMEOUT, "the registration to be accepted", || {
        let r = register_at(&quorum, leader, registration(CLUSTER_ID, BROKER));
        (r.error_code == 0).then_some(r.broker_epoch)
    });
    let not_controller = ResponseError::NotController.code();
    let r = register_at(&quorum, follower, registration(CLUSTER_ID, BROKER));
    assert_eq!(r.error_code, not_controller);
    let r = heartbeat_at(&quorum, follower, epoch, i64::MAX / 2);
    assert_eq!(r.error_code, not_controller);
    let r = heartbeat_at(&quorum, leader, epoch, i64::MAX / 2);
    assert_eq!((r.error_code, r.is_fenced), (0, false));

    // Every node's image has the broker unfenced before the kill, so a
    // fenced count after it can only be a new fence.
    for &node in &ids {
        wait_for(TIMEOUT, "the broker unfenced in every image", || {
            broker_in(&quorum, node)
                .filter(|b| b["fenced"] == false)
                .map(drop)
        });
    }

    // Kill the active controller; the broker heartbeats whichever node
    // answers, every 500 ms (a Kafka broker's retry is faster), for three
    // session timeouts: the new active controller never fences it.
    quorum.kill(leader);
    let others: Vec<i32> = ids.iter().copied().filter(|&i| i != leader).collect();
    let deadline = std::time::Instant::now() + Duration::from_millis(3 * SESSION_TIMEOUT_MS);
    let mut answered = 0;
    while std::time::Instant::now() < deadline {
        for &node in &others {
            let r = heartbeat_at(&quorum, node, epoch, i64::MAX / 2);
            if r.error_code == 0 {
                assert!(
                    !r.is_fenced,
                    "node {node} fenced the broker after the failover"
                );
                answered += 1;
            }
            // A fence followed by a re-unfence at the next heartbeat would
            // leave the answers above unfenced: the gauge must never count
            // the broker as fenced, at any poll.
            let fenced = quorum
                .node(node)
                .metric("kafka_controller_kafkacontroller_fencedbrokercount");
            assert!(
                fenced.unwrap_or(0.0) == 0.0,
                "node {node} counts {fenced:?} fenced brokers after the failover"
            );
        }
        // Heartbeat pacing (a broker's heartbeat interval), not a wait for
        // a condition.
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        answered > 0,
        "no node answered a heartbeat after the failover"
    );
    // And no surviving node ever wrote a fencing record for it: neither the
    // session-expiry fence nor the re-unfence that would follow it.
    for &node in &others {
        for needle in [
            "fencing broker because its session has timed out",
            "the request of the broker to unfence has been granted",
        ] {
            let lines = quorum.node(node).output_lines(needle);
            assert!(lines.is_empty(), "node {node}: {lines:?}");
        }
    }
    for &node in &others {
        let b = wait_for(TIMEOUT, "the broker in the image", || {
            broker_in(&quorum, node)
        });
        assert_eq!(
            (b["epoch"].as_i64(), b["fenced"].as_bool()),
            (Some(epoch), Some(false)),
            "node {node}"
        );
    }
}
