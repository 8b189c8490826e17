//! The adoption of a static quorum (`spec.adopt`, issue 22; docs/decisions.md
//! D15): a quorum that runs with `controller.quorum.voters` (kraft.version 0)
//! is made dynamic (KIP-853) without rewriting any of its data, in the steps
//! Apache Kafka documents for it (KAFKA-16538):
//!
//! | `status.adoptionPhase` | pods run with | the operator |
//! |---|---|---|
//! | StaticQuorum | `controller.quorum.voters` | waits until the leader sees every adopted voter caught up, then sends UpdateFeatures `kraft.version=1` (answered once committed) |
//! | RollingToBootstrapServers | `controller.quorum.bootstrap.servers` (a new config hash) | lets the planner restart one pod at a time (row 7, quorum-aware); no other membership change |
//! | Adopted | the same | nothing more: the quorum is managed as any other |
//!
//! Owns the decision of each step ([`static_step`], [`gate`]) and the one
//! RPC of the StaticQuorum phase ([`upgrade`]). It must not restart pods or
//! change voters itself (the planner and executor do) and must not write to
//! the API server (the reconciler writes status and publishes the Events it
//! returns).

use std::{collections::BTreeSet, time::Duration};

use kube::runtime::events::EventType;
use uuid::Uuid;

use super::{BUSY_REQUEUE, RETRIABLE_REQUEUE, events::EventSpec, status::Outcome};
use crate::{
    crd::{AdoptionPhase, KraftQuorumStatus},
    kafka_uuid, planner,
    quorum::{QuorumDescription, QuorumError, QuorumSession},
    validate::ValidatedQuorum,
};

/// Condition reason while the static quorum is prepared for its upgrade.
pub const ADOPTING: &str = "AdoptingStaticQuorum";
/// Event and condition reason: kraft.version 1 is committed.
pub const KRAFT_VERSION_UPGRADED: &str = "KraftVersionUpgraded";
/// Degraded reason: the quorum the volumes hold is not the one `spec.adopt` names.
pub const ADOPT_MISMATCH: &str = "AdoptMismatch";
/// Degraded reason and Warning Event: the leader refused the upgrade.
pub const UPGRADE_REFUSED: &str = "KraftVersionUpgradeRefused";
/// Event reason: every pod runs with bootstrap servers.
pub const ADOPTED: &str = "Adopted";

/// What the StaticQuorum phase does this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StaticStep {
    /// Every adopted voter is a caught-up voter: send the upgrade.
    Upgrade,
    /// Not yet (no leader, a voter behind): the message says what is awaited.
    Wait(String),
    /// The running quorum disagrees with `spec.adopt`: nothing is sent.
    Mismatch(String),
}

/// The StaticQuorum phase's step for the quorum as its leader `described`
/// it. The voter set must be exactly the adopted node ids, and a voter that
/// reports a directory id (DescribeQuorum v2) must report the adopted one
/// (its `meta.properties`); every voter must be caught up, as Kafka's leader
/// requires of all voters before it accepts the upgrade.
pub fn static_step(q: &ValidatedQuorum, described: Option<&QuorumDescription>) -> StaticStep {
    let Some(d) = described else {
        return StaticStep::Wait("no controller answered DescribeQuorum as leader".into());
    };
    let running: BTreeSet<i32> = d.voters.iter().map(|v| v.node_id).collect();
    let adopted: BTreeSet<i32> = q.initial_voters.iter().map(|(id, _)| *id).collect();
    if running != adopted {
        return StaticStep::Mismatch(format!(
            "the running quorum's voters are {running:?}, spec.adopt.voters names {adopted:?}"
        ));
    }
    for v in d.voters.iter().filter(|v| v.directory_id != Uuid::nil()) {
        if let Some((_, want)) = q.initial_voters.iter().find(|(id, _)| *id == v.node_id)
            && *want != v.directory_id
        {
            return StaticStep::Mismatch(format!(
                "voter {} has directory id {}, spec.adopt.voters names {}",
                v.node_id,
                kafka_uuid::to_string(v.directory_id),
                kafka_uuid::to_string(*want)
            ));
        }
    }
    let behind: Vec<i32> = d
        .voters
        .iter()
        .filter(|v| !d.is_caught_up(v))
        .map(|v| v.node_id)
        .collect();
    if !behind.is_empty() {
        return StaticStep::Wait(format!("voters {behind:?} are not caught up yet"));
    }
    StaticStep::Upgrade
}

