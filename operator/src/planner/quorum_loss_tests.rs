use super::*;

const MIN: i64 = 60_000;

/// Three voters 0, 1, 2 with recorded claims u0, u1, u2; no leader for 10 min.
fn three(claims: &[(i32, &str)]) -> LossInput {
    LossInput {
        voters: vec![0, 1, 2],
        recorded: [(0, "u0"), (1, "u1"), (2, "u2")]
            .into_iter()
            .map(|(i, u)| (i, u.to_string()))
            .collect(),
        claims: claims.iter().map(|(i, u)| (*i, u.to_string())).collect(),
        no_leader_ms: Some(10 * MIN),
        after_ms: 5 * MIN,
    }
}

fn lost(lost: &[i32], survivors: &[i32], voters: usize) -> Loss {
    Loss::Lost {
        lost: lost.to_vec(),
        survivors: survivors.to_vec(),
        voters,
    }
}

#[test]
fn two_of_three_volumes_recreated_without_a_leader_is_a_quorum_loss() {
    // Claims 1 and 2 were deleted and re-created empty by the StatefulSet.
    let input = three(&[(0, "u0"), (1, "new1"), (2, "new2")]);
    assert_eq!(detect(&input), lost(&[1, 2], &[0], 3));
}

#[test]
fn a_missing_claim_counts_as_a_lost_volume() {
    let input = three(&[(2, "u2")]);
    assert_eq!(detect(&input), lost(&[0, 1], &[2], 3));
}

#[test]
fn one_lost_volume_of_three_is_no_quorum_loss() {
    // The voter-replacement path handles it once a leader answers.
    let input = three(&[(0, "u0"), (1, "new1"), (2, "u2")]);
    assert_eq!(detect(&input), Loss::None);
}

#[test]
fn no_quorum_loss_while_a_leader_answers_or_before_the_configured_time() {
    let mut input = three(&[(0, "u0")]);
    input.no_leader_ms = None;
    assert_eq!(detect(&input), Loss::None);
    input.no_leader_ms = Some(5 * MIN - 1);
    assert_eq!(detect(&input), Loss::None);
    input.no_leader_ms = Some(5 * MIN);
    assert_eq!(detect(&input), lost(&[1, 2], &[0], 3));
}

#[test]
fn a_volume_never_recorded_proves_nothing_and_is_not_counted_lost() {
    // Only voter 0's claim was recorded: the other two may be intact.
    let mut input = three(&[]);
    input.recorded.retain(|id, _| *id == 0);
    assert_eq!(detect(&input), Loss::None);
}

#[test]
fn a_loss_of_every_volume_has_no_survivor() {
    let input = three(&[(0, "n0"), (1, "n1"), (2, "n2")]);
    assert_eq!(detect(&input), lost(&[0, 1, 2], &[], 3));
}

#[test]
fn three_of_five_lost_is_a_quorum_loss_with_two_survivors() {
    let input = LossInput {
        voters: vec![0, 1, 2, 3, 4],
        recorded: (0..5).map(|i| (i, format!("u{i}"))).collect(),
        claims: [(3, "u3".to_string()), (4, "u4".to_string())].into(),
        no_leader_ms: Some(10 * MIN),
        after_ms: 5 * MIN,
    };
    assert_eq!(detect(&input), lost(&[0, 1, 2], &[3, 4], 5));
}

fn step_input(loss: Loss, allowed: bool, phase: Option<RecoveryPhase>) -> StepInput {
    StepInput {
        loss,
        allowed,
        phase,
        survivor: phase.map(|_| 0),
        pods: 3,
        job: JobState::Absent,
        leader: None,
    }
}

#[test]
fn without_opt_in_a_quorum_loss_is_reported_naming_the_lost_voters_and_nothing_is_touched() {
    let step = next_step(&step_input(lost(&[1, 2], &[0], 3), false, None));
    let Step::Report { message } = &step else {
        panic!("expected a report, got {step:?}");
    };
    assert!(message.contains("voters 1, 2 of 3"), "{message}");
    assert!(message.contains("surviving volumes: 0"), "{message}");
    assert!(
        message.contains("allowQuorumLossRecovery is false"),
        "{message}"
    );
    assert!(message.contains("docs/operations.md"), "{message}");
    assert!(!step.holds_statefulset_at_zero());
}

#[test]
fn with_opt_in_and_one_survivor_the_recovery_begins_from_it() {
    let step = next_step(&step_input(lost(&[0, 2], &[1], 3), true, None));
    assert_eq!(step, Step::Begin { survivor: 1 });
    assert!(step.holds_statefulset_at_zero());
}

#[test]
fn with_opt_in_but_two_survivors_or_none_the_loss_is_left_to_a_person() {
    let two = next_step(&step_input(lost(&[0, 1, 2], &[3, 4], 5), true, None));
    assert!(
        matches!(&two, Step::Report { message } if message.contains("one surviving volume only")),
        "{two:?}"
    );
    let none = next_step(&step_input(lost(&[0, 1, 2], &[], 3), true, None));
    assert!(
        matches!(&none, Step::Report { message } if message.contains("snapshot export")),
        "{none:?}"
    );
}

#[test]
fn no_loss_and_no_recovery_leaves_the_membership_planner_in_charge() {
    assert_eq!(next_step(&step_input(Loss::None, true, None)), Step::None);
}

#[test]
fn the_recover_job_runs_only_once_every_pod_is_gone() {
    let mut input = step_input(Loss::None, true, Some(RecoveryPhase::Stopping));
    assert_eq!(next_step(&input), Step::WaitStopped);
    input.pods = 0;
    assert_eq!(next_step(&input), Step::RunRecover);
}

#[test]
fn a_recorded_phase_wins_over_detection_so_the_recovery_finishes_after_a_restart() {
    // Once stopped, the pods are gone and the loss may look different (or
    // not at all); the recorded step carries on regardless.
    let mut input = step_input(Loss::None, false, Some(RecoveryPhase::Recovering));
    input.pods = 0;
    let table = [
        (JobState::Absent, Step::RunRecover),
        (JobState::Running, Step::WaitRecover),
        (JobState::Succeeded, Step::Start),
        (
            JobState::Failed("exit 1".into()),
            Step::RecoverFailed {
                message: "exit 1".into(),
            },
        ),
    ];
    for (job, want) in table {
        input.job = job.clone();
        let step = next_step(&input);
        assert_eq!(step, want, "job {job:?}");
        assert_eq!(step.holds_statefulset_at_zero(), want != Step::Start);
    }
}

#[test]
fn the_recovery_is_done_once_a_leader_answers() {
    let mut input = step_input(Loss::None, true, Some(RecoveryPhase::Starting));
    assert_eq!(next_step(&input), Step::WaitLeader);
    input.leader = Some(0);
    assert_eq!(next_step(&input), Step::Done);
}
