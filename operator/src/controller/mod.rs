//! The reconciler (DESIGN 3.2): for each `KraftQuorum`, one level-triggered,
//! idempotent pass: identity → fetch → validate → build and apply children →
//! observe the quorum → plan → act (at most one change) → status.
//!
//! This file owns the pass itself and its context: [`reconcile`] through the
//! finalizer, the order of the steps, the [`Context`] shared by passes, the
//! watches ([`run`]) and the error policy: an invalid spec waits for a
//! change, anything else requeues with backoff. The steps live beside it:
//! [`identity`] (pure), [`observe`] (one DescribeQuorum through the pass's
//! [`crate::quorum::QuorumSession`], and pure mappings), [`adopt`] (the
//! migration of an adopted static quorum), [`apply`] (every
//! write, server-side apply under one field manager), [`executor`] (the
//! planned action: a pure mapping to status change, requeue and Event, and a
//! thin I/O loop over it), [`events`] (publishing), [`status`] (pure).
//!
//! It must not make decisions the pure steps make: validation is
//! [`crate::validate`], object shapes are [`crate::build`], membership is
//! [`crate::planner`], what an action leads to is [`executor::conclude`].

pub mod adopt;
pub mod apply;
pub mod broker_acl;
pub mod cert_manager;
pub mod certs;
mod context;
pub mod events;
pub mod executor;
pub mod identity;
pub mod observe;
pub mod recovery;
pub mod status;
pub mod unregister;

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::StatefulSet,
    core::v1::{ConfigMap, Pod, Secret, Service},
    networking::v1::NetworkPolicy,
    policy::v1::PodDisruptionBudget,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, Patch, PatchParams},
    runtime::{
        Controller,
        controller::Action,
        events::EventType,
        finalizer::{Error as FinalizerError, Event as Finalizer, finalizer},
        reflector::ObjectRef,
        watcher,
    },
};
use tracing::{info, instrument, warn};

use crate::build::statefulset::unformatted_annotation;
use crate::{
    crd::{
        ANNOTATION_BOOTSTRAPPED, ANNOTATION_PAUSE, ANNOTATION_ROTATE_CA,
        ANNOTATION_UNFORMATTED_INITIAL_VOTERS, AdoptionPhase, FINALIZER, KraftQuorum,
        LABEL_INSTANCE, LABEL_MANAGED_BY,
    },
    planner,
    quorum::QuorumClient,
    validate::validate,
};
use apply::{apply_children, write_status};
pub use context::Context;
use events::{EventSpec, publish};
use status::Outcome;

/// Requeue after a pass that found nothing to do.
pub const STEADY_REQUEUE: Duration = Duration::from_secs(30);
/// Requeue while work is in progress (waiting for pods, observers, changes).
pub const BUSY_REQUEUE: Duration = Duration::from_secs(5);
/// Requeue after the leader answered a voter change with a retriable error
/// (REQUEST_TIMED_OUT: the new voter not caught up or not answering
/// ApiVersions yet, another change in flight; NOT_LEADER_OR_FOLLOWER): the
/// change is planned afresh this soon, so a change the leader could not make
/// yet waits seconds, not the minutes of `planner::PENDING_TIMEOUT_MS`.
pub const RETRIABLE_REQUEUE: Duration = Duration::from_secs(2);
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
    /// Making or loading the quorum's certificates failed.
    #[error("certificates of {quorum}: {message}")]
    Tls { quorum: String, message: String },
}

impl Error {
    /// The metrics label for this error.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Kube { .. } => "kube",
            Error::Finalizer(_) => "finalizer",
            Error::NoNamespace(_) => "no_namespace",
            Error::Serialize { .. } => "serialize",
            Error::Tls { .. } => "tls",
        }
    }
}

