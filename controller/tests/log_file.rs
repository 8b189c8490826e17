//! [`FileLog`] on disk: Kafka's file layout, segment rolling, the offset
//! index, the leader epoch checkpoint, snapshots, and recovery from damaged
//! files. Each recovery test states the policy it checks in its doc.

use std::{fs, path::Path};

use bytes::Bytes;
use kraft_controller::{
    log::{FileLog, FileLogConfig, LogError, MemoryLog, OffsetAndEpoch, ReplicatedLog},
    record::{self, iter_batches},
};

fn config() -> FileLogConfig {
    FileLogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        ..FileLogConfig::default()
    }
}

fn batch(base: i64, epoch: i32, count: usize) -> Bytes {
    let values: Vec<Bytes> = (0..count).map(|_| Bytes::from(vec![7u8; 100])).collect();
    record::encode_data_batch(base, epoch, 1_700_000_000_000, &values).expect("encodes")
}

/// Appends `n` batches of 2 records, epoch 1 then 2 from the middle on, and
/// flushes. Returns the size of one batch.
fn fill(log: &mut FileLog, n: i64) -> usize {
    for i in 0..n {
        let epoch = if i < n / 2 { 1 } else { 2 };
        log.append_as_follower(batch(i * 2, epoch, 2))
            .expect("append");
    }
    log.flush().expect("flush");
    batch(0, 1, 2).len()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn offsets(log: &FileLog) -> Vec<i64> {
    let mut out = Vec::new();
    let mut next = log.start_offset();
    loop {
        let fetched = log.read(next, usize::MAX).expect("read");
        if fetched.records.is_empty() {
            return out;
        }
        for b in iter_batches(&fetched.records, true) {
            let (h, _) = b.expect("valid");
            out.push(h.base_offset);
            next = h.next_offset();
        }
    }
}

#[test]
fn a_new_log_has_kafkas_layout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    log.append_as_leader(batch(0, 0, 1), 3).expect("append");
    log.flush().expect("flush");
    assert_eq!(
        file_names(dir.path()),
        [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "leader-epoch-checkpoint",
            "partition.metadata",
            "recovery-point-offset-checkpoint",
        ]
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("partition.metadata")).expect("read"),
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).expect("read"),
        "0\n1\n3 0\n"
    );
    // The segment holds exactly the batch appended, offset stamped.
    let bytes = fs::read(dir.path().join("00000000000000000000.log")).expect("read");
    let mut expected = batch(0, 0, 1).to_vec();
    record::batch_set_offset_and_epoch(&mut expected, 0, 3);
    assert_eq!(bytes, expected);
}

/// Reads walk batch headers from an index entry a window of bytes at a time
/// (`Segment::position_of`, `Segment::read`). Batches of 1 to 100 records
/// (170 B to 11 KiB, some larger than a window); Kafka's default index
/// interval in one 1 GiB segment, then a sparse index (1 MiB) in 64 KiB
/// segments, where a walk crosses several windows and headers straddle
/// their ends. Every read from every offset, at byte limits below, at and
/// above a batch, answers what the in-memory log answers.
#[test]
fn reads_across_index_entries_and_batches_larger_than_a_window_match_the_memory_log() {
    let sparse = FileLogConfig {
        segment_bytes: 64 * 1024,
        index_interval_bytes: 1024 * 1024,
        ..FileLogConfig::default()
    };
    for config in [FileLogConfig::default(), sparse] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut log = FileLog::open(dir.path(), config).expect("open");
        let mut model = MemoryLog::new();
        let mut base = 0;
        for i in 0..60usize {
            let count = [1, 3, 100, 2, 40, 1, 1, 85, 1, 1, 1, 1][i % 12];
            let b = batch(base, 1, count);
            log.append_as_follower(b.clone()).expect("append");
            model.append_as_follower(b).expect("append");
            base += count as i64;
        }
        log.flush().expect("flush");
        let summary = |bytes: &[u8]| -> Vec<(i64, usize)> {
            iter_batches(bytes, true)
                .map(|b| {
                    let (h, _) = b.expect("valid batch");
                    (h.base_offset, h.size_in_bytes())
                })
                .collect()
        };
        for offset in 0..=base {
            for max_bytes in [1, 200, 4_096, 11_000, 12_000, 40_000, usize::MAX] {
                let got = log.read(offset, max_bytes).expect("file read");
                let want = model.read(offset, max_bytes).expect("memory read");
                let at = format!("{config:?}: offset {offset}, max_bytes {max_bytes}");
                assert_eq!(got.start_offset, want.start_offset, "{at}");
                // A file read stops at its segment's end (as Kafka's); the
                // memory log has no segments: the same batches up to there.
                let (got_batches, want_batches) = (summary(&got.records), summary(&want.records));
                assert!(
                    !got_batches.is_empty() || want_batches.is_empty(),
                    "{at}: nothing read"
                );
                assert_eq!(got_batches[..], want_batches[..got_batches.len()], "{at}");
                assert!(want.records.starts_with(&got.records), "{at}");
                if got_batches.len() < want_batches.len() {
                    let next = want_batches[got_batches.len()].0;
                    assert!(
                        segment_path(dir.path(), next).exists(),
                        "{at}: stopped before {next}, not at a segment's end"
                    );
                }
            }
        }
    }
}

