//! The cases of run.sh on a 3-voter quorum, with run.sh's assertions.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kraft_e2e::{Must, TestNamespace, client, operator, pods, quorum, wait};

use super::*;

/// (1) 3 voters become Ready; DescribeQuorum shows them with the directory
/// ids of the status; the status' leader and epoch match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_become_ready() {
    let (_client, ns, _operator) = setup("e2e-rs-ready").await;
    ready_three(&ns).await;
    voters_match(&ns, 3).await;
}

/// (2) scale 3 → 5: voters 3 then 4 added one at a time; 5 → 3: voters 4
/// then 3 removed, highest first; 3 → 5 again (issue 27): pods q-3 and q-4
/// come back under the same names, on their kept volumes, with new pod IPs,
/// and are added again no slower than the first time (plus a margin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_adds_and_removes_voters_one_at_a_time() {
    // Generous: another case (Kafka's JVMs starting) may run beside it.
    const MARGIN: Duration = Duration::from_secs(60);
    let (_client, ns, _operator) = setup("e2e-rs-scale").await;
    ready_three(&ns).await;

    let start = Instant::now();
    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5");
    wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready");
    let first = start.elapsed();
    figure("add_voter_each", first / 2);
    figure("scale_3_to_5", first);
    voters_match(&ns, 5).await;
    assert_eq!(
        voter_events(&ns, "VoterAdded").await,
        [3, 4],
        "VoterAdded events"
    );

    let start = Instant::now();
    quorum::scale(&ns, Q, 3).await.must("scale kq/q to 3");
    wait::ready(&ns, Q, 3, SCALE_TIMEOUT)
        .await
        .must("3 voters Ready after scaling down");
    figure("remove_voter_each", start.elapsed() / 2);
    figure("scale_5_to_3", start.elapsed());
    voters_match(&ns, 3).await;
    assert_eq!(
        voter_events(&ns, "VoterRemoved").await,
        [4, 3],
        "VoterRemoved events"
    );

    let pods = ns.api::<Pod>();
    for pod in ["q-3", "q-4"] {
        wait::until(
            &pods,
            pod,
            &format!("pod {pod} gone"),
            Duration::from_secs(120),
            |p: Option<&Pod>| p.is_none(),
            |p| format!("{:?}", p.status.as_ref().and_then(|s| s.phase.clone())),
        )
        .await
        .unwrap_or_else(|e| panic!("pods q-3 and q-4 gone: {e}"));
    }

    let start = Instant::now();
    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5 again");
    wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready again");
    let again = start.elapsed();
    figure("scale_3_to_5_again", again);
    voters_match(&ns, 5).await;
    assert!(
        again <= first + MARGIN,
        "3 → 5 again took {} s, the first 3 → 5 {} s (margin {} s)",
        again.as_secs(),
        first.as_secs(),
        MARGIN.as_secs()
    );
}

/// Creates `kq` and returns the API server's refusal, failing the test when
/// it is accepted or refused without `message` (`expect_rejected`).
async fn expect_rejected(result: kraft_e2e::Result<impl std::fmt::Debug>, message: &str) {
    match result {
        Ok(k) => panic!("accepted, want rejected with '{message}': {k:?}"),
        Err(e) => {
            let text = format!("{e}");
            assert!(
                text.contains(message),
                "rejected without '{message}': {text}"
            );
        }
    }
}

/// (8) the API server rejects replicas 0 and 10 and a changed clusterId
/// with the CRD's CEL messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_specs_are_rejected_by_the_api_server() {
    let _operator = operator_shared().await;
    let client = client().await.must("a client of the local cluster");
    let ns = TestNamespace::create(&client, "e2e-rs-invalid")
        .await
        .must("create the test namespace");
    for r in [0, 10] {
        let kq = quorum::minimal("bad", r).must("the manifest");
        expect_rejected(
            quorum::create(&ns, &kq).await,
            "replicas must be between 1 and 9",
        )
        .await;
    }
    let id = "MkU3OEVBNTcwNTJENDM2Qg";
    let other = "AAAAAAAAAAAAAAAAAAAAAA";
    let fixed = quorum::minimal_with("fixed", 1, serde_json::json!({"spec": {"clusterId": id}}))
        .must("the manifest");
    quorum::create(&ns, &fixed)
        .await
        .must("create KraftQuorum fixed");
    expect_rejected(
        quorum::patch_merge(
            &ns,
            "fixed",
            serde_json::json!({"spec": {"clusterId": other}}),
        )
        .await,
        "clusterId is immutable once set",
    )
    .await;
}

