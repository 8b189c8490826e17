//! Engine unit tests: each handler's exact command list, in order. Commands
//! are rendered as one short line each so that a list reads as a script.

use bytes::Bytes;
use kafka_protocol::messages::{
    BeginQuorumEpochRequest, FetchRequest, VoteRequest, VoteResponse, begin_quorum_epoch_request,
    fetch_request, vote_request, vote_response,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::{
    log::{MemoryLog, ReplicatedLog},
    record::encode_data_batch,
};

fn config(node_id: i32) -> RaftConfig {
    let mut c = RaftConfig::new(node_id, VoterSet::from_ids([1, 2, 3]));
    c.cluster_id = Some("test".into());
    c
}

fn engine_with(
    node_id: i32,
    log: MemoryLog,
    stored: Option<ElectionState>,
) -> (RaftEngine<MemoryLog>, Vec<String>) {
    let (e, commands) = RaftEngine::new(
        config(node_id),
        log,
        stored,
        Box::new(ChaCha8Rng::seed_from_u64(7)),
        0,
    )
    .expect("engine starts");
    (e, render(&commands))
}

fn render(commands: &[Command]) -> Vec<String> {
    commands.iter().map(render_one).collect()
}

fn render_one(c: &Command) -> String {
    match c {
        Command::Send {
            destination,
            request,
            ..
        } => {
            let what = match request {
                RaftRequest::Vote(r) => {
                    let p = &r.topics[0].partitions[0];
                    format!(
                        "vote epoch={} pre_vote={} last=({}, {})",
                        p.replica_epoch, p.pre_vote, p.last_offset, p.last_offset_epoch
                    )
                }
                RaftRequest::BeginQuorumEpoch(r) => {
                    format!(
                        "begin_quorum_epoch epoch={}",
                        r.topics[0].partitions[0].leader_epoch
                    )
                }
                RaftRequest::EndQuorumEpoch(r) => {
                    let p = &r.topics[0].partitions[0];
                    format!(
                        "end_quorum_epoch epoch={} successors={:?}",
                        p.leader_epoch, p.preferred_successors
                    )
                }
                RaftRequest::Fetch(r) => {
                    let p = &r.topics[0].partitions[0];
                    format!(
                        "fetch epoch={} offset={} last_epoch={}",
                        p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch
                    )
                }
                RaftRequest::ApiVersions(_) => "api_versions".into(),
                RaftRequest::FetchSnapshot(r) => {
                    let p = &r.topics[0].partitions[0];
                    format!(
                        "fetch_snapshot epoch={} id=({}, {}) position={}",
                        p.current_leader_epoch,
                        p.snapshot_id.end_offset,
                        p.snapshot_id.epoch,
                        p.position
                    )
                }
                other => format!("{other:?}"),
            };
            format!("send {} {what}", destination.node_id)
        }
        Command::Reply { response, .. } => match response {
            RaftResponse::Vote(r) => {
                let p = &r.topics[0].partitions[0];
                format!(
                    "reply vote error={}/{} granted={} leader={} epoch={}",
                    r.error_code, p.error_code, p.vote_granted, p.leader_id.0, p.leader_epoch
                )
            }
            RaftResponse::BeginQuorumEpoch(r) => {
                let p = &r.topics[0].partitions[0];
                format!(
                    "reply begin_quorum_epoch error={} leader={} epoch={}",
                    p.error_code, p.leader_id.0, p.leader_epoch
                )
            }
            RaftResponse::Fetch(r) => {
                let p = &r.responses[0].partitions[0];
                let batches = p
                    .records
                    .as_ref()
                    .map_or(0, |b| crate::record::iter_batches(b, false).count());
                let snapshot = if p.snapshot_id.end_offset >= 0 {
                    format!(
                        " snapshot=({}, {})",
                        p.snapshot_id.end_offset, p.snapshot_id.epoch
                    )
                } else {
                    String::new()
                };
                format!(
                    "reply fetch error={} hw={} diverging=({}, {}){snapshot} batches={}",
                    p.error_code,
                    p.high_watermark,
                    p.diverging_epoch.end_offset,
                    p.diverging_epoch.epoch,
                    batches
                )
            }
            RaftResponse::FetchSnapshot(r) => match r.topics.first().map(|t| &t.partitions[0]) {
                Some(p) => format!(
                    "reply fetch_snapshot error={}/{} id=({}, {}) size={} position={} bytes={}",
                    r.error_code,
                    p.error_code,
                    p.snapshot_id.end_offset,
                    p.snapshot_id.epoch,
                    p.size,
                    p.position,
                    p.unaligned_records.len()
                ),
                None => format!("reply fetch_snapshot error={}", r.error_code),
            },
            RaftResponse::AddRaftVoter(r) => format!("reply add_raft_voter error={}", r.error_code),
            RaftResponse::RemoveRaftVoter(r) => {
                format!("reply remove_raft_voter error={}", r.error_code)
            }
            other => format!("reply {other:?}"),
        },
        Command::PersistElectionState(s) => format!(
            "persist epoch={} leader={:?} voted={:?}",
            s.epoch,
            s.leader_id,
            s.voted_key.map(|k| k.id)
        ),
        Command::Flush => "flush".into(),
        Command::Committed { high_watermark } => format!("committed hw={high_watermark}"),
        Command::RoleChanged {
            role,
            epoch,
            leader_id,
        } => format!("role {role} epoch={epoch} leader={leader_id:?}"),
        Command::SnapshotInstalled { snapshot_id } => format!(
            "snapshot installed ({}, {})",
            snapshot_id.offset, snapshot_id.epoch
        ),
        Command::ShutdownComplete => "shutdown complete".into(),
    }
}

fn vote(to: i32, candidate: i32, epoch: i32, last: (i64, i32), pre_vote: bool) -> Event {
    Event::Request {
        handle: ReplyHandle(1),
        api_version: 2,
        request: RaftRequest::Vote(
            VoteRequest::default()
                .with_cluster_id(Some("test".into()))
                .with_voter_id(to.into())
                .with_topics(vec![vote_request::TopicData::default().with_partitions(
                    vec![
                        vote_request::PartitionData::default()
                            .with_replica_epoch(epoch)
                            .with_replica_id(candidate.into())
                            .with_last_offset(last.0)
                            .with_last_offset_epoch(last.1)
                            .with_pre_vote(pre_vote),
                    ],
                )]),
        ),
    }
}

fn vote_granted(id: u64, epoch: i32) -> Event {
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::Vote(VoteResponse::default().with_topics(vec![
            vote_response::TopicData::default().with_partitions(vec![
                vote_response::PartitionData::default()
                    .with_leader_id((-1).into())
                    .with_leader_epoch(epoch)
                    .with_vote_granted(true),
            ]),
        ])),
    }
}

