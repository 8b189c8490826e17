//! Reconcile passes of a quorum that lost its majority (issue 26), against
//! the scripted API server of `tests.rs`: the exact calls, in order.

use super::*;

const JOBS: &str = "/apis/batch/v1/namespaces/ns/jobs";

fn claim_path(i: i32) -> String {
    format!("/api/v1/namespaces/ns/persistentvolumeclaims/data-kq-{i}")
}

fn claim(i: i32, uid: &str) -> Reply {
    Reply::Json(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": format!("data-kq-{i}"), "namespace": NS, "uid": uid}}))
}

/// Three voters, no leader since 10 min before the test clock (00:00).
fn leaderless(allow: bool, recovery: Value) -> Value {
    let mut status = bootstrapped_status(3);
    status.as_object_mut().expect("object").remove("leaderId");
    status["recovery"] = recovery;
    let mut kq = kq_json(3, true, status);
    kq["spec"]["recovery"] = json!({"allowQuorumLossRecovery": allow});
    kq
}

fn lost_volumes() -> Value {
    let mut r = bootstrapped_status(3)["recovery"].clone();
    r["noLeaderSince"] = json!("2026-11-29T23:50:00Z");
    r
}

/// The claims as the StatefulSet left them: 1 and 2 re-created empty.
fn claims_after_loss() -> Vec<Step> {
    vec![
        step("GET", &claim_path(0), claim(0, "claim-0")),
        step("GET", &claim_path(1), claim(1, "recreated-1")),
        step("GET", &claim_path(2), claim(2, "recreated-2")),
    ]
}

/// The pass of a quorum loss without opt-in, the pods listed as `pods`:
/// the children, the claims, a Warning Event and the status; it requeues
/// at the steady interval. The calls it made.
async fn reported_loss(pods: Value) -> Vec<Seen> {
    let kq = leaderless(false, lost_volumes());
    let mut steps = children_steps(3, 3);
    steps[1] = step("GET", PODS, Reply::Json(pods));
    steps.extend(claims_after_loss());
    steps.extend([
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(STEADY_REQUEUE)
    );
    seen
}

#[tokio::test]
async fn without_opt_in_a_quorum_loss_is_reported_and_nothing_is_touched() {
    let seen = reported_loss(pods_json(3)).await;
    // The children applied as always (3 pods), then reads only: no scale,
    // no Job, no delete.
    assert_eq!(seen[4].body["spec"]["replicas"], 3);
    let sts_writes = seen
        .iter()
        .filter(|s| s.method != "GET" && s.path == STS)
        .count();
    assert_eq!(sts_writes, 1, "{:?}", calls(&seen));
    assert!(
        !calls(&seen)
            .iter()
            .any(|c| c.contains("jobs") || c.starts_with("DELETE"))
    );
    let status = status_of(seen.last().expect("status"));
    let (degraded, reason) = condition(status, "Degraded");
    assert_eq!((degraded, reason), ("True", "QuorumLost"));
    let message = status["conditions"].to_string();
    assert!(message.contains("voters 1, 2 of 3"), "{message}");
    assert!(message.contains("docs/operations.md"), "{message}");
    assert!(status["recovery"]["phase"].is_null(), "{status}");
    let event = &seen[seen.len() - 2].body;
    assert_eq!(event["reason"], "QuorumLost", "{event}");
    assert_eq!(event["type"], "Warning", "{event}");
}

#[tokio::test]
async fn a_reported_quorum_loss_names_the_pods_the_scheduler_has_not_placed() {
    let mut pods = pods_json(3);
    for i in [1, 2] {
        pods["items"][i]["status"] = json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/1 nodes are available: 1 Insufficient cpu."}]});
    }
    let seen = reported_loss(pods).await;
    let status = status_of(seen.last().expect("status"));
    assert_eq!(condition(status, "Degraded"), ("True", "QuorumLost"));
    let message = condition_message(status, "Degraded");
    assert!(
        message.contains("voters 1, 2 of 3")
            && message.ends_with(
                "; pods kq-1, kq-2 are not scheduled \
                 (kq-1: Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.)"
            ),
        "{message}"
    );
}

#[tokio::test]
async fn with_opt_in_the_phase_is_recorded_before_the_statefulset_is_scaled_to_zero() {
    let kq = leaderless(true, lost_volumes());
    let mut steps = children_steps(3, 3);
    steps.extend(claims_after_loss());
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(BUSY_REQUEUE)
    );
    let n = seen.len();
    let recorded = status_of(&seen[n - 4]);
    assert_eq!(recorded["recovery"]["phase"], "Stopping", "{recorded}");
    assert_eq!(recorded["recovery"]["survivor"], 0, "{recorded}");
    assert_eq!(seen[n - 3].path, STS);
    assert_eq!(seen[n - 3].body["spec"]["replicas"], 0);
    assert_eq!(seen[n - 2].body["reason"], "RecoveringFromQuorumLoss");
    let (progressing, reason) = condition(status_of(&seen[n - 1]), "Progressing");
    assert_eq!((progressing, reason), ("True", "RecoveringFromQuorumLoss"));
}

#[tokio::test]
async fn once_the_pods_are_gone_the_recover_job_runs_on_the_survivor_s_claim() {
    let mut rec = lost_volumes();
    rec["phase"] = json!("Stopping");
    rec["survivor"] = json!(0);
    let kq = leaderless(true, rec);
    let mut steps = children_steps(0, 0);
    steps.extend(claims_after_loss());
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", &format!("{JOBS}/kq-recover-0"), Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    result.expect("pass succeeds");
    // The StatefulSet is held at 0 while the phase says so.
    assert_eq!(seen[4].body["spec"]["replicas"], 0);
    let n = seen.len();
    assert_eq!(status_of(&seen[n - 4])["recovery"]["phase"], "Recovering");
    let job = &seen[n - 3].body;
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        pod["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "data-kq-0"
    );
    assert_eq!(
        pod["containers"][0]["args"],
        json!([
            "recover",
            "--metadata-log-dir",
            "/var/lib/kraft/data",
            "--i-understand-this-may-lose-uncommitted-data"
        ])
    );
    assert_eq!(job["spec"]["backoffLimit"], 0);
    assert_ne!(
        job["metadata"]["labels"]["app.kubernetes.io/name"], "kraft-controller",
        "the Job's pod is never counted as a controller pod"
    );
}

#[tokio::test]
async fn a_finished_recover_job_records_starting_then_brings_the_statefulset_back() {
    let mut rec = lost_volumes();
    rec["phase"] = json!("Recovering");
    rec["survivor"] = json!(0);
    let kq = leaderless(true, rec);
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "kq-recover-0", "namespace": NS}, "status": {"succeeded": 1}});
    let no_pods = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []});
    let mut steps = children_steps(0, 0);
    steps.extend(claims_after_loss());
    steps.extend([
        step("GET", &format!("{JOBS}/kq-recover-0"), Reply::Json(job)),
        step("GET", PODS, Reply::Json(no_pods)),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", STS, Reply::Echo),
        step(
            "DELETE",
            &format!("{JOBS}/kq-recover-0"),
            Reply::Json(
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}),
            ),
        ),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    result.expect("pass succeeds");
    let n = seen.len();
    assert_eq!(status_of(&seen[n - 5])["recovery"]["phase"], "Starting");
    assert_eq!(seen[n - 4].body["spec"]["replicas"], 3);
    assert_eq!(seen[n - 3].method, "DELETE");
}

