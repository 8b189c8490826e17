//! Process tests of the metadata layer on real `kraft-controller` processes:
//! the first leader copies `bootstrap.checkpoint`'s feature levels into the
//! log once (Kafka's controller activation), and every controller registers
//! itself with the active controller (KIP-919, ControllerRegistration), so
//! that every node's image (`GET /metadata`) lists every controller with its
//! endpoint (DescribeCluster lists them, observers included); a restarted
//! controller registers again with a new incarnation.

mod support;

use std::{collections::BTreeMap, time::Duration};

use kafka_protocol::{
    messages::{
        ControllerRegistrationRequest, RequestKind, ResponseKind,
        controller_registration_request::Listener,
    },
    protocol::StrBytes,
};
use kraft_controller::{
    admin::AdminClient,
    wire::client::{ClientConfig, Connection},
};
use serde_json::Value;
use support::{Mode, Quorum, QuorumBuilder, wait_for};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Node `id`'s `/metadata` as JSON, `None` while it does not answer.
fn image(quorum: &Quorum, id: i32) -> Option<Value> {
    let (status, body) = quorum.node(id).http_get("/metadata")?;
    (status == 200).then(|| serde_json::from_str(&body).expect("/metadata is JSON"))
}

/// The incarnation id of each controller registered in `image`, by id.
fn incarnations(image: &Value) -> BTreeMap<i64, String> {
    image["controllers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| Some((c["id"].as_i64()?, c["incarnation_id"].as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `image` has the feature levels Kafka 4.1's default bootstrap sets
/// and a registration of every node of `quorum` at its own controller port.
fn complete(quorum: &Quorum, image: &Value) -> bool {
    let features = &image["features"];
    let bootstrapped = image["metadata_version"] == "4.1-IV1"
        && features["metadata.version"] == 27
        && features["eligible.leader.replicas.version"] == 1
        && features["group.version"] == 1
        && features["transaction.version"] == 2;
    let registered = quorum.nodes.iter().all(|n| {
        image["controllers"].as_array().is_some_and(|cs| {
            cs.iter().any(|c| {
                c["id"] == n.id
                    && c["zk_migration_ready"] == false
                    && c["endpoints"][0]["name"] == "CONTROLLER"
                    && c["endpoints"][0]["host"] == "127.0.0.1"
                    && c["endpoints"][0]["port"] == n.port
                    && c["endpoints"][0]["security_protocol"] == "PLAINTEXT"
                    && c["supported_features"].as_array().is_some_and(|fs| {
                        fs.iter().any(|f| {
                            f["name"] == "metadata.version"
                                && f["min_version"] == 7
                                && f["max_version"] == 33
                        })
                    })
            })
        })
    });
    bootstrapped && registered
}

/// Waits until every node's image is [`complete`] and its incarnations
/// satisfy `accept`; returns the incarnations every node agrees on.
fn wait_until_every_image_is_complete(
    quorum: &Quorum,
    accept: impl Fn(&BTreeMap<i64, String>) -> bool,
) -> BTreeMap<i64, String> {
    let ids = quorum.ids();
    quorum.wait_for_leader(&ids, TIMEOUT);
    let mut seen = Vec::new();
    for &id in &ids {
        let img = wait_for(
            TIMEOUT,
            &format!("node {id}'s image to hold the bootstrap features and every registration"),
            || {
                quorum.node(id).assert_alive();
                image(quorum, id).filter(|img| complete(quorum, img) && accept(&incarnations(img)))
            },
        );
        seen.push(incarnations(&img));
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    seen.pop().expect("three nodes")
}

/// DescribeCluster (endpoint type controller) through node `id`: the
/// controllers listed, `(id, port)`, sorted.
fn described_controllers(quorum: &Quorum, id: i32) -> Vec<(i32, u16)> {
    let address = quorum.node(id).address();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let info = runtime
        .block_on(async move {
            let mut admin = AdminClient::connect(&address, Duration::from_secs(3)).await?;
            admin.describe_cluster().await
        })
        .expect("DescribeCluster answers");
    let mut nodes: Vec<(i32, u16)> = info.nodes.iter().map(|n| (n.node_id, n.port)).collect();
    nodes.sort_unstable();
    nodes
}

#[test]
fn every_controller_registers_and_every_image_lists_all_with_the_bootstrap_features() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let incarnations = wait_until_every_image_is_complete(&quorum, |_| true);
    assert_eq!(incarnations.len(), 3, "{incarnations:?}");

    // An observer (a controller that is not a voter) registers too, and
    // DescribeCluster lists it from the registrations, as Kafka does.
    let observer = quorum.add_observer();
    quorum.start(observer);
    let incarnations = wait_until_every_image_is_complete(&quorum, |_| true);
    assert_eq!(incarnations.len(), 4, "{incarnations:?}");
    let expected: Vec<(i32, u16)> = quorum.nodes.iter().map(|n| (n.id, n.port)).collect();
    for id in quorum.ids() {
        assert_eq!(
            described_controllers(&quorum, id),
            expected,
            "through node {id}"
        );
    }
}

#[test]
fn a_static_quorum_bootstraps_and_registers_too() {
    let mut quorum = QuorumBuilder::new(3, Mode::Static).format();
    quorum.start_all();
    wait_until_every_image_is_complete(&quorum, |_| true);
}

#[test]
fn a_restarted_leader_registers_again_with_a_new_incarnation_and_bootstrap_is_written_once() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let before = wait_until_every_image_is_complete(&quorum, |_| true);
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, TIMEOUT);
    quorum.kill(leader);
    let others: Vec<i32> = ids.iter().copied().filter(|&i| i != leader).collect();
    // A new leader, whose image already has metadata.version: no second
    // bootstrap.
    quorum.wait_for_leader(&others, TIMEOUT);
    quorum.start(leader);

    let restarted = i64::from(leader);
    let after = wait_until_every_image_is_complete(&quorum, |now| {
        now.get(&restarted) != before.get(&restarted)
    });
    for (id, incarnation) in &after {
        if *id == i64::from(leader) {
            assert_ne!(incarnation, &before[id], "node {id} re-registered");
        } else {
            assert_eq!(incarnation, &before[id], "node {id} kept its registration");
        }
    }

    for &id in &ids {
        quorum.terminate(id);
        quorum.wait_exit(id, TIMEOUT);
    }
    let dump = quorum.dump_log(others[0]);
    let count = |needle: &str| dump.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("FEATURE_LEVEL_RECORD(12) version=0 name=metadata.version feature_level=27"),
        1,
        "{dump}"
    );
    assert_eq!(count("BEGIN_TRANSACTION_RECORD(23)"), 1, "{dump}");
    assert_eq!(count("END_TRANSACTION_RECORD(24)"), 1, "{dump}");
    // Registrations of four incarnations: the three first starts and the
    // restarted leader's (a retry after a lost answer may repeat one).
    let registered: std::collections::BTreeSet<&str> = dump
        .lines()
        .filter(|l| l.contains("REGISTER_CONTROLLER_RECORD(27)"))
        .filter_map(|l| l.split("incarnation_id=").nth(1)?.split(' ').next())
        .collect();
    assert_eq!(registered.len(), 4, "{dump}");
}

