//! Passes that act on nothing (steady, waiting) and their status writes: the
//! high watermark and the lags, which move every 500 ms, are written at
//! most once per the pass's requeue interval, so a pass's own write does
//! not start pass after pass; a pass that acts writes every time.

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

/// A pass's read of the KraftQuorum: the fixture with the status of the
/// script's `write`th status apply, edited.
fn read(write: usize, edit: fn(&mut Value)) -> Step {
    step("GET", KQ, Reply::KqWithWrittenStatus { write, edit })
}

/// One pass of a sequence: at `at_ms` after the start, these calls (the
/// KraftQuorum's read first), returning `action`.
struct Pass {
    at_ms: i64,
    steps: Vec<Step>,
    action: Action,
}

/// A pass reading `read`, then the children of 3 (or `pods`) pods, then
/// `extra`, then a status write if `writes`.
fn pass_at(
    at_ms: i64,
    read: Step,
    pods: i32,
    extra: Vec<Step>,
    writes: bool,
    action: Action,
) -> Pass {
    let mut steps = vec![read];
    steps.extend(children_steps(pods, pods));
    steps.extend(extra);
    if writes {
        steps.push(step("PATCH", KQ_STATUS, Reply::KqWithStatus));
    }
    Pass {
        at_ms,
        steps,
        action,
    }
}

/// Runs `passes` in order on one context whose clock each pass sets, over
/// `kq` and a healthy fake quorum of 3 voters; returns the status writes.
async fn run_passes(kq: Value, passes: Vec<Pass>) -> Vec<Value> {
    let start: Timestamp = "2026-11-30T00:00:00Z".parse().expect("time");
    let now_ms = Arc::new(AtomicI64::new(start.as_millisecond()));
    let clock_ms = now_ms.clone();
    let (ctx, handle) = context_with_clock(
        fake(Some(quorum(3, 0))),
        Box::new(move || {
            Timestamp::from_millisecond(clock_ms.load(Ordering::SeqCst)).expect("time")
        }),
    );
    let mut expected = Vec::new();
    let mut steps = Vec::new();
    for p in passes {
        expected.push((p.at_ms, p.action));
        steps.extend(p.steps);
    }
    let script = serve(handle, kq.clone(), steps);
    let obj: Arc<KraftQuorum> = Arc::new(serde_json::from_value(kq).expect("kq fixture"));
    for (n, (at_ms, action)) in expected.into_iter().enumerate() {
        now_ms.store(start.as_millisecond() + at_ms, Ordering::SeqCst);
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
    seen.iter()
        .filter(|s| s.path == KQ_STATUS)
        .map(|s| status_of(s).clone())
        .collect()
}

#[tokio::test]
async fn a_steady_pass_writes_offsets_alone_at_most_once_per_steady_requeue() {
    let steady = || Action::requeue(STEADY_REQUEUE);
    let steady_ms = i64::try_from(STEADY_REQUEUE.as_millis()).expect("ms");
    let due = 10_000 + steady_ms;
    let scale = vec![
        step("PATCH", STS, Reply::Echo),
        step("POST", EVENTS, Reply::Echo),
    ];
    let passes = vec![
        // 1: the first steady pass writes (write 0).
        pass_at(0, step("GET", KQ, Reply::Kq), 3, vec![], true, steady()),
        // 2: at once, only the offsets differ: nothing written; requeued
        // for the moment a write is due.
        pass_at(0, read(0, one_behind), 3, vec![], false, steady()),
        // 3: 10 s on, a Ready pod less is more than offsets: written (1).
        pass_at(10_000, read(0, one_less_ready), 3, vec![], true, steady()),
        // 4: 1 ms short of STEADY_REQUEUE after 3's write: nothing written.
        pass_at(
            due - 1,
            read(1, one_behind),
            3,
            vec![],
            false,
            Action::requeue(Duration::from_millis(1)),
        ),
        // 5: STEADY_REQUEUE after 3's write: the offsets are written (2).
        pass_at(due, read(1, one_behind), 3, vec![], true, steady()),
        // 6: at once, a scale-up with only the offsets stale: a pass that
        // acts writes (3).
        pass_at(
            due,
            read(2, one_behind_scaling_to_four),
            3,
            scale,
            true,
            Action::requeue(BUSY_REQUEUE),
        ),
        // 7: at once, steady again with only the offsets stale against 5's
        // write: 6 removed the record of 5, so it is written (4).
        pass_at(due, read(2, one_behind), 3, vec![], true, steady()),
        // 8: the clock went back a minute past 7's write: written (5), not
        // held until the clock catches up.
        pass_at(due - 60_000, read(2, one_behind), 3, vec![], true, steady()),
    ];
    let writes = run_passes(kq_json(3, true, bootstrapped_status(3)), passes).await;
    assert_eq!(writes.len(), 6, "{writes:#?}");
    for written in writes {
        assert_eq!(written["highWatermark"], 100);
        assert_eq!(written["voters"][2]["lag"], 0);
        assert_eq!(written["readyReplicas"], 3);
    }
}

#[tokio::test]
async fn a_waiting_pass_writes_offsets_alone_at_most_once_per_busy_requeue() {
    // spec.replicas 4 and pod 3 running, but node 3 is not an observer yet:
    // the planner waits (WaitingForObserver), requeued every BUSY_REQUEUE.
    let busy_ms = i64::try_from(BUSY_REQUEUE.as_millis()).expect("ms");
    let busy = || Action::requeue(BUSY_REQUEUE);
    let passes = vec![
        pass_at(0, step("GET", KQ, Reply::Kq), 4, vec![], true, busy()),
        pass_at(0, read(0, one_behind), 4, vec![], false, busy()),
        pass_at(
            busy_ms - 1,
            read(0, one_behind),
            4,
            vec![],
            false,
            Action::requeue(Duration::from_millis(1)),
        ),
        pass_at(busy_ms, read(0, one_behind), 4, vec![], true, busy()),
    ];
    let writes = run_passes(kq_json(4, true, bootstrapped_status(3)), passes).await;
    assert_eq!(writes.len(), 2, "{writes:#?}");
    for written in writes {
        assert_eq!(
            condition(&written, "Progressing"),
            ("True", "WaitingForObserver")
        );
        assert_eq!(written["highWatermark"], 100);
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
