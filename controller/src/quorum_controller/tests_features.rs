//! Unit tests of UpdateFeatures (57) on the quorum controller (issue 22)
//! over the [`Node`](super::Node) harness of `tests.rs`: the kraft.version
//! upgrade of a static quorum answered once its batch commits, and Kafka's
//! refusals, which append nothing.

use kafka_protocol::messages::{UpdateFeaturesRequest, update_features_request::FeatureUpdateKey};

use super::*;

/// An UpdateFeatures of `feature` to `level` (upgrade type 1).
fn update(feature: &'static str, level: i16, validate_only: bool) -> UpdateFeaturesRequest {
    updates(&[(feature, level, 1)], validate_only)
}

/// An UpdateFeatures of every `(feature, level, upgrade type)`.
fn updates(list: &[(&'static str, i16, i8)], validate_only: bool) -> UpdateFeaturesRequest {
    UpdateFeaturesRequest::default()
        .with_timeout_ms(60_000)
        .with_validate_only(validate_only)
        .with_feature_updates(
            list.iter()
                .map(|(feature, level, upgrade_type)| {
                    FeatureUpdateKey::default()
                        .with_feature(StrBytes::from_static_str(feature))
                        .with_max_version_level(*level)
                        .with_upgrade_type(*upgrade_type)
                })
                .collect(),
        )
}

impl Node {
    /// Voter `id` fetches at the log end with its directory id (as every
    /// Kafka 3.8+ and Kraftwerk follower does, static quorum or not).
    fn voter_fetches_with_directory(&mut self, id: i32) {
        let partition = fetch_request::FetchPartition::default()
            .with_current_leader_epoch(self.engine.epoch())
            .with_fetch_offset(self.end_offset())
            .with_last_fetched_epoch(self.engine.epoch())
            .with_partition_max_bytes(1 << 20)
            .with_replica_directory_id(dir(id));
        self.handle(Event::Request {
            handle: ReplyHandle(9),
            api_version: 17,
            request: RaftRequest::Fetch(
                FetchRequest::default()
                    .with_cluster_id(Some("test".into()))
                    .with_replica_id(id.into())
                    .with_topics(vec![
                        fetch_request::FetchTopic::default().with_partitions(vec![partition]),
                    ]),
            ),
        });
    }

    /// Sends UpdateFeatures at `api_version`; its reply handle.
    fn update_features(&mut self, request: UpdateFeaturesRequest, api_version: i16) -> ReplyHandle {
        let handle = ReplyHandle(self.next_handle);
        self.next_handle += 1;
        self.with_client(|qc, client, image| {
            qc.update_features(client, image, request, api_version, handle)
                .expect("no log failure")
        });
        handle
    }

    /// The one UpdateFeatures answer to `handle`: (error code, message,
    /// per-feature results as (feature, error code)).
    fn features_answer(&self, handle: ReplyHandle) -> (i16, Option<String>, Vec<(String, i16)>) {
        match self.answers(handle).as_slice() {
            [ResponseKind::UpdateFeatures(r)] => (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
                r.results
                    .iter()
                    .map(|f| (f.feature.to_string(), f.error_code))
                    .collect(),
            ),
            other => panic!("expected one UpdateFeatures answer, got {other:?}"),
        }
    }
}

/// The active controller of a static quorum whose voters 2 and 3 fetched
/// with their directory ids.
fn static_active() -> Node {
    let mut node = Node::active(0);
    node.voter_fetches_with_directory(2);
    node.voter_fetches_with_directory(3);
    assert_eq!(node.engine.status().kraft_version, 0);
    node
}

#[test]
fn kraft_version_1_is_appended_and_answered_once_committed() {
    let mut node = static_active();
    let before = node.end_offset();
    let handle = node.update_features(update("kraft.version", 1, false), 1);
    assert!(node.answers(handle).is_empty(), "not committed yet");
    assert_eq!(node.end_offset(), before + 2, "KRaftVersion and Voters");
    assert_eq!(node.engine.status().kraft_version, 1);
    node.commit_all();
    assert_eq!(
        node.features_answer(handle),
        (0, None, vec![("kraft.version".to_owned(), 0)])
    );
    assert!(
        node.engine
            .voters()
            .iter()
            .all(|v| v.key.directory_id == Some(dir(v.key.id))),
        "{:?}",
        node.engine.voters()
    );
}

#[test]
fn validate_only_answers_at_once_and_appends_nothing() {
    let mut node = static_active();
    let before = node.end_offset();
    let handle = node.update_features(update("kraft.version", 1, true), 1);
    assert_eq!(
        node.features_answer(handle),
        (0, None, vec![("kraft.version".to_owned(), 0)])
    );
    assert_eq!(node.end_offset(), before);
    assert_eq!(node.engine.status().kraft_version, 0);
}

#[test]
fn a_v0_downgrade_and_an_unknown_directory_id_are_refused() {
    let mut node = static_active();
    let before = node.end_offset();
    let mut downgrade = update("kraft.version", 1, false);
    downgrade.feature_updates[0].allow_downgrade = true;
    let handle = node.update_features(downgrade, 0);
    let (code, message, _) = node.features_answer(handle);
    assert_eq!(code, ResponseError::InvalidUpdateVersion.code());
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("Can't downgrade to a newer version.")),
        "{message:?}"
    );
    // A quorum where voter 3 never fetched with its directory id.
    let mut node = Node::active(0);
    node.voter_fetches_with_directory(2);
    let handle = node.update_features(update("kraft.version", 1, false), 1);
    let (code, message, _) = node.features_answer(handle);
    assert_eq!(code, ResponseError::InvalidUpdateVersion.code());
    assert!(
        message.as_deref().is_some_and(|m| m.contains("voter 3")),
        "{message:?}"
    );
    assert_eq!(node.end_offset(), before);
}

