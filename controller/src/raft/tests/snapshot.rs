//! Engine unit tests of KIP-630: FetchSnapshot served by the leader, a
//! follower fetching and installing a snapshot, log cleaning, and voter sets
//! read from snapshots.

use kafka_protocol::messages::{
    FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse, fetch_response,
    fetch_snapshot_request, fetch_snapshot_response,
};

use super::*;
use crate::{
    log::{OffsetAndEpoch, RetentionConfig, snapshot::encode_snapshot},
    record::{ControlRecord, KRaftVersionRecord},
};

/// A Kafka-framed snapshot with a KRaftVersion(1) and Voters record when
/// `voters` is given, and one data record.
fn snapshot_bytes(epoch: i32, voters: Option<&VoterSet>) -> Bytes {
    let extras = voters
        .map(|v| {
            vec![
                ControlRecord::KRaftVersion(
                    KRaftVersionRecord::default()
                        .with_version(0)
                        .with_k_raft_version(1),
                ),
                ControlRecord::Voters(v.to_record()),
            ]
        })
        .unwrap_or_default();
    encode_snapshot(
        epoch,
        1_000,
        1_000,
        &extras,
        &[Bytes::from_static(b"state")],
    )
    .expect("encodes")
}

/// A log of `n` one-record batches of epoch 1, a snapshot at `at` and one at
/// `n`, cleaned below the snapshot at `n` when `clean`.
fn log_with_snapshots(n: i64, at: i64, clean: bool) -> MemoryLog {
    let mut log = log_with_epochs(&vec![1; usize::try_from(n).expect("small")]);
    log.write_snapshot(OffsetAndEpoch::new(at, 1), &snapshot_bytes(1, None))
        .expect("snapshot");
    log.write_snapshot(OffsetAndEpoch::new(n, 1), &snapshot_bytes(1, None))
        .expect("snapshot");
    if clean {
        assert!(
            log.delete_before_snapshot(OffsetAndEpoch::new(n, 1))
                .expect("cleans")
        );
    }
    log
}

fn fetch_snapshot(epoch: i32, id: (i64, i32), position: i64, max_bytes: i32) -> Event {
    Event::Request {
        handle: ReplyHandle(11),
        api_version: 1,
        request: RaftRequest::FetchSnapshot(
            FetchSnapshotRequest::default()
                .with_cluster_id(Some("test".into()))
                .with_replica_id(2.into())
                .with_max_bytes(max_bytes)
                .with_topics(vec![
                    fetch_snapshot_request::TopicSnapshot::default()
                        .with_name(crate::raft::core::topic_name())
                        .with_partitions(vec![
                            fetch_snapshot_request::PartitionSnapshot::default()
                                .with_current_leader_epoch(epoch)
                                .with_snapshot_id(
                                    fetch_snapshot_request::SnapshotId::default()
                                        .with_end_offset(id.0)
                                        .with_epoch(id.1),
                                )
                                .with_position(position),
                        ]),
                ]),
        ),
    }
}

#[test]
fn the_leader_serves_a_snapshot_in_chunks_and_refuses_bad_ids_positions_and_epochs() {
    // KIP-630: FetchSnapshot answers by id and byte position.
    let log = log_with_snapshots(4, 2, false);
    let size = log
        .read_snapshot(OffsetAndEpoch::new(4, 1))
        .expect("reads")
        .expect("exists")
        .len();
    let mut e = leader(log);
    let epoch = e.epoch();
    let first = e
        .handle(fetch_snapshot(epoch, (4, 1), 0, 10), 10)
        .expect("handles");
    assert_eq!(
        render(&first),
        [format!(
            "reply fetch_snapshot error=0/0 id=(4, 1) size={size} position=0 bytes=10"
        )]
    );
    let rest = e
        .handle(fetch_snapshot(epoch, (4, 1), 10, 1 << 20), 10)
        .expect("handles");
    assert_eq!(
        render(&rest),
        [format!(
            "reply fetch_snapshot error=0/0 id=(4, 1) size={size} position=10 bytes={}",
            size - 10
        )]
    );
    let cases = [
        (fetch_snapshot(epoch, (4, 1), size as i64, 10), "0/99"),
        (fetch_snapshot(epoch, (4, 1), -1, 10), "0/99"),
        (fetch_snapshot(epoch, (3, 1), 0, 10), "0/98"),
        (fetch_snapshot(epoch, (0, 0), 0, 10), "0/98"),
        (fetch_snapshot(epoch - 1, (4, 1), 0, 10), "0/74"),
        (fetch_snapshot(epoch + 1, (4, 1), 0, 10), "0/75"),
    ];
    for (request, error) in cases {
        let reply = render(&e.handle(request, 10).expect("handles"));
        assert!(
            reply[0].starts_with(&format!("reply fetch_snapshot error={error} ")),
            "{reply:?}, expected {error}"
        );
    }
}

