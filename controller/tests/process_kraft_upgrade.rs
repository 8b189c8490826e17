//! Process test of issue 22's static -> dynamic quorum upgrade (KIP-853,
//! KAFKA-16538): three real `kraft-controller` processes formatted with
//! `controller.quorum.voters` (kraft.version 0) are upgraded with our
//! `kraft-controller features upgrade --feature kraft.version=1`; every node
//! then reports kraft.version 1, a fourth node formatted
//! `--no-initial-controllers` is added with `quorum add-voter`, and the
//! records committed before the upgrade are still in the log, byte for byte
//! as `dump-log` prints them. UpdateFeatures forwarded in an Envelope is
//! answered by the active controller; another sends NOT_CONTROLLER back as
//! the envelope's error.

mod support;

use std::{collections::BTreeSet, time::Duration};

use kafka_protocol::messages::ResponseKind;
use kraft_controller::{admin::kafka_uuid_string, wire::client::ClientConfig};
use support::{Mode, Quorum, QuorumBuilder, batches_below, cli, wait_for};

/// Long enough for an election on a loaded 2-core machine.
const ELECTION: Duration = Duration::from_secs(20);
/// Long enough for a node to catch up or a change to commit.
const CATCH_UP: Duration = Duration::from_secs(20);

/// `kraft-controller features --bootstrap-controller <node via> ARGS…`.
fn features_cli(quorum: &Quorum, via: i32, args: &[&str]) -> support::CliOutput {
    let address = quorum.node(via).address();
    let mut all = vec!["features", "--bootstrap-controller", &address];
    all.extend_from_slice(args);
    cli(&all)
}

/// Node `id`'s finalized kraft.version as its ApiVersions answer says
/// (absent means 0, as Kafka leaves level-0 features out); `None` when it
/// does not answer.
fn finalized_kraft_version(quorum: &Quorum, id: i32) -> Option<i16> {
    let Ok(ResponseKind::ApiVersions(v)) =
        support::api_versions(&quorum.node(id).address(), ClientConfig::default())
    else {
        return None;
    };
    v.finalized_features
        .iter()
        .find(|f| f.name.as_str() == "kraft.version")
        .map_or(Some(0), |f| Some(f.max_version_level))
}

/// SIGTERM to node `id`, reaped.
fn stop(quorum: &mut Quorum, id: i32) {
    quorum.terminate(id);
    quorum.wait_exit(id, CATCH_UP);
}

