//! Steady passes and their status writes: the high watermark and the lags,
//! which move every 500 ms on a steady quorum, are written at most once per
//! STEADY_REQUEUE, so a pass's own write does not start pass after pass;
//! a pass in the middle of a change writes every time.

use std::sync::atomic::{AtomicI64, Ordering};

use super::*;

/// The stored status one commit behind the quorum: the leader's high
/// watermark 99 and voter 2 one record behind it (the fake quorum says 100
/// and 0).
fn one_behind(kq: &mut Value) {
    kq["status"]["highWatermark"] = json!(99);
    kq["status"]["voters"][2]["lag"] = json!(1);
}

/// [`one_behind`], and one pod less Ready than the fake's 3.
fn one_less_ready(kq: &mut Value) {
    one_behind(kq);
    kq["status"]["readyReplicas"] = json!(2);
}

/// [`one_behind`], and `spec.replicas` 4: the pass grows the StatefulSet.
fn one_behind_scaling_to_four(kq: &mut Value) {
    one_behind(kq);
    kq["spec"]["replicas"] = json!(4);
}

#[tokio::test]
async fn a_steady_pass_writes_offsets_alone_at_most_once_per_steady_requeue() {
    let kq = kq_json(3, true, bootstrapped_status(3));
    let start: Timestamp = "2026-11-30T00:00:00Z".parse().expect("time");
    let now_ms = Arc::new(AtomicI64::new(start.as_millisecond()));
    let clock_ms = now_ms.clone();
    let (ctx, handle) = context_with_clock(
        fake(Some(quorum(3, 0))),
        Box::new(move || {
            Timestamp::from_millisecond(clock_ms.load(Ordering::SeqCst)).expect("time")
        }),
    );
    let read = |write, edit| step("GET", KQ, Reply::KqWithWrittenStatus { write, edit });
    let steady = Action::requeue(STEADY_REQUEUE);
    let ms = Duration::from_millis;
    let steady_ms = i64::try_from(STEADY_REQUEUE.as_millis()).expect("ms");
    // (time in ms, the pass's steps, what it returns)
    let mut passes: Vec<(i64, Vec<Step>, Action)> = Vec::new();
    let mut then = |at, read: Step, write: bool, extra: Vec<Step>, action| {
        let mut steps = vec![read];
        steps.extend(children_steps(3, 3));
        steps.extend(extra);
        if write {
            steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
        }
        passes.push((at, steps, action));
    };
    // 1: the first steady pass writes (write 0).
    then(0, step("GET", KQ, Reply::Kq), true, vec![], steady.clone());
    // 2: at once, only the offsets differ: nothing written; requeued for
    // the moment a write is due.
    then(
        0,
        read(0, one_behind),
        false,
        vec![],
        Action::requeue(STEADY_REQUEUE),
    );
    // 3: 10 s on, a Ready pod less is more than offsets: written (write 1).
    then(
        10_000,
        read(0, one_less_ready),
        true,
        vec![],
        steady.clone(),
    );
    // 4: 1 ms short of STEADY_REQUEUE after 3's write: nothing written.
    let due = 10_000 + steady_ms;
    then(
        due - 1,
        read(1, one_behind),
        false,
        vec![],
        Action::requeue(ms(1)),
    );
    // 5: STEADY_REQUEUE after 3's write: the offsets are written (write 2).
    then(due, read(1, one_behind), true, vec![], steady.clone());
    // 6: at once, a scale-up with only the offsets stale: a pass in a
    // change writes (write 3).
    let scale = vec![
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
    ];
    let busy = Action::requeue(BUSY_REQUEUE);
    then(due, read(2, one_behind_scaling_to_four), true, scale, busy);
    // 7: at once, steady again with only the offsets stale against 5's
    // write: 6 cleared the record of 5, so it is written (write 4).
    then(due, read(2, one_behind), true, vec![], steady);
    let script = serve(
        handle,
        kq.clone(),
        passes.iter_mut().flat_map(|p| p.1.drain(..)).collect(),
    );
    let obj: Arc<KraftQuorum> = Arc::new(serde_json::from_value(kq).expect("kq fixture"));
    for (n, (at, _, action)) in passes.into_iter().enumerate() {
        now_ms.store(start.as_millisecond() + at, Ordering::SeqCst);
        let result =
            tokio::time::timeout(Duration::from_secs(10), reconcile(obj.clone(), ctx.clone()))
                .await
                .expect("the pass finishes");
        let pass = n + 1;
        assert_eq!(
            result.unwrap_or_else(|e| panic!("pass {pass}: {e}")),
            action,
            "pass {pass}"
        );
    }
    let seen = script.finish();
    let writes: Vec<&Value> = seen
        .iter()
        .filter(|s| s.path == KQ_STATUS)
        .map(status_of)
        .collect();
    assert_eq!(writes.len(), 5, "{:#?}", calls(&seen));
    for written in writes {
        assert_eq!(written["highWatermark"], 100);
        assert_eq!(written["voters"][2]["lag"], 0);
        assert_eq!(written["readyReplicas"], 3);
    }
}

#[test]
fn only_the_high_watermark_and_lags_are_offsets() {
    use crate::crd::{KraftQuorumStatus, VoterStatus};
    let voter = |node_id, lag| VoterStatus {
        node_id,
        directory_id: String::new(),
        endpoint: None,
        lag,
        caught_up: true,
        termination_message: None,
    };
    let old = KraftQuorumStatus {
        high_watermark: Some(10),
        leader_epoch: Some(4),
        voters: vec![voter(0, 0), voter(1, 3)],
        observers: vec![voter(3, 7)],
        ..KraftQuorumStatus::default()
    };
    let mut new = old.clone();
    new.high_watermark = Some(12);
    new.voters[1].lag = 0;
    new.observers[0].lag = 1;
    assert!(status::differs_only_in_offsets(Some(&old), &new));
    assert!(status::differs_only_in_offsets(Some(&old), &old));
    assert!(!status::differs_only_in_offsets(None, &new));
    let mut caught_up = new.clone();
    caught_up.voters[1].caught_up = false;
    assert!(!status::differs_only_in_offsets(Some(&old), &caught_up));
    let mut epoch = new.clone();
    epoch.leader_epoch = Some(5);
    assert!(!status::differs_only_in_offsets(Some(&old), &epoch));
    let mut observers = new;
    observers.observers.clear();
    assert!(!status::differs_only_in_offsets(Some(&old), &observers));
}
