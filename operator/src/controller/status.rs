//! Status (DESIGN 3.1): the complete `KraftQuorumStatus` written at the end
//! of each pass, and the conditions Ready / Progressing / Degraded.
//!
//! Pure. The status is written whole with server-side apply, so every field
//! the operator owns (identity included) is always carried over from the
//! previous status: a field left out of an apply would be removed.

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};

use crate::{
    crd::{KraftQuorumStatus, VoterStatus},
    kafka_uuid,
    quorum::{QuorumDescription, ReplicaState},
};

/// What a pass concluded, mapped onto the three conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Spec met, quorum healthy: Ready=True.
    Ready,
    /// Working towards the spec: Progressing=True with a reason.
    Progressing { reason: String, message: String },
    /// Cannot make progress without help: Degraded=True with a reason.
    Degraded { reason: String, message: String },
}

/// Condition type names.
pub const READY: &str = "Ready";
/// Condition type names.
pub const PROGRESSING: &str = "Progressing";
/// Condition type names.
pub const DEGRADED: &str = "Degraded";
/// Condition type: reconciliation paused by `kraft.krabka.io/pause-reconciliation`.
pub const PAUSED: &str = "Paused";

/// The `Paused=True` condition (reason `ReconciliationPaused`); its
/// transition time stays that of a previous `Paused=True`.
pub fn paused_condition(
    previous: &[Condition],
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    condition(
        previous,
        PAUSED,
        true,
        "ReconciliationPaused",
        "kraft.krabka.io/pause-reconciliation is \"true\": the operator changes nothing",
        generation,
        now,
    )
}

fn condition(
    previous: &[Condition],
    type_: &str,
    on: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    let status = if on { "True" } else { "False" }.to_string();
    // The transition time moves only when the status flips.
    let last_transition_time = previous
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    Condition {
        type_: type_.to_string(),
        status,
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: generation,
        last_transition_time,
    }
}

/// The three conditions for `outcome`.
pub fn conditions(
    previous: &[Condition],
    outcome: &Outcome,
    generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    let c = |t, on, reason: &str, message: &str| {
        condition(previous, t, on, reason, message, generation, now)
    };
    match outcome {
        Outcome::Ready => vec![
            c(
                READY,
                true,
                "QuorumHealthy",
                "all voters are in place and caught up",
            ),
            c(PROGRESSING, false, "Steady", ""),
            c(DEGRADED, false, "Healthy", ""),
        ],
        Outcome::Progressing { reason, message } => vec![
            c(READY, false, reason, message),
            c(PROGRESSING, true, reason, message),
            c(DEGRADED, false, "Healthy", ""),
        ],
        Outcome::Degraded { reason, message } => vec![
            c(READY, false, reason, message),
            c(PROGRESSING, false, reason, ""),
            c(DEGRADED, true, reason, message),
        ],
    }
}

fn replica_status(d: &QuorumDescription, r: &ReplicaState) -> VoterStatus {
    VoterStatus {
        node_id: r.node_id,
        directory_id: kafka_uuid::to_string(r.directory_id),
        endpoint: d.endpoints.get(&r.node_id).cloned(),
        lag: d.lag(r),
        caught_up: d.is_caught_up(r),
        termination_message: None,
    }
}

/// Sets each voter's `terminationMessage` from `stopped` (see
/// [`super::observe::stopped_controllers`]) and clears it for the others.
pub fn note_stopped(status: &mut KraftQuorumStatus, stopped: &[(i32, String)]) {
    for voter in &mut status.voters {
        voter.termination_message = stopped
            .iter()
            .find(|(id, _)| *id == voter.node_id)
            .map(|(_, line)| line.clone());
    }
}

/// `outcome` with the pods the scheduler has not placed (see
/// [`super::observe::unscheduled_pods`]) added to its message, which the
/// `Progressing` or `Degraded` condition (and `Ready=False`) then carry: a
/// pass that waits or is degraded while a pod cannot be scheduled says so
/// (the wait for a new voter otherwise reads only "node 4 is not a
/// caught-up observer yet"). One pod: "; pod q-4 is not scheduled (why)";
/// several: "; pods q-3, q-4 are not scheduled (q-3: why)", the first
/// pod's why. The `Ready` outcome is returned as it is.
pub fn note_unscheduled(outcome: Outcome, unscheduled: &[(String, String)]) -> Outcome {
    let Some((first, why)) = unscheduled.first() else {
        return outcome;
    };
    let note = if unscheduled.len() == 1 {
        format!("pod {first} is not scheduled ({why})")
    } else {
        let names: Vec<&str> = unscheduled.iter().map(|(n, _)| n.as_str()).collect();
        format!(
            "pods {} are not scheduled ({first}: {why})",
            names.join(", ")
        )
    };
    match outcome {
        Outcome::Ready => Outcome::Ready,
        Outcome::Progressing { reason, message } => Outcome::Progressing {
            reason,
            message: format!("{message}; {note}"),
        },
        Outcome::Degraded { reason, message } => Outcome::Degraded {
            reason,
            message: format!("{message}; {note}"),
        },
    }
}

