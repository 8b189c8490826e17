//! Validation: a `KraftQuorum` (spec and the identity recorded in its status)
//! → [`ValidatedQuorum`], the only input of the build step.
//!
//! Pure: no I/O, no clock, no randomness. It must not decide membership (that
//! is the planner's) nor generate identity (the reconciler does that, and
//! writes it to status, before anything is validated). An error here is an
//! invalid spec: the reconciler reports it and waits for the spec to change.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::ResourceRequirements, apimachinery::pkg::apis::meta::v1::OwnerReference,
};
use kraft_common::Endpoint;
use kube::{Resource, ResourceExt};
use uuid::Uuid;

use crate::{
    crd::{
        CONTROLLER_HTTP_PORT, CONTROLLER_LISTENER_NAME, KraftQuorum, LABEL_INSTANCE,
        LABEL_MANAGED_BY, LABEL_NAME, MAX_REPLICAS, PodTemplateSpec, StorageSpec,
    },
    kafka_uuid,
};

/// Kubernetes' default cluster DNS domain.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// Longest KraftQuorum name: a StatefulSet's pods get the label
/// `controller-revision-hash=<name>-<10 chars>`, which must fit in 63.
pub const MAX_NAME_LEN: usize = 52;

/// Controller properties the operator owns; `spec.config` may not set them.
pub const RESERVED_KEYS: &[&str] = &[
    "process.roles",
    "node.id",
    "listeners",
    "advertised.listeners",
    "controller.listener.names",
    "listener.security.protocol.map",
    "metadata.log.dir",
    "log.dirs",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    // The probes and the NetworkPolicy need it on CONTROLLER_HTTP_PORT.
    crate::crd::HTTP_LISTENER_KEY,
];

/// Keys (and key prefixes, ending in `.`) `spec.config` may not set while
/// `spec.tls.enabled`: the operator owns the listener's TLS and who is a
/// super user (the certificates it issues are the principals).
pub const RESERVED_TLS_KEYS: &[&str] = &[
    "ssl.",
    "listener.name.",
    "authorizer.class.name",
    "super.users",
    "allow.everyone.if.no.acl.found",
    "ssl.principal.mapping.rules",
];

fn reserved_with_tls(key: &str) -> bool {
    RESERVED_TLS_KEYS.iter().any(|r| {
        if r.ends_with('.') {
            key.starts_with(r)
        } else {
            key == *r
        }
    })
}

/// Why a KraftQuorum cannot be built. Each is a spec (or identity) problem
/// that only a change of the resource can fix.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The resource has no namespace (the CRD is namespaced; a bug upstream).
    #[error("kraftquorum {0} has no namespace")]
    NoNamespace(String),
    /// The resource has no uid yet (not read from the API server).
    #[error("kraftquorum {0} has no uid; it must come from the api server")]
    NoUid(String),
    /// `metadata.name` too long for the pods' labels.
    #[error(
        "name {name:?} is {len} characters; at most {MAX_NAME_LEN} fit the statefulset's pod labels"
    )]
    NameTooLong { name: String, len: usize },
    /// `spec.replicas` outside 1..=9.
    #[error("spec.replicas is {0}; it must be between 1 and {MAX_REPLICAS}")]
    Replicas(i32),
    /// `spec.image` empty.
    #[error("spec.image is empty; set the image holding kraft-controller")]
    NoImage,
    /// `spec.storage.size` empty.
    #[error("spec.storage.size is empty; set a quantity such as 1Gi")]
    NoStorageSize,
    /// `spec.backup` enabled but unusable: the field and the bad value.
    #[error("spec.backup.{field} is {value}: {expected}")]
    Backup {
        /// The field under `spec.backup`.
        field: &'static str,
        /// The value given.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// `spec.listenerPort` not a usable port.
    #[error(
        "spec.listenerPort is {0}; it must be 1-65535 and not {CONTROLLER_HTTP_PORT} (the controller's http port)"
    )]
    ListenerPort(i32),
    /// `spec.serviceName` not a DNS-1035 label.
    #[error(
        "spec.serviceName {0:?} is not a dns label (lower-case letters, digits, '-', at most 63)"
    )]
    ServiceName(String),
    /// `spec.config` sets a key the operator owns.
    #[error("spec.config sets {0:?}, which the operator owns; remove it")]
    ReservedConfigKey(String),
    /// A cluster id that is not Kafka's 22-character base64 UUID.
    #[error("cluster id {0:?} is not a kafka uuid (22 characters of url-safe base64)")]
    ClusterId(String),
    /// `spec.clusterId` differs from the identity in status.
    #[error(
        "spec.clusterId is {spec:?} but the quorum's volumes were formatted with {status:?}; a cluster id never changes"
    )]
    ClusterIdMismatch { spec: String, status: String },
    /// No cluster id in status: identity must be written before validation.
    #[error("status.clusterId is not set; identity is generated before validation")]
    IdentityMissing,
    /// Initial voters in status that are not 0..n-1 with valid directory ids.
    #[error("status.initialVoters is malformed: {0}")]
    InitialVoters(String),
    /// `spec.adopt` disagrees with the identity recorded in status.
    #[error("spec.adopt.clusterId is {adopt:?} but the quorum's identity is {status:?}")]
    AdoptClusterId { adopt: String, status: String },
}

