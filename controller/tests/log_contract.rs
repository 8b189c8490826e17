//! The [`ReplicatedLog`] contract (see `kraft_controller::log`), as one suite
//! that every implementation passes: [`MemoryLog`], [`FileLog`] on real
//! files, and [`FileLog`] on the in-memory file system
//! ([`MemoryFs`]), where a crash keeps only what was fsynced (files and
//! directory entries), so a missing fsync in the log fails the suite.
//!
//! Each test is written once against [`Harness`]; the `suite!` macro
//! instantiates it for both logs.

use std::{path::Path, sync::Arc};

use bytes::{Bytes, BytesMut};
use kraft_controller::{
    log::{
        FileLog, FileLogConfig, LogError, MemoryLog, OffsetAndEpoch, ReplicatedLog,
        fault_fs::MemoryFs,
    },
    record::{self, iter_batches},
};

/// A log under test and how it crashes.
trait Harness {
    fn log(&mut self) -> &mut dyn ReplicatedLog;
    /// Stops the process without a flush and starts it again.
    fn crash_and_reopen(&mut self);
}

struct Memory(MemoryLog);

impl Harness for Memory {
    fn log(&mut self) -> &mut dyn ReplicatedLog {
        &mut self.0
    }
    fn crash_and_reopen(&mut self) {
        self.0.crash();
    }
}

struct File {
    dir: tempfile::TempDir,
    log: Option<FileLog>,
}

fn small_config() -> FileLogConfig {
    // Small segments and a dense index so that the suite crosses segments.
    FileLogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 128,
        ..FileLogConfig::default()
    }
}

impl Harness for File {
    fn log(&mut self) -> &mut dyn ReplicatedLog {
        self.log.as_mut().expect("open")
    }
    fn crash_and_reopen(&mut self) {
        drop(self.log.take());
        self.log = Some(FileLog::open(self.dir.path(), small_config()).expect("reopen"));
    }
}

/// [`FileLog`] on [`MemoryFs`]; a crash is a power loss.
struct FileOnMemoryFs {
    fs: MemoryFs,
    log: Option<FileLog>,
}

const MEMORY_FS_DIR: &str = "/data/__cluster_metadata-0";

impl Harness for FileOnMemoryFs {
    fn log(&mut self) -> &mut dyn ReplicatedLog {
        self.log.as_mut().expect("open")
    }
    fn crash_and_reopen(&mut self) {
        drop(self.log.take());
        self.fs.crash();
        self.log = Some(open_on_memory_fs(&self.fs).expect("reopen"));
    }
}

fn open_on_memory_fs(fs: &MemoryFs) -> Result<FileLog, LogError> {
    FileLog::open_on(
        Arc::new(fs.clone()),
        Path::new(MEMORY_FS_DIR),
        small_config(),
    )
}

fn file_on_memory_fs() -> FileOnMemoryFs {
    let fs = MemoryFs::new();
    let log = open_on_memory_fs(&fs).expect("open");
    FileOnMemoryFs { fs, log: Some(log) }
}

fn memory() -> Memory {
    Memory(MemoryLog::new())
}

fn file() -> File {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = FileLog::open(dir.path(), small_config()).expect("open");
    File {
        dir,
        log: Some(log),
    }
}

/// One data batch of `count` 100-byte records, offsets from `base`.
fn batch(base: i64, epoch: i32, count: usize) -> Bytes {
    let values: Vec<Bytes> = (0..count)
        .map(|i| Bytes::from(vec![(base as usize + i) as u8; 100]))
        .collect();
    record::encode_data_batch(base, epoch, 1_700_000_000_000, &values).expect("encodes")
}

/// (base offset, last offset, epoch) of each batch in `bytes`.
fn summary(bytes: &[u8]) -> Vec<(i64, i64, i32)> {
    iter_batches(bytes, true)
        .map(|b| {
            let (h, _) = b.expect("valid batch");
            (h.base_offset, h.last_offset(), h.partition_leader_epoch)
        })
        .collect()
}

fn read_all(h: &mut dyn Harness) -> Vec<(i64, i64, i32)> {
    let log = h.log();
    let mut out = Vec::new();
    let mut next = log.start_offset();
    loop {
        let fetched = log.read(next, usize::MAX).expect("read");
        if fetched.records.is_empty() {
            return out;
        }
        let batches = summary(&fetched.records);
        next = batches.last().expect("non-empty").1 + 1;
        out.extend(batches);
    }
}

