//! Process tests (issue 27): the leader refuses an AddRaftVoter or an
//! UpdateRaftVoter whose endpoint is not the one the node registered itself
//! (KIP-919 ControllerRegistration), AddRaftVoter with INVALID_REQUEST naming
//! both, UpdateRaftVoter with REQUEST_TIMED_OUT (retriable: a node's new
//! registration may not have committed yet), and stores nothing; the node's
//! own endpoint is then accepted.
//!
//! Real `kraft-controller` processes on 127.0.0.1 with Kafka 4.1's default
//! `controller.quorum.*` timings; conditions are polled with deadlines.

mod support;

use std::time::Duration;

use kafka_protocol::{
    messages::{
        RequestKind, ResponseKind, UpdateRaftVoterRequest,
        update_raft_voter_request::{KRaftVersionFeature, Listener},
    },
    protocol::StrBytes,
};
use support::{CLUSTER_ID, Mode, Quorum, QuorumBuilder, kafka_broker::call, wait_for};

const ELECTION: Duration = Duration::from_secs(20);
const CATCH_UP: Duration = Duration::from_secs(30);

/// Waits until `leader`'s committed image has node `id`'s controller
/// registration with its own port.
fn wait_for_registration(quorum: &Quorum, leader: i32, id: i32) {
    let own = quorum.node(id).port;
    wait_for(
        CATCH_UP,
        &format!("node {id}'s controller registration"),
        || {
            quorum.node(id).assert_alive();
            let (_, body) = quorum.node(leader).http_get("/metadata")?;
            let json: serde_json::Value = serde_json::from_str(&body).ok()?;
            json["controllers"]
                .as_array()?
                .iter()
                .any(|c| c["id"] == id && c["endpoints"][0]["port"] == own)
                .then_some(())
        },
    );
}

#[test]
fn add_voter_with_another_nodes_endpoint_is_refused_and_stores_nothing() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let (leader, _) = quorum.wait_for_leader(&[1, 2, 3], ELECTION);
    let joiner = quorum.add_observer();
    quorum.start(joiner);
    // The joiner registered itself with the active controller: its
    // endpoint is in the leader's committed image.
    let own = quorum.node(joiner).port;
    wait_for_registration(&quorum, leader, joiner);

    // The joiner's config, but with node 1's listener.
    let config = std::fs::read_to_string(&quorum.node(joiner).config).expect("config");
    let other = quorum.node(1).port;
    let wrong = config.replace(
        &format!("listeners=CONTROLLER://127.0.0.1:{own}"),
        &format!("listeners=CONTROLLER://127.0.0.1:{other}"),
    );
    assert_ne!(wrong, config, "the config names the joiner's listener");
    let wrong_path = quorum.dir().join("wrong-endpoint.properties");
    std::fs::write(&wrong_path, wrong).expect("write");
    let out = quorum.quorum_cli(
        leader,
        &["add-voter", "--config", &wrong_path.display().to_string()],
    );
    assert_ne!(
        out.code, 0,
        "node {joiner} added with node 1's endpoint: {out}"
    );
    let expected = format!(
        "listener CONTROLLER of node {joiner} is 127.0.0.1:{other} in the request, but node {joiner} registered 127.0.0.1:{own}"
    );
    assert!(out.to_string().contains(&expected), "{out}");
    let info = quorum.describe_quorum(leader).expect("describe");
    let voters: Vec<i32> = info.voters.iter().map(|v| v.replica_id).collect();
    assert_eq!(voters, [1, 2, 3], "nothing stored");

    let right = quorum.node(joiner).config.display().to_string();
    let out = quorum.quorum_cli(leader, &["add-voter", "--config", &right]);
    assert_eq!(out.code, 0, "node {joiner} with its own endpoint: {out}");
    let info = quorum.describe_quorum(leader).expect("describe");
    assert!(
        info.voters.iter().any(|v| v.replica_id == joiner),
        "{info:?}"
    );
}

#[test]
fn update_voter_with_another_nodes_endpoint_is_refused_and_stores_nothing() {
    let mut quorum = QuorumBuilder::new(3, Mode::Dynamic).format();
    quorum.start_all();
    let (leader, epoch) = quorum.wait_for_leader(&[1, 2, 3], ELECTION);
    let voter = if leader == 1 { 2 } else { 1 };
    let other = 6 - leader - voter;
    wait_for_registration(&quorum, leader, voter);
    let info = quorum.describe_quorum(leader).expect("describe");
    let directory_id = info
        .voters
        .iter()
        .find(|v| v.replica_id == voter)
        .expect("the voter")
        .directory_id;
    let endpoints = |info: &kraft_controller::admin::QuorumInfo| {
        info.nodes
            .iter()
            .find(|n| n.node_id == voter)
            .map(|n| n.endpoints.clone())
    };
    let before = endpoints(&info);
    let update = |port: u16| {
        RequestKind::UpdateRaftVoter(
            UpdateRaftVoterRequest::default()
                .with_cluster_id(Some(StrBytes::from_static_str(CLUSTER_ID)))
                .with_current_leader_epoch(epoch)
                .with_voter_id(voter)
                .with_voter_directory_id(directory_id)
                .with_listeners(vec![
                    Listener::default()
                        .with_name(StrBytes::from_static_str("CONTROLLER"))
                        .with_host(StrBytes::from_static_str("127.0.0.1"))
                        .with_port(port),
                ])
                .with_k_raft_version_feature(
                    KRaftVersionFeature::default()
                        .with_min_supported_version(0)
                        .with_max_supported_version(1),
                ),
        )
    };
    let error_code = |answer: ResponseKind| match answer {
        ResponseKind::UpdateRaftVoter(r) => r.error_code,
        other => panic!("not an UpdateRaftVoter answer: {other:?}"),
    };
    let wrong = quorum.node(other).port;
    assert_eq!(
        error_code(call(&quorum, leader, 0, update(wrong))),
        kafka_protocol::error::ResponseError::RequestTimedOut.code(),
        "voter {voter} updated to node {other}'s endpoint (a retriable refusal expected)"
    );
    let reason = format!(
        "is 127.0.0.1:{wrong} in the request, but node {voter} registered 127.0.0.1:{}",
        quorum.node(voter).port
    );
    wait_for(CATCH_UP, "the leader to log why it refused", || {
        let refused = quorum.node(leader).output_lines("UpdateRaftVoter refused");
        refused.iter().any(|l| l.contains(&reason)).then_some(())
    });
    let info = quorum.describe_quorum(leader).expect("describe");
    assert_eq!(endpoints(&info), before, "nothing stored");
    // Its own endpoint, as the node would send it, is accepted.
    let own = quorum.node(voter).port;
    assert_eq!(error_code(call(&quorum, leader, 0, update(own))), 0);
}
