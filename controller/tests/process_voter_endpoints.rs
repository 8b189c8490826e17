//! Process test (issue 27): the leader refuses an AddRaftVoter whose
//! endpoint is not the one the node registered itself (KIP-919
//! ControllerRegistration), with INVALID_REQUEST naming both, and stores
//! nothing; the node's own endpoint is then accepted.
//!
//! Real `kraft-controller` processes on 127.0.0.1 with Kafka 4.1's default
//! `controller.quorum.*` timings; conditions are polled with deadlines.

mod support;

use std::time::Duration;

use support::{Mode, QuorumBuilder, wait_for};

const ELECTION: Duration = Duration::from_secs(20);
const CATCH_UP: Duration = Duration::from_secs(30);

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
    wait_for(
        CATCH_UP,
        &format!("node {joiner}'s controller registration"),
        || {
            quorum.node(joiner).assert_alive();
            let (_, body) = quorum.node(leader).http_get("/metadata")?;
            let json: serde_json::Value = serde_json::from_str(&body).ok()?;
            json["controllers"]
                .as_array()?
                .iter()
                .any(|c| c["id"] == joiner && c["endpoints"][0]["port"] == own)
                .then_some(())
        },
    );

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
