//! How the tests reach the local cluster: its cache directory, the admin
//! kubeconfig `dev/cluster.sh up` writes, the operator's namespace. Must not
//! start or stop the cluster (shell does: `dev/cluster.sh`).

use std::path::PathBuf;

use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};

use crate::{Error, Result};

/// The namespace the operator's Helm release runs in (`HELM_NAMESPACE`,
/// default `kraft-system`, as tests/e2e/lib.sh).
pub fn operator_namespace() -> String {
    std::env::var("HELM_NAMESPACE").unwrap_or_else(|_| "kraft-system".into())
}

/// The operator's Helm release, which names its Deployment (`HELM_RELEASE`,
/// default `kraft-operator`).
pub fn operator_release() -> String {
    std::env::var("HELM_RELEASE").unwrap_or_else(|_| "kraft-operator".into())
}

/// `$KRAFTWERK_CACHE`, default `$HOME/.cache/kraftwerk` (as dev/cluster.sh).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KRAFTWERK_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/kraftwerk")
}

/// The container logs of the pods of `namespace`, as dev/real-node/pod-logs.sh
/// copies them from the kubelet's podLogsDir (`<cache>/real-node/pod-logs`):
/// `<cache>/cluster/logs/<namespace>/<pod>/<container>.log`.
pub fn logs_dir(namespace: &str) -> PathBuf {
    cache_dir().join("cluster/logs").join(namespace)
}

/// The path of the admin kubeconfig: `$KUBECONFIG` when set (as lib.sh),
/// else `<cache>/cluster/admin.kubeconfig`.
pub fn kubeconfig_path() -> PathBuf {
    match std::env::var_os("KUBECONFIG") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => cache_dir().join("cluster/admin.kubeconfig"),
    }
}

/// A client of the local cluster as its admin (`system:masters`).
///
/// Errors: [`Error::Invalid`] when the kubeconfig is missing or unreadable
/// (the cluster is not up: `dev/cluster.sh up`), [`Error::Kube`] when the
/// client cannot be built from it.
pub async fn client() -> Result<Client> {
    let path = kubeconfig_path();
    let kubeconfig = Kubeconfig::read_from(&path).map_err(|e| {
        Error::Invalid(format!(
            "read kubeconfig {}: {e} (is the cluster up? dev/cluster.sh up)",
            path.display()
        ))
    })?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Invalid(format!("load kubeconfig {}: {e}", path.display())))?;
    Client::try_from(config).map_err(Error::kube("build the Kubernetes client"))
}