fn appending_as_leader_assigns_offsets_and_stamps_the_epoch(mut h: impl Harness) {
    let log = h.log();
    let info = log.append_as_leader(batch(77, 9, 3), 1).expect("append");
    assert_eq!((info.first_offset, info.last_offset), (0, 2));
    let two = [batch(0, 0, 2), batch(0, 0, 1)].concat();
    let info = log.append_as_leader(Bytes::from(two), 2).expect("append");
    assert_eq!((info.first_offset, info.last_offset), (3, 5));
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(6, 2));
    assert_eq!(read_all(&mut h), vec![(0, 2, 1), (3, 4, 2), (5, 5, 2)]);
}

fn appending_as_follower_keeps_the_leaders_offsets_and_epochs(mut h: impl Harness) {
    let log = h.log();
    log.append_as_follower(batch(0, 3, 2)).expect("append");
    log.append_as_follower(Bytes::from([batch(2, 3, 1), batch(3, 5, 4)].concat()))
        .expect("append");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(7, 5));
    assert_eq!(read_all(&mut h), vec![(0, 1, 3), (2, 2, 3), (3, 6, 5)]);
}

fn a_follower_append_with_a_gap_is_rejected_and_appends_nothing(mut h: impl Harness) {
    let log = h.log();
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    let err = log
        .append_as_follower(Bytes::from([batch(2, 1, 1), batch(4, 1, 1)].concat()))
        .expect_err("gap");
    assert!(
        matches!(
            err,
            LogError::NonContiguous {
                base_offset: 4,
                end_offset: 3
            }
        ),
        "{err}"
    );
    assert_eq!(log.end_offset().offset, 2);
}

fn an_append_with_an_older_epoch_is_rejected(mut h: impl Harness) {
    let log = h.log();
    log.append_as_follower(batch(0, 4, 1)).expect("append");
    let err = log
        .append_as_follower(batch(1, 3, 1))
        .expect_err("regression");
    assert!(
        matches!(
            err,
            LogError::EpochRegression {
                epoch: 3,
                last_epoch: 4
            }
        ),
        "{err}"
    );
    let err = log
        .append_as_leader(batch(0, 0, 1), 2)
        .expect_err("regression");
    assert!(matches!(err, LogError::EpochRegression { .. }), "{err}");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(1, 4));
}

fn a_batch_with_a_bad_crc_is_rejected(mut h: impl Harness) {
    let mut damaged = BytesMut::from(&batch(0, 1, 1)[..]);
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    let err = h
        .log()
        .append_as_follower(damaged.freeze())
        .expect_err("crc");
    assert!(matches!(err, LogError::Record(_)), "{err}");
    assert_eq!(h.log().end_offset().offset, 0);
}

fn reads_return_whole_batches_within_the_byte_limit_but_at_least_one(mut h: impl Harness) {
    let log = h.log();
    for i in 0..5 {
        log.append_as_follower(batch(i * 2, 1, 2)).expect("append");
    }
    let one = batch(0, 1, 2).len();
    // Less than one batch: still one batch.
    let fetched = log.read(0, 10).expect("read");
    assert_eq!(summary(&fetched.records), vec![(0, 1, 1)]);
    // Two and a half batches: two.
    let fetched = log.read(0, one * 2 + one / 2).expect("read");
    assert_eq!(summary(&fetched.records), vec![(0, 1, 1), (2, 3, 1)]);
    // An offset inside a batch returns that whole batch.
    let fetched = log.read(5, one).expect("read");
    assert_eq!(fetched.start_offset, 5);
    assert_eq!(summary(&fetched.records), vec![(4, 5, 1)]);
    // The end offset: nothing.
    assert!(log.read(10, 1000).expect("read").records.is_empty());
}

fn reads_outside_the_log_are_errors(mut h: impl Harness) {
    let log = h.log();
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    let err = log.read(3, 100).expect_err("past the end");
    assert!(
        matches!(
            err,
            LogError::OffsetOutOfRange {
                offset: 3,
                start_offset: 0,
                end_offset: 2
            }
        ),
        "{err}"
    );
    assert!(log.read(-1, 100).is_err());
}

