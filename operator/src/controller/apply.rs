//! Apply helpers (DESIGN 3.2 step 2): every write the reconciler makes to
//! the API server, through server-side apply under the one field manager
//! ([`FIELD_MANAGER`]): children, the status subresource, and the one
//! delete (a pod restarted to roll out its template).
//!
//! Owns the request shapes; it must not decide what to write (the pure
//! steps and the executor do) nor retry (the error policy requeues).

use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams},
};
use serde::{Serialize, de::DeserializeOwned};

use super::{Error, kube_err};
use crate::{
    build::{
        brokers, configmap::build_configmap, networkpolicy, pdb::build_pdb, service::build_service,
        statefulset::build_statefulset,
    },
    crd::{FIELD_MANAGER, KraftQuorum, KraftQuorumStatus},
    validate::ValidatedQuorum,
};

/// Server-side applies `obj` in `ns` (forced, [`FIELD_MANAGER`]); returns
/// what the API server stored.
///
/// # Errors
/// [`Error::Kube`] naming the kind and object.
pub async fn apply_object<K>(client: &Client, ns: &str, obj: &K) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(kube_err(format!("apply {} {ns}/{name}", K::kind(&()))))
}

/// Server-side applies `status` to `kq`'s status subresource; returns the
/// stored object.
///
/// # Errors
/// [`Error::Kube`].
pub async fn write_status(
    client: &Client,
    kq: &KraftQuorum,
    status: &KraftQuorumStatus,
) -> Result<KraftQuorum, Error> {
    let ns = kq.namespace().unwrap_or_default();
    let name = kq.name_any();
    let api: Api<KraftQuorum> = Api::namespaced(client.clone(), &ns);
    let body = serde_json::json!({
        "apiVersion": KraftQuorum::api_version(&()),
        "kind": KraftQuorum::kind(&()),
        "metadata": { "name": name },
        "status": status,
    });
    api.patch_status(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map_err(kube_err(format!("write status of kraftquorum {ns}/{name}")))
}

/// Applies the children in dependency order (NetworkPolicy first, so the
/// pods are never reachable without it; Service, ConfigMap, the brokers'
/// ConfigMap, StatefulSet,
/// PodDisruptionBudget); returns the stored StatefulSet.
///
/// # Errors
/// [`Error::Kube`] of the first child that failed.
pub async fn apply_children(client: &Client, q: &ValidatedQuorum) -> Result<StatefulSet, Error> {
    if networkpolicy::enabled(q) {
        apply_object(client, &q.namespace, &networkpolicy::build_networkpolicy(q)).await?;
    }
    apply_object(client, &q.namespace, &build_service(q)).await?;
    apply_object(client, &q.namespace, &build_configmap(q)).await?;
    apply_object(client, &q.namespace, &brokers::build_broker_configmap(q)).await?;
    let sts = apply_object(client, &q.namespace, &build_statefulset(q)).await?;
    apply_object(client, &q.namespace, &build_pdb(q)).await?;
    Ok(sts)
}

/// Applies the StatefulSet of `q` with `replicas` pods.
///
/// # Errors
/// [`Error::Kube`].
pub async fn scale_statefulset(
    client: &Client,
    q: &ValidatedQuorum,
    replicas: i32,
) -> Result<(), Error> {
    let mut scaled = q.clone();
    scaled.statefulset_replicas = replicas;
    apply_object(client, &q.namespace, &build_statefulset(&scaled)).await?;
    Ok(())
}

/// Deletes pod `name` so the StatefulSet recreates it from the current
/// template; a pod already gone counts as deleted.
///
/// # Errors
/// [`Error::Kube`] for anything but a 404.
pub async fn delete_pod(client: &Client, namespace: &str, name: &str) -> Result<(), Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    match pods.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(kube_err(format!("delete pod {namespace}/{name}"))(e)),
    }
}