/// (4) the leader's pod deleted: it comes back with the same directory id
/// and rejoins; the membership does not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_leader_pod_rejoins_with_the_same_directory_id() {
    let (_client, ns, _operator) = setup("e2e-rs-leader").await;
    ready_three(&ns).await;
    let deleted = pods::delete_leader(&ns, Q, 3, READY_TIMEOUT)
        .await
        .must("the leader's pod deleted, the quorum Ready again after an election");
    println!(
        "deleted q-{} (leader of epoch {}), now epoch {:?}",
        deleted.leader,
        deleted.epoch,
        deleted.after.status.as_ref().and_then(|s| s.leader_epoch)
    );
    voters_match(&ns, 3).await;
    let now = quorum::directory_ids(&quorum::get(&ns, Q).await.must("get kq/q"));
    assert_eq!(now, deleted.directory_ids, "directory ids changed");
    let added = voter_events(&ns, "VoterAdded").await;
    let removed = voter_events(&ns, "VoterRemoved").await;
    assert!(
        added.is_empty() && removed.is_empty(),
        "unexpected membership change: VoterAdded {added:?} VoterRemoved {removed:?}"
    );
}

/// (5) a voter's PVC and pod deleted: it comes back with a new directory id;
/// the operator replaces the old voter (same node id) with the new one; the
/// quorum keeps committing (the high watermark grows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_volume_is_replaced_with_a_new_directory_id() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let (_client, ns, _operator) = setup("e2e-rs-volume").await;
    ready_three(&ns).await;
    let kq = quorum::get(&ns, Q).await.must("get kq/q");
    let old = quorum::voter_dir(&kq, 2).expect("voter 2 in the status of a Ready quorum");
    ns.api::<PersistentVolumeClaim>()
        .delete("data-q-2", &Default::default())
        .await
        .unwrap_or_else(|e| panic!("delete pvc data-q-2: {e}"));
    ns.api::<Pod>()
        .delete("q-2", &Default::default())
        .await
        .unwrap_or_else(|e| panic!("delete pod q-2: {e}"));
    wait::quorum(
        &ns,
        Q,
        "voter 2 with a new directory id",
        SCALE_TIMEOUT,
        move |kq| quorum::voter_dir(kq, 2).is_some_and(|d| !d.is_empty() && d != old),
    )
    .await
    .must("voter 2 with a new directory id");
    wait::ready(&ns, Q, 3, SCALE_TIMEOUT)
        .await
        .must("3 voters Ready again");
    voters_match(&ns, 3).await;
    let hw = quorum::status(&ns, Q)
        .await
        .must("the status")
        .high_watermark
        .expect("a Ready quorum has a high watermark in its status");
    // A steady quorum's status carries offsets at most STEADY_REQUEUE old.
    wait::quorum(
        &ns,
        Q,
        &format!("the high watermark grows past {hw}"),
        DESCRIBE_TIMEOUT + kraft_operator::controller::STEADY_REQUEUE,
        move |kq| {
            kq.status
                .as_ref()
                .and_then(|s| s.high_watermark)
                .is_some_and(|h| h > hw)
        },
    )
    .await
    .must("the high watermark grows");
}

/// (10) deleting the KraftQuorum garbage-collects its StatefulSet, pods,
/// Service and ConfigMap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_quorum_collects_its_children() {
    use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Service};
    use kraft_operator::crd::KraftQuorum;
    let (_client, ns, _operator) = setup("e2e-rs-delete").await;
    ready_three(&ns).await;
    let kqs = ns.api::<KraftQuorum>();
    kqs.delete(Q, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("delete kq/q: {e}"));
    wait::until(
        &kqs,
        Q,
        "kq/q deleted",
        Duration::from_secs(120),
        |k: Option<&KraftQuorum>| k.is_none(),
        wait::summary,
    )
    .await
    .must("kq/q deleted");
    let lp = kube::api::ListParams::default();
    wait::poll(
        "statefulset, pods, service collected",
        Duration::from_secs(180),
        || async {
            let kube = kraft_e2e::Error::kube;
            let sets = ns
                .api::<StatefulSet>()
                .list(&lp)
                .await
                .map_err(kube("list statefulsets"))?;
            let pods = ns.api::<Pod>().list(&lp).await.map_err(kube("list pods"))?;
            let services = ns
                .api::<Service>()
                .list(&lp)
                .await
                .map_err(kube("list services"))?;
            let left = (sets.items.len(), pods.items.len(), services.items.len());
            if left == (0, 0, 0) {
                Ok(Some(()))
            } else {
                Err(kraft_e2e::Error::Invalid(format!(
                    "{} statefulsets, {} pods, {} services left",
                    left.0, left.1, left.2
                )))
            }
        },
    )
    .await
    .must("statefulset, pods, service collected");
}

