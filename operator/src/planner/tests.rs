//! The planner against every state of up to 3 nodes (and a seeded sample of
//! 5-node states), checking the safety rules of DESIGN 3.3 on each answer,
//! plus walks of a small model of the world through scale and replacement.

use super::*;

/// What one node id looks like to the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Absent,
    VoterCaughtUp,
    VoterLagging,
    VoterGone,
    ObserverCaughtUp,
    ObserverLagging,
    /// Voter (id, old dir) gone, observer (id, new dir) caught up: a lost disk.
    Replaced,
}
const ROLES: [Role; 7] = [
    Role::Absent,
    Role::VoterCaughtUp,
    Role::VoterLagging,
    Role::VoterGone,
    Role::ObserverCaughtUp,
    Role::ObserverLagging,
    Role::Replaced,
];

fn old_dir(id: i32) -> Uuid {
    Uuid::from_u128(id as u128 * 10 + 1)
}
fn new_dir(id: i32) -> Uuid {
    Uuid::from_u128(id as u128 * 10 + 2)
}
fn member(id: i32, dir: Uuid, caught_up: bool, fetching: bool) -> Member {
    Member {
        node_id: id,
        directory_id: dir,
        caught_up,
        fetching,
    }
}

fn members(roles: &[Role]) -> (Vec<Member>, Vec<Member>) {
    let (mut voters, mut observers) = (vec![], vec![]);
    for (i, role) in roles.iter().enumerate() {
        let id = i as i32;
        match role {
            Role::Absent => {}
            Role::VoterCaughtUp => voters.push(member(id, old_dir(id), true, true)),
            Role::VoterLagging => voters.push(member(id, old_dir(id), false, true)),
            Role::VoterGone => voters.push(member(id, old_dir(id), false, false)),
            Role::ObserverCaughtUp => observers.push(member(id, new_dir(id), true, true)),
            Role::ObserverLagging => observers.push(member(id, new_dir(id), false, true)),
            Role::Replaced => {
                voters.push(member(id, old_dir(id), false, false));
                observers.push(member(id, new_dir(id), true, true));
            }
        }
    }
    (voters, observers)
}

