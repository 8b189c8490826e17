//! Steady passes and their status writes: the high watermark and the lags,
//! which move every 500 ms on a steady quorum, are written at most once per
//! STEADY_REQUEUE, so a pass's own write does not start pass after pass.

use std::sync::atomic::{AtomicI64, Ordering};

use super::*;

/// The stored status one commit behind the quorum: the leader's high
/// watermark 99 and voter 2 one record behind it (the fake quorum says 100
/// and 0).
fn one_behind(status: &mut Value) {
    status["highWatermark"] = json!(99);
    status["voters"][2]["lag"] = json!(1);
}

/// The stored status with one pod less Ready than the fake's 3.
fn one_less_ready(status: &mut Value) {
    one_behind(status);
    status["readyReplicas"] = json!(2);
}

#[tokio::test]
async fn a_steady_pass_writes_progress_alone_at_most_once_per_steady_requeue() {
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
    let read = |reply| step("GET", KQ, reply);
    let mut steps = vec![read(Reply::Kq)];
    // 1: the first steady pass writes.
    steps.extend(children_steps(3, 3));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    // 2: at once, only the progress differs: nothing written.
    steps.push(read(Reply::KqWithLastStatus(one_behind)));
    steps.extend(children_steps(3, 3));
    // 3: a Ready pod less is more than progress: written at once.
    steps.push(read(Reply::KqWithLastStatus(one_less_ready)));
    steps.extend(children_steps(3, 3));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    // 4: 1 ms short of STEADY_REQUEUE after 3's write: nothing written.
    steps.push(read(Reply::KqWithLastStatus(one_behind)));
    steps.extend(children_steps(3, 3));
    // 5: STEADY_REQUEUE after 3's write: the progress is written.
    steps.push(read(Reply::KqWithLastStatus(one_behind)));
    steps.extend(children_steps(3, 3));
    steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    let script = serve(handle, kq.clone(), steps);
    let obj: Arc<KraftQuorum> = Arc::new(serde_json::from_value(kq).expect("kq fixture"));
    let steady_ms = i64::try_from(STEADY_REQUEUE.as_millis()).expect("ms");
    for (pass, at) in [0, 0, 0, steady_ms - 1, steady_ms].into_iter().enumerate() {
        now_ms.store(start.as_millisecond() + at, Ordering::SeqCst);
        let result =
            tokio::time::timeout(Duration::from_secs(10), reconcile(obj.clone(), ctx.clone()))
                .await
                .expect("the pass finishes");
        assert_eq!(
            result.unwrap_or_else(|e| panic!("pass {}: {e}", pass + 1)),
            Action::requeue(STEADY_REQUEUE),
            "pass {}",
            pass + 1
        );
    }
    let seen = script.finish();
    let writes: Vec<&Value> = seen
        .iter()
        .filter(|s| s.path == KQ_STATUS)
        .map(status_of)
        .collect();
    assert_eq!(writes.len(), 3, "{:#?}", calls(&seen));
    for written in writes {
        assert_eq!(written["highWatermark"], 100);
        assert_eq!(written["voters"][2]["lag"], 0);
        assert_eq!(written["readyReplicas"], 3);
    }
}

#[test]
fn only_the_high_watermark_and_lags_are_progress() {
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
    assert!(status::differs_only_in_progress(Some(&old), &new));
    assert!(status::differs_only_in_progress(Some(&old), &old));
    assert!(!status::differs_only_in_progress(None, &new));
    let mut caught_up = new.clone();
    caught_up.voters[1].caught_up = false;
    assert!(!status::differs_only_in_progress(Some(&old), &caught_up));
    let mut epoch = new.clone();
    epoch.leader_epoch = Some(5);
    assert!(!status::differs_only_in_progress(Some(&old), &epoch));
    let mut observers = new;
    observers.observers.clear();
    assert!(!status::differs_only_in_progress(Some(&old), &observers));
}