/// Copies what DescribeQuorum said into `status` (leader, epoch, high
/// watermark, voters, observers). Without an answer the last known voter set
/// is kept (it is the record of identity) and the leader is cleared.
pub fn observe_into(status: &mut KraftQuorumStatus, d: Option<&QuorumDescription>) {
    match d {
        Some(d) => {
            status.leader_id = Some(d.leader_id);
            status.leader_epoch = Some(d.leader_epoch);
            status.high_watermark = Some(d.high_watermark);
            status.voters = d.voters.iter().map(|r| replica_status(d, r)).collect();
            status.observers = d.observers.iter().map(|r| replica_status(d, r)).collect();
            status.bootstrapped = true;
        }
        None => {
            status.leader_id = None;
            status.observers.clear();
        }
    }
}

/// Whether `new` equals `old` but for the offsets that move by themselves
/// on a running quorum: the leader's high watermark and each voter's and
/// observer's lag (records). The leader commits a no-op record every 500 ms
/// (Kafka's `metadata.max.idle.interval.ms`, `QuorumController`), so these
/// change at every DescribeQuorum. `old`: the stored status (`None`: never
/// written, which is a difference). Replicas are compared in order: ours
/// are listed by node id (DescribeQuorum's answer is built from ordered
/// maps), so a reordering counts as a change.
pub fn differs_only_in_offsets(old: Option<&KraftQuorumStatus>, new: &KraftQuorumStatus) -> bool {
    fn without_offsets(s: &KraftQuorumStatus) -> KraftQuorumStatus {
        let mut s = s.clone();
        s.high_watermark = None;
        for r in s.voters.iter_mut().chain(s.observers.iter_mut()) {
            r.lag = 0;
        }
        s
    }
    old.is_some_and(|old| without_offsets(old) == without_offsets(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_flips() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let t1: Timestamp = "2026-01-01T00:01:00Z".parse().expect("time");
        let first = conditions(&[], &Outcome::Ready, Some(1), t0);
        let again = conditions(&first, &Outcome::Ready, Some(2), t1);
        assert_eq!(again[0].last_transition_time, Time(t0));
        assert_eq!(again[0].observed_generation, Some(2));
        let degraded = Outcome::Degraded {
            reason: "QuorumUnavailable".into(),
            message: "no leader".into(),
        };
        let flipped = conditions(&again, &degraded, Some(2), t1);
        assert_eq!(flipped[0].last_transition_time, Time(t1));
        assert_eq!(
            flipped
                .iter()
                .map(|c| (c.type_.as_str(), c.status.as_str()))
                .collect::<Vec<_>>(),
            vec![
                ("Ready", "False"),
                ("Progressing", "False"),
                ("Degraded", "True")
            ]
        );
        assert_eq!(flipped[2].reason, "QuorumUnavailable");
    }

    #[test]
    fn a_wait_names_the_pods_the_scheduler_has_not_placed() {
        let waiting = Outcome::Progressing {
            reason: "WaitingForObserver".into(),
            message: "node 4 is not a caught-up observer yet".into(),
        };
        let unbound = (
            "q-4".to_string(),
            "Unschedulable: 0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."
                .to_string(),
        );
        assert_eq!(note_unscheduled(waiting.clone(), &[]), waiting);
        assert_eq!(
            note_unscheduled(waiting, std::slice::from_ref(&unbound)),
            Outcome::Progressing {
                reason: "WaitingForObserver".into(),
                message: "node 4 is not a caught-up observer yet; pod q-4 is not scheduled \
                          (Unschedulable: 0/1 nodes are available: pod has unbound immediate \
                          PersistentVolumeClaims.)"
                    .into(),
            }
        );
        let lost = Outcome::Degraded {
            reason: "QuorumUnavailable".into(),
            message: "no voter answered".into(),
        };
        let others = [
            unbound.clone(),
            ("q-5".to_string(), "Unschedulable".to_string()),
            ("q-6".to_string(), "Unschedulable".to_string()),
        ];
        let Outcome::Degraded { reason, message } = note_unscheduled(lost, &others) else {
            panic!("a degraded outcome stays degraded");
        };
        assert_eq!(reason, "QuorumUnavailable");
        assert!(
            message.starts_with(
                "no voter answered; pods q-4, q-5, q-6 are not scheduled (q-4: Unschedulable: "
            ) && message.ends_with("PersistentVolumeClaims.)"),
            "{message}"
        );
        assert_eq!(note_unscheduled(Outcome::Ready, &others), Outcome::Ready);
    }

    #[test]
    fn a_stopped_voter_carries_its_stop_line_until_it_runs_again() {
        let voter = |node_id| VoterStatus {
            node_id,
            directory_id: String::new(),
            endpoint: None,
            lag: 0,
            caught_up: true,
            termination_message: None,
        };
        let mut status = KraftQuorumStatus {
            voters: vec![voter(0), voter(1)],
            ..KraftQuorumStatus::default()
        };
        note_stopped(&mut status, &[(1, "kraft-controller run: full".into())]);
        assert_eq!(status.voters[0].termination_message, None);
        assert_eq!(
            status.voters[1].termination_message.as_deref(),
            Some("kraft-controller run: full")
        );
        note_stopped(&mut status, &[]);
        assert_eq!(status.voters[1].termination_message, None);
    }
}
