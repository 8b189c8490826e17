//! [`FileLog`]: the [`ReplicatedLog`] on disk, in Kafka's layout of the
//! `__cluster_metadata-0` partition directory (Kafka's `KafkaMetadataLog` over
//! `UnifiedLog`).
//!
//! Owns the segments, the leader epoch cache, `partition.metadata`, the list of
//! snapshot files, and recovery on open. It must not decide what to append or
//! truncate: the Raft engine does.
//!
//! # Recovery on open
//!
//! Every segment is checked; a damaged tail at or above the recovery point
//! (`recovery-point-offset-checkpoint`) is truncated, damage below it refuses
//! to open (the policy is in `log/recovery.rs`). Besides:
//! - a log whose first offset is above 0 with no snapshot at or above it
//!   refuses to open ([`LogError::MissingSnapshot`]): its prefix is gone;
//! - snapshots below the first segment (but the bootstrap `0-0` checkpoint)
//!   are deleted, as Kafka's `KafkaMetadataLog.recoverSnapshots` does.
//!
//! # Recovery point
//!
//! Written (atomically) only with an offset below which everything is
//! fsynced: on open, once every segment is fsynced; after a segment roll
//! (the closed segment was just fsynced, and every older one at its own
//! roll, unless a flush job runs: see `log/flush.rs`); and after a
//! [`ReplicatedLog::flush`] or the end of a flush job
//! ([`ReplicatedLog::finish_flush`]) when at least
//! `recovery_point_interval_ms` passed since the last write. Not on every
//! flush: the engine flushes once per commit, and each write costs two
//! fsyncs and a rename. The rule is safe because a recovery point that
//! lags only widens the tail that recovery checks and may truncate; it never
//! claims unflushed bytes. Anything that cuts the log below it (a
//! truncation, a reset to a snapshot) lowers it on disk first, so a crash in
//! between finds a recovery point at or below the log end.
//!
//! # Log start offset
//!
//! Cleaning ([`ReplicatedLog::delete_before_snapshot`]) moves the log start
//! offset to a snapshot's end offset and deletes the whole segments below
//! it; the segment holding the new start keeps its older bytes, unreadable.
//! The start is not checkpointed: on open it is the first segment's base
//! offset if a snapshot ends there (or it is 0), else the earliest snapshot
//! above it (cleaning deletes the older snapshots before it moves the
//! start, so that snapshot is the one the start was moved to). The earliest
//! snapshot is then at the log start, as the contract says, after a crash
//! too (the deterministic simulation on `FileLog` found a reopened log
//! starting below its earliest snapshot).

use std::path::{Path, PathBuf};

use bytes::Bytes;

mod ops;

use super::{
    FlushDone, FlushJob, IoFailure, LogAppendInfo, LogError, LogFetchInfo, OffsetAndEpoch,
    ReplicatedLog, Result, SnapshotChunk,
    epoch_cache::{EpochEntry, LeaderEpochCache},
    flush::JobFailure,
    fs::{Fs, fsync_dir_on, io_err, read_text, real_fs, write_atomically_on},
    recovery,
    recovery_point::RecoveryPointFile,
    segment::Segment,
    snapshot::{self, SnapshotReader, SnapshotWriter},
};
use crate::record::{self, BatchHeader};

/// Name of the metadata partition's directory under `metadata.log.dir`
/// (`__cluster_metadata-0`), and Kafka's `Uuid.METADATA_TOPIC_ID`
/// (`AAAAAAAAAAAAAAAAAAAAAQ`), the fixed topic id of `__cluster_metadata`:
/// both defined once in `kraft_common::metadata_topic`.
pub use kraft_common::metadata_topic::{METADATA_PARTITION_DIR, METADATA_TOPIC_ID};
/// File holding the partition's topic id.
pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// `<log_dir>/__cluster_metadata-0`.
pub fn partition_dir(log_dir: &Path) -> PathBuf {
    log_dir.join(METADATA_PARTITION_DIR)
}

/// The `partition.metadata` text for a topic id (Kafka's `PartitionMetadata.encode`:
/// no trailing newline).
pub fn encode_partition_metadata(topic_id: uuid::Uuid) -> String {
    format!(
        "version: 0\ntopic_id: {}",
        kraft_common::kafka_uuid::to_string(topic_id)
    )
}