/// A batch whose length field is damaged after the log opened (the open
/// checked it) is an error when read alone, never a batch cut short at the
/// segment's end.
#[test]
fn a_batch_longer_than_its_segment_is_an_error_not_a_short_read() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let first = batch(0, 1, 2);
    log.append_as_follower(first.clone()).expect("append");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    log.flush().expect("flush");
    // batchLength of the second batch (bytes 8..12 of its header): 1 MiB.
    let file = fs::OpenOptions::new()
        .write(true)
        .open(segment_path(dir.path(), 0))
        .expect("open segment");
    file.write_all_at(&(1024 * 1024i32).to_be_bytes(), first.len() as u64 + 8)
        .expect("damage");
    let err = log.read(2, 1).expect_err("a damaged length");
    assert!(matches!(err, LogError::Record(_)), "{err}");
    // The batch before it is still read.
    let ok = log.read(0, 1).expect("read");
    assert_eq!(ok.records, first);
}

#[test]
fn segments_roll_by_size_and_are_named_by_base_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    let size = fill(&mut log, 10);
    let per_segment = (1024 / size) as i64; // whole batches per segment
    let bases = log.segment_base_offsets();
    assert!(bases.len() > 1, "{bases:?}");
    assert_eq!(bases[1], per_segment * 2, "{bases:?}");
    for base in &bases {
        let log_file = dir.path().join(format!("{base:020}.log"));
        assert!(fs::metadata(&log_file).expect("exists").len() <= 1024);
        assert!(dir.path().join(format!("{base:020}.index")).exists());
    }
    assert_eq!(offsets(&log), (0..10).map(|i| i * 2).collect::<Vec<_>>());
    // Reopening finds the same segments and data.
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.segment_base_offsets(), bases);
    assert_eq!(offsets(&log), (0..10).map(|i| i * 2).collect::<Vec<_>>());
}

#[test]
fn the_offset_index_has_an_entry_every_interval_and_is_rebuilt_if_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = FileLogConfig {
        segment_bytes: 1 << 20,
        index_interval_bytes: 500,
        ..FileLogConfig::default()
    };
    let mut log = FileLog::open(dir.path(), config).expect("open");
    let size = fill(&mut log, 10) as u32;
    drop(log);
    let index_path = dir.path().join("00000000000000000000.index");
    let index = fs::read(&index_path).expect("read");
    // An entry once more than 500 bytes were written since the last one:
    // (relative last offset of the batch, position of the batch), 4 + 4 bytes.
    let entries: Vec<(i32, u32)> = index
        .chunks(8)
        .map(|e| {
            (
                i32::from_be_bytes([e[0], e[1], e[2], e[3]]),
                u32::from_be_bytes([e[4], e[5], e[6], e[7]]),
            )
        })
        .collect();
    let per_entry = 500 / size + 1; // batches written between entries
    let expected: Vec<(i32, u32)> = (1..10)
        .filter(|i| i % per_entry == 0)
        .map(|i| ((i * 2 + 1) as i32, i * size))
        .collect();
    assert_eq!(entries, expected);
    fs::write(&index_path, b"garbage").expect("damage the index");
    let log = FileLog::open(dir.path(), config).expect("reopen");
    assert_eq!(fs::read(&index_path).expect("read"), index);
    assert_eq!(offsets(&log), (0..10).map(|i| i * 2).collect::<Vec<_>>());
    assert_eq!(
        iter_batches(&log.read(13, 1).expect("read").records, true)
            .next()
            .expect("one")
            .expect("valid")
            .0
            .base_offset,
        12
    );
}

