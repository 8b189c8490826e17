//! Issue 27: a follower or observer is caught up by what its leader's Fetch
//! answers say (the leader's high watermark, not capped at the local log
//! end), within the fetch timeout; an observer fetching from a bootstrap
//! server goes to the leader as soon as an answer names it (KAFKA-19354).

use kafka_protocol::messages::{FetchResponse, fetch_response};

use super::*;
use crate::raft::RequestFailure;

/// An observer (node 9 of voters {1, 2, 3}, bootstrap servers `a` and `b`)
/// following leader 1 in epoch 1; its first Fetch (id 1) is to node 1.
fn observer() -> RaftEngine<MemoryLog> {
    let mut c = RaftConfig::new(9, VoterSet::from_ids([1, 2, 3]));
    c.cluster_id = Some("test".into());
    c.bootstrap_servers = vec![
        Endpoint::new("CONTROLLER", "a", 9093),
        Endpoint::new("CONTROLLER", "b", 9093),
    ];
    let stored = ElectionState {
        epoch: 1,
        leader_id: Some(1),
        voted_key: None,
    };
    let (e, commands) = RaftEngine::new(
        c,
        MemoryLog::new(),
        Some(stored),
        Box::new(ChaCha8Rng::seed_from_u64(5)),
        0,
    )
    .expect("starts");
    assert_eq!(
        render(&commands),
        [
            "role follower epoch=1 leader=Some(1)",
            "send 1 fetch epoch=1 offset=0 last_epoch=0"
        ]
    );
    e
}

#[test]
fn a_node_that_got_fetch_answers_is_not_caught_up_while_behind_the_leaders_high_watermark() {
    let mut e = observer();
    // The leader has 1000 committed records; this answer carries the first.
    e.handle(leader_1_answer(1, Some(0), 1_000), 10)
        .expect("answer");
    e.handle(Event::Flush, 11).expect("flush");
    let s = e.status();
    // What made every fetching node "caught up" before issue 27: the high
    // watermark as kept locally (capped at the log end) is reached.
    assert_eq!((s.high_watermark, s.flushed_end_offset), (Some(1), 1));
    assert_eq!(s.leader_high_watermark, Some(1_000));
    assert!(!s.caught_up, "1 of 1000 records is not caught up: {s:?}");

    // The leader's next answer brings it to the leader's high watermark: caught
    // up once the append is flushed, not before.
    e.handle(leader_1_answer(2, Some(1), 2), 20)
        .expect("answer");
    assert!(!e.status().caught_up, "the append is not flushed yet");
    e.handle(Event::Flush, 21).expect("flush");
    let s = e.status();
    assert!(s.caught_up, "{s:?}");
    // Dated when the answered Fetch was sent (after the flush at 11), not
    // when its answer was read: an answer read late proves nothing newer.
    assert_eq!(s.last_caught_up_ms, Some(11));
}

#[test]
fn a_node_whose_fetches_stop_being_answered_is_not_caught_up_after_the_fetch_timeout() {
    let mut e = observer();
    e.handle(leader_1_answer(1, None, 0), 10).expect("answer");
    assert!(e.status().caught_up, "an empty log at the leader's end");
    // Caught up as of when that Fetch was sent (the observer's start, 0).
    let sent = e.status().last_caught_up_ms.expect("caught up");
    assert_eq!(sent, 0);
    let timeout = RaftConfig::new(9, VoterSet::from_ids([1])).fetch_timeout_ms;
    e.handle(Event::Tick, sent + timeout - 1).expect("tick");
    assert!(e.status().caught_up, "still within the fetch timeout");
    e.handle(Event::Tick, sent + timeout).expect("tick");
    let s = e.status();
    assert_eq!(s.role, Role::Follower, "an observer keeps its leader");
    assert!(!s.caught_up, "nothing heard for the fetch timeout: {s:?}");
}

#[test]
fn an_observer_asking_a_bootstrap_server_fetches_from_the_leader_it_names_at_once() {
    use kafka_protocol::messages::fetch_response::NodeEndpoint;
    let mut e = observer();
    e.handle(leader_1_answer(1, None, 0), 10).expect("answer");
    // The leader goes silent (its Fetch, id 2, times out) for the fetch
    // timeout: the observer asks a bootstrap server, a follower of the same
    // leader.
    let timeout = RaftConfig::new(9, VoterSet::from_ids([1])).fetch_timeout_ms;
    let t = 10 + timeout;
    let failed = Event::RequestFailed {
        id: RequestId(2),
        failure: RequestFailure::Timeout,
    };
    // An observer never campaigns: its fetch timeout carries no jitter
    // (decisions D20).
    assert_eq!(e.next_deadline_ms(), t, "the fetch timeout, exactly");
    e.handle(failed, t).expect("failure");
    let commands = render(&e.handle(Event::Tick, e.next_deadline_ms()).expect("tick"));
    assert_eq!(
        commands,
        ["send -1 fetch epoch=1 offset=0 last_epoch=0"],
        "asks the first bootstrap server"
    );
    let not_leader = Event::Response {
        id: RequestId(3),
        response: RaftResponse::Fetch(
            FetchResponse::default()
                .with_node_endpoints(vec![
                    NodeEndpoint::default()
                        .with_node_id(1.into())
                        .with_host("node1".into())
                        .with_port(9093),
                ])
                .with_responses(vec![
                    fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                        fetch_response::PartitionData::default()
                            .with_error_code(6)
                            .with_current_leader(
                                fetch_response::LeaderIdAndEpoch::default()
                                    .with_leader_id(1.into())
                                    .with_leader_epoch(1),
                            ),
                    ]),
                ]),
        ),
    };
    let now = e.next_deadline_ms().min(t + 100);
    let commands = e.handle(not_leader, now).expect("answer");
    assert_eq!(
        render(&commands),
        ["send 1 fetch epoch=1 offset=0 last_epoch=0"],
        "the answer named the leader of this epoch: fetch from it at once"
    );
}
