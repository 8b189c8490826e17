//! Issue 21: batches fetched from a leader are checked against the epochs
//! that leader can have written before they are appended.

use kafka_protocol::messages::{FetchResponse, fetch_response};

use super::*;

/// Node 1 following leader 2 in epoch 3 with a log of two batches of epoch
/// 1; its first Fetch (id 1) asks from offset 2.
pub(super) fn follower() -> RaftEngine<MemoryLog> {
    let stored = ElectionState {
        epoch: 3,
        leader_id: Some(2),
        voted_key: None,
    };
    let (e, commands) = engine_with(1, log_with_epochs(&[1, 1]), Some(stored));
    assert_eq!(
        commands,
        [
            "role follower epoch=3 leader=Some(2)",
            "send 2 fetch epoch=3 offset=2 last_epoch=1"
        ]
    );
    e
}

/// Leader 2's answer `id` in epoch 3: one batch at offset 2 of `epoch`.
pub(super) fn answer(id: u64, epoch: i32) -> Event {
    let batch = encode_data_batch(2, epoch, 0, &[Bytes::from_static(b"x")]).expect("encodes");
    leader_2_answer(id, batch)
}

#[test]
fn a_fetched_batch_with_an_epoch_above_its_leaders_is_refused_and_fetched_again() {
    // Raft §5.3: the leader of epoch 3 writes epoch 3 and copies older ones.
    let mut e = follower();
    let commands = render(&e.handle(answer(1, 1003), 10).expect("answer"));
    // Nothing appended nor flushed; the leader's high watermark is still
    // taken up to this log's end, as for any refused answer.
    assert_eq!(commands, ["committed hw=2"]);
    assert_eq!(e.log().end_offset(), OffsetAndEpoch::new(2, 1));
    // Fetched again from the same offset after the retry backoff.
    let deadline = e.next_deadline_ms();
    assert_eq!(deadline, 10 + 20, "retry.backoff.ms is 20");
    let commands = render(&e.handle(Event::Tick, deadline).expect("tick"));
    assert_eq!(commands, ["send 2 fetch epoch=3 offset=2 last_epoch=1"]);
    // The leader's own epoch is appended.
    let commands = render(&e.handle(answer(2, 3), deadline + 1).expect("answer"));
    assert_eq!(commands, ["flush"]);
    assert_eq!(e.log().end_offset(), OffsetAndEpoch::new(3, 3));
}

#[test]
fn a_fetched_batch_with_an_epoch_below_the_logs_last_is_refused_and_fetched_again() {
    // The log's epochs never go down (Kafka's `LeaderEpochFileCache`).
    let mut e = follower();
    let commands = render(&e.handle(answer(1, 0), 10).expect("answer"));
    // Nothing appended nor flushed; the leader's high watermark is still
    // taken up to this log's end, as for any refused answer.
    assert_eq!(commands, ["committed hw=2"]);
    assert_eq!(e.log().end_offset(), OffsetAndEpoch::new(2, 1));
    let deadline = e.next_deadline_ms();
    let commands = render(&e.handle(Event::Tick, deadline).expect("tick"));
    assert_eq!(commands, ["send 2 fetch epoch=3 offset=2 last_epoch=1"]);
}

#[test]
fn a_snapshot_id_with_an_epoch_above_its_leaders_is_not_fetched() {
    // The leader of epoch 3 holds no snapshot of epoch 4 (issue 21).
    let mut e = follower();
    let answer = Event::Response {
        id: RequestId(1),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_high_watermark(100)
                    .with_log_start_offset(100)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(2.into())
                            .with_leader_epoch(3),
                    )
                    .with_snapshot_id(
                        fetch_response::SnapshotId::default()
                            .with_end_offset(100)
                            .with_epoch(4),
                    ),
            ]),
        ])),
    };
    let commands = render(&e.handle(answer, 10).expect("answer"));
    assert_eq!(commands, Vec::<String>::new());
    let deadline = e.next_deadline_ms();
    let commands = render(&e.handle(Event::Tick, deadline).expect("tick"));
    assert_eq!(
        commands,
        ["send 2 fetch epoch=3 offset=2 last_epoch=1"],
        "fetched again, no FetchSnapshot"
    );
}
