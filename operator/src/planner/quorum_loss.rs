//! Quorum-loss detection and the recovery's next step (issue 26): pure
//! functions from what the operator knows (the last known voters, their
//! volumes as recorded and as they are now, how long no leader answered,
//! the recovery step recorded in status, the pods and the recover Job) to
//! one [`Step`].
//!
//! A quorum is lost when no leader answered for
//! `spec.recovery.quorumLossAfterSeconds` and a majority of the last known
//! voters' volumes are provably gone: the claim missing, or re-created (its
//! uid differs from the one recorded while the voter was caught up). A
//! volume with no recorded uid proves nothing and never counts as lost.
//! The recovery keeps the one surviving volume: with two or more survivors
//! it is left to a person (docs/operations.md), because every other
//! survivor's old log would have to be wiped first, which the operator's
//! RBAC does not allow (it never deletes a PersistentVolumeClaim).
//!
//! Owns these decisions only. It must not do I/O, read a clock or know
//! Kubernetes objects; `controller::recovery` maps the world into
//! [`LossInput`] and [`StepInput`] and carries the [`Step`] out.

use std::collections::BTreeMap;

use crate::crd::RecoveryPhase;

use super::majority;

/// Everything detection decides from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LossInput {
    /// Node ids of the last known voter set (`status.voters`).
    pub voters: Vec<i32>,
    /// Claim uid per node id, recorded while it was a caught-up voter.
    pub recorded: BTreeMap<i32, String>,
    /// Claim uid per ordinal of the claims that exist now.
    pub claims: BTreeMap<i32, String>,
    /// How long (ms) no controller answered as leader; `None` while one does.
    pub no_leader_ms: Option<i64>,
    /// `spec.recovery.quorumLossAfterSeconds`, in ms.
    pub after_ms: i64,
}

/// What detection found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loss {
    /// No quorum loss (a leader answers, or not for long enough, or fewer
    /// than a majority of volumes are provably gone).
    None,
    /// A majority of the voters' volumes are gone and no leader answered
    /// for long enough.
    Lost {
        /// Voters whose volume is gone, by node id.
        lost: Vec<i32>,
        /// Voters whose recorded volume is still there, by node id.
        survivors: Vec<i32>,
        /// The size of the last known voter set.
        voters: usize,
    },
}

/// Detects a quorum loss (see the module doc).
pub fn detect(input: &LossInput) -> Loss {
    let Some(no_leader_ms) = input.no_leader_ms else {
        return Loss::None;
    };
    if no_leader_ms < input.after_ms || input.voters.is_empty() {
        return Loss::None;
    }
    let mut lost = Vec::new();
    let mut survivors = Vec::new();
    for id in &input.voters {
        let Some(recorded) = input.recorded.get(id) else {
            continue;
        };
        match input.claims.get(id) {
            Some(now) if now == recorded => survivors.push(*id),
            _ => lost.push(*id),
        }
    }
    lost.sort_unstable();
    survivors.sort_unstable();
    if lost.len() < majority(input.voters.len()) {
        return Loss::None;
    }
    Loss::Lost {
        lost,
        survivors,
        voters: input.voters.len(),
    }
}

/// The recover Job as observed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// No such Job.
    Absent,
    /// Created, not finished.
    Running,
    /// Finished with success (`recover` exited 0).
    Succeeded,
    /// Failed; the message says why, if known.
    Failed(String),
}

/// Everything the recovery's next step is decided from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepInput {
    /// What [`detect`] found this pass.
    pub loss: Loss,
    /// `spec.recovery.allowQuorumLossRecovery`, or a new
    /// `kraft.krabka.io/recover-quorum-loss` annotation.
    pub allowed: bool,
    /// The step recorded in `status.recovery.phase`.
    pub phase: Option<RecoveryPhase>,
    /// `status.recovery.survivor`.
    pub survivor: Option<i32>,
    /// Controller pods that still exist (any state).
    pub pods: usize,
    /// The survivor's recover Job.
    pub job: JobState,
    /// The leader that answered DescribeQuorum this pass, if any.
    pub leader: Option<i32>,
}

