//! The `KraftQuorum` custom resource (`kraft.krabka.io/v1alpha1`, short name
//! `kq`): its spec, its status and the constants shared by every step of the
//! reconciler (group, field manager, label keys, ports, paths).
//!
//! Owns the API types only and the CEL rules the API server enforces on them.
//! It must not do I/O or hold reconcile logic; `crds/kraftquorum.yaml` is
//! generated from these types by `kraft-operator crd` (see `make crds`).

pub mod adopt;

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Affinity, ResourceRequirements, Toleration},
    apimachinery::pkg::apis::meta::v1::Condition,
};
use kube::{CustomResource, CustomResourceExt, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use self::adopt::{AdoptSpec, AdoptVoter, AdoptionPhase};

/// The API group of every resource this operator defines.
pub const GROUP: &str = "kraft.krabka.io";
/// The server-side apply field manager for children and status.
pub const FIELD_MANAGER: &str = "kraft-operator";
/// The finalizer the reconciler puts on every `KraftQuorum`.
pub const FINALIZER: &str = "kraft.krabka.io/cleanup";
/// Default Raft/controller listener port (Kafka's conventional controller port).
pub const DEFAULT_LISTENER_PORT: i32 = 9093;
/// The controller's HTTP port (`/healthz`, `/readyz`, `/metrics`): the
/// operator sets `kraftwerk.http.listener=0.0.0.0:<this>` in every pod's
/// `server.properties`, since the controller's own default (`127.0.0.1:0`)
/// is reachable by no probe (DESIGN 2.1, `server`; docs/decisions.md).
pub const CONTROLLER_HTTP_PORT: i32 = 9100;
/// The controller's key of its HTTP endpoint's address (`IP:PORT`).
pub const HTTP_LISTENER_KEY: &str = "kraftwerk.http.listener";
/// Kafka's listener name for the controller listener (`controller.listener.names`).
pub const CONTROLLER_LISTENER_NAME: &str = "CONTROLLER";
/// Where the metadata log volume is mounted (`metadata.log.dir`).
pub const DATA_DIR: &str = "/var/lib/kraft/data";
/// Where the ConfigMap is mounted.
pub const CONFIG_DIR: &str = "/etc/kraft";
/// Where the controllers' certificate Secret is mounted (`spec.tls`).
pub const TLS_DIR: &str = "/etc/kraft-tls";
/// Secret key: the trusted CA certificates, PEM (`ssl.truststore.location`).
pub const TLS_CA_KEY: &str = "ca.crt";
/// Secret key: the certificate, PEM.
pub const TLS_CERT_KEY: &str = "tls.crt";
/// Secret key: the private key, PKCS#8 PEM.
pub const TLS_PRIVATE_KEY: &str = "tls.key";
/// Secret key: key and certificate in one PEM file (`ssl.keystore.location`, KIP-651).
pub const TLS_KEYSTORE_KEY: &str = "keystore.pem";
/// Secret key of the client Secret: a `--command-config` file for
/// `kraft-controller quorum` (and the `ssl.*` keys a broker needs), paths
/// under [`CLIENT_TLS_DIR`].
pub const TLS_CLIENT_PROPERTIES_KEY: &str = "client.properties";
/// Where `client.properties` expects the client Secret to be mounted.
pub const CLIENT_TLS_DIR: &str = "/etc/kraft-client";
/// The ConfigMap key holding the controller's `server.properties`.
pub const SERVER_PROPERTIES_KEY: &str = "server.properties";
/// The ConfigMap key holding the `format` init container's mode, one
/// argument: `--initial-controllers=<list>` before the first bootstrap,
/// `--no-initial-controllers` after it (see `build::configmap::format_mode_arg`).
/// The init container reads it through [`FORMAT_MODE_ENV`], so the switch at
/// bootstrap changes data, not the pod template: no pod restarts because of it.
pub const FORMAT_MODE_KEY: &str = "format-mode";
/// The init container's environment variable holding [`FORMAT_MODE_KEY`]
/// (`configMapKeyRef`), expanded by Kubernetes as `$(KRAFT_FORMAT_MODE)` in `args`.
pub const FORMAT_MODE_ENV: &str = "KRAFT_FORMAT_MODE";
/// Largest quorum the CRD accepts (`spec.replicas`).
pub const MAX_REPLICAS: i32 = 9;

/// Label: the name of the `KraftQuorum` a child belongs to.
pub const LABEL_INSTANCE: &str = "app.kubernetes.io/instance";
/// Label: always `kraft-controller`.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// Label: always `kraft-operator`.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Pod label the StatefulSet controller sets to the pod's ordinal
/// (Kubernetes ≥ 1.28, `PodIndexLabel`, GA in 1.32).
pub const LABEL_POD_INDEX: &str = "apps.kubernetes.io/pod-index";
/// Pod template annotation: hash of `server.properties`, so a config change is
/// a template change (and a new StatefulSet revision).
pub const ANNOTATION_CONFIG_HASH: &str = "kraft.krabka.io/config-hash";
/// Pod template annotation: fingerprint of the CA that signs the quorum's
/// leaves (with the next CA's after a `+` while a rotation trusts both,
/// `pki::rotation`), so each CA step is a template change (a quorum-aware
/// rolling restart), while a renewed leaf certificate is not (the
/// controllers reload it from disk).
pub const ANNOTATION_CA_HASH: &str = "kraft.krabka.io/ca-hash";
/// KraftQuorum annotation: asks for a rotation of the operator's CA
/// (`pki::rotation`); any value the CA Secret has not rotated for yet
/// starts one (set a new value, e.g. a date, for the next). Ignored with
/// `spec.tls.issuerRef` (cert-manager owns that CA).
pub const ANNOTATION_ROTATE_CA: &str = "kraft.krabka.io/rotate-ca";
/// KraftQuorum annotation: `"true"` freezes reconciliation (Strimzi's
/// `strimzi.io/pause-reconciliation`): no child, membership or certificate
/// is changed; the condition `Paused` says so. Removing it resumes.
pub const ANNOTATION_PAUSE: &str = "kraft.krabka.io/pause-reconciliation";
/// KraftQuorum annotation: asks for one quorum-loss recovery without
/// `spec.recovery.allowQuorumLossRecovery` (issue 26). Any value not yet
/// recorded in `status.recovery.request` allows the next recovery the
/// operator detects; the value is recorded when that recovery starts, so
/// it never allows a second one (set a new value for that).
pub const ANNOTATION_RECOVER_QUORUM_LOSS: &str = "kraft.krabka.io/recover-quorum-loss";
/// StatefulSet annotation: the cluster id, a copy of `status.clusterId` read
/// back when status is lost.
pub const ANNOTATION_CLUSTER_ID: &str = "kraft.krabka.io/cluster-id";
/// StatefulSet annotation: the initial voters, `id:directoryId,…`, a copy of
/// `status.initialVoters` read back when status is lost.
pub const ANNOTATION_INITIAL_VOTERS: &str = "kraft.krabka.io/initial-voters";
/// StatefulSet annotation: `"true"` once the quorum was bootstrapped (a copy
/// of `status.bootstrapped`).
pub const ANNOTATION_BOOTSTRAPPED: &str = "kraft.krabka.io/bootstrapped";
/// StatefulSet annotation: the initial voters (node ids, `,`-separated,
/// ascending; empty for none) not seen formatted when the first leader was
/// elected and not since. They keep formatting with the initial list
/// (docs/decisions.md D19); the set only shrinks, and an absent or malformed
/// value counts as empty (every later pod formats with
/// `--no-initial-controllers`).
pub const ANNOTATION_UNFORMATTED_INITIAL_VOTERS: &str =
    "kraft.krabka.io/unformatted-initial-voters";
/// StatefulSet annotation: the controller listener's security protocol the
/// quorum runs (`SSL` or `PLAINTEXT`), kept across operator upgrades: a
/// running quorum is never rolled from one to the other (a listener speaks
/// one protocol, so a half-rolled quorum has no majority).
pub const ANNOTATION_LISTENER_SECURITY: &str = "kraft.krabka.io/listener-security-protocol";

/// What happens to a controller's volume when its pod goes away for good.
/// Maps onto the StatefulSet's `persistentVolumeClaimRetentionPolicy`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum RetentionPolicy {
    /// Keep the PersistentVolumeClaim (the default: data is never lost by accident).
    #[default]
    Retain,
    /// Delete the PersistentVolumeClaim.
    Delete,
}

