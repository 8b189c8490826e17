//! The operator's own Deployment during a test: killing its pods (as a
//! node failure would) and waiting until its Deployment is rolled out
//! again. Must not change the operator's release.

use std::time::Duration;

use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams},
};

use crate::{
    Error, Result,
    cluster::{operator_namespace, operator_release},
    wait,
};

/// The label selector of the operator's pods (the chart's).
pub const SELECTOR: &str = "app.kubernetes.io/name=kraft-operator";

/// Deletes every operator pod with a grace period of 0 s: the running
/// reconcile stops wherever it is.
///
/// Errors: [`Error::Kube`].
pub async fn kill(client: &Client) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &operator_namespace());
    pods.delete_collection(
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
        &ListParams::default().labels(SELECTOR),
    )
    .await
    .map_err(Error::kube("delete the operator's pods"))?;
    Ok(())
}

/// `kubectl rollout status deployment` is satisfied: the latest generation
/// observed, every replica updated and available, none old left.
pub fn rolled_out(d: &Deployment) -> bool {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    s.observed_generation >= d.metadata.generation
        && s.updated_replicas.unwrap_or(0) == want
        && s.replicas.unwrap_or(0) == want
        && s.available_replicas.unwrap_or(0) == want
}

/// Waits up to `timeout` until the operator's Deployment is [`rolled_out`].
///
/// Errors: as [`wait::until`].
pub async fn wait_rolled_out(client: &Client, timeout: Duration) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &operator_namespace());
    wait::until(
        &deployments,
        &operator_release(),
        "the operator's Deployment rolled out",
        timeout,
        |d: Option<&Deployment>| d.is_some_and(rolled_out),
        |d| format!("{:?}", d.status),
    )
    .await
    .map(drop)
}
