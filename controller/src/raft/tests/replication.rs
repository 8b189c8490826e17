//! Engine unit tests of replication: the high watermark, Fetch (diverging
//! epochs, parked fetches), check-quorum, the BeginQuorumEpoch heartbeat and
//! a leader's graceful shutdown.

use super::*;

#[test]
fn the_high_watermark_waits_for_a_majority_of_flushed_offsets() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 2_000).expect("flush");
    let commands = e.handle(fetch(2, 1, 1, 1, 0), 2_001).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=1",
            "reply fetch error=0 hw=1 diverging=(-1, -1) batches=0",
        ]
    );
}

#[test]
fn a_fetch_with_a_diverging_epoch_names_the_end_of_that_epoch() {
    // Leader log: offsets 0, 1 of epoch 1 then its LeaderChange at 2 (epoch 2
    // after the election from a stored epoch 1).
    let stored = ElectionState {
        epoch: 1,
        leader_id: None,
        voted_key: None,
    };
    let (mut e, _) = engine_with(1, log_with_epochs(&[1, 1]), Some(stored));
    let t = e.next_deadline_ms();
    e.handle(Event::Tick, t).expect("tick");
    e.handle(vote_granted(1, 1), t).expect("pre-vote");
    e.handle(vote_granted(3, 2), t).expect("vote");
    assert_eq!(e.role(), Role::Leader);
    // A follower that wrote offsets 2..4 in epoch 1 as a stale leader... no:
    // one that claims epoch 1 up to offset 4 must truncate to 2.
    let commands = e.handle(fetch(2, 2, 4, 1, 0), t + 1).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=-1 diverging=(2, 1) batches=0"]
    );
    // A fetch at a fenced epoch learns the current leader.
    let commands = e.handle(fetch(2, 1, 2, 1, 0), t + 2).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=74 hw=-1 diverging=(-1, -1) batches=0"]
    );
}

#[test]
fn an_empty_fetch_is_parked_and_answered_when_a_proposal_arrives() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 2_000).expect("flush");
    let commands = e.handle(fetch(2, 1, 1, 1, 500), 2_001).expect("fetch");
    assert_eq!(render(&commands), ["committed hw=1"]);
    let (proposed, commands) = e
        .propose(&[Bytes::from_static(b"record")], 2_002)
        .expect("leader accepts");
    assert_eq!(
        proposed,
        Proposed {
            last_offset: 1,
            epoch: 1
        }
    );
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=1"]
    );
    // Its flush waits for the append linger (25 ms).
    assert_eq!(e.next_deadline_ms(), 2_027);
}

#[test]
fn a_parked_fetch_is_answered_empty_at_its_deadline() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 2_000).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 500), 2_001).expect("fetch");
    let commands = e.handle(Event::Tick, 2_501).expect("tick");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"]
    );
}

/// `fetch` at Fetch v18 carrying the fetcher's high watermark (KIP-1166).
fn fetch_v18(offset: i64, max_wait_ms: i32, high_watermark: i64) -> Event {
    let Event::Request {
        handle,
        request: RaftRequest::Fetch(mut r),
        ..
    } = fetch(3, 1, offset, 1, max_wait_ms)
    else {
        unreachable!("fetch builds a Fetch request")
    };
    r.topics[0].partitions[0].high_watermark = high_watermark;
    Event::Request {
        handle,
        api_version: 18,
        request: RaftRequest::Fetch(r),
    }
}

/// Node 1 leads epoch 1 with high watermark 1 (node 2 fetched offset 1).
fn leader_at_high_watermark_1() -> RaftEngine<MemoryLog> {
    leader_at_high_watermark_1_lingering(config(1).append_linger_ms)
}

/// [`leader_at_high_watermark_1`] with the append linger `linger_ms`.
fn leader_at_high_watermark_1_lingering(linger_ms: u64) -> RaftEngine<MemoryLog> {
    let mut e = leader_lingering(MemoryLog::new(), linger_ms);
    e.handle(Event::Flush, 2_000).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 0), 2_001).expect("fetch");
    assert_eq!(e.high_watermark(), Some(1));
    e
}

