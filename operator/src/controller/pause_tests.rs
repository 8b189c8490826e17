//! Passes of a paused quorum, of one whose status was lost, and of one with
//! TLS and a NetworkPolicy (the scripted API server of `tests.rs`).

use super::*;

const SECRETS: &str = "/api/v1/namespaces/ns/secrets";
const NP: &str = "/apis/networking.k8s.io/v1/namespaces/ns/networkpolicies/kq";

fn paused(mut kq: Value) -> Value {
    kq["metadata"]["annotations"] = json!({ANNOTATION_PAUSE: "true"});
    kq
}

#[tokio::test]
async fn a_paused_quorum_gets_the_paused_condition_and_nothing_else() {
    // Asked for 5 voters, has 3: paused, nothing is scaled, no child is
    // applied, no voter is added.
    let kq = paused(kq_json(5, true, bootstrapped_status(3)));
    let steps = vec![
        step("GET", PODS, Reply::Json(pods_json(3))),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("POST", EVENTS, Reply::Echo),
    ];
    let quorum = fake(Some(quorum(3, 0)));
    let (result, seen) = pass(&kq, quorum.clone(), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(STEADY_REQUEUE)
    );
    let status = status_of(&seen[1]);
    assert_eq!(
        condition(status, "Paused"),
        ("True", "ReconciliationPaused")
    );
    // The rest of the status is kept as it was.
    assert_eq!(status["clusterId"], CLUSTER);
    assert_eq!(status["voters"].as_array().map(Vec::len), Some(3));
    assert!(
        quorum.calls.lock().expect("lock").is_empty(),
        "the quorum was not asked"
    );

    // Already marked paused, pods as they were: the next pass only reads.
    let mut again = kq.clone();
    again["status"] = status.clone();
    let read = vec![step("GET", PODS, Reply::Json(pods_json(3)))];
    let (result, seen) = pass(&again, fake(Some(quorum_desc())), read).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(STEADY_REQUEUE)
    );
    assert!(
        seen.iter().all(|s| s.method == "GET"),
        "read-only while paused"
    );
    // A pod went unready while paused: status says so, nothing else moves.
    let mut pods = pods_json(3);
    pods["items"][0]["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    let steps = vec![
        step("GET", PODS, Reply::Json(pods)),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ];
    let (result, seen) = pass(&again, fake(Some(quorum_desc())), steps).await;
    result.expect("pass succeeds");
    assert_eq!(status_of(&seen[1])["readyReplicas"], 2);
    assert_eq!(condition(status_of(&seen[1]), "Paused").0, "True");
}

fn quorum_desc() -> QuorumDescription {
    quorum(3, 0)
}

#[tokio::test]
async fn removing_the_annotation_resumes_and_drops_the_paused_condition() {
    let mut status = bootstrapped_status(3);
    status["conditions"] = json!([{"type": "Paused", "status": "True", "reason": "ReconciliationPaused",
        "message": "", "lastTransitionTime": "2026-11-29T00:00:00Z"}]);
    let kq = kq_json(3, true, status);
    let mut steps = children_steps(3, 3);
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    let status = status_of(&seen[6]);
    assert_eq!(condition(status, "Ready"), ("True", "QuorumHealthy"));
    assert!(
        !status["conditions"].to_string().contains("Paused"),
        "{status}"
    );
}

#[tokio::test]
async fn a_lost_status_is_restored_from_the_statefulset_not_generated() {
    let kq = kq_json(3, true, Value::Null);
    let mut sts = sts_json(3);
    let voters = (0..3)
        .map(|i| format!("{i}:{}", kafka_uuid::to_string(dir(i))))
        .collect::<Vec<_>>()
        .join(",");
    sts["metadata"]["annotations"] = json!({
        "kraft.krabka.io/cluster-id": CLUSTER,
        "kraft.krabka.io/initial-voters": voters,
        "kraft.krabka.io/bootstrapped": "true",
    });
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts)),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ];
    // The rest of the pass as for any bootstrapped quorum.
    steps.extend(children_steps(3, 3).into_iter().skip(1));
    // No claim recorded yet: each caught-up voter's is read once (issue 26).
    for i in 0..3 {
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": format!("data-kq-{i}"), "namespace": NS, "uid": format!("claim-{i}")}});
        let path = format!("/api/v1/namespaces/ns/persistentvolumeclaims/data-kq-{i}");
        steps.push(step("GET", &path, Reply::Json(claim)));
    }
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    let recorded = &status_of(seen.last().expect("status write"))["recovery"]["volumes"];
    assert_eq!(recorded[2]["claimUid"], "claim-2", "{recorded}");
    assert_eq!(
        recorded[2]["directoryId"],
        kafka_uuid::to_string(dir(2)),
        "{recorded}"
    );
    let restored = status_of(&seen[1]);
    assert_eq!(restored["clusterId"], CLUSTER);
    assert_eq!(restored["bootstrapped"], true);
    assert_eq!(
        restored["initialVoters"][2]["directoryId"],
        kafka_uuid::to_string(dir(2))
    );
    // The StatefulSet applied keeps the same cluster id in its pods' args.
    assert!(
        seen[5]
            .body
            .to_string()
            .contains(&format!("--cluster-id={CLUSTER}"))
    );
}

#[tokio::test]
async fn with_tls_the_certificates_come_first_then_the_network_policy_and_the_children() {
    let mut kq = kq_json(3, true, bootstrapped_status(3));
    kq["spec"]["tls"] = json!({});
    kq["spec"]["networkPolicy"] = json!({"brokerPodLabels": {"app": "broker"}});
    // A quorum created with TLS (recorded on its StatefulSet).
    let mut tls_sts = sts_json(3);
    tls_sts["metadata"]["annotations"] =
        json!({"kraft.krabka.io/listener-security-protocol": "SSL"});
    let mut steps = vec![
        step("GET", STS, Reply::Json(tls_sts)),
        step("GET", PODS, Reply::Json(pods_json(3))),
        // No operator peer in this context: the policy has no operator rule.
        step("POST", EVENTS, Reply::Echo),
    ];
    for name in ["kq-ca", "kq-tls", "kq-operator-tls", "kq-client-tls"] {
        let path = format!("{SECRETS}/{name}");
        steps.push(step("GET", &path, Reply::NotFound));
        steps.push(step("PATCH", &path, Reply::Echo));
    }
    steps.extend(children_steps(3, 3).into_iter().skip(2).collect::<Vec<_>>());
    steps.insert(11, step("PATCH", NP, Reply::Echo));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    assert_eq!(seen[2].body["reason"], "NoOperatorRule");
    // The CA Secret holds the key; no other Secret does.
    assert!(seen[4].body["data"]["ca.key"].is_string());
    for s in [&seen[6], &seen[8], &seen[10]] {
        assert!(s.body["data"]["ca.key"].is_null());
        assert!(s.body["data"]["keystore.pem"].is_string());
        assert!(s.body["metadata"]["annotations"]["kraft.krabka.io/renew-after"].is_string());
    }
    assert!(seen[10].body["data"]["client.properties"].is_string());
    // The NetworkPolicy before the pods; the pods trust the CA.
    assert_eq!(seen[11].body["kind"], "NetworkPolicy");
    let sts = seen[14].body.to_string();
    assert!(sts.contains("kraft.krabka.io/ca-hash"), "{sts}");
    assert!(seen[13].body.to_string().contains("CONTROLLER:SSL"));
}
