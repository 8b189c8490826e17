//! Passes that restart pods: a rolling restart (a follower first) and the
//! restart of a single voter (the scripted API server of `tests.rs`).

use super::*;

#[tokio::test]
async fn a_rolling_restart_deletes_a_follower_first() {
    let kq = kq_json(3, true, bootstrapped_status(3));
    let mut pods = pods_json(3);
    for p in pods["items"].as_array_mut().expect("items") {
        p["metadata"]["labels"]["controller-revision-hash"] = json!("kq-0");
    }
    let steps = vec![
        step("GET", STS, Reply::Json(sts_json(3))),
        step("GET", PODS, Reply::Json(pods)),
        step("PATCH", SVC, Reply::Echo),
        step("PATCH", CM, Reply::Echo),
        step("PATCH", BROKERS_CM, Reply::Echo),
        step("PATCH", STS, Reply::Json(sts_json(3))),
        step("PATCH", PDB, Reply::Echo),
        step(
            "DELETE",
            "/api/v1/namespaces/ns/pods/kq-2",
            Reply::Json(json!({})),
        ),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ];
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(BUSY_REQUEUE)
    );
    assert_eq!(seen[7].body["reason"], "PodRestarted");
    assert_eq!(
        condition(status_of(&seen[8]), "Progressing"),
        ("True", "RollingRestart")
    );
}

#[tokio::test]
async fn a_single_voter_is_restarted_with_a_warning_that_the_quorum_is_briefly_unavailable() {
    let mut status = bootstrapped_status(1);
    status["initialVoters"] = json!([{"nodeId": 0, "directoryId": kafka_uuid::to_string(dir(0))}]);
    let kq = kq_json(1, true, status);
    let mut pods = pods_json(1);
    pods["items"][0]["metadata"]["labels"]["controller-revision-hash"] = json!("kq-0");
    let steps = vec![
        step("GET", STS, Reply::Json(sts_json(1))),
        step("GET", PODS, Reply::Json(pods)),
        step("PATCH", SVC, Reply::Echo),
        step("PATCH", CM, Reply::Echo),
        step("PATCH", BROKERS_CM, Reply::Echo),
        step("PATCH", STS, Reply::Json(sts_json(1))),
        step("PATCH", PDB, Reply::Echo),
        step(
            "DELETE",
            "/api/v1/namespaces/ns/pods/kq-0",
            Reply::Json(json!({})),
        ),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ];
    let (result, seen) = pass(&kq, fake(Some(quorum(1, 0))), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(BUSY_REQUEUE)
    );
    assert_eq!(seen[7].body["type"], "Warning");
    assert_eq!(seen[7].body["reason"], "SingleVoterRestart");
    assert!(
        seen[7].body["note"]
            .as_str()
            .unwrap_or("")
            .contains("unavailable until it is back"),
        "{}",
        seen[7].body["note"]
    );
    assert_eq!(seen[7].body["related"]["name"], "kq-0");
    assert_eq!(
        condition(status_of(&seen[8]), "Progressing"),
        ("True", "SingleVoterRestart")
    );
}