fn fetch(replica: i32, epoch: i32, offset: i64, last_epoch: i32, max_wait_ms: i32) -> Event {
    Event::Request {
        handle: ReplyHandle(9),
        api_version: 17,
        request: RaftRequest::Fetch(
            FetchRequest::default()
                .with_cluster_id(Some("test".into()))
                .with_replica_id(replica.into())
                .with_max_wait_ms(max_wait_ms)
                .with_topics(vec![fetch_request::FetchTopic::default().with_partitions(
                    vec![
                    fetch_request::FetchPartition::default()
                        .with_current_leader_epoch(epoch)
                        .with_fetch_offset(offset)
                        .with_last_fetched_epoch(last_epoch)
                        .with_partition_max_bytes(1 << 20),
                ],
                )]),
        ),
    }
}

fn log_with_epochs(epochs: &[i32]) -> MemoryLog {
    let mut log = MemoryLog::new();
    for (i, epoch) in epochs.iter().enumerate() {
        let batch =
            encode_data_batch(i as i64, *epoch, 0, &[Bytes::from_static(b"x")]).expect("encodes");
        log.append_as_follower(batch).expect("appends");
    }
    log.flush().expect("flushes");
    log
}

/// Node 1 elected leader of epoch 1 with votes of 2 and 3 (request ids: 1, 2
/// pre-votes; 3, 4 votes).
fn leader(log: MemoryLog) -> RaftEngine<MemoryLog> {
    let (mut e, _) = engine_with(1, log, None);
    let deadline = e.next_deadline_ms();
    e.handle(Event::Tick, deadline).expect("tick");
    assert_eq!(e.role(), Role::Prospective);
    e.handle(vote_granted(1, e.epoch()), deadline)
        .expect("pre-vote");
    assert_eq!(e.role(), Role::Candidate);
    e.handle(vote_granted(3, e.epoch()), deadline)
        .expect("vote");
    assert_eq!(e.role(), Role::Leader);
    e
}

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
    let ok = Event::Response {
        id: RequestId(1),
        response: RaftResponse::Fetch(
            kafka_protocol::messages::FetchResponse::default().with_responses(vec![
                kafka_protocol::messages::fetch_response::FetchableTopicResponse::default()
                    .with_partitions(vec![
                    kafka_protocol::messages::fetch_response::PartitionData::default()
                        .with_high_watermark(-1)
                        .with_current_leader(
                            kafka_protocol::messages::fetch_response::LeaderIdAndEpoch::default()
                                .with_leader_id(1.into())
                                .with_leader_epoch(1),
                        ),
                ]),
            ]),
        ),
    };
    let commands = e.handle(ok, 100).expect("fetch response");
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
    // After the fetch timeout without a fetch, the follower becomes Prospective.
    let commands = e.handle(Event::Tick, 2_100).expect("tick");
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

