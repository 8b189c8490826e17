//! Pod volumes as host directories.
//!
//! Every volume of a pod becomes a directory that the runtime bind-mounts onto
//! each `volumeMount`'s path inside the container's mount namespace:
//!
//! | volume | directory |
//! |---|---|
//! | `persistentVolumeClaim` | the bound PersistentVolume's `hostPath` (made by `provisioner`; outlives the pod) |
//! | `emptyDir` | `<state>/pods/<uid>/volumes/<name>`, removed with the pod |
//! | `configMap`, `secret`, `downwardAPI`, `projected` | same, files (re)written by [`Volumes::prepare`] |
//! | `hostPath` | the path itself |
//!
//! `projected` covers the `kube-api-access-*` volume that the ServiceAccount
//! admission plugin adds to every pod: a token from the TokenRequest API bound
//! to the pod (renewed at 80 % of its lifetime), the cluster CA from the
//! `kube-root-ca.crt` ConfigMap and the namespace. Files are replaced by
//! rename, so a reader never sees half a file. This module must not start
//! processes or mount anything.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec},
    core::v1::{
        ConfigMap, DownwardAPIVolumeFile, KeyToPath, PersistentVolume, PersistentVolumeClaim, Pod,
        Secret, ServiceAccount,
    },
};
use kube::{Api, Client, api::PostParams};

use crate::env::{PodContext, field_value};

/// Errors while preparing volumes; all are retried by the pod worker.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error("cannot read {kind} {name}: {source}")]
    Get {
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("{kind} {name} does not exist")]
    NotFound { kind: &'static str, name: String },
    #[error("persistentVolumeClaim {0} is not bound yet")]
    NotBound(String),
    #[error("persistentVolume {0} is neither hostPath nor local, so it has no directory here")]
    NoPath(String),
    #[error("volume {0} has a type this node agent does not support")]
    Unsupported(String),
    #[error("cannot request a service account token for {0}: {1}")]
    Token(String, kube::Error),
    #[error("cannot write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// A cached service-account token.
#[derive(Debug, Clone)]
struct CachedToken {
    token: String,
    renew_at: Instant,
}

/// Prepares volumes; shared by all pod workers.
#[derive(Clone)]
pub struct Volumes {
    client: Client,
    pods_dir: PathBuf,
    tokens: Arc<Mutex<HashMap<String, CachedToken>>>,
}

impl std::fmt::Debug for Volumes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Volumes")
            .field("pods_dir", &self.pods_dir)
            .finish_non_exhaustive()
    }
}

impl Volumes {
    /// `pods_dir` holds one directory per pod uid.
    pub fn new(client: Client, pods_dir: PathBuf) -> Self {
        Self {
            client,
            pods_dir,
            tokens: Arc::default(),
        }
    }

    /// The directory of pod `uid` (emptyDir and generated volumes, logs stay elsewhere).
    pub fn pod_dir(&self, uid: &str) -> PathBuf {
        self.pods_dir.join(uid)
    }

