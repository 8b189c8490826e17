//! The adoption steps as tables: the StaticQuorum phase's decision for a
//! described quorum, the UpdateFeatures answer → (phase, condition, requeue,
//! Event), and what the RollingToBootstrapServers phase lets the planner do.

use std::collections::BTreeMap;

use super::*;
use crate::{
    crd::KraftQuorum,
    planner::{Action as Plan, WaitReason},
    quorum::{ReplicaState, fake::FakeQuorum},
    validate::validate,
};

const CLUSTER: &str = "MkU3OEVBNTcwNTJENDM2Qg";

fn dir(id: i32) -> Uuid {
    Uuid::from_u128(1000 + id as u128)
}

/// Three adopted voters (directory ids `dir(0..3)`) in phase StaticQuorum.
fn quorum() -> ValidatedQuorum {
    let voters: String = (0..3)
        .map(|id| {
            format!(
                "  - {{nodeId: {id}, directoryId: {}}}\n",
                kafka_uuid::to_string(dir(id))
            )
        })
        .collect();
    let yaml = format!(
        "apiVersion: kraft.krabka.io/v1alpha1\nkind: KraftQuorum\nmetadata: {{name: kq, namespace: ns, uid: 7e5b6f5e-0000-4000-8000-000000000001, generation: 2}}\nspec:\n  replicas: 3\n  image: 'kraft:1'\n  storage: {{size: 1Gi}}\n  adopt:\n    clusterId: {CLUSTER}\n    voters:\n{}status:\n  clusterId: {CLUSTER}\n  bootstrapped: true\n  adoptionPhase: StaticQuorum\n  initialVoters:\n{}",
        voters.replace("  - ", "    - "),
        voters
    );
    let kq: KraftQuorum = serde_yaml::from_str(&yaml).expect("test yaml");
    validate(&kq, Some(3), "cluster.local").expect("valid")
}

/// A leader (0) describing `voters` as `(id, directory id, caught up)`;
/// timestamps relative to the leader's now (10 000 ms).
fn described(voters: &[(i32, Uuid, bool)]) -> QuorumDescription {
    QuorumDescription {
        leader_id: 0,
        leader_epoch: 4,
        high_watermark: 50,
        voters: voters
            .iter()
            .map(|(id, d, caught)| ReplicaState {
                node_id: *id,
                directory_id: *d,
                log_end_offset: 50,
                last_fetch_timestamp_ms: Some(10_000),
                last_caught_up_timestamp_ms: Some(if *caught { 10_000 } else { 1_000 }),
            })
            .collect(),
        observers: vec![],
        endpoints: BTreeMap::new(),
    }
}

// KAFKA-16538: the upgrade is sent only to the quorum spec.adopt names,
// once every voter is caught up; static voters report no directory id.
#[test]
fn the_static_phase_upgrades_only_the_named_quorum_with_every_voter_caught_up() {
    let q = quorum();
    let nil = Uuid::nil();
    let table: Vec<(Option<QuorumDescription>, StaticStep)> = vec![
        (
            None,
            StaticStep::Wait("no controller answered DescribeQuorum as leader".into()),
        ),
        (
            Some(described(&[(0, nil, true), (1, nil, true), (2, nil, true)])),
            StaticStep::Upgrade,
        ),
        (
            Some(described(&[
                (0, dir(0), true),
                (1, dir(1), true),
                (2, dir(2), true),
            ])),
            StaticStep::Upgrade,
        ),
        (
            Some(described(&[
                (0, nil, true),
                (1, nil, false),
                (2, nil, true),
            ])),
            StaticStep::Wait("voters [1] are not caught up yet".into()),
        ),
        (
            Some(described(&[(0, nil, true), (1, nil, true)])),
            StaticStep::Mismatch(
                "the running quorum's voters are {0, 1}, spec.adopt.voters names {0, 1, 2}".into(),
            ),
        ),
        (
            Some(described(&[
                (0, nil, true),
                (1, dir(7), true),
                (2, nil, true),
            ])),
            StaticStep::Mismatch(format!(
                "voter 1 has directory id {}, spec.adopt.voters names {}",
                kafka_uuid::to_string(dir(7)),
                kafka_uuid::to_string(dir(1))
            )),
        ),
    ];
    for (d, expected) in table {
        assert_eq!(static_step(&q, d.as_ref()), expected, "{d:?}");
    }
}

fn fake(change_result: Result<(), QuorumError>) -> std::sync::Arc<FakeQuorum> {
    std::sync::Arc::new(FakeQuorum {
        leader_addr: "10.0.0.10:9093".into(),
        description: Some(described(&[
            (0, Uuid::nil(), true),
            (1, Uuid::nil(), true),
            (2, Uuid::nil(), true),
        ])),
        change_result,
        calls: Default::default(),
        broker_acls: Default::default(),
        unregistration: None,
    })
}

