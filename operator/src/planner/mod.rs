//! The membership planner (DESIGN 3.3): a pure function from what the
//! operator knows (desired replicas, the identity and change in flight
//! recorded in status, the quorum as the leader describes it, the pods) to
//! at most one [`Action`].
//!
//! Owns every decision about voters, StatefulSet size and restart order, and
//! the safety rule behind them: no action may leave the voter set without a
//! majority of caught-up voters (Raft needs a majority to commit; KIP-853
//! commits a voter change under the new set). One exception, by necessity:
//! a quorum of a single voter has no majority to preserve, and rolling out a
//! new template to it means restarting it, an outage nothing can avoid
//! ([`Action::RestartOnlyVoter`], planned only then and announced as such).
//! It must not do I/O, read a clock or know Kubernetes objects; the
//! reconciler maps the world into [`Input`] and carries the [`Action`] out.

use std::fmt;

use uuid::Uuid;

use crate::crd::ChangeKind;

pub mod quorum_loss;

/// A change recorded in flight for longer than this (ms) is dropped and
/// planned afresh: the leader itself refuses a second concurrent change
/// (KIP-853), so re-planning can never run two at once.
pub const PENDING_TIMEOUT_MS: i64 = 120_000;

/// A voter or observer as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// `node.id` (= pod ordinal).
    pub node_id: i32,
    /// Directory id (KIP-853): a wiped volume comes back with a new one.
    pub directory_id: Uuid,
    /// Reached the leader's log end offset recently.
    pub caught_up: bool,
    /// Fetched from the leader recently.
    pub fetching: bool,
}

/// The quorum as the leader described it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The leader's node id (a voter that answered DescribeQuorum).
    pub leader_id: i32,
    /// The voter set.
    pub voters: Vec<Member>,
    /// Observers (fetching, not voting).
    pub observers: Vec<Member>,
}

/// The change recorded in `status.pendingChange`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// AddVoter or RemoveVoter.
    pub kind: ChangeKind,
    /// The voter's node id.
    pub node_id: i32,
    /// The voter's directory id.
    pub directory_id: Uuid,
    /// How long ago it was recorded (ms).
    pub age_ms: i64,
}

/// A controller pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodState {
    /// StatefulSet ordinal (= node id).
    pub ordinal: i32,
    /// Pod condition Ready (the controller's `/readyz`: knows a leader, caught up).
    pub ready: bool,
    /// Its `controller-revision-hash` is the StatefulSet's update revision.
    pub up_to_date: bool,
}

/// Everything the planner decides from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    /// `spec.replicas`: desired voters, node ids `0..R`.
    pub desired_replicas: i32,
    /// The StatefulSet's `spec.replicas` now.
    pub statefulset_replicas: i32,
    /// Whether a leader was ever observed.
    pub bootstrapped: bool,
    /// The change in flight, if any.
    pub pending: Option<Pending>,
    /// The quorum, when a leader answered; `None` when none did.
    pub quorum: Option<Observed>,
    /// The pods that exist, ordinals `0..statefulset_replicas` (some may be missing).
    pub pods: Vec<PodState>,
}

/// Why the planner waits. Each is a condition reason (PascalCase).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitReason {
    /// The initial voters have not elected a first leader yet.
    Bootstrapping,
    /// No controller answered DescribeQuorum as leader.
    QuorumUnavailable,
    /// A recorded change is not visible in the voter set yet.
    ChangeInFlight,
    /// A new pod has not caught up as an observer yet.
    WaitingForObserver,
    /// A restarted (or new) pod is not back and caught up yet.
    RestartInProgress,
    /// An adopted static quorum is being migrated (`spec.adopt`): membership
    /// and StatefulSet changes wait until it is adopted.
    Adopting,
}

/// Why the planner refuses: the action it would take loses the majority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefuseReason {
    /// Removing the voter would leave fewer caught-up voters than a majority.
    RemovalWouldLoseMajority,
    /// Adding the voter would make a set whose caught-up voters are no majority.
    AdditionWouldLoseMajority,
    /// Restarting the pod would leave fewer caught-up voters than a majority.
    RestartWouldLoseMajority,
}

macro_rules! reason_str {
    ($t:ty { $($v:ident),* }) => {
        impl $t {
            /// The condition/Event reason (the variant's name).
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => stringify!($v)),* }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}
reason_str!(WaitReason {
    Bootstrapping,
    QuorumUnavailable,
    ChangeInFlight,
    WaitingForObserver,
    RestartInProgress,
    Adopting
});
reason_str!(RefuseReason {
    RemovalWouldLoseMajority,
    AdditionWouldLoseMajority,
    RestartWouldLoseMajority
});

