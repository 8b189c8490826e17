//! Engine unit tests of elections: votes and pre-votes (KIP-595, KIP-996),
//! the Prospective -> Candidate -> Leader path, restarts from the stored
//! election state, BeginQuorumEpoch, and observers asking the bootstrap
//! servers (KIP-853).

use super::*;

#[test]
fn a_new_voter_starts_unattached_and_persists_nothing() {
    let (e, commands) = engine_with(2, MemoryLog::new(), None);
    assert_eq!(commands, ["role unattached epoch=0 leader=None"]);
    assert!(e.next_deadline_ms() >= 1_000 && e.next_deadline_ms() < 2_000);
}

#[test]
fn a_vote_is_granted_only_after_the_vote_is_persisted() {
    // KIP-595: one vote per epoch, durable before the reply.
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let commands = e.handle(vote(2, 1, 1, (0, 0), false), 10).expect("handles");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=1 leader=None voted=None",
            "role unattached epoch=1 leader=None",
            "persist epoch=1 leader=None voted=Some(1)",
            "reply vote error=0/0 granted=true leader=-1 epoch=1",
        ]
    );
    // A second candidate of the same epoch is refused.
    let commands = e.handle(vote(2, 3, 1, (0, 0), false), 11).expect("handles");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/0 granted=false leader=-1 epoch=1"]
    );
}

#[test]
fn a_vote_is_rejected_for_a_candidate_with_a_stale_log() {
    let (mut e, _) = engine_with(
        2,
        log_with_epochs(&[1, 1]),
        Some(ElectionState {
            epoch: 1,
            leader_id: None,
            voted_key: None,
        }),
    );
    // Candidate's last epoch 0 < local last epoch 1: not up to date.
    let commands = e.handle(vote(2, 3, 2, (5, 0), false), 10).expect("handles");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=2 leader=None voted=None",
            "role unattached epoch=2 leader=None",
            "reply vote error=0/0 granted=false leader=-1 epoch=2",
        ]
    );
}

#[test]
fn a_vote_from_an_older_epoch_is_fenced() {
    let stored = ElectionState {
        epoch: 4,
        leader_id: None,
        voted_key: None,
    };
    let (mut e, _) = engine_with(2, MemoryLog::new(), Some(stored));
    let commands = e.handle(vote(2, 3, 3, (0, 0), false), 10).expect("handles");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/74 granted=false leader=-1 epoch=4"]
    );
}

#[test]
fn a_pre_vote_is_granted_without_persisting_or_raising_the_epoch() {
    // KIP-996: a pre-vote grants nothing persistent.
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let commands = e.handle(vote(2, 1, 0, (0, 0), true), 10).expect("handles");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/0 granted=true leader=-1 epoch=0"]
    );
    assert_eq!(e.epoch(), 0);
}

#[test]
fn a_follower_that_heard_from_its_leader_recently_rejects_a_pre_vote() {
    let stored = ElectionState {
        epoch: 1,
        leader_id: Some(1),
        voted_key: None,
    };
    let (mut e, commands) = engine_with(2, MemoryLog::new(), Some(stored));
    assert_eq!(
        commands,
        [
            "role follower epoch=1 leader=Some(1)",
            "send 1 fetch epoch=1 offset=0 last_epoch=0"
        ]
    );
    let commands = e
        .handle(leader_1_answer(1, None, -1), 100)
        .expect("fetch response");
    assert_eq!(
        render(&commands),
        ["send 1 fetch epoch=1 offset=0 last_epoch=0"]
    );
    let commands = e
        .handle(vote(2, 3, 1, (0, 0), true), 200)
        .expect("pre-vote");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/0 granted=false leader=1 epoch=1"]
    );
    // Once the fetch timeout has passed since that answer, a pre-vote is
    // granted, though the follower has not campaigned yet.
    let commands = e
        .handle(vote(2, 3, 1, (0, 0), true), 2_100)
        .expect("pre-vote");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/0 granted=true leader=1 epoch=1"]
    );
    // After the fetch timeout and its jitter (under a tenth of it) without a
    // fetch, the follower becomes Prospective.
    let deadline = e.next_deadline_ms();
    assert!((2_100..2_300).contains(&deadline), "deadline {deadline}");
    let commands = e.handle(Event::Tick, deadline).expect("tick");
    assert_eq!(
        render(&commands),
        [
            "role prospective epoch=1 leader=None",
            "send 1 vote epoch=1 pre_vote=true last=(0, 0)",
            "send 3 vote epoch=1 pre_vote=true last=(0, 0)",
        ]
    );
}

