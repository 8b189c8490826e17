//! The recovery point of [`FileLog`] (`recovery-point-offset-checkpoint`):
//! when it is written, that damage at or above it is a truncated tail, and
//! that damage below it refuses to open naming the file and the offset.

use std::{fs, path::Path};

use bytes::Bytes;
use kraft_controller::{
    log::{FileLog, FileLogConfig, LogError, OffsetAndEpoch, ReplicatedLog},
    record,
};

const CHECKPOINT: &str = "recovery-point-offset-checkpoint";

/// The recovery point after every flush.
fn eager() -> FileLogConfig {
    FileLogConfig {
        recovery_point_interval_ms: 0,
        ..FileLogConfig::default()
    }
}

/// The recovery point only on open and segment rolls.
fn lazy(segment_bytes: u64) -> FileLogConfig {
    FileLogConfig {
        segment_bytes,
        index_interval_bytes: 128,
        recovery_point_interval_ms: u64::MAX,
    }
}

fn batch(base: i64, epoch: i32, count: usize) -> Bytes {
    let values: Vec<Bytes> = (0..count).map(|_| Bytes::from(vec![7u8; 100])).collect();
    record::encode_data_batch(base, epoch, 1_700_000_000_000, &values).expect("encodes")
}

/// Appends `n` batches of 2 records each and flushes; returns one batch's size.
fn fill(log: &mut FileLog, from: i64, n: i64) -> usize {
    for i in 0..n {
        log.append_as_follower(batch(from + i * 2, 1, 2))
            .expect("append");
    }
    log.flush().expect("flush");
    batch(0, 1, 2).len()
}

fn checkpoint(dir: &Path) -> String {
    fs::read_to_string(dir.join(CHECKPOINT)).expect("recovery point file")
}

fn segment_path(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn flip(path: &Path, at: usize) {
    let mut bytes = fs::read(path).expect("read");
    bytes[at] ^= 0x01;
    fs::write(path, &bytes).expect("flip");
}

#[test]
fn the_recovery_point_is_written_in_kafkas_format_on_open_and_after_a_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), eager()).expect("open");
    assert_eq!(checkpoint(dir.path()), "0\n1\n__cluster_metadata 0 0\n");
    fill(&mut log, 0, 3);
    assert_eq!(log.recovery_point(), 6);
    assert_eq!(checkpoint(dir.path()), "0\n1\n__cluster_metadata 0 6\n");
    assert!(!dir.path().join(format!("{CHECKPOINT}.tmp")).exists());
}

#[test]
fn an_unflushed_append_never_moves_the_recovery_point() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), eager()).expect("open");
    fill(&mut log, 0, 2);
    log.append_as_follower(batch(4, 1, 2)).expect("append");
    assert_eq!(log.recovery_point(), 4);
    assert_eq!(checkpoint(dir.path()), "0\n1\n__cluster_metadata 0 4\n");
}

#[test]
fn with_a_long_interval_only_a_segment_roll_moves_the_recovery_point() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), lazy(1024)).expect("open");
    fill(&mut log, 0, 1);
    assert_eq!(log.recovery_point(), 0, "a flush within the interval");
    fill(&mut log, 2, 12);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    let last = *bases.last().expect("segments");
    assert_eq!(log.recovery_point(), last);
    assert_eq!(
        checkpoint(dir.path()),
        format!("0\n1\n__cluster_metadata 0 {last}\n")
    );
}

