//! The action executor (DESIGN 3.2 step 4, "act, at most one change per
//! pass"): carries out the planner's one [`Plan`] action.
//!
//! The decisions are data, made by two pure functions: [`prepare`] says what
//! to record in status before the change is made and which effect to run
//! (an admin RPC, a StatefulSet scale, a pod delete, or none), and
//! [`conclude`] maps the action and the effect's answer onto the status
//! change, the outcome for the conditions, the requeue delay and the Event.
//! [`execute`] is the thin I/O loop over them; after a committed removal,
//! and on steady passes, it also runs the unregistration step
//! (`controller/unregister.rs`, KIP-1312). Nothing here plans: the
//! planner chose the action; nothing here builds objects: `build` does.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kraft_common::{Endpoint, kafka_uuid};
use kube::runtime::events::EventType;
use uuid::Uuid;

use super::{
    BUSY_REQUEUE, Context, Error, RETRIABLE_REQUEUE, SINGLE_VOTER_RESTART, STEADY_REQUEUE, apply,
    events::{self, EventSpec},
    status::Outcome,
};
use crate::{
    crd::{ChangeKind, KraftQuorum, KraftQuorumStatus, PendingChange},
    planner::{Action as Plan, WaitReason},
    quorum::{QuorumClient, QuorumError, QuorumSession},
    validate::ValidatedQuorum,
};

/// The I/O one action needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing to call.
    None,
    /// AddRaftVoter with the pod's `CONTROLLER` endpoint.
    AddVoter {
        /// `node.id`.
        node_id: i32,
        /// Its directory id.
        directory_id: Uuid,
        /// Its controller listener at its stable DNS name.
        endpoint: Endpoint,
    },
    /// RemoveRaftVoter.
    RemoveVoter {
        /// `node.id`.
        node_id: i32,
        /// Its directory id.
        directory_id: Uuid,
    },
    /// Apply the StatefulSet with this many pods.
    ScaleStatefulSet {
        /// The new `spec.replicas`.
        replicas: i32,
    },
    /// Delete this pod (the StatefulSet recreates it from the current template).
    DeletePod {
        /// The pod's name.
        name: String,
    },
}

/// What to do before and for an action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The change in flight, written to `status.pendingChange` (and the
    /// status written) before the effect runs, so that an operator crash
    /// between the two changes nothing (DESIGN 3.2 step 1).
    pub record: Option<PendingChange>,
    /// The effect.
    pub effect: Effect,
}

/// How `status.pendingChange` changes after the effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PendingUpdate {
    /// Left as it is.
    Keep,
    /// Cleared: the change is done, or was refused for good.
    Clear,
}

/// Everything an action leads to once its effect has answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conclusion {
    /// The change to `status.pendingChange`.
    pub pending: PendingUpdate,
    /// The new `status.replicas`, when the StatefulSet was scaled.
    pub replicas: Option<i32>,
    /// What the conditions say.
    pub outcome: Outcome,
    /// When to look again.
    pub requeue: Duration,
    /// The Event to publish, if any.
    pub event: Option<EventSpec>,
    /// The metrics label of the action taken, if one was.
    pub metric: Option<&'static str>,
}

fn pending(kind: ChangeKind, node_id: i32, dir: Uuid, now: Timestamp) -> PendingChange {
    PendingChange {
        kind,
        node_id,
        directory_id: kafka_uuid::to_string(dir),
        since: now.to_string(),
    }
}

/// What `plan` records before it acts, and the effect it runs (pure).
pub fn prepare(plan: &Plan, q: &ValidatedQuorum, now: Timestamp) -> Prepared {
    let none = |effect| Prepared {
        record: None,
        effect,
    };
    match plan {
        Plan::Steady | Plan::Wait { .. } | Plan::Refuse { .. } | Plan::ClearPending => {
            none(Effect::None)
        }
        Plan::AddVoter {
            node_id,
            directory_id,
        } => Prepared {
            record: Some(pending(ChangeKind::AddVoter, *node_id, *directory_id, now)),
            effect: Effect::AddVoter {
                node_id: *node_id,
                directory_id: *directory_id,
                endpoint: q.controller_endpoint(*node_id),
            },
        },
        Plan::RemoveVoter {
            node_id,
            directory_id,
        } => Prepared {
            record: Some(pending(
                ChangeKind::RemoveVoter,
                *node_id,
                *directory_id,
                now,
            )),
            effect: Effect::RemoveVoter {
                node_id: *node_id,
                directory_id: *directory_id,
            },
        },
        Plan::ScaleStatefulSet { replicas } => none(Effect::ScaleStatefulSet {
            replicas: *replicas,
        }),
        Plan::RestartPod { ordinal } | Plan::RestartOnlyVoter { ordinal } => {
            none(Effect::DeletePod {
                name: q.pod_name(*ordinal),
            })
        }
    }
}

