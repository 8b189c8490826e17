//! Tests of the start-up checks: each builds a real log dir, then asserts the
//! exact refusal (or that a consistent dir passes).

use bytes::Bytes;

use super::*;
use crate::{
    log::{FileLogConfig, snapshot::encode_snapshot},
    record::encode_data_batch,
};

/// A log in `dir` whose batches have `records` records each at the given
/// epochs, flushed.
fn log_with(dir: &Path, batches: &[(usize, i32)]) -> FileLog {
    let mut log = FileLog::open(dir, FileLogConfig::default()).expect("opens");
    let mut next = 0i64;
    for &(count, epoch) in batches {
        let records = vec![Bytes::from_static(b"x"); count];
        let batch = encode_data_batch(next, epoch, 0, &records).expect("encodes");
        log.append_as_follower(batch).expect("appends");
        next += count as i64;
    }
    log.flush().expect("flushes");
    log
}

fn state(epoch: i32, voted: Option<(i32, Option<Uuid>)>) -> ElectionState {
    ElectionState {
        epoch,
        leader_id: None,
        voted_key: voted,
    }
}

fn local(dir: &Path) -> LocalIdentity<'_> {
    LocalIdentity {
        log_dir: dir,
        node_id: 1,
        directory_id: Uuid::from_u128(1),
    }
}

