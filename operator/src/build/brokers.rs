//! What Apache Kafka brokers need to use a quorum as their controllers: the
//! `<name>-brokers` ConfigMap and `status.brokers`. Pure.
//!
//! The ConfigMap's keys are the environment variables of Apache Kafka's own
//! image (`apache/kafka`), whose entrypoint turns every `KAFKA_*` variable
//! into a `server.properties` line (`KAFKA_CONTROLLER_LISTENER_NAMES` →
//! `controller.listener.names`, Kafka's `KafkaDockerWrapper`) and formats
//! the log directories with `CLUSTER_ID`: a broker StatefulSet takes them
//! whole with `envFrom` (see `examples/kafka-brokers.yaml`). The broker's
//! controller connections use the `listener.name.controller.` prefixed TLS
//! settings (Kafka's `ChannelBuilders.clientChannelBuilder` with the
//! controller listener name), so the broker's own listeners keep theirs.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;

use super::{certificate::COMBINED_PEM_KEY, child_meta};
use crate::{
    crd::{
        BrokerConnection, CLIENT_TLS_DIR, CONTROLLER_LISTENER_NAME, TLS_CA_KEY, TLS_KEYSTORE_KEY,
    },
    validate::ValidatedQuorum,
};

/// Kafka's default `listener.security.protocol.map` entries
/// (`SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_DEFAULT`): setting
/// the map replaces the default, so the brokers' own listeners named after
/// a protocol keep working.
const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Name of the ConfigMap for the brokers of `q`.
pub fn broker_configmap_name(q: &ValidatedQuorum) -> String {
    format!("{}-brokers", q.name)
}

/// The brokers' `controller.quorum.bootstrap.servers`: the controller
/// listener of every pod of `spec.replicas`. Voters are removed highest
/// ordinal first, so these are the pods that stay; Kafka skips a name that
/// does not resolve yet as long as one does (`ClientUtils.parseAndValidateAddresses`).
pub fn broker_bootstrap_servers(q: &ValidatedQuorum) -> String {
    (0..q.replicas.max(1))
        .map(|i| q.endpoint(i))
        .collect::<Vec<_>>()
        .join(",")
}

fn security_protocol(q: &ValidatedQuorum) -> &'static str {
    if q.tls_enabled { "SSL" } else { "PLAINTEXT" }
}

/// `status.brokers` of `q`.
pub fn broker_connection(q: &ValidatedQuorum) -> BrokerConnection {
    BrokerConnection {
        config_map: broker_configmap_name(q),
        bootstrap_servers: broker_bootstrap_servers(q),
        listener_name: CONTROLLER_LISTENER_NAME.to_string(),
        security_protocol: security_protocol(q).to_string(),
        client_secret: q.tls_enabled.then(|| q.client_secret()),
    }
}

/// The environment of a broker of `q`, as the `apache/kafka` image reads it:
/// `CLUSTER_ID`, the bootstrap servers, the controller listener and its
/// protocol, and with TLS the PEM keystore and truststore of the client
/// Secret mounted at [`CLIENT_TLS_DIR`].
pub fn broker_env(q: &ValidatedQuorum) -> BTreeMap<String, String> {
    let mut env = BTreeMap::from([
        ("CLUSTER_ID".to_string(), q.cluster_id.clone()),
        (
            "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS".to_string(),
            broker_bootstrap_servers(q),
        ),
        (
            "KAFKA_CONTROLLER_LISTENER_NAMES".to_string(),
            CONTROLLER_LISTENER_NAME.to_string(),
        ),
        (
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP".to_string(),
            format!(
                "{CONTROLLER_LISTENER_NAME}:{},{DEFAULT_PROTOCOL_MAP}",
                security_protocol(q)
            ),
        ),
    ]);
    if q.tls_enabled {
        // cert-manager writes the key and chain in one file under its own
        // name; the operator's CA writes `keystore.pem`.
        let keystore = if q.issuer_ref.is_some() {
            COMBINED_PEM_KEY
        } else {
            TLS_KEYSTORE_KEY
        };
        let prefix = format!("KAFKA_LISTENER_NAME_{CONTROLLER_LISTENER_NAME}_SSL");
        for (key, value) in [
            ("KEYSTORE_TYPE", "PEM".to_string()),
            ("KEYSTORE_LOCATION", format!("{CLIENT_TLS_DIR}/{keystore}")),
            ("TRUSTSTORE_TYPE", "PEM".to_string()),
            (
                "TRUSTSTORE_LOCATION",
                format!("{CLIENT_TLS_DIR}/{TLS_CA_KEY}"),
            ),
        ] {
            env.insert(format!("{prefix}_{key}"), value);
        }
    }
    env
}

/// Builds the `<name>-brokers` ConfigMap: [`broker_env`].
pub fn build_broker_configmap(q: &ValidatedQuorum) -> ConfigMap {
    ConfigMap {
        metadata: child_meta(q, &broker_configmap_name(q)),
        data: Some(broker_env(q)),
        ..ConfigMap::default()
    }
}
