//! The cluster tests (issue 18), ported case by case from tests/e2e/run.sh
//! with the same assertions, against the local Kubernetes cluster
//! (docs/local-cluster.md) with the operator installed by its Helm chart.
//! Each test runs in its own namespace (`e2e-rs-…`), waits for conditions
//! with timeouts, and dumps the namespace when it fails.
//!
//! Built only with the `cluster` feature: `make test-e2e` runs
//! `cargo test -p kraft-e2e --features cluster --test cluster --
//! --test-threads 2` (tests/e2e/run.sh, `E2E_THREADS`). Two cases at a
//! time share one operator: a case that kills it holds [`OPERATOR`]
//! exclusively ([`operator_exclusive`]), every other case holds it shared
//! ([`setup`], [`operator_shared`]), so no case runs while its
//! reconciles are stopped.
//! Figures (seconds) are printed as `figure NAME VALUE` (see them with
//! `--nocapture`).
//!
//! - [`membership`]: the cases of run.sh on a 3-voter quorum (Ready,
//!   scaling, CEL, a deleted leader, a lost volume, deletion, the operator
//!   killed mid scale-up);
//! - [`one_voter`]: the cases of run.sh on a 1-voter quorum (its restart,
//!   a volume of another cluster);
//! - [`sampled`]: the cases of run.sh judged from samples of the pods and
//!   the controllers' own views (scaling 1 → 3 → 1, a rolling restart);
//! - [`security`]: the cases of security.sh (issue 20: mTLS, certificate
//!   renewal, pause, a wiped status, the NetworkPolicy, cert-manager);
//! - [`rotation`]: the CA rotation of issue 20 (two quorum-aware rolls);
//! - [`load`]: the new cases with Apache Kafka brokers under an `acks=all`
//!   load (issue 18);
//! - [`adopt`]: a static quorum on existing volumes adopted by
//!   `spec.adopt`, every record kept, then scaled (issue 22);
//! - [`late_voter`]: an initial voter created after the first leader joins
//!   with its initial directory id (issue 24, docs/decisions.md D19).

mod adopt;
mod late_voter;
mod load;
mod membership;
mod one_voter;
mod quorum_loss;
mod rotation;
mod sampled;
mod security;

use std::time::{Duration, Instant};

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

/// The operator as the cases share it: held shared by every case that
/// needs it running, exclusively by a case that kills it. Fair (tokio's
/// RwLock): once a killer waits, no new case starts before it.
static OPERATOR: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A share of the running operator, held for a case's whole life.
type OperatorShare = tokio::sync::RwLockReadGuard<'static, ()>;

/// Waits until no case is killing the operator; returns the share.
async fn operator_shared() -> OperatorShare {
    OPERATOR.read().await
}

/// Waits until no other case runs; returns the operator to kill.
async fn operator_exclusive() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    OPERATOR.write().await
}

/// A client of the local cluster and a fresh namespace `ns`, with a share
/// of the running operator (keep it to the case's end).
async fn setup(ns: &str) -> (Client, TestNamespace, OperatorShare) {
    let share = operator_shared().await;
    let client = client()
        .await
        .must("a client of the local cluster (dev/cluster.sh up)");
    let ns = TestNamespace::create(&client, ns)
        .await
        .must("create the test namespace");
    (client, ns, share)
}

/// A KraftQuorum q of 1 voter, Ready; records apply → Ready.
async fn ready_one(ns: &TestNamespace) {
    let start = Instant::now();
    quorum::create_minimal(ns, Q, 1)
        .await
        .must("create KraftQuorum q");
    wait::ready(ns, Q, 1, READY_TIMEOUT)
        .await
        .must("1 voter Ready");
    figure("apply_to_ready_1", start.elapsed());
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