/// The safety rules every answer must keep. Returns what was broken.
fn check(input: &Input, action: &Action) -> Result<(), String> {
    let r = input.desired_replicas;
    let Some(q) = &input.quorum else {
        return match action {
            Action::Wait { .. } => Ok(()),
            other => Err(format!("acted without a leader: {other:?}")),
        };
    };
    if !input.bootstrapped && !matches!(action, Action::Wait { .. }) {
        return Err(format!("acted before bootstrap: {action:?}"));
    }
    if input.pending.is_some() && !matches!(action, Action::Wait { .. } | Action::ClearPending) {
        return Err(format!("second change while one is in flight: {action:?}"));
    }
    let caught = |vs: &mut dyn Iterator<Item = &Member>| vs.filter(|v| v.caught_up).count();
    let extra_voters = q.voters.iter().filter(|v| v.node_id >= r).count();
    match *action {
        Action::RemoveVoter {
            node_id,
            directory_id,
        } => {
            let v = q
                .voters
                .iter()
                .find(|v| v.node_id == node_id && v.directory_id == directory_id)
                .ok_or("removed a voter that is not in the set")?;
            let rest: Vec<&Member> = q.voters.iter().filter(|o| *o != v).collect();
            if rest.is_empty() {
                return Err("removed the last voter".into());
            }
            if caught(&mut rest.iter().copied()) < majority(rest.len()) {
                return Err("removal leaves no caught-up majority".into());
            }
            let replaced = !v.caught_up
                && q.observers
                    .iter()
                    .any(|o| o.node_id == node_id && o.directory_id != directory_id);
            if node_id < r && !replaced {
                return Err("removed a wanted, healthy voter".into());
            }
            if node_id == q.leader_id
                && q.voters
                    .iter()
                    .any(|o| o.node_id >= r && o.node_id != node_id)
            {
                return Err("removed the leader before the other extra voters".into());
            }
        }
        Action::AddVoter {
            node_id,
            directory_id,
        } => {
            if node_id >= r {
                return Err("added a voter beyond spec.replicas".into());
            }
            if !q
                .observers
                .iter()
                .any(|o| o.node_id == node_id && o.directory_id == directory_id && o.caught_up)
            {
                return Err("added a voter that is not a caught-up observer".into());
            }
            if q.voters.iter().any(|v| v.node_id == node_id) {
                return Err("added before removing the old voter of the same id".into());
            }
            if extra_voters > 0 {
                return Err("added while voters beyond spec.replicas remain".into());
            }
            if caught(&mut q.voters.iter()) + 1 < majority(q.voters.len() + 1) {
                return Err("addition leaves no caught-up majority".into());
            }
        }
        Action::ScaleStatefulSet { replicas } => {
            if replicas != r || replicas == input.statefulset_replicas {
                return Err(format!("scaled to {replicas}, spec says {r}"));
            }
            if replicas < input.statefulset_replicas && extra_voters > 0 {
                return Err("shrank the statefulset under a voter".into());
            }
        }
        Action::RestartPod { ordinal } => {
            let p = input
                .pods
                .iter()
                .find(|p| p.ordinal == ordinal)
                .ok_or("restarted a pod that does not exist")?;
            if p.up_to_date {
                return Err("restarted an up-to-date pod".into());
            }
            let others = caught(&mut q.voters.iter().filter(|v| v.node_id != ordinal));
            if others < majority(q.voters.len()) {
                return Err("restart leaves no caught-up majority".into());
            }
            if ordinal == q.leader_id
                && input
                    .pods
                    .iter()
                    .any(|o| !o.up_to_date && o.ordinal != ordinal)
            {
                return Err("restarted the leader before the followers".into());
            }
            let contributes = |o: &PodState| {
                o.ready
                    && q.voters
                        .iter()
                        .filter(|v| v.node_id == o.ordinal)
                        .all(|v| v.caught_up)
            };
            if contributes(p)
                && input
                    .pods
                    .iter()
                    .any(|o| !o.up_to_date && !contributes(o) && o.ordinal != q.leader_id)
            {
                return Err("restarted a healthy pod before a not-ready or lagging one".into());
            }
            if input.pods.iter().any(|o| o.up_to_date && !o.ready) {
                return Err("restarted while the last restarted pod is not back".into());
            }
        }
        Action::RestartOnlyVoter { ordinal } => {
            let p = input
                .pods
                .iter()
                .find(|p| p.ordinal == ordinal)
                .ok_or("restarted a pod that does not exist")?;
            if p.up_to_date {
                return Err("restarted an up-to-date pod".into());
            }
            // The outage is taken only for a quorum that is this one voter.
            if !(q.voters.len() == 1 && q.voters[0].node_id == ordinal && q.leader_id == ordinal) {
                return Err(
                    "took a single-voter outage while the voter set is not that voter".into(),
                );
            }
            if input
                .pods
                .iter()
                .any(|o| !o.up_to_date && o.ordinal != ordinal)
            {
                return Err("restarted the only voter before the other pods".into());
            }
            if input.pods.iter().any(|o| o.up_to_date && !o.ready) {
                return Err("restarted while the last restarted pod is not back".into());
            }
        }
        Action::Steady => {
            let all_voters = (0..r).all(|id| q.voters.iter().any(|v| v.node_id == id));
            if extra_voters > 0
                || !all_voters
                || input.statefulset_replicas != r
                || input.pods.iter().any(|p| !p.up_to_date)
            {
                return Err("called steady with work left".into());
            }
        }
        Action::ClearPending => {
            if input.pending.is_none() {
                return Err("cleared a change that is not recorded".into());
            }
        }
        Action::Wait { .. } | Action::Refuse { .. } => {}
    }
    Ok(())
}