fn kube_err(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let action = action.into();
    move |source| Error::Kube { action, source }
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
    // Work from the API server's copy, not the watch cache's: the cache can
    // lag this operator's own last status write, and a pass that started
    // from it wrote back a pendingChange the pass before had cleared (seen:
    // a retriable AddRaftVoter answer held a scale-up for the whole
    // planner::PENDING_TIMEOUT_MS, 120 s, instead of 2 s; issue 27).
    // Passes over one object never overlap (kube-runtime), so this read
    // sees every write of the passes before.
    let name = kq.name_any();
    let Some(kq) = api
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("get kraftquorum {ns}/{name}")))?
        .map(Arc::new)
    else {
        ctx.failures().remove(&k);
        ctx.idle_status_written().remove(&k);
        return Ok(Action::await_change());
    };
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

/// Merges `annotations` (a JSON object of strings) into the StatefulSet
/// `name`'s own annotations (not its pod template's: no pod restarts).
///
/// Errors: [`Error`] from the API server, naming `what` and the StatefulSet.
async fn annotate(
    sts_api: &Api<StatefulSet>,
    name: &str,
    annotations: serde_json::Value,
    what: &str,
) -> Result<(), Error> {
    let patch = serde_json::json!({"metadata": {"annotations": annotations}});
    sts_api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(kube_err(format!("{what} on statefulset {name}")))?;
    Ok(())
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

async fn apply<Q: QuorumClient>(kq: &KraftQuorum, ctx: &Context<Q>) -> Result<Action, Error> {
    let ns = kq.namespace().unwrap_or_default();
    let name = kq.name_any();
    let client = &ctx.client;

    let now = (ctx.clock)();
    let generation = kq.metadata.generation;

    // 0. Paused: change nothing, say so. Observing stays on (read-only):
    // the pods' readiness keeps status.readyReplicas true.
    if is_paused(kq) {
        let mut status = kq.status.clone().unwrap_or_default();
        let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let selector = format!("app.kubernetes.io/name=kraft-controller,{LABEL_INSTANCE}={name}");
        let ready = pods_api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(kube_err(format!("list pods of {ns}/{name}")))?
            .items;
        let ready = observe::pod_states(&ready, None)
            .iter()
            .filter(|p| p.ready)
            .count();
        let ready = i32::try_from(ready).unwrap_or(i32::MAX);
        let paused = status::paused_condition(&status.conditions, generation, now);
        let was_paused = status.conditions.contains(&paused);
        if was_paused && status.ready_replicas == ready {
            return Ok(Action::requeue(STEADY_REQUEUE));
        }
        status.ready_replicas = ready;
        status.conditions.retain(|c| c.type_ != status::PAUSED);
        status.conditions.push(paused);
        write_status(client, kq, &status).await?;
        if !was_paused {
            let note = format!("{ANNOTATION_PAUSE} is true: nothing is changed until it goes");
            let event = EventSpec::new(EventType::Normal, "Paused", "Pause", note);
            publish(&ctx.recorder, kq, event).await;
        }
        return Ok(Action::requeue(STEADY_REQUEUE));
    }

    // 1. Identity, written before anything uses it; the copy on the
    // StatefulSet is read back when status was lost.
    let sts_api: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let existing = sts_api
        .get_opt(&name)
        .await
        .map_err(kube_err(format!("get statefulset {ns}/{name}")))?;
    let recorded = existing
        .as_ref()
        .and_then(|s| identity::recorded(s.metadata.annotations.as_ref()?));
    let fresh = identity::missing_identity(kq, recorded.as_ref(), &mut **ctx.fresh_uuid_source());
    let kq = match fresh {
        Some(st) => {
            info!(
                cluster_id = st.cluster_id.as_deref().unwrap_or(""),
                restored = recorded.is_some(),
                "identity written to status"
            );
            write_status(client, kq, &st).await?
        }
        None => kq.clone(),
    };
    // The status as stored, for step 8's comparison.
    let stored_status = kq.status.clone();
    // Bootstrapped never goes back (see identity::bootstrapped_on_record).
    let mut kq = kq;
    if identity::bootstrapped_on_record(kq.status.as_ref(), recorded.as_ref())
        && let Some(st) = kq.status.as_mut()
    {
        info!("bootstrapped read back from the statefulset");
        st.bootstrapped = true;
    }
    let mut status = kq.status.clone().unwrap_or_default();

    // 2. Fetch.
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let selector = format!("app.kubernetes.io/name=kraft-controller,{LABEL_INSTANCE}={name}");
    let pods = pods_api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(kube_err(format!("list pods of {ns}/{name}")))?
        .items;

    // 3. Validate.
    let current_replicas = existing.as_ref().and_then(|s| s.spec.as_ref()?.replicas);
    let mut q = match validate(&kq, current_replicas, &ctx.cluster_domain) {
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
            let event = EventSpec::new(EventType::Warning, "InvalidSpec", "Validate", message);
            publish(&ctx.recorder, &kq, event).await;
            return Ok(Action::await_change());
        }
    };

    // Initial voters not seen formatted at the first leader keep the initial
    // list (D19); read from the StatefulSet, where it only shrinks. A
    // quorum loss (issue 26) means the voter set will be replaced: once it
    // is reported or a recovery step is recorded, no pod formats with the
    // initial list again (step 5a empties the record). A pod already
    // showing a formatted volume leaves the set before this pass's
    // ConfigMap is applied, not one pass later.
    let recorded_unformatted = if q.bootstrapped {
        existing
            .as_ref()
            .and_then(|s| s.metadata.annotations.as_ref())
            .map(|a| identity::unformatted_initial_voters(a, &q.initial_voters))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let recovering = recovery::quorum_lost_or_recovering(&status);
    if !recovering {
        q.unformatted_initial_voters =
            observe::still_unformatted(&recorded_unformatted, &q.initial_voters, &pods, None);
    }

    // A running quorum keeps the listener protocol it was created with.
    let recorded_tls = existing.as_ref().and_then(|s| {
        let mounts_tls = s
            .spec
            .as_ref()
            .and_then(|spec| spec.template.spec.as_ref()?.volumes.as_ref())
            .is_some_and(|v| {
                v.iter()
                    .any(|v| v.name == crate::build::statefulset::TLS_VOLUME)
            });
        identity::recorded_tls(
            s.metadata
                .annotations
                .as_ref()
                .unwrap_or(&Default::default()),
            mounts_tls,
        )
    });
    if let Some(why) = identity::keep_tls_mode(&mut q.tls_enabled, recorded_tls) {
        warn!(message = %why, "listener protocol kept");
        let event = EventSpec::new(EventType::Warning, "ListenerProtocolKept", "Validate", why);
        publish(&ctx.recorder, &kq, event).await;
    }

    // 4. Certificates, then the children.
    q.operator_peer = ctx.operator_peer.clone();
    if q.operator_peer.is_none() && crate::build::networkpolicy::enabled(&q) {
        let why = "the NetworkPolicy has no rule for the operator (it runs without POD_NAMESPACE, \
                   e.g. outside the cluster): where policies are enforced, its DescribeQuorum and \
                   voter changes are refused; set POD_NAMESPACE or networkPolicy.enabled: false";
        warn!(message = why, "network policy without the operator");
        let event = EventSpec::new(
            EventType::Warning,
            "NoOperatorRule",
            "Apply",
            why.to_string(),
        );
        publish(&ctx.recorder, &kq, event).await;
    }
    let admin_tls = if q.tls_enabled {
        if q.issuer_ref.is_some() {
            match cert_manager::ensure(client, &q).await? {
                cert_manager::Outcome::Ready(tls) => {
                    q.ca_hash = Some(tls.ca_hash.clone());
                    Some(tls.admin)
                }
                cert_manager::Outcome::NotReady {
                    reason,
                    message,
                    degraded,
                } => {
                    warn!(reason, message = %message, "certificates not ready");
                    let outcome = if degraded {
                        Outcome::Degraded {
                            reason: reason.into(),
                            message,
                        }
                    } else {
                        Outcome::Progressing {
                            reason: reason.into(),
                            message,
                        }
                    };
                    status.conditions =
                        status::conditions(&status.conditions, &outcome, generation, now);
                    status.observed_generation = generation;
                    write_status(client, &kq, &status).await?;
                    return Ok(Action::requeue(BUSY_REQUEUE));
                }
            }
        } else {
            let lifetime = test_leaf_lifetime(&kq).unwrap_or(crate::pki::LEAF_LIFETIME_SECS);
            let rollout = observe::rollout(existing.as_ref(), &pods);
            let rotate_ca = kq.annotations().get(ANNOTATION_ROTATE_CA).cloned();
            let tls = certs::ensure(
                client,
                &q,
                now.as_second(),
                lifetime,
                rotate_ca.as_deref(),
                &rollout,
            )
            .await?;
            if let Some((action, note)) = &tls.rotation {
                let event = EventSpec::new(EventType::Normal, "CaRotation", action, note.clone());
                publish(&ctx.recorder, &kq, event).await;
            }
            q.ca_hash = Some(tls.ca_hash.clone());
            Some(tls.admin)
        }
    } else {
        None
    };
    // A quorum-loss recovery in progress holds the StatefulSet's size
    // (0 while the survivor's volume is recovered; issue 26), its claims
    // retained whatever spec.storage.onScaleDown says.
    if let Some(n) = recovery::held_replicas(&status.recovery, q.replicas) {
        recovery::hold(&mut q, n);
    }
    let sts = apply_children(client, &q).await?;
    status.selector = Some(q.selector_string());
    status.brokers = Some(crate::build::brokers::broker_connection(&q));

    // 5. Observe.
    // One admin session for the pass: DescribeQuorum and the one voter
    // change go over the same connection.
    let port = u16::try_from(q.listener_port).unwrap_or_default();
    let mut session = ctx.quorum.session(
        observe::bootstrap_controllers(&pods, port, status.leader_id),
        admin_tls,
    );
    let described = observe::describe(&mut session).await;
    let was_bootstrapped = status.bootstrapped;
    status::observe_into(&mut status, described.as_ref());
    // A controller that stopped on an error (a full volume, a disk refused
    // at start: issue 21) is named in its voter's status and in a Warning
    // Event, not left as a silent crash loop.
    let stopped = observe::stopped_controllers(&pods);
    status::note_stopped(&mut status, &stopped);
    for (ordinal, line) in &stopped {
        let note = format!("controller {ordinal} is not running: {line}");
        let event = EventSpec::new(EventType::Warning, CONTROLLER_STOPPED, "Observe", note);
        publish(&ctx.recorder, &kq, event).await;
    }
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
        // The copy on the StatefulSet first, in this same pass: a status lost
        // right after this pass still reads back bootstrapped (never the
        // bootstrap flags again). With it, the initial voters that show no
        // formatted volume yet: they keep the initial list until they do
        // (D19), the others get --no-initial-controllers. Annotations only:
        // no pod restarts.
        let initial_ids: Vec<i32> = q.initial_voters.iter().map(|(id, _)| *id).collect();
        let unformatted =
            observe::still_unformatted(&initial_ids, &q.initial_voters, &pods, described.as_ref());
        let marks = serde_json::json!({
            ANNOTATION_BOOTSTRAPPED: "true",
            ANNOTATION_UNFORMATTED_INITIAL_VOTERS: unformatted_annotation(&unformatted),
        });
        annotate(&sts_api, &name, marks, "mark bootstrapped").await?;
        write_status(client, &kq, &status).await?;
        let mut note = format!(
            "quorum bootstrapped; leader is node {}",
            status.leader_id.unwrap_or(-1)
        );
        if !unformatted.is_empty() {
            note.push_str(&format!(
                "; initial voters {} not formatted yet keep the initial voter list",
                unformatted_annotation(&unformatted)
            ));
        }
        let event = EventSpec::new(EventType::Normal, "Bootstrapped", "Observe", note);
        publish(&ctx.recorder, &kq, event).await;
        return Ok(Action::requeue(Duration::ZERO));
    }

    // 5a. An initial voter seen formatted (or gone from the voter set)
    // leaves the unformatted set; the next pass's ConfigMap then gives it
    // --no-initial-controllers like every other pod. A recovery empties it.
    if was_bootstrapped && !recorded_unformatted.is_empty() {
        let still = if recovering {
            Vec::new()
        } else {
            observe::still_unformatted(
                &recorded_unformatted,
                &q.initial_voters,
                &pods,
                described.as_ref(),
            )
        };
        if still != recorded_unformatted {
            let marks = serde_json::json!({
                ANNOTATION_UNFORMATTED_INITIAL_VOTERS: unformatted_annotation(&still),
            });
            annotate(
                &sts_api,
                &name,
                marks,
                "record the unformatted initial voters",
            )
            .await?;
            info!(before = ?recorded_unformatted, after = ?still, "initial voters formatted");
            return Ok(Action::requeue(Duration::ZERO));
        }
    }

    // 5b. The brokers' CLUSTER_ACTION ACL (TLS only; written once).
    broker_acl::ensure(&mut session, &q, status.bootstrapped).await;

    // 5c. An adopted static quorum before its kraft.version upgrade
    // (spec.adopt, issue 22): no planner and no restart, at most the upgrade.
    if q.adoption_phase == Some(AdoptionPhase::StaticQuorum) {
        let (mut outcome, requeue, event) =
            adopt::upgrade(&q, &mut status, described.as_ref(), &mut session).await;
        if let Some((pod, message)) = observe::cluster_id_mismatch(&pods) {
            outcome = Outcome::Degraded {
                reason: "ClusterIdMismatch".into(),
                message: format!("pod {pod}: {message}"),
            };
        }
        status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
        write_status(client, &kq, &status).await?;
        if let Some(event) = event {
            publish(&ctx.recorder, &kq, event).await;
        }
        return Ok(Action::requeue(requeue));
    }

    // 5d. Quorum loss (issue 26): reported, or recovered with opt-in; while
    // it holds the pass, the membership planner waits.
    let unscheduled = observe::unscheduled_pods(&pods);
    if let Some((outcome, requeue)) =
        recovery::run(ctx, &kq, &q, &mut status, pods.len(), now).await?
    {
        let outcome = status::note_unscheduled(outcome, &unscheduled);
        status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
        write_status(client, &kq, &status).await?;
        return Ok(Action::requeue(requeue));
    }

    // 6. Plan.
    let input = observe::planner_input(
        q.replicas,
        q.statefulset_replicas,
        &status,
        status.bootstrapped,
        described.as_ref(),
        &pod_states,
        now.as_millisecond(),
    );
    let plan = adopt::gate(q.adoption_phase, planner::plan(&input));
    info!(?plan, "planned");

    // 7. Act.
    let (mut outcome, requeue) =
        executor::execute(ctx, &kq, &q, &mut status, &plan, &mut session, now).await?;

    // A volume of another cluster is never reformatted: say so loudly.
    if let Some((pod, message)) = observe::cluster_id_mismatch(&pods) {
        outcome = Outcome::Degraded {
            reason: "ClusterIdMismatch".into(),
            message: format!("pod {pod}: {message}"),
        };
    }
    // A pod the scheduler has not placed: the wait says why.
    let outcome = status::note_unscheduled(outcome, &unscheduled);

    // The last restart onto bootstrap servers is done: adopted.
    if adopt::completes(q.adoption_phase, &plan) {
        status.adoption_phase = Some(AdoptionPhase::Adopted);
        let note = "the static quorum is adopted: kraft.version 1, every pod on \
                    controller.quorum.bootstrap.servers";
        let event = EventSpec::new(EventType::Normal, adopt::ADOPTED, "Adopt", note);
        publish(&ctx.recorder, &kq, event).await;
    }

    // 8. Status. The leader's high watermark and the replicas' lags move
    // every 500 ms (the leader's no-op record), and every status write
    // starts a pass (the watch sees it): a pass slower than 500 ms found
    // new offsets each time, wrote them and started the next, for ever
    // (14.6 passes/s at 50 steady quorums, BENCHMARKS.md). So a pass that
    // acts on nothing (steady, waiting, or refusing) and would change only
    // those offsets writes them at most once per its requeue interval
    // (30 s steady, 5 s waiting), and requeues for the moment it may: what
    // it waits for shows in other fields (caughtUp, the voters, the pods'
    // readiness), which are written at once. A pass that acts writes every
    // time: the next step starts from that write.
    status.conditions = status::conditions(&status.conditions, &outcome, generation, now);
    let k = key(&kq);
    let idle = matches!(
        plan,
        planner::Action::Steady | planner::Action::Wait { .. } | planner::Action::Refuse { .. }
    );
    if idle {
        if status::differs_only_in_offsets(stored_status.as_ref(), &status)
            && let Some(left) = ctx.idle_status_fresh_for(&k, now, requeue)
        {
            tracing::debug!(next_write_in = ?left, "status differs only in offsets: not written");
            return Ok(Action::requeue(left));
        }
        write_status(client, &kq, &status).await?;
        ctx.idle_status_written().insert(k, now);
    } else {
        write_status(client, &kq, &status).await?;
        ctx.idle_status_written().remove(&k);
    }
    Ok(Action::requeue(requeue))
}

