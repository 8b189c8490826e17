//! Unregistering removed controllers (KIP-1312, issue 22): after a
//! RemoveRaftVoter commits, the removed controller's KIP-919 registration
//! stays in the metadata log, and its supported `metadata.version` range
//! blocks later upgrades (Kafka's `FeatureControlManager` checks every
//! registered controller). The id goes to `status.staleRegistrations` when
//! the removal commits ([`after_removal`]). Its pod still runs until the
//! StatefulSet is lowered, and a running controller registers again when
//! its registration is gone (KIP-919), so the operator asks the quorum to
//! unregister it (UnregisterController, api 94) only on a steady pass once
//! the pod is gone ([`retry_stale`]). A quorum can do that only from Kafka
//! 4.4 on and at `metadata.version` 4.4-IV2 or later; until then each
//! steady pass says so in a Warning Event and the id stays listed.
//!
//! [`apply`] is the pure mapping from an attempt's answer onto the status
//! list and the Event. Nothing here plans membership (the planner does) and
//! no id that is a voter is ever sent (KAFKA-20865 has Kafka refuse it too).

use kube::runtime::events::EventType;

use super::events::EventSpec;
use crate::{
    crd::KraftQuorumStatus,
    quorum::{QuorumError, QuorumSession, Unregistration},
};

/// What an attempt to unregister `node_id` changes in `status`
/// (`staleRegistrations`: removed when unregistered, kept otherwise, sorted
/// and without duplicates) and the Event to publish: Normal for an
/// unregistration, Warning with the reason for one that did not happen
/// (DESIGN 3.2: a refusal is never a silent wait). Pure.
pub fn apply(
    status: &mut KraftQuorumStatus,
    node_id: i32,
    answer: &Result<Unregistration, QuorumError>,
) -> Option<EventSpec> {
    let why = match answer {
        Ok(Unregistration::Unregistered) => {
            status.stale_registrations.retain(|&id| id != node_id);
            return Some(EventSpec::new(
                EventType::Normal,
                "ControllerUnregistered",
                "UnregisterController",
                format!(
                    "unregistered controller {node_id} (KIP-1312): its registration no longer blocks metadata.version upgrades"
                ),
            ));
        }
        Ok(Unregistration::Unsupported { reason }) => reason.clone(),
        Err(e) => e.to_string(),
    };
    note_stale(status, node_id);
    Some(EventSpec::new(
        EventType::Warning,
        "RegistrationKept",
        "UnregisterController",
        format!(
            "controller {node_id} is no longer a voter but its registration stays ({why}); it blocks metadata.version upgrades until unregistered, and is listed in status.staleRegistrations"
        ),
    ))
}

fn note_stale(status: &mut KraftQuorumStatus, node_id: i32) {
    if !status.stale_registrations.contains(&node_id) {
        status.stale_registrations.push(node_id);
        status.stale_registrations.sort_unstable();
    }
}

/// After `node_id` was removed from the voters (RemoveRaftVoter
/// committed): its registration is listed as stale until unregistered.
/// Pure.
pub fn after_removal(status: &mut KraftQuorumStatus, node_id: i32) {
    note_stale(status, node_id);
}