fn pod_states(sts: i32, code: u32) -> Vec<PodState> {
    (0..sts)
        .map(|o| {
            let bits = (code >> (2 * o)) & 3;
            PodState {
                ordinal: o,
                ready: bits & 1 == 0,
                up_to_date: bits & 2 == 0,
            }
        })
        .collect()
}

fn inputs_for(roles: &[Role], r: i32, sts: i32, pods: u32) -> Vec<Input> {
    let (voters, observers) = members(roles);
    let mut out = vec![];
    let leaders: Vec<i32> = voters
        .iter()
        .filter(|v| v.caught_up)
        .map(|v| v.node_id)
        .collect();
    let pendings = [
        None,
        Some(Pending {
            kind: ChangeKind::AddVoter,
            node_id: 0,
            directory_id: new_dir(0),
            age_ms: 1_000,
        }),
        Some(Pending {
            kind: ChangeKind::RemoveVoter,
            node_id: 0,
            directory_id: old_dir(0),
            age_ms: 1_000,
        }),
    ];
    let base = Input {
        desired_replicas: r,
        statefulset_replicas: sts,
        bootstrapped: true,
        pending: None,
        quorum: None,
        pods: pod_states(sts, pods),
    };
    out.push(base.clone());
    for leader in leaders {
        for pending in pendings {
            out.push(Input {
                pending,
                quorum: Some(Observed {
                    leader_id: leader,
                    voters: voters.clone(),
                    observers: observers.clone(),
                }),
                ..base.clone()
            });
        }
    }
    out
}

#[test]
fn every_answer_for_every_state_of_up_to_three_nodes_keeps_the_safety_rules() {
    let mut states = 0u64;
    let mut changes = 0u64;
    let mut outages = 0u64;
    for n in 1..=3usize {
        let mut roles = vec![Role::Absent; n];
        let combos = ROLES.len().pow(n as u32);
        for c in 0..combos {
            let mut k = c;
            for slot in roles.iter_mut() {
                *slot = ROLES[k % ROLES.len()];
                k /= ROLES.len();
            }
            for r in 1..=n as i32 {
                for sts in 0..=n as i32 {
                    for pods in 0..(1u32 << (2 * sts)) {
                        for input in inputs_for(&roles, r, sts, pods) {
                            let action = plan(&input);
                            if let Err(e) = check(&input, &action) {
                                panic!("{e}\n  input: {input:?}\n  action: {action:?}");
                            }
                            states += 1;
                            changes += u64::from(action.is_change());
                            outages += u64::from(matches!(action, Action::RestartOnlyVoter { .. }));
                        }
                    }
                }
            }
        }
    }
    assert!(states > 100_000, "enumerated only {states} states");
    assert!(
        changes > 10_000,
        "only {changes} changes planned: the check is vacuous"
    );
    assert!(outages > 0, "the single-voter restart was never planned");
}

/// splitmix64: a seeded, dependency-free generator for the 5-node sample.
struct SplitMix(u64);
impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn a_seeded_sample_of_five_node_states_keeps_the_safety_rules() {
    let seed = 0x6b72_6166_7477_6572;
    let mut rng = SplitMix(seed);
    for _ in 0..30_000 {
        let roles: Vec<Role> = (0..5).map(|_| ROLES[rng.below(7) as usize]).collect();
        let r = 1 + rng.below(5) as i32;
        let sts = rng.below(6) as i32;
        let pods = rng.below(1 << (2 * sts)) as u32;
        for input in inputs_for(&roles, r, sts, pods) {
            let action = plan(&input);
            if let Err(e) = check(&input, &action) {
                panic!("seed {seed:#x}: {e}\n  input: {input:?}\n  action: {action:?}");
            }
        }
    }
}

