//! The [`ReplicatedLog`] operations of [`FileLog`] as they run on the
//! files, before the fail-stop guard: `file.rs`'s trait impl calls each
//! `do_*` method through [`FileLog`]'s guard, which refuses every call once
//! a write or fsync failed and records the first failure.
//!
//! Owns the sequence of file operations of each call; it must not catch,
//! retry or hide an I/O error (the guard turns the first one into a stop).

use bytes::{Bytes, BytesMut};

use super::{
    super::{
        FlushDone, LogAppendInfo, LogError, LogFetchInfo, OffsetAndEpoch, ReplicatedLog, Result,
        SnapshotChunk,
        fs::{fsync_dir_on, io_err},
        segment::Segment,
        snapshot::{self, SnapshotReader, SnapshotWriter},
    },
    FileLog,
};
use crate::record::{self, BatchHeader};

impl FileLog {
    pub(super) fn do_append_as_leader(
        &mut self,
        batches: Bytes,
        epoch: i32,
    ) -> Result<LogAppendInfo> {
        let mut stamped = BytesMut::from(&batches[..]);
        let mut next = self.end();
        let mut position = 0;
        while position < stamped.len() {
            let header = BatchHeader::parse(&stamped[position..])?;
            let size = header.size_in_bytes();
            if position + size > stamped.len() {
                return Err(crate::record::RecordError::Truncated {
                    needed: size,
                    available: stamped.len() - position,
                }
                .into());
            }
            record::batch_set_offset_and_epoch(
                &mut stamped[position..position + size],
                next,
                epoch,
            );
            next += i64::from(header.last_offset_delta) + 1;
            position += size;
        }
        let headers = self.validate(&stamped)?;
        self.append_validated(&stamped, &headers)
    }

    pub(super) fn do_append_as_follower(&mut self, batches: Bytes) -> Result<LogAppendInfo> {
        let headers = self.validate(&batches)?;
        self.append_validated(&batches, &headers)
    }

    pub(super) fn do_read(&self, start_offset: i64, max_bytes: usize) -> Result<LogFetchInfo> {
        let end = self.end();
        super::super::check_in_log(start_offset, self.start_offset(), end)?;
        let first = self
            .segments
            .partition_point(|s| s.base_offset() <= start_offset)
            .saturating_sub(1);
        for segment in &self.segments[first..] {
            if let Some(position) = segment.position_of(start_offset)? {
                return Ok(LogFetchInfo {
                    records: segment.read(position, max_bytes)?,
                    start_offset,
                });
            }
        }
        Ok(LogFetchInfo {
            records: Bytes::new(),
            start_offset,
        })
    }

    pub(super) fn do_truncate_to(&mut self, offset: i64) -> Result<()> {
        let start = self.start_offset();
        let end = self.end();
        if offset < start {
            return Err(LogError::OffsetOutOfRange {
                offset,
                start_offset: start,
                end_offset: end,
            });
        }
        if offset >= end {
            return Ok(());
        }
        self.rewinds += 1;
        let keep = self
            .segments
            .partition_point(|s| s.base_offset() <= offset)
            .max(1);
        // Whole batches go: the log will end at the base offset of the batch
        // holding `offset`. The recovery point comes down there first.
        let kept = &self.segments[keep - 1];
        let cut = match kept.position_of(offset)? {
            Some(position) => kept.header_at(position)?.base_offset,
            None => kept.next_offset(),
        };
        self.lower_recovery_point(cut)?;
        let removed: Vec<Segment> = self.segments.drain(keep..).collect();
        let removed_any = !removed.is_empty();
        for segment in removed.into_iter().rev() {
            segment.delete()?;
        }
        // The deletions are made durable before the kept segment is cut: a
        // crash in between must not bring back later segments beside a cut
        // one (a hole that refuses to open; found by the simulation on
        // `MemoryFs`).
        if removed_any {
            fsync_dir_on(&self.fs, &self.dir)?;
        }
        let segment = self
            .segments
            .last_mut()
            .expect("a log always has a segment");
        match segment.position_of(offset)? {
            Some(position) => {
                let new_end = if position == 0 {
                    segment.base_offset()
                } else {
                    segment.header_at(position)?.base_offset
                };
                segment.truncate_to(position, new_end)?;
            }
            None => segment.flush()?,
        }
        let new_end = self.end();
        if self.epochs.truncate_from_end(new_end) {
            self.epochs.write()?;
        }
        self.flushed_end_offset = self.flushed_end_offset.min(new_end);
        Ok(())
    }

    pub(super) fn do_flush(&mut self) -> Result<()> {
        for segment in &mut self.segments {
            segment.flush()?;
        }
        self.flushed_end_offset = self.end();
        self.write_recovery_point_if_due()
    }

    /// Ends a [`FlushJob`] (see [`super::super::flush`]): its fsync error
    /// stops the log; after a truncation or reset since it started it moves
    /// nothing; else every offset below its end offset is durable, and if
    /// nothing was appended since it started, no `.log` file has unsynced
    /// writes (an `.index` may: it waits for a synchronous flush).
    pub(super) fn do_finish_flush(&mut self, done: FlushDone) -> Result<()> {
        done.result?;
        if done.rewinds != self.rewinds || done.end_offset <= self.flushed_end_offset {
            return Ok(());
        }
        if done.end_offset == self.end() {
            for segment in &mut self.segments {
                segment.mark_log_synced();
            }
        }
        self.flushed_end_offset = done.end_offset;
        self.write_recovery_point_if_due()
    }

