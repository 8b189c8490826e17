use k8s_openapi::api::batch::v1::Job;

use super::*;
use crate::crd::VoterStatus;

fn t(s: &str) -> Timestamp {
    s.parse().expect("time")
}

fn view(id: i32, dir: &str, caught_up: bool) -> VoterView {
    (id, dir.to_string(), caught_up)
}

fn volume(id: i32, dir: &str, uid: &str) -> VoterVolume {
    VoterVolume {
        node_id: id,
        directory_id: dir.into(),
        claim_uid: uid.into(),
    }
}

#[test]
fn a_steady_quorum_whose_voters_are_recorded_reads_no_claim() {
    let rec = RecoveryStatus {
        volumes: vec![volume(0, "d0", "u0"), volume(1, "d1", "u1")],
        ..RecoveryStatus::default()
    };
    let voters = [view(0, "d0", true), view(1, "d1", true)];
    assert!(claims_to_read(&rec, true, &voters, None, 300_000).is_empty());
    // A voter on a new volume (new directory id), once caught up, and one
    // never recorded are read; one not caught up is not.
    let voters = [
        view(0, "d0-new", true),
        view(1, "d1", true),
        view(2, "d2", true),
    ];
    assert_eq!(
        claims_to_read(&rec, true, &voters, None, 300_000),
        vec![0, 2]
    );
    let voters = [view(0, "d0-new", false)];
    assert!(claims_to_read(&rec, true, &voters, None, 300_000).is_empty());
}

#[test]
fn without_a_leader_the_claims_are_read_only_once_the_configured_time_passed() {
    let rec = RecoveryStatus::default();
    let voters = [view(0, "d0", false), view(1, "d1", false)];
    assert!(claims_to_read(&rec, false, &voters, Some(299_999), 300_000).is_empty());
    assert_eq!(
        claims_to_read(&rec, false, &voters, Some(300_000), 300_000),
        vec![0, 1]
    );
}

#[test]
fn a_caught_up_voter_s_claim_is_recorded_with_its_directory_id_and_a_leader_clears_the_leaderless_time()
 {
    let mut rec = RecoveryStatus {
        volumes: vec![volume(0, "d0", "old0"), volume(5, "d5", "u5")],
        no_leader_since: Some("2026-11-30T00:00:00Z".into()),
        ..RecoveryStatus::default()
    };
    let claims: BTreeMap<i32, String> = [
        (0, "new0".to_string()),
        (1, "u1".to_string()),
        (2, "u2".to_string()),
    ]
    .into();
    let voters = [
        view(0, "d0-new", true),
        view(1, "d1", true),
        view(2, "d2", false),
    ];
    note_observation(&mut rec, true, &voters, &claims, t("2026-11-30T00:10:00Z"));
    assert_eq!(rec.no_leader_since, None);
    // 5 is no voter any more; 2 is not caught up: not recorded.
    assert_eq!(
        rec.volumes,
        vec![volume(0, "d0-new", "new0"), volume(1, "d1", "u1")]
    );
}

#[test]
fn the_leaderless_time_starts_at_the_first_pass_without_a_leader() {
    let mut rec = RecoveryStatus::default();
    let voters = [view(0, "d0", true)];
    note_observation(
        &mut rec,
        false,
        &voters,
        &BTreeMap::new(),
        t("2026-11-30T00:00:00Z"),
    );
    note_observation(
        &mut rec,
        false,
        &voters,
        &BTreeMap::new(),
        t("2026-11-30T00:05:00Z"),
    );
    assert_eq!(rec.no_leader_since.as_deref(), Some("2026-11-30T00:00:00Z"));
    let status = KraftQuorumStatus {
        recovery: rec,
        voters: vec![VoterStatus {
            node_id: 0,
            ..VoterStatus::default()
        }],
        ..KraftQuorumStatus::default()
    };
    let now = t("2026-11-30T00:05:00Z").as_millisecond();
    assert_eq!(no_leader_ms(&status, now), Some(300_000));
    let led = KraftQuorumStatus {
        leader_id: Some(0),
        ..status
    };
    assert_eq!(no_leader_ms(&led, now), None);
}