/// A small model of the world the planner acts on: it applies each action
/// as Kubernetes and the quorum would (new pods become caught-up observers
/// with a fresh directory id, restarted pods come back current).
#[derive(Clone, Debug)]
struct World {
    input: Input,
}

impl World {
    fn healthy(n: i32) -> World {
        let voters = (0..n)
            .map(|id| member(id, old_dir(id), true, true))
            .collect();
        World {
            input: Input {
                desired_replicas: n,
                statefulset_replicas: n,
                bootstrapped: true,
                pending: None,
                quorum: Some(Observed {
                    leader_id: 0,
                    voters,
                    observers: vec![],
                }),
                pods: (0..n)
                    .map(|o| PodState {
                        ordinal: o,
                        ready: true,
                        up_to_date: true,
                    })
                    .collect(),
            },
        }
    }

    fn quorum(&mut self) -> &mut Observed {
        self.input
            .quorum
            .as_mut()
            .expect("the model always has a leader")
    }

    fn apply(&mut self, action: &Action) {
        match *action {
            Action::AddVoter {
                node_id,
                directory_id,
            } => {
                let q = self.quorum();
                q.observers.retain(|o| o.node_id != node_id);
                q.voters.push(member(node_id, directory_id, true, true));
            }
            Action::RemoveVoter {
                node_id,
                directory_id,
            } => {
                let q = self.quorum();
                q.voters
                    .retain(|v| !(v.node_id == node_id && v.directory_id == directory_id));
                if q.leader_id == node_id {
                    // KIP-853: a removed leader resigns once the removal commits.
                    q.leader_id = q.voters[0].node_id;
                }
            }
            Action::ScaleStatefulSet { replicas } => {
                let old = self.input.statefulset_replicas;
                self.input.statefulset_replicas = replicas;
                self.input.pods.retain(|p| p.ordinal < replicas);
                for o in old..replicas {
                    self.input.pods.push(PodState {
                        ordinal: o,
                        ready: true,
                        up_to_date: true,
                    });
                    self.quorum()
                        .observers
                        .push(member(o, new_dir(o), true, true));
                }
                self.quorum().observers.retain(|o| o.node_id < replicas);
            }
            Action::RestartPod { ordinal } | Action::RestartOnlyVoter { ordinal } => {
                for p in &mut self.input.pods {
                    if p.ordinal == ordinal {
                        p.up_to_date = true;
                    }
                }
            }
            Action::ClearPending => self.input.pending = None,
            Action::Steady | Action::Wait { .. } | Action::Refuse { .. } => {}
        }
    }

    /// Plans and applies until steady; returns the changes made.
    fn run(&mut self) -> Vec<Action> {
        let mut log = vec![];
        for _ in 0..50 {
            let action = plan(&self.input);
            if let Err(e) = check(&self.input, &action) {
                panic!("{e}\n  input: {:?}\n  action: {action:?}", self.input);
            }
            match action {
                Action::Steady => return log,
                Action::Wait { .. } | Action::Refuse { .. } => {
                    panic!("stuck: {action:?} in {:?}", self.input)
                }
                _ => {}
            }
            self.apply(&action);
            log.push(action);
        }
        panic!("did not converge: {log:?}");
    }
}

#[test]
fn scaling_three_to_five_grows_the_statefulset_then_adds_one_voter_at_a_time() {
    let mut w = World::healthy(3);
    w.input.desired_replicas = 5;
    assert_eq!(
        w.run(),
        vec![
            Action::ScaleStatefulSet { replicas: 5 },
            Action::AddVoter {
                node_id: 3,
                directory_id: new_dir(3)
            },
            Action::AddVoter {
                node_id: 4,
                directory_id: new_dir(4)
            },
        ]
    );
}

