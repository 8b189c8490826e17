//! The typed `KraftQuorum` of the operator crate and what the tests do to
//! one: create it, scale it through the scale subresource (what `kubectl
//! scale` does), merge-patch it, read it, and the StatefulSet and pods it
//! owns. Must not wait for anything (see [`crate::wait`]).

use k8s_openapi::api::core::v1::Pod;
use kraft_operator::crd::{KraftQuorum, KraftQuorumStatus, LABEL_INSTANCE};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{Error, Result, TestNamespace};

/// The controller image the tests run: `make cluster-images` builds it from
/// the workspace's debug `kraft-controller` (dev/real-node/images.sh).
pub const IMAGE: &str = "ghcr.io/kraftwerk/kraft-controller:0.1.0";
/// The repository of [`IMAGE`], without its tag.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/kraftwerk/kraft-controller";

/// The KraftQuorum of run.sh's `apply_quorum`: `replicas` voters of
/// [`IMAGE`] with 1 GiB volumes, everything else defaulted by the CRD.
///
/// Errors: [`Error::Invalid`] if the spec does not deserialize (it always
/// does for these fields).
pub fn minimal(name: &str, replicas: i32) -> Result<KraftQuorum> {
    minimal_with(name, replicas, json!({}))
}

/// [`minimal`] with `overlay` merged in as a JSON merge patch (RFC 7386,
/// `kubectl patch --type merge`): `{"spec": {"tls": …}}` adds a field,
/// `{"metadata": {"annotations": …}}` annotates it.
///
/// Errors: [`Error::Invalid`] if the result does not deserialize.
pub fn minimal_with(name: &str, replicas: i32, overlay: serde_json::Value) -> Result<KraftQuorum> {
    let mut manifest = json!({
        "apiVersion": "kraft.krabka.io/v1alpha1",
        "kind": "KraftQuorum",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "image": IMAGE, "storage": {"size": "1Gi"}},
    });
    json_patch::merge(&mut manifest, &overlay);
    from_json(manifest)
}

/// A KraftQuorum from its JSON form (a manifest written inline in a test).
///
/// Errors: [`Error::Invalid`] naming what serde refused.
pub fn from_json(value: serde_json::Value) -> Result<KraftQuorum> {
    serde_json::from_value(value).map_err(|e| Error::Invalid(format!("KraftQuorum manifest: {e}")))
}

/// The KraftQuorums of `ns`.
pub fn api(ns: &TestNamespace) -> Api<KraftQuorum> {
    ns.api()
}

/// Creates `kq` in `ns`.
///
/// Errors: [`Error::Kube`], e.g. the API server refusing it (CRD schema or
/// CEL rules: the message is the server's).
pub async fn create(ns: &TestNamespace, kq: &KraftQuorum) -> Result<KraftQuorum> {
    let name = kq.metadata.name.clone().unwrap_or_default();
    api(ns)
        .create(&PostParams::default(), kq)
        .await
        .map_err(Error::kube(format!(
            "create KraftQuorum {}/{name}",
            ns.name()
        )))
}

/// Creates the [`minimal`] KraftQuorum `name` of `replicas` voters.
///
/// Errors: as [`create`].
pub async fn create_minimal(ns: &TestNamespace, name: &str, replicas: i32) -> Result<KraftQuorum> {
    create(ns, &minimal(name, replicas)?).await
}

/// Sets `spec.replicas` through the scale subresource (`kubectl scale
/// kq/NAME --replicas=N`).
///
/// Errors: [`Error::Kube`].
pub async fn scale(ns: &TestNamespace, name: &str, replicas: i32) -> Result<()> {
    api(ns)
        .patch_scale(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .map_err(Error::kube(format!(
            "scale KraftQuorum {}/{name} to {replicas}",
            ns.name()
        )))?;
    Ok(())
}

/// A JSON merge patch of the KraftQuorum (`kubectl patch --type merge`).
///
/// Errors: [`Error::Kube`].
pub async fn patch_merge(
    ns: &TestNamespace,
    name: &str,
    patch: serde_json::Value,
) -> Result<KraftQuorum> {
    api(ns)
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(Error::kube(format!(
            "patch KraftQuorum {}/{name}",
            ns.name()
        )))
}

/// The KraftQuorum as the API server has it now.
///
/// Errors: [`Error::Kube`] (404 included).
pub async fn get(ns: &TestNamespace, name: &str) -> Result<KraftQuorum> {
    api(ns)
        .get(name)
        .await
        .map_err(Error::kube(format!("get KraftQuorum {}/{name}", ns.name())))
}

/// Its status, empty when it has none yet.
///
/// Errors: as [`get`].
pub async fn status(ns: &TestNamespace, name: &str) -> Result<KraftQuorumStatus> {
    Ok(get(ns, name).await?.status.unwrap_or_default())
}

/// The pods of the quorum `name` (label `app.kubernetes.io/instance`).
///
/// Errors: [`Error::Kube`].
pub async fn pods(ns: &TestNamespace, name: &str) -> Result<Vec<Pod>> {
    let lp = ListParams::default().labels(&format!("{LABEL_INSTANCE}={name}"));
    Ok(ns
        .api::<Pod>()
        .list(&lp)
        .await
        .map_err(Error::kube(format!(
            "list the pods of {}/{name}",
            ns.name()
        )))?
        .items)
}

/// The leader in `kq`'s status, if it has one.
pub fn leader_id(kq: &KraftQuorum) -> Option<i32> {
    kq.status.as_ref()?.leader_id
}

/// The directory ids of the status' voters, in status order.
pub fn directory_ids(kq: &KraftQuorum) -> Vec<String> {
    kq.status
        .iter()
        .flat_map(|s| &s.voters)
        .map(|v| v.directory_id.clone())
        .collect()
}

/// The directory id of voter `node` in the status, if it is a voter.
pub fn voter_dir(kq: &KraftQuorum, node: i32) -> Option<String> {
    kq.status
        .as_ref()?
        .voters
        .iter()
        .find(|v| v.node_id == node)
        .map(|v| v.directory_id.clone())
}