#[test]
fn a_recorded_phase_holds_the_statefulset_at_zero_until_starting() {
    let at = |phase| RecoveryStatus {
        phase,
        ..RecoveryStatus::default()
    };
    assert_eq!(held_replicas(&at(None), 3), None);
    assert_eq!(
        held_replicas(&at(Some(RecoveryPhase::Stopping)), 3),
        Some(0)
    );
    assert_eq!(
        held_replicas(&at(Some(RecoveryPhase::Recovering)), 3),
        Some(0)
    );
    assert_eq!(
        held_replicas(&at(Some(RecoveryPhase::Starting)), 3),
        Some(3)
    );
}

#[test]
fn the_recover_job_s_failure_carries_its_pod_s_stop_line() {
    let job = |status: &str| -> Job {
        serde_yaml::from_str(&format!(
            "metadata: {{name: kq-recover-0}}\nstatus: {status}"
        ))
        .expect("job")
    };
    assert_eq!(job_state(None, None), JobState::Absent);
    assert_eq!(
        job_state(Some(&job("{active: 1}")), None),
        JobState::Running
    );
    assert_eq!(
        job_state(Some(&job("{succeeded: 1}")), None),
        JobState::Succeeded
    );
    let failed = job(
        "{failed: 1, conditions: [{type: Failed, status: 'True', message: 'Job has reached the specified backoff limit'}]}",
    );
    assert_eq!(
        job_state(
            Some(&failed),
            Some("error: cannot lock /var/lib/kraft/data")
        ),
        JobState::Failed("error: cannot lock /var/lib/kraft/data".into())
    );
    assert_eq!(
        job_state(Some(&failed), None),
        JobState::Failed("Job has reached the specified backoff limit".into())
    );
}

#[test]
fn the_annotation_allows_one_recovery_per_value() {
    let mut rec = RecoveryStatus::default();
    assert!(!recovery_allowed(false, None, &rec));
    assert!(recovery_allowed(true, None, &rec));
    assert!(recovery_allowed(false, Some("2026-12-05"), &rec));
    // Recorded when its recovery started: the same value allows no other.
    rec.request = Some("2026-12-05".into());
    assert!(!recovery_allowed(false, Some("2026-12-05"), &rec));
    assert!(recovery_allowed(false, Some("2026-12-06"), &rec));
    assert!(recovery_allowed(true, Some("2026-12-05"), &rec));
}

/// Node 2 was replaced (a new volume, directory id `d2-new`, voter again but
/// not caught up when last seen), so its claim uid was never recorded: the
/// record of its old volume must not make the new one count as lost. The
/// new voter may hold records committed with node 1 that node 0 lacks, so
/// recovering from node 0 alone could lose committed records.
#[test]
fn a_record_of_a_voter_s_previous_directory_id_proves_nothing() {
    let voter = |id: i32, dir: &str| VoterStatus {
        node_id: id,
        directory_id: dir.into(),
        ..VoterStatus::default()
    };
    let status = KraftQuorumStatus {
        voters: vec![voter(0, "d0"), voter(1, "d1"), voter(2, "d2-new")],
        recovery: RecoveryStatus {
            volumes: vec![
                volume(0, "d0", "u0"),
                volume(1, "d1", "u1"),
                volume(2, "d2-old", "u2-old"),
            ],
            no_leader_since: Some("2026-11-30T00:00:00Z".into()),
            ..RecoveryStatus::default()
        },
        ..KraftQuorumStatus::default()
    };
    // Node 1's claim is gone; node 2's is the new volume's.
    let claims: BTreeMap<i32, String> = [(0, "u0".to_string()), (2, "u2-new".to_string())].into();
    let now = t("2026-11-30T00:10:00Z").as_millisecond();
    let input = loss_input(&status, 300_000, &claims, now);
    assert!(!input.recorded.contains_key(&2), "{input:?}");
    assert_eq!(quorum_loss::detect(&input), quorum_loss::Loss::None);
}