/// The one thing the recovery does this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// No quorum loss, no recovery in progress: the membership planner runs.
    None,
    /// A quorum loss the operator does not repair (no opt-in, several or no
    /// survivors): condition `QuorumLost` with `message`; nothing is touched.
    Report {
        /// The condition's message (names the lost voters).
        message: String,
    },
    /// Record `Stopping` with `survivor`, then scale the StatefulSet to 0.
    Begin {
        /// The node id whose volume is kept.
        survivor: i32,
    },
    /// Keep the StatefulSet at 0 until its pods are gone.
    WaitStopped,
    /// Record `Recovering`, then create the recover Job on the survivor's
    /// volume (again, if it is absent: creating it is idempotent).
    RunRecover,
    /// The recover Job runs.
    WaitRecover,
    /// The recover Job failed: condition Degraded with its message; the
    /// StatefulSet stays at 0 and nothing else is done (a person looks).
    RecoverFailed {
        /// Why, from the Job.
        message: String,
    },
    /// Record `Starting`, then bring the StatefulSet back to its size and
    /// delete the finished Job.
    Start,
    /// The survivor has not answered as leader yet.
    WaitLeader,
    /// A leader answers: clear `status.recovery.phase`; the membership
    /// planner re-adds the others as voters, one at a time.
    Done,
}

impl Step {
    /// Whether the StatefulSet must be held at 0 replicas this pass.
    pub fn holds_statefulset_at_zero(&self) -> bool {
        matches!(
            self,
            Step::Begin { .. }
                | Step::WaitStopped
                | Step::RunRecover
                | Step::WaitRecover
                | Step::RecoverFailed { .. }
        )
    }
}

fn ids(v: &[i32]) -> String {
    v.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// The condition message of a quorum loss left to a person.
fn report(lost: &[i32], survivors: &[i32], voters: usize, why: &str) -> Step {
    let survivors = if survivors.is_empty() {
        "none".to_string()
    } else {
        ids(survivors)
    };
    Step::Report {
        message: format!(
            "the quorum has no leader and lost the volumes of voters {} of {voters} (a majority); surviving volumes: {survivors}; {why}; see docs/operations.md, \"Quorum loss\"",
            ids(lost)
        ),
    }
}

/// The recovery's next step (see [`Step`]); a recorded phase always wins
/// over detection, so the recovery finishes across operator restarts.
pub fn next_step(input: &StepInput) -> Step {
    match input.phase {
        None => match &input.loss {
            Loss::None => Step::None,
            Loss::Lost {
                lost,
                survivors,
                voters,
            } => {
                if survivors.is_empty() {
                    report(
                        lost,
                        survivors,
                        *voters,
                        "no volume to recover from: restore from a snapshot export (format --from-snapshot)",
                    )
                } else if !input.allowed {
                    report(
                        lost,
                        survivors,
                        *voters,
                        "spec.recovery.allowQuorumLossRecovery is false (and no new kraft.krabka.io/recover-quorum-loss annotation), so the operator touches nothing",
                    )
                } else if survivors.len() > 1 {
                    report(
                        lost,
                        survivors,
                        *voters,
                        "the operator recovers from one surviving volume only (the others would have to be wiped): recover by hand",
                    )
                } else {
                    Step::Begin {
                        survivor: survivors[0],
                    }
                }
            }
        },
        Some(RecoveryPhase::Stopping) => {
            if input.pods == 0 {
                Step::RunRecover
            } else {
                Step::WaitStopped
            }
        }
        Some(RecoveryPhase::Recovering) => match &input.job {
            JobState::Absent => Step::RunRecover,
            JobState::Running => Step::WaitRecover,
            JobState::Succeeded => Step::Start,
            JobState::Failed(message) => Step::RecoverFailed {
                message: message.clone(),
            },
        },
        Some(RecoveryPhase::Starting) => {
            if input.leader.is_some() {
                Step::Done
            } else {
                Step::WaitLeader
            }
        }
    }
}

#[cfg(test)]
#[path = "quorum_loss_tests.rs"]
mod tests;