#[test]
fn a_node_that_is_not_the_active_controller_answers_not_controller() {
    let mut node = Node::new(0);
    let handle = node.update_features(update("kraft.version", 1, false), 1);
    let (code, _, _) = node.features_answer(handle);
    assert_eq!(code, ResponseError::NotController.code());
}

#[test]
fn kraft_version_given_twice_in_one_request_is_appended_once_and_answered_once() {
    let mut node = static_active();
    let before = node.end_offset();
    let mut request = update("kraft.version", 1, false);
    request
        .feature_updates
        .push(request.feature_updates[0].clone());
    let handle = node.update_features(request, 1);
    assert_eq!(node.end_offset(), before + 2, "one batch of two records");
    node.commit_all();
    let (code, message, results) = node.features_answer(handle);
    assert_eq!((code, message), (0, None));
    assert_eq!(results.len(), 2);
}

impl Node {
    /// Appends and commits `records` as the leader (what other requests or
    /// an older release would have written).
    fn commit_records(&mut self, records: Vec<bytes::Bytes>) {
        self.with_client(|_, client, _| client.propose(&records).expect("proposes"))
            .expect("leader");
        self.commit_all();
    }

    /// Commits `metadata.version` at `level` (the cluster's finalized level).
    fn commit_metadata_version(&mut self, level: i16) {
        self.commit_records(vec![
            FeatureLevelRecord {
                name: METADATA_VERSION_FEATURE.into(),
                feature_level: level,
            }
            .encode_framed(),
        ]);
        assert_eq!(
            self.image.feature_level(METADATA_VERSION_FEATURE),
            Some(level)
        );
    }

    /// The refusal message of `handle`, checking its code
    /// (INVALID_UPDATE_VERSION) and that it has no per-feature result.
    fn refusal(&self, handle: ReplyHandle) -> String {
        let (code, message, results) = self.features_answer(handle);
        assert_eq!(
            code,
            ResponseError::InvalidUpdateVersion.code(),
            "{message:?}"
        );
        assert!(results.is_empty());
        let message = message.expect("a message");
        assert!(
            message.starts_with(
                "The update failed for all features since the following feature had an error: "
            ),
            "Kafka's prefix: {message}"
        );
        message
    }
}

/// SAFE_DOWNGRADE and UNSAFE_DOWNGRADE's wire codes.
const SAFE: i8 = 2;
const UNSAFE: i8 = 3;

#[test]
fn a_metadata_version_upgrade_appends_its_feature_level_and_is_answered_once_committed() {
    let mut node = static_active();
    let before = node.end_offset();
    let handle = node.update_features(update("metadata.version", 33, false), 1);
    assert!(node.answers(handle).is_empty(), "not committed yet");
    assert_eq!(node.end_offset(), before + 1, "one FeatureLevelRecord");
    node.commit_all();
    assert_eq!(
        node.features_answer(handle),
        (0, None, vec![("metadata.version".to_owned(), 0)])
    );
    assert_eq!(node.image.feature_level(METADATA_VERSION_FEATURE), Some(33));
}

#[test]
fn validate_only_checks_a_metadata_version_upgrade_and_appends_nothing() {
    let mut node = static_active();
    let before = node.end_offset();
    let handle = node.update_features(update("metadata.version", 28, true), 1);
    assert_eq!(
        node.features_answer(handle),
        (0, None, vec![("metadata.version".to_owned(), 0)])
    );
    assert_eq!(node.end_offset(), before);
    let handle = node.update_features(update("metadata.version", 34, true), 1);
    assert!(
        node.refusal(handle).contains(
            "Invalid update version 34 for feature metadata.version. Local controller 1 only supports versions 7-33"
        ),
        "a level this controller does not implement"
    );
}