#[test]
fn with_linger_0_an_empty_fetch_whose_high_watermark_is_behind_is_answered_at_once() {
    // KIP-1166: Kafka's `isHighWatermarkUpdated` (request HW < leader HW).
    let mut e = leader_at_high_watermark_1_lingering(0);
    let commands = e.handle(fetch_v18(1, 500, 0), 2_002).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"]
    );
    // -1 (v18, not known) is behind too, as in Kafka.
    let commands = e.handle(fetch_v18(1, 500, -1), 2_003).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"]
    );
}

#[test]
fn with_a_linger_an_empty_fetch_behind_only_in_the_high_watermark_waits_at_most_the_linger() {
    // Decisions D22: answered by the next append, or when the linger
    // (25 ms) has passed, not at its max wait (500 ms).
    let mut e = leader_at_high_watermark_1();
    let commands = e.handle(fetch_v18(1, 500, 0), 2_002).expect("fetch");
    assert!(render(&commands).is_empty(), "{:?}", render(&commands));
    assert_eq!(e.next_deadline_ms(), 2_027);
    let commands = e.handle(Event::Tick, 2_026).expect("tick");
    assert!(render(&commands).is_empty(), "{:?}", render(&commands));
    let commands = e.handle(Event::Tick, 2_027).expect("tick");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"]
    );
    // Before the linger's end, an append answers it with its data.
    let commands = e.handle(fetch_v18(1, 500, 0), 2_030).expect("fetch");
    assert!(render(&commands).is_empty(), "{:?}", render(&commands));
    let (_, commands) = e
        .propose(&[Bytes::from_static(b"record")], 2_031)
        .expect("leader accepts");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=1"]
    );
}

/// Node 1 leads with a record at offset 1, nothing of its log flushed yet;
/// node 3's Fetch past it (offset 2) is parked, with no high watermark yet
/// (one voter of three holds anything). Then node 2's Fetch past it moves
/// the high watermark to 2; returns what that produced.
fn high_watermark_moved_by_a_second_ack(e: &mut RaftEngine<MemoryLog>) -> Vec<String> {
    e.propose(&[Bytes::from_static(b"record")], 2_000)
        .expect("leader accepts");
    let commands = e.handle(fetch(3, 1, 2, 1, 500), 2_001).expect("fetch");
    assert!(render(&commands).is_empty(), "{:?}", render(&commands));
    let commands = e.handle(fetch(2, 1, 2, 1, 500), 2_002).expect("fetch");
    assert_eq!(e.high_watermark(), Some(2));
    render(&commands)
}

#[test]
fn a_high_watermark_moved_by_an_ack_reaches_parked_fetches_at_once_only_with_linger_0() {
    // Linger 0: Kafka's `onUpdateLeaderHighWatermark` completes every
    // parked fetch (node 3's) at once.
    let mut e = leader_lingering(MemoryLog::new(), 0);
    assert_eq!(
        high_watermark_moved_by_a_second_ack(&mut e),
        [
            "committed hw=2",
            "reply fetch error=0 hw=2 diverging=(-1, -1) batches=0",
        ]
    );
    // With a linger (decisions D22): within it, and with the next append's
    // data when one comes first (both parked fetches then).
    let mut e = leader(MemoryLog::new());
    assert_eq!(
        high_watermark_moved_by_a_second_ack(&mut e),
        ["committed hw=2"]
    );
    let (_, commands) = e
        .propose(&[Bytes::from_static(b"next")], 2_010)
        .expect("leader accepts");
    assert_eq!(
        render(&commands),
        [
            "reply fetch error=0 hw=2 diverging=(-1, -1) batches=1",
            "reply fetch error=0 hw=2 diverging=(-1, -1) batches=1",
        ]
    );
    // With no append, the linger's end answers node 3's; node 2's (Fetch
    // v17: its high watermark unknown, so not behind) waits for its max
    // wait, as in Kafka. The ticks also start the leader's flush (2,025).
    let mut e = leader(MemoryLog::new());
    high_watermark_moved_by_a_second_ack(&mut e);
    let fetch_replies = |commands: &[Command]| -> Vec<String> {
        render(commands)
            .into_iter()
            .filter(|c| c.starts_with("reply fetch"))
            .collect()
    };
    assert!(fetch_replies(&e.handle(Event::Tick, 2_026).expect("tick")).is_empty());
    assert_eq!(
        fetch_replies(&e.handle(Event::Tick, 2_027).expect("tick")),
        ["reply fetch error=0 hw=2 diverging=(-1, -1) batches=0"]
    );
}