/// Policy (changed from "truncate anywhere"): a flipped byte below the
/// recovery point is flushed data the disk lost; the log refuses to open,
/// names the file, the offset and the way out, and changes nothing on disk.
#[test]
fn a_flipped_byte_below_the_recovery_point_refuses_to_open_and_touches_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), lazy(1024)).expect("open");
    let size = fill(&mut log, 0, 12);
    let bases = log.segment_base_offsets();
    drop(log);
    let path = segment_path(dir.path(), 0);
    flip(&path, size + 70); // inside the second batch: offsets 2 and 3
    let before = fs::read(&path).expect("read");
    let err = FileLog::open(dir.path(), lazy(1024)).expect_err("damage below the recovery point");
    let LogError::DamagedBelowRecoveryPoint {
        path: named,
        offset,
        position,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(named, &path);
    assert_eq!((*offset, *position), (2, size as u64));
    let text = err.to_string();
    assert!(!text.contains('\n'), "one line: {text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("offset 2"), "{text}");
    assert!(text.contains("format it anew"), "{text}");
    assert_eq!(fs::read(&path).expect("read"), before, "nothing truncated");
    for base in bases {
        assert!(
            segment_path(dir.path(), base).exists(),
            "segment {base} kept"
        );
    }
    // It stays refused: the node does not come back on its own.
    FileLog::open(dir.path(), lazy(1024)).expect_err("still refused");
}

/// Policy (unchanged for the tail): damage at or above the recovery point is
/// what a crash leaves of unflushed writes; it is truncated.
#[test]
fn a_torn_tail_above_the_recovery_point_is_truncated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), lazy(1 << 20)).expect("open");
    let size = fill(&mut log, 0, 4) as u64;
    assert_eq!(log.recovery_point(), 0);
    drop(log);
    let path = segment_path(dir.path(), 0);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(size * 3 + 20).expect("tear the last batch");
    drop(file);
    let log = FileLog::open(dir.path(), lazy(1 << 20)).expect("reopen");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(6, 1));
    assert_eq!(log.recovery_point(), 6, "the recovered log is all fsynced");
}

/// Policy: a log that ends below the recovery point (its tail cut at a batch
/// boundary, so no CRC fails) refuses to open as well.
#[test]
fn a_log_cut_below_the_recovery_point_refuses_to_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), eager()).expect("open");
    let size = fill(&mut log, 0, 4) as u64;
    drop(log);
    let path = segment_path(dir.path(), 0);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(size * 2).expect("cut two batches");
    drop(file);
    let err = FileLog::open(dir.path(), eager()).expect_err("records below the point are gone");
    assert!(
        matches!(
            err,
            LogError::DamagedBelowRecoveryPoint {
                offset: 4,
                recovery_point: 8,
                ..
            }
        ),
        "{err}"
    );
}

/// A truncation below the recovery point lowers it on disk first, so that a
/// crash after the truncation (and new unflushed appends) is not mistaken for
/// lost flushed data.
#[test]
fn a_truncation_lowers_the_recovery_point_and_a_later_torn_tail_is_recovered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), eager()).expect("open");
    let size = fill(&mut log, 0, 4) as u64;
    log.truncate_to(4).expect("truncate");
    assert_eq!(log.recovery_point(), 4);
    assert_eq!(checkpoint(dir.path()), "0\n1\n__cluster_metadata 0 4\n");
    log.append_as_follower(batch(4, 2, 2)).expect("append");
    drop(log); // a crash before the flush: the new batch is torn
    let path = segment_path(dir.path(), 0);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(size * 2 + 10).expect("tear");
    drop(file);
    let log = FileLog::open(dir.path(), eager()).expect("reopen");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(4, 1));
}

#[test]
fn a_damaged_recovery_point_file_refuses_to_open_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(FileLog::open(dir.path(), eager()).expect("open"));
    fs::write(
        dir.path().join(CHECKPOINT),
        "0\n1\n__cluster_metadata 0 x\n",
    )
    .expect("write");
    let err = FileLog::open(dir.path(), eager()).expect_err("does not parse");
    assert!(err.to_string().contains(CHECKPOINT), "{err}");
}

/// The partition leader epoch is outside the CRC: an epoch lowered on disk
/// below the batch before it is damage like a failed CRC (here below the
/// recovery point, so the log refuses to open).
#[test]
fn a_lowered_partition_leader_epoch_on_disk_is_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), eager()).expect("open");
    log.append_as_follower(batch(0, 2, 2)).expect("append");
    log.append_as_follower(batch(2, 2, 2)).expect("append");
    log.flush().expect("flush");
    drop(log);
    let size = batch(0, 2, 2).len();
    let path = segment_path(dir.path(), 0);
    let mut bytes = fs::read(&path).expect("read");
    // partitionLeaderEpoch: bytes 12..16 of a batch.
    bytes[size + 12..size + 16].copy_from_slice(&1i32.to_be_bytes());
    fs::write(&path, &bytes).expect("lower the epoch");
    let err = FileLog::open(dir.path(), eager()).expect_err("epoch went down");
    assert!(
        matches!(err, LogError::DamagedBelowRecoveryPoint { offset: 2, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("partition leader epoch 1"),
        "{err}"
    );
}
