//! Issue 22: a KraftQuorum created over the volumes of a running static
//! quorum (`spec.adopt`) takes it over as it is: the volumes (formatted by
//! our `format` with `controller.quorum.voters`, records committed by our
//! controllers run on the host) are never formatted again, the operator
//! upgrades kraft.version to 1 and rolls the pods onto bootstrap servers
//! (KAFKA-16538), every record committed before is still in every log, and
//! the adopted quorum then scales 3 -> 4.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Child, Command},
    time::Duration,
};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kraft_e2e::{Must, TestNamespace, quorum, wait};
use kraft_operator::{build::statefulset::CONTROLLER_UID, crd::AdoptionPhase};

use super::{one_voter::kraft_controller, *};

const CLUSTER: &str = "QWRvcHRlZFN0YXRpY1F1bw";

/// Creates PVC `data-q-<ordinal>` and returns the host directory of the
/// volume the provisioner bound to it.
async fn volume(ns: &TestNamespace, ordinal: i32) -> PathBuf {
    let name = format!("data-{Q}-{ordinal}");
    let pvc: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .expect("a valid PVC manifest");
    let pvcs = ns.api::<PersistentVolumeClaim>();
    pvcs.create(&Default::default(), &pvc)
        .await
        .unwrap_or_else(|e| panic!("create pvc {name}: {e}"));
    let bound = wait::until(
        &pvcs,
        &name,
        &format!("PVC {name} bound"),
        Duration::from_secs(60),
        |c: Option<&PersistentVolumeClaim>| {
            c.and_then(|c| c.status.as_ref()?.phase.as_deref()) == Some("Bound")
        },
        |c| format!("{:?}", c.status),
    )
    .await
    .must("PVC bound")
    .expect("a bound PVC exists");
    let pv_name = bound
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
        .map(|h| PathBuf::from(h.path))
        .unwrap_or_default();
    assert!(path.is_dir(), "PV {pv_name} has no host directory {path:?}");
    path
}

/// Runs our binary; its stdout, or a panic with all its output.
fn ours(args: &[&str]) -> String {
    let out = Command::new(kraft_controller())
        .args(args)
        .output()
        .expect("kraft-controller runs");
    assert!(
        out.status.success(),
        "kraft-controller {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `Key: value` lines of our `quorum describe --status` through `address`.
fn status_at(address: &str) -> Option<BTreeMap<String, String>> {
    let out = Command::new(kraft_controller())
        .args([
            "quorum",
            "--bootstrap-controller",
            address,
            "--timeout-ms",
            "2000",
        ])
        .args(["describe", "--status"])
        .output()
        .ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect()
    })
}

/// Our `dump-log` record lines of `data`'s first segment below `end`.
fn records_below(data: &Path, end: i64) -> Vec<String> {
    let segment = data.join("__cluster_metadata-0/00000000000000000000.log");
    ours(&["dump-log", &segment.display().to_string()])
        .lines()
        .filter(|l| {
            l.strip_prefix("  offset=")
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|o| o.parse::<i64>().ok())
                .is_some_and(|o| o < end)
        })
        .map(str::to_owned)
        .collect()
}

/// Kills the host controllers on drop.
struct HostQuorum(Vec<Child>);

impl Drop for HostQuorum {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A static quorum of three of our controllers on 127.0.0.1 with
/// `metadata.log.dir` `<volume>/data` (where the pod mounts it), run until
/// it commits a few records and every node holds them, then stopped: the
/// committed offset and each node's directory id.
async fn run_static_quorum(volumes: &[PathBuf]) -> (i64, Vec<String>) {
    let ports: Vec<u16> = (0..3)
        .map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port()
        })
        .collect();
    let voters = (0..3)
        .map(|i| format!("{i}@127.0.0.1:{}", ports[i]))
        .collect::<Vec<_>>()
        .join(",");
    let mut children = HostQuorum(Vec::new());
    let mut dirs = Vec::new();
    for (i, volume) in volumes.iter().enumerate() {
        let config = volume.with_extension("static.properties");
        std::fs::write(
            &config,
            format!(
                "process.roles=controller\nnode.id={i}\ncontroller.listener.names=CONTROLLER\n\
                 listeners=CONTROLLER://127.0.0.1:{}\ncontroller.quorum.voters={voters}\n\
                 metadata.log.dir={}\n",
                ports[i],
                volume.join("data").display()
            ),
        )
        .expect("write the static config");
        let config = config.display().to_string();
        ours(&[
            "format",
            "--config",
            &config,
            &format!("--cluster-id={CLUSTER}"),
            "--no-initial-controllers",
        ]);
        let meta =
            std::fs::read_to_string(volume.join("data/meta.properties")).expect("meta.properties");
        dirs.push(
            meta.lines()
                .find_map(|l| l.strip_prefix("directory.id="))
                .expect("a directory id")
                .to_owned(),
        );
        children.0.push(
            Command::new(kraft_controller())
                .args(["run", "--config", &config])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start kraft-controller run"),
        );
    }
    let address = format!("127.0.0.1:{}", ports[0]);
    let committed = wait::poll(
        "the static quorum to commit past offset 5",
        Duration::from_secs(60),
        || {
            let hw = status_at(&address)
                .and_then(|s| s.get("HighWatermark")?.parse::<i64>().ok())
                .unwrap_or(0);
            async move { Ok((hw > 5).then_some(hw)) }
        },
    )
    .await
    .must("the static quorum commits");
    // Each node holds the committed prefix once its own log reaches it.
    for volume in volumes {
        let what = format!("{} to hold offset {committed}", volume.display());
        wait::poll(&what, Duration::from_secs(30), || {
            let held = records_below(&volume.join("data"), committed).len() >= committed as usize;
            async move { Ok(held.then_some(())) }
        })
        .await
        .must(&what);
    }
    drop(children);
    // The files were written by this process (root); the pods run as the
    // controller's user. On a volume with ownership management the kubelet
    // hands them to the pod's fsGroup; the real node's local-path volumes
    // (hostPath) have none, so the test does what docs/operations.md tells an
    // adopting user to do there.
    for volume in volumes {
        chown_tree(volume, CONTROLLER_UID as u32);
    }
    (committed, dirs)
}

