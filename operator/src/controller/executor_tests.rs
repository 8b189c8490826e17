//! The executor's mapping as a table (STYLE: "executor side effects as
//! data"): each row is a planned action and the effect's answer, and what
//! they must lead to: the record written before the effect, the effect, the
//! `status.pendingChange` and `status.replicas` after it, the condition, the
//! requeue and the Event. No cluster, no quorum.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kraft_common::{Endpoint, kafka_uuid};
use kube::runtime::events::EventType;
use uuid::Uuid;

use super::*;
use crate::{
    crd::{ChangeKind, KraftQuorum, KraftQuorumStatus},
    planner::{Action as Plan, RefuseReason, WaitReason},
    quorum::QuorumError,
    validate::{ValidatedQuorum, validate},
};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

/// A bootstrapped 3-voter quorum `kq` in `ns`, StatefulSet at 3.
fn quorum() -> ValidatedQuorum {
    let yaml = format!(
        "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata: {{name: kq, namespace: ns, uid: 7e5b6f5e-0000-4000-8000-000000000001, generation: 2}}\nspec: {{replicas: 3, image: 'kraft:1', storage: {{size: 1Gi}}}}\nstatus:\n  clusterId: {CLUSTER}\n  bootstrapped: true\n  initialVoters:\n  - {{nodeId: 0, directoryId: AAAAAAAAAAAAAAAAAAAAAQ}}\n  - {{nodeId: 1, directoryId: AAAAAAAAAAAAAAAAAAAAAg}}\n  - {{nodeId: 2, directoryId: AAAAAAAAAAAAAAAAAAAAAw}}\n"
    );
    let kq: KraftQuorum = serde_yaml::from_str(&yaml).expect("test yaml");
    validate(&kq, Some(3), "cluster.local").expect("valid")
}

fn now() -> Timestamp {
    "2026-11-30T00:00:00Z".parse().expect("time")
}

fn dir(id: i32) -> Uuid {
    Uuid::from_u128(1000 + id as u128)
}

fn retriable() -> QuorumError {
    QuorumError::Retriable {
        addr: "10.0.0.10:9093".into(),
        code: 7,
        name: "REQUEST_TIMED_OUT".into(),
        message: "not caught up".into(),
    }
}

fn rejected() -> QuorumError {
    QuorumError::Rejected {
        addr: "10.0.0.10:9093".into(),
        code: 126,
        name: "DUPLICATE_VOTER".into(),
        message: "already a voter".into(),
    }
}