/// Sends ControllerRegistration v0 `request` to node `id`; the error code
/// and message of the answer.
fn register(
    quorum: &Quorum,
    id: i32,
    request: ControllerRegistrationRequest,
) -> (i16, Option<String>) {
    let address = quorum.node(id).address();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let answer = runtime
        .block_on(async move {
            let connection = Connection::connect(&address, ClientConfig::default()).await?;
            connection
                .call(0, RequestKind::ControllerRegistration(request))
                .await
        })
        .expect("an answer");
    let ResponseKind::ControllerRegistration(r) = answer else {
        panic!("not a ControllerRegistration answer: {answer:?}");
    };
    (r.error_code, r.error_message.map(|m| m.to_string()))
}

#[test]
fn the_active_controller_appends_valid_registrations_and_others_answer_not_controller() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    wait_until_every_image_is_complete(&quorum, |_| true);
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, TIMEOUT);
    let follower = ids
        .iter()
        .copied()
        .find(|&i| i != leader)
        .expect("a follower");
    let request = ControllerRegistrationRequest::default()
        .with_controller_id(9)
        .with_incarnation_id(uuid::Uuid::from_u128(9))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("CONTROLLER"))
                .with_host(StrBytes::from_static_str("kq-9.example"))
                .with_port(9093)
                .with_security_protocol(0),
        ]);

    // NOT_CONTROLLER (41) from a follower, naming the leader.
    let (code, message) = register(&quorum, follower, request.clone());
    assert_eq!(code, 41, "{message:?}");
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains(&format!("node {leader} is"))),
        "{message:?}"
    );
    // INVALID_REQUEST (42) for an unknown security protocol.
    let mut bad = request.clone();
    bad.listeners[0].security_protocol = 7;
    let (code, message) = register(&quorum, leader, bad);
    assert_eq!(code, 42, "{message:?}");
    // Accepted once committed: every image then has controller 9.
    let (code, message) = register(&quorum, leader, request);
    assert_eq!(code, 0, "{message:?}");
    for &id in &ids {
        wait_for(
            TIMEOUT,
            &format!("controller 9 in node {id}'s image"),
            || {
                image(&quorum, id)
                    .filter(|img| {
                        img["controllers"].as_array().is_some_and(|cs| {
                            cs.iter().any(|c| {
                                c["id"] == 9 && c["endpoints"][0]["host"] == "kq-9.example"
                            })
                        })
                    })
                    .map(drop)
            },
        );
    }
}