/// `chown -R uid:uid path`: every file and directory under `path`.
fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(uid))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
            chown_tree(&entry.expect("a directory entry").path(), uid);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_quorum_on_existing_volumes_is_adopted_keeps_every_record_and_then_scales() {
    let (_client, ns, _operator) = setup("e2e-rs-adopt").await;
    let mut volumes = Vec::new();
    for ordinal in 0..3 {
        volumes.push(volume(&ns, ordinal).await);
    }
    let (committed, dirs) = run_static_quorum(&volumes).await;
    let before: Vec<Vec<String>> = volumes
        .iter()
        .map(|v| records_below(&v.join("data"), committed))
        .collect();
    assert!(
        before.iter().all(|r| *r == before[0]),
        "the three logs differ below {committed}"
    );

    let voters: Vec<serde_json::Value> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| serde_json::json!({"nodeId": i, "directoryId": d}))
        .collect();
    let kq = quorum::minimal_with(
        Q,
        3,
        serde_json::json!({"spec": {"adopt": {"clusterId": CLUSTER, "voters": voters}}}),
    )
    .must("the manifest");
    quorum::create(&ns, &kq)
        .await
        .must("create KraftQuorum q with spec.adopt");
    let adopted = wait::until(
        &ns.api(),
        Q,
        "q adopted and Ready with 3 voters",
        READY_TIMEOUT,
        |k: Option<&kraft_operator::crd::KraftQuorum>| {
            k.is_some_and(|k| {
                k.status.as_ref().and_then(|s| s.adoption_phase) == Some(AdoptionPhase::Adopted)
                    && wait::is_ready_with(k, 3)
            })
        },
        wait::summary,
    )
    .await
    .must("adopted")
    .expect("the quorum exists");
    assert_eq!(
        adopted
            .status
            .as_ref()
            .and_then(|s| s.cluster_id.as_deref()),
        Some(CLUSTER)
    );
    voters_match(&ns, 3).await;
    let described = kraft_e2e::describe::describe(&ns, Q)
        .await
        .must("DescribeQuorum");
    let mut described_dirs: Vec<(i32, String)> = described
        .voters
        .iter()
        .map(|v| {
            (
                v.node_id,
                kraft_operator::kafka_uuid::to_string(v.directory_id),
            )
        })
        .collect();
    described_dirs.sort();
    let expected: Vec<(i32, String)> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| (i as i32, d.clone()))
        .collect();
    assert_eq!(
        described_dirs, expected,
        "the voters carry the volumes' directory ids"
    );
    for reason in ["KraftVersionUpgraded", "Adopted"] {
        let n = kraft_e2e::events::count(&ns, Q, reason)
            .await
            .must("count events");
        assert_eq!(n, 1, "{reason} events");
    }

    // Managed as any other quorum now: 3 -> 4.
    quorum::scale(&ns, Q, 4).await.must("scale to 4");
    wait::ready(&ns, Q, 4, SCALE_TIMEOUT)
        .await
        .must("4 voters Ready");
    voters_match(&ns, 4).await;

    // Every record committed before the adoption is still in each log.
    for (volume, before) in volumes.iter().zip(&before) {
        assert_eq!(
            &records_below(&volume.join("data"), committed),
            before,
            "{}",
            volume.display()
        );
    }
}