/// Tunables of [`FileLog`], named after Kafka's configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLogConfig {
    /// `metadata.log.segment.bytes`: a new segment is rolled when an append
    /// would grow the active one past this many bytes (default 1 GiB).
    pub segment_bytes: u64,
    /// `index.interval.bytes`: bytes appended between two offset index entries
    /// (default 4096).
    pub index_interval_bytes: u64,
    /// Kafka's `log.flush.offset.checkpoint.interval.ms`: the least time
    /// between two writes of the recovery point after a flush (Kafka's
    /// default is 60 s; 1 s here, so that a disk losing flushed data is
    /// caught for all but the last second of writes). 0 writes it after
    /// every flush. A segment roll writes it whatever the interval.
    pub recovery_point_interval_ms: u64,
}

impl Default for FileLogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            index_interval_bytes: 4096,
            recovery_point_interval_ms: 1000,
        }
    }
}

/// The metadata log in a partition directory. See the module doc for recovery
/// and [`ReplicatedLog`] for the contract.
#[derive(Debug)]
pub struct FileLog {
    dir: PathBuf,
    fs: Fs,
    config: FileLogConfig,
    /// Ascending by base offset, never empty; the last one is active.
    segments: Vec<Segment>,
    epochs: LeaderEpochCache,
    flushed_end_offset: i64,
    /// First readable offset: the first segment's base offset, or the end
    /// offset of the snapshot the log was cleaned up to.
    log_start_offset: i64,
    snapshots: Vec<OffsetAndEpoch>,
    /// A snapshot being received from the leader (FetchSnapshot).
    fetching: Option<SnapshotWriter>,
    recovery_file: RecoveryPointFile,
    /// The recovery point on disk: everything below it is fsynced.
    recovery_point: i64,
    /// When the recovery point was last written.
    recovery_point_written: std::time::Instant,
    /// The first failed file operation of a mutating call: from then on
    /// every call fails ([`LogError::Stopped`]); see "Disk faults".
    stopped: Option<IoFailure>,
    /// Truncations and resets to a snapshot so far: a [`FlushJob`] that
    /// started before one moves nothing when it ends ([`super::flush`]).
    rewinds: u64,
    /// The first failed fsync of a [`FlushJob`], recorded by the job's
    /// thread: every call fails from then on ([`super::flush`]).
    job_failure: JobFailure,
    /// A [`FlushJob`] with files to fsync was started and has not ended:
    /// a segment roll leaves the recovery point to its end.
    job_running: bool,
}

impl FileLog {
    /// Opens (creating if needed) the partition directory `dir`
    /// (`<metadata.log.dir>/__cluster_metadata-0`) and recovers it as the
    /// module doc says.
    ///
    /// Errors: [`LogError::DamagedBelowRecoveryPoint`] (the volume lost
    /// flushed data), [`LogError::MissingSnapshot`], [`LogError::Corrupt`] (a
    /// hole between segments, a `partition.metadata` of another topic, a
    /// recovery point file that does not parse), [`LogError::Io`].
    pub fn open(dir: &Path, config: FileLogConfig) -> Result<Self> {
        Self::open_on(real_fs(), dir, config)
    }

