//! The CA rotation of issue 20 (`pki::rotation`): the operator's own CA of a
//! running 3-voter mTLS quorum replaced on request (`kraft.krabka.io/rotate-ca`),
//! sampled throughout: two quorum-aware rolling restarts (trust both CAs,
//! then leaves of the new CA), never fewer than a majority ready, one quorum
//! only; at the end every controller serves a leaf of the new CA, the trust
//! bundle holds the new CA alone, and the brokers' client Secret
//! authenticates with it; also with the operator killed mid-rotation.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kraft_e2e::{
    Must, TestNamespace, client, operator, quorum,
    samples::{self, Sampler},
    tls, wait,
};
use kraft_operator::{
    controller::certs::{ANNOTATION_CA_ROTATION, ANNOTATION_ROTATED_FOR},
    crd::{ANNOTATION_ROTATE_CA, TLS_CA_KEY},
};
use serde_json::json;

use kube::Client;

use super::{security::in_cluster_describe_is_refused, security::served_by, *};

/// Two rolling restarts of 3 voters and the steps between them.
const ROTATION_TIMEOUT: Duration = Duration::from_secs(600);

/// (20g) a CA rotation asked for by annotation: the quorum keeps a ready
/// majority throughout and ends on leaves of the new CA only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_ca_rotation_keeps_a_majority_and_ends_on_the_new_ca() {
    let (client, ns, _operator) = setup("e2e-rs-rotate").await;
    ready_three(&ns).await;
    rotate(&client, &ns, false).await;
}

/// (20g) the operator killed as soon as the rotation is recorded (the CA
/// Secret in its `trust` phase): the new operator pod finishes it from the
/// record, with the same guarantees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_ca_rotation_finishes_it() {
    // No other case may run while the operator is down.
    let _operator = operator_exclusive().await;
    let client = client().await.must("a client of the local cluster");
    let ns = TestNamespace::create(&client, "e2e-rs-rotate-kill")
        .await
        .must("create the test namespace");
    ready_three(&ns).await;
    rotate(&client, &ns, true).await;
    operator::wait_rolled_out(&client, Duration::from_secs(120))
        .await
        .must("the operator's Deployment rolled out");
}

/// Asks q's operator for a CA rotation (killing the operator once the CA
/// Secret records it, with `kill`), waits until it is done, and checks:
/// two rolls with a ready majority throughout and one quorum, the bundle
/// gone from every leaf Secret, each controller serving a leaf of the new
/// CA, the brokers' client Secret authenticated, Ready.
async fn rotate(client: &Client, ns: &TestNamespace, kill: bool) {
    let old_ca = tls::secret_text(ns, "q-ca", TLS_CA_KEY)
        .await
        .must("the CA before the rotation");
    let sampler = Sampler::start(client, ns.name(), Q)
        .await
        .must("the first sample of q");
    let start = Instant::now();
    quorum::patch_merge(
        ns,
        Q,
        json!({"metadata": {"annotations": {ANNOTATION_ROTATE_CA: "e2e-1"}}}),
    )
    .await
    .must("annotate kq/q to rotate its CA");
    if kill {
        wait::until(
            &ns.api::<Secret>(),
            "q-ca",
            "the CA Secret records the trust phase",
            Duration::from_secs(60),
            |s: Option<&Secret>| {
                s.and_then(|s| s.metadata.annotations.as_ref()?.get(ANNOTATION_CA_ROTATION))
                    .is_some_and(|p| p == "trust")
            },
            |s| format!("annotations {:?}", s.metadata.annotations),
        )
        .await
        .must("the rotation recorded");
        operator::kill(client).await.must("kill the operator");
    }

    // The CA Secret records the rotation; it is done when it says no phase
    // any more, for this request, with another CA.
    let done = wait::until(
        &ns.api::<Secret>(),
        "q-ca",
        "the CA rotation for e2e-1 finished",
        ROTATION_TIMEOUT,
        |s: Option<&Secret>| {
            s.is_some_and(|s| {
                let ann = s.metadata.annotations.clone().unwrap_or_default();
                let ca = s.data.as_ref().and_then(|d| d.get(TLS_CA_KEY));
                !ann.contains_key(ANNOTATION_CA_ROTATION)
                    && ann.get(ANNOTATION_ROTATED_FOR).map(String::as_str) == Some("e2e-1")
                    && ca.is_some_and(|c| c.0 != old_ca.as_bytes())
            })
        },
        |s| {
            let ann = s.metadata.annotations.clone().unwrap_or_default();
            format!(
                "phase {:?}, rotated for {:?}",
                ann.get(ANNOTATION_CA_ROTATION),
                ann.get(ANNOTATION_ROTATED_FOR)
            )
        },
    )
    .await
    .must("the CA rotation finished");
    figure("ca_rotation_3", start.elapsed());
    let new_ca = done
        .and_then(|s| s.data?.remove(TLS_CA_KEY))
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        .expect("a finished rotation's CA Secret has a ca.crt");
    assert_ne!(new_ca, old_ca, "the CA was not replaced");

    // The leaf Secrets trust the new CA alone (the bundle is gone).
    for secret in ["q-tls", "q-operator-tls", "q-client-tls"] {
        let what = format!("{secret} trusts the new CA alone");
        wait::poll(&what, Duration::from_secs(60), || async {
            let ca = tls::secret_text(ns, secret, TLS_CA_KEY).await?;
            Ok((ca == new_ca).then_some(()))
        })
        .await
        .must(&what);
    }
    // Every controller serves a leaf that verifies against the new CA
    // alone (served_by trusts the operator Secret's ca.crt, now the new CA).
    for pod in ["q-0", "q-1", "q-2"] {
        let served = served_by(ns, pod)
            .await
            .unwrap_or_else(|e| panic!("{pod} serves no leaf of the new CA: {e}"));
        println!("{pod} serves serial {} of the new CA", served.serial);
    }
    // The brokers' client Secret authenticates with the new CA: the
    // controller knows who it is (and refuses it DESCRIBE, as before).
    in_cluster_describe_is_refused(ns, "describe-after-rotation").await;
    wait::ready(ns, Q, 3, Duration::from_secs(120))
        .await
        .must("Ready after the rotation");

    let recording = sampler.stop();
    let path = samples::recording_path(ns.name());
    samples::save(&recording, &path).must("keep the recording");
    let cluster_id = quorum::status(ns, Q)
        .await
        .must("the status")
        .cluster_id
        .expect("a Ready quorum has a cluster id in its status");
    for verdict in [
        samples::check_rolls(&recording, 3, 2),
        samples::check_one_quorum(&recording, &cluster_id, 3),
    ] {
        match verdict {
            Ok(summary) => println!("{}: {summary} ({})", ns.name(), path.display()),
            Err(reason) => panic!("{}: {reason} (recording: {})", ns.name(), path.display()),
        }
    }
    // An Event may be lost with a killed operator; the three steps are
    // one each otherwise.
    let steps = events::count(ns, Q, "CaRotation")
        .await
        .must("count the CaRotation events");
    assert!(
        steps == 3 || (kill && steps == 2),
        "CaRotation events: {steps}, want 3 (started, re-issued, done)"
    );
}
