//! The reconciler (DESIGN 3.2): for each `KraftQuorum`, one level-triggered,
//! idempotent pass: identity → fetch → validate → build and apply children →
//! observe the quorum → plan → act (at most one change) → status.
//!
//! Owns the I/O of a pass (Kubernetes API calls through one field manager,
//! admin RPCs through [`QuorumClient`], Events) and the error policy: an
//! invalid spec waits for a change, anything else requeues with backoff. It
//! must not make decisions the pure steps make: validation is
//! [`crate::validate`], object shapes are [`crate::build`], membership is
//! [`crate::planner`].

pub mod identity;
pub mod observe;
pub mod status;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        core::v1::{ConfigMap, ObjectReference, Pod, Service},
        policy::v1::PodDisruptionBudget,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
    runtime::{
        Controller,
        controller::Action,
        events::{Event as KubeEvent, EventType, Recorder, Reporter},
        finalizer::{Error as FinalizerError, Event as Finalizer, finalizer},
        reflector::ObjectRef,
        watcher,
    },
};
use serde::{Serialize, de::DeserializeOwned};
use tracing::{info, instrument, warn};
use uuid::Uuid;

use crate::{
    build::{
        configmap::build_configmap, pdb::build_pdb, service::build_service,
        statefulset::build_statefulset,
    },
    crd::{
        ChangeKind, FIELD_MANAGER, FINALIZER, KraftQuorum, KraftQuorumStatus, LABEL_INSTANCE,
        LABEL_MANAGED_BY, PendingChange,
    },
    kafka_uuid,
    metrics::Metrics,
    planner::{self, Action as Plan, WaitReason},
    quorum::{QuorumClient, QuorumError},
    validate::{ValidatedQuorum, validate},
};
use status::Outcome;

/// Requeue after a pass that found nothing to do.
pub const STEADY_REQUEUE: Duration = Duration::from_secs(30);
/// Requeue while work is in progress (waiting for pods, observers, changes).
pub const BUSY_REQUEUE: Duration = Duration::from_secs(5);
/// First and largest delay of the error backoff.
pub const BACKOFF_MIN: Duration = Duration::from_secs(5);
/// Largest error backoff.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// Errors of a reconcile pass (anything but an invalid spec, which is
/// reported in status and waits for a change). All are requeued with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed.
    #[error("cannot {action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<FinalizerError<Error>>),
    /// The resource has no namespace.
    #[error("kraftquorum {0} has no namespace")]
    NoNamespace(String),
    /// Serializing an object for server-side apply failed (a bug).
    #[error("cannot serialize {what}: {source}")]
    Serialize {
        what: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// The metrics label for this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Kube { .. } => "kube",
            Error::Finalizer(_) => "finalizer",
            Error::NoNamespace(_) => "no_namespace",
            Error::Serialize { .. } => "serialize",
        }
    }
}

fn kube_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Kube { action, source }
}

/// Shared state of the reconciler.
pub struct Context<Q> {
    /// Kubernetes client.
    pub client: Client,
    /// Admin RPCs to the controllers.
    pub quorum: Q,
    /// Publishes Events on the KraftQuorum.
    pub recorder: Recorder,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Cluster DNS domain for pod names (`cluster.local`).
    pub cluster_domain: String,
    /// Source of fresh UUIDs (cluster and directory ids).
    pub new_uuid: Mutex<Box<dyn FnMut() -> Uuid + Send>>,
    /// The clock (for `pendingChange.since` and condition times).
    pub clock: Box<dyn Fn() -> Timestamp + Send + Sync>,
    /// Consecutive failures per object, for the backoff.
    failures: Mutex<HashMap<String, u32>>,
}

impl<Q> std::fmt::Debug for Context<Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("cluster_domain", &self.cluster_domain)
            .finish_non_exhaustive()
    }
}

