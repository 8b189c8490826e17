//! What a process test needs to act as a Kafka broker towards our
//! controllers over the wire: one kafka-protocol request on a fresh
//! connection, and the BrokerRegistration (v4) a Kafka 4.1 broker's
//! `BrokerLifecycleManager` sends.

use kafka_protocol::{
    messages::{
        BrokerRegistrationRequest, RequestKind, ResponseKind,
        broker_registration_request::{Feature, Listener},
    },
    protocol::StrBytes,
};
use kraft_controller::wire::client::{ClientConfig, Connection};

use super::Quorum;

/// Sends `request` at `version` to node `id` on a fresh connection and
/// returns its answer (panics when there is none: a test failure).
pub fn call(quorum: &Quorum, id: i32, version: i16, request: RequestKind) -> ResponseKind {
    try_call(quorum, id, version, request).expect("an answer")
}

/// [`call`], with `None` when the node does not answer (down, or not yet
/// listening): for tests that poll until a node answers.
pub fn try_call(
    quorum: &Quorum,
    id: i32,
    version: i16,
    request: RequestKind,
) -> Option<ResponseKind> {
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
        .ok()
}

/// The registration of broker `broker_id` in cluster `cluster_id`: one
/// PLAINTEXT listener on 127.0.0.1:9092, the feature ranges of a Kafka 4.1
/// broker (`metadata.version` 7-27, `kraft.version` 0-1, ...), one log dir
/// (`0xd1d1…0001`), incarnation `0xb0b`, no previous epoch.
pub fn registration(cluster_id: &str, broker_id: i32) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest::default()
        .with_broker_id(broker_id.into())
        .with_cluster_id(StrBytes::from_string(cluster_id.to_owned()))
        .with_incarnation_id(uuid::Uuid::from_u128(0xb0b))
        .with_listeners(vec![
            Listener::default()
                .with_name(StrBytes::from_static_str("PLAINTEXT"))
                .with_host(StrBytes::from_static_str("127.0.0.1"))
                .with_port(9092),
        ])
        .with_features(vec![
            Feature::default()
                .with_name(StrBytes::from_static_str("metadata.version"))
                .with_min_supported_version(7)
                .with_max_supported_version(27),
            Feature::default()
                .with_name(StrBytes::from_static_str("kraft.version"))
                .with_max_supported_version(1),
            Feature::default()
                .with_name(StrBytes::from_static_str("group.version"))
                .with_max_supported_version(1),
            Feature::default()
                .with_name(StrBytes::from_static_str("transaction.version"))
                .with_max_supported_version(2),
            Feature::default()
                .with_name(StrBytes::from_static_str(
                    "eligible.leader.replicas.version",
                ))
                .with_max_supported_version(1),
        ])
        .with_log_dirs(vec![LOG_DIR])
        .with_previous_broker_epoch(-1)
}

/// The one log directory of [`registration`].
pub const LOG_DIR: uuid::Uuid = uuid::Uuid::from_u128(0xd1d1_0000_0000_0000_0000_0000_0000_0001);