#[test]
fn begin_quorum_epoch_makes_an_unattached_voter_follow_and_fetch() {
    let (mut e, _) = engine_with(2, MemoryLog::new(), None);
    let request = BeginQuorumEpochRequest::default()
        .with_cluster_id(Some("test".into()))
        .with_topics(vec![
            begin_quorum_epoch_request::TopicData::default().with_partitions(vec![
                begin_quorum_epoch_request::PartitionData::default()
                    .with_leader_id(1.into())
                    .with_leader_epoch(3),
            ]),
        ]);
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

// ---- KIP-853 -----------------------------------------------------------------

fn dir(id: i32) -> uuid::Uuid {
    uuid::Uuid::from_u128(id as u128)
}

fn kip853_voters() -> VoterSet {
    VoterSet::new((1..=3).map(|id| {
        Voter::new(
            ReplicaKey::with_directory(id, dir(id)),
            Some(Endpoint::new("CONTROLLER", format!("node{id}"), 9093)),
        )
    }))
}

/// Node 1 leading epoch 1 of a kraft.version 1 quorum {1, 2, 3}, its first
/// batch (offsets 0..=2) flushed and fetched by node 2 (high watermark 3).
fn kip853_leader() -> RaftEngine<MemoryLog> {
    let mut c = RaftConfig::new(1, kip853_voters());
    c.kraft_version = 1;
    c.directory_id = Some(dir(1));
    c.cluster_id = Some("test".into());
    let (mut e, _) = RaftEngine::new(
        c,
        MemoryLog::new(),
        None,
        Box::new(ChaCha8Rng::seed_from_u64(7)),
        0,
    )
    .expect("starts");
    let t = e.next_deadline_ms();
    e.handle(Event::Tick, t).expect("tick");
    e.handle(vote_granted(1, 0), t).expect("pre-vote");
    e.handle(vote_granted(3, 1), t).expect("vote");
    assert_eq!(e.role(), Role::Leader);
    e.handle(Event::Flush, 2_000).expect("flush");
    e.handle(fetch_from(2, 1, 3, 1), 2_000).expect("fetch");
    assert_eq!(e.high_watermark(), Some(3));
    e
}

fn fetch_from(replica: i32, epoch: i32, offset: i64, last_epoch: i32) -> Event {
    let Event::Request {
        handle,
        api_version,
        request: RaftRequest::Fetch(mut r),
    } = fetch(replica, epoch, offset, last_epoch, 0)
    else {
        unreachable!("fetch builds a fetch request")
    };
    r.topics[0].partitions[0].replica_directory_id = dir(replica);
    Event::Request {
        handle,
        api_version,
        request: RaftRequest::Fetch(r),
    }
}

fn admin(request: RaftRequest) -> Event {
    Event::Request {
        handle: ReplyHandle(77),
        api_version: 0,
        request,
    }
}

fn add_voter(id: i32) -> RaftRequest {
    use kafka_protocol::messages::{AddRaftVoterRequest, add_raft_voter_request::Listener};
    RaftRequest::AddRaftVoter(
        AddRaftVoterRequest::default()
            .with_cluster_id(Some("test".into()))
            .with_timeout_ms(5_000)
            .with_voter_id(id)
            .with_voter_directory_id(dir(id))
            .with_listeners(vec![
                Listener::default()
                    .with_name("CONTROLLER".into())
                    .with_host("node4".into())
                    .with_port(9093),
            ]),
    )
}

fn remove_voter(id: i32, directory: uuid::Uuid) -> RaftRequest {
    RaftRequest::RemoveRaftVoter(
        kafka_protocol::messages::RemoveRaftVoterRequest::default()
            .with_cluster_id(Some("test".into()))
            .with_voter_id(id)
            .with_voter_directory_id(directory),
    )
}

fn api_versions(id: u64, min: i16, max: i16) -> Event {
    use kafka_protocol::messages::{
        ApiVersionsResponse, api_versions_response::SupportedFeatureKey,
    };
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::ApiVersions(
            ApiVersionsResponse::default().with_supported_features(vec![
                SupportedFeatureKey::default()
                    .with_name("kraft.version".into())
                    .with_min_version(min)
                    .with_max_version(max),
            ]),
        ),
    }
}