#[test]
fn scaling_five_to_three_removes_the_highest_voters_then_shrinks_the_statefulset() {
    let mut w = World::healthy(5);
    w.input.desired_replicas = 3;
    assert_eq!(
        w.run(),
        vec![
            Action::RemoveVoter {
                node_id: 4,
                directory_id: old_dir(4)
            },
            Action::RemoveVoter {
                node_id: 3,
                directory_id: old_dir(3)
            },
            Action::ScaleStatefulSet { replicas: 3 },
        ]
    );
}

#[test]
fn scaling_down_removes_the_leader_last() {
    let mut w = World::healthy(5);
    w.quorum().leader_id = 3;
    w.input.desired_replicas = 2;
    let log = w.run();
    assert_eq!(
        log[..3],
        [
            Action::RemoveVoter {
                node_id: 4,
                directory_id: old_dir(4)
            },
            Action::RemoveVoter {
                node_id: 2,
                directory_id: old_dir(2)
            },
            Action::RemoveVoter {
                node_id: 3,
                directory_id: old_dir(3)
            },
        ]
    );
}

#[test]
fn a_lost_disk_is_replaced_by_removing_the_old_voter_before_adding_the_new() {
    // KIP-853: to the quorum a wiped volume is a new voter (new directory id).
    let mut w = World::healthy(3);
    let q = w.quorum();
    q.voters[1] = member(1, old_dir(1), false, false);
    q.observers.push(member(1, new_dir(1), true, true));
    assert_eq!(
        w.run(),
        vec![
            Action::RemoveVoter {
                node_id: 1,
                directory_id: old_dir(1)
            },
            Action::AddVoter {
                node_id: 1,
                directory_id: new_dir(1)
            },
        ]
    );
}

#[test]
fn a_rolling_restart_takes_not_ready_pods_first_then_followers_and_the_leader_last() {
    let mut w = World::healthy(3);
    w.quorum().leader_id = 1;
    for p in &mut w.input.pods {
        p.up_to_date = false;
    }
    w.input.pods[0].ready = false;
    w.quorum().voters[0].caught_up = false;
    let first = plan(&w.input);
    assert_eq!(first, Action::RestartPod { ordinal: 0 });
    w.apply(&first);
    w.input.pods[0].ready = true;
    w.quorum().voters[0].caught_up = true;
    assert_eq!(
        w.run(),
        vec![
            Action::RestartPod { ordinal: 2 },
            Action::RestartPod { ordinal: 1 }
        ]
    );
}

#[test]
fn the_next_restart_waits_until_the_restarted_pod_is_back() {
    let mut w = World::healthy(3);
    for p in &mut w.input.pods {
        p.up_to_date = p.ordinal == 2;
    }
    w.input.pods[2].ready = false;
    assert!(matches!(
        plan(&w.input),
        Action::Wait {
            reason: WaitReason::RestartInProgress,
            ..
        }
    ));
}

