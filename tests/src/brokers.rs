//! The Apache Kafka brokers of `examples/kafka-brokers.yaml` on a test's
//! quorum: applying them, waiting until they are Ready, their PLAINTEXT
//! bootstrap (the host reaches pod IPs), and the ACL their clients need
//! (written with the operator identity on a controller). Must not change
//! the quorum.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};
use kube::api::ListParams;

use crate::{Error, Result, TestNamespace, describe, kafka, manifest, wait};

/// The brokers' StatefulSet (and Service) in the example.
pub const STATEFULSET: &str = "kafka";
/// The brokers' pod label selector.
pub const SELECTOR: &str = "app.kubernetes.io/name=kafka";
/// The brokers' PLAINTEXT client port.
pub const CLIENT_PORT: u16 = 9092;
/// The example's KraftQuorum name (its ConfigMap `quorum-brokers` and
/// Secret `quorum-client-tls`).
pub const QUORUM: &str = "quorum";

/// Applies `examples/kafka-brokers.yaml` in `ns`.
///
/// Errors: as [`manifest::apply_file`].
pub async fn apply(ns: &TestNamespace) -> Result<Vec<String>> {
    manifest::apply_file(ns, &manifest::example("kafka-brokers.yaml")).await
}

/// Waits up to `timeout` until `replicas` broker pods are Ready.
///
/// Errors: as [`wait::until`].
pub async fn wait_ready(ns: &TestNamespace, replicas: i32, timeout: Duration) -> Result<()> {
    wait::until(
        &ns.api::<StatefulSet>(),
        STATEFULSET,
        &format!("{replicas} brokers Ready"),
        timeout,
        move |s: Option<&StatefulSet>| {
            s.and_then(|s| s.status.as_ref()?.ready_replicas) == Some(replicas)
        },
        |s| format!("status {:?}", s.status),
    )
    .await
    .map(drop)
}

/// The brokers' bootstrap: `podIP:9092` of every broker pod with an IP,
/// comma-separated.
///
/// Errors: [`Error::Kube`], [`Error::Invalid`] when no pod has an IP.
pub async fn bootstrap(ns: &TestNamespace) -> Result<String> {
    let pods = ns
        .api::<Pod>()
        .list(&ListParams::default().labels(SELECTOR))
        .await
        .map_err(Error::kube(format!("list the brokers of {}", ns.name())))?;
    let all: Vec<String> = pods
        .items
        .iter()
        .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
        .map(|ip| format!("{ip}:{CLIENT_PORT}"))
        .collect();
    if all.is_empty() {
        return Err(Error::Invalid(format!(
            "no broker of {} has an IP",
            ns.name()
        )));
    }
    Ok(all.join(","))
}

/// Lets the brokers' PLAINTEXT clients (`User:ANONYMOUS`) do
/// [`kafka::CLIENT_TOPIC_OPERATIONS`] on every topic: an ACL written with
/// the operator identity of `quorum` on its first controller that has an IP
/// (PLAINTEXT when the quorum has no TLS: then nothing to do), the
/// controllers' advertised names resolved by
/// [`kafka::cluster_hosts_file`]. Blocks on a JVM in a blocking task.
///
/// Errors: as [`describe::operator_identity`], [`kafka::allow_topics`].
pub async fn allow_anonymous_topics(ns: &TestNamespace, quorum: &str) -> Result<()> {
    let Some((ca, keystore)) = describe::operator_identity(ns, quorum).await? else {
        return Ok(());
    };
    let config =
        kafka::write_client_properties(&format!("{}-{quorum}", ns.name()), &ca, &keystore)?;
    let controller = describe::controller_addresses(ns, quorum)
        .await?
        .first()
        .map(ToString::to_string)
        .ok_or_else(|| Error::Invalid(format!("no controller of {quorum} has an IP")))?;
    tokio::task::spawn_blocking(move || {
        kafka::allow_topics(
            &controller,
            &config,
            "User:ANONYMOUS",
            kafka::CLIENT_TOPIC_OPERATIONS,
        )
    })
    .await
    .map_err(|e| Error::Invalid(format!("the AclCommand task: {e}")))?
}