#[test]
fn the_first_leader_writes_kraft_version_and_voters_with_its_leader_change() {
    // KIP-853: the bootstrap voter set goes into the log, in the batch of
    // the first LeaderChange.
    let e = kip853_leader();
    let info = e.log().read(0, usize::MAX).expect("read");
    let (_, first) = crate::record::iter_batches(&info.records, true)
        .next()
        .expect("one batch")
        .expect("valid");
    let records = crate::record::DecodedBatch::decode(first)
        .expect("decodes")
        .control_records()
        .expect("control");
    let types: Vec<_> = records.iter().map(|r| r.record_type().name()).collect();
    assert_eq!(types, ["LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS"]);
    let crate::record::ControlRecord::Voters(v) = &records[2] else {
        panic!("voters record expected")
    };
    assert_eq!(VoterSet::from_record(v), kip853_voters());
    assert_eq!(e.status().kraft_version, 1);
}

#[test]
fn add_raft_voter_asks_for_api_versions_appends_and_answers_once_committed() {
    let mut e = kip853_leader();
    // Node 4 fetches as an observer, caught up.
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    assert_eq!(render(&commands), ["send 4 api_versions"]);
    let Command::Send { id, .. } = &commands[0] else {
        unreachable!("a send")
    };
    let commands = e
        .handle(api_versions(id.0, 0, 1), 2_030)
        .expect("api versions");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert_eq!(e.voters().len(), 4, "a change takes effect when appended");
    assert!(
        e.status().uncommitted_voter_change,
        "appended, not committed"
    );
    // A second change waits for this one.
    let commands = e
        .handle(admin(remove_voter(2, dir(2))), 2_031)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=7"]);
    e.handle(Event::Flush, 2_060).expect("flush");
    // Committing needs 3 of the 4 voters now: 1 (leader), 2 and 4.
    let commands = e.handle(fetch_from(2, 1, 4, 1), 2_070).expect("fetch");
    assert_eq!(
        render(&commands),
        ["reply fetch error=0 hw=3 diverging=(-1, -1) batches=0"]
    );
    let commands = e.handle(fetch_from(4, 1, 4, 1), 2_080).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
            "reply add_raft_voter error=0",
        ]
    );
    assert!(!e.status().uncommitted_voter_change, "committed");
}

#[test]
fn add_raft_voter_refuses_a_voter_that_is_not_caught_up_or_already_a_voter() {
    let mut e = kip853_leader();
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    assert_eq!(render(&commands), ["reply add_raft_voter error=7"]);
    let commands = e.handle(admin(add_voter(2)), 2_021).expect("add");
    assert_eq!(render(&commands), ["reply add_raft_voter error=126"]);
}

#[test]
fn a_new_voter_without_the_cluster_kraft_version_is_an_invalid_request() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 3, 1), 2_010).expect("fetch");
    let commands = e.handle(admin(add_voter(4)), 2_020).expect("add");
    let Command::Send { id, .. } = &commands[0] else {
        unreachable!("a send")
    };
    let commands = e
        .handle(api_versions(id.0, 0, 0), 2_030)
        .expect("api versions");
    assert_eq!(render(&commands), ["reply add_raft_voter error=42"]);
    assert_eq!(e.voters().len(), 3);
}

#[test]
fn remove_raft_voter_with_the_wrong_directory_id_is_voter_not_found() {
    let mut e = kip853_leader();
    let commands = e
        .handle(admin(remove_voter(2, dir(9))), 2_020)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=127"]);
}

#[test]
fn voter_changes_under_kraft_version_0_are_unsupported() {
    let mut e = leader(MemoryLog::new());
    e.handle(Event::Flush, 2_000).expect("flush");
    e.handle(fetch(2, 1, 1, 1, 0), 2_000).expect("fetch");
    let commands = e
        .handle(admin(remove_voter(2, uuid::Uuid::nil())), 2_020)
        .expect("remove");
    assert_eq!(render(&commands), ["reply remove_raft_voter error=35"]);
}