async fn run(
    change_result: Result<(), QuorumError>,
) -> (
    KraftQuorumStatus,
    Outcome,
    Duration,
    Option<EventSpec>,
    Vec<String>,
) {
    use crate::quorum::QuorumClient;
    let fake = fake(change_result);
    let mut session = fake.session(vec!["10.0.0.10:9093".parse().expect("addr")], None);
    let d = session.describe_quorum().await.ok();
    let mut status = KraftQuorumStatus {
        adoption_phase: Some(AdoptionPhase::StaticQuorum),
        ..KraftQuorumStatus::default()
    };
    let (outcome, requeue, event) = upgrade(&quorum(), &mut status, d.as_ref(), &mut session).await;
    let calls = fake.calls.lock().expect("lock").clone();
    (status, outcome, requeue, event, calls)
}

#[tokio::test]
async fn a_committed_upgrade_moves_to_the_rolling_phase_and_says_so() {
    let (status, outcome, requeue, event, calls) = run(Ok(())).await;
    assert_eq!(
        calls,
        [
            "describe 10.0.0.10:9093",
            "upgrade_kraft_version 10.0.0.10:9093"
        ]
    );
    assert_eq!(
        status.adoption_phase,
        Some(AdoptionPhase::RollingToBootstrapServers)
    );
    assert!(
        matches!(&outcome, Outcome::Progressing { reason, .. } if reason == KRAFT_VERSION_UPGRADED),
        "{outcome:?}"
    );
    assert_eq!(requeue, Duration::ZERO);
    let event = event.expect("an event");
    assert_eq!(
        (event.type_, event.reason.as_str()),
        (EventType::Normal, KRAFT_VERSION_UPGRADED)
    );
}

#[tokio::test]
async fn a_refused_upgrade_stays_static_degraded_with_a_warning_and_a_retriable_one_retries_soon() {
    let refused = QuorumError::Rejected {
        addr: "10.0.0.10:9093".into(),
        code: 95,
        name: "INVALID_UPDATE_VERSION".into(),
        message: "voter 2 supports kraft.version 0 to 0, not 1".into(),
    };
    let (status, outcome, requeue, event, _) = run(Err(refused)).await;
    assert_eq!(status.adoption_phase, Some(AdoptionPhase::StaticQuorum));
    assert!(
        matches!(&outcome, Outcome::Degraded { reason, message } if reason == UPGRADE_REFUSED && message.contains("INVALID_UPDATE_VERSION")),
        "{outcome:?}"
    );
    assert_eq!(requeue, BUSY_REQUEUE);
    assert_eq!(event.expect("an event").type_, EventType::Warning);

    let timed_out = QuorumError::Retriable {
        addr: "10.0.0.10:9093".into(),
        code: 7,
        name: "REQUEST_TIMED_OUT".into(),
        message: "not committed in time".into(),
    };
    let (status, outcome, requeue, event, _) = run(Err(timed_out)).await;
    assert_eq!(status.adoption_phase, Some(AdoptionPhase::StaticQuorum));
    assert!(
        matches!(&outcome, Outcome::Progressing { reason, .. } if reason == ADOPTING),
        "{outcome:?}"
    );
    assert_eq!(requeue, RETRIABLE_REQUEUE);
    assert!(event.is_none());
}

#[test]
fn the_rolling_phase_lets_restarts_through_holds_membership_changes_and_completes_when_steady() {
    let rolling = Some(AdoptionPhase::RollingToBootstrapServers);
    let restart = Plan::RestartPod { ordinal: 2 };
    assert_eq!(gate(rolling, restart.clone()), restart);
    for held in [
        Plan::ScaleStatefulSet { replicas: 4 },
        Plan::AddVoter {
            node_id: 3,
            directory_id: dir(3),
        },
        Plan::RemoveVoter {
            node_id: 2,
            directory_id: dir(2),
        },
    ] {
        assert!(
            matches!(
                gate(rolling, held.clone()),
                Plan::Wait {
                    reason: WaitReason::Adopting,
                    ..
                }
            ),
            "{held:?}"
        );
        // Adopted, or never adopting: the planner's action as it is.
        assert_eq!(gate(Some(AdoptionPhase::Adopted), held.clone()), held);
        assert_eq!(gate(None, held.clone()), held);
    }
    assert!(completes(rolling, &Plan::Steady));
    assert!(!completes(rolling, &restart));
    assert!(!completes(Some(AdoptionPhase::Adopted), &Plan::Steady));
    assert!(!completes(None, &Plan::Steady));
}