/// How `kraft-controller format` bootstraps a pod's volume (DESIGN 2.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatMode {
    /// Before the first bootstrap: every initial voter gets the same list
    /// `id@host:port:directoryId,…`; a node's own directory id is the one in
    /// its own entry.
    InitialControllers(String),
    /// After bootstrap, while some initial voters were never seen formatted:
    /// those node ids (ascending) still format with the initial list, every
    /// other pod as with [`Self::NoInitialControllers`]
    /// (`format --initial-controllers-for=<ids>/<list>`, docs/decisions.md D19).
    InitialControllersFor(Vec<i32>, String),
    /// After bootstrap (and for every pod not in the initial set): start as an
    /// observer; become a voter only through AddRaftVoter.
    NoInitialControllers,
    /// While a static quorum is adopted (`spec.adopt`, issue 22): write
    /// nothing, stop the pod unless its volume already holds this cluster id
    /// and node id (`format --expect-formatted`).
    ExpectFormatted,
}

/// A KraftQuorum that passed validation, with everything the build step needs.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidatedQuorum {
    /// `metadata.name`; also the StatefulSet's, ConfigMap's and PDB's name.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// Owner reference (controller=true) every child carries.
    pub owner: OwnerReference,
    /// Desired voters (`spec.replicas`).
    pub replicas: i32,
    /// Pods the StatefulSet should run now (decided by the reconciler: the
    /// initial voter count before bootstrap, then the planner's choice).
    pub statefulset_replicas: i32,
    /// Voters the PodDisruptionBudget protects (live voter set, or the
    /// initial voters before bootstrap).
    pub live_voters: i32,
    /// Controller image.
    pub image: String,
    /// Kafka cluster id (from status, where identity is recorded).
    pub cluster_id: String,
    /// Headless Service name.
    pub service_name: String,
    /// Controller listener port.
    pub listener_port: i32,
    /// Cluster DNS domain (`cluster.local` unless configured).
    pub cluster_domain: String,
    /// Volumes.
    pub storage: StorageSpec,
    /// Controller container resources.
    pub resources: Option<ResourceRequirements>,
    /// Extra controller properties (validated: no reserved key).
    pub config: BTreeMap<String, String>,
    /// Pod placement bits.
    pub pod_template: PodTemplateSpec,
    /// Whether a leader was ever observed.
    pub bootstrapped: bool,
    /// Initial voters `(node id, directory id)`, ordered by node id.
    pub initial_voters: Vec<(i32, Uuid)>,
    /// Initial voters (node ids, ascending) not yet seen formatted when the
    /// first leader was elected, and still not since: the StatefulSet's
    /// [`crate::crd::ANNOTATION_UNFORMATTED_INITIAL_VOTERS`], set by the
    /// reconciler after validation (empty before bootstrap and when the
    /// annotation is absent or malformed). It only shrinks.
    pub unformatted_initial_voters: Vec<i32>,
    /// `spec.tls.enabled`: the listener is SSL with `ssl.client.auth=required`.
    pub tls_enabled: bool,
    /// cert-manager issuer of the certificates (`spec.tls.issuerRef`); the
    /// operator's own CA when `None`.
    pub issuer_ref: Option<crate::crd::IssuerRef>,
    /// Fingerprint of the CA the controllers trust, set by the reconciler once
    /// the certificates exist (a pod template annotation: a new CA rolls the
    /// pods, a renewed leaf does not). `None` before, and without TLS.
    pub ca_hash: Option<String>,
    /// `spec.networkPolicy`.
    pub network_policy: crate::crd::NetworkPolicySpec,
    /// Labels of the operator's own pods and its namespace, for the
    /// NetworkPolicy (set by the reconciler from its configuration).
    pub operator_peer: Option<OperatorPeer>,
    /// With `spec.adopt`: the phase of the static quorum's migration
    /// (`status.adoptionPhase`); `None` for a quorum the operator created.
    pub adoption_phase: Option<crate::crd::AdoptionPhase>,
    /// `spec.backup` when enabled (checked); `None` when absent or disabled.
    pub backup: Option<ValidBackup>,
}