#[test]
fn a_fetch_below_the_log_start_or_from_an_empty_log_gets_the_latest_snapshot_id() {
    let mut e = leader(log_with_snapshots(4, 2, true));
    assert_eq!(e.log().start_offset(), 4);
    let epoch = e.epoch();
    for offset in [0, 3] {
        let reply = render(
            &e.handle(fetch(2, epoch, offset, 1, 0), 10)
                .expect("handles"),
        );
        assert_eq!(
            reply,
            ["reply fetch error=0 hw=-1 diverging=(-1, -1) snapshot=(4, 1) batches=0"],
            "fetch offset {offset}"
        );
    }
}

/// A follower of leader 1 in epoch 1 with an empty log, its first Fetch
/// (request id 1) in flight.
fn empty_follower() -> RaftEngine<MemoryLog> {
    let stored = ElectionState {
        epoch: 1,
        leader_id: Some(1),
        voted_key: None,
    };
    let (e, commands) = engine_with(2, MemoryLog::new(), Some(stored));
    assert_eq!(commands[1], "send 1 fetch epoch=1 offset=0 last_epoch=0");
    e
}

fn fetch_response_with_snapshot(id: u64, snapshot: (i64, i32)) -> Event {
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_high_watermark(snapshot.0)
                    .with_log_start_offset(snapshot.0)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(1.into())
                            .with_leader_epoch(1),
                    )
                    .with_snapshot_id(
                        fetch_response::SnapshotId::default()
                            .with_end_offset(snapshot.0)
                            .with_epoch(snapshot.1),
                    ),
            ]),
        ])),
    }
}

fn snapshot_chunk(
    id: u64,
    snapshot: (i64, i32),
    size: usize,
    position: usize,
    bytes: &[u8],
) -> Event {
    Event::Response {
        id: RequestId(id),
        response: RaftResponse::FetchSnapshot(FetchSnapshotResponse::default().with_topics(vec![
            fetch_snapshot_response::TopicSnapshot::default().with_partitions(vec![
                fetch_snapshot_response::PartitionSnapshot::default()
                    .with_current_leader(
                        fetch_snapshot_response::LeaderIdAndEpoch::default()
                            .with_leader_id(1.into())
                            .with_leader_epoch(1),
                    )
                    .with_snapshot_id(
                        fetch_snapshot_response::SnapshotId::default()
                            .with_end_offset(snapshot.0)
                            .with_epoch(snapshot.1),
                    )
                    .with_size(size as i64)
                    .with_position(position as i64)
                    .with_unaligned_records(Bytes::copy_from_slice(bytes)),
            ]),
        ])),
    }
}

