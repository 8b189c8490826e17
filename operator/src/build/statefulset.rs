//! The StatefulSet running the controllers (with `spec.backup`, the
//! backup sidecar and claim of [`super::backup`]). Pure.
//!
//! One pod template serves every ordinal, so nothing per-pod is baked in:
//! the pod's ordinal comes from the label the StatefulSet controller sets
//! (`apps.kubernetes.io/pod-index`) through the downward API into
//! `POD_ORDINAL`, its name into `POD_NAME`, and Kubernetes expands `$(VAR)`
//! in `args` (no shell). Node id = ordinal.
//!
//! The format mode is one value for every pod at any time (see
//! [`ValidatedQuorum::format_mode`]): before the first bootstrap all pods are
//! initial voters and get the same `--initial-controllers` list (each finds
//! its own directory id in its own entry); after it, every pod gets
//! `--no-initial-controllers`, or `--initial-controllers-for=<ids>/<list>`
//! while initial voters `<ids>` have not formatted yet (each pod picks its
//! mode by its node id; docs/decisions.md D19). The mode is **not** part of the template: the
//! init container reads it from the ConfigMap (`configMapKeyRef` into
//! `KRAFT_FORMAT_MODE`, expanded in `args`), so the template is identical
//! before and after bootstrap and a freshly bootstrapped quorum has nothing to
//! roll out (a template change would restart every pod, and a single voter
//! cannot be restarted without an outage). Formatting is idempotent, so a pod
//! that re-runs the init container in the other mode leaves its volume alone.
//!
//! The pods run as the distroless image's non-root user 65532 (`runAsUser`,
//! `runAsGroup`, `fsGroup` so the volume is writable by it), with the
//! runtime's default seccomp profile, a read-only root filesystem (the
//! controller writes only to its volume), no privilege escalation and no
//! capabilities (the restricted Pod Security Standard).
//!
//! `updateStrategy: OnDelete`: the operator picks the restart order (leader
//! last). `podManagementPolicy: Parallel`: all initial voters must start
//! together to elect a first leader.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{
            StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
            StatefulSetUpdateStrategy,
        },
        core::v1::{
            Capabilities, ConfigMapKeySelector, ConfigMapVolumeSource, Container, ContainerPort,
            EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector, PersistentVolumeClaim,
            PersistentVolumeClaimSpec, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
            ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext, Volume,
            VolumeMount, VolumeResourceRequirements,
        },
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, ObjectMeta},
        util::intstr::IntOrString,
    },
};

use super::{child_meta, configmap::server_properties, fnv1a_hex};
use crate::{
    crd::{
        ANNOTATION_BOOTSTRAPPED, ANNOTATION_CA_HASH, ANNOTATION_CLUSTER_ID, ANNOTATION_CONFIG_HASH,
        ANNOTATION_INITIAL_VOTERS, ANNOTATION_LISTENER_SECURITY,
        ANNOTATION_UNFORMATTED_INITIAL_VOTERS, CONFIG_DIR, CONTROLLER_HTTP_PORT,
        CONTROLLER_LISTENER_NAME, FORMAT_MODE_ENV, FORMAT_MODE_KEY, LABEL_POD_INDEX,
        SERVER_PROPERTIES_KEY, TLS_DIR,
    },
    kafka_uuid,
    validate::ValidatedQuorum,
};

/// Name of the volume claim template (and of the PVCs: `data-<pod>`).
pub const DATA_VOLUME: &str = "data";
/// Where the data volume is mounted; `metadata.log.dir` is a directory
/// inside it, so a fresh filesystem's `lost+found` never sits in the log dir.
pub const DATA_MOUNT: &str = "/var/lib/kraft";
/// Name of the init container running `kraft-controller format`.
pub const FORMAT_CONTAINER: &str = "format";
/// Name of the main container running `kraft-controller run`.
pub const CONTROLLER_CONTAINER: &str = "controller";
/// The uid and gid the controller runs as: the distroless `nonroot` user the
/// `Dockerfile` sets (`USER 65532:65532`); also the pods' `fsGroup`.
pub const CONTROLLER_UID: i64 = 65532;

fn config_path() -> String {
    format!("{CONFIG_DIR}/{SERVER_PROPERTIES_KEY}")
}

/// Arguments of the init container (`kraft-controller <args>`). The last is
/// the format mode, `$(KRAFT_FORMAT_MODE)`, from the ConfigMap's
/// [`FORMAT_MODE_KEY`] (see [`super::configmap::format_mode_arg`]).
pub fn format_args(q: &ValidatedQuorum) -> Vec<String> {
    vec![
        "format".to_string(),
        "--config".to_string(),
        config_path(),
        "--node-id".to_string(),
        "$(POD_ORDINAL)".to_string(),
        format!("--cluster-id={}", q.cluster_id),
        format!("$({FORMAT_MODE_ENV})"),
    ]
}