impl<Q: QuorumClient> Context<Q> {
    /// A context with random UUIDs and the system clock.
    pub fn new(client: Client, quorum: Q, reporter: Reporter, cluster_domain: &str) -> Self {
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            quorum,
            metrics: Arc::new(Metrics::new()),
            cluster_domain: cluster_domain.to_string(),
            new_uuid: Mutex::new(Box::new(Uuid::new_v4)),
            clock: Box::new(Timestamp::now),
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn fresh_uuid_source(&self) -> std::sync::MutexGuard<'_, Box<dyn FnMut() -> Uuid + Send>> {
        self.new_uuid
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn key(kq: &KraftQuorum) -> String {
    format!("{}/{}", kq.namespace().unwrap_or_default(), kq.name_any())
}

/// One reconcile pass of `kq`, through the finalizer.
///
/// # Errors
/// [`Error`] for anything to retry; see [`error_policy`].
#[instrument(skip_all, fields(kraftquorum = %key(&kq)))]
pub async fn reconcile<Q: QuorumClient>(
    kq: Arc<KraftQuorum>,
    ctx: Arc<Context<Q>>,
) -> Result<Action, Error> {
    let _timer = ctx.metrics.reconcile_started();
    let ns = kq
        .namespace()
        .ok_or_else(|| Error::NoNamespace(kq.name_any()))?;
    let api: Api<KraftQuorum> = Api::namespaced(ctx.client.clone(), &ns);
    let k = key(&kq);
    let result = finalizer(&api, FINALIZER, kq, |event| async {
        match event {
            Finalizer::Apply(kq) => apply(&kq, &ctx).await,
            Finalizer::Cleanup(kq) => cleanup(&kq, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        FinalizerError::ApplyFailed(e) | FinalizerError::CleanupFailed(e) => e,
        other => Error::Finalizer(Box::new(other)),
    });
    if result.is_ok() {
        ctx.failures().remove(&k);
    }
    result
}

/// Error policy: count the failure and requeue with exponential backoff
/// (5 s doubling to 5 min) per object.
pub fn error_policy<Q: QuorumClient>(
    kq: Arc<KraftQuorum>,
    error: &Error,
    ctx: Arc<Context<Q>>,
) -> Action {
    ctx.metrics.failure(error.kind());
    let mut failures = ctx.failures();
    let n = failures.entry(key(&kq)).or_insert(0);
    let delay = BACKOFF_MIN
        .saturating_mul(1u32 << (*n).min(10))
        .min(BACKOFF_MAX);
    *n = n.saturating_add(1);
    warn!(kraftquorum = %key(&kq), error = %error, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

async fn apply_object<K>(client: &Client, ns: &str, obj: &K) -> Result<K, Error>
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

async fn write_status(
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

async fn publish<Q>(
    ctx: &Context<Q>,
    kq: &KraftQuorum,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
    related: Option<ObjectReference>,
) {
    // kube-rs folds events with the same (type, reason, action, regarding,
    // related) into one series and keeps only the first note: the object an
    // event is about (the pod of a voter) goes in `related`, so that "added
    // voter node 3" and "added voter node 4" stay two events.
    let event = KubeEvent {
        type_,
        reason: reason.to_string(),
        note: Some(note),
        action: action.to_string(),
        secondary: related,
    };
    if let Err(e) = ctx.recorder.publish(&event, &kq.object_ref(&())).await {
        warn!(error = %e, reason, "cannot publish event");
    }
}

/// A reference to pod `name` in `namespace`, the `related` object of an event.
fn pod_ref(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

async fn apply_children(client: &Client, q: &ValidatedQuorum) -> Result<StatefulSet, Error> {
    apply_object(client, &q.namespace, &build_service(q)).await?;
    apply_object(client, &q.namespace, &build_configmap(q)).await?;
    let sts = apply_object(client, &q.namespace, &build_statefulset(q)).await?;
    apply_object(client, &q.namespace, &build_pdb(q)).await?;
    Ok(sts)
}

async fn apply<Q: QuorumClient>(kq: &KraftQuorum, ctx: &Context<Q>) -> Result<Action, Error> {
    let ns = kq.namespace().unwrap_or_default();
    let name = kq.name_any();
    let client = &ctx.client;

    // 1. Identity, written before anything uses it.
    let fresh = identity::missing_identity(kq, &mut **ctx.fresh_uuid_source());
    let kq = match fresh {
        Some(st) => {
            info!(
                cluster_id = st.cluster_id.as_deref().unwrap_or(""),
                "generated identity"
            );
            write_status(client, kq, &st).await?
        }
        None => kq.clone(),
    };
    let mut status = kq.status.clone().unwrap_or_default();
    let generation = kq.metadata.generation;
    let now = (ctx.clock)();

    // 2. Fetch.
    let sts_api: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let existing = sts_api
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("get statefulset {ns}/{name}")))?;
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let selector = format!("app.kubernetes.io/name=kraft-controller,{LABEL_INSTANCE}={name}");
    let pods = pods_api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(kube_err(format!("list pods of {ns}/{name}")))?
        .items;

    // 3. Validate.
    let current_replicas = existing.as_ref().and_then(|s| s.spec.as_ref()?.replicas);
    let q = match validate(&kq, current_replicas, &ctx.cluster_domain) {
        Ok(q) => q,
        Err(e) => {
            let message = e.to_string();
            warn!(error = %message, "invalid spec");
            ctx.metrics.failure("invalid_spec");
            let outcome = Outcome::Degraded {
                reason: "InvalidSpec".into(),
                message: message.clone(),
            };
            status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
            status.observed_generation = generation;
            write_status(client, &kq, &status).await?;
            publish(
                ctx,
                &kq,
                EventType::Warning,
                "InvalidSpec",
                "Validate",
                message,
                None,
            )
            .await;
            return Ok(Action::await_change());
        }
    };

    // 4. Children.
    let sts = apply_children(client, &q).await?;
    status.selector = Some(q.selector_string());

    // 5. Observe.
    let described = observe::describe(&ctx.quorum, &pods, q.listener_port, status.leader_id).await;
    let was_bootstrapped = status.bootstrapped;
    status::observe_into(&mut status, described.as_ref().map(|(d, _)| d));
    let pod_states = observe::pod_states(&pods, Some(&sts).or(existing.as_ref()));
    status.replicas = q.statefulset_replicas;
    status.ready_replicas =
        i32::try_from(pod_states.iter().filter(|p| p.ready).count()).unwrap_or(i32::MAX);
    status.observed_generation = generation;

    if !was_bootstrapped && status.bootstrapped {
        // The first leader: record it; from the next pass on the ConfigMap
        // gives every pod formatted later --no-initial-controllers (the pod
        // template stays the same, so no pod is restarted for it).
        let outcome = Outcome::Progressing {
            reason: "Bootstrapped".into(),
            message: "the initial voters elected a first leader".into(),
        };
        status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
        write_status(client, &kq, &status).await?;
        publish(
            ctx,
            &kq,
            EventType::Normal,
            "Bootstrapped",
            "Observe",
            format!(
                "quorum bootstrapped; leader is node {}",
                status.leader_id.unwrap_or(-1)
            ),
            None,
        )
        .await;
        return Ok(Action::requeue(Duration::ZERO));
    }

    // 6. Plan.
    let input = observe::planner_input(
        q.replicas,
        q.statefulset_replicas,
        &status,
        status.bootstrapped,
        described.as_ref().map(|(d, _)| d),
        &pod_states,
        now.as_millisecond(),
    );
    let plan = planner::plan(&input);
    info!(?plan, "planned");

    // 7. Act.
    let leader_addr = described.as_ref().map(|(_, a)| a.as_str()).unwrap_or("");
    let (mut outcome, requeue) = act(ctx, &kq, &q, &mut status, &plan, leader_addr, now).await?;

    // A volume of another cluster is never reformatted: say so loudly.
    if let Some((pod, message)) = observe::cluster_id_mismatch(&pods) {
        outcome = Outcome::Degraded {
            reason: "ClusterIdMismatch".into(),
            message: format!("pod {pod}: {message}"),
        };
    }

    // 8. Status.
    status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
    write_status(client, &kq, &status).await?;
    Ok(Action::requeue(requeue))
}

fn pending(kind: ChangeKind, node_id: i32, dir: Uuid, now: Timestamp) -> PendingChange {
    PendingChange {
        kind,
        node_id,
        directory_id: kafka_uuid::to_string(dir),
        since: now.to_string(),
    }
}

/// Carries out one planned action; returns the outcome for the conditions
/// and when to look again.
async fn act<Q: QuorumClient>(
    ctx: &Context<Q>,
    kq: &KraftQuorum,
    q: &ValidatedQuorum,
    status: &mut KraftQuorumStatus,
    plan: &Plan,
    leader_addr: &str,
    now: Timestamp,
) -> Result<(Outcome, Duration), Error> {
    let progressing = |reason: &str, message: String| Outcome::Progressing {
        reason: reason.to_string(),
        message,
    };
    Ok(match plan {
        Plan::Steady => (Outcome::Ready, STEADY_REQUEUE),
        Plan::Wait { reason, message } => {
            let outcome = if *reason == WaitReason::QuorumUnavailable {
                Outcome::Degraded {
                    reason: reason.as_str().into(),
                    message: message.clone(),
                }
            } else {
                progressing(reason.as_str(), message.clone())
            };
            (outcome, BUSY_REQUEUE)
        }
        Plan::Refuse { reason, message } => {
            ctx.metrics.action("refuse");
            publish(
                ctx,
                kq,
                EventType::Warning,
                reason.as_str(),
                "PlanMembership",
                message.clone(),
                None,
            )
            .await;
            (
                Outcome::Degraded {
                    reason: reason.as_str().into(),
                    message: message.clone(),
                },
                BUSY_REQUEUE,
            )
        }
        Plan::ClearPending => {
            status.pending_change = None;
            (
                progressing(
                    "ChangeCompleted",
                    "the recorded voter change is done".into(),
                ),
                Duration::ZERO,
            )
        }
        Plan::AddVoter {
            node_id,
            directory_id,
        } => {
            let endpoint = q.endpoint(*node_id);
            status.pending_change =
                Some(pending(ChangeKind::AddVoter, *node_id, *directory_id, now));
            write_status(&ctx.client, kq, status).await?;
            ctx.metrics.action("add_voter");
            let result = ctx
                .quorum
                .add_voter(leader_addr, *node_id, *directory_id, &endpoint)
                .await;
            let what = format!(
                "node {node_id} (directory {}) at {endpoint}",
                kafka_uuid::to_string(*directory_id)
            );
            change_result(
                ctx,
                kq,
                status,
                result,
                "VoterAdded",
                &format!("added voter {what}"),
                pod_ref(&q.namespace, &q.pod_name(*node_id)),
            )
            .await
        }
        Plan::RemoveVoter {
            node_id,
            directory_id,
        } => {
            status.pending_change = Some(pending(
                ChangeKind::RemoveVoter,
                *node_id,
                *directory_id,
                now,
            ));
            write_status(&ctx.client, kq, status).await?;
            ctx.metrics.action("remove_voter");
            let result = ctx
                .quorum
                .remove_voter(leader_addr, *node_id, *directory_id)
                .await;
            let what = format!(
                "node {node_id} (directory {})",
                kafka_uuid::to_string(*directory_id)
            );
            change_result(
                ctx,
                kq,
                status,
                result,
                "VoterRemoved",
                &format!("removed voter {what}"),
                pod_ref(&q.namespace, &q.pod_name(*node_id)),
            )
            .await
        }
        Plan::ScaleStatefulSet { replicas } => {
            let mut scaled = q.clone();
            scaled.statefulset_replicas = *replicas;
            apply_object(&ctx.client, &q.namespace, &build_statefulset(&scaled)).await?;
            status.replicas = *replicas;
            ctx.metrics.action("scale");
            let note = format!(
                "statefulset {} scaled from {} to {replicas} pods",
                q.name, q.statefulset_replicas
            );
            publish(
                ctx,
                kq,
                EventType::Normal,
                "Scaled",
                "ScaleStatefulSet",
                note.clone(),
                None,
            )
            .await;
            (progressing("Scaling", note), BUSY_REQUEUE)
        }
        Plan::RestartPod { ordinal } => {
            let pod = delete_pod(ctx, q, *ordinal).await?;
            ctx.metrics.action("restart");
            let note = format!("restarted pod {pod} to roll out the current template");
            publish(
                ctx,
                kq,
                EventType::Normal,
                "PodRestarted",
                "RestartPod",
                note.clone(),
                Some(pod_ref(&q.namespace, &pod)),
            )
            .await;
            (progressing("RollingRestart", note), BUSY_REQUEUE)
        }
        Plan::RestartOnlyVoter { ordinal } => {
            let pod = delete_pod(ctx, q, *ordinal).await?;
            ctx.metrics.action("restart_only_voter");
            let note = format!(
                "restarted pod {pod}, the only voter, to roll out the current template: \
                 the quorum is unavailable until it is back (one voter has no majority \
                 to keep; run 3 voters to roll without an outage)"
            );
            publish(
                ctx,
                kq,
                EventType::Warning,
                SINGLE_VOTER_RESTART,
                "RestartPod",
                note.clone(),
                Some(pod_ref(&q.namespace, &pod)),
            )
            .await;
            (progressing(SINGLE_VOTER_RESTART, note), BUSY_REQUEUE)
        }
    })
}

/// Condition and Event reason of [`Plan::RestartOnlyVoter`]: the declared
/// outage of restarting a one-voter quorum.
pub const SINGLE_VOTER_RESTART: &str = "SingleVoterRestart";

/// Deletes pod `ordinal` so the StatefulSet recreates it from the current
/// template (a pod already gone counts as deleted); returns its name.
async fn delete_pod<Q>(
    ctx: &Context<Q>,
    q: &ValidatedQuorum,
    ordinal: i32,
) -> Result<String, Error> {
    let pod = q.pod_name(ordinal);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &q.namespace);
    match pods.delete(&pod, &DeleteParams::default()).await {
        Ok(_) => Ok(pod),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(pod),
        Err(e) => Err(kube_err(format!("delete pod {}/{pod}", q.namespace))(e)),
    }
}

async fn change_result<Q: QuorumClient>(
    ctx: &Context<Q>,
    kq: &KraftQuorum,
    status: &mut KraftQuorumStatus,
    result: Result<(), QuorumError>,
    reason: &str,
    done: &str,
    related: ObjectReference,
) -> (Outcome, Duration) {
    match result {
        // Kafka answers AddRaftVoter/RemoveRaftVoter once the new voter set
        // is committed (KIP-853): the change is done.
        Ok(()) => {
            status.pending_change = None;
            publish(
                ctx,
                kq,
                EventType::Normal,
                reason,
                "ChangeVoters",
                done.to_string(),
                Some(related.clone()),
            )
            .await;
            (
                Outcome::Progressing {
                    reason: reason.to_string(),
                    message: done.to_string(),
                },
                Duration::ZERO,
            )
        }
        // REQUEST_TIMED_OUT and friends: try again later, not an error. The
        // record stays until the voter set shows the change or it times out.
        Err(
            e @ (QuorumError::Retriable { .. }
            | QuorumError::Unreachable { .. }
            | QuorumError::NotLeader { .. }),
        ) => {
            publish(
                ctx,
                kq,
                EventType::Normal,
                "VoterChangeRetrying",
                "ChangeVoters",
                e.to_string(),
                None,
            )
            .await;
            (
                Outcome::Progressing {
                    reason: WaitReason::ChangeInFlight.as_str().into(),
                    message: e.to_string(),
                },
                BUSY_REQUEUE,
            )
        }
        Err(e @ QuorumError::Rejected { .. }) => {
            status.pending_change = None;
            publish(
                ctx,
                kq,
                EventType::Warning,
                "VoterChangeRejected",
                "ChangeVoters",
                e.to_string(),
                None,
            )
            .await;
            (
                Outcome::Degraded {
                    reason: "VoterChangeRejected".into(),
                    message: e.to_string(),
                },
                BUSY_REQUEUE,
            )
        }
    }
}

/// Cleanup on delete: the children go with their owner reference (garbage
/// collection) and the volumes follow `spec.storage.onDelete` through the
/// StatefulSet's PVC retention policy, so only an Event is left to publish.
async fn cleanup<Q: QuorumClient>(kq: &KraftQuorum, ctx: &Context<Q>) -> Result<Action, Error> {
    let policy = kq.spec.storage.on_delete.as_str();
    publish(
        ctx,
        kq,
        EventType::Normal,
        "Deleting",
        "Cleanup",
        format!("deleting the quorum; volumes: {policy}"),
        None,
    )
    .await;
    Ok(Action::await_change())
}

/// Runs the controller until `shutdown` resolves: watches KraftQuorums (in
/// `namespace`, or all), the children it owns, and the controller pods
/// (readiness changes drive membership), one reconcile per object at a time.
pub async fn run<Q: QuorumClient>(
    ctx: Arc<Context<Q>>,
    namespace: Option<&str>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let client = &ctx.client;
    let owned = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}=kraft-operator"));
    let pods = watcher::Config::default().labels("app.kubernetes.io/name=kraft-controller");
    Controller::new(
        api::<KraftQuorum>(client, namespace),
        watcher::Config::default(),
    )
    .owns(api::<StatefulSet>(client, namespace), owned.clone())
    .owns(api::<Service>(client, namespace), owned.clone())
    .owns(api::<ConfigMap>(client, namespace), owned.clone())
    .owns(api::<PodDisruptionBudget>(client, namespace), owned)
    .watches(api::<Pod>(client, namespace), pods, |pod| {
        let ns = pod.namespace();
        pod.labels().get(LABEL_INSTANCE).map(|name| {
            let r = ObjectRef::<KraftQuorum>::new(name);
            match ns {
                Some(ns) => r.within(&ns),
                None => r,
            }
        })
    })
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, ctx.clone())
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "reconcile round ended with an error");
        }
    })
    .await;
}

#[cfg(test)]
mod tests;