    /// [`Self::open`] on the file system `fs` (tests pass
    /// [`super::fault_fs::MemoryFs`]).
    ///
    /// Errors: as [`Self::open`].
    pub fn open_on(fs: Fs, dir: &Path, config: FileLogConfig) -> Result<Self> {
        fs.create_dir_all(dir)
            .map_err(io_err("creating directory", dir))?;
        check_partition_metadata(&fs, dir)?;
        snapshot::delete_partial_snapshots_on(&fs, dir)?;
        let mut snapshots = snapshot::list_snapshots_on(&fs, dir)?;

        let recovery_file = RecoveryPointFile::new_on(&fs, dir);
        let on_disk = recovery_file.read()?;
        let recovery::Recovered {
            mut segments,
            entries,
        } = recovery::recover_segments(&fs, dir, config.index_interval_bytes, on_disk)?;
        // An empty segment is the first only if no batch survived in it; drop
        // leading empty segments that a later segment follows.
        if segments.is_empty() {
            let start = snapshots.last().map_or(0, |s| s.offset);
            segments.push(Segment::create(&fs, dir, start)?);
            fsync_dir_on(&fs, dir)?;
        }
        recovery::check_end(&segments, on_disk)?;
        let start_offset = segments[0].base_offset();
        if start_offset > 0 && !snapshots.iter().any(|s| s.offset >= start_offset) {
            return Err(LogError::MissingSnapshot {
                dir: dir.to_path_buf(),
                start_offset,
                latest_snapshot: snapshots.last().copied(),
            });
        }
        let stale: Vec<OffsetAndEpoch> = snapshots
            .iter()
            .copied()
            .filter(|s| s.offset > 0 && s.offset < start_offset)
            .collect();
        for id in stale {
            tracing::info!(snapshot = %id, start_offset, "deleting a snapshot below the log start");
            snapshot::delete_snapshot_on(&fs, dir, id)?;
            snapshots.retain(|s| *s != id);
        }
        for segment in &mut segments {
            segment.flush_all()?;
        }
        let epochs = LeaderEpochCache::new_on(&fs, dir, entries);
        epochs.write_if_changed()?;
        // Cleaning moves the start to a snapshot inside the first segment
        // (older snapshots go first): without a snapshot at the first
        // segment's base, the start is the earliest snapshot above it.
        let log_start_offset =
            if start_offset > 0 && !snapshots.iter().any(|s| s.offset == start_offset) {
                snapshots
                    .iter()
                    .map(|s| s.offset)
                    .find(|o| *o > start_offset)
                    .unwrap_or(start_offset)
            } else {
                start_offset
            };
        let end = segments.last().map_or(start_offset, Segment::next_offset);
        // Everything found is fsynced now: the whole log is below the
        // recovery point.
        if on_disk != Some(end) {
            recovery_file.write(end)?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            fs,
            config,
            segments,
            epochs,
            flushed_end_offset: end,
            log_start_offset,
            snapshots,
            fetching: None,
            recovery_file,
            recovery_point: end,
            recovery_point_written: std::time::Instant::now(),
            stopped: None,
            rewinds: 0,
            job_failure: JobFailure::default(),
            job_running: false,
        })
    }

    /// The first write, fsync, rename or other file operation that failed
    /// in a mutating call, or the first failed fsync of a [`FlushJob`] (on
    /// its thread), if one did: the log refuses every call since.
    pub fn stopped(&self) -> Option<&IoFailure> {
        self.stopped.as_ref().or_else(|| self.job_failure.get())
    }

    /// Refuses any call once the log stopped.
    ///
    /// Errors: [`LogError::Stopped`] naming the first failure.
    fn check_running(&self) -> Result<()> {
        match self.stopped() {
            Some(failure) => Err(LogError::Stopped {
                dir: self.dir.clone(),
                failure: failure.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs a mutating call unless the log stopped; if it fails with an
    /// I/O error, the log stops (fail-stop: a failed write or fsync is
    /// never retried, since after a failed fsync the page cache may hold
    /// bytes the disk never got, and a later fsync may report success
    /// without writing them).
    ///
    /// Errors: [`LogError::Stopped`], or the call's own error.
    fn guard<T>(&mut self, call: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.check_running()?;
        let result = call(self);
        if let Err(err) = &result
            && self.stopped.is_none()
            && let Some(failure) = IoFailure::of(err)
        {
            tracing::error!(dir = %self.dir.display(), %failure, "metadata log stopped: a failed file operation is never retried");
            self.stopped = Some(failure);
        }
        result
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The recovery point last written to `recovery-point-offset-checkpoint`:
    /// every batch below it was fsynced before it was written.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    /// Writes the recovery point `offset`; the caller has fsynced every batch
    /// below it.
    fn write_recovery_point(&mut self, offset: i64) -> Result<()> {
        self.recovery_file.write(offset)?;
        self.recovery_point = offset;
        self.recovery_point_written = std::time::Instant::now();
        Ok(())
    }

    /// Lowers the recovery point on disk to `offset` before the log is cut
    /// there (a crash in between then finds it at or below the log end).
    fn lower_recovery_point(&mut self, offset: i64) -> Result<()> {
        if offset < self.recovery_point {
            self.write_recovery_point(offset)?;
        }
        Ok(())
    }

    /// Number of segments (at least 1).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Base offsets of the segments, ascending.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.iter().map(Segment::base_offset).collect()
    }

    /// The leader epoch cache's entries `(epoch, start offset)`.
    pub fn epoch_entries(&self) -> &[EpochEntry] {
        self.epochs.entries()
    }

    /// Ids of the frozen snapshots, ascending (the 0-0 bootstrap checkpoint
    /// included).
    pub fn snapshots(&self) -> &[OffsetAndEpoch] {
        &self.snapshots
    }

    /// Starts writing snapshot `id` (`.checkpoint.part` until
    /// [`Self::freeze_snapshot`]).
    ///
    /// Errors: [`LogError::Io`].
    pub fn create_snapshot(&self, id: OffsetAndEpoch) -> Result<SnapshotWriter> {
        SnapshotWriter::create_on(&self.fs, &self.dir, id)
    }

    /// Freezes a snapshot made by [`Self::create_snapshot`]: durable when this
    /// returns, and listed from then on.
    ///
    /// Errors: [`LogError::Io`].
    pub fn freeze_snapshot(&mut self, writer: SnapshotWriter) -> Result<()> {
        self.guard(|log| log.do_freeze_snapshot(writer))
    }

    fn do_freeze_snapshot(&mut self, writer: SnapshotWriter) -> Result<()> {
        let id = writer.id();
        writer.freeze()?;
        if let Err(at) = self.snapshots.binary_search(&id) {
            self.snapshots.insert(at, id);
        }
        Ok(())
    }

    /// Opens snapshot `id` for reading by position.
    ///
    /// Errors: [`LogError::Io`] (a missing snapshot included).
    pub fn read_snapshot(&self, id: OffsetAndEpoch) -> Result<SnapshotReader> {
        SnapshotReader::open_on(&self.fs, &self.dir, id)
    }

    /// Deletes snapshot `id`.
    ///
    /// Errors: [`LogError::Io`].
    pub fn delete_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.guard(|log| log.do_delete_snapshot(id))
    }

    fn do_delete_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        snapshot::delete_snapshot_on(&self.fs, &self.dir, id)?;
        self.snapshots.retain(|s| *s != id);
        Ok(())
    }

    /// Replaces the whole log by snapshot `id` (Kafka's
    /// `truncateToLatestSnapshot`, for a follower that installed a snapshot
    /// beyond its log): every segment is deleted and an empty one starts at
    /// `id.offset`; the epoch cache is emptied. Durable when this returns; a
    /// crash in the middle leaves no segment, and [`Self::open`] then starts
    /// the log at the latest snapshot.
    ///
    /// Errors: [`LogError::MissingSnapshot`] if snapshot `id` was not frozen
    /// in this log; [`LogError::Io`].
    pub fn reset_to_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.guard(|log| log.do_reset_to_snapshot(id))
    }

    fn do_reset_to_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        if !self.snapshots.contains(&id) {
            return Err(LogError::MissingSnapshot {
                dir: self.dir.clone(),
                start_offset: id.offset,
                latest_snapshot: self.snapshots.last().copied(),
            });
        }
        self.lower_recovery_point(id.offset)?;
        for segment in self.segments.drain(..) {
            segment.delete()?;
        }
        fsync_dir_on(&self.fs, &self.dir)?;
        self.segments
            .push(Segment::create(&self.fs, &self.dir, id.offset)?);
        fsync_dir_on(&self.fs, &self.dir)?;
        self.epochs.truncate_from_end(i64::MIN);
        self.epochs.write()?;
        self.rewinds += 1;
        self.flushed_end_offset = id.offset;
        self.log_start_offset = id.offset;
        Ok(())
    }

    /// Deletes the snapshots below `offset`, but the bootstrap `0-0`
    /// checkpoint (which the server reads the bootstrap voters from), then
    /// fsyncs the directory.
    fn forget_snapshots_before(&mut self, offset: i64) -> Result<()> {
        let old: Vec<OffsetAndEpoch> = self
            .snapshots
            .iter()
            .copied()
            .filter(|s| s.offset > 0 && s.offset < offset)
            .collect();
        for id in &old {
            let path = self.dir.join(snapshot::snapshot_file_name(*id));
            match self.fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("deleting", &path)(e)),
            }
            tracing::info!(snapshot = %id, log_start_offset = offset, "deleted a snapshot below the log start");
        }
        self.snapshots.retain(|s| !old.contains(s));
        if !old.is_empty() {
            fsync_dir_on(&self.fs, &self.dir)?;
        }
        Ok(())
    }

    /// Deletes the segments that end at or below `offset` (Kafka's
    /// `deleteBeforeSnapshot`): the log start offset becomes the base offset
    /// of the first segment kept. The active segment is never deleted.
    /// Returns the new log start offset.
    ///
    /// Errors: [`LogError::MissingSnapshot`] unless a snapshot ends at or
    /// above `offset` (the prefix must stay readable from a snapshot);
    /// [`LogError::Io`].
    pub fn delete_segments_before(&mut self, offset: i64) -> Result<i64> {
        self.guard(|log| log.do_delete_segments_before(offset))
    }

    fn do_delete_segments_before(&mut self, offset: i64) -> Result<i64> {
        if !self.snapshots.iter().any(|s| s.offset >= offset) {
            return Err(LogError::MissingSnapshot {
                dir: self.dir.clone(),
                start_offset: offset,
                latest_snapshot: self.snapshots.last().copied(),
            });
        }
        let mut deleted = false;
        while self.segments.len() > 1 && self.segments[0].next_offset() <= offset {
            // Oldest first: after a crash the log still starts at a segment
            // boundary covered by the snapshot.
            self.segments.remove(0).delete()?;
            deleted = true;
        }
        if deleted {
            fsync_dir_on(&self.fs, &self.dir)?;
        }
        self.log_start_offset = self.log_start_offset.max(self.segments[0].base_offset());
        Ok(self.start_offset())
    }

    fn end(&self) -> i64 {
        self.segments.last().map_or(0, Segment::next_offset)
    }

    fn snapshot_epoch(&self) -> i32 {
        self.snapshots.last().map_or(0, |s| s.epoch)
    }

    fn last_epoch(&self) -> i32 {
        self.epochs
            .latest_epoch()
            .unwrap_or_else(|| self.snapshot_epoch())
    }

    /// Checks CRCs, contiguity from the log end offset and epochs; returns
    /// the headers.
    fn validate(&self, batches: &[u8]) -> Result<Vec<BatchHeader>> {
        let mut expected = self.end();
        let mut last_epoch = self.last_epoch();
        let mut headers = Vec::new();
        for item in record::iter_batches(batches, true) {
            let (header, _) = item?;
            if header.base_offset != expected {
                return Err(LogError::NonContiguous {
                    base_offset: header.base_offset,
                    end_offset: expected,
                });
            }
            if header.partition_leader_epoch < last_epoch {
                return Err(LogError::EpochRegression {
                    epoch: header.partition_leader_epoch,
                    last_epoch,
                });
            }
            last_epoch = header.partition_leader_epoch;
            expected = header.next_offset();
            headers.push(header);
        }
        Ok(headers)
    }

    fn append_validated(&mut self, bytes: &[u8], headers: &[BatchHeader]) -> Result<LogAppendInfo> {
        let first_offset = self.end();
        let Some(last) = headers.last() else {
            return Ok(LogAppendInfo {
                first_offset,
                last_offset: first_offset - 1,
            });
        };
        let last_offset = last.last_offset();
        let active = self.segments.last().expect("a log always has a segment");
        if active.size() > 0 && active.size() + bytes.len() as u64 > self.config.segment_bytes {
            self.roll()?;
        }
        let active = self
            .segments
            .last_mut()
            .expect("a log always has a segment");
        active.append(bytes, headers, self.config.index_interval_bytes)?;
        let mut changed = false;
        for h in headers {
            changed |= self.epochs.assign(h.partition_leader_epoch, h.base_offset);
        }
        if changed {
            self.epochs.write()?;
        }
        Ok(LogAppendInfo {
            first_offset,
            last_offset,
        })
    }

    /// Closes the active segment (fsync) and starts a new one at the log end
    /// offset.
    fn roll(&mut self) -> Result<()> {
        let end = self.end();
        if let Some(active) = self.segments.last_mut() {
            active.flush()?;
        }
        self.segments
            .push(Segment::create(&self.fs, &self.dir, end)?);
        fsync_dir_on(&self.fs, &self.dir)?;
        // Every closed segment is fsynced: all below `end` is durable,
        // unless a flush job runs: its fsync of the same open file may have
        // failed already, and then ours may report success and write
        // nothing. Its end writes the recovery point ([`super::flush`]).
        if end > self.recovery_point && !self.job_running {
            self.write_recovery_point(end)?;
        }
        Ok(())
    }
}