#[test]
fn a_high_watermark_moved_by_the_leaders_flush_reaches_parked_fetches_within_the_linger() {
    // Node 3 fetched past the LeaderChange batch before the leader's flush;
    // the flush then makes the high watermark 1. Linger 0: node 3 is
    // answered at once; linger 25 (decisions D22): at the linger's end.
    for (linger, answered_at) in [(0, 2_002), (25, 2_027)] {
        let mut e = leader_lingering(MemoryLog::new(), linger);
        let commands = e.handle(fetch(3, 1, 1, 1, 500), 2_001).expect("fetch");
        assert!(render(&commands).is_empty(), "{:?}", render(&commands));
        let mut replies = Vec::new();
        for now in 2_002..=answered_at {
            let event = if now == 2_002 {
                Event::Flush
            } else {
                Event::Tick
            };
            let commands = render(&e.handle(event, now).expect("event"));
            assert_eq!(e.high_watermark(), Some(1));
            replies = commands
                .into_iter()
                .filter(|c| c.starts_with("reply fetch"))
                .collect();
            if now < answered_at {
                assert!(replies.is_empty(), "linger {linger}, at {now}: {replies:?}");
            }
        }
        assert_eq!(
            replies,
            ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"],
            "linger {linger}"
        );
    }
}

#[test]
fn a_leader_resigning_sends_the_high_watermark_it_held_back_first() {
    // Decisions D22: with a linger, node 3's parked fetch is owed the high
    // watermark node 2's ack moved; a graceful shutdown resigns at once, and
    // that high watermark reaches the parked fetches before the
    // resignation (which they would otherwise learn as an error carrying
    // no high watermark). With linger 0 node 3 had it already, and node 2's
    // parked fetch gets the resignation's NOT_LEADER_OR_FOLLOWER (6).
    let mut e = leader(MemoryLog::new());
    high_watermark_moved_by_a_second_ack(&mut e);
    let commands = e
        .handle(Event::Shutdown { timeout_ms: 5_000 }, 2_003)
        .expect("shutdown");
    assert_eq!(
        render(&commands)[..3],
        [
            "reply fetch error=0 hw=2 diverging=(-1, -1) batches=0",
            "reply fetch error=0 hw=2 diverging=(-1, -1) batches=0",
            "role resigned epoch=1 leader=Some(1)",
        ]
    );
    let mut e = leader_lingering(MemoryLog::new(), 0);
    high_watermark_moved_by_a_second_ack(&mut e);
    let commands = e
        .handle(Event::Shutdown { timeout_ms: 5_000 }, 2_003)
        .expect("shutdown");
    assert_eq!(
        render(&commands)[..2],
        [
            "reply fetch error=6 hw=2 diverging=(-1, -1) batches=0",
            "role resigned epoch=1 leader=Some(1)",
        ]
    );
}

/// `fetch` (max wait 500 ms) to [`leader_at_high_watermark_1`] at 2,002 ms
/// gets no answer until its deadline, then the leader's high watermark.
fn parked_until_max_wait(fetch: Event) {
    let mut e = leader_at_high_watermark_1();
    let commands = e.handle(fetch, 2_002).expect("fetch");
    assert!(render(&commands).is_empty(), "{:?}", render(&commands));
    let commands = e.handle(Event::Tick, 2_502).expect("tick");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=1 diverging=(-1, -1) batches=0"]
    );
}

#[test]
fn an_empty_fetch_at_the_leaders_high_watermark_is_still_parked() {
    parked_until_max_wait(fetch_v18(1, 500, 1));
}

#[test]
fn an_empty_fetch_without_a_high_watermark_is_still_parked() {
    // Fetch v17 has no HighWatermark: it decodes to the field's default,
    // i64::MAX ("not supported"), which is never behind.
    parked_until_max_wait(fetch(3, 1, 1, 1, 500));
}

