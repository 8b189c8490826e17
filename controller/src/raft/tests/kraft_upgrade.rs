//! Issue 22: the `kraft.version` upgrade 0 → 1 of a static quorum
//! (KAFKA-16538, `KafkaRaftClient.upgradeKRaftVersion`).

use kafka_protocol::messages::{FetchResponse, fetch_response};

use super::*;
use crate::record::{ControlRecord, DecodedBatch, KRaftVersionRecord, encode_control_batch};

/// Static voters {1, 2, 3} (controller.quorum.voters: endpoints, no directory ids).
fn static_voters() -> VoterSet {
    VoterSet::new((1..=3).map(|id| {
        Voter::new(
            ReplicaKey::of(id),
            Some(Endpoint::new("CONTROLLER", format!("node{id}"), 9093)),
        )
    }))
}

/// Node 1 (directory `dir(1)`) leading epoch 1 of a kraft.version 0 quorum;
/// its LeaderChange (offset 0) flushed and fetched by node 2 with its
/// directory id (high watermark 1). Node 3 has not fetched.
fn static_leader() -> RaftEngine<MemoryLog> {
    let mut e = elected_leader(RaftConfig::new(1, static_voters()));
    e.handle(fetch_from(2, 1, 1, 1), 2_000).expect("fetch");
    assert_eq!(e.high_watermark(), Some(1));
    assert_eq!(e.status().kraft_version, 0);
    e
}

/// The control record types of the batch at `offset` in `e`'s log.
fn batch_types(e: &RaftEngine<MemoryLog>, offset: i64) -> Vec<ControlRecord> {
    let info = e.log().read(offset, usize::MAX).expect("read");
    let (_, first) = crate::record::iter_batches(&info.records, true)
        .next()
        .expect("one batch")
        .expect("valid");
    DecodedBatch::decode(first)
        .expect("decodes")
        .control_records()
        .expect("control")
}

fn with_directories() -> VoterSet {
    VoterSet::new(static_voters().iter().map(|v| Voter {
        key: ReplicaKey::with_directory(v.key.id, dir(v.key.id)),
        ..v.clone()
    }))
}

#[test]
fn the_leader_appends_kraft_version_and_the_static_voters_with_their_directories_in_one_batch() {
    let mut e = static_leader();
    e.handle(fetch_from(3, 1, 1, 1), 2_010).expect("fetch");
    let (outcome, commands) = e.upgrade_kraft_version(1, false, 2_020).expect("upgrade");
    assert_eq!(
        outcome,
        KRaftUpgrade::Appended {
            last_offset: 2,
            epoch: 1
        }
    );
    assert!(render(&commands).is_empty(), "{commands:?}");
    let records = batch_types(&e, 1);
    let types: Vec<_> = records.iter().map(|r| r.record_type().name()).collect();
    assert_eq!(types, ["KRAFT_VERSION", "KRAFT_VOTERS"]);
    let ControlRecord::KRaftVersion(v) = &records[0] else {
        panic!("kraft version record expected")
    };
    assert_eq!(v.k_raft_version, 1);
    let ControlRecord::Voters(v) = &records[1] else {
        panic!("voters record expected")
    };
    assert_eq!(VoterSet::from_record(v), with_directories());
    assert_eq!(e.log().end_offset().offset, 3, "one batch of two records");
    assert_eq!(e.status().kraft_version, 1);
    assert_eq!(e.voters(), &with_directories());
    // Committed by a majority (1, 2): the flush then node 2's fetch.
    e.handle(Event::Flush, 2_060).expect("flush");
    let commands = e.handle(fetch_from(2, 1, 3, 1), 2_070).expect("fetch");
    assert_eq!(
        render(&commands),
        [
            "committed hw=3",
            "reply fetch error=0 hw=3 diverging=(-1, -1) batches=0"
        ]
    );
    // Asked again once committed: nothing to do.
    let (outcome, commands) = e.upgrade_kraft_version(1, false, 2_080).expect("again");
    assert_eq!(outcome, KRaftUpgrade::Unchanged);
    assert!(commands.is_empty());
    assert_eq!(e.log().end_offset().offset, 3, "appended once");
}

#[test]
fn validate_only_checks_and_appends_nothing() {
    let mut e = static_leader();
    e.handle(fetch_from(3, 1, 1, 1), 2_010).expect("fetch");
    let (outcome, commands) = e.upgrade_kraft_version(1, true, 2_020).expect("validate");
    assert_eq!(outcome, KRaftUpgrade::Validated);
    assert!(commands.is_empty());
    assert_eq!(e.log().end_offset().offset, 1);
    assert_eq!(e.status().kraft_version, 0);
}

#[test]
fn a_voter_whose_directory_id_the_leader_never_heard_makes_the_upgrade_fail() {
    let mut e = static_leader();
    let err = e
        .upgrade_kraft_version(1, false, 2_020)
        .expect_err("node 3 never fetched");
    assert!(
        matches!(err, KRaftUpgradeError::UnknownDirectoryId { voter_id: 3 }),
        "{err}"
    );
    assert_eq!(e.log().end_offset().offset, 1, "nothing appended");
    assert_eq!(e.status().kraft_version, 0);
}