/// What a pass of the StaticQuorum phase leads to: the condition, the
/// requeue, an Event; `status.adoptionPhase` moves on after a committed
/// upgrade. Sends at most one UpdateFeatures.
pub async fn upgrade<S: QuorumSession>(
    q: &ValidatedQuorum,
    status: &mut KraftQuorumStatus,
    described: Option<&QuorumDescription>,
    session: &mut S,
) -> (Outcome, Duration, Option<EventSpec>) {
    let progressing = |message: String| Outcome::Progressing {
        reason: ADOPTING.into(),
        message,
    };
    match static_step(q, described) {
        StaticStep::Wait(message) => (progressing(message), BUSY_REQUEUE, None),
        StaticStep::Mismatch(message) => {
            let event = EventSpec::new(EventType::Warning, ADOPT_MISMATCH, "Adopt", &message);
            let outcome = Outcome::Degraded {
                reason: ADOPT_MISMATCH.into(),
                message,
            };
            (outcome, BUSY_REQUEUE, Some(event))
        }
        StaticStep::Upgrade => match session.upgrade_kraft_version().await {
            Ok(()) => {
                status.adoption_phase = Some(AdoptionPhase::RollingToBootstrapServers);
                let message = "kraft.version 1 is committed: restarting the pods one at a time \
                               onto controller.quorum.bootstrap.servers"
                    .to_string();
                let event =
                    EventSpec::new(EventType::Normal, KRAFT_VERSION_UPGRADED, "Adopt", &message);
                let outcome = Outcome::Progressing {
                    reason: KRAFT_VERSION_UPGRADED.into(),
                    message,
                };
                (outcome, Duration::ZERO, Some(event))
            }
            Err(e @ QuorumError::Rejected { .. }) => {
                let message = format!("UpdateFeatures kraft.version=1: {e}");
                let event = EventSpec::new(EventType::Warning, UPGRADE_REFUSED, "Adopt", &message);
                let outcome = Outcome::Degraded {
                    reason: UPGRADE_REFUSED.into(),
                    message,
                };
                (outcome, BUSY_REQUEUE, Some(event))
            }
            Err(e) => (
                progressing(format!("UpdateFeatures kraft.version=1: {e}")),
                RETRIABLE_REQUEUE,
                None,
            ),
        },
    }
}

/// The planned action as the RollingToBootstrapServers phase lets it run:
/// restarts (the rolling restart onto bootstrap servers) and waits go
/// through; a membership or StatefulSet change waits until the quorum is
/// adopted. Other phases: unchanged.
pub fn gate(phase: Option<AdoptionPhase>, plan: planner::Action) -> planner::Action {
    let rolling = phase == Some(AdoptionPhase::RollingToBootstrapServers);
    match plan {
        planner::Action::AddVoter { .. }
        | planner::Action::RemoveVoter { .. }
        | planner::Action::ScaleStatefulSet { .. }
            if rolling =>
        {
            planner::Action::Wait {
                reason: planner::WaitReason::Adopting,
                message: format!("{plan:?} waits until every pod runs with bootstrap servers"),
            }
        }
        other => other,
    }
}

/// Whether this pass completes the adoption: the phase is
/// RollingToBootstrapServers and the planner found nothing left to do
/// (every pod up to date, ready and caught up). The reconciler then records
/// `Adopted` and publishes the Event.
pub fn completes(phase: Option<AdoptionPhase>, plan: &planner::Action) -> bool {
    phase == Some(AdoptionPhase::RollingToBootstrapServers) && *plan == planner::Action::Steady
}

#[cfg(test)]
#[path = "adopt_tests.rs"]
mod tests;