fn progressing(reason: &str, message: impl Into<String>) -> Outcome {
    Outcome::Progressing {
        reason: reason.to_string(),
        message: message.into(),
    }
}

fn degraded(reason: &str, message: impl Into<String>) -> Outcome {
    Outcome::Degraded {
        reason: reason.to_string(),
        message: message.into(),
    }
}

fn conclusion(outcome: Outcome, requeue: Duration) -> Conclusion {
    Conclusion {
        pending: PendingUpdate::Keep,
        replicas: None,
        outcome,
        requeue,
        event: None,
        metric: None,
    }
}

/// What `plan` leads to, given `answer`: the admin RPC's answer for a voter
/// change, `Ok(())` for every other action (a failed Kubernetes call ends
/// the pass with an error before this is asked). Pure.
pub fn conclude(plan: &Plan, q: &ValidatedQuorum, answer: &Result<(), QuorumError>) -> Conclusion {
    match plan {
        Plan::Steady => conclusion(Outcome::Ready, STEADY_REQUEUE),
        Plan::Wait { reason, message } => {
            let outcome = if *reason == WaitReason::QuorumUnavailable {
                degraded(reason.as_str(), message.clone())
            } else {
                progressing(reason.as_str(), message.clone())
            };
            conclusion(outcome, BUSY_REQUEUE)
        }
        Plan::Refuse { reason, message } => Conclusion {
            event: Some(EventSpec::new(
                EventType::Warning,
                reason.as_str(),
                "PlanMembership",
                message.clone(),
            )),
            metric: Some("refuse"),
            ..conclusion(degraded(reason.as_str(), message.clone()), BUSY_REQUEUE)
        },
        Plan::ClearPending => Conclusion {
            pending: PendingUpdate::Clear,
            ..conclusion(
                progressing("ChangeCompleted", "the recorded voter change is done"),
                Duration::ZERO,
            )
        },
        Plan::AddVoter {
            node_id,
            directory_id,
        } => {
            let done = format!(
                "added voter node {node_id} (directory {}) at {}",
                kafka_uuid::to_string(*directory_id),
                q.controller_endpoint(*node_id).address()
            );
            Conclusion {
                metric: Some("add_voter"),
                ..voter_change(answer, "VoterAdded", done, q.pod_name(*node_id))
            }
        }
        Plan::RemoveVoter {
            node_id,
            directory_id,
        } => {
            let done = format!(
                "removed voter node {node_id} (directory {})",
                kafka_uuid::to_string(*directory_id)
            );
            Conclusion {
                metric: Some("remove_voter"),
                ..voter_change(answer, "VoterRemoved", done, q.pod_name(*node_id))
            }
        }
        Plan::ScaleStatefulSet { replicas } => {
            let note = format!(
                "statefulset {} scaled from {} to {replicas} pods",
                q.name, q.statefulset_replicas
            );
            Conclusion {
                replicas: Some(*replicas),
                event: Some(EventSpec::new(
                    EventType::Normal,
                    "Scaled",
                    "ScaleStatefulSet",
                    note.clone(),
                )),
                metric: Some("scale"),
                ..conclusion(progressing("Scaling", note), BUSY_REQUEUE)
            }
        }
        Plan::RestartPod { ordinal } => {
            let pod = q.pod_name(*ordinal);
            let note = format!("restarted pod {pod} to roll out the current template");
            Conclusion {
                event: Some(
                    EventSpec::new(
                        EventType::Normal,
                        "PodRestarted",
                        "RestartPod",
                        note.clone(),
                    )
                    .about_pod(pod),
                ),
                metric: Some("restart"),
                ..conclusion(progressing("RollingRestart", note), BUSY_REQUEUE)
            }
        }
        Plan::RestartOnlyVoter { ordinal } => {
            let pod = q.pod_name(*ordinal);
            let note = format!(
                "restarted pod {pod}, the only voter, to roll out the current template: \
                 the quorum is unavailable until it is back (one voter has no majority \
                 to keep; run 3 voters to roll without an outage)"
            );
            Conclusion {
                event: Some(
                    EventSpec::new(
                        EventType::Warning,
                        SINGLE_VOTER_RESTART,
                        "RestartPod",
                        note.clone(),
                    )
                    .about_pod(pod),
                ),
                metric: Some("restart_only_voter"),
                ..conclusion(progressing(SINGLE_VOTER_RESTART, note), BUSY_REQUEUE)
            }
        }
    }
}