impl RetentionPolicy {
    /// The Kubernetes spelling (`Retain` or `Delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetentionPolicy::Retain => "Retain",
            RetentionPolicy::Delete => "Delete",
        }
    }
}

/// Storage of each controller's metadata log (`volumeClaimTemplates: data`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Requested size of each volume, a Kubernetes quantity (e.g. `1Gi`).
    pub size: String,
    /// StorageClass of the volumes; the cluster default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// What happens to the volume of a pod removed by a scale-down.
    #[serde(default)]
    pub on_scale_down: RetentionPolicy,
    /// What happens to the volumes when the KraftQuorum is deleted.
    #[serde(default)]
    pub on_delete: RetentionPolicy,
}

/// The parts of the pod template users need to set.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateSpec {
    /// Node selector of the controller pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations of the controller pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Affinity of the controller pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Extra labels on the controller pods (the operator's own labels win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra annotations on the controller pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A cert-manager issuer (`cert-manager.io/v1` `Issuer` or `ClusterIssuer`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IssuerRef {
    /// The issuer's name.
    pub name: String,
    /// `Issuer` (default, in the quorum's namespace) or `ClusterIssuer`.
    #[serde(default = "default_issuer_kind")]
    pub kind: String,
    /// The issuer's API group, `cert-manager.io` by default.
    #[serde(default = "default_issuer_group")]
    pub group: String,
}