/// Whether `kq` carries [`ANNOTATION_PAUSE`]`: "true"`.
pub fn is_paused(kq: &KraftQuorum) -> bool {
    kq.annotations().get(ANNOTATION_PAUSE).map(String::as_str) == Some("true")
}

/// The leaf lifetime `kq` asks for with
/// [`certs::ANNOTATION_TEST_LEAF_LIFETIME`] (tests only), at least 60 s.
fn test_leaf_lifetime(kq: &KraftQuorum) -> Option<i64> {
    kq.annotations()
        .get(certs::ANNOTATION_TEST_LEAF_LIFETIME)?
        .parse::<i64>()
        .ok()
        .map(|s| s.max(60))
}

/// Event reason for a controller container that stopped on an error (its
/// termination message is the note).
pub const CONTROLLER_STOPPED: &str = "ControllerStopped";

/// Condition and Event reason of [`planner::Action::RestartOnlyVoter`]: the declared
/// outage of restarting a one-voter quorum.
pub const SINGLE_VOTER_RESTART: &str = "SingleVoterRestart";

/// Cleanup on delete: the children go with their owner reference (garbage
/// collection) and the volumes follow `spec.storage.onDelete` through the
/// StatefulSet's PVC retention policy, so only an Event is left to publish.
async fn cleanup<Q: QuorumClient>(kq: &KraftQuorum, ctx: &Context<Q>) -> Result<Action, Error> {
    let policy = kq.spec.storage.on_delete.as_str();
    ctx.idle_status_written().remove(&key(kq));
    let note = format!("deleting the quorum; volumes: {policy}");
    let event = EventSpec::new(EventType::Normal, "Deleting", "Cleanup", note);
    publish(&ctx.recorder, kq, event).await;
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
    .owns(api::<PodDisruptionBudget>(client, namespace), owned.clone())
    .owns(api::<Secret>(client, namespace), owned.clone())
    .owns(api::<NetworkPolicy>(client, namespace), owned)
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
