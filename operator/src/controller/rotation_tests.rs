//! Passes of a quorum in the middle of a CA rotation (`pki::rotation`),
//! against the scripted API server of `tests.rs`: what an operator
//! restarted mid-rotation does with the phase the CA Secret records.

use k8s_openapi::api::core::v1::Secret;

use super::*;
use crate::{
    controller::certs::{self, ANNOTATION_CA_ROTATION, ANNOTATION_SIGNED_BY},
    pki::{
        self,
        rotation::{self, CaRecord},
    },
};

const SECRETS: &str = "/api/v1/namespaces/ns/secrets";
/// The scripted clock's now (2026-11-30T00:00:00Z), unix seconds.
const NOW: i64 = 1_795_996_800;

fn tls_kq() -> Value {
    let mut kq = kq_json(3, true, bootstrapped_status(3));
    kq["spec"]["tls"] = json!({});
    kq
}

/// A CA rotation in its trust phase: CA A signs, B is trusted beside it.
fn trusting(kq: &Value) -> (CaRecord, Value) {
    let obj: KraftQuorum = serde_json::from_value(kq.clone()).expect("kq fixture");
    let q = crate::validate::validate(&obj, None, "cluster.local").expect("valid");
    let a = pki::new_ca("ns", "kq", NOW, pki::CA_LIFETIME_SECS).expect("ca a");
    let b = pki::new_ca("ns", "kq", NOW, pki::CA_LIFETIME_SECS).expect("ca b");
    let start = rotation::Step::Start(rotation::Trigger::Requested("r1".into()));
    let trust = rotation::advance(&CaRecord::steady(a), &start, || Ok::<_, ()>(b))
        .expect("made")
        .expect("applies");
    let secret = serde_json::to_value(certs::ca_secret(&q, &trust)).expect("json");
    (trust, secret)
}

/// The StatefulSet of a TLS quorum whose template carries `ca_hash`,
/// seen by the StatefulSet controller, its pods on revision `kq-1`.
fn sts_with_ca_hash(ca_hash: &str) -> Value {
    let mut sts = sts_json(3);
    sts["metadata"]["generation"] = json!(2);
    sts["metadata"]["annotations"] = json!({"kraft.krabka.io/listener-security-protocol": "SSL"});
    sts["spec"]["template"]["metadata"] =
        json!({"annotations": {"kraft.krabka.io/ca-hash": ca_hash}});
    sts["status"]["observedGeneration"] = json!(2);
    sts
}

fn leaf_steps(steps: &mut Vec<Step>) {
    for name in ["kq-tls", "kq-operator-tls", "kq-client-tls"] {
        let path = format!("{SECRETS}/{name}");
        steps.push(step("GET", &path, Reply::NotFound));
        steps.push(step("PATCH", &path, Reply::Echo));
    }
}

fn text(seen: &Seen, key: &str) -> String {
    let s: Secret = serde_json::from_value(seen.body.clone()).expect("a Secret");
    let bytes = s.data.and_then(|mut d| d.remove(key)).expect("the key");
    String::from_utf8(bytes.0).expect("utf-8")
}

#[tokio::test]
async fn a_pass_that_finds_the_trust_phase_not_rolled_out_trusts_both_cas_and_rolls_the_pods() {
    // As after a crash between recording the phase and applying the pods:
    // the template still carries the old CA's hash.
    let kq = tls_kq();
    let (trust, ca_secret) = trusting(&kq);
    let mut steps = vec![
        step(
            "GET",
            STS,
            Reply::Json(sts_with_ca_hash(&trust.signer_hash())),
        ),
        step("GET", PODS, Reply::Json(pods_json(3))),
        step("GET", &format!("{SECRETS}/kq-ca"), Reply::Json(ca_secret)),
    ];
    leaf_steps(&mut steps);
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    // The CA Secret is left as recorded; every leaf trusts both CAs and is
    // still signed by the old one.
    for s in [&seen[4], &seen[6], &seen[8]] {
        assert_eq!(text(s, "ca.crt"), trust.trust_bundle(), "{}", s.path);
        assert_eq!(
            s.body["metadata"]["annotations"][ANNOTATION_SIGNED_BY],
            trust.signer_hash().as_str()
        );
    }
    // The pods roll onto the bundle (planner row 7, next passes).
    assert_eq!(seen[11].body["kind"], "StatefulSet");
    assert_eq!(
        seen[11].body["spec"]["template"]["metadata"]["annotations"]["kraft.krabka.io/ca-hash"],
        trust.template_hash().as_str()
    );
}

#[tokio::test]
async fn once_the_trust_phase_rolled_out_the_phase_is_recorded_before_any_leaf_is_signed_by_the_new_ca()
 {
    let kq = tls_kq();
    let (trust, ca_secret) = trusting(&kq);
    let ca_path = format!("{SECRETS}/kq-ca");
    let mut steps = vec![
        step(
            "GET",
            STS,
            Reply::Json(sts_with_ca_hash(&trust.template_hash())),
        ),
        step("GET", PODS, Reply::Json(pods_json(3))),
        step("GET", &ca_path, Reply::Json(ca_secret)),
        step("PATCH", &ca_path, Reply::Echo),
    ];
    leaf_steps(&mut steps);
    steps.push(step("POST", EVENTS, Reply::Echo));
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    // The CA Secret first: the new CA signs, the old one is kept as trusted.
    let next = trust.next.as_ref().expect("the next CA");
    assert_eq!(seen[3].path, ca_path);
    assert_eq!(
        seen[3].body["metadata"]["annotations"][ANNOTATION_CA_ROTATION],
        "reissue"
    );
    assert_eq!(text(&seen[3], "ca.crt"), next.cert_pem);
    assert_eq!(text(&seen[3], "previous-ca.crt"), trust.signer.cert_pem);
    // Then the leaves, signed by the new CA, trusting both.
    let new_hash = crate::build::fnv1a_hex(next.cert_pem.as_bytes());
    for s in [&seen[5], &seen[7], &seen[9]] {
        assert_eq!(text(s, "ca.crt"), trust.trust_bundle(), "{}", s.path);
        assert_eq!(
            s.body["metadata"]["annotations"][ANNOTATION_SIGNED_BY],
            new_hash.as_str()
        );
    }
    assert_eq!(seen[10].body["reason"], "CaRotation");
    assert_eq!(
        seen[13].body["spec"]["template"]["metadata"]["annotations"]["kraft.krabka.io/ca-hash"],
        new_hash.as_str()
    );
}