fn check_partition_metadata(fs: &Fs, dir: &Path) -> Result<()> {
    let path = dir.join(PARTITION_METADATA_FILE);
    let want = encode_partition_metadata(METADATA_TOPIC_ID);
    match read_text(fs, &path)? {
        Some(text) if text.trim_end() == want => Ok(()),
        Some(text) => Err(LogError::Corrupt {
            path,
            reason: format!("holds {text:?}, expected {want:?} (the __cluster_metadata topic id)"),
        }),
        None => write_atomically_on(fs, &path, want.as_bytes()),
    }
}

impl ReplicatedLog for FileLog {
    fn append_as_leader(&mut self, batches: Bytes, epoch: i32) -> Result<LogAppendInfo> {
        self.guard(|log| log.do_append_as_leader(batches, epoch))
    }

    fn append_as_follower(&mut self, batches: Bytes) -> Result<LogAppendInfo> {
        self.guard(|log| log.do_append_as_follower(batches))
    }

    fn read(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        self.check_running()?;
        self.do_read(start_offset, max_bytes)
    }

    fn truncate_to(&mut self, offset: i64) -> Result<()> {
        self.guard(|log| log.do_truncate_to(offset))
    }

    fn flush(&mut self) -> Result<()> {
        self.guard(|log| log.do_flush())
    }