#[test]
fn a_leader_without_a_majority_resigns_after_one_and_a_half_fetch_timeouts() {
    let mut e = leader(MemoryLog::new());
    // Node 2 fetched (offset 1); node 3 never did.
    e.handle(Event::Flush, 3_000).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 0), 3_000).expect("fetch");
    let mut resigned = Vec::new();
    let mut now = 3_000;
    while e.role() == Role::Leader && now < 20_000 {
        now += 100;
        resigned = render(&e.handle(Event::Tick, now).expect("tick"));
    }
    // Node 2's fetch at 3000 restarted the window: resign at 3000 + 3000.
    assert_eq!(now, 6_000);
    assert_eq!(
        resigned,
        [
            "role resigned epoch=1 leader=Some(1)",
            "send 2 end_quorum_epoch epoch=1 successors=[2, 3]",
            "send 3 end_quorum_epoch epoch=1 successors=[2, 3]",
        ]
    );
    assert!(matches!(
        e.propose(&[Bytes::from_static(b"x")], now),
        Err(RaftError::NotLeader { .. })
    ));
}

#[test]
fn a_leader_shutting_down_resigns_and_completes_once_a_successor_leads() {
    // Kafka's `KafkaRaftClient.pollShutdown`: done when a remote leader is
    // known (or the timeout passes), not when EndQuorumEpoch is acknowledged.
    use kafka_protocol::messages::{EndQuorumEpochResponse, end_quorum_epoch_response};
    let mut e = leader(MemoryLog::new());
    let commands = e
        .handle(Event::Shutdown { timeout_ms: 5_000 }, 2_000)
        .expect("shutdown");
    assert_eq!(
        render(&commands),
        [
            "role resigned epoch=1 leader=Some(1)",
            "send 2 end_quorum_epoch epoch=1 successors=[2, 3]",
            "send 3 end_quorum_epoch epoch=1 successors=[2, 3]",
        ]
    );
    let ids: Vec<RequestId> = commands
        .iter()
        .filter_map(|c| match c {
            Command::Send { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    let ack = |id: RequestId| Event::Response {
        id,
        response: RaftResponse::EndQuorumEpoch(EndQuorumEpochResponse::default().with_topics(
            vec![
                end_quorum_epoch_response::TopicData::default().with_partitions(vec![
                end_quorum_epoch_response::PartitionData::default()
                    .with_leader_id(1.into())
                    .with_leader_epoch(1),
            ]),
            ],
        )),
    };
    assert!(render(&e.handle(ack(ids[0]), 2_010).expect("ack")).is_empty());
    let after_acks = render(&e.handle(ack(ids[1]), 2_020).expect("ack"));
    assert!(
        !after_acks.iter().any(|c| c == "shutdown complete"),
        "acknowledgements alone must not complete the shutdown: {after_acks:?}"
    );
    let successor = begin_quorum_epoch(2, 2);
    let commands = render(
        &e.handle(
            Event::Request {
                handle: ReplyHandle(9),
                api_version: 1,
                request: RaftRequest::BeginQuorumEpoch(successor),
            },
            2_100,
        )
        .expect("handles"),
    );
    assert_eq!(
        commands.last().map(String::as_str),
        Some("shutdown complete"),
        "{commands:?}"
    );
}

#[test]
fn a_leader_shutting_down_stops_waiting_for_a_successor_at_the_timeout() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Shutdown { timeout_ms: 5_000 }, 2_000)
        .expect("shutdown");
    let early = render(&e.handle(Event::Tick, 6_999).expect("tick"));
    assert!(!early.iter().any(|c| c == "shutdown complete"), "{early:?}");
    let late = render(&e.handle(Event::Tick, 7_000).expect("tick"));
    assert!(late.iter().any(|c| c == "shutdown complete"), "{late:?}");
}

#[test]
fn the_leader_repeats_begin_quorum_epoch_to_a_voter_that_does_not_fetch() {
    use kafka_protocol::messages::{BeginQuorumEpochResponse, begin_quorum_epoch_response};
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 1_500).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 0), 1_500).expect("fetch");
    // Node 3 answers the first BeginQuorumEpoch (request id 6) but never fetches.
    let answered = Event::Response {
        id: RequestId(6),
        response: RaftResponse::BeginQuorumEpoch(BeginQuorumEpochResponse::default().with_topics(
            vec![
                begin_quorum_epoch_response::TopicData::default().with_partitions(vec![
                begin_quorum_epoch_response::PartitionData::default()
                    .with_leader_id(1.into())
                    .with_leader_epoch(1),
            ]),
            ],
        )),
    };
    assert!(render(&e.handle(answered, 1_600).expect("response")).is_empty());
    // Every fetch_timeout / 2 = 1 s, to the voters that did not fetch in that
    // time and have no BeginQuorumEpoch in flight (the resend stays unanswered).
    let mut sent = Vec::new();
    let mut now = 1_600;
    while now < 5_000 {
        now += 50;
        for event in [fetch(2, 1, 1, 1, 0), Event::Tick] {
            let commands = render(&e.handle(event, now).expect("handles"));
            sent.extend(commands.into_iter().filter(|c| c.starts_with("send")));
        }
    }
    assert_eq!(sent, ["send 3 begin_quorum_epoch epoch=1"]);
}