/// One row: action + answer → expectations.
struct Case {
    plan: Plan,
    /// The admin RPC's answer (`Ok` for every non-RPC action).
    answer: Result<(), QuorumError>,
    /// `(kind, node id)` recorded in `pendingChange` before the effect.
    record: Option<(ChangeKind, i32)>,
    effect: Effect,
    /// Whether `pendingChange` is set after the pass (it starts as the
    /// record, or as a change of an earlier pass when there is none).
    pending_after: bool,
    replicas: Option<i32>,
    /// `(condition type, reason)`; the reason is empty for Ready.
    condition: (&'static str, &'static str),
    requeue: Duration,
    /// `(type, reason, action, related pod)`.
    event: Option<(EventType, &'static str, &'static str, Option<&'static str>)>,
    metric: Option<&'static str>,
}

fn condition(o: &Outcome) -> (&str, &str) {
    match o {
        Outcome::Ready => ("Ready", ""),
        Outcome::Progressing { reason, .. } => ("Progressing", reason.as_str()),
        Outcome::Degraded { reason, .. } => ("Degraded", reason.as_str()),
    }
}

fn endpoint(id: i32) -> Endpoint {
    Endpoint::new(
        "CONTROLLER",
        format!("kq-{id}.kq.ns.svc.cluster.local"),
        9093,
    )
}

#[test]
fn every_planned_action_maps_to_its_status_change_requeue_and_event() {
    use EventType::{Normal, Warning};
    let busy = BUSY_REQUEUE;
    let retry = RETRIABLE_REQUEUE;
    assert!(retry.as_secs() < 10, "seconds, not minutes");
    let add = Plan::AddVoter {
        node_id: 3,
        directory_id: dir(3),
    };
    let remove = Plan::RemoveVoter {
        node_id: 2,
        directory_id: dir(2),
    };
    let add_effect = Effect::AddVoter {
        node_id: 3,
        directory_id: dir(3),
        endpoint: endpoint(3),
    };
    let remove_effect = Effect::RemoveVoter {
        node_id: 2,
        directory_id: dir(2),
    };
    let cases = [
        Case {
            plan: Plan::Steady,
            answer: Ok(()),
            record: None,
            effect: Effect::None,
            pending_after: true,
            replicas: None,
            condition: ("Ready", ""),
            requeue: STEADY_REQUEUE,
            event: None,
            metric: None,
        },
        Case {
            plan: Plan::Wait {
                reason: WaitReason::QuorumUnavailable,
                message: "no leader".into(),
            },
            answer: Ok(()),
            record: None,
            effect: Effect::None,
            pending_after: true,
            replicas: None,
            condition: ("Degraded", "QuorumUnavailable"),
            requeue: busy,
            event: None,
            metric: None,
        },
        Case {
            plan: Plan::Wait {
                reason: WaitReason::WaitingForObserver,
                message: "pod 3 not caught up".into(),
            },
            answer: Ok(()),
            record: None,
            effect: Effect::None,
            pending_after: true,
            replicas: None,
            condition: ("Progressing", "WaitingForObserver"),
            requeue: busy,
            event: None,
            metric: None,
        },
        Case {
            plan: Plan::Refuse {
                reason: RefuseReason::RemovalWouldLoseMajority,
                message: "1 of 2 caught up".into(),
            },
            answer: Ok(()),
            record: None,
            effect: Effect::None,
            pending_after: true,
            replicas: None,
            condition: ("Degraded", "RemovalWouldLoseMajority"),
            requeue: busy,
            event: Some((Warning, "RemovalWouldLoseMajority", "PlanMembership", None)),
            metric: Some("refuse"),
        },
        Case {
            plan: Plan::ClearPending,
            answer: Ok(()),
            record: None,
            effect: Effect::None,
            pending_after: false,
            replicas: None,
            condition: ("Progressing", "ChangeCompleted"),
            requeue: Duration::ZERO,
            event: None,
            metric: None,
        },
        Case {
            plan: add.clone(),
            answer: Ok(()),
            record: Some((ChangeKind::AddVoter, 3)),
            effect: add_effect.clone(),
            pending_after: false,
            replicas: None,
            condition: ("Progressing", "VoterAdded"),
            requeue: Duration::ZERO,
            event: Some((Normal, "VoterAdded", "ChangeVoters", Some("kq-3"))),
            metric: Some("add_voter"),
        },
        // The leader said "retry" (issue 27: the new voter did not answer
        // ApiVersions yet): planned afresh in seconds, the record gone, not
        // left to wait out PENDING_TIMEOUT_MS.
        Case {
            plan: add.clone(),
            answer: Err(retriable()),
            record: Some((ChangeKind::AddVoter, 3)),
            effect: add_effect.clone(),
            pending_after: false,
            replicas: None,
            condition: ("Progressing", "ChangeInFlight"),
            requeue: retry,
            event: Some((Normal, "VoterChangeRetrying", "ChangeVoters", None)),
            metric: Some("add_voter"),
        },
        Case {
            plan: add.clone(),
            answer: Err(QuorumError::Unreachable {
                addr: "10.0.0.10:9093".into(),
                message: "refused".into(),
            }),
            record: Some((ChangeKind::AddVoter, 3)),
            effect: add_effect.clone(),
            pending_after: true,
            replicas: None,
            condition: ("Progressing", "ChangeInFlight"),
            requeue: busy,
            event: Some((Normal, "VoterChangeRetrying", "ChangeVoters", None)),
            metric: Some("add_voter"),
        },
        Case {
            plan: add,
            answer: Err(rejected()),
            record: Some((ChangeKind::AddVoter, 3)),
            effect: add_effect,
            pending_after: false,
            replicas: None,
            condition: ("Degraded", "VoterChangeRejected"),
            requeue: busy,
            event: Some((Warning, "VoterChangeRejected", "ChangeVoters", None)),
            metric: Some("add_voter"),
        },
        Case {
            plan: remove.clone(),
            answer: Ok(()),
            record: Some((ChangeKind::RemoveVoter, 2)),
            effect: remove_effect.clone(),
            pending_after: false,
            replicas: None,
            condition: ("Progressing", "VoterRemoved"),
            requeue: Duration::ZERO,
            event: Some((Normal, "VoterRemoved", "ChangeVoters", Some("kq-2"))),
            metric: Some("remove_voter"),
        },
        Case {
            plan: remove,
            answer: Err(QuorumError::NotLeader {
                addr: "10.0.0.11:9093".into(),
            }),
            record: Some((ChangeKind::RemoveVoter, 2)),
            effect: remove_effect,
            pending_after: false,
            replicas: None,
            condition: ("Progressing", "ChangeInFlight"),
            requeue: retry,
            event: Some((Normal, "VoterChangeRetrying", "ChangeVoters", None)),
            metric: Some("remove_voter"),
        },
        Case {
            plan: Plan::ScaleStatefulSet { replicas: 4 },
            answer: Ok(()),
            record: None,
            effect: Effect::ScaleStatefulSet { replicas: 4 },
            pending_after: true,
            replicas: Some(4),
            condition: ("Progressing", "Scaling"),
            requeue: busy,
            event: Some((Normal, "Scaled", "ScaleStatefulSet", None)),
            metric: Some("scale"),
        },
        Case {
            plan: Plan::RestartPod { ordinal: 1 },
            answer: Ok(()),
            record: None,
            effect: Effect::DeletePod {
                name: "kq-1".into(),
            },
            pending_after: true,
            replicas: None,
            condition: ("Progressing", "RollingRestart"),
            requeue: busy,
            event: Some((Normal, "PodRestarted", "RestartPod", Some("kq-1"))),
            metric: Some("restart"),
        },
        Case {
            plan: Plan::RestartOnlyVoter { ordinal: 0 },
            answer: Ok(()),
            record: None,
            effect: Effect::DeletePod {
                name: "kq-0".into(),
            },
            pending_after: true,
            replicas: None,
            condition: ("Progressing", SINGLE_VOTER_RESTART),
            requeue: busy,
            event: Some((Warning, SINGLE_VOTER_RESTART, "RestartPod", Some("kq-0"))),
            metric: Some("restart_only_voter"),
        },
    ];
    let q = quorum();
    for case in cases {
        let what = format!("{:?} answered {:?}", case.plan, case.answer);
        let prepared = prepare(&case.plan, &q, now());
        let record = prepared.record.as_ref().map(|p| (p.kind, p.node_id));
        assert_eq!(record, case.record, "record of {what}");
        if let Some(p) = &prepared.record {
            assert_eq!(p.since, "2026-11-30T00:00:00Z", "{what}");
            let directory_id = kafka_uuid::parse(&p.directory_id).expect("kafka uuid");
            assert_eq!(directory_id, dir(p.node_id), "{what}");
        }
        assert_eq!(prepared.effect, case.effect, "effect of {what}");

        let c = conclude(&case.plan, &q, &case.answer);
        let mut status = KraftQuorumStatus {
            pending_change: prepared.record.clone().or_else(|| {
                prepare(
                    &Plan::AddVoter {
                        node_id: 9,
                        directory_id: dir(9),
                    },
                    &q,
                    now(),
                )
                .record
            }),
            ..KraftQuorumStatus::default()
        };
        if c.pending == PendingUpdate::Clear {
            status.pending_change = None;
        }
        assert_eq!(
            status.pending_change.is_some(),
            case.pending_after,
            "pendingChange after {what}"
        );
        assert_eq!(c.replicas, case.replicas, "replicas after {what}");
        assert_eq!(condition(&c.outcome), case.condition, "condition of {what}");
        assert_eq!(c.requeue, case.requeue, "requeue of {what}");
        let event = c.event.as_ref().map(|e| {
            (
                e.type_,
                e.reason.as_str(),
                e.action,
                e.related_pod.as_deref(),
            )
        });
        assert_eq!(event, case.event, "event of {what}");
        assert_eq!(c.metric, case.metric, "metric of {what}");
    }
}

#[test]
fn a_voter_added_event_names_the_node_its_directory_and_its_endpoint() {
    let q = quorum();
    let plan = Plan::AddVoter {
        node_id: 3,
        directory_id: dir(3),
    };
    let c = conclude(&plan, &q, &Ok(()));
    let note = c.event.expect("an event").note;
    assert_eq!(
        note,
        format!(
            "added voter node 3 (directory {}) at kq-3.kq.ns.svc.cluster.local:9093",
            kafka_uuid::to_string(dir(3))
        )
    );
    let retry = conclude(&plan, &q, &Err(retriable()));
    assert_eq!(
        retry.event.expect("an event").note,
        retriable().to_string(),
        "a retry says what Kafka answered"
    );
}