fn truncation_removes_whole_batches_and_lowers_the_flushed_offset(mut h: impl Harness) {
    let log = h.log();
    for i in 0..4 {
        log.append_as_follower(batch(i * 3, 1 + i as i32, 3))
            .expect("append");
    }
    log.flush().expect("flush");
    assert_eq!(log.flushed_end_offset(), 12);
    // Offset 7 is inside the batch 6..=8: the whole batch goes.
    log.truncate_to(7).expect("truncate");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(6, 2));
    assert_eq!(log.flushed_end_offset(), 6);
    assert_eq!(log.end_offset_for_epoch(4), OffsetAndEpoch::new(6, 2));
    // Truncating at or past the end changes nothing.
    log.truncate_to(100).expect("no-op");
    assert_eq!(log.end_offset().offset, 6);
    // Appends continue from the new end, even with a lower epoch than was cut.
    log.append_as_follower(batch(6, 2, 1)).expect("append");
    assert_eq!(read_all(&mut h), vec![(0, 2, 1), (3, 5, 2), (6, 6, 2)]);
}

fn truncation_to_the_start_empties_the_log(mut h: impl Harness) {
    let log = h.log();
    log.append_as_follower(batch(0, 1, 30)).expect("append");
    log.append_as_follower(batch(30, 2, 30)).expect("append");
    log.truncate_to(0).expect("truncate");
    assert_eq!(log.end_offset(), OffsetAndEpoch::new(0, 0));
    assert!(log.read(0, 100).expect("read").records.is_empty());
    log.append_as_leader(batch(0, 0, 1), 3).expect("append");
    assert_eq!(read_all(&mut h), vec![(0, 0, 3)]);
}

fn end_offset_for_epoch_finds_where_each_epoch_ends(mut h: impl Harness) {
    let log = h.log();
    assert_eq!(log.end_offset_for_epoch(5), OffsetAndEpoch::new(0, 0));
    log.append_as_follower(batch(0, 2, 3)).expect("append");
    log.append_as_follower(batch(3, 2, 1)).expect("append");
    log.append_as_follower(batch(4, 5, 2)).expect("append");
    // Raft §5.3 / KIP-595 divergence: the largest epoch <= asked and its end.
    assert_eq!(log.end_offset_for_epoch(1), OffsetAndEpoch::new(0, 0));
    assert_eq!(log.end_offset_for_epoch(2), OffsetAndEpoch::new(4, 2));
    assert_eq!(log.end_offset_for_epoch(4), OffsetAndEpoch::new(4, 2));
    assert_eq!(log.end_offset_for_epoch(5), OffsetAndEpoch::new(6, 5));
    assert_eq!(log.end_offset_for_epoch(9), OffsetAndEpoch::new(6, 5));
}

fn a_crash_keeps_every_flushed_record(mut h: impl Harness) {
    for i in 0..6 {
        h.log()
            .append_as_follower(batch(i * 5, 1, 5))
            .expect("append");
    }
    h.log().flush().expect("flush");
    let flushed = h.log().flushed_end_offset();
    assert_eq!(flushed, 30);
    h.log().append_as_follower(batch(30, 2, 5)).expect("append");
    h.crash_and_reopen();
    let end = h.log().end_offset().offset;
    assert!(
        (flushed..=35).contains(&end),
        "end {end} must keep the flushed prefix {flushed} and add nothing"
    );
    assert_eq!(h.log().flushed_end_offset(), end);
    let batches = read_all(&mut h);
    assert_eq!(
        batches[..6],
        (0..6).map(|i| (i * 5, i * 5 + 4, 1)).collect::<Vec<_>>()[..]
    );
    // The log accepts appends from wherever it ended.
    h.log()
        .append_as_follower(batch(end, 3, 1))
        .expect("append after reopen");
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod memory_log {
            $(#[test] fn $name() { super::$name(super::memory()); })*
        }
        mod file_log {
            $(#[test] fn $name() { super::$name(super::file()); })*
        }
        mod file_log_on_memory_fs {
            $(#[test] fn $name() { super::$name(super::file_on_memory_fs()); })*
        }
    };
}

suite!(
    appending_as_leader_assigns_offsets_and_stamps_the_epoch,
    appending_as_follower_keeps_the_leaders_offsets_and_epochs,
    a_follower_append_with_a_gap_is_rejected_and_appends_nothing,
    an_append_with_an_older_epoch_is_rejected,
    a_batch_with_a_bad_crc_is_rejected,
    reads_return_whole_batches_within_the_byte_limit_but_at_least_one,
    reads_outside_the_log_are_errors,
    truncation_removes_whole_batches_and_lowers_the_flushed_offset,
    truncation_to_the_start_empties_the_log,
    end_offset_for_epoch_finds_where_each_epoch_ends,
    a_crash_keeps_every_flushed_record,
);
