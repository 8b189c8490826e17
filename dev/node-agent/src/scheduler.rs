//! The scheduler: binds every pending pod to this node (the cluster's only one).
//!
//! Pods with an empty `spec.nodeName` that are not finished and have no
//! scheduling gates get a Binding (the `pods/binding` subresource, as
//! kube-scheduler writes it), which also sets their PodScheduled condition. It
//! polls, so a failed bind is simply retried on the next pass. It must not
//! start anything.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
use kube::{
    Api, Client,
    api::{ListParams, ObjectMeta, PostParams},
};
use tracing::{info, warn};

/// How often pending pods are looked for.
const PERIOD: Duration = Duration::from_millis(500);

/// Binds pending pods to `node`, forever.
pub async fn run(client: Client, node: String) {
    let api: Api<Pod> = Api::all(client.clone());
    let params =
        ListParams::default().fields("spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed");
    loop {
        match api.list(&params).await {
            Ok(pods) => {
                for pod in pods {
                    if let Err(e) = bind(&client, &pod, &node).await {
                        warn!(pod = ?pod.metadata.name, error = %e, "could not bind pod");
                    }
                }
            }
            Err(e) => warn!(error = %e, "could not list pending pods"),
        }
        tokio::time::sleep(PERIOD).await;
    }
}

async fn bind(client: &Client, pod: &Pod, node: &str) -> Result<(), kube::Error> {
    let spec = pod.spec.clone().unwrap_or_default();
    if pod.metadata.deletion_timestamp.is_some()
        || spec.scheduling_gates.is_some_and(|g| !g.is_empty())
    {
        return Ok(());
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            uid: pod.metadata.uid.clone(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.into()),
            ..ObjectReference::default()
        },
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    match api
        .create_subresource::<_, serde_json::Value>(
            "binding",
            &name,
            &PostParams::default(),
            &binding,
        )
        .await
    {
        Ok(_) => {
            info!(pod = %format!("{namespace}/{name}"), %node, "bound");
            Ok(())
        }
        // Already bound (a race with our own earlier pass) or gone.
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