#[test]
fn an_election_goes_prospective_then_candidate_then_leader() {
    let (mut e, _) = engine_with(1, MemoryLog::new(), None);
    let t = e.next_deadline_ms();
    let commands = e.handle(Event::Tick, t).expect("tick");
    assert_eq!(
        render(&commands),
        [
            "role prospective epoch=0 leader=None",
            "send 2 vote epoch=0 pre_vote=true last=(0, 0)",
            "send 3 vote epoch=0 pre_vote=true last=(0, 0)",
        ]
    );
    let commands = e.handle(vote_granted(1, 0), t + 1).expect("pre-vote");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=1 leader=None voted=Some(1)",
            "role candidate epoch=1 leader=None",
            "send 2 vote epoch=1 pre_vote=false last=(0, 0)",
            "send 3 vote epoch=1 pre_vote=false last=(0, 0)",
        ]
    );
    let commands = e.handle(vote_granted(4, 1), t + 2).expect("vote");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=1 leader=Some(1) voted=Some(1)",
            "role leader epoch=1 leader=Some(1)",
            "flush",
            "send 2 begin_quorum_epoch epoch=1",
            "send 3 begin_quorum_epoch epoch=1",
        ]
    );
    // The LeaderChange batch is the first batch of the epoch.
    assert_eq!(e.log().end_offset(), crate::log::OffsetAndEpoch::new(1, 1));
    // No high watermark until it is committed by a majority.
    let commands = e.handle(Event::Flush, t + 3).expect("flush");
    assert!(render(&commands).is_empty());
    assert_eq!(e.high_watermark(), None);
}

#[test]
fn begin_quorum_epoch_makes_an_unattached_voter_follow_and_fetch() {
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let request = begin_quorum_epoch(1, 3);
    let commands = e
        .handle(
            Event::Request {
                handle: ReplyHandle(5),
                api_version: 1,
                request: RaftRequest::BeginQuorumEpoch(request),
            },
            10,
        )
        .expect("handles");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=3 leader=Some(1) voted=None",
            "role follower epoch=3 leader=Some(1)",
            "reply begin_quorum_epoch error=0 leader=1 epoch=3",
            "send 1 fetch epoch=3 offset=0 last_epoch=0",
        ]
    );
}

#[test]
fn a_node_whose_file_says_it_led_restarts_resigned() {
    let stored = ElectionState {
        epoch: 5,
        leader_id: Some(2),
        voted_key: Some(ReplicaKey::of(2)),
    };
    let (e, commands) = engine_with(2, MemoryLog::new(), Some(stored));
    assert_eq!(e.role(), Role::Resigned);
    assert_eq!(
        commands,
        [
            "role resigned epoch=5 leader=Some(2)",
            "send 1 end_quorum_epoch epoch=5 successors=[]",
            "send 3 end_quorum_epoch epoch=5 successors=[]",
        ]
    );
}

#[test]
fn an_observer_never_campaigns_and_asks_the_bootstrap_servers() {
    let mut c = RaftConfig::new(9, VoterSet::from_ids([1, 2, 3]));
    c.bootstrap_servers = vec![Endpoint::new("CONTROLLER", "a", 9093)];
    let (mut e, commands) = RaftEngine::new(
        c,
        MemoryLog::new(),
        None,
        Box::new(ChaCha8Rng::seed_from_u64(1)),
        0,
    )
    .expect("starts");
    assert_eq!(
        render(&commands),
        [
            "role unattached epoch=0 leader=None",
            "send -1 fetch epoch=0 offset=0 last_epoch=0"
        ]
    );
    for t in (1_000..30_000).step_by(1_000) {
        e.handle(Event::Tick, t).expect("tick");
        assert_eq!(e.role(), Role::Unattached);
    }
}

#[test]
fn a_vote_addressed_to_another_voter_is_refused_with_invalid_voter_key() {
    // KIP-853: the request names the voter it is meant for.
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let commands = e.handle(vote(3, 1, 1, (0, 0), false), 10).expect("handles");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/125 granted=false leader=-1 epoch=0"]
    );
    assert_eq!(e.epoch(), 0);
}