#[test]
fn truncation_across_segments_deletes_their_files_and_epochs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 10);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    log.truncate_to(bases[1] + 1).expect("truncate");
    assert_eq!(log.segment_base_offsets(), bases[..2]);
    for gone in &bases[2..] {
        assert!(!dir.path().join(format!("{gone:020}.log")).exists());
        assert!(!dir.path().join(format!("{gone:020}.index")).exists());
    }
    assert_eq!(log.end_offset().offset, bases[1]);
    // Epoch 2 started at offset 10, which is gone if bases[1] <= 10.
    let checkpoint = fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).expect("read");
    if bases[1] <= 10 {
        assert_eq!(checkpoint, "0\n1\n1 0\n");
    }
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.end_offset().offset, bases[1]);
}

#[test]
fn snapshots_are_listed_after_reopen_and_read_by_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 4);
    let id = OffsetAndEpoch::new(8, 2);
    let mut writer = log.create_snapshot(id).expect("create");
    writer.append(b"snapshot bytes").expect("append");
    assert!(
        dir.path()
            .join("00000000000000000008-0000000002.checkpoint.part")
            .exists()
    );
    log.freeze_snapshot(writer).expect("freeze");
    assert_eq!(log.latest_snapshot_id(), Some(id));
    // A partial snapshot left by a crash disappears on open.
    drop(
        log.create_snapshot(OffsetAndEpoch::new(9, 2))
            .expect("create"),
    );
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.snapshots(), [id]);
    assert!(
        !dir.path()
            .join("00000000000000000009-0000000002.checkpoint.part")
            .exists()
    );
    let reader = log.read_snapshot(id).expect("open snapshot");
    assert_eq!(&reader.read(9, 100).expect("read")[..], b"bytes");
}

/// Policy: a log whose first segment starts above offset 0 must have a
/// snapshot at or above that offset; otherwise its prefix is lost and it
/// refuses to open, naming both the start offset and the snapshot found.
#[test]
fn a_log_starting_above_zero_without_a_snapshot_refuses_to_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 10);
    let bases = log.segment_base_offsets();
    let writer = log
        .create_snapshot(OffsetAndEpoch::new(2, 1))
        .expect("create");
    log.freeze_snapshot(writer).expect("freeze");
    drop(log);
    fs::remove_file(dir.path().join(format!("{:020}.log", bases[0]))).expect("delete");
    let err = FileLog::open(dir.path(), config()).expect_err("no snapshot covers the start");
    assert!(
        matches!(err, LogError::MissingSnapshot { start_offset, latest_snapshot: Some(s), .. }
            if start_offset == bases[1] && s == OffsetAndEpoch::new(2, 1)),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!("starts at offset {}", bases[1])),
        "{message}"
    );

    // With a snapshot at the start offset it opens, starting there.
    let writer = kraft_controller::log::snapshot::SnapshotWriter::create(
        dir.path(),
        OffsetAndEpoch::new(bases[1], 1),
    )
    .expect("create");
    writer.freeze().expect("freeze");
    let log = FileLog::open(dir.path(), config()).expect("opens");
    assert_eq!(log.start_offset(), bases[1]);
    assert!(log.read(0, 100).is_err());
    // An epoch older than the log: the snapshot at the log start (KIP-595
    // divergence falls back to it).
    assert_eq!(
        log.end_offset_for_epoch(0),
        OffsetAndEpoch::new(bases[1], 1)
    );
}

fn segment_path(dir: &Path, base: i64) -> std::path::PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// Deletes `recovery-point-offset-checkpoint`: the log is then recovered as
/// one written before the file existed (every batch counts as tail), which is
/// also the policy for damage at or above the recovery point.
fn forget_recovery_point(dir: &Path) {
    fs::remove_file(dir.join("recovery-point-offset-checkpoint")).expect("recovery point exists");
}

/// Policy: a torn tail (the file ends inside a batch) is truncated away on
/// open; the batches before it are kept and the log continues from there.
#[test]
fn a_torn_tail_is_truncated_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let size = fill(&mut log, 4) as u64;
    drop(log);
    let path = segment_path(dir.path(), 0);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(size * 3 + 20).expect("tear the last batch");
    drop(file);
    forget_recovery_point(dir.path());
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("reopen");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(6, 2));
    assert_eq!(fs::metadata(&path).expect("meta").len(), size * 3);
    assert_eq!(offsets(&log), vec![0, 2, 4]);
    log.append_as_follower(batch(6, 2, 1))
        .expect("append continues");
}

