//! A container's environment, as a kubelet builds it.
//!
//! Order and precedence as Kubernetes': the service variables of the API
//! server (`KUBERNETES_SERVICE_HOST`/`_PORT`, pointing at the bridge address
//! where the API server listens, since no proxy serves ClusterIPs here), then
//! `envFrom` (ConfigMaps, Secrets, with their prefix), then `env` in order, each
//! value with `$(VAR)` references to earlier variables expanded (`$$` escapes).
//! `valueFrom` supports the downward API `fieldRef`s, `configMapKeyRef`,
//! `secretKeyRef` and `resourceFieldRef` (the quantity set in the container's
//! resources, else "0").
//! This module reads ConfigMaps and Secrets; it must not write anything.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Container, ObjectFieldSelector, Pod, Secret};
use kube::{Api, Client};

/// Errors while building an environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("cannot read {kind} {namespace}/{name}: {source}")]
    Get {
        kind: &'static str,
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("{kind} {namespace}/{name} has no key {key:?}")]
    MissingKey {
        kind: &'static str,
        namespace: String,
        name: String,
        key: String,
    },
    #[error("unsupported fieldRef {0:?} in env of container {1}")]
    FieldPath(String, String),
}

/// What a container's environment depends on beside the pod spec.
#[derive(Debug, Clone)]
pub struct PodContext {
    /// The pod's IP.
    pub pod_ip: String,
    /// The node's IP (the bridge address).
    pub host_ip: String,
    /// Where pods reach the API server.
    pub api_host: String,
    /// The API server's port.
    pub api_port: u16,
}

/// The environment of `container` in `pod`, in order (later wins on a duplicate name).
pub async fn container_env(
    client: &Client,
    pod: &Pod,
    container: &Container,
    ctx: &PodContext,
) -> Result<Vec<(String, String)>, EnvError> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let mut env: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
        ),
        ("HOME".into(), "/root".into()),
        ("HOSTNAME".into(), hostname(pod)),
        ("KUBERNETES_SERVICE_HOST".into(), ctx.api_host.clone()),
        ("KUBERNETES_SERVICE_PORT".into(), ctx.api_port.to_string()),
        (
            "KUBERNETES_SERVICE_PORT_HTTPS".into(),
            ctx.api_port.to_string(),
        ),
        (
            "KUBERNETES_PORT".into(),
            format!("tcp://{}:{}", ctx.api_host, ctx.api_port),
        ),
        (
            format!("KUBERNETES_PORT_{}_TCP", ctx.api_port),
            format!("tcp://{}:{}", ctx.api_host, ctx.api_port),
        ),
    ];
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);

    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            let optional = r.optional.unwrap_or(false);
            if let Some(cm) =
                get_opt(&configmaps, "ConfigMap", &namespace, &r.name, optional).await?
            {
                for (k, v) in cm.data.unwrap_or_default() {
                    env.push((format!("{prefix}{k}"), v));
                }
            }
        }
        if let Some(r) = &from.secret_ref {
            let optional = r.optional.unwrap_or(false);
            if let Some(s) = get_opt(&secrets, "Secret", &namespace, &r.name, optional).await? {
                for (k, v) in s.data.unwrap_or_default() {
                    env.push((
                        format!("{prefix}{k}"),
                        String::from_utf8_lossy(&v.0).into_owned(),
                    ));
                }
            }
        }
    }

    for var in container.env.iter().flatten() {
        let value = if let Some(from) = &var.value_from {
            if let Some(field) = &from.field_ref {
                Some(field_value(pod, field, ctx).ok_or_else(|| {
                    EnvError::FieldPath(field.field_path.clone(), container.name.clone())
                })?)
            } else if let Some(r) = &from.config_map_key_ref {
                let optional = r.optional.unwrap_or(false);
                match get_opt(&configmaps, "ConfigMap", &namespace, &r.name, optional).await? {
                    Some(cm) => match cm.data.unwrap_or_default().remove(&r.key) {
                        Some(v) => Some(v),
                        None if optional => None,
                        None => return Err(missing("ConfigMap", &namespace, &r.name, &r.key)),
                    },
                    None => None,
                }
            } else if let Some(r) = &from.secret_key_ref {
                let optional = r.optional.unwrap_or(false);
                match get_opt(&secrets, "Secret", &namespace, &r.name, optional).await? {
                    Some(s) => match s.data.unwrap_or_default().remove(&r.key) {
                        Some(v) => Some(String::from_utf8_lossy(&v.0).into_owned()),
                        None if optional => None,
                        None => return Err(missing("Secret", &namespace, &r.name, &r.key)),
                    },
                    None => None,
                }
            } else {
                from.resource_field_ref
                    .as_ref()
                    .map(|r| resource_value(container, &r.resource))
            }
        } else {
            Some(expand(var.value.as_deref().unwrap_or(""), &env))
        };
        if let Some(value) = value {
            env.push((var.name.clone(), value));
        }
    }
    Ok(env)
}