#[test]
fn a_batch_epoch_above_the_quorum_state_epoch_refuses_naming_the_segment() {
    // Raft: a batch of epoch E is appended only after E is persisted.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_with(dir.path(), &[(1, 1), (1, 1), (1, 1001)]);
    let qs = dir.path().join("quorum-state");
    let err = check_at_start(&log, &qs, Some(&state(1, None)), local(dir.path()))
        .expect_err("epoch 1001 was never persisted");
    assert!(
        matches!(
            err,
            IntegrityError::BatchEpochAboveQuorumState {
                offset: 2,
                epoch: 1001,
                quorum_epoch: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("00000000000000000000.log: batch at offset 2 has partition leader epoch 1001, above epoch 1 in")
            && text.contains("treat this volume as lost"),
        "{text}"
    );
    // The same log with the epoch persisted passes.
    check_at_start(&log, &qs, Some(&state(1001, None)), local(dir.path())).expect("consistent");
}

#[test]
fn a_log_with_epochs_but_no_quorum_state_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_with(dir.path(), &[(1, 2)]);
    let qs = dir.path().join("quorum-state");
    let err = check_at_start(&log, &qs, None, local(dir.path())).expect_err("epoch 2 unpersisted");
    assert!(
        matches!(
            err,
            IntegrityError::BatchEpochAboveQuorumState {
                epoch: 2,
                quorum_epoch: 0,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_vote_for_this_node_with_another_directory_id_is_refused() {
    // Kafka's QuorumState: a vote for the local id names the local directory.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = log_with(dir.path(), &[(1, 1)]);
    let qs = dir.path().join("quorum-state");
    let err = check_at_start(
        &log,
        &qs,
        Some(&state(1, Some((1, Some(Uuid::from_u128(2)))))),
        local(dir.path()),
    )
    .expect_err("another directory");
    assert!(
        err.to_string()
            .contains("votedDirectoryId AAAAAAAAAAAAAAAAAAAAAg for this node (votedId 1) is not directory.id AAAAAAAAAAAAAAAAAAAAAQ"),
        "{err}"
    );
    // A vote for another node, or for this one with its own directory, passes.
    for voted in [
        (2, Some(Uuid::from_u128(2))),
        (1, Some(Uuid::from_u128(1))),
        (1, None),
    ] {
        check_at_start(&log, &qs, Some(&state(1, Some(voted))), local(dir.path()))
            .expect("consistent");
    }
}

#[test]
fn a_snapshot_id_inside_a_batch_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Batches [0, 2] and [3, 4], epoch 1.
    let mut log = log_with(dir.path(), &[(3, 1), (2, 1)]);
    let bytes = encode_snapshot(1, 0, 0, &[], &[Bytes::from_static(b"s")]).expect("encodes");
    log.write_snapshot(OffsetAndEpoch::new(2, 1), &bytes)
        .expect("writes");
    let qs = dir.path().join("quorum-state");
    let err = check_at_start(&log, &qs, Some(&state(1, None)), local(dir.path()))
        .expect_err("offset 2 is inside the first batch");
    assert!(
        err.to_string().contains(
            "00000000000000000002-0000000001.checkpoint: snapshot id (2, 1) disagrees with the log: the batch holding offset 1 spans [0, 2] with epoch 1"
        ),
        "{err}"
    );
}

#[test]
fn a_snapshot_at_a_batch_end_with_its_own_epoch_passes_and_a_wrong_epoch_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = log_with(dir.path(), &[(3, 1), (2, 2)]);
    let qs = dir.path().join("quorum-state");
    let good = encode_snapshot(1, 0, 0, &[], &[Bytes::from_static(b"s")]).expect("encodes");
    log.write_snapshot(OffsetAndEpoch::new(3, 1), &good)
        .expect("writes");
    check_at_start(&log, &qs, Some(&state(2, None)), local(dir.path())).expect("consistent");

    // The file name says epoch 2 at offset 5, its batches say epoch 1.
    log.write_snapshot(OffsetAndEpoch::new(5, 2), &good)
        .expect("writes");
    let err = check_at_start(&log, &qs, Some(&state(2, None)), local(dir.path()))
        .expect_err("records of epoch 1");
    assert!(
        matches!(
            err,
            IntegrityError::SnapshotRecordsEpochMismatch {
                found: 1,
                expected: 2,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_snapshot_epoch_above_the_quorum_state_epoch_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = log_with(dir.path(), &[(1, 1)]);
    let bytes = encode_snapshot(1, 0, 0, &[], &[]).expect("encodes");
    log.write_snapshot(OffsetAndEpoch::new(1, 1), &bytes)
        .expect("writes");
    // Only the snapshot is left: the log restarts at its end offset.
    log.reset_to_snapshot(OffsetAndEpoch::new(1, 1))
        .expect("resets");
    let qs = dir.path().join("quorum-state");
    check_at_start(&log, &qs, Some(&state(1, None)), local(dir.path())).expect("consistent");
    let err = check_at_start(&log, &qs, Some(&state(0, None)), local(dir.path()))
        .expect_err("epoch 1 above 0");
    assert!(
        err.to_string().contains(
            "00000000000000000001-0000000001.checkpoint: snapshot epoch 1 is above epoch 0 in"
        ),
        "{err}"
    );
}

#[test]
fn a_log_whose_first_epoch_is_below_the_snapshot_it_starts_at_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = log_with(dir.path(), &[(1, 2)]);
    let bytes = encode_snapshot(2, 0, 0, &[], &[]).expect("encodes");
    log.write_snapshot(OffsetAndEpoch::new(1, 2), &bytes)
        .expect("writes");
    log.reset_to_snapshot(OffsetAndEpoch::new(1, 2))
        .expect("resets");
    // Epoch 1 after a snapshot of epoch 2, written behind the log's back
    // (the log refuses such an append): what a disk that lied leaves.
    drop(log);
    let batch = encode_data_batch(1, 1, 0, &[Bytes::from_static(b"x")]).expect("encodes");
    std::fs::write(dir.path().join("00000000000000000001.log"), &batch).expect("write");
    let log = FileLog::open(dir.path(), FileLogConfig::default()).expect("recovery takes it");
    let qs = dir.path().join("quorum-state");
    let err = check_at_start(&log, &qs, Some(&state(2, None)), local(dir.path()))
        .expect_err("epoch 1 below the snapshot's 2");
    assert!(
        err.to_string().contains(
            "00000000000000000001.log: batch at offset 1 has partition leader epoch 1, below epoch 2 of the snapshot"
        ),
        "{err}"
    );
}

#[test]
fn a_cleaned_log_whose_segment_keeps_older_epochs_below_its_start_is_consistent() {
    // Review finding: cleaning keeps the segment that holds the new log
    // start, older batches included, and a reopened log's epoch cache still
    // begins with their epochs. A healthy node restarted after a leader
    // change and a clean was refused as "below the snapshot's epoch".
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || FileLogConfig {
        segment_bytes: 280,
        ..FileLogConfig::default()
    };
    let mut log = FileLog::open(dir.path(), config()).expect("opens");
    for (offset, epoch) in [
        (0, 1),
        (1, 1),
        (2, 1),
        (3, 1),
        (4, 3),
        (5, 5),
        (6, 5),
        (7, 5),
    ] {
        let batch =
            encode_data_batch(offset, epoch, 0, &[Bytes::from_static(b"x")]).expect("encodes");
        log.append_as_follower(batch).expect("appends");
    }
    log.flush().expect("flushes");
    assert_eq!(log.segment_base_offsets(), vec![0, 4], "two segments");
    // Offsets 0..=6 in the snapshot: a start inside the second segment.
    let id = OffsetAndEpoch::new(7, 5);
    let bytes = encode_snapshot(5, 0, 0, &[], &[]).expect("encodes");
    log.write_snapshot(id, &bytes).expect("writes");
    assert!(log.delete_before_snapshot(id).expect("cleans"));
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopens");
    assert_eq!(log.start_offset(), 7);
    assert_eq!(
        log.epoch_entries().first().map(|e| e.epoch),
        Some(3),
        "the kept segment's older epoch is still in the cache"
    );
    let qs = dir.path().join("quorum-state");
    check_at_start(&log, &qs, Some(&state(5, None)), local(dir.path()))
        .expect("a healthy cleaned log starts");
}