/// Policy: a zero-filled tail (the file grew but the data never reached the
/// disk) is truncated away on open, as Kafka does when it reads a zero batch
/// size as a corrupt record.
#[test]
fn a_zero_filled_tail_is_truncated_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let size = fill(&mut log, 4) as u64;
    drop(log);
    let path = segment_path(dir.path(), 0);
    let mut bytes = fs::read(&path).expect("read");
    bytes.extend(std::iter::repeat_n(0u8, 4096));
    fs::write(&path, &bytes).expect("zero fill");
    forget_recovery_point(dir.path());
    let log = FileLog::open(dir.path(), FileLogConfig::default()).expect("reopen");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(8, 2));
    assert_eq!(fs::metadata(&path).expect("meta").len(), size * 4);
    // Zeros over the last batch too: it is gone as well.
    drop(log);
    let mut bytes = fs::read(&path).expect("read");
    let len = bytes.len();
    bytes[len - size as usize..].fill(0);
    fs::write(&path, &bytes).expect("zero the last batch");
    forget_recovery_point(dir.path());
    let log = FileLog::open(dir.path(), FileLogConfig::default()).expect("reopen");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(6, 2));
}

/// Policy: a batch whose CRC fails is truncated away on open together with
/// everything after it, even good batches: nothing after a corrupt batch is
/// ever served (the log has no holes).
#[test]
fn a_flipped_byte_truncates_the_log_at_that_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let size = fill(&mut log, 6);
    drop(log);
    let path = segment_path(dir.path(), 0);
    let mut bytes = fs::read(&path).expect("read");
    bytes[size * 2 + 70] ^= 0x01; // inside the third batch's records
    fs::write(&path, &bytes).expect("flip");
    forget_recovery_point(dir.path());
    let log = FileLog::open(dir.path(), FileLogConfig::default()).expect("reopen");
    assert_eq!(offsets(&log), vec![0, 2]);
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(4, 1));
    // The epoch cache no longer knows epoch 2, which only the lost batches had.
    assert_eq!(
        fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).expect("read"),
        "0\n1\n1 0\n"
    );
}

/// Policy: damage in a segment that is not the last one truncates that
/// segment and deletes every later segment.
#[test]
fn damage_in_an_older_segment_drops_every_later_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    let size = fill(&mut log, 10);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    drop(log);
    let path = segment_path(dir.path(), bases[1]);
    let mut bytes = fs::read(&path).expect("read");
    bytes[size + 30] ^= 0x80; // the second batch of the second segment
    fs::write(&path, &bytes).expect("flip");
    forget_recovery_point(dir.path());
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.segment_base_offsets(), bases[..2]);
    assert_eq!(log.end_offset().offset, bases[1] + 2);
    for gone in &bases[2..] {
        assert!(!segment_path(dir.path(), *gone).exists());
    }
}

/// A `MakeWriter` that keeps what the subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Self;
    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}

/// Policy: every truncation by recovery is reported with a warning naming
/// the segment file and the offset where the log now ends.
#[test]
fn recovery_warns_with_the_file_and_offset_it_truncated_at() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), FileLogConfig::default()).expect("open");
    let size = fill(&mut log, 4) as u64;
    drop(log);
    let path = segment_path(dir.path(), 0);
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    file.set_len(size * 2 + 5).expect("tear");
    drop(file);
    forget_recovery_point(dir.path());
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        FileLog::open(dir.path(), FileLogConfig::default()).expect("reopen");
    });
    let text = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
    assert!(text.contains("WARN"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("offset=4"), "{text}");
}

#[test]
fn deleting_segments_before_a_snapshot_moves_the_log_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 10);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    // Without a snapshot covering the prefix, nothing may go.
    assert!(matches!(
        log.delete_segments_before(bases[2]),
        Err(LogError::MissingSnapshot { .. })
    ));
    let writer = log
        .create_snapshot(OffsetAndEpoch::new(bases[2] + 1, 1))
        .expect("create");
    log.freeze_snapshot(writer).expect("freeze");
    // Segments ending at or below the offset go; the one holding it stays.
    assert_eq!(
        log.delete_segments_before(bases[2] + 1).expect("delete"),
        bases[2]
    );
    assert_eq!(log.segment_base_offsets(), bases[2..]);
    assert!(!segment_path(dir.path(), bases[0]).exists());
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    // No snapshot ends at the first segment's base: the log starts at the
    // snapshot above it (the contract: the earliest snapshot is at the log
    // start).
    assert_eq!(log.start_offset(), bases[2] + 1);
    assert_eq!(
        log.earliest_snapshot_id().map(|s| s.offset),
        Some(bases[2] + 1)
    );
}