/// On a steady pass: forgets stale ids that are voters again (a controller
/// added back registers afresh), then, for each other stale id whose pod is
/// gone (its ordinal, which is its node id, at or above `status.replicas`),
/// one UnregisterController attempt mapped by [`apply`]. Returns the Events
/// to publish.
pub async fn retry_stale<S: QuorumSession>(
    session: &mut S,
    status: &mut KraftQuorumStatus,
) -> Vec<EventSpec> {
    let voters: Vec<i32> = status.voters.iter().map(|v| v.node_id).collect();
    status.stale_registrations.retain(|id| !voters.contains(id));
    let mut events = Vec::new();
    let gone: Vec<i32> = status
        .stale_registrations
        .iter()
        .copied()
        .filter(|&id| id >= status.replicas)
        .collect();
    for node_id in gone {
        let answer = session.unregister_controller(node_id).await;
        events.extend(apply(status, node_id, &answer));
    }
    events
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{
        crd::VoterStatus,
        quorum::{QuorumClient, fake::FakeQuorum},
    };

    fn unsupported() -> Result<Unregistration, QuorumError> {
        Ok(Unregistration::Unsupported {
            reason: "finalized metadata.version level 27 is below 4.4-IV2 (33)".into(),
        })
    }

    /// (stale before, answer for node 3, stale after, Event reason).
    type Row = (
        Vec<i32>,
        Result<Unregistration, QuorumError>,
        Vec<i32>,
        Option<&'static str>,
    );

    /// Table: (stale before, answer for node 3) → (stale after, Event reason).
    #[test]
    fn an_attempt_updates_the_stale_list_and_says_so_once() {
        let rejected = Err(QuorumError::Rejected {
            addr: "10.0.0.10:9093".into(),
            code: 42,
            name: "INVALID_REQUEST".into(),
            message: "controller 3 is a voter".into(),
        });
        let cases: [Row; 6] = [
            (
                vec![],
                Ok(Unregistration::Unregistered),
                vec![],
                Some("ControllerUnregistered"),
            ),
            (
                vec![3, 4],
                Ok(Unregistration::Unregistered),
                vec![4],
                Some("ControllerUnregistered"),
            ),
            (vec![], unsupported(), vec![3], Some("RegistrationKept")),
            (vec![4], unsupported(), vec![3, 4], Some("RegistrationKept")),
            // Already listed: stays once, and the Event says why again.
            (vec![3], unsupported(), vec![3], Some("RegistrationKept")),
            (vec![], rejected, vec![3], Some("RegistrationKept")),
        ];
        for (before, answer, after, reason) in cases {
            let mut status = KraftQuorumStatus {
                stale_registrations: before.clone(),
                ..KraftQuorumStatus::default()
            };
            let event = apply(&mut status, 3, &answer);
            assert_eq!(status.stale_registrations, after, "{before:?} {answer:?}");
            assert_eq!(
                event.as_ref().map(|e| e.reason.as_str()),
                reason,
                "{before:?} {answer:?}"
            );
        }
        let mut status = KraftQuorumStatus::default();
        let event = apply(&mut status, 3, &unsupported()).expect("an event");
        assert_eq!(event.type_, EventType::Warning);
        assert!(
            event.note.contains("level 27 is below 4.4-IV2"),
            "{}",
            event.note
        );
    }

    fn fake(unregistration: Option<Result<Unregistration, QuorumError>>) -> Arc<FakeQuorum> {
        Arc::new(FakeQuorum {
            leader_addr: "10.0.0.10:9093".into(),
            description: None,
            change_result: Ok(()),
            calls: Mutex::new(vec![]),
            broker_acls: Mutex::new(vec![]),
            unregistration,
        })
    }

    fn voter(node_id: i32) -> VoterStatus {
        VoterStatus {
            node_id,
            directory_id: String::new(),
            endpoint: None,
            lag: 0,
            caught_up: true,
            termination_message: None,
        }
    }

    #[tokio::test]
    async fn a_quorum_before_kafka_4_4_keeps_the_registration_listed_and_sends_nothing() {
        let quorum = fake(None);
        let mut session = quorum.session(vec!["10.0.0.10:9093".parse().expect("addr")], None);
        let mut status = KraftQuorumStatus {
            replicas: 3,
            ..KraftQuorumStatus::default()
        };
        after_removal(&mut status, 3);
        after_removal(&mut status, 3);
        assert_eq!(status.stale_registrations, vec![3]);
        let events = retry_stale(&mut session, &mut status).await;
        assert_eq!(status.stale_registrations, vec![3]);
        assert_eq!(
            events.iter().map(|e| e.reason.as_str()).collect::<Vec<_>>(),
            ["RegistrationKept"]
        );
        assert!(quorum.calls.lock().expect("lock").is_empty());
    }

    #[tokio::test]
    async fn a_steady_pass_unregisters_stale_non_voters_and_forgets_voters() {
        let quorum = fake(Some(Ok(Unregistration::Unregistered)));
        let mut session = quorum.session(vec!["10.0.0.10:9093".parse().expect("addr")], None);
        let mut status = KraftQuorumStatus {
            voters: vec![voter(0), voter(1), voter(2), voter(4)],
            replicas: 5,
            stale_registrations: vec![4, 5],
            ..KraftQuorumStatus::default()
        };
        // Node 5's pod is gone (ordinal 5 >= 5 pods); node 4 is a voter again.
        let events = retry_stale(&mut session, &mut status).await;
        assert!(status.stale_registrations.is_empty());
        assert_eq!(events.len(), 1);
        assert_eq!(
            *quorum.calls.lock().expect("lock"),
            vec!["unregister  5".to_string()]
        );
        // A stale id whose pod still runs is not sent yet.
        let mut running = KraftQuorumStatus {
            replicas: 5,
            stale_registrations: vec![3],
            ..KraftQuorumStatus::default()
        };
        assert!(retry_stale(&mut session, &mut running).await.is_empty());
        assert_eq!(running.stale_registrations, vec![3]);
        assert_eq!(quorum.calls.lock().expect("lock").len(), 1);
    }
}