/// Arguments of the main container (`kraft-controller <args>`), with Kafka's
/// `--override key=value` for the per-pod properties.
pub fn run_args(q: &ValidatedQuorum) -> Vec<String> {
    vec![
        "run".to_string(),
        "--config".to_string(),
        config_path(),
        "--override".to_string(),
        "node.id=$(POD_ORDINAL)".to_string(),
        "--override".to_string(),
        format!(
            "advertised.listeners={CONTROLLER_LISTENER_NAME}://$(POD_NAME).{}.{}.svc.{}:{}",
            q.service_name, q.namespace, q.cluster_domain, q.listener_port
        ),
    ]
}

fn field_env(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                api_version: None,
            }),
            ..EnvVarSource::default()
        }),
        value: None,
    }
}

fn pod_env() -> Vec<EnvVar> {
    vec![
        field_env("POD_NAME", "metadata.name"),
        field_env(
            "POD_ORDINAL",
            &format!("metadata.labels['{LABEL_POD_INDEX}']"),
        ),
    ]
}

/// The init container's environment: the pod's own variables and the
/// format mode from the ConfigMap (required: a pod never formats without it).
fn format_env(q: &ValidatedQuorum) -> Vec<EnvVar> {
    let mut env = pod_env();
    env.push(EnvVar {
        name: FORMAT_MODE_ENV.to_string(),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: q.name.clone(),
                key: FORMAT_MODE_KEY.to_string(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        value: None,
    });
    env
}

/// Pod-level security: non-root 65532 (the image's user), the volume
/// group-owned by 65532 (`fsGroup`, changed only when its root does not match
/// already, so a large volume is not walked at every start), and the
/// runtime's default seccomp profile.
pub(crate) fn pod_security_context() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(CONTROLLER_UID),
        run_as_group: Some(CONTROLLER_UID),
        fs_group: Some(CONTROLLER_UID),
        fs_group_change_policy: Some("OnRootMismatch".into()),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        ..PodSecurityContext::default()
    }
}

/// Container-level security: no privilege escalation, a read-only root
/// filesystem (writes go to the data volume only), every capability dropped.
pub(crate) fn container_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        ..SecurityContext::default()
    }
}

/// Name of the volume of the controllers' certificate Secret (`spec.tls`).
pub const TLS_VOLUME: &str = "tls";

/// Requests of the controller and `format` containers when
/// `spec.resources` is unset: enough for a small quorum's metadata log, so
/// the scheduler counts it.
pub fn default_resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(BTreeMap::from([
            ("cpu".to_string(), Quantity("100m".into())),
            ("memory".to_string(), Quantity("256Mi".into())),
        ])),
        ..ResourceRequirements::default()
    }
}

/// The identity annotations of the StatefulSet (not of its pod template, so
/// they never restart a pod): cluster id, initial voters, bootstrapped (and,
/// once bootstrapped, the initial voters still unformatted). Read back by
/// `controller::identity` when status is lost.
pub fn identity_annotations(q: &ValidatedQuorum) -> BTreeMap<String, String> {
    let voters = q
        .initial_voters
        .iter()
        .map(|(id, dir)| format!("{id}:{}", kafka_uuid::to_string(*dir)))
        .collect::<Vec<_>>()
        .join(",");
    let mut annotations = BTreeMap::from([
        (ANNOTATION_CLUSTER_ID.to_string(), q.cluster_id.clone()),
        (ANNOTATION_INITIAL_VOTERS.to_string(), voters),
        (
            ANNOTATION_BOOTSTRAPPED.to_string(),
            q.bootstrapped.to_string(),
        ),
        (
            ANNOTATION_LISTENER_SECURITY.to_string(),
            if q.tls_enabled { "SSL" } else { "PLAINTEXT" }.to_string(),
        ),
    ]);
    if q.bootstrapped {
        annotations.insert(
            ANNOTATION_UNFORMATTED_INITIAL_VOTERS.to_string(),
            unformatted_annotation(&q.unformatted_initial_voters),
        );
    }
    annotations
}