#[test]
fn resetting_to_a_snapshot_beyond_the_log_starts_an_empty_log_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 4);
    let id = OffsetAndEpoch::new(100, 7);
    assert!(log.reset_to_snapshot(id).is_err(), "unknown snapshot");
    let writer = log.create_snapshot(id).expect("create");
    log.freeze_snapshot(writer).expect("freeze");
    log.reset_to_snapshot(id).expect("reset");
    assert_eq!(log.start_offset(), 100);
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(100, 7));
    assert_eq!(log.flushed_end_offset(), 100);
    log.append_as_follower(batch(100, 7, 1))
        .expect("append after the snapshot");
    log.flush().expect("flush");
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.segment_base_offsets(), [100]);
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(101, 7));
    assert_eq!(
        fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).expect("read"),
        "0\n1\n7 100\n"
    );
}

/// KIP-630 cleaning (Kafka's `deleteBeforeSnapshot`): the log start moves to
/// the snapshot's end offset, older snapshots go (the bootstrap `0-0`
/// checkpoint stays), then the whole segments below; reads below the new
/// start fail. After a reopen the log starts at its first segment (Kafka's
/// metadata log does not checkpoint its start either).
#[test]
fn deleting_before_a_snapshot_moves_the_start_there_and_deletes_older_snapshots_and_segments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 10);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    let bootstrap = OffsetAndEpoch::new(0, 0);
    let older = OffsetAndEpoch::new(4, 1);
    let target = OffsetAndEpoch::new(bases[2] + 2, 2);
    for id in [bootstrap, older, target] {
        log.write_snapshot(id, b"snapshot").expect("write");
    }
    assert!(
        !log.delete_before_snapshot(OffsetAndEpoch::new(6, 1))
            .expect("unknown id")
    );
    assert!(log.delete_before_snapshot(target).expect("cleans"));
    assert_eq!(log.start_offset(), target.offset);
    assert_eq!(log.snapshot_ids(), [bootstrap, target]);
    assert_eq!(log.segment_base_offsets(), bases[2..]);
    assert!(matches!(
        log.read(target.offset - 2, 100),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(offsets(&log).first(), Some(&target.offset));
    assert!(
        !log.delete_before_snapshot(target)
            .expect("nothing left to do")
    );
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    // The start survives the reopen: it is the earliest snapshot's end
    // offset, inside the first segment kept.
    assert_eq!(log.start_offset(), target.offset);
    assert_eq!(log.earliest_snapshot_id(), Some(target));
    assert!(matches!(
        log.read(target.offset - 2, 100),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

/// A snapshot fetched from the leader is a `.part` file until installed;
/// installing it replaces the whole log, which restarts at its end offset; a
/// crash before the install leaves the log as it was.
#[test]
fn a_fetched_snapshot_is_invisible_until_installed_and_then_replaces_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 4);
    let id = OffsetAndEpoch::new(50, 3);
    log.begin_fetched_snapshot(id).expect("begin");
    assert_eq!(log.append_fetched_snapshot(b"abc").expect("append"), 3);
    assert_eq!(log.fetched_snapshot(), Some((id, 3)));
    assert_eq!(log.latest_snapshot_id(), None);
    drop(log);
    // A crash mid-fetch: the partial snapshot is gone, the log unchanged.
    let mut log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.latest_snapshot_id(), None);
    assert_eq!(log.end_offset().offset, 8);
    assert!(
        !file_names(dir.path())
            .iter()
            .any(|n| n.ends_with(".checkpoint.part"))
    );
    log.write_snapshot(OffsetAndEpoch::new(4, 1), b"older")
        .expect("write");
    // Installed snapshots are checked (whole batches, valid CRCs): a real
    // batch, received in two chunks.
    let content = batch(0, 3, 2);
    log.begin_fetched_snapshot(id).expect("begin");
    log.append_fetched_snapshot(&content[..10]).expect("append");
    log.append_fetched_snapshot(&content[10..]).expect("append");
    assert_eq!(log.install_fetched_snapshot().expect("install"), id);
    assert_eq!(log.start_offset(), 50);
    assert_eq!(log.end_offset(), id);
    assert_eq!(log.snapshot_ids(), [id], "older snapshots go");
    let chunk = log
        .read_snapshot_chunk(id, 2, 3)
        .expect("read")
        .expect("exists");
    assert_eq!(
        (chunk.size, &chunk.bytes[..]),
        (content.len() as u64, &content[2..5])
    );
    drop(log);
    let log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.segment_base_offsets(), [50]);
    assert_eq!(log.end_offset(), id);
}