fn default_issuer_kind() -> String {
    "Issuer".into()
}

fn default_issuer_group() -> String {
    "cert-manager.io".into()
}

/// TLS of the controller listener (`spec.tls`): on by default.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TlsSpec {
    /// mTLS on the controller listener (default `true`). `false` keeps the
    /// listener PLAINTEXT: for tests only, anyone who reaches port 9093 can
    /// then change the voter set.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Certificates from this cert-manager issuer (the operator writes
    /// `Certificate` objects) instead of the operator's own CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer_ref: Option<IssuerRef>,
}

impl Default for TlsSpec {
    fn default() -> Self {
        TlsSpec {
            enabled: true,
            issuer_ref: None,
        }
    }
}

fn default_true() -> bool {
    true
}

/// Who may reach the controllers (`spec.networkPolicy`): the operator writes
/// one NetworkPolicy per quorum from it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// Write the NetworkPolicy (default `true`).
    #[serde(default = "default_true_opt", skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Labels of the broker pods allowed to the controller listener; none
    /// when empty. Pods of the quorum's namespace only, unless
    /// `brokerNamespaceLabels` is set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub broker_pod_labels: BTreeMap<String, String>,
    /// Namespace labels where `brokerPodLabels` pods may be (default: the
    /// quorum's namespace only); `{}` means every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_namespace_labels: Option<BTreeMap<String, String>>,
    /// Namespace labels of the monitoring pods allowed to port 9100
    /// (`/metrics`); with `monitoringPodLabels`, both must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring_namespace_labels: Option<BTreeMap<String, String>>,
    /// Pod labels of the monitoring pods allowed to port 9100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring_pod_labels: Option<BTreeMap<String, String>>,
}

fn default_true_opt() -> Option<bool> {
    Some(true)
}