/// The one thing to do this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing to do: condition Ready.
    Steady,
    /// Nothing to do yet; requeue soon.
    Wait { reason: WaitReason, message: String },
    /// Something should be done but would lose the majority: a condition and
    /// a Warning Event, never a silent wait.
    Refuse {
        reason: RefuseReason,
        message: String,
    },
    /// The recorded change is done (or timed out): clear `status.pendingChange`.
    ClearPending,
    /// AddRaftVoter `(node_id, directory_id)` (endpoint: the pod's DNS name).
    AddVoter { node_id: i32, directory_id: Uuid },
    /// RemoveRaftVoter `(node_id, directory_id)`.
    RemoveVoter { node_id: i32, directory_id: Uuid },
    /// Set the StatefulSet's replicas.
    ScaleStatefulSet { replicas: i32 },
    /// Delete the pod so it comes back with the current template; the other
    /// caught-up voters keep a majority meanwhile.
    RestartPod { ordinal: i32 },
    /// Delete the pod of the only voter so it comes back with the current
    /// template. A one-voter quorum has no majority to keep: it is
    /// unavailable until the pod is back, which no restart order can avoid
    /// (Kafka's answer for a single controller as well). Planned only when
    /// the voter set is exactly that voter; the reconciler announces the
    /// outage (Warning Event and condition `SingleVoterRestart`).
    RestartOnlyVoter { ordinal: i32 },
}

impl Action {
    /// Whether this action changes the quorum or its pods.
    pub fn is_change(&self) -> bool {
        matches!(
            self,
            Action::AddVoter { .. }
                | Action::RemoveVoter { .. }
                | Action::ScaleStatefulSet { .. }
                | Action::RestartPod { .. }
                | Action::RestartOnlyVoter { .. }
        )
    }
}

/// Raft majority of `n` voters: ⌊n/2⌋+1.
pub fn majority(n: usize) -> usize {
    n / 2 + 1
}

fn wait(reason: WaitReason, message: impl Into<String>) -> Action {
    Action::Wait {
        reason,
        message: message.into(),
    }
}

/// Plans the next action (DESIGN 3.3; the first matching row wins).
pub fn plan(input: &Input) -> Action {
    let r = input.desired_replicas;
    // Row 0: the initial voters bootstrap on their own.
    if !input.bootstrapped {
        return wait(
            WaitReason::Bootstrapping,
            "waiting for the initial voters to elect a first leader",
        );
    }
    // Row 1.
    let Some(q) = &input.quorum else {
        return wait(
            WaitReason::QuorumUnavailable,
            "no controller answered DescribeQuorum as leader",
        );
    };
    // Row 2.
    if let Some(p) = input.pending {
        let present = q
            .voters
            .iter()
            .any(|v| v.node_id == p.node_id && v.directory_id == p.directory_id);
        let done = match p.kind {
            ChangeKind::AddVoter => present,
            ChangeKind::RemoveVoter => !present,
        };
        if done || p.age_ms >= PENDING_TIMEOUT_MS {
            return Action::ClearPending;
        }
        return wait(
            WaitReason::ChangeInFlight,
            format!(
                "{:?} of node {} is not in the voter set yet",
                p.kind, p.node_id
            ),
        );
    }
    let caught_up = |members: &mut dyn Iterator<Item = &Member>| -> usize {
        members.filter(|m| m.caught_up).count()
    };

    // Row 3: a voter whose disk was lost: (id, old dir) no longer caught up
    // while (id, new dir) fetches as an observer. Remove first, add later.
    for v in q.voters.iter().filter(|v| !v.caught_up) {
        let replaced = q
            .observers
            .iter()
            .any(|o| o.node_id == v.node_id && o.directory_id != v.directory_id && o.fetching);
        if replaced && v.node_id < r {
            return remove_if_safe(q, v, &caught_up);
        }
    }

    // Row 4: voters with id ≥ R, highest first, the leader last.
    let mut extra: Vec<&Member> = q.voters.iter().filter(|v| v.node_id >= r).collect();
    extra.sort_by_key(|v| (v.node_id == q.leader_id, std::cmp::Reverse(v.node_id)));
    if let Some(v) = extra.first() {
        return remove_if_safe(q, v, &caught_up);
    }

    // Row 5: no voter ≥ R is left: shrink the StatefulSet.
    if input.statefulset_replicas > r {
        return Action::ScaleStatefulSet { replicas: r };
    }

    // Row 6: ids < R that are not voters; first all their pods must exist
    // (also repairs a StatefulSet shrunk by someone else).
    if input.statefulset_replicas < r {
        return Action::ScaleStatefulSet { replicas: r };
    }
    let missing: Vec<i32> = (0..r)
        .filter(|id| !q.voters.iter().any(|v| v.node_id == *id))
        .collect();
    if let Some(&id) = missing.first() {
        let Some(o) = q
            .observers
            .iter()
            .find(|o| o.node_id == id && o.caught_up && o.fetching)
        else {
            return wait(
                WaitReason::WaitingForObserver,
                format!("node {id} is not a caught-up observer yet"),
            );
        };
        let new_size = q.voters.len() + 1;
        let caught = caught_up(&mut q.voters.iter()) + 1;
        if caught < majority(new_size) {
            return Action::Refuse {
                reason: RefuseReason::AdditionWouldLoseMajority,
                message: format!(
                    "adding node {id} makes {new_size} voters of which {caught} are caught up, fewer than a majority ({})",
                    majority(new_size)
                ),
            };
        }
        return Action::AddVoter {
            node_id: id,
            directory_id: o.directory_id,
        };
    }

    // Row 7: rolling restart, one pod at a time.
    plan_restart(input, q, &caught_up)
}