/// A fetched snapshot that is not whole batches with valid CRCs (a damaged
/// file on the leader, a bad wire) is dropped before it replaces anything:
/// the follower keeps its log and its own snapshots and can fetch again.
#[test]
fn a_damaged_fetched_snapshot_is_refused_naming_the_file_and_the_log_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 4);
    let own = OffsetAndEpoch::new(4, 1);
    log.write_snapshot(own, &batch(0, 1, 2)).expect("write");
    let before = file_names(dir.path());
    let id = OffsetAndEpoch::new(50, 3);
    for damage in ["flipped byte", "truncated"] {
        let mut content = batch(0, 3, 2).to_vec();
        match damage {
            "flipped byte" => content[70] ^= 0xff,
            _ => content.truncate(content.len() - 7),
        }
        log.begin_fetched_snapshot(id).expect("begin");
        log.append_fetched_snapshot(&content).expect("append");
        let err = log
            .install_fetched_snapshot()
            .expect_err("a damaged snapshot is refused");
        assert!(
            matches!(&err, LogError::Corrupt { path, .. }
                if path.to_string_lossy().ends_with(".checkpoint.part")),
            "{damage}: {err}"
        );
        assert_eq!(log.fetched_snapshot(), None, "{damage}");
        assert_eq!(log.snapshot_ids(), [own], "{damage}");
        assert_eq!(log.end_offset().offset, 8, "{damage}");
        assert_eq!(
            file_names(dir.path()),
            before,
            "{damage}: no file left or lost"
        );
    }
}

/// A snapshot frozen by another writer is listed once registered; one that
/// the log start passed meanwhile is deleted instead.
#[test]
fn registering_a_snapshot_lists_it_unless_the_log_start_passed_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 10);
    let early = OffsetAndEpoch::new(2, 1);
    let writer =
        kraft_controller::log::snapshot::SnapshotWriter::create(dir.path(), early).expect("create");
    writer.freeze().expect("freeze");
    assert!(matches!(
        log.register_snapshot(OffsetAndEpoch::new(6, 1)),
        Err(LogError::MissingSnapshot { .. })
    ));
    log.write_snapshot(OffsetAndEpoch::new(8, 2), b"s")
        .expect("write");
    log.write_snapshot(OffsetAndEpoch::new(12, 2), b"s")
        .expect("write");
    assert!(
        log.delete_before_snapshot(OffsetAndEpoch::new(12, 2))
            .expect("cleans")
    );
    log.register_snapshot(early).expect("register");
    assert_eq!(log.snapshot_ids(), [OffsetAndEpoch::new(12, 2)]);
    assert!(
        !dir.path()
            .join("00000000000000000002-0000000001.checkpoint")
            .exists()
    );
}

/// A crash between freezing a fetched snapshot and truncating the log leaves
/// the snapshot beyond the log; on start the log is truncated fully to it
/// (what the engine calls first, as Kafka's `KafkaMetadataLog.apply`).
#[test]
fn a_snapshot_left_beyond_the_log_by_a_crash_truncates_the_log_to_it_on_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut log = FileLog::open(dir.path(), config()).expect("open");
    fill(&mut log, 4);
    drop(log);
    let id = OffsetAndEpoch::new(50, 3);
    let mut writer =
        kraft_controller::log::snapshot::SnapshotWriter::create(dir.path(), id).expect("create");
    writer.append(b"fetched").expect("append");
    writer.freeze().expect("freeze");
    let mut log = FileLog::open(dir.path(), config()).expect("reopen");
    assert_eq!(log.end_offset().offset, 8, "open alone keeps the log");
    assert!(log.truncate_to_latest_snapshot().expect("truncates"));
    assert_eq!((log.start_offset(), log.end_offset()), (50, id));
    assert!(!log.truncate_to_latest_snapshot().expect("idempotent"));
}
