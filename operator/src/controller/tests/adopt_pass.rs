//! Whole reconcile passes of an adopted static quorum (`spec.adopt`, issue
//! 22) against the scripted API server and the fake quorum of `tests.rs`.

use super::*;

/// A KraftQuorum adopting the static voters 0, 1, 2 (directory ids
/// `dir(0..3)`), in `phase`.
fn adopted(phase: &str) -> Value {
    let mut status = bootstrapped_status(3);
    status["adoptionPhase"] = json!(phase);
    let mut kq = kq_json(3, true, status);
    kq["spec"]["adopt"] = json!({
        "clusterId": CLUSTER,
        "voters": (0..3).map(|i| json!({"nodeId": i, "directoryId": kafka_uuid::to_string(dir(i))})).collect::<Vec<_>>(),
    });
    kq
}

// KAFKA-16538: the pods run the static quorum as it was; once the leader
// sees every adopted voter caught up, one UpdateFeatures kraft.version=1,
// then the phase that rolls the pods onto bootstrap servers.
#[tokio::test]
async fn a_static_quorum_is_upgraded_to_kraft_version_1_before_anything_else() {
    let kq = adopted("StaticQuorum");
    let mut steps = children_steps(3, 3);
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("POST", EVENTS, Reply::Echo),
    ]);
    let quorum = fake(Some(quorum(3, 0)));
    let (result, seen) = pass(&kq, quorum.clone(), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(Duration::ZERO)
    );
    // The volumes are checked, never formatted; the voters are static.
    assert_eq!(seen[3].body["data"]["format-mode"], "--expect-formatted");
    let properties = seen[3].body["data"]["server.properties"]
        .as_str()
        .expect("server.properties");
    assert!(
        properties.contains(
            "controller.quorum.voters=0@kq-0.kq.ns.svc.cluster.local:9093,1@kq-1.kq.ns.svc.cluster.local:9093,2@kq-2.kq.ns.svc.cluster.local:9093\n"
        ),
        "{properties}"
    );
    assert!(!properties.contains("bootstrap.servers"), "{properties}");
    assert_eq!(
        *quorum.calls.lock().expect("lock"),
        vec![
            "describe 10.0.0.10:9093",
            "upgrade_kraft_version 10.0.0.10:9093"
        ]
    );
    let status = status_of(&seen[6]);
    assert_eq!(status["adoptionPhase"], "RollingToBootstrapServers");
    assert_eq!(
        condition(status, "Progressing"),
        ("True", adopt::KRAFT_VERSION_UPGRADED)
    );
    assert_eq!(seen[7].body["reason"], adopt::KRAFT_VERSION_UPGRADED);
}

#[tokio::test]
async fn after_the_upgrade_the_pods_get_bootstrap_servers_and_are_restarted_one_at_a_time() {
    let kq = adopted("RollingToBootstrapServers");
    let mut steps = children_steps(3, 3);
    // The new config is a new template revision: every pod is out of date,
    // so the planner restarts one (a follower, highest ordinal first).
    steps[5] = step(
        "PATCH",
        STS,
        Reply::Json({
            let mut sts = sts_json(3);
            sts["status"]["updateRevision"] = json!("kq-2");
            sts
        }),
    );
    steps.extend([
        step("DELETE", &format!("{PODS}/kq-2"), Reply::Json(json!({}))),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let quorum = fake(Some(quorum(3, 0)));
    let (result, seen) = pass(&kq, quorum.clone(), steps).await;
    result.expect("pass succeeds");
    let properties = seen[3].body["data"]["server.properties"]
        .as_str()
        .expect("server.properties");
    assert!(
        properties.contains("controller.quorum.bootstrap.servers="),
        "{properties}"
    );
    assert!(
        !properties.contains("controller.quorum.voters"),
        "{properties}"
    );
    assert_eq!(seen[3].body["data"]["format-mode"], "--expect-formatted");
    assert_eq!(
        *quorum.calls.lock().expect("lock"),
        vec!["describe 10.0.0.10:9093"],
        "no second upgrade"
    );
    assert_eq!(seen[7].body["reason"], "PodRestarted");
    assert_eq!(
        status_of(&seen[8])["adoptionPhase"],
        "RollingToBootstrapServers"
    );
}

#[tokio::test]
async fn once_every_pod_runs_the_new_config_the_quorum_is_adopted_and_scaling_works_again() {
    let kq = adopted("RollingToBootstrapServers");
    let mut steps = children_steps(3, 3);
    steps.extend([
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    assert_eq!(seen[6].body["reason"], adopt::ADOPTED);
    let status = status_of(&seen[7]);
    assert_eq!(status["adoptionPhase"], "Adopted");
    assert_eq!(condition(status, "Ready"), ("True", "QuorumHealthy"));

    // Adopted: new volumes format as observers, and a scale-up is planned.
    let mut kq = adopted("Adopted");
    kq["spec"]["replicas"] = json!(4);
    let mut steps = children_steps(3, 3);
    steps.extend([
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    assert_eq!(
        seen[3].body["data"]["format-mode"],
        "--no-initial-controllers"
    );
    assert_eq!(seen[6].body["spec"]["replicas"], 4);
    assert_eq!(seen[7].body["reason"], "Scaled");
}
