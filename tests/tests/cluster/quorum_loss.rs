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
use kraft_e2e::{Must, TestNamespace, events, logs, quorum, wait};
use serde_json::json;

use super::{
    Q, READY_TIMEOUT, figure,
    one_voter::{kraft_controller, volume_files},
    setup, voters_match,
};

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

/// The host directory of the claim `data-q-<ordinal>`'s volume (the local
/// cluster's hostPath PVs; docs/local-cluster.md).
async fn volume_dir(ns: &TestNamespace, ordinal: i32) -> std::path::PathBuf {
    use k8s_openapi::api::core::v1::PersistentVolume;
    let claim = ns
        .api::<PersistentVolumeClaim>()
        .get(&format!("data-{Q}-{ordinal}"))
        .await
        .unwrap_or_else(|e| panic!("pvc data-{Q}-{ordinal}: {e}"));
    let pv_name = claim
        .spec
        .and_then(|s| s.volume_name)
        .expect("a bound PVC names its volume");
    let pv = kube::Api::<PersistentVolume>::all(ns.client().clone())
        .get(&pv_name)
        .await
        .unwrap_or_else(|e| panic!("get pv {pv_name}: {e}"));
    let path = pv
        .spec
        .and_then(|s| s.host_path)
        .map(|h| std::path::PathBuf::from(h.path))
        .unwrap_or_default();
    assert!(path.is_dir(), "PV {pv_name} has no host directory {path:?}");
    path
}

/// The batches of the metadata log under `volume` as `kraft-controller
/// dump-log` prints them: `(base offset, last offset, epoch, crc)`.
fn batches(volume: &std::path::Path) -> Vec<(i64, i64, String, String)> {
    let out = std::process::Command::new(kraft_controller())
        .arg("dump-log")
        .arg(volume.join("data"))
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", kraft_controller().display()));
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix("batch ")?;
            let field = |k: &str| {
                rest.split_whitespace()
                    .find_map(|f| f.strip_prefix(&format!("{k}=")[..]))
                    .map(str::to_string)
            };
            Some((
                field("base_offset")?.parse().ok()?,
                field("last_offset")?.parse().ok()?,
                field("epoch")?,
                field("crc")?,
            ))
        })
        .collect()
}

/// The survivor's files but `quorum-state` and `.lock` (its controller,
/// still running, may rewrite its election state; the operator writes none).
fn survivor_files(volume: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = volume_files(volume);
    files.retain(|k, _| !k.ends_with("quorum-state") && !k.ends_with(".lock"));
    files
}

/// How many reconcile passes of `ns`/q the operator logged as a quorum loss.
fn loss_passes(ns: &str) -> usize {
    let text = logs::operator().unwrap_or_default();
    let me = format!("{ns}/{Q}");
    text.lines()
        .filter(|l| l.contains("quorum loss") && l.contains(&me))
        .count()
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
    // The survivor's volume, byte for byte, across a later pass.
    let volume = volume_dir(&ns, 0).await;
    let files = survivor_files(&volume);
    assert!(
        files.keys().any(|k| k.ends_with(".log")),
        "no log segment under {}: {:?}",
        volume.display(),
        files.keys()
    );
    let passes = loss_passes(ns.name());
    let name = ns.name().to_string();
    wait::poll("another quorum-loss pass", Duration::from_secs(120), || {
        let n = loss_passes(&name);
        async move { Ok((n > passes).then_some(n)) }
    })
    .await
    .must("another quorum-loss pass");
    assert!(
        survivor_files(&volume) == files,
        "the survivor's volume changed"
    );
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
    assert_eq!(events::count(&ns, Q, "QuorumLost").await.must("events"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_opt_in_a_lost_majority_comes_back_from_the_survivor_with_its_log() {
    let (_client, ns, _operator) = setup("e2e-rs-qloss-on").await;
    ready_three_recorded(&ns, true).await;
    voters_match(&ns, 3).await;
    let before = quorum::get(&ns, Q).await.must("kq/q");
    let status = before.status.clone().expect("status");
    let cluster_id = status.cluster_id.clone().expect("cluster id");
    let hw = status
        .high_watermark
        .expect("high watermark of a Ready quorum");
    let dir0 = quorum::voter_dir(&before, 0).expect("voter 0");
    let old_dirs = [
        quorum::voter_dir(&before, 1).expect("voter 1"),
        quorum::voter_dir(&before, 2).expect("voter 2"),
    ];
    let volume = volume_dir(&ns, 0).await;
    let committed: Vec<_> = batches(&volume).into_iter().filter(|b| b.1 < hw).collect();
    assert!(!committed.is_empty(), "no committed batch below {hw}");
    let start = Instant::now();
    lose_two(&ns).await;
    wait::quorum(&ns, Q, "RecoveringFromQuorumLoss", RECOVERY_TIMEOUT, |kq| {
        kq.status
            .as_ref()
            .is_some_and(|s| s.recovery.phase.is_some())
    })
    .await
    .must("the recovery starts");
    figure("loss_to_recovery", start.elapsed());
    let after = wait::quorum(
        &ns,
        Q,
        "Ready with 3 new voters",
        RECOVERY_TIMEOUT,
        move |kq| {
            wait::is_ready_with(kq, 3)
                && kq
                    .status
                    .as_ref()
                    .is_some_and(|s| s.recovery.phase.is_none())
                && (1..3).all(|i| quorum::voter_dir(kq, i).is_some_and(|d| !old_dirs.contains(&d)))
        },
    )
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
    // dump-log on the survivor: every batch committed before the loss is
    // still there, the same (offsets, epoch, CRC).
    let now: std::collections::BTreeSet<_> = batches(&volume).into_iter().collect();
    let missing: Vec<_> = committed.iter().filter(|b| !now.contains(b)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} committed batches missing after the recovery: {missing:?}",
        missing.len(),
        committed.len()
    );
    println!(
        "quorum loss: {} batches committed before the loss kept (high watermark {hw} before, {hw_now} after)",
        committed.len()
    );
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