#[test]
fn a_static_quorum_upgraded_to_kraft_version_1_by_the_cli_adds_a_voter_and_keeps_its_records() {
    let mut quorum = QuorumBuilder::new(3, Mode::Static).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let follower = *ids.iter().find(|id| **id != leader).expect("a follower");
    quorum.wait_for_follower(follower, leader, ELECTION);
    for id in &ids {
        assert_eq!(finalized_kraft_version(&quorum, *id), Some(0), "node {id}");
    }

    // What the follower holds committed before the upgrade (stopped to dump).
    let before_hw = wait_for(CATCH_UP, "a committed record on the follower", || {
        quorum.node(follower).high_watermark().filter(|hw| *hw > 2)
    });
    stop(&mut quorum, follower);
    let before = batches_below(&quorum.dump_log(follower), before_hw);
    assert!(!before.is_empty());
    quorum.start(follower);
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    for id in ids.iter().filter(|id| **id != leader) {
        quorum.wait_for_follower(*id, leader, CATCH_UP);
    }

    // A dry run changes nothing.
    let out = features_cli(
        &quorum,
        leader,
        &["upgrade", "--feature", "kraft.version=1", "--dry-run"],
    );
    assert_eq!(out.code, 0, "dry run: {out}");
    assert_eq!(out.stdout, "kraft.version can be upgraded to 1.\n");
    assert_eq!(finalized_kraft_version(&quorum, leader), Some(0));

    // The upgrade, sent to any node (the client follows the active controller).
    let out = features_cli(
        &quorum,
        follower,
        &["upgrade", "--feature", "kraft.version=1"],
    );
    assert_eq!(out.code, 0, "upgrade: {out}");
    assert_eq!(out.stdout, "kraft.version was upgraded to 1.\n");
    for id in &ids {
        wait_for(CATCH_UP, &format!("node {id} at kraft.version 1"), || {
            quorum.node(*id).assert_alive();
            (finalized_kraft_version(&quorum, *id) == Some(1)).then_some(())
        });
    }
    let describe = features_cli(&quorum, follower, &["describe"]);
    assert_eq!(describe.code, 0, "describe: {describe}");
    let row: Vec<&str> = describe
        .stdout
        .lines()
        .find(|l| l.starts_with("Feature: kraft.version "))
        .unwrap_or_else(|| panic!("no kraft.version row: {describe}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..8],
        [
            "Feature:",
            "kraft.version",
            "SupportedMinVersion:",
            "0",
            "SupportedMaxVersion:",
            "1",
            "FinalizedVersionLevel:",
            "1"
        ],
        "{describe}"
    );
    // The same level again is a no-op; a downgrade is refused.
    let again = features_cli(
        &quorum,
        leader,
        &["upgrade", "--feature", "kraft.version=1"],
    );
    assert_eq!(again.code, 0, "same level again: {again}");
    let down = features_cli(
        &quorum,
        leader,
        &["upgrade", "--feature", "kraft.version=0"],
    );
    assert_eq!(down.code, 1, "a downgrade is refused: {down}");
    assert!(down.stderr.contains("INVALID_UPDATE_VERSION"), "{down}");

    // The voters now carry the directory ids they were formatted with.
    let info = quorum.describe_quorum(leader).expect("DescribeQuorum");
    let voters: BTreeSet<(i32, String)> = info
        .voters
        .iter()
        .map(|v| (v.replica_id, kafka_uuid_string(v.directory_id)))
        .collect();
    let expected: BTreeSet<(i32, String)> = ids
        .iter()
        .map(|id| (*id, quorum.node(*id).directory_id.clone()))
        .collect();
    assert_eq!(voters, expected);

    // A fourth node joins through AddRaftVoter, refused at kraft.version 0.
    let new = quorum.add_observer();
    quorum.start(new);
    let new_dir = quorum.node(new).directory_id.clone();
    wait_for(CATCH_UP, "the new node as a caught-up observer", || {
        quorum.node(new).assert_alive();
        let info = quorum.describe_quorum(leader).ok()?;
        info.observers
            .iter()
            .any(|o| {
                o.replica_id == new
                    && kafka_uuid_string(o.directory_id) == new_dir
                    && o.log_end_offset >= info.high_watermark
            })
            .then_some(())
    });
    let config = quorum.node(new).config.display().to_string();
    let out = quorum.quorum_cli(leader, &["add-voter", "--config", &config]);
    assert_eq!(out.code, 0, "add-voter: {out}");
    let info = quorum.describe_quorum(leader).expect("DescribeQuorum");
    let voters: BTreeSet<i32> = info.voters.iter().map(|v| v.replica_id).collect();
    assert_eq!(voters, [1, 2, 3, 4].into_iter().collect());

    // The records committed before the upgrade are all still there.
    stop(&mut quorum, follower);
    let after = batches_below(&quorum.dump_log(follower), before_hw);
    assert_eq!(after, before);
}

/// Sends `inner` (an UpdateFeatures v1 frame, correlation id 77) in an
/// Envelope to `address`; the envelope's error code and the inner answer.
fn forwarded_update_features(
    address: &str,
    inner: bytes::Bytes,
) -> (
    i16,
    Option<kafka_protocol::messages::UpdateFeaturesResponse>,
) {
    use kafka_protocol::messages::{ApiKey, RequestKind};
    use kraft_controller::{
        server::envelope,
        wire::{self, client::Connection},
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let connection = Connection::connect(address, ClientConfig::default())
            .await
            .expect("a connection");
        let request =
            envelope::wrap_request(inner, "User:ANONYMOUS", [192, 0, 2, 7].into()).expect("wraps");
        let answer = connection
            .call(0, RequestKind::Envelope(request))
            .await
            .expect("an envelope answer");
        let ResponseKind::Envelope(r) = answer else {
            panic!("not an envelope answer: {answer:?}");
        };
        let inner = r.response_data.map(|data| {
            let (correlation_id, inner) =
                wire::decode_response(ApiKey::UpdateFeatures, 1, data).expect("inner decodes");
            assert_eq!(correlation_id, 77);
            let ResponseKind::UpdateFeatures(inner) = inner else {
                panic!("not an UpdateFeatures answer: {inner:?}");
            };
            inner
        });
        (r.error_code, inner)
    })
}

#[test]
fn a_forwarded_update_features_is_answered_by_the_active_controller_and_sent_back_by_the_others() {
    use kafka_protocol::{
        ResponseError,
        messages::{ApiKey, RequestKind, UpdateFeaturesRequest, update_features_request},
        protocol::StrBytes,
    };
    let mut quorum = QuorumBuilder::new(3, Mode::Static).format();
    quorum.start_all();
    let ids = quorum.ids();
    let (leader, _) = quorum.wait_for_leader(&ids, ELECTION);
    let follower = *ids.iter().find(|id| **id != leader).expect("a follower");
    quorum.wait_for_follower(follower, leader, ELECTION);
    let inner = kraft_controller::wire::encode_request(
        ApiKey::UpdateFeatures,
        1,
        77,
        Some("adminclient-7"),
        &RequestKind::UpdateFeatures(
            UpdateFeaturesRequest::default()
                .with_timeout_ms(30_000)
                .with_validate_only(true)
                .with_feature_updates(vec![
                    update_features_request::FeatureUpdateKey::default()
                        .with_feature(StrBytes::from_static_str("kraft.version"))
                        .with_max_version_level(1)
                        .with_upgrade_type(1),
                ]),
        ),
    )
    .expect("encodes");
    // The active controller (once it has heard every voter's directory id).
    let answer = wait_for(CATCH_UP, "a validated forwarded upgrade", || {
        let (code, inner) =
            forwarded_update_features(&quorum.node(leader).address(), inner.clone());
        // The new leader is the active controller only once it replayed the
        // log to the high watermark; until then it answers NOT_CONTROLLER.
        if code == ResponseError::NotController.code() {
            return None;
        }
        assert_eq!(code, 0, "the envelope itself is served");
        let inner = inner.expect("an inner answer");
        (inner.error_code == 0).then_some(inner)
    });
    assert_eq!(answer.results.len(), 1);
    assert_eq!(answer.results[0].feature.as_str(), "kraft.version");
    assert_eq!(
        finalized_kraft_version(&quorum, leader),
        Some(0),
        "validate only"
    );
    // Another controller: NOT_CONTROLLER as the envelope's own error, so that
    // the broker looks for the active controller (KIP-590).
    let (code, inner) = forwarded_update_features(&quorum.node(follower).address(), inner);
    assert_eq!(code, ResponseError::NotController.code());
    assert!(inner.is_none());
}
