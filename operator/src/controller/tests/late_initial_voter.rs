//! An initial voter whose pod formats after the first leader (docs/decisions.md
//! D19): it keeps the initial voter list, so it joins with its initial
//! directory id instead of being replaced as a lost disk; every other pod
//! gets `--no-initial-controllers`. Whole passes against the scripted API
//! server and the fake quorum of `tests.rs`, and the pure shrinking rule.

use super::*;
use crate::controller::observe::still_unformatted;

/// Pods 0..3 as [`pods_json`], pod 2 not started yet (no IP, no container
/// status: it waits for its image or its node).
fn pods_with_pod_2_pending() -> Value {
    let mut pods = pods_json(3);
    pods["items"][2]["status"] = json!({"phase": "Pending"});
    pods
}

/// The leader's answer while voter 2 never fetched (Kafka reports -1 and no
/// fetch time for a voter it has not heard from).
fn quorum_without_voter_2() -> QuorumDescription {
    let mut q = quorum(3, 0);
    q.voters[2].log_end_offset = -1;
    q
}

/// The StatefulSet of a bootstrapped quorum recording `unformatted`.
fn sts_recording(unformatted: &str) -> Value {
    let mut sts = sts_json(3);
    sts["metadata"]["annotations"] = json!({
        "kraft.krabka.io/bootstrapped": "true",
        "kraft.krabka.io/unformatted-initial-voters": unformatted,
    });
    sts
}

/// The format mode the ConfigMap apply of `seen` carries.
fn format_mode(seen: &[Seen]) -> String {
    let cm = seen
        .iter()
        .find(|s| s.method == "PATCH" && s.path == CM)
        .expect("the ConfigMap is applied");
    cm.body["data"]["format-mode"]
        .as_str()
        .expect("format-mode")
        .to_string()
}

/// The StatefulSet apply of `seen` (its first PATCH).
fn applied_statefulset(seen: &[Seen]) -> &Seen {
    seen.iter()
        .find(|s| s.method == "PATCH" && s.path == STS)
        .expect("the StatefulSet is applied")
}

fn initial_list() -> String {
    (0..3)
        .map(|i| {
            format!(
                "{i}@kq-{i}.kq.ns.svc.cluster.local:9093:{}",
                kafka_uuid::to_string(dir(i))
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[tokio::test]
async fn the_first_leader_records_the_initial_voters_that_have_not_formatted_yet() {
    let mut status = bootstrapped_status(0);
    status["bootstrapped"] = json!(false);
    let kq = kq_json(3, true, status);
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts_json(3))),
        step("GET", PODS, Reply::Json(pods_with_pod_2_pending())),
    ];
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.extend([
        step("PATCH", STS, Reply::Json(sts_json(3))),
        step("PATCH", KQ_STATUS, Reply::KqWithStatus),
        step("POST", EVENTS, Reply::Echo),
    ]);
    let (result, seen) = pass(&kq, fake(Some(quorum_without_voter_2())), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(Duration::ZERO)
    );
    let annotations = &seen[6].body["metadata"]["annotations"];
    assert_eq!(annotations["kraft.krabka.io/bootstrapped"], "true");
    assert_eq!(
        annotations["kraft.krabka.io/unformatted-initial-voters"], "2",
        "pods 0 and 1 run and fetched; pod 2 never started"
    );
    let note = seen[8].body["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("initial voters 2 not formatted yet"),
        "{note}"
    );
}

#[tokio::test]
async fn the_next_passes_give_only_the_unformatted_initial_voter_the_initial_list() {
    let kq = kq_json(3, true, bootstrapped_status(3));
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts_recording("2"))),
        step("GET", PODS, Reply::Json(pods_with_pod_2_pending())),
    ];
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.extend([step("PATCH", KQ_STATUS, Reply::KqWithStatus)]);
    let (result, seen) = pass(&kq, fake(Some(quorum_without_voter_2())), steps).await;
    result.expect("pass succeeds");
    assert_eq!(
        format_mode(&seen),
        format!("--initial-controllers-for=2/{}", initial_list())
    );
    // The StatefulSet's own apply keeps the record as it is.
    let sts = applied_statefulset(&seen);
    assert_eq!(
        sts.body["metadata"]["annotations"]["kraft.krabka.io/unformatted-initial-voters"],
        "2"
    );
}

