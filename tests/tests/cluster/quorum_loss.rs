//! Issue 26 on the local cluster: a 3-voter quorum loses two of its three
//! volumes (PVCs and pods deleted; the StatefulSet re-creates them empty).
//! Without `spec.recovery.allowQuorumLossRecovery` the operator reports
//! `QuorumLost` and touches nothing; with it, the quorum comes back from the
//! survivor, Ready with 3 voters, the cluster id and the committed log kept.

use std::time::{Duration, Instant};

use k8s_openapi::api::{
    apps::v1::StatefulSet,
    batch::v1::Job,
    core::v1::{PersistentVolumeClaim, Pod},
};
use kraft_e2e::{Must, TestNamespace, events, quorum, wait};
use serde_json::json;

use super::{Q, READY_TIMEOUT, figure, setup, voters_match};

/// The shortest time without a leader the CRD accepts (s).
const LOSS_AFTER_SECONDS: i64 = 60;
/// Detection (60 s) plus the recovery and two voters re-added.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(600);

/// A Ready 3-voter quorum q with `spec.recovery` as given, its volumes
/// recorded by the operator (`status.recovery.volumes`).
async fn ready_three_recorded(ns: &TestNamespace, allow: bool) {
    let start = Instant::now();
    let kq = quorum::minimal_with(
        Q,
        3,
        json!({"spec": {"recovery": {"allowQuorumLossRecovery": allow,
                                     "quorumLossAfterSeconds": LOSS_AFTER_SECONDS}}}),
    )
    .must("the manifest");
    quorum::create(ns, &kq).await.must("create KraftQuorum q");
    wait::ready(ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    figure("apply_to_ready_3", start.elapsed());
    wait::quorum(ns, Q, "3 volumes recorded", READY_TIMEOUT, |kq| {
        kq.status
            .as_ref()
            .is_some_and(|s| s.recovery.volumes.len() == 3)
    })
    .await
    .must("3 volumes recorded");
}

/// Deletes the claims and pods of voters 1 and 2 (the claims first: PVC
/// protection holds them until their pods are gone).
async fn lose_two(ns: &TestNamespace) {
    for i in [1, 2] {
        ns.api::<PersistentVolumeClaim>()
            .delete(&format!("data-{Q}-{i}"), &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete pvc data-{Q}-{i}: {e}"));
    }
    for i in [1, 2] {
        ns.api::<Pod>()
            .delete(&format!("{Q}-{i}"), &Default::default())
            .await
            .unwrap_or_else(|e| panic!("delete pod {Q}-{i}: {e}"));
    }
}

fn uid_of<K: kube::Resource>(k: &K) -> String {
    k.meta().uid.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_opt_in_a_lost_majority_is_reported_and_nothing_is_touched() {
    let (_client, ns, _operator) = setup("e2e-rs-qloss-off").await;
    ready_three_recorded(&ns, false).await;
    let claim0 = ns
        .api::<PersistentVolumeClaim>()
        .get(&format!("data-{Q}-0"))
        .await
        .unwrap_or_else(|e| panic!("pvc data-q-0: {e}"));
    let pod0 = ns
        .api::<Pod>()
        .get(&format!("{Q}-0"))
        .await
        .unwrap_or_else(|e| panic!("pod q-0: {e}"));
    let start = Instant::now();
    lose_two(&ns).await;
    let kq = wait::quorum(&ns, Q, "Degraded QuorumLost", RECOVERY_TIMEOUT, |kq| {
        wait::degraded_because(kq, "QuorumLost")
    })
    .await
    .must("Degraded QuorumLost");
    figure("loss_to_quorum_lost", start.elapsed());
    let status = kq.status.expect("status");
    let message = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(message.contains("voters 1, 2 of 3"), "{message}");
    assert!(message.contains("docs/operations.md"), "{message}");
    assert_eq!(status.recovery.phase, None);
    // Nothing touched: the StatefulSet's size, no Job, the survivor's claim
    // and pod the same objects.
    let sts = ns
        .api::<StatefulSet>()
        .get(Q)
        .await
        .unwrap_or_else(|e| panic!("statefulset q: {e}"));
    assert_eq!(sts.spec.and_then(|s| s.replicas), Some(3));
    let jobs = ns
        .api::<Job>()
        .list(&Default::default())
        .await
        .unwrap_or_else(|e| panic!("list jobs: {e}"));
    assert!(jobs.items.is_empty(), "no Job: {:?}", jobs.items.len());
    let claim_now = ns
        .api::<PersistentVolumeClaim>()
        .get(&format!("data-{Q}-0"))
        .await
        .unwrap_or_else(|e| panic!("pvc data-q-0: {e}"));
    assert_eq!(uid_of(&claim_now), uid_of(&claim0));
    let pod_now = ns
        .api::<Pod>()
        .get(&format!("{Q}-0"))
        .await
        .unwrap_or_else(|e| panic!("pod q-0: {e}"));
    assert_eq!(uid_of(&pod_now), uid_of(&pod0));
    assert_eq!(
        events::count(&ns, Q, "QuorumLost").await.must("events"),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_opt_in_a_lost_majority_comes_back_from_the_survivor_with_its_log() {
    let (_client, ns, _operator) = setup("e2e-rs-qloss-on").await;
    ready_three_recorded(&ns, true).await;
    voters_match(&ns, 3).await;
    let before = quorum::get(&ns, Q).await.must("kq/q");
    let status = before.status.clone().expect("status");
    let cluster_id = status.cluster_id.clone().expect("cluster id");
    let hw = status.high_watermark.expect("high watermark of a Ready quorum");
    let dir0 = quorum::voter_dir(&before, 0).expect("voter 0");
    let old_dirs = [
        quorum::voter_dir(&before, 1).expect("voter 1"),
        quorum::voter_dir(&before, 2).expect("voter 2"),
    ];
    let start = Instant::now();
    lose_two(&ns).await;
    wait::quorum(&ns, Q, "RecoveringFromQuorumLoss", RECOVERY_TIMEOUT, |kq| {
        kq.status.as_ref().is_some_and(|s| s.recovery.phase.is_some())
    })
    .await
    .must("the recovery starts");
    figure("loss_to_recovery", start.elapsed());
    let after = wait::quorum(&ns, Q, "Ready with 3 new voters", RECOVERY_TIMEOUT, move |kq| {
        wait::is_ready_with(kq, 3)
            && kq.status.as_ref().is_some_and(|s| s.recovery.phase.is_none())
            && (1..3).all(|i| {
                quorum::voter_dir(kq, i).is_some_and(|d| !old_dirs.contains(&d))
            })
    })
    .await
    .must("Ready with 3 voters again");
    figure("loss_to_ready", start.elapsed());
    voters_match(&ns, 3).await;
    let s = after.status.clone().expect("status");
    assert_eq!(s.cluster_id.as_deref(), Some(cluster_id.as_str()));
    assert_eq!(quorum::voter_dir(&after, 0).as_deref(), Some(dir0.as_str()));
    // Every offset committed before the loss is in the recovered log: its
    // high watermark is past the old one (the survivor's whole log was
    // committed by its election).
    let hw_now = s.high_watermark.expect("high watermark");
    assert!(hw_now > hw, "high watermark {hw_now} after, {hw} before");
    for reason in ["RecoveringFromQuorumLoss", "QuorumRecovered"] {
        let n = events::count(&ns, Q, reason).await.must("events");
        assert!(n >= 1, "no {reason} event");
    }
    assert!(
        ns.api::<Job>()
            .list(&Default::default())
            .await
            .unwrap_or_else(|e| panic!("list jobs: {e}"))
            .items
            .iter()
            .all(|j| j.metadata.deletion_timestamp.is_some()),
        "the recover Job is deleted"
    );
}
