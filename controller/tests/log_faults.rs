//! Disk faults under [`FileLog`], on the in-memory file system [`MemoryFs`]
//! (page-cache semantics: only fsynced bytes and fsynced directory entries
//! survive a crash; after a failed fsync, later fsyncs of that file report
//! success and persist nothing, as Linux does).
//!
//! The policy under test (`docs/log.md`, "Disk faults"): fail-stop. After
//! any failed write, fsync, rename or other file operation in a mutating
//! call, the log refuses every later call with [`LogError::Stopped`] naming
//! the first failure; `flushed_end_offset` never moves past what was durably
//! fsynced and the recovery point is never written above it; the next open
//! recovers from what is on disk.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use bytes::Bytes;
use kraft_controller::{
    log::{
        FileLog, FileLogConfig, LogError, ReplicatedLog,
        fault_fs::{Errno, Fault, FsOp, MemoryFs},
        recovery_point::{RECOVERY_POINT_CHECKPOINT_FILE, RecoveryPointFile},
    },
    record,
};

const DIR: &str = "/data/__cluster_metadata-0";

/// The recovery point after every flush, small segments.
fn config() -> FileLogConfig {
    FileLogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 128,
        recovery_point_interval_ms: 0,
    }
}

fn open(fs: &MemoryFs) -> Result<FileLog, LogError> {
    FileLog::open_on(Arc::new(fs.clone()), Path::new(DIR), config())
}

fn batch(base: i64, epoch: i32, count: usize) -> Bytes {
    let values: Vec<Bytes> = (0..count).map(|_| Bytes::from(vec![7u8; 100])).collect();
    record::encode_data_batch(base, epoch, 1_700_000_000_000, &values).expect("encodes")
}

fn recovery_point_file() -> PathBuf {
    Path::new(DIR).join(RECOVERY_POINT_CHECKPOINT_FILE)
}

/// The recovery point a crash now would leave.
fn durable_recovery_point(fs: &MemoryFs) -> Option<i64> {
    let bytes = fs.durable_file(&recovery_point_file())?;
    let text = String::from_utf8(bytes).expect("utf-8");
    RecoveryPointFile::decode(&recovery_point_file(), &text).expect("parses")
}

fn assert_stopped_naming(err: &LogError, action: &str, errno: i32) {
    match err {
        LogError::Stopped { dir, failure } => {
            assert_eq!(dir, Path::new(DIR));
            assert_eq!(failure.action, action, "{err}");
            assert_eq!(failure.errno, Some(errno), "{err}");
        }
        other => panic!("expected the log to be stopped, got {other}"),
    }
}

#[test]
fn a_failed_fsync_is_never_reported_as_flushed_nor_retried() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"));

    let err = log.flush().expect_err("the fsync fails");
    assert!(
        matches!(&err, LogError::Io { action: "fsync of", source, .. } if source.raw_os_error() == Some(5)),
        "{err}"
    );
    assert_eq!(
        log.flushed_end_offset(),
        2,
        "the failed fsync is not flushed"
    );
    assert_eq!(log.recovery_point(), 2);

    // A retry would now succeed (the kernel marked the pages clean) and
    // claim offsets 2..4 durable: the log refuses it instead.
    let err = log.flush().expect_err("no retry");
    assert_stopped_naming(&err, "fsync of", 5);
    assert_eq!(log.flushed_end_offset(), 2);
    assert_eq!(durable_recovery_point(&fs), Some(2));
    let err = log
        .append_as_follower(batch(4, 1, 2))
        .expect_err("no more appends");
    assert_stopped_naming(&err, "fsync of", 5);
    assert!(err.to_string().contains(DIR), "{err}");
    assert!(err.to_string().contains("os error 5"), "{err}");
    log.read(0, 1 << 20).expect_err("no reads either");

    drop(log);
    fs.crash();
    let log = open(&fs).expect("reopen recovers from disk");
    assert_eq!(
        log.end_offset().offset,
        2,
        "only the flushed batch survived"
    );
    assert_eq!(log.flushed_end_offset(), 2);
}

#[test]
fn enospc_on_append_stops_the_log_and_a_restart_with_space_appends_again() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    let used: u64 = 400;
    fs.set_capacity(Some(used + 300));

    let mut next = 2;
    let err = loop {
        match log.append_as_follower(batch(next, 1, 2)) {
            Ok(_) => next += 2,
            Err(e) => break e,
        }
        assert!(next < 100, "the volume never filled");
    };
    assert!(
        matches!(&err, LogError::Io { source, .. } if source.raw_os_error() == Some(28)),
        "{err}"
    );
    assert!(err.to_string().contains(DIR), "{err}");
    let err = log.flush().expect_err("stopped");
    assert_stopped_naming(&err, "appending to", 28);
    assert_eq!(log.flushed_end_offset(), 2);

    drop(log);
    fs.crash();
    fs.clear_faults();
    let mut log = open(&fs).expect("reopen once space is free");
    assert_eq!(log.end_offset().offset, 2);
    log.append_as_follower(batch(2, 1, 2))
        .expect("append after the restart");
    log.flush().expect("flush");
    assert_eq!(log.flushed_end_offset(), 4);
}