#[test]
fn a_prospective_voter_persists_a_vote_it_grants_before_replying() {
    // Node 2 times out unattached at epoch 1 (no leader known), then receives
    // a real vote of epoch 1 from node 3.
    let stored = ElectionState {
        epoch: 1,
        leader_id: None,
        voted_key: None,
    };
    let (mut e, _) = engine_with(2, MemoryLog::new(), Some(stored));
    let t = e.next_deadline_ms();
    e.handle(Event::Tick, t).expect("tick");
    assert_eq!(e.role(), Role::Prospective);
    let commands = e.handle(vote(2, 3, 1, (0, 0), false), t + 1).expect("vote");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=1 leader=None voted=Some(3)",
            "reply vote error=0/0 granted=true leader=-1 epoch=1",
        ]
    );
    let commands = e.handle(vote(2, 1, 1, (0, 0), false), t + 2).expect("vote");
    assert_eq!(
        render(&commands),
        ["reply vote error=0/0 granted=false leader=-1 epoch=1"]
    );
}

#[test]
fn an_unattached_voter_asks_the_bootstrap_servers_and_follows_the_leader_they_name() {
    // KIP-853: a voter that lost the leader falls back to the bootstrap servers.
    use kafka_protocol::messages::{FetchResponse, fetch_response};
    let mut c = config(1);
    c.bootstrap_servers = vec![
        Endpoint::new("CONTROLLER", "node2", 9093),
        Endpoint::new("CONTROLLER", "node3", 9093),
    ];
    let (mut e, commands) = RaftEngine::new(
        c,
        MemoryLog::new(),
        None,
        Box::new(ChaCha8Rng::seed_from_u64(3)),
        0,
    )
    .expect("starts");
    assert_eq!(
        render(&commands),
        [
            "role unattached epoch=0 leader=None",
            "send -1 fetch epoch=0 offset=0 last_epoch=0"
        ]
    );
    let fenced = Event::Response {
        id: RequestId(1),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_error_code(74)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(2.into())
                            .with_leader_epoch(3),
                    ),
            ]),
        ])),
    };
    let commands = e.handle(fenced, 5).expect("response");
    assert_eq!(
        render(&commands),
        [
            "persist epoch=3 leader=Some(2) voted=None",
            "role follower epoch=3 leader=Some(2)",
            "send 2 fetch epoch=3 offset=0 last_epoch=0",
        ]
    );
}

#[test]
fn an_observer_with_unflushed_appends_flushes_before_it_asks_the_bootstrap_servers() {
    // Issue 23: a Fetch reports the log end as this replica's offset, so it
    // goes only from a flushed end, in the Unattached state too; the flush's
    // end lets it go (the Unattached arm of the engine's `on_flushed`).
    let mut log = MemoryLog::new();
    let batch = encode_data_batch(0, 0, 0, &[Bytes::from_static(b"x")]).expect("encodes");
    log.append_as_follower(batch).expect("appends");
    assert_eq!(log.flushed_end_offset(), 0);
    let mut c = RaftConfig::new(9, VoterSet::from_ids([1, 2, 3]));
    c.bootstrap_servers = vec![Endpoint::new("CONTROLLER", "a", 9093)];
    let (mut e, commands) =
        RaftEngine::new(c, log, None, Box::new(ChaCha8Rng::seed_from_u64(1)), 0).expect("starts");
    assert_eq!(
        render(&commands),
        ["role unattached epoch=0 leader=None", "flush"],
        "no Fetch from offset 1 while it is not flushed"
    );
    let commands = e.handle(Event::Flush, 1).expect("flush");
    assert_eq!(
        render(&commands),
        ["send -1 fetch epoch=0 offset=1 last_epoch=0"]
    );
}

#[test]
fn voters_their_leader_answered_in_the_same_millisecond_campaign_at_different_times() {
    // Two followers whose parked fetches the leader answered together would
    // become Prospective together, grant each other's pre-vote and split
    // the vote. Each draws a jitter under a tenth of the fetch timeout.
    let stored = ElectionState {
        epoch: 1,
        leader_id: Some(1),
        voted_key: None,
    };
    let mut deadlines = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let (mut e, _) = RaftEngine::new(
            config(2),
            MemoryLog::new(),
            Some(stored),
            Box::new(ChaCha8Rng::seed_from_u64(seed)),
            0,
        )
        .expect("engine starts");
        e.handle(leader_1_answer(1, None, -1), 100)
            .expect("fetch response");
        let deadline = e.next_deadline_ms();
        assert!(
            (2_100..2_300).contains(&deadline),
            "seed {seed}: deadline {deadline}"
        );
        e.handle(Event::Tick, deadline - 1).expect("tick");
        assert_eq!(e.role(), Role::Follower, "seed {seed}: before its deadline");
        e.handle(Event::Tick, deadline).expect("tick");
        assert_eq!(e.role(), Role::Prospective, "seed {seed}: at its deadline");
        deadlines.insert(deadline);
    }
    assert!(deadlines.len() >= 15, "20 seeds drew only {deadlines:?}");
}