    /// Makes every volume of `pod` ready and returns volume name → host path.
    /// Idempotent; called again periodically to refresh ConfigMap, Secret and
    /// token contents.
    pub async fn prepare(
        &self,
        pod: &Pod,
        ctx: &PodContext,
    ) -> Result<BTreeMap<String, PathBuf>, VolumeError> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let mut paths = BTreeMap::new();
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let own = self.pod_dir(&uid).join("volumes").join(&volume.name);
            let path = if let Some(pvc) = &volume.persistent_volume_claim {
                self.claim_path(&namespace, &pvc.claim_name).await?
            } else if let Some(host) = &volume.host_path {
                PathBuf::from(&host.path)
            } else if volume.empty_dir.is_some() {
                mkdir(&own)?;
                own
            } else if let Some(cm) = &volume.config_map {
                let files = self
                    .configmap_files(
                        &namespace,
                        &cm.name,
                        cm.items.as_deref(),
                        cm.optional.unwrap_or(false),
                    )
                    .await?;
                write_dir(&own, &files)?;
                own
            } else if let Some(secret) = &volume.secret {
                let name = secret.secret_name.clone().unwrap_or_default();
                let files = self
                    .secret_files(
                        &namespace,
                        &name,
                        secret.items.as_deref(),
                        secret.optional.unwrap_or(false),
                    )
                    .await?;
                write_dir(&own, &files)?;
                own
            } else if let Some(downward) = &volume.downward_api {
                write_dir(&own, &downward_files(pod, downward.items.as_deref(), ctx))?;
                own
            } else if let Some(projected) = &volume.projected {
                let mut files = BTreeMap::new();
                for source in projected.sources.iter().flatten() {
                    if let Some(t) = &source.service_account_token {
                        let token = self
                            .token(
                                pod,
                                t.audience.clone(),
                                t.expiration_seconds.unwrap_or(3600),
                            )
                            .await?;
                        files.insert(t.path.clone(), token.into_bytes());
                    }
                    if let Some(cm) = &source.config_map {
                        let optional = cm.optional.unwrap_or(false);
                        files.extend(
                            self.configmap_files(
                                &namespace,
                                &cm.name,
                                cm.items.as_deref(),
                                optional,
                            )
                            .await?,
                        );
                    }
                    if let Some(s) = &source.secret {
                        let optional = s.optional.unwrap_or(false);
                        files.extend(
                            self.secret_files(&namespace, &s.name, s.items.as_deref(), optional)
                                .await?,
                        );
                    }
                    if let Some(d) = &source.downward_api {
                        files.extend(downward_files(pod, d.items.as_deref(), ctx));
                    }
                }
                write_dir(&own, &files)?;
                own
            } else {
                return Err(VolumeError::Unsupported(volume.name.clone()));
            };
            paths.insert(volume.name.clone(), path);
        }
        Ok(paths)
    }

    /// Forgets the pod's tokens and removes its directory (not its PVC directories).
    pub fn cleanup(&self, uid: &str) {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| !k.starts_with(uid));
        let _ = std::fs::remove_dir_all(self.pod_dir(uid));
    }

    async fn claim_path(&self, namespace: &str, claim: &str) -> Result<PathBuf, VolumeError> {
        let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), namespace);
        let full = format!("{namespace}/{claim}");
        let pvc = get(&pvcs, "persistentVolumeClaim", &full, claim).await?;
        let bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
        let Some(pv_name) = pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_name.clone())
            .filter(|_| bound)
        else {
            return Err(VolumeError::NotBound(full));
        };
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        let pv = get(&pvs, "persistentVolume", &pv_name, &pv_name).await?;
        let spec = pv.spec.unwrap_or_default();
        let path = spec
            .host_path
            .map(|h| h.path)
            .or(spec.local.map(|l| l.path))
            .ok_or_else(|| VolumeError::NoPath(pv_name.clone()))?;
        let path = PathBuf::from(path);
        mkdir(&path)?;
        Ok(path)
    }

    async fn configmap_files(
        &self,
        namespace: &str,
        name: &str,
        items: Option<&[KeyToPath]>,
        optional: bool,
    ) -> Result<BTreeMap<String, Vec<u8>>, VolumeError> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let full = format!("{namespace}/{name}");
        let cm = match api.get_opt(name).await {
            Ok(Some(cm)) => cm,
            Ok(None) if optional => return Ok(BTreeMap::new()),
            Ok(None) => {
                return Err(VolumeError::NotFound {
                    kind: "configMap",
                    name: full,
                });
            }
            Err(source) => {
                return Err(VolumeError::Get {
                    kind: "configMap",
                    name: full,
                    source,
                });
            }
        };
        let mut data: BTreeMap<String, Vec<u8>> = cm
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        data.extend(
            cm.binary_data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0)),
        );
        Ok(select_items(data, items))
    }

    async fn secret_files(
        &self,
        namespace: &str,
        name: &str,
        items: Option<&[KeyToPath]>,
        optional: bool,
    ) -> Result<BTreeMap<String, Vec<u8>>, VolumeError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let full = format!("{namespace}/{name}");
        let secret = match api.get_opt(name).await {
            Ok(Some(s)) => s,
            Ok(None) if optional => return Ok(BTreeMap::new()),
            Ok(None) => {
                return Err(VolumeError::NotFound {
                    kind: "secret",
                    name: full,
                });
            }
            Err(source) => {
                return Err(VolumeError::Get {
                    kind: "secret",
                    name: full,
                    source,
                });
            }
        };
        let mut data: BTreeMap<String, Vec<u8>> = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        data.extend(
            secret
                .string_data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes())),
        );
        Ok(select_items(data, items))
    }

    /// A token for the pod's service account from the TokenRequest API, bound
    /// to the pod, cached until 80 % of its lifetime has passed.
    async fn token(
        &self,
        pod: &Pod,
        audience: Option<String>,
        expiration_s: i64,
    ) -> Result<String, VolumeError> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.clone().unwrap_or_default();
        let sa = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_else(|| "default".into());
        let key = format!(
            "{uid}/{}/{expiration_s}",
            audience.clone().unwrap_or_default()
        );
        if let Some(cached) = self
            .tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            && Instant::now() < cached.renew_at
        {
            return Ok(cached.token.clone());
        }
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: audience.into_iter().collect(),
                expiration_seconds: Some(expiration_s),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: pod.metadata.name.clone(),
                    uid: Some(uid.clone()),
                }),
            },
            ..TokenRequest::default()
        };
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &namespace);
        let who = format!("{namespace}/{sa}");
        let response = api
            .create_token_request(&sa, &PostParams::default(), &request)
            .await
            .map_err(|e| VolumeError::Token(who.clone(), e))?;
        let token = response.status.map(|s| s.token).unwrap_or_default();
        let lifetime = Duration::from_secs(u64::try_from(expiration_s.max(600)).unwrap_or(600));
        let renew_at = Instant::now() + lifetime.mul_f64(0.8);
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                key,
                CachedToken {
                    token: token.clone(),
                    renew_at,
                },
            );
        Ok(token)
    }
}