#[tokio::test]
async fn the_recovery_ends_when_the_survivor_leads_and_the_planner_takes_over() {
    let mut rec = lost_volumes();
    rec["phase"] = json!("Starting");
    rec["survivor"] = json!(0);
    let kq = leaderless(true, rec);
    let mut steps = children_steps(3, 3);
    steps.extend([
        step("POST", EVENTS, Reply::Echo),
        // The planner: nodes 1 and 2 are not voters yet, nor observers.
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(Some(quorum(1, 0))), steps).await;
    result.expect("pass succeeds");
    assert_eq!(seen[4].body["spec"]["replicas"], 3);
    let n = seen.len();
    assert_eq!(seen[n - 2].body["reason"], "QuorumRecovered");
    let status = status_of(&seen[n - 1]);
    assert!(status["recovery"]["phase"].is_null(), "{status}");
    assert!(status["recovery"]["noLeaderSince"].is_null(), "{status}");
    assert_eq!(condition(status, "Progressing").1, "WaitingForObserver");
}

#[tokio::test]
async fn the_annotation_starts_one_recovery_and_is_recorded_with_it() {
    let mut kq = leaderless(false, lost_volumes());
    kq["metadata"]["annotations"] = json!({"kraft.krabka.io/recover-quorum-loss": "once"});
    let mut steps = children_steps(3, 3);
    steps.extend(claims_after_loss());
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    result.expect("pass succeeds");
    let n = seen.len();
    let recorded = &status_of(&seen[n - 4])["recovery"];
    assert_eq!(recorded["phase"], "Stopping", "{recorded}");
    assert_eq!(recorded["request"], "once", "{recorded}");
    assert_eq!(seen[n - 3].body["spec"]["replicas"], 0);
}

/// `spec.storage.onScaleDown: Delete` maps onto the StatefulSet's
/// `persistentVolumeClaimRetentionPolicy.whenScaled: Delete`, under which
/// Kubernetes deletes the claim of every pod a scale-down removes: scaling
/// to 0 for the recovery would delete the survivor's claim too. While the
/// recovery holds the StatefulSet, its claims are retained.
#[tokio::test]
async fn the_scale_to_zero_of_a_recovery_retains_every_claim_even_with_on_scale_down_delete() {
    // The pass that begins the recovery.
    let mut kq = leaderless(true, lost_volumes());
    kq["spec"]["storage"]["onScaleDown"] = json!("Delete");
    let mut steps = children_steps(3, 3);
    steps.extend(claims_after_loss());
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    result.expect("pass succeeds");
    let scaled = &seen[seen.len() - 3].body["spec"];
    assert_eq!(scaled["replicas"], 0);
    assert_eq!(
        scaled["persistentVolumeClaimRetentionPolicy"]["whenScaled"], "Retain",
        "{scaled}"
    );
    // A later pass while the phase holds the StatefulSet at 0.
    let mut rec = lost_volumes();
    rec["phase"] = json!("Stopping");
    rec["survivor"] = json!(0);
    let mut kq = leaderless(true, rec);
    kq["spec"]["storage"]["onScaleDown"] = json!("Delete");
    let mut steps = children_steps(0, 0);
    steps.extend(claims_after_loss());
    steps.extend([
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("PATCH", &format!("{JOBS}/kq-recover-0"), Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
    ]);
    let (result, seen) = pass(&kq, fake(None), steps).await;
    result.expect("pass succeeds");
    let held = &seen[4].body["spec"];
    assert_eq!(held["replicas"], 0);
    assert_eq!(
        held["persistentVolumeClaimRetentionPolicy"]["whenScaled"], "Retain",
        "{held}"
    );
}