/// (9) the operator killed in the middle of a scale-up: the new operator
/// pod finishes the change, one voter at a time, each added once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_scale_up_finishes_the_change() {
    use k8s_openapi::api::apps::v1::StatefulSet;
    // No other case may run while the operator is down.
    let _operator = operator_exclusive().await;
    let client = client().await.must("a client of the local cluster");
    let ns = TestNamespace::create(&client, "e2e-rs-restart")
        .await
        .must("create the test namespace");
    ready_three(&ns).await;
    quorum::scale(&ns, Q, 5).await.must("scale kq/q to 5");
    wait::until(
        &ns.api::<StatefulSet>(),
        Q,
        "the scale-up started (statefulset q at 5 replicas)",
        Duration::from_secs(60),
        |s: Option<&StatefulSet>| s.and_then(|s| s.spec.as_ref()?.replicas) == Some(5),
        |s| {
            format!(
                "spec.replicas {:?}",
                s.spec.as_ref().and_then(|s| s.replicas)
            )
        },
    )
    .await
    .must("the scale-up started");
    operator::kill(&client).await.must("kill the operator");
    wait::ready(&ns, Q, 5, SCALE_TIMEOUT)
        .await
        .must("5 voters Ready");
    voters_match(&ns, 5).await;
    // An event may be lost with the killed pod; none may repeat or go backwards.
    let added = voter_events(&ns, "VoterAdded").await;
    assert!(
        [vec![3, 4], vec![3], vec![4]].contains(&added),
        "VoterAdded events: {added:?}, want [3, 4] (or one of them)"
    );
    operator::wait_rolled_out(&client, Duration::from_secs(120))
        .await
        .must("the operator's Deployment rolled out");
}

/// (20h) `spec.tls.enabled: false` (tests only): a PLAINTEXT quorum comes
/// up without any certificate Secret, DescribeQuorum answers without TLS,
/// and it scales 3 → 4 (voter 3 added over the plaintext admin client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plaintext_quorum_comes_up_and_scales_three_to_four() {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    let (_client, ns, _operator) = setup("e2e-rs-plain").await;
    let kq = quorum::minimal_with(
        Q,
        3,
        serde_json::json!({"spec": {"tls": {"enabled": false}}}),
    )
    .must("the manifest");
    quorum::create(&ns, &kq).await.must("create kq/q");
    wait::ready(&ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 plaintext voters Ready");
    voters_match(&ns, 3).await;
    let secrets = ns
        .api::<Secret>()
        .list(&Default::default())
        .await
        .unwrap_or_else(|e| panic!("list the Secrets: {e}"));
    let names: Vec<_> = secrets
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .filter(|n| n.starts_with("q-"))
        .collect();
    assert!(
        names.is_empty(),
        "certificate Secrets of a plaintext quorum: {names:?}"
    );
    let cm = ns
        .api::<ConfigMap>()
        .get(Q)
        .await
        .unwrap_or_else(|e| panic!("get configmap q: {e}"));
    let props = cm
        .data
        .as_ref()
        .and_then(|d| d.get("server.properties"))
        .cloned()
        .unwrap_or_default();
    assert!(
        props.contains("listener.security.protocol.map=CONTROLLER:PLAINTEXT"),
        "server.properties of a plaintext quorum: {props}"
    );

    quorum::scale(&ns, Q, 4).await.must("scale kq/q to 4");
    wait::ready(&ns, Q, 4, SCALE_TIMEOUT)
        .await
        .must("4 plaintext voters Ready");
    voters_match(&ns, 4).await;
    assert_eq!(
        voter_events(&ns, "VoterAdded").await,
        [3],
        "VoterAdded events"
    );
}
