//! Engine unit tests of epochs at `i32::MAX` (issue 19): a peer's Vote,
//! BeginQuorumEpoch or EndQuorumEpoch at that epoch is refused
//! INVALID_REQUEST before any transition (nothing is persisted), and a node
//! whose stored epoch is already `i32::MAX` does not overflow when its
//! election timeout expires.

use kafka_protocol::messages::{EndQuorumEpochRequest, end_quorum_epoch_request};

use super::*;

fn request(request: RaftRequest, api_version: i16) -> Event {
    Event::Request {
        handle: ReplyHandle(9),
        api_version,
        request,
    }
}

fn refused_without_a_transition(e: &mut RaftEngine<MemoryLog>, event: Event) -> Vec<String> {
    let before = e.epoch();
    let commands = render(&e.handle(event, 10).expect("handled, no panic"));
    assert!(
        commands
            .iter()
            .all(|c| !c.starts_with("persist") && !c.starts_with("role")),
        "{commands:?}"
    );
    assert_eq!(e.epoch(), before);
    commands
}

#[test]
fn a_vote_at_epoch_i32_max_is_refused_and_changes_nothing() {
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    for pre_vote in [false, true] {
        let commands = refused_without_a_transition(&mut e, vote(2, 1, i32::MAX, (0, 0), pre_vote));
        assert_eq!(
            commands,
            ["reply vote error=0/42 granted=false leader=-1 epoch=0"]
        );
    }
}

#[test]
fn begin_and_end_quorum_epoch_at_i32_max_are_refused_and_change_nothing() {
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let begin = begin_quorum_epoch(1, i32::MAX);
    let commands =
        refused_without_a_transition(&mut e, request(RaftRequest::BeginQuorumEpoch(begin), 1));
    assert_eq!(
        commands,
        ["reply begin_quorum_epoch error=42 leader=-1 epoch=0"]
    );
    let end = EndQuorumEpochRequest::default()
        .with_cluster_id(Some("test".into()))
        .with_topics(vec![
            end_quorum_epoch_request::TopicData::default().with_partitions(vec![
                end_quorum_epoch_request::PartitionData::default()
                    .with_leader_id(1.into())
                    .with_leader_epoch(i32::MAX),
            ]),
        ]);
    let commands =
        refused_without_a_transition(&mut e, request(RaftRequest::EndQuorumEpoch(end), 1));
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].contains("partition_index: 0, error_code: 42"),
        "{commands:?}"
    );
}

fn single_voter(stored: ElectionState) -> RaftEngine<MemoryLog> {
    let mut c = RaftConfig::new(1, VoterSet::from_ids([1]));
    c.cluster_id = Some("test".into());
    let (e, _) = RaftEngine::new(
        c,
        MemoryLog::new(),
        Some(stored),
        Box::new(ChaCha8Rng::seed_from_u64(7)),
        0,
    )
    .expect("engine starts");
    e
}

#[test]
fn a_stored_epoch_of_i32_max_does_not_overflow_when_the_election_timeout_expires() {
    // Unattached at i32::MAX: Prospective, then no Candidate at MAX + 1.
    let mut e = single_voter(ElectionState {
        epoch: i32::MAX,
        leader_id: None,
        voted_key: None,
    });
    for now in [5_000, 20_000, 60_000] {
        e.handle(Event::Tick, now).expect("no panic");
        assert_eq!(e.epoch(), i32::MAX);
    }
    // Resigned at i32::MAX: it stays resigned rather than move to MAX + 1.
    let mut e = single_voter(ElectionState {
        epoch: i32::MAX,
        leader_id: Some(1),
        voted_key: Some(ReplicaKey::of(1)),
    });
    for now in [5_000, 20_000, 60_000] {
        e.handle(Event::Tick, now).expect("no panic");
        assert_eq!(e.epoch(), i32::MAX);
    }
}
