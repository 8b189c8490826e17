//! The volume provisioner of the `local-dir` StorageClass.
//!
//! Installs the StorageClass (the cluster's default, provisioner
//! [`PROVISIONER`], reclaim policy Delete, binding Immediate). For each pending
//! PVC of that class it creates a `hostPath` PersistentVolume pre-bound to the
//! claim (`claimRef`) and its directory under `<state>/volumes/<pv>`; the
//! PersistentVolume controller of kube-controller-manager then binds both, as
//! with any external provisioner. When a PV of ours is Released (its PVC was
//! deleted, which PVC protection delays until no pod uses it), it deletes the
//! directory and the PV. It polls, so every failure is retried. It must not
//! touch volumes it did not provision.

use std::{path::PathBuf, time::Duration};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tracing::{info, warn};

use crate::node::FIELD_MANAGER;

/// The StorageClass this agent serves.
pub const STORAGE_CLASS: &str = "local-dir";
/// Its `provisioner` and the PVs' `pv.kubernetes.io/provisioned-by`.
pub const PROVISIONER: &str = "kraftwerk.dev/local-dir";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const PERIOD: Duration = Duration::from_secs(1);

/// Installs the StorageClass, then provisions and deletes volumes, forever.
pub async fn run(client: Client, volumes_dir: PathBuf) {
    loop {
        match install_class(&client).await {
            Ok(()) => break,
            Err(e) => warn!(error = %e, "could not install the StorageClass; retrying"),
        }
        tokio::time::sleep(PERIOD).await;
    }
    loop {
        if let Err(e) = provision(&client, &volumes_dir).await {
            warn!(error = %e, "provisioning pass failed");
        }
        if let Err(e) = reclaim(&client).await {
            warn!(error = %e, "reclaim pass failed");
        }
        tokio::time::sleep(PERIOD).await;
    }
}

async fn install_class(client: &Client) -> Result<(), kube::Error> {
    let api: Api<k8s_openapi::api::storage::v1::StorageClass> = Api::all(client.clone());
    let class = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    });
    api.patch(
        STORAGE_CLASS,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&class),
    )
    .await?;
    Ok(())
}

async fn provision(client: &Client, volumes_dir: &std::path::Path) -> Result<(), kube::Error> {
    let pvcs: Api<PersistentVolumeClaim> = Api::all(client.clone());
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    for pvc in pvcs.list(&ListParams::default()).await? {
        let spec = pvc.spec.clone().unwrap_or_default();
        let phase = pvc
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending");
        if phase != "Pending"
            || spec.volume_name.as_deref().is_some_and(|v| !v.is_empty())
            || spec.storage_class_name.as_deref() != Some(STORAGE_CLASS)
            || pvc.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let uid = pvc.uid().unwrap_or_default();
        let namespace = pvc.namespace().unwrap_or_default();
        let pv_name = format!("pvc-{uid}");
        let dir = volumes_dir.join(&pv_name);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            warn!(dir = %dir.display(), error = %e, "cannot create the volume directory");
            continue;
        }
        let storage = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone())
            .unwrap_or_else(|| "1Gi".into());
        let pv: PersistentVolume = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {PROVISIONED_BY: PROVISIONER}},
            "spec": {
                "capacity": {"storage": storage},
                "accessModes": spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": STORAGE_CLASS,
                "volumeMode": spec.volume_mode.clone().unwrap_or_else(|| "Filesystem".into()),
                "hostPath": {"path": dir.display().to_string(), "type": "DirectoryOrCreate"},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": namespace,
                    "name": pvc.name_any(),
                    "uid": uid,
                },
            },
        }))
        .map_err(kube::Error::SerdeError)?;
        match pvs.create(&PostParams::default(), &pv).await {
            Ok(_) => {
                info!(pvc = %format!("{namespace}/{}", pvc.name_any()), pv = %pv_name, "provisioned")
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn reclaim(client: &Client) -> Result<(), kube::Error> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    for pv in pvs.list(&ListParams::default()).await? {
        let ours = pv.annotations().get(PROVISIONED_BY).map(String::as_str) == Some(PROVISIONER);
        let phase = pv
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or_default();
        let spec = pv.spec.clone().unwrap_or_default();
        if !ours
            || !(phase == "Released" || phase == "Failed")
            || spec.persistent_volume_reclaim_policy.as_deref() != Some("Delete")
        {
            continue;
        }
        if let Some(path) = spec.host_path.map(|h| h.path)
            && let Err(e) = std::fs::remove_dir_all(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            warn!(%path, error = %e, "cannot delete the volume directory");
            continue;
        }
        match pvs.delete(&pv.name_any(), &DeleteParams::default()).await {
            Ok(_) => info!(pv = %pv.name_any(), "released volume deleted"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