/// An enabled `spec.backup`, checked (decision D17).
#[derive(Clone, Debug, PartialEq)]
pub struct ValidBackup {
    /// Seconds between two copies (at least 60).
    pub every_seconds: i64,
    /// Copies each volume keeps (at least 1).
    pub keep: i32,
    /// The backup volumes.
    pub storage: crate::crd::BackupStorageSpec,
}

/// Checks `spec.backup`: `None` when absent or not enabled.
///
/// Errors: [`Error::Backup`] naming the field and its value.
fn validate_backup(spec: Option<&crate::crd::BackupSpec>) -> Result<Option<ValidBackup>, Error> {
    let Some(b) = spec.filter(|b| b.enabled) else {
        return Ok(None);
    };
    if b.every_seconds < crate::crd::MIN_BACKUP_EVERY_SECONDS {
        return Err(Error::Backup {
            field: "everySeconds",
            value: b.every_seconds.to_string(),
            expected: "at least 60",
        });
    }
    if b.keep < 1 {
        return Err(Error::Backup {
            field: "keep",
            value: b.keep.to_string(),
            expected: "at least 1",
        });
    }
    let storage = match &b.storage {
        Some(s) if !s.size.trim().is_empty() => s.clone(),
        other => {
            return Err(Error::Backup {
                field: "storage.size",
                value: format!(
                    "{:?}",
                    other.as_ref().map(|s| s.size.as_str()).unwrap_or("")
                ),
                expected: "a quantity such as 1Gi, required when enabled",
            });
        }
    };
    Ok(Some(ValidBackup {
        every_seconds: b.every_seconds,
        keep: b.keep,
        storage,
    }))
}

/// Where the operator runs, so the NetworkPolicy lets it reach port 9093.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorPeer {
    /// The operator's namespace.
    pub namespace: String,
    /// Labels of the operator's pods.
    pub pod_labels: BTreeMap<String, String>,
}