/// The value of [`ANNOTATION_UNFORMATTED_INITIAL_VOTERS`]: node ids joined
/// by `,` (`""` for none); read back by
/// `controller::identity::unformatted_initial_voters`.
pub fn unformatted_annotation(ids: &[i32]) -> String {
    ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn mounts(q: &ValidatedQuorum) -> Vec<VolumeMount> {
    let mut m = base_mounts();
    if q.tls_enabled {
        m.push(VolumeMount {
            name: TLS_VOLUME.into(),
            mount_path: TLS_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        });
    }
    m
}

fn base_mounts() -> Vec<VolumeMount> {
    vec![
        VolumeMount {
            name: DATA_VOLUME.into(),
            mount_path: DATA_MOUNT.into(),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "config".into(),
            mount_path: CONFIG_DIR.into(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
    ]
}

fn http_probe(path: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String("http".into()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

/// Builds the StatefulSet with `q.statefulset_replicas` pods.
pub fn build_statefulset(q: &ValidatedQuorum) -> StatefulSet {
    let mut pod_labels: BTreeMap<String, String> = q.pod_template.labels.clone();
    pod_labels.extend(q.labels());
    let mut pod_annotations = q.pod_template.annotations.clone();
    pod_annotations.insert(
        ANNOTATION_CONFIG_HASH.to_string(),
        fnv1a_hex(server_properties(q).as_bytes()),
    );
    if let Some(ca) = &q.ca_hash {
        pod_annotations.insert(ANNOTATION_CA_HASH.to_string(), ca.clone());
    }
    let mut volumes = vec![Volume {
        name: "config".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: q.name.clone(),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }];
    if q.tls_enabled {
        volumes.push(Volume {
            name: TLS_VOLUME.into(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(q.server_secret()),
                // Readable by the owner and fsGroup (the controller's gid) only.
                default_mode: Some(0o440),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
    }

    let format = Container {
        name: FORMAT_CONTAINER.into(),
        image: Some(q.image.clone()),
        command: Some(vec!["kraft-controller".into()]),
        args: Some(format_args(q)),
        env: Some(format_env(q)),
        volume_mounts: Some(mounts(q)),
        security_context: Some(container_security_context()),
        // The controller's requests: an init container's count only while it
        // runs (the pod's request is the larger of the two), and a namespace
        // with a ResourceQuota or LimitRange admits it as it admits the pod.
        resources: Some(q.resources.clone().unwrap_or_else(default_resources)),
        // The last log lines become the termination message, so the operator
        // can tell a cluster id mismatch (never reformatted) from other failures.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };
    let controller = Container {
        name: CONTROLLER_CONTAINER.into(),
        image: Some(q.image.clone()),
        command: Some(vec!["kraft-controller".into()]),
        args: Some(run_args(q)),
        env: Some(pod_env()),
        ports: Some(vec![
            ContainerPort {
                name: Some("controller".into()),
                container_port: q.listener_port,
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            },
            ContainerPort {
                name: Some("http".into()),
                container_port: CONTROLLER_HTTP_PORT,
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            },
        ]),
        readiness_probe: Some(http_probe("/readyz", 5, 3)),
        liveness_probe: Some(http_probe("/healthz", 10, 6)),
        resources: Some(q.resources.clone().unwrap_or_else(default_resources)),
        volume_mounts: Some(mounts(q)),
        security_context: Some(container_security_context()),
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Container::default()
    };

    let mut containers = vec![controller];
    let mut claims = vec![data_claim(q)];
    if let Some(b) = &q.backup {
        containers.push(super::backup::backup_container(q, b));
        claims.push(super::backup::backup_claim(q, b));
    }
    let pod_spec = PodSpec {
        init_containers: Some(vec![format]),
        containers,
        volumes: Some(volumes),
        // The controllers never call the Kubernetes API.
        automount_service_account_token: Some(false),
        node_selector: (!q.pod_template.node_selector.is_empty())
            .then(|| q.pod_template.node_selector.clone()),
        tolerations: (!q.pod_template.tolerations.is_empty())
            .then(|| q.pod_template.tolerations.clone()),
        affinity: q.pod_template.affinity.clone(),
        security_context: Some(pod_security_context()),
        ..PodSpec::default()
    };

    let mut metadata = child_meta(q, &q.name);
    metadata.annotations = Some(identity_annotations(q));
    StatefulSet {
        metadata,
        spec: Some(StatefulSetSpec {
            replicas: Some(q.statefulset_replicas),
            service_name: Some(q.service_name.clone()),
            selector: LabelSelector {
                match_labels: Some(q.selector_labels()),
                match_expressions: None,
            },
            pod_management_policy: Some("Parallel".into()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("OnDelete".into()),
                rolling_update: None,
            }),
            persistent_volume_claim_retention_policy: Some(
                StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: Some(q.storage.on_delete.as_str().into()),
                    when_scaled: Some(q.storage.on_scale_down.as_str().into()),
                },
            ),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(pod_annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod_spec),
            },
            volume_claim_templates: Some(claims),
            ..StatefulSetSpec::default()
        }),
        status: None,
    }
}

/// The data volume claim template: ReadWriteOnce, `spec.storage`.
fn data_claim(q: &ValidatedQuorum) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(DATA_VOLUME.into()),
            labels: Some(q.selector_labels()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: q.storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(q.storage.size.clone()),
                )])),
                limits: None,
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    }
}