#[test]
fn a_leader_whose_removal_commits_resigns() {
    let mut e = kip853_leader();
    e.handle(fetch_from(3, 1, 3, 1), 2_005).expect("fetch");
    let commands = e
        .handle(admin(remove_voter(1, dir(1))), 2_010)
        .expect("remove");
    assert!(render(&commands).is_empty(), "{commands:?}");
    assert!(!e.is_voter());
    assert_eq!(e.role(), Role::Leader);
    // The new set {2, 3} commits the record without counting the leader.
    e.handle(fetch_from(2, 1, 4, 1), 2_020).expect("fetch");
    let commands = e.handle(fetch_from(3, 1, 4, 1), 2_030).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=4",
            "reply fetch error=0 hw=4 diverging=(-1, -1) batches=0",
            "reply remove_raft_voter error=0",
            "role resigned epoch=1 leader=Some(1)",
            "send 2 end_quorum_epoch epoch=1 successors=[2, 3]",
            "send 3 end_quorum_epoch epoch=1 successors=[2, 3]",
        ]
    );
}

#[test]
fn describe_quorum_reports_voters_and_observers_with_their_fetch_state() {
    let mut e = kip853_leader();
    e.handle(fetch_from(4, 1, 2, 1), 2_010).expect("fetch");
    let commands = e
        .handle(
            Event::Request {
                handle: ReplyHandle(3),
                api_version: 2,
                request: RaftRequest::DescribeQuorum(Default::default()),
            },
            2_020,
        )
        .expect("describe");
    let [
        Command::Reply {
            response: RaftResponse::DescribeQuorum(r),
            ..
        },
    ] = commands.as_slice()
    else {
        panic!("one DescribeQuorum reply: {commands:?}")
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!((p.leader_id.0, p.leader_epoch, p.high_watermark), (1, 1, 3));
    let voters: Vec<_> = p
        .current_voters
        .iter()
        .map(|v| (v.replica_id.0, v.log_end_offset, v.last_fetch_timestamp))
        .collect();
    assert_eq!(voters, [(1, 3, 2_020), (2, 3, 2_000), (3, -1, -1)]);
    let observers: Vec<_> = p
        .observers
        .iter()
        .map(|v| (v.replica_id.0, v.replica_directory_id, v.log_end_offset))
        .collect();
    assert_eq!(observers, [(4, dir(4), 2)]);
    assert_eq!(r.nodes.len(), 3);
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
    let successor = BeginQuorumEpochRequest::default()
        .with_cluster_id(Some("test".into()))
        .with_topics(vec![
            begin_quorum_epoch_request::TopicData::default().with_partitions(vec![
                begin_quorum_epoch_request::PartitionData::default()
                    .with_leader_id(2.into())
                    .with_leader_epoch(2),
            ]),
        ]);
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
fn update_raft_voter_changes_a_voters_endpoints_once_committed() {
    use kafka_protocol::messages::{
        UpdateRaftVoterRequest,
        update_raft_voter_request::{KRaftVersionFeature, Listener},
    };
    let update = |directory: uuid::Uuid| {
        RaftRequest::UpdateRaftVoter(
            UpdateRaftVoterRequest::default()
                .with_cluster_id(Some("test".into()))
                .with_current_leader_epoch(1)
                .with_voter_id(2)
                .with_voter_directory_id(directory)
                .with_listeners(vec![
                    Listener::default()
                        .with_name("CONTROLLER".into())
                        .with_host("node2.new".into())
                        .with_port(19093),
                ])
                .with_k_raft_version_feature(
                    KRaftVersionFeature::default()
                        .with_min_supported_version(0)
                        .with_max_supported_version(1),
                ),
        )
    };
    let code = |commands: &[Command]| match commands {
        [
            Command::Reply {
                response: RaftResponse::UpdateRaftVoter(r),
                ..
            },
        ] => r.error_code,
        other => panic!("one UpdateRaftVoter reply expected: {other:?}"),
    };
    let mut e = kip853_leader();
    let commands = e.handle(admin(update(dir(9))), 2_010).expect("update");
    assert_eq!(code(&commands), 127);
    let commands = e.handle(admin(update(dir(2))), 2_020).expect("update");
    assert!(commands.is_empty(), "{commands:?}");
    let endpoint = &e.voters().get(2).expect("voter 2").endpoints[0];
    assert_eq!(
        (endpoint.host.as_str(), endpoint.port),
        ("node2.new", 19093)
    );
    e.handle(Event::Flush, 2_050).expect("flush");
    let commands = e.handle(fetch_from(2, 1, 4, 1), 2_060).expect("fetch");
    assert_eq!(code(&commands[2..]), 0, "{:?}", render(&commands));
}

#[path = "tests_snapshot.rs"]
mod snapshot;