impl ValidatedQuorum {
    /// The labels every child carries and selects on.
    pub fn selector_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (LABEL_NAME.to_string(), "kraft-controller".to_string()),
            (LABEL_INSTANCE.to_string(), self.name.clone()),
        ])
    }

    /// Selector labels plus `managed-by`.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut l = self.selector_labels();
        l.insert(LABEL_MANAGED_BY.to_string(), "kraft-operator".to_string());
        l
    }

    /// The label selector string (`k=v,k=v`) of the pods.
    pub fn selector_string(&self) -> String {
        self.selector_labels()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Pod name of `ordinal`.
    pub fn pod_name(&self, ordinal: i32) -> String {
        format!("{}-{ordinal}", self.name)
    }

    /// Name of the Secret holding the quorum's CA (certificate and key).
    pub fn ca_secret(&self) -> String {
        format!("{}-ca", self.name)
    }

    /// Name of the Secret the controller pods mount (their certificate).
    pub fn server_secret(&self) -> String {
        format!("{}-tls", self.name)
    }

    /// Name of the Secret with the operator's admin client certificate.
    pub fn operator_secret(&self) -> String {
        format!("{}-operator-tls", self.name)
    }

    /// Name of the Secret broker pods mount: a client identity of the quorum.
    pub fn client_secret(&self) -> String {
        format!("{}-client-tls", self.name)
    }

    /// Stable DNS name of pod `ordinal` through the headless Service.
    pub fn pod_host(&self, ordinal: i32) -> String {
        format!(
            "{}.{}.{}.svc.{}",
            self.pod_name(ordinal),
            self.service_name,
            self.namespace,
            self.cluster_domain
        )
    }

    /// `host:port` of pod `ordinal`'s controller listener: the endpoint the
    /// voter set records for that node.
    pub fn endpoint(&self, ordinal: i32) -> String {
        self.controller_endpoint(ordinal).address()
    }

    /// Pod `ordinal`'s `CONTROLLER` listener at its stable DNS name: what
    /// AddRaftVoter carries for that node (KIP-853 `Listener`).
    pub fn controller_endpoint(&self, ordinal: i32) -> Endpoint {
        Endpoint::new(
            CONTROLLER_LISTENER_NAME,
            self.pod_host(ordinal),
            // validate() keeps the port in 1..=65535.
            u16::try_from(self.listener_port).unwrap_or_default(),
        )
    }

    /// The mode `kraft-controller format` runs in for new volumes now: the
    /// initial voter list before the first bootstrap, and
    /// `--no-initial-controllers` after it (so a wiped pod never starts a
    /// second quorum, DESIGN 2.4), except for initial voters never seen
    /// formatted, which keep the list until they are (docs/decisions.md D19).
    pub fn format_mode(&self) -> FormatMode {
        if self.is_adopting() {
            return FormatMode::ExpectFormatted;
        }
        if self.bootstrapped && self.unformatted_initial_voters.is_empty() {
            return FormatMode::NoInitialControllers;
        }
        let list = self
            .initial_voters
            .iter()
            .map(|(id, dir)| {
                format!(
                    "{id}@{}:{}:{}",
                    self.pod_host(*id),
                    self.listener_port,
                    kafka_uuid::to_string(*dir)
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        if self.bootstrapped {
            return FormatMode::InitialControllersFor(
                self.unformatted_initial_voters.clone(),
                list,
            );
        }
        FormatMode::InitialControllers(list)
    }

    /// Whether an adopted static quorum is still being migrated (phase
    /// before [`crate::crd::AdoptionPhase::Adopted`]): its volumes are
    /// checked, never formatted, and its pods are the adopted voters.
    pub fn is_adopting(&self) -> bool {
        self.adoption_phase
            .is_some_and(|p| p < crate::crd::AdoptionPhase::Adopted)
    }

    /// `controller.quorum.voters` of an adopted quorum in phase
    /// `StaticQuorum` (`ID@HOST:PORT,…` of the initial voters, Kafka's static
    /// quorum config); `None` otherwise, when the pods get
    /// [`Self::bootstrap_servers`] instead (KAFKA-16538).
    pub fn static_voters(&self) -> Option<String> {
        (self.adoption_phase == Some(crate::crd::AdoptionPhase::StaticQuorum)).then(|| {
            self.initial_voters
                .iter()
                .map(|(id, _)| format!("{id}@{}", self.endpoint(*id)))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// `controller.quorum.bootstrap.servers`: the initial voters' endpoints.
    /// Fixed at bootstrap so that scaling never changes the config (and never
    /// forces a rolling restart); any reachable voter or observer redirects a
    /// fetcher to the leader.
    pub fn bootstrap_servers(&self) -> String {
        self.initial_voters
            .iter()
            .map(|(id, _)| self.endpoint(*id))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Validates `kq` into a [`ValidatedQuorum`].
///
/// `current_statefulset_replicas` is the StatefulSet's `spec.replicas` if it
/// exists; after bootstrap it is kept (the planner moves it), before bootstrap
/// the StatefulSet runs exactly the initial voters.
///
/// # Errors
/// An [`Error`] naming the bad field and value.
pub fn validate(
    kq: &KraftQuorum,
    current_statefulset_replicas: Option<i32>,
    cluster_domain: &str,
) -> Result<ValidatedQuorum, Error> {
    let name = kq.name_any();
    let namespace = kq
        .namespace()
        .ok_or_else(|| Error::NoNamespace(name.clone()))?;
    if kq.uid().is_none() {
        return Err(Error::NoUid(name));
    }
    let owner = kq
        .controller_owner_ref(&())
        .ok_or_else(|| Error::NoUid(name.clone()))?;
    if name.len() > MAX_NAME_LEN {
        return Err(Error::NameTooLong {
            len: name.len(),
            name,
        });
    }
    let spec = &kq.spec;
    if !(1..=MAX_REPLICAS).contains(&spec.replicas) {
        return Err(Error::Replicas(spec.replicas));
    }
    if spec.image.trim().is_empty() {
        return Err(Error::NoImage);
    }
    if spec.storage.size.trim().is_empty() {
        return Err(Error::NoStorageSize);
    }
    let backup = validate_backup(spec.backup.as_ref())?;
    if !(1..=65535).contains(&spec.listener_port) || spec.listener_port == CONTROLLER_HTTP_PORT {
        return Err(Error::ListenerPort(spec.listener_port));
    }
    let service_name = spec.service_name.clone().unwrap_or_else(|| name.clone());
    if !is_dns_label(&service_name) {
        return Err(Error::ServiceName(service_name));
    }
    if let Some(key) = spec
        .config
        .keys()
        .find(|k| RESERVED_KEYS.contains(&k.as_str()) || (spec.tls.enabled && reserved_with_tls(k)))
    {
        return Err(Error::ReservedConfigKey(key.clone()));
    }
    if let Some(id) = &spec.cluster_id {
        kafka_uuid::parse(id).map_err(|_| Error::ClusterId(id.clone()))?;
    }

    let status = kq.status.clone().unwrap_or_default();
    let cluster_id = status.cluster_id.clone().ok_or(Error::IdentityMissing)?;
    kafka_uuid::parse(&cluster_id).map_err(|_| Error::ClusterId(cluster_id.clone()))?;
    if let Some(id) = &spec.cluster_id
        && *id != cluster_id
    {
        return Err(Error::ClusterIdMismatch {
            spec: id.clone(),
            status: cluster_id,
        });
    }
    let mut initial_voters = Vec::with_capacity(status.initial_voters.len());
    for (i, v) in status.initial_voters.iter().enumerate() {
        if usize::try_from(v.node_id).ok() != Some(i) {
            return Err(Error::InitialVoters(format!(
                "entry {i} has node id {}, expected {i}",
                v.node_id
            )));
        }
        let dir =
            kafka_uuid::parse(&v.directory_id).map_err(|e| Error::InitialVoters(e.to_string()))?;
        initial_voters.push((v.node_id, dir));
    }
    if initial_voters.is_empty() {
        return Err(Error::InitialVoters("no initial voters".into()));
    }
    let initial_count = i32::try_from(initial_voters.len())
        .map_err(|_| Error::InitialVoters("too many initial voters".into()))?;

    if let Some(adopt) = &spec.adopt
        && adopt.cluster_id != cluster_id
    {
        return Err(Error::AdoptClusterId {
            adopt: adopt.cluster_id.clone(),
            status: cluster_id,
        });
    }
    let adoption_phase = spec.adopt.as_ref().and(status.adoption_phase);
    let adopting = adoption_phase.is_some_and(|p| p < crate::crd::AdoptionPhase::Adopted);
    let statefulset_replicas = if adopting {
        // The adopted voters' pods, no more, until the migration is done.
        initial_count
    } else if status.bootstrapped {
        current_statefulset_replicas.unwrap_or(spec.replicas)
    } else {
        initial_count
    };
    let live_voters = if status.bootstrapped && !status.voters.is_empty() {
        i32::try_from(status.voters.len()).unwrap_or(MAX_REPLICAS)
    } else {
        initial_count
    };

    Ok(ValidatedQuorum {
        name,
        namespace,
        owner,
        replicas: spec.replicas,
        statefulset_replicas,
        live_voters,
        image: spec.image.clone(),
        cluster_id,
        service_name,
        listener_port: spec.listener_port,
        cluster_domain: cluster_domain.to_string(),
        storage: spec.storage.clone(),
        resources: spec.resources.clone(),
        config: spec.config.clone(),
        pod_template: spec.pod_template.clone(),
        bootstrapped: status.bootstrapped,
        initial_voters,
        unformatted_initial_voters: Vec::new(),
        tls_enabled: spec.tls.enabled,
        issuer_ref: spec.tls.issuer_ref.clone(),
        ca_hash: None,
        network_policy: spec.network_policy.clone(),
        operator_peer: None,
        adoption_phase,
        backup,
    })
}

/// RFC 1035 label: lower-case alphanumerics and '-', starting with a letter,
/// ending alphanumeric, at most 63 characters.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