#[test]
fn metadata_version_downgrades_that_might_lose_metadata_are_refused_with_kafkas_messages() {
    let mut node = static_active();
    let before = node.end_offset();
    // 27 → 22 crosses 4.0-IV1 (23), which changed the metadata.
    let handle = node.update_features(updates(&[("metadata.version", 22, SAFE)], false), 1);
    assert!(
        node.refusal(handle).ends_with(
            "Unsupported metadata.version downgrade from 4.1-IV1 to 4.0-IV0. Refusing to perform the requested downgrade because it might delete metadata information."
        )
    );
    let handle = node.update_features(updates(&[("metadata.version", 22, UNSAFE)], false), 1);
    assert!(node.refusal(handle).ends_with(
        "Unsupported metadata.version downgrade from 4.1-IV1 to 4.0-IV0. Unsafe metadata downgrade is not supported in this version."
    ));
    let handle = node.update_features(update("metadata.version", 26, false), 1);
    assert!(node.refusal(handle).ends_with(
        "Invalid update version 26 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
    ));
    let handle = node.update_features(updates(&[("metadata.version", 33, SAFE)], false), 1);
    assert!(
        node.refusal(handle)
            .ends_with("Can't downgrade to a newer version.")
    );
    assert_eq!(node.end_offset(), before, "nothing appended");
    // 27 → 24: no level in 25..=27 changed the metadata.
    let handle = node.update_features(updates(&[("metadata.version", 24, SAFE)], false), 1);
    node.commit_all();
    assert_eq!(node.features_answer(handle).0, 0);
    assert_eq!(node.image.feature_level(METADATA_VERSION_FEATURE), Some(24));
}

#[test]
fn a_registered_controller_or_broker_without_the_level_blocks_the_upgrade_naming_it() {
    let mut node = static_active();
    // A stale registration of controller 3 (a 4.1 release: 7-27), KIP-1312.
    node.commit_records(vec![
        crate::metadata::records::RegisterControllerRecord {
            controller_id: 3,
            incarnation_id: uuid::Uuid::from_u128(3),
            zk_migration_ready: false,
            endpoints: vec![],
            features: vec![crate::metadata::records::ControllerFeature {
                name: METADATA_VERSION_FEATURE.into(),
                min_supported_version: 7,
                max_supported_version: 27,
            }],
        }
        .encode_framed(),
    ]);
    let before = node.end_offset();
    let handle = node.update_features(update("metadata.version", 28, false), 1);
    assert!(node.refusal(handle).ends_with(
        "Invalid update version 28 for feature metadata.version. Controller 3 only supports versions 7-27"
    ));
    let handle = node.update_features(update("group.version", 1, false), 1);
    assert!(node.refusal(handle).ends_with(
        "Invalid update version 1 for feature group.version. Controller 3 does not support this feature."
    ));
    assert_eq!(node.end_offset(), before);

    let mut node = static_active();
    let handle = node.request(broker(4));
    node.commit_all();
    assert_eq!(node.registration_answer(handle).0, 0);
    let handle = node.update_features(update("metadata.version", 28, false), 1);
    assert!(node.refusal(handle).ends_with(
        "Invalid update version 28 for feature metadata.version. Broker 4 only supports versions 7-27"
    ));
}

#[test]
fn eligible_leader_replicas_need_metadata_version_23_finalized_or_in_the_same_request() {
    let mut node = static_active();
    node.commit_metadata_version(21);
    let before = node.end_offset();
    let handle = node.update_features(update("eligible.leader.replicas.version", 1, false), 1);
    assert!(node.refusal(handle).ends_with(
        "Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"
    ));
    assert_eq!(node.end_offset(), before);
    let handle = node.update_features(
        updates(
            &[
                ("eligible.leader.replicas.version", 1, 1),
                ("metadata.version", 23, 1),
                ("transaction.version", 2, 1),
            ],
            false,
        ),
        1,
    );
    assert_eq!(node.end_offset(), before + 3, "one batch of three records");
    node.commit_all();
    assert_eq!(node.features_answer(handle).0, 0);
    assert_eq!(
        node.image.feature_level("eligible.leader.replicas.version"),
        Some(1)
    );
    assert_eq!(node.image.feature_level("transaction.version"), Some(2));
    // A safe downgrade to 0 removes the feature.
    let handle = node.update_features(updates(&[("transaction.version", 0, SAFE)], false), 1);
    node.commit_all();
    assert_eq!(node.features_answer(handle).0, 0);
    assert_eq!(node.image.feature_level("transaction.version"), None);
}