async fn get<K>(api: &Api<K>, kind: &'static str, full: &str, name: &str) -> Result<K, VolumeError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await {
        Ok(Some(o)) => Ok(o),
        Ok(None) => Err(VolumeError::NotFound {
            kind,
            name: full.into(),
        }),
        Err(source) => Err(VolumeError::Get {
            kind,
            name: full.into(),
            source,
        }),
    }
}

/// All keys, or only `items` under their paths.
fn select_items(
    data: BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
) -> BTreeMap<String, Vec<u8>> {
    match items {
        None => data,
        Some(items) => items
            .iter()
            .filter_map(|i| data.get(&i.key).map(|v| (i.path.clone(), v.clone())))
            .collect(),
    }
}

fn downward_files(
    pod: &Pod,
    items: Option<&[DownwardAPIVolumeFile]>,
    ctx: &PodContext,
) -> BTreeMap<String, Vec<u8>> {
    items
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let field = item.field_ref.as_ref()?;
            Some((
                item.path.clone(),
                field_value(pod, field, ctx)
                    .unwrap_or_default()
                    .into_bytes(),
            ))
        })
        .collect()
}

fn mkdir(path: &Path) -> Result<(), VolumeError> {
    std::fs::create_dir_all(path).map_err(|source| VolumeError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Writes `files` (relative path → bytes) into `dir`, each by temp file and
/// rename, and removes top-level entries that are no longer listed.
fn write_dir(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), VolumeError> {
    mkdir(dir)?;
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| VolumeError::Io { path, source }
    };
    for (rel, bytes) in files {
        let target = dir.join(rel.trim_start_matches('/'));
        if let Some(parent) = target.parent() {
            mkdir(parent)?;
        }
        if std::fs::read(&target).ok().as_deref() == Some(bytes.as_slice()) {
            continue;
        }
        let tmp = target.with_extension("kraft-tmp");
        std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &target).map_err(io(&target))?;
    }
    let keep: BTreeSet<&str> = files
        .keys()
        .filter_map(|k| k.trim_start_matches('/').split('/').next())
        .collect();
    for entry in std::fs::read_dir(dir).map_err(io(dir))?.flatten() {
        let name = entry.file_name();
        if !keep.contains(name.to_string_lossy().as_ref()) {
            let path = entry.path();
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_a_volume_directory_replaces_contents_and_drops_removed_keys() {
        let dir = tempfile::tempdir().expect("temp dir");
        let vol = dir.path().join("config");
        let mut files = BTreeMap::from([
            ("a.properties".to_string(), b"x=1".to_vec()),
            ("b".to_string(), b"old".to_vec()),
        ]);
        write_dir(&vol, &files).expect("first write");
        files.remove("a.properties");
        files.insert("b".into(), b"new".to_vec());
        files.insert("sub/c".into(), b"c".to_vec());
        write_dir(&vol, &files).expect("second write");
        assert!(!vol.join("a.properties").exists());
        assert_eq!(std::fs::read(vol.join("b")).expect("b"), b"new");
        assert_eq!(std::fs::read(vol.join("sub/c")).expect("c"), b"c");
    }

    #[test]
    fn items_select_and_rename_keys() {
        let data = BTreeMap::from([
            ("ca.crt".to_string(), b"pem".to_vec()),
            ("other".to_string(), b"o".to_vec()),
        ]);
        let items = [KeyToPath {
            key: "ca.crt".into(),
            path: "certs/ca.pem".into(),
            mode: None,
        }];
        let selected = select_items(data, Some(&items));
        assert_eq!(selected.keys().collect::<Vec<_>>(), vec!["certs/ca.pem"]);
    }
}