    fn start_flush(&mut self) -> Result<FlushJob> {
        self.check_running()?;
        let files: Vec<_> = self
            .segments
            .iter()
            .filter_map(Segment::unsynced_log_file)
            .collect();
        self.job_running = !files.is_empty();
        Ok(FlushJob {
            files,
            end_offset: self.end(),
            rewinds: self.rewinds,
            failure: JobFailure::clone(&self.job_failure),
        })
    }

    fn finish_flush(&mut self, done: FlushDone) -> Result<()> {
        self.job_running = false;
        self.guard(|log| log.do_finish_flush(done))
    }

    fn start_offset(&self) -> i64 {
        self.log_start_offset
    }

    fn end_offset(&self) -> OffsetAndEpoch {
        OffsetAndEpoch::new(self.end(), self.last_epoch())
    }

    fn flushed_end_offset(&self) -> i64 {
        self.flushed_end_offset
    }

    fn end_offset_for_epoch(&self, epoch: i32) -> OffsetAndEpoch {
        self.epochs
            .end_offset_for(epoch, self.end())
            .unwrap_or_else(|| {
                // Older than every epoch in the log: the snapshot at the log
                // start offset, as Kafka's `KafkaMetadataLog.endOffsetForEpoch`.
                let start = self.start_offset();
                let epoch = self
                    .snapshots
                    .iter()
                    .rev()
                    .find(|s| s.offset == start)
                    .map_or(0, |s| s.epoch);
                OffsetAndEpoch::new(start, epoch)
            })
    }