    /// Writes the flushed end offset as the recovery point when the last
    /// write is older than `recovery_point_interval_ms`.
    fn write_recovery_point_if_due(&mut self) -> Result<()> {
        let due = self.recovery_point_written.elapsed()
            >= std::time::Duration::from_millis(self.config.recovery_point_interval_ms);
        if due && self.flushed_end_offset > self.recovery_point {
            self.write_recovery_point(self.flushed_end_offset)?;
        }
        Ok(())
    }

    pub(super) fn do_read_snapshot_chunk(
        &self,
        id: OffsetAndEpoch,
        position: u64,
        max_bytes: usize,
    ) -> Result<Option<SnapshotChunk>> {
        if self.snapshots.binary_search(&id).is_err() {
            return Ok(None);
        }
        let reader = SnapshotReader::open_on(&self.fs, &self.dir, id)?;
        Ok(Some(SnapshotChunk {
            size: reader.size(),
            bytes: reader.read(position, max_bytes)?,
        }))
    }

    pub(super) fn do_write_snapshot(&mut self, id: OffsetAndEpoch, bytes: &[u8]) -> Result<()> {
        super::super::check_in_log(id.offset, self.log_start_offset, self.end())?;
        if self.snapshots.binary_search(&id).is_ok() {
            return Ok(());
        }
        let mut writer = SnapshotWriter::create_on(&self.fs, &self.dir, id)?;
        writer.append(bytes)?;
        self.freeze_snapshot(writer)
    }

    pub(super) fn do_register_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        let path = self.dir.join(snapshot::snapshot_file_name(id));
        if !self.fs.exists(&path).map_err(io_err("looking up", &path))? {
            return Err(LogError::MissingSnapshot {
                dir: self.dir.clone(),
                start_offset: id.offset,
                latest_snapshot: self.snapshots.last().copied(),
            });
        }
        if id.offset > 0 && id.offset < self.log_start_offset {
            // Written while the log moved past it (a snapshot installed or
            // the log cleaned meanwhile): of no use.
            return snapshot::delete_snapshot_on(&self.fs, &self.dir, id);
        }
        if let Err(at) = self.snapshots.binary_search(&id) {
            self.snapshots.insert(at, id);
        }
        Ok(())
    }

    pub(super) fn do_begin_fetched_snapshot(&mut self, id: OffsetAndEpoch) -> Result<()> {
        self.abort_fetched_snapshot()?;
        let stale = snapshot::partial_snapshot_path(&self.dir, id);
        if self
            .fs
            .exists(&stale)
            .map_err(io_err("looking up", &stale))?
        {
            self.fs
                .remove_file(&stale)
                .map_err(io_err("deleting", &stale))?;
        }
        self.fetching = Some(SnapshotWriter::create_on(&self.fs, &self.dir, id)?);
        Ok(())
    }

    pub(super) fn do_append_fetched_snapshot(&mut self, bytes: &[u8]) -> Result<u64> {
        let Some(writer) = self.fetching.as_mut() else {
            return Err(LogError::MissingSnapshot {
                dir: self.dir.clone(),
                start_offset: -1,
                latest_snapshot: self.snapshots.last().copied(),
            });
        };
        writer.append(bytes)?;
        Ok(writer.size())
    }

    pub(super) fn do_abort_fetched_snapshot(&mut self) -> Result<()> {
        match self.fetching.take() {
            Some(writer) => writer.abort(),
            None => Ok(()),
        }
    }

    pub(super) fn do_install_fetched_snapshot(&mut self) -> Result<OffsetAndEpoch> {
        let Some(writer) = self.fetching.take() else {
            return Err(LogError::MissingSnapshot {
                dir: self.dir.clone(),
                start_offset: -1,
                latest_snapshot: self.snapshots.last().copied(),
            });
        };
        let id = writer.id();
        if let Err(e) = writer.verify() {
            writer.abort()?;
            return Err(e);
        }
        self.freeze_snapshot(writer)?;
        self.truncate_to_latest_snapshot()?;
        Ok(id)
    }

    pub(super) fn do_truncate_to_latest_snapshot(&mut self) -> Result<bool> {
        let Some(latest) = self.snapshots.last().copied() else {
            return Ok(false);
        };
        let end = self.end_offset();
        if latest.epoch > end.epoch || (latest.epoch == end.epoch && latest.offset > end.offset) {
            tracing::info!(snapshot = %latest, log_end = %end, "truncating the log fully to the latest snapshot");
            self.reset_to_snapshot(latest)?;
            self.forget_snapshots_before(latest.offset)?;
            return Ok(true);
        }
        Ok(false)
    }

    pub(super) fn do_delete_before_snapshot(&mut self, id: OffsetAndEpoch) -> Result<bool> {
        let latest = self.snapshots.last().copied();
        if self.snapshots.binary_search(&id).is_err()
            || id.offset <= self.log_start_offset
            || latest.is_none_or(|l| id.offset > l.offset)
            || id.offset > self.end()
        {
            return Ok(false);
        }
        // Older snapshots first, then the segments: a crash in between
        // leaves the earliest snapshot at or above the first segment.
        self.forget_snapshots_before(id.offset)?;
        self.log_start_offset = id.offset;
        let mut deleted = false;
        while self.segments.len() > 1 && self.segments[0].next_offset() <= id.offset {
            self.segments.remove(0).delete()?;
            deleted = true;
        }
        if deleted {
            fsync_dir_on(&self.fs, &self.dir)?;
        }
        tracing::info!(
            log_start_offset = id.offset,
            "log cleaned below snapshot {id}"
        );
        Ok(true)
    }
}