/// The conclusion of AddRaftVoter/RemoveRaftVoter from Kafka's answer.
fn voter_change(
    answer: &Result<(), QuorumError>,
    reason: &str,
    done: String,
    pod: String,
) -> Conclusion {
    match answer {
        // Kafka answers AddRaftVoter/RemoveRaftVoter once the new voter set
        // is committed (KIP-853): the change is done.
        Ok(()) => Conclusion {
            pending: PendingUpdate::Clear,
            event: Some(
                EventSpec::new(EventType::Normal, reason, "ChangeVoters", done.clone())
                    .about_pod(pod),
            ),
            ..conclusion(progressing(reason, done), Duration::ZERO)
        },
        // REQUEST_TIMED_OUT and friends: try again, not an error. When the
        // leader answered, it holds no change from this request (one it
        // appended but could not commit in time is in the voter set it
        // describes, so it is not planned again): the record goes and the
        // next pass, RETRIABLE_REQUEUE from now, plans afresh (issue 27).
        // When no answer came, the leader may still be carrying the change
        // out: the record stays until the voter set shows it or it times
        // out (planner::PENDING_TIMEOUT_MS). Either way the leader itself
        // refuses a second concurrent change (KIP-853).
        Err(
            e @ (QuorumError::Retriable { .. }
            | QuorumError::NotLeader { .. }
            | QuorumError::Unreachable { .. }),
        ) => {
            let (pending, requeue) = if matches!(e, QuorumError::Unreachable { .. }) {
                (PendingUpdate::Keep, BUSY_REQUEUE)
            } else {
                (PendingUpdate::Clear, RETRIABLE_REQUEUE)
            };
            Conclusion {
                pending,
                event: Some(EventSpec::new(
                    EventType::Normal,
                    "VoterChangeRetrying",
                    "ChangeVoters",
                    e.to_string(),
                )),
                ..conclusion(
                    progressing(WaitReason::ChangeInFlight.as_str(), e.to_string()),
                    requeue,
                )
            }
        }
        Err(e @ QuorumError::Rejected { .. }) => Conclusion {
            pending: PendingUpdate::Clear,
            event: Some(EventSpec::new(
                EventType::Warning,
                "VoterChangeRejected",
                "ChangeVoters",
                e.to_string(),
            )),
            ..conclusion(degraded("VoterChangeRejected", e.to_string()), BUSY_REQUEUE)
        },
    }
}

/// Carries out `plan`: records the change in flight, runs the effect
/// through `session` or the API server, applies the conclusion to `status`
/// (written by the caller) and publishes its Event; returns the outcome for
/// the conditions and when to look again.
///
/// # Errors
/// [`Error`] when a Kubernetes call fails (an admin RPC's failure is an
/// answer, see [`conclude`]).
pub async fn execute<Q: QuorumClient>(
    ctx: &Context<Q>,
    kq: &KraftQuorum,
    q: &ValidatedQuorum,
    status: &mut KraftQuorumStatus,
    plan: &Plan,
    session: &mut Q::Session,
    now: Timestamp,
) -> Result<(Outcome, Duration), Error> {
    let prepared = prepare(plan, q, now);
    if let Some(record) = prepared.record {
        status.pending_change = Some(record);
        apply::write_status(&ctx.client, kq, status).await?;
    }
    let answer = match &prepared.effect {
        Effect::None => Ok(()),
        Effect::AddVoter {
            node_id,
            directory_id,
            endpoint,
        } => session.add_voter(*node_id, *directory_id, endpoint).await,
        Effect::RemoveVoter {
            node_id,
            directory_id,
        } => session.remove_voter(*node_id, *directory_id).await,
        Effect::ScaleStatefulSet { replicas } => {
            apply::scale_statefulset(&ctx.client, q, *replicas).await?;
            Ok(())
        }
        Effect::DeletePod { name } => {
            apply::delete_pod(&ctx.client, &q.namespace, name).await?;
            Ok(())
        }
    };
    // KIP-1312: a committed removal leaves the controller's registration
    // behind: listed as stale, unregistered on a steady pass once its pod
    // is gone (controller/unregister.rs).
    match (&prepared.effect, &answer) {
        (Effect::RemoveVoter { node_id, .. }, Ok(())) => {
            super::unregister::after_removal(status, *node_id);
        }
        (Effect::None, _) if *plan == Plan::Steady => {
            for event in super::unregister::retry_stale(session, status).await {
                events::publish(&ctx.recorder, kq, event).await;
            }
        }
        _ => {}
    }
    let c = conclude(plan, q, &answer);
    if c.pending == PendingUpdate::Clear {
        status.pending_change = None;
    }
    if let Some(replicas) = c.replicas {
        status.replicas = replicas;
    }
    if let Some(metric) = c.metric {
        ctx.metrics.action(metric);
    }
    if let Some(event) = c.event {
        events::publish(&ctx.recorder, kq, event).await;
    }
    Ok((c.outcome, c.requeue))
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;