fn remove_if_safe(
    q: &Observed,
    v: &Member,
    caught_up: &dyn Fn(&mut dyn Iterator<Item = &Member>) -> usize,
) -> Action {
    let rest = || {
        q.voters
            .iter()
            .filter(move |o| !(o.node_id == v.node_id && o.directory_id == v.directory_id))
    };
    let new_size = rest().count();
    let caught = caught_up(&mut rest());
    if new_size == 0 || caught < majority(new_size) {
        return Action::Refuse {
            reason: RefuseReason::RemovalWouldLoseMajority,
            message: format!(
                "removing node {} leaves {new_size} voters of which {caught} are caught up, fewer than a majority ({})",
                v.node_id,
                majority(new_size.max(1))
            ),
        };
    }
    Action::RemoveVoter {
        node_id: v.node_id,
        directory_id: v.directory_id,
    }
}

fn plan_restart(
    input: &Input,
    q: &Observed,
    caught_up: &dyn Fn(&mut dyn Iterator<Item = &Member>) -> usize,
) -> Action {
    let outdated: Vec<&PodState> = input.pods.iter().filter(|p| !p.up_to_date).collect();
    if outdated.is_empty() {
        return Action::Steady;
    }
    let is_back = |p: &PodState| {
        p.ready
            && q.voters
                .iter()
                .filter(|v| v.node_id == p.ordinal)
                .all(|v| v.caught_up)
    };
    // Wait until the last restarted pod is back: a current pod that is not
    // ready or not caught up, or a pod that does not exist yet.
    let missing =
        (0..input.statefulset_replicas).find(|o| !input.pods.iter().any(|p| p.ordinal == *o));
    if let Some(o) = missing {
        return wait(
            WaitReason::RestartInProgress,
            format!("pod {o} is not back yet"),
        );
    }
    if let Some(p) = input.pods.iter().find(|p| p.up_to_date && !is_back(p)) {
        return wait(
            WaitReason::RestartInProgress,
            format!("pod {} is not ready and caught up yet", p.ordinal),
        );
    }
    // The leader last, whatever its readiness (restarting it costs an
    // election); before it, pods that add nothing to the majority (not ready,
    // or a voter not caught up), then the others, highest ordinal first.
    let mut order = outdated;
    order.sort_by_key(|p| {
        (
            p.ordinal == q.leader_id,
            is_back(p),
            std::cmp::Reverse(p.ordinal),
        )
    });
    let p = order[0];
    let n = q.voters.len();
    // One voter: no majority exists to preserve; the restart is an outage
    // either now or never, and never would leave the spec unmet for good.
    // Two voters keep the general rule (either restart loses the majority:
    // refused, so a 2-voter quorum is scaled to 3 or 1 to roll).
    if n == 1 && q.voters[0].node_id == p.ordinal && q.leader_id == p.ordinal {
        return Action::RestartOnlyVoter { ordinal: p.ordinal };
    }
    let others = caught_up(&mut q.voters.iter().filter(|v| v.node_id != p.ordinal));
    if others < majority(n) {
        return Action::Refuse {
            reason: RefuseReason::RestartWouldLoseMajority,
            message: format!(
                "restarting pod {} leaves {others} caught-up voters of {n}, fewer than a majority ({})",
                p.ordinal,
                majority(n)
            ),
        };
    }
    Action::RestartPod { ordinal: p.ordinal }
}

#[cfg(test)]
mod tests;