#[tokio::test]
async fn an_initial_voter_seen_formatted_leaves_the_set_and_then_gets_no_initial_list() {
    let kq = kq_json(3, true, bootstrapped_status(3));
    let mut pods = pods_with_pod_2_pending();
    pods["items"][2]["status"] = json!({"phase": "Pending", "initContainerStatuses": [{
        "name": "format", "image": "kraft:1", "imageID": "", "ready": true, "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
    }]});
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts_recording("2"))),
        step("GET", PODS, Reply::Json(pods)),
    ];
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.push(step("PATCH", STS, Reply::Json(sts_recording(""))));
    let (result, seen) = pass(&kq, fake(Some(quorum_without_voter_2())), steps).await;
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(Duration::ZERO)
    );
    assert_eq!(
        seen[6].body["metadata"]["annotations"]["kraft.krabka.io/unformatted-initial-voters"],
        ""
    );
    // Already in this pass, before the record shrinks: the ConfigMap gives
    // nobody the initial list.
    assert_eq!(format_mode(&seen), "--no-initial-controllers");
    // The pass after it: nobody formats with the initial list any more.
    let mut steps = vec![step("GET", STS, Reply::Json(sts_recording("")))];
    steps.extend(children_steps(3, 3).into_iter().skip(1));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let (result, seen) = pass(&kq, fake(Some(quorum(3, 0))), steps).await;
    result.expect("pass succeeds");
    assert_eq!(format_mode(&seen), "--no-initial-controllers");
}

#[test]
fn the_unformatted_set_shrinks_on_each_sign_of_a_formatted_volume_and_never_grows() {
    let initial: Vec<(i32, Uuid)> = (0..3).map(|i| (i, dir(i))).collect();
    let pending: Value = pods_with_pod_2_pending();
    let pods_of = |v: &Value| -> Vec<k8s_openapi::api::core::v1::Pod> {
        serde_json::from_value(v["items"].clone()).expect("pods")
    };
    let quiet = quorum_without_voter_2();
    // No sign: kept. Without the leader's answer, the pods alone decide.
    assert_eq!(
        still_unformatted(&[2], &initial, &pods_of(&pending), Some(&quiet)),
        vec![2]
    );
    assert_eq!(
        still_unformatted(&[2], &initial, &pods_of(&pending), None),
        vec![2]
    );
    // The leader has seen voters 0 and 1 fetch: asked about every initial
    // voter, only 2 stays.
    assert_eq!(
        still_unformatted(&[0, 1, 2], &initial, &pods_of(&pending), Some(&quiet)),
        vec![2]
    );
    // The leader saw voter 2 fetch.
    let mut fetched = quiet.clone();
    fetched.voters[2].log_end_offset = 0;
    assert!(still_unformatted(&[2], &initial, &pods_of(&pending), Some(&fetched)).is_empty());
    let mut fetched = quiet.clone();
    fetched.voters[2].last_fetch_timestamp_ms = Some(1);
    assert!(still_unformatted(&[2], &initial, &pods_of(&pending), Some(&fetched)).is_empty());
    // Voter 2 replaced (another directory id) or removed.
    let mut replaced = quiet.clone();
    replaced.voters[2].directory_id = Uuid::from_u128(99);
    assert!(still_unformatted(&[2], &initial, &pods_of(&pending), Some(&replaced)).is_empty());
    let mut removed = quiet.clone();
    removed.voters.truncate(2);
    assert!(still_unformatted(&[2], &initial, &pods_of(&pending), Some(&removed)).is_empty());
    // Its controller container started once (a restart count, a last state).
    let mut started = pending.clone();
    started["items"][2]["status"]["containerStatuses"] = json!([{
        "name": "controller", "image": "kraft:1", "imageID": "", "ready": false, "restartCount": 1,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
    }]);
    assert!(still_unformatted(&[2], &initial, &pods_of(&started), Some(&quiet)).is_empty());
    // A format that failed is no sign.
    let mut failed = pending.clone();
    failed["items"][2]["status"]["initContainerStatuses"] = json!([{
        "name": "format", "image": "kraft:1", "imageID": "", "ready": false, "restartCount": 2,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1}},
    }]);
    assert_eq!(
        still_unformatted(&[2], &initial, &pods_of(&failed), Some(&quiet)),
        vec![2]
    );
    // Never an id it was not given.
    assert!(still_unformatted(&[], &initial, &pods_of(&pending), Some(&quiet)).is_empty());
}

#[test]
fn an_absent_empty_or_malformed_record_means_no_unformatted_initial_voter() {
    use crate::controller::identity::unformatted_initial_voters;
    let initial: Vec<(i32, Uuid)> = (0..3).map(|i| (i, dir(i))).collect();
    let of = |v: Option<&str>| {
        let mut a = std::collections::BTreeMap::new();
        if let Some(v) = v {
            a.insert(
                "kraft.krabka.io/unformatted-initial-voters".to_string(),
                v.to_string(),
            );
        }
        unformatted_initial_voters(&a, &initial)
    };
    assert_eq!(of(Some("2,1")), vec![1, 2]);
    assert!(of(None).is_empty());
    assert!(of(Some("")).is_empty());
    assert!(of(Some("2,x")).is_empty(), "malformed: none at all");
    assert!(of(Some("2,7")).is_empty(), "7 is no initial voter");
}