#[test]
fn a_short_write_cut_by_a_failure_leaves_a_torn_tail_that_reopen_truncates() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    fs.set_short_writes(Some(10));
    fs.inject(Fault::next(FsOp::Write, Errno::Eio).on_path(".log").nth(2));

    let err = log
        .append_as_follower(batch(2, 1, 2))
        .expect_err("the second piece of the write fails");
    assert!(
        matches!(
            &err,
            LogError::Io {
                action: "appending to",
                ..
            }
        ),
        "{err}"
    );
    let segment = Path::new(DIR).join(format!("{:020}.log", 0));
    let flushed_len = batch(0, 1, 2).len();
    assert_eq!(
        fs.cached_file(&segment).map(|b| b.len()),
        Some(flushed_len + 10),
        "10 bytes of the second batch are in the page cache"
    );

    // The process dies, the kernel keeps the torn bytes: recovery finds
    // them above the recovery point and cuts them.
    drop(log);
    fs.restart_process();
    fs.clear_faults();
    let log = open(&fs).expect("reopen");
    assert_eq!(log.end_offset().offset, 2);
    assert_eq!(
        fs.cached_file(&segment).map(|b| b.len()),
        Some(flushed_len),
        "the torn tail is truncated"
    );
    let read = log.read(0, 1 << 20).expect("read");
    assert_eq!(read.records, batch(0, 1, 2));
}

#[test]
fn a_failed_rename_of_the_recovery_point_leaves_the_old_one() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    assert_eq!(durable_recovery_point(&fs), Some(2));
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::Rename, Errno::Eio).on_path(RECOVERY_POINT_CHECKPOINT_FILE));

    let err = log.flush().expect_err("the rename fails");
    assert!(
        matches!(
            &err,
            LogError::Io {
                action: "renaming into place",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(log.recovery_point(), 2);
    assert_eq!(
        fs.cached_file(&recovery_point_file()),
        Some(RecoveryPointFile::encode(2).into_bytes())
    );
    assert_eq!(durable_recovery_point(&fs), Some(2));
    let err = log.flush().expect_err("stopped");
    assert_stopped_naming(&err, "renaming into place", 5);

    drop(log);
    fs.crash();
    let log = open(&fs).expect("reopen");
    // The segment was fsynced before the rename failed: its batches are
    // durable, above the old recovery point, and checked again on open.
    assert_eq!(log.end_offset().offset, 4);
}

#[test]
fn a_failed_directory_fsync_at_a_segment_roll_stops_the_log() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    // The first append writes the epoch checkpoint (a directory fsync too).
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::SyncDir, Errno::Eio));
    let mut next = 2;
    let err = loop {
        match log.append_as_follower(batch(next, 1, 2)) {
            Ok(_) => next += 2,
            Err(e) => break e,
        }
        assert!(next < 1000, "no segment rolled");
    };
    assert!(
        matches!(
            &err,
            LogError::Io {
                action: "fsync of directory",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(log.segment_count(), 2, "the roll created the new segment");
    let err = log
        .append_as_follower(batch(next, 1, 2))
        .expect_err("stopped");
    assert_stopped_naming(&err, "fsync of directory", 5);

    drop(log);
    fs.crash();
    let log = open(&fs).expect("reopen");
    // The closed segment was fsynced before the roll: everything in it
    // survived; the new segment's name never reached the disk.
    assert_eq!(log.end_offset().offset, next);
    assert_eq!(log.segment_count(), 1);
}

#[test]
fn the_message_the_node_exits_with_is_one_line_naming_the_directory_the_operation_and_the_errno() {
    use kraft_controller::{raft::RaftError, server::event_loop::LoopError};
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::Sync, Errno::Enospc).on_path(".log"));
    let err = log.flush().expect_err("the fsync fails");
    // `kraft-controller run` prints "kraft-controller run: {error}" and
    // exits with status 1 when the event loop stops on this error.
    let line = format!(
        "kraft-controller run: {}",
        LoopError::Engine(RaftError::Log(err))
    );
    assert_eq!(
        line,
        "kraft-controller run: raft engine: metadata log: fsync of \
         /data/__cluster_metadata-0/00000000000000000000.log: \
         No space left on device (os error 28)"
    );
    let later = log.flush().expect_err("stopped");
    assert_eq!(
        later.to_string(),
        "metadata log in /data/__cluster_metadata-0 stopped after a failed fsync of \
         /data/__cluster_metadata-0/00000000000000000000.log: No space left on device \
         (os error 28); a failed write or fsync is never retried: restart the node to \
         recover from what is on disk"
    );
}

