//! Unit tests of UpdateFeatures (57) on the quorum controller (issue 22)
//! over the [`Node`](super::Node) harness of `tests.rs`: the kraft.version
//! upgrade of a static quorum answered once its batch commits, and Kafka's
//! refusals, which append nothing.

use kafka_protocol::messages::{UpdateFeaturesRequest, update_features_request::FeatureUpdateKey};

use super::*;

/// An UpdateFeatures of `feature` to `level` (upgrade type 1).
fn update(feature: &'static str, level: i16, validate_only: bool) -> UpdateFeaturesRequest {
    UpdateFeaturesRequest::default()
        .with_timeout_ms(60_000)
        .with_validate_only(validate_only)
        .with_feature_updates(vec![
            FeatureUpdateKey::default()
                .with_feature(StrBytes::from_static_str(feature))
                .with_max_version_level(level)
                .with_upgrade_type(1),
        ])
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
fn metadata_version_updates_are_refused_with_invalid_update_version_and_nothing_is_appended() {
    let mut node = static_active();
    let before = node.end_offset();
    let handle = node.update_features(update("metadata.version", 28, false), 1);
    let (code, message, results) = node.features_answer(handle);
    assert_eq!(code, ResponseError::InvalidUpdateVersion.code());
    let message = message.expect("a message");
    assert!(message.contains("metadata.version"), "{message}");
    assert!(results.is_empty());
    assert_eq!(node.end_offset(), before);
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
    assert!(message.expect("a message").contains("upgrade type 2"));
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