#[tokio::test]
async fn a_quorum_loss_recovery_empties_the_unformatted_set_before_any_pod_formats_again() {
    // Voter 2 never formatted, then the quorum was lost and the recovery
    // recorded its first step: the survivor becomes the only voter, so the
    // initial list (with 2's initial directory id) must never be used again.
    let mut status = bootstrapped_status(3);
    status.as_object_mut().expect("object").remove("leaderId");
    status["recovery"]["noLeaderSince"] = json!("2026-11-29T23:50:00Z");
    status["recovery"]["phase"] = json!("Stopping");
    status["recovery"]["survivor"] = json!(0);
    let mut kq = kq_json(3, true, status);
    kq["spec"]["recovery"] = json!({"allowQuorumLossRecovery": true});
    let mut sts = sts_recording("2");
    sts["spec"]["replicas"] = json!(0);
    sts["status"]["replicas"] = json!(0);
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts)),
        step("GET", PODS, Reply::Json(pods_json(0))),
    ];
    steps.extend(children_steps(0, 0).into_iter().skip(2));
    steps.push(step("PATCH", STS, Reply::Json(sts_recording(""))));
    let (result, seen) = pass(&kq, fake(None), steps).await;
    assert_record_emptied(result, &seen);
}

#[tokio::test]
async fn a_status_write_lost_after_the_first_leader_s_mark_keeps_the_statefulset_s_bootstrapped() {
    // The first leader's pass marked the StatefulSet (bootstrapped, voter 2
    // unformatted) and then failed to write status: the next pass must
    // neither give every pod the initial list again nor recompute the set.
    let mut status = bootstrapped_status(3);
    status["bootstrapped"] = json!(false);
    let kq = kq_json(3, true, status);
    let mut sts = sts_recording("2");
    let voters = (0..3)
        .map(|i| format!("{i}:{}", kafka_uuid::to_string(dir(i))))
        .collect::<Vec<_>>()
        .join(",");
    sts["metadata"]["annotations"]["kraft.krabka.io/cluster-id"] = json!(CLUSTER);
    sts["metadata"]["annotations"]["kraft.krabka.io/initial-voters"] = json!(voters);
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts)),
        step("GET", PODS, Reply::Json(pods_with_pod_2_pending())),
    ];
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.extend([step("PATCH", KQ_STATUS, Reply::KqWithStatus)]);
    let (result, seen) = pass(&kq, fake(Some(quorum_without_voter_2())), steps).await;
    assert_eq!(
        format_mode(&seen),
        format!("--initial-controllers-for=2/{}", initial_list())
    );
    result.expect("pass succeeds");
    let sts = applied_statefulset(&seen);
    assert_eq!(
        sts.body["metadata"]["annotations"]["kraft.krabka.io/bootstrapped"],
        "true"
    );
    assert_eq!(
        status_of(seen.last().expect("status"))["bootstrapped"],
        true
    );
}

#[tokio::test]
async fn a_reported_quorum_loss_empties_the_unformatted_set_before_a_person_recovers_by_hand() {
    // Without the opt-in the operator only reports the loss; the manual
    // recovery (docs/operations.md) scales the pods back while it is paused,
    // so the record must be empty by then.
    let mut status = bootstrapped_status(3);
    status.as_object_mut().expect("object").remove("leaderId");
    status["recovery"]["noLeaderSince"] = json!("2026-11-29T23:50:00Z");
    status["conditions"] = json!([{
        "type": "Degraded", "status": "True", "reason": "QuorumLost",
        "message": "voters 1, 2 of 3 lost their volumes",
        "lastTransitionTime": "2026-11-30T00:00:00Z",
    }]);
    let kq = kq_json(3, true, status);
    let mut steps = vec![
        step("GET", STS, Reply::Json(sts_recording("2"))),
        step("GET", PODS, Reply::Json(pods_with_pod_2_pending())),
    ];
    steps.extend(children_steps(3, 3).into_iter().skip(2));
    steps.push(step("PATCH", STS, Reply::Json(sts_recording(""))));
    let (result, seen) = pass(&kq, fake(None), steps).await;
    assert_record_emptied(result, &seen);
}

/// A pass without a leader's answer that gave every pod
/// `--no-initial-controllers` and ended by emptying the record.
fn assert_record_emptied(result: Result<Action, Error>, seen: &[Seen]) {
    assert_eq!(format_mode(seen), "--no-initial-controllers");
    assert_eq!(
        result.expect("pass succeeds"),
        Action::requeue(Duration::ZERO)
    );
    let last = seen.last().expect("a call");
    assert_eq!((last.method.as_str(), last.path.as_str()), ("PATCH", STS));
    assert_eq!(
        last.body["metadata"]["annotations"]["kraft.krabka.io/unformatted-initial-voters"],
        ""
    );
}