#[test]
fn a_follower_below_the_leaders_log_start_fetches_the_snapshot_in_chunks_and_installs_it() {
    // KIP-630: Fetch names the snapshot; FetchSnapshot by position until the
    // last byte; then the log restarts at the snapshot's end and Fetch resumes.
    let voters = VoterSet::from_ids([1, 2, 3, 4]);
    let bytes = snapshot_bytes(1, Some(&voters));
    let mut e = empty_follower();
    let commands = e
        .handle(fetch_response_with_snapshot(1, (100, 1)), 10)
        .expect("handles");
    assert_eq!(
        render(&commands),
        ["send 1 fetch_snapshot epoch=1 id=(100, 1) position=0"]
    );
    let commands = e
        .handle(
            snapshot_chunk(2, (100, 1), bytes.len(), 0, &bytes[..20]),
            11,
        )
        .expect("handles");
    assert_eq!(
        render(&commands),
        ["send 1 fetch_snapshot epoch=1 id=(100, 1) position=20"]
    );
    assert_eq!(
        e.log().start_offset(),
        0,
        "nothing installed before the last byte"
    );
    let commands = e
        .handle(
            snapshot_chunk(3, (100, 1), bytes.len(), 20, &bytes[20..]),
            12,
        )
        .expect("handles");
    assert_eq!(
        render(&commands),
        [
            "snapshot installed (100, 1)",
            "committed hw=100",
            "send 1 fetch epoch=1 offset=100 last_epoch=1",
        ]
    );
    assert_eq!(e.log().start_offset(), 100);
    assert_eq!(
        e.log().latest_snapshot_id(),
        Some(OffsetAndEpoch::new(100, 1))
    );
    // KIP-853: the voter set comes from the snapshot.
    assert_eq!(e.voters().ids().collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(e.status().kraft_version, 1);
}

#[test]
fn a_snapshot_the_leader_no_longer_has_is_dropped_and_fetch_starts_over() {
    let bytes = snapshot_bytes(1, None);
    let mut e = empty_follower();
    e.handle(fetch_response_with_snapshot(1, (100, 1)), 10)
        .expect("handles");
    e.handle(
        snapshot_chunk(2, (100, 1), bytes.len(), 0, &bytes[..20]),
        11,
    )
    .expect("handles");
    let not_found = Event::Response {
        id: RequestId(3),
        response: RaftResponse::FetchSnapshot(FetchSnapshotResponse::default().with_topics(vec![
            fetch_snapshot_response::TopicSnapshot::default().with_partitions(vec![
                fetch_snapshot_response::PartitionSnapshot::default()
                    .with_error_code(98)
                    .with_current_leader(
                        fetch_snapshot_response::LeaderIdAndEpoch::default()
                            .with_leader_id(1.into())
                            .with_leader_epoch(1),
                    ),
            ]),
        ])),
    };
    let commands = e.handle(not_found, 12).expect("handles");
    assert_eq!(
        render(&commands),
        ["send 1 fetch epoch=1 offset=0 last_epoch=0"]
    );
    assert_eq!(e.log().fetched_snapshot(), None);
    assert_eq!(e.log().latest_snapshot_id(), None);
}

#[test]
fn a_damaged_snapshot_is_not_installed_and_is_fetched_again() {
    let voters = VoterSet::from_ids([1, 2, 3]);
    let mut bytes = snapshot_bytes(1, Some(&voters)).to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    let mut e = empty_follower();
    e.handle(fetch_response_with_snapshot(1, (100, 1)), 10)
        .expect("handles");
    let commands = e
        .handle(snapshot_chunk(2, (100, 1), bytes.len(), 0, &bytes), 11)
        .expect("a damaged snapshot is not fatal");
    assert_eq!(
        render(&commands),
        ["send 1 fetch epoch=1 offset=0 last_epoch=0"],
        "nothing installed, nothing committed; Fetch names the snapshot again"
    );
    assert_eq!(e.log().fetched_snapshot(), None);
    assert_eq!(e.log().latest_snapshot_id(), None);
    assert_eq!(e.log().start_offset(), 0);
}

#[test]
fn a_chunk_out_of_sequence_drops_the_partial_snapshot() {
    let bytes = snapshot_bytes(1, None);
    let mut e = empty_follower();
    e.handle(fetch_response_with_snapshot(1, (100, 1)), 10)
        .expect("handles");
    // Position 5 while nothing was received: not a continuation.
    let commands = e
        .handle(snapshot_chunk(2, (100, 1), bytes.len(), 5, &bytes[5..]), 11)
        .expect("handles");
    assert_eq!(
        render(&commands),
        ["send 1 fetch epoch=1 offset=0 last_epoch=0"]
    );
    assert_eq!(e.log().latest_snapshot_id(), None);
}

#[test]
fn a_restarted_node_whose_log_prefix_is_gone_reads_its_voters_from_the_latest_snapshot() {
    // KIP-853 with KIP-630: the Voters record below the log start is gone;
    // the snapshot at the log start holds the set.
    let voters = VoterSet::from_ids([1, 2, 5]);
    let mut log = log_with_epochs(&[1, 1, 1]);
    log.write_snapshot(OffsetAndEpoch::new(1, 1), &snapshot_bytes(1, Some(&voters)))
        .expect("snapshot");
    log.write_snapshot(OffsetAndEpoch::new(3, 1), &snapshot_bytes(1, Some(&voters)))
        .expect("snapshot");
    assert!(
        log.delete_before_snapshot(OffsetAndEpoch::new(3, 1))
            .expect("cleans")
    );
    let (e, _) = engine_with(2, log, None);
    assert_eq!(e.voters().ids().collect::<Vec<_>>(), [1, 2, 5]);
    assert_eq!(e.voters_at(3).ids().collect::<Vec<_>>(), [1, 2, 5]);
}

#[test]
fn a_damaged_latest_snapshot_stops_the_node_with_an_error_naming_the_file() {
    let voters = VoterSet::from_ids([1, 2, 5]);
    let mut log = log_with_epochs(&[1, 1, 1]);
    let mut bytes = snapshot_bytes(1, Some(&voters)).to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    log.write_snapshot(OffsetAndEpoch::new(3, 1), &bytes)
        .expect("snapshot");
    assert!(
        log.delete_before_snapshot(OffsetAndEpoch::new(3, 1))
            .expect("cleans")
    );
    let Err(err) = RaftEngine::new(
        config(2),
        log,
        None,
        Box::new(ChaCha8Rng::seed_from_u64(7)),
        0,
    ) else {
        panic!("a node must not start without the voter set of its damaged snapshot");
    };
    let message = err.to_string();
    assert!(
        message.starts_with(
            "snapshot 00000000000000000003-0000000001.checkpoint of the metadata log is damaged: batch at byte "
        ),
        "{message}"
    );
}

#[test]
fn the_engine_cleans_its_log_below_the_next_snapshot_once_retention_is_exceeded() {
    // Kafka's `maybeClean`: the oldest snapshot goes and the log start moves
    // to the next one; the latest snapshot always stays.
    let log = log_with_snapshots(6, 3, false);
    let mut c = config(2);
    c.retention = RetentionConfig {
        max_bytes: Some(1),
        max_ms: None,
    };
    c.log_clean_interval_ms = 1_000;
    let (mut e, _) = RaftEngine::new(c, log, None, Box::new(ChaCha8Rng::seed_from_u64(7)), 0)
        .expect("engine starts");
    // Cleaned at start (the first check is due at once).
    assert_eq!(e.log().start_offset(), 6);
    assert_eq!(
        e.log().snapshot_ids(),
        [OffsetAndEpoch::new(6, 1)],
        "older snapshots go with the log below them"
    );
    let later = e.next_deadline_ms();
    e.handle(Event::Tick, later).expect("tick");
    assert_eq!(e.log().start_offset(), 6, "the latest snapshot stays");
}

#[test]
fn a_snapshot_above_the_high_watermark_is_refused() {
    let mut e = empty_follower();
    let err = e
        .write_snapshot(OffsetAndEpoch::new(1, 1), &snapshot_bytes(1, None))
        .expect_err("nothing committed");
    assert!(
        matches!(err, RaftError::SnapshotNotCommitted { offset: 1, .. }),
        "{err}"
    );
}

#[test]
fn a_snapshot_older_than_the_retention_time_goes_with_the_log_below_the_next() {
    // `metadata.max.retention.ms`, by the SnapshotHeader's
    // lastContainedLogTimestamp (1 000 ms in these snapshots).
    for (now_ms, expected_start) in [(1_400, 0), (1_600, 6)] {
        let mut c = config(2);
        c.retention = RetentionConfig {
            max_bytes: None,
            max_ms: Some(500),
        };
        let (e, _) = RaftEngine::new(
            c,
            log_with_snapshots(6, 3, false),
            None,
            Box::new(ChaCha8Rng::seed_from_u64(7)),
            now_ms,
        )
        .expect("engine starts");
        assert_eq!(e.log().start_offset(), expected_start, "at {now_ms} ms");
    }
}

#[test]
fn a_fetch_at_the_log_start_with_another_epoch_than_the_snapshot_there_gets_the_snapshot() {
    // Kafka's `validateOffsetAndEpoch`: the fetcher's last batch (epoch 1)
    // differs from the committed one below the log start (epoch 2); no
    // diverging epoch can name where, so it gets the snapshot.
    let mut log = log_with_epochs(&[1, 1, 2, 2]);
    log.write_snapshot(OffsetAndEpoch::new(2, 1), &snapshot_bytes(1, None))
        .expect("snapshot");
    log.write_snapshot(OffsetAndEpoch::new(4, 2), &snapshot_bytes(2, None))
        .expect("snapshot");
    assert!(
        log.delete_before_snapshot(OffsetAndEpoch::new(4, 2))
            .expect("cleans")
    );
    let mut e = leader(log);
    let epoch = e.epoch();
    let stale = render(&e.handle(fetch(2, epoch, 4, 1, 0), 10).expect("handles"));
    assert_eq!(
        stale,
        ["reply fetch error=0 hw=-1 diverging=(-1, -1) snapshot=(4, 2) batches=0"]
    );
    let older = render(&e.handle(fetch(2, epoch, 5, 1, 0), 10).expect("handles"));
    assert_eq!(
        older,
        ["reply fetch error=0 hw=-1 diverging=(-1, -1) snapshot=(4, 2) batches=0"]
    );
    let matching = render(&e.handle(fetch(2, epoch, 4, 2, 0), 10).expect("handles"));
    assert_eq!(
        matching,
        ["reply fetch error=0 hw=-1 diverging=(-1, -1) batches=1"]
    );
}

#[test]
fn a_node_removed_before_its_latest_snapshot_does_not_campaign_after_a_restart() {
    // KIP-853 with KIP-630: node 3, formatted with the bootstrap voters
    // {1, 2, 3}, was removed (the set became {1}) and snapshotted past the
    // removal. After a restart its high watermark is unknown, but the
    // snapshot holds only committed data: the removal is committed, and the
    // set "before" it is not the bootstrap set (two changes older, {1, 3}
    // came in between). Campaigning in {1, 2, 3}, it was elected by node 2,
    // a stale voter with an empty log, without the committed log of {1}
    // (membership simulation, seed 3978).
    for clean in [true, false] {
        let voters = VoterSet::from_ids([1]);
        let mut log = log_with_epochs(&[1, 1, 1, 1]);
        log.write_snapshot(OffsetAndEpoch::new(3, 1), &snapshot_bytes(1, Some(&voters)))
            .expect("snapshot");
        if clean {
            assert!(
                log.delete_before_snapshot(OffsetAndEpoch::new(3, 1))
                    .expect("cleans")
            );
        }
        let stored = ElectionState {
            epoch: 1,
            leader_id: Some(1),
            voted_key: None,
        };
        let (mut e, _) = engine_with(3, log, Some(stored));
        assert_eq!(e.high_watermark(), None, "clean={clean}");
        assert_eq!(e.voters().ids().collect::<Vec<_>>(), [1]);
        assert!(!e.status().uncommitted_voter_change, "clean={clean}");
        assert_eq!(e.election_voters().ids().collect::<Vec<_>>(), [1]);
        assert!(!e.can_campaign(), "clean={clean}");
        // Its leader stays silent past the fetch timeout: an observer asks
        // the bootstrap servers, it does not pre-vote.
        for _ in 0..20 {
            let t = e.next_deadline_ms().min(10_000);
            e.handle(Event::Tick, t).expect("tick");
            assert!(
                !matches!(e.role(), Role::Prospective | Role::Candidate),
                "clean={clean}: {:?}",
                e.role()
            );
        }
    }
}