/// A quorum of KRaft controllers. `spec.replicas` is the number of voters.
// clippy reads the repeated `type_ = "integer"` inside separate
// `printcolumn(...)` entries as duplicated attributes; they are not.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Clone, Debug, Deserialize, Serialize, PartialEq)]
#[kube(
    group = "kraft.krabka.io",
    version = "v1alpha1",
    kind = "KraftQuorum",
    namespaced,
    shortname = "kq",
    status = "KraftQuorumStatus",
    doc = "A quorum of KRaft controllers (Apache Kafka's metadata quorum) run by kraft-operator",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Leader", type_ = "integer", json_path = ".status.leaderId"),
    printcolumn(name = "Epoch", type_ = "integer", json_path = ".status.leaderEpoch"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(
    validation = Rule::new("self.replicas >= 1 && self.replicas <= 9").message("replicas must be between 1 and 9"),
    validation = Rule::new("!has(oldSelf.clusterId) || (has(self.clusterId) && self.clusterId == oldSelf.clusterId)").message("clusterId is immutable once set"),
    validation = Rule::new("self.listenerPort == oldSelf.listenerPort").message("listenerPort is immutable: voter endpoints are recorded in the metadata log"),
    validation = Rule::new("self.storage.size == oldSelf.storage.size && has(self.storage.storageClassName) == has(oldSelf.storage.storageClassName) && (!has(self.storage.storageClassName) || self.storage.storageClassName == oldSelf.storage.storageClassName)").message("storage.size and storage.storageClassName are immutable: a StatefulSet's volumeClaimTemplates cannot change"),
    validation = Rule::new("has(self.serviceName) == has(oldSelf.serviceName) && (!has(self.serviceName) || self.serviceName == oldSelf.serviceName)").message("serviceName is immutable: voter endpoints are recorded in the metadata log"),
    validation = Rule::new("has(self.adopt) == has(oldSelf.adopt) && (!has(self.adopt) || self.adopt == oldSelf.adopt)").message("adopt is immutable: it is given when the KraftQuorum is created"),
    validation = Rule::new("!has(self.adopt) || !has(self.clusterId) || self.clusterId == self.adopt.clusterId").message("clusterId and adopt.clusterId must be equal"),
    validation = Rule::new("has(self.backup) == has(oldSelf.backup) && (!has(self.backup) || self.backup == oldSelf.backup)").message("backup is immutable: it is set when the KraftQuorum is created (a StatefulSet's volumeClaimTemplates cannot change)"),
    validation = Rule::new("!has(self.backup) || !self.backup.enabled || has(self.backup.storage)").message("backup.storage is required when backup.enabled is true")
)]
#[serde(rename_all = "camelCase")]
pub struct KraftQuorumSpec {
    /// Number of voters, 1 to 9 (odd numbers tolerate the most failures per pod).
    #[schemars(range(min = 1, max = 9))]
    pub replicas: i32,
    /// Container image holding the `kraft-controller` binary.
    pub image: String,
    /// Kafka cluster id (22-character base64 UUID); generated once when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Volumes of the controllers.
    pub storage: StorageSpec,
    /// Resources of the controller container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Port of the controller listener (Raft and admin RPCs).
    #[serde(default = "default_listener_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub listener_port: i32,
    /// Name of the headless Service; `<name>` of the KraftQuorum when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Extra controller properties appended to `server.properties` (Kafka
    /// config names, e.g. `controller.quorum.election.timeout.ms`). Keys the
    /// operator owns (`node.id`, `process.roles`, listeners, `metadata.log.dir`,
    /// `controller.quorum.*voters`, `controller.quorum.bootstrap.servers`) are rejected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
    /// Pod placement and metadata.
    #[serde(default)]
    pub pod_template: PodTemplateSpec,
    /// TLS of the controller listener; on (mTLS, the operator's CA) by default.
    #[serde(default)]
    pub tls: TlsSpec,
    /// Who may reach the controllers' ports.
    #[serde(default)]
    pub network_policy: NetworkPolicySpec,
    /// Take over the volumes of an existing static quorum and migrate it to
    /// a dynamic one (issue 22); set at creation only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopt: Option<AdoptSpec>,
    /// What the operator does when the quorum lost a majority of its
    /// voters' volumes for good (issue 26; docs/disaster-recovery.md).
    #[serde(default)]
    pub recovery: RecoverySpec,
    /// Scheduled backups of the metadata (issue 26, decision D17): a
    /// sidecar in each controller pod copies the latest snapshot to a
    /// volume of its own. Set at creation only (a StatefulSet's
    /// volumeClaimTemplates cannot change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backup: Option<BackupSpec>,
}

