//! The Node object and its heartbeat.
//!
//! Registers the node (labels `kubernetes.io/hostname`, `kubernetes.io/os`,
//! capacity, the bridge address as InternalIP), then every [`HEARTBEAT`]
//! renews its Lease in `kube-node-lease` and writes the Ready condition, so the
//! node lifecycle controller of kube-controller-manager sees a healthy node
//! and neither taints it nor evicts its pods. Written with server-side apply
//! under [`FIELD_MANAGER`]. It must not touch pods.

use std::time::Duration;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::MicroTime, jiff::Timestamp};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use tracing::{info, warn};

/// Field manager of every server-side apply this agent makes.
pub const FIELD_MANAGER: &str = "kraft-node-agent";
/// How often the Lease is renewed and the node status written.
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// Lease duration: several heartbeats.
const LEASE_SECONDS: i32 = 40;

/// What the node reports about itself.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// The bridge address.
    pub ip: String,
    /// CPU cores to report as capacity.
    pub cpus: usize,
    /// Memory to report, in KiB.
    pub memory_kib: u64,
}

fn api(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Registers the node and keeps its heartbeat, forever.
pub async fn run(client: Client, info: NodeInfo) {
    let nodes = api(&client, "", "v1", "Node", "nodes", None);
    let leases = api(
        &client,
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        Some("kube-node-lease"),
    );
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut registered = false;
    loop {
        if !registered {
            match register(&nodes, &info, &apply).await {
                Ok(()) => {
                    info!(node = %info.name, "node registered");
                    registered = true;
                }
                Err(e) => warn!(error = %e, "could not register the node"),
            }
        }
        if registered && let Err(e) = heartbeat(&nodes, &leases, &info, &apply).await {
            warn!(error = %e, "node heartbeat failed");
        }
        tokio::time::sleep(if registered {
            HEARTBEAT
        } else {
            Duration::from_secs(1)
        })
        .await;
    }
}

async fn register(
    nodes: &Api<DynamicObject>,
    info: &NodeInfo,
    apply: &PatchParams,
) -> Result<(), kube::Error> {
    let node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": info.name,
            "labels": {
                "kubernetes.io/hostname": info.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
            },
        },
    });
    nodes.patch(&info.name, apply, &Patch::Apply(&node)).await?;
    Ok(())
}

async fn heartbeat(
    nodes: &Api<DynamicObject>,
    leases: &Api<DynamicObject>,
    info: &NodeInfo,
    apply: &PatchParams,
) -> Result<(), kube::Error> {
    let now = Timestamp::now();
    let node_uid = nodes
        .get(&info.name)
        .await?
        .metadata
        .uid
        .unwrap_or_default();
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": info.name,
            "namespace": "kube-node-lease",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": info.name, "uid": node_uid}],
        },
        "spec": {
            "holderIdentity": info.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": MicroTime(now),
        },
    });
    leases
        .patch(&info.name, apply, &Patch::Apply(&lease))
        .await?;
    let capacity = json!({
        "cpu": info.cpus.to_string(),
        "memory": format!("{}Ki", info.memory_kib),
        "pods": "250",
        "ephemeral-storage": "100Gi",
    });
    let status = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": info.name},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": info.ip},
                {"type": "Hostname", "address": info.name},
            ],
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kraft-node-agent is posting ready status",
                "lastHeartbeatTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now),
            }],
            "nodeInfo": {
                "architecture": std::env::consts::ARCH,
                "bootID": "",
                "containerRuntimeVersion": "kraft-node-agent://0.1",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.33.0-kraft-node-agent",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "local processes",
                "systemUUID": "",
            },
        },
    });
    nodes
        .patch_status(&info.name, apply, &Patch::Apply(&status))
        .await?;
    Ok(())
}