#[test]
fn a_voter_without_kraft_version_1_support_makes_the_upgrade_fail() {
    let mut c = RaftConfig::new(
        1,
        VoterSet::new(static_voters().iter().map(|v| Voter {
            kraft_version: if v.key.id == 2 { (0, 0) } else { (0, 1) },
            ..v.clone()
        })),
    );
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
    e.handle(fetch_from(2, 1, 1, 1), 2_000).expect("fetch");
    e.handle(fetch_from(3, 1, 1, 1), 2_000).expect("fetch");
    let err = e
        .upgrade_kraft_version(1, false, 2_020)
        .expect_err("refused");
    assert!(
        matches!(
            err,
            KRaftUpgradeError::VoterUnsupported {
                voter_id: 2,
                max: 0,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(e.log().end_offset().offset, 1, "nothing appended");
}

#[test]
fn an_upgrade_while_one_is_pending_and_a_downgrade_are_refused() {
    let mut e = static_leader();
    e.handle(fetch_from(3, 1, 1, 1), 2_010).expect("fetch");
    e.upgrade_kraft_version(1, false, 2_020).expect("upgrade");
    let err = e
        .upgrade_kraft_version(1, false, 2_021)
        .expect_err("pending");
    assert!(
        matches!(
            err,
            KRaftUpgradeError::Pending {
                level: 1,
                offset: 2
            }
        ),
        "{err}"
    );
    e.handle(Event::Flush, 2_060).expect("flush");
    e.handle(fetch_from(2, 1, 3, 1), 2_070).expect("fetch");
    assert_eq!(e.high_watermark(), Some(3));
    let err = e
        .upgrade_kraft_version(0, false, 2_080)
        .expect_err("downgrade");
    assert!(
        matches!(err, KRaftUpgradeError::Downgrade { from: 1, to: 0 }),
        "{err}"
    );
    let err = e
        .upgrade_kraft_version(2, false, 2_080)
        .expect_err("level 2");
    assert!(
        matches!(err, KRaftUpgradeError::UnsupportedLevel { level: 2 }),
        "{err}"
    );
    assert_eq!(e.log().end_offset().offset, 3, "nothing more appended");
}

#[test]
fn a_follower_is_not_asked_to_upgrade() {
    let (mut e, _) = engine_with(
        1,
        log_with_epochs(&[1, 1]),
        Some(ElectionState {
            epoch: 3,
            leader_id: Some(2),
            voted_key: None,
        }),
    );
    let err = e.upgrade_kraft_version(1, false, 10).expect_err("follower");
    assert!(
        matches!(
            err,
            KRaftUpgradeError::NotLeader {
                epoch: 3,
                leader_id: Some(2)
            }
        ),
        "{err}"
    );
}

/// Leader 2's Fetch answer `id` in epoch 3: the upgrade batch at offset 2.
fn upgrade_batch_answer(id: u64) -> Event {
    let batch = encode_control_batch(
        2,
        3,
        0,
        &[
            ControlRecord::KRaftVersion(
                KRaftVersionRecord::default()
                    .with_version(0)
                    .with_k_raft_version(1),
            ),
            ControlRecord::Voters(with_directories().to_record()),
        ],
    )
    .expect("encodes");
    leader_2_answer(id, batch)
}

#[test]
fn a_follower_switches_to_kraft_version_1_when_it_reads_the_upgrade_and_back_if_it_is_truncated() {
    let (mut e, commands) = engine_with(
        1,
        log_with_epochs(&[1, 1]),
        Some(ElectionState {
            epoch: 3,
            leader_id: Some(2),
            voted_key: None,
        }),
    );
    assert_eq!(commands[1], "send 2 fetch epoch=3 offset=2 last_epoch=1");
    assert_eq!(e.status().kraft_version, 0);
    let commands = render(&e.handle(upgrade_batch_answer(1), 10).expect("answer"));
    assert_eq!(commands, ["flush", "committed hw=2"]);
    assert_eq!(e.status().kraft_version, 1);
    assert_eq!(e.voters().len(), 3);
    assert!(e.voters().iter().all(|v| v.key.directory_id.is_some()));
    // A new leader of epoch 4 whose log ends at offset 2: the uncommitted
    // upgrade is truncated and the follower is back at kraft.version 0.
    e.handle(Event::Flush, 11).expect("flush");
    let truncate = Event::Response {
        id: RequestId(2),
        response: RaftResponse::Fetch(FetchResponse::default().with_responses(vec![
            fetch_response::FetchableTopicResponse::default().with_partitions(vec![
                fetch_response::PartitionData::default()
                    .with_high_watermark(2)
                    .with_current_leader(
                        fetch_response::LeaderIdAndEpoch::default()
                            .with_leader_id(2.into())
                            .with_leader_epoch(3),
                    )
                    .with_diverging_epoch(
                        fetch_response::EpochEndOffset::default()
                            .with_epoch(1)
                            .with_end_offset(2),
                    ),
            ]),
        ])),
    };
    let deadline = e.next_deadline_ms().min(12);
    e.handle(Event::Tick, deadline).expect("tick");
    e.handle(truncate, 13).expect("diverging");
    assert_eq!(e.log().end_offset().offset, 2, "truncated");
    assert_eq!(e.status().kraft_version, 0);
    assert_eq!(e.voters(), &VoterSet::from_ids([1, 2, 3]));
}