/// The limit of fail-stop (docs/log.md, "Disk faults"): a process restart
/// without a reboot reads, from the page cache, bytes a failed fsync never
/// wrote, and the reopen's fsync may report success without writing them.
/// If the disk then loses them, the recovery point catches it: the next
/// open refuses the volume instead of truncating records it acknowledged.
#[test]
fn bytes_a_failed_fsync_lost_behind_a_restart_are_refused_below_the_recovery_point_after_a_crash() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"));
    log.flush().expect_err("the fsync fails");
    drop(log);

    fs.restart_process();
    let log = open(&fs).expect("the page cache still holds offsets 2..4");
    assert_eq!(log.end_offset().offset, 4);
    assert_eq!(
        log.recovery_point(),
        4,
        "the reopen's fsync reported success"
    );
    drop(log);

    fs.crash();
    let err = open(&fs).expect_err("the disk never got offsets 2..4");
    assert!(
        matches!(
            err,
            LogError::DamagedBelowRecoveryPoint {
                offset: 2,
                recovery_point: 4,
                ..
            }
        ),
        "{err}"
    );
}

// ---- flush jobs: the fsyncs of a flush off the event loop (issue 23) ------

#[test]
fn a_flush_job_moves_the_flushed_end_only_when_it_ends_and_only_to_where_it_started() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    let job = log.start_flush().expect("a job");
    assert_eq!(job.file_count(), 1, "the segment's .log");
    let done = job.run();
    // Appended after the job's fsyncs ran, before its end reached the log:
    // not durable, and the log must not count it.
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    assert_eq!(
        log.flushed_end_offset(),
        0,
        "nothing moves before the job ends"
    );
    log.finish_flush(done).expect("ends");
    assert_eq!(log.flushed_end_offset(), 2, "the job's end, not the log's");
    assert_eq!(durable_recovery_point(&fs), Some(2));
    let job = log.start_flush().expect("a second job");
    assert!(
        job.file_count() >= 1,
        "offsets 2..4 are still unsynced: their file is in the next job"
    );
    drop(job);

    drop(log);
    fs.crash();
    let mut log = open(&fs).expect("reopen");
    assert_eq!(
        log.end_offset().offset,
        2,
        "only what the job fsynced survived the crash"
    );
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    let job = log.start_flush().expect("a job");
    log.finish_flush(job.run()).expect("ends");
    assert_eq!(log.flushed_end_offset(), 4);
    let job = log.start_flush().expect("one more");
    assert_eq!(
        job.file_count(),
        0,
        "no records left to fsync once a job ended at the log end"
    );
}

#[test]
fn a_flush_job_fsyncs_the_records_not_the_index_and_a_crash_rebuilds_the_index() {
    // The index is derived from the records: a commit waits for the
    // records' fsync only, and a crash that loses index entries loses
    // nothing the open does not rebuild from the records.
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    for base in (0..8).step_by(2) {
        log.append_as_follower(batch(base, 1, 2)).expect("append");
    }
    let index = Path::new(DIR).join(format!("{:020}.index", 0));
    let written = fs.cached_file(&index).expect("the segment's index");
    assert!(
        !written.is_empty(),
        "batches past index.interval.bytes wrote index entries"
    );
    let job = log.start_flush().expect("a job");
    assert_eq!(job.file_count(), 1, "the segment's .log only");
    log.finish_flush(job.run()).expect("ends");
    assert_eq!(log.flushed_end_offset(), 8);
    assert_eq!(
        durable_recovery_point(&fs),
        Some(8),
        "inside the active segment"
    );
    assert_eq!(
        fs.durable_file(&index).unwrap_or_default(),
        Vec::<u8>::new(),
        "the job left every index entry unsynced"
    );
    let read = |log: &FileLog, offset: i64| log.read(offset, 1 << 20).expect("reads").records;
    let before: Vec<Bytes> = (0..8).map(|offset| read(&log, offset)).collect();

    drop(log);
    fs.crash();
    let mut log = open(&fs).expect("reopen");
    assert_eq!(log.end_offset().offset, 8, "every record the job fsynced");
    for (offset, expected) in (0..8).zip(&before) {
        assert_eq!(&read(&log, offset), expected, "a read from offset {offset}");
    }
    assert_eq!(
        fs.durable_file(&index),
        Some(written),
        "the open rebuilt the index from the records and fsynced it"
    );

    // The index a job left stays to be fsynced by the next synchronous
    // flush, and by a roll even when no write came after the job.
    log.append_as_follower(batch(8, 1, 2)).expect("append");
    let job = log.start_flush().expect("a job");
    log.finish_flush(job.run()).expect("ends");
    assert_ne!(fs.durable_file(&index), fs.cached_file(&index));
    log.flush().expect("a synchronous flush");
    assert_eq!(fs.durable_file(&index), fs.cached_file(&index));
    let mut next = 10;
    while log.segment_count() == 1 {
        log.append_as_follower(batch(next, 1, 2)).expect("append");
        next += 2;
        if log.segment_count() == 1 {
            let job = log.start_flush().expect("a job");
            log.finish_flush(job.run()).expect("ends");
        }
    }
    assert_eq!(
        fs.durable_file(&index),
        fs.cached_file(&index),
        "the roll fsynced the closed segment's index, written before the last job"
    );
}