/// Shortest `spec.backup.everySeconds` the CRD accepts (s).
pub const MIN_BACKUP_EVERY_SECONDS: i64 = 60;
/// Default `spec.backup.everySeconds` (s): one hour, Kafka's default
/// `metadata.log.max.snapshot.interval.ms`, so a round rarely finds the
/// same snapshot twice nor misses one.
pub const DEFAULT_BACKUP_EVERY_SECONDS: i64 = 3600;
/// Default `spec.backup.keep`: a day of hourly copies.
pub const DEFAULT_BACKUP_KEEP: i32 = 24;

/// Scheduled backups (`spec.backup`, issue 26, decision D17): with
/// `enabled`, each controller pod gets a `backup` container running
/// `kraft-controller snapshot export --output-dir` in its loop mode, which
/// copies the latest committed snapshot (Kafka's `.checkpoint` format) to
/// the pod's own `backup-<pod>` volume every `everySeconds` and keeps the
/// newest `keep` copies.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Run the backup sidecar (default `false`).
    #[serde(default)]
    pub enabled: bool,
    /// Seconds between two copies (at least 60, default 3600).
    #[serde(default = "default_backup_every_seconds")]
    #[schemars(range(min = 60))]
    pub every_seconds: i64,
    /// How many copies each volume keeps, newest first (at least 1,
    /// default 24).
    #[serde(default = "default_backup_keep")]
    #[schemars(range(min = 1))]
    pub keep: i32,
    /// The backup volumes, one per pod (`backup-<pod>`); required when
    /// `enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<BackupStorageSpec>,
}

fn default_backup_every_seconds() -> i64 {
    DEFAULT_BACKUP_EVERY_SECONDS
}

fn default_backup_keep() -> i32 {
    DEFAULT_BACKUP_KEEP
}

/// The backup volumes (`spec.backup.storage`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorageSpec {
    /// Requested size of each backup volume, a Kubernetes quantity (e.g.
    /// `1Gi`): `keep` copies of the latest snapshot must fit.
    pub size: String,
    /// StorageClass of the backup volumes; the cluster default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// Shortest `spec.recovery.quorumLossAfterSeconds` the CRD accepts (s).
pub const MIN_QUORUM_LOSS_AFTER_SECONDS: i64 = 60;
/// Default `spec.recovery.quorumLossAfterSeconds` (s): 300, the default
/// `tolerationSeconds` of Kubernetes' `node.kubernetes.io/unreachable` and
/// `not-ready` taints, so that pods of a node that is only unreachable are
/// evicted and rescheduled before the quorum counts as lost; far above a
/// KRaft election (`controller.quorum.election.timeout.ms`, 1000 ms) and
/// the operator's own wait for a voter change (`PENDING_TIMEOUT_MS`, 120 s).
pub const DEFAULT_QUORUM_LOSS_AFTER_SECONDS: i64 = 300;

/// Recovery from the loss of a majority of voters (`spec.recovery`, issue 26).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecoverySpec {
    /// Let the operator bring the quorum back from its one surviving volume
    /// (`kraft-controller recover`, then the lost voters re-added with new
    /// directory ids) when a majority of the voters' volumes are gone and
    /// no leader was seen for `quorumLossAfterSeconds`. Records that only
    /// the lost voters held are lost. Off by default: the operator then
    /// only reports the condition `QuorumLost` and touches nothing.
    #[serde(default)]
    pub allow_quorum_loss_recovery: bool,
    /// How long (s, at least 60) the quorum must have had no leader before
    /// the loss of a majority of volumes counts as a quorum loss.
    #[serde(default = "default_quorum_loss_after_seconds")]
    #[schemars(range(min = 60))]
    pub quorum_loss_after_seconds: i64,
}

