//! Engine unit tests: each handler's exact command list, in order. Commands
//! are rendered as one short line each so that a list reads as a script.
//! This module holds the helpers; the tests are in one file per subject.

use bytes::Bytes;
use kafka_protocol::messages::{
    BeginQuorumEpochRequest, FetchRequest, FetchResponse, VoteRequest, VoteResponse,
    begin_quorum_epoch_request, fetch_request, fetch_response, vote_request, vote_response,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::{
    log::{MemoryLog, ReplicatedLog},
    record::encode_data_batch,
};

mod caught_up;
mod election;
mod imports;
mod integrity;
mod kraft_upgrade;
mod max_epoch;
mod membership;
mod replication;
mod snapshot;

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
    engine_with_config(config(node_id), log, stored)
}

/// [`engine_with`] with the configuration `c`.
fn engine_with_config(
    c: RaftConfig,
    log: MemoryLog,
    stored: Option<ElectionState>,
) -> (RaftEngine<MemoryLog>, Vec<String>) {
    let (e, commands) = RaftEngine::new(c, log, stored, Box::new(ChaCha8Rng::seed_from_u64(7)), 0)
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

/// Cluster "test"'s BeginQuorumEpoch request: `leader` leads `epoch`.
fn begin_quorum_epoch(leader: i32, epoch: i32) -> BeginQuorumEpochRequest {
    BeginQuorumEpochRequest::default()
        .with_cluster_id(Some("test".into()))
        .with_topics(vec![
            begin_quorum_epoch_request::TopicData::default().with_partitions(vec![
                begin_quorum_epoch_request::PartitionData::default()
                    .with_leader_id(leader.into())
                    .with_leader_epoch(epoch),
            ]),
        ])
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
    leader_lingering(log, config(1).append_linger_ms)
}

/// [`leader`] with `controller.quorum.append.linger.ms` = `linger_ms`.
fn leader_lingering(log: MemoryLog, linger_ms: u64) -> RaftEngine<MemoryLog> {
    let mut c = config(1);
    c.append_linger_ms = linger_ms;
    let (mut e, _) = engine_with_config(c, log, None);
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
    let mut e = elected_leader(c);
    e.handle(fetch_from(2, 1, 3, 1), 2_000).expect("fetch");
    assert_eq!(e.high_watermark(), Some(3));
    e
}

/// Node `c.node_id` (directory `dir(1)`, cluster `test`) elected leader of
/// epoch 1 with the votes of nodes 1 (pre-vote) and 3, its first batch
/// flushed at 2,000 ms; nobody has fetched yet.
fn elected_leader(mut c: RaftConfig) -> RaftEngine<MemoryLog> {
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
    e
}

/// Leader 1's Fetch answer `id` in epoch 1: high watermark `hw`, and one
/// record at offset `base` if given.
fn leader_1_answer(id: u64, base: Option<i64>, hw: i64) -> Event {
    let records =
        base.map(|b| encode_data_batch(b, 1, 0, &[Bytes::from_static(b"x")]).expect("encodes"));
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_high_watermark(hw)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(1.into())
                            .with_leader_epoch(1),
                    )
                    .with_records(records),
            ]),
        ])),
    }
}

/// Leader 2's Fetch answer `id` in epoch 3: high watermark 2 and `batch`.
fn leader_2_answer(id: u64, batch: Bytes) -> Event {
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_high_watermark(2)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(2.into())
                            .with_leader_epoch(3),
                    )
                    .with_records(Some(batch)),
            ]),
        ])),
    }
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
            ])
            .into(),
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