#[test]
fn a_removal_that_would_lose_the_majority_is_refused_with_a_reason() {
    let mut w = World::healthy(3);
    w.input.desired_replicas = 2;
    w.quorum().voters[1].caught_up = false;
    // Removing 2 leaves {0 caught up, 1 lagging}: 1 of 2 is no majority.
    match plan(&w.input) {
        Action::Refuse { reason, message } => {
            assert_eq!(reason, RefuseReason::RemovalWouldLoseMajority);
            assert!(message.contains("removing node 2"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_restart_that_would_lose_the_majority_is_refused() {
    // Only voter 0 is caught up: restarting any pod leaves 1 of 3.
    let mut w = World::healthy(3);
    w.quorum().voters[1].caught_up = false;
    w.quorum().voters[2].caught_up = false;
    w.input.pods[1].up_to_date = false;
    w.input.pods[2].up_to_date = false;
    assert!(matches!(
        plan(&w.input),
        Action::Refuse {
            reason: RefuseReason::RestartWouldLoseMajority,
            ..
        }
    ));
}

#[test]
fn a_single_voter_is_restarted_to_roll_out_a_new_template_as_a_declared_outage() {
    // One voter has no majority to keep: refusing would leave the spec unmet
    // forever, so the restart is planned, as its own action.
    let mut w = World::healthy(1);
    w.input.pods[0].up_to_date = false;
    assert_eq!(w.run(), vec![Action::RestartOnlyVoter { ordinal: 0 }]);
}

#[test]
fn two_voters_still_refuse_a_restart_that_loses_the_majority() {
    // Only the one-voter case is special: with two voters the other one is
    // no majority of two, so the general rule refuses.
    let mut w = World::healthy(2);
    for p in &mut w.input.pods {
        p.up_to_date = false;
    }
    assert!(matches!(
        plan(&w.input),
        Action::Refuse {
            reason: RefuseReason::RestartWouldLoseMajority,
            ..
        }
    ));
}

#[test]
fn scaling_one_to_three_and_back_never_takes_the_single_voter_outage() {
    let mut w = World::healthy(1);
    w.input.desired_replicas = 3;
    let up = w.run();
    assert_eq!(
        up,
        vec![
            Action::ScaleStatefulSet { replicas: 3 },
            Action::AddVoter {
                node_id: 1,
                directory_id: new_dir(1)
            },
            Action::AddVoter {
                node_id: 2,
                directory_id: new_dir(2)
            },
        ]
    );
    w.input.desired_replicas = 1;
    assert_eq!(
        w.run(),
        vec![
            Action::RemoveVoter {
                node_id: 2,
                directory_id: new_dir(2)
            },
            Action::RemoveVoter {
                node_id: 1,
                directory_id: new_dir(1)
            },
            Action::ScaleStatefulSet { replicas: 1 },
        ]
    );
}

#[test]
fn a_recorded_change_is_cleared_once_the_voter_set_shows_it() {
    let mut w = World::healthy(3);
    w.input.pending = Some(Pending {
        kind: ChangeKind::RemoveVoter,
        node_id: 2,
        directory_id: old_dir(2),
        age_ms: 10,
    });
    assert!(matches!(
        plan(&w.input),
        Action::Wait {
            reason: WaitReason::ChangeInFlight,
            ..
        }
    ));
    w.quorum().voters.pop();
    assert_eq!(plan(&w.input), Action::ClearPending);
}

#[test]
fn a_recorded_change_that_never_shows_is_dropped_after_the_timeout() {
    let mut w = World::healthy(3);
    w.input.pending = Some(Pending {
        kind: ChangeKind::AddVoter,
        node_id: 3,
        directory_id: new_dir(3),
        age_ms: PENDING_TIMEOUT_MS,
    });
    assert_eq!(plan(&w.input), Action::ClearPending);
}

#[test]
fn nothing_is_planned_before_bootstrap_or_without_a_leader() {
    let mut w = World::healthy(3);
    w.input.desired_replicas = 5;
    w.input.bootstrapped = false;
    assert!(matches!(
        plan(&w.input),
        Action::Wait {
            reason: WaitReason::Bootstrapping,
            ..
        }
    ));
    w.input.bootstrapped = true;
    w.input.quorum = None;
    assert!(matches!(
        plan(&w.input),
        Action::Wait {
            reason: WaitReason::QuorumUnavailable,
            ..
        }
    ));
}

#[test]
fn a_new_pod_is_added_only_once_it_is_a_caught_up_observer() {
    let mut w = World::healthy(3);
    w.input.desired_replicas = 4;
    w.apply(&Action::ScaleStatefulSet { replicas: 4 });
    w.quorum().observers[0].caught_up = false;
    assert!(matches!(
        plan(&w.input),
        Action::Wait {
            reason: WaitReason::WaitingForObserver,
            ..
        }
    ));
}

#[test]
fn majority_is_raft_quorum_math() {
    assert_eq!(
        (1..=6).map(majority).collect::<Vec<_>>(),
        vec![1, 2, 2, 3, 3, 4]
    );
}