impl Default for RecoverySpec {
    fn default() -> Self {
        RecoverySpec {
            allow_quorum_loss_recovery: false,
            quorum_loss_after_seconds: DEFAULT_QUORUM_LOSS_AFTER_SECONDS,
        }
    }
}

fn default_quorum_loss_after_seconds() -> i64 {
    DEFAULT_QUORUM_LOSS_AFTER_SECONDS
}

fn default_listener_port() -> i32 {
    DEFAULT_LISTENER_PORT
}

/// A voter as the quorum reports it (DescribeQuorum, KIP-853).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct VoterStatus {
    /// `node.id` (equals the pod ordinal).
    pub node_id: i32,
    /// Directory id, Kafka's base64 UUID notation.
    pub directory_id: String,
    /// Controller endpoint `host:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// High watermark minus this replica's log end offset (records).
    /// Refreshed about every 30 s on a steady quorum (5 s while the operator
    /// waits), not at every pass.
    #[serde(default)]
    pub lag: i64,
    /// Whether the replica is caught up with the leader.
    #[serde(default)]
    pub caught_up: bool,
    /// While this voter's controller is not running: the last line of its
    /// termination message (the `kraft-controller run` stop line, e.g. a full
    /// volume naming its free space, or a disk refused at start), from the
    /// pod's `lastState.terminated.message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_message: Option<String>,
}

/// A voter of the initial voter set, with the directory id generated before
/// bootstrap and handed to `kraft-controller format --initial-controllers`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InitialVoter {
    /// `node.id` (pod ordinal).
    pub node_id: i32,
    /// Directory id, Kafka's base64 UUID notation.
    pub directory_id: String,
}

/// What kind of membership change is in flight.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ChangeKind {
    /// AddRaftVoter (api key 80).
    AddVoter,
    /// RemoveRaftVoter (api key 81).
    RemoveVoter,
}

/// The membership change the operator has sent and not yet seen done.
/// Written to status before the request is sent (DESIGN 3.2).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PendingChange {
    /// AddVoter or RemoveVoter.
    pub kind: ChangeKind,
    /// The voter's node id.
    pub node_id: i32,
    /// The voter's directory id (Kafka base64 UUID).
    pub directory_id: String,
    /// RFC 3339 time the change was recorded.
    pub since: String,
}

/// Observed state of a KraftQuorum.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KraftQuorumStatus {
    /// Ready, Progressing and Degraded, with reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The cluster id in use (from spec or generated); the record of identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// True once a leader was ever observed: bootstrap flags are never used again.
    #[serde(default)]
    pub bootstrapped: bool,
    /// Controller pods (the StatefulSet's replicas).
    #[serde(default)]
    pub replicas: i32,
    /// Ready controller pods.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Label selector of the pods, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// Current leader's node id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_id: Option<i32>,
    /// Current leader epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_epoch: Option<i32>,
    /// Leader's high watermark (offset). Refreshed about every 30 s on a
    /// steady quorum (5 s while the operator waits), not at every pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_watermark: Option<i64>,
    /// The voter set as last observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voters: Vec<VoterStatus>,
    /// Observers (fetching, not voting) as last observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observers: Vec<VoterStatus>,
    /// The initial voters, generated before bootstrap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initial_voters: Vec<InitialVoter>,
    /// The membership change in flight, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_change: Option<PendingChange>,
    /// Node ids of controllers removed from the voters whose KIP-919
    /// registration the quorum still holds. Such a registration stays
    /// because unregistering needs UnregisterController (KIP-1312), which
    /// the controllers serve only from Kafka 4.4 on and at
    /// `metadata.version` 4.4-IV2 or later; meanwhile its supported
    /// `metadata.version` range blocks upgrades. The operator unregisters a
    /// controller right after removing it when the quorum allows it, lists
    /// it here otherwise, and tries again on every steady pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_registrations: Vec<i32>,
    /// What Kafka brokers need to use this quorum as their controllers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brokers: Option<BrokerConnection>,
    /// With `spec.adopt`: where the migration of the static quorum stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adoption_phase: Option<AdoptionPhase>,
    /// The record quorum-loss detection and recovery keep (issue 26).
    #[serde(default, skip_serializing_if = "RecoveryStatus::is_empty")]
    pub recovery: RecoveryStatus,
}