#[test]
fn a_fetch_with_partition_max_bytes_0_reads_up_to_the_requests_max_bytes() {
    // Kafka's raft client sends partitionMaxBytes=0 and maxBytes=8 MiB: the
    // leader must answer with every batch it has, not one per round trip.
    let mut e = leader(MemoryLog::new());
    for i in 0..5u8 {
        e.propose(&[Bytes::from(vec![i; 100])], 2_000)
            .expect("propose");
    }
    e.handle(Event::Flush, 2_000).expect("flush");
    let with = |max_bytes: i32| {
        let Event::Request {
            handle,
            api_version,
            request: RaftRequest::Fetch(mut f),
        } = fetch(2, 1, 1, 1, 0)
        else {
            unreachable!("fetch() builds a Fetch request")
        };
        f.max_bytes = max_bytes;
        f.topics[0].partitions[0].partition_max_bytes = 0;
        Event::Request {
            handle,
            api_version,
            request: RaftRequest::Fetch(f),
        }
    };
    let commands = e.handle(with(8 << 20), 2_001).expect("fetch");
    assert!(
        render(&commands)
            .iter()
            .any(|c| c.starts_with("reply fetch") && c.ends_with("batches=5")),
        "{:?}",
        render(&commands)
    );
    // A request max of 0 still reads one batch (Kafka's minimum of one).
    let commands = e.handle(with(0), 2_002).expect("fetch");
    assert!(
        render(&commands)
            .iter()
            .any(|c| c.starts_with("reply fetch") && c.ends_with("batches=1")),
        "{:?}",
        render(&commands)
    );
}

#[test]
fn a_follower_whose_flush_an_epoch_change_overtook_flushes_before_it_fetches() {
    // Issue 23: the event loop runs the fsyncs of a flush off its thread, so
    // a BeginQuorumEpoch can come between an append and the end of its
    // flush. A Fetch reports the log end as this replica's offset: sent
    // before the flush, it would let the new leader count bytes no disk has.
    let mut e = super::integrity::follower();
    let commands = render(
        &e.handle(super::integrity::answer(1, 3), 10)
            .expect("answer"),
    );
    assert_eq!(commands, ["flush", "committed hw=2"]);
    assert_eq!(e.log().end_offset(), OffsetAndEpoch::new(3, 3));
    assert_eq!(e.log().flushed_end_offset(), 2);

    let begin = begin_quorum_epoch(3, 4);
    let commands = e
        .handle(
            Event::Request {
                handle: ReplyHandle(5),
                api_version: 1,
                request: RaftRequest::BeginQuorumEpoch(begin),
            },
            11,
        )
        .expect("handles");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=4 leader=Some(3) voted=None",
            "role follower epoch=4 leader=Some(3)",
            "reply begin_quorum_epoch error=0 leader=3 epoch=4",
            "flush",
        ],
        "no Fetch from offset 3 while offset 2 is not flushed"
    );
    let commands = render(&e.handle(Event::Flush, 12).expect("flush"));
    assert_eq!(commands, ["send 3 fetch epoch=4 offset=3 last_epoch=3"]);
}