/// The value of a `resourceFieldRef` (`limits.cpu`, `requests.memory`, …):
/// the quantity as written in the container's resources, else "0".
fn resource_value(container: &Container, resource: &str) -> String {
    let resources = container.resources.clone().unwrap_or_default();
    let (map, key) = match resource.split_once('.') {
        Some(("limits", key)) => (resources.limits, key),
        Some(("requests", key)) => (resources.requests, key),
        _ => (None, resource),
    };
    map.and_then(|m| m.get(key).map(|q| q.0.clone()))
        .unwrap_or_else(|| "0".into())
}

/// The pod's hostname: `spec.hostname`, else its name.
pub fn hostname(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .unwrap_or_else(|| pod.metadata.name.clone().unwrap_or_default())
}

/// The downward API value of `field` (`metadata.name`, `status.podIP`, …).
pub fn field_value(pod: &Pod, field: &ObjectFieldSelector, ctx: &PodContext) -> Option<String> {
    let path = field.field_path.as_str();
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let in_map = |m: &Option<BTreeMap<String, String>>, prefix: &str| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(
            m.as_ref()
                .and_then(|m| m.get(key).cloned())
                .unwrap_or_default(),
        )
    };
    match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" | "status.podIPs" => Some(ctx.pod_ip.clone()),
        "status.hostIP" | "status.hostIPs" => Some(ctx.host_ip.clone()),
        _ => in_map(&meta.labels, "metadata.labels['")
            .or_else(|| in_map(&meta.annotations, "metadata.annotations['")),
    }
}

/// Expands `$(NAME)` with the last value of NAME in `env`; `$$` is a literal `$`;
/// an unknown reference is left as it is (Kubernetes' rules).
pub fn expand(input: &str, env: &[(String, String)]) -> String {
    let lookup = |name: &str| {
        env.iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match lookup(name) {
                Some(v) => out.push_str(&v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

async fn get_opt<K>(
    api: &Api<K>,
    kind: &'static str,
    namespace: &str,
    name: &str,
    optional: bool,
) -> Result<Option<K>, EnvError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await {
        Ok(Some(o)) => Ok(Some(o)),
        Ok(None) if optional => Ok(None),
        Ok(None) => Err(EnvError::Get {
            kind,
            namespace: namespace.into(),
            name: name.into(),
            source: kube::Error::Api(Box::new(
                kube::core::Status::failure("not found", "NotFound").with_code(404),
            )),
        }),
        Err(source) => Err(EnvError::Get {
            kind,
            namespace: namespace.into(),
            name: name.into(),
            source,
        }),
    }
}

fn missing(kind: &'static str, namespace: &str, name: &str, key: &str) -> EnvError {
    EnvError::MissingKey {
        kind,
        namespace: namespace.into(),
        name: name.into(),
        key: key.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_to_earlier_variables_are_expanded_and_dollar_dollar_escapes() {
        let env = vec![
            ("POD_NAME".to_string(), "q-0".to_string()),
            ("N".to_string(), "1".to_string()),
        ];
        assert_eq!(expand("--id=$(POD_NAME)-$(N)", &env), "--id=q-0-1");
        assert_eq!(
            expand("$$(POD_NAME) $(UNKNOWN) $x", &env),
            "$(POD_NAME) $(UNKNOWN) $x"
        );
    }

    #[test]
    fn downward_api_fields_come_from_the_pod_and_its_network() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "q-0", "namespace": "ns", "labels": {"app": "kraft"}},
            "spec": {"containers": [], "nodeName": "n1"}
        }))
        .expect("valid pod");
        let ctx = PodContext {
            pod_ip: "10.244.0.7".into(),
            host_ip: "10.244.0.1".into(),
            api_host: "10.244.0.1".into(),
            api_port: 6443,
        };
        let f = |p: &str| {
            field_value(
                &pod,
                &ObjectFieldSelector {
                    field_path: p.into(),
                    api_version: None,
                },
                &ctx,
            )
        };
        assert_eq!(f("metadata.name").as_deref(), Some("q-0"));
        assert_eq!(f("metadata.namespace").as_deref(), Some("ns"));
        assert_eq!(f("status.podIP").as_deref(), Some("10.244.0.7"));
        assert_eq!(f("spec.nodeName").as_deref(), Some("n1"));
        assert_eq!(f("metadata.labels['app']").as_deref(), Some("kraft"));
        assert_eq!(f("status.bogus"), None);
    }
}