/// A voter's volume as recorded while it was a caught-up voter: the
/// PersistentVolumeClaim's `metadata.uid`. A claim that is missing, or
/// whose uid differs (deleted and re-created empty by the StatefulSet), is
/// a lost volume. Recorded once per (node id, directory id): a voter whose
/// volume was replaced (a new directory id, KIP-853) is recorded again.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct VoterVolume {
    /// The voter's `node.id` (pod ordinal).
    pub node_id: i32,
    /// The voter's directory id (Kafka base64 UUID) when recorded.
    pub directory_id: String,
    /// The uid of its claim `data-<statefulset>-<ordinal>`.
    pub claim_uid: String,
}

/// A step of the operator's quorum-loss recovery, recorded in
/// `status.recovery.phase` before it is taken.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum RecoveryPhase {
    /// The StatefulSet is scaled to 0, so no controller holds a volume.
    Stopping,
    /// A Job runs `kraft-controller recover` on the survivor's volume.
    Recovering,
    /// The StatefulSet is back at its size: the survivor elects itself and
    /// the others come back as observers on new volumes.
    Starting,
}

/// `status.recovery`: quorum-loss detection and the recovery in progress.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryStatus {
    /// Each voter's volume, recorded while it was a caught-up voter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<VoterVolume>,
    /// RFC 3339 time since which no controller answered as leader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_leader_since: Option<String>,
    /// The recovery step in progress, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RecoveryPhase>,
    /// The node id whose volume the recovery keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survivor: Option<i32>,
    /// The last `kraft.krabka.io/recover-quorum-loss` value a recovery
    /// started for (it allows no other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

impl RecoveryStatus {
    /// Nothing recorded (left out of the status object).
    pub fn is_empty(&self) -> bool {
        self == &RecoveryStatus::default()
    }
}

/// How Apache Kafka brokers attach to the quorum (`status.brokers`): the same
/// settings as the `<name>-brokers` ConfigMap, for humans and tools.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BrokerConnection {
    /// The ConfigMap holding the brokers' settings as the `apache/kafka`
    /// image's environment variables (`CLUSTER_ID`, `KAFKA_*`), for `envFrom`.
    pub config_map: String,
    /// The brokers' `controller.quorum.bootstrap.servers`: `host:port` of
    /// every controller pod of `spec.replicas`, comma-separated.
    pub bootstrap_servers: String,
    /// The brokers' `controller.listener.names` (`CONTROLLER`).
    pub listener_name: String,
    /// The security protocol of that listener: `SSL` (mTLS) or `PLAINTEXT`.
    pub security_protocol: String,
    /// The Secret with the brokers' client certificate, to mount at
    /// `/etc/kraft-client` (TLS only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

/// The CRD as YAML, exactly what `crds/kraftquorum.yaml` must hold.
///
/// # Errors
/// Only if serde_yaml cannot serialize the CRD (a bug).
pub fn crd_yaml() -> Result<String, serde_yaml::Error> {
    let crd = KraftQuorum::crd();
    let body = serde_yaml::to_string(&crd)?;
    Ok(format!(
        "# Generated by `kraft-operator crd` (make crds). Do not edit.\n{body}"
    ))
}
