//! The cluster tests (issue 18), ported case by case from tests/e2e/run.sh
//! with the same assertions, against the local Kubernetes cluster
//! (docs/local-cluster.md) with the operator installed by its Helm chart.
//! Each test runs in its own namespace (`e2e-rs-…`), waits for conditions
//! with timeouts, and dumps the namespace when it fails.
//!
//! Built only with the `cluster` feature: `make test-e2e` runs
//! `cargo test -p kraft-e2e --features cluster -- --test-threads 1`.
//! Figures (seconds) are printed as `figure NAME VALUE` (see them with
//! `--nocapture`).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kraft_e2e::{Must, TestNamespace, client, describe, events, quorum, wait};
use kube::Client;

/// The quorum's name in every case, as in run.sh.
const Q: &str = "q";
/// Apply to Ready of a new quorum (run.sh: 240 s).
const READY_TIMEOUT: Duration = Duration::from_secs(240);
/// A scale by two voters (run.sh: 300 s).
const SCALE_TIMEOUT: Duration = Duration::from_secs(300);
/// DescribeQuorum agreeing with the status (run.sh: 60 s).
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Prints one measurement in seconds (run.sh's `figure`, to 0.1 s).
fn figure(name: &str, took: Duration) {
    println!("figure {name} {:.1}", took.as_secs_f64());
}

/// A client of the local cluster and a fresh namespace `ns`.
async fn setup(ns: &str) -> (Client, TestNamespace) {
    let client = client()
        .await
        .must("a client of the local cluster (dev/cluster.sh up)");
    let ns = TestNamespace::create(&client, ns)
        .await
        .must("create the test namespace");
    (client, ns)
}

/// `ready_three`: a KraftQuorum q of 3 voters, Ready; records apply → Ready.
async fn ready_three(ns: &TestNamespace) {
    let start = Instant::now();
    quorum::create_minimal(ns, Q, 3)
        .await
        .must("create KraftQuorum q");
    wait::ready(ns, Q, 3, READY_TIMEOUT)
        .await
        .must("3 voters Ready");
    figure("apply_to_ready_3", start.elapsed());
}

/// Waits until DescribeQuorum agrees with the status on `n` voters.
async fn voters_match(ns: &TestNamespace, n: usize) {
    describe::wait_voters_match(ns, Q, n, DESCRIBE_TIMEOUT)
        .await
        .unwrap_or_else(|e| panic!("DescribeQuorum shows {n} voters: {e}"));
}

/// The node ids of q's `reason` events, in order.
async fn voter_events(ns: &TestNamespace, reason: &str) -> Vec<i32> {
    events::voter_events(ns, Q, reason)
        .await
        .unwrap_or_else(|e| panic!("read the {reason} events: {e}"))
}

/// (1) 3 voters become Ready; DescribeQuorum shows them with the directory
/// ids of the status; the status' leader and epoch match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_become_ready() {
    let (_client, ns) = setup("e2e-rs-ready").await;
    ready_three(&ns).await;
    voters_match(&ns, 3).await;
}

/// (2) scale 3 → 5: voters 3 then 4 added one at a time; 5 → 3: voters 4
/// then 3 removed, highest first; 3 → 5 again (issue 27): pods q-3 and q-4
/// come back under the same names, on their kept volumes, with new pod IPs,
/// and are added again no slower than the first time (plus a margin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_adds_and_removes_voters_one_at_a_time() {
    const MARGIN: Duration = Duration::from_secs(30);
    let (_client, ns) = setup("e2e-rs-scale").await;
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
