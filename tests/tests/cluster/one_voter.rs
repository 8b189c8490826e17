//! The cases of run.sh on a 1-voter quorum, with run.sh's assertions.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kraft_e2e::{Must, TestNamespace, client, events, pods, quorum, wait};

use super::*;

/// (6, one voter) a config change on a 1-voter quorum restarts its only
/// voter: an outage nothing avoids, announced by one Warning Event
/// SingleVoterRestart; the quorum is Ready again on the new revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_voter_is_restarted_with_a_warning() {
    let (_client, ns, _operator) = setup("e2e-rs-solo").await;
    ready_one(&ns).await;
    let rev = pods::update_revision(&ns, Q)
        .await
        .must("the StatefulSet's revision")
        .expect("a Ready quorum's StatefulSet has an update revision");
    let start = Instant::now();
    quorum::patch_merge(
        &ns,
        Q,
        serde_json::json!({"spec": {"config": {"controller.quorum.append.linger.ms": "20"}}}),
    )
    .await
    .must("patch the config");
    pods::wait_rolled(&ns, Q, &rev, 1, READY_TIMEOUT)
        .await
        .must("the change rolled out to the only voter");
    figure("single_voter_restart", start.elapsed());
    let restarts = events::count(&ns, Q, "SingleVoterRestart")
        .await
        .must("count the SingleVoterRestart events");
    assert_eq!(restarts, 1, "SingleVoterRestart events");
}

/// Every file under `dir` and its bytes, by path relative to `dir`.
pub(super) fn volume_files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(
        root: &std::path::Path,
        dir: &std::path::Path,
        out: &mut std::collections::BTreeMap<String, Vec<u8>>,
    ) {
        let entries = std::fs::read_dir(dir);
        for e in entries.unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
            let path = e.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let bytes = std::fs::read(&path);
                let bytes = bytes.unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.insert(rel.display().to_string(), bytes);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The workspace's debug `kraft-controller`, which the tests run on the host,
/// found as tests/e2e/lib.sh finds it: in `$KRAFTWERK_TARGET_DIR` (the debug
/// directory itself), else in `debug/` of `$CARGO_TARGET_DIR` or `target/`.
pub(super) fn kraft_controller() -> std::path::PathBuf {
    if let Some(debug) = std::env::var_os("KRAFTWERK_TARGET_DIR") {
        return std::path::PathBuf::from(debug).join("kraft-controller");
    }
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("debug/kraft-controller")
}

/// (7) a KraftQuorum whose volume holds another cluster's data: its format
/// init container refuses the volume (again and again), the quorum reports
/// Degraded/ClusterIdMismatch naming the volume's cluster id, and every file
/// of the volume is byte for byte what it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_volume_of_another_cluster_is_reported_and_left_untouched() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let other = "T3RoZXJDbHVzdGVySWQxMg";
    let _operator = operator_shared().await;
    let client = client().await.must("a client of the local cluster");
    let ns = TestNamespace::create(&client, "e2e-rs-foreign")
        .await
        .must("create the test namespace");
    let pvc: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "data-q-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .expect("a valid PVC manifest");
    let pvcs = ns.api::<PersistentVolumeClaim>();
    pvcs.create(&Default::default(), &pvc)
        .await
        .unwrap_or_else(|e| panic!("create pvc data-q-0: {e}"));
    let bound = wait::until(
        &pvcs,
        "data-q-0",
        "PVC data-q-0 bound",
        Duration::from_secs(60),
        |c: Option<&PersistentVolumeClaim>| {
            c.and_then(|c| c.status.as_ref()?.phase.as_deref()) == Some("Bound")
        },
        |c| format!("{:?}", c.status),
    )
    .await
    .must("PVC data-q-0 bound")
    .expect("a bound PVC exists");
    let pv_name = bound
        .spec
        .and_then(|s| s.volume_name)
        .expect("a bound PVC names its volume");
    let pv = kube::Api::<PersistentVolume>::all(client.clone())
        .get(&pv_name)
        .await
        .unwrap_or_else(|e| panic!("get pv {pv_name}: {e}"));
    let path = pv
        .spec
        .and_then(|s| s.host_path)
        .map(|h| std::path::PathBuf::from(h.path))
        .unwrap_or_default();
    assert!(path.is_dir(), "PV {pv_name} has no host directory {path:?}");
    // Another cluster's controller 0, formatted where q-0's volume will be.
    let status = std::process::Command::new(kraft_controller())
        .arg("format")
        .arg("--metadata-log-dir")
        .arg(path.join("data"))
        .args(["--node-id", "0", &format!("--cluster-id={other}")])
        .args([
            "--initial-controllers",
            "0@q-0.q.elsewhere.svc.cluster.local:9093:T3RoZXJEaXJlY3RvcnkwMA",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("run {}: {e}", kraft_controller().display()));
    assert!(status.success(), "kraft-controller format: {status}");
    let before = volume_files(&path);
    assert!(
        before.keys().any(|k| k.ends_with("meta.properties")),
        "nothing formatted in {}: {:?}",
        path.display(),
        before.keys()
    );
    quorum::create_minimal(&ns, Q, 1).await.must("create kq/q");
    wait::quorum(
        &ns,
        Q,
        "Degraded/ClusterIdMismatch",
        Duration::from_secs(180),
        |kq| wait::degraded_because(kq, "ClusterIdMismatch"),
    )
    .await
    .must("Degraded/ClusterIdMismatch");
    // The format init container has met the volume more than once by now.
    wait::until(
        &ns.api::<Pod>(),
        "q-0",
        "the format init container retried",
        Duration::from_secs(120),
        |p: Option<&Pod>| {
            p.and_then(|p| {
                p.status
                    .as_ref()?
                    .init_container_statuses
                    .as_ref()?
                    .first()
                    .map(|c| c.restart_count)
            })
            .is_some_and(|r| r >= 2)
        },
        |p| {
            format!(
                "{:?}",
                p.status.as_ref().map(|s| &s.init_container_statuses)
            )
        },
    )
    .await
    .must("the format init container retried");
    let status = quorum::status(&ns, Q).await.must("the status");
    let message = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        message.contains(other),
        "the ClusterIdMismatch message does not name the volume's cluster id {other}: {message}"
    );
    assert_ne!(
        status.cluster_id.as_deref(),
        Some(other),
        "status.clusterId"
    );
    let after = volume_files(&path);
    assert!(
        before == after,
        "the volume changed: before {:?}, after {:?}",
        before.keys(),
        after.keys()
    );
    assert_eq!(
        wait::condition(&status, "Ready"),
        Some("False"),
        "condition Ready"
    );
}