#[test]
fn a_flush_job_that_crossed_a_truncation_moves_nothing() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    log.append_as_follower(batch(4, 1, 2)).expect("append");
    let job = log.start_flush().expect("a job to offset 6");
    // A new leader's log diverges at 4: truncated, then rewritten in epoch 2
    // up to the job's end offset again.
    log.truncate_to(4).expect("truncate");
    log.append_as_follower(batch(4, 2, 2)).expect("append");
    log.finish_flush(job.run()).expect("ends");
    assert!(
        log.flushed_end_offset() <= 4,
        "offsets 4..6 of epoch 2 were written after the job began: flushed end {}",
        log.flushed_end_offset()
    );

    let job = log.start_flush().expect("the next job");
    log.finish_flush(job.run()).expect("ends");
    assert_eq!(log.flushed_end_offset(), 6);
}

#[test]
fn a_failed_fsync_in_a_flush_job_stops_the_log_and_moves_nothing() {
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"));

    let job = log.start_flush().expect("a job");
    let done = job.run();
    // Refused at once, before the job's result reaches the log.
    let err = log
        .append_as_follower(batch(4, 1, 2))
        .expect_err("stopped when the job's fsync failed");
    assert_stopped_naming(&err, "fsync of", 5);
    let err = log.finish_flush(done).expect_err("the job's fsync failed");
    assert_stopped_naming(&err, "fsync of", 5);
    assert_eq!(log.flushed_end_offset(), 2);
    let err = log.start_flush().expect_err("no retry");
    assert_stopped_naming(&err, "fsync of", 5);
    let err = log.flush().expect_err("nor a synchronous one");
    assert_stopped_naming(&err, "fsync of", 5);
    assert_eq!(durable_recovery_point(&fs), Some(2));
}

#[test]
fn a_segment_roll_while_a_flush_job_runs_never_writes_the_recovery_point_above_lost_bytes() {
    // A job fsyncs a segment's open file on another thread. Linux reports a
    // failed fsync once per open file: if the job's failed and the loop's
    // roll then fsynced the same file, the roll would hear success for bytes
    // that are gone, and a recovery point written then would lie above them
    // (after a crash the log would refuse to open). So a roll leaves the
    // recovery point to the job's end, and a failed job stops the log at once.
    let fs = MemoryFs::new();
    let mut log = open(&fs).expect("open");
    log.append_as_follower(batch(0, 1, 2)).expect("append");
    log.flush().expect("flush");
    log.append_as_follower(batch(2, 1, 2)).expect("append");
    let job = log.start_flush().expect("a job to offset 4");
    let mut next = 4;
    while log.segment_count() == 1 {
        log.append_as_follower(batch(next, 1, 2)).expect("append");
        next += 2;
    }
    assert_eq!(
        durable_recovery_point(&fs),
        Some(2),
        "a roll while a job runs leaves the recovery point to the job's end"
    );
    log.finish_flush(job.run()).expect("ends");
    assert_eq!(durable_recovery_point(&fs), Some(4), "the job's end");

    let job = log.start_flush().expect("a second job");
    fs.inject(Fault::next(FsOp::Sync, Errno::Eio).on_path(".log"));
    let done = job.run();
    let err = log
        .append_as_follower(batch(next, 1, 2))
        .expect_err("stopped as soon as the job's fsync failed");
    assert_stopped_naming(&err, "fsync of", 5);
    let err = log.finish_flush(done).expect_err("the job failed");
    assert_stopped_naming(&err, "fsync of", 5);
    assert_eq!(durable_recovery_point(&fs), Some(4));

    drop(log);
    fs.crash();
    let log = open(&fs).expect("reopens: the recovery point lies below every lost byte");
    assert!(log.end_offset().offset >= 4);
}