    fn latest_snapshot_id(&self) -> Option<OffsetAndEpoch> {
        self.snapshots.last().copied()
    }

    fn snapshot_ids(&self) -> Vec<OffsetAndEpoch> {
        self.snapshots.clone()
    }

    fn fetched_snapshot(&self) -> Option<(OffsetAndEpoch, u64)> {
        self.fetching.as_ref().map(|w| (w.id(), w.size()))
    }

    fn size_in_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::size).sum()
    }

    fn read_snapshot_chunk(
        &self,
        id: OffsetAndEpoch,
        position: u64,
        max_bytes: usize,
    ) -> Result<Option<SnapshotChunk>> {
        self.check_running()?;
        self.do_read_snapshot_chunk(id, position, max_bytes)
    }

    fn write_snapshot(&mut self, id: OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        self.guard(|log| log.do_write_snapshot(id, bytes))
    }

    fn register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.guard(|log| log.do_register_snapshot(id))
    }

    fn begin_fetched_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.guard(|log| log.do_begin_fetched_snapshot(id))
    }

    fn append_fetched_snapshot(&mut self, bytes: &[u8]) -> Result<u64> {
        self.guard(|log| log.do_append_fetched_snapshot(bytes))
    }

    fn abort_fetched_snapshot(&mut self) -> Result<()> {
        self.guard(|log| log.do_abort_fetched_snapshot())
    }

    fn install_fetched_snapshot(&mut self) -> Result<OffsetAndEpoch> {
        self.guard(|log| log.do_install_fetched_snapshot())
    }

    fn truncate_to_latest_snapshot(&mut self) -> Result<bool> {
        self.guard(|log| log.do_truncate_to_latest_snapshot())
    }

    fn delete_before_snapshot(&mut self, id: OffsetAndEpoch) -> Result<bool> {
        self.guard(|log| log.do_delete_before_snapshot(id))
    }
}
